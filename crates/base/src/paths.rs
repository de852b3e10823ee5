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

/// Create `dir` (and parents) readable only by the current user, and check that it is private:
/// a directory (not a link), owned by this user, with no access for others (an existing one of
/// ours with a wider mode is narrowed). The per-user runtime directory above it is checked the
/// same way: under `/tmp`, another user could have made it first.
pub fn ensure_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let runtime = runtime_dir();
    if dir != runtime && dir.starts_with(&runtime) {
        ensure_private_dir(&runtime)?;
    }
    crate::os::files::create_private_dir(dir)?;
    check_private_dir(dir)
}

fn check_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use crate::os::files;
    let meta = std::fs::symlink_metadata(dir)?;
    let refuse = |why: String| {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} is not private ({why}): another user could read or replace what is kept there; remove it, or set XDG_RUNTIME_DIR",
                dir.display()
            ),
        )
    };
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(refuse("not a directory but a link or a file".into()));
    }
    if let Some(uid) = files::owner(&meta).filter(|uid| *uid != my_uid()) {
        return Err(refuse(format!("owned by uid {uid}")));
    }
    if files::open_to_others(&meta) {
        files::set_mode(dir, 0o700)?;
    }
    Ok(())
}

/// How long ago `path` was last modified (None when that cannot be told).
pub fn age(path: &std::path::Path) -> Option<std::time::Duration> {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|at| at.elapsed().ok())
}

/// May this process create files in `dir`?
pub fn writable(dir: &std::path::Path) -> bool {
    crate::os::files::writable_dir(dir)
}

/// Narrow an existing directory of ours to 0700 (a store root made before, or by someone else's
/// umask); one owned by another user is left as it is.
pub fn narrow_to_private(dir: &std::path::Path) -> std::io::Result<()> {
    use crate::os::files;
    let meta = std::fs::symlink_metadata(dir)?;
    let mine = files::owner(&meta).is_none_or(|uid| uid == my_uid());
    if meta.is_dir() && mine && files::open_to_others(&meta) {
        files::set_mode(dir, 0o700)?;
    }
    Ok(())
}

/// Open `path` for appending, created 0600, never through a symbolic link (a planted link
/// cannot make us write elsewhere).
pub fn open_private_append(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    crate::os::files::private_no_follow(std::fs::OpenOptions::new().create(true).append(true))
        .open(path)
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

/// This process's effective uid (the owner every private directory and socket must have).
pub fn my_uid() -> u32 {
    crate::os::process::effective_uid()
}
