//! What the hook tells the metrics log: each run that asked memory something (its query, the
//! candidates, what was injected and how long it took), and at Stop which injected memories the
//! agent used. Recording goes through the run's own client (one message to a daemon); a failure
//! is logged and never changes what the hook prints.

use super::input::HookInput;
use super::{log, Ctx};
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;
use wt_memory_ops::metrics::usage::{self, InjectedMemory};
use wt_memory_ops::metrics::{self, Event, Injected, Outcome, Used};

/// What one run asked memory and got back.
#[derive(Default)]
pub struct Trace {
    /// The run's main query (the last one asked).
    pub query: Option<String>,
    /// Every memory returned, with its calibrated score, in order.
    pub candidates: Vec<(String, Option<f64>)>,
    pub failed: bool,
}

/// The kind of query an event makes: calibration and the report tell them apart.
pub fn query_kind(event: &str, tool: Option<&str>) -> &'static str {
    match (event, tool) {
        ("SessionStart", _) => "project",
        ("UserPromptSubmit", _) => "prompt",
        ("PostToolUseFailure", _) => "error",
        ("SubagentStart", _) => "task",
        (_, Some("Read")) => "path",
        (_, Some("Bash")) => "command",
        _ => "other",
    }
}

/// Record this run, if it asked memory anything.
pub fn record_run(
    ctx: &Ctx,
    input: &HookInput,
    output: Option<&str>,
    late: bool,
    started: Instant,
) {
    let trace = ctx.trace.take();
    let Some(query) = trace.query else { return };
    if !metrics::enabled() {
        return;
    }
    let shown = if late { "" } else { output.unwrap_or("") };
    // The session's id book says which short id each memory got; without a session the ids are
    // the id book's first choice.
    let book: HashMap<String, String> = match &ctx.session {
        Some(cache) if shown.contains("[MEM#") => cache
            .load()
            .mem_ids
            .into_iter()
            .map(|(s, f)| (f, s))
            .collect(),
        _ => HashMap::new(),
    };
    let mut injected: Vec<Injected> = Vec::new();
    for (id, score) in &trace.candidates {
        let shows = match book.get(id) {
            Some(short) => shown.contains(&format!("[MEM#{short}]")),
            None => super::format::short_forms(id)
                .iter()
                .any(|s| shown.contains(&format!("[MEM#{s}]"))),
        };
        if shows && !injected.iter().any(|i| &i.memory == id) {
            injected.push(Injected {
                memory: id.clone(),
                score: *score,
            });
        }
    }
    if wt_memory_base::config::get().hook_debug {
        let scores: Vec<String> = trace
            .candidates
            .iter()
            .map(|(id, s)| format!("{}={:.3}", &id[..id.len().min(8)], s.unwrap_or(-1.0)))
            .collect();
        log::debug(
            &ctx.event,
            &format!("candidates for {query:?}: {}", scores.join(" ")),
        );
    }
    let outcome = if late {
        Outcome::Deadline
    } else if !shown.is_empty() {
        Outcome::Injected
    } else if trace.failed {
        Outcome::Error
    } else {
        Outcome::Abstained
    };
    let run = metrics::RunRow {
        at_ms: metrics::now_ms(),
        session: input.str("session_id").unwrap_or("").to_string(),
        event: ctx.event.clone(),
        query_kind: query_kind(&ctx.event, input.str("tool_name")).to_string(),
        query,
        candidates: trace.candidates.len() as u32,
        injected,
        chars: shown.chars().count() as u32,
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        outcome,
    };
    if let Some(client) = ctx.client.borrow_mut().as_mut() {
        if let Err(e) = send(client, vec![Event::Run(run)]) {
            log::error(&ctx.event, &format!("metrics: {e}"));
        }
    }
}

/// Every memory the session's hooks showed, by the short id it was shown with (lower-case):
/// those injected in full and those listed in an index (an entry the agent fetched and cited was
/// used as much as a full one).
pub fn shown_ids(cache: &super::cache::SessionCache) -> std::collections::BTreeMap<String, String> {
    let state = cache.load();
    let mut ids = state.mem_ids;
    for id in state.indexed {
        if !ids.values().any(|full| *full == id) {
            ids.insert(wt_memory_core::record::short_id(&id).to_string(), id);
        }
    }
    ids
}

/// At Stop (and SessionEnd): record which memories injected or listed in this session the
/// transcript shows the agent using. Each (session, memory) is recorded once, however often Stop runs.
pub fn record_use(ctx: &Ctx, input: &HookInput) -> Result<usize, String> {
    if !metrics::enabled() {
        return Ok(0);
    }
    let (Some(cache), Some(path)) = (&ctx.session, input.text("transcript_path")) else {
        return Ok(0);
    };
    let ids = shown_ids(cache);
    if ids.is_empty() {
        return Ok(0);
    }
    let (mut entries, _) = super::transcript::read_from(Path::new(path), 0)
        .map_err(|e| format!("cannot read the transcript {path}: {e}"))?;
    // Stop's payload carries the answer just given, which the transcript may not hold yet.
    if let Some(answer) = input.text("last_assistant_message") {
        entries.push(
            serde_json::json!({"type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "text", "text": answer}]}}),
        );
    }
    let mut contents = Vec::new();
    for (short, id) in &ids {
        if let Some(record) = super::memory::get(ctx, id)? {
            contents.push((short.clone(), id.clone(), record.content));
        }
    }
    let injected: Vec<InjectedMemory> = contents
        .iter()
        .map(|(short, id, content)| InjectedMemory { short, id, content })
        .collect();
    let session = input.str("session_id").unwrap_or("").to_string();
    let used: Vec<Event> = usage::used(&entries, &injected)
        .into_iter()
        .map(|(memory, how)| {
            Event::Used(Used {
                at_ms: metrics::now_ms(),
                session: session.clone(),
                memory,
                how: how.as_str().to_string(),
            })
        })
        .collect();
    let n = used.len();
    // Every memory shown, used or not, for the use counts (the prior learns from both).
    let shown = injected.iter().map(|m| {
        Event::Shown(metrics::Shown {
            at_ms: metrics::now_ms(),
            session: session.clone(),
            memory: m.id.to_string(),
        })
    });
    let events: Vec<Event> = shown.chain(used).collect();
    if let Some(client) = ctx.client.borrow_mut().as_mut() {
        send(client, events).map_err(|e| format!("metrics: {e}"))?;
    }
    Ok(n)
}

/// Add `events` to the project's metrics log through `client` (nothing when there are none or
/// metrics are off).
pub(super) fn send(
    client: &mut wt_memory_service::client::Client,
    events: Vec<Event>,
) -> wt_memory_foundation::error::Result<()> {
    match wt_memory_ops::Record::of(events) {
        Some(record) => client.run(record),
        None => Ok(()),
    }
}
