//! The service itself: `wt-memory serve`'s accept loop, a connection's lines, a request's turn,
//! checkpoints, idle exit and the drain at the end.

use super::turns::Turns;
use super::*;

/// Set by SIGTERM/SIGINT (or the engine's shutdown): every store this process serves drains and
/// closes.
pub(crate) static STOP: AtomicBool = AtomicBool::new(false);

pub(crate) extern "C" fn on_signal(_: wt_memory_base::os::process::SignalNumber) {
    STOP.store(true, Ordering::SeqCst);
}

/// Stores this process serves now (one for `wt-memory serve`, any number in the user's engine).
pub(crate) static SERVING: AtomicUsize = AtomicUsize::new(0);

/// Counts a store in [`SERVING`] while its service runs.
struct Serving;

impl Serving {
    fn new() -> Serving {
        SERVING.fetch_add(1, Ordering::SeqCst);
        Serving
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        SERVING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How long a new daemon waits for a stopping one to close the store.
const HANDOVER_WAIT: Duration = Duration::from_secs(10);

/// A daemon quiet this long brings the store's files up to date with its log.
const CHECKPOINT_WHEN_QUIET: Duration = Duration::from_secs(1);

struct Shared {
    /// Set once the engine the service opened at start has finished opening.
    engine: Option<wt_memory_core::store::EngineWaiter>,
    /// The fronts it hosts: forwarded command lines and hook events.
    hosted: &'static dyn Hosted,
    /// Connections open now (at most [`MAX_CONNECTIONS`]).
    connections: AtomicUsize,
    /// Connections accepted since the start.
    accepted: AtomicU64,
    project: Project,
    turns: Turns,
    /// The store's metrics buffer, shared with `direct`.
    recorder: wt_memory_ops::metrics::Recorder,
    direct: Mutex<Direct>,
    /// The open store's model run and embedding cache (see [`embed_ahead`]).
    embedder: Mutex<Option<Arc<wt_memory_core::store::Embedder>>>,
    store_dir: PathBuf,
    /// Where it listens (a client is admitted by what is there: `os::socket::admit`).
    socket: PathBuf,
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

/// A line in the store's own log (`log_path`): a process may serve several stores (the user's
/// engine), so each store's lines go to its file, not to the process's output.
fn log(project: &Project, msg: &str) {
    let line = format!(
        "{} [{}] {msg}\n",
        wt_memory_core::store::Store::now(),
        std::process::id()
    );
    let written = wt_memory_base::paths::open_private_append(&log_path(project))
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if written.is_err() {
        eprint!("{}: {line}", store_key(&project.store_dir));
    }
}

fn answer(stream: &mut Stream, line: &Line) -> std::io::Result<()> {
    match line {
        Line::Err(e) => wire::write_line(stream, &Line::Err(e.clone().clipped(MAX_ERROR_CHARS))),
        line => wire::write_line(stream, line),
    }
}

/// Counts a service's open connections; one slot per connection thread.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn handle(shared: Arc<Shared>, stream: Stream) {
    let _slot = Slot(&shared.connections);
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    if let Err(who) = wt_memory_base::os::socket::admit(&stream, &shared.socket) {
        log(&shared.project, &format!("refused a connection from {who}"));
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
                &Line::Err(daemon_err(format!(
                    "memory service: say hello first (`{{\"hello\": …}}`, protocol version {})",
                    wire::PROTOCOL
                ))),
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
                    rss_kb: wt_memory_base::os::process::resident_kb(),
                    idle_exit_secs: config::get().daemon_idle.as_secs(),
                    store: shared.store_dir.clone(),
                    service: shared
                        .service
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .summary(),
                    spooled: wt_memory_ops::spool::count(&shared.project),
                    connections: shared.connections.load(Ordering::SeqCst),
                    accepted: shared.accepted.load(Ordering::SeqCst),
                    stores_served: SERVING.load(Ordering::SeqCst),
                    model_loads: wt_memory_core::store::model_loads(),
                })
                .unwrap_or_default(),
            ),
            Ok(Line::Control(c)) if c == "shutdown" => {
                shared.shutdown.store(true, Ordering::SeqCst);
                Line::Ok(Value::Null)
            }
            Ok(Line::Call(env))
                if env
                    .request
                    .0
                    .max_line()
                    .is_some_and(|max| bytes.len() > max) =>
            {
                let max = env.request.0.max_line().unwrap_or_default();
                Line::Err(wt_memory_foundation::error::bad_input(format!(
                    "{}: {} in one line; the limit is {}",
                    env.request.0.name(),
                    wire::human_bytes(bytes.len()),
                    wire::human_bytes(max)
                )))
            }
            Ok(Line::Call(env)) => {
                drop(bytes);
                // From the socket: checked here, at the boundary (a hook this service runs was
                // checked by its client, in this process).
                let served = env.request.0.validate().map_err(Refused).and_then(|()| {
                    serve_call(
                        &shared,
                        &env.caller,
                        env.lock_wait_ms,
                        env.request.0.as_ref(),
                        &mut writer,
                    )
                });
                match served {
                    Ok(served) => served.into_line(),
                    Err(Withdrawn | Late) => return,
                    Err(Refused(e)) => Line::Err(e),
                }
            }
            Ok(Line::Hook(call)) => {
                drop(bytes);
                // The hook's memory calls take their turns with other clients' requests,
                // through `Local`: the same path, without a connection back to this service.
                let started = Instant::now();
                // A hook is a request, whether or not it asks memory: the service is in use.
                *shared
                    .last_request
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = started;
                let done = shared.hosted.hook(&call, Local::new(&shared));
                if done.handled {
                    shared
                        .service
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .add("hook", started.elapsed().as_secs_f64() * 1000.0);
                }
                Line::Ok(serde_json::to_value(done).unwrap_or_default())
            }
            Ok(Line::Forward(call)) => match shared.hosted.forwarded(&call) {
                Err(refused) => Line::Err(refused),
                Ok(remember) => {
                    embed_ahead(&shared, remember.texts_to_embed());
                    wait_for_engine_unless(&shared, remember.answered_from_view(), None);
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
                        Err(Withdrawn | Late) => return,
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
    /// Its turn did not come by the requester's deadline (a hook's budget): nothing was done.
    Late,
    /// The error to answer: an invalid request, or the service is stopping.
    Refused(Error),
}
use NotServed::{Late, Refused, Withdrawn};

/// Whoever is waiting for a request: a client on the socket, or a hook this service runs
/// ([`Local`]).
trait Requester {
    /// The request's turn has come: tell the requester, unless it has withdrawn the request
    /// (then `false`, and the request is not carried out).
    fn start(&mut self) -> bool;

    /// The latest moment its turn may come (a socket client withdraws by hanging up instead).
    fn turn_by(&self) -> Option<Instant> {
        None
    }
}

impl Requester for Stream {
    fn start(&mut self) -> bool {
        !wt_memory_base::os::socket::peer_hung_up(self) && answer(self, &Line::Started(())).is_ok()
    }
}

/// A request carried out: its answer as made (redacted by [`Made::shown`] once the store is free
/// for the next request), and the store's standing warning to go with it.
struct Served {
    answer: Result<Made>,
    warning: Option<String>,
}

impl Served {
    /// The answer line for a socket client: JSON here, at the socket.
    fn into_line(self) -> Line {
        let answer = match self.answer.and_then(|a| a.shown().into_value()) {
            Ok(v) => Line::Ok(v),
            Err(e) => Line::Err(e),
        };
        match self.warning {
            Some(warning) => Line::Warned {
                answer: Box::new(answer),
                warning,
            },
            None => answer,
        }
    }
}

/// Carry out one request as the service does for every requester: a metrics record joins the
/// buffer and waits for nobody; anything else has its texts embedded ahead, waits for the engine
/// if the ranking view cannot answer it, and runs in its turn.
fn serve_call(
    shared: &Shared,
    caller: &Caller,
    lock_wait_ms: u64,
    request: &dyn Request,
    requester: &mut impl Requester,
) -> std::result::Result<Served, NotServed> {
    if let Some(answer) = request.at_once(&shared.recorder) {
        return Ok(Served {
            answer,
            warning: None,
        });
    }
    embed_ahead_given(shared, request.texts_to_embed(), request.embedded());
    if !wait_for_engine_unless(shared, request.answered_from_view(), requester.turn_by()) {
        return Err(Late);
    }
    serve_turn(shared, request.name(), lock_wait_ms, requester, |direct| {
        let answer = request.run(direct, caller);
        let warning = direct
            .standing_warning()
            .filter(|_| !request.reports_integrity());
        Served { answer, warning }
    })
}

/// Embed a request's texts (a write's content, a query and its parts) on the connection's own
/// thread, before the request waits for its turn: the model runs while another request holds the
/// store, and the request finds its embeddings in the cache. (The store is not needed for that;
/// only its model run and cache.)
fn embed_ahead(shared: &Shared, texts: Vec<String>) {
    embed_ahead_given(shared, texts, &[]);
}

/// [`embed_ahead`], taking the embeddings the caller computed already with the same model
/// ([`wt_memory_ops::Operation::embedded`]) instead of running it again.
fn embed_ahead_given(shared: &Shared, texts: Vec<String>, given: &[Vec<f32>]) {
    if !given.is_empty() {
        if let Some(embedder) = shared
            .embedder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            embedder.adopt(&texts, given);
        }
    }
    embed_ahead_only(shared, texts);
}

fn embed_ahead_only(shared: &Shared, texts: Vec<String>) {
    let embedder = shared
        .embedder
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if let Some(embedder) = embedder {
        embedder.prime(&texts.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

/// While the engine is still opening, a request the ranking view cannot answer waits for it
/// here, before its turn: in its turn it would hold up every hook behind it (at 10^5 memories a
/// burst's hooks waited past their budget behind writes waiting for the engine; measured:
/// docs/performance.md, "2026-11-27, midday: 10^5 memories, second session").
fn wait_for_engine_unless(
    shared: &Shared,
    answered_from_view: bool,
    deadline: Option<Instant>,
) -> bool {
    match (answered_from_view, &shared.engine) {
        (false, Some(engine)) => engine.wait_until(deadline),
        _ => true,
    }
}

/// Serve one request in its turn (one at a time, in arrival order), timed as `op`. When the
/// turn comes, a request whose client has gone is skipped; otherwise the client is told it has
/// started (so it waits for the answer, not for the queue).
fn serve_turn<T>(
    shared: &Shared,
    op: &'static str,
    lock_wait_ms: u64,
    client: &mut impl Requester,
    run: impl FnOnce(&mut Direct) -> T,
) -> std::result::Result<T, NotServed> {
    *shared
        .last_request
        .lock()
        .unwrap_or_else(|e| e.into_inner()) = Instant::now();
    shared.requests.fetch_add(1, Ordering::SeqCst);
    let Some(_turn) = shared.turns.wait_until(client.turn_by()) else {
        return Err(Late);
    };
    let mut direct = shared.direct.lock().unwrap_or_else(|e| e.into_inner());
    if shared.closing.load(Ordering::SeqCst) {
        return Err(Refused(daemon_err(
            "the memory service is stopping; try again",
        )));
    }
    if !client.start() {
        return Err(Withdrawn);
    }
    direct.set_lock_wait(Duration::from_millis(lock_wait_ms));
    wt_memory_foundation::integrity::take_warning();
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
pub fn serve(project: Project, hosted: &'static dyn Hosted) -> Result<()> {
    wt_memory_base::paths::ensure_private_dir(&daemon_dir())?;
    let socket = socket_path(&project);
    wt_memory_base::wire::ensure_socket_dir(&socket)?;
    // The lock is held by a daemon that serves (then this one is not needed) or by one that is
    // on its way out (its socket is gone; it is closing the store): wait for that one.
    let handover = Instant::now() + HANDOVER_WAIT;
    let mut daemon_lock = loop {
        let lock = wt_memory_foundation::lock::exclusive(
            &daemon_lock_path(&project),
            Duration::from_millis(50),
            Duration::from_millis(10),
        )?;
        if let Some(lock) = lock {
            break lock;
        }
        if running(&project).is_some() || Instant::now() > handover {
            log(&project, "another service serves this store: exiting");
            return Ok(());
        }
    };
    {
        use std::io::Seek;
        daemon_lock.set_len(0)?;
        daemon_lock.rewind()?;
        write!(daemon_lock, "{}", std::process::id())?;
    }
    let _serving = Serving::new();
    let listener = wt_memory_base::os::socket::listen(&socket)
        .map_err(|e| daemon_err(format!("cannot listen on {}: {e}", socket.display())))?;
    let socket_identity = endpoint_identity(&socket);
    wt_memory_base::os::process::on_stop_signals(on_signal);
    let mut direct = Direct::new(
        project.clone(),
        OpenOptions::default(),
        Holding::UntilDropped,
    );
    direct.serve_store();
    // The trust check's rules compile in a few hundred milliseconds: on a thread of their own
    // now, so the first write a hook sends does not wait for them.
    // The action gate's rules too (about 90 ms): a first PreToolUse would otherwise pay for them.
    std::thread::spawn(|| {
        wt_memory_foundation::trust::warm();
        wt_memory_foundation::gate::warm();
    });
    // Warm: open the store (when it exists and is free) and load the model before the first
    // request. A busy store is left to the first request, with that request's own wait.
    direct.set_lock_wait(Duration::ZERO);
    if let Err(e) =
        wt_memory_ops::Operation::run(&wt_memory_ops::Warm, &mut direct, &Caller::default())
    {
        log(&project, &format!("warm-up: {e}"));
    }
    // The engine may still be opening (see `Store::open_for_service`): requests the saved
    // ranking view answers go on meanwhile; once it is open, the store is checked.
    let engine = direct.engine_waiter();
    let shared = Arc::new(Shared {
        hosted,
        connections: AtomicUsize::new(0),
        accepted: AtomicU64::new(0),
        project: project.clone(),
        turns: Turns::default(),
        recorder: direct.recorder().clone(),
        embedder: Mutex::new(direct.embedder()),
        direct: Mutex::new(direct),
        store_dir: project.store_dir.clone(),
        socket: socket.clone(),
        hello: hello_here(&project).as_served(),
        started: Instant::now(),
        last_request: Mutex::new(Instant::now()),
        requests: AtomicU64::new(0),
        service: Mutex::new(ServiceTimes::default()),
        checkpointed_at: AtomicU64::new(0),
        checkpointing: AtomicBool::new(false),
        shutdown: AtomicBool::new(false),
        closing: AtomicBool::new(false),
        engine: engine.clone(),
    });
    if let Some(engine) = engine {
        let mine = shared.clone();
        let _ = std::thread::Builder::new()
            .name("settle".into())
            .spawn(move || {
                engine.wait_until(None);
                let direct = mine.direct.lock().unwrap_or_else(|e| e.into_inner());
                if let Err(e) = direct.settle() {
                    log(&mine.project, &format!("opening the store: {e}"));
                }
            });
    }
    log(
        &project,
        &format!(
            "serving {} on {} ({})",
            project.store_dir.display(),
            socket.display(),
            shared.hello.build
        ),
    );
    let idle = config::get().daemon_idle;
    let mut checked = Instant::now();
    let mut had_store = false;
    let why = loop {
        wait_readable(&listener, Duration::from_millis(200));
        match wt_memory_base::os::socket::accept(&listener) {
            Ok(mut stream) => {
                shared.accepted.fetch_add(1, Ordering::SeqCst);
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
                        log(&project, &format!("no thread for a connection: {e}"));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => {
                // Out of descriptors or memory: the connections open now go on being served,
                // and new ones are taken once some close.
                log(&project, &format!("accept failed: {e}; going on"));
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
                        Ok(true) => log(
                            &shared.project,
                            &format!("checkpoint in {} ms", started.elapsed().as_millis()),
                        ),
                        Ok(false) => {}
                        Err(e) => log(&shared.project, &format!("checkpoint failed: {e}")),
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
            if endpoint_identity(&socket) != socket_identity {
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
    if endpoint_identity(&socket) == socket_identity {
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
    log(&project, &format!("exiting: {why}"));
    Ok(())
}

/// Block until a connection is waiting or `timeout` passes (the accept loop's only wait, so a
/// new connection is taken at once).
fn wait_readable(listener: &Listener, timeout: Duration) {
    wt_memory_base::os::socket::wait_readable(listener, timeout)
}

/// What the socket at `path` is (see `os::socket::identity`): the service exits when its socket
/// is removed or replaced.
fn endpoint_identity(path: &Path) -> Option<u64> {
    wt_memory_base::os::socket::identity(path)
}

/// The service's own way in, for the hooks it runs (`hook::serve`): their memory calls are
/// carried out exactly as a socket client's are (embedded ahead, in their turn among everyone
/// else's, withdrawn when the turn comes too late, answered with the same values), with no
/// second connection to the service itself.
#[derive(Clone)]
pub struct Local {
    shared: Arc<Shared>,
    limits: Limits,
}

/// A hook's request, carried out on the hook's own thread: its turn is waited for until its
/// budget's end, and then taken whatever the hook does meanwhile (nothing: it is this thread).
struct InThisThread {
    turn_by: Instant,
}

impl Requester for InThisThread {
    fn start(&mut self) -> bool {
        true
    }

    fn turn_by(&self) -> Option<Instant> {
        Some(self.turn_by)
    }
}

impl Local {
    fn new(shared: &Arc<Shared>) -> Local {
        Local {
            shared: shared.clone(),
            limits: Limits {
                lock_wait: Duration::ZERO,
                deadline: None,
            },
        }
    }

    /// The model's embeddings of `texts`, from this service's cache or computed now (None
    /// before the engine is open, or without the model): what a hook hands the personal store's
    /// service, so one query is embedded once.
    pub fn embeddings(&self, texts: &[String]) -> Option<Vec<Vec<f32>>> {
        let embedder = self
            .shared
            .embedder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        embedder.embeddings(&texts.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Does this service hold `project`'s store?
    pub fn serves(&self, project: &Project) -> bool {
        self.shared.store_dir == project.store_dir
    }

    /// As [`Connection::set_timeout`](super::Connection::set_timeout).
    pub fn set_timeout(&mut self, lock_wait: Duration, deadline: Option<Instant>) {
        self.limits = Limits {
            lock_wait,
            deadline,
        };
    }

    /// Carry out `request` on this thread, as a connection's thread would for a socket client:
    /// its texts embedded ahead, its turn waited for among everyone else's, but only as long as a
    /// socket client's request may wait (see `Connection::request`); a request whose turn has
    /// come runs to its end (a write a hook makes is never lost), while the hook's front keeps
    /// its own deadline.
    pub fn call(&mut self, caller: &Caller, request: &dyn Request) -> Result<Box<dyn Reply>> {
        let queue_limit = self.limits.queue_limit();
        let mut requester = InThisThread {
            turn_by: Instant::now() + queue_limit,
        };
        let lock_wait_ms = self.limits.lock_wait.as_millis() as u64;
        match serve_call(&self.shared, caller, lock_wait_ms, request, &mut requester) {
            // Typed, as it was made; an error clipped as the socket's answer clips an error line.
            Ok(Served { answer, warning }) => {
                if let Some(warning) = warning {
                    wt_memory_foundation::integrity::set_warning(warning);
                }
                answer
                    .map(Made::shown)
                    .map_err(|e| e.clipped(MAX_ERROR_CHARS))
            }
            Err(Refused(e)) => Err(e),
            Err(Withdrawn | Late) => Err(unanswered(format!(
                "the store is busy: its memory service (pid {}) did not get to this request within {:.1}s (another long request, see `wt-memory daemon status`); nothing was done, try again",
                std::process::id(),
                queue_limit.as_secs_f64()
            ))),
        }
    }
}
