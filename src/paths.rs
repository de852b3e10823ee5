//! Where things live on disk: XDG-style data, state and runtime directories.
//!
//! Every path honours the usual environment overrides so tests (and users) can relocate them.

use std::path::PathBuf;

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// `$XDG_DATA_HOME` or `~/.local/share`.
pub fn data_home() -> PathBuf {
    env_dir("XDG_DATA_HOME").unwrap_or_else(|| home().join(".local/share"))
}

/// `$XDG_STATE_HOME` or `~/.local/state`.
pub fn state_home() -> PathBuf {
    env_dir("XDG_STATE_HOME").unwrap_or_else(|| home().join(".local/state"))
}

/// Root of all per-project stores: `$WT_MEMORY_HOME`, else `$SHODH_STORAGE` (compatibility with the
/// previous implementation), else `<data>/wt-tools/memory`.
pub fn storage_root() -> PathBuf {
    env_dir("WT_MEMORY_HOME")
        .or_else(|| env_dir("SHODH_STORAGE"))
        .unwrap_or_else(|| data_home().join("wt-tools/memory"))
}

/// Log directory for front ends that must never print errors (the hook handler).
pub fn log_dir() -> PathBuf {
    state_home().join("wt-tools")
}

/// Per-user runtime directory for short-lived files (hook session caches, locks).
/// `$XDG_RUNTIME_DIR/wt-tools`, else `/tmp/wt-tools-<uid>`.
pub fn runtime_dir() -> PathBuf {
    match env_dir("XDG_RUNTIME_DIR") {
        Some(dir) => dir.join("wt-tools"),
        // SAFETY: getuid has no preconditions and cannot fail.
        None => PathBuf::from(format!("/tmp/wt-tools-{}", unsafe { libc::getuid() })),
    }
}

/// Create `dir` (and parents) readable only by the current user.
pub fn ensure_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Write `bytes` to `path` atomically (temp file in the same directory, then rename).
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or_else(|| std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
