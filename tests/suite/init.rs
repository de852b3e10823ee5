//! `wt-project init` / `uninstall` on real temporary git repositories, with Claude Code's state
//! (`CLAUDE_CONFIG_DIR`, `HOME`) in the temp dir and the contract-faithful fake `claude` from
//! `tests/fake_claude/` first on PATH (or no `claude` at all).

use crate::support;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use support::{bin_path, fixtures_dir, git, run, TestEnv};

const EVENTS: [&str; 9] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "Stop",
];

struct Harness {
    env: TestEnv,
}

fn fake_claude_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_claude")
}

/// The inherited PATH minus every directory that holds a `claude` or one of our binaries.
fn path_without_claude() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| {
            ["claude", "wt-hook-memory", "wt-mcp-server"]
                .iter()
                .all(|b| !d.join(b).exists())
        })
        .collect();
    std::env::join_paths(dirs)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The directory of the binaries under test (`target/debug`).
fn bin_dir() -> PathBuf {
    bin_path("wt-hook-memory").parent().unwrap().to_path_buf()
}

/// [`path_without_claude`] with the binaries under test first, as after `cargo install`.
fn path_with_bins() -> String {
    format!("{}:{}", bin_dir().display(), path_without_claude())
}

/// The hook command init writes when the binaries are on PATH (bare name).
fn hook_command(event: &str) -> String {
    format!("wt-hook-memory {event}")
}

/// The hook command init writes when they are not (absolute path).
fn abs_hook_command(event: &str) -> String {
    format!("{} {event}", bin_path("wt-hook-memory").display())
}

/// The MCP server command when it is on PATH.
fn mcp_server() -> String {
    "wt-mcp-server".to_string()
}

impl Harness {
    fn new() -> Self {
        let env = TestEnv::new();
        std::fs::create_dir_all(env.path().join("home")).unwrap();
        Harness { env }
    }

    fn log_path(&self) -> PathBuf {
        self.env.path().join("claude-calls.jsonl")
    }

    /// Run `wt-project args…` in `cwd` with the binaries on PATH; `with_claude` puts the fake
    /// `claude` first on PATH.
    fn project(&self, cwd: &Path, args: &[&str], with_claude: bool) -> Output {
        self.project_env(cwd, args, with_claude, &[])
    }

    fn project_env(
        &self,
        cwd: &Path,
        args: &[&str],
        with_claude: bool,
        extra: &[(&str, &Path)],
    ) -> Output {
        self.project_with(cwd, args, with_claude, true, extra)
    }

    /// `bins_on_path`: whether the directory of the binaries under test is on PATH.
    fn project_with(
        &self,
        cwd: &Path,
        args: &[&str],
        with_claude: bool,
        bins_on_path: bool,
        extra: &[(&str, &Path)],
    ) -> Output {
        let clean = if bins_on_path {
            path_with_bins()
        } else {
            path_without_claude()
        };
        let path = if with_claude {
            format!("{}:{clean}", fake_claude_dir().display())
        } else {
            clean
        };
        let mut cmd = self.env.cmd("wt-project", cwd);
        cmd.args(args)
            .env("HOME", self.env.path().join("home"))
            .env("FAKE_CLAUDE_LOG", self.log_path())
            .env("PATH", path)
            .env_remove("CLAUDECODE");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        run(&mut cmd, None)
    }

    fn project_ok(&self, cwd: &Path, args: &[&str], with_claude: bool) -> String {
        self.project_ok_with(cwd, args, with_claude, true)
    }

    fn project_ok_with(
        &self,
        cwd: &Path,
        args: &[&str],
        with_claude: bool,
        bins_on_path: bool,
    ) -> String {
        let out = self.project_with(cwd, args, with_claude, bins_on_path, &[]);
        assert!(
            out.status.success(),
            "wt-project {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `wt-memory doctor`'s report for `repo`, with the binaries on PATH.
    fn doctor(&self, repo: &Path) -> String {
        let out = run(
            self.env
                .cmd("wt-memory", repo)
                .arg("doctor")
                .env("PATH", path_with_bins())
                .env("HOME", self.env.path().join("home")),
            None,
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// argv of every `claude` call so far.
    fn calls(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.log_path())
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                serde_json::from_value(v["argv"].clone()).unwrap()
            })
            .collect()
    }

    fn claude_json_path(&self) -> PathBuf {
        self.env.path().join("config/.claude.json")
    }

    fn claude_json(&self) -> Value {
        std::fs::read_to_string(self.claude_json_path())
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or(json!({}))
    }

    fn local_servers(&self, project: &Path) -> Value {
        let key = project.canonicalize().unwrap().display().to_string();
        self.claude_json()["projects"][key]["mcpServers"].clone()
    }
}

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path.as_ref())
        .unwrap_or_else(|e| panic!("{}: {e}", path.as_ref().display()))
}

fn settings(repo: &Path) -> Value {
    serde_json::from_str(&read(repo.join(".claude/settings.json"))).unwrap()
}

/// Every file under `dir` (except `.git`) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_name() == ".git" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// (event, matcher, command, timeout, async) of every handler, in file order.
type Handler = (String, String, String, Option<u64>, bool);

fn handlers(settings: &Value) -> Vec<Handler> {
    let mut out = Vec::new();
    for (event, groups) in settings["hooks"].as_object().unwrap() {
        for group in groups.as_array().unwrap() {
            let matcher = group["matcher"].as_str().unwrap_or("").to_string();
            for h in group["hooks"].as_array().unwrap() {
                out.push((
                    event.clone(),
                    matcher.clone(),
                    command_line(h),
                    h["timeout"].as_u64(),
                    h["async"].as_bool().unwrap_or(false),
                ));
            }
        }
    }
    out
}

/// A handler's program and arguments as one line: `command`, then `args` (exec form, which init
/// writes) if any.
fn command_line(handler: &Value) -> String {
    let mut words = vec![handler["command"].as_str().unwrap().to_string()];
    for arg in handler["args"].as_array().into_iter().flatten() {
        words.push(arg.as_str().unwrap().to_string());
    }
    words.join(" ")
}

fn memory_handlers(settings: &Value) -> Vec<Handler> {
    handlers(settings)
        .into_iter()
        .filter(|h| h.2.contains("wt-hook-memory"))
        .collect()
}

fn other_handlers(settings: &Value) -> Vec<Handler> {
    handlers(settings)
        .into_iter()
        .filter(|h| !h.2.contains("wt-hook-memory"))
        .collect()
}

fn expected_memory_handlers(pretool: bool) -> Vec<Handler> {
    let h = |event: &str, matcher: &str, timeout: u64, is_async: bool| {
        (
            event.to_string(),
            matcher.to_string(),
            hook_command(event),
            Some(timeout),
            is_async,
        )
    };
    let mut v = vec![
        h("SessionStart", "", 10, false),
        h("UserPromptSubmit", "", 15, false),
    ];
    let acting = wt_memory_base::hook_events::ACTING_TOOLS;
    if pretool {
        v.push(h("PreToolUse", acting, 5, false));
    } else {
        // Without --pretool, the action gate and the repeat-mistake guard, no recall.
        let mut guard = h("PreToolUse", acting, 5, false);
        guard.2 = format!("{} --guard-only", guard.2);
        v.push(guard);
    }
    v.extend([
        h("PostToolUse", "Read", 5, false),
        h("PostToolUse", "Bash", 5, false),
        h(
            "PostToolUse",
            wt_memory_base::hook_events::OUR_MCP_TOOLS,
            5,
            false,
        ),
        h("PostToolUseFailure", "Bash", 5, false),
        h("SubagentStart", "", 10, false),
        h("SubagentStop", "", 5, false),
        h("PreCompact", "", 5, false),
        h("Stop", "", 10, false),
    ]);
    v
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

#[test]
fn fresh_repo_gets_hooks_mcp_registration_and_claude_md() {
    let h = Harness::new();
    let repo = h.env.git_repo("fresh");
    let stdout = h.project_ok(&repo, &["init"], true);

    let s = settings(&repo);
    assert_eq!(memory_handlers(&s), expected_memory_handlers(false));
    assert_eq!(
        s["hooks"].as_object().unwrap().keys().collect::<Vec<_>>(),
        EVENTS.to_vec()
    );
    assert_eq!(
        s["hooks"]["PreToolUse"][0]["matcher"],
        wt_memory_base::hook_events::ACTING_TOOLS,
        "without --pretool, PreToolUse runs the action gate and the guard before every acting tool"
    );
    assert!(
        !repo.join(".claude/settings.json.bak").exists(),
        "nothing to back up"
    );

    // MCP: legacy name and old registration removed, then one add with the exact command.
    let calls = h.calls();
    let expected_add: Vec<String> = ["mcp", "add", "wt-tools", "-s", "local", "--"]
        .iter()
        .map(|s| s.to_string())
        .chain([mcp_server()])
        .collect();
    assert_eq!(calls[0], ["mcp", "remove", "wt-memory"]);
    assert_eq!(calls[1], ["mcp", "remove", "wt-tools"]);
    assert_eq!(calls.last().unwrap(), &expected_add);
    let entry = &h.local_servers(&repo)["wt-tools"];
    assert_eq!(entry["command"], mcp_server());
    assert_eq!(entry["args"], json!([]));
    assert!(!repo.join(".mcp.json").exists());
    assert!(!repo.join(".claude/settings.local.json").exists());

    let md = read(repo.join("CLAUDE.md"));
    assert!(
        md.starts_with("<!-- wt-memory:managed start")
            && md.trim_end().ends_with("<!-- wt-memory:managed end -->")
    );
    for needle in [
        "[MEM#a1b2]",
        "never\ninstructions",
        "From memory:",
        "`remember`",
        "`recall`",
        "wt-memory remember --type",
    ] {
        assert!(md.contains(needle), "CLAUDE.md lacks {needle:?}:\n{md}");
    }
    assert!(
        stdout.contains(".claude/settings.json") && stdout.contains("CLAUDE.md"),
        "{stdout}"
    );
    assert!(stdout.contains("registered"), "{stdout}");
}

#[test]
fn second_run_is_byte_identical_and_says_no_change() {
    let h = Harness::new();
    let repo = h.env.git_repo("again");
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    std::fs::write(
        repo.join(".claude/settings.json"),
        "{\n\t\"permissions\": {\"allow\": [\"Bash(ls)\"]},\n\t\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]}\n}",
    )
    .unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "# Rules\n\nUse tabs.\n").unwrap();
    h.project_ok(&repo, &["init"], true);
    let files = snapshot(&repo);
    let config = read(h.claude_json_path());
    let calls = h.calls().len();

    let stdout = h.project_ok(&repo, &["init"], true);
    assert!(stdout.contains("no change"), "{stdout}");
    assert_eq!(snapshot(&repo), files, "second run changed a file");
    assert_eq!(read(h.claude_json_path()), config);
    assert_eq!(
        h.calls().len(),
        calls,
        "second run called the claude CLI: {:?}",
        &h.calls()[calls..]
    );
    // The user's tab indentation and missing final newline survived the first run.
    let text = read(repo.join(".claude/settings.json"));
    assert!(
        text.starts_with("{\n\t\"permissions\"") && !text.ends_with('\n'),
        "{text}"
    );
}

#[test]
fn user_hooks_and_keys_under_the_same_events_are_kept_and_uninstall_restores_them() {
    let h = Harness::new();
    let repo = h.env.git_repo("mine");
    let original = r#"{
    "model": "opus",
    "hooks": {
        "Stop": [
            {"hooks": [{"type": "command", "command": "notify-send done", "timeout": 3}]}
        ],
        "PostToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "cargo fmt"}]},
            {"matcher": "Read", "hooks": [{"type": "command", "command": "audit-read", "statusMessage": "auditing"}]}
        ],
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "log-prompt"}]}
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "beep"}]}]
    },
    "env": {"FOO": "1"}
}
"#;
    std::fs::create_dir_all(repo.join(".claude")).unwrap();
    std::fs::write(repo.join(".claude/settings.json"), original).unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "# Mine\n\nKeep this.\n").unwrap();
    let before = snapshot(&repo);

    h.project_ok(&repo, &["init"], true);
    let s = settings(&repo);
    let orig: Value = serde_json::from_str(original).unwrap();
    assert_eq!(
        other_handlers(&s),
        other_handlers(&orig),
        "user hooks changed"
    );
    assert_eq!(
        sorted(memory_handlers(&s)),
        sorted(expected_memory_handlers(false))
    );
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "hooks", "env"], "top-level key order");
    let events: Vec<&String> = s["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        events[..4],
        ["Stop", "PostToolUse", "UserPromptSubmit", "Notification"],
        "existing events keep their order"
    );
    assert_eq!(
        s["hooks"]["PostToolUse"][1]["hooks"][0]["statusMessage"],
        "auditing"
    );
    let text = read(repo.join(".claude/settings.json"));
    assert!(
        text.contains("\n    \"model\": \"opus\""),
        "indentation kept:\n{text}"
    );
    assert_eq!(read(repo.join(".claude/settings.json.bak")), original);
    assert!(read(repo.join("CLAUDE.md"))
        .starts_with("# Mine\n\nKeep this.\n\n<!-- wt-memory:managed start"));

    let stdout = h.project_ok(&repo, &["uninstall"], true);
    assert_eq!(
        snapshot(&repo),
        before,
        "uninstall did not restore the files:\n{stdout}"
    );
    assert!(h.local_servers(&repo).get("wt-tools").is_none());
    assert!(h.calls().last().unwrap().starts_with(&[
        "mcp".into(),
        "remove".into(),
        "wt-tools".into()
    ]));
}

/// Settings written by the earlier generations (the previous system's two hook layouts).
fn generations() -> Vec<(&'static str, Value)> {
    let c = |cmd: &str, t: u64| json!({"type": "command", "command": cmd, "timeout": t});
    let six = |event: &str| {
        Value::Array(
            ["Read", "Edit", "Write", "Bash", "Task", "Grep"]
                .iter()
                .map(|m| json!({"matcher": m, "hooks": [c(&format!("wt-hook-memory {event}"), 5)]}))
                .collect(),
        )
    };
    vec![
        (
            "five-layer",
            json!({"hooks": {
                "SessionStart": [{"matcher": "", "hooks": [c("wt-hook-memory-warmstart", 10)]}],
                "UserPromptSubmit": [{"matcher": "", "hooks": [c("wt-hook-skill", 5), c("wt-hook-memory-recall", 15)]}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [c("wt-hook-memory-pretool", 5)]},
                               {"matcher": "", "hooks": [c(".claude/hooks/activity-track.sh", 5)]}],
                "PostToolUseFailure": [{"matcher": "Bash", "hooks": [c("wt-hook-memory-posttool", 5)]}],
                "Stop": [{"matcher": "", "hooks": [c("wt-hook-stop", 5), c("wt-hook-memory-save", 30)]}]
            }}),
        ),
        (
            "proxy",
            json!({"hooks": {
                "SessionStart": [{"matcher": "", "hooks": [c("wt-hook-memory SessionStart", 10)]}],
                "UserPromptSubmit": [{"matcher": "", "hooks": [c("wt-hook-skill", 5), c("wt-hook-memory UserPromptSubmit", 15)]}],
                "PreToolUse": six("PreToolUse"),
                "PostToolUse": six("PostToolUse"),
                "PostToolUseFailure": [{"matcher": "Bash", "hooks": [c("wt-hook-memory PostToolUseFailure", 5)]}],
                "SubagentStop": [{"matcher": "", "hooks": [c("wt-hook-memory SubagentStop", 5)]}],
                "Stop": [{"matcher": "", "hooks": [c("wt-hook-stop", 5), c("wt-hook-memory Stop", 30)]}]
            }}),
        ),
        (
            "previous-current",
            json!({"hooks": {
                "SessionStart": [{"matcher": "", "hooks": [c("/home/u/.local/bin/wt-hook-memory SessionStart", 10)]},
                                 {"matcher": "compact", "hooks": [c("/home/u/.local/bin/wt-hook-memory SessionStart", 10)]}],
                "UserPromptSubmit": [{"matcher": "", "hooks": [c("wt-hook-skill", 5), c("wt-hook-memory UserPromptSubmit", 15)]}],
                "PreToolUse": [{"matcher": "Skill", "hooks": [c("wt-hook-activity", 5)]}],
                "PostToolUse": [{"matcher": "Read", "hooks": [c("wt-hook-memory PostToolUse", 5)]},
                                {"matcher": "Bash", "hooks": [c("wt-hook-memory PostToolUse", 5)]}],
                "PostToolUseFailure": [{"matcher": "Bash", "hooks": [c("wt-hook-memory PostToolUseFailure", 5)]}],
                "SubagentStart": [{"matcher": "", "hooks": [c("wt-hook-memory SubagentStart", 10)]}],
                "SubagentStop": [{"matcher": "", "hooks": [c("wt-hook-memory SubagentStop", 5)]}],
                "Stop": [{"matcher": "", "hooks": [c("wt-hook-stop", 5), c("wt-hook-memory Stop", 30)]}]
            }}),
        ),
    ]
}

#[test]
fn every_earlier_generation_is_upgraded() {
    let h = Harness::new();
    for (name, old) in generations() {
        let repo = h.env.git_repo(name);
        std::fs::create_dir_all(repo.join(".claude")).unwrap();
        let original = serde_json::to_string_pretty(&old).unwrap();
        std::fs::write(repo.join(".claude/settings.json"), &original).unwrap();

        h.project_ok(&repo, &["init"], true);
        let s = settings(&repo);
        assert_eq!(
            sorted(memory_handlers(&s)),
            sorted(expected_memory_handlers(false)),
            "{name}: memory hooks not canonical"
        );
        let ours_in_session_start = memory_handlers(&s)
            .iter()
            .filter(|h| h.0 == "SessionStart")
            .count();
        assert_eq!(
            ours_in_session_start, 1,
            "{name}: SessionStart must inject once"
        );
        assert_eq!(
            other_handlers(&s),
            other_handlers(&old),
            "{name}: companion hooks changed"
        );
        assert_eq!(
            read(repo.join(".claude/settings.json.bak")),
            original,
            "{name}: backup"
        );
        // Idempotent after the upgrade too.
        let after = snapshot(&repo);
        h.project_ok(&repo, &["init"], true);
        assert_eq!(snapshot(&repo), after, "{name}: second run changed files");
    }
}

#[test]
fn legacy_memory_instructions_and_registrations_are_cleaned_up() {
    let h = Harness::new();
    let repo = h.env.git_repo("legacy");
    let write = |rel: &str, text: &str| {
        let p = repo.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        ".claude/skills/openspec-apply/SKILL.md",
        "# Apply\n\n1. Read tasks.\n\n<!-- wt-memory hooks: recall start -->\nRun `wt-memory recall \"<change>\"` first.\n<!-- wt-memory hooks: recall end -->\n\n2. Implement.\n",
    );
    write(
        ".claude/commands/opsx/apply.md",
        "Apply the change.\nBefore starting: wt-memory recall \"$ARGUMENTS\" --limit 5\nThen work.\necho \"x\" | wt-memory remember --type Learning\n",
    );
    let own_command = "Use `wt-memory recall` to search.\n";
    write(".claude/commands/wt/memory.md", own_command);
    write(".claude/hot-topics.json", "[\"docker\"]\n");
    write(
        "CLAUDE.md",
        "# Project\n\nIntro.\n\n## Persistent Memory\n\n<!-- wt-tools:managed — DO NOT edit or remove this section. It is auto-generated by `wt-project init`. -->\n**IMPORTANT: read memory.**\n\n### How it works\nHooks.\n\n## Build\n\nmake\n",
    );
    // The previous implementation's registrations: legacy name and the uv-based server.
    std::fs::create_dir_all(h.env.path().join("config")).unwrap();
    let key = repo.canonicalize().unwrap().display().to_string();
    let old = json!({"projects": {key: {"mcpServers": {
        "wt-memory": {"type": "stdio", "command": "python", "args": ["/opt/wt/bin/wt-memory-mcp-server.py"], "env": {}},
        "wt-tools": {"type": "stdio", "command": "env", "args": [format!("CLAUDE_PROJECT_DIR={}", repo.display()), "uv", "--directory", "/opt/wt/mcp-server", "run", "python", "wt_mcp_server.py"], "env": {}},
        "github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {}}
    }}}});
    std::fs::write(
        h.claude_json_path(),
        serde_json::to_string_pretty(&old).unwrap(),
    )
    .unwrap();

    let stdout = h.project_ok(&repo, &["init"], true);
    assert_eq!(
        read(repo.join(".claude/skills/openspec-apply/SKILL.md")),
        "# Apply\n\n1. Read tasks.\n\n2. Implement.\n"
    );
    assert_eq!(
        read(repo.join(".claude/commands/opsx/apply.md")),
        "Apply the change.\nThen work.\n"
    );
    assert_eq!(
        read(repo.join(".claude/commands/wt/memory.md")),
        own_command,
        "commands/wt/ is exempt"
    );
    assert!(!repo.join(".claude/hot-topics.json").exists());
    let md = read(repo.join("CLAUDE.md"));
    assert!(
        !md.contains("Persistent Memory") && !md.contains("wt-tools:managed"),
        "{md}"
    );
    assert!(
        md.starts_with("# Project\n\nIntro.\n\n<!-- wt-memory:managed start"),
        "{md}"
    );
    assert!(
        md.ends_with("<!-- wt-memory:managed end -->\n\n## Build\n\nmake\n"),
        "{md}"
    );
    for reported in [
        "SKILL.md",
        "commands/opsx/apply.md",
        "hot-topics.json",
        "Persistent Memory",
    ] {
        assert!(
            stdout.contains(reported),
            "removal of {reported} not reported:\n{stdout}"
        );
    }
    let servers = h.local_servers(&repo);
    assert!(servers.get("wt-memory").is_none(), "{servers}");
    assert_eq!(servers["wt-tools"]["command"], mcp_server());
    assert_eq!(servers["github"]["command"], "gh-mcp", "other servers stay");
}

#[test]
fn registration_in_several_scopes_is_replaced_by_one() {
    let h = Harness::new();
    let repo = h.env.git_repo("scopes");
    let key = repo.canonicalize().unwrap().display().to_string();
    let stale = json!({"type": "stdio", "command": "old-server", "args": [], "env": {}});
    std::fs::create_dir_all(h.env.path().join("config")).unwrap();
    std::fs::write(
        h.claude_json_path(),
        json!({"projects": {key: {"mcpServers": {"wt-tools": stale}}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        repo.join(".mcp.json"),
        json!({"mcpServers": {"wt-tools": stale}}).to_string(),
    )
    .unwrap();

    h.project_ok(&repo, &["init"], true);
    let mcp: Value = serde_json::from_str(&read(repo.join(".mcp.json"))).unwrap();
    assert!(mcp["mcpServers"].get("wt-tools").is_none(), "{mcp}");
    assert_eq!(h.local_servers(&repo)["wt-tools"]["command"], mcp_server());
}

#[test]
fn invalid_settings_json_is_an_error_and_nothing_is_touched() {
    let h = Harness::new();
    let repo = h.env.git_repo("broken");
    std::fs::create_dir_all(repo.join(".claude/commands")).unwrap();
    std::fs::write(
        repo.join(".claude/settings.json"),
        "{\"hooks\": {\"Stop\": [}\n",
    )
    .unwrap();
    std::fs::write(repo.join(".claude/hot-topics.json"), "[]").unwrap();
    let before = snapshot(&repo);

    let out = h.project(&repo, &["init"], true);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("settings.json") && stderr.contains("not valid JSON"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one-line error: {stderr}");
    assert_eq!(snapshot(&repo), before);
    assert!(h.calls().is_empty(), "no MCP registration after an error");
}

#[test]
fn outside_a_git_repository_is_a_clear_error() {
    let h = Harness::new();
    let dir = h.env.path().join("plain");
    std::fs::create_dir_all(&dir).unwrap();
    let out = h.project(&dir, &["init"], true);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not inside a git repository"));
    assert!(snapshot(&dir).is_empty());
}

#[test]
fn worktree_sets_up_main_checkout_and_worktree() {
    let h = Harness::new();
    let main = h.env.git_repo("main-checkout");
    let wt = h.env.path().join("linked");
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            wt.to_str().unwrap(),
        ],
    );

    h.project_ok(&wt, &["init"], true);
    for dir in [&main, &wt] {
        assert_eq!(
            memory_handlers(&settings(dir)),
            expected_memory_handlers(false),
            "{}",
            dir.display()
        );
        let entry = &h.local_servers(dir)["wt-tools"];
        assert_eq!(entry["command"], mcp_server(), "{}", dir.display());
        assert!(read(dir.join("CLAUDE.md")).contains("wt-memory:managed start"));
    }
    let adds: Vec<_> = h.calls().into_iter().filter(|c| c[1] == "add").collect();
    assert_eq!(adds.len(), 2);
}

#[test]
fn without_the_claude_cli_mcp_json_is_written() {
    let h = Harness::new();
    let repo = h.env.git_repo("nocli");
    std::fs::write(
        repo.join(".mcp.json"),
        "{\n  \"mcpServers\": {\n    \"github\": {\"command\": \"gh-mcp\"}\n  }\n}\n",
    )
    .unwrap();
    let stdout = h.project_ok(&repo, &["init"], false);
    let mcp: Value = serde_json::from_str(&read(repo.join(".mcp.json"))).unwrap();
    assert_eq!(
        mcp["mcpServers"]["wt-tools"],
        json!({"type": "stdio", "command": mcp_server(), "args": [], "env": {}})
    );
    assert_eq!(mcp["mcpServers"]["github"]["command"], "gh-mcp");
    assert!(stdout.contains("approve"), "{stdout}");
    assert!(h.calls().is_empty());

    let before = snapshot(&repo);
    assert!(h.project_ok(&repo, &["init"], false).contains("no change"));
    assert_eq!(snapshot(&repo), before);

    h.project_ok(&repo, &["uninstall"], false);
    let mcp: Value = serde_json::from_str(&read(repo.join(".mcp.json"))).unwrap();
    assert!(mcp["mcpServers"].get("wt-tools").is_none());
    assert_eq!(mcp["mcpServers"]["github"]["command"], "gh-mcp");
}

#[test]
fn dry_run_shows_diffs_and_writes_nothing() {
    let h = Harness::new();
    let repo = h.env.git_repo("dry");
    std::fs::create_dir_all(repo.join(".claude/skills/x")).unwrap();
    std::fs::write(
        repo.join(".claude/settings.json"),
        "{\"model\": \"opus\"}\n",
    )
    .unwrap();
    std::fs::write(
        repo.join(".claude/skills/x/SKILL.md"),
        "a\n<!-- wt-memory hooks start -->\nold\n<!-- wt-memory hooks end -->\nb\n",
    )
    .unwrap();
    let before = snapshot(&repo);

    let stdout = h.project_ok(&repo, &["init", "--dry-run"], true);
    assert_eq!(snapshot(&repo), before, "dry run wrote files");
    assert!(!h.claude_json_path().exists());
    assert!(
        h.calls().is_empty(),
        "dry run called claude: {:?}",
        h.calls()
    );
    for needle in [
        "--- a/.claude/settings.json",
        "+++ b/.claude/settings.json",
        "+  \"hooks\": {",
        "--- /dev/null",
        "+++ b/CLAUDE.md",
        "-<!-- wt-memory hooks start -->",
        "would run in",
        "mcp add wt-tools -s local --",
        "nothing was written",
    ] {
        assert!(
            stdout.contains(needle),
            "dry run output lacks {needle:?}:\n{stdout}"
        );
    }
    // The handlers in exec form: the program, then its arguments.
    assert!(
        stdout.contains("\"command\": \"wt-hook-memory\",") && stdout.contains("\"args\": ["),
        "{stdout}"
    );
}

#[test]
fn uninstall_of_a_fresh_setup_leaves_the_repo_as_it_was() {
    let h = Harness::new();
    let repo = h.env.git_repo("clean");
    let before = snapshot(&repo);
    h.project_ok(&repo, &["init", "--pretool"], true);
    assert_ne!(snapshot(&repo), before);
    let stdout = h.project_ok(&repo, &["uninstall"], true);
    assert_eq!(snapshot(&repo), before, "{stdout}");
    assert!(!repo.join(".claude").exists());
    assert!(h
        .local_servers(&repo)
        .as_object()
        .is_none_or(|s| s.is_empty()));
    assert!(h
        .project_ok(&repo, &["uninstall"], true)
        .contains("no change"));
}

#[test]
fn pretool_is_opt_in_and_removed_again_without_the_flag() {
    let h = Harness::new();
    let repo = h.env.git_repo("pretool");
    h.project_ok(&repo, &["init", "--pretool", "--no-mcp"], true);
    assert_eq!(
        memory_handlers(&settings(&repo)),
        expected_memory_handlers(true)
    );
    h.project_ok(&repo, &["init", "--no-mcp"], true);
    assert_eq!(
        memory_handlers(&settings(&repo)),
        expected_memory_handlers(false)
    );
    assert_eq!(
        settings(&repo)["hooks"]["PreToolUse"][0]["matcher"],
        wt_memory_base::hook_events::ACTING_TOOLS
    );
    assert!(h.calls().is_empty(), "--no-mcp must not call claude");
}

#[test]
fn docker_and_project_scope_registration() {
    let h = Harness::new();
    let repo = h.env.git_repo("docker");
    h.project_ok(&repo, &["init", "--scope", "project", "--docker"], true);
    let mcp: Value = serde_json::from_str(&read(repo.join(".mcp.json"))).unwrap();
    let entry = &mcp["mcpServers"]["wt-tools"];
    // The project directory is resolved when the server starts, never baked in.
    assert_eq!(entry["command"], "sh");
    assert_eq!(
        entry["args"],
        json!([
            "-c",
            "d=$CLAUDE_PROJECT_DIR; [ -n \"$d\" ] || d=$PWD; exec docker run -i --rm -v \"$d:$d\" -w \"$d\" -e CLAUDE_PROJECT_DIR=\"$d\" -v wt-memory:/data wt-memory:latest"
        ])
    );
    assert!(!read(repo.join(".mcp.json")).contains(&repo.display().to_string()));
    // Same target, another image: replaced, not duplicated.
    h.project_ok(
        &repo,
        &["init", "--scope", "project", "--docker=registry.local/wt:2"],
        true,
    );
    let mcp: Value = serde_json::from_str(&read(repo.join(".mcp.json"))).unwrap();
    let script = mcp["mcpServers"]["wt-tools"]["args"][1].as_str().unwrap();
    assert!(
        script.ends_with("-v wt-memory:/data registry.local/wt:2"),
        "{script}"
    );
    assert_eq!(mcp["mcpServers"].as_object().unwrap().len(), 1);
}

/// Fixture for each event, with the placeholders rewritten to the test repository.
fn fixture_for(event: &str, matcher: &str, repo: &Path) -> String {
    let file = match (event, matcher) {
        ("SessionStart", _) => "session_start.startup.json",
        ("UserPromptSubmit", _) => "user_prompt_submit.normal.json",
        ("PreToolUse", _) => "pre_tool_use.bash.json",
        ("PostToolUse", "Read") => "post_tool_use.read.json",
        ("PostToolUse", _) => "post_tool_use.bash.json",
        ("PostToolUseFailure", _) => "post_tool_use_failure.bash.json",
        ("SubagentStart", _) => "subagent_start.explore.json",
        ("SubagentStop", _) => "subagent_stop.explore.json",
        ("Stop", _) => "stop.normal.json",
        // The shared fixtures keep it among the inputs the previous system did not handle.
        ("PreCompact", _) => "../bad/unhandled_event.pre_compact.json",
        _ => panic!("no fixture for {event}"),
    };
    let fixtures = fixtures_dir();
    read(fixtures.join("hooks").join(file))
        .replace("/path/to/proj", &repo.display().to_string())
        .replace(
            "\"transcripts/",
            &format!("\"{}/transcripts/", fixtures.display()),
        )
}

#[test]
fn written_hook_commands_run_with_each_event_fixture() {
    let h = Harness::new();
    let repo = h.env.git_repo("wired");
    h.project_ok(&repo, &["init", "--pretool", "--no-mcp"], true);
    h.env.remember(
        &repo,
        "The login form validates e-mail addresses on the server side only.",
        "Learning",
        "auth",
    );
    let all = memory_handlers(&settings(&repo));
    assert_eq!(all.len(), 11);
    for (event, matcher, command, _, _) in all {
        let input = fixture_for(&event, &matcher, &repo);
        let mut cmd = std::process::Command::new("sh");
        support::clean_env(&mut cmd)
            .arg("-c")
            .arg(&command)
            .current_dir(&repo);
        for (k, v) in h.env.envs() {
            cmd.env(k, v);
        }
        // A HOME of its own, the model where `wt-memory setup` put it: without the model every
        // hook failed open here, silently, which the log check below now sees.
        cmd.env("CLAUDE_PROJECT_DIR", &repo)
            .env("HOME", h.env.path().join("home"))
            .env("XDG_DATA_HOME", support::model_data_home())
            .env("PATH", path_with_bins());
        let log = support::HookLog::mark(&h.env);
        let out = run(&mut cmd, Some(&input));
        // Silent or not, no hook of the written commands failed on the way.
        log.assert_clean(&format!("`{command}` with the {event} fixture"));
        assert!(
            out.status.success(),
            "`{command}` with the {event} fixture exited {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        // PreCompact's output is plain text for the summariser (nothing here: no memory was
        // injected in this session).
        if event == "PreCompact" {
            assert!(stdout.trim().is_empty(), "{stdout}");
        } else if !stdout.trim().is_empty() {
            let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
                panic!("{event}: stdout is not one JSON object ({e}): {stdout}")
            });
            assert_eq!(
                v["hookSpecificOutput"]["hookEventName"],
                event.as_str(),
                "{stdout}"
            );
        }
        if event == "Stop" || event == "SubagentStop" {
            assert!(
                stdout.trim().is_empty(),
                "{event} must print nothing: {stdout}"
            );
        }
    }
}

#[test]
fn user_scope_goes_to_the_global_config() {
    let h = Harness::new();
    let repo = h.env.git_repo("user-scope");
    h.project_ok(&repo, &["init", "--scope", "user"], true);
    // Path-free, so one user-scope registration serves every project.
    let entry = &h.claude_json()["mcpServers"]["wt-tools"];
    assert_eq!(entry["command"], mcp_server());
    assert_eq!(entry["args"], json!([]));
    assert!(h.local_servers(&repo).get("wt-tools").is_none());
    assert!(h
        .project_ok(&repo, &["init", "--scope", "user"], true)
        .contains("no change"));
}

#[test]
fn a_failing_claude_mcp_add_falls_back_to_mcp_json_with_a_warning() {
    let h = Harness::new();
    let repo = h.env.git_repo("cli-fails");
    // A regular file where the CLI keeps its configuration: every write of the fake fails.
    let blocked = h.env.path().join("not-a-dir");
    std::fs::write(&blocked, "").unwrap();
    let out = h.project_env(&repo, &["init"], true, &[("CLAUDE_CONFIG_DIR", &blocked)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`claude mcp add` failed"), "{stderr}");
    let mcp: Value = serde_json::from_str(&read(repo.join(".mcp.json"))).unwrap();
    assert_eq!(mcp["mcpServers"]["wt-tools"]["command"], mcp_server());
    assert!(h.calls().iter().any(|c| c[1] == "add"));
}

/// The memory handlers of `settings` must be exactly the canonical set with absolute paths.
fn expected_absolute_handlers() -> Vec<Handler> {
    expected_memory_handlers(false)
        .into_iter()
        .map(|mut h| {
            let args =
                h.2.strip_prefix(&hook_command(&h.0))
                    .unwrap_or("")
                    .to_string();
            h.2 = abs_hook_command(&h.0) + &args;
            h
        })
        .collect()
}

fn abs_mcp_server() -> String {
    bin_path("wt-mcp-server").display().to_string()
}

#[test]
fn committed_files_are_identical_in_two_clones_at_different_paths() {
    let h = Harness::new();
    let origin = h.env.git_repo("origin");
    let clones = [
        h.env.path().join("alice/work/proj"),
        h.env.path().join("bob/src/elsewhere"),
    ];
    for clone in &clones {
        std::fs::create_dir_all(clone.parent().unwrap()).unwrap();
        git(
            h.env.path(),
            &[
                "clone",
                "-q",
                origin.to_str().unwrap(),
                clone.to_str().unwrap(),
            ],
        );
    }
    let variants: [&[&str]; 4] = [
        &["init"],
        &["init", "--scope", "project"],
        &["init", "--scope", "project", "--pretool"],
        &["init", "--scope", "project", "--docker"],
    ];
    for args in variants {
        for clone in &clones {
            h.project_ok(clone, args, true);
        }
        for file in [".claude/settings.json", ".mcp.json", "CLAUDE.md"] {
            let [a, b] = clones.clone().map(|c| std::fs::read(c.join(file)).ok());
            assert_eq!(a, b, "{args:?}: {file} differs between the clones");
            let Some(bytes) = a else {
                assert!(
                    file == ".mcp.json" && args.len() == 1,
                    "{args:?}: no {file}"
                );
                continue;
            };
            let text = String::from_utf8(bytes).unwrap();
            for path in [h.env.path().to_path_buf(), bin_dir()] {
                assert!(
                    !text.contains(&path.display().to_string()),
                    "{args:?}: {file} names {}:\n{text}",
                    path.display()
                );
            }
        }
        for clone in &clones {
            assert!(!clone.join(".claude/settings.local.json").exists());
        }
    }
    // Local scope (first variant) was path-free too; now the server is in .mcp.json only.
    for clone in &clones {
        assert!(h.local_servers(clone).get("wt-tools").is_none());
    }
}

#[test]
fn without_the_binaries_on_path_hooks_go_to_settings_local_json() {
    let h = Harness::new();
    let repo = h.env.git_repo("nopath");
    let stdout = h.project_ok_with(&repo, &["init"], true, false);
    assert!(!repo.join(".claude/settings.json").exists(), "{stdout}");
    let local_path = repo.join(".claude/settings.local.json");
    let local: Value = serde_json::from_str(&read(&local_path)).unwrap();
    assert_eq!(memory_handlers(&local), expected_absolute_handlers());
    let said: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("not on PATH"))
        .collect();
    assert!(
        said.len() == 1 && said[0].contains("settings.local.json") && said[0].contains("re-run"),
        "{stdout}"
    );
    // git ignores the local file (here through .git/info/exclude): only CLAUDE.md is new.
    let status = git(&repo, &["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status, "?? CLAUDE.md", "{stdout}");
    // The MCP server is registered with its absolute path, in local scope.
    assert_eq!(
        h.local_servers(&repo)["wt-tools"]["command"],
        abs_mcp_server()
    );

    // Idempotent.
    let files = snapshot(&repo);
    let exclude = std::fs::read_to_string(repo.join(".git/info/exclude")).unwrap_or_default();
    assert!(exclude.matches("/.claude/settings.local.json").count() <= 1);
    let calls = h.calls().len();
    assert!(h
        .project_ok_with(&repo, &["init"], true, false)
        .contains("no change"));
    assert_eq!(snapshot(&repo), files);
    assert_eq!(
        std::fs::read_to_string(repo.join(".git/info/exclude")).unwrap_or_default(),
        exclude
    );
    assert_eq!(h.calls().len(), calls);

    // Project scope is not used for an absolute path: it stays local, .mcp.json is not written.
    let stdout = h.project_ok_with(&repo, &["init", "--scope", "project"], true, false);
    assert!(!repo.join(".mcp.json").exists(), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("wt-mcp-server is not on PATH") && l.contains("local scope")),
        "{stdout}"
    );
    assert_eq!(
        h.local_servers(&repo)["wt-tools"]["command"],
        abs_mcp_server()
    );

    // Binaries on PATH: the hooks move to the shared file; the local one held only them and goes.
    let stdout = h.project_ok(&repo, &["init"], true);
    assert_eq!(
        memory_handlers(&settings(&repo)),
        expected_memory_handlers(false)
    );
    assert!(!local_path.exists(), "{stdout}");
    assert!(!stdout.contains("not on PATH"), "{stdout}");
    assert_eq!(h.local_servers(&repo)["wt-tools"]["command"], mcp_server());
    let shared = read(repo.join(".claude/settings.json"));

    // And back, next to the user's own local settings: those stay, ours are added once.
    let mine = "{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(make)\"\n    ]\n  }\n}\n";
    std::fs::write(&local_path, mine).unwrap();
    let stdout = h.project_ok_with(&repo, &["init", "--no-mcp"], true, false);
    assert!(
        !repo.join(".claude/settings.json").exists(),
        "settings.json held only our hooks: {stdout}"
    );
    let local: Value = serde_json::from_str(&read(&local_path)).unwrap();
    assert_eq!(local["permissions"]["allow"], json!(["Bash(make)"]));
    assert_eq!(memory_handlers(&local), expected_absolute_handlers());

    // Uninstall takes ours out of both files (here a teammate's shared copy is present too).
    std::fs::write(repo.join(".claude/settings.json"), &shared).unwrap();
    h.project_ok_with(&repo, &["uninstall"], true, false);
    assert!(!repo.join(".claude/settings.json").exists());
    assert_eq!(read(&local_path), mine);
}

#[test]
fn without_the_server_on_path_or_a_cli_nothing_machine_specific_enters_mcp_json() {
    let h = Harness::new();
    let repo = h.env.git_repo("nopath-nocli");
    // What the previous version wrote without a CLI: this clone's path, in a committed file.
    let old = json!({"mcpServers": {
        "wt-tools": {"type": "stdio", "command": "env", "args": [format!("CLAUDE_PROJECT_DIR={}", repo.display()), "/old/bin/wt-mcp-server"], "env": {}},
        "github": {"command": "gh-mcp"}
    }});
    std::fs::write(repo.join(".mcp.json"), old.to_string()).unwrap();
    let stdout = h.project_ok_with(&repo, &["init"], false, false);
    let mcp: Value = serde_json::from_str(&read(repo.join(".mcp.json"))).unwrap();
    assert!(mcp["mcpServers"].get("wt-tools").is_none(), "{mcp}");
    assert_eq!(mcp["mcpServers"]["github"]["command"], "gh-mcp");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("wt-mcp-server is not on PATH") && l.contains("not registered")),
        "{stdout}"
    );
    assert!(h.calls().is_empty());

    // A path-free entry (a teammate's, from a machine where it is on PATH) stays as it is.
    let shared = json!({"mcpServers": {"wt-tools": {"type": "stdio", "command": "wt-mcp-server", "args": [], "env": {}}}}).to_string();
    std::fs::write(repo.join(".mcp.json"), &shared).unwrap();
    h.project_ok_with(&repo, &["init"], false, false);
    assert_eq!(read(repo.join(".mcp.json")), shared);
}

#[test]
fn init_without_the_model_says_so_and_still_wires_the_project() {
    let h = Harness::new();
    let repo = h.env.git_repo("no-model");
    let no_data = h.env.path().join("no-data");
    let out = h.project_env(&repo, &["init"], true, &[("XDG_DATA_HOME", &no_data)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no embedding model") && stderr.contains("wt-memory setup"),
        "{stderr}"
    );
    assert!(settings(&repo)["hooks"]["UserPromptSubmit"].is_array());
    // With the model (the `wt-memory setup` cache of the user running the tests; the harness
    // gives init a HOME of its own), init says nothing about it.
    let real_data = support::model_data_home();
    let repo2 = h.env.git_repo("with-model");
    let out = h.project_env(&repo2, &["init"], true, &[("XDG_DATA_HOME", &real_data)]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("no embedding model"));
}

/// A hook whose program is gone (the previous system's `wt-hook-skill` after its uninstall) fails
/// on every event: `doctor` reports it instead of `ok hooks`, `init` names it, and
/// `init --remove-dangling-hooks` removes exactly those entries (issue 31).
#[test]
fn dangling_hook_commands_fail_doctor_and_init_removes_them_on_request() {
    let h = Harness::new();
    let repo = h.env.git_repo("dangling");
    h.project_ok(&repo, &["init"], true);
    let mut s = settings(&repo);
    s["hooks"]["UserPromptSubmit"]
        .as_array_mut()
        .unwrap()
        .push(json!({"hooks": [{"type": "command", "command": "wt-hook-skill"}]}));
    s["hooks"]["Stop"].as_array_mut().unwrap().push(
        json!({"hooks": [{"type": "command", "command": "/opt/wt-tools/bin/wt-hook-stop --quiet"},
                                {"type": "command", "command": "echo done"}]}),
    );
    std::fs::write(
        repo.join(".claude/settings.json"),
        serde_json::to_string_pretty(&s).unwrap(),
    )
    .unwrap();
    let doctor = || h.doctor(&repo);
    let report = doctor();
    assert!(
        report.contains("hook command not found: `wt-hook-skill` (UserPromptSubmit")
            && report
                .contains("hook command not found: `/opt/wt-tools/bin/wt-hook-stop --quiet` (Stop"),
        "{report}"
    );
    assert!(
        !report.contains("`echo done`"),
        "a builtin resolves: {report}"
    );

    let out = h.project(&repo, &["init"], true);
    assert!(out.status.success());
    let warned = String::from_utf8_lossy(&out.stderr);
    assert!(
        warned.contains("hook command not found: `wt-hook-skill`")
            && warned.contains("wt-project init --remove-dangling-hooks"),
        "{warned}"
    );
    assert!(
        read(repo.join(".claude/settings.json")).contains("wt-hook-skill"),
        "only named"
    );

    let stdout = h.project_ok(&repo, &["init", "--remove-dangling-hooks"], true);
    assert!(
        stdout.contains("removed 2 hook entries whose command is gone"),
        "{stdout}"
    );
    let s = settings(&repo);
    let text = s.to_string();
    assert!(
        !text.contains("wt-hook-skill") && !text.contains("wt-hook-stop"),
        "{text}"
    );
    assert!(text.contains("echo done"), "other hooks stay: {text}");
    assert_eq!(memory_handlers(&s), expected_memory_handlers(false));
    assert!(
        doctor().contains("every registered hook command resolves"),
        "{}",
        doctor()
    );
}

/// Before init, the previous system's MCP server is registered: `doctor` says it is not ours
/// instead of `ok MCP server registered`; after init, ours is (issue 31).
#[test]
fn doctor_tells_the_previous_systems_mcp_server_from_ours() {
    let h = Harness::new();
    let repo = h.env.git_repo("oldmcp");
    std::fs::write(
        repo.join(".mcp.json"),
        r#"{"mcpServers": {"wt-memory": {"command": "python3", "args": ["-m", "wt_memory_mcp"]}}}"#,
    )
    .unwrap();
    let doctor = || h.doctor(&repo);
    let before = doctor();
    assert!(
        before.contains("the MCP server registered as wt-memory runs `python3 -m wt_memory_mcp`, not this wt-mcp-server"),
        "{before}"
    );
    h.project_ok(&repo, &["init"], true);
    let after = doctor();
    assert!(after.contains("MCP server registered for"), "{after}");
    assert!(!after.contains("not this wt-mcp-server"), "{after}");
}

/// Every hook command of ours in a settings file (none when the file is absent).
fn our_hook_commands(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let value: Value = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    for groups in value["hooks"]
        .as_object()
        .into_iter()
        .flat_map(|h| h.values())
    {
        for group in groups.as_array().unwrap() {
            for handler in group["hooks"].as_array().unwrap() {
                let command = command_line(handler);
                if command.contains("wt-hook-memory") {
                    out.push(command);
                }
            }
        }
    }
    out
}

#[test]
fn with_the_plugin_enabled_init_writes_no_hooks_and_takes_out_its_own() {
    let h = Harness::new();
    let repo = h.env.git_repo("withplugin");
    h.project_ok(&repo, &["init"], true);
    assert!(!our_hook_commands(&repo.join(".claude/settings.json")).is_empty());
    let doctor = || h.doctor(&repo);
    assert!(doctor().contains("wired by settings"), "{}", doctor());

    // The user enables the plugin: doctor sees both, init takes its own out.
    std::fs::write(
        h.env.path().join("config/settings.json"),
        json!({"enabledPlugins": {"wt-tools@wt-tools": true}}).to_string(),
    )
    .unwrap();
    let report = doctor();
    assert!(report.contains("wired twice"), "{report}");
    assert!(
        report.contains("the plugin wt-tools@wt-tools is enabled but not installed"),
        "{report}"
    );
    let out = h.project_ok(&repo, &["init"], true);
    assert!(
        out.contains("memory is wired by the wt-tools plugin (wt-tools@wt-tools is enabled)"),
        "{out}"
    );
    assert!(our_hook_commands(&repo.join(".claude/settings.json")).is_empty());
    assert!(our_hook_commands(&repo.join(".claude/settings.local.json")).is_empty());
    assert!(read(repo.join("CLAUDE.md")).contains("wt-memory:managed start"));
    assert!(
        h.calls()
            .iter()
            .any(|c| c[..2] == ["mcp", "remove"] && c.contains(&"wt-tools".to_string())),
        "{:?}",
        h.calls()
    );
    assert!(
        doctor().contains("wired by the plugin wt-tools@wt-tools"),
        "{}",
        doctor()
    );
    // Installed where Claude Code keeps it: doctor runs its launcher, which finds the programs
    // on PATH (their version is the pinned one).
    let installed = h
        .env
        .path()
        .join("config/plugins/cache/wt-tools/wt-tools/0.1.0");
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    let copied = run(
        std::process::Command::new("cp")
            .arg("-R")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin"))
            .arg(&installed),
        None,
    );
    assert!(copied.status.success());
    let report = doctor();
    assert!(
        report.contains(&format!(
            "the plugin's launcher runs {}",
            bin_path("wt-hook-memory").display()
        )),
        "{report}"
    );
    assert!(h.project_ok(&repo, &["init"], true).contains("no change"));

    // `--hooks settings` wires init's own again, plugin or not.
    h.project_ok(&repo, &["init", "--hooks", "settings"], true);
    assert_eq!(
        our_hook_commands(&repo.join(".claude/settings.json")).len(),
        11
    );
}

#[test]
fn team_plugin_enables_the_plugin_for_everyone_in_the_committed_settings() {
    let h = Harness::new();
    let repo = h.env.git_repo("team");
    h.project_ok(&repo, &["init"], false);
    let out = h.project_ok(&repo, &["init", "--team-plugin", "acme/wt-tools"], false);
    assert!(
        out.contains("enabled for everyone who clones the project"),
        "{out}"
    );
    let s = settings(&repo);
    assert_eq!(
        s["extraKnownMarketplaces"]["wt-tools"]["source"],
        json!({"source": "github", "repo": "acme/wt-tools"})
    );
    assert_eq!(s["enabledPlugins"]["wt-tools@wt-tools"], json!(true));
    assert!(
        our_hook_commands(&repo.join(".claude/settings.json")).is_empty(),
        "{s}"
    );
    // Valid for Claude Code's settings schema.
    let schema =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/schemas/claude-code-settings.json");
    let script = "import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))";
    let out = run(
        std::process::Command::new("python3")
            .args(["-c", script])
            .arg(&schema)
            .arg(repo.join(".claude/settings.json")),
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A local checkout of this repository is a marketplace too.
    let here = env!("CARGO_MANIFEST_DIR");
    h.project_ok(&repo, &["init", "--team-plugin", here], false);
    assert_eq!(
        settings(&repo)["extraKnownMarketplaces"]["wt-tools"]["source"]["source"],
        "directory"
    );
    let out = h.project(&repo, &["init", "--team-plugin", "./no/such/dir"], false);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not owner/repo"));
}
