//! `wt-memory sync`: share a project's memory through the project's own git remote.
//!
//! Every source (`<user>/<machine>`) owns one file, `<user>/<machine>/memories.json`, on the orphan
//! branch `wt-memory`; it holds a full export document. `push` publishes this store's export there,
//! `pull` imports everyone else's through the normal `import` (so ids and `original_id` dedup).
//!
//! Two rules shape the code:
//! - The user's checkout is never touched: all git work happens in a throw-away repository in a
//!   temp dir, built with plumbing (no checkout, no hooks), talking to the remote's URL.
//! - The store lock is never held during git work: export and import go through the project's
//!   [`Client`], which is told to release the store right after each of them.
//!
//! Messages go to the writers the caller passes (stdout and stderr for the CLI, the tool result
//! for the MCP server).

mod document;
mod git;
mod identity;

pub use document::{content_hash, scrub_export, validate_export};
pub use git::{publish, remote_tip, snapshot, Committer, PublishOutcome, Remote, Snapshot};
pub use identity::{identity, sanitize_machine, sanitize_user, Identity};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

use std::cell::RefCell;
use std::io::Write;
use wt_memory_ops as ops;
use wt_memory_service::client::Client;

/// One line to the sync's output (`say!(self, …)`) or its error stream (`say!(err self, …)`).
macro_rules! say {
    (err $ctx:expr, $($arg:tt)*) => {{ let _ = writeln!($ctx.err.borrow_mut(), $($arg)*); }};
    ($ctx:expr) => {{ let _ = writeln!($ctx.out.borrow_mut()); }};
    ($ctx:expr, $($arg:tt)*) => {{ let _ = writeln!($ctx.out.borrow_mut(), $($arg)*); }};
}

/// The orphan branch every source publishes to (shared with the previous implementation).
pub const BRANCH: &str = "wt-memory";
/// File name of a source's export, under `<user>/<machine>/`.
pub const FILE_NAME: &str = "memories.json";
/// State file in the project's store directory.
pub const STATE_FILE: &str = ".sync-state";
/// How often a push is re-applied when the remote branch moved under it (after the first try).
pub const PUSH_RETRIES: usize = 3;

/// Network git operations are killed after this.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// Repo-local settings copied into the scratch repository so it reaches the remote the way the
/// user's repository does (global settings apply anyway: same HOME).
const TRANSPORT_CONFIG: &str = r"^(core\.sshcommand|http\..*|credential\..*)$";

#[derive(clap::Args, Debug, Clone)]
pub struct SyncArgs {
    /// What to do; without one: push, then pull.
    #[command(subcommand)]
    pub action: Option<SyncAction>,
    /// Git remote to share through.
    #[arg(long, value_name = "NAME", default_value = "origin", global = true)]
    pub remote: String,
    /// Machine part of the identity (default: $WT_MEMORY_MACHINE, else the short host name).
    #[arg(long, value_name = "NAME", global = true)]
    pub machine: Option<String>,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum SyncAction {
    /// Publish this store's export as <user>/<machine>/memories.json on the wt-memory branch.
    Push {
        /// Push even when nothing changed since the last push.
        #[arg(long)]
        force: bool,
    },
    /// Import every other source's memories from the wt-memory branch.
    Pull {
        /// Only this source: `user/machine`, or `user` for all of that user's machines.
        #[arg(long, value_name = "USER/MACHINE")]
        from: Option<String>,
    },
    /// Show the identity, the last push/pull and the sources on the remote.
    Status,
}

/// Entry point of `wt-memory sync` and the MCP sync tools: writes its messages to `out` and its
/// errors (one line each, `wt-memory: …` as every command's) to `err`, and returns the exit code.
pub fn run(args: &SyncArgs, client: &mut Client, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let ctx = match SyncContext::new(args, client, out, err) {
        Ok(ctx) => ctx,
        Err((e, err)) => {
            let _ = writeln!(err, "wt-memory: {e:#}");
            return 1;
        }
    };
    let report = |outcome: Result<i32>| {
        outcome.unwrap_or_else(|e| {
            say!(err ctx, "wt-memory: {e:#}");
            1
        })
    };
    match &args.action {
        Some(SyncAction::Push { force }) => report(ctx.push(*force)),
        Some(SyncAction::Pull { from }) => report(ctx.pull(from.as_deref())),
        Some(SyncAction::Status) => report(ctx.status()),
        None => {
            say!(ctx, "--- Push ---");
            let push = report(ctx.push(false));
            say!(ctx);
            say!(ctx, "--- Pull ---");
            let pull = report(ctx.pull(None));
            push.max(pull)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// State

/// `.sync-state`: string values only, as in the previous implementation.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct SyncState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_push_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_push_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_pull_commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_pull_at: Option<String>,
    /// A pull of a version that holds new sources' memories ran here: the sources pulled before
    /// it were trusted then, once; every later new source waits for `wt-memory review --trust`.
    #[serde(default)]
    pub sources_reviewed: bool,
}

impl SyncState {
    /// The state at `path`; a missing or unreadable file is an empty state (worst case: one
    /// redundant push or pull, both idempotent).
    pub fn load(path: &Path) -> SyncState {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self)?;
        bytes.push(b'\n');
        wt_memory_base::paths::write_atomic(path, &bytes)
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

fn now_iso() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

// ---------------------------------------------------------------------------------------------
// The commands

struct SyncContext<'a> {
    client: RefCell<&'a mut Client>,
    out: RefCell<&'a mut dyn Write>,
    err: RefCell<&'a mut dyn Write>,
    repo: PathBuf,
    remote: Remote,
    identity: Identity,
    state_path: PathBuf,
}

/// Why one source did not import.
enum SourceFailure {
    /// The file on the branch is not a usable export: skipped until someone pushes a good one.
    Corrupt(String),
    /// Our side failed (store busy, child killed...): worth retrying on the next pull.
    Import(String),
}

impl<'a> SyncContext<'a> {
    /// The context, or the error and the writer to report it on.
    #[allow(clippy::type_complexity)]
    fn new(
        args: &SyncArgs,
        client: &'a mut Client,
        out: &'a mut dyn Write,
        err: &'a mut dyn Write,
    ) -> std::result::Result<Self, (anyhow::Error, &'a mut dyn Write)> {
        client.set_source("sync");
        let project = client.project().clone();
        let setup = || -> Result<(PathBuf, Remote, Identity)> {
            if project.is_personal() {
                return Err(anyhow!(
                    "not a git repository: sync runs on a repository's store; your personal store (the one used here) is never synced"
                ));
            }
            let repo = project
                .toplevel
                .clone()
                .ok_or_else(|| anyhow!("not a git repository"))?;
            let remote = Remote::open(&repo, &args.remote)?;
            let identity = identity(&repo, args.machine.as_deref())?;
            Ok((repo, remote, identity))
        };
        match setup() {
            Ok((repo, remote, identity)) => Ok(SyncContext {
                client: RefCell::new(client),
                out: RefCell::new(out),
                err: RefCell::new(err),
                state_path: project.store_dir.join(STATE_FILE),
                repo,
                remote,
                identity,
            }),
            Err(e) => Err((e, err)),
        }
    }

    /// Run one store operation, then let go of the store so no git work happens under its lock.
    fn with_store<T>(
        &self,
        f: impl FnOnce(&mut Client) -> wt_memory_foundation::error::Result<T>,
    ) -> wt_memory_foundation::error::Result<T> {
        let mut client = self.client.borrow_mut();
        let out = f(&mut client);
        client.release();
        out
    }

    fn export(&self) -> Result<Value> {
        let doc = self
            .with_store(|c| {
                c.run(ops::Export {
                    exclude_private: true,
                })
            })
            .map_err(|e| anyhow!("export failed: {e}"))?;
        let bytes = serde_json::to_vec(&doc)?;
        validate_export(&bytes).context("export produced an unusable document")?;
        Ok(doc)
    }

    fn push(&self, force: bool) -> Result<i32> {
        let mut doc = self.export()?;
        scrub_export(&mut doc);
        let records = doc["records"].as_array().cloned().unwrap_or_default();
        let hash = content_hash(&records, &self.identity, &self.remote.push_url);
        let mut state = SyncState::load(&self.state_path);
        if !force && state.last_push_hash.as_deref() == Some(hash.as_str()) {
            say!(self, "Nothing to push.");
            return Ok(0);
        }
        let mut contents = serde_json::to_vec_pretty(&doc)?;
        contents.push(b'\n');
        let committer = Committer::of_repo(&self.repo);
        let outcome = publish(&self.remote, &self.identity, &contents, &committer)?;
        match outcome {
            PublishOutcome::Unchanged => say!(self, "Nothing to push."),
            PublishOutcome::Pushed { attempts, .. } => {
                let retried = if attempts > 1 {
                    format!(", after {attempts} attempts")
                } else {
                    String::new()
                };
                let n = records.len();
                let noun = if n == 1 { "memory" } else { "memories" };
                say!(self, "Pushed to {} ({n} {noun}{retried})", self.identity);
            }
        }
        state.last_push_hash = Some(hash);
        state.last_push_at = Some(now_iso());
        state.save(&self.state_path)?;
        Ok(0)
    }

    /// Does `source` match a `--from` filter (`user/machine` or just `user`)?
    fn matches_from(source: &str, from: &str) -> bool {
        source == from || source.split('/').next() == Some(from)
    }

    fn pull(&self, from: Option<&str>) -> Result<i32> {
        let from = from.map(str::trim).filter(|f| !f.is_empty());
        if let Some(f) = from {
            let valid = f.split('/').count() <= 2 && f.split('/').all(|p| !p.is_empty());
            if !valid {
                bail!("--from expects user/machine or user, got '{f}'");
            }
        }
        let mut state = SyncState::load(&self.state_path);
        let scratch_remote = &self.remote;
        // Cheap check first: no fetch when the branch has not moved since the last full pull.
        if from.is_none() {
            let tip = remote_tip(scratch_remote)?;
            match tip {
                None => {
                    say!(
                        self,
                        "No sync branch found. Run 'wt-memory sync push' first."
                    );
                    return Ok(0);
                }
                Some(t) if state.last_pull_commit.as_deref() == Some(t.as_str()) => {
                    say!(self, "Up to date.");
                    return Ok(0);
                }
                Some(_) => {}
            }
        }
        let Some(snap) = snapshot(scratch_remote)? else {
            say!(
                self,
                "No sync branch found. Run 'wt-memory sync push' first."
            );
            return Ok(0);
        };
        let me = self.identity.to_string();
        let selected: Vec<&String> = snap
            .sources
            .iter()
            .filter(|s| match from {
                // Naming a source explicitly may include our own (restoring a lost store).
                Some(f) => Self::matches_from(s, f),
                None => **s != me,
            })
            .collect();
        if selected.is_empty() {
            if let Some(f) = from {
                let known = if snap.sources.is_empty() {
                    "none".to_string()
                } else {
                    snap.sources.join(", ")
                };
                bail!("no source '{f}' on branch '{BRANCH}' (sources: {known})");
            }
            say!(self, "No other sources found.");
            state.sources_reviewed = true;
            state.last_pull_commit = Some(snap.tip.clone());
            state.last_pull_at = Some(now_iso());
            state.save(&self.state_path)?;
            return Ok(0);
        }

        self.trust_known_sources(&selected, &me, &state)?;
        if !state.sources_reviewed {
            state.sources_reviewed = true;
            state.save(&self.state_path)?;
        }
        let (mut new, mut skipped, mut imported_sources) = (0u64, 0u64, 0usize);
        let mut failed_sources = 0usize;
        // One undo snapshot per pull: the first import that writes takes it, the others do not.
        let mut snapshot_taken = false;
        for source in selected {
            match self.import_source(&snap, source, !snapshot_taken) {
                Ok(counts) => {
                    snapshot_taken |= counts.imported > 0;
                    let mut errors = if counts.errors > 0 {
                        format!(", {} errors", counts.errors)
                    } else {
                        String::new()
                    };
                    if counts.held > 0 {
                        errors.push_str(&format!(
                            ", {} held for review (`wt-memory review`)",
                            counts.held
                        ));
                    }
                    say!(
                        self,
                        "{source}: {} new, {} skipped{errors}",
                        counts.imported,
                        counts.skipped
                    );
                    new += counts.imported as u64;
                    skipped += counts.skipped as u64;
                    imported_sources += 1;
                }
                Err(SourceFailure::Corrupt(why)) => {
                    say!(self, "{source}: skipped, corrupt file ({why})");
                }
                Err(SourceFailure::Import(why)) => {
                    say!(self, "{source}: import failed ({why})");
                    failed_sources += 1;
                }
            }
        }
        say!(
            self,
            "Total: {new} new, {skipped} skipped from {imported_sources} source(s)"
        );
        state.last_pull_at = Some(now_iso());
        // A failed import must be retried next time, so the commit is only recorded when every
        // source was either imported or is unusable as it stands on the branch.
        if failed_sources == 0 && from.is_none() {
            state.last_pull_commit = Some(snap.tip.clone());
        }
        state.save(&self.state_path)?;
        if failed_sources > 0 {
            say!(
                err self,
                "wt-memory: {failed_sources} source(s) failed to import; run 'wt-memory sync pull' again"
            );
            return Ok(1);
        }
        Ok(0)
    }

    /// Sources trusted without a review: our own identity (a store restored from the branch), and,
    /// on the first pull of this version into a store that pulled before, every source on the
    /// branch: the user took them in already, before there was a review to pass. From then on a
    /// new source's memories are held until `wt-memory review --trust <source>`.
    fn trust_known_sources(&self, selected: &[&String], me: &str, state: &SyncState) -> Result<()> {
        // Pulled before by a version that held nothing: what it took in, it took in unreviewed.
        let upgraded = !state.sources_reviewed && state.last_pull_commit.is_some();
        let known: Vec<&String> = selected
            .iter()
            .copied()
            .filter(|s| s.as_str() == me || upgraded)
            .collect();
        for source in &known {
            self.with_store(|c| {
                c.run(wt_memory_ops::TrustSource {
                    source: source.to_string(),
                })
            })
            .map_err(|e| anyhow!("cannot trust {source}: {e}"))?;
        }
        if upgraded && !known.is_empty() {
            let names: Vec<&str> = known.iter().map(|s| s.as_str()).collect();
            say!(
                self,
                "Trusted the sources pulled before: {} (a new source's memories wait for `wt-memory review`)",
                names.join(", ")
            );
        }
        Ok(())
    }

    fn import_source(
        &self,
        snap: &Snapshot<'_>,
        source: &str,
        take_snapshot: bool,
    ) -> std::result::Result<wt_memory_core::exchange::ImportReport, SourceFailure> {
        let bytes = snap
            .read(source)
            .map_err(|e| SourceFailure::Import(format!("{e:#}")))?;
        validate_export(&bytes).map_err(|e| SourceFailure::Corrupt(e.to_string()))?;
        let req = ops::Import {
            document: wt_memory_foundation::hygiene::decode_lossy(&bytes),
            dry_run: false,
            snapshot_as: take_snapshot.then(|| "sync-pull".to_string()),
            from: Some(source.to_string()),
            moved: false,
        };
        match self.with_store(|c| c.run(req.clone())) {
            Ok(done) => Ok(done.report()),
            // A document `import` cannot use is the source's problem, not ours.
            Err(wt_memory_foundation::error::Error::UnusableExport { message }) => {
                Err(SourceFailure::Corrupt(message))
            }
            Err(e) => Err(SourceFailure::Import(e.to_string())),
        }
    }

    fn status(&self) -> Result<i32> {
        say!(self, "Identity: {}", self.identity);
        say!(
            self,
            "Remote: {} ({}), branch {BRANCH}",
            self.remote.name,
            display_url(&self.remote.fetch_url)
        );
        let state = SyncState::load(&self.state_path);
        if state.last_push_at.is_none() && state.last_pull_at.is_none() {
            say!(self, "Never synced.");
        } else {
            say!(self, "Last sync:");
            say!(
                self,
                "  Push: {}",
                state.last_push_at.as_deref().unwrap_or("never")
            );
            say!(
                self,
                "  Pull: {}",
                state.last_pull_at.as_deref().unwrap_or("never")
            );
        }
        say!(self, "Remote sources:");
        let snap = match snapshot(&self.remote) {
            Ok(s) => s,
            Err(e) => {
                say!(self, "  (unavailable)");
                return Err(e);
            }
        };
        match snap {
            None => say!(self, "  (no sync branch)"),
            Some(s) if s.sources.is_empty() => say!(self, "  (none)"),
            Some(s) => {
                let me = self.identity.to_string();
                for source in &s.sources {
                    let marker = if *source == me { " (you)" } else { "" };
                    say!(self, "  {source}{marker}");
                }
            }
        }
        Ok(0)
    }
}

/// A URL without its user-info part: remote URLs can embed tokens, and status output travels
/// (MCP results, logs).
fn display_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            match rest[..authority_end].rfind('@') {
                Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
                None => url.to_string(),
            }
        }
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(subcommand)]
        command: Top,
    }

    #[derive(clap::Subcommand, Debug)]
    enum Top {
        Sync(SyncArgs),
    }

    fn parse(args: &[&str]) -> std::result::Result<SyncArgs, clap::Error> {
        let argv = std::iter::once("wt-memory").chain(args.iter().copied());
        Cli::try_parse_from(argv).map(|c| match c.command {
            Top::Sync(a) => a,
        })
    }

    #[test]
    fn parses_subcommands_and_options_in_any_position() {
        let a = parse(&["sync"]).unwrap();
        assert!(a.action.is_none());
        assert_eq!(a.remote, "origin");

        let a = parse(&["sync", "pull", "--from", "bob/box", "--remote", "up"]).unwrap();
        assert_eq!(a.remote, "up");
        assert!(matches!(a.action, Some(SyncAction::Pull { from: Some(ref f) }) if f == "bob/box"));

        let a = parse(&["sync", "--machine", "m1", "push", "--force"]).unwrap();
        assert_eq!(a.machine.as_deref(), Some("m1"));
        assert!(matches!(a.action, Some(SyncAction::Push { force: true })));

        assert!(parse(&["sync", "bogus"]).is_err());
        assert!(parse(&["sync", "status", "--nope"]).is_err());
    }

    #[test]
    fn displayed_urls_never_carry_credentials() {
        assert_eq!(
            display_url("https://user:tok3n@host/r.git"),
            "https://host/r.git"
        );
        assert_eq!(display_url("https://ghp_x@host/a@b"), "https://host/a@b");
        assert_eq!(display_url("git@host:r.git"), "git@host:r.git");
        assert_eq!(display_url("/srv/r.git"), "/srv/r.git");
    }

    #[test]
    fn sync_push_scrub_redacts_tags_metadata_and_entities_too() {
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let mut doc = serde_json::json!({"format": "wt-memory-export", "version": 1, "count": 1,
        "records": [{"id": "1", "content": "plain", "tags": ["ops", format!("t:{token}")],
            "metadata": {"password": "hunter2hunter2", "note": format!("use {token}"), "n": "7"},
            "entities": [token, "billing"]}]});
        scrub_export(&mut doc);
        let text = doc.to_string();
        assert!(!text.contains(token) && !text.contains("hunter2"), "{text}");
        let r = &doc["records"][0];
        assert_eq!(r["content"], "plain");
        assert_eq!(r["tags"][0], "ops");
        assert_eq!(r["metadata"]["password"], "[REDACTED:password]");
        assert_eq!(r["metadata"]["n"], "7");
        assert_eq!(r["entities"][1], "billing");
    }
}
