//! The repeat-mistake guard through the real hook handler and the real store: failures recorded
//! at PostToolUseFailure (one record per signature), a fix linked when another form of the
//! command works, warnings at PreToolUse on the set in `testdata/guard/cases.json`, the counts in
//! `metrics --json`, and failure records kept out of ordinary injections.

use crate::support;

use serde_json::{json, Value};
use std::path::Path;
use support::{run, TestEnv};

fn hook(env: &TestEnv, repo: &Path, event: &str, args: &[&str], payload: &Value) -> String {
    let mut cmd = env.cmd("wt-hook-memory", repo);
    cmd.arg(event).args(args).env("CLAUDE_PROJECT_DIR", repo);
    let out = run(&mut cmd, Some(&payload.to_string()));
    assert_eq!(out.status.code(), Some(0));
    String::from_utf8(out.stdout).unwrap()
}

fn fail(env: &TestEnv, repo: &Path, session: &str, call: &str, command: &str, error: &str) {
    let payload = json!({
        "session_id": session, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
        "tool_use_id": call, "tool_input": {"command": command}, "error": error,
    });
    hook(env, repo, "PostToolUseFailure", &[], &payload);
}

fn succeed(env: &TestEnv, repo: &Path, session: &str, call: &str, command: &str) {
    let payload = json!({
        "session_id": session, "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_use_id": call, "tool_input": {"command": command},
        "tool_response": {"stdout": "ok", "stderr": "", "interrupted": false},
    });
    hook(env, repo, "PostToolUse", &[], &payload);
}

/// The guard's reason for stopping `command` before it runs ("" when it lets it run). A stop is
/// always a `deny` with its reason and no other output (Claude Code's PreToolUse contract).
fn before(env: &TestEnv, repo: &Path, session: &str, call: &str, command: &str) -> String {
    let payload = json!({
        "session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_use_id": call, "tool_input": {"command": command},
    });
    let out = hook(env, repo, "PreToolUse", &["--guard-only"], &payload);
    if out.trim().is_empty() {
        return String::new();
    }
    let v: Value = serde_json::from_str(&out).unwrap();
    let specific = v["hookSpecificOutput"].as_object().unwrap();
    assert_eq!(specific["hookEventName"], "PreToolUse", "{out}");
    assert_eq!(specific["permissionDecision"], "deny", "{out}");
    assert!(!specific.contains_key("additionalContext"), "{out}");
    specific["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string()
}

fn failure_records(env: &TestEnv, repo: &Path) -> Vec<Value> {
    let listed = env.wt_json(repo, &["list", "--limit", "200"], None);
    listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["tags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "auto-failure")
        })
        .cloned()
        .collect()
}

#[test]
fn the_guard_warns_before_repeats_and_stays_quiet_otherwise() {
    let env = TestEnv::new();
    let repo = env.git_repo("guarded");
    env.remember(
        &repo,
        "The API gateway listens on port 8443 in every environment",
        "Context",
        "",
    );
    let set: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/guard/cases.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let failures = set["failures"].as_array().unwrap();
    for (i, f) in failures.iter().enumerate() {
        let (command, error) = (f["command"].as_str().unwrap(), f["error"].as_str().unwrap());
        fail(
            &env,
            &repo,
            &format!("fail-{i}"),
            &format!("f{i}"),
            command,
            error,
        );
    }
    assert_eq!(
        failure_records(&env, &repo).len(),
        failures.len(),
        "one record per failure"
    );
    let command_of = |id: &str| {
        failures.iter().find(|f| f["id"] == id).unwrap()["command"]
            .as_str()
            .unwrap()
            .to_string()
    };

    let (mut repeats, mut hits, mut quiet_cases, mut false_warnings) = (0, 0, 0, 0);
    let mut misses = Vec::new();
    // A guard that failed open would pass for a quiet one: the log tells them apart.
    let log = support::HookLog::mark(&env);
    for (i, p) in set["probes"].as_array().unwrap().iter().enumerate() {
        let command = p["command"].as_str().unwrap();
        let said = before(
            &env,
            &repo,
            &format!("probe-{i}"),
            &format!("p{i}"),
            command,
        );
        match p["warn"].as_str() {
            Some(id) => {
                repeats += 1;
                if said.contains(&format!("`{}`", command_of(id))) {
                    hits += 1;
                } else {
                    misses.push(format!("{command}: {said:?}"));
                }
            }
            None => {
                quiet_cases += 1;
                if !said.is_empty() {
                    false_warnings += 1;
                    misses.push(format!("{command} (should be quiet): {said:?}"));
                }
            }
        }
    }
    log.assert_clean("the guard on the probes");
    let hit_rate = hits as f64 / repeats as f64;
    let false_rate = false_warnings as f64 / quiet_cases as f64;
    eprintln!(
        "guard: {hits}/{repeats} repeats warned ({hit_rate:.2}), {false_warnings}/{quiet_cases} unrelated commands warned ({false_rate:.2})"
    );
    assert!(repeats >= 20 && quiet_cases >= 20);
    assert!(hit_rate >= 0.9, "guard hit {hit_rate:.2}: {misses:#?}");
    assert!(
        false_rate <= 0.1,
        "false warnings {false_rate:.2}: {misses:#?}"
    );

    // The counts: every failure once, every warning, and a mistake that comes back after a
    // warning in the same session.
    let warned_session = "probe-0";
    let first = &failures[0];
    fail(
        &env,
        &repo,
        warned_session,
        "again",
        "cargo test -p auth --features postgres --release",
        // The same mistake: only the port and the error number differ.
        &first["error"].as_str().unwrap().replace("5432", "5433"),
    );
    assert_eq!(
        failure_records(&env, &repo).len(),
        failures.len(),
        "a repeat adds no record"
    );
    // It refreshes the one record: counted, with the latest form of the command.
    let record = failure_records(&env, &repo)
        .into_iter()
        .find(|r| {
            r["content"]
                .as_str()
                .unwrap()
                .contains(first["command"].as_str().unwrap())
        })
        .unwrap();
    assert_eq!(record["metadata"]["failure_count"], "2", "{record}");
    assert_eq!(
        record["metadata"]["failure_command"],
        "cargo test -p auth --features postgres --release"
    );
    let said = before(
        &env,
        &repo,
        "later",
        "l1",
        "cargo test -p auth --features postgres",
    );
    assert!(
        said.contains("(2 times; last: `cargo test -p auth --features postgres --release`)"),
        "{said}"
    );
    let metrics = env.wt_json(&repo, &["metrics", "--json"], None);
    let m = &metrics["repeat_mistakes"];
    assert_eq!(m["failures"], json!(failures.len() + 1), "{m}");
    assert_eq!(m["repeated"], json!(1), "{m}");
    assert_eq!(m["repeated_after_guard"], json!(1), "{m}");
    // Every warning of the set, and the one after the repeat.
    assert_eq!(m["guarded"], json!(hits + false_warnings + 1), "{m}");
    assert!(m["signatures"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["head"] == "cargo test"));

    // Failure records stay out of ordinary injections.
    let prompt = json!({
        "session_id": "prompt", "hook_event_name": "UserPromptSubmit",
        "prompt": "why does cargo test -p auth --features postgres fail to connect to the server?",
    });
    let said = hook(&env, &repo, "UserPromptSubmit", &[], &prompt);
    assert!(!said.contains("failed: error: could not connect"), "{said}");
}

#[test]
fn a_form_that_works_is_stored_as_the_fix_and_shown_with_the_warning() {
    let env = TestEnv::new();
    let repo = env.git_repo("fixes");
    fail(
        &env,
        &repo,
        "s1",
        "t1",
        "npm run build",
        "Exit code 1\nError: Cannot find module 'webpack-cli'",
    );
    // The same command again is no fix; another form of it that works is.
    succeed(&env, &repo, "s1", "t2", "npm run build");
    succeed(&env, &repo, "s1", "t3", "npx --yes webpack-cli build");
    succeed(
        &env,
        &repo,
        "s1",
        "t4",
        "npm run build -- --config webpack.prod.js",
    );
    let fixes: Vec<Value> = failure_records(&env, &repo)
        .into_iter()
        .filter(|r| {
            r["tags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "failure-fix")
        })
        .collect();
    assert_eq!(fixes.len(), 1, "{fixes:?}");
    assert_eq!(
        fixes[0]["metadata"]["fix_command"],
        "npm run build -- --config webpack.prod.js"
    );
    let said = before(&env, &repo, "s2", "t5", "npm run build");
    assert!(
        said.starts_with("=== MEMORY: This command failed before ===\n- [MEM#"),
        "{said}"
    );
    assert!(said.contains("Cannot find module 'webpack-cli'"), "{said}");
    assert!(
        said.contains("What worked: `npm run build -- --config webpack.prod.js`"),
        "{said}"
    );
    // A memory someone wrote about a failing command guards too.
    env.remember(
        &repo,
        "Never run `terraform apply -auto-approve` against prod: it skips the plan review",
        "Decision",
        "failure,terraform",
    );
    let said = before(
        &env,
        &repo,
        "s3",
        "t6",
        "terraform apply -auto-approve -var-file=prod.tfvars",
    );
    assert!(said.contains("skips the plan review"), "{said}");
    support::assert_silent(&env, "terraform fmt", || {
        before(&env, &repo, "s3", "t7", "terraform fmt")
    });
}

/// The guard stops a repeat once per session, before it runs; the same command tried again in
/// that session runs (the agent decided), and if it then works the stop counts as a false fire.
/// The failure is the real client's shape for `npm run build` (issue 43): `Exit code N`, the
/// script's banner, the wrapper's verdict, then the line that names the error.
#[test]
fn a_repeat_is_stopped_once_per_session_with_the_line_that_names_the_error() {
    let env = TestEnv::new();
    let repo = env.git_repo("stopped");
    let error = "Exit code 1\n\n> shopapp@0.4.0 build\n> vite build\n\nCommand failed with exit code 1\n\
                 Error: Cannot find module 'vite-plugin-checker'\nRequire stack:\n- /home/u/shopapp/vite.config.ts\n\
                 npm ERR! code ELIFECYCLE";
    fail(&env, &repo, "s1", "t1", "npm run build", error);
    // The session that saw the failure is not stopped from trying again: it has the error.
    support::assert_silent(&env, "a retry in the session that saw the failure", || {
        before(&env, &repo, "s1", "t2", "npm run build -- --debug")
    });
    succeed(
        &env,
        &repo,
        "s1",
        "t2",
        "npm install -D vite-plugin-checker && npm run build",
    );
    let records = failure_records(&env, &repo);
    let failed = records
        .iter()
        .find(|r| r["metadata"]["fix_command"].is_null())
        .unwrap();
    assert_eq!(
        failed["content"],
        "Command `npm run build` failed: Error: Cannot find module 'vite-plugin-checker'"
    );

    let said = before(&env, &repo, "s2", "t3", "npm run build");
    assert!(
        said.contains("Cannot find module 'vite-plugin-checker'") && !said.contains("exit code 1"),
        "{said}"
    );
    assert!(said.contains("run the same command again"), "{said}");
    // The agent read it and runs the command anyway: not stopped twice in one session.
    support::assert_silent(&env, "the same command again in that session", || {
        before(&env, &repo, "s2", "t4", "npm run build")
    });
    // ...and it worked: the stop was a false fire.
    succeed(&env, &repo, "s2", "t4", "npm run build");
    // Another session is stopped again.
    assert!(!before(&env, &repo, "s3", "t5", "npm run build").is_empty());
    let metrics = env.wt_json(&repo, &["metrics", "--json"], None);
    let m = &metrics["repeat_mistakes"];
    assert_eq!(m["prevented"], json!(2), "{m}");
    assert_eq!(m["false_fires"], json!(1), "{m}");
}
