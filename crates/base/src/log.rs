//! The tools' log file under the XDG state dir: the hook's only error channel (stdout belongs to
//! Claude Code and stderr ends up in its debug log at best), and where the store's integrity
//! notes and dropped spool lines go. One line each.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

const LOG_NAME: &str = "wt-hook-memory.log";
/// Past this size the log is moved aside to `.old`, so a busy project cannot fill the disk.
const ROTATE_BYTES: u64 = 1024 * 1024;
/// The longest message kept, in characters.
const MAX_MESSAGE_CHARS: usize = 600;

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
    let mut one_line: String = msg
        .chars()
        .take(MAX_MESSAGE_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if msg.chars().nth(MAX_MESSAGE_CHARS).is_some() {
        one_line.pop();
        one_line.truncate(one_line.trim_end().len());
        one_line.push('…');
    }
    let line = format!(
        "{} pid={} {} {}: {}\n",
        utc_now(),
        std::process::id(),
        if event.is_empty() { "-" } else { event },
        level,
        one_line
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

/// The time now as `2026-11-27T14:05:09.123Z`.
fn utc_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    utc(since.as_secs(), since.subsec_millis())
}

fn utc(secs: u64, millis: u32) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm, in 400-year eras).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_utc_in_rfc3339_with_milliseconds() {
        assert_eq!(super::utc(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::utc(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(super::utc(1_795_790_709, 123), "2026-11-27T14:45:09.123Z");
    }
}
