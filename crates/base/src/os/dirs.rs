//! Where the user's folders are by default: the home folder, the data and state folders, and the
//! per-user runtime folder (each may be moved by its environment variable, read in `config`).

use std::path::PathBuf;

/// The user's home folder: `$HOME` (Linux, macOS); `%USERPROFILE%` on Windows, where Claude Code
/// keeps `.claude` and `.claude.json` (a `HOME` that Git Bash sets is not Claude Code's).
pub fn home() -> Option<PathBuf> {
    let name = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    absolute_var(name)
}

/// Where data lives when `XDG_DATA_HOME` is unset: `~/.local/share`; `%LOCALAPPDATA%` on Windows
/// (per user, per machine, not roamed: a store is big and tied to this machine's checkouts).
pub fn data_home(home: &std::path::Path) -> PathBuf {
    local_app_data().unwrap_or_else(|| home.join(".local/share"))
}

/// Where logs and state live when `XDG_STATE_HOME` is unset: `~/.local/state`; `%LOCALAPPDATA%`
/// on Windows.
pub fn state_home(home: &std::path::Path) -> PathBuf {
    local_app_data().unwrap_or_else(|| home.join(".local/state"))
}

/// The per-user runtime folder when `XDG_RUNTIME_DIR` is unset: `$TMPDIR/wt-tools-<uid>` (checked
/// to be ours and private before use: another user may have made it first); on Windows the
/// temporary folder is already the user's own (`%LOCALAPPDATA%\Temp`), so `wt-tools` in it.
pub fn runtime_default() -> PathBuf {
    if cfg!(windows) {
        std::env::temp_dir().join("wt-tools")
    } else {
        std::env::temp_dir().join(format!("wt-tools-{}", super::process::real_uid()))
    }
}

fn local_app_data() -> Option<PathBuf> {
    if cfg!(windows) {
        absolute_var("LOCALAPPDATA")
    } else {
        None
    }
}

fn absolute_var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}
