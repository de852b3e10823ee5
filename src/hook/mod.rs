//! `wt-hook-memory`: one handler for every Claude Code hook event plus the Stop-time insight
//! extraction.
//!
//! Rules it lives by (Claude Code's hook contract, see docs/claude-code.md): read one JSON object from
//! stdin, print at most one `{"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}`
//! object, exit 0 always, log failures to a file, and finish well inside the configured timeout.
//! Memory calls go through a [`Client`], opened on first use.
//!
//! It runs in one of two places. The `wt-hook-memory` front hands an event to the project's
//! running service, which runs [`serve`] on the connection's thread (its `Client` then talks to
//! the service like any other); anything else runs here in a hook process of its own
//! ([`main_entry`], `wt-memory-engine --hook <Event>`), with a watchdog.

pub mod cache;
pub mod commits;
mod events;
pub mod extract;
pub mod format;
pub mod gate;
pub mod guard;
pub mod input;
mod learn;
pub mod memory;
pub mod metrics;
mod once;
pub mod query;
mod shown;
pub mod transcript;

use std::cell::RefCell;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wt_memory_base::log;
use wt_memory_service::client::Client;

pub use wt_memory_base::hook_front::internal_deadline;

/// What a handler needs besides its input.
pub struct Ctx {
    pub event: String,
    pub deadline: Instant,
    /// The project: `$CLAUDE_PROJECT_DIR`, else the input's `cwd`, else ours.
    pub project_dir: PathBuf,
    /// Its store and branch, resolved once per event from `project_dir`.
    pub project: wt_memory_base::project::Project,
    pub session: Option<cache::SessionCache>,
    /// The project's memory, opened by the first call that needs it (see [`memory`]).
    pub client: RefCell<Option<Client>>,
    /// What this run asked memory, for the metrics log.
    pub trace: RefCell<metrics::Trace>,
    /// Why memory did not answer, once it has not: later calls of this run are not tried.
    pub memory_down: RefCell<Option<String>>,
    /// PreToolUse registered for the repeat-mistake guard alone (`--guard-only`, init without
    /// `--pretool`): no recall for the tool call.
    pub guard_only: bool,
    /// PreToolUse: the reason the tool call is stopped (`permissionDecision: deny`), if it is.
    pub deny: RefCell<Option<String>>,
    /// PreToolUse: the stop is the user's to decide (`ask`), not a refusal (`deny`).
    pub ask: std::cell::Cell<bool>,
    /// Run by the store's service: its own way in, which the client takes on first use.
    pub service: RefCell<Option<wt_memory_service::Local>>,
    /// A line for the user, not the agent (`systemMessage`: Claude Code shows it and never sends
    /// it to the model): SessionStart's notice of memories held for review.
    pub notice: RefCell<Option<String>>,
}

impl Ctx {
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

pub use wt_memory_base::hook_events::GUARD_ONLY;

/// Output finished this long after the internal deadline is dropped, not printed.
const EMIT_GRACE: Duration = Duration::from_millis(200);

/// Serialises printing with the watchdog: output is either complete or absent.
static OUTPUT: Mutex<()> = Mutex::new(());
/// Watchdog deadline, milliseconds since the epoch (0 = not armed).
static WATCHDOG_MS: AtomicU64 = AtomicU64::new(0);

fn epoch_ms(at: Instant) -> u64 {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    let ahead = at.saturating_duration_since(Instant::now()).as_millis() as u64;
    now_ms + ahead
}

/// Last line of defence: whatever hangs (stdin, a lock, a child that ignores its kill), the process
/// exits 0 with nothing printed shortly after the deadline.
fn arm_watchdog(deadline: Instant, event: String) {
    WATCHDOG_MS.store(
        epoch_ms(deadline + Duration::from_millis(500)),
        Ordering::SeqCst,
    );
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(25));
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        if now >= WATCHDOG_MS.load(Ordering::SeqCst) {
            let _guard = OUTPUT.lock();
            log::error(&event, "internal deadline passed: exiting without output");
            std::process::exit(0);
        }
    });
}

/// The output object's line: the context to add or, for a stopped tool call, the decision and
/// its reason. Nothing is redacted here: every record a front end receives was redacted as it was
/// serialised (the answer leaves `Operation::run` as JSON), by the service or in this process alike, and compiling the
/// redaction rules again would cost the hook a noticeable part of its time (measured:
/// docs/performance.md, "Before the dated rounds: from a child process per call to the resident
/// service").
fn output_line(out: &Output) -> String {
    // Never a hidden character to the agent, whatever a memory or a file held.
    let text = &wt_memory_foundation::hidden::visible(&out.text);
    let event = &out.event;
    // PreCompact's output is read as plain text, pasted into the summariser's instructions.
    if event == "PreCompact" {
        return text.clone();
    }
    let mut line = serde_json::Map::new();
    if let Some(notice) = &out.notice {
        line.insert("systemMessage".into(), notice.as_str().into());
    }
    if text.is_empty() && !out.deny {
        return serde_json::Value::Object(line).to_string();
    }
    let specific = if out.deny {
        serde_json::json!({
            "hookEventName": event,
            "permissionDecision": if out.ask { "ask" } else { "deny" },
            "permissionDecisionReason": text,
        })
    } else {
        serde_json::json!({"hookEventName": event, "additionalContext": text})
    };
    line.insert("hookSpecificOutput".into(), specific);
    serde_json::Value::Object(line).to_string()
}

/// Is output finished at `finished` for a run with `deadline` still worth printing?
fn in_time(event: &str, deadline: Instant, finished: Instant) -> bool {
    let late = finished > deadline + EMIT_GRACE;
    if late {
        log::error(
            event,
            "finished after the internal deadline: output dropped",
        );
    }
    !late
}

/// Print the output object.
fn emit(out: &Output) {
    let _guard = OUTPUT.lock();
    if !in_time(&out.event, out.deadline, Instant::now()) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{}", output_line(out));
    let _ = stdout.flush();
}

/// What a run printed: the event and its context, or the reason its tool call is stopped.
struct Output {
    event: String,
    text: String,
    deny: bool,
    /// With `deny`: the user is asked instead (`permissionDecision: ask`).
    ask: bool,
    deadline: Instant,
    /// For the user only (`systemMessage`).
    notice: Option<String>,
}

/// How a run ended.
enum Handled {
    /// The event is not one this process handles (the service leaves the Stop extraction to a
    /// hook process): nothing was done.
    NotHere(String),
    Done(Option<Output>),
}

/// The hook in this process: read the input, handle it, print.
fn run(args: &[String], memory: Memory) {
    let started = Instant::now();
    let argv_event = args.first().map(String::as_str).filter(|e| !e.is_empty());
    arm_watchdog(
        started + internal_deadline(argv_event.unwrap_or("")),
        argv_event.unwrap_or("").to_string(),
    );
    let raw = match wt_memory_base::hook_front::read_input(
        wt_memory_base::hook_front::input_deadline(started, argv_event.unwrap_or("")),
    ) {
        Ok(raw) => raw,
        Err(e) => return log::error(argv_event.unwrap_or(""), &e),
    };
    if memory == Memory::Ask && started_service_took(args, &raw, started) {
        return;
    }
    let handled = handle(args, raw, started, memory, None, |event, deadline| {
        if argv_event != Some(event) {
            WATCHDOG_MS.store(
                epoch_ms(deadline + Duration::from_millis(500)),
                Ordering::SeqCst,
            );
        }
        true
    });
    if let Handled::Done(Some(out)) = handled {
        emit(&out);
    }
}

/// A cold start: the front found no service for an event the service runs. Start the store's
/// service (within the hook's memory budget) and hand it the event, as the front would have:
/// its rules compile beside the model's load, once, instead of again in this process (about
/// 240 ms of a 590 ms cold prompt hook in a debug build; docs/performance.md). Whether it took
/// the event.
fn started_service_took(args: &[String], raw: &[u8], started: Instant) -> bool {
    use wt_memory_base::hook_events::{runs, Runs};
    let event = args.first().map_or("", String::as_str);
    let config = wt_memory_base::config::get();
    if !config.daemon || runs(event) != Runs::Service {
        return false;
    }
    let Ok(input) = std::str::from_utf8(raw) else {
        return false;
    };
    let project = wt_memory_base::hook_front::hook_project(input);
    if let Err(e) = wt_memory_service::connect(&project, started + memory::MEMORY_BUDGET) {
        log::debug(event, &format!("no service to hand the event to: {e}"));
        return false;
    }
    let deadline = started + internal_deadline(event);
    wt_memory_base::hook_front::hand_over(args, raw, deadline)
}

/// The hook of a `wt-hook-memory` process, run by the store's service on its behalf (see
/// `wt_memory_base::hook_front`): as it would run there, with that process's project directory,
/// plugin and working directory, and never for another configuration.
pub fn serve(
    call: &wt_memory_base::wire::HookRun,
    service: wt_memory_service::Local,
) -> wt_memory_base::wire::HookDone {
    serve_with(call, Some(service))
}

/// [`serve`], with the service's way in when there is one (tests have none: their memory calls
/// go through the socket like any client's).
fn serve_with(
    call: &wt_memory_base::wire::HookRun,
    service: Option<wt_memory_service::Local>,
) -> wt_memory_base::wire::HookDone {
    use wt_memory_base::wire::HookDone;
    let declined = |why: String| HookDone {
        handled: false,
        stdout: None,
        why,
    };
    if call.config != wt_memory_base::config::fingerprint() {
        return declined(
            "the memory service runs under another configuration (its environment differs)".into(),
        );
    }
    let started = Instant::now();
    let env = wt_memory_base::config::CallEnv {
        claude_project_dir: call.claude_project_dir.clone(),
        plugin_root: call.plugin_root,
        cwd: call.cwd.clone(),
    };
    let raw = call.stdin.as_bytes().to_vec();
    let handled = wt_memory_base::config::with_call_env(env, || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handle(
                &call.argv,
                raw,
                started,
                Memory::Ask,
                service,
                |event, _| {
                    wt_memory_base::hook_events::runs(event)
                        == wt_memory_base::hook_events::Runs::Service
                },
            )
        }))
    });
    match handled {
        Ok(Handled::NotHere(why)) => declined(why),
        Ok(Handled::Done(out)) => HookDone {
            handled: true,
            stdout: out
                .filter(|o| in_time(&o.event, o.deadline, Instant::now()))
                .map(|o| output_line(&o)),
            why: String::new(),
        },
        Err(_) => {
            let event = call.argv.first().map_or("", String::as_str);
            log::error(event, "panic while the memory service ran the hook");
            HookDone {
                handled: true,
                ..HookDone::default()
            }
        }
    }
}

/// Handle one hook input that arrived at `started`. `takes(event, deadline)` is asked once the
/// event is known, before anything is done: `false` leaves it alone.
fn handle(
    args: &[String],
    raw: Vec<u8>,
    started: Instant,
    memory: Memory,
    service: Option<wt_memory_service::Local>,
    takes: impl FnOnce(&str, Instant) -> bool,
) -> Handled {
    let argv_event = args.first().map(String::as_str).filter(|e| !e.is_empty());
    let tag = argv_event.unwrap_or("");
    let input = match input::HookInput::parse(&raw) {
        Ok(i) => i,
        Err(e) => {
            log::error(tag, &e);
            return Handled::Done(None);
        }
    };
    // The payload names the event; the argument (what settings.json registered) stands in when
    // the field is missing, as older payloads and the previous system's callers rely on.
    let event = match (input.text("hook_event_name"), argv_event) {
        (Some(named), Some(arg)) if named != arg => {
            log::error(
                tag,
                &format!("argument {arg} but stdin says {named}: handling it as {named}"),
            );
            named.to_string()
        }
        (Some(named), _) => named.to_string(),
        (None, Some(arg)) => arg.to_string(),
        (None, None) => {
            log::error(
                tag,
                "no event: stdin has no hook_event_name and no argument was given",
            );
            return Handled::Done(None);
        }
    };
    let deadline = started + internal_deadline(&event);
    if !takes(&event, deadline) {
        return Handled::NotHere(format!("{event} runs in a hook process of its own"));
    }
    let project_dir =
        wt_memory_base::config::project_dir(input.text("cwd").map(std::path::Path::new)).path;
    let project = wt_memory_base::project::resolve(&project_dir, None);
    if let Some(why) = steps_aside(&event, &input, &raw, &project_dir, &project.store_dir) {
        log::debug(&event, why);
        return Handled::Done(None);
    }
    drop(raw);
    let session = input
        .str("session_id")
        .and_then(|id| cache::SessionCache::new(&wt_memory_base::paths::runtime_dir(), id));
    let ctx = Ctx {
        project_dir,
        project,
        event: event.clone(),
        deadline,
        session,
        client: RefCell::new(None),
        trace: RefCell::default(),
        memory_down: RefCell::new(
            (memory == Memory::Unanswered)
                .then(|| "its memory service did not answer this hook's front".to_string()),
        ),
        guard_only: args.iter().skip(1).any(|a| a == GUARD_ONLY),
        deny: RefCell::new(None),
        ask: std::cell::Cell::new(false),
        service: RefCell::new(service),
        notice: RefCell::new(None),
    };
    log::debug(&event, &format!("start in {}", ctx.project_dir.display()));
    shown::collect();
    let context = events::dispatch(&ctx, &input);
    gate::record_shown(&ctx, input.str("session_id"), context.as_deref());
    let (output, deny) = match ctx.deny.take() {
        Some(reason) => (Some(reason), true),
        None => (context, false),
    };
    let late = Instant::now() > deadline + EMIT_GRACE;
    metrics::record_run(&ctx, &input, output.as_deref(), late, started);
    drop(input);
    // Let go of the store before printing: other hooks may be waiting for it.
    drop(ctx.client.take());
    log::debug(&event, &format!("done in {:?}", started.elapsed()));
    let notice = ctx.notice.take();
    if output.is_none() && notice.is_none() {
        return Handled::Done(None);
    }
    Handled::Done(Some(Output {
        event,
        text: output.unwrap_or_default(),
        deny,
        ask: deny && ctx.ask.get(),
        deadline,
        notice,
    }))
}

/// Why this run leaves the event to another one, if it does: a handler registered in settings
/// while the plugin is enabled (the plugin's own runs), or a second copy of an event another run
/// has just claimed.
fn steps_aside(
    event: &str,
    input: &input::HookInput,
    raw: &[u8],
    project_dir: &std::path::Path,
    store: &std::path::Path,
) -> Option<&'static str> {
    if !wt_memory_foundation::plugin::started_by_plugin()
        && wt_memory_foundation::plugin::enabled(project_dir).is_some()
    {
        return Some("the wt-tools plugin is enabled: its own hook handles this event");
    }
    let claims = wt_memory_base::paths::runtime_dir().join("hook-claims");
    if matches!(event, "SessionStart" | "Stop") {
        once::sweep(&claims);
    }
    let session = input.str("session_id").unwrap_or("");
    if once::needs_claim(event) && !once::claim(&claims, &once::key(store, session, event, raw)) {
        return Some("another copy of this hook is handling this event");
    }
    None
}

/// Whether a hook run may ask memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    Ask,
    /// Its service was asked already and did not answer (see `wt_memory_base::hook_front`):
    /// reads are skipped, writes spooled.
    Unanswered,
}

/// The hook handler in this process (`wt-memory-engine --hook <Event>`, run by `wt-hook-memory`);
/// `args` are the hook's own. Never panics outward and never prints anything but the one output
/// object; the caller exits 0.
pub fn main_entry(args: &[String], memory: Memory) {
    if wt_memory_base::config::get().hook_disabled {
        return;
    }
    std::panic::set_hook(Box::new(|info| log::error("", &format!("panic: {info}"))));
    let _ = std::panic::catch_unwind(|| run(args, memory));
}

#[cfg(test)]
mod tests {
    use super::*;
    use wt_memory_base::wire::HookRun;

    fn call(argv: &str, stdin: &str, config: String) -> HookRun {
        HookRun {
            argv: vec![argv.to_string()],
            stdin: stdin.to_string(),
            claude_project_dir: None,
            plugin_root: false,
            cwd: std::env::temp_dir(),
            config,
        }
    }

    #[test]
    fn the_service_leaves_the_stop_extraction_and_other_configurations_to_a_hook_process() {
        let ours = wt_memory_base::config::fingerprint().to_string();
        let stop = r#"{"hook_event_name":"Stop","session_id":"s1"}"#;
        let done = serve_with(&call("Stop", stop, ours.clone()), None);
        assert!(!done.handled && done.stdout.is_none(), "{done:?}");
        assert!(done.why.contains("Stop"), "{}", done.why);
        // The payload names the event, whatever the argument says.
        let done = serve_with(&call("PostToolUse", stop, ours.clone()), None);
        assert!(!done.handled, "{done:?}");
        let prompt = r#"{"hook_event_name":"UserPromptSubmit","session_id":"s2","prompt":"x"}"#;
        let done = serve_with(&call("UserPromptSubmit", prompt, "another".into()), None);
        assert!(
            !done.handled && done.why.contains("configuration"),
            "{done:?}"
        );
        // Input that is no hook payload is handled: logged, nothing printed.
        let done = serve_with(&call("UserPromptSubmit", "not json", ours), None);
        assert!(done.handled && done.stdout.is_none(), "{done:?}");
    }
}
