//! `wt-memory doctor`: one screen of checks, each problem with the command that fixes it.
//! The wiring checks use `wt-project init`'s own parsers, so doctor and init agree on what
//! "installed" means.

use crate::init::{mcp_registration, settings};
use serde::Serialize;
use std::path::Path;
use wt_memory_base::config;
use wt_memory_foundation::lock;
use wt_memory_ops as ops;
pub use wt_memory_ops::checks::{Check, Status, StoreChecks};
use wt_memory_service::client::Client;

#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub title: &'static str,
    pub checks: Vec<Check>,
}

pub fn version_of(bin: &std::path::Path) -> String {
    std::process::Command::new(bin)
        .arg("--version")
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "(no --version)".into())
}

/// Every check, in the order printed.
pub fn run(client: &mut Client) -> Vec<Section> {
    let project = client.project().clone();
    let binaries = [
        "wt-memory",
        wt_memory_base::wire::ENGINE,
        "wt-hook-memory",
        "wt-mcp-server",
        "wt-project",
    ]
    .iter()
    .map(|name| match config::locate_binary(name) {
        Some(p) => Check::new(
            true,
            format!("{name}: {} ({})", p.display(), version_of(&p)),
            "",
        ),
        None => Check::new(
            false,
            format!("{name}: not found"),
            "cargo install --path . (installs all five binaries)",
        ),
    })
    .collect();
    let assets = wt_memory_core::engine_env::engine_assets();
    let model = vec![Check::new(
        assets.is_some(),
        format!("recall is {}", ops::semantic_line(assets)),
        "wt-memory setup",
    )];

    let mut store = vec![Check::info(format!(
        "project {} at {}",
        project.name,
        project.store_dir.display()
    ))];
    store.push(match crate::scope::personal_beside(&project) {
        _ if project.is_personal() => Check::info(
            "this is your personal store (outside any repository): every project reads it beside its own",
        ),
        Some(personal) => Check::info(format!(
            "personal store at {}: {} memories about you, read beside this project's, never synced or exported with it",
            personal.store_dir.display(),
            wt_memory_service::client::count_of(&personal)
                .map_or_else(|e| format!("? ({e})"), |n| n.to_string())
        )),
        None => Check::info(
            "no personal store yet (`wt-memory remember --scope personal`, or a preference the Stop hook hears, makes it)",
        ),
    });
    store.push(standing_check(client, &project));
    let (daemon, stuck) =
        match wt_memory_service::probe(&project, std::time::Duration::from_secs(2)) {
            wt_memory_service::Found::Service(mut c) => (c.status().ok(), None),
            wt_memory_service::Found::Nothing => (None, None),
            wt_memory_service::Found::Stuck(e) => (None, Some(e)),
        };
    match (&daemon, stuck) {
        (Some(s), _) => store.push(Check::new(true, wt_memory_service::describe(s), "")),
        (None, Some(e)) => store.push(Check::new(false, e.to_string(), "wt-memory daemon stop")),
        (None, None) if config::get().daemon => store.push(Check::info(
            "no memory daemon runs now (the next call starts one)",
        )),
        (None, None) => {}
    }
    store.push(services_check());
    if let Some(old) = wt_memory_core::legacy_store::pending(&project) {
        store.push(Check::new(
            false,
            format!(
                "the previous wt-tools kept this repository's memories in {}, not in this store",
                old.display()
            ),
            "wt-memory migrate --from-legacy",
        ));
    }
    if let Some(past) = crate::transcripts::hint(&project) {
        store.push(Check::info(&past));
    }
    let spooled = wt_memory_ops::spool::count(&project);
    if spooled > 0 && daemon.is_none() {
        store.push(Check::new(
            false,
            format!(
                "{spooled} hook write(s) wait in the spool ({})",
                wt_memory_ops::spool::path(&project).display()
            ),
            "wt-memory status (any command that opens the store stores them)",
        ));
    }
    let lock_path = lock::store_lock_path(&project);
    // A running daemon holds the lock by design.
    let free = daemon.is_some() || lock::is_free(&lock_path);
    let holder = lock::holder_pid(&lock_path)
        .map(|p| format!(" (pid {p})"))
        .unwrap_or_default();
    store.push(Check::new(
        free,
        if free {
            "lock free".to_string()
        } else {
            format!("lock held{holder}")
        },
        "wait for the other wt-memory process, or stop it",
    ));
    if free {
        match client.run(ops::StoreChecks) {
            Ok(Some(StoreChecks(checks))) => store.extend(checks),
            Ok(None) => store.push(Check::info(
                "no store yet (created by the first `wt-memory remember`)",
            )),
            Err(e) => store.push(Check::new(
                false,
                format!("store does not open: {e}"),
                "wt-memory repair (rebuilds the indexes from the stored memories)",
            )),
        }
    }

    let root = project.files_root();
    let settings_with_hooks: Vec<&str> = [".claude/settings.json", ".claude/settings.local.json"]
        .into_iter()
        .filter(|file| {
            std::fs::read_to_string(root.join(file))
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .is_some_and(|v| settings::has_our_hooks(&v))
        })
        .collect();
    let target = project
        .main_root
        .clone()
        .or(project.toplevel.clone())
        .unwrap_or_else(|| project.cwd.clone());
    let mut wiring = match wt_memory_foundation::plugin::enabled(&root) {
        Some(key) if settings_with_hooks.is_empty() => vec![
            Check::new(true, format!("wired by the plugin {key} (hooks and MCP server)"), ""),
            launcher_check(&key),
        ],
        Some(key) => vec![
            Check::new(
                false,
                format!(
                    "wired twice: the plugin {key} and init's hooks in {} (those step aside while the plugin is enabled)",
                    settings_with_hooks.join(" and ")
                ),
                "wt-project init (removes its own hooks while the plugin is enabled)",
            ),
            launcher_check(&key),
        ],
        None => {
            let registrations = mcp_registration::find_registrations(&target).unwrap_or_default();
            vec![
                Check::new(
                    !settings_with_hooks.is_empty(),
                    "wired by settings: hooks in .claude/settings.json",
                    "wt-project init, or the plugin: /plugin install wt-tools@wt-tools in Claude Code",
                ),
                mcp_check(&registrations, &target),
            ]
        }
    };
    wiring.extend(hook_command_checks(&root));

    let environment = config::ENV_VARS
        .iter()
        .filter_map(|v| {
            std::env::var(v.name)
                .ok()
                .filter(|val| !val.is_empty())
                .map(|val| Check::info(format!("{}={val}", v.name)))
        })
        .collect();

    vec![
        Section {
            title: "Binaries",
            checks: binaries,
        },
        Section {
            title: "Model",
            checks: model,
        },
        Section {
            title: "Store",
            checks: store,
        },
        Section {
            title: "Project wiring",
            checks: wiring,
        },
        Section {
            title: "Environment (see `wt-memory --help`)",
            checks: environment,
        },
    ]
}

/// Does the installed plugin's launcher find programs to run (what its hooks will run)?
fn launcher_check(key: &str) -> Check {
    let Some(copy) = wt_memory_foundation::plugin::installed_copy(key) else {
        return Check::new(
            false,
            format!("the plugin {key} is enabled but not installed on this machine"),
            &format!("/plugin install {key} in Claude Code"),
        );
    };
    let launcher = copy.join("bin/wt-launch");
    let output = std::process::Command::new("sh")
        .arg(&launcher)
        .args(["--which", "wt-hook-memory"])
        .env("CLAUDE_PLUGIN_ROOT", &copy)
        .env(
            "CLAUDE_PLUGIN_DATA",
            wt_memory_foundation::plugin::data_dir(key),
        )
        .stdin(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => Check::new(
            true,
            format!(
                "the plugin's launcher runs {}",
                String::from_utf8_lossy(&out.stdout).trim()
            ),
            "",
        ),
        Ok(out) => Check::new(
            false,
            format!(
                "the plugin's launcher ({}) finds no programs: {}",
                launcher.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            "start a Claude Code session (its first run downloads the pinned release), or install the programs (cargo install --path .), or set WT_TOOLS_BIN_DIR",
        ),
        Err(e) => Check::new(
            false,
            format!("cannot run the plugin's launcher {}: {e}", launcher.display()),
            "reinstall the plugin (/plugin install in Claude Code)",
        ),
    }
}

/// Is the MCP server registered for `target` ours (`wt-mcp-server`, or our image under Docker)?
/// The previous system's server, under either name, is not.
fn mcp_check(registrations: &[mcp_registration::Registration], target: &Path) -> Check {
    let program = |r: &mcp_registration::Registration| {
        r.command
            .first()
            .and_then(|c| Path::new(c).file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let ours = registrations.iter().any(|r| {
        r.name == mcp_registration::SERVER_NAME
            && (program(r) == "wt-mcp-server" || program(r) == "docker")
    });
    if ours {
        return Check::new(
            true,
            format!("MCP server registered for {}", target.display()),
            "",
        );
    }
    match registrations.first() {
        Some(other) => Check::new(
            false,
            format!(
                "the MCP server registered as {} runs `{}`, not this wt-mcp-server",
                other.name,
                other.command.join(" ")
            ),
            "wt-project init (replaces it)",
        ),
        None => Check::new(
            false,
            format!("MCP server registered for {}", target.display()),
            "wt-project init",
        ),
    }
}

/// Every hook command in the project's and the user's settings must start a program that exists:
/// a missing one fails on every event it is registered for (exit 127 in the agent's session).
fn hook_command_checks(project_root: &Path) -> Vec<Check> {
    let dangling = settings::dangling_hooks(project_root);
    if dangling.is_empty() {
        return vec![Check::new(
            true,
            "every registered hook command resolves",
            "",
        )];
    }
    dangling
        .into_iter()
        .map(|d| {
            Check::new(
                false,
                format!(
                    "hook command not found: `{}` ({}, in {})",
                    d.command,
                    d.event,
                    d.file.display()
                ),
                "wt-project init --remove-dangling-hooks (or remove the entry)",
            )
        })
        .collect()
}

/// How many standing rules (`wt-memory standing`) this project's store and the personal store
/// beside it hold: shown at every session's start, and the acts they guard ask first.
/// What runs in the background now, for which stores, and what it costs: every service of this
/// user together (issue 72: the figure a user with many projects open needs).
fn services_check() -> Check {
    let running = wt_memory_base::wire::running_services();
    if running.is_empty() {
        return Check::info("memory services running now: none");
    }
    // The user's engine serves several stores in one process: each process counted once.
    let mut pids: Vec<u32> = running.iter().map(|(_, pid)| *pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let (mut rss, mut pss, mut all_pss) = (0, 0, true);
    for pid in &pids {
        if let Some((r, p)) = wt_memory_base::os::process::memory_of(*pid) {
            rss += r;
            pss += p.unwrap_or(0);
            all_pss &= p.is_some();
        }
    }
    let stores: Vec<&str> = running.iter().map(|(key, _)| key.as_str()).collect();
    let shared = if all_pss {
        format!(", {} MB proportional (PSS)", pss / 1024)
    } else {
        String::new()
    };
    let processes = match pids.len() {
        1 => "1 process".to_string(),
        n => format!("{n} processes"),
    };
    Check::info(format!(
        "memory services running now: {} ({}) in {processes}, {} MB resident together{shared}",
        running.len(),
        stores.join(", "),
        rss / 1024
    ))
}

fn standing_check(client: &mut Client, project: &wt_memory_base::project::Project) -> Check {
    let ask = wt_memory_ops::Recall {
        tags: vec![wt_memory_core::record::STANDING_TAG.to_string()],
        tags_only: true,
        limit: 200,
        ..wt_memory_ops::Recall::default()
    };
    let own = client.run(ask.clone()).map(|r| r.len());
    let personal = crate::scope::personal_beside(project).map(|p| {
        Client::open(
            p,
            wt_memory_service::client::Mode::configured(
                wt_memory_ops::OpenOptions::default(),
                wt_memory_service::client::Holding::PerCall,
            ),
        )
        .run(ask)
        .map(|r| r.len())
    });
    match (own, personal) {
        (Ok(n), Some(Ok(m))) => Check::info(format!(
            "standing rules: {n} in this project's store, {m} in your personal store (`wt-memory list --standing`)"
        )),
        (Ok(n), _) => Check::info(format!(
            "standing rules: {n} in this project's store (`wt-memory list --standing`)"
        )),
        (Err(e), _) => Check::info(format!("standing rules: cannot count: {e}")),
    }
}
