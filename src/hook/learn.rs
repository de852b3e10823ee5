//! Keys learned from use. At Stop, each memory the agent cited (`[MEM#…]`) in its answer to the
//! turn's prompt gets that prompt as a retrieval key (`ops::learn_key`, which bounds them), so the
//! next prompt in those words, or close to them, finds the memory: a used memory rises for the
//! questions it answered, not for every query. Off with `WT_MEMORY_USE_PRIOR=0`.

use super::input::HookInput;
use super::transcript::{self, Content};
use super::Ctx;
use serde_json::Value;
use std::path::Path;

/// How much of the transcript's end is read for the last turn: a turn's tool output can be
/// large, and a prompt further back than this is not learned.
const TAIL_BYTES: u64 = 4 * 1024 * 1024;
/// An answer citing more memories than this is a summary, not an answer resting on them.
const MAX_CITED: usize = 3;
/// Shorter prompts ("yes", "go on") say nothing a later prompt would repeat.
const MIN_WORDS: usize = 4;
/// Longer prompts are task descriptions, not questions. Up to this length a prompt is learned as
/// its first `record::KEY_CHARS` characters, which state the need.
const MAX_CHARS: usize = 600;

/// Learn from the turn that just ended; returns how many memories got a key.
pub fn on_stop(ctx: &Ctx, input: &HookInput) -> Result<usize, String> {
    if !wt_memory_base::config::get().use_prior {
        return Ok(0);
    }
    let (Some(cache), Some(path)) = (&ctx.session, input.text("transcript_path")) else {
        return Ok(0);
    };
    let entries = transcript::read_tail(Path::new(path), TAIL_BYTES)
        .map_err(|e| format!("cannot read the transcript {path}: {e}"))?;
    let Some((prompt, mut answer)) = last_turn(&entries) else {
        return Ok(0);
    };
    // Stop's payload carries the answer just given, which the transcript may not hold yet.
    if let Some(last) = input.text("last_assistant_message") {
        answer.push_str(last);
    }
    if !learnable(&prompt) || wt_memory_ops::learnable_key(&prompt).is_none() {
        return Ok(0);
    }
    let cited = to_learn(&answer);
    let shown = super::metrics::shown_ids(cache);
    let mut learned = 0;
    for short in cited {
        // A memory a hook showed is known by the id it was shown with; one the agent found
        // itself (the MCP `recall`) by a prefix of its id, resolved by the store.
        let id = match shown.get(&short) {
            Some(full) => full.clone(),
            None if short.len() >= wt_memory_ops::MIN_ID_PREFIX => {
                // Ids are matched by prefix on their first digits (the rest sits past a dash).
                short[..wt_memory_ops::MIN_ID_PREFIX].to_string()
            }
            None => continue,
        };
        match learn(ctx, &id, &prompt) {
            Ok(true) => learned += 1,
            Ok(false) => {}
            Err(e) => super::log::error(&ctx.event, &format!("learning a key for {id}: {e}")),
        }
    }
    Ok(learned)
}

/// Give memory `id` the prompt whose answer cited it as a learned key; returns whether a key was
/// added (false when the write was spooled for the next opening of the store).
fn learn(ctx: &Ctx, id: &str, prompt: &str) -> Result<bool, String> {
    let op = wt_memory_ops::LearnKey {
        id: id.to_string(),
        prompt: prompt.to_string(),
    };
    match super::memory::run(ctx, op) {
        Ok(done) => Ok(done.key.is_some()),
        Err(e) if ctx.memory_down.borrow().is_some() => {
            wt_memory_ops::spool::add_learned_key(&ctx.project, id, prompt)
                .map_err(|spool_err| format!("{e}; not spooled either: {spool_err}"))?;
            super::log::info(&ctx.event, &format!("{e}; the learned key is spooled"));
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// The last prompt the user typed, and the agent's text after it (tool calls and results left
/// out: a citation is something the agent said).
fn last_turn(entries: &[Value]) -> Option<(String, String)> {
    let mut turn: Option<(String, String)> = None;
    for e in entries {
        match transcript::entry_type(e) {
            "user" => {
                if let Some(prompt) = typed_prompt(e) {
                    turn = Some((prompt, String::new()));
                }
            }
            "assistant" => {
                if let (Some((_, answer)), Content::Blocks(blocks)) =
                    (turn.as_mut(), transcript::content(e))
                {
                    for b in blocks {
                        if b.get("type").and_then(Value::as_str) == Some("text") {
                            answer.push_str(b.get("text").and_then(Value::as_str).unwrap_or(""));
                            answer.push('\n');
                        }
                    }
                }
            }
            _ => {}
        }
    }
    turn
}

/// A user entry's text when the user typed it (reminders left out): not a tool result, a
/// command's output, a skill body or a compaction summary.
fn typed_prompt(e: &Value) -> Option<String> {
    if transcript::is_meta(e) {
        return None;
    }
    let text = match transcript::content(e) {
        Content::Text(s) => s.to_string(),
        Content::Blocks(blocks) => {
            if blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            {
                return None;
            }
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        }
        Content::None => return None,
    };
    let text = transcript::strip_reminders(&text);
    (!text.is_empty() && !transcript::is_wrapped(&text)).then_some(text)
}

/// Worth keeping as a key: a question or request in words, not a slash command or a reply.
fn learnable(prompt: &str) -> bool {
    !prompt.starts_with('/')
        && prompt.split_whitespace().count() >= MIN_WORDS
        && prompt.chars().count() <= MAX_CHARS
}

/// The `[MEM#…]` ids `answer` cites, when it rests on a few (none when it cites more than
/// [`MAX_CITED`]).
fn to_learn(answer: &str) -> Vec<String> {
    let cited = wt_memory_ops::metrics::usage::cited_ids(answer);
    if cited.len() > MAX_CITED {
        return Vec::new();
    }
    cited
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> Value {
        json!({"type": "user", "message": {"role": "user", "content": text}})
    }

    fn assistant(text: &str) -> Value {
        json!({"type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "text", "text": text}]}})
    }

    fn tool_result() -> Value {
        json!({"type": "user", "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "MEM#dead ok"}]}})
    }

    #[test]
    fn the_last_turn_is_the_last_typed_prompt_and_what_the_agent_said_after_it() {
        let entries = vec![
            user("How do we hash passwords?"),
            assistant("From memory [MEM#a1b2]: argon2id."),
            user("Why does the PDF export time out for big tenants?"),
            tool_result(),
            json!({"type": "user", "isMeta": true, "message": {"content": "skill body"}}),
            user("<local-command-stdout>done</local-command-stdout>"),
            assistant("From memory [MEM#c3d4]: statement_timeout is set per transaction."),
        ];
        let (prompt, answer) = last_turn(&entries).unwrap();
        assert_eq!(prompt, "Why does the PDF export time out for big tenants?");
        assert_eq!(to_learn(&answer), vec!["c3d4"]);
    }

    #[test]
    fn replies_commands_and_long_task_texts_are_not_learned() {
        assert!(learnable("Why does the PDF export time out?"));
        assert!(!learnable("yes, go on"));
        assert!(!learnable("/opsx:apply add-jpy-invoices now please"));
        assert!(!learnable(&"word ".repeat(200)));
    }

    #[test]
    fn citations_are_read_once_each_and_a_summary_citing_many_teaches_nothing() {
        assert_eq!(
            to_learn("[MEM#A1B2] and MEM#c3d4e5f6, again [MEM#a1b2]; not MEM#xyz"),
            vec!["a1b2", "c3d4e5f6"]
        );
        assert!(to_learn("[MEM#a1b2] [MEM#b1b2] [MEM#c1b2] [MEM#d1b2]").is_empty());
    }

    #[test]
    fn a_question_about_markup_is_a_prompt_and_a_command_wrapper_is_not() {
        assert_eq!(
            typed_prompt(&user(
                "<div> tags get escaped twice in the PDF footer, why?"
            ))
            .as_deref(),
            Some("<div> tags get escaped twice in the PDF footer, why?")
        );
        assert_eq!(
            typed_prompt(&user("<command-name>/compact</command-name>")),
            None
        );
        let reminded = json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>Files changed.</system-reminder>"},
            {"type": "text", "text": "Why does the export time out?"}]}});
        assert_eq!(
            typed_prompt(&reminded).as_deref(),
            Some("Why does the export time out?")
        );
    }
}
