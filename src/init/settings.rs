//! Hook entries in `.claude/settings.json` (or `settings.local.json`): merge ours in by command
//! identity, take them out again.
//!
//! Everything that is not one of our handlers (other keys, other tools' hooks, even other handlers in
//! a group that also holds ours) is kept exactly, in its original order. Our handlers of every
//! earlier generation are recognised by the program they run and replaced by the canonical set.

use anyhow::{bail, Result};
use regex::Regex;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One canonical matcher group of ours: a row of the hook event table
/// ([`wt_memory_base::hook_events`]).
pub type HookSpec = wt_memory_base::hook_events::HookEvent;

/// The arguments the handler of `spec` is run with: the event, then its flags.
fn hook_args(spec: &HookSpec) -> Vec<String> {
    std::iter::once(spec.name)
        .chain(spec.args.into_iter().flat_map(str::split_whitespace))
        .map(str::to_string)
        .collect()
}

/// The groups `init` writes, in the order they are added to a fresh file: the event table's rows;
/// with `pretool`, recall before Bash, Edit and Write replaces the guard-only PreToolUse.
pub fn canonical_specs(pretool: bool) -> Vec<HookSpec> {
    use wt_memory_base::hook_events::{EVENTS, PRETOOL_RECALL};
    EVENTS
        .iter()
        .map(|e| {
            if pretool && e.name == PRETOOL_RECALL.name {
                PRETOOL_RECALL
            } else {
                *e
            }
        })
        .collect()
}

/// Quote `s` for `sh -c` only when it needs it.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./+-:@%,=".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The program of an exec-form handler as written in settings: the path with forward slashes
/// (Claude Code takes both on Windows, and a backslash means nothing special to it in exec form,
/// but a copy of the line pasted into a shell would eat it).
pub fn program_text(program: &Path) -> String {
    let text = program.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '\\' {
        text.replace('\\', "/")
    } else {
        text.into_owned()
    }
}

/// One handler's command line as a shell would read it: a shell-form `command` as it is, an
/// exec-form one (`command` the program, `args` its arguments, no shell) quoted back into one
/// line. What `doctor` shows and which programs are checked to exist go by it.
pub fn command_line(handler: &Value) -> Option<String> {
    let command = handler.get("command")?.as_str()?;
    let Some(args) = handler.get("args").and_then(Value::as_array) else {
        return Some(command.to_string());
    };
    let words = std::iter::once(command).chain(args.iter().filter_map(Value::as_str));
    Some(words.map(shell_quote).collect::<Vec<_>>().join(" "))
}

/// True when `command` runs our hook handler of any generation: `wt-hook-memory <Event>` under any
/// path or quoting, or one of the five 5-layer-era `wt-hook-memory-*` scripts.
pub fn is_our_command(command: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?:^|[\s/\\'"=;&|(])wt-hook-memory(?:-(?:warmstart|recall|pretool|posttool|save))?(?:\.exe)?['"]?(?:[\s;&|)]|$)"#,
        )
        .expect("valid regex")
    })
    .is_match(command)
}

fn is_our_handler(handler: &Value) -> bool {
    command_line(handler).is_some_and(|line| is_our_command(&line))
}

/// Does a parsed `settings.json` register any of our handlers (`doctor` asks)?
pub fn has_our_hooks(settings: &Value) -> bool {
    settings
        .get("hooks")
        .and_then(Value::as_object)
        .is_some_and(|events| {
            events
                .values()
                .filter_map(Value::as_array)
                .flatten()
                .any(|group| {
                    group
                        .get("hooks")
                        .and_then(Value::as_array)
                        .is_some_and(|handlers| handlers.iter().any(is_our_handler))
                })
        })
}

/// Every handler command a parsed `settings.json` registers: (event, command).
pub fn hook_commands(settings: &Value) -> Vec<(String, String)> {
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, groups) in events {
        for group in groups.as_array().into_iter().flatten() {
            for handler in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(command) = command_line(handler) {
                    out.push((event.clone(), command));
                }
            }
        }
    }
    out
}

/// The program a shell-form hook command runs (its first word, unquoted), with
/// `$CLAUDE_PROJECT_DIR` and a leading `~` expanded; None when there is no first word.
pub fn command_program(command: &str, project_dir: &Path) -> Option<PathBuf> {
    let command = command.trim_start();
    let word = match command.chars().next()? {
        q @ ('"' | '\'') => command[1..].split(q).next()?.to_string(),
        _ => command.split_whitespace().next()?.to_string(),
    };
    let dir = project_dir.to_string_lossy();
    let word = word
        .replace("${CLAUDE_PROJECT_DIR}", &dir)
        .replace("$CLAUDE_PROJECT_DIR", &dir);
    let word = match word.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|h| Path::new(&h).join(rest).to_string_lossy().into_owned())
            .unwrap_or(word.clone()),
        None => word,
    };
    Some(PathBuf::from(word))
}

/// Does the program of `command` exist (a path that is a file, or a name found on PATH)? A
/// command whose first word is a variable other than `$CLAUDE_PROJECT_DIR` cannot be judged here
/// and counts as found.
pub fn command_resolves(command: &str, project_dir: &Path) -> bool {
    let Some(program) = command_program(command, project_dir) else {
        return true;
    };
    let text = program.to_string_lossy();
    if text.contains('$') {
        return true;
    }
    if text.contains('/') {
        let path = if program.is_relative() {
            project_dir.join(&program)
        } else {
            program
        };
        path.is_file()
    } else {
        which::which(&program).is_ok() || is_shell_word(&text)
    }
}

/// `settings` without the handlers whose command is one of `commands` (groups and events left
/// empty go too); and how many handlers went.
pub fn without_commands(settings: &Value, commands: &[String]) -> (Value, usize) {
    let mut out = settings.clone();
    let mut removed = 0;
    if let Some(events) = out.get_mut("hooks").and_then(Value::as_object_mut) {
        for groups in events.values_mut() {
            let Some(list) = groups.as_array_mut() else {
                continue;
            };
            for group in list.iter_mut() {
                if let Some(handlers) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                    let before = handlers.len();
                    handlers.retain(|h| !command_line(h).is_some_and(|c| commands.contains(&c)));
                    removed += before - handlers.len();
                }
            }
            list.retain(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|h| !h.is_empty())
            });
        }
        events.retain(|_, groups| groups.as_array().is_none_or(|l| !l.is_empty()));
    }
    (out, removed)
}

/// A registered hook whose program does not exist.
pub struct Dangling {
    pub file: PathBuf,
    pub event: String,
    pub command: String,
}

/// The settings files Claude Code reads hooks from, for a project: the user's, the project's,
/// the project's local one (lowest precedence first).
pub fn settings_files(project_root: &Path) -> Vec<PathBuf> {
    wt_memory_foundation::plugin::settings_files(project_root)
}

/// Hook entries, in every settings file of the project and the user, whose program is missing.
pub fn dangling_hooks(project_root: &Path) -> Vec<Dangling> {
    let mut out = Vec::new();
    for file in settings_files(project_root) {
        let Some(value) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        else {
            continue;
        };
        for (event, command) in hook_commands(&value) {
            if !command_resolves(&command, project_root) {
                out.push(Dangling {
                    file: file.clone(),
                    event,
                    command,
                });
            }
        }
    }
    out
}

/// Shell builtins and keywords a command may start with.
fn is_shell_word(word: &str) -> bool {
    matches!(
        word,
        "cd" | "echo"
            | "exit"
            | "true"
            | "false"
            | "test"
            | "["
            | "export"
            | "source"
            | "."
            | "if"
            | "for"
            | "while"
            | "exec"
            | "eval"
            | "command"
            | "printf"
            | "set"
            | ":"
    )
}

fn group_json(spec: &HookSpec, hook_bin: &Path) -> Value {
    group_with_command(spec, program_text(hook_bin))
}

/// The plugin's hook groups: the same specs, each running the plugin's launcher.
pub fn plugin_hooks() -> Value {
    let mut events = Map::new();
    for spec in canonical_specs(false) {
        let group = group_with_command(&spec, "${CLAUDE_PLUGIN_ROOT}/bin/wt-hook-memory".into());
        match events.get_mut(spec.name).and_then(Value::as_array_mut) {
            Some(groups) => groups.push(group),
            None => {
                events.insert(spec.name.into(), Value::Array(vec![group]));
            }
        }
    }
    Value::Object(events)
}

/// One group running `program` for `spec`, in exec form: Claude Code starts the program itself
/// with the arguments, no shell between (on Windows no Git Bash, no console window, no quoting
/// of a path with spaces or backslashes; on Linux and macOS one process less per event). A
/// program named without a folder is looked up on PATH; on Windows `.exe` is added to a name
/// without an extension.
fn group_with_command(spec: &HookSpec, program: String) -> Value {
    let mut handler = Map::new();
    handler.insert("type".into(), json!("command"));
    handler.insert("command".into(), json!(program));
    handler.insert("args".into(), json!(hook_args(spec)));
    handler.insert("timeout".into(), json!(spec.timeout_secs));
    let mut group = Map::new();
    if let Some(m) = spec.matcher {
        group.insert("matcher".into(), json!(m));
    }
    group.insert("hooks".into(), Value::Array(vec![Value::Object(handler)]));
    Value::Object(group)
}

/// Result of taking our handlers out of one event's group list.
struct Stripped {
    groups: Vec<Value>,
    /// Index in `groups` where our handlers were first found (where the new ones go).
    first_ours_at: Option<usize>,
    removed: usize,
}

fn strip_ours(groups: &[Value]) -> Stripped {
    let mut kept = Vec::with_capacity(groups.len());
    let mut first_ours_at = None;
    let mut removed = 0;
    for group in groups {
        let Some(handlers) = group.get("hooks").and_then(Value::as_array) else {
            kept.push(group.clone());
            continue;
        };
        let others: Vec<Value> = handlers
            .iter()
            .filter(|h| !is_our_handler(h))
            .cloned()
            .collect();
        let ours_here = handlers.len() - others.len();
        if ours_here == 0 {
            kept.push(group.clone());
            continue;
        }
        removed += ours_here;
        if others.is_empty() {
            first_ours_at.get_or_insert(kept.len());
        } else {
            // Another tool shares the group: keep it (minus ours) and put ours right after it.
            let mut group = group.clone();
            group["hooks"] = Value::Array(others);
            kept.push(group);
            first_ours_at.get_or_insert(kept.len());
        }
    }
    Stripped {
        groups: kept,
        first_ours_at,
        removed,
    }
}

fn parse(text: &str, name: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => bail!("{name} is not a JSON object; fix or remove it, nothing was changed"),
        Err(e) => bail!("{name} is not valid JSON ({e}); fix it first, nothing was changed"),
    }
}

fn hooks_object<'a>(
    root: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a Map<String, Value>>> {
    match root.get("hooks") {
        None => Ok(None),
        Some(Value::Object(h)) => {
            for (event, groups) in h {
                if !groups.is_array() {
                    bail!("{name}: hooks.{event} is not a list; fix it first, nothing was changed");
                }
            }
            Ok(Some(h))
        }
        Some(_) => bail!("{name}: \"hooks\" is not an object; fix it first, nothing was changed"),
    }
}

/// Formatting of the user's file, so a rewrite changes only what we changed.
struct Style {
    indent: Vec<u8>,
    trailing_newline: bool,
}

fn detect_style(text: Option<&str>) -> Style {
    let Some(text) = text else {
        return Style {
            indent: b"  ".to_vec(),
            trailing_newline: true,
        };
    };
    let indent = text
        .lines()
        .skip(1)
        .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
        .find(|ws| !ws.is_empty())
        .unwrap_or("  ");
    Style {
        indent: indent.as_bytes().to_vec(),
        trailing_newline: text.is_empty() || text.ends_with('\n'),
    }
}

/// Serialize `value` as pretty JSON in `style`.
fn render(value: &Value, style: &Style) -> String {
    use serde::Serialize;
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(&style.indent);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value
        .serialize(&mut ser)
        .expect("JSON values always serialize");
    let mut text = String::from_utf8(out).expect("serde_json writes UTF-8");
    if style.trailing_newline {
        text.push('\n');
    }
    text
}

/// Pretty JSON with 2-space indent and a final newline (files we create).
pub fn render_default(value: &Value) -> String {
    render(value, &detect_style(None))
}

/// Pretty JSON in the formatting of `original` (files we edit).
pub fn render_like(value: &Value, original: Option<&str>) -> String {
    render(value, &detect_style(original))
}

/// The settings text with the plugin's marketplace known and the plugin enabled (None: already
/// so).
pub fn with_team_plugin(
    original: Option<&str>,
    source: Value,
    name: &str,
) -> Result<Option<String>> {
    let mut root = match original {
        Some(text) => parse(text, name)?,
        None => Map::new(),
    };
    let before = root.clone();
    let mut set = |key: &str, entry: &str, value: Value| -> Result<()> {
        let section = root
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(section) = section.as_object_mut() else {
            bail!("{name}: \"{key}\" is not an object; fix it first, nothing was changed");
        };
        section.insert(entry.to_string(), value);
        Ok(())
    };
    set(
        "extraKnownMarketplaces",
        wt_memory_foundation::plugin::MARKETPLACE,
        json!({ "source": source }),
    )?;
    set(
        "enabledPlugins",
        &format!(
            "{}@{}",
            wt_memory_foundation::plugin::NAME,
            wt_memory_foundation::plugin::MARKETPLACE
        ),
        json!(true),
    )?;
    if original.is_some() && root == before {
        return Ok(None);
    }
    Ok(Some(render_like(&Value::Object(root), original)))
}

/// The settings text after merging our hooks into `original` (None: no file yet).
/// Returns None when nothing would change.
pub fn install(
    original: Option<&str>,
    hook_bin: &Path,
    pretool: bool,
    name: &str,
) -> Result<Option<String>> {
    let root = match original {
        Some(text) => parse(text, name)?,
        None => Map::new(),
    };
    let existing_hooks = hooks_object(&root, name)?.cloned().unwrap_or_default();

    let specs = canonical_specs(pretool);
    let mut events: Vec<&str> = Vec::new();
    for spec in &specs {
        if !events.contains(&spec.name) {
            events.push(spec.name);
        }
    }

    let mut hooks = Map::new();
    // Events already in the file keep their place; ours that are new go at the end, in canonical order.
    let order: Vec<String> = existing_hooks
        .keys()
        .cloned()
        .chain(
            events
                .iter()
                .map(|e| e.to_string())
                .filter(|e| !existing_hooks.contains_key(e)),
        )
        .collect();
    for event in order {
        let ours: Vec<Value> = specs
            .iter()
            .filter(|s| s.name == event)
            .map(|s| group_json(s, hook_bin))
            .collect();
        let groups = existing_hooks
            .get(&event)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let stripped = strip_ours(&groups);
        let mut merged = stripped.groups;
        let at = stripped.first_ours_at.unwrap_or(merged.len());
        let had_key = existing_hooks.contains_key(&event);
        merged.splice(at..at, ours);
        // Drop an event key only when it held nothing but our (now unwanted) handlers.
        if merged.is_empty() && (!had_key || stripped.removed > 0) {
            continue;
        }
        hooks.insert(event, Value::Array(merged));
    }

    let mut new_root = root.clone();
    // `insert` keeps an existing key at its position.
    new_root.insert("hooks".into(), Value::Object(hooks));
    let new_value = Value::Object(new_root);
    if original.is_some() && new_value == Value::Object(root) {
        return Ok(None);
    }
    Ok(Some(render_like(&new_value, original)))
}

/// `value` with every handler of ours removed (empty groups and event keys emptied by that go too).
/// The second value is the number of handlers removed.
pub fn without_ours(root: &Map<String, Value>, name: &str) -> Result<(Map<String, Value>, usize)> {
    let Some(existing) = hooks_object(root, name)? else {
        return Ok((root.clone(), 0));
    };
    let mut hooks = Map::new();
    let mut removed = 0;
    for (event, groups) in existing {
        let stripped = strip_ours(groups.as_array().map(Vec::as_slice).unwrap_or_default());
        removed += stripped.removed;
        if stripped.groups.is_empty() && stripped.removed > 0 {
            continue;
        }
        hooks.insert(event.clone(), Value::Array(stripped.groups));
    }
    let mut out = root.clone();
    if hooks.is_empty() && removed > 0 {
        out.shift_remove("hooks");
    } else {
        out.insert("hooks".into(), Value::Object(hooks));
    }
    Ok((out, removed))
}

/// What uninstall does to one settings file.
#[derive(Debug, PartialEq)]
pub enum Removal {
    Unchanged,
    /// Write this text.
    Write(String),
    /// Restore the backup's exact bytes (it equals the file without our entries), then drop the backup.
    RestoreBackup,
    /// The file held nothing but our entries.
    Delete,
}

/// Plan the removal of our hooks from `current`; `backup` is `settings.json.bak` if present.
pub fn uninstall(current: &str, backup: Option<&str>, name: &str) -> Result<Removal> {
    let root = parse(current, name)?;
    let (stripped, removed) = without_ours(&root, name)?;
    if removed == 0 {
        return Ok(Removal::Unchanged);
    }
    if let Some(bak) = backup.and_then(|b| serde_json::from_str::<Value>(b).ok()) {
        if let Value::Object(bak_root) = &bak {
            let bak_is_clean = without_ours(bak_root, name).is_ok_and(|(_, n)| n == 0);
            if bak_is_clean && bak == Value::Object(stripped.clone()) {
                return Ok(Removal::RestoreBackup);
            }
        }
    }
    if stripped.is_empty() {
        return Ok(Removal::Delete);
    }
    Ok(Removal::Write(render_like(
        &Value::Object(stripped),
        Some(current),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn bin() -> PathBuf {
        PathBuf::from("/opt/wt/bin/wt-hook-memory")
    }

    #[test]
    fn recognises_every_generation_of_our_commands() {
        for ours in [
            "wt-hook-memory SessionStart",
            "/home/u/.local/bin/wt-hook-memory Stop",
            "'/path with space/wt-hook-memory' Stop",
            "\"$HOME/bin/wt-hook-memory\" PostToolUse",
            "wt-hook-memory-warmstart",
            "/x/bin/wt-hook-memory-save",
            "env A=1 wt-hook-memory PreToolUse",
            "C:/Users/u/bin/wt-hook-memory.exe SessionStart",
            "C:\\Users\\u\\bin\\wt-hook-memory.exe",
        ] {
            assert!(is_our_command(ours), "{ours}");
        }
        for theirs in [
            "wt-hook-skill",
            "wt-hook-stop",
            "/x/wt-hook-memory-stuff/run",
            "/x/wt-hook-memory/bin/other",
            "my-wt-hook-memory Stop",
            ".claude/hooks/activity-track.sh",
        ] {
            assert!(!is_our_command(theirs), "{theirs}");
        }
    }

    #[test]
    fn doctor_sees_our_hooks_only_where_they_are() {
        let ours = install(None, &bin(), false, "settings.json")
            .unwrap()
            .unwrap();
        assert!(has_our_hooks(&serde_json::from_str(&ours).unwrap()));
        let theirs = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "wt-hook-stop"}]}]}});
        assert!(!has_our_hooks(&theirs));
        assert!(!has_our_hooks(&json!({"permissions": {}})));
        // A mention outside a hook command (the previous substring check accepted it) is not a hook.
        assert!(!has_our_hooks(
            &json!({"env": {"NOTE": "wt-hook-memory PostToolUse"}})
        ));
    }

    #[test]
    fn handlers_are_written_in_exec_form_and_read_back_as_one_line() {
        let text = install(
            None,
            Path::new("/a b/wt-hook-memory"),
            false,
            "settings.json",
        )
        .unwrap()
        .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let guard = &v["hooks"]["PreToolUse"][0]["hooks"][0];
        assert_eq!(guard["command"], "/a b/wt-hook-memory", "no shell quoting");
        assert_eq!(guard["args"], json!(["PreToolUse", "--guard-only"]));
        assert_eq!(
            command_line(guard).unwrap(),
            "'/a b/wt-hook-memory' PreToolUse --guard-only"
        );
        assert_eq!(
            command_program(&command_line(guard).unwrap(), Path::new("/p")).unwrap(),
            PathBuf::from("/a b/wt-hook-memory")
        );
        assert!(has_our_hooks(&v));
        let shell_form = json!({"type": "command", "command": "x --y"});
        assert_eq!(command_line(&shell_form).unwrap(), "x --y");
        assert_eq!(
            program_text(Path::new("/opt/wt/bin/wt-hook-memory")),
            "/opt/wt/bin/wt-hook-memory"
        );
    }

    #[test]
    fn quoting_only_when_needed() {
        assert_eq!(
            shell_quote("/usr/bin/wt-hook-memory"),
            "/usr/bin/wt-hook-memory"
        );
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }

    #[test]
    fn fresh_file_gets_every_event_and_a_sync_stop() {
        let text = install(None, &bin(), false, "settings.json")
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let hooks = v["hooks"].as_object().unwrap();
        let events: Vec<&str> = hooks.keys().map(String::as_str).collect();
        assert_eq!(
            events,
            [
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "PostToolUseFailure",
                "SubagentStart",
                "SubagentStop",
                "PreCompact",
                "Stop"
            ]
        );
        assert!(hooks["Stop"][0]["hooks"][0].get("async").is_none());
        assert_eq!(
            command_line(&hooks["Stop"][0]["hooks"][0]).unwrap(),
            "/opt/wt/bin/wt-hook-memory Stop"
        );
        assert!(hooks["SessionStart"][0]["hooks"][0].get("async").is_none());
        assert!(text.ends_with("}\n"));
    }

    #[test]
    fn merge_keeps_others_in_place_and_second_merge_is_a_no_op() {
        let original = r#"{
    "zeta": 1,
    "hooks": {
        "Stop": [
            {"hooks": [{"type": "command", "command": "notify-done"}, {"type": "command", "command": "wt-hook-memory Stop", "timeout": 30}]}
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "beep"}]}]
    },
    "alpha": true
}"#;
        let first = install(Some(original), &bin(), false, "s")
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&first).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["zeta", "hooks", "alpha"]);
        assert_eq!(
            v["hooks"]["Stop"][0]["hooks"],
            json!([{"type": "command", "command": "notify-done"}])
        );
        assert_eq!(
            command_line(&v["hooks"]["Stop"][1]["hooks"][0]).unwrap(),
            "/opt/wt/bin/wt-hook-memory Stop"
        );
        assert_eq!(
            v["hooks"]["Notification"][0]["hooks"][0]["command"],
            json!("beep")
        );
        assert!(
            first.contains("\n    \"zeta\": 1"),
            "keeps 4-space indent:\n{first}"
        );
        assert_eq!(install(Some(&first), &bin(), false, "s").unwrap(), None);
    }

    #[test]
    fn pretool_recall_is_added_on_request_and_the_guard_stays_without_it() {
        let with = install(None, &bin(), true, "s").unwrap().unwrap();
        let v: Value = serde_json::from_str(&with).unwrap();
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["matcher"],
            json!(wt_memory_base::hook_events::ACTING_TOOLS)
        );
        let without = install(Some(&with), &bin(), false, "s").unwrap().unwrap();
        let v: Value = serde_json::from_str(&without).unwrap();
        let groups = v["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(groups.len(), 1);
        assert_eq!(
            groups[0]["matcher"],
            json!(wt_memory_base::hook_events::ACTING_TOOLS)
        );
        assert_eq!(
            command_line(&groups[0]["hooks"][0]).unwrap(),
            "/opt/wt/bin/wt-hook-memory PreToolUse --guard-only"
        );
    }

    #[test]
    fn invalid_json_and_wrong_shapes_are_errors() {
        assert!(install(Some("{\"hooks\": "), &bin(), false, "s").is_err());
        assert!(install(Some("[]"), &bin(), false, "s").is_err());
        assert!(install(Some(r#"{"hooks": []}"#), &bin(), false, "s").is_err());
        assert!(install(Some(r#"{"hooks": {"Stop": {}}}"#), &bin(), false, "s").is_err());
    }

    #[test]
    fn uninstall_restores_backup_or_strips() {
        let original = "{\n  \"model\": \"opus\"\n}\n";
        let installed = install(Some(original), &bin(), false, "s")
            .unwrap()
            .unwrap();
        assert_eq!(
            uninstall(&installed, Some(original), "s").unwrap(),
            Removal::RestoreBackup
        );
        let Removal::Write(text) = uninstall(&installed, None, "s").unwrap() else {
            panic!("expected a rewrite")
        };
        assert_eq!(text, original);
        let fresh = install(None, &bin(), false, "s").unwrap().unwrap();
        assert_eq!(uninstall(&fresh, None, "s").unwrap(), Removal::Delete);
        assert_eq!(uninstall(original, None, "s").unwrap(), Removal::Unchanged);
    }
}
