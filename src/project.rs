//! Project identity: which store a working directory belongs to.
//!
//! All worktrees of one repository share a store, and two repositories with the same directory name
//! do not (the previous implementation keyed stores by bare directory name). The store name is
//! `<basename>-<first 8 hex of sha256(canonical git common dir)>`; outside git it is `_global`.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const GLOBAL: &str = "_global";

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
    git(dir, &["branch", "--show-current"]).filter(|b| !b.is_empty())
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
    format!(
        "{}-{}",
        sanitize_name(&base),
        &crate::hygiene::hex(&digest)[..8]
    )
}

/// Resolve the project of `cwd`; `override_name` (the global `--project`) wins.
pub fn resolve(cwd: &Path, override_name: Option<&str>) -> Project {
    let root = crate::paths::storage_root();
    let toplevel = git(cwd, &["rev-parse", "--show-toplevel"]).map(PathBuf::from);
    let common_dir = toplevel.as_ref().and_then(|_| {
        git(
            cwd,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )
        .map(PathBuf::from)
        .map(|p| p.canonicalize().unwrap_or(p))
    });
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
    /// The directory that holds project files such as `.claude/rules.yaml`:
    /// the worktree top level, else `$CLAUDE_PROJECT_DIR`, else the working directory.
    pub fn files_root(&self) -> PathBuf {
        self.toplevel
            .clone()
            .or_else(|| crate::config::get().claude_project_dir.clone())
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

    #[test]
    fn override_names_are_single_path_components() {
        assert_eq!(sanitize_name("../etc/passwd"), "-etc-passwd");
        assert_eq!(sanitize_name(""), "_global");
        assert_eq!(sanitize_name("my-proj_1"), "my-proj_1");
    }
}
