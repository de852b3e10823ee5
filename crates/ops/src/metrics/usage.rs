//! Usage matching: which memories injected in a session the agent used, read from the session's
//! transcript. A memory is used when an assistant message or tool input cites its `[MEM#…]` id
//! ("cited"), or echoes at least two of its distinctive terms that the user did not say first
//! ("echoed"): the agent repeating the user's own words proves nothing about the memory.

use regex::Regex;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

/// Terms kept per memory, and how many of them an echo needs.
const TERMS: usize = 5;
const ECHO_NEEDS: usize = 2;

/// A memory that was injected in the session.
pub struct InjectedMemory<'a> {
    /// The `[MEM#…]` id the session showed it under.
    pub short: &'a str,
    pub id: &'a str,
    pub content: &'a str,
}

/// How a memory was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    Cited,
    Echoed,
}

impl Use {
    pub fn as_str(self) -> &'static str {
        match self {
            Use::Cited => "cited",
            Use::Echoed => "echoed",
        }
    }
}

const STOPWORDS: &[&str] = &[
    "about", "after", "again", "also", "always", "because", "been", "before", "being", "between",
    "both", "but", "can", "cannot", "could", "does", "doing", "done", "each", "either", "every",
    "from", "have", "having", "here", "into", "just", "like", "made", "make", "many", "more",
    "most", "must", "need", "needs", "never", "only", "other", "over", "same", "should", "since",
    "some", "such", "than", "that", "their", "them", "then", "there", "these", "they", "this",
    "those", "through", "under", "until", "used", "uses", "using", "very", "want", "were", "what",
    "when", "where", "which", "while", "will", "with", "without", "would", "your", "file", "files",
    "code", "test", "tests", "instead", "first", "still", "when", "does", "work", "works",
];

fn term_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[\p{L}\p{N}_][\p{L}\p{N}_./:-]*[\p{L}\p{N}_]").unwrap())
}

/// Lowercased terms of `text`, at least 4 characters, no stopwords.
fn terms(text: &str) -> impl Iterator<Item = String> + '_ {
    term_pattern()
        .find_iter(text)
        .map(|m| m.as_str().to_lowercase())
        .filter(|t| t.chars().count() >= 4 && !STOPWORDS.contains(&t.as_str()))
}

/// The memory's most distinctive terms: identifiers, paths and numbers first (they rarely occur
/// by chance), then the longest words.
fn distinctive(content: &str, said_by_user: &HashSet<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut candidates: Vec<String> = terms(content)
        .filter(|t| !said_by_user.contains(t) && seen.insert(t.clone()))
        .collect();
    let weight = |t: &String| {
        let marked = t.chars().any(|c| c.is_ascii_digit() || "_./:-".contains(c));
        (marked, t.chars().count())
    };
    candidates.sort_by_key(|t| std::cmp::Reverse(weight(t)));
    candidates.truncate(TERMS);
    candidates
}

/// The text of a transcript entry by role: assistant text and tool inputs, or user prompts.
fn texts(entry: &Value) -> (String, String) {
    let (mut agent, mut user) = (String::new(), String::new());
    let role = entry["type"].as_str().unwrap_or("");
    let content = &entry["message"]["content"];
    let blocks: Vec<&Value> = match content {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    for block in blocks {
        let piece = match block {
            Value::String(s) => s.clone(),
            Value::Object(_) => match block["type"].as_str() {
                Some("text") => block["text"].as_str().unwrap_or("").to_string(),
                Some("tool_use") => block["input"].to_string(),
                _ => continue, // thinking, tool results (the tool's words, not the agent's)
            },
            _ => continue,
        };
        match role {
            "assistant" => agent.push_str(&piece),
            "user" => user.push_str(&piece),
            _ => continue,
        }
        if role == "assistant" {
            agent.push('\n');
        } else {
            user.push('\n');
        }
    }
    (agent, user)
}

/// The `[MEM#…]` ids `text` cites (at least 4 hex digits), lower-cased, each once, in order.
pub fn cited_ids(text: &str) -> Vec<String> {
    static CITE: OnceLock<Regex> = OnceLock::new();
    let cite = CITE.get_or_init(|| Regex::new(r"MEM#([0-9a-fA-F]{4,})").unwrap());
    let mut out: Vec<String> = Vec::new();
    for c in cite.captures_iter(text) {
        let id = c[1].to_lowercase();
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// The injected memories `entries` show the agent using, each once (a citation wins over an echo).
pub fn used(entries: &[Value], injected: &[InjectedMemory]) -> Vec<(String, Use)> {
    let (mut agent, mut user) = (String::new(), String::new());
    for e in entries {
        let (a, u) = texts(e);
        agent.push_str(&a);
        user.push_str(&u);
    }
    let cited: HashSet<String> = cited_ids(&agent).into_iter().collect();
    let agent_terms: HashSet<String> = terms(&agent).collect();
    let user_terms: HashSet<String> = terms(&user).collect();
    let mut found = BTreeMap::new();
    for m in injected {
        if cited.contains(&m.short.to_lowercase()) {
            found.insert(m.id.to_string(), Use::Cited);
            continue;
        }
        let echoed = distinctive(m.content, &user_terms)
            .iter()
            .filter(|t| agent_terms.contains(*t))
            .count();
        if echoed >= ECHO_NEEDS {
            found.entry(m.id.to_string()).or_insert(Use::Echoed);
        }
    }
    found.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assistant(text: &str) -> Value {
        json!({"type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "text", "text": text}]}})
    }

    fn user(text: &str) -> Value {
        json!({"type": "user", "message": {"role": "user", "content": text}})
    }

    fn tool_use(input: Value) -> Value {
        json!({"type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "tool_use", "name": "Bash", "input": input}]}})
    }

    const RETRY: &str =
        "sync pull retries with backoff_ms=250 in src/sync/pull.rs before giving up";
    const PORT: &str = "The dev server listens on port 8443 behind nginx";

    fn injected() -> Vec<InjectedMemory<'static>> {
        vec![
            InjectedMemory {
                short: "a1b2",
                id: "a1b2c3d4-0000-0000-0000-000000000001",
                content: RETRY,
            },
            InjectedMemory {
                short: "ffe0",
                id: "ffe0c3d4-0000-0000-0000-000000000002",
                content: PORT,
            },
        ]
    }

    #[test]
    fn a_citation_by_id_counts_once() {
        let entries = vec![
            assistant("From memory [MEM#a1b2]: the pull retries."),
            assistant("As MEM#A1B2 says, and [MEM#a1b2] again."),
        ];
        let found = used(&entries, &injected());
        assert_eq!(
            found,
            vec![("a1b2c3d4-0000-0000-0000-000000000001".into(), Use::Cited)]
        );
    }

    #[test]
    fn distinctive_terms_echoed_in_a_tool_input_count() {
        let entries = vec![
            user("why does sync fail on the train?"),
            tool_use(json!({"command": "grep -n backoff_ms=250 src/sync/pull.rs"})),
        ];
        let found = used(&entries, &injected());
        assert_eq!(
            found,
            vec![("a1b2c3d4-0000-0000-0000-000000000001".into(), Use::Echoed)]
        );
    }

    #[test]
    fn the_users_own_words_and_a_single_term_are_not_use() {
        // The user names the path and the port; the agent repeats them: no evidence of memory.
        let entries = vec![
            user("look at src/sync/pull.rs and the port 8443 with nginx"),
            assistant("Opening src/sync/pull.rs; nginx forwards 8443."),
        ];
        assert!(used(&entries, &injected()).is_empty());
        // One distinctive term alone is chance.
        let entries = vec![assistant("The backoff_ms=250 setting is fine.")];
        assert!(used(&entries, &injected()).is_empty());
    }

    #[test]
    fn injected_context_and_tool_output_are_not_the_agents_words() {
        let entries = vec![
            json!({"type": "attachment", "attachment": {"type": "hook_additional_context",
                "content": [format!("  - [MEM#a1b2] {RETRY}")]}}),
            json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "content": format!("[MEM#ffe0] {PORT}")}]}}),
        ];
        assert!(used(&entries, &injected()).is_empty());
    }
}
