//! Who publishes: `<user>/<machine>`, from git's user, the login name and the host name.

use super::FILE_NAME;
use anyhow::{bail, Result};
use std::fmt;
use std::path::Path;

/// Who publishes: `<user>/<machine>`, both reduced to `[a-z0-9-]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub machine: String,
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.user, self.machine)
    }
}

impl Identity {
    /// Path of this source's file on the sync branch.
    pub fn file_path(&self) -> String {
        format!("{}/{}/{FILE_NAME}", self.user, self.machine)
    }
}

/// `git config user.name` style names: lower-cased, spaces to `-`, only `[a-z0-9-]` kept.
pub fn sanitize_user(raw: &str) -> String {
    raw.trim()
        .to_lowercase()
        .replace(' ', "-")
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect()
}

/// Host names: the short name (before the first dot), lower-cased, only `[a-z0-9-]` kept.
pub fn sanitize_machine(raw: &str) -> String {
    let short = raw.trim().split('.').next().unwrap_or_default();
    short
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect()
}

fn hostname() -> Option<String> {
    wt_memory_base::os::process::hostname()
}

fn login_name() -> Option<String> {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        .or_else(|| {
            let out = std::process::Command::new("whoami").output().ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        })
}

/// The identity used in `repo`: user from `git config user.name` (else the login name), machine
/// from `machine_override`, else `$WT_MEMORY_MACHINE`, else the host name.
pub fn identity(repo: &Path, machine_override: Option<&str>) -> Result<Identity> {
    let user_raw = wt_memory_base::project::git(repo, &["config", "user.name"])
        .filter(|s| !s.is_empty())
        .or_else(login_name)
        .unwrap_or_default();
    let user = sanitize_user(&user_raw);
    if user.is_empty() {
        bail!("cannot derive a user name from {user_raw:?}: set `git config user.name` to something with ASCII letters or digits");
    }
    let (machine_raw, origin) = match machine_override {
        Some(m) => (m.to_string(), "--machine"),
        None => match wt_memory_base::config::get().machine.clone() {
            Some(m) => (m, "WT_MEMORY_MACHINE"),
            None => (hostname().unwrap_or_default(), "the host name"),
        },
    };
    let machine = sanitize_machine(&machine_raw);
    if machine.is_empty() {
        bail!("invalid machine name {machine_raw:?} (from {origin}): use letters, digits and '-'");
    }
    Ok(Identity { user, machine })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_parts_are_sanitised() {
        assert_eq!(sanitize_user("Jane Q. Doe"), "jane-q-doe");
        assert_eq!(sanitize_user("  Ödön_X  "), "dnx");
        assert_eq!(sanitize_machine("Build-Box.example.com"), "build-box");
        assert_eq!(sanitize_machine("my_laptop"), "mylaptop");
    }
}
