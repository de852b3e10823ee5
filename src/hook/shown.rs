//! The memories a hook run formats for the agent, collected as their lines are made (by
//! `format`), for the action gate's ledger of what the session was shown (`gate`). A module of its
//! own so that formatting depends on no gate.

use std::cell::RefCell;
use wt_memory_core::record::MemoryRecord;

thread_local! {
    /// This run's memories shown so far (None: not collecting).
    static NOTED: RefCell<Option<Vec<MemoryRecord>>> = const { RefCell::new(None) };
}

/// Start collecting what this run shows (the hook's thread, one run at a time).
pub fn collect() {
    NOTED.with(|n| *n.borrow_mut() = Some(Vec::new()));
}

/// A memory formatted into a line for the agent.
pub fn note(m: &MemoryRecord) {
    NOTED.with(|n| {
        if let Some(list) = n.borrow_mut().as_mut() {
            list.push(m.clone());
        }
    });
}

/// The collection so far, ended.
pub fn take() -> Vec<MemoryRecord> {
    NOTED.with(|n| n.borrow_mut().take().unwrap_or_default())
}
