//! The `wt-memory` front. A command the project's running daemon can carry out is sent to it as
//! its command line ([`Forward`]), and the daemon answers with what the engine binary would
//! have printed; everything else (no daemon yet, another build, `--no-daemon`, any other
//! command) runs the engine binary, [`ENGINE`], with the same arguments. Either way one code path,
//! the engine's, parses and carries out every command.
//!
//! Why: agents call `wt-memory remember` in bursts, and a process that links the engine spends
//! CPU loading and relocating it before it does anything; this one starts in a fraction of that
//! time (measured: docs/performance.md, "2026-11-25: the burst, then the later build").

use crate::config;
use crate::wire::Stream;
use crate::wire::{self, Forward, Forwarded, Hello, ENGINE};
use serde_json::Value;
use std::ffi::OsString;
use std::io::{BufReader, IsTerminal, Read, Write};
use std::process::ExitCode;
use std::time::Duration;

/// The commands a daemon runs for the front, and whether they read standard input.
const FORWARDED: &[(&str, bool)] = &[("remember", true), ("recall", false), ("proactive", false)];

/// How long the front waits for a daemon's hello before running the engine binary instead.
const HELLO_WAIT: Duration = Duration::from_secs(2);

/// Run `wt-memory` with the arguments of this process.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut stdin = Vec::new();
    if let Some(plan) = forwardable(&args) {
        if let Ok(done) = through_daemon(&plan, &mut stdin) {
            return finish(done);
        }
    }
    run_engine(args, &stdin)
}

/// A command line the daemon may run.
struct Plan {
    argv: Vec<String>,
    project: Option<String>,
    reads_stdin: bool,
}

/// The service did not run the command: the engine binary does.
struct Fallback;

impl<E: std::error::Error> From<E> for Fallback {
    fn from(_: E) -> Fallback {
        Fallback
    }
}

/// Is `args` a command line the daemon runs (a forwarded command, no flag that asks for this
/// process's own store, help or version)? Global `--project NAME` may stand anywhere, as clap
/// allows.
fn forwardable(args: &[OsString]) -> Option<Plan> {
    // Run by the agent (its shell inside a Claude Code session): the engine records its writes as
    // the agent's, which the service's forwarded command line could not tell.
    if !config::get().daemon || config::in_agent_session() {
        return None;
    }
    let argv: Vec<String> = args
        .iter()
        .map(|a| a.to_str().map(str::to_string))
        .collect::<Option<_>>()?;
    let mut project = None;
    let mut personal = false;
    let mut command = None;
    let mut i = 0;
    while i < argv.len() {
        let arg = argv[i].as_str();
        match arg {
            "--project" => {
                project = Some(argv.get(i + 1)?.clone());
                i += 1;
            }
            _ if arg.starts_with("--project=") => project = Some(arg["--project=".len()..].into()),
            // The personal store is a store like the others, with a service of its own; an
            // unknown scope goes to the engine binary, which says what is wrong.
            _ if arg == "--scope" || arg.starts_with("--scope=") => {
                let value = match arg.strip_prefix("--scope=") {
                    Some(v) => v.to_string(),
                    None => {
                        i += 1;
                        argv.get(i)?.clone()
                    }
                };
                personal = crate::project::Scope::parse(&value)? == crate::project::Scope::Personal;
            }
            "--" | "-h" | "--help" | "-V" | "--version" | "--no-daemon" | "--no-migrate" => {
                return None
            }
            _ if command.is_none() => {
                // The first word is the command; a flag before it is not one the front knows.
                command = Some(FORWARDED.iter().find(|(name, _)| *name == arg)?);
            }
            _ => {}
        }
        i += 1;
    }
    let (_, reads_stdin) = command?;
    if personal {
        project = Some(crate::project::GLOBAL.to_string());
    }
    Some(Plan {
        argv,
        project,
        reads_stdin: *reads_stdin,
    })
}

/// Send the command to the store's service, if one this build may use runs. Standard input,
/// once read, is kept in `stdin` for the engine binary should the service not run the command.
fn through_daemon(plan: &Plan, stdin: &mut Vec<u8>) -> Result<Forwarded, Fallback> {
    let cwd = std::env::current_dir()?;
    let project = crate::project::resolve(&cwd, plan.project.as_deref());
    let (mut conn, mine) = wire::say_hello(&project.store_dir, HELLO_WAIT)?;
    let hello = match hello(&mut conn) {
        Ok(hello) => hello,
        // A service that is there and silent: said here, as the engine binary would say it
        // after waiting for its hello a second time.
        Err(Waited) => {
            let pid = wire::service_pid(&project.store_dir);
            return Ok(Forwarded {
                stdout: String::new(),
                stderr: format!(
                    "wt-memory: {}\n",
                    wire::not_answering(&project.store_dir, pid)
                ),
                code: 1,
            });
        }
        Err(Other) => return Err(Fallback),
    };
    let peer: Hello = serde_json::from_value(hello)?;
    if mine.judge(&peer) != wire::Verdict::Use {
        // The engine binary replaces an older service, or says why it cannot.
        return Err(Fallback);
    }
    if plan.reads_stdin && !std::io::stdin().is_terminal() {
        std::io::stdin().read_to_end(stdin)?;
    }
    let lock_wait = config::get().lock_wait;
    let forward = Forward {
        argv: plan.argv.clone(),
        cwd,
        stdin: String::from_utf8_lossy(stdin).into_owned(),
        lock_wait_ms: lock_wait.as_millis() as u64,
    };
    // The command waits for its turn as long as it would wait for the store, then as long as
    // it takes, as it would in the engine binary.
    let line = serde_json::json!({ "forward": &forward });
    match wire::ask_in_turn(&mut conn, &line, lock_wait, None) {
        Ok(answer) => {
            let mut answer: serde_json::Map<String, Value> = serde_json::from_slice(&answer)?;
            Ok(serde_json::from_value(answer.remove("ok").ok_or(Fallback)?)?)
        }
        Err(wire::Unanswered::NotStarted) => Ok(Forwarded {
            stdout: String::new(),
            stderr: format!(
                "wt-memory: the store is busy: its memory service (pid {}) did not get to this command within {:.1}s; nothing was stored, try again (`wt-memory daemon status`)\n",
                peer.pid,
                lock_wait.as_secs_f64()
            ),
            code: 1,
        }),
        // A service that goes away before it answers (idle exit, upgrade) has stored nothing
        // it did not acknowledge; the engine binary starts over, as its client would.
        Err(_) => Err(Fallback),
    }
}

/// What [`hello`] could not read.
enum NoAnswer {
    /// The read timed out before the service took the command.
    Waited,
    Other,
}
use NoAnswer::{Other, Waited};

impl<E: std::error::Error> From<E> for NoAnswer {
    fn from(_: E) -> NoAnswer {
        Other
    }
}

impl From<NoAnswer> for Fallback {
    fn from(_: NoAnswer) -> Fallback {
        Fallback
    }
}

/// Read the service's hello.
fn hello(conn: &mut BufReader<Stream>) -> Result<Value, NoAnswer> {
    let line = match wire::read_line(conn, wire::MAX_LINE) {
        Ok(Some(line)) => line,
        Ok(None) => return Err(Other),
        Err(e) if wire::timed_out(&e) => {
            let _ = conn.get_ref().shutdown(std::net::Shutdown::Write);
            return Err(Waited);
        }
        Err(_) => return Err(Other),
    };
    let mut answer: serde_json::Map<String, Value> = serde_json::from_slice(&line)?;
    answer.remove("hello").ok_or(Other)
}

fn finish(done: Forwarded) -> ExitCode {
    // Output the reader has stopped reading (`| head`) ends quietly, as in the engine binary.
    let _ = std::io::stdout().write_all(done.stdout.as_bytes());
    let _ = std::io::stderr().write_all(done.stderr.as_bytes());
    ExitCode::from(done.code)
}

/// The engine binary (`wt-memory-engine`) beside this one or on PATH, checked to be built for this
/// machine: a program of another would not start, or, worse, be run by the shell as a script.
/// `Err` is the one line to show or log.
pub fn locate_engine() -> Result<std::path::PathBuf, String> {
    let engine = ENGINE;
    let path = config::locate_binary(engine).ok_or_else(|| {
        format!("{engine} is neither next to this program nor on PATH; reinstall wt-tools (`cargo install --path .` installs it)")
    })?;
    crate::os::platform::check_native(&path).map_err(|why| {
        format!(
            "{} is {why}; reinstall wt-tools for this machine (release target {})",
            path.display(),
            crate::os::platform::TARGET
        )
    })?;
    Ok(path)
}

/// Replace this process with the engine binary, run with the same arguments and the standard
/// input this process may already have read.
fn run_engine(args: Vec<OsString>, stdin: &[u8]) -> ExitCode {
    let engine = match locate_engine() {
        Ok(engine) => engine,
        Err(why) => {
            eprintln!("wt-memory: {why}");
            return ExitCode::FAILURE;
        }
    };
    let mut cmd = std::process::Command::new(&engine);
    cmd.args(args);
    if !stdin.is_empty() {
        match replay(stdin) {
            Ok(file) => {
                cmd.stdin(file);
            }
            Err(e) => {
                eprintln!("wt-memory: cannot pass standard input on to {ENGINE}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let e = crate::os::process::hand_over(&mut cmd, "wt-memory");
    eprintln!("wt-memory: cannot run {}: {e}", engine.display());
    ExitCode::FAILURE
}

/// An unlinked file holding `bytes`, positioned at its start.
pub(crate) fn replay(bytes: &[u8]) -> std::io::Result<std::fs::File> {
    use std::io::Seek;
    let mut file = tempfile::tempfile()?;
    file.write_all(bytes)?;
    file.rewind()?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Option<(Vec<String>, Option<String>)> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        forwardable(&args).map(|p| (p.argv, p.project))
    }

    #[test]
    fn only_forwarded_commands_without_local_flags_go_to_the_daemon() {
        let (argv, project) = plan(&["remember", "--type", "Context"]).unwrap();
        assert_eq!(argv, ["remember", "--type", "Context"]);
        assert_eq!(project, None);
        let (_, project) = plan(&["--project", "p", "remember", "--type", "Context"]).unwrap();
        assert_eq!(project.as_deref(), Some("p"));
        let (_, project) = plan(&["remember", "--project=q", "--type", "Context"]).unwrap();
        assert_eq!(project.as_deref(), Some("q"));
        let (_, project) = plan(&["--scope", "personal", "recall", "x"]).unwrap();
        assert_eq!(project.as_deref(), Some(crate::project::GLOBAL));
        let (_, project) = plan(&["recall", "x", "--scope=project"]).unwrap();
        assert_eq!(project, None);
        assert!(plan(&["recall", "x", "--scope", "team"]).is_none());
        let (argv, _) = plan(&["recall", "x", "--limit", "2"]).unwrap();
        assert_eq!(argv, ["recall", "x", "--limit", "2"]);
        assert!(plan(&["proactive", "src/a.rs"]).is_some());
        for local in [
            &["list"][..],
            &["forget", "x"],
            &["recall", "--no-daemon", "x"],
            &["remember", "--no-daemon", "--type", "Context"],
            &["--no-migrate", "remember"],
            &["remember", "--help"],
            &["--version"],
            &["remember", "--", "x"],
            &["--project"],
            &["--bogus", "remember"],
            &[],
        ] {
            assert!(plan(local).is_none(), "{local:?} is not forwarded");
        }
    }
}
