//! The hook's memory calls: the same typed calls as every front end, through a [`Client`] opened
//! in this process on first use (in the service, one that joins the service's queue directly).
//! Memory gets [`MEMORY_BUDGET`] per call, and never past the event's deadline: a store that
//! cannot answer in time makes a read fail (the hook stays silent), and a write go to the store's
//! spool ([`wt_memory_ops::spool`]), which whoever opens the store next applies. Once memory has failed
//! to answer, this run asks it nothing more.

use super::Ctx;
use std::time::{Duration, Instant};
use wt_memory_core::rank::QueryKind;
use wt_memory_core::record::{split_tags, MemoryRecord};
use wt_memory_ops::{self as ops, OpenOptions, Operation, Recall, Remember};
use wt_memory_service::client::{Client, Holding, Mode};

/// Time kept back after a store call for formatting and printing.
const MARGIN: Duration = Duration::from_millis(150);

/// The longest a hook waits on memory for one call (longer than a cold service start at 10k
/// memories takes; measured: docs/performance.md, "Figures moved from code comments"): a prompt
/// is never held for a store that cannot answer.
pub const MEMORY_BUDGET: Duration = Duration::from_millis(1000);

/// Run `f` on the hook's client, opening it (with a lock wait that ends before the deadline) on
/// first use.
fn with_client<T>(
    ctx: &Ctx,
    what: &str,
    f: impl FnOnce(&mut Client) -> wt_memory_foundation::error::Result<T>,
) -> Result<T, String> {
    if let Some(why) = ctx.memory_down.borrow().as_ref() {
        return Err(format!(
            "{what}: skipped, memory did not answer earlier: {why}"
        ));
    }
    let wait = ctx.remaining().saturating_sub(MARGIN);
    if wait < Duration::from_millis(100) {
        return Err(format!("no time left for {what}"));
    }
    let wait = wait
        .min(MEMORY_BUDGET)
        .min(wt_memory_base::config::get().lock_wait);
    let mut slot = ctx.client.borrow_mut();
    let client = slot.get_or_insert_with(|| {
        let project = ctx.project.clone();
        // Through the daemon when configured; if it cannot answer in time the hook stays silent
        // rather than wait for a store the starting daemon is about to take.
        let mode = Mode {
            fallback_direct: false,
            ..Mode::configured(OpenOptions::default(), Holding::UntilDropped)
        };
        // Run by the service: its own queue, not a second connection to itself.
        match ctx.service.borrow().clone() {
            Some(service) => Client::in_service(project, service, mode),
            None => Client::open(project, mode),
        }
    });
    client.set_lock_wait(wait);
    let started = Instant::now();
    let out = f(client).map_err(|e| {
        if unreachable(&e) {
            *ctx.memory_down.borrow_mut() = Some(e.to_string());
        }
        format!("{what}: {e}")
    });
    if out.is_err() {
        ctx.trace.borrow_mut().failed = true;
    }
    super::log::debug(
        &ctx.event,
        &format!(
            "{what}: {} in {:?}",
            if out.is_ok() { "ok" } else { "failed" },
            started.elapsed()
        ),
    );
    out
}

/// Did the store fail to answer (rather than refuse the request)?
fn unreachable(e: &wt_memory_foundation::error::Error) -> bool {
    matches!(
        e,
        wt_memory_foundation::error::Error::Unanswered { .. }
            | wt_memory_foundation::error::Error::Daemon { .. }
            | wt_memory_foundation::error::Error::Busy { .. }
    )
}

/// Note a query and what it returned, for the metrics log.
fn traced(
    ctx: &Ctx,
    query: &str,
    found: Result<Vec<MemoryRecord>, String>,
) -> Result<Vec<MemoryRecord>, String> {
    let mut trace = ctx.trace.borrow_mut();
    trace.query = Some(query.to_string());
    if let Ok(records) = &found {
        trace
            .candidates
            .extend(records.iter().map(|r| (r.id.clone(), r.relevance_score)));
    }
    found
}

pub fn proactive(
    ctx: &Ctx,
    query: &str,
    kind: QueryKind,
    limit: usize,
) -> Result<Vec<MemoryRecord>, String> {
    traced(
        ctx,
        query,
        with_client(ctx, "proactive", |c| {
            c.run(ops::Proactive::new(query, Some(kind), limit))
        }),
    )
}

/// What a hook shows for a query: memories in full and up to `index` more to list by title,
/// from the project's store and, beside it, the personal one (asked at the same time, on a
/// thread of its own: the two answers are merged on one scale, see [`crate::scope`]).
pub fn tiers(
    ctx: &Ctx,
    query: &str,
    kind: QueryKind,
    limit: usize,
    index: usize,
) -> Result<wt_memory_core::recall::Tiers, String> {
    let ask = ops::Tiers::new(query, Some(kind), limit, index);
    // A file, a command or an error is the project's: a personal memory is shown for one only
    // when it is about it (in full), never listed as a maybe.
    let mut theirs = ops::Tiers {
        supplement: true,
        index: if kind == QueryKind::Prompt { index } else { 0 },
        ..ask.clone()
    };
    // Run by the project's service: the query is embedded once, here, and the personal store's
    // service takes the vectors (the project's call then finds them in its cache too).
    if crate::scope::personal_beside(&ctx.project).is_some() {
        if let Some(local) = ctx.service.borrow().as_ref() {
            theirs.vectors = local
                .embeddings(&theirs.texts_to_embed())
                .unwrap_or_default();
        }
    }
    let personal = ask_personal(ctx, theirs);
    let found = with_client(ctx, "proactive", |c| c.run(ask));
    let mut trace = ctx.trace.borrow_mut();
    trace.query = Some(query.to_string());
    if let Ok(tiers) = &found {
        // The project's own only: the metrics log is the project's, and names no personal memory.
        trace.candidates.extend(
            tiers
                .full
                .iter()
                .chain(&tiers.index)
                .map(|r| (r.id.clone(), r.relevance_score)),
        );
    }
    let answered = personal.and_then(|asked| asked.join().ok().flatten());
    match (found, answered) {
        (Ok(own), Some(theirs)) => Ok(crate::scope::merge_tiers(own, theirs, limit, index)),
        (found, _) => found,
    }
}

/// Ask the personal store beside the project for `op`'s answer, on a thread of its own within
/// this call's memory budget (None: no personal store, or no time left). A personal store that
/// does not answer costs its own memories only: the thread answers None, and the project's
/// answer goes out alone.
fn ask_personal<O: Operation + 'static>(
    ctx: &Ctx,
    op: O,
) -> Option<std::thread::JoinHandle<Option<O::Answer>>>
where
    O::Answer: Send,
{
    if ctx.memory_down.borrow().is_some() {
        return None;
    }
    let personal = crate::scope::personal_beside(&ctx.project)?;
    let wait = ctx
        .remaining()
        .saturating_sub(MARGIN)
        .min(MEMORY_BUDGET)
        .min(wt_memory_base::config::get().lock_wait);
    if wait < Duration::from_millis(100) {
        return None;
    }
    let event = ctx.event.clone();
    let spawned = std::thread::Builder::new()
        .name("personal-memory".into())
        .spawn(move || {
            let started = Instant::now();
            let mut client = Client::open(personal, personal_mode(started + wait));
            client.set_lock_wait(wait);
            let found = client.run(op);
            super::log::debug(
                &event,
                &match &found {
                    Ok(_) => format!("personal {}: ok in {:?}", O::NAME, started.elapsed()),
                    Err(e) => format!("personal {}: {e}", O::NAME),
                },
            );
            found.ok()
        });
    spawned.ok()
}

/// How a hook reaches the personal store: through its service (started when none runs), never
/// waiting past `deadline` and never opening the store itself meanwhile.
fn personal_mode(deadline: Instant) -> Mode {
    Mode {
        fallback_direct: false,
        deadline: Some(deadline),
        ..Mode::configured(OpenOptions::default(), Holding::UntilDropped)
    }
}

/// Store an insight about the person (the Stop harvest's `Personal:` lines) in the personal
/// store; returns its id. Outside any repository the project is the personal store already. A
/// personal store that cannot take it in time gets it through its spool, as the project's
/// would.
pub fn remember_personal(ctx: &Ctx, req: Remember, source: &str) -> Result<String, String> {
    if ctx.project.is_personal() {
        return remember_as(ctx, req, source).map(|(id, _)| id);
    }
    let personal = wt_memory_base::project::personal(&ctx.project.cwd);
    let wait = ctx
        .remaining()
        .saturating_sub(MARGIN)
        .min(MEMORY_BUDGET * 5);
    let mut client = Client::open(personal.clone(), personal_mode(Instant::now() + wait));
    client.set_lock_wait(wait);
    client.set_source(source);
    match client.run(req.clone()) {
        Ok(done) => Ok(done.id),
        Err(e) if !unreachable(&e) => Err(format!("personal store: {e}")),
        Err(e) => {
            wt_memory_ops::spool::add(&personal, &req, source, None).map_err(|spool_err| {
                format!("personal store: {e}; not spooled either: {spool_err}")
            })?;
            super::log::info(
                &ctx.event,
                &format!("personal store: {e}; the write is spooled"),
            );
            Ok(String::new())
        }
    }
}

/// Take Claude Code's auto-memory topic files in `dir` into the store (see [`crate::claude_memory`]).
pub fn import_claude_memory(
    ctx: &Ctx,
    dir: &std::path::Path,
) -> Result<crate::claude_memory::Report, String> {
    let wait = ctx.remaining().saturating_sub(MARGIN).min(MEMORY_BUDGET);
    let mut personal = (!ctx.project.is_personal()).then(|| {
        let personal = wt_memory_base::project::personal(&ctx.project.cwd);
        let mut client = Client::open(personal, personal_mode(Instant::now() + wait));
        client.set_lock_wait(wait);
        client
    });
    with_client(ctx, "claude memory import", |c| {
        crate::claude_memory::import(c, personal.as_mut(), dir)
    })
}

/// The store at a glance (how many memories, of which types, about which topics), and how many
/// memories the personal store beside it holds, and holds for review.
pub fn map(ctx: &Ctx) -> Result<(wt_memory_ops::MemoryMap, usize, usize), String> {
    let personal = ask_personal(ctx, ops::Map);
    let own = run(ctx, ops::Map)?;
    let theirs = personal.and_then(|asked| asked.join().ok().flatten());
    Ok((
        own,
        theirs.as_ref().map_or(0, |m| m.total),
        theirs.as_ref().map_or(0, |m| m.held),
    ))
}

/// The standing rules of the project's store and of the personal store beside it (tagged
/// [`STANDING_TAG`](wt_memory_core::record::STANDING_TAG); no ranking, newest first).
pub fn standing(ctx: &Ctx, limit: usize) -> (Vec<MemoryRecord>, Vec<MemoryRecord>) {
    let req = Recall {
        tags: vec![wt_memory_core::record::STANDING_TAG.to_string()],
        tags_only: true,
        limit,
        ..Recall::default()
    };
    let personal = ask_personal(ctx, req.clone());
    let own = with_client(ctx, "standing", |c| c.run(req)).unwrap_or_else(|e| {
        super::log::error(&ctx.event, &format!("standing rules: {e}"));
        Vec::new()
    });
    let theirs = personal
        .and_then(|asked| asked.join().ok().flatten())
        .unwrap_or_default();
    (own, theirs)
}

/// One memory by full id (None when it was forgotten since).
pub fn get(ctx: &Ctx, id: &str) -> Result<Option<MemoryRecord>, String> {
    run(ctx, ops::Get { id: id.to_string() })
}

/// Hybrid recall, optionally restricted to memories carrying `tags`.
pub fn recall(
    ctx: &Ctx,
    query: &str,
    kind: QueryKind,
    limit: usize,
    tags: Option<&str>,
) -> Result<Vec<MemoryRecord>, String> {
    let req = Recall {
        query: query.to_string(),
        limit,
        tags: tags.map(split_tags).unwrap_or_default(),
        kind: Some(kind),
        ..Recall::default()
    };
    traced(
        ctx,
        query,
        with_client(ctx, "recall", |c| c.run(req.clone())),
    )
}

/// Carry out `op` for this run, named in the hook's log by its operation.
pub fn run<O: Operation>(ctx: &Ctx, op: O) -> Result<O::Answer, String> {
    with_client(ctx, O::NAME, |c| c.run(op))
}

/// The memories carrying `tag`, newest first (no ranking).
pub fn tagged(ctx: &Ctx, tag: &str, limit: usize) -> Result<Vec<MemoryRecord>, String> {
    let req = Recall {
        tags: vec![tag.to_string()],
        tags_only: true,
        limit,
        ..Recall::default()
    };
    with_client(ctx, "tagged", |c| c.run(req.clone()))
}

/// Store `content` with its retrieval `keys`; returns the id (the existing one when the same
/// content is stored already). `source` names the writer in the metrics log (commit, extraction).
pub fn remember(
    ctx: &Ctx,
    content: &str,
    ty: &str,
    tags: &str,
    keys: &[String],
    source: &str,
) -> Result<String, String> {
    let req = Remember {
        content: content.to_string(),
        memory_type: ty.to_string(),
        tags: split_tags(tags),
        keys: keys.to_vec(),
        ..Remember::default()
    };
    remember_as(ctx, req, source).map(|(id, _)| id)
}

/// Store `req`; returns the id and whether the same content was stored already (false when
/// the write was spooled).
pub fn remember_as(ctx: &Ctx, req: Remember, source: &str) -> Result<(String, bool), String> {
    let stored = with_client(ctx, "remember", |c| {
        c.set_source(source);
        c.run(req.clone())
    });
    match stored {
        Ok(done) => Ok((done.id, done.duplicate)),
        // The store could not take it in time: keep it for the next opening of the store.
        Err(e) if ctx.memory_down.borrow().is_some() => {
            let branch = ctx.project.branch();
            wt_memory_ops::spool::add(&ctx.project, &req, source, branch.as_deref())
                .map_err(|spool_err| format!("{e}; not spooled either: {spool_err}"))?;
            super::log::info(&ctx.event, &format!("{e}; the write is spooled"));
            Ok((String::new(), false))
        }
        Err(e) => Err(e),
    }
}

/// Let go of the store before slow work (the Stop hook's model call), so other sessions' hooks
/// are not kept out meanwhile; the next call opens it again.
pub fn release(ctx: &Ctx) {
    if let Some(client) = ctx.client.borrow_mut().as_mut() {
        client.release();
    }
}
