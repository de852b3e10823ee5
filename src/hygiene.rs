//! Content hygiene applied to every write (and again to every hook injection):
//! valid UTF-8, character-safe truncation, `<private>` spans dropped, secrets redacted.
//!
//! The store is shared across machines by `sync`, so nothing secret may ever reach it.

use regex::Regex;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

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

struct SecretPattern {
    kind: &'static str,
    regex: Regex,
    /// Capture group holding the secret itself (0 = the whole match).
    group: usize,
}

fn secret_patterns() -> &'static [SecretPattern] {
    static PATTERNS: OnceLock<Vec<SecretPattern>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let p = |kind, re: &str, group| SecretPattern {
            kind,
            regex: Regex::new(re).expect("secret pattern compiles"),
            group,
        };
        vec![
            p(
                "private-key",
                r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)",
                0,
            ),
            p("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0),
            p("api-key", r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{20,}", 0),
            p("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})", 0),
            p("aws-access-key", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", 0),
            p("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0),
            p("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:([^@\s/]+)@", 1),
            p(
                "password",
                r#"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\b["']?\s*[=:]\s*["']?([^\s"',;]{8,})"#,
                1,
            ),
        ]
    })
}

/// Shannon entropy in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = s.chars().count() as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// A long random-looking token (mixed case and digits, high entropy). Hex ids, UUIDs, paths and
/// identifiers are left alone: they lack one of the character classes or the entropy.
fn looks_like_random_token(t: &str) -> bool {
    t.len() >= 32
        && t.chars().any(|c| c.is_ascii_lowercase())
        && t.chars().any(|c| c.is_ascii_uppercase())
        && t.chars().any(|c| c.is_ascii_digit())
        && entropy(t) >= 4.0
}

/// Replace secrets with `[REDACTED:<kind>]`.
pub fn redact(s: &str) -> String {
    let mut out = s.to_string();
    for pat in secret_patterns() {
        if !pat.regex.is_match(&out) {
            continue;
        }
        let marker = format!("[REDACTED:{}]", pat.kind);
        out = pat
            .regex
            .replace_all(&out, |caps: &regex::Captures| {
                let whole = caps.get(0).unwrap();
                match caps.get(pat.group) {
                    Some(secret) if pat.group != 0 => {
                        if secret.as_str().starts_with("[REDACTED:") {
                            return whole.as_str().to_string();
                        }
                        let (a, b) = (secret.start() - whole.start(), secret.end() - whole.start());
                        format!("{}{}{}", &whole.as_str()[..a], marker, &whole.as_str()[b..])
                    }
                    _ => marker.clone(),
                }
            })
            .into_owned();
    }
    static TOKEN: OnceLock<Regex> = OnceLock::new();
    let token = TOKEN.get_or_init(|| Regex::new(r"[A-Za-z0-9+_=-]{32,}").unwrap());
    token
        .replace_all(&out, |caps: &regex::Captures| {
            let t = &caps[0];
            if looks_like_random_token(t) {
                "[REDACTED:token]".to_string()
            } else {
                t.to_string()
            }
        })
        .into_owned()
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

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

    fn redacts(input: &str, kind: &str, secret: &str) {
        let out = redact(input);
        assert!(out.contains(&format!("[REDACTED:{kind}]")), "{kind}: {out}");
        assert!(!out.contains(secret), "{kind} leaked: {out}");
    }

    #[test]
    fn every_secret_kind_is_redacted() {
        redacts(
            "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx here",
            "api-key",
            "AbCdEfGhIjKlMnOp",
        );
        redacts(
            "OPENAI=sk-proj-abcdefghijklmnopqrstuvwx1234",
            "api-key",
            "abcdefghijklmnop",
        );
        redacts(
            "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github-token",
            "ghp_abcdef",
        );
        redacts(
            "aws AKIAIOSFODNN7EXAMPLE done",
            "aws-access-key",
            "AKIAIOSFODNN7EXAMPLE",
        );
        redacts(
            "slack xoxb-123456789012-abcdefghij",
            "slack-token",
            "xoxb-1234",
        );
        redacts(
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt",
            "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        );
        redacts(
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "private-key",
            "MIIEowIBAAKCAQEA",
        );
        redacts(
            "db postgres://app:s3cr3tPass@db:5432/app",
            "url-password",
            "s3cr3tPass",
        );
        redacts(
            "set password=hunter2hunter2 now",
            "password",
            "hunter2hunter2",
        );
        redacts(
            "x Zq8kP2mN7vR4tY6wB3cD9fG1hJ5kL0sA8xE end",
            "token",
            "Zq8kP2mN7vR4tY6wB3cD9fG1hJ5kL0sA8xE",
        );
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for s in [
            "Rotate the Postgres password for staging through Vault",
            "commit 3f2a9c7e1b4d5f60718293a4b5c6d7e8f9012345 fixed it",
            "id 6d3f2b9e-8c41-4a7e-b0d5-2f9a17c4e8b1",
            "see crates/storage/migrations/20240602120000_add_due_date.sql",
            "password: use the read-only role",
            "InvoiceRepository::next_invoice_number_for_tenant",
        ] {
            assert_eq!(redact(s), s);
        }
        assert_eq!(
            redact("url https://user:[REDACTED:url-password]@h"),
            "url https://user:[REDACTED:url-password]@h"
        );
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
