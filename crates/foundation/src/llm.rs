//! The one runner of the paid model behind `claude -p`: Stop's insight extraction and `enrich`
//! call it; tests put a contract-faithful fake `claude` on PATH.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Set for the `claude -p` child so the hooks it would run do nothing (no recursion).
pub const DISABLE_ENV: &str = "WT_HOOK_DISABLED";

/// How long one model call may take.
pub const LLM_TIMEOUT: Duration = Duration::from_secs(30);

/// The `claude` CLI on PATH.
pub fn claude_bin() -> Option<PathBuf> {
    which::which("claude").ok()
}

/// Run `claude -p --model haiku` on `prompt` with hooks disabled for the child, `CLAUDECODE`
/// removed (the CLI refuses to nest otherwise), in its own process group so a timeout kills
/// everything it started.
pub fn run_claude(
    bin: &Path,
    prompt: &str,
    timeout: Duration,
    cwd: &Path,
) -> Result<String, String> {
    // A lean request (a fraction of the default's size, measured with the real CLI:
    // docs/performance.md, "Figures moved from code comments"): no tools, no MCP server (not
    // even the project's own, which would start a second wt-mcp-server), no hooks, no CLAUDE.md
    // and no auto memory; the prompt carries everything the model needs.
    let args = [
        "-p",
        "--model",
        "haiku",
        "--no-session-persistence",
        "--strict-mcp-config",
        "--tools",
        "",
        "--settings",
        r#"{"disableAllHooks": true}"#,
    ];
    let out = crate::child::Child::new(bin, args)
        .stdin(prompt.as_bytes())
        .env_remove("CLAUDECODE")
        .env("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
        .env("CLAUDE_CODE_DISABLE_CLAUDE_MDS", "1")
        .env(DISABLE_ENV, "1")
        .dir(cwd)
        .own_process_group()
        .run(timeout)
        .map_err(|e| match e {
            crate::child::ChildError::Timeout(_) => format!(
                "claude did not answer within {}s and was killed",
                timeout.as_secs()
            ),
            other => other.to_string(),
        })?;
    if !out.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let how = out
            .code
            .map_or_else(|| "on a signal".to_string(), |c| format!("with {c}"));
        return Err(format!(
            "claude exited {how}: {}",
            crate::hygiene::truncate_with_ellipsis(
                &err.split_whitespace().collect::<Vec<_>>().join(" "),
                200
            )
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
