//! Claude Code session transcripts (JSONL, no official schema): one object per `\n`-terminated line;
//! blank, broken and unknown lines are skipped, never fatal. An incomplete last line (the file is
//! written asynchronously) is left for the next read.

use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Complete lines from byte `offset` on, parsed; and the offset just past the last complete line.
/// A file shorter than `offset` was replaced: it is read from the start.
pub fn read_from(path: &Path, offset: u64) -> std::io::Result<(Vec<Value>, u64)> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let start = if offset > len { 0 } else { offset };
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::with_capacity((len - start) as usize);
    file.read_to_end(&mut bytes)?;
    let complete = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(i) => i + 1,
        None => 0,
    };
    let entries = bytes[..complete]
        .split(|&b| b == b'\n')
        .filter_map(parse_line)
        .collect();
    Ok((entries, start + complete as u64))
}

/// One line: invalid UTF-8 becomes U+FFFD, a trailing `\r` is dropped, and a line that serde_json
/// rejects only because of an escaped lone surrogate (`"\ud83d"`) is repaired rather than lost.
pub fn parse_line(line: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v) if v.is_object() => Some(v),
        Ok(_) => None,
        Err(_) => serde_json::from_str::<Value>(&repair_lone_surrogates(text))
            .ok()
            .filter(Value::is_object),
    }
}

fn hex4(s: &[u8]) -> Option<u16> {
    std::str::from_utf8(s.get(..4)?)
        .ok()
        .and_then(|h| u16::from_str_radix(h, 16).ok())
}

/// Replace `\uD800`–`\uDFFF` escapes that are not part of a valid pair with `\uFFFD`.
pub fn repair_lone_surrogates(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        if b.get(i + 1) != Some(&b'u') {
            i += 2; // any other escape, including `\\`
            continue;
        }
        let Some(unit) = hex4(&b[i + 2..]) else {
            i += 2;
            continue;
        };
        let is_high = (0xD800..0xDC00).contains(&unit);
        let is_low = (0xDC00..0xE000).contains(&unit);
        if is_high && b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u') {
            if let Some(next) = hex4(&b[i + 8..]) {
                if (0xDC00..0xE000).contains(&next) {
                    i += 12;
                    continue;
                }
            }
        }
        if is_high || is_low {
            out.push_str(&text[copied..i]);
            out.push_str("\\ufffd");
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    out.push_str(&text[copied..]);
    out
}

pub fn entry_type(e: &Value) -> &str {
    e.get("type").and_then(Value::as_str).unwrap_or("")
}

fn flag(e: &Value, key: &str) -> bool {
    e.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// `message.content` as blocks; a plain string prompt is one text block.
pub enum Content<'a> {
    Text(&'a str),
    Blocks(&'a [Value]),
    None,
}

pub fn content(e: &Value) -> Content<'_> {
    match e.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(s)) => Content::Text(s),
        Some(Value::Array(a)) => Content::Blocks(a),
        _ => Content::None,
    }
}

/// Text of a `tool_result` block: its content is a string or a list of blocks.
pub fn tool_result_text(block: &Value) -> String {
    match block.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A user entry written by the system rather than typed: skill bodies, compaction summaries,
/// stop-hook feedback.
pub fn is_meta(e: &Value) -> bool {
    flag(e, "isMeta") || flag(e, "isCompactSummary") || flag(e, "isVisibleInTranscriptOnly")
}

/// `text` without the `<system-reminder>` blocks Claude Code adds to a user entry.
pub fn strip_reminders(text: &str) -> String {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"(?s)<system-reminder>.*?(</system-reminder>|$)").unwrap()
    });
    re.replace_all(text, "").trim().to_string()
}

/// A user entry's text that Claude Code wrote itself, in its own tags (a slash command's name
/// and output, a shell escape, a hook's or a task's note), not the user's words.
pub fn is_wrapped(text: &str) -> bool {
    const WRAPPERS: &[&str] = &[
        "<command-",
        "<local-command-",
        "<bash-",
        "<user-prompt-submit-hook>",
        "<task-notification>",
    ];
    WRAPPERS.iter().any(|w| text.starts_with(w))
}

/// `(skill, args)` of every `Skill` tool_use in an assistant entry.
pub fn skill_calls(e: &Value) -> Vec<(String, String)> {
    if entry_type(e) != "assistant" {
        return Vec::new();
    }
    let Content::Blocks(blocks) = content(e) else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .filter(|b| b.get("name").and_then(Value::as_str) == Some("Skill"))
        .filter_map(|b| {
            let input = b.get("input")?;
            let skill = input.get("skill")?.as_str()?.to_string();
            let args = input
                .get("args")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            Some((skill, args))
        })
        .collect()
}

/// `input.prompt` of the last Agent/Task tool_use among `entries`.
pub fn last_subagent_prompt(entries: &[Value]) -> Option<String> {
    entries.iter().rev().find_map(|e| {
        let Content::Blocks(blocks) = content(e) else {
            return None;
        };
        blocks.iter().rev().find_map(|b| {
            let name = b.get("name").and_then(Value::as_str)?;
            if b.get("type").and_then(Value::as_str) != Some("tool_use")
                || !matches!(name, "Agent" | "Task")
            {
                return None;
            }
            b.get("input")?.get("prompt")?.as_str().map(String::from)
        })
    })
}

/// The tail of a possibly large transcript: complete lines of the last `max_bytes`.
pub fn read_tail(path: &Path, max_bytes: u64) -> std::io::Result<Vec<Value>> {
    let len = std::fs::metadata(path)?.len();
    let start = len.saturating_sub(max_bytes);
    let (mut entries, _) = read_from(path, start)?;
    if start > 0 && !entries.is_empty() {
        // The first line may have started before `start`; parse_line already dropped it if broken.
        entries.remove(0);
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wt_memory_ops::metrics::usage::{used, InjectedMemory, Use};

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/fixtures/transcripts")
            .join(name)
    }

    #[test]
    fn truncated_tail_yields_the_five_complete_entries() {
        let path = fixture("truncated_tail.jsonl");
        let (entries, offset) = read_from(&path, 0).unwrap();
        assert_eq!(entries.len(), 5);
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(offset < len, "the partial last line is not consumed");
        let (again, offset2) = read_from(&path, offset).unwrap();
        assert!(again.is_empty());
        assert_eq!(offset2, offset);
    }

    #[test]
    fn lone_surrogate_line_is_repaired_and_u2028_does_not_split() {
        let (entries, _) = read_from(&fixture("compact_and_odd_entries.jsonl"), 0).unwrap();
        assert_eq!(entries.len(), 35);
        let repaired = entries.iter().any(|e| e.to_string().contains('\u{fffd}'));
        assert!(repaired);
    }

    #[test]
    fn repair_keeps_valid_pairs_and_escaped_backslashes() {
        assert_eq!(repair_lone_surrogates(r#""a\ud83d""#), r#""a\ufffd""#);
        assert_eq!(
            repair_lone_surrogates(r#""\ud83d\ude80""#),
            r#""\ud83d\ude80""#
        );
        assert_eq!(repair_lone_surrogates(r#""\\ud83d""#), r#""\\ud83d""#);
        assert_eq!(
            repair_lone_surrogates(r#""\udcc3x\u00e9""#),
            r#""\ufffdx\u00e9""#
        );
    }

    #[test]
    fn opsx_session_has_the_skill_call_and_agent_prompt() {
        let (entries, _) = read_from(&fixture("opsx_apply_session.jsonl"), 0).unwrap();
        assert_eq!(entries.len(), 43);
        let skills: Vec<_> = entries.iter().flat_map(skill_calls).collect();
        assert_eq!(
            skills,
            vec![("opsx:apply".to_string(), "add-login".to_string())]
        );
        assert!(last_subagent_prompt(&entries)
            .unwrap()
            .starts_with("Find every place"));
    }

    /// What the metrics count as used, on sessions this reader reads: the fixture session
    /// injected two memories at its compaction (an attachment) and then found
    /// its bug alone: neither is used; a later reply citing one makes exactly that one used.
    #[test]
    fn a_fixture_transcript_uses_only_what_the_agent_cites() {
        let path = fixture("compact_and_odd_entries.jsonl");
        let (mut entries, _) = read_from(&path, 0).unwrap();
        let shown = [
            InjectedMemory {
                short: "3fa1",
                id: "3fa10000-0000-4000-8000-000000000001",
                content: "sync pull imports each other machine's memories.json through the regular import path",
            },
            InjectedMemory {
                short: "07c2",
                id: "07c20000-0000-4000-8000-000000000002",
                content: "export preview is limited to 120 characters",
            },
        ];
        assert!(used(&entries, &shown).is_empty());
        entries.push(serde_json::json!({"type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "text",
                "text": "A [MEM#07c2] szerint az export előnézet 120 karakter: ezt is javítom."}]}}));
        assert_eq!(
            used(&entries, &shown),
            vec![(shown[1].id.to_string(), Use::Cited)]
        );
        // The plain fixture session had nothing injected that it echoes.
        let plain = fixture("plain_session.jsonl");
        let (entries, _) = read_from(&plain, 0).unwrap();
        let other = [
            InjectedMemory {
                short: "a1b2",
                id: "a1b2c3d4-0000-0000-0000-000000000001",
                content:
                    "sync pull retries with backoff_ms=250 in src/sync/pull.rs before giving up",
            },
            InjectedMemory {
                short: "ffe0",
                id: "ffe0c3d4-0000-0000-0000-000000000002",
                content: "The dev server listens on port 8443 behind nginx",
            },
        ];
        assert!(used(&entries, &other).is_empty());
    }
}
