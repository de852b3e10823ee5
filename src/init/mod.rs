//! `wt-project init` / `uninstall`: wire a project into Claude Code (hooks in
//! `.claude/settings.json`, MCP registration, the managed CLAUDE.md block, legacy cleanup) and take
//! it out again.
//!
//! Committed files never name a path of this machine: the binaries are written by bare name when
//! the ones on PATH are the ones `init` would use. Otherwise the hooks go, with absolute paths, to
//! the uncommitted `.claude/settings.local.json`, and the MCP server to a local scope, never to
//! `.mcp.json`.
//!
//! Every file change is planned first in a [`Workspace`]; only when all of them could be planned
//! (no invalid JSON, no broken markers) is anything written, so an error leaves every file untouched.

pub mod claude_md;
pub mod diff;
pub mod legacy;
pub mod mcp_registration;
pub mod plugin_files;
pub mod settings;

use anyhow::{anyhow, bail, Context, Result};
use mcp_registration::{Launch, Scope};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wt_memory_base::os::files::canonicalize;

/// A planned file: what was on disk and what should be there (None: absent).
struct FileState {
    original: Option<String>,
    current: Option<String>,
}

/// Planned file contents, read from disk once and changed in memory.
#[derive(Default)]
pub struct Workspace {
    files: BTreeMap<PathBuf, FileState>,
}

/// One file that differs from disk.
pub struct Change<'a> {
    pub path: &'a Path,
    pub before: Option<&'a str>,
    pub after: Option<&'a str>,
}

impl Workspace {
    /// The planned content of `path` (its disk content until something is planned for it).
    pub fn read(&mut self, path: &Path) -> Result<Option<String>> {
        if let Some(state) = self.files.get(path) {
            return Ok(state.current.clone());
        }
        let original =
            match std::fs::read(path) {
                Ok(bytes) => Some(String::from_utf8(bytes).map_err(|_| {
                    anyhow!("{} is not UTF-8 text; not touching it", path.display())
                })?),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
            };
        self.files.insert(
            path.to_path_buf(),
            FileState {
                original: original.clone(),
                current: original.clone(),
            },
        );
        Ok(original)
    }

    fn set(&mut self, path: &Path, content: Option<String>) {
        if !self.files.contains_key(path) {
            // Plans always read first; a blind write shows the disk content (lossily) as "before".
            let original = std::fs::read(path)
                .ok()
                .map(|b| String::from_utf8_lossy(&b).into_owned());
            self.files.insert(
                path.to_path_buf(),
                FileState {
                    original,
                    current: None,
                },
            );
        }
        self.files.get_mut(path).expect("inserted above").current = content;
    }

    pub fn write(&mut self, path: &Path, text: String) {
        self.set(path, Some(text));
    }

    pub fn delete(&mut self, path: &Path) {
        self.set(path, None);
    }

    pub fn changes(&self) -> Vec<Change<'_>> {
        self.files
            .iter()
            .filter(|(_, s)| s.original != s.current)
            .map(|(p, s)| Change {
                path: p,
                before: s.original.as_deref(),
                after: s.current.as_deref(),
            })
            .collect()
    }

    /// Write every change to disk; returns how many files changed.
    pub fn apply(&self) -> Result<usize> {
        let changes = self.changes();
        for c in &changes {
            match c.after {
                Some(text) => write_keeping_mode(c.path, text.as_bytes())
                    .with_context(|| format!("cannot write {}", c.path.display()))?,
                None => match std::fs::remove_file(c.path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(e)
                            .with_context(|| format!("cannot remove {}", c.path.display()))
                    }
                    _ => {}
                },
            }
        }
        Ok(changes.len())
    }
}

/// Atomic write that keeps an existing file's permissions (new files get 0644).
fn write_keeping_mode(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use wt_memory_base::os::files;
    let mode = std::fs::metadata(path)
        .ok()
        .and_then(|m| files::mode(&m))
        .unwrap_or(0o644);
    wt_memory_base::paths::write_atomic(path, bytes)?;
    files::set_mode(path, mode)
}

/// Options of `wt-project init`.
#[derive(Debug, Clone)]
pub struct InitOptions {
    pub path: PathBuf,
    pub dry_run: bool,
    pub mcp: bool,
    pub pretool: bool,
    pub scope: Scope,
    /// Register `docker run <image>` instead of the local server.
    pub docker_image: Option<String>,
    /// Remove hook entries (any tool's) whose program no longer exists.
    pub remove_dangling_hooks: bool,
    /// Who runs the hooks and the MCP server: init (settings) or the plugin.
    pub hooks: Wiring,
    /// Enable the plugin for everyone who clones the project, from this marketplace source
    /// (`owner/repo`, a git URL or a directory).
    pub team_plugin: Option<String>,
}

/// Who runs the memory hooks and the MCP server of a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wiring {
    /// The plugin when it is enabled in the user's or the project's settings, else init's own.
    Auto,
    /// Init's hooks in the settings and its MCP registration.
    Settings,
    /// The plugin: init writes neither (and removes its own), the CLAUDE.md section stays.
    Plugin,
}

/// What a run did (or, with `--dry-run`, would do).
#[derive(Debug, Default)]
pub struct Outcome {
    /// Human-readable report, one line each.
    pub lines: Vec<String>,
    pub warnings: Vec<String>,
    /// Anything changed (or would change).
    pub changed: bool,
}

/// The directories to set up: the main checkout, and the linked worktree `path` is in, if any.
pub fn targets(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        bail!("{} is not a directory", path.display());
    }
    let project = wt_memory_base::project::resolve(path, None);
    let toplevel = project.toplevel.ok_or_else(|| {
        anyhow!(
            "{} is not inside a git repository (run `git init` first)",
            path.display()
        )
    })?;
    let canon = |p: &Path| canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let toplevel = canon(&toplevel);
    let mut dirs = Vec::new();
    if let Some(main) = project.main_root.map(|m| canon(&m)) {
        if main != toplevel && main.is_dir() {
            dirs.push(main);
        }
    }
    dirs.push(toplevel);
    Ok(dirs)
}

/// `name` next to the running executable, else on PATH. When neither exists, the sibling path is
/// returned with a warning, so the configuration points where the binary belongs.
pub fn locate_binary(name: &str, warnings: &mut Vec<String>) -> PathBuf {
    if let Some(found) = wt_memory_base::config::locate_binary(name) {
        return found;
    }
    let fallback = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join(name)))
        .unwrap_or_else(|| PathBuf::from(name));
    warnings.push(format!(
        "{name} was found neither next to wt-project nor on PATH; the configuration points to {} (install it there)",
        fallback.display()
    ));
    fallback
}

/// The command to write for `name`: its bare name when the `name` found on PATH is the binary
/// [`locate_binary`] picks (so committed files are the same on every machine), else that binary's
/// absolute path. The second value says why a path was needed, as the start of a sentence.
pub fn command_for(name: &str, warnings: &mut Vec<String>) -> (PathBuf, Option<String>) {
    let located = locate_binary(name, warnings);
    let same = |a: &Path, b: &Path| match (canonicalize(a), canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    match which::which(name) {
        Ok(on_path) if same(&on_path, &located) => (PathBuf::from(name), None),
        Ok(on_path) => (
            located.clone(),
            Some(format!(
                "the {name} on PATH ({}) is not the one next to wt-project ({})",
                on_path.display(),
                located.display()
            )),
        ),
        Err(_) => (located, Some(format!("{name} is not on PATH"))),
    }
}

fn rel(target: &Path, path: &Path) -> String {
    path.strip_prefix(target)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The two project settings files Claude Code reads hooks from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SettingsFile {
    /// `.claude/settings.json`, committed: only bare command names go here.
    Shared,
    /// `.claude/settings.local.json`, not committed: hooks with absolute paths.
    Local,
}

impl SettingsFile {
    fn path(self, target: &Path) -> PathBuf {
        target.join(".claude").join(match self {
            SettingsFile::Shared => "settings.json",
            SettingsFile::Local => "settings.local.json",
        })
    }

    /// The committed file's content before init first changed it (the local file is personal and
    /// gets no backup).
    fn backup(self, target: &Path) -> Option<PathBuf> {
        (self == SettingsFile::Shared).then(|| target.join(".claude").join("settings.json.bak"))
    }
}

fn plan_settings_install(
    ws: &mut Workspace,
    target: &Path,
    file: SettingsFile,
    hook_bin: &Path,
    pretool: bool,
    notes: &mut Vec<String>,
) -> Result<()> {
    let path = file.path(target);
    let name = rel(target, &path);
    let original = ws.read(&path)?;
    let Some(new) = settings::install(original.as_deref(), hook_bin, pretool, &name)? else {
        return Ok(());
    };
    let mut note = format!(
        "{name}: memory hooks {}",
        if original.is_some() {
            "merged"
        } else {
            "written"
        }
    );
    if let (Some(original), Some(bak)) = (original, file.backup(target)) {
        if ws.read(&bak)?.is_none() {
            ws.write(&bak, original);
            note.push_str(&format!(" (previous file kept as {})", rel(target, &bak)));
        }
    }
    ws.write(&path, new);
    notes.push(note);
    Ok(())
}

/// Take our hooks out of `file`; `moved_to` names the file that holds them now, if any.
fn plan_settings_uninstall(
    ws: &mut Workspace,
    target: &Path,
    file: SettingsFile,
    moved_to: Option<SettingsFile>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let path = file.path(target);
    let name = rel(target, &path);
    let Some(current) = ws.read(&path)? else {
        return Ok(());
    };
    let bak = file.backup(target);
    let backup = match &bak {
        Some(b) => ws.read(b)?,
        None => None,
    };
    let removed = match moved_to {
        Some(other) => format!("memory hooks moved to {}", rel(target, &other.path(target))),
        None => "memory hooks removed".to_string(),
    };
    match settings::uninstall(&current, backup.as_deref(), &name)? {
        settings::Removal::Unchanged => {}
        settings::Removal::Write(text) => {
            ws.write(&path, text);
            notes.push(format!("{name}: {removed}"));
        }
        settings::Removal::RestoreBackup => {
            let bak = bak.expect("RestoreBackup implies a backup");
            ws.write(&path, backup.expect("RestoreBackup implies a backup"));
            ws.delete(&bak);
            notes.push(format!(
                "{name}: {removed} (restored from {})",
                rel(target, &bak)
            ));
        }
        settings::Removal::Delete => {
            ws.delete(&path);
            notes.push(format!(
                "{name}: {removed}; file removed (it held only them)"
            ));
        }
    }
    Ok(())
}

/// `.claude/settings.local.json` holds this machine's paths: when git does not ignore it already
/// (a `.gitignore`, the global excludes file, where Claude Code puts it when it creates the file
/// itself), add it to this clone's `.git/info/exclude`, which is not committed either.
fn plan_ignore_local_settings(
    ws: &mut Workspace,
    target: &Path,
    notes: &mut Vec<String>,
) -> Result<()> {
    const LOCAL: &str = ".claude/settings.local.json";
    let ignored = std::process::Command::new("git")
        .args(["check-ignore", "-q", "--", LOCAL])
        .current_dir(target)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    // 0: ignored; 1: not ignored; anything else: git cannot tell, leave it.
    if !matches!(ignored.map(|s| s.code()), Ok(Some(1))) {
        return Ok(());
    }
    let Some(exclude) = wt_memory_base::project::git(
        target,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "info/exclude",
        ],
    ) else {
        return Ok(());
    };
    let exclude = PathBuf::from(exclude);
    let line = format!("/{LOCAL}");
    let mut text = ws.read(&exclude)?.unwrap_or_default();
    if text.lines().any(|l| l.trim() == line) {
        return Ok(());
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&line);
    text.push('\n');
    ws.write(&exclude, text);
    notes.push(format!(
        "{}: {LOCAL} added, so git ignores this machine's paths",
        rel(target, &exclude)
    ));
    Ok(())
}

/// Print the planned file changes as diffs.
fn diff_lines(ws: &Workspace, targets: &[PathBuf]) -> Vec<String> {
    let mut lines = Vec::new();
    for c in ws.changes() {
        let label = targets
            .iter()
            .rev()
            .find(|t| c.path.starts_with(t))
            .map(|t| {
                if targets.len() > 1 {
                    c.path.display().to_string()
                } else {
                    rel(t, c.path)
                }
            })
            .unwrap_or_else(|| c.path.display().to_string());
        lines.extend(
            diff::unified(&label, c.before, c.after)
                .lines()
                .map(str::to_string),
        );
    }
    lines
}

fn quote_call(call: &[String]) -> String {
    std::iter::once("claude".to_string())
        .chain(call.iter().map(|a| settings::shell_quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `wt-project init`.
pub fn init(opts: &InitOptions) -> Result<Outcome> {
    let targets = targets(&opts.path)?;
    let mut out = Outcome::default();
    if wt_memory_base::model::find_assets().is_none() {
        // The hooks run here whatever runs the MCP server; without the model they match words only.
        out.warnings.push(format!(
            "no embedding model on this machine: until there is one, memory matches shared words \
             only and hooks inject less; {}",
            wt_memory_foundation::setup::fix_hint()
        ));
    }
    let project = wt_memory_base::project::resolve(&targets[0], None);
    if let Some(old) = wt_memory_core::legacy_store::pending(&project) {
        out.warnings.push(wt_memory_core::legacy_store::hint(&old));
    }
    if let Some(past) = crate::transcripts::hint(&project) {
        out.warnings.push(past);
    }
    dangling_hooks(&targets[0], opts, &mut out)?;
    let by_plugin = match opts.hooks {
        Wiring::Settings => None,
        Wiring::Plugin => Some("--hooks plugin".to_string()),
        Wiring::Auto => match &opts.team_plugin {
            Some(_) => Some("--team-plugin".to_string()),
            None => wt_memory_foundation::plugin::enabled(&targets[0])
                .map(|key| format!("{key} is enabled")),
        },
    };
    if let Some(why) = by_plugin {
        return init_for_plugin(opts, &targets, &why, out);
    }
    if opts.team_plugin.is_some() {
        bail!("--team-plugin enables the plugin, which runs the hooks: it cannot go with --hooks settings");
    }
    let (hook_bin, hooks_need_path) = command_for("wt-hook-memory", &mut out.warnings);
    let (launch, server_needs_path) = match &opts.docker_image {
        Some(image) => (Launch::Docker(image.clone()), None),
        None if opts.mcp => {
            let (server, why) = command_for("wt-mcp-server", &mut out.warnings);
            (Launch::Local(server), why)
        }
        None => (Launch::Local(PathBuf::from("wt-mcp-server")), None),
    };
    let shareable = launch.is_shareable();
    let claude = if opts.mcp {
        which::which("claude").ok()
    } else {
        None
    };
    // An absolute path never goes into the committed .mcp.json: project scope becomes local.
    let scope = if !shareable && opts.scope == Scope::Project {
        Scope::Local
    } else {
        opts.scope
    };

    // One plain line for each place a machine path had to go.
    let mut general = Vec::new();
    let (hooks_into, hooks_out_of) = match &hooks_need_path {
        None => (SettingsFile::Shared, SettingsFile::Local),
        Some(why) => {
            general.push(format!(
                "{why}, so the memory hooks go to .claude/settings.local.json (not committed); put the binaries on PATH and re-run `wt-project init` to share them in .claude/settings.json"
            ));
            (SettingsFile::Local, SettingsFile::Shared)
        }
    };
    if let (true, Some(why)) = (opts.mcp, &server_needs_path) {
        match &claude {
            Some(_) if opts.scope == Scope::Project => general.push(format!(
                "{why}, so the MCP server is registered in local scope (~/.claude.json), not in the committed .mcp.json; put it on PATH and re-run `wt-project init --scope project` to share it"
            )),
            Some(_) => {}
            None => general.push(format!(
                "{why} and there is no `claude` CLI, so the MCP server is not registered (its absolute path does not belong in the committed .mcp.json); put it on PATH and re-run `wt-project init`"
            )),
        }
    }

    // Plan everything; any error here leaves every file as it was.
    let mut ws = Workspace::default();
    let mut notes: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let mut cli_targets = Vec::new();
    for target in &targets {
        let mut n = Vec::new();
        plan_settings_install(&mut ws, target, hooks_into, &hook_bin, opts.pretool, &mut n)?;
        plan_settings_uninstall(&mut ws, target, hooks_out_of, Some(hooks_into), &mut n)?;
        if hooks_into == SettingsFile::Local {
            plan_ignore_local_settings(&mut ws, target, &mut n)?;
        }
        legacy::plan(&mut ws, target, &mut n, &mut out.warnings)?;
        claude_md::plan_install(&mut ws, target, &mut n)?;
        if opts.mcp {
            let command = mcp_registration::server_command(&launch);
            match &claude {
                Some(_) if mcp_registration::already_registered(target, scope, &command) => {}
                Some(_) => cli_targets.push((target.clone(), command)),
                None if shareable => {
                    if opts.scope != Scope::Project {
                        n.push(format!(
                            "no `claude` CLI on PATH: registering in .mcp.json (project scope) instead of {} scope",
                            opts.scope.as_str()
                        ));
                    }
                    let before = n.len();
                    mcp_registration::plan_mcp_json(&mut ws, target, &command, &mut n)?;
                    if n.len() == before && opts.scope != Scope::Project {
                        n.pop();
                    }
                }
                None => {
                    // Not registered (see above); an entry of ours that names some machine's
                    // paths goes, one that is the same everywhere (a teammate's) stays.
                    let ours = mcp_registration::mcp_json_command(&mut ws, target)?;
                    if ours.is_some_and(|c| mcp_registration::is_machine_specific(&c)) {
                        mcp_registration::plan_mcp_json_removal(&mut ws, target, &mut n)?;
                    }
                }
            }
        }
        notes.push((target.clone(), n));
    }
    out.lines.extend(general);

    out.changed = !ws.changes().is_empty() || !cli_targets.is_empty();
    if opts.dry_run {
        out.lines.extend(diff_lines(&ws, &targets));
        for (target, command) in &cli_targets {
            for call in mcp_registration::planned_register_calls(scope, command) {
                out.lines.push(format!(
                    "would run in {}: {}",
                    target.display(),
                    quote_call(&call)
                ));
            }
        }
    } else {
        ws.apply()?;
        for (target, command) in &cli_targets {
            let n = &mut notes
                .iter_mut()
                .find(|(t, _)| t == target)
                .expect("every target has notes")
                .1;
            let claude = claude
                .as_deref()
                .expect("CLI targets only exist with a CLI");
            mcp_registration::register_with_cli(
                claude,
                target,
                scope,
                command,
                shareable,
                n,
                &mut out.warnings,
            );
        }
    }
    report(&mut out, notes, opts.dry_run, "init");
    Ok(out)
}

/// `wt-project uninstall`: remove our hooks, MCP registration and managed CLAUDE.md block.
pub fn uninstall(path: &Path, dry_run: bool) -> Result<Outcome> {
    let targets = targets(path)?;
    let mut out = Outcome::default();
    let claude = which::which("claude").ok();
    let mut ws = Workspace::default();
    let mut notes: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let mut cli_targets = Vec::new();
    for target in &targets {
        let mut n = Vec::new();
        for file in [SettingsFile::Shared, SettingsFile::Local] {
            plan_settings_uninstall(&mut ws, target, file, None, &mut n)?;
        }
        claude_md::plan_uninstall(&mut ws, target, &mut n)?;
        plan_mcp_removal(&mut ws, target, claude.is_some(), &mut n, &mut cli_targets)?;
        notes.push((target.clone(), n));
    }
    out.changed = !ws.changes().is_empty() || !cli_targets.is_empty();
    finish_removal(
        &ws,
        &targets,
        claude.as_deref(),
        &cli_targets,
        &mut notes,
        &mut out,
        dry_run,
    )?;
    if !dry_run {
        for target in &targets {
            // `.claude/` is removed only if init's files were all it held.
            let _ = std::fs::remove_dir(target.join(".claude"));
        }
    }
    report(&mut out, notes, dry_run, "uninstall");
    Ok(out)
}

/// Our MCP registration of `target` goes: through the `claude` CLI when there is one (queued in
/// `cli_targets`), else out of `.mcp.json`.
fn plan_mcp_removal(
    ws: &mut Workspace,
    target: &Path,
    have_cli: bool,
    notes: &mut Vec<String>,
    cli_targets: &mut Vec<PathBuf>,
) -> Result<()> {
    if !have_cli {
        return mcp_registration::plan_mcp_json_removal(ws, target, notes);
    }
    let registered = mcp_registration::find_registrations(target).is_none_or(|regs| {
        regs.iter()
            .any(|r| r.name == mcp_registration::SERVER_NAME && r.scope != Scope::User)
    });
    if registered {
        cli_targets.push(target.to_path_buf());
    }
    Ok(())
}

/// Write the planned files and run the queued `claude mcp remove` calls (or, dry, show them).
fn finish_removal(
    ws: &Workspace,
    targets: &[PathBuf],
    claude: Option<&Path>,
    cli_targets: &[PathBuf],
    notes: &mut [(PathBuf, Vec<String>)],
    out: &mut Outcome,
    dry_run: bool,
) -> Result<()> {
    if dry_run {
        out.lines.extend(diff_lines(ws, targets));
        for target in cli_targets {
            out.lines.push(format!(
                "would run in {}: claude mcp remove {}",
                target.display(),
                mcp_registration::SERVER_NAME
            ));
        }
        return Ok(());
    }
    ws.apply()?;
    for target in cli_targets {
        let n = &mut notes
            .iter_mut()
            .find(|(t, _)| t == target)
            .expect("every target has notes")
            .1;
        let claude = claude.expect("CLI targets only exist with a CLI");
        mcp_registration::unregister_with_cli(claude, target, n, &mut out.warnings);
    }
    Ok(())
}

/// `init` of a project whose memory the plugin wires: init's own hooks and MCP registration go
/// (the plugin's would run beside them), the CLAUDE.md section and the legacy cleanup stay.
fn init_for_plugin(
    opts: &InitOptions,
    targets: &[PathBuf],
    why: &str,
    mut out: Outcome,
) -> Result<Outcome> {
    let claude = which::which("claude").ok();
    let mut ws = Workspace::default();
    let mut notes: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let mut cli_targets = Vec::new();
    for target in targets {
        let mut n = Vec::new();
        for file in [SettingsFile::Shared, SettingsFile::Local] {
            plan_settings_uninstall(&mut ws, target, file, None, &mut n)?;
        }
        if let Some(source) = &opts.team_plugin {
            plan_team_plugin(&mut ws, target, source, &mut n)?;
        }
        legacy::plan(&mut ws, target, &mut n, &mut out.warnings)?;
        claude_md::plan_install(&mut ws, target, &mut n)?;
        plan_mcp_removal(&mut ws, target, claude.is_some(), &mut n, &mut cli_targets)?;
        notes.push((target.clone(), n));
    }
    out.lines.push(format!(
        "memory is wired by the {} plugin ({why}): init writes no hooks and no MCP server of its own",
        wt_memory_foundation::plugin::NAME
    ));
    out.changed = !ws.changes().is_empty() || !cli_targets.is_empty();
    finish_removal(
        &ws,
        targets,
        claude.as_deref(),
        &cli_targets,
        &mut notes,
        &mut out,
        opts.dry_run,
    )?;
    report(&mut out, notes, opts.dry_run, "init");
    Ok(out)
}

/// The marketplace entry `--team-plugin SOURCE` writes: `owner/repo` is on GitHub, a URL is a git
/// repository, anything else a directory.
pub fn marketplace_source(source: &str) -> Result<serde_json::Value> {
    use serde_json::json;
    let github = source.split('/').count() == 2
        && !source.starts_with('.')
        && !source.contains(':')
        && source.split('/').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
        && !Path::new(source).exists();
    if github {
        return Ok(json!({"source": "github", "repo": source}));
    }
    if source.contains("://") || source.starts_with("git@") {
        return Ok(json!({"source": "git", "url": source}));
    }
    let dir = Path::new(source);
    if !dir.join(".claude-plugin/marketplace.json").is_file() {
        bail!(
            "--team-plugin {source}: not owner/repo, a git URL, or a directory holding .claude-plugin/marketplace.json"
        );
    }
    let dir = canonicalize(dir)?;
    Ok(json!({"source": "directory", "path": dir.to_string_lossy()}))
}

/// `.claude/settings.json` (committed) makes Claude Code offer the marketplace and enable the
/// plugin for everyone who trusts the project.
fn plan_team_plugin(
    ws: &mut Workspace,
    target: &Path,
    source: &str,
    notes: &mut Vec<String>,
) -> Result<()> {
    let path = SettingsFile::Shared.path(target);
    let name = rel(target, &path);
    let original = ws.read(&path)?;
    let source = marketplace_source(source)?;
    if let Some(new) = settings::with_team_plugin(original.as_deref(), source, &name)? {
        ws.write(&path, new);
        notes.push(format!(
            "{name}: the {} plugin enabled for everyone who clones the project",
            wt_memory_foundation::plugin::NAME
        ));
    }
    Ok(())
}

fn report(out: &mut Outcome, notes: Vec<(PathBuf, Vec<String>)>, dry_run: bool, verb: &str) {
    let mut lines = Vec::new();
    for (target, n) in notes {
        if n.is_empty() {
            continue;
        }
        lines.push(format!("{}:", target.display()));
        lines.extend(n.into_iter().map(|l| format!("  {l}")));
    }
    lines.extend(std::mem::take(&mut out.lines));
    if !out.changed {
        lines.push(format!("wt-project {verb}: no change"));
    } else if dry_run {
        lines.push(format!("wt-project {verb}: dry run, nothing was written"));
    }
    out.lines = lines;
}

/// Hook entries whose program is gone (another tool uninstalled, the previous system's
/// `wt-hook-skill`): named in a warning, or removed with `--remove-dangling-hooks`.
fn dangling_hooks(target: &Path, opts: &InitOptions, out: &mut Outcome) -> Result<()> {
    let dangling = settings::dangling_hooks(target);
    if dangling.is_empty() {
        return Ok(());
    }
    if !opts.remove_dangling_hooks {
        for d in &dangling {
            out.warnings.push(format!(
                "hook command not found: `{}` ({}, in {}); `wt-project init --remove-dangling-hooks` removes it",
                d.command,
                d.event,
                d.file.display()
            ));
        }
        return Ok(());
    }
    let mut files: Vec<&Path> = dangling.iter().map(|d| d.file.as_path()).collect();
    files.dedup();
    for file in files {
        let commands: Vec<String> = dangling
            .iter()
            .filter(|d| d.file == file)
            .map(|d| d.command.clone())
            .collect();
        let text = std::fs::read_to_string(file)?;
        let value: serde_json::Value = serde_json::from_str(&text)?;
        let (kept, removed) = settings::without_commands(&value, &commands);
        out.lines.push(format!(
            "{} {removed} hook entr{} whose command is gone from {}",
            if opts.dry_run {
                "would remove"
            } else {
                "removed"
            },
            if removed == 1 { "y" } else { "ies" },
            file.display()
        ));
        if !opts.dry_run {
            wt_memory_base::paths::write_atomic(
                file,
                settings::render_like(&kept, Some(&text)).as_bytes(),
            )?;
        }
        out.changed = true;
    }
    Ok(())
}
