//! The resident per-store service, `wt-memory serve`: one process owns a store and keeps it
//! (and the embedding model) open, so a hook, an MCP call or a CLI command costs a socket round
//! trip instead of an engine open and a model load.
//!
//! - Identity: the store it serves, its canonical directory (not the project's name): socket,
//!   locks and log are named by [`wire::store_key`], and the hello names the store, so a client
//!   never talks to another store's service.
//! - Transport: a Unix socket `<runtime dir>/daemon/<store key>.sock` in a directory checked to
//!   be private (ours, 0700, not a link); the socket is 0600; either side refuses a peer of
//!   another uid (`SO_PEERCRED`) before saying anything else.
//! - Protocol (version [`PROTOCOL`]): one JSON object per line, at most [`wire::MAX_LINE`]
//!   bytes. The client opens with `{"hello": Hello}` (nothing else is served first) and the
//!   service answers with its own; then each line is `{"call": {"caller", "lock_wait_ms",
//!   "request"}}` (a [`Request`]), a command line the `wt-memory` front forwards (`{"forward":
//!   Forward}`), or a control line (`{"control": "status" | "shutdown"}`). A request's turn is
//!   announced with `{"started": null}`; its answer is `{"ok": …}` or `{"err": Error}`.
//! - Budgets: a client waits for its turn as long as it would wait for the store lock, then
//!   withdraws (the service skips a request whose client hung up before its turn); a hook's
//!   deadline bounds everything. A service that does not say hello within 2 s is reported as not
//!   answering, with its pid; one that exits while starting is reported at once, with its first
//!   log line.
//! - One service per store: it holds `<key>.daemon.lock` (its pid inside) for its life. Clients
//!   that find none ask the user's engine to serve the store on a thread (see `engine.rs`: one
//!   process, one model, for all of the user's stores; started under its own spawn lock), or,
//!   for a store the engine does not serve, start a `wt-memory serve` process of its own under
//!   `<key>.spawn.lock`, so racing clients start exactly one. A
//!   stale socket, a service killed with -9, or an older or incompatible one is replaced;
//!   installations of one version share a service.
//! - Bounds: [`MAX_CONNECTIONS`] connections (the next is told so), a connection silent before
//!   its hello for 5 s or idle for 5 minutes is closed, errors sent back are clipped.
//! - Requests run one at a time, in arrival order, each by its own [`wt_memory_ops::Operation::run`]
//!   on the store it keeps open: a write is answered once the engine has it.
//! - It exits after [`config::Config::daemon_idle`] without requests, when its socket is removed,
//!   or on SIGTERM/SIGINT (after the request in progress); `wt-memory daemon stop` ends even a
//!   frozen one ([`stop`]; in the engine the store closes and the others go on). Its log is
//!   `<state dir>/wt-tools/daemon-<store key>.log`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wt_memory_base::config;
use wt_memory_base::os::socket::{Listener, Stream};
use wt_memory_base::project::Project;
use wt_memory_foundation::error::{Error, Result};
use wt_memory_ops::{Caller, OpenOptions};
use wt_memory_ops::{Direct, Holding, Made, Reply, Request, Wire};

use wt_memory_base::wire::{self, daemon_dir, store_key, Forward, Forwarded, HookDone, HookRun};
pub use wt_memory_base::wire::{Hello, PROTOCOL};

pub fn socket_path(project: &Project) -> PathBuf {
    wire::socket_path(&project.store_dir)
}

fn spawn_lock_path(project: &Project) -> PathBuf {
    daemon_dir().join(format!("{}.spawn.lock", store_key(&project.store_dir)))
}

/// Held by the service for its life, with its pid inside (named when it does not answer).
fn daemon_lock_path(project: &Project) -> PathBuf {
    wire::daemon_lock_path(&project.store_dir)
}

pub fn log_path(project: &Project) -> PathBuf {
    wt_memory_base::paths::log_dir().join(format!("daemon-{}.log", store_key(&project.store_dir)))
}

/// What this process says on a connection: the service it would start for `project` (a
/// service says [`Hello::as_served`]).
fn hello_here(project: &Project) -> Hello {
    Hello::here(
        &project.store_dir,
        wt_memory_core::engine_env::engine_assets().map(|a| a.model_dir.clone()),
    )
}

/// How long a client waits for a service's hello: one that does not say it this fast is not
/// answering (frozen, or stuck in a way its connection threads cannot help).
const HELLO_WAIT: Duration = Duration::from_secs(2);

/// How long a connection may stay silent before its hello (then it is closed).
const HELLO_READ_LIMIT: Duration = Duration::from_secs(5);

/// Connections a service keeps at once; the next one is told so and closed.
pub const MAX_CONNECTIONS: usize = 64;

/// A connection idle this long is closed (a long-lived client reconnects on its next call).
const CONNECTION_IDLE: Duration = Duration::from_secs(300);

/// Error messages sent back are cut to this many characters.
const MAX_ERROR_CHARS: usize = 2000;

/// A command line the `wt-memory` front forwarded, parsed by the command line's own code (see
/// [`Hosted`]).
pub trait ForwardedCommand: Send {
    /// The texts the command will have the store embed (embedded ahead of its turn).
    fn texts_to_embed(&self) -> Vec<String>;
    /// Run it on the store the service keeps open: what it printed and its exit status.
    fn run(self: Box<Self>, direct: &mut Direct) -> Result<Forwarded>;
    /// See [`wt_memory_ops::Operation::FROM_VIEW`].
    fn answered_from_view(&self) -> bool {
        false
    }
}

/// The fronts a service hosts, beside its socket clients: the command lines the `wt-memory` front
/// forwards, and the hook events the `wt-hook-memory` front hands over whole. They are fronts (the
/// command line's parser, the hook handler), above this layer, so `wt-memory serve` hands them to
/// [`serve`]; the service then runs them on its own threads, their memory calls joining its queue
/// through [`Local`].
pub trait Hosted: Send + Sync + 'static {
    /// Parse a forwarded command line, or refuse it (then nothing was done and the front runs
    /// the engine binary itself).
    fn forwarded(&self, call: &Forward) -> Result<Box<dyn ForwardedCommand>>;
    /// Run a hook event, with the service's own way in for its memory calls.
    fn hook(&self, call: &HookRun, way_in: Local) -> HookDone;
}

/// What `wt-memory daemon status` and `doctor` show.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    pub pid: u32,
    pub version: String,
    pub uptime_secs: u64,
    pub requests: u64,
    pub rss_kb: u64,
    pub idle_exit_secs: u64,
    pub store: PathBuf,
    /// Service time per operation (in the daemon, queueing excluded), recent requests.
    #[serde(default)]
    pub service: Vec<OpService>,
    /// Hook writes waiting in the store's spool.
    #[serde(default)]
    pub spooled: usize,
    #[serde(default)]
    pub connections: usize,
    /// Connections accepted since the service started.
    #[serde(default)]
    pub accepted: u64,
    /// Stores its process serves now (the user's engine serves several in one process).
    #[serde(default)]
    pub stores_served: usize,
    /// How many times its process loaded the embedding model (one model for all its stores).
    #[serde(default)]
    pub model_loads: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpService {
    pub op: String,
    /// Requests of this kind since the daemon started.
    pub count: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

/// How many recent service times per operation the daemon keeps for its percentiles.
const SERVICE_SAMPLES: usize = 256;

/// Recent service times per operation.
#[derive(Default)]
struct ServiceTimes(
    std::collections::BTreeMap<&'static str, (u64, std::collections::VecDeque<f64>)>,
);

impl ServiceTimes {
    fn add(&mut self, op: &'static str, ms: f64) {
        let (count, recent) = self.0.entry(op).or_default();
        *count += 1;
        if recent.len() == SERVICE_SAMPLES {
            recent.pop_front();
        }
        recent.push_back(ms);
    }

    fn summary(&self) -> Vec<OpService> {
        self.0
            .iter()
            .map(|(op, (count, recent))| {
                let mut sorted: Vec<f64> = recent.iter().copied().collect();
                sorted.sort_by(f64::total_cmp);
                let at = |q: f64| wt_memory_ops::metrics::report::percentile(&sorted, q);
                OpService {
                    op: op.to_string(),
                    count: *count,
                    p50_ms: (at(0.5) * 10.0).round() / 10.0,
                    p95_ms: (at(0.95) * 10.0).round() / 10.0,
                }
            })
            .collect()
    }
}

/// One line for `daemon status` and `doctor`.
pub fn describe(s: &Status) -> String {
    let spooled = match s.spooled {
        0 => String::new(),
        n => format!("; {n} hook write(s) spooled, stored at its next request"),
    };
    let others = match s.stores_served {
        0 | 1 => String::new(),
        n => format!(" (its process serves {n} stores)"),
    };
    format!(
        "memory daemon pid {}{others}, up {}s, {} MB, {} requests served, wt-memory {}, exits after {}s idle{spooled}",
        s.pid,
        s.uptime_secs,
        s.rss_kb / 1024,
        s.requests,
        s.version,
        s.idle_exit_secs
    )
}

/// The service-time table of `daemon status`, one line per operation.
pub fn describe_service(s: &Status) -> String {
    s.service
        .iter()
        .map(|o| {
            format!(
                "  {:<14} {:>7} served   p50 {:>7.1} ms   p95 {:>7.1} ms\n",
                o.op, o.count, o.p50_ms, o.p95_ms
            )
        })
        .collect()
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    caller: Caller,
    lock_wait_ms: u64,
    request: Wire,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Hello(Hello),
    Control(String),
    Call(Box<Envelope>),
    Forward(Forward),
    Hook(Box<HookRun>),
    /// To the user's engine: serve this store.
    Open(engine::OpenStore),
    /// The request's turn has come: the service is carrying it out now.
    Started(()),
    Ok(Value),
    Err(Error),
    /// An answer with the store's standing integrity warning, which the client prints as if it
    /// had opened the store itself.
    Warned {
        answer: Box<Line>,
        warning: String,
    },
}

fn daemon_err(msg: impl Into<String>) -> Error {
    Error::Daemon {
        message: msg.into(),
    }
}

fn unanswered(msg: impl Into<String>) -> Error {
    Error::Unanswered {
        message: msg.into(),
    }
}

use wire::timed_out;

/// The pid of the live service holding `project`'s store, if one does.
pub fn owner(project: &Project) -> Option<u32> {
    let lock = daemon_lock_path(project);
    if wt_memory_foundation::lock::is_free(&lock) {
        return None;
    }
    wt_memory_foundation::lock::holder_pid(&lock).filter(|pid| alive(*pid))
}

/// The one line for a service that is there and does not answer.
fn not_answering(project: &Project, pid: Option<u32>) -> Error {
    unanswered(wire::not_answering(&project.store_dir, pid))
}

use wt_memory_base::os::process::alive;

fn wait_gone(pid: u32, deadline: Instant) {
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How long a client's request may wait: for its turn, as long as the store lock would be waited
/// for (never past the deadline); once started, for its answer until the deadline, if any. Shared
/// by a socket client ([`Connection`]) and a hook the service runs ([`Local`]).
#[derive(Debug, Clone, Copy)]
struct Limits {
    lock_wait: Duration,
    /// The latest moment a call may end (a hook's budget); `None`: a call takes as long as its
    /// work, once its turn has come.
    deadline: Option<Instant>,
}

impl Limits {
    /// Time left before the deadline (at least 20 ms), if there is one.
    fn left(&self) -> Option<Duration> {
        self.deadline.map(|d| {
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(20))
        })
    }

    /// How long a request waits for its turn.
    fn queue_limit(&self) -> Duration {
        let lock_wait = self.lock_wait.max(Duration::from_millis(20));
        self.left().map_or(lock_wait, |left| left.min(lock_wait))
    }
}

/// The value of a request's answer line (a standing integrity warning that came with it is set
/// for this process to print), for a socket client and a hook the service runs alike.
fn value_of(line: Line) -> Result<Value> {
    match line {
        Line::Ok(v) => Ok(v),
        Line::Err(e) => Err(e),
        Line::Warned { answer, warning } => {
            wt_memory_foundation::integrity::set_warning(warning);
            value_of(*answer)
        }
        _ => Err(daemon_err("the memory service answered out of turn")),
    }
}

pub mod client;

mod conn;
mod engine;
mod server;
mod turns;

pub use conn::{connect, probe, running, stop, Connection, Found};
pub use engine::{engine_log_path, serve_engine};
pub use server::{serve, Local};

#[cfg(test)]
mod tests;
