//! export, import, restore, seed, sync.

use super::{print_json, Res};
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;
use wt_memory_core::snapshot;
use wt_memory_foundation::error::Error;
use wt_memory_ops as ops;
use wt_memory_ops::Import;
use wt_memory_service::client::Client;

#[derive(Subcommand)]
pub enum Cmd {
    /// Export every memory as JSON (format wt-memory-export, version 1).
    Export {
        #[arg(long)]
        output: Option<PathBuf>,
        /// Leave out memories tagged `private` (sync always does).
        #[arg(long)]
        exclude_private: bool,
    },
    /// Import an export file (records already present are skipped); with --claude-memory, Claude
    /// Code's auto-memory topic files of this project instead.
    Import {
        file: Option<PathBuf>,
        #[arg(long)]
        dry_run: bool,
        /// Claude Code's auto memory (default: this project's folder under ~/.claude/projects):
        /// each topic file one memory, updated when it changes, forgotten when it is deleted.
        #[arg(long, value_name = "DIR", num_args = 0..=1, conflicts_with_all = ["file", "dry_run"])]
        claude_memory: Option<Option<PathBuf>>,
        /// Claude Code's transcripts of this project's past sessions (default: every worktree's
        /// folder under ~/.claude/projects; or the .jsonl files under DIR): failed commands and the
        /// forms that worked, commits. Read once; a later run reads only what is new.
        #[arg(long, value_name = "DIR", num_args = 0..=1, conflicts_with_all = ["file", "claude_memory"])]
        claude_transcripts: Option<Option<PathBuf>>,
        /// With --claude-transcripts: only transcripts changed since this date (YYYY-MM-DD or 7d).
        #[arg(long, requires = "claude_transcripts")]
        since: Option<String>,
        /// With --claude-transcripts: also run the Stop hook's insight extraction (a lean
        /// `claude -p --model haiku` call) over the spans Stop would have extracted.
        #[arg(long, requires = "claude_transcripts")]
        llm: bool,
        /// With --llm: at most this many model calls (the rest wait for the next run).
        #[arg(long, requires = "llm", default_value_t = 20)]
        max_calls: usize,
        /// The operation named in the undo snapshot.
        #[arg(long, hide = true, default_value = "import", value_name = "OPERATION")]
        snapshot_as: String,
        /// Take no undo snapshot.
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
    /// Import seed memories from YAML (default wt/knowledge/memory-seed.yaml).
    Seed {
        #[arg(long)]
        file: Option<PathBuf>,
        #[arg(long)]
        dry_run: bool,
    },
    /// Share memory through the project's git remote.
    Sync(crate::sync::SyncArgs),
}

fn cannot_write(path: &std::path::Path, e: std::io::Error) -> Error {
    wt_memory_foundation::error::other(format!("cannot write {}: {e}", path.display()))
}

pub fn run(client: &mut Client, cmd: Cmd) -> Res {
    match cmd {
        Cmd::Export {
            output,
            exclude_private,
        } => {
            let text = serde_json::to_string_pretty(&client.run(ops::Export { exclude_private })?)?;
            match output {
                Some(path) => wt_memory_base::paths::write_atomic(&path, text.as_bytes())
                    .map_err(|e| cannot_write(&path, e))?,
                None => println!("{text}"),
            }
        }
        Cmd::Import {
            claude_memory: Some(dir),
            ..
        } => {
            let dir = match dir {
                Some(dir) => dir,
                None => crate::claude_memory::default_dir(client.project()).ok_or_else(|| {
                    wt_memory_foundation::error::bad_input(
                        "import --claude-memory: not in a git repository; name the folder: --claude-memory DIR",
                    )
                })?,
            };
            // A topic about the user goes to the personal store (none outside a repository,
            // where the store is the personal one).
            let mut personal = (!client.project().is_personal()).then(|| {
                Client::open(
                    wt_memory_base::project::personal(&client.project().cwd),
                    wt_memory_service::client::Mode::configured(
                        wt_memory_ops::OpenOptions::default(),
                        wt_memory_service::client::Holding::UntilDropped,
                    ),
                )
            });
            let done = crate::claude_memory::import(client, personal.as_mut(), &dir)?;
            println!(
                "Claude Code's auto memory ({}): {} added, {} updated, {} forgotten, {} unchanged.",
                dir.display(),
                done.added,
                done.updated,
                done.forgotten,
                done.unchanged
            );
        }
        Cmd::Import {
            claude_transcripts: Some(dir),
            since,
            dry_run,
            llm,
            max_calls,
            ..
        } => {
            let files = match &dir {
                Some(dir) => {
                    let mut files = Vec::new();
                    crate::transcripts::jsonl_under(dir, &mut files);
                    files
                }
                None => crate::transcripts::project_transcripts(client.project()),
            };
            let since = since
                .as_deref()
                .map(|s| wt_memory_ops::parse_time(s, "--since"))
                .transpose()?;
            let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
            let report =
                crate::transcripts::import(client, &files, since, dry_run, |done, all| {
                    if terminal {
                        eprint!("\rtranscripts: {done}/{all}");
                        if done == all {
                            eprintln!();
                        }
                    }
                })?;
            println!("{}", report.line());
            if llm {
                let changed = crate::transcripts::changed_since(&files, since);
                let done = crate::transcripts::extract(client, &changed, max_calls, dry_run)?;
                println!("{}", done.line(dry_run));
            }
        }
        Cmd::Import {
            file,
            dry_run,
            snapshot_as,
            no_snapshot,
            ..
        } => {
            let Some(path) = file else {
                return Err(wt_memory_foundation::error::bad_input(
                    "import: give the export file to import",
                ));
            };
            let bytes = std::fs::read(&path).map_err(|e| {
                wt_memory_foundation::error::bad_input(format!(
                    "import: cannot read {}: {e}",
                    path.display()
                ))
            })?;
            let req = Import {
                document: wt_memory_foundation::hygiene::decode_lossy(&bytes),
                dry_run,
                snapshot_as: (!no_snapshot).then_some(snapshot_as),
                from: None,
                moved: false,
            };
            match import_in_parts(client, req) {
                Ok(done) => print_json(&done),
                Err(Error::UnusableExport { message }) => {
                    print_json(&serde_json::json!({ "error": message }));
                    eprintln!("wt-memory: import: {}: {message}", path.display());
                    return Ok(ExitCode::FAILURE);
                }
                Err(e) => return Err(e),
            }
        }
        Cmd::Restore { name, list, json } => return restore(client, name, list, json),
        Cmd::Seed { file, dry_run } => {
            let path = file.unwrap_or_else(|| {
                client
                    .project()
                    .files_root()
                    .join("wt/knowledge/memory-seed.yaml")
            });
            let done = client.run(ops::Seed::from_file(&path, dry_run)?)?;
            let verb = if dry_run { "Would import" } else { "Imported" };
            println!(
                "{verb} {} seed(s), skipped {} duplicate(s) from {}",
                done.imported,
                done.skipped,
                path.display()
            );
        }
        Cmd::Sync(args) => {
            let code = crate::sync::run(
                &args,
                client,
                &mut std::io::stdout(),
                &mut std::io::stderr(),
            );
            return Ok(ExitCode::from(code.clamp(0, 255) as u8));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn restore(client: &mut Client, name: Option<String>, list: bool, json: bool) -> Res {
    let store_dir = client.project().store_dir.clone();
    if list {
        let all = snapshot::list_with_counts(&store_dir);
        if json {
            print_json(&all);
        } else if all.is_empty() {
            println!("No snapshots in {}", snapshot::dir(&store_dir).display());
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
    let done = client.run(ops::Restore { name: name.clone() })?;
    match &done.undo {
        Some(undo) => println!(
            "Snapshot of the current store: {} ({} memories; `wt-memory restore {}` undoes this)",
            undo.name,
            undo.count.unwrap_or(0),
            undo.name
        ),
        None => println!("The store is empty: no snapshot of it taken"),
    }
    let (c, target) = (&done.changes, &done.restored);
    println!("Deleted {} memories not in {}", c.deleted, target.name);
    println!("Re-inserted {} missing memories", c.reinserted);
    println!("Gave back the tags of {} memories", c.retagged);
    if c.errors > 0 {
        println!("{} records of the snapshot could not be restored", c.errors);
    }
    println!(
        "Restored {} ({}, before {}): {} memories",
        target.name, target.taken_at, target.operation, done.count
    );
    Ok(if c.errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Records per request of a large import: each part answers within seconds, and the CLI says how
/// far it has got between parts.
const IMPORT_PART: usize = 1000;

/// Import `req`'s document; one of more than [`IMPORT_PART`] records goes in parts, with a line of
/// progress on stderr after each (the undo snapshot is taken once, before the first part).
fn import_in_parts(
    client: &mut Client,
    req: Import,
) -> std::result::Result<wt_memory_ops::Imported, Error> {
    let doc = match wt_memory_core::exchange::parse_doc(&req.document) {
        Ok(doc) if !req.dry_run && doc.records.len() > IMPORT_PART => doc,
        // Small, a dry run (whose parts could not see each other's records) or unusable (the
        // request reports why): one request.
        _ => return client.run(req.clone()),
    };
    let total = doc.records.len();
    let started = std::time::Instant::now();
    let mut sum = wt_memory_core::exchange::ImportReport::default();
    for (k, part) in doc.records.chunks(IMPORT_PART).enumerate() {
        let document = serde_json::json!({
            "version": doc.version,
            "format": doc.format,
            "project": doc.project,
            "exported_at": doc.exported_at,
            "count": part.len(),
            "records": part,
        });
        let part_req = Import {
            document: document.to_string(),
            dry_run: false,
            snapshot_as: if k == 0 {
                req.snapshot_as.clone()
            } else {
                None
            },
            from: req.from.clone(),
            moved: req.moved,
        };
        let done = client.run(part_req.clone())?.report();
        sum.imported += done.imported;
        sum.skipped += done.skipped;
        sum.errors += done.errors;
        let seen = (k * IMPORT_PART + part.len()).min(total);
        let secs = started.elapsed().as_secs_f64().max(0.001);
        let rate = seen as f64 / secs;
        eprintln!(
            "import: {seen} of {total} records ({:.0}/s, about {} s left)",
            rate,
            ((total - seen) as f64 / rate).round()
        );
    }
    Ok(wt_memory_ops::Imported::Done(sum))
}
