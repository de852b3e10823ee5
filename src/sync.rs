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

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::client::Client;
use crate::ops;
use std::cell::RefCell;
use std::io::Write;

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
/// errors (`Error: …`) to `err`, and returns the exit code.
pub fn run(args: &SyncArgs, client: &mut Client, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let ctx = match SyncContext::new(args, client, out, err) {
        Ok(ctx) => ctx,
        Err((e, err)) => {
            let _ = writeln!(err, "Error: {e:#}");
            return 1;
        }
    };
    let report = |outcome: Result<i32>| {
        outcome.unwrap_or_else(|e| {
            say!(err ctx, "Error: {e:#}");
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
// Identity

/// Who publishes: `<user>/<machine>`, both reduced to `[a-z0-9-]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub machine: String,
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.user, self.machine)
    }
}

impl Identity {
    /// Path of this source's file on the sync branch.
    pub fn file_path(&self) -> String {
        format!("{}/{}/{FILE_NAME}", self.user, self.machine)
    }
}

/// `git config user.name` style names: lower-cased, spaces to `-`, only `[a-z0-9-]` kept.
pub fn sanitize_user(raw: &str) -> String {
    raw.trim()
        .to_lowercase()
        .replace(' ', "-")
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect()
}

/// Host names: the short name (before the first dot), lower-cased, only `[a-z0-9-]` kept.
pub fn sanitize_machine(raw: &str) -> String {
    let short = raw.trim().split('.').next().unwrap_or_default();
    short
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect()
}

fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname NUL-terminates within it or
    // truncates, and we stop at the first NUL.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

fn login_name() -> Option<String> {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        .or_else(|| {
            let out = std::process::Command::new("whoami").output().ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        })
}

/// The identity used in `repo`: user from `git config user.name` (else the login name), machine
/// from `machine_override`, else `$WT_MEMORY_MACHINE`, else the host name.
pub fn identity(repo: &Path, machine_override: Option<&str>) -> Result<Identity> {
    let user_raw = crate::project::git(repo, &["config", "user.name"])
        .filter(|s| !s.is_empty())
        .or_else(login_name)
        .unwrap_or_default();
    let user = sanitize_user(&user_raw);
    if user.is_empty() {
        bail!("cannot derive a user name from {user_raw:?}: set `git config user.name` to something with ASCII letters or digits");
    }
    let (machine_raw, origin) = match machine_override {
        Some(m) => (m.to_string(), "--machine"),
        None => match crate::config::get().machine.clone() {
            Some(m) => (m, "WT_MEMORY_MACHINE"),
            None => (hostname().unwrap_or_default(), "the host name"),
        },
    };
    let machine = sanitize_machine(&machine_raw);
    if machine.is_empty() {
        bail!("invalid machine name {machine_raw:?} (from {origin}): use letters, digits and '-'");
    }
    Ok(Identity { user, machine })
}

// ---------------------------------------------------------------------------------------------
// Git plumbing in a scratch repository

/// Output of one git run.
struct GitOut {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

impl GitOut {
    fn ok(&self) -> bool {
        self.code == 0
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_string()
    }
    /// The most telling line of stderr (git's `fatal:`/`error:` line), for one-line errors.
    fn reason(&self) -> String {
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        lines
            .iter()
            .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
            .or(lines.first())
            .map(|l| {
                l.trim_start_matches("fatal:")
                    .trim_start_matches("error:")
                    .trim()
                    .to_string()
            })
            .unwrap_or_else(|| format!("git exited with status {}", self.code))
    }
}

/// Environment that would point git at another repository than the scratch one.
const REPO_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

/// A remote of the user's repository, addressed by URL so the scratch repository can use it.
#[derive(Debug, Clone)]
pub struct Remote {
    pub name: String,
    pub fetch_url: String,
    pub push_url: String,
    /// `-c key=value` pairs copied from the user's repository (transport settings only).
    config: Vec<(String, String)>,
}

/// Resolve a local-path URL relative to the repository top level (git resolves it from there).
fn absolutize_url(url: &str, toplevel: &Path) -> String {
    let is_scp_like = url
        .split_once(':')
        .is_some_and(|(host, _)| !host.contains('/'));
    if url.contains("://") || is_scp_like || Path::new(url).is_absolute() {
        url.to_string()
    } else {
        toplevel.join(url).to_string_lossy().into_owned()
    }
}

impl Remote {
    /// The remote `name` of the repository at `repo`.
    pub fn open(repo: &Path, name: &str) -> Result<Remote> {
        let toplevel = crate::project::git(repo, &["rev-parse", "--show-toplevel"])
            .map(PathBuf::from)
            .ok_or_else(|| anyhow!("not a git repository"))?;
        let fetch_url = crate::project::git(repo, &["remote", "get-url", "--", name])
            .filter(|u| !u.is_empty())
            .ok_or_else(|| anyhow!("no git remote '{name}' found"))?;
        let push_url = crate::project::git(repo, &["remote", "get-url", "--push", "--", name])
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| fetch_url.clone());
        let listing = crate::project::git(
            repo,
            &[
                "config",
                "--local",
                "--null",
                "--get-regexp",
                TRANSPORT_CONFIG,
            ],
        )
        .unwrap_or_default();
        let config = listing
            .split('\0')
            .filter_map(|entry| entry.split_once('\n'))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Ok(Remote {
            name: name.to_string(),
            fetch_url: absolutize_url(&fetch_url, &toplevel),
            push_url: absolutize_url(&push_url, &toplevel),
            config,
        })
    }
}

/// A throw-away repository in a temp dir; dropped with it. Nothing here is the user's.
struct Scratch<'r> {
    remote: &'r Remote,
    tmp: tempfile::TempDir,
    base_args: Vec<String>,
}

/// Local ref holding the fetched remote branch.
const TIP_REF: &str = "refs/sync/tip";

impl<'r> Scratch<'r> {
    fn new(remote: &'r Remote) -> Result<Self> {
        let tmp = tempfile::Builder::new()
            .prefix("wt-memory-sync-")
            .tempdir()
            .context("cannot create a temporary directory")?;
        let no_hooks = tmp.path().join("no-hooks");
        std::fs::create_dir_all(&no_hooks)?;
        let mut base_args: Vec<String> = vec![
            format!("core.hooksPath={}", no_hooks.display()),
            "commit.gpgSign=false".into(),
            "gc.auto=0".into(),
            "maintenance.auto=false".into(),
        ];
        base_args.extend(remote.config.iter().map(|(k, v)| format!("{k}={v}")));
        let base_args = base_args
            .into_iter()
            .flat_map(|kv| ["-c".to_string(), kv])
            .collect();
        let scratch = Scratch {
            remote,
            tmp,
            base_args,
        };
        let repo = scratch.repo_dir();
        std::fs::create_dir_all(&repo)?;
        scratch.git_ok(&["init", "-q", "--template=", "."])?;
        Ok(scratch)
    }

    fn repo_dir(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }

    /// Run git in the scratch repository (never affected by GIT_DIR & co. of the caller).
    fn git(&self, args: &[&str]) -> Result<GitOut> {
        let mut all: Vec<String> = self.base_args.clone();
        all.extend(args.iter().map(|s| s.to_string()));
        let mut child = crate::child::Child::new("git", all)
            .dir(self.repo_dir())
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0");
        for var in REPO_ENV {
            child = child.env_remove(var);
        }
        let out = child
            .run(GIT_TIMEOUT)
            .map_err(|e| anyhow!("git {}: {e}", args.first().unwrap_or(&"")))?;
        Ok(GitOut {
            code: out.code.unwrap_or(-1),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    fn git_ok(&self, args: &[&str]) -> Result<String> {
        let out = self.git(args)?;
        if !out.ok() {
            bail!("git {} failed: {}", args.join(" "), out.reason());
        }
        Ok(out.text())
    }

    /// Commit the remote branch points at now; None when the branch does not exist.
    fn remote_tip(&self) -> Result<Option<String>> {
        let refname = format!("refs/heads/{BRANCH}");
        let out = self.git(&["ls-remote", "--exit-code", &self.remote.fetch_url, &refname])?;
        match out.code {
            0 => Ok(out.text().split_whitespace().next().map(str::to_string)),
            2 => Ok(None),
            _ => bail!(
                "remote '{}' unreachable: {}",
                self.remote.name,
                out.reason()
            ),
        }
    }

    /// Fetch the remote branch into [`TIP_REF`]; returns its commit, or None when it is absent.
    fn fetch(&self) -> Result<Option<String>> {
        if self.remote_tip()?.is_none() {
            return Ok(None);
        }
        let refspec = format!("+refs/heads/{BRANCH}:{TIP_REF}");
        let out = self.git(&[
            "fetch",
            "-q",
            "--no-tags",
            "--depth",
            "1",
            &self.remote.fetch_url,
            &refspec,
        ])?;
        if !out.ok() {
            // The branch may have been deleted between ls-remote and fetch.
            if self.remote_tip()?.is_none() {
                return Ok(None);
            }
            bail!(
                "cannot fetch branch '{BRANCH}' from '{}': {}",
                self.remote.name,
                out.reason()
            );
        }
        Ok(Some(self.git_ok(&["rev-parse", TIP_REF])?))
    }

    /// Sources (`user/machine`) that have a file in the fetched tip.
    fn sources(&self) -> Result<Vec<String>> {
        let out = self.git(&["ls-tree", "-r", "--name-only", "-z", TIP_REF])?;
        if !out.ok() {
            bail!("cannot list branch '{BRANCH}': {}", out.reason());
        }
        let mut sources: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter_map(source_of_path)
            .collect();
        sources.sort();
        Ok(sources)
    }

    /// Raw bytes of a source's file in the fetched tip.
    fn read_source(&self, source: &str) -> Result<Vec<u8>> {
        let spec = format!("{TIP_REF}:{source}/{FILE_NAME}");
        let out = self.git(&["cat-file", "blob", &spec])?;
        if !out.ok() {
            bail!("cannot read {source}/{FILE_NAME}: {}", out.reason());
        }
        Ok(out.stdout)
    }

    /// Build a commit that sets `path` to `contents` on top of `parent` (or as a root commit).
    /// Returns None when the file already has exactly these contents.
    fn commit_file(
        &self,
        parent: Option<&str>,
        path: &str,
        contents: &[u8],
        message: &str,
        committer: &Committer,
    ) -> Result<Option<String>> {
        let file = self.tmp.path().join("contents");
        std::fs::write(&file, contents)?;
        let blob = self.git_ok(&["hash-object", "-w", "--", &file.to_string_lossy()])?;
        match parent {
            Some(p) => self.git_ok(&["read-tree", p])?,
            None => self.git_ok(&["read-tree", "--empty"])?,
        };
        let cacheinfo = format!("100644,{blob},{path}");
        self.git_ok(&["update-index", "--add", "--cacheinfo", &cacheinfo])?;
        let tree = self.git_ok(&["write-tree"])?;
        if let Some(p) = parent {
            if self.git_ok(&["rev-parse", &format!("{p}^{{tree}}")])? == tree {
                return Ok(None);
            }
        }
        let name = format!("user.name={}", committer.name);
        let email = format!("user.email={}", committer.email);
        let mut args = vec![
            "-c",
            &name,
            "-c",
            &email,
            "commit-tree",
            &tree,
            "-m",
            message,
        ];
        if let Some(p) = parent {
            args.extend(["-p", p]);
        }
        Ok(Some(self.git_ok(&args)?))
    }

    /// Push `commit` as the new branch tip without force: a remote that moved rejects it.
    fn push(&self, commit: &str) -> Result<GitOut> {
        let refspec = format!("{commit}:refs/heads/{BRANCH}");
        self.git(&["push", "-q", "--no-verify", &self.remote.push_url, &refspec])
    }
}

/// Path `<user>/<machine>/memories.json` -> `user/machine`.
fn source_of_path(path: &str) -> Option<String> {
    let mut parts = path.split('/');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(user), Some(machine), Some(FILE_NAME), None)
            if !user.is_empty() && !machine.is_empty() =>
        {
            Some(format!("{user}/{machine}"))
        }
        _ => None,
    }
}

/// Author/committer of sync commits.
#[derive(Debug, Clone)]
pub struct Committer {
    pub name: String,
    pub email: String,
}

impl Committer {
    /// The user's git identity in `repo`, else `wt-memory <wt-memory@localhost>`.
    pub fn of_repo(repo: &Path) -> Committer {
        let get = |key: &str| {
            crate::project::git(repo, &["config", key]).filter(|v| !v.trim().is_empty())
        };
        Committer {
            name: get("user.name").unwrap_or_else(|| "wt-memory".into()),
            email: get("user.email").unwrap_or_else(|| "wt-memory@localhost".into()),
        }
    }
}

/// What [`publish`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishOutcome {
    /// The branch now holds the file; `attempts` > 1 when the remote moved meanwhile.
    Pushed { commit: String, attempts: usize },
    /// The file on the branch already had these contents.
    Unchanged,
}

/// Write `contents` as `identity`'s file on the sync branch of `remote` and push it, creating the
/// orphan branch on first use. When another push lands first, fetch and re-apply (up to
/// [`PUSH_RETRIES`] times); the push is never forced, so nobody else's file is ever lost.
pub fn publish(
    remote: &Remote,
    identity: &Identity,
    contents: &[u8],
    committer: &Committer,
) -> Result<PublishOutcome> {
    let scratch = Scratch::new(remote)?;
    let message = format!("sync: {identity} {}", now_iso());
    for attempt in 1..=PUSH_RETRIES + 1 {
        let parent = scratch.fetch()?;
        let Some(commit) = scratch.commit_file(
            parent.as_deref(),
            &identity.file_path(),
            contents,
            &message,
            committer,
        )?
        else {
            return Ok(PublishOutcome::Unchanged);
        };
        let out = scratch.push(&commit)?;
        if out.ok() {
            return Ok(PublishOutcome::Pushed {
                commit,
                attempts: attempt,
            });
        }
        // Only a branch that moved since our fetch is worth another try; anything else
        // (permissions, a hook declining, network) is reported as is.
        if scratch.remote_tip()? == parent {
            bail!("push to '{}' failed: {}", remote.name, out.reason());
        }
        std::thread::sleep(backoff(attempt));
    }
    bail!(
        "push to '{}' failed: branch '{BRANCH}' changed during each of {} attempts; try again",
        remote.name,
        PUSH_RETRIES + 1
    )
}

/// A short, jittered pause so two racing pushers do not collide again in lockstep.
fn backoff(attempt: usize) -> Duration {
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() % 250)
        .unwrap_or(0);
    Duration::from_millis(100 * attempt as u64 + u64::from(jitter))
}

/// The sync branch as seen on the remote right now.
pub struct Snapshot<'r> {
    /// Commit the branch pointed at.
    pub tip: String,
    /// Sources with a file on the branch, sorted.
    pub sources: Vec<String>,
    scratch: Scratch<'r>,
}

impl Snapshot<'_> {
    /// Raw bytes of a source's `memories.json`.
    pub fn read(&self, source: &str) -> Result<Vec<u8>> {
        self.scratch.read_source(source)
    }
}

/// Fetch the sync branch of `remote`; None when it does not exist yet.
pub fn snapshot(remote: &Remote) -> Result<Option<Snapshot<'_>>> {
    let scratch = Scratch::new(remote)?;
    let Some(tip) = scratch.fetch()? else {
        return Ok(None);
    };
    let sources = scratch.sources()?;
    Ok(Some(Snapshot {
        tip,
        sources,
        scratch,
    }))
}

/// Commit the remote's sync branch points at, without fetching it; None when absent.
pub fn remote_tip(remote: &Remote) -> Result<Option<String>> {
    Scratch::new(remote)?.remote_tip()
}

// ---------------------------------------------------------------------------------------------
// Export documents

/// Check that `bytes` is an export document this version can import; returns its records.
pub fn validate_export(bytes: &[u8]) -> Result<Vec<Value>> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| anyhow!("invalid JSON ({e})"))?;
    if doc.get("format").and_then(Value::as_str) != Some("wt-memory-export") {
        bail!("not a wt-memory export (format is not \"wt-memory-export\")");
    }
    if doc.get("version").and_then(Value::as_i64) != Some(1) {
        bail!(
            "unsupported export version {}",
            doc.get("version").unwrap_or(&Value::Null)
        );
    }
    match doc.get("records") {
        Some(Value::Array(records)) => Ok(records.clone()),
        _ => bail!("export has no \"records\" list"),
    }
}

fn is_private(record: &Value) -> bool {
    record
        .get("tags")
        .and_then(Value::as_array)
        .is_some_and(|tags| {
            tags.iter()
                .filter_map(Value::as_str)
                .any(|t| t.eq_ignore_ascii_case("private"))
        })
}

/// Last line of defence before anything leaves the machine: drop `private`-tagged records and
/// redact every text field again (content, tags, metadata, entities), with the same rules as
/// every printed record (export already does both; redaction is idempotent).
pub fn scrub_export(doc: &mut Value) {
    let Some(records) = doc.get_mut("records").and_then(Value::as_array_mut) else {
        return;
    };
    records.retain(|r| !is_private(r));
    for record in records.iter_mut() {
        crate::record::redact_record_json(record);
    }
    let count = records.len();
    doc["count"] = Value::from(count);
}

/// JSON with object keys sorted at every level (independent of serde_json's map ordering).
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(canonical).collect::<Vec<_>>().join(",")
            )
        }
        other => other.to_string(),
    }
}

/// SHA-256 over what a push publishes that matters: the records' stable fields
/// (`id, content, experience_type, tags, metadata`, sorted by id), plus the destination, so a new
/// identity or remote URL is not mistaken for "already pushed".
pub fn content_hash(records: &[Value], identity: &Identity, remote_url: &str) -> String {
    let mut projected: Vec<(String, Value)> = records
        .iter()
        .map(|r| {
            let id = r
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let mut stable = serde_json::Map::new();
            for key in ["id", "content", "experience_type", "tags", "metadata"] {
                stable.insert(key.into(), r.get(key).cloned().unwrap_or(Value::Null));
            }
            (id, Value::Object(stable))
        })
        .collect();
    projected.sort_by(|a, b| a.0.cmp(&b.0));
    let list = Value::Array(projected.into_iter().map(|(_, v)| v).collect());
    let mut hasher = Sha256::new();
    hasher.update(format!("{identity}\n{remote_url}\n").as_bytes());
    hasher.update(canonical(&list).as_bytes());
    crate::hygiene::hex(&hasher.finalize())
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
        crate::paths::write_atomic(path, &bytes)
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
        f: impl FnOnce(&mut Client) -> crate::error::Result<T>,
    ) -> crate::error::Result<T> {
        let mut client = self.client.borrow_mut();
        let out = f(&mut client);
        client.release();
        out
    }

    fn export(&self) -> Result<Value> {
        let doc = self
            .with_store(|c| c.export(true))
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
            state.last_pull_commit = Some(snap.tip.clone());
            state.last_pull_at = Some(now_iso());
            state.save(&self.state_path)?;
            return Ok(0);
        }

        let (mut new, mut skipped, mut imported_sources) = (0u64, 0u64, 0usize);
        let mut failed_sources = 0usize;
        // One undo snapshot per pull: the first import that writes takes it, the others do not.
        let mut snapshot_taken = false;
        for source in selected {
            match self.import_source(&snap, source, !snapshot_taken) {
                Ok(counts) => {
                    snapshot_taken |= counts.imported > 0;
                    let errors = if counts.errors > 0 {
                        format!(", {} errors", counts.errors)
                    } else {
                        String::new()
                    };
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
                "Error: {failed_sources} source(s) failed to import; run 'wt-memory sync pull' again"
            );
            return Ok(1);
        }
        Ok(0)
    }

    fn import_source(
        &self,
        snap: &Snapshot<'_>,
        source: &str,
        take_snapshot: bool,
    ) -> std::result::Result<crate::exchange::ImportReport, SourceFailure> {
        let bytes = snap
            .read(source)
            .map_err(|e| SourceFailure::Import(format!("{e:#}")))?;
        validate_export(&bytes).map_err(|e| SourceFailure::Corrupt(e.to_string()))?;
        let req = ops::Import {
            document: crate::hygiene::decode_lossy(&bytes),
            dry_run: false,
            snapshot_as: take_snapshot.then(|| "sync-pull".to_string()),
        };
        match self.with_store(|c| c.import(&req)) {
            Ok(done) => Ok(done.report()),
            // A document `import` cannot use is the source's problem, not ours.
            Err(crate::error::Error::UnusableExport { message }) => {
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
    fn identity_parts_are_sanitised() {
        assert_eq!(sanitize_user("Jane Q. Doe"), "jane-q-doe");
        assert_eq!(sanitize_user("  Ödön_X  "), "dnx");
        assert_eq!(sanitize_machine("Build-Box.example.com"), "build-box");
        assert_eq!(sanitize_machine("my_laptop"), "mylaptop");
    }

    #[test]
    fn only_user_machine_file_paths_are_sources() {
        assert_eq!(source_of_path("a/b/memories.json").as_deref(), Some("a/b"));
        assert_eq!(source_of_path("memories.json"), None);
        assert_eq!(source_of_path("a/memories.json"), None);
        assert_eq!(source_of_path("a/b/c/memories.json"), None);
        assert_eq!(source_of_path("a/b/other.json"), None);
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
    fn relative_local_urls_resolve_from_the_top_level() {
        let top = Path::new("/w/proj");
        assert_eq!(absolutize_url("../r.git", top), "/w/proj/../r.git");
        assert_eq!(absolutize_url("/srv/r.git", top), "/srv/r.git");
        assert_eq!(absolutize_url("git@host:r.git", top), "git@host:r.git");
        assert_eq!(absolutize_url("https://h/r.git", top), "https://h/r.git");
    }

    fn record(id: &str, content: &str, extra: Value) -> Value {
        let mut r = serde_json::json!({"id": id, "content": content, "experience_type": "Learning",
            "tags": ["a"], "metadata": {}});
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    }

    #[test]
    fn hash_ignores_volatile_fields_and_order_but_not_content_or_destination() {
        let me = Identity {
            user: "u".into(),
            machine: "m".into(),
        };
        let a = vec![
            record("1", "x", serde_json::json!({"access_count": 1})),
            record("2", "y", serde_json::json!({})),
        ];
        let b = vec![
            record("2", "y", serde_json::json!({"last_accessed": "later"})),
            record("1", "x", serde_json::json!({"access_count": 9})),
        ];
        let h = content_hash(&a, &me, "url");
        assert_eq!(h, content_hash(&b, &me, "url"));
        let changed = vec![record("1", "x2", serde_json::json!({}))];
        assert_ne!(h, content_hash(&changed, &me, "url"));
        assert_ne!(h, content_hash(&a, &me, "other-url"));
    }

    #[test]
    fn scrub_drops_private_records_and_redacts() {
        let mut doc = serde_json::json!({"format": "wt-memory-export", "version": 1, "count": 2,
        "records": [
            {"id": "1", "content": "token sk-ant-abcdefghijklmnopqrstuvwxyz123456", "tags": []},
            {"id": "2", "content": "secret", "tags": ["Private"]}
        ]});
        scrub_export(&mut doc);
        assert_eq!(doc["count"], 1);
        let content = doc["records"][0]["content"].as_str().unwrap();
        assert!(!content.contains("sk-ant-"), "{content}");
    }

    #[test]
    fn export_validation_names_the_problem() {
        assert!(validate_export(b"{not json")
            .unwrap_err()
            .to_string()
            .contains("invalid JSON"));
        let wrong = br#"{"format":"x","version":1,"records":[]}"#;
        assert!(validate_export(wrong)
            .unwrap_err()
            .to_string()
            .contains("format"));
        let v2 = br#"{"format":"wt-memory-export","version":2,"records":[]}"#;
        assert!(validate_export(v2)
            .unwrap_err()
            .to_string()
            .contains("version"));
        let ok = br#"{"format":"wt-memory-export","version":1,"records":[{"id":"1"}]}"#;
        assert_eq!(validate_export(ok).unwrap().len(), 1);
    }
}
