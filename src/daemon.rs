//! The resident per-project service, `wt-memory serve`: one process owns a project's store and
//! keeps it (and the embedding model) open, so a hook, an MCP call or a CLI command costs a
//! socket round trip instead of an engine open and a model load.
//!
//! - Transport: a Unix socket `<runtime dir>/daemon/<project>.sock` (directory 0700, socket 0600);
//!   a connection from another uid is refused (`SO_PEERCRED`).
//! - Protocol (version [`PROTOCOL`]): one JSON object per line. The client opens with
//!   `{"hello": Hello}` and the daemon answers with its own; then each line is
//!   `{"call": {"caller", "lock_wait_ms", "request"}}` (a [`Request`]) answered by `{"ok": …}`
//!   or `{"err": Error}`, a command line the `wt-memory` front forwards (`{"forward": Forward}`,
//!   see [`wt_memory_base::forward`]), or a control line (`{"control": "status" | "shutdown"}`).
//! - One daemon per store: it holds `<project>.daemon.lock` for its life. Clients that find no
//!   daemon start one under `<project>.spawn.lock`, so racing clients start exactly one. A stale
//!   socket, a daemon killed with -9, or one of another build or model (after an upgrade) is
//!   replaced.
//! - Requests run one at a time, in arrival order, through [`crate::client::execute`] on the
//!   store it keeps open: a write is answered once the engine has it.
//! - It exits after [`config::Config::daemon_idle`] without requests, when its socket is removed,
//!   or on SIGTERM/SIGINT (after the request in progress). Its log is
//!   `<state dir>/wt-tools/daemon-<project>.log`.

use crate::client::{execute, execute_answer, Answer, Direct, Holding, Request};
use crate::config;
use crate::error::{Error, Result};
use crate::ops::{Caller, OpenOptions};
use crate::project::Project;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wt_memory_base::wire::{self, daemon_dir, Forward, ENGINE};
pub use wt_memory_base::wire::{Hello, PROTOCOL};

pub fn socket_path(project: &Project) -> PathBuf {
    wire::socket_path(&project.name)
}

fn spawn_lock_path(project: &Project) -> PathBuf {
    daemon_dir().join(format!("{}.spawn.lock", project.name))
}

fn daemon_lock_path(project: &Project) -> PathBuf {
    daemon_dir().join(format!("{}.daemon.lock", project.name))
}

pub fn log_path(project: &Project) -> PathBuf {
    crate::paths::log_dir().join(format!("daemon-{}.log", project.name))
}

/// What this process says on a connection: the daemon it would start.
fn hello_here() -> Hello {
    Hello::here(config::engine_assets().map(|a| a.model_dir.clone()))
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
    format!(
        "memory daemon pid {}, up {}s, {} MB, {} requests served, wt-memory {}, exits after {}s idle",
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

/// One line out, one line back.
fn exchange(reader: &mut BufReader<UnixStream>, line: &Line) -> std::io::Result<Line> {
    let mut bytes = serde_json::to_vec(line)?;
    bytes.push(b'\n');
    reader.get_mut().write_all(&bytes)?;
    let mut answer = String::new();
    if reader.read_line(&mut answer)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the daemon closed the connection",
        ));
    }
    serde_json::from_str(&answer).map_err(std::io::Error::other)
}

/// A client's connection to a project's daemon.
pub struct Connection {
    reader: BufReader<UnixStream>,
    lock_wait: Duration,
    /// What this side said: the daemon it would start itself.
    mine: Hello,
    pub peer: Hello,
}

impl Connection {
    fn open(socket: &Path, timeout: Duration) -> std::io::Result<Connection> {
        let stream = UnixStream::connect(socket)?;
        stream.set_read_timeout(Some(timeout.max(Duration::from_millis(50))))?;
        let mut reader = BufReader::new(stream);
        let mine = hello_here();
        match exchange(&mut reader, &Line::Hello(mine.clone()))? {
            Line::Hello(peer) => Ok(Connection {
                reader,
                lock_wait: config::get().lock_wait,
                mine,
                peer,
            }),
            _ => Err(std::io::Error::other("the daemon did not say hello")),
        }
    }

    /// Is the daemon the one this process would start (same protocol, binary and model)?
    fn current(&self) -> bool {
        self.mine.agrees_with(&self.peer)
    }

    /// How long the daemon may wait for the store on a call's behalf, and how long the call may
    /// take (`deadline`: a hook's; `None`: as long as the work takes, an import of thousands).
    pub fn set_timeout(&mut self, lock_wait: Duration, deadline: Option<Instant>) {
        self.lock_wait = lock_wait;
        let limit = deadline.map(|d| {
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(50))
        });
        let _ = self.reader.get_ref().set_read_timeout(limit);
    }

    pub fn call(&mut self, caller: &Caller, request: &Request) -> Result<Value> {
        let line = Line::Call(Box::new(Envelope {
            caller: caller.clone(),
            lock_wait_ms: self.lock_wait.as_millis() as u64,
            request: request.clone(),
        }));
        let mut answer = exchange(&mut self.reader, &line)
            .map_err(|e| daemon_err(format!("the memory daemon did not answer: {e}")))?;
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
            _ => Err(daemon_err("the daemon answered out of turn")),
        }
    }

    pub fn status(&mut self) -> Result<Status> {
        match exchange(&mut self.reader, &Line::Control("status".into())) {
            Ok(Line::Ok(v)) => serde_json::from_value(v).map_err(|e| daemon_err(e.to_string())),
            Ok(Line::Err(e)) => Err(e),
            Ok(_) => Err(daemon_err("the daemon answered out of turn")),
            Err(e) => Err(daemon_err(format!("the memory daemon did not answer: {e}"))),
        }
    }

    /// Ask the daemon to finish its current request and exit.
    pub fn shutdown(mut self) {
        let _ = exchange(&mut self.reader, &Line::Control("shutdown".into()));
    }
}

/// The running daemon of `project`, if any (never starts one).
pub fn running(project: &Project) -> Option<Connection> {
    Connection::open(&socket_path(project), Duration::from_secs(5)).ok()
}

/// A connection to `project`'s daemon, started (detached) when none is running and replaced
/// when it is not the current build. Gives up at `deadline`; a daemon being started goes on
/// starting for the next call.
pub fn connect(project: &Project, deadline: Instant) -> Result<Connection> {
    let socket = socket_path(project);
    let left = || deadline.saturating_duration_since(Instant::now());
    if let Ok(conn) = Connection::open(&socket, left()) {
        if conn.current() {
            return Ok(conn);
        }
        let pid = conn.peer.pid;
        conn.shutdown();
        wait_gone(pid, deadline);
    }
    crate::paths::ensure_private_dir(&daemon_dir())?;
    // Whoever takes the spawn lock starts the daemon; the others wait for its socket.
    let spawn_lock =
        crate::lock::exclusive(&spawn_lock_path(project), Duration::ZERO, Duration::ZERO)?;
    if spawn_lock.is_some() {
        if let Ok(conn) = Connection::open(&socket, left()) {
            return Ok(conn);
        }
        start(project)?;
    }
    loop {
        match Connection::open(&socket, left()) {
            Ok(conn) => return Ok(conn),
            Err(e) if Instant::now() >= deadline => {
                return Err(daemon_err(format!(
                    "the memory daemon is not up yet ({e}); it keeps starting for the next call"
                )))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
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

/// Start `wt-memory serve` for `project`, detached (own session, output to its log).
fn start(project: &Project) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let bin = config::locate_binary(ENGINE).ok_or_else(|| {
        daemon_err(format!(
            "{ENGINE} is neither next to this program nor on PATH"
        ))
    })?;
    let log_file = log_path(project);
    if let Some(dir) = log_file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_file)?;
    let mut cmd = std::process::Command::new(bin);
    cmd.args(["--project", &project.name, "serve"])
        .current_dir(&project.cwd)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe; it detaches the daemon from our terminal and group.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    // Reap it when it exits while we live (a long-lived MCP server would keep a zombie).
    std::thread::spawn(move || child.wait());
    Ok(())
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

fn peer_uid(stream: &UnixStream) -> Option<u32> {
    use std::os::unix::io::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a properly sized ucred.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

fn answer(stream: &mut UnixStream, line: &Line) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line)?;
    bytes.push(b'\n');
    stream.write_all(&bytes)
}

fn handle(shared: Arc<Shared>, stream: UnixStream) {
    // SAFETY: getuid has no preconditions.
    let me = unsafe { libc::getuid() };
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    if peer_uid(&stream) != Some(me) {
        log("refused a connection from another user");
        let _ = answer(
            &mut writer,
            &Line::Err(daemon_err("this memory daemon serves only its own user")),
        );
        return;
    }
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let reply = match serde_json::from_str::<Line>(&line) {
            Ok(Line::Hello(_)) => Line::Hello(shared.hello.clone()),
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
                })
                .unwrap_or_default(),
            ),
            Ok(Line::Control(c)) if c == "shutdown" => {
                shared.shutdown.store(true, Ordering::SeqCst);
                Line::Ok(Value::Null)
            }
            // A metrics record waits for nobody: it joins the buffer the quiet moment writes.
            Ok(Line::Call(env)) if matches!(env.request, Request::Record { .. }) => {
                if let Request::Record { events } = env.request {
                    if shared.recorder.push(events) >= crate::metrics::FLUSH_AT {
                        shared.recorder.flush_or_warn();
                    }
                }
                Line::Ok(Value::Null)
            }
            Ok(Line::Call(env)) => {
                embed_ahead(&shared, env.request.texts_to_embed());
                let served = serve_turn(&shared, env.request.name(), env.lock_wait_ms, |direct| {
                    let answer = execute_answer(direct, &env.caller, &env.request);
                    let warning = direct
                        .standing_warning()
                        .filter(|_| !env.request.reports_integrity());
                    (answer, warning)
                });
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
                served.unwrap_or_else(Line::Err)
            }
            Ok(Line::Forward(call)) => match crate::cli::ForwardedRemember::parse(&call) {
                Err(refused) => Line::Err(refused),
                Ok(remember) => {
                    embed_ahead(&shared, remember.texts_to_embed());
                    let served = serve_turn(&shared, "command_line", call.lock_wait_ms, |direct| {
                        match remember.run(direct) {
                            Ok(mut done) => {
                                // Printed last, as the engine binary prints it after the command.
                                if let Some(warning) = direct.standing_warning() {
                                    done.stderr.push_str(&warning);
                                    done.stderr.push('\n');
                                }
                                Line::Ok(serde_json::to_value(done).unwrap_or_default())
                            }
                            Err(e) => Line::Err(e),
                        }
                    });
                    served.unwrap_or_else(Line::Err)
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

/// Serve one request in its turn (one at a time, in arrival order), timed as `op`. Refused (the
/// error to answer) when the daemon is stopping.
fn serve_turn<T>(
    shared: &Shared,
    op: &'static str,
    lock_wait_ms: u64,
    run: impl FnOnce(&mut Direct) -> T,
) -> std::result::Result<T, Error> {
    *shared
        .last_request
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Instant::now();
    shared.requests.fetch_add(1, Ordering::SeqCst);
    let _turn = shared.turns.wait();
    let mut direct = shared.direct.lock().unwrap_or_else(|e| e.into_inner());
    if shared.closing.load(Ordering::SeqCst) {
        return Err(daemon_err("the memory daemon is stopping; try again"));
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
    let _daemon_lock = loop {
        let lock = crate::lock::exclusive(
            &daemon_lock_path(&project),
            Duration::from_millis(50),
            Duration::from_millis(10),
        )?;
        if let Some(lock) = lock {
            break lock;
        }
        if Connection::open(&socket, Duration::from_secs(1)).is_ok() || Instant::now() > handover {
            log("another daemon serves this store: exiting");
            return Ok(());
        }
    };
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
        turns: Turns::default(),
        recorder: direct.recorder().clone(),
        embedder: Mutex::new(direct.embedder()),
        direct: Mutex::new(direct),
        store_dir: project.store_dir.clone(),
        hello: hello_here(),
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
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let shared = shared.clone();
                std::thread::spawn(move || handle(shared, stream));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => break format!("accept failed: {e}"),
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
            let shared = shared.clone();
            std::thread::spawn(move || {
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
