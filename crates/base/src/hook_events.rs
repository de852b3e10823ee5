//! The one table of Claude Code hook events this project handles: what `wt-project init` and the
//! plugin register (matcher, timeout), how long the handler may take (its internal deadline),
//! where it runs and whether it may add to the session's context. The hook front, init, the
//! plugin's generated files and the docs read it; a test fails when a deadline is not safely below
//! its timeout. Adding an event: a row here, a handler in `src/hook/events.rs`.

use std::time::Duration;

/// Where a hook's work is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// By the project's running service when there is one (else in a hook process).
    Service,
    /// In a hook process of its own.
    HookProcess,
    /// In a worker the hook starts and leaves running: the hook returns within milliseconds
    /// (`claude -p` cancels hooks still running when it exits).
    Detached,
}

/// One registration of the handler.
#[derive(Debug, Clone, Copy)]
pub struct HookEvent {
    pub name: &'static str,
    /// The registration's `matcher` (None: every tool, or an event without matchers).
    pub matcher: Option<&'static str>,
    /// What follows the event on the handler's command line.
    pub args: Option<&'static str>,
    /// The `timeout` registered with Claude Code, in seconds.
    pub timeout_secs: u32,
    /// How long the handler's work may take; past it, the hook prints nothing and exits 0.
    pub deadline: Duration,
    pub runs: Runs,
    /// What it may give the session: context for the model, a decision, or nothing.
    pub output: &'static str,
    /// The function that handles it (`src/hook/events.rs`), for the docs.
    pub handler: &'static str,
}

/// The tools that act, for PreToolUse, and the reads that can take a secret file into the
/// session (`Read`, `Grep`): the action gate sees each of their calls (docs/security.md).
pub const ACTING_TOOLS: &str =
    "Bash|Write|Edit|MultiEdit|NotebookEdit|WebFetch|PowerShell|Read|Grep|mcp__.*";

/// Our own MCP tools in both wirings: PostToolUse records what their answers showed the agent.
pub const OUR_MCP_TOOLS: &str = "mcp__wt-tools__.*|mcp__plugin_wt-tools_wt-tools__.*";

/// The argument of a PreToolUse handler registered for the repeat-mistake guard alone.
pub const GUARD_ONLY: &str = "--guard-only";

const fn row(
    name: &'static str,
    matcher: Option<&'static str>,
    timeout_secs: u32,
    deadline_ms: u64,
    runs: Runs,
    output: &'static str,
    handler: &'static str,
) -> HookEvent {
    HookEvent {
        name,
        matcher,
        args: None,
        timeout_secs,
        deadline: Duration::from_millis(deadline_ms),
        runs,
        output,
        handler,
    }
}

/// Every registration `wt-project init` writes (without `--pretool`), in order. With
/// `--pretool`, [`PRETOOL_RECALL`] replaces the guard-only PreToolUse row.
pub const EVENTS: &[HookEvent] = &[
    row(
        "SessionStart",
        None,
        10,
        7000,
        Runs::Service,
        "context: memory map, cheat sheet, project context",
        "session_start",
    ),
    row(
        "UserPromptSubmit",
        None,
        15,
        10_000,
        Runs::Service,
        "context: rules, memories for the prompt",
        "user_prompt_submit",
    ),
    HookEvent {
        args: Some(GUARD_ONLY),
        ..row(
            "PreToolUse",
            Some(ACTING_TOOLS),
            5,
            3500,
            Runs::Service,
            "decision: the action gate (ask or deny); deny a repeat of a failed command, once",
            "pre_tool_use",
        )
    },
    row(
        "PostToolUse",
        Some("Read"),
        5,
        3500,
        Runs::Service,
        "context: memories about the file",
        "post_tool_use",
    ),
    row(
        "PostToolUse",
        Some("Bash"),
        5,
        3500,
        Runs::Service,
        "context: memories about the command; stores commits and fixes",
        "post_tool_use",
    ),
    row(
        "PostToolUse",
        Some(OUR_MCP_TOOLS),
        5,
        3500,
        Runs::Service,
        "nothing; records what our MCP answers showed, for the action gate",
        "post_tool_use",
    ),
    row(
        "PostToolUseFailure",
        Some("Bash"),
        5,
        3500,
        Runs::Service,
        "context: past fixes; stores the failure",
        "post_tool_use_failure",
    ),
    row(
        "SubagentStart",
        None,
        10,
        7000,
        Runs::Service,
        "context: memories for the subagent's task",
        "subagent_start",
    ),
    row(
        "SubagentStop",
        None,
        5,
        3000,
        Runs::HookProcess,
        "nothing (output would keep the subagent running)",
        "-",
    ),
    row(
        "PreCompact",
        None,
        5,
        3000,
        Runs::Service,
        "plain text for the summariser: the memory ids to keep",
        "pre_compact",
    ),
    row(
        "Stop",
        None,
        10,
        120_000,
        Runs::Detached,
        "nothing; extracts insights, records use",
        "stop",
    ),
];

/// `wt-project init --pretool`: recall before Bash, Edit and Write too, with the gate and the guard.
pub const PRETOOL_RECALL: HookEvent = row(
    "PreToolUse",
    Some(ACTING_TOOLS),
    5,
    3500,
    Runs::Service,
    "decision (the guard) or context: memories for the command or file",
    "pre_tool_use",
);

/// A hook's output is dropped this long after its deadline; the front and the hook process's
/// watchdog wait this much longer before they exit.
pub const WATCHDOG_GRACE: Duration = Duration::from_millis(500);

/// The internal deadline of `event` (its first row), 3 s for any other.
pub fn deadline(event: &str) -> Duration {
    EVENTS
        .iter()
        .find(|e| e.name == event)
        .map_or(Duration::from_secs(3), |e| e.deadline)
}

/// Where `event`'s work is done (an unknown event: in a hook process).
pub fn runs(event: &str) -> Runs {
    EVENTS
        .iter()
        .find(|e| e.name == event)
        .map_or(Runs::HookProcess, |e| e.runs)
}

/// The table as Markdown, for `docs/architecture.md` (a test keeps the two the same).
pub fn markdown() -> String {
    let mut out = String::from(
        "| event | matcher | registered timeout | internal deadline | runs | output | handler |\n|---|---|---|---|---|---|---|\n",
    );
    for e in EVENTS.iter().chain([&PRETOOL_RECALL]) {
        let matcher = match (e.matcher, e.args) {
            (Some(m), Some(a)) => format!("`{m}` (`{a}`)"),
            (Some(m), None) => format!("`{m}`"),
            (None, _) => "-".into(),
        };
        let deadline = match e.runs {
            Runs::Detached => format!("returns at once; worker {} s", e.deadline.as_secs()),
            _ => format!("{} s", e.deadline.as_secs_f64()),
        };
        let runs = match e.runs {
            Runs::Service => "service",
            Runs::HookProcess => "hook process",
            Runs::Detached => "detached worker",
        };
        let row = format!(
            "{} | {matcher} | {} s | {deadline} | {runs} | {} | `{}`",
            e.name, e.timeout_secs, e.output, e.handler
        );
        // A `|` inside a cell (the matcher `Bash|Edit|Write`) would split it.
        let cells: Vec<String> = row.split(" | ").map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a hook may spend beyond its deadline and grace before it exits: the process's own
    /// start and exit on a loaded machine.
    const MARGIN: Duration = Duration::from_millis(1000);

    #[test]
    fn every_deadline_is_safely_below_its_registered_timeout() {
        for e in EVENTS.iter().chain([&PRETOOL_RECALL]) {
            let timeout = Duration::from_secs(u64::from(e.timeout_secs));
            if e.runs == Runs::Detached {
                // The hook returns at once; its worker is not bound by the timeout.
                continue;
            }
            assert!(
                e.deadline + WATCHDOG_GRACE + MARGIN <= timeout,
                "{} {:?}: deadline {:?} + grace is not safely below its {timeout:?} timeout",
                e.name,
                e.matcher,
                e.deadline
            );
        }
    }

    #[test]
    fn an_events_rows_agree_on_its_deadline_and_where_it_runs() {
        for e in EVENTS.iter().chain([&PRETOOL_RECALL]) {
            assert_eq!(deadline(e.name), e.deadline, "{}", e.name);
            assert_eq!(runs(e.name), e.runs, "{}", e.name);
        }
        assert_eq!(deadline("Notification"), Duration::from_secs(3));
    }

    #[test]
    fn the_architecture_doc_shows_this_table() {
        let doc =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md");
        let text = std::fs::read_to_string(&doc).unwrap();
        assert!(
            text.contains(&markdown()),
            "docs/architecture.md must hold the hook event table as markdown() prints it:\n{}",
            markdown()
        );
    }
}
