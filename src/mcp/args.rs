//! The tools' arguments (their JSON schemas) and the checks and defaults they share.

use super::*;

/// Tags, comma-separated or a list.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Tags {
    Csv(String),
    List(Vec<String>),
}

impl Tags {
    /// The tags, trimmed, without blanks and repeats (empty when none was given).
    pub(super) fn to_list(&self) -> Vec<String> {
        match self {
            Tags::Csv(s) => split_tags(s),
            Tags::List(v) => split_tags(&v.join(",")),
        }
    }
}

/// The tags of an optional argument.
pub(super) fn tag_list(tags: &Option<Tags>) -> Vec<String> {
    tags.as_ref().map(Tags::to_list).unwrap_or_default()
}

/// The kind of memory.
#[derive(Debug, Clone, Copy, Default, Deserialize, schemars::JsonSchema)]
pub enum MemoryType {
    // Plain comments, not docs: see `ops::RecallMode`.
    // A choice that was made and why.
    Decision,
    // Something found out: a fix, a gotcha, a convention.
    #[default]
    Learning,
    // Background facts about the project or the current work.
    Context,
}

impl MemoryType {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            MemoryType::Decision => "Decision",
            MemoryType::Learning => "Learning",
            MemoryType::Context => "Context",
        }
    }
}

pub(super) fn default_limit_5() -> u32 {
    5
}
pub(super) fn default_limit_20() -> u32 {
    20
}
pub(super) fn default_similarity() -> f64 {
    wt_memory_core::dedup::DEFAULT_THRESHOLD
}
pub(super) fn default_cleanup_threshold() -> f64 {
    ops::CLEANUP_THRESHOLD as f64
}
pub(super) fn default_true() -> bool {
    true
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RememberArgs {
    // Each field's doc is its description in the tool's schema, which Claude Code sends with
    // every request of a session (`remember` is always loaded): one line each.
    /// One self-contained fact, clear without this conversation. No secrets.
    pub content: String,
    /// Decision, Learning (default) or Context.
    #[serde(default, rename = "type")]
    pub memory_type: MemoryType,
    /// Optional tags.
    #[serde(default)]
    pub tags: Option<Tags>,
    /// The id of an older memory it replaces.
    #[serde(default)]
    pub supersedes: Option<String>,
    /// 2-4 questions someone would ask when it helps, or the files or commands it is about.
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// A few words, for a hook's index.
    #[serde(default)]
    pub title: Option<String>,
    /// true: about the user, for all projects.
    #[serde(default)]
    pub personal: bool,
}

/// A memory to move between the stores.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct MoveArgs {
    /// The memory id (8+ hex digits will do).
    pub id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RecallArgs {
    /// A question or keywords.
    pub query: String,
    /// At most this many.
    #[schemars(range(min = 1))]
    #[serde(default = "default_limit_5")]
    pub limit: u32,
    /// temporal: newest first.
    #[serde(default)]
    pub mode: ops::RecallMode,
    /// Only memories with all these tags.
    #[serde(default)]
    pub tags: Option<Tags>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct MetricsArgs {
    /// The window in days (default 7).
    #[schemars(range(min = 1, max = 3650))]
    #[serde(default = "default_days_7")]
    pub days: u32,
}

pub(super) fn default_days_7() -> u32 {
    7
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ProactiveArgs {
    /// A description of the current task or situation (a few sentences work best).
    pub context: String,
    /// Maximum number of memories to return.
    #[schemars(range(min = 1))]
    #[serde(default = "default_limit_5")]
    pub limit: u32,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ForgetArgs {
    /// The memory's full id (36 characters, as returned by recall, list_memories or remember);
    /// prefixes are refused.
    pub id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TodoIdArgs {
    /// The todo id or a unique prefix of it (8 characters are enough), from list_todos.
    pub id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ForgetByTagsArgs {
    /// Tags (comma-separated or a list); memories carrying them are deleted.
    pub tags: Tags,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListArgs {
    /// Only this type: Decision, Learning or Context. Omit for all types.
    #[serde(default, rename = "type")]
    pub memory_type: Option<MemoryType>,
    /// Maximum number of memories to return.
    #[schemars(range(min = 1))]
    #[serde(default = "default_limit_20")]
    pub limit: u32,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct TopicArgs {
    /// Optional topic to focus the summary on.
    #[serde(default)]
    pub topic: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AuditArgs {
    /// Similarity (0..1) above which two memories count as duplicates.
    #[schemars(range(min = 0.0, max = 1.0))]
    #[serde(default = "default_similarity")]
    pub threshold: f64,
    /// List the memories whose code anchors (files they name) changed or vanished since they
    /// were written, instead of duplicates.
    #[serde(default)]
    pub stale: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DedupArgs {
    /// Similarity (0..1) above which two memories count as duplicates.
    #[schemars(range(min = 0.0, max = 1.0))]
    #[serde(default = "default_similarity")]
    pub threshold: f64,
    /// Only report what would be deleted (default). Set false to delete.
    #[serde(default = "default_true")]
    pub dry_run: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CleanupArgs {
    /// Memories with importance below this (0..1) count as low value.
    #[schemars(range(min = 0.0, max = 1.0))]
    #[serde(default = "default_cleanup_threshold")]
    pub threshold: f64,
    /// Only report what would be deleted (default). Set false to delete.
    #[serde(default = "default_true")]
    pub dry_run: bool,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct SyncPullArgs {
    /// Pull only from this source ("user/machine", see sync_status). Empty: every source.
    #[serde(default)]
    pub from_source: String,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct ExportArgs {
    /// Leave out memories marked private.
    #[serde(default)]
    pub exclude_private: bool,
    /// Write the export to this file instead of returning it: a path inside the project
    /// directory (relative to it, or absolute).
    #[serde(default)]
    pub file_path: String,
    /// Replace file_path when it already exists (default false: an existing file is never
    /// overwritten).
    #[serde(default)]
    pub overwrite: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ImportArgs {
    /// A wt-memory export file (absolute, or relative to the project).
    pub file_path: String,
    /// Only report what would be imported (default). Set false to import.
    #[serde(default = "default_true")]
    pub dry_run: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ImportTranscriptsArgs {
    /// Only report what would be imported (default). Set false to import.
    #[serde(default = "default_true")]
    pub dry_run: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AddTodoArgs {
    /// What needs doing, self-contained.
    pub content: String,
    /// Optional extra tags (comma-separated or a list).
    #[serde(default)]
    pub tags: Option<Tags>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct DateRangeArgs {
    /// Start of the range, ISO 8601 (e.g. 2026-01-31 or 2026-01-31T09:00:00Z). Empty: open.
    #[serde(default)]
    pub since: String,
    /// End of the range, ISO 8601. Empty: now.
    #[serde(default)]
    pub until: String,
    /// Maximum number of memories to return.
    #[schemars(range(min = 1))]
    #[serde(default = "default_limit_20")]
    pub limit: u32,
}

pub(super) fn check_limit(limit: u32) -> Result<usize, String> {
    let most = wt_memory_ops::MAX_COUNT;
    if limit == 0 {
        Err("limit must be at least 1".to_string())
    } else if limit as usize > most {
        Err(format!("limit is {limit}; the most is {most}"))
    } else {
        Ok(limit as usize)
    }
}

pub(super) fn check_non_empty<'a>(what: &str, value: &'a str) -> Result<&'a str, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        Err(format!("{what} is empty: give some non-blank text"))
    } else {
        Ok(trimmed)
    }
}

/// `forget` deletes by full id only: a prefix, even a unique one, may name another memory than the
/// one the model meant. Returns the id in canonical form.
pub(super) fn check_full_id(id: &str) -> Result<String, String> {
    let id = check_non_empty("id", id)?;
    uuid::Uuid::parse_str(id)
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| {
            format!(
                "'{id}' is not a full memory id: forget needs the whole id (36 characters like \
                 2de8a1b3-6c1e-4f0a-9b7d-0c5e8f1a2b3c), as returned by recall, list_memories or \
                 remember; prefixes are refused"
            )
        })
}

/// Where `export_memories` may write `requested`: inside the project directory, judged after
/// resolving the symlinks of the deepest part of the path that exists (so neither `..` nor a
/// symlink leads out), and not over an existing file unless `overwrite`. Returns the absolute path
/// to hand to `wt-memory export --output`.
pub(super) fn export_target(
    project: &Path,
    requested: &str,
    overwrite: bool,
) -> Result<PathBuf, String> {
    use std::path::Component;
    let root = wt_memory_base::os::files::canonicalize(project).map_err(|e| {
        format!(
            "cannot resolve the project directory {}: {e}",
            project.display()
        )
    })?;
    let outside = || {
        format!(
            "file_path '{requested}' is outside the project directory {}; exports are written \
             only inside it (give a path relative to the project)",
            root.display()
        )
    };
    let wanted = root.join(requested);
    let existing = wanted
        .ancestors()
        .find(|a| a.exists())
        .ok_or_else(outside)?;
    let mut target = wt_memory_base::os::files::canonicalize(existing)
        .map_err(|e| format!("cannot resolve {}: {e}", existing.display()))?;
    let rest = wanted
        .strip_prefix(existing)
        .map_err(|_| format!("cannot resolve file_path '{requested}'"))?;
    for part in rest.components() {
        match part {
            Component::Normal(name) => target.push(name),
            Component::CurDir => {}
            _ => return Err(outside()),
        }
    }
    if !target.starts_with(&root) {
        return Err(outside());
    }
    if target.is_dir() {
        return Err(format!(
            "file_path '{requested}' is a directory; name a file to write"
        ));
    }
    if !overwrite && target.symlink_metadata().is_ok() {
        return Err(format!(
            "{} already exists and was left untouched; pass overwrite: true to replace it, or \
             choose another file_path",
            target.display()
        ));
    }
    Ok(target)
}

/// Unwraps a validated argument, or returns the complaint as a tool error from the enclosing tool.
macro_rules! valid {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(msg) => return Ok(error_result(msg)),
        }
    };
}
