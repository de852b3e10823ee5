//! Undo for destructive operations: before `forget` of several memories, `cleanup`, `dedup`,
//! `import`, migrations, `reembed`, `sync pull` and `restore` itself, the whole store is written as
//! an export document (the same JSON as `wt-memory export`, private memories included since it
//! never leaves the machine) to `<store>/snapshots/<UTC time>-<operation>.json`. The last
//! [`KEEP`] are kept; an empty store takes none. [`restore`] brings the store back to one.

use crate::exchange::{self, ExportDoc};
use crate::record::MemoryRecord;
use crate::record::{HELD_TAG, REVIEWED};
use crate::store::Store;
use anyhow::Context;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// How many snapshots a store keeps (the oldest go first).
pub const KEEP: usize = 5;

/// File-name timestamp: fixed width, so names sort in time order.
const STAMP: &str = "%Y%m%dT%H%M%S%.3fZ";

pub fn dir(store_dir: &Path) -> PathBuf {
    store_dir.join(crate::store::SNAPSHOT_DIR)
}

/// One snapshot file, as `restore --list` shows it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Info {
    /// File name without `.json`: what `restore NAME` takes.
    pub name: String,
    /// When it was taken (RFC 3339, UTC).
    pub taken_at: String,
    /// The operation it was taken before.
    pub operation: String,
    /// Memories it holds (`None` when the file cannot be read).
    pub count: Option<usize>,
    #[serde(skip)]
    pub path: PathBuf,
}

/// `<stamp>-<operation>` split, when `name` is a snapshot's name.
fn parse_name(name: &str) -> Option<(chrono::DateTime<chrono::Utc>, String)> {
    let (stamp, op) = name.split_once('-')?;
    let t = chrono::NaiveDateTime::parse_from_str(stamp, STAMP).ok()?;
    if op.is_empty() {
        return None;
    }
    Some((t.and_utc(), op.to_string()))
}

/// Every snapshot of the store, newest first.
pub fn list(store_dir: &Path) -> Vec<Info> {
    let mut out: Vec<Info> = std::fs::read_dir(dir(store_dir))
        .map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|path| {
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".json")?
                .to_string();
            let (t, operation) = parse_name(&name)?;
            Some(Info {
                taken_at: crate::record::rfc3339(&t),
                operation,
                count: None,
                name,
                path,
            })
        })
        .collect();
    out.sort_by(|a, b| b.name.cmp(&a.name));
    out
}

/// [`list`] with each snapshot's memory count read from its file.
pub fn list_with_counts(store_dir: &Path) -> Vec<Info> {
    let mut all = list(store_dir);
    for info in &mut all {
        info.count = std::fs::read_to_string(&info.path)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("records").and_then(|r| r.as_array()).map(Vec::len));
    }
    all
}

/// The snapshot called `name` (with or without `.json`), or the newest when `name` is `None`.
pub fn find(store_dir: &Path, name: Option<&str>) -> anyhow::Result<Info> {
    let all = list(store_dir);
    match name {
        None => all.into_iter().next().with_context(|| {
            format!(
                "no snapshots in {} (one is taken before forget of several memories, cleanup, \
                 dedup, import, migrations, reembed and sync pull)",
                dir(store_dir).display()
            )
        }),
        Some(n) => {
            let n = n.trim();
            let n = n.strip_suffix(".json").unwrap_or(n);
            all.into_iter().find(|i| i.name == n).with_context(|| {
                format!("no snapshot named '{n}' (see `wt-memory restore --list`)")
            })
        }
    }
}

/// Write a snapshot of `store` taken before `operation`, then keep only the newest [`KEEP`].
/// `None` (and nothing written) when the store holds no memory.
pub fn take(store: &Store, operation: &str) -> anyhow::Result<Option<Info>> {
    let doc = exchange::export(store, false)?;
    let count = doc["count"].as_u64().unwrap_or(0) as usize;
    if count == 0 {
        return Ok(None);
    }
    // The operation becomes part of a file name: letters, digits and '-' only.
    let operation: String = operation
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let operation = operation.as_str();
    let snaps = dir(store.dir());
    wt_memory_base::paths::ensure_private_dir(&snaps)
        .with_context(|| format!("cannot create {}", snaps.display()))?;
    let text = serde_json::to_string_pretty(&doc)?;
    // Two snapshots in the same millisecond would share a name: wait for the next one.
    let (name, path) = loop {
        let now = chrono::Utc::now();
        let name = format!("{}-{operation}", now.format(STAMP));
        let path = snaps.join(format!("{name}.json"));
        if !path.exists() {
            break (name, path);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    wt_memory_base::paths::write_atomic(&path, text.as_bytes())
        .with_context(|| format!("cannot write the snapshot {}", path.display()))?;
    for old in list(store.dir()).into_iter().skip(KEEP) {
        let _ = std::fs::remove_file(&old.path);
    }
    let (t, _) = parse_name(&name).expect("a name just made");
    Ok(Some(Info {
        taken_at: crate::record::rfc3339(&t),
        operation: operation.to_string(),
        count: Some(count),
        name,
        path,
    }))
}

/// Read and check a snapshot's document and its records.
pub fn load(info: &Info) -> anyhow::Result<Vec<MemoryRecord>> {
    let text = std::fs::read_to_string(&info.path)
        .with_context(|| format!("cannot read {}", info.path.display()))?;
    let doc: ExportDoc = exchange::parse_doc(&text)
        .map_err(|e| anyhow::anyhow!("snapshot {} is unusable: {e}", info.name))?;
    doc.records
        .into_iter()
        .map(|v| {
            serde_json::from_value::<MemoryRecord>(v)
                .map_err(|e| anyhow::anyhow!("snapshot {} holds a bad record: {e}", info.name))
        })
        .collect()
}

/// What [`restore`] changed.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Restored {
    /// Memories that were not in the snapshot, deleted.
    pub deleted: usize,
    /// Memories of the snapshot that were missing, inserted again with their ids.
    pub reinserted: usize,
    /// Memories whose tags had changed (dedup merges, migrations), given back their tags.
    pub retagged: usize,
    /// Snapshot records that could not be inserted.
    pub errors: usize,
}

/// Bring `store` back to `records` (a loaded snapshot): delete what it does not hold, insert what
/// is missing (same id, created_at, importance, tags, metadata), and give back changed tags.
pub fn restore(store: &Store, records: &[MemoryRecord]) -> anyhow::Result<Restored> {
    let mut report = Restored::default();
    let wanted: HashMap<&str, &MemoryRecord> = records.iter().map(|r| (r.id.as_str(), r)).collect();
    let current = store.all()?;
    let extra: Vec<String> = current
        .iter()
        .map(|m| m.id.0.to_string())
        .filter(|id| !wanted.contains_key(id.as_str()))
        .collect();
    report.deleted = store.delete_many(extra.iter().map(String::as_str))?;
    let mut present: HashSet<String> = HashSet::new();
    for m in &current {
        let id = m.id.0.to_string();
        if let Some(r) = wanted.get(id.as_str()) {
            // A hold stands unless the user approved the memory: a snapshot from before the hold
            // (or before migration 003) does not lift it.
            let mut tags = r.tags.clone();
            let held_now = m.experience.tags.iter().any(|t| t == HELD_TAG)
                && !m.experience.metadata.contains_key(REVIEWED);
            if held_now && !tags.iter().any(|t| t == HELD_TAG) {
                tags.push(HELD_TAG.into());
            }
            if m.experience.tags != tags {
                store.set_tags(m, tags)?;
                report.retagged += 1;
            }
            present.insert(id);
        }
    }
    for r in records {
        if present.contains(&r.id) {
            continue;
        }
        match exchange::insert_record(store, exchange::new_memory(r, &r.content))? {
            Some(ins) if !ins.duplicate && ins.id == r.id => report.reinserted += 1,
            _ => report.errors += 1,
        }
    }
    Ok(report)
}
