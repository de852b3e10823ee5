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
//!   that find none start one under `<key>.spawn.lock`, so racing clients start exactly one. A
//!   stale socket, a service killed with -9, or an older or incompatible one is replaced;
//!   installations of one version share a service.
//! - Bounds: [`MAX_CONNECTIONS`] connections (the next is told so), a connection silent before
//!   its hello for 5 s or idle for 5 minutes is closed, errors sent back are clipped.
//! - Requests run one at a time, in arrival order, through [`crate::client::execute`] on the
//!   store it keeps open: a write is answered once the engine has it.
//! - It exits after [`config::Config::daemon_idle`] without requests, when its socket is removed,
//!   or on SIGTERM/SIGINT (after the request in progress); `wt-memory daemon stop` ends even a
//!   frozen one ([`stop`]). Its log is `<state dir>/wt-tools/daemon-<store key>.log`.

use crate::client::{execute, execute_answer, Answer, Direct, Holding, Request};
use crate::config;
use crate::error::{Error, Result};
use crate::ops::{Caller, OpenOptions};
use crate::project::Project;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wt_memory_base::wire::{self, daemon_dir, store_key, Forward, Verdict, ENGINE};
pub use wt_memory_base::wire::{Hello, PROTOCOL};

pub fn socket_path(project: &Project) -> PathBuf {
    wire::socket_path(&project.store_dir)
}

fn spawn_lock_path(project: &Project) -> PathBuf {
    daemon_dir().join(format!("{}.spawn.lock", store_key(&project.store_dir)))
}

/// Held by the service for its life, with its pid inside (named when it does not answer).
fn daemon_lock_path(project: &Project) -> PathBuf {
    daemon_dir().join(format!("{}.daemon.lock", store_key(&project.store_dir)))
}

pub fn log_path(project: &Project) -> PathBuf {
    crate::paths::log_dir().join(format!("daemon-{}.log", store_key(&project.store_dir)))
}

/// What this process says on a connection: the service it would start for `project`.
fn hello_here(project: &Project) -> Hello {
    Hello::here(
        &project.store_dir,
        config::engine_assets().map(|a| a.model_dir.clone()),
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

/// The largest metrics `record` line: a hook run's events are a few kilobytes.
const MAX_RECORD_LINE: usize = 256 * 1024;

/// Error messages sent back are cut to this many characters.
const MAX_ERROR_CHARS: usize = 2000;

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
                let at = |q: f64| crate::metrics::report::percentile(&sorted, q);
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
    format!(
        "memory daemon pid {}, up {}s, {} MB, {} requests served, wt-memory {}, exits after {}s idle{spooled}",
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
    request: Request,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Hello(Hello),
    Control(String),
    Call(Box<Envelope>),
    Forward(Forward),
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

fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Read one line as a [`Line`].
fn read_reply(reader: &mut BufReader<UnixStream>) -> std::io::Result<Line> {
    match wire::read_line(reader, wire::MAX_LINE)? {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the memory service closed the connection",
        )),
    }
}

/// One line out, one line back.
fn exchange(reader: &mut BufReader<UnixStream>, line: &Line) -> std::io::Result<Line> {
    wire::write_line(reader.get_mut(), line)?;
    read_reply(reader)
}

/// The pid a service wrote into its lock, if a live process of this user holds it.
fn recorded_pid(project: &Project) -> Option<u32> {
    owner(project)
}

/// The pid of the live service holding `project`'s store, if one does.
pub fn owner(project: &Project) -> Option<u32> {
    let lock = daemon_lock_path(project);
    if crate::lock::is_free(&lock) {
        return None;
    }
    crate::lock::holder_pid(&lock).filter(|pid| alive(*pid))
}

/// The one line for a service that is there and does not answer.
fn not_answering(project: &Project, pid: Option<u32>) -> Error {
    let who = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
    unanswered(format!(
        "the memory service for {}{who} is not answering; stop it with `wt-memory daemon stop`",
        project.store_dir.display()
    ))
}

/// A client's connection to a store's service.
pub struct Connection {
    reader: BufReader<UnixStream>,
    lock_wait: Duration,
    /// The latest moment a call may end (a hook's budget); `None`: a call takes as long as its
    /// work, once its turn has come.
    deadline: Option<Instant>,
    pub peer: Hello,
}

impl Connection {
    /// Connect and exchange hellos, waiting at most `wait` for the service's.
    fn open(socket: &Path, wait: Duration, mine: &Hello) -> std::io::Result<Connection> {
        let stream = wire::connect_own(socket)?;
        stream.set_read_timeout(Some(wait.max(Duration::from_millis(20))))?;
        let mut reader = BufReader::new(stream);
        match exchange(&mut reader, &Line::Hello(mine.clone()))? {
            Line::Hello(peer) => Ok(Connection {
                reader,
                lock_wait: config::get().lock_wait,
                deadline: None,
                peer,
            }),
            Line::Err(e) => Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                e.to_string(),
            )),
            _ => Err(std::io::Error::other(
                "the memory service did not say hello",
            )),
        }
    }

    /// How long the service may wait for the store on a call's behalf, and the latest moment
    /// a call may end (`None`: as long as the work takes, an import of thousands).
    pub fn set_timeout(&mut self, lock_wait: Duration, deadline: Option<Instant>) {
        self.lock_wait = lock_wait;
        self.deadline = deadline;
    }

    fn left(&self) -> Option<Duration> {
        self.deadline.map(|d| {
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(20))
        })
    }

    /// Send `line` and read its answer. The request waits for its turn at most as long as the
    /// store lock would be waited for (and never past the deadline); once the service says it
    /// has started, the answer is waited for until the deadline, if any. A request that never
    /// started is withdrawn: the service does not carry it out.
    fn request(&mut self, line: &Line) -> Result<Line> {
        let queue_limit = match self.left() {
            Some(left) => left.min(self.lock_wait.max(Duration::from_millis(20))),
            None => self.lock_wait.max(Duration::from_millis(20)),
        };
        let stream = self.reader.get_ref();
        let _ = stream.set_read_timeout(Some(queue_limit));
        wire::write_line(self.reader.get_mut(), line)
            .map_err(|e| daemon_err(format!("the memory service did not take the request: {e}")))?;
        let mut started = false;
        loop {
            match read_reply(&mut self.reader) {
                Ok(Line::Started(())) => {
                    started = true;
                    let _ = self.reader.get_ref().set_read_timeout(self.left());
                }
                Ok(answer) => return Ok(answer),
                Err(e) if timed_out(&e) && !started => {
                    // Withdraw: the service skips a request whose client has hung up, unless
                    // its turn came in the meantime (then it says so at once).
                    let stream = self.reader.get_ref();
                    let _ = stream.shutdown(std::net::Shutdown::Write);
                    let _ = stream.set_read_timeout(Some(Duration::from_millis(300)));
                    if let Ok(Line::Started(())) = read_reply(&mut self.reader) {
                        started = true;
                        let _ = self.reader.get_ref().set_read_timeout(self.left());
                        continue;
                    }
                    return Err(unanswered(format!(
                        "the store is busy: its memory service (pid {}) did not get to this request within {:.1}s (another long request, see `wt-memory daemon status`); nothing was done, try again",
                        self.peer.pid,
                        queue_limit.as_secs_f64()
                    )));
                }
                Err(e) if timed_out(&e) => {
                    return Err(unanswered(format!(
                        "the memory service (pid {}) did not finish in time",
                        self.peer.pid
                    )))
                }
                Err(e) => {
                    return Err(daemon_err(format!(
                        "the memory service did not answer: {e}"
                    )))
                }
            }
        }
    }

    pub fn call(&mut self, caller: &Caller, request: &Request) -> Result<Value> {
        let line = Line::Call(Box::new(Envelope {
            caller: caller.clone(),
            lock_wait_ms: self.lock_wait.as_millis() as u64,
            request: request.clone(),
        }));
        let mut answer = self.request(&line)?;
        if let Line::Warned {
            answer: inner,
            warning,
        } = answer
        {
            crate::integrity::set_warning(warning);
            answer = *inner;
        }
        match answer {
            Line::Ok(v) => Ok(v),
            Line::Err(e) => Err(e),
            _ => Err(daemon_err("the memory service answered out of turn")),
        }
    }

    pub fn status(&mut self) -> Result<Status> {
        let _ = self.reader.get_ref().set_read_timeout(Some(HELLO_WAIT));
        match exchange(&mut self.reader, &Line::Control("status".into())) {
            Ok(Line::Ok(v)) => serde_json::from_value(v).map_err(|e| daemon_err(e.to_string())),
            Ok(Line::Err(e)) => Err(e),
            Ok(_) => Err(daemon_err("the memory service answered out of turn")),
            Err(e) => Err(daemon_err(format!(
                "the memory service did not answer: {e}"
            ))),
        }
    }

    /// Ask the service to finish its current request and exit.
    pub fn shutdown(mut self) {
        let _ = self.reader.get_ref().set_read_timeout(Some(HELLO_WAIT));
        let _ = exchange(&mut self.reader, &Line::Control("shutdown".into()));
    }
}

/// What is at a store's socket.
pub enum Found {
    /// Nobody listens (no socket, or a stale one).
    Nothing,
    Service(Connection),
    /// Something listens and does not say hello in time, or is not ours to use.
    Stuck(Error),
}

/// Look at `project`'s socket without starting anything.
pub fn probe(project: &Project, wait: Duration) -> Found {
    let socket = socket_path(project);
    match Connection::open(&socket, wait, &hello_here(project)) {
        Ok(conn) => Found::Service(conn),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            Found::Nothing
        }
        Err(e) if timed_out(&e) => Found::Stuck(not_answering(project, recorded_pid(project))),
        Err(e) => Found::Stuck(unanswered(format!("memory service: {e}"))),
    }
}

/// The running service of `project`, if one answers (never starts one).
pub fn running(project: &Project) -> Option<Connection> {
    match probe(project, HELLO_WAIT) {
        Found::Service(conn) => Some(conn),
        _ => None,
    }
}

/// A connection to `project`'s service, started (detached) when none is running and replaced
/// when it is older or incompatible. Gives up at `deadline`; a service being started goes on
/// starting for the next call. A service that is there and does not answer is reported at
/// once, as is one that exits while starting.
pub fn connect(project: &Project, deadline: Instant) -> Result<Connection> {
    let socket = socket_path(project);
    let mine = hello_here(project);
    let left = || deadline.saturating_duration_since(Instant::now());
    let judged = |conn: Connection| match mine.judge(&conn.peer) {
        Verdict::Use => Ok(Ok(conn)),
        Verdict::Replace => Ok(Err(conn)),
        Verdict::Refuse(why) => Err(unanswered(why)),
    };
    match probe(project, left().min(HELLO_WAIT)) {
        Found::Service(conn) => match judged(conn)? {
            Ok(conn) => return Ok(conn),
            Err(old) => {
                let pid = old.peer.pid;
                old.shutdown();
                wait_gone(pid, deadline);
            }
        },
        Found::Stuck(e) => return Err(e),
        Found::Nothing => {}
    }
    crate::paths::ensure_private_dir(&daemon_dir())?;
    // Whoever takes the spawn lock starts the service; the others wait for its socket.
    let spawn_lock =
        crate::lock::exclusive(&spawn_lock_path(project), Duration::ZERO, Duration::ZERO)?;
    let mut child = None;
    if spawn_lock.is_some() {
        if let Ok(conn) = Connection::open(&socket, left().min(HELLO_WAIT), &mine) {
            if let Ok(conn) = judged(conn)? {
                return Ok(conn);
            }
        }
        child = Some(start(project)?);
    }
    loop {
        match Connection::open(&socket, left().min(HELLO_WAIT), &mine) {
            Ok(conn) => match judged(conn)? {
                Ok(conn) => return Ok(conn),
                Err(_) => {
                    return Err(unanswered(
                        "the memory service just started is not this build's; try again",
                    ))
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(unanswered(e.to_string()))
            }
            Err(e) => {
                if let Some(started) = child.as_mut() {
                    if let Some(why) = started.exited() {
                        return Err(unanswered(format!(
                            "the memory service for {} could not start: {why}",
                            project.store_dir.display()
                        )));
                    }
                }
                if Instant::now() >= deadline {
                    return Err(unanswered(format!(
                        "the memory service for {} is not up yet ({e}); it keeps starting for the next call",
                        project.store_dir.display()
                    )));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

fn wait_gone(pid: u32, deadline: Instant) {
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Stop `project`'s service: asked first; a service that does not answer (frozen, stuck in a
/// request) is sent SIGTERM, then SIGKILL. Every write it acknowledged is in the engine's log.
/// Returns the pid stopped, if any.
pub fn stop(project: &Project) -> Option<u32> {
    let pid = match probe(project, HELLO_WAIT) {
        Found::Service(conn) => {
            let pid = conn.peer.pid;
            conn.shutdown();
            if wait_until_gone(pid, Duration::from_secs(5)) {
                return Some(pid);
            }
            pid
        }
        Found::Nothing => return None,
        Found::Stuck(_) => recorded_pid(project)?,
    };
    for signal in [libc::SIGCONT, libc::SIGTERM] {
        // SAFETY: signalling a pid of this user's service.
        unsafe { libc::kill(pid as i32, signal) };
    }
    if !wait_until_gone(pid, Duration::from_secs(3)) {
        // SAFETY: as above.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        wait_until_gone(pid, Duration::from_secs(3));
    }
    Some(pid)
}

fn wait_until_gone(pid: u32, limit: Duration) -> bool {
    wait_gone(pid, Instant::now() + limit);
    !alive(pid)
}

/// A service this process started: its exit is seen at once, with what it said.
struct Started {
    child: Option<std::process::Child>,
    log: PathBuf,
    /// The log's length before the service started: what it wrote since is its own.
    from: u64,
}

impl Started {
    /// Why it exited, if it has: its status and the first line it logged.
    fn exited(&mut self) -> Option<String> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        let mut said = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            use std::io::Seek;
            let _ = f.seek(std::io::SeekFrom::Start(self.from));
            let _ = f.take(64 * 1024).read_to_string(&mut said);
        }
        let first = said
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| wire::clip(l, 300))
            .unwrap_or_else(|| "it said nothing".into());
        Some(format!("{status}: {first} (log: {})", self.log.display()))
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        // Reap it when it exits while we live (a long-lived MCP server would keep a zombie).
        if let Some(mut child) = self.child.take() {
            std::thread::spawn(move || child.wait());
        }
    }
}

/// Start `wt-memory serve` for `project`, detached (own session, output to its log), with the
/// store root and project name it must serve passed so they cannot be misread.
fn start(project: &Project) -> Result<Started> {
    use std::os::unix::process::CommandExt;
    let bin = config::locate_binary(ENGINE).ok_or_else(|| {
        unanswered(format!(
            "{ENGINE} is neither next to this program nor on PATH"
        ))
    })?;
    let log_file = log_path(project);
    if let Some(dir) = log_file.parent() {
        crate::paths::ensure_private_dir(dir)?;
    }
    let log = crate::paths::open_private_append(&log_file)?;
    let from = log.metadata().map(|m| m.len()).unwrap_or(0);
    let mut cmd = std::process::Command::new(bin);
    if let Some(root) = project.store_dir.parent() {
        cmd.env("WT_MEMORY_HOME", root);
    }
    // `--project=NAME`: a name that starts with `-` is still a value, never a flag.
    cmd.arg(format!("--project={}", project.name))
        .arg("serve")
        .current_dir(&project.cwd)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe; it detaches the service from our terminal and group.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    Ok(Started {
        child: Some(child),
        log: log_file,
        from,
    })
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Requests take turns in arrival order: a ticket queue (a plain mutex lets a late arrival jump
/// ahead of one that has waited longer).
#[derive(Default)]
struct Turns {
    /// (next ticket to hand out, ticket being served)
    tickets: Mutex<(u64, u64)>,
    turn_changed: std::sync::Condvar,
}

struct Turn<'a>(&'a Turns);

impl Turns {
    fn wait(&self) -> Turn<'_> {
        let mut t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        let mine = t.0;
        t.0 += 1;
        while t.1 != mine {
            t = self.turn_changed.wait(t).unwrap_or_else(|e| e.into_inner());
        }
        Turn(self)
    }

    /// Nobody is being served or waiting.
    fn idle(&self) -> bool {
        let t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        t.0 == t.1
    }

    /// A turn now, if nobody is being served or waiting.
    fn try_now(&self) -> Option<Turn<'_>> {
        let mut t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        (t.0 == t.1).then(|| {
            t.0 += 1;
            Turn(self)
        })
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.tickets.lock().unwrap_or_else(|e| e.into_inner()).1 += 1;
        self.0.turn_changed.notify_all();
    }
}

/// How long a new daemon waits for a stopping one to close the store.
const HANDOVER_WAIT: Duration = Duration::from_secs(10);

/// A daemon quiet this long brings the store's files up to date with its log.
const CHECKPOINT_WHEN_QUIET: Duration = Duration::from_secs(1);

struct Shared {
    /// Connections open now (at most [`MAX_CONNECTIONS`]).
    connections: AtomicUsize,
    project: Project,
    turns: Turns,
    /// The store's metrics buffer, shared with `direct`.
    recorder: crate::metrics::Recorder,
    direct: Mutex<Direct>,
    /// The open store's model run and embedding cache (see [`embed_ahead`]).
    embedder: Mutex<Option<Arc<crate::store::Embedder>>>,
    store_dir: PathBuf,
    hello: Hello,
    started: Instant,
    last_request: Mutex<Instant>,
    requests: AtomicU64,
    service: Mutex<ServiceTimes>,
    /// Requests served when the last checkpoint was taken, and whether one is being taken.
    checkpointed_at: AtomicU64,
    checkpointing: AtomicBool,
    shutdown: AtomicBool,
    /// Set once the daemon has stopped accepting: queued requests are turned away.
    closing: AtomicBool,
}

fn log(msg: &str) {
    eprintln!(
        "{} [{}] {msg}",
        crate::store::Store::now(),
        std::process::id()
    );
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn answer(stream: &mut UnixStream, line: &Line) -> std::io::Result<()> {
    match line {
        Line::Err(e) => wire::write_line(stream, &Line::Err(e.clone().clipped(MAX_ERROR_CHARS))),
        line => wire::write_line(stream, line),
    }
}

/// Has the client of `stream` hung up (closed, or withdrawn its request by shutting down its
/// side)? Asked when a request's turn comes: a withdrawn request is not carried out.
fn client_gone(stream: &UnixStream) -> bool {
    use std::os::unix::io::AsRawFd;
    let mut fd = libc::pollfd {
        fd: stream.as_raw_fd(),
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0 && fd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// Counts a service's open connections; one slot per connection thread.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn handle(shared: Arc<Shared>, stream: UnixStream) {
    let _slot = Slot(&shared.connections);
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    if wire::peer_uid(&stream) != Some(wire::my_uid()) {
        log("refused a connection from another user");
        let _ = answer(
            &mut writer,
            &Line::Err(daemon_err("this memory service serves only its own user")),
        );
        return;
    }
    let _ = stream.set_read_timeout(Some(HELLO_READ_LIMIT));
    let mut reader = BufReader::new(stream);
    let mut greeted = false;
    loop {
        let max = if greeted {
            wire::MAX_LINE
        } else {
            wire::MAX_HELLO_LINE
        };
        let bytes = match wire::read_line(&mut reader, max) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                let _ = answer(
                    &mut writer,
                    &Line::Err(daemon_err(format!("memory service: {e}"))),
                );
                return;
            }
            // Silent too long, or gone: the connection is closed (a client reconnects).
            Err(_) => return,
        };
        let parsed = serde_json::from_slice::<Line>(&bytes);
        if !greeted && !matches!(parsed, Ok(Line::Hello(_))) {
            let _ = answer(
                &mut writer,
                &Line::Err(daemon_err(
                    "memory service: say hello first (`{\"hello\": …}`, protocol version 5)",
                )),
            );
            return;
        }
        let reply = match parsed {
            Ok(Line::Hello(_)) => {
                greeted = true;
                let _ = reader.get_ref().set_read_timeout(Some(CONNECTION_IDLE));
                Line::Hello(shared.hello.clone())
            }
            Ok(Line::Control(c)) if c == "status" => Line::Ok(
                serde_json::to_value(Status {
                    pid: std::process::id(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    uptime_secs: shared.started.elapsed().as_secs(),
                    requests: shared.requests.load(Ordering::SeqCst),
                    rss_kb: rss_kb(),
                    idle_exit_secs: config::get().daemon_idle.as_secs(),
                    store: shared.store_dir.clone(),
                    service: shared
                        .service
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .summary(),
                    spooled: crate::spool::count(&shared.project),
                    connections: shared.connections.load(Ordering::SeqCst),
                })
                .unwrap_or_default(),
            ),
            Ok(Line::Control(c)) if c == "shutdown" => {
                shared.shutdown.store(true, Ordering::SeqCst);
                Line::Ok(Value::Null)
            }
            Ok(Line::Call(env)) if matches!(env.request, Request::Record { .. }) => {
                // A metrics record waits for nobody: it joins the buffer the quiet moment writes.
                if bytes.len() > MAX_RECORD_LINE {
                    Line::Err(crate::error::bad_input(format!(
                        "record: {} of metrics in one line; the limit is {}",
                        wire::human_bytes(bytes.len()),
                        wire::human_bytes(MAX_RECORD_LINE)
                    )))
                } else {
                    if let Request::Record { events } = env.request {
                        if shared.recorder.push(events) >= crate::metrics::FLUSH_AT {
                            shared.recorder.flush_or_warn();
                        }
                    }
                    Line::Ok(Value::Null)
                }
            }
            Ok(Line::Call(env)) => {
                drop(bytes);
                embed_ahead(&shared, env.request.texts_to_embed());
                let served = serve_turn(
                    &shared,
                    env.request.name(),
                    env.lock_wait_ms,
                    &mut writer,
                    |direct| {
                        let answer = execute_answer(direct, &env.caller, &env.request);
                        let warning = direct
                            .standing_warning()
                            .filter(|_| !env.request.reports_integrity());
                        (answer, warning)
                    },
                );
                // Records become JSON here, once the store is free for the next request.
                let served = served.map(|(answer, warning)| {
                    let answer = match answer.and_then(Answer::into_value) {
                        Ok(v) => Line::Ok(v),
                        Err(e) => Line::Err(e),
                    };
                    match warning {
                        Some(warning) => Line::Warned {
                            answer: Box::new(answer),
                            warning,
                        },
                        None => answer,
                    }
                });
                match served {
                    Ok(line) => line,
                    Err(Withdrawn) => return,
                    Err(Refused(e)) => Line::Err(e),
                }
            }
            Ok(Line::Forward(call)) => match crate::cli::ForwardedRemember::parse(&call) {
                Err(refused) => Line::Err(refused),
                Ok(remember) => {
                    embed_ahead(&shared, remember.texts_to_embed());
                    let served = serve_turn(
                        &shared,
                        "command_line",
                        call.lock_wait_ms,
                        &mut writer,
                        |direct| match remember.run(direct) {
                            Ok(mut done) => {
                                // Printed last, as the engine binary prints it after the command.
                                if let Some(warning) = direct.standing_warning() {
                                    done.stderr.push_str(&warning);
                                    done.stderr.push('\n');
                                }
                                Line::Ok(serde_json::to_value(done).unwrap_or_default())
                            }
                            Err(e) => Line::Err(e),
                        },
                    );
                    match served {
                        Ok(line) => line,
                        Err(Withdrawn) => return,
                        Err(Refused(e)) => Line::Err(e),
                    }
                }
            },
            Ok(_) => Line::Err(daemon_err("not a request")),
            Err(e) => Line::Err(daemon_err(format!("not a request line: {e}"))),
        };
        if answer(&mut writer, &reply).is_err() {
            return;
        }
    }
}

/// Why a request was not carried out.
enum NotServed {
    /// Its client hung up before its turn: nothing to answer.
    Withdrawn,
    /// The service is stopping: the error to answer.
    Refused(Error),
}
use NotServed::{Refused, Withdrawn};

/// Embed a request's texts (a write's content, a query and its parts) on the connection's own
/// thread, before the request waits for its turn: the model runs while another request holds the
/// store, and the request finds its embeddings in the cache. (The store is not needed for that;
/// only its model run and cache.)
fn embed_ahead(shared: &Shared, texts: Vec<String>) {
    let embedder = shared
        .embedder
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if let Some(embedder) = embedder {
        embedder.prime(&texts.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

/// Serve one request in its turn (one at a time, in arrival order), timed as `op`. When the
/// turn comes, a request whose client has gone is skipped; otherwise the client is told it has
/// started (so it waits for the answer, not for the queue).
fn serve_turn<T>(
    shared: &Shared,
    op: &'static str,
    lock_wait_ms: u64,
    client: &mut UnixStream,
    run: impl FnOnce(&mut Direct) -> T,
) -> std::result::Result<T, NotServed> {
    *shared
        .last_request
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Instant::now();
    shared.requests.fetch_add(1, Ordering::SeqCst);
    let _turn = shared.turns.wait();
    let mut direct = shared.direct.lock().unwrap_or_else(|e| e.into_inner());
    if shared.closing.load(Ordering::SeqCst) {
        return Err(Refused(daemon_err(
            "the memory service is stopping; try again",
        )));
    }
    if client_gone(client) || answer(client, &Line::Started(())).is_err() {
        return Err(Withdrawn);
    }
    direct.set_lock_wait(Duration::from_millis(lock_wait_ms));
    crate::integrity::take_warning();
    let started = Instant::now();
    let answer = run(&mut direct);
    // The store may have been opened, or opened again (restore, repair), by this request.
    *shared.embedder.lock().unwrap_or_else(|e| e.into_inner()) = direct.embedder();
    shared
        .service
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .add(op, started.elapsed().as_secs_f64() * 1000.0);
    Ok(answer)
}

/// `wt-memory serve`: run the daemon of `project` until idle, signalled or replaced.
pub fn serve(project: Project) -> Result<()> {
    crate::paths::ensure_private_dir(&daemon_dir())?;
    let socket = socket_path(&project);
    // The lock is held by a daemon that serves (then this one is not needed) or by one that is
    // on its way out (its socket is gone; it is closing the store): wait for that one.
    let handover = Instant::now() + HANDOVER_WAIT;
    let mut daemon_lock = loop {
        let lock = crate::lock::exclusive(
            &daemon_lock_path(&project),
            Duration::from_millis(50),
            Duration::from_millis(10),
        )?;
        if let Some(lock) = lock {
            break lock;
        }
        if running(&project).is_some() || Instant::now() > handover {
            log("another service serves this store: exiting");
            return Ok(());
        }
    };
    {
        use std::io::Seek;
        daemon_lock.set_len(0)?;
        daemon_lock.rewind()?;
        write!(daemon_lock, "{}", std::process::id())?;
    }
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket)
        .map_err(|e| daemon_err(format!("cannot listen on {}: {e}", socket.display())))?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))?;
    }
    listener.set_nonblocking(true)?;
    let socket_inode = inode(&socket);
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let mut direct = Direct::new(
        project.clone(),
        OpenOptions::default(),
        Holding::UntilDropped,
    );
    // Warm: open the store (when it exists and is free) and load the model before the first
    // request. A busy store is left to the first request, with that request's own wait.
    direct.set_lock_wait(Duration::ZERO);
    if let Err(e) = execute(&mut direct, &Caller::default(), &Request::Warm) {
        log(&format!("warm-up: {e}"));
    }
    let shared = Arc::new(Shared {
        connections: AtomicUsize::new(0),
        project: project.clone(),
        turns: Turns::default(),
        recorder: direct.recorder().clone(),
        embedder: Mutex::new(direct.embedder()),
        direct: Mutex::new(direct),
        store_dir: project.store_dir.clone(),
        hello: hello_here(&project),
        started: Instant::now(),
        last_request: Mutex::new(Instant::now()),
        requests: AtomicU64::new(0),
        service: Mutex::new(ServiceTimes::default()),
        checkpointed_at: AtomicU64::new(0),
        checkpointing: AtomicBool::new(false),
        shutdown: AtomicBool::new(false),
        closing: AtomicBool::new(false),
    });
    log(&format!(
        "serving {} on {} ({})",
        project.store_dir.display(),
        socket.display(),
        shared.hello.build
    ));
    let idle = config::get().daemon_idle;
    let mut checked = Instant::now();
    let mut had_store = false;
    let why = loop {
        wait_readable(&listener, Duration::from_millis(200));
        match listener.accept() {
            Ok((mut stream, _)) => {
                let _ = stream.set_nonblocking(false);
                if shared.connections.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    shared.connections.fetch_sub(1, Ordering::SeqCst);
                    let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
                    let _ = answer(
                        &mut stream,
                        &Line::Err(daemon_err(format!(
                            "the memory service has {MAX_CONNECTIONS} connections open; try again"
                        ))),
                    );
                } else {
                    let mine = shared.clone();
                    let spawned = std::thread::Builder::new()
                        .name("connection".into())
                        .spawn(move || handle(mine, stream));
                    if let Err(e) = spawned {
                        // The slot of the connection that got no thread.
                        shared.connections.fetch_sub(1, Ordering::SeqCst);
                        log(&format!("no thread for a connection: {e}"));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                // Out of descriptors or memory: the connections open now go on being served,
                // and new ones are taken once some close.
                log(&format!("accept failed: {e}; going on"));
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        if STOP.load(Ordering::SeqCst) {
            break "signalled".to_string();
        }
        if shared.shutdown.load(Ordering::SeqCst) {
            break "asked to stop".to_string();
        }
        let quiet = shared
            .last_request
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or_default();
        if quiet >= idle {
            break format!("idle for {}s", quiet.as_secs());
        }
        let served = shared.requests.load(Ordering::SeqCst);
        if quiet >= CHECKPOINT_WHEN_QUIET
            && served != shared.checkpointed_at.load(Ordering::SeqCst)
            && shared.turns.idle()
            && !shared.checkpointing.swap(true, Ordering::SeqCst)
        {
            // On its own thread, and only when no request is queued: the accept loop goes on
            // answering, and a checkpoint never makes a request wait.
            let mine = shared.clone();
            let spawned = std::thread::Builder::new().spawn(move || {
                let shared = mine;
                if let Some(_turn) = shared.turns.try_now() {
                    shared.checkpointed_at.store(served, Ordering::SeqCst);
                    let direct = shared.direct.lock().unwrap_or_else(|e| e.into_inner());
                    let started = Instant::now();
                    match direct.checkpoint() {
                        Ok(true) => log(&format!(
                            "checkpoint in {} ms",
                            started.elapsed().as_millis()
                        )),
                        Ok(false) => {}
                        Err(e) => log(&format!("checkpoint failed: {e}")),
                    }
                }
                shared.recorder.flush_or_warn();
                shared.checkpointing.store(false, Ordering::SeqCst);
            });
            if spawned.is_err() {
                shared.checkpointing.store(false, Ordering::SeqCst);
            }
        }
        if checked.elapsed() >= Duration::from_secs(1) {
            checked = Instant::now();
            if inode(&socket) != socket_inode {
                break "its socket was removed or replaced".to_string();
            }
            // A store deleted under it (a finished demo or test) is not served from memory.
            if project.store_dir.exists() {
                had_store = true;
            } else if had_store {
                break "its store was removed".to_string();
            }
        }
    };
    drop(listener);
    if inode(&socket) == socket_inode {
        let _ = std::fs::remove_file(&socket);
    }
    // Drain: the requests queued before this point are served before the store closes; later
    // ones are told the daemon is stopping (their client retries with a new daemon).
    let turn = shared.turns.wait();
    let mut direct = shared.direct.lock().unwrap_or_else(|e| e.into_inner());
    shared.closing.store(true, Ordering::SeqCst);
    direct.release();
    drop(direct);
    drop(turn);
    log(&format!("exiting: {why}"));
    Ok(())
}

/// Block until a connection is waiting or `timeout` passes (the accept loop's only wait, so a
/// new connection is taken at once).
fn wait_readable(listener: &UnixListener, timeout: Duration) {
    use std::os::unix::io::AsRawFd;
    let mut fd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut fd, 1, timeout.as_millis() as libc::c_int) };
}

fn inode(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| m.ino())
}
