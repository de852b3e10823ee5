//! A store opened in this process ([`Direct`]): under the project lock, held until dropped or
//! per call, with the spool of hook writes applied first. Every operation runs on one
//! ([`super::Operation::run`]), in the resident service and in a client working in-process alike.
//!
//! Read operations on a project that has no store yet answer neutrally (an empty list, zero
//! counts) and create nothing; writes create the store.

use super::{open_read_copy, open_store, OpenOptions};
use crate::metrics::{self, Recorder};
use wt_memory_base::project::Project;
use wt_memory_core::store::{self, Store};
use wt_memory_foundation::error::Result;

/// How long a [`Direct`] client keeps the store (and its lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holding {
    /// Until the client is dropped: one-shot processes (the CLI, a hook run) and the daemon.
    UntilDropped,
    /// For one call at a time: a long-lived process (the MCP server without a daemon) must not
    /// keep other processes out of the store between calls.
    PerCall,
}

/// A store opened in this process.
pub struct Direct {
    pub(super) project: Project,
    pub(super) options: OpenOptions,
    pub(super) holding: Holding,
    pub(super) store: Option<Store>,
    /// The open store is a read copy (`OpenOptions::read_from_copy`): a write opens the store.
    reading_copy: bool,
    pub(super) recorder: Recorder,
}

impl Drop for Direct {
    fn drop(&mut self) {
        // The store (and its lock) first: other processes may be waiting for it.
        self.release();
    }
}

impl Direct {
    pub fn new(project: Project, options: OpenOptions, holding: Holding) -> Direct {
        Direct {
            recorder: Recorder::for_project(&project),
            project,
            options,
            holding,
            store: None,
            reading_copy: false,
        }
    }

    /// To wait for the open store's engine without holding this (see [`Store::engine_waiter`]).
    pub fn engine_waiter(&self) -> Option<wt_memory_core::store::EngineWaiter> {
        self.store.as_ref().map(Store::engine_waiter)
    }

    /// Finish opening the store (see [`Store::settle`]).
    pub fn settle(&self) -> Result<()> {
        if let Some(store) = &self.store {
            store.settle()?;
        }
        Ok(())
    }

    /// Open the store as the resident service does ([`OpenOptions::for_service`]).
    pub fn serve_store(&mut self) {
        self.options.for_service = true;
    }

    pub fn project(&self) -> &Project {
        &self.project
    }

    pub fn set_lock_wait(&mut self, wait: std::time::Duration) {
        self.options.lock_wait = wait;
    }

    /// The open store's model run and embedding cache, if a store is open.
    pub fn embedder(&self) -> Option<std::sync::Arc<wt_memory_core::store::Embedder>> {
        self.store.as_ref().map(Store::embedder)
    }

    /// The standing integrity warning of the open store, if any.
    pub fn standing_warning(&self) -> Option<String> {
        self.store.as_ref().and_then(Store::standing_warning)
    }

    /// A daemon's quiet moment: bring the open store's files closer to its log, if anything was
    /// written since (see [`Store::checkpoint_when_quiet`]). Returns whether there was work.
    pub fn checkpoint(&self) -> Result<bool> {
        match &self.store {
            Some(store) => {
                let wrote = store.checkpoint_when_quiet()?;
                store.save_view_if_behind();
                Ok(wrote)
            }
            None => Ok(false),
        }
    }

    /// The metrics events this store's requests wait to write (a daemon shares it).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Close the store (and release its lock) until the next call needs it; write the metrics
    /// that wait.
    pub fn release(&mut self) {
        self.store = None;
        self.recorder.flush_or_warn();
    }

    /// Run `f` on the store; `None`, without creating anything, when there is no store and
    /// `access` does not create one.
    pub(crate) fn with<T>(
        &mut self,
        access: Access,
        f: impl FnOnce(&Store) -> Result<T>,
    ) -> Result<Option<T>> {
        let spooled = crate::spool::waiting(&self.project);
        let create = access == Access::Create;
        // Hook writes waiting in the spool are applied by the first opening of the store itself.
        let copy = self.options.read_from_copy && access == Access::Read && !spooled;
        if self.reading_copy && !copy {
            self.store = None;
        }
        if self.store.is_none() {
            if !create && !spooled && !store::exists(&self.project.store_dir) {
                return Ok(None);
            }
            self.store = Some(if copy {
                open_read_copy(&self.project, &self.options)?
            } else {
                open_store(&self.project, &self.options)?
            });
            self.reading_copy = copy;
        }
        let store = self.store.as_ref().expect("opened above");
        if spooled {
            // Hook writes that could not reach the store in time come first, in order.
            match crate::spool::apply(store, &self.project) {
                Ok(n) => self.record_write("spool", None, n),
                Err(e) => wt_memory_base::log::error("spool", &format!("applying the spool: {e}")),
            }
        }
        let out = f(store);
        if self.holding == Holding::PerCall {
            self.store = None;
        }
        out.map(Some)
    }

    /// A read: the default when there is no store.
    pub fn read<T: Default>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        Ok(self.with(Access::Read, f)?.unwrap_or_default())
    }

    /// A read: None when there is no store.
    pub fn peek<T>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<Option<T>> {
        self.with(Access::Read, f)
    }

    /// A write that creates the store when there is none.
    pub fn write<T>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        Ok(self.with(Access::Create, f)?.expect("created when missing"))
    }

    /// A write to the store there is: None when there is none.
    pub fn change<T>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<Option<T>> {
        self.with(Access::Write, f)
    }
}

/// What a request does with the store: read copies serve only [`Access::Read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Change the store there is.
    Write,
    /// Change it, creating it when there is none.
    Create,
}

impl Direct {
    /// Log a write (`count` memories; `memory` when it is one) by `source`.
    pub fn record_write(&self, source: &str, memory: Option<&str>, count: usize) {
        if count == 0 {
            return;
        }
        self.recorder
            .push(vec![metrics::Event::Write(metrics::Write {
                at_ms: metrics::now_ms(),
                source: source.to_string(),
                memory: memory.map(str::to_string),
                count: count as u32,
            })]);
        if self.holding == Holding::PerCall {
            self.recorder.flush_or_warn();
        }
    }
}
