//! `wt-mcp-server`: the `wt-memory` CLI exposed as MCP tools over stdio.
//!
//! Every tool runs `wt-memory` as a child process (through [`crate::runner`]) in the project
//! directory, so the agent sees exactly the store and the logic the hooks see. The server itself
//! never opens a store. A failing command becomes a tool result with `isError: true` carrying the
//! CLI's stderr; nothing a tool call does may take the server down.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorData, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{schemars, tool, tool_handler, tool_router, RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, Mutex};

use crate::runner::{self, Invocation, RunError};

/// The name the server reports in `initialize` (`serverInfo.name`) and in `memory_health`: the
/// binary's, not the crate's (`wt-memory` is the CLI).
pub const SERVER_NAME: &str = "wt-mcp-server";

/// Default time a `wt-memory` call may take before it is killed.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Sync (git network work) and import (many writes) get longer.
const LONG_TIMEOUT: Duration = Duration::from_secs(60);
/// Overrides the default timeout in seconds (the long one becomes twice this); for slow machines.
const TIMEOUT_ENV: &str = "WT_MCP_TIMEOUT_SECS";

const SERVER_INSTRUCTIONS: &str = "Persistent memory for this project, shared with the memory hooks. \
Before non-trivial work, `recall` what earlier sessions learned about the topic; after a decision, a \
non-obvious fix or a discovered convention, `remember` it (one self-contained fact per memory). Use \
`add_todo`/`list_todos` for follow-ups that outlive the session. Maintenance tools (`audit`, `dedup`, \
`cleanup`) default to dry runs.";

/// Where the server runs `wt-memory` from, and why.
#[derive(Debug, Clone)]
pub struct ProjectDir {
    pub path: PathBuf,
    /// True when `CLAUDE_PROJECT_DIR` named it; false when it is the server's own working directory.
    pub from_env: bool,
}

impl ProjectDir {
    /// `CLAUDE_PROJECT_DIR` when set and non-empty, else the server's working directory.
    pub fn from_env() -> Self {
        match std::env::var_os("CLAUDE_PROJECT_DIR").filter(|v| !v.is_empty()) {
            Some(dir) => ProjectDir {
                path: PathBuf::from(dir),
                from_env: true,
            },
            None => ProjectDir {
                path: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
                from_env: false,
            },
        }
    }

    fn source(&self) -> &'static str {
        if self.from_env {
            "CLAUDE_PROJECT_DIR"
        } else {
            "server working directory (CLAUDE_PROJECT_DIR is not set)"
        }
    }
}

/// The `wt-memory` binary to run. An explicit `WT_MEMORY_BIN` that points nowhere is reported
/// rather than silently replaced by another binary.
fn locate_cli() -> Result<PathBuf, String> {
    if let Some(explicit) = std::env::var_os("WT_MEMORY_BIN").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(explicit);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "WT_MEMORY_BIN is set to {}, which is not a file; fix or unset it",
                path.display()
            ))
        };
    }
    runner::find_wt_memory().ok_or_else(|| RunError::NotFound.to_string())
}

fn timeout_for(long: bool) -> Duration {
    let base = std::env::var(TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&secs| secs > 0)
        .map(Duration::from_secs);
    match (base, long) {
        (Some(b), false) => b,
        (Some(b), true) => b * 2,
        (None, false) => DEFAULT_TIMEOUT,
        (None, true) => LONG_TIMEOUT,
    }
}

/// Tool result text for a successful run: pretty JSON when stdout is JSON, otherwise the text.
fn render_stdout(stdout: &str) -> String {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return "(no output)".to_string();
    }
    match serde_json::from_str::<serde_json::Value>(trimmed) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_else(|_| trimmed.to_string()),
        Err(_) => trimmed.to_string(),
    }
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

/// One planned `wt-memory` call.
struct CliCall {
    args: Vec<String>,
    stdin: Option<Vec<u8>>,
    long: bool,
}

impl CliCall {
    fn new<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        CliCall {
            args: args.into_iter().map(Into::into).collect(),
            stdin: None,
            long: false,
        }
    }
    fn stdin(mut self, text: &str) -> Self {
        self.stdin = Some(text.as_bytes().to_vec());
        self
    }
    fn long(mut self) -> Self {
        self.long = true;
        self
    }
    fn arg(mut self, a: impl Into<String>) -> Self {
        self.args.push(a.into());
        self
    }
    fn arg_pair(self, flag: &str, value: impl Into<String>) -> Self {
        self.arg(flag).arg(value)
    }
    /// Free text (ids, queries, paths) goes after `--` so a leading `-` is never read as an option.
    fn positional(self, value: &str) -> Self {
        self.arg("--").arg(value)
    }
}

/// How a `wt-memory` call ended, before it is turned into a tool result.
enum CliOutcome {
    Ok(String),
    Failed(String),
}

fn run_blocking(dir: &Path, call: &CliCall) -> CliOutcome {
    if !dir.is_dir() {
        return CliOutcome::Failed(format!(
            "project directory {} does not exist",
            dir.display()
        ));
    }
    let bin = match locate_cli() {
        Ok(bin) => bin,
        Err(msg) => return CliOutcome::Failed(msg),
    };
    let mut inv = Invocation::new(call.args.clone())
        .cwd(dir)
        .timeout(timeout_for(call.long));
    if let Some(bytes) = &call.stdin {
        inv = inv.stdin(bytes);
    }
    let command = call
        .args
        .iter()
        .take_while(|a| !a.starts_with('-'))
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    match inv.run_with(&bin) {
        Ok(out) if out.success() => CliOutcome::Ok(out.stdout),
        Ok(out) => {
            let mut msg = format!("wt-memory {command} failed (exit {})", out.status);
            for part in [out.stderr.trim(), out.stdout.trim()] {
                if !part.is_empty() {
                    msg.push_str(":\n");
                    msg.push_str(part);
                }
            }
            CliOutcome::Failed(msg)
        }
        Err(e) => CliOutcome::Failed(format!("wt-memory {command}: {e}")),
    }
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
    /// Normalised `a,b` form, or `None` when no tag was given.
    fn to_csv(&self) -> Option<String> {
        let items: Vec<String> = match self {
            Tags::Csv(s) => s.split(',').map(|t| t.trim().to_string()).collect(),
            Tags::List(v) => v.iter().map(|t| t.trim().to_string()).collect(),
        };
        let items: Vec<String> = items.into_iter().filter(|t| !t.is_empty()).collect();
        (!items.is_empty()).then(|| items.join(","))
    }
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

/// Retrieval strategy for `recall`.
#[derive(Debug, Clone, Copy, Default, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "lowercase")]
pub enum RecallMode {
    /// Semantic and keyword search combined; the best default.
    #[default]
    Hybrid,
    /// Meaning only.
    Semantic,
    /// Most recent first.
    Temporal,
    /// Follows cause/effect links.
    Causal,
    /// Follows associations between memories.
    Associative,
}

impl RecallMode {
    fn as_str(self) -> &'static str {
        match self {
            RecallMode::Hybrid => "hybrid",
            RecallMode::Semantic => "semantic",
            RecallMode::Temporal => "temporal",
            RecallMode::Causal => "causal",
            RecallMode::Associative => "associative",
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
    0.75
}
fn default_cleanup_threshold() -> f64 {
    0.2
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
    pub mode: RecallMode,
    /// Only memories carrying all these tags (comma-separated or a list).
    #[serde(default)]
    pub tags: Option<Tags>,
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

fn check_limit(limit: u32) -> Result<String, String> {
    if limit == 0 {
        Err("limit must be at least 1".to_string())
    } else {
        Ok(limit.to_string())
    }
}

fn check_threshold(threshold: f64) -> Result<String, String> {
    if (0.0..=1.0).contains(&threshold) {
        Ok(threshold.to_string())
    } else {
        Err(format!(
            "threshold must be between 0 and 1, got {threshold}"
        ))
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

/// The MCP server: one instance per stdio session.
#[derive(Clone)]
pub struct MemoryServer {
    project: ProjectDir,
    tool_router: ToolRouter<MemoryServer>,
}

impl MemoryServer {
    pub fn new(project: ProjectDir) -> Self {
        MemoryServer {
            project,
            tool_router: Self::tool_router(),
        }
    }

    async fn outcome(&self, call: CliCall) -> CliOutcome {
        let dir = self.project.path.clone();
        match tokio::task::spawn_blocking(move || run_blocking(&dir, &call)).await {
            Ok(outcome) => outcome,
            Err(e) => CliOutcome::Failed(format!("internal error while running wt-memory: {e}")),
        }
    }

    async fn run(&self, call: CliCall) -> Result<CallToolResult, ErrorData> {
        Ok(match self.outcome(call).await {
            CliOutcome::Ok(stdout) => text_result(render_stdout(&stdout)),
            CliOutcome::Failed(msg) => error_result(msg),
        })
    }

    /// The server's own view for `memory_health`, run in one blocking task.
    fn health_report(dir: &Path, project: &ProjectDir) -> (bool, serde_json::Value) {
        use serde_json::json;
        let mut report = json!({
            "server": {"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")},
            "project_dir": dir.display().to_string(),
            "project_dir_source": project.source(),
        });
        let bin = match locate_cli() {
            Ok(bin) => bin,
            Err(msg) => {
                report["healthy"] = json!(false);
                report["wt_memory"] = json!({"error": msg});
                return (false, report);
            }
        };
        let version = match run_blocking(dir, &CliCall::new(["--version"])) {
            CliOutcome::Ok(out) => out.trim().to_string(),
            CliOutcome::Failed(msg) => msg,
        };
        report["wt_memory"] = json!({"path": bin.display().to_string(), "version": version});
        let healthy = match run_blocking(dir, &CliCall::new(["health"])) {
            CliOutcome::Ok(out) => {
                report["health"] = json!(out.trim());
                true
            }
            CliOutcome::Failed(msg) => {
                report["health"] = json!(msg);
                false
            }
        };
        report["status"] = match run_blocking(dir, &CliCall::new(["status", "--json"])) {
            CliOutcome::Ok(out) => serde_json::from_str(out.trim()).unwrap_or(json!(out.trim())),
            CliOutcome::Failed(msg) => json!(msg),
        };
        report["healthy"] = json!(healthy);
        (healthy, report)
    }
}

#[tool_router]
impl MemoryServer {
    #[tool(
        description = "Save one fact to the project's persistent memory so later sessions (and the memory hooks) can use it. Use after a decision, a non-obvious fix, a discovered convention or gotcha. Write it self-contained; never include secrets. Returns {\"id\": ..., \"duplicate\": bool}; duplicate=true means the same content was already stored under that id.",
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
        valid!(check_non_empty("content", &args.content));
        let mut call = CliCall::new(["remember", "--type", args.memory_type.as_str(), "--json"]);
        if let Some(tags) = args.tags.as_ref().and_then(Tags::to_csv) {
            call = call.arg_pair("--tags", tags);
        }
        self.run(call.stdin(&args.content)).await
    }

    #[tool(
        description = "Search the project's memory for what earlier sessions learned about a topic. Use before starting non-trivial work, when something looks familiar, or when stuck. Memories from the current git branch rank first. Returns a JSON array of records (id, content, experience_type, tags, importance, created_at, ...), best match first; [] when nothing matches.",
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
        let mut call = CliCall::new(["recall", "--limit", &limit, "--mode", args.mode.as_str()]);
        if let Some(tags) = args.tags.as_ref().and_then(Tags::to_csv) {
            call = call.arg_pair("--tags", tags);
        }
        self.run(call.positional(args.query.trim())).await
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
        let context = valid!(check_non_empty("context", &args.context));
        self.run(CliCall::new(["proactive", "--limit", &limit]).positional(context))
            .await
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
        self.run(CliCall::new(["forget"]).positional(&id)).await
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
        let Some(tags) = args.tags.to_csv() else {
            return Ok(error_result(
                "tags are empty: give at least one non-blank tag",
            ));
        };
        self.run(CliCall::new(["forget", "--tags", &tags])).await
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
        let mut call = CliCall::new(["list", "--limit", &limit]);
        if let Some(ty) = args.memory_type {
            call = call.arg_pair("--type", ty.as_str());
        }
        self.run(call).await
    }

    #[tool(
        description = "Fetch one memory by id with all its fields (tags, metadata, importance, access count). Returns the JSON record, or {} when the id is unknown.",
        annotations(title = "Get memory", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_memory(
        &self,
        Parameters(args): Parameters<IdArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let id = valid!(check_non_empty("id", &args.id));
        self.run(CliCall::new(["get"]).positional(id)).await
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
        let mut call = CliCall::new(["context"]);
        if !args.topic.trim().is_empty() {
            call = call.positional(args.topic.trim());
        }
        self.run(call).await
    }

    #[tool(
        description = "Show the memory engine's tiers (working, session, long-term) and what each holds. Mostly for diagnosing memory behaviour. Returns JSON.",
        annotations(title = "Brain state", read_only_hint = true, open_world_hint = false)
    )]
    async fn brain(&self) -> Result<CallToolResult, ErrorData> {
        self.run(CliCall::new(["brain"])).await
    }

    #[tool(
        description = "Statistics of the project's memory: total count, counts per type, top tags, importance histogram and noise ratio. Use to judge whether maintenance (audit, cleanup) is worthwhile. Returns JSON.",
        annotations(title = "Memory stats", read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_stats(&self) -> Result<CallToolResult, ErrorData> {
        self.run(CliCall::new(["stats", "--json"])).await
    }

    #[tool(
        description = "Check that memory works here: the CLI's health check and store status, plus which project directory and which wt-memory binary (and version) this server uses. Use when other memory tools fail or return nothing unexpectedly. Returns JSON; an error result when memory is not usable.",
        annotations(
            title = "Memory health",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_health(&self) -> Result<CallToolResult, ErrorData> {
        let dir = self.project.path.clone();
        let project = self.project.clone();
        let joined = tokio::task::spawn_blocking(move || Self::health_report(&dir, &project)).await;
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
        let threshold = valid!(check_threshold(args.threshold));
        self.run(CliCall::new(["audit", "--threshold", &threshold, "--json"]))
            .await
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
        let threshold = valid!(check_threshold(args.threshold));
        let mut call = CliCall::new(["cleanup", "--threshold", &threshold]);
        if args.dry_run {
            call = call.arg("--dry-run");
        }
        self.run(call).await
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
        let threshold = valid!(check_threshold(args.threshold));
        let mut call = CliCall::new(["dedup", "--threshold", &threshold]);
        if args.dry_run {
            call = call.arg("--dry-run");
        }
        self.run(call).await
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
        self.run(CliCall::new(["sync"]).long()).await
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
        self.run(CliCall::new(["sync", "push"]).long()).await
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
        let mut call = CliCall::new(["sync", "pull"]).long();
        if !args.from_source.trim().is_empty() {
            call = call.arg_pair("--from", args.from_source.trim());
        }
        self.run(call).await
    }

    #[tool(
        description = "Show this machine's sync identity, when it last pushed and pulled, and the sources on the remote. Returns text.",
        annotations(title = "Sync status", read_only_hint = true, open_world_hint = true)
    )]
    async fn sync_status(&self) -> Result<CallToolResult, ErrorData> {
        self.run(CliCall::new(["sync", "status"])).await
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
        let mut call = CliCall::new(["export"]);
        if args.exclude_private {
            call = call.arg("--exclude-private");
        }
        let file = args.file_path.trim();
        if file.is_empty() {
            return self.run(call).await;
        }
        let target = valid!(export_target(&self.project.path, file, args.overwrite));
        let shown = target.display().to_string();
        Ok(
            match self.outcome(call.arg_pair("--output", shown.clone())).await {
                CliOutcome::Ok(_) => text_result(format!("Exported to {shown}")),
                CliOutcome::Failed(msg) => error_result(msg),
            },
        )
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
        let mut call = CliCall::new(["import"]).long();
        if args.dry_run {
            call = call.arg("--dry-run");
        }
        self.run(call.positional(path)).await
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
        valid!(check_non_empty("content", &args.content));
        let mut call = CliCall::new(["todo", "add"]);
        if let Some(tags) = args.tags.as_ref().and_then(Tags::to_csv) {
            call = call.arg_pair("--tags", tags);
        }
        self.run(call.stdin(&args.content)).await
    }

    #[tool(
        description = "List the project's open todos. Returns a JSON array of records (id, content, tags, created_at).",
        annotations(title = "List todos", read_only_hint = true, open_world_hint = false)
    )]
    async fn list_todos(&self) -> Result<CallToolResult, ErrorData> {
        self.run(CliCall::new(["todo", "list", "--json"])).await
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
        let id = valid!(check_non_empty("id", &args.id));
        self.run(CliCall::new(["todo", "done"]).positional(id))
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
        let mut call = CliCall::new(["recall", "--limit", &limit]);
        if !since.is_empty() {
            call = call.arg_pair("--since", since);
        }
        if !until.is_empty() {
            call = call.arg_pair("--until", until);
        }
        self.run(call).await
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

/// Largest incoming line (one JSON-RPC message); the same cap as rmcp's own stdio transport.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The stdio transport: newline-delimited JSON-RPC, with an answer for every line that is not a
/// message.
///
/// rmcp's own transport drops a line that is not JSON without a word, so the client waits for its
/// own timeout. Here a reader task takes each line: invalid UTF-8 or invalid JSON (truncated, lone
/// surrogate escapes, ...) gets a JSON-RPC parse error (-32700, id null), well-formed JSON that is
/// not a JSON-RPC message gets an invalid request error (-32600, with its id when it has one), a
/// malformed notification only a log line, and every message goes on to rmcp. Those answers and
/// rmcp's own messages are written as whole lines under one lock, so they never interleave.
pub struct LineTransport<W> {
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    writer: Arc<Mutex<Option<W>>>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> LineTransport<W> {
    /// Starts the reader task on `reader`; must run inside a Tokio runtime.
    pub fn new<R: AsyncRead + Send + Unpin + 'static>(reader: R, writer: W) -> Self {
        let writer = Arc::new(Mutex::new(Some(writer)));
        let (tx, incoming) = mpsc::channel(32);
        tokio::spawn(read_messages(BufReader::new(reader), tx, writer.clone()));
        LineTransport { incoming, writer }
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> Transport<RoleServer> for LineTransport<W> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let writer = self.writer.clone();
        let line = serde_json::to_vec(&item).map_err(io::Error::from);
        async move { write_line(&writer, line?).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        if let Some(mut w) = self.writer.lock().await.take() {
            w.flush().await?;
        }
        Ok(())
    }
}

/// Writes one message and its newline in one go, under the transport's lock.
async fn write_line<W: AsyncWrite + Unpin>(
    writer: &Mutex<Option<W>>,
    mut line: Vec<u8>,
) -> io::Result<()> {
    line.push(b'\n');
    let mut guard = writer.lock().await;
    let Some(w) = guard.as_mut() else {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "transport is closed",
        ));
    };
    w.write_all(&line).await?;
    w.flush().await
}

/// One line of input.
#[derive(Debug, PartialEq)]
enum RawLine {
    /// Its bytes, without the `\n`.
    Line(Vec<u8>),
    /// Longer than the cap: consumed and dropped; its length.
    TooLong(usize),
}

/// Reads up to and including the next `\n` (or the end of input), never buffering more than `max`
/// bytes of one line. `None` at the end of input.
async fn read_raw_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> io::Result<Option<RawLine>> {
    let mut line = Vec::new();
    let mut len = 0usize;
    let mut started = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            // End of input; an unterminated last line still counts.
            return Ok(started.then(|| finish_line(line, len, max)));
        }
        started = true;
        let newline = buf.iter().position(|&b| b == b'\n');
        let content = &buf[..newline.unwrap_or(buf.len())];
        len = len.saturating_add(content.len());
        if len <= max {
            line.extend_from_slice(content);
        } else {
            line = Vec::new();
        }
        let consumed = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(Some(finish_line(line, len, max)));
        }
    }
}

fn finish_line(line: Vec<u8>, len: usize, max: usize) -> RawLine {
    if len > max {
        RawLine::TooLong(len)
    } else {
        RawLine::Line(line)
    }
}

/// What to do with one line of input.
enum Incoming {
    /// A message for rmcp.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Blank: nothing to do.
    Blank,
    /// A malformed notification: logged, never answered (JSON-RPC forbids replies to notifications).
    Ignore { log: String },
    /// Answer with this error response and log why.
    Reply { response: Value, log: String },
}

fn error_response(id: Value, code: i32, message: String) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn parse_error(detail: String) -> Incoming {
    Incoming::Reply {
        response: error_response(Value::Null, -32700, format!("Parse error: {detail}")),
        log: format!("{detail}; answered with a parse error (-32700)"),
    }
}

/// Sorts one line (without its `\n`) into a message, an error answer or nothing.
fn classify(raw: &[u8]) -> Incoming {
    let line = raw.strip_suffix(b"\r").unwrap_or(raw);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Incoming::Blank;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return parse_error(format!("not UTF-8 ({e})")),
    };
    // Parsing into a Value first rejects what rmcp would silently drop: syntax errors, truncation,
    // lone surrogates in string escapes.
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => return parse_error(format!("not JSON ({e})")),
    };
    match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(message) => Incoming::Message(Box::new(message)),
        Err(e) => {
            let id = value.get("id");
            if id.is_none() && value.get("method").is_some_and(Value::is_string) {
                return Incoming::Ignore {
                    log: format!("malformed notification ignored ({e})"),
                };
            }
            let id = id
                .filter(|id| id.is_string() || id.is_number())
                .cloned()
                .unwrap_or(Value::Null);
            Incoming::Reply {
                response: error_response(id, -32600, format!("Invalid request: {e}")),
                log: format!(
                    "not a JSON-RPC message ({e}); answered with an invalid request error (-32600)"
                ),
            }
        }
    }
}

/// The reader task: classifies every line, answers the bad ones itself and hands messages to
/// rmcp. Ends (and so ends the session) at the end of input or when the output is gone.
async fn read_messages<R, W>(
    mut reader: R,
    tx: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    writer: Arc<Mutex<Option<W>>>,
) where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut number = 0u64;
    loop {
        let incoming = match read_raw_line(&mut reader, MAX_LINE_BYTES).await {
            Ok(None) => break,
            Ok(Some(RawLine::Line(line))) => classify(&line),
            Ok(Some(RawLine::TooLong(len))) => parse_error(format!(
                "message of {len} bytes exceeds the {MAX_LINE_BYTES}-byte limit"
            )),
            Err(e) => {
                eprintln!("wt-mcp-server: reading stdin failed: {e}");
                break;
            }
        };
        number += 1;
        match incoming {
            Incoming::Message(message) => {
                if tx.send(*message).await.is_err() {
                    break;
                }
            }
            Incoming::Blank => {}
            Incoming::Ignore { log } => eprintln!("wt-mcp-server: stdin line {number}: {log}"),
            Incoming::Reply { response, log } => {
                eprintln!("wt-mcp-server: stdin line {number}: {log}");
                let bytes = serde_json::to_vec(&response).unwrap_or_default();
                if let Err(e) = write_line(&writer, bytes).await {
                    eprintln!("wt-mcp-server: writing stdout failed: {e}");
                    break;
                }
            }
        }
    }
}

/// Serve MCP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio() -> anyhow::Result<()> {
    let project = ProjectDir::from_env();
    eprintln!(
        "wt-mcp-server {}: project directory {} ({})",
        env!("CARGO_PKG_VERSION"),
        project.path.display(),
        project.source()
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
        assert_eq!(Tags::Csv(" a, ,b ".into()).to_csv().as_deref(), Some("a,b"));
        assert_eq!(
            Tags::List(vec!["x".into(), " ".into(), "y".into()])
                .to_csv()
                .as_deref(),
            Some("x,y")
        );
        assert_eq!(Tags::Csv(" , ".into()).to_csv(), None);
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
    fn stdout_json_is_pretty_printed_and_text_kept() {
        assert_eq!(render_stdout("{\"a\":1}\n"), "{\n  \"a\": 1\n}");
        assert_eq!(render_stdout("ok\n"), "ok");
        assert_eq!(render_stdout("  \n"), "(no output)");
    }

    #[test]
    fn every_tool_has_an_object_schema_and_annotations() {
        let tools = MemoryServer::tool_router().list_all();
        assert_eq!(tools.len(), 24);
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

    fn reply_of(line: &[u8]) -> Value {
        match classify(line) {
            Incoming::Reply { response, log } => {
                assert!(!log.contains('\n'), "one log line: {log}");
                response
            }
            Incoming::Message(_) => panic!("{line:?} passed as a message"),
            Incoming::Blank => panic!("{line:?} taken as blank"),
            Incoming::Ignore { log } => panic!("{line:?} ignored: {log}"),
        }
    }

    #[test]
    fn lines_that_are_not_json_are_parse_errors_with_a_null_id() {
        for line in [
            &b"{"[..],
            b"not json",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","x":"\ud800"}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\"}",
        ] {
            let reply = reply_of(line);
            assert_eq!(reply["error"]["code"], -32700, "{reply}");
            assert_eq!(reply.get("id"), Some(&Value::Null), "{reply}");
        }
    }

    #[test]
    fn messages_pass_and_blank_lines_are_skipped() {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(matches!(classify(ping), Incoming::Message(_)));
        let mut crlf_bom = b"\xEF\xBB\xBF".to_vec();
        crlf_bom.extend_from_slice(ping);
        crlf_bom.extend_from_slice(b"\r");
        assert!(matches!(classify(&crlf_bom), Incoming::Message(_)));
        assert!(matches!(classify(b""), Incoming::Blank));
        assert!(matches!(classify(b" \t\r"), Incoming::Blank));
    }

    #[test]
    fn json_that_is_no_message_is_an_invalid_request_with_its_id() {
        let reply = reply_of(br#"{"jsonrpc":"2.0","id":"a"}"#);
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        assert_eq!(reply["id"], "a");
        let reply = reply_of(b"[1, 2]");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        assert_eq!(reply.get("id"), Some(&Value::Null), "{reply}");
    }

    #[tokio::test]
    async fn lines_are_read_whole_and_overlong_ones_dropped() {
        let mut input = &b"abc\n0123456789\n\nxy"[..];
        let mut lines = Vec::new();
        while let Some(line) = read_raw_line(&mut input, 8).await.unwrap() {
            lines.push(line);
        }
        assert_eq!(
            lines,
            [
                RawLine::Line(b"abc".to_vec()),
                RawLine::TooLong(10),
                RawLine::Line(Vec::new()),
                RawLine::Line(b"xy".to_vec()),
            ]
        );
    }

    #[test]
    fn positional_values_follow_a_double_dash() {
        let call = CliCall::new(["get"]).positional("--all");
        assert_eq!(call.args, ["get", "--", "--all"]);
    }
}
