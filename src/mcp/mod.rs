//! `wt-mcp-server`: the `wt-memory` commands exposed as MCP tools over stdio.
//!
//! Every tool calls the same typed [`Client`] methods as the CLI, in this process, on the store of
//! the project directory, so the agent sees exactly the store and the logic the hooks see. The
//! server holds the store only for the length of one call (other processes, the hooks above all,
//! need it between calls), and one call at a time. A failing call becomes a tool result with
//! `isError: true` and the one-line reason; nothing a tool call does may take the server down.

mod transport;

pub use transport::LineTransport;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use serde::Deserialize;

use crate::client::{Client, Holding, Mode};
use crate::config::{self, ProjectDir};
use crate::ops;
use crate::record::split_tags;
use crate::sync::{SyncAction, SyncArgs};

/// The name the server reports in `initialize` (`serverInfo.name`) and in `memory_health`: the
/// binary's, not the crate's (`wt-memory` is the CLI).
pub const SERVER_NAME: &str = "wt-mcp-server";

/// What Claude Code shows the model about this server at session start (it keeps the first
/// 2 KB; a test holds it under that).
pub const SERVER_INSTRUCTIONS: &str = "Persistent memory for this project, shared with the memory hooks and kept across sessions. \
When to recall: before non-trivial work, when a task touches code or decisions earlier sessions may have \
covered, when something looks familiar, and when stuck on an error; call `recall` with a few words or a \
question, and `get_memory` for an id a hook listed (`[MEM#...]`). When to remember: after a decision and \
its reason, a non-obvious fix, a convention or a gotcha someone would otherwise rediscover; call \
`remember` with one self-contained fact (no secrets), and `supersede` when it replaces an older memory. \
Use `add_todo`/`list_todos` for follow-ups that outlive the session. Maintenance tools (`audit`, \
`dedup`, `cleanup`) default to dry runs.";

/// The `_meta` of the tools Claude Code should load at session start rather than defer behind
/// its tool search (where the model rarely thinks of looking for memory): `recall` and
/// `remember`. The other tools stay deferred, found by name when needed.
fn always_load() -> rmcp::model::MetaObject {
    let mut meta = rmcp::model::MetaObject::new();
    meta.insert("anthropic/alwaysLoad".into(), serde_json::Value::Bool(true));
    meta
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

fn error_result(text: impl Into<String>) -> CallToolResult {
    let text = text.into();
    // One stderr line per failure, so a client's log stays readable.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    eprintln!(
        "wt-mcp-server: {}",
        crate::hygiene::truncate_with_ellipsis(&flat, 300)
    );
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// Comma-separated tags, also accepted as a list (models send either).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(untagged)]
pub enum Tags {
    Csv(String),
    List(Vec<String>),
}

impl Tags {
    /// The tags, trimmed, without blanks and repeats (empty when none was given).
    fn to_list(&self) -> Vec<String> {
        match self {
            Tags::Csv(s) => split_tags(s),
            Tags::List(v) => split_tags(&v.join(",")),
        }
    }
}

/// The tags of an optional argument.
fn tag_list(tags: &Option<Tags>) -> Vec<String> {
    tags.as_ref().map(Tags::to_list).unwrap_or_default()
}

/// The kind of memory being stored.
#[derive(Debug, Clone, Copy, Default, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub enum MemoryType {
    /// A choice that was made and why.
    Decision,
    /// Something found out: a fix, a gotcha, a convention.
    #[default]
    Learning,
    /// Background facts about the project or the current work.
    Context,
}

impl MemoryType {
    fn as_str(self) -> &'static str {
        match self {
            MemoryType::Decision => "Decision",
            MemoryType::Learning => "Learning",
            MemoryType::Context => "Context",
        }
    }
}

fn default_limit_5() -> u32 {
    5
}
fn default_limit_20() -> u32 {
    20
}
fn default_similarity() -> f64 {
    crate::dedup::DEFAULT_THRESHOLD
}
fn default_cleanup_threshold() -> f64 {
    ops::CLEANUP_THRESHOLD as f64
}
fn default_true() -> bool {
    true
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct RememberArgs {
    /// The memory itself: one self-contained fact, written so it makes sense in a later session
    /// without this conversation. Never include secrets.
    pub content: String,
    /// Decision, Learning (default) or Context.
    #[serde(default, rename = "type")]
    pub memory_type: MemoryType,
    /// Optional tags, comma-separated ("auth,convention") or a list. The branch tag is added
    /// automatically.
    #[serde(default)]
    pub tags: Option<Tags>,
    /// When this fact replaces an older memory (a changed decision, a moved file), that memory's
    /// full id: recall then marks the old one as superseded and the hooks stop injecting it.
    #[serde(default)]
    pub supersedes: Option<String>,
    /// Recommended: 2-4 short retrieval keys that make this memory easy to find later. Two
    /// questions or tasks a developer would type when this memory helps, in their own words (not
    /// the memory's); one anchor line listing only the files, commands, error codes and
    /// identifiers it is specific to; and, if the team writes in another language too, one line
    /// in that language.
    #[serde(default)]
    pub keys: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct RecallArgs {
    /// What to look for, in natural language or keywords.
    pub query: String,
    /// Maximum number of memories to return.
    #[schemars(range(min = 1))]
    #[serde(default = "default_limit_5")]
    pub limit: u32,
    /// Retrieval strategy; hybrid unless you have a reason.
    #[serde(default)]
    pub mode: ops::RecallMode,
    /// Only memories carrying all these tags (comma-separated or a list).
    #[serde(default)]
    pub tags: Option<Tags>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct MetricsArgs {
    /// The window in days (default 7).
    #[schemars(range(min = 1, max = 3650))]
    #[serde(default = "default_days_7")]
    pub days: u32,
}

fn default_days_7() -> u32 {
    7
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ProactiveArgs {
    /// A description of the current task or situation (a few sentences work best).
    pub context: String,
    /// Maximum number of memories to return.
    #[schemars(range(min = 1))]
    #[serde(default = "default_limit_5")]
    pub limit: u32,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct IdArgs {
    /// The memory id (as returned by recall, list_memories or remember).
    pub id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ForgetArgs {
    /// The memory's full id (36 characters, as returned by recall, list_memories or remember);
    /// prefixes are refused.
    pub id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SupersedeArgs {
    /// The id of the memory that holds now (full, or a unique prefix of 8+ characters).
    pub newer: String,
    /// The id of the memory it replaces (full, or a unique prefix of 8+ characters).
    pub older: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct TodoIdArgs {
    /// The todo id or a unique prefix of it (8 characters are enough), from list_todos.
    pub id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ForgetByTagsArgs {
    /// Tags (comma-separated or a list); memories carrying them are deleted.
    pub tags: Tags,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
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
#[schemars(crate = "rmcp::schemars")]
pub struct TopicArgs {
    /// Optional topic to focus the summary on.
    #[serde(default)]
    pub topic: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AuditArgs {
    /// Similarity (0..1) above which two memories count as duplicates.
    #[schemars(range(min = 0.0, max = 1.0))]
    #[serde(default = "default_similarity")]
    pub threshold: f64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
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
#[schemars(crate = "rmcp::schemars")]
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
#[schemars(crate = "rmcp::schemars")]
pub struct SyncPullArgs {
    /// Pull only from this source ("user/machine", see sync_status). Empty: every source.
    #[serde(default)]
    pub from_source: String,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
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
#[schemars(crate = "rmcp::schemars")]
pub struct ImportArgs {
    /// A wt-memory export file (absolute, or relative to the project).
    pub file_path: String,
    /// Only report what would be imported (default). Set false to import.
    #[serde(default = "default_true")]
    pub dry_run: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AddTodoArgs {
    /// What needs doing, self-contained.
    pub content: String,
    /// Optional extra tags (comma-separated or a list).
    #[serde(default)]
    pub tags: Option<Tags>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
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

fn check_limit(limit: u32) -> Result<usize, String> {
    if limit == 0 {
        Err("limit must be at least 1".to_string())
    } else {
        Ok(limit as usize)
    }
}

fn check_non_empty<'a>(what: &str, value: &'a str) -> Result<&'a str, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        Err(format!("{what} is empty: give some non-blank text"))
    } else {
        Ok(trimmed)
    }
}

/// `forget` deletes by full id only: a prefix, even a unique one, may name another memory than the
/// one the model meant. Returns the id in canonical form.
fn check_full_id(id: &str) -> Result<String, String> {
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
fn export_target(project: &Path, requested: &str, overwrite: bool) -> Result<PathBuf, String> {
    use std::path::Component;
    let root = project.canonicalize().map_err(|e| {
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
    let mut target = existing
        .canonicalize()
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

/// The server's own view for `memory_health`: the store's health and status, and the CLI beside
/// the server (the one the user's own commands run).
fn health_report(client: &mut Client, project: &ProjectDir) -> (bool, serde_json::Value) {
    use serde_json::json;
    let mut report = json!({
        "server": {"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")},
        "project_dir": project.path.display().to_string(),
        "project_dir_source": project.source.describe(),
    });
    report["wt_memory"] = match config::locate_binary("wt-memory") {
        Some(bin) => {
            json!({"path": bin.display().to_string(), "version": crate::doctor::version_of(&bin)})
        }
        None => {
            json!({"error": "the wt-memory CLI is neither next to this server nor on PATH; install it with `cargo install --path .`"})
        }
    };
    let healthy = match client.health() {
        Ok(h) => {
            report["health"] = json!(h.lines.join("\n"));
            h.ok
        }
        Err(e) => {
            report["health"] = json!(e.to_string());
            false
        }
    };
    report["status"] = match client.status() {
        Ok(s) => serde_json::to_value(s).unwrap_or_default(),
        Err(e) => json!(e.to_string()),
    };
    report["healthy"] = json!(healthy);
    (healthy, report)
}

/// The MCP server: one instance per stdio session.
#[derive(Clone)]
pub struct MemoryServer {
    project: ProjectDir,
    client: Arc<Mutex<Client>>,
    tool_router: ToolRouter<MemoryServer>,
}

impl MemoryServer {
    pub fn new(project: ProjectDir) -> Self {
        let mut client = Client::open(
            crate::project::resolve(&project.path, None),
            Mode::configured(ops::OpenOptions::default(), Holding::PerCall),
        );
        client.set_source("mcp");
        MemoryServer {
            project,
            client: Arc::new(Mutex::new(client)),
            tool_router: Self::tool_router(),
        }
    }

    /// Run `call` on the client in a blocking task (one call at a time).
    async fn blocking<T: Send + 'static>(
        &self,
        call: impl FnOnce(&mut Client) -> crate::error::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        let client = self.client.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut client = client.lock().unwrap_or_else(|e| e.into_inner());
            call(&mut client)
        })
        .await;
        match joined {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(e) => Err(format!("internal error: {e}")),
        }
    }

    /// A call whose result is returned as pretty JSON (the CLI's `--json` shape).
    async fn json<T: serde::Serialize + Send + 'static>(
        &self,
        call: impl FnOnce(&mut Client) -> crate::error::Result<T> + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(match self.blocking(call).await {
            Ok(value) => text_result(serde_json::to_string_pretty(&value).unwrap_or_default()),
            Err(msg) => error_result(msg),
        })
    }

    /// A call whose result is a line of text.
    async fn text(
        &self,
        call: impl FnOnce(&mut Client) -> crate::error::Result<String> + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(match self.blocking(call).await {
            Ok(text) => text_result(text),
            Err(msg) => error_result(msg),
        })
    }

    /// `wt-memory sync [action]`: its report, or its error and report as a tool error.
    async fn run_sync(&self, action: Option<SyncAction>) -> Result<CallToolResult, ErrorData> {
        let args = SyncArgs {
            action,
            remote: "origin".into(),
            machine: None,
        };
        let ran = self
            .blocking(move |c| {
                let (mut out, mut err) = (Vec::new(), Vec::new());
                let code = crate::sync::run(&args, c, &mut out, &mut err);
                Ok((code, out, err))
            })
            .await;
        Ok(match ran {
            Ok((0, out, _)) => text_result(String::from_utf8_lossy(&out).trim().to_string()),
            Ok((code, out, err)) => {
                let mut msg = format!("sync failed (exit {code})");
                for part in [String::from_utf8_lossy(&err), String::from_utf8_lossy(&out)] {
                    if !part.trim().is_empty() {
                        msg.push_str(":\n");
                        msg.push_str(part.trim());
                    }
                }
                error_result(msg)
            }
            Err(msg) => error_result(msg),
        })
    }
}

#[tool_router]
impl MemoryServer {
    #[tool(
        description = "Save one fact to the project's persistent memory so later sessions (and the memory hooks) can use it. Use after a decision, a non-obvious fix, a discovered convention or gotcha. Write it self-contained; never include secrets. Returns {\"id\": ..., \"duplicate\": bool, \"similar\": [...]}; duplicate=true means the same content was already stored under that id. similar lists older memories on the same subject (id, similarity, content): if the new fact replaces one of them (a changed decision, a moved file), call supersede(newer=id, older=that id) so the stale one stops being injected.",
        meta = always_load(),
        annotations(
            title = "Remember",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn remember(
        &self,
        Parameters(args): Parameters<RememberArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let content = valid!(check_non_empty("content", &args.content)).to_string();
        let req = ops::Remember {
            content,
            memory_type: args.memory_type.as_str().to_string(),
            tags: tag_list(&args.tags),
            supersedes: args.supersedes,
            keys: args.keys.unwrap_or_default(),
            ..ops::Remember::default()
        };
        self.json(move |c| c.remember(&req)).await
    }

    #[tool(
        description = "Search the project's memory for what earlier sessions learned about a topic. Use before starting non-trivial work, when something looks familiar, or when stuck. Memories from the current git branch rank first. Returns a JSON array of records (id, content, experience_type, tags, importance, created_at, ...), best match first; [] when nothing matches.",
        meta = always_load(),
        annotations(title = "Recall", read_only_hint = true, open_world_hint = false)
    )]
    async fn recall(
        &self,
        Parameters(args): Parameters<RecallArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = valid!(check_limit(args.limit));
        if args.query.trim().is_empty() {
            return Ok(error_result(
                "query is empty: say what to look for (a few words or a sentence); \
                 to browse without a query use list_memories or recall_by_date",
            ));
        }
        let req = ops::Recall {
            query: args.query.trim().to_string(),
            limit,
            mode: args.mode,
            tags: tag_list(&args.tags),
            ..ops::Recall::default()
        };
        self.json(move |c| c.recall(&req)).await
    }

    #[tool(
        description = "Given a description of the current task, return the memories most relevant to it, each with a relevance_score (0..1; below 0.3 is weak). Use at the start of a task or subtask to surface context you did not know to ask for. Returns a JSON array of records.",
        annotations(
            title = "Proactive context",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn proactive_context(
        &self,
        Parameters(args): Parameters<ProactiveArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = valid!(check_limit(args.limit));
        let context = valid!(check_non_empty("context", &args.context)).to_string();
        self.json(move |c| c.proactive(&context, None, limit)).await
    }

    #[tool(
        description = "Delete one memory by its full id (no prefixes), e.g. one that turned out wrong or outdated. Returns {\"deleted\": bool, \"id\": ...}; deleted=false when no memory has that id.",
        annotations(
            title = "Forget",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn forget(
        &self,
        Parameters(args): Parameters<ForgetArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let id = valid!(check_full_id(&args.id));
        let req = ops::Forget {
            id: Some(id),
            ..ops::Forget::default()
        };
        self.json(move |c| c.forget(&req)).await
    }

    #[tool(
        description = "Mark one memory as the replacement of an older one (a changed decision, a moved file, an updated fact): recall ranks the older one after it and marks it superseded, and the memory hooks stop injecting it. Use when remember's `similar` shows the fact you just stored replaces an older memory. Returns {\"newer\": id, \"older\": id}.",
        annotations(
            title = "Supersede",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn supersede(
        &self,
        Parameters(args): Parameters<SupersedeArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let newer = valid!(check_non_empty("newer", &args.newer)).to_string();
        let older = valid!(check_non_empty("older", &args.older)).to_string();
        self.json(move |c| c.supersede(&newer, &older)).await
    }

    #[tool(
        description = "Delete every memory carrying the given tags (no dry run: check with recall(tags=...) first). Returns {\"deleted_count\": N}.",
        annotations(
            title = "Forget by tags",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn forget_by_tags(
        &self,
        Parameters(args): Parameters<ForgetByTagsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let tags = args.tags.to_list();
        if tags.is_empty() {
            return Ok(error_result(
                "tags are empty: give at least one non-blank tag",
            ));
        }
        let req = ops::Forget {
            tags,
            ..ops::Forget::default()
        };
        self.json(move |c| c.forget(&req)).await
    }

    #[tool(
        description = "List stored memories, newest first, optionally of one type. Use to browse rather than search. Returns a JSON array of records.",
        annotations(
            title = "List memories",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_memories(
        &self,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = valid!(check_limit(args.limit));
        let ty = args.memory_type.map(|t| t.as_str());
        self.json(move |c| c.list(ty, Some(limit))).await
    }

    #[tool(
        description = "Fetch one memory by id with all its fields (tags, metadata, importance, access count). Returns the JSON record, or {} when the id is unknown.",
        annotations(title = "Get memory", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_memory(
        &self,
        Parameters(args): Parameters<IdArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let id = valid!(check_non_empty("id", &args.id)).to_string();
        self.json(move |c| {
            Ok(match c.get(&id)? {
                Some(r) => serde_json::to_value(r)?,
                None => serde_json::json!({}),
            })
        })
        .await
    }

    #[tool(
        description = "Summarise what the project's memory knows: key decisions, learnings and context, optionally around a topic. Use to get oriented in an unfamiliar area. Returns JSON.",
        annotations(
            title = "Context summary",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn context_summary(
        &self,
        Parameters(args): Parameters<TopicArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let topic = Some(args.topic.trim().to_string()).filter(|t| !t.is_empty());
        self.json(move |c| {
            Ok(match c.context(topic.as_deref())? {
                Some(summary) => serde_json::to_value(summary)?,
                None => serde_json::json!({}),
            })
        })
        .await
    }

    #[tool(
        description = "Show the memory engine's tiers (working, session, long-term) and what each holds. Mostly for diagnosing memory behaviour. Returns JSON.",
        annotations(title = "Brain state", read_only_hint = true, open_world_hint = false)
    )]
    async fn brain(&self) -> Result<CallToolResult, ErrorData> {
        self.json(|c| c.brain()).await
    }

    #[tool(
        description = "Statistics of the project's memory: total count, counts per type, top tags, importance histogram and noise ratio. Use to judge whether maintenance (audit, cleanup) is worthwhile. Returns JSON.",
        annotations(title = "Memory stats", read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_stats(&self) -> Result<CallToolResult, ErrorData> {
        self.json(|c| c.stats()).await
    }

    #[tool(
        description = "What memory did for the agent in the last days: hook injections and abstentions per event, relevance of what was injected, usage rate (injected memories the agent cited or used), hook latency, and the memories used most, never injected, or injected often but never used (candidates to forget). Returns JSON.",
        annotations(
            title = "Memory metrics",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_metrics(
        &self,
        Parameters(args): Parameters<MetricsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let days = args.days.clamp(1, 3650);
        self.json(move |c| c.metrics(days)).await
    }

    #[tool(
        description = "Check that memory works here: the store's health check and status, plus which project directory this server uses and which wt-memory CLI sits beside it. Use when other memory tools fail or return nothing unexpectedly. Returns JSON; an error result when memory is not usable.",
        annotations(
            title = "Memory health",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_health(&self) -> Result<CallToolResult, ErrorData> {
        let project = self.project.clone();
        let client = self.client.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut client = client.lock().unwrap_or_else(|e| e.into_inner());
            health_report(&mut client, &project)
        })
        .await;
        Ok(match joined {
            Ok((healthy, report)) => {
                let text = serde_json::to_string_pretty(&report).unwrap_or_default();
                if healthy {
                    text_result(text)
                } else {
                    error_result(text)
                }
            }
            Err(e) => error_result(format!("internal error during health check: {e}")),
        })
    }

    #[tool(
        description = "Find near-duplicate memories without changing anything. Returns JSON: total, clusters, redundant, dedup_ratio and the largest clusters (ids, survivor). Follow up with dedup to merge them.",
        annotations(
            title = "Audit duplicates",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn audit(
        &self,
        Parameters(args): Parameters<AuditArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.json(move |c| c.audit(args.threshold)).await
    }

    #[tool(
        description = "Delete low-value memories: very short content and importance below the threshold. Dry run by default (reports counts); pass dry_run=false to delete. Returns JSON counts.",
        annotations(
            title = "Cleanup",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn cleanup(
        &self,
        Parameters(args): Parameters<CleanupArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let threshold = args.threshold as f32;
        self.json(move |c| c.cleanup(threshold, ops::CLEANUP_MIN_LENGTH, args.dry_run))
            .await
    }

    #[tool(
        description = "Merge near-duplicate memories: keep the best of each cluster (tags merged), delete the rest. Dry run by default (reports what would go); pass dry_run=false to delete. Returns JSON.",
        annotations(
            title = "Deduplicate",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn dedup(
        &self,
        Parameters(args): Parameters<DedupArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.json(move |c| {
            Ok(match c.dedup(args.threshold, args.dry_run)? {
                Some(done) => serde_json::to_value(done)?,
                None => serde_json::json!({"deleted_count": 0, "merged_count": 0}),
            })
        })
        .await
    }

    #[tool(
        description = "Share memories with the team through the git remote: push this machine's memories, then pull everyone else's. Returns the CLI's report text.",
        annotations(
            title = "Sync",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = true
        )
    )]
    async fn sync(&self) -> Result<CallToolResult, ErrorData> {
        self.run_sync(None).await
    }

    #[tool(
        description = "Publish this machine's memories to the team's sync branch on the git remote. Returns the CLI's report text.",
        annotations(
            title = "Sync push",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = true
        )
    )]
    async fn sync_push(&self) -> Result<CallToolResult, ErrorData> {
        self.run_sync(Some(SyncAction::Push { force: false })).await
    }

    #[tool(
        description = "Import teammates' memories from the sync branch on the git remote (already known ones are skipped). Returns per-source counts.",
        annotations(
            title = "Sync pull",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = true
        )
    )]
    async fn sync_pull(
        &self,
        Parameters(args): Parameters<SyncPullArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let from = Some(args.from_source.trim().to_string()).filter(|f| !f.is_empty());
        self.run_sync(Some(SyncAction::Pull { from })).await
    }

    #[tool(
        description = "Show this machine's sync identity, when it last pushed and pulled, and the sources on the remote. Returns text.",
        annotations(title = "Sync status", read_only_hint = true, open_world_hint = true)
    )]
    async fn sync_status(&self) -> Result<CallToolResult, ErrorData> {
        self.run_sync(Some(SyncAction::Status)).await
    }

    #[tool(
        description = "Export all memories as a wt-memory export document (JSON with format, version, count, records). Large: prefer file_path to write it to a file inside the project directory, which returns nothing but the confirmation; an existing file is replaced only with overwrite=true.",
        annotations(
            title = "Export memories",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn export_memories(
        &self,
        Parameters(args): Parameters<ExportArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let exclude_private = args.exclude_private;
        let file = args.file_path.trim();
        if file.is_empty() {
            return self.json(move |c| c.export(exclude_private)).await;
        }
        let target = valid!(export_target(&self.project.path, file, args.overwrite));
        self.text(move |c| {
            let text = serde_json::to_string_pretty(&c.export(exclude_private)?)?;
            crate::paths::write_atomic(&target, text.as_bytes()).map_err(|e| {
                crate::error::other(format!("cannot write {}: {e}", target.display()))
            })?;
            Ok(format!("Exported to {}", target.display()))
        })
        .await
    }

    #[tool(
        description = "Import memories from a wt-memory export file; records already present are skipped. Dry run by default (reports would_import/would_skip); pass dry_run=false to import. Returns JSON counts.",
        annotations(
            title = "Import memories",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn import_memories(
        &self,
        Parameters(args): Parameters<ImportArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let path = valid!(check_non_empty("file_path", &args.file_path));
        let path = self.project.path.join(path);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                return Ok(error_result(format!(
                    "import: cannot read {}: {e}",
                    path.display()
                )))
            }
        };
        let req = ops::Import {
            document: crate::hygiene::decode_lossy(&bytes),
            dry_run: args.dry_run,
            snapshot_as: Some("import".into()),
        };
        self.json(move |c| c.import(&req)).await
    }

    #[tool(
        description = "Record a follow-up task in the project's persistent todo list (survives the session). Returns a confirmation.",
        annotations(
            title = "Add todo",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn add_todo(
        &self,
        Parameters(args): Parameters<AddTodoArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let content = valid!(check_non_empty("content", &args.content)).to_string();
        let tags = tag_list(&args.tags);
        self.text(move |c| {
            c.todo_add(&content, &tags)?;
            Ok(ops::todo_saved(&content))
        })
        .await
    }

    #[tool(
        description = "List the project's open todos. Returns a JSON array of records (id, content, tags, created_at).",
        annotations(title = "List todos", read_only_hint = true, open_world_hint = false)
    )]
    async fn list_todos(&self) -> Result<CallToolResult, ErrorData> {
        self.json(|c| c.todo_list()).await
    }

    #[tool(
        description = "Mark a todo done (removes it from the list) by its id or a unique id prefix from list_todos. Returns a confirmation.",
        annotations(
            title = "Complete todo",
            read_only_hint = false,
            destructive_hint = true,
            open_world_hint = false
        )
    )]
    async fn complete_todo(
        &self,
        Parameters(args): Parameters<TodoIdArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let id = valid!(check_non_empty("id", &args.id)).to_string();
        self.text(move |c| Ok(ops::todo_done_line(&c.todo_done(&id)?.content)))
            .await
    }

    #[tool(
        description = "Memories created within a date range (ISO 8601; give since, until or both). Use for 'what did we learn last week'. Returns a JSON array of records.",
        annotations(
            title = "Recall by date",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn recall_by_date(
        &self,
        Parameters(args): Parameters<DateRangeArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = valid!(check_limit(args.limit));
        let (since, until) = (args.since.trim(), args.until.trim());
        if since.is_empty() && until.is_empty() {
            return Ok(error_result("give since, until or both (ISO 8601 dates)"));
        }
        let req = valid!(ops::Recall {
            limit,
            ..ops::Recall::default()
        }
        .with_dates(
            Some(since).filter(|s| !s.is_empty()),
            Some(until).filter(|u| !u.is_empty()),
        )
        .map_err(|e| e.to_string()));
        self.json(move |c| c.recall(&req)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(SERVER_INSTRUCTIONS)
    }
}

/// Serve MCP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio() -> anyhow::Result<()> {
    let project = config::project_dir(None);
    eprintln!(
        "wt-mcp-server {}: project directory {} ({})",
        env!("CARGO_PKG_VERSION"),
        project.path.display(),
        project.source.describe()
    );
    let (stdin, stdout) = rmcp::transport::stdio();
    let service = MemoryServer::new(project)
        .serve(LineTransport::new(stdin, stdout))
        .await?;
    service.waiting().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_accept_csv_and_lists_and_drop_blanks() {
        assert_eq!(Tags::Csv(" a, ,b,a ".into()).to_list(), ["a", "b"]);
        assert_eq!(
            Tags::List(vec!["x".into(), " ".into(), "y".into()]).to_list(),
            ["x", "y"]
        );
        assert!(Tags::Csv(" , ".into()).to_list().is_empty());
    }

    #[test]
    fn forget_takes_only_full_ids() {
        let id = "2de8a1b3-6c1e-4f0a-9b7d-0c5e8f1a2b3c";
        assert_eq!(check_full_id(&format!(" {id} ")).unwrap(), id);
        assert_eq!(check_full_id(&id.to_uppercase()).unwrap(), id);
        for bad in [
            "2",
            "2de8a1b3",
            "2de8a1b3-6c1e-4f0a-9b7d",
            "--all",
            "",
            "  ",
        ] {
            assert!(check_full_id(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_full_id("2de8a1b3").unwrap_err().contains("full"));
    }

    #[test]
    fn export_target_stays_inside_the_project_and_keeps_existing_files() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("proj");
        std::fs::create_dir_all(project.join("docs")).unwrap();
        std::fs::write(project.join("NOTES.md"), "mine").unwrap();
        std::fs::write(tmp.path().join("outside.json"), "").unwrap();
        std::os::unix::fs::symlink(tmp.path(), project.join("escape")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside.json"), project.join("link.json"))
            .unwrap();
        let root = project.canonicalize().unwrap();
        let ok = |p: &str| export_target(&project, p, false);
        assert_eq!(ok("mem.json").unwrap(), root.join("mem.json"));
        assert_eq!(ok("./docs/mem.json").unwrap(), root.join("docs/mem.json"));
        assert_eq!(ok("docs/../mem.json").unwrap(), root.join("mem.json"));
        assert_eq!(
            ok("new/dir/mem.json").unwrap(),
            root.join("new/dir/mem.json")
        );
        let absolute = root.join("docs/abs.json");
        assert_eq!(ok(absolute.to_str().unwrap()).unwrap(), absolute);
        for escape in [
            "../outside-export.json",
            "docs/../../x.json",
            "new/../../x.json",
            "/tmp/x.json",
            "escape/x.json",
            "link.json",
            "..",
        ] {
            let err = export_target(&project, escape, true).unwrap_err();
            assert!(err.contains("outside the project"), "{escape}: {err}");
        }
        for dir in ["docs", ".", "docs/.."] {
            let err = export_target(&project, dir, true).unwrap_err();
            assert!(err.contains("is a directory"), "{dir}: {err}");
        }
        let existing = ok("NOTES.md").unwrap_err();
        assert!(existing.contains("overwrite"), "{existing}");
        assert_eq!(
            export_target(&project, "NOTES.md", true).unwrap(),
            root.join("NOTES.md")
        );
    }

    #[test]
    fn every_tool_has_an_object_schema_and_annotations() {
        let tools = MemoryServer::tool_router().list_all();
        assert_eq!(tools.len(), 26);
        for tool in &tools {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            let hints = tool.annotations.as_ref().expect("annotated");
            assert!(
                hints.read_only_hint.is_some(),
                "{} lacks read_only_hint",
                tool.name
            );
            if std::env::var_os("WT_MCP_DUMP_TOOLS").is_some() {
                println!("{}", serde_json::to_string(tool).unwrap());
            }
        }
        let recall = tools.iter().find(|t| t.name == "recall").unwrap();
        assert_eq!(
            recall.input_schema["required"],
            serde_json::json!(["query"])
        );
    }
}
