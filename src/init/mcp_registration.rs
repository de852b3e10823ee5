//! Registering the MCP server with Claude Code: through the `claude` CLI when it is installed,
//! otherwise by merging an entry into the project's `.mcp.json` (only a command that names no path
//! of this machine goes there).
//!
//! Before calling the CLI we read its configuration (read only) to see whether the registration is
//! already exactly right, so a second `init` makes no calls and changes no file.

use super::Workspace;
use anyhow::{bail, Result};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Name under which the server is registered.
pub const SERVER_NAME: &str = "wt-tools";
/// Name used by the earliest generation; removed on init.
pub const LEGACY_NAME: &str = "wt-memory";
/// Image `--docker` uses when none is given.
pub const DEFAULT_IMAGE: &str = "wt-memory:latest";
/// The CLI does network work at start-up and can hang; never wait longer than this.
const CLI_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Local,
    Project,
    User,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Local => "local",
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// How the registered server is started.
#[derive(Debug, Clone)]
pub enum Launch {
    /// The local `wt-mcp-server`: its bare name when the one on PATH is the one `init` would use,
    /// else its absolute path (which then never goes into the committed `.mcp.json`).
    Local(PathBuf),
    /// `docker run` of this image, with the project mounted at its own host path, so each project
    /// keeps its own store on the shared volume (at `/workspace` every project would share one).
    Docker(String),
}

impl Launch {
    /// True when the command is the same on every machine, so it may go into `.mcp.json`.
    pub fn is_shareable(&self) -> bool {
        match self {
            Launch::Local(server) => server.components().count() == 1 && server.is_relative(),
            Launch::Docker(_) => true,
        }
    }
}

/// Command and arguments Claude Code runs. Nothing in it names this clone: Claude Code starts a
/// stdio server in the project directory and gives it `CLAUDE_PROJECT_DIR` (2.1.139+), and
/// `wt-mcp-server` falls back to its working directory. The Docker variant resolves the project
/// directory in a shell at start-up (`$VAR` without braces, so Claude Code's own `${VAR}`
/// expansion, done in its environment where `CLAUDE_PROJECT_DIR` is not set, leaves it alone).
pub fn server_command(launch: &Launch) -> Vec<String> {
    match launch {
        Launch::Local(server) => vec![server.to_string_lossy().into_owned()],
        Launch::Docker(image) => vec![
            "sh".into(),
            "-c".into(),
            format!(
                "d=$CLAUDE_PROJECT_DIR; [ -n \"$d\" ] || d=$PWD; exec docker run -i --rm -v \"$d:$d\" -w \"$d\" -e CLAUDE_PROJECT_DIR=\"$d\" -v wt-memory:/data {}",
                super::settings::shell_quote(image)
            ),
        ],
    }
}

/// True when `command` bakes in a path of one machine (what earlier versions wrote: an absolute
/// server path, `CLAUDE_PROJECT_DIR=/abs/clone`, `-v /abs:/abs`).
pub fn is_machine_specific(command: &[String]) -> bool {
    command
        .iter()
        .any(|a| a.starts_with('/') || a.contains("=/"))
}

/// One server entry found in Claude Code's configuration.
#[derive(Debug, Clone)]
pub struct Registration {
    pub scope: Scope,
    pub name: String,
    /// `command` followed by `args`.
    pub command: Vec<String>,
}

/// `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json` (where the CLI keeps local and user scope).
pub fn claude_config_file() -> PathBuf {
    wt_memory_base::config::get().claude_user_config.clone()
}

fn entry_command(entry: &Value) -> Vec<String> {
    let mut cmd: Vec<String> = entry
        .get("command")
        .and_then(Value::as_str)
        .map(|c| vec![c.to_string()])
        .unwrap_or_default();
    if let Some(args) = entry.get("args").and_then(Value::as_array) {
        cmd.extend(args.iter().map(|a| {
            a.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| a.to_string())
        }));
    }
    cmd
}

fn collect(servers: Option<&Value>, scope: Scope, found: &mut Vec<Registration>) {
    let Some(servers) = servers.and_then(Value::as_object) else {
        return;
    };
    for name in [SERVER_NAME, LEGACY_NAME] {
        if let Some(entry) = servers.get(name) {
            found.push(Registration {
                scope,
                name: name.to_string(),
                command: entry_command(entry),
            });
        }
    }
}

/// Our registrations (current and legacy name) visible for `target` in every scope.
/// None when the CLI's own configuration exists but cannot be read, so nothing can be concluded.
pub fn find_registrations(target: &Path) -> Option<Vec<Registration>> {
    let mut found = Vec::new();
    let config_file = claude_config_file();
    match std::fs::read_to_string(&config_file) {
        Ok(text) => {
            let config: Value = serde_json::from_str(&text).ok()?;
            let key = project_key(target);
            collect(
                config
                    .pointer("/projects")
                    .and_then(|p| p.get(&key))
                    .and_then(|p| p.get("mcpServers")),
                Scope::Local,
                &mut found,
            );
            collect(config.get("mcpServers"), Scope::User, &mut found);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return None,
    }
    if let Ok(text) = std::fs::read_to_string(target.join(".mcp.json")) {
        let config: Value = serde_json::from_str(&text).ok()?;
        collect(config.get("mcpServers"), Scope::Project, &mut found);
    }
    Some(found)
}

/// The CLI keys local-scope servers by the canonical project root, with forward slashes.
fn project_key(target: &Path) -> String {
    let canonical =
        wt_memory_base::os::files::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
    canonical.to_string_lossy().replace('\\', "/")
}

/// A user-scope entry belongs to this project only if it names it (user scope applies everywhere).
fn mentions(reg: &Registration, target: &Path) -> bool {
    let t = target.to_string_lossy();
    reg.command.iter().any(|a| a.contains(t.as_ref()))
}

/// True when `wt-tools` is registered exactly as wanted in `scope` and nothing else of ours
/// (legacy name, another scope) would shadow or duplicate it.
pub fn already_registered(target: &Path, scope: Scope, command: &[String]) -> bool {
    let Some(regs) = find_registrations(target) else {
        return false;
    };
    let relevant: Vec<&Registration> = regs
        .iter()
        .filter(|r| r.scope != Scope::User || scope == Scope::User || mentions(r, target))
        .collect();
    relevant.len() == 1
        && relevant[0].scope == scope
        && relevant[0].name == SERVER_NAME
        && relevant[0].command == command
}

/// Result of one `claude` call.
pub struct CliRun {
    pub ok: bool,
    /// stdout and stderr, trimmed.
    pub output: String,
}

/// Run `claude <args>` in `cwd`, killed after [`CLI_TIMEOUT`].
pub fn run_claude(claude: &Path, cwd: &Path, args: &[String]) -> CliRun {
    let ran = wt_memory_foundation::child::Child::new(claude, args)
        .dir(cwd)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .run(CLI_TIMEOUT);
    match ran {
        Ok(out) => {
            let text = format!(
                "{}\n{}",
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
            CliRun {
                ok: out.success(),
                output: text.trim().to_string(),
            }
        }
        Err(wt_memory_foundation::child::ChildError::Timeout(_)) => CliRun {
            ok: false,
            output: format!("no answer within {}s, stopped", CLI_TIMEOUT.as_secs()),
        },
        Err(e) => CliRun {
            ok: false,
            output: e.to_string(),
        },
    }
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// `claude mcp add wt-tools -s <scope> -- <command…>`
pub fn add_args(scope: Scope, command: &[String]) -> Vec<String> {
    let mut a = args(&["mcp", "add", SERVER_NAME, "-s", scope.as_str(), "--"]);
    a.extend(command.iter().cloned());
    a
}

/// The calls `init` makes when the registration is not already right (shown by `--dry-run`).
pub fn planned_register_calls(scope: Scope, command: &[String]) -> Vec<Vec<String>> {
    vec![
        args(&["mcp", "remove", LEGACY_NAME]),
        args(&["mcp", "remove", SERVER_NAME]),
        add_args(scope, command),
    ]
}

/// Register through the CLI. Returns messages and warnings; when `add` fails, falls back to
/// `.mcp.json` if the command is `shareable` (the same on every machine), else registers nothing.
pub fn register_with_cli(
    claude: &Path,
    target: &Path,
    scope: Scope,
    command: &[String],
    shareable: bool,
    messages: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    // Plain removes take the name out of whichever single scope holds it; errors (not found) are normal.
    for name in [LEGACY_NAME, SERVER_NAME] {
        run_claude(claude, target, &args(&["mcp", "remove", name]));
    }
    // A name left in some scope (e.g. present in several, which a plain remove refuses) is removed per scope.
    for reg in find_registrations(target).unwrap_or_default() {
        if reg.scope != Scope::User || scope == Scope::User || mentions(&reg, target) {
            run_claude(
                claude,
                target,
                &args(&["mcp", "remove", &reg.name, "-s", reg.scope.as_str()]),
            );
        }
    }
    let mut added = run_claude(claude, target, &add_args(scope, command));
    if !added.ok && added.output.contains("already exists") {
        run_claude(
            claude,
            target,
            &args(&["mcp", "remove", SERVER_NAME, "-s", scope.as_str()]),
        );
        added = run_claude(claude, target, &add_args(scope, command));
    }
    if added.ok {
        messages.push(format!(
            "MCP server {SERVER_NAME} registered with `claude mcp add` ({} scope)",
            scope.as_str()
        ));
        return;
    }
    let why = added
        .output
        .lines()
        .next()
        .unwrap_or("no output")
        .to_string();
    if !shareable {
        warnings.push(format!(
            "`claude mcp add` failed ({why}); MCP server not registered (its absolute path does not belong in the committed .mcp.json): put wt-mcp-server on PATH and re-run `wt-project init`"
        ));
        return;
    }
    warnings.push(format!(
        "`claude mcp add` failed ({why}); writing .mcp.json instead"
    ));
    let mut ws = Workspace::default();
    let mut notes = Vec::new();
    match plan_mcp_json(&mut ws, target, command, &mut notes).and_then(|()| ws.apply()) {
        Ok(_) => messages.extend(notes),
        Err(e) => warnings.push(format!("MCP server not registered: {e:#}")),
    }
}

/// Remove our registration through the CLI (every scope that holds it for this project).
pub fn unregister_with_cli(
    claude: &Path,
    target: &Path,
    messages: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    let calls: Vec<Vec<String>> = match find_registrations(target) {
        Some(regs) => regs
            .iter()
            .filter(|r| r.name == SERVER_NAME && (r.scope != Scope::User || mentions(r, target)))
            .map(|r| args(&["mcp", "remove", SERVER_NAME, "-s", r.scope.as_str()]))
            .collect(),
        // Configuration unreadable: let the CLI find it.
        None => vec![args(&["mcp", "remove", SERVER_NAME])],
    };
    for call in calls {
        let run = run_claude(claude, target, &call);
        if run.ok {
            messages.push(format!(
                "MCP server {SERVER_NAME} removed ({})",
                call[3..].join(" ")
            ));
        } else {
            warnings.push(format!(
                "`claude {}` failed: {}",
                call.join(" "),
                run.output.lines().next().unwrap_or("")
            ));
        }
    }
}

fn read_mcp_json(ws: &mut Workspace, path: &Path) -> Result<(Option<String>, Map<String, Value>)> {
    let text = ws.read(path)?;
    let root = match &text {
        None => Map::new(),
        Some(t) => match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(m)) => m,
            Ok(_) => bail!(
                "{} is not a JSON object; fix it first, nothing was changed",
                path.display()
            ),
            Err(e) => bail!(
                "{} is not valid JSON ({e}); fix it first, nothing was changed",
                path.display()
            ),
        },
    };
    if root.get("mcpServers").is_some_and(|s| !s.is_object()) {
        bail!(
            "{}: \"mcpServers\" is not an object; fix it first, nothing was changed",
            path.display()
        );
    }
    Ok((text, root))
}

/// Merge the `wt-tools` entry (same fields the CLI writes) into `<target>/.mcp.json`.
pub fn plan_mcp_json(
    ws: &mut Workspace,
    target: &Path,
    command: &[String],
    notes: &mut Vec<String>,
) -> Result<()> {
    let path = target.join(".mcp.json");
    let (text, mut root) = read_mcp_json(ws, &path)?;
    let before = Value::Object(root.clone());
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .expect("checked above");
    servers.shift_remove(LEGACY_NAME);
    let (program, program_args) = command
        .split_first()
        .expect("a server command is never empty");
    let entry = json!({"type": "stdio", "command": program, "args": program_args, "env": {}});
    let unchanged = servers
        .get(SERVER_NAME)
        .is_some_and(|e| entry_command(e) == command);
    if !unchanged {
        servers.insert(SERVER_NAME.into(), entry);
    }
    let after = Value::Object(root);
    if after == before {
        return Ok(());
    }
    ws.write(&path, super::settings::render_like(&after, text.as_deref()));
    notes.push(format!(
        ".mcp.json: MCP server {SERVER_NAME} added; Claude Code asks you to approve it at the next interactive \
         session (or run /mcp there)"
    ));
    Ok(())
}

/// The command of our `wt-tools` entry in `<target>/.mcp.json`, if there is one.
pub fn mcp_json_command(ws: &mut Workspace, target: &Path) -> Result<Option<Vec<String>>> {
    let (_, root) = read_mcp_json(ws, &target.join(".mcp.json"))?;
    Ok(root
        .get("mcpServers")
        .and_then(|s| s.get(SERVER_NAME))
        .map(entry_command))
}

/// Take `wt-tools` out of `<target>/.mcp.json`; delete the file if nothing else is left in it.
pub fn plan_mcp_json_removal(
    ws: &mut Workspace,
    target: &Path,
    notes: &mut Vec<String>,
) -> Result<()> {
    let path = target.join(".mcp.json");
    let (text, mut root) = read_mcp_json(ws, &path)?;
    let Some(servers) = root.get_mut("mcpServers").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if servers.shift_remove(SERVER_NAME).is_none() {
        return Ok(());
    }
    let nothing_left = servers.is_empty() && root.len() == 1;
    if nothing_left {
        ws.delete(&path);
    } else {
        ws.write(
            &path,
            super::settings::render_like(&Value::Object(root), text.as_deref()),
        );
    }
    notes.push(format!(".mcp.json: MCP server {SERVER_NAME} removed"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_name_no_clone() {
        assert_eq!(
            server_command(&Launch::Local("wt-mcp-server".into())),
            ["wt-mcp-server"]
        );
        assert!(Launch::Local("wt-mcp-server".into()).is_shareable());
        assert!(!Launch::Local("/opt/bin/wt-mcp-server".into()).is_shareable());
        assert!(!Launch::Local("bin/wt-mcp-server".into()).is_shareable());
        let docker = server_command(&Launch::Docker("reg.local/wt:2".into()));
        assert_eq!(docker[..2], ["sh", "-c"]);
        assert!(
            docker[2].ends_with("-v wt-memory:/data reg.local/wt:2"),
            "{docker:?}"
        );
        // No `${`: Claude Code expands those itself, in an environment without CLAUDE_PROJECT_DIR.
        assert!(!docker[2].contains("${"), "{docker:?}");
        assert!(!is_machine_specific(&docker));
        assert!(is_machine_specific(&[
            "env".into(),
            "CLAUDE_PROJECT_DIR=/w/p".into(),
            "wt-mcp-server".into()
        ]));
        assert!(is_machine_specific(&["/opt/bin/wt-mcp-server".into()]));
    }

    #[test]
    fn add_separates_the_server_command_with_double_dash() {
        let a = add_args(Scope::Project, &["env".into(), "X=1".into()]);
        assert_eq!(a.join(" "), "mcp add wt-tools -s project -- env X=1");
    }
}
