//! The one way front ends reach a project's memory: the CLI, the hook, the MCP server and sync
//! all call these typed methods.
//!
//! Every method is one [`Request`], carried out by [`execute`] on a store:
//! - [`Backend::Direct`] opens the store in this process (under the project lock, only when an
//!   operation needs it) and executes the request here;
//! - [`Backend::Daemon`] sends it to the project's resident service (`wt-memory serve`, see
//!   [`crate::daemon`]), which executes it with the same [`execute`] on the store it keeps open.
//!
//! Read operations on a project that has no store yet answer neutrally (an empty list, zero
//! counts) and create nothing; writes create the store.

use crate::daemon::Found;
use crate::dedup::Audit;
use crate::error::{not_found, other, Result};
use crate::metrics::{self, Recorder};
use crate::ops::{self, Caller, OpenOptions};
use crate::project::Project;
use crate::rank::QueryKind;
use crate::record::MemoryRecord;
use crate::store::{self, RepairReport, Store};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One operation, as typed data: what a front end asks and what crosses the daemon's socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    Remember {
        req: ops::Remember,
    },
    Recall {
        req: ops::Recall,
    },
    Proactive {
        context: String,
        limit: usize,
        #[serde(default)]
        kind: Option<QueryKind>,
    },
    List {
        memory_type: Option<String>,
        limit: Option<usize>,
    },
    Get {
        id: String,
    },
    /// Replace one memory's retrieval keys (`enrich`).
    SetKeys {
        id: String,
        keys: Vec<String>,
    },
    /// Mark `newer` as the replacement of `older`.
    Supersede {
        newer: String,
        older: String,
    },
    Forget {
        req: ops::Forget,
    },
    Context {
        topic: Option<String>,
    },
    Brain,
    Stats,
    Count,
    Health,
    IndexReport,
    Audit {
        threshold: f64,
    },
    Dedup {
        threshold: f64,
        dry_run: bool,
    },
    Cleanup {
        threshold: f32,
        min_length: usize,
        dry_run: bool,
    },
    Export {
        exclude_private: bool,
    },
    Import {
        req: ops::Import,
    },
    Restore {
        name: Option<String>,
    },
    Migrate,
    Reembed,
    Repair {
        accept_loss: bool,
    },
    /// A seed file's text, as the client read it (the service never opens a client's path).
    Seed {
        text: String,
        /// The file's name, for messages.
        file: PathBuf,
        dry_run: bool,
    },
    TodoAdd {
        text: String,
        tags: Vec<String>,
    },
    TodoList,
    TodoDone {
        id: String,
    },
    TodoClear,
    StoreChecks,
    /// Open the store (when it exists) and load the model: the daemon's start.
    Warm,
    /// Add to the metrics log (a daemon answers at once and writes when quiet).
    Record {
        events: Vec<metrics::Event>,
    },
    /// The metrics report of the last `days` days.
    Metrics {
        days: u32,
    },
}

impl Request {
    /// The operation's name, as on the wire (`"op"`).
    pub fn name(&self) -> &'static str {
        use Request as R;
        match self {
            R::Remember { .. } => "remember",
            R::Recall { .. } => "recall",
            R::Proactive { .. } => "proactive",
            R::List { .. } => "list",
            R::Get { .. } => "get",
            R::SetKeys { .. } => "set_keys",
            R::Supersede { .. } => "supersede",
            R::Forget { .. } => "forget",
            R::Context { .. } => "context",
            R::Brain => "brain",
            R::Stats => "stats",
            R::Count => "count",
            R::Health => "health",
            R::IndexReport => "index_report",
            R::Audit { .. } => "audit",
            R::Dedup { .. } => "dedup",
            R::Cleanup { .. } => "cleanup",
            R::Export { .. } => "export",
            R::Import { .. } => "import",
            R::Restore { .. } => "restore",
            R::Migrate => "migrate",
            R::Reembed => "reembed",
            R::Repair { .. } => "repair",
            R::Seed { .. } => "seed",
            R::TodoAdd { .. } => "todo_add",
            R::TodoList => "todo_list",
            R::TodoDone { .. } => "todo_done",
            R::TodoClear => "todo_clear",
            R::StoreChecks => "store_checks",
            R::Warm => "warm",
            R::Record { .. } => "record",
            R::Metrics { .. } => "metrics",
        }
    }

    /// Does the answer depend on who asks (branch, directory)?
    fn needs_caller(&self) -> bool {
        matches!(
            self,
            Request::Remember { .. }
                | Request::Recall { .. }
                | Request::Proactive { .. }
                | Request::TodoAdd { .. }
        )
    }

    /// The texts this request will have the store embed: a write's content, a query and its
    /// parts. A daemon embeds them ahead of the request's turn, while another request is served.
    pub fn texts_to_embed(&self) -> Vec<String> {
        use crate::recall::query_texts;
        match self {
            Request::Remember { req } => {
                req.check().map(|c| c.text_to_embed()).into_iter().collect()
            }
            Request::Recall { req }
                if req.check().is_ok() && !req.tags_only && !req.query.trim().is_empty() =>
            {
                let kind = req.kind.unwrap_or_else(|| QueryKind::infer(&req.query));
                query_texts(&req.query, kind, req.mode == ops::RecallMode::Semantic)
            }
            Request::Proactive { context, kind, .. }
                if !context.trim().is_empty() && ops::check_query("proactive", context).is_ok() =>
            {
                let kind = kind.unwrap_or_else(|| QueryKind::infer(context));
                query_texts(context, kind, false)
            }
            _ => Vec::new(),
        }
    }

    /// Does it report the store's integrity itself (so no separate warning goes with it)?
    pub fn reports_integrity(&self) -> bool {
        matches!(
            self,
            Request::Health | Request::StoreChecks | Request::Repair { .. }
        )
    }
}

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
    project: Project,
    options: OpenOptions,
    holding: Holding,
    store: Option<Store>,
    recorder: Recorder,
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
        }
    }

    pub fn project(&self) -> &Project {
        &self.project
    }

    pub fn set_lock_wait(&mut self, wait: std::time::Duration) {
        self.options.lock_wait = wait;
    }

    /// The open store's model run and embedding cache, if a store is open.
    pub fn embedder(&self) -> Option<std::sync::Arc<crate::store::Embedder>> {
        self.store.as_ref().map(Store::embedder)
    }

    /// The standing integrity warning of the open store, if any.
    pub fn standing_warning(&self) -> Option<String> {
        self.store.as_ref().and_then(Store::standing_warning)
    }

    /// Bring the open store's files up to date with its log, if anything was written since the
    /// last checkpoint (a daemon's quiet moment). Returns whether there was work.
    pub fn checkpoint(&self) -> Result<bool> {
        match &self.store {
            Some(store) => Ok(store.checkpoint()?),
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
    /// `create` is false.
    fn with<T>(&mut self, create: bool, f: impl FnOnce(&Store) -> Result<T>) -> Result<Option<T>> {
        let spooled = crate::spool::waiting(&self.project);
        if self.store.is_none() {
            if !create && !spooled && !store::exists(&self.project.store_dir) {
                return Ok(None);
            }
            self.store = Some(ops::open_store(&self.project, &self.options)?);
        }
        let store = self.store.as_ref().expect("opened above");
        if spooled {
            // Hook writes that could not reach the store in time come first, in order.
            match crate::spool::apply(store, &self.project) {
                Ok(n) => self.record_write("spool", None, n),
                Err(e) => crate::log::error("spool", &format!("applying the spool: {e}")),
            }
        }
        let out = f(store);
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

/// An answer as JSON.
fn json<T: Serialize>(value: T) -> Result<Answer> {
    Ok(Answer::Value(serde_json::to_value(value)?))
}

/// A request's answer as [`execute_answer`] leaves it: records stay typed, so a daemon turns them
/// into JSON (redacting every field as it goes) after the request has given up the store.
pub enum Answer {
    Value(Value),
    Records(Vec<MemoryRecord>),
}

impl Answer {
    pub fn into_value(self) -> Result<Value> {
        match self {
            Answer::Value(v) => Ok(v),
            Answer::Records(records) => Ok(serde_json::to_value(records)?),
        }
    }
}

/// Carry out `req` for `caller` on `direct`'s store: the one place a request becomes ops calls.
/// The daemon runs this too, so both backends give the same answers.
pub fn execute(direct: &mut Direct, caller: &Caller, req: &Request) -> Result<Value> {
    execute_answer(direct, caller, req)?.into_value()
}

/// [`execute`], with the records of `recall`, `proactive` and `list` left as records.
pub fn execute_answer(direct: &mut Direct, caller: &Caller, req: &Request) -> Result<Answer> {
    use Request as R;
    let records = |found: Vec<MemoryRecord>| Ok(Answer::Records(found));
    match req {
        R::Remember { req } => {
            let checked = req.check()?;
            let done = direct.write(|s| ops::remember(s, checked, caller))?;
            if !done.duplicate {
                let source = caller.source.as_deref().unwrap_or("cli");
                direct.record_write(source, Some(&done.id), 1);
            }
            json(done)
        }
        R::Recall { req } => {
            req.check()?;
            records(direct.read(|s| ops::recall(s, req, caller))?)
        }
        R::Proactive {
            context,
            limit,
            kind,
        } => {
            ops::check_query("proactive", context)?;
            records(direct.read(|s| ops::proactive(s, context, *kind, *limit, caller))?)
        }
        R::List { memory_type, limit } => {
            records(direct.read(|s| ops::list(s, memory_type.as_deref(), *limit))?)
        }
        R::Get { id } => {
            let id = ops::checked_id("get", id)?;
            json(direct.read(|s| ops::get(s, &id))?)
        }
        R::SetKeys { id, keys } => {
            let id = ops::checked_id("set-keys", id)?;
            match direct.with(false, |s| ops::set_keys(s, &id, keys))? {
                Some(done) => json(done),
                None => Err(crate::error::not_found(format!("no memory {id}"))),
            }
        }
        R::Supersede { newer, older } => {
            let newer = ops::checked_id("supersede", newer)?;
            let older = ops::checked_id("supersede", older)?;
            match direct.with(false, |s| ops::supersede(s, &newer, &older))? {
                Some(done) => json(done),
                None => Err(crate::error::not_found(format!(
                    "supersede: no memory {newer}; nothing changed (see `wt-memory list`)"
                ))),
            }
        }
        R::Forget { req } => {
            req.check()?;
            match direct.with(false, |s| ops::forget(s, req))? {
                Some(done) => json(done),
                None => json(req.nothing_found()?),
            }
        }
        R::Context { topic } => {
            if let Some(t) = topic {
                ops::check_query("context", t)?;
            }
            json(direct.with(false, |s| ops::context(s, topic.as_deref()))?)
        }
        R::Brain => json(ops::brain(direct.read(|s| Ok(s.records()?))?)),
        R::Stats => json(ops::stats(&direct.read(|s| Ok(s.records()?))?)),
        R::Count => json(direct.read(|s| Ok(s.count()))?),
        R::Health => json(direct.write(|s| Ok(ops::health(s)))?),
        R::IndexReport => json(direct.write(|s| Ok(s.index_report()))?),
        R::Audit { threshold } => {
            ops::check_unit("threshold", *threshold)?;
            json(ops::audit(&direct.read(|s| Ok(s.records()?))?, *threshold)?)
        }
        R::Dedup { threshold, dry_run } => {
            ops::check_unit("threshold", *threshold)?;
            json(direct.with(false, |s| ops::dedup(s, *threshold, *dry_run))?)
        }
        R::Cleanup {
            threshold,
            min_length,
            dry_run,
        } => {
            ops::check_unit("threshold", *threshold as f64)?;
            let done = direct.with(false, |s| {
                ops::cleanup(s, *threshold, *min_length, *dry_run)
            })?;
            json(done.unwrap_or(ops::NOTHING_CLEANED))
        }
        R::Export { exclude_private } => {
            let name = direct.project.name.clone();
            let doc = direct.with(false, |s| ops::export(s, *exclude_private))?;
            json(doc.unwrap_or_else(|| ops::empty_export(&name)))
        }
        R::Import { req } => {
            ops::check_import(req)?;
            let done = direct.write(|s| ops::import(s, req))?;
            if let ops::Imported::Done(report) = &done {
                // Sync pulls through import; everything else that imports is an import.
                let source = match caller.source.as_deref() {
                    Some("sync") => "sync",
                    _ => "import",
                };
                direct.record_write(source, None, report.imported);
            }
            json(done)
        }
        R::Restore { name } => {
            crate::snapshot::find(&direct.project.store_dir, name.as_deref())
                .map_err(|e| not_found(format!("restore: {e:#}")))?;
            json(direct.write(|s| ops::restore(s, name.as_deref()))?)
        }
        R::Migrate => {
            // Migrations run here, by name, not as a side effect of opening.
            let before = direct.options.migrate;
            direct.options.migrate = false;
            let out = direct.write(ops::migrate);
            direct.options.migrate = before;
            json(out?)
        }
        R::Reembed => json(direct.write(|s| {
            let n = ops::reembed(s)?;
            Ok((n, s.current_embedder().label().to_string()))
        })?),
        R::Repair { accept_loss } => {
            if !store::exists(&direct.project.store_dir) {
                return json(None::<RepairReport>);
            }
            // Repair opens the store itself, after setting its indexes aside.
            direct.store = None;
            json(Some(ops::repair(&direct.project, *accept_loss)?))
        }
        R::Seed {
            text,
            file,
            dry_run,
        } => {
            let seeds = ops::check_seed_text(text, file)?;
            let done = direct.write(|s| ops::seed(s, seeds, *dry_run))?;
            if !dry_run {
                direct.record_write("seed", None, done.imported);
            }
            json(done)
        }
        R::TodoAdd { text, tags } => {
            ops::check_todo(text)?;
            json(direct.write(|s| ops::todo_add(s, text, tags, caller))?)
        }
        R::TodoList => json(direct.read(ops::todo_list)?),
        R::TodoDone { id } => json(direct.write(|s| ops::todo_done(s, id))?),
        R::TodoClear => json(direct.write(ops::todo_clear)?),
        R::StoreChecks => json(direct.with(false, |s| Ok(crate::doctor::store_checks(s)))?),
        R::Warm => {
            direct.with(false, |s| Ok(s.embed("wt-memory warm-up")?))?;
            json(())
        }
        R::Record { events } => {
            direct.recorder.push(events.clone());
            if direct.holding == Holding::PerCall {
                direct.recorder.flush()?;
            }
            json(())
        }
        R::Metrics { days } => {
            direct.recorder.flush()?;
            let records = direct.read(|s| Ok(s.records()?))?;
            let log = metrics::Log::open_existing(&metrics::db_path(&direct.project))?;
            json(metrics::Report::build(
                &direct.project.name,
                log.as_ref(),
                &records,
                *days,
            )?)
        }
    }
}

impl Direct {
    /// Log a write (`count` memories; `memory` when it is one) by `source`.
    fn record_write(&self, source: &str, memory: Option<&str>, count: usize) {
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

/// The memory count of a store: asked of its daemon when one runs (it holds the store), else
/// read here without migrating or creating anything (`projects`).
pub fn count_of(project: &Project) -> Result<usize> {
    let value = match crate::daemon::running(project) {
        Some(mut conn) => conn.call(&Caller::default(), &Request::Count)?,
        None => {
            let options = OpenOptions {
                migrate: false,
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
            Backend::Pending | Backend::Unreachable(_) => {}
        }
    }

    fn send(&mut self, caller: &Caller, req: &Request) -> Result<Value> {
        self.resolve();
        match &mut self.backend {
            Backend::Direct(d) => execute(d, caller, req),
            Backend::Daemon(c) => c.call(caller, req),
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
    pub fn store_checks(&mut self) -> Result<Option<crate::doctor::StoreChecks>> {
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
