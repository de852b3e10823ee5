//! One handler per Claude Code event. Each returns the `additionalContext` text to inject, or None.

use super::cache::{dedup_key, load_session, save_session, SessionState};
use super::format::{self, block, Budget, IdBook, LineOptions, PROMPT_BUDGET, TOOL_BUDGET};
use super::input::HookInput;
use super::memory;
use super::query::{self, HookQuery};
use super::{log, Ctx};
use std::collections::HashSet;
use std::path::Path;
use wt_memory_core::recall::Tiers;
use wt_memory_core::record::MemoryRecord;
use wt_memory_foundation::hygiene::truncate_chars;

pub fn dispatch(ctx: &Ctx, input: &HookInput) -> Option<String> {
    let result = match ctx.event.as_str() {
        "SessionStart" => session_start(ctx, input),
        "UserPromptSubmit" => user_prompt_submit(ctx, input),
        "PreToolUse" => pre_tool_use(ctx, input),
        "PostToolUse" => post_tool_use(ctx, input),
        "PostToolUseFailure" => post_tool_use_failure(ctx, input),
        "SubagentStart" => subagent_start(ctx, input),
        "PreCompact" => Ok(pre_compact(ctx)),
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

/// Format `tiers` under `header`: the full memories with the session's MEM ids or, when there
/// are none, the index of those not listed or injected yet this session; remember what was shown.
fn render(
    state: &mut SessionState,
    header: &str,
    footer: Option<&str>,
    tiers: &Tiers,
    budget: Budget,
    max_chars: usize,
) -> Option<String> {
    let mut shown: HashSet<String> = state
        .indexed
        .iter()
        .chain(state.mem_ids.values())
        .cloned()
        .collect();
    let mut ids = IdBook::new(Some(&mut state.mem_ids));
    let opts = LineOptions {
        floor: true,
        with_ids: true,
        per_memory: budget.per_memory,
        redact: false,
        checked_together: tiers.checked_together,
    };
    let mut lines = format::memory_lines(&tiers.full, &mut ids, &mut HashSet::new(), &opts);
    shown.extend(tiers.full.iter().map(|m| m.id.clone()));
    let before = shown.clone();
    // Beside memories injected in full, only the candidates that are relevant in their own right
    // (they missed only the ratio to the best): the other titles were mostly noise there
    // (measured: docs/evaluation.md, "Two tiers"). Alone, the index lists every candidate.
    let entries = if lines.is_empty() {
        format::index_lines(&tiers.index, &mut shown)
    } else {
        let floor = format::beside_full_floor();
        let strong: Vec<MemoryRecord> = tiers
            .index
            .iter()
            .filter(|m| m.relevance_score.is_some_and(|r| r >= floor))
            .cloned()
            .collect();
        format::index_lines(&strong, &mut shown)
    };
    // The index goes whole or not at all, so what is recorded as listed was listed.
    let section =
        (!entries.is_empty()).then(|| format!("{}\n{}", format::INDEX_INTRO, entries.join("\n")));
    if let Some(section) = &section {
        lines.push(section.clone());
    }
    let text = block(header, &lines, footer, max_chars)?;
    if section.is_some_and(|s| text.contains(&s)) {
        state.indexed.extend(shown.difference(&before).cloned());
    }
    Some(text)
}

/// Only full memories: what SessionStart and failures inject.
fn full_only(full: Vec<MemoryRecord>) -> Tiers {
    Tiers {
        full,
        index: Vec::new(),
        checked_together: false,
    }
}

// ---------------------------------------------------------------------------------------------
// SessionStart

fn session_start(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    let source = input.str("source").unwrap_or("");
    if let Some(cache) = &ctx.session {
        if matches!(source, "startup" | "clear") {
            cache.reset(ctx.deadline)?;
            super::gate::record_start(ctx, input.str("session_id"));
        } else if source == "compact" {
            // The summary replaced the turns that held this session's memories: each may come
            // back in full once more (within the budgets), under the ids it had.
            cache.update(ctx.deadline, |s| {
                s.keys.clear();
                s.indexed.clear();
            })?;
        }
        super::cache::sweep_old(&wt_memory_base::paths::runtime_dir(), super::cache::MAX_AGE);
    }
    let mut state = load_session(ctx);
    let mut seen = HashSet::new();
    let mut parts = Vec::new();
    let mut left = PROMPT_BUDGET.total;

    refresh_claude_memory(ctx);
    if let Some(text) = super::gate::standing_block(ctx, input.str("session_id")) {
        left = left.saturating_sub(text.chars().count() + 2);
        parts.push(text);
    }
    match memory::map(ctx) {
        Ok((map, personal, personal_held)) => {
            // Held in either store: the user reviews both (`wt-memory review`, `--scope personal`).
            notice_held(ctx, map.held + personal_held);
            if let Some(text) = format::memory_map(&map, personal) {
                left = left.saturating_sub(text.chars().count() + 2);
                parts.push(text);
            }
        }
        Err(e) => log::error(&ctx.event, &format!("memory map: {e}")),
    }

    let sheet_spec = &query::CHEAT_SHEET;
    match memory::recall(
        ctx,
        query::CHEAT_SHEET_QUERY,
        sheet_spec.kind,
        sheet_spec.limit,
        Some(query::CHEAT_SHEET_TAG),
    ) {
        Ok(sheet) => {
            let opts = LineOptions {
                floor: false,
                with_ids: false,
                per_memory: PROMPT_BUDGET.per_memory,
                redact: false,
                checked_together: false,
            };
            let lines = format::memory_lines(&sheet, &mut IdBook::new(None), &mut seen, &opts);
            if let Some(text) = block(sheet_spec.header, &lines, None, left) {
                left = left.saturating_sub(text.chars().count() + 2);
                parts.push(text);
            }
        }
        Err(e) => log::error(&ctx.event, &format!("cheat sheet: {e}")),
    }

    let query = query::project(&ctx.project_dir);
    match memory::proactive(ctx, &query.text, query.spec.kind, query.spec.limit) {
        Ok(found) => {
            let mut ids = IdBook::new(Some(&mut state.mem_ids));
            let opts = LineOptions {
                floor: true,
                with_ids: true,
                per_memory: PROMPT_BUDGET.per_memory,
                redact: false,
                checked_together: false,
            };
            let lines = format::memory_lines(&found, &mut ids, &mut seen, &opts);
            if let Some(text) = block(query.spec.header, &lines, None, left) {
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

/// Tell the user (not the agent: `systemMessage`) that memories wait for review, once for each
/// new number of them: the count last told is kept beside the store.
fn notice_held(ctx: &Ctx, held: usize) {
    let told_path = ctx.project.store_dir.join(HELD_TOLD);
    let told: Option<usize> = std::fs::read_to_string(&told_path)
        .ok()
        .and_then(|t| t.trim().parse().ok());
    if held == told.unwrap_or(0) || !ctx.project.store_dir.is_dir() {
        return;
    }
    if let Err(e) = wt_memory_base::paths::write_atomic(&told_path, held.to_string().as_bytes()) {
        log::error(&ctx.event, &format!("held-for-review notice: {e:#}"));
    }
    if held > 0 {
        let noun = if held == 1 {
            "memory is"
        } else {
            "memories are"
        };
        *ctx.notice.borrow_mut() = Some(format!(
            "wt-memory: {held} {noun} held for review (orders to the agent, hidden text or a new \
             teammate's source) and never injected; look at them with `wt-memory review`"
        ));
    }
}

/// The file beside a store holding how many held memories the user was last told of.
const HELD_TOLD: &str = "held-told";

/// PreCompact: Claude Code pastes a PreCompact hook's plain output into the summariser's
/// instructions. It is asked to keep the ids of the memories this session was given, so the
/// agent can still cite and fetch them after compaction.
fn pre_compact(ctx: &Ctx) -> Option<String> {
    let state = load_session(ctx);
    if state.mem_ids.is_empty() {
        return None;
    }
    let ids: Vec<String> = state
        .mem_ids
        .keys()
        .take(COMPACT_IDS)
        .map(|short| format!("[MEM#{short}]"))
        .collect();
    Some(format!(
        "Project memory (wt-tools): keep in the summary, next to what they said, the ids of the project memories this session used ({}), and every decision the user made with its reason.",
        ids.join(", ")
    ))
}

/// Memory ids named to the summariser at most (its instructions are capped at 10,000 chars).
const COMPACT_IDS: usize = 40;

/// Claude Code's auto memory of this project, imported again when its folder changed since the
/// last SessionStart (a stamp of names, sizes and times in the runtime directory).
fn refresh_claude_memory(ctx: &Ctx) {
    let Some(dir) = crate::claude_memory::default_dir(&ctx.project) else {
        return;
    };
    let Some(stamp) = crate::claude_memory::stamp(&dir) else {
        return; // no auto memory for this project
    };
    let key = wt_memory_base::wire::store_key(&ctx.project.store_dir);
    let stamp_file =
        wt_memory_base::paths::runtime_dir().join(format!("claude-memory-{key}.stamp"));
    if std::fs::read_to_string(&stamp_file).is_ok_and(|old| old == stamp) {
        return;
    }
    match memory::import_claude_memory(ctx, &dir) {
        Ok(done) => {
            log::debug(&ctx.event, &format!("claude auto memory: {done:?}"));
            if let Err(e) =
                wt_memory_base::paths::write_atomic_volatile(&stamp_file, stamp.as_bytes())
            {
                log::error(&ctx.event, &format!("claude auto memory stamp: {e}"));
            }
        }
        Err(e) => log::error(&ctx.event, &format!("claude auto memory: {e}")),
    }
}

// ---------------------------------------------------------------------------------------------
// UserPromptSubmit

/// Prompts Claude Code writes itself, not the user: an async subagent's completion comes back
/// as a `<task-notification>` prompt. Recall on that XML finds nothing the user asked for.
fn is_synthetic_prompt(prompt: &str) -> bool {
    prompt.trim_start().starts_with("<task-notification>")
}

fn user_prompt_submit(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    let Some(prompt) = input.text("prompt") else {
        return Ok(None);
    };
    if is_synthetic_prompt(prompt) {
        log::debug(
            &ctx.event,
            "a task notification, not the user's prompt: no recall",
        );
        return Ok(None);
    }
    super::gate::record_prompt(ctx, input.str("session_id"), prompt);
    let mut parts = Vec::new();
    let mut left = PROMPT_BUDGET.total;

    let root = wt_memory_base::project::toplevel(&ctx.project_dir)
        .unwrap_or_else(|| ctx.project_dir.clone());
    let rules = wt_memory_foundation::rules::load_rules(&root);
    let matching = wt_memory_foundation::rules::matching_rules(&rules, prompt);
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

    let (query, change) = query::prompt(prompt);
    if claim_key(ctx, &dedup_key("UserPromptSubmit", "", &query.text))? {
        let mut found = ask(ctx, &query).unwrap_or_else(|e| {
            log::error(&ctx.event, &e);
            Tiers::default()
        });
        if let Some(c) = &change {
            // Memories tagged with the change belong here whatever their query score.
            let spec = &query::CHANGE;
            let tag = format!("change:{c}");
            match memory::recall(ctx, c, spec.kind, spec.limit, Some(&tag)) {
                Ok(tagged) => found.full.extend(tagged.into_iter().map(|m| MemoryRecord {
                    relevance_score: None,
                    ..m
                })),
                Err(e) => log::error(&ctx.event, &e),
            }
        }
        let header = match &change {
            Some(c) => format!(
                "{}\n{} {c}\nRelevant past experience:",
                query.spec.header,
                query::CHANGE.header
            ),
            None => format!("{}\nRelevant past experience:", query.spec.header),
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

/// The memories worth injecting for `query`, as many as its event takes, and its index.
fn ask(ctx: &Ctx, query: &HookQuery) -> Result<Tiers, String> {
    memory::tiers(
        ctx,
        &query.text,
        query.spec.kind,
        query.spec.limit,
        format::INDEX_CANDIDATES,
    )
}

/// Proactive recall for a tool call, once per session per query.
fn tool_memory(ctx: &Ctx, tool: &str, query: &HookQuery) -> Result<Option<String>, String> {
    if !claim_key(ctx, &dedup_key(&ctx.event, tool, &query.text))? {
        log::debug(&ctx.event, &format!("dedup hit for {tool}"));
        return Ok(None);
    }
    let found = ask(ctx, query)?;
    Ok(inject_for_tool(ctx, query.spec.header, &found))
}

/// Format memories for a tool event within its budget, recording what was injected.
fn inject_for_tool(ctx: &Ctx, header: &str, found: &Tiers) -> Option<String> {
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
            let prompt = truncate_chars(prompt, query::SUBAGENT.max_chars).to_string();
            cache.update(ctx.deadline, |s| s.pending_subagent_prompt = Some(prompt))?;
        }
        return Ok(None);
    }
    // The action gate: a sensitive part a memory without the user's authority supplied is the
    // user's to allow (src/hook/gate.rs).
    if let Some(stop) = super::gate::check(ctx, input) {
        ctx.ask.set(stop.ask);
        *ctx.deny.borrow_mut() = Some(stop.reason);
        return Ok(None);
    }
    if wt_memory_foundation::gate::is_ours(tool) {
        return Ok(None);
    }
    // Before a Bash command close to one that failed before: stopped once, with the reason (the
    // guard runs alone when init registered it without `--pretool`).
    if tool == "Bash" {
        match super::guard::stop_reason(ctx, input) {
            Ok(Some(reason)) => {
                *ctx.deny.borrow_mut() = Some(reason);
                return Ok(None);
            }
            Ok(None) => {}
            Err(e) => log::error(&ctx.event, &format!("guard: {e}")),
        }
    }
    if ctx.guard_only {
        return Ok(None);
    }
    let Some(query) = query::tool(&ctx.project_dir, tool, input, &["Bash", "Edit", "Write"]) else {
        return Ok(None);
    };
    tool_memory(ctx, tool, &query)
}

fn post_tool_use(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    let tool = input.str("tool_name").unwrap_or("");
    // Our MCP tools' answers: what they showed the agent, for the action gate.
    if wt_memory_foundation::gate::is_ours(tool) {
        if let Some(response) = input.get("tool_response") {
            super::gate::record_mcp_answer(ctx, input.str("session_id"), response);
        }
        return Ok(None);
    }
    // Only Read and Bash inject (the other tools' inputs say too little to query by); Edit, Write, Agent/Task, Grep and the rest stay quiet.
    let Some(query) = query::tool(&ctx.project_dir, tool, input, &["Read", "Bash"]) else {
        return Ok(None);
    };
    // Recall before the commit is saved: the agent learns nothing from its own commit echoed back.
    let injected = tool_memory(ctx, tool, &query);
    if tool == "Bash" {
        if let Some(command) = input.tool_input_str("command") {
            save_commit(ctx, command, input.tool_input_str("description"));
            if let Err(e) = super::guard::link_fix(ctx, command) {
                log::error(&ctx.event, &format!("fix link: {e}"));
            }
            if let Err(e) = super::guard::note_false_fire(ctx, input, command) {
                log::error(&ctx.event, &format!("guard: {e}"));
            }
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
    let anchor = wt_memory_base::project::git(
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

fn post_tool_use_failure(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    if input.is_true("is_interrupt") {
        return Ok(None);
    }
    // No dedup by design: a fix may have been stored since the last identical failure. A plain
    // recall, not proactive's gates: only the relevance floor of the injected lines applies.
    let text = match input.str("error").and_then(query::error) {
        Some(query) => {
            let found = memory::recall(ctx, &query.text, query.spec.kind, query.spec.limit, None)?;
            inject_for_tool(ctx, query.spec.header, &full_only(found))
        }
        None => None,
    };
    // After the recall, so this failure's own record is not offered as its fix.
    if input.str("tool_name") == Some("Bash") {
        if let Err(e) = super::guard::record_failure(ctx, input) {
            log::error(&ctx.event, &format!("failure record: {e}"));
        }
    }
    Ok(text)
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
    let query = query::subagent(&task);
    let found = ask(ctx, &query)?;
    let text = render(
        &mut state,
        query.spec.header,
        None,
        &found,
        PROMPT_BUDGET,
        PROMPT_BUDGET.total,
    );
    if let Some(cache) = &ctx.session {
        let ids = state.mem_ids.clone();
        let indexed = state.indexed.clone();
        let _ = cache.update(ctx.deadline, |s| {
            s.pending_subagent_prompt = None;
            for (k, v) in ids {
                s.mem_ids.entry(k).or_insert(v);
            }
            s.indexed.extend(indexed);
        });
    }
    Ok(text)
}

/// Stop prints nothing: any output would keep the turn going. It counts what the session used,
/// gives the memories the answer cited the turn's prompt as a key, stores design choices from new
/// commits and, for OpenSpec sessions, insights extracted from the new part of the transcript.
fn stop(ctx: &Ctx, input: &HookInput) {
    if input.is_true("stop_hook_active") {
        return;
    }
    // The session cache is deliberately kept: clearing it here made dedup last one turn (the previous system did, and its dedup lasted one turn).
    super::cache::sweep_old(&wt_memory_base::paths::runtime_dir(), super::cache::MAX_AGE);
    session_end(ctx, input);
    match super::learn::on_stop(ctx, input) {
        Ok(n) if n > 0 => log::info(&ctx.event, &format!("learned a key for {n} cited memories")),
        Ok(_) => {}
        Err(e) => log::error(&ctx.event, &format!("learning keys: {e}")),
    }
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
