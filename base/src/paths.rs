//! Where things live on disk: XDG-style data, state and runtime directories.
//!
//! Every path honours the usual environment overrides (read once, in [`crate::config`]) so tests
//! (and users) can relocate them.

use std::path::PathBuf;

/// `$XDG_DATA_HOME` or `~/.local/share`.
pub fn data_home() -> PathBuf {
    crate::config::get().data_home.clone()
}

/// `$XDG_STATE_HOME` or `~/.local/state`.
pub fn state_home() -> PathBuf {
    crate::config::get().state_home.clone()
}

/// Root of all per-project stores: `$WT_MEMORY_HOME`, else `$SHODH_STORAGE` (compatibility with the
/// previous implementation), else `<data>/wt-tools/memory`.
pub fn storage_root() -> PathBuf {
    crate::config::get().storage_root.clone()
}

/// Log directory for front ends that must never print errors (the hook handler).
pub fn log_dir() -> PathBuf {
    state_home().join("wt-tools")
}

/// Per-user runtime directory for short-lived files (hook session caches, locks).
/// `$XDG_RUNTIME_DIR/wt-tools`, else `/tmp/wt-tools-<uid>`.
pub fn runtime_dir() -> PathBuf {
    crate::config::get().runtime_dir.clone()
}

/// Create `dir` (and parents) readable only by the current user.
pub fn ensure_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Write `bytes` to `path` atomically (temp file in the same directory, synced, then renamed).
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replacing(path, bytes, true)
}

/// [`write_atomic`] without the sync, for runtime files that need not survive a crash (a hook's
/// session cache): readers still see a whole file, and a hook saves an fsync.
pub fn write_atomic_volatile(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    write_replacing(path, bytes, false)
}

fn write_replacing(path: &std::path::Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or_else(|| std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    if sync {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
