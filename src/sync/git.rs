//! Git plumbing in a scratch repository: the user's checkout is never touched; the sync branch
//! is read and written with plumbing commands against the remote's URL.

use super::identity::Identity;
use super::now_iso;
use super::{BRANCH, FILE_NAME, GIT_TIMEOUT, PUSH_RETRIES, TRANSPORT_CONFIG};
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
        let toplevel = wt_memory_base::project::git(repo, &["rev-parse", "--show-toplevel"])
            .map(PathBuf::from)
            .ok_or_else(|| anyhow!("not a git repository"))?;
        let fetch_url = wt_memory_base::project::git(repo, &["remote", "get-url", "--", name])
            .filter(|u| !u.is_empty())
            .ok_or_else(|| anyhow!("no git remote '{name}' found"))?;
        let push_url =
            wt_memory_base::project::git(repo, &["remote", "get-url", "--push", "--", name])
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| fetch_url.clone());
        let listing = wt_memory_base::project::git(
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
        let mut child = wt_memory_foundation::child::Child::new("git", all)
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
            wt_memory_base::project::git(repo, &["config", key]).filter(|v| !v.trim().is_empty())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_user_machine_file_paths_are_sources() {
        assert_eq!(source_of_path("a/b/memories.json").as_deref(), Some("a/b"));
        assert_eq!(source_of_path("memories.json"), None);
        assert_eq!(source_of_path("a/memories.json"), None);
        assert_eq!(source_of_path("a/b/c/memories.json"), None);
        assert_eq!(source_of_path("a/b/other.json"), None);
    }

    #[test]
    fn relative_local_urls_resolve_from_the_top_level() {
        let top = Path::new("/w/proj");
        assert_eq!(absolutize_url("../r.git", top), "/w/proj/../r.git");
        assert_eq!(absolutize_url("/srv/r.git", top), "/srv/r.git");
        assert_eq!(absolutize_url("git@host:r.git", top), "git@host:r.git");
        assert_eq!(absolutize_url("https://h/r.git", top), "https://h/r.git");
    }
}
