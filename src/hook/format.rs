//! Turning `wt-memory` records into injected text: the previous filters (relevance floor, minimum
//! length, prefix dedup, `[MEM#xxxx]` ids, heuristic marker), a redaction pass on the way out, and a
//! character budget that drops whole memories.

use crate::record::MemoryRecord;
use std::collections::{BTreeMap, HashSet};

/// A memory below this relevance is not injected: the same floor `proactive` gates on.
pub const RELEVANCE_FLOOR: f64 = crate::recall::PROACTIVE_FLOOR;
const MIN_CHARS: usize = 20;
const PREFIX_CHARS: usize = 50;

/// Size limits of one injection, in characters.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub total: usize,
    /// Longer memories are shortened (with `…`) so one memory cannot take the whole budget.
    pub per_memory: usize,
}

/// SessionStart, UserPromptSubmit, SubagentStart.
pub const PROMPT_BUDGET: Budget = Budget {
    total: 1500,
    per_memory: 500,
};
/// PreToolUse, PostToolUse, PostToolUseFailure: these land next to every tool result.
pub const TOOL_BUDGET: Budget = Budget {
    total: 700,
    per_memory: 300,
};

const HEURISTIC_PHRASES: &[&str] = &[
    "false positive",
    "same pattern",
    "known pattern",
    "known issue",
    "was a false",
    "unlike previous",
    "same issue as",
    "this is not a real",
];

/// Memory that concludes from resemblance ("the review was a false positive") misled agents in
/// the previous implementation; such content is marked so it reads as a suggestion.
pub fn is_heuristic(content: &str) -> bool {
    let lower = content.to_lowercase();
    HEURISTIC_PHRASES.iter().any(|p| lower.contains(p))
}

/// Short citation ids: the first hex digits of the memory's own id (4, longer on a clash), so an id
/// stays the same for the whole session and points back at a real memory.
#[derive(Debug, Default)]
pub struct IdBook<'a> {
    pub map: Option<&'a mut BTreeMap<String, String>>,
    local: BTreeMap<String, String>,
}

impl<'a> IdBook<'a> {
    pub fn new(map: Option<&'a mut BTreeMap<String, String>>) -> Self {
        IdBook {
            map,
            local: BTreeMap::new(),
        }
    }

    pub fn assign(&mut self, full_id: &str) -> String {
        let map = match self.map.as_deref_mut() {
            Some(m) => m,
            None => &mut self.local,
        };
        let forms = short_forms(full_id);
        for short in &forms {
            match map.get(short) {
                Some(owner) if owner == full_id => return short.clone(),
                Some(_) => continue,
                None => {
                    map.insert(short.clone(), full_id.to_string());
                    return short.clone();
                }
            }
        }
        forms.last().cloned().unwrap_or_default()
    }
}

/// The `[MEM#…]` ids a memory may get, shortest first: 4, 6, 8… of its id's hex digits (of a
/// hash of the id when it has fewer than 8).
pub fn short_forms(full_id: &str) -> Vec<String> {
    let mut hex: String = full_id
        .chars()
        .filter(char::is_ascii_hexdigit)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if hex.len() < 8 {
        hex = crate::hygiene::content_hash(full_id);
    }
    (4..=hex.len())
        .step_by(2)
        .map(|n| hex[..n].to_string())
        .collect()
}

/// Newlines and tabs become spaces, secrets are redacted again (the store should hold none, but
/// imports and older stores may).
pub fn clean_content(raw: &str, redact: bool) -> String {
    let text = if redact {
        crate::hygiene::redact(raw)
    } else {
        raw.to_string()
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub struct LineOptions {
    /// Apply the 0.3 relevance floor (off for memories selected by tag, which have no query score).
    pub floor: bool,
    /// Prefix `[MEM#id]` (the cheat sheet is emitted without ids).
    pub with_ids: bool,
    pub per_memory: usize,
    /// Redact secrets again. The hooks' records never need it (every record a front end gets
    /// was redacted as it was serialised, whichever backend served it); text from elsewhere may.
    pub redact: bool,
}

/// Format memories as `  - [MEM#a1b2] content` lines, skipping ids already in `seen_ids`.
pub fn memory_lines(
    memories: &[MemoryRecord],
    ids: &mut IdBook,
    seen_ids: &mut HashSet<String>,
    opts: &LineOptions,
) -> Vec<String> {
    let mut prefixes = HashSet::new();
    let mut lines = Vec::new();
    for m in memories {
        if opts.floor && m.relevance_score.is_some_and(|r| r < RELEVANCE_FLOOR) {
            continue;
        }
        // A replaced fact is never injected: the agent would act on what is no longer true.
        if m.superseded_by.is_some() {
            continue;
        }
        let content = clean_content(&m.content, opts.redact);
        if content.chars().count() < MIN_CHARS || seen_ids.contains(&m.id) {
            continue;
        }
        let prefix: String = content.chars().take(PREFIX_CHARS).collect();
        if !prefixes.insert(prefix) {
            continue;
        }
        seen_ids.insert(m.id.clone());
        let marker = if is_heuristic(&content) {
            "⚠️ HEURISTIC: "
        } else {
            ""
        };
        let body = crate::hygiene::truncate_with_ellipsis(&content, opts.per_memory);
        lines.push(if opts.with_ids {
            format!("  - [MEM#{}] {marker}{body}", ids.assign(&m.id))
        } else {
            format!("  - {marker}{body}")
        });
    }
    lines
}

/// `header`, as many whole lines as fit, then `footer`, within `max_chars` in total (counting the
/// newlines). None when not even one line fits.
pub fn block(
    header: &str,
    lines: &[String],
    footer: Option<&str>,
    max_chars: usize,
) -> Option<String> {
    let chars = |s: &str| s.chars().count();
    let mut used = chars(header) + footer.map_or(0, |f| chars(f) + 1);
    let mut out = header.to_string();
    let mut any = false;
    for line in lines {
        let cost = chars(line) + 1;
        if used + cost > max_chars {
            continue;
        }
        used += cost;
        out.push('\n');
        out.push_str(line);
        any = true;
    }
    if !any {
        return None;
    }
    if let Some(f) = footer {
        out.push('\n');
        out.push_str(f);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(id: &str, content: &str, rel: Option<f64>) -> MemoryRecord {
        MemoryRecord {
            id: id.into(),
            content: content.into(),
            relevance_score: rel,
            ..MemoryRecord::default()
        }
    }

    fn opts() -> LineOptions {
        LineOptions {
            floor: true,
            with_ids: true,
            per_memory: 300,
            redact: true,
        }
    }

    #[test]
    fn filters_floor_length_and_prefix() {
        let long = "Hash passwords only through auth::hash::hash_secret, never bcrypt directly";
        let ms = vec![
            mem("aaaa1111-0000", long, Some(0.9)),
            mem("bbbb2222-0000", &format!("{long} (again)"), Some(0.8)),
            mem("cccc3333-0000", "too short", Some(0.9)),
            mem(
                "dddd4444-0000",
                "Irrelevant but long enough content here",
                Some(0.1),
            ),
            mem(
                "eeee5555-0000",
                "Unknown relevance still passes the floor",
                None,
            ),
            MemoryRecord {
                superseded_by: Some("ffff0000-0000".into()),
                ..mem(
                    "ffff6666-0000",
                    "A replaced fact, relevant but no longer true",
                    Some(0.9),
                )
            },
        ];
        let mut book = IdBook::new(None);
        let lines = memory_lines(&ms, &mut book, &mut HashSet::new(), &opts());
        assert_eq!(
            lines,
            vec![
                format!("  - [MEM#aaaa] {long}"),
                "  - [MEM#eeee] Unknown relevance still passes the floor".to_string()
            ]
        );
    }

    #[test]
    fn heuristic_marker_newlines_and_redaction() {
        let ms = vec![mem(
            "ab12cd34",
            "The review finding was a FALSE POSITIVE:\nsee password=hunter2hunter2 in ci.log",
            Some(0.5),
        )];
        let lines = memory_lines(&ms, &mut IdBook::new(None), &mut HashSet::new(), &opts());
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("  - [MEM#ab12] ⚠️ HEURISTIC: The review finding"),
            "{}",
            lines[0]
        );
        assert!(!lines[0].contains('\n'));
        assert!(!lines[0].contains("hunter2hunter2"), "{}", lines[0]);
    }

    #[test]
    fn ids_are_stable_and_extended_on_clash() {
        let mut map = BTreeMap::new();
        let mut book = IdBook::new(Some(&mut map));
        assert_eq!(book.assign("abcd1111-2222"), "abcd");
        assert_eq!(book.assign("abcd9999-2222"), "abcd99");
        assert_eq!(book.assign("abcd1111-2222"), "abcd");
        assert_eq!(map.len(), 2);
    }

    #[test]
    fn budget_cuts_whole_lines_on_char_boundaries() {
        let lines: Vec<String> = (0..10)
            .map(|i| format!("  - [MEM#000{i}] {}", "é😀".repeat(40)))
            .collect();
        let text = block("=== H ===", &lines, Some("=== END ==="), 400).unwrap();
        assert!(text.chars().count() <= 400);
        assert!(text.ends_with("=== END ==="));
        assert_eq!(text.matches("[MEM#").count(), 3);
        assert!(block("=== H ===", &lines, None, 20).is_none());
    }

    #[test]
    fn long_memories_are_shortened_per_memory() {
        let ms = vec![mem("ffff0000", &"ü".repeat(2000), Some(0.9))];
        let o = LineOptions {
            per_memory: 100,
            ..opts()
        };
        let lines = memory_lines(&ms, &mut IdBook::new(None), &mut HashSet::new(), &o);
        assert!(lines[0].ends_with('…'));
        assert_eq!(
            lines[0].chars().count(),
            "  - [MEM#ffff] ".chars().count() + 100
        );
    }
}
