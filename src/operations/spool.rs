//! A store's spool: the writes a hook made while the store could not take them (its service
//! frozen, busy past the hook's budget, or unable to start). A hook may not wait, and may not
//! lose what it was given, so the write goes here: one JSON line each, redacted, fsynced,
//! bounded. Whoever opens the store next (its service, or a process working on it directly)
//! applies the lines in order, then removes the file. Storing the same content twice keeps one
//! memory, so a line applied again after a crash, or one the service had taken after all, adds
//! nothing.

use crate::error::Result;
use crate::ops::{self, Caller, Remember};
use crate::project::Project;
use crate::store::Store;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Past this size new writes are refused (and logged by the hook): a service that has not run
/// for that long has a problem a bigger file would not solve.
pub const MAX_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct Entry {
    at: String,
    /// The front end that wrote it (commit, extraction, hook), for the metrics log.
    source: String,
    req: Remember,
}

/// `<storage root>/.spool/<store>.jsonl`: beside the store, so a store's spool is found from
/// the store's own directory.
pub fn path(project: &Project) -> PathBuf {
    let root = project
        .store_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(crate::paths::storage_root);
    root.join(".spool").join(format!("{}.jsonl", project.name))
}

fn lock_path(project: &Project) -> PathBuf {
    path(project).with_extension("lock")
}

/// Does the store have writes waiting?
pub fn waiting(project: &Project) -> bool {
    std::fs::metadata(path(project)).is_ok_and(|m| m.len() > 0)
}

/// How many writes wait (for `doctor` and `daemon status`).
pub fn count(project: &Project) -> usize {
    std::fs::read_to_string(path(project))
        .map(|text| text.lines().filter(|l| !l.trim().is_empty()).count())
        .unwrap_or(0)
}

/// Keep `req` for the store of `project`: redacted as the store would redact it, tagged with
/// the writer's branch, synced to disk before this returns.
pub fn add(project: &Project, req: &Remember, source: &str, branch: Option<&str>) -> Result<()> {
    let checked = req.check()?;
    let mut req = req.clone();
    req.content = checked.text_to_embed();
    req.keys = req
        .keys
        .iter()
        .map(|k| crate::hygiene::clean_content(k))
        .collect();
    if let Some(b) = branch {
        if !req.tags.iter().any(|t| t.starts_with("branch:")) {
            req.tags.push(format!("branch:{b}"));
        }
    }
    let entry = Entry {
        at: Store::now(),
        source: source.to_string(),
        req,
    };
    let mut line = serde_json::to_vec(&entry)?;
    line.push(b'\n');
    let file = path(project);
    let Some(_lock) = crate::lock::exclusive(
        &lock_path(project),
        Duration::from_millis(500),
        Duration::from_millis(5),
    )?
    else {
        return Err(crate::error::other("the spool is locked by another writer"));
    };
    let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    if size + line.len() as u64 > MAX_BYTES {
        return Err(crate::error::other(format!(
            "the spool of {} is full ({} writes wait): is its memory service running? (`wt-memory doctor`)",
            project.name,
            count(project)
        )));
    }
    let fresh = size == 0;
    let mut out = crate::paths::open_private_append(&file)?;
    out.write_all(&line)?;
    out.sync_all()?;
    if fresh {
        // The new file's name must survive a crash too.
        if let Some(dir) = file.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
    }
    Ok(())
}

/// Store what waits in `project`'s spool, in order, then empty it. Returns how many memories
/// were new. A line that no longer parses or checks is logged and dropped (it cannot become
/// storable by waiting).
pub fn apply(store: &Store, project: &Project) -> Result<usize> {
    let file = path(project);
    if !waiting(project) {
        return Ok(0);
    }
    let Some(_lock) = crate::lock::exclusive(
        &lock_path(project),
        Duration::from_secs(2),
        Duration::from_millis(5),
    )?
    else {
        return Ok(0); // a writer holds it; the next call applies it
    };
    let text = std::fs::read_to_string(&file)?;
    let mut new = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let stored = serde_json::from_str::<Entry>(line)
            .map_err(crate::error::Error::from)
            .and_then(|entry| {
                let caller = Caller {
                    source: Some(entry.source),
                    ..Caller::default()
                };
                ops::remember(store, entry.req.check()?, &caller)
            });
        match stored {
            Ok(done) => new += usize::from(!done.duplicate),
            Err(e) => crate::log::error("spool", &format!("a spooled write was dropped: {e}")),
        }
    }
    std::fs::remove_file(&file)?;
    Ok(new)
}
