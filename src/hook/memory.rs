//! Every memory operation of the hook is a `wt-memory` child process (the hook never opens the
//! store), bounded by the event's deadline.

use super::Ctx;
use crate::runner::Invocation;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// Inner timeouts of the previous implementation (reference 11); the event deadline cuts them shorter.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
const REMEMBER_TIMEOUT: Duration = Duration::from_secs(5);
/// Time kept back after a child call for formatting and printing.
const MARGIN: Duration = Duration::from_millis(150);

#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    pub id: String,
    pub content: String,
    pub tags: Vec<String>,
    /// `relevance_score` when numeric (`"N/A"` and missing mean unknown).
    pub relevance: Option<f64>,
}

/// `$WT_MEMORY_BIN` when set (an explicit override that points nowhere is an error, not a reason
/// to silently use another binary), else the runner's lookup.
fn wt_memory_bin() -> Option<PathBuf> {
    match std::env::var_os("WT_MEMORY_BIN").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            p.is_file().then_some(p)
        }
        None => crate::runner::find_wt_memory(),
    }
}

fn run(
    ctx: &Ctx,
    args: Vec<String>,
    stdin: Option<&[u8]>,
    cap: Duration,
) -> Result<String, String> {
    let name = args.first().cloned().unwrap_or_default();
    let bin =
        wt_memory_bin().ok_or("wt-memory not found (WT_MEMORY_BIN, next to the hook, PATH)")?;
    let timeout = cap.min(ctx.remaining().saturating_sub(MARGIN));
    if timeout < Duration::from_millis(100) {
        return Err(format!("no time left for wt-memory {name}"));
    }
    let mut inv = Invocation::new(args).cwd(&ctx.project_dir).timeout(timeout);
    if let Some(bytes) = stdin {
        inv = inv.stdin(bytes);
    }
    let started = std::time::Instant::now();
    let out = inv
        .run_with(&bin)
        .map_err(|e| format!("wt-memory {name}: {e}"))?;
    super::log::debug(
        &ctx.event,
        &format!(
            "wt-memory {name}: exit {} in {:?}",
            out.status,
            started.elapsed()
        ),
    );
    if !out.success() {
        let first = out
            .stderr
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!("wt-memory {name} exited {}: {first}", out.status));
    }
    Ok(out.stdout)
}

/// Records from a `recall`/`proactive` answer; entries without id or content are skipped.
pub fn parse_records(stdout: &str) -> Result<Vec<Memory>, String> {
    let value: Value = serde_json::from_str(stdout.trim())
        .map_err(|e| format!("wt-memory answer is not JSON: {e}"))?;
    let items = value
        .as_array()
        .ok_or("wt-memory answer is not a JSON array")?;
    Ok(items
        .iter()
        .filter_map(|item| {
            let id = item.get("id")?.as_str()?.to_string();
            let content = item.get("content")?.as_str()?.to_string();
            let tags = item
                .get("tags")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            let relevance = item.get("relevance_score").and_then(Value::as_f64);
            Some(Memory {
                id,
                content,
                tags,
                relevance,
            })
        })
        .collect())
}

pub fn proactive(ctx: &Ctx, query: &str, limit: usize) -> Result<Vec<Memory>, String> {
    // The query goes after `--`: a Bash command such as `--version` must not become a flag.
    let args = vec![
        "proactive".into(),
        "--limit".into(),
        limit.to_string(),
        "--".into(),
        query.into(),
    ];
    parse_records(&run(ctx, args, None, QUERY_TIMEOUT)?)
}

/// Hybrid recall, optionally restricted to memories carrying `tags`.
pub fn recall(
    ctx: &Ctx,
    query: &str,
    limit: usize,
    tags: Option<&str>,
) -> Result<Vec<Memory>, String> {
    let mut args: Vec<String> = vec![
        "recall".into(),
        "--limit".into(),
        limit.to_string(),
        "--mode".into(),
        "hybrid".into(),
    ];
    if let Some(t) = tags {
        args.extend(["--tags".into(), t.into()]);
    }
    args.extend(["--".into(), query.into()]);
    parse_records(&run(ctx, args, None, QUERY_TIMEOUT)?)
}

/// Store `content`; returns the id (the existing one when the CLI found the same content).
pub fn remember(ctx: &Ctx, content: &str, ty: &str, tags: &str) -> Result<String, String> {
    let args = vec![
        "remember".into(),
        "--type".into(),
        ty.into(),
        "--tags".into(),
        tags.into(),
        "--json".into(),
    ];
    let out = run(ctx, args, Some(content.as_bytes()), REMEMBER_TIMEOUT)?;
    let id = serde_json::from_str::<Value>(out.trim())
        .ok()
        .and_then(|v| v.get("id").and_then(Value::as_str).map(String::from))
        .unwrap_or_else(|| out.trim().to_string());
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_read_defensively() {
        let out = r#"[{"id":"a","content":"x","tags":["t"],"relevance_score":0.5},
            {"id":"b","content":"y","relevance_score":"N/A"},{"content":"no id"},{"id":"c"}]"#;
        let m = parse_records(out).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].relevance, Some(0.5));
        assert_eq!(m[0].tags, vec!["t"]);
        assert_eq!(m[1].relevance, None);
        assert!(parse_records("{}").is_err());
        assert!(parse_records("oops").is_err());
    }
}
