//! The Claude Code plugin (`plugin/` in this repository): whether it is enabled for a project,
//! and whether this process was started by it. `wt-project init` then writes no hooks of its own,
//! a hook started from settings steps aside, and `doctor` says which way the project is wired.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The plugin's name, and its marketplace's (`wt-tools@wt-tools`).
pub const NAME: &str = "wt-tools";
pub const MARKETPLACE: &str = "wt-tools";
/// Where the marketplace is published (`/plugin marketplace add` takes it; `init --team-plugin`
/// writes it unless told another source).
pub const MARKETPLACE_REPO: &str = "wt-tools/wt-tools";

/// The settings files Claude Code reads for a project, lowest precedence first: the user's, the
/// project's, the project's local one.
pub fn settings_files(project_root: &Path) -> Vec<PathBuf> {
    vec![
        wt_memory_base::config::get()
            .claude_dir
            .join("settings.json"),
        project_root.join(".claude/settings.json"),
        project_root.join(".claude/settings.local.json"),
    ]
}

/// Is `key` (`name@marketplace`) our plugin?
fn is_ours(key: &str) -> bool {
    key.split_once('@').is_some_and(|(name, _)| name == NAME)
}

/// The `enabledPlugins` entry that enables our plugin, after every file has had its say (a later
/// file overrides an earlier one key by key, as Claude Code merges them).
pub fn enabled_in(files: &[PathBuf]) -> Option<String> {
    let mut state: Vec<(String, bool)> = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let Some(plugins) = value.get("enabledPlugins").and_then(Value::as_object) else {
            continue;
        };
        for (key, on) in plugins.iter().filter(|(k, _)| is_ours(k)) {
            let on = match on {
                Value::Bool(b) => *b,
                Value::Array(a) => !a.is_empty(),
                _ => false,
            };
            state.retain(|(k, _)| k != key);
            state.push((key.clone(), on));
        }
    }
    state.into_iter().find(|(_, on)| *on).map(|(key, _)| key)
}

/// The plugin's `enabledPlugins` entry for the project at `project_root`, if it is enabled.
pub fn enabled(project_root: &Path) -> Option<String> {
    enabled_in(&settings_files(project_root))
}

pub use wt_memory_base::config::started_by_plugin;

/// The newest installed copy of the plugin enabled as `key` (`wt-tools@<marketplace>`): Claude
/// Code keeps them under `<claude dir>/plugins/cache/<marketplace>/wt-tools/<version>/`.
pub fn installed_copy(key: &str) -> Option<PathBuf> {
    let (name, marketplace) = key.split_once('@')?;
    let versions = wt_memory_base::config::get()
        .claude_dir
        .join("plugins/cache")
        .join(marketplace)
        .join(name);
    std::fs::read_dir(versions)
        .ok()?
        .flatten()
        .filter(|v| v.path().join("bin/wt-launch").is_file())
        .max_by_key(|v| {
            v.metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH)
        })
        .map(|v| v.path())
}

/// The plugin's `CLAUDE_PLUGIN_DATA` for `key`: Claude Code's plugin id with every character but
/// letters, digits, `-` and `_` made `-`.
pub fn data_dir(key: &str) -> PathBuf {
    let id: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    wt_memory_base::config::get()
        .claude_dir
        .join("plugins/data")
        .join(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_later_file_overrides_an_earlier_one() {
        let dir = tempfile::tempdir().unwrap();
        let user = write(
            dir.path(),
            "user.json",
            r#"{"enabledPlugins":{"wt-tools@wt-tools":true}}"#,
        );
        let local = write(
            dir.path(),
            "local.json",
            r#"{"enabledPlugins":{"wt-tools@wt-tools":false}}"#,
        );
        let other = write(
            dir.path(),
            "other.json",
            r#"{"enabledPlugins":{"wt-tools@acme":true,"x@y":true}}"#,
        );
        assert_eq!(
            enabled_in(std::slice::from_ref(&user)).as_deref(),
            Some("wt-tools@wt-tools")
        );
        assert_eq!(enabled_in(&[user.clone(), local.clone()]), None);
        assert_eq!(
            enabled_in(&[local.clone(), user.clone()]).as_deref(),
            Some("wt-tools@wt-tools")
        );
        // Any marketplace's copy counts; other plugins do not.
        assert_eq!(
            enabled_in(&[local, other]).as_deref(),
            Some("wt-tools@acme")
        );
        let broken = write(dir.path(), "broken.json", "{not json");
        let theirs = write(
            dir.path(),
            "theirs.json",
            r#"{"enabledPlugins":{"wt-tools-extra@m":true}}"#,
        );
        assert_eq!(enabled_in(&[broken, theirs]), None);
    }
}
