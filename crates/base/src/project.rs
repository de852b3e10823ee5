//! Project identity: which store a working directory belongs to.
//!
//! All worktrees of one repository share a store, and two repositories with the same directory name
//! do not (the previous implementation keyed stores by bare directory name). The store name is
//! `<basename>-<first 8 hex of sha256(canonical git common dir)>`; outside git it is `_global`,
//! which is also the user's personal store: memory about the person (preferences, working style,
//! accounts, language) that every project reads beside its own ([`Scope`]).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const GLOBAL: &str = "_global";

/// Where a memory lives: the project's store, or the user's personal store (the store used outside
/// any repository, `<storage root>/_global`), which every project reads beside its own and none
/// syncs, exports or reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Project,
    Personal,
}

impl Scope {
    pub const NAMES: [&'static str; 2] = ["project", "personal"];

    pub fn parse(text: &str) -> Option<Scope> {
        match text.trim().to_ascii_lowercase().as_str() {
            "project" => Some(Scope::Project),
            "personal" => Some(Scope::Personal),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Personal => "personal",
        }
    }
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(text: &str) -> Result<Scope, String> {
        Scope::parse(text)
            .ok_or_else(|| format!("unknown scope '{text}' (use {})", Scope::NAMES.join(" or ")))
    }
}

/// The user's personal store, seen from `cwd`.
pub fn personal(cwd: &Path) -> Project {
    Project {
        name: GLOBAL.to_string(),
        store_dir: crate::paths::storage_root().join(GLOBAL),
        toplevel: None,
        main_root: None,
        cwd: cwd.to_path_buf(),
    }
}

#[derive(Debug, Clone)]
pub struct Project {
    /// Store name, unique per repository.
    pub name: String,
    /// `<storage root>/<name>`.
    pub store_dir: PathBuf,
    /// Top level of the current worktree (None outside git).
    pub toplevel: Option<PathBuf>,
    /// Top level of the main worktree, which owns the common git dir (None outside git or bare).
    pub main_root: Option<PathBuf>,
    /// Directory the project was resolved from.
    pub cwd: PathBuf,
}

/// Run git in `dir` and return trimmed stdout on success.
pub fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Current branch name; None on a detached HEAD or outside git.
pub fn current_branch(dir: &Path) -> Option<String> {
    match Layout::read(dir) {
        Found::Repo(layout) => layout.branch,
        Found::NoRepo => None,
        Found::AskGit => git(dir, &["branch", "--show-current"]).filter(|b| !b.is_empty()),
    }
}

/// The top level of `dir`'s work tree (None outside git).
pub fn toplevel(dir: &Path) -> Option<PathBuf> {
    match Layout::read(dir) {
        Found::Repo(layout) => Some(layout.toplevel),
        Found::NoRepo => None,
        Found::AskGit => git(dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from),
    }
}

/// The commit checked out at `toplevel`: the branch's ref read from git's files, as a hook can
/// afford; git itself when the layout is unusual or HEAD is detached.
pub fn head_commit(toplevel: &Path) -> Option<String> {
    let from_files = Layout::at(toplevel).and_then(|layout| {
        let branch = layout.branch?;
        let name = format!("refs/heads/{branch}");
        if let Ok(sha) = std::fs::read_to_string(layout.common_dir.join(&name)) {
            return Some(sha.trim().to_string());
        }
        let packed = std::fs::read_to_string(layout.common_dir.join("packed-refs")).ok()?;
        packed.lines().find_map(|l| {
            let (sha, reference) = l.split_once(' ')?;
            (reference == name).then(|| sha.to_string())
        })
    });
    from_files.or_else(|| git(toplevel, &["rev-parse", "HEAD"]))
}

/// Where a working directory's repository lives, read from the files git writes (`.git`, a
/// worktree's `gitdir:` file, `commondir`, `HEAD`), as git would report it: a hook resolves its
/// project and branch on every call, and three `git` processes cost more than the rest of a
/// warm hook. Anything unusual is left to git itself ([`Found::AskGit`]).
#[derive(Debug, Clone, PartialEq)]
struct Layout {
    /// `git rev-parse --show-toplevel`
    toplevel: PathBuf,
    /// `git rev-parse --path-format=absolute --git-common-dir`, canonical
    common_dir: PathBuf,
    /// `git branch --show-current` (None: detached)
    branch: Option<String>,
}

#[derive(Debug, PartialEq)]
enum Found {
    Repo(Layout),
    /// Not inside a work tree.
    NoRepo,
    /// A set-up this reader does not follow (environment overrides, a directory inside `.git`,
    /// another owner, `core.worktree`, the reftable format): ask git.
    AskGit,
}

impl Layout {
    fn read(cwd: &Path) -> Found {
        if [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_COMMON_DIR",
            "GIT_CEILING_DIRECTORIES",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
        {
            return Found::AskGit;
        }
        let Ok(cwd) = crate::os::files::canonicalize(cwd) else {
            return Found::AskGit;
        };
        if cwd.components().any(|c| c.as_os_str() == ".git") {
            return Found::AskGit;
        }
        let Some(toplevel) = cwd.ancestors().find(|d| d.join(".git").exists()) else {
            // No work tree above: a bare repository or no repository; git knows which.
            return if cwd.ancestors().any(|d| d.join("HEAD").is_file()) {
                Found::AskGit
            } else {
                Found::NoRepo
            };
        };
        // Git's discovery stops at a filesystem boundary (unless told otherwise): a work tree
        // on another device than the directory asked about is for git to judge.
        let device = |d: &Path| {
            std::fs::metadata(d)
                .ok()
                .and_then(|m| crate::os::files::device(&m))
        };
        if cwd
            .ancestors()
            .take_while(|d| *d != toplevel)
            .any(|d| device(d) != device(toplevel))
        {
            return Found::AskGit;
        }
        Self::at(toplevel).map_or(Found::AskGit, Found::Repo)
    }

    fn at(toplevel: &Path) -> Option<Layout> {
        let dot_git = toplevel.join(".git");
        let meta = std::fs::metadata(&dot_git).ok()?;
        let top = std::fs::metadata(toplevel).ok()?;
        // Windows files have no uid: there the user's own folders are trusted as git trusts
        // them by default.
        let mine = |m: &std::fs::Metadata| {
            crate::os::files::owner(m).is_none_or(|uid| uid == crate::paths::my_uid())
        };
        if !mine(&meta) || !mine(&top) {
            return None; // git's safe.directory rules decide
        }
        let gitdir = if meta.is_dir() {
            dot_git
        } else {
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let target = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
            crate::os::files::canonicalize(&toplevel.join(target)).ok()?
        };
        let common_dir = match std::fs::read_to_string(gitdir.join("commondir")) {
            Ok(rel) => crate::os::files::canonicalize(&gitdir.join(rel.trim())).ok()?,
            Err(_) => crate::os::files::canonicalize(&gitdir).ok()?,
        };
        // Settings that move the work tree or the refs, or pull in other files: git decides.
        let config = std::fs::read_to_string(common_dir.join("config"))
            .unwrap_or_default()
            .to_lowercase();
        if [
            "worktree",
            "refstorage",
            "include",
            "repositoryformatversion = 1",
        ]
        .iter()
        .any(|k| config.contains(k))
        {
            return None;
        }
        let head = std::fs::read_to_string(gitdir.join("HEAD")).ok()?;
        let branch = match head.trim().strip_prefix("ref: ") {
            Some(r) => Some(r.strip_prefix("refs/heads/")?.to_string()),
            None => None,
        };
        if branch.as_deref() == Some(".invalid") {
            return None; // the reftable format's placeholder HEAD
        }
        Some(Layout {
            toplevel: toplevel.to_path_buf(),
            common_dir,
            branch,
        })
    }

    /// The same answers from git itself.
    fn from_git(cwd: &Path) -> Option<(PathBuf, PathBuf)> {
        let toplevel = git(cwd, &["rev-parse", "--show-toplevel"]).map(PathBuf::from)?;
        let common_dir = git(
            cwd,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )
        .map(PathBuf::from)
        .map(|p| crate::os::files::canonicalize(&p).unwrap_or(p))?;
        Some((toplevel, common_dir))
    }
}

/// Make a user-supplied project name safe as a single path component.
pub fn sanitize_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cleaned = cleaned.trim_matches('.').to_string();
    if cleaned.is_empty() {
        GLOBAL.to_string()
    } else {
        cleaned
    }
}

/// Store name for a repository whose git common dir is `common_dir` (canonical path).
pub fn name_for_common_dir(common_dir: &Path) -> String {
    let base_dir = if common_dir.file_name().is_some_and(|n| n == ".git") {
        common_dir.parent().unwrap_or(common_dir)
    } else {
        common_dir
    };
    let base = base_dir
        .file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".git").to_string())
        .unwrap_or_else(|| "repo".to_string());
    let digest = Sha256::digest(common_dir.to_string_lossy().as_bytes());
    format!("{}-{}", sanitize_name(&base), &crate::hex(&digest)[..8])
}

/// Resolve the project of `cwd`; `override_name` (the global `--project`) wins.
pub fn resolve(cwd: &Path, override_name: Option<&str>) -> Project {
    let root = crate::paths::storage_root();
    let (toplevel, common_dir) = match Layout::read(cwd) {
        Found::Repo(l) => (Some(l.toplevel), Some(l.common_dir)),
        Found::NoRepo => (None, None),
        Found::AskGit => Layout::from_git(cwd).unzip(),
    };
    let main_root = common_dir.as_ref().and_then(|c| {
        (c.file_name().is_some_and(|n| n == ".git"))
            .then(|| c.parent().map(Path::to_path_buf))
            .flatten()
    });
    let name = match (override_name, &common_dir) {
        (Some(n), _) => sanitize_name(n),
        (None, Some(c)) => name_for_common_dir(c),
        (None, None) => GLOBAL.to_string(),
    };
    Project {
        store_dir: root.join(&name),
        name,
        toplevel,
        main_root,
        cwd: cwd.to_path_buf(),
    }
}

impl Project {
    /// Is this the user's personal store (the one outside any repository)?
    pub fn is_personal(&self) -> bool {
        self.name == GLOBAL
    }

    /// The directory that holds project files such as `.claude/rules.yaml`:
    /// the worktree top level, else `$CLAUDE_PROJECT_DIR`, else the working directory.
    pub fn files_root(&self) -> PathBuf {
        self.toplevel
            .clone()
            .or_else(crate::config::claude_project_dir)
            .unwrap_or_else(|| self.cwd.clone())
    }

    pub fn branch(&self) -> Option<String> {
        self.toplevel.as_ref().and_then(|t| current_branch(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_basename_different_paths_get_different_names() {
        let a = name_for_common_dir(Path::new("/home/u/work/app/.git"));
        let b = name_for_common_dir(Path::new("/home/u/other/app/.git"));
        assert!(a.starts_with("app-") && b.starts_with("app-"));
        assert_ne!(a, b);
        assert_eq!(a.len(), "app-".len() + 8);
    }

    #[test]
    fn bare_repo_name_drops_dot_git() {
        assert!(name_for_common_dir(Path::new("/srv/git/tool.git")).starts_with("tool-"));
    }

    fn run_git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(["-c", "protocol.file.allow=always"])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs")
            .status
            .success();
        assert!(ok, "git {args:?} in {}", dir.display());
    }

    /// What git itself says of `dir`: (toplevel, common dir, branch).
    fn git_says(dir: &Path) -> Option<(PathBuf, PathBuf, Option<String>)> {
        let (top, common) = Layout::from_git(dir)?;
        let branch = git(dir, &["branch", "--show-current"]).filter(|b| !b.is_empty());
        Some((top, common, branch))
    }

    #[test]
    fn the_files_git_writes_give_the_answers_git_gives() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("app");
        std::fs::create_dir_all(main.join("src/deep")).unwrap();
        run_git(&main, &["init", "-q", "-b", "main"]);
        let unborn = Layout::read(&main.join("src/deep"));
        run_git(&main, &["commit", "-q", "--allow-empty", "-m", "one"]);
        run_git(&main, &["commit", "-q", "--allow-empty", "-m", "two"]);
        run_git(
            &main,
            &["worktree", "add", "-q", "-b", "feature/x", "../wt"],
        );
        let lib = tmp.path().join("lib");
        std::fs::create_dir_all(&lib).unwrap();
        run_git(&lib, &["init", "-q", "-b", "trunk"]);
        run_git(&lib, &["commit", "-q", "--allow-empty", "-m", "lib"]);
        run_git(
            &main,
            &[
                "submodule",
                "add",
                "-q",
                lib.to_str().unwrap(),
                "vendor/lib",
            ],
        );
        let detached = tmp.path().join("detached");
        run_git(
            &main,
            &["worktree", "add", "-q", "--detach", "../detached", "HEAD~1"],
        );
        let outside = tmp.path().join("plain");
        std::fs::create_dir_all(&outside).unwrap();
        let submodule = main.join("vendor/lib");
        // Set-ups only git can answer for: the reftable format, a work tree moved by config.
        let reftable = tmp.path().join("reftable");
        std::fs::create_dir_all(&reftable).unwrap();
        run_git(
            &reftable,
            &["init", "-q", "--ref-format=reftable", "-b", "trunk"],
        );
        let moved = tmp.path().join("moved");
        std::fs::create_dir_all(moved.join("elsewhere")).unwrap();
        run_git(&moved, &["init", "-q", "-b", "main"]);
        run_git(
            &moved,
            &[
                "config",
                "core.workTree",
                moved.join("elsewhere").to_str().unwrap(),
            ],
        );
        let git_decides = [submodule.clone(), reftable.clone(), moved.clone()];

        let mut repos = 0;
        for dir in [
            main.clone(),
            main.join("src/deep"),
            tmp.path().join("wt"),
            submodule.clone(),
            detached,
            outside,
            reftable.clone(),
            moved.clone(),
        ] {
            let ours = match Layout::read(&dir) {
                Found::Repo(l) => Some((l.toplevel, l.common_dir, l.branch)),
                Found::NoRepo => None,
                // A submodule's config sets core.worktree: git answers for it, as for the others.
                Found::AskGit if git_decides.contains(&dir) => git_says(&dir),
                Found::AskGit => panic!("{}: an ordinary layout left to git", dir.display()),
            };
            assert_eq!(ours, git_says(&dir), "{}", dir.display());
            repos += usize::from(ours.is_some());
            assert_eq!(
                resolve(&dir, None).name,
                match git_says(&dir) {
                    Some((_, common, _)) => name_for_common_dir(&common),
                    None => GLOBAL.to_string(),
                }
            );
        }
        assert_eq!(repos, 7);
        for dir in &git_decides {
            assert_eq!(Layout::read(dir), Found::AskGit, "{}", dir.display());
        }
        let Found::Repo(unborn) = unborn else {
            panic!("a repository without commits is still a repository")
        };
        assert_eq!(unborn.branch.as_deref(), Some("main"));
        assert!(matches!(Layout::read(&main.join(".git")), Found::AskGit));
    }

    #[test]
    fn override_names_are_single_path_components() {
        assert_eq!(sanitize_name("../etc/passwd"), "-etc-passwd");
        assert_eq!(sanitize_name(""), "_global");
        assert_eq!(sanitize_name("my-proj_1"), "my-proj_1");
    }
}
