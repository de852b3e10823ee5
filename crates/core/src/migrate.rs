//! Store migrations (the previous system's ids and meaning), recorded in `<store>/.migrations`.
//! 001 tags every memory that has no `branch:*` tag with `branch:unknown`, in place.
//! 002 gives every memory that names files of the repository its code anchors, taken now.
//! 003 runs the trust check on every memory written before it existed: one that carries hidden
//! characters or reads as an order to the agent is held for review (its text stays as it is; every
//! way out removes hidden characters anyway). Memories without a provenance count as the user's.

use crate::store::Store;
use serde::{Deserialize, Serialize};

pub const MIGRATIONS: &[(&str, &str)] = &[
    (
        "001",
        "tag memories without a branch tag with branch:unknown",
    ),
    (
        "002",
        "anchor memories to the repository files they name (their blob ids now)",
    ),
    (
        "003",
        "hold for review the memories with hidden characters or orders to the agent",
    ),
];

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Applied {
    #[serde(default)]
    pub applied: Vec<String>,
    #[serde(default)]
    pub last_run: String,
}

fn path(store_dir: &std::path::Path) -> std::path::PathBuf {
    store_dir.join(".migrations")
}

pub fn applied(store_dir: &std::path::Path) -> Applied {
    std::fs::read_to_string(path(store_dir))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

pub fn pending(store_dir: &std::path::Path) -> Vec<&'static str> {
    let done = applied(store_dir);
    MIGRATIONS
        .iter()
        .map(|m| m.0)
        .filter(|id| !done.applied.iter().any(|a| a == id))
        .collect()
}

fn run_one(store: &Store, id: &str) -> anyhow::Result<()> {
    if id == "001" {
        for m in store.all()? {
            if !m.experience.tags.iter().any(|t| t.starts_with("branch:")) {
                let mut tags = m.experience.tags.clone();
                tags.push("branch:unknown".into());
                store.set_tags(&m, tags)?;
            }
        }
    }
    if id == "002" {
        for m in store.all()? {
            if !m.experience.metadata.contains_key(crate::anchors::ANCHORS) {
                store.set_anchors(&m)?;
            }
        }
    }
    if id == "003" {
        for m in store.all()? {
            if let Some(held) = crate::trust::check_stored(&m) {
                store.replace_memory(&held)?;
            }
        }
    }
    Ok(())
}

/// Apply pending migrations; returns the ids applied now.
pub fn run_pending(store: &Store) -> anyhow::Result<Vec<String>> {
    let mut state = applied(store.dir());
    let mut now = Vec::new();
    for id in pending(store.dir()) {
        run_one(store, id)?;
        state.applied.push(id.to_string());
        now.push(id.to_string());
    }
    if !now.is_empty() {
        state.last_run = Store::now();
        wt_memory_base::paths::write_atomic(
            &path(store.dir()),
            serde_json::to_string(&state)?.as_bytes(),
        )?;
    }
    Ok(now)
}

/// A brand-new store has nothing to migrate: record every migration as applied.
pub fn mark_all_applied(store_dir: &std::path::Path) -> anyhow::Result<()> {
    let state = Applied {
        applied: MIGRATIONS.iter().map(|m| m.0.to_string()).collect(),
        last_run: Store::now(),
    };
    wt_memory_base::paths::write_atomic(
        &path(store_dir),
        serde_json::to_string(&state)?.as_bytes(),
    )?;
    Ok(())
}
