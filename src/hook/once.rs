//! One handler per event, even when Claude Code starts two: the same hook registered by the plugin
//! and in settings (or by two copies of the plugin) runs twice, concurrently. The first run claims
//! the event with an exclusive marker file; a copy that finds a fresh claim steps aside.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Copies of one event start within milliseconds of each other; a claim this old belongs to an
/// earlier event (a later turn never repeats a payload this fast).
const FRESH: Duration = Duration::from_secs(2);

/// Claims older than this are swept at SessionStart.
const SWEEP_AFTER: Duration = Duration::from_secs(600);

/// What makes two runs the same event: Claude Code hands every copy of one event the same
/// payload, and two different events never share one (each tool call has its own id, each prompt
/// its own text; within a session, a later turn's identical payload comes long after [`FRESH`]).
/// The store is part of it: the same session id and payload in two projects are two events.
pub fn key(store: &Path, session: &str, event: &str, raw: &[u8]) -> String {
    let digest = Sha256::new()
        .chain_update(store.as_os_str().as_encoded_bytes())
        .chain_update([0])
        .chain_update(session.as_bytes())
        .chain_update([0])
        .chain_update(event.as_bytes())
        .chain_update([0])
        .chain_update(raw)
        .finalize();
    format!("{digest:x}")[..32].to_string()
}

/// Events whose handlers are idempotent themselves (Stop extracts only transcript lines no run
/// has taken yet): no claim needed.
pub fn needs_claim(event: &str) -> bool {
    !matches!(event, "Stop" | "SubagentStop" | "SessionEnd")
}

fn marker(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.claim"))
}

fn is_fresh(path: &Path) -> bool {
    wt_memory_base::paths::age(path).is_some_and(|age| age < FRESH)
}

/// Claim the event `key` in `dir`: false when another run claimed it a moment ago. Any failure
/// to record the claim lets this run go ahead (a duplicate is better than no memory).
pub fn claim(dir: &Path, key: &str) -> bool {
    // Never into a folder another user could have made (or read).
    if wt_memory_base::paths::ensure_private_dir(dir).is_err() {
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
    for entry in entries.flatten() {
        if wt_memory_base::paths::age(&entry.path()).is_some_and(|age| age > SWEEP_AFTER) {
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
        let old = std::time::SystemTime::now() - Duration::from_secs(5);
        let f = std::fs::File::options()
            .write(true)
            .open(marker(dir.path(), "k1"))
            .unwrap();
        f.set_modified(old).unwrap();
        assert!(claim(dir.path(), "k1"), "an old claim is an earlier event");
        assert!(!claim(dir.path(), "k1"));
    }

    #[test]
    fn keys_tell_events_and_sessions_apart() {
        let store = Path::new("/stores/shopapp-1a2b3c4d");
        let a = key(store, "s", "PreToolUse", br#"{"tool_use_id":"t1"}"#);
        assert_eq!(a, key(store, "s", "PreToolUse", br#"{"tool_use_id":"t1"}"#));
        assert_ne!(a, key(store, "s", "PreToolUse", br#"{"tool_use_id":"t2"}"#));
        assert_ne!(
            a,
            key(store, "s", "PostToolUse", br#"{"tool_use_id":"t1"}"#)
        );
        assert_ne!(a, key(store, "t", "PreToolUse", br#"{"tool_use_id":"t1"}"#));
        // Issue 43: one session id and payload in two projects are two events.
        let other = Path::new("/stores/billing-5e6f7a8b");
        assert_ne!(a, key(other, "s", "PreToolUse", br#"{"tool_use_id":"t1"}"#));
        assert!(needs_claim("UserPromptSubmit") && !needs_claim("Stop"));
    }
}
