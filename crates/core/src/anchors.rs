//! Code anchors: the repository files a memory names, with each file's git blob id when the
//! memory was written (and the commit then checked out), kept in the memory's metadata so sync
//! carries them. Before a memory is used, its anchors are compared with the working tree: the
//! file unchanged, changed since, or gone (deleted or renamed).
//!
//! Hashing is cached by (path, size, mtime): a file is hashed once until it changes, and the
//! hooks keep that cache between runs (a few stat calls per injected memory).

use serde::{Deserialize, Serialize};
use sha1::{Digest, Sha1};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use std::sync::OnceLock;

/// Metadata: one `path@blob` per line, paths relative to the repository root.
pub const ANCHORS: &str = "anchors";
/// Metadata: the commit checked out when the anchors were taken.
pub const ANCHOR_COMMIT: &str = "anchor_commit";
/// At most this many files per memory.
const MAX_ANCHORS: usize = 8;
/// Only the start of a long text is searched for paths.
const SCAN_CHARS: usize = 4000;
/// Larger files are not hashed (an anchor to a 50 MB file is not worth its read).
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Git's id of a blob with these bytes (`git hash-object`).
pub fn blob_id(bytes: &[u8]) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    format!("{:x}", h.finalize())
}

/// What a file's cached hash was taken from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    size: u64,
    mtime_ns: i128,
    blob: String,
}

/// Blob ids of files, each hashed once until its size or mtime changes.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Hasher {
    seen: HashMap<PathBuf, Seen>,
    #[serde(skip)]
    dirty: bool,
}

impl Hasher {
    /// The blob id of the file at `path` (None: no such file, or too large to anchor).
    pub fn blob(&mut self, path: &Path) -> Option<String> {
        let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
        if meta.len() > MAX_FILE_BYTES {
            return None;
        }
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        if let Some(seen) = self.seen.get(path) {
            if seen.size == meta.len() && seen.mtime_ns == mtime_ns {
                return Some(seen.blob.clone());
            }
        }
        let blob = blob_id(&std::fs::read(path).ok()?);
        self.seen.insert(
            path.to_path_buf(),
            Seen {
                size: meta.len(),
                mtime_ns,
                blob: blob.clone(),
            },
        );
        self.dirty = true;
        Some(blob)
    }

    /// A cache kept in `file` (empty when missing or unreadable).
    pub fn load(file: &Path) -> Hasher {
        std::fs::read(file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Keep the cache in `file` if anything was hashed (at most 2000 files: the oldest go).
    pub fn save(&mut self, file: &Path) {
        if !self.dirty {
            return;
        }
        if self.seen.len() > 2000 {
            self.seen.clear();
        }
        if let Ok(bytes) = serde_json::to_vec(self) {
            let _ = wt_memory_base::paths::write_atomic(file, &bytes);
        }
        self.dirty = false;
    }
}

fn path_words() -> &'static regex::Regex {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // A word with a slash, or a file name with an extension.
        regex::Regex::new(r"[A-Za-z0-9_./-]*(?:/[A-Za-z0-9_.-]+|\.[A-Za-z0-9]{1,10})")
            .expect("valid regex")
    })
}

/// The files under `root` that `text` names, as paths relative to `root`, in order of mention.
pub fn files_named(text: &str, root: &Path) -> Vec<String> {
    let text = wt_memory_foundation::hygiene::truncate_chars(text, SCAN_CHARS);
    let mut out: Vec<String> = Vec::new();
    for m in path_words().find_iter(text) {
        let word = m
            .as_str()
            .trim_start_matches("./")
            .trim_end_matches(['.', ',', ':', ';']);
        if word.is_empty() || word.starts_with('/') || word.contains("..") {
            continue;
        }
        if out.iter().any(|p| p == word) || !root.join(word).is_file() {
            continue;
        }
        out.push(word.to_string());
        if out.len() == MAX_ANCHORS {
            break;
        }
    }
    out
}

/// The anchors of a memory with `text` written now: `path@blob` lines, None when it names no
/// file of the repository.
pub fn anchors_for(text: &str, root: &Path, hasher: &mut Hasher) -> Option<String> {
    let lines: Vec<String> = files_named(text, root)
        .into_iter()
        .filter_map(|p| hasher.blob(&root.join(&p)).map(|b| format!("{p}@{b}")))
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// `(path, blob)` of each anchor in the metadata value.
pub fn parse(value: &str) -> Vec<(&str, &str)> {
    value
        .lines()
        .filter_map(|l| l.rsplit_once('@'))
        .filter(|(p, b)| !p.is_empty() && b.len() >= 40)
        .collect()
}

/// How a memory's anchors compare with the working tree.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Freshness {
    /// Files changed since the memory was written.
    pub changed: Vec<String>,
    /// Files no longer there (deleted or renamed).
    pub gone: Vec<String>,
}

impl Freshness {
    pub fn is_fresh(&self) -> bool {
        self.changed.is_empty() && self.gone.is_empty()
    }

    /// A few words for a hook line or a recall reason: `src/a.rs changed since`,
    /// `src/b.rs gone`.
    pub fn note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.changed.is_empty() {
            parts.push(format!("{} changed since", self.changed.join(", ")));
        }
        if !self.gone.is_empty() {
            parts.push(format!("{} gone", self.gone.join(", ")));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Compare the anchors in `value` with the files under `root`.
pub fn check(value: &str, root: &Path, hasher: &mut Hasher) -> Freshness {
    let mut out = Freshness::default();
    for (path, blob) in parse(value) {
        match hasher.blob(&root.join(path)) {
            Some(now) if now == blob => {}
            Some(_) => out.changed.push(path.to_string()),
            None => out.gone.push(path.to_string()),
        }
    }
    out
}

/// A memory whose code anchors changed or vanished (`audit --stale`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StaleMemory {
    pub id: String,
    pub preview: String,
    pub changed: Vec<String>,
    pub gone: Vec<String>,
}

// Its preview is redacted as it is cut (`MemoryRecord::preview`).
crate::shows_no_memory!(StaleMemory);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            blob_id(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }

    #[test]
    fn anchors_follow_the_files_they_name() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("src/billing")).unwrap();
        std::fs::write(
            root.path().join("src/billing/invoice.rs"),
            "fn retry() {}\n",
        )
        .unwrap();
        std::fs::write(root.path().join("Cargo.toml"), "[package]\n").unwrap();
        let text = "Retries live in src/billing/invoice.rs (see ./Cargo.toml, not src/nowhere.rs or /etc/passwd).";
        assert_eq!(
            files_named(text, root.path()),
            ["src/billing/invoice.rs", "Cargo.toml"]
        );
        let mut hasher = Hasher::default();
        let value = anchors_for(text, root.path(), &mut hasher).unwrap();
        assert!(value.starts_with("src/billing/invoice.rs@"), "{value}");
        assert!(check(&value, root.path(), &mut hasher).is_fresh());

        std::fs::write(
            root.path().join("src/billing/invoice.rs"),
            "fn retry_twice() {}\n",
        )
        .unwrap();
        std::fs::remove_file(root.path().join("Cargo.toml")).unwrap();
        let state = check(&value, root.path(), &mut Hasher::default());
        assert_eq!(state.changed, ["src/billing/invoice.rs"]);
        assert_eq!(state.gone, ["Cargo.toml"]);
        assert_eq!(
            state.note().unwrap(),
            "src/billing/invoice.rs changed since; Cargo.toml gone"
        );
        assert_eq!(anchors_for("no files here", root.path(), &mut hasher), None);
    }

    #[test]
    fn the_cache_hashes_a_file_once_until_it_changes() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("a.txt");
        std::fs::write(&file, "one").unwrap();
        let mut hasher = Hasher::default();
        let first = hasher.blob(&file).unwrap();
        let cache = root.path().join("cache.json");
        hasher.save(&cache);
        let mut again = Hasher::load(&cache);
        assert_eq!(again.blob(&file).unwrap(), first);
        assert!(!again.dirty, "served from the cache");
        std::fs::write(&file, "two, longer").unwrap();
        assert_ne!(again.blob(&file).unwrap(), first);
    }
}
