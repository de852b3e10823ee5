//! Code anchors on real repositories and the real store: taken at every write path (they all go
//! through the store's one insert), checked before use (unchanged, changed, gone) by the hooks,
//! `recall` and `audit --stale`, carried by export/import, and given to older memories by the
//! migration. (MCP: tests/suite/mcp.rs.)

use crate::support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use support::{git, run, TestEnv};

/// A repository with `src/billing/invoice.rs` committed.
fn repo(env: &TestEnv) -> PathBuf {
    let repo = env.git_repo("shop");
    std::fs::create_dir_all(repo.join("src/billing")).unwrap();
    std::fs::write(repo.join("src/billing/invoice.rs"), "fn retry() {}\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "billing"]);
    repo
}

fn record_with(env: &TestEnv, repo: &Path, needle: &str) -> Value {
    let listed = env.wt_json(repo, &["list"], None);
    listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["content"].as_str().unwrap().contains(needle))
        .unwrap_or_else(|| panic!("no memory with {needle:?}: {listed}"))
        .clone()
}

fn anchors_of(record: &Value) -> String {
    record["metadata"]["anchors"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn prompt(env: &TestEnv, repo: &Path, session: &str) -> String {
    let payload = json!({
        "session_id": session, "hook_event_name": "UserPromptSubmit",
        "prompt": "where do the invoice retries with exponential backoff live?",
    });
    let mut cmd = env.cmd("wt-hook-memory", repo);
    cmd.arg("UserPromptSubmit").env("CLAUDE_PROJECT_DIR", repo);
    let out = run(&mut cmd, Some(&payload.to_string()));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn anchors_are_taken_at_every_write_path() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let head = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    let blob = git(&repo, &["hash-object", "src/billing/invoice.rs"])
        .trim()
        .to_string();

    // The CLI.
    env.remember(
        &repo,
        "Invoice retries live in src/billing/invoice.rs with exponential backoff",
        "Learning",
        "billing",
    );
    let r = record_with(&env, &repo, "Invoice retries");
    assert_eq!(anchors_of(&r), format!("src/billing/invoice.rs@{blob}"));
    assert_eq!(r["metadata"]["anchor_commit"], head.as_str());
    // A memory naming no file of the repository has none.
    env.remember(&repo, "We deploy on Tuesdays", "Decision", "");
    assert_eq!(anchors_of(&record_with(&env, &repo, "Tuesdays")), "");

    // A hook's commit save: anchored by the files the commit changed (its retrieval key).
    std::fs::write(
        repo.join("src/billing/invoice.rs"),
        "fn retry() { backoff() }\n",
    )
    .unwrap();
    git(&repo, &["commit", "-qam", "Add backoff to the retry loop"]);
    let payload = json!({
        "session_id": "commit", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_use_id": "c1", "tool_input": {"command": "git commit -a -m 'Add backoff to the retry loop'"},
        "tool_response": {"stdout": "[main 1a2b3c4] Add backoff", "stderr": ""},
    });
    let mut cmd = env.cmd("wt-hook-memory", &repo);
    cmd.arg("PostToolUse").env("CLAUDE_PROJECT_DIR", &repo);
    run(&mut cmd, Some(&payload.to_string()));
    let saved = record_with(&env, &repo, "Committed: Add backoff");
    assert!(
        anchors_of(&saved).starts_with("src/billing/invoice.rs@"),
        "{saved}"
    );

    // Import: a record without anchors gets them here; one with anchors keeps its own.
    let doc = json!({"version": 1, "format": "wt-memory-export", "records": [
        {"id": "11111111-2222-4333-8444-555555555555", "content": "The retry cap lives in src/billing/invoice.rs",
         "experience_type": "Learning", "tags": [], "created_at": "2026-01-01T00:00:00Z"},
        {"id": "11111111-2222-4333-8444-666666666666", "content": "Older note on src/billing/invoice.rs from a teammate",
         "experience_type": "Learning", "tags": [], "created_at": "2026-01-01T00:00:00Z",
         "metadata": {"anchors": format!("src/billing/invoice.rs@{blob}")}}
    ]});
    let file = env.path().join("import.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    env.wt_ok(&repo, &["import", file.to_str().unwrap()], None);
    let fresh = record_with(&env, &repo, "The retry cap");
    assert!(anchors_of(&fresh).starts_with("src/billing/invoice.rs@"));
    assert_ne!(
        anchors_of(&fresh),
        format!("src/billing/invoice.rs@{blob}"),
        "taken now"
    );
    let carried = record_with(&env, &repo, "from a teammate");
    assert_eq!(
        anchors_of(&carried),
        format!("src/billing/invoice.rs@{blob}")
    );
}

#[test]
fn a_changed_or_vanished_file_is_said_before_the_memory_is_used() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let id = env.remember(
        &repo,
        "Invoice retries live in src/billing/invoice.rs with exponential backoff",
        "Learning",
        "billing",
    );
    let short = &id[..4];
    // Unchanged: injected as it is.
    let said = prompt(&env, &repo, "s1");
    assert!(
        said.contains(&format!("[MEM#{short}] Invoice retries live in")),
        "{said}"
    );
    assert_eq!(
        env.wt_ok(&repo, &["audit", "--stale"], None).trim(),
        "No memory names a file that changed or vanished since it was written."
    );

    // Changed: the line says so first; recall's reason and audit --stale too.
    std::fs::write(repo.join("src/billing/invoice.rs"), "fn retry_twice() {}\n").unwrap();
    let said = prompt(&env, &repo, "s2");
    assert!(
        said.contains(&format!(
            "[MEM#{short}] (src/billing/invoice.rs changed since) Invoice retries"
        )),
        "{said}"
    );
    let found = env.wt_json(&repo, &["recall", "invoice retries backoff"], None);
    assert!(
        found[0]["relevance_reason"]
            .as_str()
            .unwrap()
            .ends_with("; src/billing/invoice.rs changed since"),
        "{found}"
    );
    let stale = env.wt_json(&repo, &["audit", "--stale", "--json"], None);
    assert_eq!(stale[0]["id"], id.as_str());
    assert_eq!(stale[0]["changed"], json!(["src/billing/invoice.rs"]));
    // The metrics report lists it.
    let metrics = env.wt_json(&repo, &["metrics", "--json"], None);
    assert_eq!(metrics["stale"][0]["id"], id.as_str());

    // Gone: not injected in full; listed in the index at most, marked.
    std::fs::remove_file(repo.join("src/billing/invoice.rs")).unwrap();
    let said = prompt(&env, &repo, "s3");
    assert!(!said.contains("- [MEM#"), "{said}");
    assert!(
        said.contains("(src/billing/invoice.rs gone) Invoice retries"),
        "{said}"
    );
    let stale = env.wt_json(&repo, &["audit", "--stale", "--json"], None);
    assert_eq!(stale[0]["gone"], json!(["src/billing/invoice.rs"]));
    // Back as it was: fresh again.
    std::fs::write(repo.join("src/billing/invoice.rs"), "fn retry() {}\n").unwrap();
    assert_eq!(
        env.wt_json(&repo, &["audit", "--stale", "--json"], None),
        json!([])
    );
}

#[test]
fn older_memories_get_anchors_by_the_migration() {
    let env = TestEnv::new();
    let repo = env.git_repo("older");
    // Written before the file existed (as before anchors existed): no anchor.
    env.remember(&repo, "The schema lives in db/schema.sql", "Context", "");
    assert_eq!(anchors_of(&record_with(&env, &repo, "schema lives")), "");
    std::fs::create_dir_all(repo.join("db")).unwrap();
    std::fs::write(repo.join("db/schema.sql"), "create table t();\n").unwrap();
    // The store as an older version left it: only the first migration applied.
    let stop = env.wt(&repo, &["daemon", "stop"], None);
    assert!(stop.status.success());
    let store = env.store_dir_of("older");
    std::fs::write(
        store.join(".migrations"),
        r#"{"applied":["001"],"last_run":"2026-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    let out = env.wt(&repo, &["list"], None);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Migrating"));
    let r = record_with(&env, &repo, "schema lives");
    assert!(anchors_of(&r).starts_with("db/schema.sql@"), "{r}");
}

/// Learning from use (issue 47): `audit` lists for review a memory older than the use window,
/// never used in it, whose file changed; a recent one about the same file is not listed, and
/// nothing is deleted.
#[test]
fn audit_lists_an_old_unused_memory_whose_file_changed() {
    let env = TestEnv::new();
    let repo = repo(&env);
    env.remember(
        &repo,
        "Invoice retries live in src/billing/invoice.rs: three attempts",
        "Learning",
        "",
    );
    // The same memory as if written in March: exported, dated back, imported again.
    let mut export = env.wt_json(&repo, &["export"], None);
    export["records"][0]["created_at"] = json!("2026-03-01T10:00:00Z");
    let old_id = export["records"][0]["id"].as_str().unwrap().to_string();
    let file = repo.join("old.json");
    std::fs::write(&file, export.to_string()).unwrap();
    env.wt_ok(&repo, &["forget", "--all", "--confirm"], None);
    env.wt_ok(&repo, &["import", file.to_str().unwrap()], None);
    let recent = env.remember(
        &repo,
        "Invoice numbers are assigned in src/billing/invoice.rs, never reused",
        "Decision",
        "",
    );
    let listed = |env: &TestEnv| -> Vec<String> {
        env.wt_json(&repo, &["audit", "--json"], None)["review"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(listed(&env).is_empty(), "the file has not changed yet");
    std::fs::write(
        repo.join("src/billing/invoice.rs"),
        "fn retry() { todo!() }\n",
    )
    .unwrap();
    assert_eq!(listed(&env), [old_id], "not {recent}");
    let text = env.wt_ok(&repo, &["audit"], None);
    assert!(
        text.contains("To review (1)") && text.contains("src/billing/invoice.rs"),
        "{text}"
    );
    assert_eq!(
        env.wt_json(&repo, &["list"], None)
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
