//! The metrics log: what each hook run injected or held back, where each write came from, and
//! which injected memories the agent then used.
//!
//! One SQLite file per project in the state directory (`<state>/wt-tools/metrics/<store>.db`),
//! never in the synced store: it describes this machine's sessions, not the project's knowledge.
//! Events are buffered by a [`Recorder`] and written in one transaction: a one-shot process (a
//! hook without a daemon, the CLI) writes when its client closes, a daemon when it is quiet, so
//! a hook pays one socket message for its record. Rows older than [`RETENTION_DAYS`] are pruned
//! at each write. `WT_MEMORY_METRICS=0` records nothing.

pub mod html;
pub mod report;
pub mod usage;

use rusqlite::{params, Connection};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wt_memory_base::project::Project;
use wt_memory_foundation::error::{other, Result};

pub use report::Report;

pub const RETENTION_DAYS: i64 = 90;
/// How long a memory may go unused before `audit` lists it for review (when its anchors changed
/// too): the log's retention, the window it can speak for.
pub const REVIEW_AFTER_DAYS: i64 = RETENTION_DAYS;
/// A query is kept redacted and at most this long.
pub const QUERY_CHARS: usize = 500;
/// A daemon writes its buffer once it holds this many events, quiet or not.
pub const FLUSH_AT: usize = 256;

/// One thing worth counting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    Run(RunRow),
    Write(Write),
    Used(Used),
    Mistake(Mistake),
    /// A memory shown in a session whose answer was checked for its use (at Stop).
    Shown(Shown),
}

/// A memory injected or listed in a session, counted when the session's Stop looks at what the
/// agent used: a session that never reaches Stop (or one replayed without any, as an evaluation
/// is) says nothing about use, so it neither sinks nor raises a memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shown {
    pub at_ms: i64,
    pub session: String,
    pub memory: String,
}

/// A failed command's signature seen by the hooks: `failed` (PostToolUseFailure), `repeated`
/// (it failed before, in any session), `guarded` (PreToolUse stopped a close form of it before it
/// ran), `false-fire` (a command the guard stopped then ran and worked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mistake {
    pub at_ms: i64,
    pub session: String,
    pub signature: String,
    /// `program subcommand`.
    pub head: String,
    /// `failed`, `repeated`, `guarded` or `false-fire`.
    pub what: String,
    /// The guard had warned about it earlier in the session.
    pub after_guard: bool,
}

/// One hook run that asked memory something.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub at_ms: i64,
    pub session: String,
    pub event: String,
    /// What the query is: prompt, path, command, error, task or project.
    pub query_kind: String,
    pub query: String,
    /// Memories the store returned before the hook's floors and budget.
    pub candidates: u32,
    pub injected: Vec<Injected>,
    pub chars: u32,
    pub duration_ms: f64,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Injected {
    pub memory: String,
    pub score: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Injected,
    Abstained,
    Deadline,
    Error,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Injected => "injected",
            Outcome::Abstained => "abstained",
            Outcome::Deadline => "deadline",
            Outcome::Error => "error",
        }
    }
}

/// A write and who made it: hook (a commit save), extraction (Stop), mcp, cli, import, sync.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Write {
    pub at_ms: i64,
    pub source: String,
    /// The memory written; None for a bulk write counted in `count`.
    pub memory: Option<String>,
    pub count: u32,
}

/// An injected memory the agent used in a session: cited by its `[MEM#…]` id or its distinctive
/// content echoed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Used {
    pub at_ms: i64,
    pub session: String,
    pub memory: String,
    /// "cited" or "echoed".
    pub how: String,
}

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `<state>/wt-tools/metrics/<store name>.db`.
pub fn db_path(project: &Project) -> PathBuf {
    // The library's unit tests open stores of made-up projects: their logs stay out of the
    // user's state directory.
    let state = if cfg!(test) {
        std::env::temp_dir().join("wt-memory-unit-tests")
    } else {
        wt_memory_base::paths::log_dir()
    };
    state.join("metrics").join(format!("{}.db", project.name))
}

/// Is the metrics log on (`WT_MEMORY_METRICS`)?
pub fn enabled() -> bool {
    wt_memory_base::config::get().metrics
}

/// 2: the use counts ([`UseCounts`]).
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs(
    id INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL,
    session TEXT NOT NULL,
    event TEXT NOT NULL,
    query_kind TEXT NOT NULL,
    query TEXT NOT NULL,
    candidates INTEGER NOT NULL,
    chars INTEGER NOT NULL,
    duration_ms REAL NOT NULL,
    outcome TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_at ON runs(at_ms);
CREATE TABLE IF NOT EXISTS injections(
    run INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    session TEXT NOT NULL,
    memory TEXT NOT NULL,
    score REAL);
CREATE INDEX IF NOT EXISTS injections_at ON injections(at_ms);
CREATE INDEX IF NOT EXISTS injections_memory ON injections(memory);
CREATE TABLE IF NOT EXISTS writes(
    at_ms INTEGER NOT NULL,
    source TEXT NOT NULL,
    memory TEXT,
    count INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS writes_at ON writes(at_ms);
CREATE TABLE IF NOT EXISTS usage(
    at_ms INTEGER NOT NULL,
    session TEXT NOT NULL,
    memory TEXT NOT NULL,
    how TEXT NOT NULL,
    PRIMARY KEY(session, memory));
CREATE INDEX IF NOT EXISTS usage_at ON usage(at_ms);
CREATE TABLE IF NOT EXISTS mistakes(
    at_ms INTEGER NOT NULL,
    session TEXT NOT NULL,
    signature TEXT NOT NULL,
    head TEXT NOT NULL,
    what TEXT NOT NULL,
    after_guard INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS mistakes_at ON mistakes(at_ms);
CREATE TABLE IF NOT EXISTS injected_sessions(
    at_ms INTEGER NOT NULL,
    session TEXT NOT NULL,
    memory TEXT NOT NULL,
    PRIMARY KEY(session, memory));
CREATE INDEX IF NOT EXISTS injected_sessions_at ON injected_sessions(at_ms);
CREATE TABLE IF NOT EXISTS use_counts(
    memory TEXT PRIMARY KEY,
    injected INTEGER NOT NULL DEFAULT 0,
    used INTEGER NOT NULL DEFAULT 0);
";

/// How often the agent was shown a memory and used it: sessions, each counted once. Kept past
/// the log's retention (one small row per memory ever injected).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UseCounts {
    pub injected: u32,
    pub used: u32,
}

/// Each memory's use counts, by id.
pub type UseCountsOf = HashMap<String, UseCounts>;

/// A memory shown in at least this many sessions and never used sinks (a rule fixed before
/// looking, not fitted; docs/evaluation.md, "Learning from use").
pub const SINK_AFTER: u32 = 5;
/// How far it sinks, in relevance: enough to drop a memory just above the full floor to the index.
pub const SINK: f64 = 0.1;

impl UseCounts {
    /// The use prior: a bounded shift of a memory's relevance in the hooks' tiers. A memory the
    /// agent used never sinks; none rises: a rise lifts a memory for every query, also those it
    /// does not answer, and in the simulation it cost precision and abstention
    /// (`studies/use_simulation.py`; docs/evaluation.md, "Learning from use").
    pub fn prior(self) -> f64 {
        if self.used == 0 && self.injected >= SINK_AFTER {
            -SINK
        } else {
            0.0
        }
    }

    /// Why, in words (`recall --explain`).
    pub fn explain(self) -> String {
        let shown = format!(
            "shown by a hook in {} session{}, used in {}",
            self.injected,
            if self.injected == 1 { "" } else { "s" },
            self.used
        );
        match self.prior() {
            p if p < 0.0 => format!("{shown}: sinks {p:+.2} in the hooks"),
            _ if self.used > 0 => format!("{shown}: never sinks"),
            _ => format!("{shown}: no change"),
        }
    }
}

fn sql_err(path: &Path, e: rusqlite::Error) -> wt_memory_foundation::error::Error {
    other(format!("metrics log {}: {e}", path.display()))
}

/// The project's metrics database, opened for reading and writing.
pub struct Log {
    conn: Connection,
    path: PathBuf,
}

impl Log {
    /// Open (and create) the database at `path`. Concurrent processes share it through SQLite's
    /// WAL; a writer waits up to `busy` for another.
    pub fn open(path: &Path, busy: Duration) -> Result<Log> {
        if let Some(dir) = path.parent() {
            wt_memory_base::paths::ensure_private_dir(dir)?;
        }
        let conn = Connection::open(path).map_err(|e| sql_err(path, e))?;
        conn.busy_timeout(busy).map_err(|e| sql_err(path, e))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| sql_err(path, e))?;
        if version < SCHEMA_VERSION {
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(|e| sql_err(path, e))?;
            conn.execute_batch(SCHEMA).map_err(|e| sql_err(path, e))?;
            conn.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(|e| sql_err(path, e))?;
        }
        // The log is a convenience: a crash may lose its last writes, never corrupt it.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| sql_err(path, e))?;
        Ok(Log {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Read an existing database; None when nothing was ever recorded.
    pub fn open_existing(path: &Path) -> Result<Option<Log>> {
        if !path.exists() {
            return Ok(None);
        }
        Log::open(path, Duration::from_secs(5)).map(Some)
    }

    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Write `events` in one transaction and prune what is past retention.
    pub fn append(&mut self, events: &[Event]) -> Result<()> {
        let path = self.path.clone();
        let err = |e| sql_err(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        for event in events {
            match event {
                Event::Run(run) => {
                    tx.execute(
                        "INSERT INTO runs(at_ms, session, event, query_kind, query, candidates,
                             chars, duration_ms, outcome) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
                        params![
                            run.at_ms,
                            run.session,
                            run.event,
                            run.query_kind,
                            clean_query(&run.query),
                            run.candidates,
                            run.chars,
                            run.duration_ms,
                            run.outcome.as_str()
                        ],
                    )
                    .map_err(err)?;
                    let id = tx.last_insert_rowid();
                    for inj in &run.injected {
                        tx.execute(
                            "INSERT INTO injections(run, at_ms, session, memory, score)
                             VALUES (?1,?2,?3,?4,?5)",
                            params![id, run.at_ms, run.session, inj.memory, inj.score],
                        )
                        .map_err(err)?;
                    }
                }
                Event::Write(w) => {
                    tx.execute(
                        "INSERT INTO writes(at_ms, source, memory, count) VALUES (?1,?2,?3,?4)",
                        params![w.at_ms, w.source, w.memory, w.count],
                    )
                    .map_err(err)?;
                }
                Event::Used(u) => {
                    let first_in_session = tx
                        .execute(
                            "INSERT OR IGNORE INTO usage(at_ms, session, memory, how)
                             VALUES (?1,?2,?3,?4)",
                            params![u.at_ms, u.session, u.memory, u.how],
                        )
                        .map_err(err)?;
                    if first_in_session == 1 {
                        tx.execute(
                            "INSERT INTO use_counts(memory, used) VALUES (?1, 1)
                             ON CONFLICT(memory) DO UPDATE SET used = used + 1",
                            [&u.memory],
                        )
                        .map_err(err)?;
                    }
                }
                Event::Shown(shown) => {
                    let first_in_session = tx
                        .execute(
                            "INSERT OR IGNORE INTO injected_sessions(at_ms, session, memory)
                             VALUES (?1,?2,?3)",
                            params![shown.at_ms, shown.session, shown.memory],
                        )
                        .map_err(err)?;
                    if first_in_session == 1 {
                        tx.execute(
                            "INSERT INTO use_counts(memory, injected) VALUES (?1, 1)
                             ON CONFLICT(memory) DO UPDATE SET injected = injected + 1",
                            [&shown.memory],
                        )
                        .map_err(err)?;
                    }
                }
                Event::Mistake(m) => {
                    tx.execute(
                        "INSERT INTO mistakes(at_ms, session, signature, head, what, after_guard)
                         VALUES (?1,?2,?3,?4,?5,?6)",
                        params![
                            m.at_ms,
                            m.session,
                            m.signature,
                            m.head,
                            m.what,
                            m.after_guard
                        ],
                    )
                    .map_err(err)?;
                }
            }
        }
        let cutoff = now_ms() - RETENTION_DAYS * 86_400_000;
        for table in [
            "runs",
            "injections",
            "writes",
            "usage",
            "mistakes",
            "injected_sessions",
        ] {
            tx.execute(&format!("DELETE FROM {table} WHERE at_ms < ?1"), [cutoff])
                .map_err(err)?;
        }
        tx.commit().map_err(err)
    }
}

impl Log {
    /// The memories the agent used since `since_ms` (within the log's retention).
    pub fn used_since(&self, since_ms: i64) -> Result<std::collections::HashSet<String>> {
        let err = |e| sql_err(&self.path, e);
        let mut query = self
            .conn
            .prepare("SELECT DISTINCT memory FROM usage WHERE at_ms >= ?1")
            .map_err(err)?;
        let rows = query
            .query_map([since_ms], |r| r.get::<_, String>(0))
            .map_err(err)?;
        rows.collect::<std::result::Result<_, _>>().map_err(err)
    }

    /// Every memory's [`UseCounts`].
    pub fn use_counts(&self) -> Result<UseCountsOf> {
        let err = |e| sql_err(&self.path, e);
        let mut query = self
            .conn
            .prepare("SELECT memory, injected, used FROM use_counts")
            .map_err(err)?;
        let rows = query
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    UseCounts {
                        injected: r.get(1)?,
                        used: r.get(2)?,
                    },
                ))
            })
            .map_err(err)?;
        rows.collect::<std::result::Result<_, _>>().map_err(err)
    }
}

/// Redacted (no secret reaches the log) and at most [`QUERY_CHARS`] long.
fn clean_query(query: &str) -> String {
    wt_memory_foundation::hygiene::truncate_chars(
        &wt_memory_foundation::hygiene::redact(query),
        QUERY_CHARS,
    )
    .to_string()
}

/// Events waiting to be written to one project's log. Clones share the buffer (a daemon's
/// connection threads push; its quiet moment writes).
#[derive(Clone)]
pub struct Recorder {
    path: PathBuf,
    pending: Arc<Mutex<Vec<Event>>>,
    /// The use counts, read from the log on first need and after each write.
    uses: Arc<Mutex<Option<Arc<UseCountsOf>>>>,
}

impl Recorder {
    pub fn for_project(project: &Project) -> Recorder {
        Recorder {
            path: db_path(project),
            pending: Arc::default(),
            uses: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue `events` (nothing when metrics are off). Returns how many wait.
    pub fn push(&self, events: Vec<Event>) -> usize {
        if !enabled() {
            return 0;
        }
        let mut pending = self.lock();
        pending.extend(events);
        pending.len()
    }

    /// Write what waits. On failure the events are dropped (the log must never hold up memory
    /// work) and the error is returned for the caller to log.
    pub fn flush(&self) -> Result<usize> {
        let events = std::mem::take(&mut *self.lock());
        if events.is_empty() {
            return Ok(0);
        }
        // Best effort: a log busy for longer is not worth holding up a hook's exit.
        let mut log = Log::open(&self.path, Duration::from_millis(500))?;
        log.append(&events)?;
        // Read again here, in the quiet moment, not by the next query.
        if let Ok(counts) = log.use_counts() {
            *self.uses.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(counts));
        }
        Ok(events.len())
    }

    /// The memories the agent used in the last `days` days (none when nothing was recorded).
    pub fn used_within(&self, days: i64) -> Result<std::collections::HashSet<String>> {
        self.flush()?;
        match Log::open_existing(&self.path)? {
            Some(log) => log.used_since(now_ms() - days * 86_400_000),
            None => Ok(Default::default()),
        }
    }

    /// Every memory's [`UseCounts`] (empty when nothing was recorded or metrics are off).
    pub fn use_counts(&self) -> Arc<UseCountsOf> {
        if !enabled() {
            return Arc::default();
        }
        let mut uses = self.uses.lock().unwrap_or_else(|e| e.into_inner());
        uses.get_or_insert_with(|| {
            let counts = Log::open_existing(&self.path)
                .and_then(|log| log.map_or_else(|| Ok(HashMap::new()), |l| l.use_counts()));
            Arc::new(counts.unwrap_or_default())
        })
        .clone()
    }

    /// Flush, reporting a failure on stderr (a daemon's log, a CLI's error stream).
    pub fn flush_or_warn(&self) {
        if let Err(e) = self.flush() {
            eprintln!("wt-memory: {e}; those metrics were not recorded");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(at_ms: i64, session: &str, outcome: Outcome, injected: &[(&str, f64)]) -> Event {
        Event::Run(RunRow {
            at_ms,
            session: session.into(),
            event: "UserPromptSubmit".into(),
            query_kind: "prompt".into(),
            query: "deploy with token sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789".into(),
            candidates: 3,
            injected: injected
                .iter()
                .map(|(m, s)| Injected {
                    memory: m.to_string(),
                    score: Some(*s),
                })
                .collect(),
            chars: 120,
            duration_ms: 12.5,
            outcome,
        })
    }

    #[test]
    fn old_rows_are_pruned_and_queries_are_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let mut log = Log::open(&path, Duration::from_secs(1)).unwrap();
        let old = now_ms() - (RETENTION_DAYS + 1) * 86_400_000;
        log.append(&[run(old, "s0", Outcome::Injected, &[("m1", 0.9)])])
            .unwrap();
        log.append(&[run(now_ms(), "s1", Outcome::Injected, &[("m2", 0.5)])])
            .unwrap();
        let count = |table: &str| -> i64 {
            log.conn()
                .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!((count("runs"), count("injections")), (1, 1));
        let query: String = log
            .conn()
            .query_row("SELECT query FROM runs", [], |r| r.get(0))
            .unwrap();
        assert!(!query.contains("abcdefghijklmnop"), "{query}");
    }

    #[test]
    fn the_report_counts_outcomes_buckets_and_usage_per_session() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = Log::open(&dir.path().join("m.db"), Duration::from_secs(1)).unwrap();
        let now = now_ms();
        log.append(&[
            run(now, "s1", Outcome::Injected, &[("m1", 0.9), ("m2", 0.5)]),
            run(now, "s1", Outcome::Abstained, &[]),
            run(now, "s2", Outcome::Injected, &[("m2", 0.2)]),
            run(now, "s3", Outcome::Injected, &[("m2", 0.4)]),
            Event::Used(Used {
                at_ms: now,
                session: "s1".into(),
                memory: "m1".into(),
                how: "cited".into(),
            }),
            // Used in a session it was not injected in: not counted.
            Event::Used(Used {
                at_ms: now,
                session: "s9".into(),
                memory: "m1".into(),
                how: "echoed".into(),
            }),
            Event::Write(Write {
                at_ms: now,
                source: "mcp".into(),
                memory: Some("m1".into()),
                count: 1,
            }),
        ])
        .unwrap();
        let report = Report::build("p", Some(&log), &[], 7).unwrap();
        let e = &report.events[0];
        assert_eq!((e.runs, e.injected, e.abstained), (4, 3, 1));
        assert_eq!(e.memories_injected, 4);
        let r = &report.relevance;
        assert_eq!((r.strong, r.partial, r.weak), (1, 2, 1));
        // m1 in s1, m2 in s1, s2, s3: 4 injections, one used.
        assert_eq!((report.usage.injected, report.usage.used), (4, 1));
        assert_eq!(report.usage.rate, Some(0.25));
        assert_eq!(report.most_used[0].id, "m1");
        assert_eq!(report.injected_never_used[0].id, "m2");
        assert_eq!(report.injected_never_used[0].sessions_injected, 3);
        assert_eq!(report.writes["mcp"], 1);
        assert_eq!(report.sessions, 3);
        assert!(report
            .to_text()
            .contains("1 of 4 injected memories used (25%"));
    }
}
