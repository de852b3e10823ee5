//! remember, supersede, recall, proactive, list, get, context, brain, forget.

use super::{print_json, read_stdin, Res};
use crate::scope::{BothRead, Scope};
use clap::{Args, Subcommand};
use std::io::Write;
use std::process::ExitCode;
use wt_memory_core::rank::QueryKind;
use wt_memory_core::record::{short_id, split_tags};
use wt_memory_foundation::error::Error;
use wt_memory_ops::{self as ops, Forget, Recall, RecallMode, Remember, Remembered};
use wt_memory_service::client::Client;

#[derive(Subcommand)]
pub enum Cmd {
    /// Store a memory read from stdin; prints its id.
    Remember(RememberArgs),
    /// Mark memory NEWER as the replacement of memory OLDER (ids or 8+ hex digits): recall ranks
    /// the older one after it and marks it, and the hooks stop injecting it.
    Supersede(ops::Supersede),
    /// Memories relevant to a query (JSON array, best first, with relevance_score 0..1).
    Recall(RecallArgs),
    /// Memories worth injecting for a context (gated by relevance; never stores the context).
    Proactive {
        #[arg(allow_hyphen_values = true)]
        context: String,
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// What the context is: prompt, path, command or error (default: from its shape).
        #[arg(long)]
        kind: Option<String>,
    },
    /// All memories, newest first (JSON array).
    List {
        #[arg(long = "type")]
        ty: Option<String>,
        #[arg(long)]
        limit: Option<usize>,
        /// Only your standing rules, of this project's store and your personal store (`scope`
        /// says which); see `wt-memory standing`.
        #[arg(long, conflicts_with = "ty")]
        standing: bool,
    },
    /// One memory by id or unique id prefix (JSON; {} when not found).
    #[command(alias = "inspect")]
    Get(ops::Get),
    /// Decisions, learnings and context, about a topic if given.
    Context {
        #[arg(allow_hyphen_values = true)]
        topic: Option<String>,
    },
    /// Memory tiers (a CLI process keeps everything long-term).
    Brain,
    /// Delete memories.
    Forget(ForgetArgs),
    /// Move a memory (id or 8+ hex digits) from this project's store to your personal store:
    /// memory about you, read in every project, never synced or exported with a project.
    Promote { id: String },
    /// Move a memory from your personal store to this project's store.
    Demote { id: String },
    /// A memory's retrieval keys: print them, or --add a question it should answer (in the words
    /// you would ask it) and --remove a key that finds it wrongly.
    Keys(ops::EditKeys),
    /// Remove the keys learned from use (prompts whose answer cited the memory) from one memory,
    /// or from every memory with --all; keys a writer gave stay.
    Unlearn {
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        #[arg(long)]
        all: bool,
    },
}

#[derive(Args)]
pub struct RememberArgs {
    /// Decision, Learning or Context.
    #[arg(long = "type")]
    ty: Option<String>,
    #[arg(long, default_value = "")]
    tags: String,
    /// JSON object; values are stored as strings.
    #[arg(long)]
    metadata: Option<String>,
    #[arg(long)]
    failure: bool,
    #[arg(long)]
    anomaly: bool,
    /// 0..1 (default 0.5).
    #[arg(long)]
    importance: Option<f32>,
    /// The id of an older memory this one replaces (or 8+ hex digits of it): recall ranks the
    /// older one lower and marks it, and the hooks stop injecting it.
    #[arg(long, value_name = "ID")]
    supersedes: Option<String>,
    /// Retrieval keys, each one argument: questions a developer would ask when this memory
    /// helps, and an anchor line of the files, commands and identifiers it is specific to.
    #[arg(long, num_args = 1.., value_name = "KEY")]
    keys: Vec<String>,
    /// Print {"id": …, "duplicate": …, "similar": […]} (similar: older memories on the same
    /// subject, which the new one may replace).
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct RecallArgs {
    #[arg(allow_hyphen_values = true)]
    query: Option<String>,
    #[arg(long, default_value_t = 5)]
    limit: usize,
    /// hybrid (default: meaning and keywords, current branch first), semantic (meaning only) or
    /// temporal (the same relevant memories, newest first).
    #[arg(long, default_value = "hybrid")]
    mode: String,
    #[arg(long)]
    tags: Option<String>,
    #[arg(long)]
    tags_only: bool,
    #[arg(long)]
    min_importance: Option<f32>,
    #[arg(long)]
    since: Option<String>,
    #[arg(long)]
    until: Option<String>,
    /// What the query is: prompt, path, command or error (default: from its shape).
    #[arg(long)]
    kind: Option<String>,
    /// Add to each result's relevance_reason how often a hook showed it, how often the agent
    /// used it, and what that does to the hooks' relevance (learning from use).
    #[arg(long)]
    explain: bool,
}

#[derive(Args)]
pub struct ForgetArgs {
    id: Option<String>,
    #[arg(long)]
    all: bool,
    #[arg(long)]
    confirm: bool,
    #[arg(long, value_name = "DAYS")]
    older_than: Option<u32>,
    #[arg(long)]
    tags: Option<String>,
    #[arg(long)]
    pattern: Option<String>,
    #[arg(long)]
    since: Option<String>,
    #[arg(long)]
    until: Option<String>,
}

fn parse_kind(kind: Option<&str>) -> Result<Option<QueryKind>, wt_memory_foundation::error::Error> {
    kind.map(|k| {
        QueryKind::parse(k).ok_or_else(|| {
            wt_memory_foundation::error::bad_input(format!(
                "unknown --kind '{k}' (use one of {})",
                QueryKind::NAMES.join(", ")
            ))
        })
    })
    .transpose()
}

/// The standing rules of both stores, the project's first.
fn standing_rules(
    client: &mut Client,
    personal: Option<&mut Client>,
    limit: Option<usize>,
) -> Result<Vec<wt_memory_core::record::MemoryRecord>, Error> {
    let ask = Recall {
        tags: vec![wt_memory_core::record::STANDING_TAG.into()],
        tags_only: true,
        limit: limit.unwrap_or(200),
        ..Recall::default()
    };
    let mut all = Vec::new();
    for (scope, c) in [(Scope::Project, Some(client)), (Scope::Personal, personal)] {
        let Some(c) = c else { continue };
        for mut r in c.run(ask.clone())? {
            r.scope = Some(scope);
            r.relevance_score = None;
            all.push(r);
        }
    }
    Ok(all)
}

/// Run `cmd`; `personal` is the personal store's client for a read of both scopes (None: no
/// personal store beside this project) and for a move between them.
pub fn run(client: &mut Client, mut personal: Option<Client>, cmd: Cmd) -> Res {
    let cmd = match both_read(cmd) {
        Ok(read) => return read_both(client, personal.as_mut(), read?),
        Err(other) => *other,
    };
    match cmd {
        Cmd::Promote { id } | Cmd::Demote { id } if personal.is_none() => {
            return Err(wt_memory_foundation::error::other(format!(
                "cannot move {id}: the personal store was not opened"
            )))
        }
        Cmd::Promote { id } => {
            return move_between(client, personal.as_mut().expect("checked above"), &id)
        }
        Cmd::Demote { id } => {
            return move_between(personal.as_mut().expect("checked above"), client, &id)
        }
        Cmd::Remember(a) => remember(client, a)?,
        Cmd::Supersede(op) => {
            let done = client.run(op)?;
            println!("{} now replaces {}", done.newer, done.older);
        }
        Cmd::Recall(_) | Cmd::Proactive { .. } => unreachable!("answered by read_both above"),
        Cmd::List {
            limit,
            standing: true,
            ..
        } => print_json(&standing_rules(client, personal.as_mut(), limit)?),
        Cmd::List { ty, limit, .. } => print_json(&client.run(ops::List {
            memory_type: ty,
            limit,
        })?),
        Cmd::Get(op) => match client.run(op)? {
            Some(r) => print_json(&r),
            None => println!("{{}}"),
        },
        Cmd::Context { topic } => match client.run(ops::Context { topic })? {
            Some(summary) => print_json(&summary),
            None => println!("{{}}"),
        },
        Cmd::Brain => print_json(&client.run(ops::Brain)?),
        Cmd::Keys(op) => {
            let record = if op.add.is_empty() && op.remove.is_empty() {
                let id = op.id;
                client.run(ops::Get { id: id.clone() })?.ok_or_else(|| {
                    wt_memory_foundation::error::not_found(format!(
                        "no memory {id} (see `wt-memory list`)"
                    ))
                })?
            } else {
                client.run(op)?
            };
            // Stored keys are redacted on write; output redacts again, as every record's does.
            let redacted = |keys: Vec<&str>| -> Vec<String> {
                keys.into_iter()
                    .map(wt_memory_foundation::hygiene::redact)
                    .collect()
            };
            print_json(&serde_json::json!({
                "id": record.id,
                "keys": redacted(record.written_keys()),
                "keys_learned": redacted(record.learned_keys()),
            }));
        }
        Cmd::Unlearn { id, .. } => {
            let done = client.run(ops::Unlearn { id })?;
            println!(
                "Removed {} learned key(s) from {} memor{}.",
                done.keys,
                done.memories,
                if done.memories == 1 { "y" } else { "ies" }
            );
        }
        Cmd::Forget(a) => {
            let parse = |s: &Option<String>, what| {
                s.as_deref().map(|s| ops::parse_time(s, what)).transpose()
            };
            let req = Forget {
                id: a.id,
                all: a.all,
                confirm: a.confirm,
                older_than_days: a.older_than,
                tags: a.tags.as_deref().map(split_tags).unwrap_or_default(),
                pattern: a.pattern,
                since: parse(&a.since, "--since")?,
                until: parse(&a.until, "--until")?,
            };
            print_json(&client.run(req)?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The request `recall` sends for `a`.
fn recall_request(a: RecallArgs) -> Result<Recall, Error> {
    Recall {
        query: a.query.unwrap_or_default(),
        limit: a.limit,
        mode: RecallMode::parse(&a.mode)?,
        tags: a.tags.as_deref().map(split_tags).unwrap_or_default(),
        tags_only: a.tags_only,
        min_importance: a.min_importance,
        kind: parse_kind(a.kind.as_deref())?,
        explain: a.explain,
        ..Recall::default()
    }
    .with_dates(a.since.as_deref(), a.until.as_deref())
}

/// The read a `recall` or `proactive` command line asks (any other command back as it was).
fn both_read(cmd: Cmd) -> Result<Result<BothRead, Error>, Box<Cmd>> {
    Ok(match cmd {
        Cmd::Recall(a) => recall_request(a).map(BothRead::Recall),
        Cmd::Proactive {
            context,
            limit,
            kind,
        } => parse_kind(kind.as_deref())
            .map(|kind| BothRead::Proactive(ops::Proactive::new(&context, kind, limit))),
        other => return Err(Box::new(other)),
    })
}

/// The service's read for a `recall` or `proactive` command line the `wt-memory` front
/// forwarded, checked as the client checks it (None: not such a command, or one the engine
/// binary should refuse in its own words).
pub(super) fn query_request(cmd: Cmd) -> Option<BothRead> {
    let read = both_read(cmd).ok()?.ok()?;
    read.project_request().validate().ok()?;
    Some(read)
}

impl Cmd {
    /// `recall` and `proactive` read the personal store beside the project's.
    pub(super) fn reads_both_scopes(&self) -> bool {
        matches!(
            self,
            Cmd::Recall(_) | Cmd::Proactive { .. } | Cmd::List { standing: true, .. }
        )
    }

    /// `promote` and `demote` move a memory between the two stores.
    pub(super) fn moves_between_scopes(&self) -> bool {
        matches!(self, Cmd::Promote { .. } | Cmd::Demote { .. })
    }
}

/// `recall` or `proactive`: the project's store and, beside it, the personal one.
fn read_both(client: &mut Client, personal: Option<&mut Client>, read: BothRead) -> Res {
    let personal_asked = personal.is_some();
    let (mut records, skipped) = read.run(client, personal)?;
    if let Some(why) = skipped {
        eprintln!("wt-memory: note: {why}; this project's memories only");
    }
    if !personal_asked && client.project().is_personal() {
        crate::scope::mark(&mut records, Scope::Personal);
    }
    print_json(&records);
    Ok(ExitCode::SUCCESS)
}

/// `promote` / `demote`: one memory moved between the stores.
fn move_between(from: &mut Client, to: &mut Client, id: &str) -> Res {
    let moved = crate::scope::move_memory(from, to, id)?;
    println!(
        "{} moved from the {} store to the {} store{}",
        short_id(&moved.id),
        moved.from.as_str(),
        moved.to.as_str(),
        if moved.already_there {
            " (it held the same memory already)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn remember(client: &mut Client, a: RememberArgs) -> Result<(), Error> {
    let content = read_stdin()?;
    remember_with(
        |req| client.run(req.clone()),
        a,
        content,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )
}

/// The request `remember` sends for `a` and `content`.
pub(super) fn remember_request(a: &RememberArgs, content: String) -> Result<Remember, Error> {
    let Some(ty) = a.ty.clone() else {
        return Err(wt_memory_foundation::error::bad_input(
            "remember: --type is required (Decision, Learning or Context)",
        ));
    };
    Ok(Remember {
        content,
        memory_type: ty,
        tags: split_tags(&a.tags),
        metadata: a
            .metadata
            .as_deref()
            .map(ops::parse_metadata)
            .transpose()?
            .unwrap_or_default(),
        failure: a.failure,
        anomaly: a.anomaly,
        importance: a.importance,
        supersedes: a.supersedes.clone(),
        keys: a.keys.clone(),
    })
}

/// `remember` of `content`, stored by `send` and reported on `out` and `err`: the command line's,
/// and the service's when the `wt-memory` front forwards the command ([`super::ForwardedRemember`]).
pub(super) fn remember_with(
    send: impl FnOnce(&Remember) -> Result<Remembered, Error>,
    a: RememberArgs,
    content: String,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Error> {
    let req = remember_request(&a, content)?;
    let done = send(&req)?;
    if let Some(note) = &done.note {
        writeln!(err, "{note}")?;
    }
    if let Some(why) = &done.held {
        writeln!(
            err,
            "wt-memory: stored but held for review ({why}): never injected until you approve it with `wt-memory review --approve {}`",
            wt_memory_core::record::short_id(&done.id)
        )?;
    }
    if a.json {
        let mut line = serde_json::json!({"id": done.id, "duplicate": done.duplicate});
        if let Some(why) = &done.held {
            line["held"] = why.as_str().into();
        }
        if !done.similar.is_empty() {
            line["similar"] = serde_json::to_value(&done.similar)?;
        }
        writeln!(out, "{line}")?;
    } else {
        writeln!(out, "{}", done.id)?;
        for s in &done.similar {
            writeln!(
                err,
                "similar older memory {} ({:.2}): {}\n  if the new one replaces it: wt-memory supersede {} {}",
                short_id(&s.id),
                s.similarity,
                s.content,
                short_id(&done.id),
                short_id(&s.id)
            )?;
        }
    }
    Ok(())
}
