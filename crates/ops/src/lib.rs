//! The library API: every command's rules, as functions with typed requests and results.
//!
//! Front ends (the CLI, the hook, the MCP server, sync) never call these directly on a store they
//! opened themselves: they go through [`wt_memory_service::client::Client`], which opens the store (and runs
//! pending migrations) when an operation needs it. Results serialise to exactly the JSON the CLI
//! prints, so `wt-memory … --json` and the MCP tools show the same shapes.

pub mod metrics;

mod direct;
mod keys;
mod maintenance;
mod memories;
mod operation;
mod review;
mod todos;
mod transfer;
mod usage;

pub mod checks;
pub mod spool;
pub use direct::{Access, Direct, Holding};
pub use keys::*;
pub use maintenance::*;
pub use memories::*;
pub use operation::{
    answer, decode, entry, names, typed, Made, Operation, Registered, Reply, Request, Wire,
};
pub use review::*;
pub use todos::*;
pub use transfer::*;
pub use usage::*;

use chrono::{DateTime, Utc};
use std::time::Duration;
use wt_memory_base::project::Project;
use wt_memory_core::migrate;
use wt_memory_core::snapshot;
use wt_memory_core::store::Store;
use wt_memory_foundation::error::{bad_input, Result};

/// Who asks: what a request's answer depends on besides the store (a resident service serves
/// every worktree of a repository, each on its own branch).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Caller {
    /// The caller's git branch: the `branch:` tag of what it stores, and the boost of what it finds.
    pub branch: Option<String>,
    /// The caller's directory (the active OpenSpec change of a todo).
    pub cwd: std::path::PathBuf,
    /// Which front end writes (hook, extraction, mcp, cli, sync): the metrics log's write source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Caller {
    pub fn of(project: &Project) -> Caller {
        Caller {
            branch: project.branch(),
            cwd: project.cwd.clone(),
            source: None,
        }
    }
}

/// How a store is opened.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// How long to wait for a store another process holds.
    pub lock_wait: Duration,
    /// Run pending migrations (with an undo snapshot first).
    pub migrate: bool,
    /// Serve reads from a private copy of the store, so a command that only reads leaves the
    /// store's files as they were (the CLI; a service or an MCP server holds its store).
    pub read_from_copy: bool,
    /// Open as the resident service does: the engine on a thread of its own while the saved
    /// ranking view loads, and the view saved for the next service.
    pub for_service: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            lock_wait: wt_memory_base::config::get().lock_wait,
            migrate: true,
            read_from_copy: false,
            for_service: false,
        }
    }
}

/// Open (creating if needed) the project's store and bring it up to date: a new store records
/// every migration as applied; an older one gets its pending migrations, after an undo snapshot.
pub fn open_store(project: &Project, opts: &OpenOptions) -> Result<Store> {
    let existed = wt_memory_core::store::exists(&project.store_dir);
    let store = if opts.for_service {
        let store = Store::open_for_service(project, opts.lock_wait)?;
        store.keep_view_saved();
        store
    } else {
        Store::open_with_wait(project, opts.lock_wait)?
    };
    // A store made before files were private, or in a root another umask made: ours only.
    let _ = wt_memory_base::paths::narrow_to_private(store.dir());
    if let Some(root) = store.dir().parent() {
        let _ = wt_memory_base::paths::narrow_to_private(root);
    }
    if !opts.migrate {
        return Ok(store);
    }
    if !existed {
        migrate::mark_all_applied(store.dir())?;
    } else if !migrate::pending(store.dir()).is_empty() {
        take_snapshot(&store, "migrate")?;
        eprint!("Migrating memory storage...");
        let n = migrate::run_pending(&store)?.len();
        eprintln!(" done ({n} migration(s) applied)");
    }
    Ok(store)
}

/// A private copy of the project's existing store, for reads (see [`Store::open_copy`]); the store
/// itself when migrations are pending (the command migrates it, as any first opening does).
pub fn open_read_copy(project: &Project, opts: &OpenOptions) -> Result<Store> {
    if opts.migrate && !migrate::pending(&project.store_dir).is_empty() {
        return open_store(project, opts);
    }
    Ok(Store::open_copy(project, opts.lock_wait)?)
}

/// `2026-01-31` or RFC 3339, as UTC.
pub fn parse_time(s: &str, what: &str) -> Result<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
    }
    Err(bad_input(format!(
        "{what}: '{s}' is not an ISO date (2026-01-31 or RFC 3339)"
    )))
}

/// The undo snapshot taken before a destructive operation (nothing when the store is empty).
pub fn take_snapshot(store: &Store, operation: &str) -> Result<()> {
    snapshot::take(store, operation).map_err(|e| {
        wt_memory_foundation::error::other(format!(
            "{operation}: no undo snapshot, nothing changed: {e:#}"
        ))
    })?;
    Ok(())
}

/// A similarity or importance threshold in 0..=1.
pub fn check_unit(what: &str, value: f64) -> Result<()> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(bad_input(format!(
            "{what} must be between 0 and 1, got {value}"
        )))
    }
}
