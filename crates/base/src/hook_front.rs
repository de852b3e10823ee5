//! `wt-hook-memory`'s front. Claude Code starts a hook process for every prompt and tool call; a
//! process that links the engine spends most of a warm hook's time loading and relocating it
//! before it reads its input (measured: docs/performance.md, "2026-11-27, afternoon: the hook
//! front (10^5, third session)"). This one links no engine: when the project's service runs
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
use crate::hook_events::{self, Runs};
use crate::wire::{self, Hello, HookDone, HookRun};
use serde_json::Value;
use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The engine binary's first argument that makes it the hook handler.
pub const ENGINE_HOOK_FLAG: &str = "--hook";
/// The same, for a run whose memory service is there and did not answer: the hook asks it
/// nothing (reads stay silent, writes are spooled) instead of waiting for it a second time.
pub const ENGINE_HOOK_UNANSWERED_FLAG: &str = "--hook-unanswered";

/// Larger input is not a hook payload we can use (the 2 MB tool response fixture must still pass).
pub const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// How long the front waits for a running service's hello: a live one answers at once (its
/// connections have threads of their own) or once it has loaded what it serves (sooner than this
/// at 10^5 memories; measured: docs/performance.md, "2026-11-27, midday: 10^5 memories, second
/// session"), so this is only for one that is stopped or stuck. The hook's memory budget.
const HELLO_WAIT: Duration = Duration::from_millis(1000);

pub use crate::hook_events::WATCHDOG_GRACE;

/// The internal deadline of `event` ([`crate::hook_events`]).
pub fn internal_deadline(event: &str) -> Duration {
    hook_events::deadline(event)
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
    let deadline = started + internal_deadline(&event) + WATCHDOG_GRACE;
    let input = match read_input(input_deadline(started, &event)) {
        Ok(input) => input,
        Err(why) => return crate::log::error(&event, &why),
    };
    let runs = hook_events::runs(&event);
    if runs == Runs::Detached && !config::get().harvest_foreground {
        return run_engine_detached(&args, &input, &event);
    }
    if config::get().daemon && runs == Runs::Service {
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

/// The engine's hook process (`wt-memory-engine --hook`) hands the event to the store's service
/// it has just started (no service answered the front: a cold start), so the event runs where
/// the rules are compiled beside the model's load rather than compiled a second time in the hook
/// process (docs/performance.md, "The cold first hook"). Returns whether the service took it
/// (its output, if any, printed); `false`: the caller runs the event itself.
pub fn hand_over(args: &[String], input: &[u8], deadline: Instant) -> bool {
    let event = args.first().map_or("", String::as_str);
    match through_service(args, input, deadline) {
        Ok(line) => {
            if let Some(line) = line {
                print_line(&line);
            }
            true
        }
        Err(Fallback(why) | Unanswered(why)) => {
            crate::log::debug(event, &format!("not handed over: {why}"));
            false
        }
    }
}

/// Claude Code writes a hook's whole input at once (a 2 MB tool response arrives in
/// milliseconds); a hook still without its input after this long will not get it in time to use,
/// and the agent has waited on memory its whole budget (1 s, as for a service's hello).
pub const INPUT_WAIT: Duration = Duration::from_secs(1);

/// When a hook started at `started` stops waiting for its input: [`INPUT_WAIT`] or the event's
/// deadline, whichever comes first.
pub fn input_deadline(started: Instant, event: &str) -> Instant {
    started + INPUT_WAIT.min(internal_deadline(event))
}

/// The hook's input, read until `deadline` at most. Claude Code writes one JSON object and closes
/// the pipe, but a client that keeps it open, drips, or never writes must not hold the hook: the
/// input ends at end of file or as soon as what was read is one whole JSON object; past the
/// deadline, or beyond [`MAX_INPUT_BYTES`], there is no input (the hook stays silent).
pub fn read_input(deadline: Instant) -> Result<Vec<u8>, String> {
    let (chunks, arrive) = mpsc::channel::<std::io::Result<Vec<u8>>>();
    // The reader may block for ever; it is never joined, and the process exits (or execs the
    // engine) around it. It reads a close-on-exec copy of stdin: once the engine's input is put
    // in place of stdin for the exec, a read still pending must not take that input away.
    let mut stdin =
        crate::os::files::stdin_copy().map_err(|e| format!("cannot read stdin: {e}"))?;
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let read = match stdin.read(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Ok(n) => Ok(buf[..n].to_vec()),
                Err(e) => Err(e),
            };
            let last = !matches!(&read, Ok(chunk) if !chunk.is_empty());
            if chunks.send(read).is_err() || last {
                return;
            }
        }
    });
    let mut input = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match arrive.recv_timeout(left) {
            Ok(Ok(chunk)) if chunk.is_empty() => return Ok(input),
            Ok(Ok(chunk)) => {
                input.extend_from_slice(&chunk);
                if input.len() as u64 > MAX_INPUT_BYTES {
                    return Err(format!(
                        "stdin larger than {MAX_INPUT_BYTES} bytes: ignored"
                    ));
                }
                if is_one_object(&input) {
                    return Ok(input);
                }
            }
            Ok(Err(e)) => return Err(format!("cannot read stdin: {e}")),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(input),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "stdin neither ended nor held one whole JSON object within the event's deadline ({} bytes read): exiting without output",
                    input.len()
                ))
            }
        }
    }
}

/// Is `input` exactly one complete JSON object (and whitespace)? Parsed only when it ends in `}`,
/// so a large input arriving in pieces is not parsed again for every piece.
fn is_one_object(input: &[u8]) -> bool {
    let Some(end) = input.iter().rposition(|b| !b.is_ascii_whitespace()) else {
        return false;
    };
    if input[end] != b'}' {
        return false;
    }
    let mut values =
        serde_json::Deserializer::from_slice(input).into_iter::<serde::de::IgnoredAny>();
    matches!(values.next(), Some(Ok(_))) && values.byte_offset() == end + 1
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
    let project = hook_project(&stdin);
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

/// The project whose service runs a hook given `input`: the hook process's project directory.
pub fn hook_project(input: &str) -> crate::project::Project {
    let project_dir = config::project_dir(payload_cwd(input).as_deref()).path;
    crate::project::resolve(&project_dir, None)
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
    conn: &mut BufReader<crate::wire::Stream>,
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

/// Start the engine binary as the hook in a session of its own, given `input`, and return
/// without waiting for it: Stop's extraction (a model call of up to 30 s). Claude Code cancels a
/// hook still running when `claude -p` exits, with its process group; a detached child of a hook
/// that already returned lives on. Its output goes nowhere (Stop prints nothing).
fn run_engine_detached(args: &[String], input: &[u8], event: &str) {
    use std::process::Stdio;
    let engine = match crate::forward::locate_engine() {
        Ok(engine) => engine,
        Err(why) => return crate::log::error(event, &why),
    };
    let stdin = match crate::forward::replay(input) {
        Ok(file) => file,
        Err(e) => return crate::log::error(event, &format!("cannot pass the input on: {e}")),
    };
    let mut cmd = std::process::Command::new(&engine);
    crate::os::process::set_name(&mut cmd, "wt-hook-memory");
    cmd.arg(ENGINE_HOOK_FLAG)
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    crate::os::process::detach(&mut cmd);
    match cmd.spawn() {
        // Never waited for: this process exits now and the worker is handed to init.
        Ok(_worker) => crate::log::debug(event, "extraction handed to a detached worker"),
        Err(e) => crate::log::error(event, &format!("cannot run {}: {e}", engine.display())),
    }
}

/// Replace this process with the engine binary as the hook, given `input` as its standard
/// input. Nothing is printed if that fails: the hook stays silent and says why in its log.
fn run_engine(flag: &str, args: &[String], input: &[u8], event: &str) {
    let engine = match crate::forward::locate_engine() {
        Ok(engine) => engine,
        Err(why) => return crate::log::error(event, &why),
    };
    let mut cmd = std::process::Command::new(&engine);
    cmd.arg(flag).args(args);
    match crate::forward::replay(input) {
        Ok(file) => {
            cmd.stdin(file);
        }
        Err(e) => return crate::log::error(event, &format!("cannot pass the input on: {e}")),
    }
    let e = crate::os::process::hand_over(&mut cmd, "wt-hook-memory");
    crate::log::error(event, &format!("cannot run {}: {e}", engine.display()));
}

#[cfg(test)]
mod tests {
    use super::is_one_object;

    #[test]
    fn an_input_ends_with_its_one_whole_object() {
        assert!(is_one_object(b"{\"a\": {\"b\": \"}\"}}\n"));
        assert!(!is_one_object(b"{\"a\": {\"b\": 1}"), "still open");
        assert!(!is_one_object(b"{\"a\": \"}"), "a brace inside a string");
        assert!(!is_one_object(b"{} {}"), "two objects wait for the end");
        // Whole, though not UTF-8: read no further; parsing it rejects it (logged, silent).
        assert!(is_one_object(b"{\"a\": \"\xff\"}"));
        assert!(!is_one_object(b"  \n"));
    }
}
