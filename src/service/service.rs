//! The service side of every request: [`Request`] (one operation as typed data, what crosses the
//! resident service's socket), [`Direct`] (a store opened in this process) and [`execute`], the one
//! place a request becomes `ops` calls. The resident service ([`crate::daemon`]) and a client working
//! in-process ([`crate::client`]) both run [`execute`], so both give the same answers.
//!
//! Read operations on a project that has no store yet answer neutrally (an empty list, zero
//! counts) and create nothing; writes create the store.

use crate::error::{not_found, Result};
use crate::metrics::{self, Recorder};
use crate::ops::{self, Caller, OpenOptions};
use crate::project::Project;
use crate::rank::QueryKind;
use crate::record::MemoryRecord;
use crate::store::{self, RepairReport, Store};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

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
        /// Shift relevance by use (the caller's `WT_MEMORY_USE_PRIOR`).
        #[serde(default = "yes")]
        use_prior: bool,
    },
    /// A hook's query: what `proactive` answers, and up to `index` more listed below it.
    Tiers {
        context: String,
        limit: usize,
        index: usize,
        kind: Option<QueryKind>,
        #[serde(default = "yes")]
        use_prior: bool,
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
    /// Give a memory the prompt whose answer cited it as a learned key (the Stop hook).
    LearnKey {
        id: String,
        prompt: String,
    },
    /// Add and remove one memory's retrieval keys by hand (`wt-memory keys`).
    EditKeys {
        id: String,
        add: Vec<String>,
        remove: Vec<String>,
    },
    /// Remove the keys learned from use from one memory, or from all.
    Unlearn {
        id: Option<String>,
    },
    /// A failure record's command failed again (the hooks' guard): its count and latest form.
    FailedAgain {
        id: String,
        command: String,
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
    /// The store's map for SessionStart (counts kept in step with writes).
    Map,
    Count,
    Health,
    IndexReport,
    Audit {
        threshold: f64,
    },
    /// Memories whose code anchors changed or vanished.
    Stale,
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
            R::Tiers { .. } => "tiers",
            R::List { .. } => "list",
            R::Get { .. } => "get",
            R::SetKeys { .. } => "set_keys",
            R::LearnKey { .. } => "learn_key",
            R::EditKeys { .. } => "keys",
            R::Unlearn { .. } => "unlearn",
            R::FailedAgain { .. } => "failed_again",
            R::Supersede { .. } => "supersede",
            R::Forget { .. } => "forget",
            R::Context { .. } => "context",
            R::Brain => "brain",
            R::Stats => "stats",
            R::Map => "map",
            R::Count => "count",
            R::Health => "health",
            R::IndexReport => "index_report",
            R::Audit { .. } => "audit",
            R::Stale => "stale",
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
    pub(crate) fn needs_caller(&self) -> bool {
        matches!(
            self,
            Request::Remember { .. }
                | Request::Recall { .. }
                | Request::Proactive { .. }
                | Request::Tiers { .. }
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
            Request::Proactive { context, kind, .. } | Request::Tiers { context, kind, .. }
                if !context.trim().is_empty() && ops::check_query("proactive", context).is_ok() =>
            {
                let kind = kind.unwrap_or_else(|| QueryKind::infer(context));
                query_texts(context, kind, false)
            }
            _ => Vec::new(),
        }
    }

    /// Can the ranking view answer it while the engine is still opening (a service's first
    /// seconds at 10^5 memories)? A service has the others wait for the engine before they
    /// take their turn, so they do not hold up these meanwhile.
    pub fn answered_from_view(&self) -> bool {
        matches!(
            self,
            Request::Recall { .. }
                | Request::Proactive { .. }
                | Request::Tiers { .. }
                | Request::Map
        )
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
    /// The open store is a read copy (`OpenOptions::read_from_copy`): a write opens the store.
    reading_copy: bool,
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
            reading_copy: false,
        }
    }

    /// To wait for the open store's engine without holding this (see [`Store::engine_waiter`]).
    pub fn engine_waiter(&self) -> Option<crate::store::EngineWaiter> {
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
    pub fn embedder(&self) -> Option<std::sync::Arc<crate::store::Embedder>> {
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
    fn with<T>(
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
                ops::open_read_copy(&self.project, &self.options)?
            } else {
                ops::open_store(&self.project, &self.options)?
            });
            self.reading_copy = copy;
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

    /// A read: the default when there is no store.
    fn read<T: Default>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        Ok(self.with(Access::Read, f)?.unwrap_or_default())
    }

    /// A read: None when there is no store.
    fn peek<T>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<Option<T>> {
        self.with(Access::Read, f)
    }

    /// A write that creates the store when there is none.
    fn write<T>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        Ok(self.with(Access::Create, f)?.expect("created when missing"))
    }

    /// A write to the store there is: None when there is none.
    fn change<T>(&mut self, f: impl FnOnce(&Store) -> Result<T>) -> Result<Option<T>> {
        self.with(Access::Write, f)
    }
}

/// What a request does with the store: read copies serve only [`Access::Read`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    /// Change the store there is.
    Write,
    /// Change it, creating it when there is none.
    Create,
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

fn yes() -> bool {
    true
}

/// The use counts a query's relevance is shifted by: none when its caller turned the prior off.
fn use_counts(direct: &Direct, use_prior: bool) -> std::sync::Arc<crate::metrics::UseCountsOf> {
    if use_prior {
        direct.recorder().use_counts()
    } else {
        Default::default()
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
            let mut found = direct.read(|s| ops::recall(s, req, caller))?;
            if req.explain {
                let uses = direct.recorder().use_counts();
                for r in &mut found {
                    let counts = uses.get(&r.id).copied().unwrap_or_default();
                    let mut use_note = format!("; use: {}", counts.explain());
                    let learned = r.learned_keys();
                    if !learned.is_empty() {
                        use_note.push_str(&format!("; keys learned from use: {learned:?}"));
                    }
                    let why = r.relevance_reason.get_or_insert_with(String::new);
                    why.push_str(&use_note);
                }
            }
            records(found)
        }
        R::Proactive {
            context,
            limit,
            kind,
            use_prior,
        } => {
            ops::check_query("proactive", context)?;
            let uses = use_counts(direct, *use_prior);
            let prior = |id: &str| uses.get(id).map_or(0.0, |c| c.prior());
            records(direct.read(|s| ops::proactive(s, context, *kind, *limit, caller, &prior))?)
        }
        R::Tiers {
            context,
            limit,
            index,
            kind,
            use_prior,
        } => {
            ops::check_query("proactive", context)?;
            let uses = use_counts(direct, *use_prior);
            let prior = |id: &str| uses.get(id).map_or(0.0, |c| c.prior());
            json(direct.read(|s| ops::tiers(s, context, *kind, *limit, *index, caller, &prior))?)
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
            match direct.change(|s| ops::set_keys(s, &id, keys))? {
                Some(done) => json(done),
                None => Err(crate::error::not_found(format!("no memory {id}"))),
            }
        }
        R::LearnKey { id, prompt } => {
            let id = ops::checked_id("learn-key", id)?;
            match direct.change(|s| ops::learn_key(s, &id, prompt))? {
                Some(done) => json(done),
                None => Err(crate::error::not_found(format!("no memory {id}"))),
            }
        }
        R::EditKeys { id, add, remove } => {
            let id = ops::checked_id("keys", id)?;
            match direct.change(|s| ops::edit_keys(s, &id, add, remove))? {
                Some(done) => json(done),
                None => Err(crate::error::not_found(format!("no memory {id}"))),
            }
        }
        R::Unlearn { id } => {
            let id = id
                .as_deref()
                .map(|id| ops::checked_id("unlearn", id))
                .transpose()?;
            json(
                direct
                    .change(|s| ops::unlearn(s, id.as_deref()))?
                    .unwrap_or_default(),
            )
        }
        R::FailedAgain { id, command } => {
            let id = ops::checked_id("failed-again", id)?;
            match direct.change(|s| ops::failed_again(s, &id, command))? {
                Some(done) => json(done),
                None => Err(crate::error::not_found(format!("no memory {id}"))),
            }
        }
        R::Supersede { newer, older } => {
            let newer = ops::checked_id("supersede", newer)?;
            let older = ops::checked_id("supersede", older)?;
            match direct.change(|s| ops::supersede(s, &newer, &older))? {
                Some(done) => json(done),
                None => Err(crate::error::not_found(format!(
                    "supersede: no memory {newer}; nothing changed (see `wt-memory list`)"
                ))),
            }
        }
        R::Forget { req } => {
            req.check()?;
            match direct.change(|s| ops::forget(s, req))? {
                Some(done) => json(done),
                None => json(req.nothing_found()?),
            }
        }
        R::Context { topic } => {
            if let Some(t) = topic {
                ops::check_query("context", t)?;
            }
            json(direct.peek(|s| ops::context(s, topic.as_deref()))?)
        }
        R::Brain => json(ops::brain(direct.read(|s| Ok(s.records()?))?)),
        R::Stats => json(ops::stats(&direct.read(|s| Ok(s.records()?))?)),
        R::Map => json(direct.read(|s| Ok(ops::memory_map(&*s.rank_view()?)))?),
        R::Count => json(direct.read(|s| Ok(s.count()))?),
        R::Health => json(
            direct
                .peek(|s| Ok(ops::health(s)))?
                .unwrap_or_else(|| ops::health_without_store(&direct.project.store_dir)),
        ),
        R::IndexReport => json(direct.read(|s| Ok(s.index_report()))?),
        R::Stale => json(direct.read(ops::stale)?),
        R::Audit { threshold } => {
            ops::check_unit("threshold", *threshold)?;
            let mut report = ops::audit(&direct.read(|s| Ok(s.records()?))?, *threshold)?;
            let used = direct
                .recorder()
                .used_within(crate::metrics::REVIEW_AFTER_DAYS)
                .unwrap_or_default();
            let days = crate::metrics::REVIEW_AFTER_DAYS;
            report.review = direct.read(|s| ops::to_review(s, &used, days))?;
            json(report)
        }
        R::Dedup { threshold, dry_run } => {
            ops::check_unit("threshold", *threshold)?;
            json(direct.change(|s| ops::dedup(s, *threshold, *dry_run))?)
        }
        R::Cleanup {
            threshold,
            min_length,
            dry_run,
        } => {
            ops::check_unit("threshold", *threshold as f64)?;
            let done = direct.change(|s| ops::cleanup(s, *threshold, *min_length, *dry_run))?;
            json(done.unwrap_or(ops::NOTHING_CLEANED))
        }
        R::Export { exclude_private } => {
            let name = direct.project.name.clone();
            let doc = direct.peek(|s| ops::export(s, *exclude_private))?;
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
        R::StoreChecks => json(direct.peek(|s| Ok(ops::checks::store_checks(s)))?),
        R::Warm => {
            // The model and the ranking view (loaded when saved, else built and then saved).
            direct.peek(|s| {
                s.embed("wt-memory warm-up")?;
                Ok(s.rank_view()?)
            })?;
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
            let stale = direct.read(ops::stale)?;
            let log = metrics::Log::open_existing(&metrics::db_path(&direct.project))?;
            let mut report =
                metrics::Report::build(&direct.project.name, log.as_ref(), &records, *days)?;
            report.stale = stale;
            json(report)
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
