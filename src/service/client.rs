//! The one way front ends reach a project's memory: the CLI, the hook, the MCP server and sync
//! all call these typed methods, and this is the only place that chooses how a request is carried
//! out:
//! - [`Backend::Direct`] opens the store in this process (under the project lock, only when an
//!   operation needs it) and runs [`crate::service::execute`] here;
//! - [`Backend::Daemon`] sends the request to the store's resident service (`wt-memory serve`,
//!   see [`crate::daemon`]), which runs the same [`crate::service::execute`] on the store it keeps
//!   open.

use crate::daemon::Found;
use crate::dedup::Audit;
use crate::error::{other, Result};
use crate::metrics;
use crate::ops::{self, Caller, OpenOptions};
use crate::project::Project;
use crate::rank::QueryKind;
use crate::record::MemoryRecord;
pub use crate::service::Holding;
use crate::service::{execute, Direct, Request};
use crate::store::{self, RepairReport};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::{Duration, Instant};

/// The memory count of a store for `projects`, which only reads: asked of its service when one
/// runs (it holds the store), else taken from the integrity record our writes keep (the store is
/// not opened: opening rewrites the engine's files); a store of the previous wt-tools is named,
/// never opened.
pub fn count_of(project: &Project) -> Result<usize> {
    let value = match crate::daemon::running(project) {
        Some(mut conn) => conn.call(&Caller::default(), &Request::Count)?,
        None if crate::legacy_store::is_legacy(&project.store_dir) => {
            return Err(crate::error::bad_input(
                "a store of the previous wt-tools, not opened; `wt-memory migrate --from-legacy` in its repository brings it in",
            ))
        }
        None => {
            if let Some(record) = crate::integrity::read(&project.store_dir) {
                return Ok(record.count as usize);
            }
            let options = OpenOptions {
                migrate: false,
                read_from_copy: true,
                ..OpenOptions::default()
            };
            let mut direct = Direct::new(project.clone(), options, Holding::UntilDropped);
            execute(&mut direct, &Caller::default(), &Request::Count)?
        }
    };
    Ok(serde_json::from_value(value)?)
}

/// Where a client's requests are carried out.
pub enum Backend {
    /// Not chosen yet: the first call decides (a command that never calls starts nothing).
    Pending,
    Direct(Box<Direct>),
    Daemon(crate::daemon::Connection),
    /// In the service that holds the store, for a hook it runs: its requests join the queue
    /// without a connection (see [`crate::daemon::Local`]).
    InService(crate::daemon::Local),
    /// The daemon could not be reached and this client may not open the store itself.
    Unreachable(crate::error::Error),
}

/// How a client reaches the store.
#[derive(Debug, Clone)]
pub struct Mode {
    pub options: OpenOptions,
    pub holding: Holding,
    /// Through the project's daemon (started when none runs).
    pub daemon: bool,
    /// When the daemon cannot be reached in time: open the store here (CLI, MCP) or fail (a hook,
    /// which must not wait for a store a starting daemon is about to take).
    pub fallback_direct: bool,
    /// The latest moment the client may wait for a daemon to come up.
    pub deadline: Option<Instant>,
    /// Use the daemon only when one already runs (commands that migrate by name or must not
    /// migrate; a daemon migrates what it opens).
    pub daemon_only_if_running: bool,
}

impl Mode {
    /// The configured way (`WT_MEMORY_DAEMON`), for a front end holding the store as `holding`.
    pub fn configured(options: OpenOptions, holding: Holding) -> Mode {
        Mode {
            options,
            holding,
            daemon: crate::config::get().daemon,
            fallback_direct: true,
            deadline: None,
            daemon_only_if_running: false,
        }
    }
}

/// How long a front end without a deadline waits for a service to start.
const DAEMON_START_WAIT: Duration = Duration::from_secs(30);

/// How long a front end waits for a running service's hello.
const HELLO_BUDGET: Duration = Duration::from_secs(2);

pub struct Client {
    project: Project,
    caller: Option<Caller>,
    /// The front end, as the metrics log names a write's source.
    source: Option<String>,
    mode: Mode,
    backend: Backend,
}

impl Client {
    /// A client for `project`; the store or the daemon is reached at the first call.
    pub fn open(project: Project, mode: Mode) -> Client {
        Client {
            project,
            caller: None,
            source: None,
            mode,
            backend: Backend::Pending,
        }
    }

    /// A client that opens `project`'s store in this process when first needed.
    pub fn direct(project: Project, options: OpenOptions, holding: Holding) -> Client {
        let mode = Mode {
            options,
            holding,
            daemon: false,
            fallback_direct: true,
            deadline: None,
            daemon_only_if_running: false,
        };
        Client::open(project, mode)
    }

    /// A client inside the service that holds `project`'s store (a hook it runs): requests go
    /// straight to the service's queue. For another project's store, an ordinary client.
    pub fn in_service(project: Project, local: crate::daemon::Local, mode: Mode) -> Client {
        let mut client = Client::open(project, mode);
        if local.serves(&client.project) {
            client.backend = Backend::InService(local);
        }
        client
    }

    /// Choose the backend of a pending client.
    fn resolve(&mut self) {
        if !matches!(self.backend, Backend::Pending) {
            return;
        }
        let mode = &self.mode;
        let direct = || {
            let d = Direct::new(self.project.clone(), mode.options.clone(), mode.holding);
            Backend::Direct(Box::new(d))
        };
        let wait = match mode.deadline {
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => DAEMON_START_WAIT,
        };
        // A store with migrations pending is migrated in the foreground by this command, with its
        // notice on stderr; the service starts at the next call.
        let migrating = mode.options.migrate
            && store::exists(&self.project.store_dir)
            && !crate::migrate::pending(&self.project.store_dir).is_empty();
        let only_if_running = !mode.daemon || mode.daemon_only_if_running || migrating;
        if only_if_running {
            // A live service owns the store: use it, since waiting for its lock would be in
            // vain; one that does not answer is reported at once.
            self.backend = match crate::daemon::probe(&self.project, wait.min(HELLO_BUDGET)) {
                Found::Nothing => direct(),
                Found::Service(mut conn) => {
                    if conn.peer.protocol == crate::daemon::PROTOCOL {
                        conn.set_timeout(mode.options.lock_wait, mode.deadline);
                        Backend::Daemon(conn)
                    } else {
                        Backend::Unreachable(crate::error::Error::Unanswered {
                            message: format!(
                                "a memory service of another version (pid {}) holds the store; stop it with `wt-memory daemon stop`",
                                conn.peer.pid
                            ),
                        })
                    }
                }
                Found::Stuck(e) => Backend::Unreachable(e),
            };
            return;
        }
        let deadline = Instant::now() + wait;
        self.backend = match crate::daemon::connect(&self.project, deadline) {
            Ok(mut conn) => {
                conn.set_timeout(mode.options.lock_wait, mode.deadline);
                Backend::Daemon(conn)
            }
            // Working on the store here helps only when no service holds it.
            Err(e) if mode.fallback_direct && crate::daemon::owner(&self.project).is_none() => {
                eprintln!("wt-memory: {e}; working on the store directly");
                direct()
            }
            Err(e) => Backend::Unreachable(e),
        };
    }

    pub fn project(&self) -> &Project {
        &self.project
    }

    /// Let go of the store (and its lock) until the next call needs it: `sync` does this before
    /// its git work, so a slow network never keeps other processes out of the store. (A daemon
    /// holds its store anyway; nothing to release here.)
    pub fn release(&mut self) {
        if let Backend::Direct(d) = &mut self.backend {
            d.release();
        }
    }

    /// Is this client served by a daemon (after its first call)?
    pub fn via_daemon(&self) -> bool {
        matches!(self.backend, Backend::Daemon(_))
    }

    /// How long the next opening of the store (or start of the daemon) may wait.
    pub fn set_lock_wait(&mut self, wait: Duration) {
        self.mode.options.lock_wait = wait;
        self.mode.deadline = Some(Instant::now() + wait);
        match &mut self.backend {
            Backend::Direct(d) => d.set_lock_wait(wait),
            Backend::Daemon(c) => c.set_timeout(wait, self.mode.deadline),
            Backend::InService(l) => l.set_timeout(wait, self.mode.deadline),
            Backend::Pending | Backend::Unreachable(_) => {}
        }
    }

    fn send(&mut self, caller: &Caller, req: &Request) -> Result<Value> {
        self.resolve();
        match &mut self.backend {
            Backend::Direct(d) => execute(d, caller, req),
            Backend::Daemon(c) => c.call(caller, req),
            Backend::InService(l) => l.call(caller, req),
            Backend::Unreachable(e) => Err(e.clone()),
            Backend::Pending => unreachable!("resolved above"),
        }
    }

    /// Carry out one request and read its answer as `T`.
    pub fn call<T: DeserializeOwned>(&mut self, req: Request) -> Result<T> {
        let mut caller = if req.needs_caller() {
            self.caller
                .get_or_insert_with(|| Caller::of(&self.project))
                .clone()
        } else {
            Caller::default()
        };
        caller.source.clone_from(&self.source);
        let value = match self.send(&caller, &req) {
            // The daemon went away between calls (idle exit, upgrade): start over once.
            Err(crate::error::Error::Daemon { .. }) if self.via_daemon() => {
                self.backend = Backend::Pending;
                self.send(&caller, &req)?
            }
            other => other?,
        };
        serde_json::from_value(value).map_err(|e| other(format!("unexpected answer: {e}")))
    }

    pub fn remember(&mut self, req: &ops::Remember) -> Result<ops::Remembered> {
        req.precheck()?;
        self.call(Request::Remember { req: req.clone() })
    }

    pub fn recall(&mut self, req: &ops::Recall) -> Result<Vec<MemoryRecord>> {
        req.check()?;
        self.call(Request::Recall { req: req.clone() })
    }

    /// Replace a memory's retrieval keys; returns its record.
    pub fn set_keys(&mut self, id: &str, keys: &[String]) -> Result<MemoryRecord> {
        self.call(Request::SetKeys {
            id: id.to_string(),
            keys: keys.to_vec(),
        })
    }

    /// Give memory `id` the prompt whose answer cited it as a learned key.
    pub fn learn_key(&mut self, id: &str, prompt: &str) -> Result<ops::Learned> {
        self.call(Request::LearnKey {
            id: id.to_string(),
            prompt: prompt.to_string(),
        })
    }

    /// Add and remove memory `id`'s retrieval keys by hand; returns its record.
    pub fn edit_keys(
        &mut self,
        id: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<MemoryRecord> {
        self.call(Request::EditKeys {
            id: id.to_string(),
            add: add.to_vec(),
            remove: remove.to_vec(),
        })
    }

    /// Remove the keys learned from use from memory `id`, or from every memory.
    pub fn unlearn(&mut self, id: Option<&str>) -> Result<ops::Unlearned> {
        self.call(Request::Unlearn {
            id: id.map(str::to_string),
        })
    }

    /// The failure record `id`'s command failed again, as `command`: count it, keep the form.
    pub fn failed_again(&mut self, id: &str, command: &str) -> Result<MemoryRecord> {
        self.call(Request::FailedAgain {
            id: id.to_string(),
            command: command.to_string(),
        })
    }

    /// Mark memory `newer` as the replacement of memory `older` (ids or prefixes).
    pub fn supersede(&mut self, newer: &str, older: &str) -> Result<ops::Superseded> {
        self.call(Request::Supersede {
            newer: newer.to_string(),
            older: older.to_string(),
        })
    }

    /// Memories worth injecting for `context`, a query of `kind` (None: inferred from its shape).
    pub fn proactive(
        &mut self,
        context: &str,
        kind: Option<QueryKind>,
        limit: usize,
    ) -> Result<Vec<MemoryRecord>> {
        ops::check_query("proactive", context)?;
        self.call(Request::Proactive {
            context: context.to_string(),
            limit,
            kind,
            use_prior: crate::config::get().use_prior,
        })
    }

    /// What a hook shows for `context`: [`Self::proactive`]'s memories in full, and up to
    /// `index` more to list by title.
    pub fn tiers(
        &mut self,
        context: &str,
        kind: Option<QueryKind>,
        limit: usize,
        index: usize,
    ) -> Result<crate::recall::Tiers> {
        ops::check_query("proactive", context)?;
        self.call(Request::Tiers {
            context: context.to_string(),
            limit,
            index,
            kind,
            use_prior: crate::config::get().use_prior,
        })
    }

    pub fn list(
        &mut self,
        memory_type: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<MemoryRecord>> {
        self.call(Request::List {
            memory_type: memory_type.map(str::to_string),
            limit,
        })
    }

    /// One memory by full id or unique prefix of [`ops::MIN_ID_PREFIX`]+ hex digits.
    pub fn get(&mut self, id: &str) -> Result<Option<MemoryRecord>> {
        ops::checked_id("get", id)?;
        self.call(Request::Get { id: id.to_string() })
    }

    pub fn forget(&mut self, req: &ops::Forget) -> Result<ops::Forgotten> {
        req.check()?;
        self.call(Request::Forget { req: req.clone() })
    }

    /// `None` when there is no store (the CLI prints `{}`).
    pub fn context(&mut self, topic: Option<&str>) -> Result<Option<ops::ContextSummary>> {
        if let Some(t) = topic {
            ops::check_query("context", t)?;
        }
        self.call(Request::Context {
            topic: topic.map(str::to_string),
        })
    }

    pub fn brain(&mut self) -> Result<ops::Brain> {
        self.call(Request::Brain)
    }

    pub fn stats(&mut self) -> Result<ops::Stats> {
        self.call(Request::Stats)
    }

    /// How many memories, of which types, about which topics (empty when there is no store).
    pub fn map(&mut self) -> Result<ops::MemoryMap> {
        self.call(Request::Map)
    }

    pub fn status(&mut self) -> Result<ops::Status> {
        let count = self.call(Request::Count)?;
        Ok(ops::status(self.project(), count))
    }

    /// Opens (or creates) the store: that it opens is half of the check.
    pub fn health(&mut self) -> Result<ops::Health> {
        self.call(Request::Health)
    }

    /// The engine's index report (`health --index`).
    pub fn index_report(&mut self) -> Result<Value> {
        self.call(Request::IndexReport)
    }

    /// Memories whose code anchors changed or vanished (`audit --stale`).
    pub fn stale(&mut self) -> Result<Vec<ops::Stale>> {
        self.call(Request::Stale)
    }

    pub fn audit(&mut self, threshold: f64) -> Result<Audit> {
        ops::check_unit("threshold", threshold)?;
        self.call(Request::Audit { threshold })
    }

    /// `None` when there is no store.
    pub fn dedup(&mut self, threshold: f64, dry_run: bool) -> Result<Option<ops::Deduped>> {
        ops::check_unit("threshold", threshold)?;
        self.call(Request::Dedup { threshold, dry_run })
    }

    pub fn cleanup(
        &mut self,
        threshold: f32,
        min_length: usize,
        dry_run: bool,
    ) -> Result<ops::Cleaned> {
        ops::check_unit("threshold", threshold as f64)?;
        self.call(Request::Cleanup {
            threshold,
            min_length,
            dry_run,
        })
    }

    /// The export document (`wt-memory-export`, version 1).
    pub fn export(&mut self, exclude_private: bool) -> Result<Value> {
        self.call(Request::Export { exclude_private })
    }

    pub fn import(&mut self, req: &ops::Import) -> Result<ops::Imported> {
        ops::check_import(req)?;
        self.call(Request::Import { req: req.clone() })
    }

    pub fn restore(&mut self, name: Option<&str>) -> Result<ops::RestoreOutcome> {
        self.call(Request::Restore {
            name: name.map(str::to_string),
        })
    }

    pub fn migrate(&mut self) -> Result<Vec<ops::MigrationState>> {
        self.call(Request::Migrate)
    }

    /// Re-embeds every memory; returns how many, and the embedder used.
    pub fn reembed(&mut self) -> Result<(usize, String)> {
        self.call(Request::Reembed)
    }

    /// `None` when there is no store to repair.
    pub fn repair(&mut self, accept_loss: bool) -> Result<Option<RepairReport>> {
        self.call(Request::Repair { accept_loss })
    }

    pub fn seed(&mut self, file: &std::path::Path, dry_run: bool) -> Result<ops::Seeded> {
        let text = ops::read_seed_file(file)?;
        ops::check_seed_text(&text, file)?;
        self.call(Request::Seed {
            text,
            file: file.to_path_buf(),
            dry_run,
        })
    }

    pub fn todo_add(&mut self, text: &str, tags: &[String]) -> Result<String> {
        ops::check_todo(text)?;
        self.call(Request::TodoAdd {
            text: text.to_string(),
            tags: tags.to_vec(),
        })
    }

    pub fn todo_list(&mut self) -> Result<Vec<MemoryRecord>> {
        self.call(Request::TodoList)
    }

    pub fn todo_done(&mut self, id: &str) -> Result<MemoryRecord> {
        self.call(Request::TodoDone { id: id.to_string() })
    }

    pub fn todo_clear(&mut self) -> Result<usize> {
        self.call(Request::TodoClear)
    }

    /// For `doctor`: the store's own checks, when it exists and opens.
    pub fn store_checks(&mut self) -> Result<Option<ops::checks::StoreChecks>> {
        self.call(Request::StoreChecks)
    }

    /// Name this client's front end in the metrics log's writes (hook, extraction, mcp, sync).
    pub fn set_source(&mut self, source: &str) {
        self.source = Some(source.to_string());
    }

    /// Add `events` to the project's metrics log (nothing when metrics are off).
    pub fn record(&mut self, events: Vec<metrics::Event>) -> Result<()> {
        if events.is_empty() || !metrics::enabled() {
            return Ok(());
        }
        self.call::<Value>(Request::Record { events }).map(drop)
    }

    pub fn metrics(&mut self, days: u32) -> Result<metrics::Report> {
        self.call(Request::Metrics { days })
    }
}
