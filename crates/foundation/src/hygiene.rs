//! Content hygiene applied to every write (and again to every hook injection):
//! valid UTF-8, character-safe truncation, `<private>` spans dropped, secrets redacted (the rules
//! live in [`crate::redact`]).
//!
//! The store is shared across machines by `sync`, so nothing secret may ever reach it.

pub use crate::redact::{redact, redact_pair};
use regex::Regex;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;
pub use wt_memory_base::hex;

/// Decode bytes as UTF-8, replacing invalid sequences with U+FFFD (never fails, never drops text).
pub fn decode_lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The longest prefix of `s` with at most `max_chars` characters (never splits a character).
pub fn truncate_chars(s: &str, max_chars: usize) -> &str {
    match s.char_indices().nth(max_chars) {
        Some((idx, _)) => &s[..idx],
        None => s,
    }
}

/// Like [`truncate_chars`] but marks a cut with `…` (the result still has at most `max_chars` chars).
pub fn truncate_with_ellipsis(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_string();
    }
    let mut out = truncate_chars(s, max_chars.saturating_sub(1))
        .trim_end()
        .to_string();
    out.push('…');
    out
}

/// Remove `<private>…</private>` spans (case-insensitive, across lines). An unclosed `<private>`
/// hides everything after it: when in doubt, keep it out of memory.
pub fn strip_private(s: &str) -> String {
    static CLOSED: OnceLock<Regex> = OnceLock::new();
    static OPEN: OnceLock<Regex> = OnceLock::new();
    let closed = CLOSED.get_or_init(|| Regex::new(r"(?is)<private>.*?</private>").unwrap());
    let open = OPEN.get_or_init(|| Regex::new(r"(?is)<private>.*$").unwrap());
    let without = closed.replace_all(s, "");
    open.replace_all(&without, "").into_owned()
}

/// Everything a write goes through: drop private spans, redact, trim.
pub fn clean_content(s: &str) -> String {
    redact(&strip_private(s)).trim().to_string()
}

/// Normalised form used for identity of content: trimmed, whitespace collapsed, lower-cased.
pub fn normalize(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// sha256 hex of the normalised content: two notes that differ only in spacing or case are one note.
pub fn content_hash(s: &str) -> String {
    hex(&Sha256::digest(normalize(s).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_never_splits_a_character() {
        let s = "árvíztűrő tükörfúrógép 😤🚀";
        for n in 0..s.chars().count() + 2 {
            let t = truncate_chars(s, n);
            assert!(t.chars().count() <= n);
            assert!(s.starts_with(t));
        }
        assert_eq!(truncate_with_ellipsis("héllo wörld", 6), "héllo…");
        assert_eq!(truncate_with_ellipsis("short", 10), "short");
    }

    #[test]
    fn invalid_utf8_becomes_replacement_char() {
        assert_eq!(decode_lossy(b"ok \xff\xfe end"), "ok \u{FFFD}\u{FFFD} end");
    }

    #[test]
    fn private_spans_are_dropped() {
        assert_eq!(strip_private("a <private>x\ny</private> b"), "a  b");
        assert_eq!(strip_private("a <PRIVATE>x</Private>b"), "a b");
        assert_eq!(strip_private("keep <private>never closed"), "keep ");
    }

    #[test]
    fn content_hash_ignores_spacing_and_case() {
        assert_eq!(
            content_hash("We chose  Postgres\n"),
            content_hash("we chose postgres")
        );
        assert_ne!(content_hash("a"), content_hash("b"));
    }
}
