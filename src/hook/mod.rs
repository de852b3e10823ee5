//! `wt-hook-memory`: one handler for every Claude Code hook event plus the Stop-time insight
//! extraction.
//!
//! Rules it lives by (Claude Code's hook contract, see docs/claude-code.md): read one JSON object from
//! stdin, print at most one `{"hookSpecificOutput":{"hookEventName":…,"additionalContext":…}}`
//! object, exit 0 always, log failures to a file, and finish well inside the configured timeout.
//! Memory calls go through a [`Client`] in this process, opened on first use.

pub mod cache;
pub mod commits;
mod events;
pub mod extract;
pub mod format;
mod guard;
pub mod input;
pub mod memory;
pub mod metrics;
mod once;
pub mod query;
pub mod transcript;

use crate::client::Client;
use crate::log;
use std::cell::RefCell;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Set in the environment of the `claude` child started by Stop: a nested `wt-hook-memory` exits
/// at once, so the child's own hooks cannot recurse into another extraction.
/// Larger input is not a hook payload we can use (the 2 MB tool response fixture must still pass).
const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

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

/// What a handler needs besides its input.
pub struct Ctx {
    pub event: String,
    pub deadline: Instant,
    /// The project: `$CLAUDE_PROJECT_DIR`, else the input's `cwd`, else ours.
    pub project_dir: PathBuf,
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
}

impl Ctx {
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// The argument of a PreToolUse handler registered for the guard alone.
pub const GUARD_ONLY: &str = "--guard-only";

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

fn read_stdin() -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    std::io::stdin()
        .lock()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    if buf.len() as u64 > MAX_INPUT_BYTES {
        return Err(format!(
            "stdin larger than {MAX_INPUT_BYTES} bytes: ignored"
        ));
    }
    Ok(buf)
}

/// Print the output object. Nothing is redacted here: every record a front end receives was
/// redacted as it was serialised (`service::execute`), by the service or in this process alike,
/// and compiling the redaction rules again would cost the hook ~9 ms.
fn emit(event: &str, text: &str, deadline: Instant) {
    let out = serde_json::json!({
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": text}
    });
    let _guard = OUTPUT.lock();
    if Instant::now() > deadline + EMIT_GRACE {
        log::error(
            event,
            "finished after the internal deadline: output dropped",
        );
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{out}");
    let _ = stdout.flush();
}

fn run(args: &[String]) {
    let started = Instant::now();
    let argv_event = args.first().map(String::as_str).filter(|e| !e.is_empty());
    let mut deadline = started + internal_deadline(argv_event.unwrap_or(""));
    arm_watchdog(deadline, argv_event.unwrap_or("").to_string());
    let tag = argv_event.unwrap_or("");

    let raw = match read_stdin() {
        Ok(raw) => raw,
        Err(e) => return log::error(tag, &e),
    };
    let input = match input::HookInput::parse(&raw) {
        Ok(i) => i,
        Err(e) => return log::error(tag, &e),
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
            return log::error(
                tag,
                "no event: stdin has no hook_event_name and no argument was given",
            )
        }
    };
    if argv_event != Some(event.as_str()) {
        deadline = started + internal_deadline(&event);
        WATCHDOG_MS.store(
            epoch_ms(deadline + Duration::from_millis(500)),
            Ordering::SeqCst,
        );
    }
    let project_dir = crate::config::project_dir(input.text("cwd").map(std::path::Path::new)).path;
    if let Some(why) = steps_aside(&event, &input, &raw, &project_dir) {
        return log::debug(&event, why);
    }
    drop(raw);
    let session = input
        .str("session_id")
        .and_then(|id| cache::SessionCache::new(&crate::paths::runtime_dir(), id));
    let ctx = Ctx {
        project_dir,
        event: event.clone(),
        deadline,
        session,
        client: RefCell::new(None),
        trace: RefCell::default(),
        memory_down: RefCell::new(None),
        guard_only: args.iter().skip(1).any(|a| a == GUARD_ONLY),
    };
    log::debug(&event, &format!("start in {}", ctx.project_dir.display()));
    let output = events::dispatch(&ctx, &input);
    let late = Instant::now() > deadline + EMIT_GRACE;
    metrics::record_run(&ctx, &input, output.as_deref(), late, started);
    drop(input);
    // Let go of the store before printing: other hooks may be waiting for it.
    drop(ctx.client.take());
    if let Some(text) = output {
        emit(&event, &text, deadline);
    }
    log::debug(&event, &format!("done in {:?}", started.elapsed()));
}

/// Why this run leaves the event to another one, if it does: a handler registered in settings
/// while the plugin is enabled (the plugin's own runs), or a second copy of an event another run
/// has just claimed.
fn steps_aside(
    event: &str,
    input: &input::HookInput,
    raw: &[u8],
    project_dir: &std::path::Path,
) -> Option<&'static str> {
    if !crate::plugin::started_by_plugin() && crate::plugin::enabled(project_dir).is_some() {
        return Some("the wt-tools plugin is enabled: its own hook handles this event");
    }
    let claims = crate::paths::runtime_dir().join("hook-claims");
    if matches!(event, "SessionStart" | "Stop") {
        once::sweep(&claims);
    }
    let session = input.str("session_id").unwrap_or("");
    if once::needs_claim(event) && !once::claim(&claims, &once::key(session, event, raw)) {
        return Some("another copy of this hook is handling this event");
    }
    None
}

/// Entry point of the `wt-hook-memory` binary; `args` excludes the program name. Never panics
/// outward and never prints anything but the one output object; the caller exits 0.
pub fn main_entry(args: &[String]) {
    if crate::config::get().hook_disabled {
        return;
    }
    std::panic::set_hook(Box::new(|info| log::error("", &format!("panic: {info}"))));
    let _ = std::panic::catch_unwind(|| run(args));
}
