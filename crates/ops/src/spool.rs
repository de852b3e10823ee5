//! A store's spool: the writes a hook made while the store could not take them (its service
//! frozen, busy past the hook's budget, or unable to start). A hook may not wait, and may not
//! lose what it was given, so the write goes here: one JSON line each, redacted, fsynced,
//! bounded. Whoever opens the store next (its service, or a process working on it directly)
//! applies the lines in order, then removes the file. Storing the same content twice keeps one
//! memory, so a line applied again after a crash, or one the service had taken after all, adds
//! nothing.

use crate::{Caller, Remember};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use wt_memory_base::project::Project;
use wt_memory_core::store::Store;
use wt_memory_foundation::error::Result;

/// Past this size new writes are refused (and logged by the hook): a service that has not run
/// for that long has a problem a bigger file would not solve.
pub const MAX_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct Entry {
    at: String,
    /// The front end that wrote it (commit, extraction, hook), for the metrics log.
    source: String,
    /// A memory to store; empty when the line is a learned key.
    #[serde(default)]
    req: Remember,
    /// A prompt to give a memory as a learned key (`ops::learn_key`), instead of a memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    learn: Option<LearnKey>,
}

#[derive(Serialize, Deserialize)]
struct LearnKey {
    id: String,
    prompt: String,
}

/// `<storage root>/.spool/<store>.jsonl`: beside the store, so a store's spool is found from
/// the store's own directory.
pub fn path(project: &Project) -> PathBuf {
    let root = project
        .store_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or_else(wt_memory_base::paths::storage_root);
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
        .map(|k| wt_memory_foundation::hygiene::clean_content(k))
        .collect();
    if let Some(b) = branch {
        if !req.tags.iter().any(|t| t.starts_with("branch:")) {
            req.tags.push(format!("branch:{b}"));
        }
    }
    append(
        project,
        &Entry {
            at: Store::now(),
            source: source.to_string(),
            req,
            learn: None,
        },
    )
}

/// Keep, for the store of `project`, the prompt memory `id` is to learn as a key. A prompt the
/// write path would change is refused as `ops::learn_key` refuses it, so no secret is spooled.
pub fn add_learned_key(project: &Project, id: &str, prompt: &str) -> Result<()> {
    let Some(prompt) = crate::learnable_key(prompt) else {
        return Err(wt_memory_foundation::error::bad_input(
            "a prompt holding a secret or a private span is not learned",
        ));
    };
    append(
        project,
        &Entry {
            at: Store::now(),
            source: "hook".to_string(),
            req: Remember::default(),
            learn: Some(LearnKey {
                id: id.to_string(),
                prompt,
            }),
        },
    )
}

/// One line at the end of the spool, synced to disk before this returns.
fn append(project: &Project, entry: &Entry) -> Result<()> {
    let mut line = serde_json::to_vec(entry)?;
    line.push(b'\n');
    let file = path(project);
    let Some(_lock) = wt_memory_foundation::lock::exclusive(
        &lock_path(project),
        Duration::from_millis(500),
        Duration::from_millis(5),
    )?
    else {
        return Err(wt_memory_foundation::error::other(
            "the spool is locked by another writer",
        ));
    };
    let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    if size + line.len() as u64 > MAX_BYTES {
        return Err(wt_memory_foundation::error::other(format!(
            "the spool of {} is full ({} writes wait): is its memory service running? (`wt-memory doctor`)",
            project.name,
            count(project)
        )));
    }
    let fresh = size == 0;
    let mut out = wt_memory_base::paths::open_private_append(&file)?;
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

/// Store what waits in `project`'s spool (memories and learned keys), in order, then empty it.
/// Returns how many memories were new. A line that no longer parses or checks is logged and
/// dropped (it cannot become storable by waiting).
pub fn apply(store: &Store, project: &Project) -> Result<usize> {
    let file = path(project);
    if !waiting(project) {
        return Ok(0);
    }
    let Some(_lock) = wt_memory_foundation::lock::exclusive(
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
            .map_err(wt_memory_foundation::error::Error::from)
            .and_then(|entry| {
                if let Some(learn) = entry.learn {
                    // Learning the same key twice changes nothing, like storing the same content.
                    return crate::learn_key(store, &learn.id, &learn.prompt).map(|_| false);
                }
                let caller = Caller {
                    source: Some(entry.source),
                    ..Caller::default()
                };
                Ok(!crate::remember(store, entry.req.check()?, &caller)?.duplicate)
            });
        match stored {
            Ok(stored_new) => new += usize::from(stored_new),
            Err(e) => {
                wt_memory_base::log::error("spool", &format!("a spooled write was dropped: {e}"))
            }
        }
    }
    std::fs::remove_file(&file)?;
    Ok(new)
}
