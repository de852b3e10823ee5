//! One handler per Claude Code event. Each returns the `additionalContext` text to inject, or None.

use super::cache::{dedup_key, SessionState};
use super::format::{self, block, Budget, IdBook, LineOptions, PROMPT_BUDGET, TOOL_BUDGET};
use super::input::HookInput;
use super::memory;
use super::{log, Ctx};
use crate::hygiene::truncate_chars;
use crate::rank::QueryKind;
use crate::record::MemoryRecord;
use regex::Regex;
use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

/// A long prompt is scored whole and sentence by sentence (recall::sentences), so more of it
/// than the previous system's 200 characters can be used.
const PROMPT_QUERY_CHARS: usize = 1000;
const BASH_QUERY_CHARS: usize = 200;
const ERROR_QUERY_CHARS: usize = 300;
/// Lines of an error text that make its query.
const MAX_ERROR_LINES: usize = 6;
const SUBAGENT_QUERY_CHARS: usize = 300;

pub fn dispatch(ctx: &Ctx, input: &HookInput) -> Option<String> {
    let result = match ctx.event.as_str() {
        "SessionStart" => session_start(ctx, input),
        "UserPromptSubmit" => user_prompt_submit(ctx, input),
        "PreToolUse" => pre_tool_use(ctx, input),
        "PostToolUse" => post_tool_use(ctx, input),
        "PostToolUseFailure" => post_tool_use_failure(ctx, input),
        "SubagentStart" => subagent_start(ctx, input),
        "Stop" => {
            stop(ctx, input);
            Ok(None)
        }
        "SessionEnd" => {
            session_end(ctx, input);
            Ok(None)
        }
        // SubagentStop: any output would keep the subagent running (Claude Code treats SubagentStop output as a reason to continue). SessionEnd,
        // PreCompact and future events: nothing to do.
        other => {
            log::debug(other, "event not handled: nothing printed");
            Ok(None)
        }
    };
    result.unwrap_or_else(|e| {
        log::error(&ctx.event, &e);
        None
    })
}

/// Format `memories` under `header` with the session's MEM ids, and remember the ids used.
fn render(
    state: &mut SessionState,
    header: &str,
    footer: Option<&str>,
    memories: &[MemoryRecord],
    budget: Budget,
    max_chars: usize,
) -> Option<String> {
    let mut ids = IdBook::new(Some(&mut state.mem_ids));
    let opts = LineOptions {
        floor: true,
        with_ids: true,
        per_memory: budget.per_memory,
        redact: false,
    };
    let lines = format::memory_lines(memories, &mut ids, &mut HashSet::new(), &opts);
    block(header, &lines, footer, max_chars)
}

/// Record dedup keys and MEM ids in the session cache (merged under its lock).
fn save_session(ctx: &Ctx, keys: &[String], state: &SessionState) {
    let Some(cache) = &ctx.session else { return };
    let now = chrono::Utc::now().timestamp();
    let result = cache.update(ctx.deadline, |s| {
        for k in keys {
            s.keys.insert(k.clone(), now);
        }
        for (short, full) in &state.mem_ids {
            s.mem_ids
                .entry(short.clone())
                .or_insert_with(|| full.clone());
        }
    });
    if let Err(e) = result {
        log::error(&ctx.event, &e);
    }
}

fn load_session(ctx: &Ctx) -> SessionState {
    ctx.session.as_ref().map(|c| c.load()).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// SessionStart

fn session_start(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    let source = input.str("source").unwrap_or("");
    if let Some(cache) = &ctx.session {
        if matches!(source, "startup" | "clear") {
            cache.reset(ctx.deadline)?;
        }
        super::cache::sweep_old(&crate::paths::runtime_dir(), super::cache::MAX_AGE);
    }
    let mut state = load_session(ctx);
    let mut seen = HashSet::new();
    let mut parts = Vec::new();
    let mut left = PROMPT_BUDGET.total;

    match memory::recall(
        ctx,
        "cheat-sheet operational",
        QueryKind::Prompt,
        5,
        Some("cheat-sheet"),
    ) {
        Ok(sheet) => {
            let opts = LineOptions {
                floor: false,
                with_ids: false,
                per_memory: PROMPT_BUDGET.per_memory,
                redact: false,
            };
            let lines = format::memory_lines(&sheet, &mut IdBook::new(None), &mut seen, &opts);
            if let Some(text) = block("=== OPERATIONAL CHEAT SHEET ===", &lines, None, left) {
                left = left.saturating_sub(text.chars().count() + 2);
                parts.push(text);
            }
        }
        Err(e) => log::error(&ctx.event, &format!("cheat sheet: {e}")),
    }

    let query = project_query(ctx);
    match memory::proactive(ctx, &query, QueryKind::Prompt, 5) {
        Ok(found) => {
            let mut ids = IdBook::new(Some(&mut state.mem_ids));
            let opts = LineOptions {
                floor: true,
                with_ids: true,
                per_memory: PROMPT_BUDGET.per_memory,
                redact: false,
            };
            let lines = format::memory_lines(&found, &mut ids, &mut seen, &opts);
            if let Some(text) = block("=== PROJECT CONTEXT ===", &lines, None, left) {
                parts.push(text);
            }
        }
        Err(e) => log::error(&ctx.event, &format!("project context: {e}")),
    }
    if parts.is_empty() {
        return Ok(None);
    }
    save_session(ctx, &[], &state);
    Ok(Some(parts.join("\n\n")))
}

/// `Project: <name>. Changed files: <up to 10 paths>` (recent commits, else the working tree).
fn project_query(ctx: &Ctx) -> String {
    let name = ctx
        .project_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".into());
    let git = |args: &[&str]| crate::project::git(&ctx.project_dir, args).filter(|s| !s.is_empty());
    let changed =
        git(&["diff", "--name-only", "HEAD~5", "HEAD"]).or_else(|| git(&["diff", "--name-only"]));
    match changed {
        Some(files) => {
            let files: Vec<&str> = files.lines().take(10).collect();
            format!("Project: {name}. Changed files: {}", files.join(", "))
        }
        None => format!("Project: {name}."),
    }
}

// ---------------------------------------------------------------------------------------------
// UserPromptSubmit

/// The OpenSpec change named in a prompt: `opsx:<verb> <change>` or `openspec-<verb>… <change>`
/// (`explore` is deliberately not a verb here).
pub fn change_name(prompt: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?:opsx:|openspec-)(?:apply|continue|verify|archive|sync|ff|new)[\w-]*\s+([A-Za-z0-9][\w.-]*)")
            .unwrap()
    });
    re.captures(prompt).map(|c| c[1].to_string())
}

fn user_prompt_submit(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    let Some(prompt) = input.text("prompt") else {
        return Ok(None);
    };
    let mut parts = Vec::new();
    let mut left = PROMPT_BUDGET.total;

    let root =
        crate::project::toplevel(&ctx.project_dir).unwrap_or_else(|| ctx.project_dir.clone());
    let rules = crate::rules::load_rules(&root);
    let matching = crate::rules::matching_rules(&rules, prompt);
    if !matching.is_empty() {
        let lines: Vec<String> = matching
            .iter()
            .map(|r| format!("[{}] {}", r.id, format::clean_content(&r.content, true)))
            .collect();
        if let Some(text) = block(
            "=== MANDATORY RULES ===",
            &lines,
            Some("==========================="),
            left,
        ) {
            left = left.saturating_sub(text.chars().count() + 1);
            parts.push(text);
        }
    }

    let change = change_name(prompt);
    let short = truncate_chars(prompt.trim(), PROMPT_QUERY_CHARS);
    let query = match &change {
        Some(c) => format!("{c} {short}"),
        None => short.to_string(),
    };
    if claim_key(ctx, &dedup_key("UserPromptSubmit", "", &query))? {
        let mut found = memory::proactive(ctx, &query, QueryKind::Prompt, 5).unwrap_or_else(|e| {
            log::error(&ctx.event, &e);
            Vec::new()
        });
        if let Some(c) = &change {
            // Memories tagged with the change belong here whatever their query score.
            match memory::recall(ctx, c, QueryKind::Prompt, 3, Some(&format!("change:{c}"))) {
                Ok(tagged) => found.extend(tagged.into_iter().map(|m| MemoryRecord {
                    relevance_score: None,
                    ..m
                })),
                Err(e) => log::error(&ctx.event, &e),
            }
        }
        let header = "=== PROJECT MEMORY — If any memory below directly answers the user's question, cite it in your response ===";
        let header = match &change {
            Some(c) => format!("{header}\nChange: {c}\nRelevant past experience:"),
            None => format!("{header}\nRelevant past experience:"),
        };
        let mut state = load_session(ctx);
        if let Some(text) = render(
            &mut state,
            &header,
            Some("=== END ==="),
            &found,
            PROMPT_BUDGET,
            left,
        ) {
            parts.push(text);
            save_session(ctx, &[], &state);
        }
    } else {
        log::debug(&ctx.event, "prompt already answered in this session");
    }
    Ok((!parts.is_empty()).then(|| parts.join("\n")))
}

// ---------------------------------------------------------------------------------------------
// Tool events

/// A file's path as memories name it: relative to the project (`crates/api/src/state.rs`, so the
/// crate or module is part of the query), else its last three components. (The previous system
/// kept two, `src/state.rs`, which drops the module a memory is about.)
pub fn path_query(path: &str, project_dir: &Path) -> String {
    if let Ok(rel) = Path::new(path).strip_prefix(project_dir) {
        let rel = rel.to_string_lossy();
        if !rel.is_empty() {
            return rel.into_owned();
        }
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    parts[parts.len().saturating_sub(3)..].join("/")
}

/// A tool call's query: its text, kind and the header of what it injects.
struct ToolQuery {
    text: String,
    kind: QueryKind,
    header: &'static str,
}

/// The query for a tool whose calls get memory, None for the others.
fn tool_query(ctx: &Ctx, tool: &str, input: &HookInput, tools: &[&str]) -> Option<ToolQuery> {
    if !tools.contains(&tool) {
        return None;
    }
    match tool {
        "Bash" => input.tool_input_str("command").map(|c| ToolQuery {
            text: truncate_chars(c.trim(), BASH_QUERY_CHARS).to_string(),
            kind: QueryKind::Command,
            header: "=== MEMORY: Context for this command ===",
        }),
        _ => input
            .tool_input_str("file_path")
            .map(|p| path_query(p, &ctx.project_dir))
            .filter(|q| !q.is_empty())
            .map(|text| ToolQuery {
                text,
                kind: QueryKind::Path,
                header: "=== MEMORY: Context for this file ===",
            }),
    }
}

/// Atomically record `key` in the session cache; false when it was already there. Claimed before
/// the query runs, so parallel hooks with the same query inject once, and a query that times out
/// is not retried on every later call (the agent is better served by a fast hook).
fn claim_key(ctx: &Ctx, key: &str) -> Result<bool, String> {
    let Some(cache) = &ctx.session else {
        return Ok(true);
    };
    let mut fresh = false;
    let now = chrono::Utc::now().timestamp();
    cache.update(ctx.deadline, |s| {
        if !s.keys.contains_key(key) {
            s.keys.insert(key.to_string(), now);
            fresh = true;
        }
    })?;
    Ok(fresh)
}

/// Proactive recall for a tool call, once per session per query.
fn tool_memory(ctx: &Ctx, tool: &str, query: &ToolQuery) -> Result<Option<String>, String> {
    if !claim_key(ctx, &dedup_key(&ctx.event, tool, &query.text))? {
        log::debug(&ctx.event, &format!("dedup hit for {tool}"));
        return Ok(None);
    }
    let found = memory::proactive(ctx, &query.text, query.kind, 2)?;
    Ok(inject_for_tool(ctx, query.header, &found))
}

/// Format memories for a tool event within its budget, recording what was injected.
fn inject_for_tool(ctx: &Ctx, header: &str, found: &[MemoryRecord]) -> Option<String> {
    let mut state = load_session(ctx);
    let text = render(
        &mut state,
        header,
        None,
        found,
        TOOL_BUDGET,
        TOOL_BUDGET.total,
    );
    if text.is_some() {
        save_session(ctx, &[], &state);
    }
    text
}

fn pre_tool_use(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    let tool = input.str("tool_name").unwrap_or("");
    if matches!(tool, "Agent" | "Task") {
        // Kept for the SubagentStart that follows, whose input has no task text (SubagentStart payloads carry no task text).
        if let (Some(cache), Some(prompt)) = (&ctx.session, input.tool_input_str("prompt")) {
            let prompt = truncate_chars(prompt, SUBAGENT_QUERY_CHARS).to_string();
            cache.update(ctx.deadline, |s| s.pending_subagent_prompt = Some(prompt))?;
        }
        return Ok(None);
    }
    let Some(query) = tool_query(ctx, tool, input, &["Bash", "Edit", "Write"]) else {
        return Ok(None);
    };
    tool_memory(ctx, tool, &query)
}

fn post_tool_use(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    let tool = input.str("tool_name").unwrap_or("");
    // Only Read and Bash inject (the other tools' inputs say too little to query by); Edit, Write, Agent/Task, Grep and the rest stay quiet.
    let Some(query) = tool_query(ctx, tool, input, &["Read", "Bash"]) else {
        return Ok(None);
    };
    // Recall before the commit is saved: the agent learns nothing from its own commit echoed back.
    let injected = tool_memory(ctx, tool, &query);
    if tool == "Bash" {
        if let Some(command) = input.tool_input_str("command") {
            save_commit(ctx, command, input.tool_input_str("description"));
        }
    }
    injected
}

/// A `git commit` run through Bash is stored once as a Learning memory.
fn save_commit(ctx: &Ctx, command: &str, description: Option<&str>) {
    let Some(message) = super::commits::commit_message(command, description) else {
        return;
    };
    let content = format!("Committed: {message}");
    let key = dedup_key("WriteSave", "commit", &content);
    if load_session(ctx).keys.contains_key(&key) {
        return;
    }
    // The anchor key: the files the commit changed, so reading one of them finds it.
    let anchor = crate::project::git(
        &ctx.project_dir,
        &["diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD"],
    )
    .map(|files| files.lines().take(10).collect::<Vec<_>>().join(" "))
    .filter(|files| !files.is_empty());
    match memory::remember(
        ctx,
        &content,
        "Learning",
        "phase:commit-save,source:hook",
        &Vec::from_iter(anchor),
        "commit",
    ) {
        Ok(id) => {
            log::debug(&ctx.event, &format!("commit saved as {id}"));
            save_session(ctx, &[key], &SessionState::default());
        }
        Err(e) => log::error(&ctx.event, &format!("commit-save: {e}")),
    }
}

/// The error text worth searching for: the lines that say what went wrong (a panic and its
/// message, `error:` lines, exception and error codes), not the build and test-runner chatter
/// around them (`Compiling`, `test … ok`, `test result:`), and never Bash's `Exit code N` line.
/// Falls back to the start of the text when no line stands out. One line per query part.
pub fn error_query(error: &str) -> Option<String> {
    static SAYS_WHAT: OnceLock<Regex> = OnceLock::new();
    static CHATTER: OnceLock<Regex> = OnceLock::new();
    let says_what = SAYS_WHAT.get_or_init(|| {
        Regex::new(r"(?i)error|panicked|exception|cannot|can't|could not|couldn't|denied|not found|refused|timed out|invalid|unable|fatal|deadlock|no such|not satisfied|mismatch|unexpected|violates|undefined|failed to")
            .expect("error pattern")
    });
    let chatter = CHATTER.get_or_init(|| {
        Regex::new(r"(?i)^(exit code \d+|(compiling|finished|running|starting|summary|downloaded|checking)\b|test .* \.\.\. (ok|failed|ignored)$|test result:|failures:|note: run with|error: test (run )?failed|error: could not compile|(pass|fail) +\[|test files|tests +\d|duration|[\u{2500}-\u{257f}\u{23af}]+)")
            .expect("chatter pattern")
    });
    let mut lines: Vec<&str> = Vec::new();
    let mut after_panic = false;
    for line in error.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let keep = (after_panic || says_what.is_match(line)) && !chatter.is_match(line);
        after_panic = line.contains("panicked at");
        if keep && !lines.contains(&line) {
            lines.push(line);
        }
    }
    let q = if lines.is_empty() {
        let body = match error.split_once('\n') {
            Some((first, rest)) if first.trim().starts_with("Exit code") => rest,
            None if error.trim().starts_with("Exit code") => "",
            _ => error,
        };
        truncate_chars(body.trim(), ERROR_QUERY_CHARS)
            .trim()
            .to_string()
    } else {
        let lines: Vec<&str> = lines
            .iter()
            .take(MAX_ERROR_LINES)
            .map(|l| truncate_chars(l, ERROR_QUERY_CHARS))
            .collect();
        lines.join("\n")
    };
    (q.chars().count() >= 10).then_some(q)
}

fn post_tool_use_failure(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    if input.is_true("is_interrupt") {
        return Ok(None);
    }
    let Some(query) = input.str("error").and_then(error_query) else {
        return Ok(None);
    };
    // No dedup by design: a fix may have been stored since the last identical failure.
    let found = memory::recall(ctx, &query, QueryKind::Error, 3, None)?;
    Ok(inject_for_tool(
        ctx,
        "=== MEMORY: Past fix for this error ===",
        &found,
    ))
}

// ---------------------------------------------------------------------------------------------
// Subagents and Stop

fn subagent_start(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    let mut state = load_session(ctx);
    // The task text: recorded at PreToolUse if that hook is installed, else the parent's latest
    // Agent/Task call in its transcript, else only the agent type.
    let from_transcript = || {
        let path = input.text("transcript_path")?;
        let entries = super::transcript::read_tail(Path::new(path), 256 * 1024).ok()?;
        super::transcript::last_subagent_prompt(&entries)
    };
    let task = state
        .pending_subagent_prompt
        .clone()
        .or_else(from_transcript)
        .or_else(|| input.text("agent_type").map(|t| format!("{t} subagent")));
    let Some(task) = task else { return Ok(None) };
    let query = truncate_chars(task.trim(), SUBAGENT_QUERY_CHARS).to_string();
    let found = memory::proactive(ctx, &query, QueryKind::Prompt, 3)?;
    let text = render(
        &mut state,
        "=== MEMORY: Context for subagent ===",
        None,
        &found,
        PROMPT_BUDGET,
        PROMPT_BUDGET.total,
    );
    if let Some(cache) = &ctx.session {
        let ids = state.mem_ids.clone();
        let _ = cache.update(ctx.deadline, |s| {
            s.pending_subagent_prompt = None;
            for (k, v) in ids {
                s.mem_ids.entry(k).or_insert(v);
            }
        });
    }
    Ok(text)
}

/// Stop prints nothing: any output would keep the turn going. It stores design choices from new
/// commits and, for OpenSpec sessions, insights extracted from the new part of the transcript.
fn stop(ctx: &Ctx, input: &HookInput) {
    if input.is_true("stop_hook_active") {
        return;
    }
    // The session cache is deliberately kept: clearing it here made dedup last one turn (the previous system did, and its dedup lasted one turn).
    super::cache::sweep_old(&crate::paths::runtime_dir(), super::cache::MAX_AGE);
    session_end(ctx, input);
    if let Err(e) = super::commits::on_stop(ctx) {
        log::error(&ctx.event, &format!("design choices: {e}"));
    }
    if let Some(path) = input.text("transcript_path") {
        match super::extract::on_stop(ctx, Path::new(path)) {
            Ok(n) if n > 0 => log::info(&ctx.event, &format!("stored {n} extracted insight(s)")),
            Ok(_) => {}
            Err(e) => log::error(&ctx.event, &format!("insight extraction: {e}")),
        }
    }
}

/// Stop and SessionEnd: which injected memories the agent used, for the metrics log.
fn session_end(ctx: &Ctx, input: &HookInput) {
    match super::metrics::record_use(ctx, input) {
        Ok(n) if n > 0 => log::debug(&ctx.event, &format!("{n} injected memories used")),
        Ok(_) => {}
        Err(e) => log::error(&ctx.event, &format!("usage: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_names_from_prompts() {
        assert_eq!(
            change_name("/opsx:apply add-login").as_deref(),
            Some("add-login")
        );
        assert_eq!(
            change_name("run openspec-apply-change fix-sync please").as_deref(),
            Some("fix-sync")
        );
        assert_eq!(change_name("/opsx:explore add-login"), None);
        assert_eq!(change_name("how does apply work"), None);
    }

    #[test]
    fn path_queries_are_project_relative() {
        let project = Path::new("/home/u/moldmaker");
        assert_eq!(
            path_query("/home/u/moldmaker/crates/cnc/src/contour.rs", project),
            "crates/cnc/src/contour.rs"
        );
        assert_eq!(
            path_query("/etc/nginx/sites/default.conf", project),
            "nginx/sites/default.conf"
        );
        assert_eq!(path_query("main.rs", project), "main.rs");
        assert_eq!(path_query("/", project), "");
        assert_eq!(path_query("/home/u/moldmaker", project), "home/u/moldmaker");
    }

    #[test]
    fn exit_code_line_does_not_count_as_error_text() {
        assert_eq!(error_query("Exit code 1"), None);
        assert_eq!(error_query("Killed"), None);
        assert_eq!(
            error_query("Exit code 101\nerror[E0425]: cannot find").as_deref(),
            Some("error[E0425]: cannot find")
        );
        let long = format!("Exit code 2\n{}", "é".repeat(400));
        assert_eq!(error_query(&long).unwrap().chars().count(), 300);
    }

    #[test]
    fn error_queries_keep_what_went_wrong_not_the_runner_chatter() {
        let output =
            "Exit code 101\n   Compiling api v0.1.0 (/p/crates/api)\n    Finished `test` profile\n\
            running 3 tests\ntest a ... ok\ntest b ... FAILED\n\nfailures:\n\n---- b stdout ----\n\
            thread 'b' panicked at crates/auth/src/jwt.rs:187:47:\n\
            called `Result::unwrap()` on an `Err` value: Error(ExpiredSignature)\n\
            note: run with `RUST_BACKTRACE=1`\n\ntest result: FAILED. 2 passed; 1 failed\n\
            error: test failed, to rerun pass `-p auth --lib`";
        assert_eq!(
            error_query(output).unwrap(),
            "thread 'b' panicked at crates/auth/src/jwt.rs:187:47:\n\
             called `Result::unwrap()` on an `Err` value: Error(ExpiredSignature)"
        );
    }
}
