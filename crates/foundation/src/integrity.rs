//! Loss is never silent: a small record next to each store (`<store>/wt-memory-integrity.json`)
//! with the number of memories and an order-independent digest of their ids (XOR of sha256(id)),
//! updated in O(1) on every insert and delete, plus the files RocksDB's repair has moved to
//! `<store>/storage/lost/` so far.
//!
//! The engine repairs a damaged RocksDB silently when it opens, dropping what it cannot read and
//! moving the damaged files to `storage/lost/`. [`wt_memory_core::store::Store`] compares the store with this
//! record: new files in `lost/` at open (a directory listing, cheap), fewer memories than recorded
//! whenever the store is read whole anyway, and a full count and digest in `health`, `doctor` and
//! `repair`. A finding becomes an [`Alert`] kept in the record until `wt-memory repair` clears it,
//! so every command warns (once, on stderr) until then, and the hook log gets one line per incident.

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

pub const FILE: &str = "wt-memory-integrity.json";
/// The ids behind the record: `+id` / `-id` lines appended on each write (O(1)), rewritten with
/// the current ids whenever the record is reset. Read only when something is wrong, to name the
/// lost memories and to recognise them when they are restored.
pub const JOURNAL: &str = "wt-memory-integrity.ids";

/// XOR of sha256 over every id: adding and removing an id are the same O(1) operation, and the
/// result does not depend on order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IdDigest(pub [u8; 32]);

impl IdDigest {
    pub fn toggle(&mut self, id: &str) {
        let h = Sha256::digest(id.as_bytes());
        for (a, b) in self.0.iter_mut().zip(h.iter()) {
            *a ^= b;
        }
    }

    pub fn of<'a>(ids: impl IntoIterator<Item = &'a str>) -> IdDigest {
        let mut d = IdDigest::default();
        for id in ids {
            d.toggle(id);
        }
        d
    }

    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn from_hex(s: &str) -> Option<IdDigest> {
        if s.len() != 64 || !s.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(IdDigest(out))
    }
}

/// Something found missing or repaired behind our back; kept until `wt-memory repair` clears it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    /// When it was first seen (RFC 3339).
    pub since: String,
    /// Memories recorded when it was seen.
    pub expected: u64,
    /// Memories found then.
    pub found: u64,
    /// The ids found are not the ids recorded (some were lost even if others appeared).
    #[serde(default)]
    pub ids_differ: bool,
    /// The recorded ids that are missing, when the journal could tell (else `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_ids: Option<Vec<String>>,
    /// Files the engine moved to `storage/lost/` (names).
    #[serde(default)]
    pub lost_files: Vec<String>,
}

impl Alert {
    pub fn missing(&self) -> u64 {
        match &self.missing_ids {
            Some(ids) => ids.len() as u64,
            None => self.expected.saturating_sub(self.found),
        }
    }

    /// The one-line reason (no trailing advice).
    pub fn reason(&self) -> String {
        let moved = if self.lost_files.is_empty() {
            String::new()
        } else {
            format!(
                "; the engine repaired the store on open and moved {} damaged file(s) to storage/lost/",
                self.lost_files.len()
            )
        };
        match self.missing() {
            0 if !self.ids_differ => {
                format!("all {} recorded memories are present{moved}", self.expected)
            }
            0 => format!("its memories are not the ones recorded (some were lost){moved}"),
            n => format!(
                "{n} of {} recorded memories were lost{moved}",
                self.expected
            ),
        }
    }

    /// One line for the log.
    pub fn summary(&self, project: &str) -> String {
        format!(
            "store '{project}' is damaged: {}; run `wt-memory doctor`",
            self.reason()
        )
    }

    /// The warning every command prints once on stderr.
    pub fn warning(&self, project: &str) -> String {
        format!("wt-memory: warning: {}", self.summary(project))
    }
}

/// `<store>/wt-memory-integrity.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Memories the store should hold.
    pub count: u64,
    /// [`IdDigest`] of their ids, hex.
    pub digest: String,
    /// Files in `storage/lost/` already accounted for.
    #[serde(default)]
    pub lost_seen: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert: Option<Alert>,
}

impl Record {
    pub fn new<'a>(ids: impl IntoIterator<Item = &'a str>, lost_seen: Vec<String>) -> Record {
        let mut count = 0u64;
        let mut d = IdDigest::default();
        for id in ids {
            count += 1;
            d.toggle(id);
        }
        Record {
            count,
            digest: d.hex(),
            lost_seen,
            alert: None,
        }
    }

    pub fn id_digest(&self) -> IdDigest {
        IdDigest::from_hex(&self.digest).unwrap_or_default()
    }

    /// One memory added (`added`) or removed.
    pub fn apply(&mut self, id: &str, added: bool) {
        let mut d = self.id_digest();
        d.toggle(id);
        self.digest = d.hex();
        self.count = if added {
            self.count + 1
        } else {
            self.count.saturating_sub(1)
        };
    }
}

/// Append one write to the journal.
pub fn journal_append(store_dir: &Path, id: &str, added: bool) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(store_dir.join(JOURNAL))?;
    f.write_all(format!("{}{id}\n", if added { '+' } else { '-' }).as_bytes())
}

/// Replace the journal with exactly these ids.
pub fn journal_reset<'a>(
    store_dir: &Path,
    ids: impl IntoIterator<Item = &'a str>,
) -> std::io::Result<()> {
    let mut text = String::new();
    for id in ids {
        text.push('+');
        text.push_str(id);
        text.push('\n');
    }
    wt_memory_base::paths::write_atomic(&store_dir.join(JOURNAL), text.as_bytes())
}

/// The recorded ids, replayed from the journal; `None` when it is missing or does not agree with
/// the record (count and digest), so it cannot be trusted.
pub fn journal_ids(store_dir: &Path, record: &Record) -> Option<HashSet<String>> {
    let text = std::fs::read_to_string(store_dir.join(JOURNAL)).ok()?;
    let mut ids = HashSet::new();
    for line in text.lines() {
        if let Some(id) = line.strip_prefix('+') {
            ids.insert(id.to_string());
        } else if let Some(id) = line.strip_prefix('-') {
            ids.remove(id);
        }
    }
    let agrees = ids.len() as u64 == record.count
        && IdDigest::of(ids.iter().map(String::as_str)) == record.id_digest();
    agrees.then_some(ids)
}

pub fn read(store_dir: &Path) -> Option<Record> {
    let text = std::fs::read_to_string(store_dir.join(FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

pub fn write(store_dir: &Path, record: &Record) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(record).map_err(std::io::Error::other)?;
    wt_memory_base::paths::write_atomic(&store_dir.join(FILE), text.as_bytes())
}

/// `<store>/storage/lost`, where RocksDB's repair moves what it could not use.
pub fn lost_dir(store_dir: &Path) -> std::path::PathBuf {
    store_dir.join("storage").join("lost")
}

/// Names of the files under `storage/lost/` (sorted; nested names joined with `/`).
pub fn lost_files(store_dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = format!("{prefix}{}", e.file_name().to_string_lossy());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&e.path(), &format!("{name}/"), out);
            } else {
                out.push(name);
            }
        }
    }
    let mut out = Vec::new();
    walk(&lost_dir(store_dir), "", &mut out);
    out.sort();
    out
}

/// One line in the tools' log (`$XDG_STATE_HOME/wt-tools/wt-hook-memory.log`, [`wt_memory_base::log`]): an
/// incident found while serving a hook, whose stderr nobody reads, is recorded there.
pub fn log(level: &str, msg: &str) {
    wt_memory_base::log::write(level, "wt-memory", msg);
}

static PENDING: Mutex<Option<String>> = Mutex::new(None);

/// Remember the warning this process should print (once, at the end; see [`take_warning`]).
pub fn set_warning(line: String) {
    if let Ok(mut p) = PENDING.lock() {
        *p = Some(line);
    }
}

/// The pending warning, if any; taken, so it is printed once.
pub fn take_warning() -> Option<String> {
    PENDING.lock().ok().and_then(|mut p| p.take())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_order_independent_and_reversible() {
        let a = IdDigest::of(["x", "y", "z"]);
        let b = IdDigest::of(["z", "x", "y"]);
        assert_eq!(a, b);
        let mut r = Record::new(["x", "y"], vec![]);
        r.apply("z", true);
        assert_eq!(r.digest, a.hex());
        assert_eq!(r.count, 3);
        r.apply("z", false);
        assert_eq!(r, Record::new(["y", "x"], vec![]));
        assert_eq!(IdDigest::from_hex(&a.hex()), Some(a));
        assert_ne!(IdDigest::of(["x"]), IdDigest::default());
    }

    #[test]
    fn journal_replays_and_is_checked_against_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Record::new(["a", "b"], vec![]);
        journal_reset(dir.path(), ["a", "b"]).unwrap();
        r.apply("c", true);
        journal_append(dir.path(), "c", true).unwrap();
        r.apply("a", false);
        journal_append(dir.path(), "a", false).unwrap();
        let ids = journal_ids(dir.path(), &r).unwrap();
        assert_eq!(ids, ["b", "c"].iter().map(|s| s.to_string()).collect());
        r.apply("d", true); // not journalled: the journal no longer agrees
        assert_eq!(journal_ids(dir.path(), &r), None);
    }

    #[test]
    fn alert_lines() {
        let a = Alert {
            since: "t".into(),
            expected: 10,
            found: 9,
            ids_differ: true,
            missing_ids: None,
            lost_files: vec!["000097.sst".into(), "MANIFEST-000101".into()],
        };
        assert_eq!(a.missing(), 1);
        let w = a.warning("demo");
        assert!(w.contains("1 of 10 recorded memories were lost"), "{w}");
        assert!(w.contains("2 damaged file(s)"), "{w}");
        assert!(!w.contains('\n'));
    }
}
