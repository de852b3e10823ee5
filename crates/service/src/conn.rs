//! The client side: a connection to a store's service, finding, starting, replacing and stopping
//! one.

use super::*;
use std::io::Read;
use wt_memory_base::wire::{Verdict, ENGINE};

/// Read one line as a [`Line`].
fn read_reply(reader: &mut BufReader<Stream>) -> std::io::Result<Line> {
    match wire::read_line(reader, wire::MAX_LINE)? {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the memory service closed the connection",
        )),
    }
}

/// One line out, one line back.
fn exchange(reader: &mut BufReader<Stream>, line: &Line) -> std::io::Result<Line> {
    wire::write_line(reader.get_mut(), line)?;
    read_reply(reader)
}

/// A client's connection to a store's service.
pub struct Connection {
    reader: BufReader<Stream>,
    limits: Limits,
    /// What to do with this service, judged by what this process said (its build and model).
    verdict: Verdict,
    pub peer: Hello,
}

impl Connection {
    /// Connect and exchange hellos ([`wire::say_hello`], as the engine-free fronts do), waiting
    /// at most `wait` for the service's.
    fn open(project: &Project, wait: Duration) -> std::io::Result<Connection> {
        let (mut reader, mine) =
            wire::say_hello(&project.store_dir, wait.max(Duration::from_millis(20)))?;
        match read_reply(&mut reader)? {
            Line::Hello(peer) => Ok(Connection {
                reader,
                limits: Limits {
                    lock_wait: config::get().lock_wait,
                    deadline: None,
                },
                verdict: mine.judge(&peer),
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
        self.limits = Limits {
            lock_wait,
            deadline,
        };
    }

    /// Send `line` and read its answer ([`wire::ask_in_turn`]): the request waits for its turn
    /// at most as long as the store lock would be waited for (and never past the deadline), and
    /// once started for its answer until the deadline, if any. A request that never started is
    /// withdrawn: the service does not carry it out.
    fn request(&mut self, line: &Line) -> Result<Line> {
        let queue_limit = self.limits.queue_limit();
        match wire::ask_in_turn(&mut self.reader, line, queue_limit, self.limits.deadline) {
            Ok(answer) => serde_json::from_slice(&answer)
                .map_err(|e| daemon_err(format!("the memory service answered nonsense: {e}"))),
            Err(wire::Unanswered::NotStarted) => Err(unanswered(format!(
                "the store is busy: its memory service (pid {}) did not get to this request within {:.1}s (another long request, see `wt-memory daemon status`); nothing was done, try again",
                self.peer.pid,
                queue_limit.as_secs_f64()
            ))),
            Err(wire::Unanswered::Late) => Err(unanswered(format!(
                "the memory service (pid {}) did not finish in time",
                self.peer.pid
            ))),
            Err(wire::Unanswered::Gone(e)) => Err(daemon_err(format!(
                "the memory service did not answer: {e}"
            ))),
        }
    }

    pub fn call(&mut self, caller: &Caller, request: &dyn Request) -> Result<Value> {
        let line = Line::Call(Box::new(Envelope {
            caller: caller.clone(),
            lock_wait_ms: self.limits.lock_wait.as_millis() as u64,
            request: Wire(request.boxed()),
        }));
        value_of(self.request(&line)?)
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
    match Connection::open(project, wait) {
        Ok(conn) => Found::Service(conn),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::ConnectionRefused
                    // A service on its way out (killed; its last threads still closing).
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            ) =>
        {
            Found::Nothing
        }
        Err(e) if timed_out(&e) => Found::Stuck(not_answering(project, owner(project))),
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
    let left = || deadline.saturating_duration_since(Instant::now());
    let judged = |conn: Connection| match conn.verdict.clone() {
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
                wait_closed(project, pid, deadline);
            }
        },
        Found::Stuck(e) => return Err(e),
        Found::Nothing => {}
    }
    wt_memory_base::paths::ensure_private_dir(&daemon_dir())?;
    wt_memory_base::wire::ensure_socket_dir(&socket_path(project))?;
    // The user's engine serves the store (started when none runs); a store it does not serve as
    // this client would is given a service of its own, as before the engine.
    let mut child = match crate::engine::ask(project, deadline)? {
        crate::engine::Asked::Served => None,
        crate::engine::Asked::Start(lock) => {
            let mut started = start(project, true)?;
            started.hold(lock);
            Some(started)
        }
        crate::engine::Asked::Elsewhere => {
            // Whoever takes the spawn lock starts the service; the others wait for its socket.
            let spawn_lock = wt_memory_foundation::lock::exclusive(
                &spawn_lock_path(project),
                Duration::ZERO,
                Duration::ZERO,
            )?;
            match spawn_lock {
                Some(lock) => {
                    if let Ok(conn) = Connection::open(project, left().min(HELLO_WAIT)) {
                        if let Ok(conn) = judged(conn)? {
                            return Ok(conn);
                        }
                    }
                    let mut started = start(project, false)?;
                    started.hold(lock);
                    Some(started)
                }
                None => None,
            }
        }
    };
    loop {
        match Connection::open(project, left().min(HELLO_WAIT)) {
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

/// Stop `project`'s service: asked first (in the user's engine only that store closes); a
/// service that does not answer (frozen, stuck in a request) is sent SIGTERM, then SIGKILL (the
/// whole process: the last resort, every store it serves drains or is killed). Every write it acknowledged is in the engine's log.
/// Returns the pid stopped, if any.
pub fn stop(project: &Project) -> Option<u32> {
    let pid = match probe(project, HELLO_WAIT) {
        Found::Service(conn) => {
            let pid = conn.peer.pid;
            conn.shutdown();
            // Its store closed: the process may go on serving other stores (the user's engine).
            if wait_closed(project, pid, Instant::now() + Duration::from_secs(5)) {
                return Some(pid);
            }
            pid
        }
        // Nothing serves the store; a frozen engine that would be asked to is ended.
        Found::Nothing => crate::engine::stuck_pid()?,
        Found::Stuck(_) => owner(project)?,
    };
    use wt_memory_base::os::process::{signal, Signal};
    signal(pid, Signal::Continue);
    signal(pid, Signal::Terminate);
    if !wait_until_gone(pid, Duration::from_secs(3)) {
        signal(pid, Signal::Kill);
        wait_until_gone(pid, Duration::from_secs(3));
    }
    Some(pid)
}

/// Wait until the service `pid` no longer holds `project`'s store (closed it, or exited).
fn wait_closed(project: &Project, pid: u32, deadline: Instant) -> bool {
    loop {
        if owner(project) != Some(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn wait_until_gone(pid: u32, limit: Duration) -> bool {
    wait_gone(pid, Instant::now() + limit);
    !alive(pid)
}

/// A service (or the user's engine) this process started: its failure is seen at once, with
/// what it said.
struct Started {
    child: Option<std::process::Child>,
    log: PathBuf,
    /// The log's length before the service started: what it wrote since is its own.
    from: u64,
    /// The spawn lock it was started under, held until this client has connected: racing
    /// clients wait for this one's service instead of starting another.
    _spawn_lock: Option<std::fs::File>,
}

impl Started {
    fn hold(&mut self, lock: std::fs::File) {
        self._spawn_lock = Some(lock);
    }

    /// Why it failed, if it has: its status and the first line it logged. (One that exited
    /// well found its store served by another: the client goes on waiting for that one.)
    fn exited(&mut self) -> Option<String> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        if status.success() {
            return None;
        }
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

/// Start `wt-memory serve` for `project` (with `engine`, the user's engine, `serve --engine`,
/// which serves `project` first), detached (own session, output to its log), with the store
/// root and project name it must serve passed so they cannot be misread.
fn start(project: &Project, engine: bool) -> Result<Started> {
    let bin = config::locate_binary(ENGINE).ok_or_else(|| {
        unanswered(format!(
            "{ENGINE} is neither next to this program nor on PATH"
        ))
    })?;
    let log_file = if engine {
        crate::engine::engine_log_path()
    } else {
        log_path(project)
    };
    if let Some(dir) = log_file.parent() {
        wt_memory_base::paths::ensure_private_dir(dir)?;
    }
    let log = wt_memory_base::paths::open_private_append(&log_file)?;
    let from = log.metadata().map(|m| m.len()).unwrap_or(0);
    let mut cmd = std::process::Command::new(bin);
    if let Some(root) = project.store_dir.parent() {
        cmd.env("WT_MEMORY_HOME", root);
    }
    // `--project=NAME`: a name that starts with `-` is still a value, never a flag.
    cmd.arg(format!("--project={}", project.name))
        .arg("serve")
        .args(engine.then_some("--engine"))
        .current_dir(&project.cwd)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    wt_memory_base::os::process::detach(&mut cmd);
    let child = cmd.spawn()?;
    Ok(Started {
        child: Some(child),
        log: log_file,
        from,
        _spawn_lock: None,
    })
}
