//! The user's engine (`wt-memory serve --engine`): one process per user and runtime folder that
//! loads the model once and serves every store it is asked to open, each on a thread of its own
//! running that store's service ([`serve`]) exactly as a process of its own would: its own
//! socket, daemon lock (one writer per store, fail fast), spool, uid checks, idle close and log.
//! What is shared is the process, and with it the model and its runtime (~60 MB, loaded once:
//! `wt_memory_core::store::model_loads`).
//!
//! - Control socket: `<daemon dir>/engine.sock`, under the same checks as a store's (a private
//!   folder, 0600, a peer of another uid refused before anything is said). A client says hello
//!   (the same [`Hello`], judged the same way: an engine of an older or incompatible build is
//!   asked to stop and replaced as a whole, never run beside a newer one), then asks
//!   `{"open": OpenStore}`; the engine answers once something serves the store's socket.
//! - One engine at a time: it holds `engine.lock` (its pid inside) for its life; clients that
//!   find none start one under `engine.spawn.lock`, naming the first store to open.
//! - A store the engine cannot serve as its client would have it served (another folder of
//!   stores, another configuration: the engine's comes from whoever started it) is answered
//!   [`Opened::Elsewhere`]: the client starts a service of its own for it, as before the engine.
//! - It exits when no store has been open for a short while ([`ENGINE_LINGER`], at most the
//!   stores' idle time: each store already waited its idle time before it closed), when its
//!   socket is removed, when asked to (a newer build), or on SIGTERM/SIGINT, after every store it
//!   serves has drained. Its own lines go to `<state dir>/wt-tools/engine.log`; each store's to
//!   that store's log.

use super::server::{on_signal, serve, STOP};
use super::*;
use std::collections::HashMap;
use wt_memory_base::wire::{canonical_store, engine_lock_path, engine_socket_path};

/// How long an engine with no store open waits for the next before it exits. Short: a store
/// closes only after its own idle time, and the model is worth keeping only for stores.
const ENGINE_LINGER: Duration = Duration::from_secs(2);

/// How long a new engine waits for a stopping one to let go of the engine lock.
const HANDOVER_WAIT: Duration = Duration::from_secs(10);

/// How long the engine waits for a store's service to listen before it answers an `open`.
const OPEN_WAIT: Duration = Duration::from_secs(60);

/// `{"open": OpenStore}`: serve this store (the engine resolves it as `--project=NAME` in `cwd`
/// would, and serves it only if that is the store the client means).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct OpenStore {
    name: String,
    cwd: PathBuf,
    store: PathBuf,
    /// The client's [`config::fingerprint`].
    config: String,
}

/// The engine's answer to an `open`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Opened {
    /// Something serves the store's socket now (this engine, or a service that held it already).
    Served,
    /// Not a store this engine serves as the client would (another folder of stores, another
    /// configuration): the client starts a service of its own for it.
    Elsewhere,
    /// The engine is on its way out: ask again (a new engine is started then).
    Stopping,
}

pub fn engine_log_path() -> PathBuf {
    wt_memory_base::paths::log_dir().join("engine.log")
}

fn spawn_lock_path() -> PathBuf {
    daemon_dir().join("engine.spawn.lock")
}

fn log(msg: &str) {
    eprintln!(
        "{} [{}] {msg}",
        wt_memory_core::store::Store::now(),
        std::process::id()
    );
}

/// A store's service on its thread: its outcome once it has returned.
#[derive(Default)]
struct StoreThread {
    done: Mutex<Option<std::result::Result<(), Error>>>,
}

impl StoreThread {
    fn finished(&self) -> bool {
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }
}

struct Engine {
    hosted: &'static dyn Hosted,
    /// The stores it serves, by canonical store directory.
    stores: Mutex<HashMap<PathBuf, Arc<StoreThread>>>,
    /// Set once it has decided to exit: no store is opened after that.
    closing: AtomicBool,
    shutdown: AtomicBool,
    hello: Hello,
    socket: PathBuf,
}

/// The hello of the engine (and of a client speaking to it): a [`Hello`] whose store is the
/// engine's socket, so the same judgement of builds and models applies.
fn engine_hello() -> Hello {
    Hello::here(
        &engine_socket_path(),
        wt_memory_core::engine_env::engine_assets().map(|a| a.model_dir.clone()),
    )
}

/// `wt-memory serve --engine`: run the user's engine, serving `first` at once, until no store
/// has been open for a while, signalled or replaced.
pub fn serve_engine(first: Project, hosted: &'static dyn Hosted) -> Result<()> {
    wt_memory_base::paths::ensure_private_dir(&daemon_dir())?;
    let socket = engine_socket_path();
    wt_memory_base::wire::ensure_socket_dir(&socket)?;
    let handover = Instant::now() + HANDOVER_WAIT;
    let mut engine_lock = loop {
        let lock = wt_memory_foundation::lock::exclusive(
            &engine_lock_path(),
            Duration::from_millis(50),
            Duration::from_millis(10),
        )?;
        if let Some(lock) = lock {
            break lock;
        }
        // The lock is held by an engine that serves (then it serves `first` too, and this one
        // is not needed) or by one on its way out (its socket is gone): wait for that one.
        if let Some(mut running) = EngineConn::running(HELLO_WAIT) {
            if running.verdict == wire::Verdict::Use {
                running.open(&first, Instant::now() + OPEN_WAIT)?;
            }
            log("another engine runs: exiting");
            return Ok(());
        }
        if Instant::now() > handover {
            return Err(unanswered(
                "the memory engine that holds the engine lock did not let go of it; stop it with `wt-memory daemon stop`",
            ));
        }
    };
    {
        use std::io::Seek;
        engine_lock.set_len(0)?;
        engine_lock.rewind()?;
        write!(engine_lock, "{}", std::process::id())?;
    }
    let listener = wt_memory_base::os::socket::listen(&socket)
        .map_err(|e| daemon_err(format!("cannot listen on {}: {e}", socket.display())))?;
    let identity = wt_memory_base::os::socket::identity(&socket);
    wt_memory_base::os::process::on_stop_signals(on_signal);
    let engine = Arc::new(Engine {
        hosted,
        stores: Mutex::new(HashMap::new()),
        closing: AtomicBool::new(false),
        shutdown: AtomicBool::new(false),
        hello: engine_hello().as_served(),
        socket: socket.clone(),
    });
    // The store it was started for: a store that cannot be served ends the engine with its
    // error, as a service of its own would (the client that started it shows the first line
    // the engine logged, so nothing is logged before).
    if let Err(e) = open_store(&engine, first) {
        let _ = std::fs::remove_file(&socket);
        return Err(e);
    }
    log(&format!(
        "engine on {} ({})",
        socket.display(),
        engine.hello.build
    ));
    let linger = config::get().daemon_idle.min(ENGINE_LINGER);
    let mut last_open = Instant::now();
    let mut checked = Instant::now();
    let why = loop {
        wt_memory_base::os::socket::wait_readable(&listener, Duration::from_millis(200));
        match wt_memory_base::os::socket::accept(&listener) {
            Ok(stream) => {
                let mine = engine.clone();
                let _ = std::thread::Builder::new()
                    .name("engine-connection".into())
                    .spawn(move || handle(mine, stream));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                log(&format!("accept failed: {e}; going on"));
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        if STOP.load(Ordering::SeqCst) {
            break "signalled".to_string();
        }
        if engine.shutdown.load(Ordering::SeqCst) {
            break "asked to stop".to_string();
        }
        {
            let mut stores = engine.stores.lock().unwrap_or_else(|e| e.into_inner());
            stores.retain(|_, t| !t.finished());
            if !stores.is_empty() {
                last_open = Instant::now();
            } else if last_open.elapsed() >= linger {
                // Decided under the lock: an `open` after this is told to ask again.
                engine.closing.store(true, Ordering::SeqCst);
                break format!("no store open for {}s", linger.as_secs());
            }
        }
        if checked.elapsed() >= Duration::from_secs(1) {
            checked = Instant::now();
            if wt_memory_base::os::socket::identity(&socket) != identity {
                break "its socket was removed or replaced".to_string();
            }
        }
    };
    engine.closing.store(true, Ordering::SeqCst);
    drop(listener);
    if wt_memory_base::os::socket::identity(&socket) == identity {
        let _ = std::fs::remove_file(&socket);
    }
    // Every store drains (the requests queued before this point are served) and closes.
    STOP.store(true, Ordering::SeqCst);
    loop {
        let open = engine
            .stores
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .any(|t| !t.finished());
        if !open {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    log(&format!("exiting: {why}"));
    Ok(())
}

/// Serve `project`'s store on a thread of its own (unless it is served already), and wait until
/// something serves its socket: this thread's service, or one that held the store already.
fn open_store(engine: &Engine, project: Project) -> Result<Opened> {
    let socket = socket_path(&project);
    let store_dir = project.store_dir.clone();
    let (thread, spawned) = {
        let mut stores = engine.stores.lock().unwrap_or_else(|e| e.into_inner());
        if engine.closing.load(Ordering::SeqCst) {
            return Ok(Opened::Stopping);
        }
        let key = canonical_store(&project.store_dir);
        match stores.get(&key) {
            Some(t) if !t.finished() => (t.clone(), false),
            _ => {
                let thread = Arc::new(StoreThread::default());
                let (mine, hosted, name) = (thread.clone(), engine.hosted, project.name.clone());
                let spawned = std::thread::Builder::new()
                    .name(format!("store {name}"))
                    .spawn(move || {
                        let store = project.store_dir.clone();
                        let outcome = serve(project, hosted);
                        match &outcome {
                            Ok(()) => log(&format!("closed {}", store.display())),
                            Err(e) => log(&format!("{}: {e}", store.display())),
                        }
                        *mine.done.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
                    });
                if let Err(e) = spawned {
                    return Err(daemon_err(format!("no thread for a store: {e}")));
                }
                stores.insert(key, thread.clone());
                (thread, true)
            }
        }
    };
    let deadline = Instant::now() + OPEN_WAIT;
    loop {
        if wt_memory_base::os::socket::connect_own(&socket).is_ok() {
            if spawned {
                log(&format!("opened {}", store_dir.display()));
            }
            return Ok(Opened::Served);
        }
        if let Some(outcome) = thread
            .done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            // It returned before it listened: the store's error, or another service took it
            // (then gone again, or the socket would answer).
            outcome?;
            return Err(unanswered(
                "the memory service stopped before it listened; try again",
            ));
        }
        if Instant::now() >= deadline {
            return Err(unanswered(format!(
                "the memory service for {} did not listen within {}s",
                socket.display(),
                OPEN_WAIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One client of the engine: hello, then `open`, `status` or `shutdown` lines.
fn handle(engine: Arc<Engine>, stream: Stream) {
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    if let Err(who) = wt_memory_base::os::socket::admit(&stream, &engine.socket) {
        log(&format!("refused a connection from {who}"));
        let _ = wire::write_line(
            &mut writer,
            &Line::Err(daemon_err("this memory engine serves only its own user")),
        );
        return;
    }
    let _ = stream.set_read_timeout(Some(HELLO_READ_LIMIT));
    let mut reader = BufReader::new(stream);
    let mut greeted = false;
    loop {
        // Every line to the engine is small: an open names a store.
        let bytes = match wire::read_line(&mut reader, wire::MAX_HELLO_LINE) {
            Ok(Some(bytes)) => bytes,
            _ => return,
        };
        let reply = match serde_json::from_slice::<Line>(&bytes) {
            Ok(Line::Hello(_)) => {
                greeted = true;
                let _ = reader.get_ref().set_read_timeout(Some(CONNECTION_IDLE));
                Line::Hello(engine.hello.clone())
            }
            _ if !greeted => Line::Err(daemon_err("memory engine: say hello first")),
            Ok(Line::Open(open)) => match open_for(&engine, open) {
                Ok(opened) => Line::Ok(serde_json::to_value(opened).unwrap_or_default()),
                Err(e) => Line::Err(e.clipped(MAX_ERROR_CHARS)),
            },
            Ok(Line::Control(c)) if c == "shutdown" => {
                engine.shutdown.store(true, Ordering::SeqCst);
                Line::Ok(Value::Null)
            }
            _ => Line::Err(daemon_err("memory engine: not a request")),
        };
        if wire::write_line(&mut writer, &reply).is_err() || !greeted {
            return;
        }
    }
}

/// Open the store a client asked for, if this engine serves it as the client would.
fn open_for(engine: &Engine, open: OpenStore) -> Result<Opened> {
    if open.config != config::fingerprint() {
        return Ok(Opened::Elsewhere);
    }
    let project = wt_memory_base::project::resolve(&open.cwd, Some(&open.name));
    if canonical_store(&project.store_dir) != canonical_store(&open.store) {
        return Ok(Opened::Elsewhere);
    }
    open_store(engine, project)
}

/// A client's connection to the user's engine.
pub(crate) struct EngineConn {
    reader: BufReader<Stream>,
    pub(crate) verdict: wire::Verdict,
    pub(crate) pid: u32,
}

/// What is at the engine's socket.
enum EngineFound {
    Nothing,
    Engine(EngineConn),
    Stuck(Error),
}

impl EngineConn {
    fn probe(wait: Duration) -> EngineFound {
        let stream = match wt_memory_base::os::socket::connect_own(&engine_socket_path()) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return EngineFound::Stuck(unanswered(format!("memory engine: {e}")))
            }
            Err(_) => return EngineFound::Nothing,
        };
        let _ = stream.set_read_timeout(Some(wait.max(Duration::from_millis(20))));
        let mut reader = BufReader::new(stream);
        let mine = engine_hello();
        let said = exchange(&mut reader, &Line::Hello(mine.clone()));
        match said {
            Ok(Line::Hello(peer)) => EngineFound::Engine(EngineConn {
                reader,
                verdict: mine.judge(&peer),
                pid: peer.pid,
            }),
            Ok(Line::Err(e)) => EngineFound::Stuck(e),
            Err(e) if timed_out(&e) => {
                let pid = wt_memory_foundation::lock::holder_pid(&engine_lock_path());
                let who = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
                EngineFound::Stuck(unanswered(format!(
                    "the memory engine{who} is not answering; stop it with `wt-memory daemon stop`"
                )))
            }
            // Gone while we spoke (on its way out).
            _ => EngineFound::Nothing,
        }
    }

    fn running(wait: Duration) -> Option<EngineConn> {
        match EngineConn::probe(wait) {
            EngineFound::Engine(conn) => Some(conn),
            _ => None,
        }
    }

    /// Ask it to serve `project`'s store; waits for its answer until `deadline`.
    fn open(&mut self, project: &Project, deadline: Instant) -> Result<Opened> {
        let wait = deadline.saturating_duration_since(Instant::now());
        let _ = self
            .reader
            .get_ref()
            .set_read_timeout(Some(wait.max(Duration::from_millis(20))));
        let line = Line::Open(OpenStore {
            name: project.name.clone(),
            cwd: project.cwd.clone(),
            store: project.store_dir.clone(),
            config: config::fingerprint().to_string(),
        });
        match exchange(&mut self.reader, &line) {
            Ok(Line::Ok(v)) => serde_json::from_value(v)
                .map_err(|e| daemon_err(format!("the memory engine answered nonsense: {e}"))),
            Ok(Line::Err(e)) => Err(e),
            Ok(_) => Err(daemon_err("the memory engine answered out of turn")),
            Err(e) if timed_out(&e) => Err(unanswered(format!(
                "the memory service for {} is not up yet; it keeps starting for the next call",
                project.store_dir.display()
            ))),
            Err(e) => Err(daemon_err(format!("the memory engine did not answer: {e}"))),
        }
    }

    /// Ask it to stop (every store it serves drains first).
    fn shutdown(mut self) {
        let _ = self.reader.get_ref().set_read_timeout(Some(HELLO_WAIT));
        let _ = exchange(&mut self.reader, &Line::Control("shutdown".into()));
    }
}

/// The pid of the user's engine when it is there and does not answer (frozen): `daemon stop`
/// ends it, as it ends a store's frozen service.
pub(crate) fn stuck_pid() -> Option<u32> {
    match EngineConn::probe(HELLO_WAIT) {
        EngineFound::Stuck(_) => wt_memory_foundation::lock::holder_pid(&engine_lock_path())
            .filter(|pid| wt_memory_base::os::process::alive(*pid)),
        _ => None,
    }
}

/// One line out, one line back.
fn exchange(reader: &mut BufReader<Stream>, line: &Line) -> std::io::Result<Line> {
    wire::write_line(reader.get_mut(), line)?;
    match wire::read_line(reader, wire::MAX_LINE)? {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the memory engine closed the connection",
        )),
    }
}

/// How a client had its store opened.
pub(crate) enum Asked {
    /// By the engine that runs (or by a service that held the store already).
    Served,
    /// By nobody yet: no engine runs, and this client holds the engine's spawn lock, to start
    /// one (naming the store, which it opens at its start) and hold the lock until it has
    /// connected (racing clients wait for this engine).
    Start(std::fs::File),
    /// Not by the engine: the client starts a service of its own for the store.
    Elsewhere,
}

/// Have the user's engine serve `project`'s store: the running one, replaced first when it is
/// of an older or incompatible build, or one started now. Gives up at `deadline`.
pub(crate) fn ask(project: &Project, deadline: Instant) -> Result<Asked> {
    let left = || deadline.saturating_duration_since(Instant::now());
    loop {
        match EngineConn::probe(left().min(HELLO_WAIT)) {
            EngineFound::Engine(mut conn) => match conn.verdict.clone() {
                wire::Verdict::Use => match conn.open(project, deadline)? {
                    Opened::Served => return Ok(Asked::Served),
                    Opened::Elsewhere => return Ok(Asked::Elsewhere),
                    Opened::Stopping => {}
                },
                wire::Verdict::Replace => {
                    // Replaced as a whole: it drains and exits, then ours starts (it waits for
                    // the old one's engine lock), so two builds never serve at once.
                    let pid = conn.pid;
                    conn.shutdown();
                    wait_gone(pid, deadline);
                }
                wire::Verdict::Refuse(why) => return Err(unanswered(why)),
            },
            EngineFound::Stuck(e) => return Err(e),
            EngineFound::Nothing => {
                let lock = wt_memory_foundation::lock::exclusive(
                    &spawn_lock_path(),
                    Duration::ZERO,
                    Duration::ZERO,
                )?;
                if let Some(lock) = lock {
                    if EngineConn::running(left().min(HELLO_WAIT)).is_none() {
                        return Ok(Asked::Start(lock));
                    }
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(unanswered(format!(
                "the memory service for {} is not up yet; it keeps starting for the next call",
                project.store_dir.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
