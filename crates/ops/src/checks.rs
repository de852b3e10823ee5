//! The checks `doctor` shows, and those that need the open store (run where the store is open:
//! in this process or in its resident service).

use wt_memory_foundation::integrity;

use serde::{Deserialize, Serialize};
use wt_memory_core::store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    Ok,
    /// A problem, with its fix.
    Fix,
    /// Neither: a fact worth a line.
    Info,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub status: Status,
    pub what: String,
    pub fix: String,
}

impl Check {
    pub fn new(ok: bool, what: impl Into<String>, fix: &str) -> Check {
        Check {
            status: if ok { Status::Ok } else { Status::Fix },
            what: what.into(),
            fix: fix.to_string(),
        }
    }

    pub fn info(what: impl Into<String>) -> Check {
        Check {
            status: Status::Info,
            what: what.into(),
            fix: String::new(),
        }
    }
}

/// The checks that need the open store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoreChecks(pub Vec<Check>);

pub fn store_checks(store: &Store) -> StoreChecks {
    let count = store.count();
    let alert = store.verify();
    integrity::take_warning();
    let integrity = match alert {
        Ok(None) => Check::new(
            true,
            format!("integrity: all {count} recorded memories present"),
            "",
        ),
        Ok(Some(a)) => Check::new(
            false,
            format!("integrity: {}", a.reason()),
            &crate::integrity_fix(&a, store.dir()),
        ),
        Err(e) => Check::new(
            false,
            format!("integrity: cannot read the store: {e:#}"),
            "wt-memory repair",
        ),
    };
    let embedder = match store.ensure_embedder() {
        Ok(kind) => Check::new(
            true,
            format!("{count} memories, vectors from {}", kind.label()),
            "",
        ),
        Err(e) => Check::new(
            false,
            format!("{count} memories, {e:#}"),
            "see the message above",
        ),
    };
    let held = match crate::review::held_count(store) {
        Ok(0) => Check::new(true, "held for review: none", ""),
        Ok(n) => Check::new(
            false,
            format!(
                "held for review: {n} {} (hidden text, orders to the agent or a new teammate source; never injected)",
                if n == 1 { "memory" } else { "memories" }
            ),
            "wt-memory review",
        ),
        Err(e) => Check::new(false, format!("held for review: cannot count: {e:#}"), "wt-memory repair"),
    };
    StoreChecks(vec![integrity, embedder, held])
}
