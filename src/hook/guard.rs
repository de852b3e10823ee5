//! Mistakes caught before they repeat. A Bash command that fails leaves one failure record per
//! signature (program, subcommand and the error line, see [`wt_memory_foundation::failure`]); a later form of
//! it that works in the same session is stored as its fix; and before a command close to a
//! recorded failure runs (PreToolUse), the guard stops it once per session with a reason that
//! says what failed and what worked (`permissionDecision: deny`: Claude Code shows the model the
//! reason in place of the tool's result, before anything runs; an `additionalContext` would
//! arrive only after the command had run). The same command tried again in that session runs:
//! the agent has read the reason and decided. Stops, repeats and false fires (a stopped command
//! that then worked) go to the metrics log.

use super::cache::SessionFailure;
use super::input::HookInput;
use super::{log, memory, Ctx};
use std::collections::HashMap;
use wt_memory_core::record::MemoryRecord;
use wt_memory_foundation::failure::{self, Command};
use wt_memory_foundation::hygiene::truncate_chars;
use wt_memory_ops::metrics::{self, Event, Mistake};
use wt_memory_ops::Remember;

/// Every failure record and fix carries this tag (the guard asks for it).
pub const FAILURE_TAG: &str = "failure";
/// Records the hooks wrote themselves: only queries about failures see them (`recall::passes`).
pub const AUTO_TAG: &str = wt_memory_core::recall::AUTO_FAILURE_TAG;
/// Metadata: the command that failed, the one that worked instead, the signature.
pub const FAILED_COMMAND: &str = wt_memory_ops::FAILURE_COMMAND;
pub const FIX_COMMAND: &str = "fix_command";
pub const SIGNATURE: &str = "failure_signature";

/// Failures of one session kept waiting for their fix.
const SESSION_FAILURES: usize = 20;
/// Records the guard looks at for one command.
const CANDIDATES: usize = 8;
/// Longest command kept in a record.
pub const COMMAND_CHARS: usize = 240;

/// The tag every record of one failure signature carries.
pub fn signature_tag(signature: &str) -> String {
    format!("failure:{signature}")
}

fn mistake(
    ctx: &Ctx,
    input: &HookInput,
    signature: &str,
    head: &str,
    what: &str,
    after_guard: bool,
) {
    if !metrics::enabled() {
        return;
    }
    let event = Event::Mistake(Mistake {
        at_ms: metrics::now_ms(),
        session: input.str("session_id").unwrap_or("").to_string(),
        signature: signature.to_string(),
        head: head.to_string(),
        what: what.to_string(),
        after_guard,
    });
    if let Some(client) = ctx.client.borrow_mut().as_mut() {
        if let Err(e) = super::metrics::send(client, vec![event]) {
            log::error(&ctx.event, &format!("metrics: {e}"));
        }
    }
}

/// The failure record of `line` (at most [`COMMAND_CHARS`]), as the hook and the transcript
/// import store it: the guard finds it by its signature tag.
pub fn failure_record(line: &str, error_line: &str, signature: &str, source: &str) -> Remember {
    Remember {
        content: format!("Command `{line}` failed: {error_line}"),
        memory_type: "Learning".into(),
        tags: vec![
            FAILURE_TAG.into(),
            AUTO_TAG.into(),
            signature_tag(signature),
            source.into(),
        ],
        metadata: HashMap::from([
            (FAILED_COMMAND.to_string(), line.to_string()),
            (SIGNATURE.to_string(), signature.to_string()),
        ]),
        failure: true,
        keys: vec![line.to_string()],
        ..Remember::default()
    }
}

/// The record of a fix: `failed` (with its error line and signature) failed, `worked` worked.
pub fn fix_record(
    failed: &str,
    error_line: &str,
    signature: &str,
    worked: &str,
    source: &str,
) -> Remember {
    Remember {
        content: format!("Command `{failed}` failed ({error_line}); `{worked}` worked instead."),
        memory_type: "Learning".into(),
        tags: vec![
            FAILURE_TAG.into(),
            AUTO_TAG.into(),
            signature_tag(signature),
            FIX_TAG.into(),
            source.into(),
        ],
        metadata: HashMap::from([
            (FAILED_COMMAND.to_string(), failed.to_string()),
            (FIX_COMMAND.to_string(), worked.to_string()),
            (SIGNATURE.to_string(), signature.to_string()),
        ]),
        keys: vec![failed.to_string(), worked.to_string()],
        ..Remember::default()
    }
}

/// The tag of a fix record.
pub const FIX_TAG: &str = "failure-fix";

/// PostToolUseFailure of a Bash command: store its failure record, unless one with its signature
/// is there (then it is a repeat, counted), and keep it in the session for its fix.
pub fn record_failure(ctx: &Ctx, input: &HookInput) -> Result<(), String> {
    let (Some(line), Some(error)) = (input.tool_input_str("command"), input.str("error")) else {
        return Ok(());
    };
    let (Some(command), Some(error_line)) = (failure::parse(line), failure::error_line(error))
    else {
        return Ok(());
    };
    let signature = failure::signature(&command, &error_line);
    let line = truncate_chars(line.trim(), COMMAND_CHARS).to_string();
    let state = super::cache::load_session(ctx);
    let guarded = state.guarded.contains(&signature);
    let known = memory::tagged(ctx, &signature_tag(&signature), 4)?
        .into_iter()
        .find(|r| !r.has_tag(FIX_TAG));
    if let Some(record) = known {
        mistake(ctx, input, &signature, &command.head(), "repeated", guarded);
        let again = wt_memory_ops::FailedAgain {
            id: record.id.clone(),
            command: line.clone(),
        };
        memory::run(ctx, again)?;
    } else {
        let req = failure_record(&line, &error_line, &signature, "source:hook");
        memory::remember_as(ctx, req, "failure")?;
    }
    mistake(ctx, input, &signature, &command.head(), "failed", guarded);
    super::cache::store_session(ctx, |s| {
        s.failed_here.insert(signature.clone());
        s.failures.retain(|f| f.signature != signature);
        s.failures.push(SessionFailure {
            signature: signature.clone(),
            command: line.clone(),
            error: error_line.clone(),
        });
        let excess = s.failures.len().saturating_sub(SESSION_FAILURES);
        s.failures.drain(..excess);
    })
}

/// PostToolUse of a Bash command that worked: when it is another form of a command that failed
/// this session (same program and subcommand), store it as that failure's fix.
pub fn link_fix(ctx: &Ctx, line: &str) -> Result<(), String> {
    let Some(worked) = failure::parse(line) else {
        return Ok(());
    };
    let state = super::cache::load_session(ctx);
    let line = truncate_chars(line.trim(), COMMAND_CHARS).to_string();
    let Some(failed) = state.failures.iter().rev().find(|f| {
        f.command != line && failure::parse(&f.command).is_some_and(|c| c.head() == worked.head())
    }) else {
        return Ok(());
    };
    let req = fix_record(
        &failed.command,
        &failed.error,
        &failed.signature,
        &line,
        "source:hook",
    );
    memory::remember_as(ctx, req, "failure")?;
    let signature = failed.signature.clone();
    super::cache::store_session(ctx, |s| s.failures.retain(|f| f.signature != signature))
}

/// The command a failure record or a failure-tagged memory is about: its metadata, else the first
/// `code span` of its content.
fn failed_command(record: &MemoryRecord) -> Option<Command> {
    if let Some(line) = record.metadata.get(FAILED_COMMAND) {
        return failure::parse(line);
    }
    let mut spans = record.content.split('`');
    spans.next()?;
    failure::parse(spans.next()?)
}

/// PreToolUse of a Bash command close to a recorded failure: the reason to stop it (what failed
/// before and what worked), the first time in this session; None lets it run.
pub fn stop_reason(ctx: &Ctx, input: &HookInput) -> Result<Option<String>, String> {
    let Some(line) = input.tool_input_str("command") else {
        return Ok(None);
    };
    let Some(next) = failure::parse(line) else {
        return Ok(None);
    };
    let query = truncate_chars(line.trim(), COMMAND_CHARS);
    let found = memory::recall(
        ctx,
        query,
        wt_memory_core::rank::QueryKind::Command,
        CANDIDATES,
        Some(FAILURE_TAG),
    )?;
    // Per signature: the failure and, if one was found, what worked.
    let mut hits: Vec<(String, Option<&MemoryRecord>, Option<&MemoryRecord>)> = Vec::new();
    for record in &found {
        if !failed_command(record).is_some_and(|failed| failure::is_close(&next, &failed)) {
            continue;
        }
        let signature = record
            .metadata
            .get(SIGNATURE)
            .cloned()
            .unwrap_or_else(|| record.id.clone());
        let at = match hits.iter().position(|(s, _, _)| *s == signature) {
            Some(at) => at,
            None => {
                hits.push((signature, None, None));
                hits.len() - 1
            }
        };
        let slot = if record.metadata.contains_key(FIX_COMMAND) {
            &mut hits[at].2
        } else {
            &mut hits[at].1
        };
        slot.get_or_insert(record);
    }
    if hits.is_empty() {
        return Ok(None);
    }
    let mut state = super::cache::load_session(ctx);
    // Stopped once this session already, or failed in this very session (the agent has the
    // error in front of it and is trying a fix): this attempt is the agent's decision.
    if hits.iter().all(|(signature, _, _)| {
        state.guarded.contains(signature) || state.failed_here.contains(signature)
    }) {
        return Ok(None);
    }
    let mut ids = super::format::IdBook::new(Some(&mut state.mem_ids));
    let mut lines = vec!["=== MEMORY: This command failed before ===".to_string()];
    let mut signatures = Vec::new();
    for (signature, failed, fix) in hits.iter().take(2) {
        let Some(shown) = failed.or(*fix) else {
            continue;
        };
        let what = match failed {
            Some(f) => {
                let times = f
                    .metadata
                    .get(wt_memory_ops::FAILURE_COUNT)
                    .filter(|n| n.as_str() != "1")
                    .map(|n| {
                        format!(
                            " ({n} times; last: `{}`)",
                            truncate_chars(
                                f.metadata.get(FAILED_COMMAND).map_or("", String::as_str),
                                COMMAND_CHARS
                            )
                        )
                    })
                    .unwrap_or_default();
                format!("{}{times}", truncate_chars(&f.content, 300))
            }
            None => format!(
                "`{}` failed",
                shown
                    .metadata
                    .get(FAILED_COMMAND)
                    .map_or("", String::as_str)
            ),
        };
        lines.push(format!("- [MEM#{}] {what}", ids.assign(&shown.id)));
        if let Some(fix) = fix.and_then(|f| f.metadata.get(FIX_COMMAND)) {
            lines.push(format!(
                "  What worked: `{}`",
                truncate_chars(fix, COMMAND_CHARS)
            ));
        }
        signatures.push(signature.clone());
    }
    drop(ids);
    lines.push(
        "Stopped once by wt-tools memory. If this time is different, run the same command again: it will not be stopped twice this session."
            .to_string(),
    );
    let command = truncate_chars(line.trim(), COMMAND_CHARS).to_string();
    super::cache::save_session(ctx, &[], &state);
    super::cache::store_session(ctx, |s| {
        for signature in &signatures {
            s.guarded.insert(signature.clone());
            s.denied.insert(signature.clone(), command.clone());
        }
    })?;
    for signature in &signatures {
        mistake(ctx, input, signature, &next.head(), "guarded", true);
    }
    Ok(Some(lines.join("\n")))
}

/// PostToolUse of a Bash command that worked: if the guard stopped this very command earlier in
/// the session, that stop was a false fire (counted once).
pub fn note_false_fire(ctx: &Ctx, input: &HookInput, line: &str) -> Result<(), String> {
    let line = truncate_chars(line.trim(), COMMAND_CHARS).to_string();
    let state = super::cache::load_session(ctx);
    let fired: Vec<String> = state
        .denied
        .iter()
        .filter(|(_, command)| **command == line)
        .map(|(signature, _)| signature.clone())
        .collect();
    if fired.is_empty() {
        return Ok(());
    }
    let head = failure::parse(&line).map(|c| c.head()).unwrap_or_default();
    for signature in &fired {
        mistake(ctx, input, signature, &head, "false-fire", true);
    }
    super::cache::store_session(ctx, |s| s.denied.retain(|sig, _| !fired.contains(sig)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memorys_command_is_its_metadata_or_its_first_code_span() {
        let mut record = MemoryRecord {
            content: "Never run `cargo test --all-features`: the pg feature needs a server".into(),
            ..MemoryRecord::default()
        };
        assert_eq!(failed_command(&record).unwrap().head(), "cargo test");
        record
            .metadata
            .insert(FAILED_COMMAND.into(), "npm run build".into());
        assert_eq!(failed_command(&record).unwrap().head(), "npm run");
        record.metadata.clear();
        record.content = "No command here".into();
        assert!(failed_command(&record).is_none());
    }
}
