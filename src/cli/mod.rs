//! The `wt-memory` command line: clap types and printing, one file per command group. Every
//! command calls the library through a [`Client`] and prints what it returns.
//!
//! Output rule: commands that return records or counts print JSON on stdout (pretty-printed;
//! `remember --json` prints one compact line); `stats`, `status`, `audit` and `restore --list`
//! print text unless given `--json`; `todo`, `rules`, `seed`, `migrate`, `setup`, `repair`,
//! `restore`, `sync` and `doctor` print text. Errors are one stderr line, `wt-memory: …`, and exit 1
//! (`remember` with nothing to store exits 3; usage errors exit 1 or 2 as clap decides).

mod enrich;
mod maintenance;
mod memories;
mod metrics;
mod review;
mod todo;
mod transfer;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use wt_memory_base::project;
use wt_memory_base::wire::{Forward, Forwarded};
use wt_memory_foundation::error::Error;
use wt_memory_ops::{answer, Direct, Request};
use wt_memory_ops::{Caller, OpenOptions};
use wt_memory_service::client::{Client, Holding, Mode};
use wt_memory_service::ForwardedCommand;

#[derive(Parser)]
#[command(
    name = "wt-memory",
    version,
    about = "Persistent per-project memory for coding agents"
)]
pub struct Cli {
    /// Use this project's store instead of the one of the current directory.
    #[arg(long, global = true, value_name = "NAME")]
    project: Option<String>,
    /// `personal`: your personal store (memory about you, read in every project); `project`: this
    /// project's store alone. Default: writes go to the project's store, and recall and proactive
    /// read both.
    #[arg(long, global = true, value_name = "SCOPE", conflicts_with = "project")]
    scope: Option<crate::scope::Scope>,
    /// Do not run pending store migrations.
    #[arg(long, global = true)]
    no_migrate: bool,
    /// Open the store in this process, not through the project's resident service.
    #[arg(long, global = true)]
    no_daemon: bool,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    #[command(flatten)]
    Memories(memories::Cmd),
    #[command(flatten)]
    Maintenance(maintenance::Cmd),
    #[command(flatten)]
    Transfer(transfer::Cmd),
    #[command(flatten)]
    Todo(todo::Cmd),
    #[command(flatten)]
    Metrics(metrics::Cmd),
    #[command(flatten)]
    Enrich(enrich::Cmd),
    #[command(flatten)]
    Review(review::Cmd),
}

/// What a command ends with.
type Res = Result<ExitCode, Error>;

fn print_json(v: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(v).expect("serializable"));
}

/// Standard input as text (empty on a terminal: nothing was piped).
fn read_stdin() -> Result<String, Error> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Ok(String::new());
    }
    let mut buf = Vec::new();
    std::io::stdin().read_to_end(&mut buf)?;
    Ok(wt_memory_foundation::hygiene::decode_lossy(&buf))
}

/// `wt-memory list | head` closes our stdout early: leave quietly with the shell's SIGPIPE status
/// instead of a panic message (print! panics on EPIPE, since Rust ignores SIGPIPE). Child processes
/// are unaffected: a write to a git child that died still returns an error.
fn quiet_on_closed_stdout() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or_default();
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default_hook(info);
    }));
}

/// Parse the command line, run the command, print its result.
pub fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match legacy(&args[1..]) {
        Some(Legacy::Renamed(rest, note)) => {
            eprintln!("wt-memory: note: {note}");
            args.truncate(1);
            args.extend(rest);
        }
        Some(Legacy::Gone(why)) => {
            eprintln!("wt-memory: {why}");
            return ExitCode::FAILURE;
        }
        None => {}
    }
    let command = Cli::command().after_help(format!(
        "Environment:\n{}",
        wt_memory_base::config::describe_env()
    ));
    let parsed = command
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            if let Some(msg) = unknown_group_subcommand(&e) {
                eprintln!("{msg}");
                return ExitCode::from(2);
            }
            let code = if e.use_stderr() { 1 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let Some(command) = cli.command else {
        let _ = Cli::command().print_help();
        return ExitCode::SUCCESS;
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let project = resolve(&cwd, cli.scope, cli.project.as_deref());
    let options = OpenOptions {
        migrate: !cli.no_migrate,
        // Working in this process, a command that only reads reads a copy: it leaves the store's
        // files as they were.
        read_from_copy: true,
        ..OpenOptions::default()
    };
    let mut mode = Mode::configured(options, Holding::UntilDropped);
    // A daemon migrates what it opens: a command that must not migrate, or that migrates by
    // name, opens the store itself.
    let migrates = matches!(command, Cmd::Maintenance(maintenance::Cmd::Migrate { .. }));
    mode.daemon &= !cli.no_daemon;
    mode.daemon_only_if_running = cli.no_migrate || migrates;
    // Before the first write of a store, the previous system's memories may sit next to it
    // (`status` and `migrate` say so themselves).
    let says_itself =
        migrates || matches!(command, Cmd::Maintenance(maintenance::Cmd::Status { .. }));
    if !says_itself && !wt_memory_core::store::exists(&project.store_dir) {
        if let Some(old) = wt_memory_core::legacy_store::pending(&project) {
            eprintln!(
                "wt-memory: note: {}",
                wt_memory_core::legacy_store::hint(&old)
            );
        }
    }
    // The personal store, for a read of both scopes or a move between them.
    let personal = match &command {
        Cmd::Memories(c) if c.moves_between_scopes() => Some(project::personal(&cwd)),
        Cmd::Memories(c) if c.reads_both_scopes() && cli.scope.is_none() => {
            crate::scope::personal_beside(&project)
        }
        _ => None,
    }
    .map(|p| Client::open(p, mode.clone()));
    let mut client = Client::open(project, mode);
    // The agent running the CLI in its shell writes as the agent, not as the user.
    if wt_memory_base::config::in_agent_session() {
        client.set_source("agent-shell");
    }
    let result = match command {
        Cmd::Memories(c) => memories::run(&mut client, personal, c),
        Cmd::Maintenance(c) => maintenance::run(&mut client, c),
        Cmd::Transfer(c) => transfer::run(&mut client, c),
        Cmd::Todo(c) => todo::run(&mut client, c),
        Cmd::Metrics(c) => metrics::run(&mut client, c),
        Cmd::Enrich(c) => enrich::run(&mut client, c),
        Cmd::Review(c) => review::run(&mut client, c),
    };
    // Close the store before the last words (a damaged store's warning is raised on open).
    drop(client);
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            let (line, code) = failure(e);
            eprintln!("{line}");
            ExitCode::from(code)
        }
    };
    // A damaged store: one stderr line, after the command's own output and error (the hook logs
    // the first stderr line of a failure, which must stay the failure).
    if let Some(warning) = wt_memory_foundation::integrity::take_warning() {
        eprintln!("{warning}");
    }
    code
}

/// The store a command line names: `--scope personal`, `--project NAME`, or the current
/// directory's project.
fn resolve(
    cwd: &std::path::Path,
    scope: Option<crate::scope::Scope>,
    name: Option<&str>,
) -> project::Project {
    match scope {
        Some(crate::scope::Scope::Personal) => project::personal(cwd),
        _ => project::resolve(cwd, name),
    }
}

/// A command line of the previous wt-tools (its `/wt:memory` command passes unknown subcommands
/// straight through, so users meet these).
enum Legacy {
    /// Runs as this command line, after a note on stderr.
    Renamed(Vec<std::ffi::OsString>, &'static str),
    /// Has no counterpart: one line naming what to use instead, exit 1.
    Gone(&'static str),
}

fn legacy(args: &[std::ffi::OsString]) -> Option<Legacy> {
    // The command word: the first argument that is not a global flag or `--project`'s value.
    let mut at = 0;
    while let Some(arg) = args.get(at).and_then(|a| a.to_str()) {
        match arg {
            "--project" | "--scope" => at += 2,
            _ if arg.starts_with('-') => at += 1,
            _ => break,
        }
    }
    let word = args.get(at)?.to_str()?;
    let renamed = |to: &str, note| {
        let mut rest = args.to_vec();
        rest[at] = to.into();
        Some(Legacy::Renamed(rest, note))
    };
    match word {
        "verify" => renamed("health", "`verify` is now `health`"),
        "dashboard" => renamed(
            "report",
            "`dashboard` is now `report` (an HTML page; `wt-memory tui` browses in the terminal)",
        ),
        "flush" => Some(Legacy::Gone(
            "`flush` is gone: every write is on disk when it returns (`wt-memory health` checks the store)",
        )),
        "graph-stats" => Some(Legacy::Gone(
            "`graph-stats` is gone: the engine's graph is not used; `wt-memory stats` counts memories by type and tag",
        )),
        "consolidation" => Some(Legacy::Gone(
            "`consolidation` is gone: `wt-memory audit` lists near-duplicates, `wt-memory dedup` merges them",
        )),
        "cleanup-logs" => Some(Legacy::Gone(
            "`cleanup-logs` is gone: the logs rotate by themselves (the hook log at 1 MB)",
        )),
        "recall" => {
            let mut rest = args.to_vec();
            let mut changed = false;
            for k in at + 1..rest.len() {
                let value = match rest[k].to_str() {
                    Some("--mode") => k + 1,
                    Some(a) if a.starts_with("--mode=") => k,
                    _ => continue,
                };
                let Some(mode) = rest.get(value).and_then(|v| v.to_str()) else {
                    continue;
                };
                let mode = mode.trim_start_matches("--mode=");
                if matches!(mode, "causal" | "associative") {
                    rest[value] = if value == k {
                        "--mode=hybrid".into()
                    } else {
                        "hybrid".into()
                    };
                    changed = true;
                }
            }
            changed.then_some(Legacy::Renamed(
                rest,
                "`--mode causal` and `--mode associative` rank as `hybrid` (the engine's graph is not used)",
            ))
        }
        _ => None,
    }
}

/// A failed command's stderr line and exit status.
fn failure(e: Error) -> (String, u8) {
    // One line, never a screenful of quoted input.
    match e.clipped(2000) {
        Error::NothingToStore { why } => {
            (format!("wt-memory: remember: nothing to store: {why}"), 3)
        }
        e => (format!("wt-memory: {e}"), 1),
    }
}

/// A `remember` command line the `wt-memory` front forwarded to a daemon, parsed once: for the
/// text to embed ahead of its turn, then for its run.
pub struct ForwardedRemember {
    project: project::Project,
    args: memories::RememberArgs,
    content: String,
}

/// A `recall` or `proactive` command line the front forwarded: the engine binary's start-up
/// (loading the engine; measured: docs/performance.md, "2026-11-27, midday: 10^5 memories, second
/// session") is most of such a command at the service.
pub struct ForwardedQuery {
    project: project::Project,
    read: crate::scope::BothRead,
    request: Box<dyn Request>,
    /// The personal store's running service, asked too (None: no personal store beside it, or
    /// `--scope` chose one store).
    personal: Option<wt_memory_service::Connection>,
}

/// How long a forwarded read waits for the personal store's service.
const PERSONAL_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A store's service runs only a command line for its own store.
fn check_forwarded_store(project: &project::Project, direct: &Direct) -> Result<(), Error> {
    let canonical = wt_memory_base::wire::canonical_store;
    if canonical(&project.store_dir) != canonical(&direct.project().store_dir) {
        return Err(Error::Daemon {
            message: format!("this daemon does not serve {}", project.name),
        });
    }
    Ok(())
}

impl ForwardedCommand for ForwardedQuery {
    fn texts_to_embed(&self) -> Vec<String> {
        self.request.texts_to_embed()
    }

    fn answered_from_view(&self) -> bool {
        self.request.answered_from_view()
    }

    /// Run it as the engine binary would: the memories as pretty JSON, or the one-line error.
    fn run(self: Box<Self>, direct: &mut Direct) -> Result<Forwarded, Error> {
        check_forwarded_store(&self.project, direct)?;
        let caller = Caller::of(&self.project);
        // The records as the client reads them (recall and proactive answer records), so every
        // field prints as the engine binary prints it.
        let this = *self;
        let mut stderr = String::new();
        let found = this.request.run(direct, &caller).and_then(|made| {
            let mut records: Vec<wt_memory_core::record::MemoryRecord> =
                wt_memory_ops::typed(made.shown())?;
            if let Some(mut personal) = this.personal {
                personal.set_timeout(PERSONAL_WAIT, Some(std::time::Instant::now() + PERSONAL_WAIT));
                let theirs = personal
                    .call(&Caller::default(), &*this.read.personal_request())
                    .and_then(|answer| this.read.personal_records(answer));
                match theirs {
                    Ok(theirs) => records = this.read.merge(records, theirs),
                    Err(e) => stderr = format!(
                        "wt-memory: note: the personal store did not answer: {e}; this project's memories only\n"
                    ),
                }
            } else if this.project.is_personal() {
                crate::scope::mark(&mut records, crate::scope::Scope::Personal);
            }
            Ok(serde_json::to_string_pretty(&records)?)
        });
        Ok(match found {
            Ok(json) => Forwarded {
                stdout: json + "\n",
                stderr,
                code: 0,
            },
            Err(e) => {
                let (line, code) = failure(e);
                Forwarded {
                    stdout: String::new(),
                    stderr: line + "\n",
                    code,
                }
            }
        })
    }
}

/// What `wt-memory serve` hosts: the command lines the `wt-memory` front forwards (parsed here,
/// by the command line's own parser) and the hook events of the `wt-hook-memory` front.
pub(crate) struct Fronts;

impl wt_memory_service::Hosted for Fronts {
    fn forwarded(&self, call: &Forward) -> Result<Box<dyn ForwardedCommand>, Error> {
        parse_forwarded(call)
    }

    fn hook(
        &self,
        call: &wt_memory_base::wire::HookRun,
        way_in: wt_memory_service::Local,
    ) -> wt_memory_base::wire::HookDone {
        crate::hook::serve(call, way_in)
    }
}

/// The `remember`, `recall` or `proactive` in `call`, or an error saying the daemon does not run
/// that command line (any other command, one that asks for a process of its own, or one it
/// cannot parse); the front then runs the engine binary itself, which says what is wrong.
pub fn parse_forwarded(call: &Forward) -> Result<Box<dyn ForwardedCommand>, Error> {
    let refused = || Error::Daemon {
        message: format!(
            "the daemon does not run `wt-memory {}`",
            wt_memory_base::wire::clip(&call.argv.join(" "), 200)
        ),
    };
    let argv = std::iter::once("wt-memory").chain(call.argv.iter().map(String::as_str));
    let cli = Cli::try_parse_from(argv).map_err(|_| refused())?;
    if cli.no_daemon || cli.no_migrate {
        return Err(refused());
    }
    let project = resolve(&call.cwd, cli.scope, cli.project.as_deref());
    let both = cli.scope.is_none();
    match cli.command {
        Some(Cmd::Memories(memories::Cmd::Remember(args))) => Ok(Box::new(ForwardedRemember {
            project,
            args,
            content: call.stdin.clone(),
        })),
        Some(Cmd::Memories(cmd)) => {
            let read = memories::query_request(cmd).ok_or_else(refused)?;
            // The personal store beside the project is asked through its own service; when
            // that does not run yet, the engine binary starts it.
            let personal = match both
                .then(|| crate::scope::personal_beside(&project))
                .flatten()
            {
                Some(personal) => Some(wt_memory_service::running(&personal).ok_or_else(refused)?),
                None => None,
            };
            Ok(Box::new(ForwardedQuery {
                project,
                request: read.project_request(),
                read,
                personal,
            }))
        }
        _ => Err(refused()),
    }
}

impl ForwardedCommand for ForwardedRemember {
    /// The text the store will embed for it (see [`wt_memory_ops::Operation::texts_to_embed`]).
    fn texts_to_embed(&self) -> Vec<String> {
        match memories::remember_request(&self.args, self.content.clone()) {
            Ok(req) => Request::texts_to_embed(&req),
            Err(_) => Vec::new(),
        }
    }

    /// Run it on the store `direct` keeps open, as [`main`] would have run it in the engine
    /// binary: what it prints and its exit status. A line naming another store is refused.
    fn run(self: Box<Self>, direct: &mut Direct) -> Result<Forwarded, Error> {
        let this = *self;
        check_forwarded_store(&this.project, direct)?;
        let caller = Caller::of(&this.project);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let sent = memories::remember_with(
            |req| {
                Request::validate(req)?;
                answer(req, direct, &caller)
            },
            this.args,
            this.content,
            &mut out,
            &mut err,
        );
        let code = match sent {
            Ok(()) => 0,
            Err(e) => {
                let (line, code) = failure(e);
                err.extend_from_slice(line.as_bytes());
                err.push(b'\n');
                code
            }
        };
        Ok(Forwarded {
            stdout: String::from_utf8_lossy(&out).into_owned(),
            stderr: String::from_utf8_lossy(&err).into_owned(),
            code,
        })
    }
}

/// `wt-memory sync bogus` says `wt-memory: unknown sync subcommand 'bogus'`, in the previous
/// implementation's words, rather than clap's generic text. Top-level mistakes keep clap's message
/// (it suggests the nearest command).
fn unknown_group_subcommand(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidSubcommand {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidSubcommand) else {
        return None;
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let at = args.iter().position(|a| a == bad)?;
    let group = args[..at].iter().rev().find(|a| !a.starts_with('-'))?;
    Some(format!(
        "wt-memory: unknown {group} subcommand '{bad}'; see `wt-memory {group} --help`"
    ))
}
