//! The one way front ends reach a project's memory: the CLI, the hook, the MCP server and sync
//! all call these typed methods, and this is the only place that chooses how a request is carried
//! out:
//! - [`Backend::Direct`] opens the store in this process (under the project lock, only when an
//!   operation needs it) and runs the operation ([`Operation::run`]) here;
//! - [`Backend::Daemon`] sends the request to the store's resident service (`wt-memory serve`,
//!   see [`crate`]), which runs the same [`Operation::run`] on the store it keeps open.

use crate::Found;
use serde_json::Value;
use std::time::{Duration, Instant};
use wt_memory_base::project::Project;
use wt_memory_core::store;
use wt_memory_foundation::error::{other, Result};
pub use wt_memory_ops::Holding;
use wt_memory_ops::{self as ops, Caller, Direct, OpenOptions, Operation, Reply, Request};

/// An answer as it reaches the client: typed from this process (the store opened here, or the
/// service this hook runs in), JSON from a service's socket.
enum Answered {
    Here(Box<dyn Reply>),
    Sent(Value),
}

/// The memory count of a store for `projects`, which only reads: asked of its service when one
/// runs (it holds the store), else taken from the integrity record our writes keep (the store is
/// not opened: opening rewrites the engine's files); a store of the previous wt-tools is named,
/// never opened.
pub fn count_of(project: &Project) -> Result<usize> {
    let value = match crate::running(project) {
        Some(mut conn) => conn.call(&Caller::default(), &ops::Count)?,
        None if wt_memory_core::legacy_store::is_legacy(&project.store_dir) => {
            return Err(wt_memory_foundation::error::bad_input(
                "a store of the previous wt-tools, not opened; `wt-memory migrate --from-legacy` in its repository brings it in",
            ))
        }
        None => {
            if let Some(record) = wt_memory_foundation::integrity::read(&project.store_dir) {
                return Ok(record.count as usize);
            }
            let options = OpenOptions {
                migrate: false,
                read_from_copy: true,
                ..OpenOptions::default()
            };
            let mut direct = Direct::new(project.clone(), options, Holding::UntilDropped);
            return ops::answer(&ops::Count, &mut direct, &Caller::default());
        }
    };
    Ok(serde_json::from_value(value)?)
}

/// Where a client's requests are carried out.
pub enum Backend {
    /// Not chosen yet: the first call decides (a command that never calls starts nothing).
    Pending,
    Direct(Box<Direct>),
    Daemon(crate::Connection),
    /// In the service that holds the store, for a hook it runs: its requests join the queue
    /// without a connection (see [`crate::Local`]).
    InService(crate::Local),
    /// The daemon could not be reached and this client may not open the store itself.
    Unreachable(wt_memory_foundation::error::Error),
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
            daemon: wt_memory_base::config::get().daemon,
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
    pub fn in_service(project: Project, local: crate::Local, mode: Mode) -> Client {
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
            && !wt_memory_core::migrate::pending(&self.project.store_dir).is_empty();
        let only_if_running = !mode.daemon || mode.daemon_only_if_running || migrating;
        if only_if_running {
            // A live service owns the store: use it, since waiting for its lock would be in
            // vain; one that does not answer is reported at once.
            self.backend = match crate::probe(&self.project, wait.min(HELLO_BUDGET)) {
                Found::Nothing => direct(),
                Found::Service(mut conn) => {
                    if conn.peer.protocol == crate::PROTOCOL {
                        conn.set_timeout(mode.options.lock_wait, mode.deadline);
                        Backend::Daemon(conn)
                    } else {
                        Backend::Unreachable(wt_memory_foundation::error::Error::Unanswered {
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
        self.backend = match crate::connect(&self.project, deadline) {
            Ok(mut conn) => {
                conn.set_timeout(mode.options.lock_wait, mode.deadline);
                Backend::Daemon(conn)
            }
            // Working on the store here helps only when no service holds it.
            Err(e) if mode.fallback_direct && crate::owner(&self.project).is_none() => {
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

    fn send(&mut self, caller: &Caller, req: &dyn Request) -> Result<Answered> {
        self.resolve();
        match &mut self.backend {
            // In this process the answer stays typed (redacted as it was made, as the service
            // redacts the answers it sends).
            Backend::Direct(d) => req.run(d, caller).map(|made| Answered::Here(made.shown())),
            Backend::Daemon(c) => c.call(caller, req).map(Answered::Sent),
            Backend::InService(l) => l.call(caller, req).map(Answered::Here),
            Backend::Unreachable(e) => Err(e.clone()),
            Backend::Pending => unreachable!("resolved above"),
        }
    }

    /// Carry out `op` and answer what it answers: checked here, once, before it is sent.
    pub fn run<O: Operation>(&mut self, op: O) -> Result<O::Answer> {
        Operation::validate(&op)?;
        match self.send_retrying(&op)? {
            Answered::Here(reply) => ops::typed(reply),
            Answered::Sent(value) => {
                serde_json::from_value(value).map_err(|e| other(format!("unexpected answer: {e}")))
            }
        }
    }

    fn send_retrying(&mut self, req: &dyn Request) -> Result<Answered> {
        let mut caller = if req.needs_caller() {
            self.caller
                .get_or_insert_with(|| Caller::of(&self.project))
                .clone()
        } else {
            Caller::default()
        };
        caller.source.clone_from(&self.source);
        match self.send(&caller, req) {
            // The service went away between calls (idle exit, upgrade): start over once.
            Err(wt_memory_foundation::error::Error::Daemon { .. }) if self.via_daemon() => {
                self.backend = Backend::Pending;
                self.send(&caller, req)
            }
            other => other,
        }
    }

    /// The store's state in one line for `status` (its count, read without opening the store
    /// when no service holds it).
    pub fn status(&mut self) -> Result<ops::Status> {
        let count = self.run(ops::Count)?;
        Ok(ops::status(self.project(), count))
    }

    /// Name this client's front end in the metrics log's writes (hook, extraction, mcp, sync).
    pub fn set_source(&mut self, source: &str) {
        self.source = Some(source.to_string());
    }
}
