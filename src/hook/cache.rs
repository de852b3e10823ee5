//! Per-session dedup cache: one small JSON file per Claude Code session in the per-user runtime
//! dir. Claude Code runs hooks for parallel tool calls at the same time, so every update is a
//! read-modify-write under an exclusive `flock` on a sidecar lock file, and the file itself is
//! replaced atomically (readers without the lock always see a whole file).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const PREFIX: &str = "session-";
/// Cache files untouched for this long belong to finished sessions (the previous system never deleted them).
pub const MAX_AGE: Duration = Duration::from_secs(3 * 24 * 3600);

#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionState {
    /// Dedup key -> unix time it was recorded.
    #[serde(default)]
    pub keys: BTreeMap<String, i64>,
    /// Short `[MEM#…]` id -> full memory id, so ids stay unique and stable within a session.
    #[serde(default)]
    pub mem_ids: BTreeMap<String, String>,
    /// Full ids of the memories listed in an index this session (each is listed once).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub indexed: BTreeSet<String>,
    /// `tool_input.prompt` of the last Agent/Task call seen at PreToolUse, for the SubagentStart
    /// that follows (its input carries no task text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_subagent_prompt: Option<String>,
    /// Commands that failed this session, waiting for a form of them that works (the fix).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<SessionFailure>,
    /// Signatures of the failures the guard stopped a command for this session (once each: a
    /// second attempt runs).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub guarded: BTreeSet<String>,
    /// Signatures of the commands that failed in this session: the agent saw those failures
    /// itself, so the guard does not stop their next forms here.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub failed_here: BTreeSet<String>,
    /// The commands the guard stopped this session, by signature: one of them that then works
    /// was a false fire.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub denied: BTreeMap<String, String>,
}

/// A command that failed this session (see [`wt_memory_foundation::failure`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionFailure {
    pub signature: String,
    pub command: String,
    pub error: String,
}

/// First 16 hex digits of sha256 of `"<event>:<tool>:<query>"`.
pub fn dedup_key(event: &str, tool: &str, query: &str) -> String {
    let digest = Sha256::digest(format!("{event}:{tool}:{query}").as_bytes());
    wt_memory_foundation::hygiene::hex(&digest)[..16].to_string()
}

/// A session id as a file-name component: `[A-Za-z0-9_-]`, at most 80 characters. None when
/// nothing usable is left (then the session has no cache rather than a shared `unknown` one).
pub fn sanitize_session_id(id: &str) -> Option<String> {
    let clean: String = id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(80)
        .collect();
    (!clean.is_empty()).then_some(clean)
}

pub struct SessionCache {
    pub path: PathBuf,
    lock_path: PathBuf,
}

impl SessionCache {
    pub fn new(dir: &Path, session_id: &str) -> Option<Self> {
        let id = sanitize_session_id(session_id)?;
        Some(SessionCache {
            path: dir.join(format!("{PREFIX}{id}.json")),
            lock_path: dir.join(format!("{PREFIX}{id}.lock")),
        })
    }

    /// A consistent snapshot (atomic replacement makes a lock unnecessary for reading). A missing
    /// or damaged file reads as empty.
    pub fn load(&self) -> SessionState {
        std::fs::read(&self.path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Apply `change` to the current state under the lock and write it back atomically.
    pub fn update<F: FnOnce(&mut SessionState)>(
        &self,
        deadline: Instant,
        change: F,
    ) -> Result<(), String> {
        let _lock = lock_exclusive(&self.lock_path, deadline)?;
        let mut state = self.load();
        change(&mut state);
        let bytes = serde_json::to_vec(&state).map_err(|e| e.to_string())?;
        wt_memory_base::paths::write_atomic_volatile(&self.path, &bytes)
            .map_err(|e| format!("cannot write session cache {}: {e}", self.path.display()))
    }

    /// Start the session over (SessionStart `startup`/`clear`).
    pub fn reset(&self, deadline: Instant) -> Result<(), String> {
        self.update(deadline, |s| *s = SessionState::default())
    }
}

/// An exclusive lock held until the returned file is dropped, given up at `deadline`.
pub fn lock_exclusive(path: &Path, deadline: Instant) -> Result<std::fs::File, String> {
    let wait = deadline.saturating_duration_since(Instant::now());
    match wt_memory_foundation::lock::exclusive(path, wait, Duration::from_millis(3)) {
        Ok(Some(file)) => Ok(file),
        Ok(None) => Err(format!("timed out waiting for lock {}", path.display())),
        Err(e) => Err(format!("cannot lock {}: {e}", path.display())),
    }
}

/// Delete session cache and lock files not modified for `max_age`. Returns how many were removed.
pub fn sweep_old(dir: &Path, max_age: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // `.jsonl`: the action gate's ledger of what the session was shown (src/hook/gate.rs).
        if !name.starts_with(PREFIX)
            || !(name.ends_with(".json") || name.ends_with(".lock") || name.ends_with(".jsonl"))
        {
            continue;
        }
        let old = wt_memory_base::paths::age(&entry.path()).is_some_and(|age| age > max_age);
        if old && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

// The session cache of a hook run.

/// Record dedup keys and MEM ids in the session cache (merged under its lock).
pub fn save_session(ctx: &super::Ctx, keys: &[String], state: &SessionState) {
    let Some(cache) = &ctx.session else { return };
    let now = chrono::Utc::now().timestamp();
    let result = cache.update(ctx.deadline, |s| {
        for k in keys {
            s.keys.insert(k.clone(), now);
        }
        for (short, full) in &state.mem_ids {
            s.mem_ids
                .entry(short.clone())
                .or_insert_with(|| full.clone());
        }
        s.indexed.extend(state.indexed.iter().cloned());
    });
    if let Err(e) = result {
        super::log::error(&ctx.event, &e);
    }
}

pub fn load_session(ctx: &super::Ctx) -> SessionState {
    ctx.session.as_ref().map(|c| c.load()).unwrap_or_default()
}

/// Change the session cache under its lock (nothing without a session).
pub fn store_session(ctx: &super::Ctx, f: impl FnOnce(&mut SessionState)) -> Result<(), String> {
    match &ctx.session {
        Some(cache) => cache.update(ctx.deadline, f),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_cannot_escape_the_directory() {
        assert_eq!(
            sanitize_session_id("../../etc/passwd").as_deref(),
            Some("etcpasswd")
        );
        assert_eq!(
            sanitize_session_id("6d3f2b9e-8c41").as_deref(),
            Some("6d3f2b9e-8c41")
        );
        assert_eq!(sanitize_session_id("/./"), None);
        assert_eq!(sanitize_session_id(&"a".repeat(500)).unwrap().len(), 80);
    }

    #[test]
    fn keys_are_16_hex_and_distinct() {
        let a = dedup_key("PostToolUse", "Read", "src/a.rs");
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, dedup_key("PostToolUse", "Read", "src/b.rs"));
        assert_ne!(a, dedup_key("PreToolUse", "Read", "src/a.rs"));
    }

    #[test]
    fn concurrent_updates_keep_every_key() {
        let dir = tempfile::tempdir().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        std::thread::scope(|s| {
            for i in 0..16 {
                let dir = dir.path();
                s.spawn(move || {
                    let cache = SessionCache::new(dir, "sess").unwrap();
                    cache.update(deadline, |st| {
                        st.keys.insert(format!("k{i}"), i);
                    })
                });
            }
        });
        let state = SessionCache::new(dir.path(), "sess").unwrap().load();
        assert_eq!(state.keys.len(), 16);
    }

    #[test]
    fn reset_clears_and_damaged_file_reads_empty() {
        let dir = tempfile::tempdir().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let cache = SessionCache::new(dir.path(), "s").unwrap();
        cache
            .update(deadline, |st| {
                st.keys.insert("x".into(), 1);
            })
            .unwrap();
        assert_eq!(cache.load().keys.len(), 1);
        cache.reset(deadline).unwrap();
        assert!(cache.load().keys.is_empty());
        std::fs::write(&cache.path, b"{not json").unwrap();
        assert_eq!(cache.load(), SessionState::default());
    }

    #[test]
    fn sweep_removes_only_old_session_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("session-a.json"), b"{}").unwrap();
        std::fs::write(dir.path().join("other.json"), b"{}").unwrap();
        assert_eq!(sweep_old(dir.path(), Duration::from_secs(3600)), 0);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(sweep_old(dir.path(), Duration::from_millis(1)), 1);
        assert!(dir.path().join("other.json").exists());
    }
}
