//! `wt-hook-memory`'s front. Claude Code starts a hook process for every prompt and tool call; a
//! process that links the engine spends 10-12 ms loading and relocating it before it reads its
//! input, most of a warm hook's time. This one links no engine: when the project's service runs
//! (this build, this configuration) it hands the event to the service, which handles it with the
//! hook's own code ([`wire::HookRun`]) and answers with the line to print. Everything else (no
//! service yet, the Stop extraction, another configuration, `WT_MEMORY_DAEMON=0`) runs the
//! engine binary as the hook ([`ENGINE`] `--hook`), with the same arguments and the input
//! already read.
//!
//! The hook's contract holds either way: exit 0, print one output object or nothing, and finish
//! within the event's deadline; a service that does not finish in time leaves the hook silent
//! (the service's run goes on, so a write it makes is stored or spooled, never lost).

use crate::config;
use crate::wire::{self, Hello, HookDone, HookRun, ENGINE};
use serde_json::Value;
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The engine binary's first argument that makes it the hook handler.
pub const ENGINE_HOOK_FLAG: &str = "--hook";
/// The same, for a run whose memory service is there and did not answer: the hook asks it
/// nothing (reads stay silent, writes are spooled) instead of waiting for it a second time.
pub const ENGINE_HOOK_UNANSWERED_FLAG: &str = "--hook-unanswered";

/// Larger input is not a hook payload we can use (the 2 MB tool response fixture must still pass).
pub const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// The events the service handles; the Stop extraction (a model call of up to 30 s) and
/// anything unknown run in a hook process of their own.
pub const SERVED_EVENTS: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "SubagentStart",
];

/// How long the front waits for a running service's hello: a live one answers at once (its
/// connections have threads of their own) or once it has loaded what it serves (0.4 s at 10^5
/// memories), so this is only for one that is stopped or stuck. The hook's memory budget.
const HELLO_WAIT: Duration = Duration::from_millis(1000);

/// Past its deadline a hook's output is dropped; the front waits this much longer, as the hook
/// binary's watchdog does.
pub const WATCHDOG_GRACE: Duration = Duration::from_millis(500);

/// Internal deadline per event, well inside the timeouts `wt-project init` registers
/// (SessionStart 10 s, UserPromptSubmit 15 s, tool events 5 s, SubagentStart 10 s, Stop: the
/// 30 s model call plus storing, so its handler needs a timeout of at least 60 s).
pub fn internal_deadline(event: &str) -> Duration {
    match event {
        "SessionStart" | "SubagentStart" => Duration::from_secs(7),
        "UserPromptSubmit" => Duration::from_secs(10),
        "PreToolUse" | "PostToolUse" | "PostToolUseFailure" => Duration::from_millis(3500),
        "Stop" => Duration::from_secs(50),
        _ => Duration::from_secs(3),
    }
}

/// Run `wt-hook-memory` with the arguments of this process. Exits 0 whatever happens.
pub fn main() {
    let started = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    // The plugin's launcher asks which version a `wt-hook-memory` on PATH is.
    if matches!(args.first().map(String::as_str), Some("--version" | "-V")) {
        println!("wt-hook-memory {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    if config::get().hook_disabled {
        return;
    }
    let event = args.first().cloned().unwrap_or_default();
    let mut input = Vec::new();
    let _ = std::io::stdin()
        .lock()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut input);
    let deadline = started + internal_deadline(&event) + WATCHDOG_GRACE;
    if config::get().daemon && SERVED_EVENTS.contains(&event.as_str()) {
        match through_service(&args, &input, deadline) {
            Ok(Some(line)) => return print_line(&line),
            Ok(None) => return,
            Err(Fallback(why)) => crate::log::debug(&event, &format!("hook process: {why}")),
            Err(Unanswered(why)) => {
                crate::log::error(&event, &why);
                return run_engine(ENGINE_HOOK_UNANSWERED_FLAG, &args, &input, &event);
            }
        }
    }
    run_engine(ENGINE_HOOK_FLAG, &args, &input, &event);
}

/// Why the service did not take the event; the engine binary handles it.
enum NotTaken {
    /// No service of ours runs, or it leaves this event to a hook process.
    Fallback(String),
    /// A service is there and did not say hello within the hook's memory budget.
    Unanswered(String),
}
use NotTaken::{Fallback, Unanswered};

impl<E: std::error::Error> From<E> for NotTaken {
    fn from(e: E) -> NotTaken {
        Fallback(e.to_string())
    }
}

/// Hand the event to the store's service. `Ok(line)`: the service handled it (or did not finish
/// by `deadline`: then nothing is printed); `Err`: it did not take it.
fn through_service(
    args: &[String],
    input: &[u8],
    deadline: Instant,
) -> Result<Option<String>, NotTaken> {
    if input.len() as u64 > MAX_INPUT_BYTES {
        return Err(Fallback("input too large to hand over".into()));
    }
    let stdin = std::str::from_utf8(input)
        .map_err(|_| Fallback("input is not UTF-8".into()))?
        .to_string();
    let here = config::CallEnv::here();
    let project_dir = config::project_dir(payload_cwd(&stdin).as_deref()).path;
    let project = crate::project::resolve(&project_dir, None);
    let (mut conn, mine) = wire::say_hello(&project.store_dir, HELLO_WAIT)?;
    let hello = match answer(&mut conn) {
        Ok(mut hello) => hello.remove("hello"),
        Err(e) if wire::timed_out(&e) => {
            return Err(Unanswered(format!(
                "the memory service for {} did not answer within {:.1}s: this hook asks memory nothing (`wt-memory daemon status`)",
                project.store_dir.display(),
                HELLO_WAIT.as_secs_f64()
            )))
        }
        Err(e) => return Err(e.into()),
    };
    let peer: Hello = serde_json::from_value(
        hello.ok_or_else(|| Fallback("the memory service did not say hello".into()))?,
    )?;
    if mine.judge(&peer) != wire::Verdict::Use {
        return Err(Fallback(format!(
            "the memory service (pid {}) is not this build's",
            peer.pid
        )));
    }
    let run = HookRun {
        argv: args.to_vec(),
        stdin,
        claude_project_dir: here.claude_project_dir,
        plugin_root: here.plugin_root,
        cwd: here.cwd,
        config: config::fingerprint().to_string(),
    };
    let left = deadline.saturating_duration_since(Instant::now());
    conn.get_ref()
        .set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
    wire::write_line(conn.get_mut(), &serde_json::json!({ "hook": &run }))?;
    let mut reply = match answer(&mut conn) {
        Ok(reply) => reply,
        Err(e) if wire::timed_out(&e) => {
            crate::log::error(
                &args[0],
                &format!(
                    "the memory service (pid {}) did not finish the event within its deadline: exiting without output",
                    peer.pid
                ),
            );
            return Ok(None);
        }
        Err(e) => return Err(Fallback(e.to_string())),
    };
    let done: HookDone = match reply.remove("ok") {
        Some(done) => serde_json::from_value(done)?,
        None => return Err(Fallback(format!("the memory service refused: {reply:?}"))),
    };
    if !done.handled {
        return Err(Fallback(done.why));
    }
    Ok(done.stdout)
}

/// The input's `cwd`, needed only when `CLAUDE_PROJECT_DIR` names no directory (the rest of the
/// input is skipped, not copied).
fn payload_cwd(input: &str) -> Option<PathBuf> {
    if config::claude_project_dir().is_some_and(|d| d.is_dir()) {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Cwd {
        cwd: Option<PathBuf>,
    }
    serde_json::from_str::<Cwd>(input).ok()?.cwd
}

/// One answer line as an object.
fn answer(
    conn: &mut BufReader<std::os::unix::net::UnixStream>,
) -> std::io::Result<serde_json::Map<String, Value>> {
    match wire::read_line(conn, wire::MAX_LINE)? {
        Some(line) => serde_json::from_slice(&line).map_err(std::io::Error::other),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the memory service closed the connection",
        )),
    }
}

fn print_line(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// Replace this process with the engine binary as the hook, given `input` as its standard
/// input. Nothing is printed if that fails: the hook stays silent and says why in its log.
fn run_engine(flag: &str, args: &[String], input: &[u8], event: &str) {
    use std::os::unix::process::CommandExt;
    let Some(engine) = config::locate_binary(ENGINE) else {
        return crate::log::error(
            event,
            &format!("{ENGINE} is neither next to wt-hook-memory nor on PATH; reinstall wt-memory"),
        );
    };
    let mut cmd = std::process::Command::new(&engine);
    cmd.arg0("wt-hook-memory").arg(flag).args(args);
    match crate::forward::replay(input) {
        Ok(file) => {
            cmd.stdin(file);
        }
        Err(e) => return crate::log::error(event, &format!("cannot pass the input on: {e}")),
    }
    let e = cmd.exec();
    crate::log::error(event, &format!("cannot run {}: {e}", engine.display()));
}
