//! `wt-memory enrich`: retrieval keys for memories stored without them, written by the same
//! `claude -p` path as the Stop hook's extraction, in batches, after a cost estimate. The keys
//! are what a later query is matched against besides the content (see `record::KEYS`).

use crate::record::MemoryRecord;
use std::collections::HashMap;

/// Memories per model call.
pub const BATCH: usize = 20;
/// The model's price in US dollars per million tokens (input, output): Claude Haiku's list price.
const PRICE_PER_MTOK: (f64, f64) = (1.0, 5.0);
/// Output tokens per memory (three keys of about 15 words).
const OUTPUT_TOKENS_PER_MEMORY: usize = 70;
/// Characters per token, for English text and code.
const CHARS_PER_TOKEN: usize = 4;

/// The memories that have no keys from a writer yet (keys learned from use do not count), newest
/// first, at most `limit`.
pub fn without_keys(records: Vec<MemoryRecord>, limit: Option<usize>) -> Vec<MemoryRecord> {
    records
        .into_iter()
        .filter(|r| r.keys().len() == r.learned_keys().len())
        .take(limit.unwrap_or(usize::MAX))
        .collect()
}

/// What enriching `memories` would cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub memories: usize,
    pub calls: usize,
    pub input_tokens: usize,
    pub output_tokens: usize,
    pub dollars: f64,
}

pub fn estimate(memories: &[MemoryRecord]) -> Estimate {
    let prompt_chars: usize = memories
        .chunks(BATCH)
        .map(|batch| prompt(batch).chars().count())
        .sum();
    let input_tokens = prompt_chars.div_ceil(CHARS_PER_TOKEN);
    let output_tokens = memories.len() * OUTPUT_TOKENS_PER_MEMORY;
    Estimate {
        memories: memories.len(),
        calls: memories.len().div_ceil(BATCH),
        input_tokens,
        output_tokens,
        dollars: (input_tokens as f64 * PRICE_PER_MTOK.0 + output_tokens as f64 * PRICE_PER_MTOK.1)
            / 1e6,
    }
}

/// The short handle a memory has in one prompt (its position), so the model never copies ids.
fn handle(i: usize) -> String {
    format!("M{}", i + 1)
}

/// The model's instructions and the batch, one memory per line.
pub fn prompt(batch: &[MemoryRecord]) -> String {
    let mut p = String::from(
        "Below are notes a coding agent saved about one software project. For each note, write \
retrieval keys that help a later session find it:\n\
- two short questions or tasks a developer would type when the note helps, in their own words \
(not the note's wording);\n\
- one anchor: only the file paths, commands, error codes and identifiers the note is specific to \
(leave it out if there are none);\n\
- if the note is not in English, one question in English; if it is, none in another language.\n\n\
Answer with one line per note, exactly: <handle>|key; key; key\n\
Never include credentials, tokens or passwords.\n\nNotes:\n",
    );
    for (i, r) in batch.iter().enumerate() {
        let content = r.content.split_whitespace().collect::<Vec<_>>().join(" ");
        p.push_str(&format!("{}: {content}\n", handle(i)));
    }
    p
}

/// `<handle>|key; key` lines of the model's answer, as (memory id, keys); lines naming no note
/// of the batch, and notes given no usable key, are left out.
pub fn parse_answer(batch: &[MemoryRecord], answer: &str) -> Vec<(String, Vec<String>)> {
    let by_handle: HashMap<String, &MemoryRecord> = batch
        .iter()
        .enumerate()
        .map(|(i, r)| (handle(i), r))
        .collect();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in answer.lines() {
        let line = line.trim().trim_start_matches(['-', '*', ' ']);
        let Some((h, keys)) = line.split_once('|') else {
            continue;
        };
        let Some(record) = by_handle.get(h.trim().trim_end_matches(':')) else {
            continue;
        };
        let keys = crate::record::clean_keys(&keys.split(';').collect::<Vec<_>>());
        if !keys.is_empty() && !out.iter().any(|(id, _)| id == &record.id) {
            out.push((record.id.clone(), keys));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, content: &str, keys: Option<&str>) -> MemoryRecord {
        let mut r = MemoryRecord::for_test(id, content);
        if let Some(k) = keys {
            r.metadata.insert(crate::record::KEYS.into(), k.into());
        }
        r
    }

    #[test]
    fn only_memories_without_keys_are_picked() {
        let all = vec![
            rec("a", "x", None),
            rec("b", "y", Some("why y?")),
            rec("c", "z", None),
        ];
        let ids: Vec<String> = without_keys(all.clone(), None)
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(without_keys(all, Some(1)).len(), 1);
    }

    #[test]
    fn answers_map_back_by_handle_and_junk_is_ignored() {
        let batch = [
            rec("id-a", "Postgres listens on 5433", None),
            rec("id-b", "Use pnpm", None),
        ];
        let answer = "Sure! Here are the keys:\n\
                      M2| which package manager?; pnpm install \n\
                      M9|no such note\n\
                      M1: |why can't I connect to the db?;  port 5433 ; ;\n\
                      M2|a second answer for M2 is ignored";
        let got = parse_answer(&batch, answer);
        assert_eq!(
            got,
            [
                (
                    "id-b".to_string(),
                    vec!["which package manager?".to_string(), "pnpm install".into()]
                ),
                (
                    "id-a".to_string(),
                    vec![
                        "why can't I connect to the db?".to_string(),
                        "port 5433".into()
                    ]
                ),
            ]
        );
    }

    #[test]
    fn the_estimate_counts_calls_and_tokens() {
        let memories: Vec<MemoryRecord> = (0..45)
            .map(|i| rec(&i.to_string(), &"word ".repeat(40), None))
            .collect();
        let e = estimate(&memories);
        assert_eq!((e.memories, e.calls), (45, 3));
        // About 205 characters per note line and 640 per prompt's instructions.
        assert!(e.input_tokens > 2250 && e.input_tokens < 3150, "{e:?}");
        assert_eq!(e.output_tokens, 45 * OUTPUT_TOKENS_PER_MEMORY);
        assert!(e.dollars > 0.0 && e.dollars < 0.1);
    }
}
