//! One handler per event, even when Claude Code starts two: the same hook registered by the plugin
//! and in settings (or by two copies of the plugin) runs twice, concurrently. The first run claims
//! the event with an exclusive marker file; a copy that finds a fresh claim steps aside.

use super::input::HookInput;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Copies of one event start within milliseconds of each other; a claim this old belongs to an
/// earlier event (a later turn never repeats a payload this fast).
const FRESH: Duration = Duration::from_secs(2);

/// Claims older than this are swept at SessionStart.
const SWEEP_AFTER: Duration = Duration::from_secs(600);

/// What makes two runs the same event: the session, the event and the tool call, or the prompt,
/// or else the whole payload.
pub fn key(event: &str, input: &HookInput, raw: &[u8]) -> String {
    let session = input.str("session_id").unwrap_or("");
    let what = match (input.str("tool_use_id"), input.str("prompt")) {
        (Some(tool_use), _) => format!("tool:{tool_use}"),
        (None, Some(prompt)) => format!("prompt:{:x}", Sha256::digest(prompt.as_bytes())),
        (None, None) => format!("payload:{:x}", Sha256::digest(raw)),
    };
    let digest = Sha256::digest(format!("{session}\n{event}\n{what}").as_bytes());
    format!("{digest:x}")[..32].to_string()
}

fn marker(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.claim"))
}

fn is_fresh(path: &Path) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|at| SystemTime::now().duration_since(at).ok())
        .is_some_and(|age| age < FRESH)
}

/// Claim the event `key` in `dir`: false when another run claimed it a moment ago. Any failure
/// to record the claim lets this run go ahead (a duplicate is better than no memory).
pub fn claim(dir: &Path, key: &str) -> bool {
    if std::fs::create_dir_all(dir).is_err() {
        return true;
    }
    let path = marker(dir, key);
    let create = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
    };
    match create() {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            if is_fresh(&path) {
                return false;
            }
            // An old claim of an earlier, identical event: take it over. Of two runs that both
            // found it old, only one creates the new claim.
            let _ = std::fs::remove_file(&path);
            create().is_ok() || !is_fresh(&path)
        }
        Err(_) => true,
    }
}

/// Remove claims nobody can still be racing for.
pub fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|at| now.duration_since(at).ok())
            .is_some_and(|age| age > SWEEP_AFTER);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_copy_of_an_event_steps_aside_and_an_old_claim_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        assert!(claim(dir.path(), "k1"));
        assert!(!claim(dir.path(), "k1"), "a fresh claim holds");
        assert!(claim(dir.path(), "k2"), "another event is not affected");
        let old = SystemTime::now() - Duration::from_secs(5);
        let f = std::fs::File::options()
            .write(true)
            .open(marker(dir.path(), "k1"))
            .unwrap();
        f.set_modified(old).unwrap();
        assert!(claim(dir.path(), "k1"), "an old claim is an earlier event");
        assert!(!claim(dir.path(), "k1"));
    }

    #[test]
    fn keys_tell_tool_calls_and_prompts_apart() {
        let parse = |s: &str| HookInput::parse(s.as_bytes()).unwrap();
        let a = parse(r#"{"session_id":"s","tool_use_id":"t1","tool_name":"Bash"}"#);
        let b = parse(r#"{"session_id":"s","tool_use_id":"t2","tool_name":"Bash"}"#);
        let p = parse(r#"{"session_id":"s","prompt":"hello"}"#);
        let q = parse(r#"{"session_id":"s","prompt":"hello there"}"#);
        let other_session = parse(r#"{"session_id":"t","prompt":"hello"}"#);
        let keys = [
            key("PreToolUse", &a, b"a"),
            key("PreToolUse", &b, b"b"),
            key("PostToolUse", &a, b"a"),
            key("UserPromptSubmit", &p, b"p"),
            key("UserPromptSubmit", &q, b"q"),
            key("UserPromptSubmit", &other_session, b"o"),
        ];
        for (i, k) in keys.iter().enumerate() {
            for other in &keys[i + 1..] {
                assert_ne!(k, other);
            }
        }
        // The same event read twice (another copy of the payload) is the same key.
        assert_eq!(key("PreToolUse", &a, b"x"), key("PreToolUse", &a, b"y"));
    }
}
