//! The tools' log file under the XDG state dir: the hook's only error channel (stdout belongs to
//! Claude Code and stderr ends up in its debug log at best), and where the store's integrity
//! notes and dropped spool lines go. One line each.

use std::io::Write;

const LOG_NAME: &str = "wt-hook-memory.log";
/// Past this size the log is moved aside to `.old`, so a busy project cannot fill the disk.
const ROTATE_BYTES: u64 = 1024 * 1024;

pub fn debug_enabled() -> bool {
    crate::config::get().hook_debug
}

/// One line: time, pid, the event (or another source such as `wt-memory`), level and message.
pub fn write(level: &str, event: &str, msg: &str) {
    let dir = crate::paths::log_dir();
    if crate::paths::ensure_private_dir(&dir).is_err() {
        return;
    }
    let path = dir.join(LOG_NAME);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > ROTATE_BYTES) {
        let _ = std::fs::rename(&path, dir.join(format!("{LOG_NAME}.old")));
    }
    let one_line: String = msg
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = format!(
        "{} pid={} {} {}: {}\n",
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        std::process::id(),
        if event.is_empty() { "-" } else { event },
        level,
        crate::hygiene::truncate_with_ellipsis(&one_line, 600)
    );
    if let Ok(mut f) = crate::paths::open_private_append(&path) {
        let _ = f.write_all(line.as_bytes());
    }
}

pub fn error(event: &str, msg: &str) {
    write("ERROR", event, msg);
}

pub fn info(event: &str, msg: &str) {
    write("INFO", event, msg);
}

pub fn debug(event: &str, msg: &str) {
    if debug_enabled() {
        write("DEBUG", event, msg);
    }
}
