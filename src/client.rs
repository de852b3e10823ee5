//! The one way front ends reach a project's memory: the CLI, the hook, the MCP server and sync
//! all call these typed methods.
//!
//! Today there is one kind of client, [`Client::Direct`]: it opens the store in this process (under
//! the project lock, only when an operation needs it) and runs [`crate::ops`] on it. A connection
//! to a resident per-project service can become a second variant without any front end changing.
//!
//! Read operations on a project that has no store yet answer neutrally (an empty list, zero
//! counts) and create nothing; writes create the store.

use crate::dedup::Audit;
use crate::error::Result;
use crate::ops::{self, OpenOptions};
use crate::project::Project;
use crate::record::MemoryRecord;
use crate::store::{self, RepairReport, Store};
use std::path::Path;

pub enum Client {
    Direct(Direct),
}

/// How long a [`Direct`] client keeps the store (and its lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holding {
    /// Until the client is dropped: one-shot processes (the CLI, a hook run).
    UntilDropped,
    /// For one call at a time: a long-lived process (the MCP server) must not keep other
    /// processes out of the store between calls.
    PerCall,
}

/// The in-process client.
pub struct Direct {
    project: Project,
    options: OpenOptions,
    holding: Holding,
    store: Option<Store>,
}

impl Direct {
    /// Run `f` on the store; `None`, without creating anything, when there is no store and
    /// `create` is false.
    fn with<T>(&mut self, create: bool, f: impl FnOnce(&Store) -> Result<T>) -> Result<Option<T>> {
        if self.store.is_none() {
            if !create && !store::exists(&self.project.store_dir) {
                return Ok(None);
            }
            self.store = Some(ops::open_store(&self.project, &self.options)?);
        }
        let out = f(self.store.as_ref().expect("opened above"));
        if self.holding == Holding::PerCall {
            self.store = None;
        }
        out.map(Some)
    }

    fn read<T: Default>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        Ok(self.with(false, f)?.unwrap_or_default())
    }

    fn write<T>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        Ok(self.with(true, f)?.expect("created when missing"))
    }
}

impl Client {
    /// A client for `project`'s store, opened in this process when first needed.
    pub fn direct(project: Project, options: OpenOptions, holding: Holding) -> Client {
        Client::Direct(Direct {
            project,
            options,
            holding,
            store: None,
        })
    }

    pub fn project(&self) -> &Project {
        match self {
            Client::Direct(d) => &d.project,
        }
    }

    /// Let go of the store (and its lock) until the next call needs it: `sync` does this before
    /// its git work, so a slow network never keeps other processes out of the store.
    pub fn release(&mut self) {
        match self {
            Client::Direct(d) => d.store = None,
        }
    }

    /// How long the next opening of the store may wait for another process to let go of it.
    pub fn set_lock_wait(&mut self, wait: std::time::Duration) {
        match self {
            Client::Direct(d) => d.options.lock_wait = wait,
        }
    }

    fn local(&mut self) -> &mut Direct {
        match self {
            Client::Direct(d) => d,
        }
    }

    pub fn remember(&mut self, req: &ops::Remember) -> Result<ops::Remembered> {
        let checked = req.check()?;
        self.local().write(|s| ops::remember(s, checked))
    }

    pub fn recall(&mut self, req: &ops::Recall) -> Result<Vec<MemoryRecord>> {
        req.check()?;
        self.local().read(|s| ops::recall(s, req))
    }

    pub fn proactive(&mut self, context: &str, limit: usize) -> Result<Vec<MemoryRecord>> {
        ops::check_query("proactive", context)?;
        self.local().read(|s| ops::proactive(s, context, limit))
    }

    pub fn list(
        &mut self,
        memory_type: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<MemoryRecord>> {
        self.local().read(|s| ops::list(s, memory_type, limit))
    }

    /// One memory by full id or unique prefix of [`ops::MIN_ID_PREFIX`]+ hex digits.
    pub fn get(&mut self, id: &str) -> Result<Option<MemoryRecord>> {
        let id = ops::checked_id("get", id)?;
        self.local().read(|s| ops::get(s, &id))
    }

    pub fn forget(&mut self, req: &ops::Forget) -> Result<ops::Forgotten> {
        req.check()?;
        match self.local().with(false, |s| ops::forget(s, req))? {
            Some(done) => Ok(done),
            None => req.nothing_found(),
        }
    }

    /// `None` when there is no store (the CLI prints `{}`).
    pub fn context(&mut self, topic: Option<&str>) -> Result<Option<ops::ContextSummary>> {
        if let Some(t) = topic {
            ops::check_query("context", t)?;
        }
        self.local().with(false, |s| ops::context(s, topic))
    }

    pub fn brain(&mut self) -> Result<ops::Brain> {
        let records = self.local().read(|s| Ok(s.records()?))?;
        Ok(ops::brain(records))
    }

    pub fn stats(&mut self) -> Result<ops::Stats> {
        let records = self.local().read(|s| Ok(s.records()?))?;
        Ok(ops::stats(&records))
    }

    pub fn status(&mut self) -> Result<ops::Status> {
        let count = self.local().read(|s| Ok(s.count()))?;
        Ok(ops::status(self.project(), count))
    }

    /// Opens (or creates) the store: that it opens is half of the check.
    pub fn health(&mut self) -> Result<ops::Health> {
        self.local().write(|s| Ok(ops::health(s)))
    }

    /// The engine's index report (`health --index`).
    pub fn index_report(&mut self) -> Result<serde_json::Value> {
        self.local().write(|s| Ok(s.index_report()))
    }

    pub fn audit(&mut self, threshold: f64) -> Result<Audit> {
        ops::check_unit("threshold", threshold)?;
        let records = self.local().read(|s| Ok(s.records()?))?;
        ops::audit(&records, threshold)
    }

    /// `None` when there is no store.
    pub fn dedup(&mut self, threshold: f64, dry_run: bool) -> Result<Option<ops::Deduped>> {
        ops::check_unit("threshold", threshold)?;
        self.local()
            .with(false, |s| ops::dedup(s, threshold, dry_run))
    }

    pub fn cleanup(
        &mut self,
        threshold: f32,
        min_length: usize,
        dry_run: bool,
    ) -> Result<ops::Cleaned> {
        ops::check_unit("threshold", threshold as f64)?;
        Ok(self
            .local()
            .with(false, |s| ops::cleanup(s, threshold, min_length, dry_run))?
            .unwrap_or(ops::NOTHING_CLEANED))
    }

    /// The export document (`wt-memory-export`, version 1).
    pub fn export(&mut self, exclude_private: bool) -> Result<serde_json::Value> {
        let name = self.project().name.clone();
        Ok(self
            .local()
            .with(false, |s| ops::export(s, exclude_private))?
            .unwrap_or_else(|| ops::empty_export(&name)))
    }

    pub fn import(&mut self, req: &ops::Import) -> Result<ops::Imported> {
        ops::check_import(req)?;
        self.local().write(|s| ops::import(s, req))
    }

    pub fn restore(&mut self, name: Option<&str>) -> Result<ops::RestoreOutcome> {
        crate::snapshot::find(&self.project().store_dir, name)
            .map_err(|e| crate::error::Error::NotFound(format!("restore: {e:#}")))?;
        self.local().write(|s| ops::restore(s, name))
    }

    pub fn migrate(&mut self) -> Result<Vec<ops::MigrationState>> {
        let local = self.local();
        let before = local.options.migrate;
        // Migrations run here, by name, not as a side effect of opening.
        local.options.migrate = false;
        let out = local.write(ops::migrate);
        local.options.migrate = before;
        out
    }

    /// Re-embeds every memory; returns how many, and the embedder used.
    pub fn reembed(&mut self) -> Result<(usize, &'static str)> {
        self.local()
            .write(|s| Ok((ops::reembed(s)?, s.current_embedder().label())))
    }

    /// `None` when there is no store to repair.
    pub fn repair(&mut self, accept_loss: bool) -> Result<Option<RepairReport>> {
        let local = self.local();
        if !store::exists(&local.project.store_dir) {
            return Ok(None);
        }
        // Repair opens the store itself, after setting its indexes aside.
        local.store = None;
        ops::repair(&local.project, accept_loss).map(Some)
    }

    pub fn seed(&mut self, file: &Path, dry_run: bool) -> Result<ops::Seeded> {
        let seeds = ops::check_seed_file(file)?;
        self.local().write(|s| ops::seed(s, seeds, dry_run))
    }

    pub fn todo_add(&mut self, text: &str, tags: &[String]) -> Result<String> {
        ops::check_todo(text)?;
        self.local().write(|s| ops::todo_add(s, text, tags))
    }

    pub fn todo_list(&mut self) -> Result<Vec<MemoryRecord>> {
        self.local().read(ops::todo_list)
    }

    pub fn todo_done(&mut self, id: &str) -> Result<MemoryRecord> {
        self.local().write(|s| ops::todo_done(s, id))
    }

    pub fn todo_clear(&mut self) -> Result<usize> {
        self.local().write(ops::todo_clear)
    }

    /// For `doctor`: the store's own checks, when it exists and opens.
    pub fn store_checks(&mut self) -> Result<Option<crate::doctor::StoreChecks>> {
        self.local()
            .with(false, |s| Ok(crate::doctor::store_checks(s)))
    }
}
