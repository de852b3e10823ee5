//! The previous wt-tools' store of a repository: found where that system kept it, and brought into
//! ours by `wt-memory migrate --from-legacy`.
//!
//! The previous system named a store by the main worktree's directory (`<root>/shopapp`), ours by
//! the repository's git directory (`<root>/shopapp-1a2b3c4d`), so after the switch the old
//! memories sit next to an empty store and nothing points at them. They are read from a copy, so
//! the original stays byte-identical (a rollback to the previous system finds it as it left it).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use wt_memory_base::project::Project;

/// Written into our store once its memories came in, so the hint stops.
pub const MARKER: &str = "legacy-migrated.json";

/// Files only our stores hold: a directory with any of them is not the previous system's.
/// (`.migrations` is not one: the previous system writes a file of that name too, with `001`.)
const OURS: &[&str] = &["wt-memory.json", "wt-memory-integrity.json"];

/// Where the previous system kept `project`'s store: `<root>/<main worktree's directory name>`.
pub fn location(project: &Project) -> Option<PathBuf> {
    let worktree = project.main_root.as_ref().or(project.toplevel.as_ref())?;
    let name = worktree.file_name()?;
    let dir = wt_memory_base::paths::storage_root().join(name);
    (dir != project.store_dir).then_some(dir)
}

/// Does `dir` hold the engine's files and none of ours? A `.migrations` that lists a migration
/// the previous system never had (it stopped at `001`) was written by us.
pub fn is_legacy(dir: &Path) -> bool {
    dir.join("storage").is_dir()
        && !OURS.iter().any(|f| dir.join(f).exists())
        && !crate::migrate::applied(dir)
            .applied
            .iter()
            .any(|id| id.as_str() > LAST_PREVIOUS_MIGRATION)
}

/// The last migration the previous system applied to its stores.
const LAST_PREVIOUS_MIGRATION: &str = "001";

/// The previous system's store of `project`, when there is one whose memories are not in ours yet.
pub fn pending(project: &Project) -> Option<PathBuf> {
    let dir = location(project)?;
    (is_legacy(&dir) && !project.store_dir.join(MARKER).exists()).then_some(dir)
}

/// One line for `status`, `doctor`, `init` and the first open of an empty store.
pub fn hint(dir: &Path) -> String {
    format!(
        "the previous wt-tools kept this repository's memories in {}; bring them in with `wt-memory migrate --from-legacy`",
        dir.display()
    )
}

/// Is the store held by the previous system's service (`wt-memoryd`)? The engine's database
/// takes an exclusive lock on `storage/LOCK` while open; a copy taken meanwhile could be torn.
pub fn held(dir: &Path) -> bool {
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join("storage/LOCK"))
    else {
        return false;
    };
    wt_memory_base::os::files::write_locked_by_other(&file)
}

/// The old store's memories as an export document (every field as the engine keeps it), read
/// from a copy in a temporary directory; and how many there are.
pub fn export_copy(dir: &Path) -> Result<(String, usize)> {
    if !is_legacy(dir) {
        bail!(
            "{} is not a store of the previous wt-tools (no storage/ directory, or it is one of ours)",
            dir.display()
        );
    }
    if held(dir) {
        bail!(
            "the previous system's memory service holds {}; stop it with `wt-memoryd stop`, then run this again",
            dir.display()
        );
    }
    let tmp = tempfile::tempdir()?;
    let copy = tmp.path().join("legacy");
    copy_tree(dir, &copy).with_context(|| format!("cannot copy {}", dir.display()))?;
    let project = Project {
        name: "legacy".into(),
        store_dir: copy,
        toplevel: None,
        main_root: None,
        cwd: tmp.path().to_path_buf(),
    };
    let store = crate::store::Store::open(&project)?;
    let doc = crate::exchange::export(&store, false)?;
    let count = doc["records"].as_array().map_or(0, Vec::len);
    Ok((serde_json::to_string(&doc)?, count))
}

/// Note in our store that `dir`'s memories came in.
pub fn record(project: &Project, dir: &Path, imported: usize) -> Result<()> {
    let note = serde_json::json!({
        "from": dir,
        "imported": imported,
        "at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    });
    wt_memory_base::paths::write_atomic(
        &project.store_dir.join(MARKER),
        format!("{note}\n").as_bytes(),
    )
    .with_context(|| format!("cannot write {}", project.store_dir.join(MARKER).display()))
}

/// Copy regular files and directories (symlinks are skipped: a store holds none).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The previous system's layout: the engine's directories, its own `.migrations`, its logs.
    fn previous_layout(dir: &Path) {
        for sub in ["storage", "vector_index", "bm25_index"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        std::fs::write(
            dir.join(".migrations"),
            r#"{"applied": ["001"], "last_run": "2026-06-02T09:14:07.511204"}"#,
        )
        .unwrap();
        std::fs::write(dir.join("wt-memory.log"), "").unwrap();
        std::fs::write(dir.join("wt-memoryd.log"), "").unwrap();
    }

    #[test]
    fn the_previous_systems_store_is_told_from_ours_by_what_only_ours_writes() {
        let tmp = tempfile::tempdir().unwrap();
        let old = tmp.path().join("shopapp");
        previous_layout(&old);
        assert!(
            is_legacy(&old),
            "its `.migrations` (001 only) is the previous system's"
        );
        // Ours, after our second migration ran, even without its other files.
        std::fs::write(
            old.join(".migrations"),
            r#"{"applied":["001","002"],"last_run":"x"}"#,
        )
        .unwrap();
        assert!(!is_legacy(&old));
        previous_layout(&old);
        std::fs::write(old.join("wt-memory.json"), "{}").unwrap();
        assert!(!is_legacy(&old), "our store's own file");
        assert!(!is_legacy(&tmp.path().join("absent")));
    }
}
