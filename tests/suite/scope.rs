//! Memory about the person follows them into every project; memory about the project stays in it
//! (`src/scope.rs`, docs/user-guide.md "Two scopes"). Real stores, services, git repositories
//! and hook processes: a personal memory written in repository A is recalled and injected in
//! repository B, after B's own memory on the same subject; it never leaves with A (`sync push`,
//! `export`, `report`); `promote` and `demote` move a memory between the stores and keep its id.

use crate::support;

use serde_json::Value;
use std::path::Path;
use support::{git, prompt_injection, TestEnv};

const PREFERENCE: &str = "The user prefers uv over pip for installing Python packages.";
const PROJECT_RULE: &str =
    "This project installs Python packages with poetry only (poetry add); uv and pip break its lock file.";

fn recall(env: &TestEnv, dir: &Path, query: &str) -> Vec<Value> {
    let v = env.wt_json(dir, &["recall", query, "--limit", "5"], None);
    v.as_array().unwrap().clone()
}

#[test]
fn a_personal_memory_follows_the_user_and_never_leaves_with_the_project() {
    let env = TestEnv::new();
    // Repository A has a remote, so its memory can be pushed.
    let seed = env.git_repo("seed");
    let remote = env.path().join("team.git");
    let (seed_s, remote_s) = (seed.to_str().unwrap(), remote.to_str().unwrap());
    git(env.path(), &["clone", "-q", "--bare", seed_s, remote_s]);
    let a = env.path().join("a");
    git(env.path(), &["clone", "-q", remote_s, a.to_str().unwrap()]);
    let b = env.git_repo("b");

    // Said in A, about the person.
    let id = env.wt_ok(
        &a,
        &["remember", "--scope", "personal", "--type", "Decision"],
        Some(PREFERENCE),
    );
    let id = id.trim().to_string();
    env.remember(
        &a,
        "Invoices in this project are numbered per fiscal year.",
        "Decision",
        "billing",
    );
    assert!(
        env.wt_ok(&a, &["list"], None)
            .contains("numbered per fiscal year")
            && !env.wt_ok(&a, &["list"], None).contains("uv over pip"),
        "the personal memory went to A's store"
    );

    // B recalls it, marked as personal; outside any repository it is there too.
    let found = recall(&env, &b, "which tool should install python packages");
    let first = found.first().expect("recalled in B");
    assert_eq!(first["content"], PREFERENCE);
    assert_eq!(first["scope"], "personal");
    let outside = env.path().join("scratch");
    std::fs::create_dir_all(&outside).unwrap();
    assert!(recall(&env, &outside, "python package installer")
        .iter()
        .any(|r| r["id"] == id.as_str()));

    // B's hook injects it, labelled.
    let context = prompt_injection(
        &env,
        &b,
        "which tool should I use to install the python packages for the scripts?",
        "9d3b2c61-7a0e-4a57-9a1f-000000000001",
    );
    assert!(context.contains("uv over pip"), "{context}");
    assert!(context.contains("(personal"), "{context}");

    // B's own memory on the subject: recall ranks both on one scale, marked; the hook injects
    // the project's first.
    env.remember(&b, PROJECT_RULE, "Decision", "python");
    let found = recall(&env, &b, "how do I install a python package here");
    let scopes: Vec<&str> = found.iter().filter_map(|r| r["scope"].as_str()).collect();
    assert!(
        scopes.contains(&"project") && scopes.contains(&"personal"),
        "{found:?}"
    );
    let context = prompt_injection(
        &env,
        &b,
        "how do I install a python package here?",
        "9d3b2c61-7a0e-4a57-9a1f-000000000002",
    );
    let (own, theirs) = (context.find("poetry only"), context.find("uv over pip"));
    assert!(own.is_some() && theirs.is_some(), "{context}");
    assert!(own < theirs, "the personal memory came first:\n{context}");
    // `--scope project` reads the project's store alone.
    let only = env.wt_json(
        &b,
        &["--scope", "project", "recall", "python packages"],
        None,
    );
    assert!(only
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["content"] != PREFERENCE));

    // Nothing personal leaves with A: sync push, export, report.
    env.wt_ok(&a, &["sync", "push"], None);
    let pushed = git(&remote, &["log", "-p", "wt-memory"]);
    assert!(
        pushed.contains("numbered per fiscal year"),
        "A's push carried nothing"
    );
    assert!(
        !pushed.contains("uv over pip"),
        "a personal memory was pushed:\n{pushed}"
    );
    let exported = env.wt_ok(&a, &["export"], None);
    assert!(exported.contains("numbered per fiscal year") && !exported.contains("uv over pip"));
    let report = env.wt_ok(&a, &["metrics", "--json"], None);
    assert!(!report.contains("uv over pip"), "{report}");

    // The personal store is private, like every store.
    let personal_dir = env.store_root().join("_global");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&personal_dir).unwrap().permissions(),
    );
    assert_eq!(mode & 0o077, 0, "{personal_dir:?} is {mode:o}");
}

#[test]
fn promote_and_demote_move_a_memory_between_the_stores() {
    let env = TestEnv::new();
    let a = env.git_repo("a");
    let b = env.git_repo("b");
    let id = env.remember(
        &a,
        "The user answers code reviews in German.",
        "Learning",
        "style",
    );
    let moved = env.wt_ok(&a, &["promote", &id[..8]], None);
    assert!(
        moved.contains("moved from the project store to the personal store"),
        "{moved}"
    );
    assert!(!env.wt_ok(&a, &["list"], None).contains("in German"));
    let personal = env.wt_json(&b, &["--scope", "personal", "list"], None);
    let record = &personal.as_array().unwrap()[0];
    assert_eq!(record["id"], id.as_str(), "the id is kept");
    assert!(record["tags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "style"));
    // Already there: a second promote says what is wrong.
    let again = env.wt(&a, &["promote", &id], None);
    assert_ne!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("no memory"));
    let back = env.wt_ok(&b, &["demote", &id], None);
    assert!(back.contains("to the project store"), "{back}");
    assert!(env.wt_ok(&b, &["list"], None).contains("in German"));
    let personal = env.wt_json(&b, &["--scope", "personal", "list"], None);
    assert!(personal.as_array().unwrap().is_empty());
}

/// Claude Code's auto-memory notes about the user (`type: user`) go to the personal store, keyed
/// by their full path; one that names a file of the repository stays in the project's, like the
/// other types; a second import changes nothing, a deleted note's memory is forgotten from the
/// store it went to.
#[test]
fn claude_codes_notes_about_the_user_go_to_the_personal_store() {
    let env = TestEnv::new();
    let repo = env.git_repo("automem");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/main.rs"), "fn main() {}\n").unwrap();
    let dir = env.path().join("auto-memory");
    std::fs::create_dir_all(&dir).unwrap();
    let note = |file: &str, kind: &str, body: &str| {
        std::fs::write(
            dir.join(file),
            format!("---\nname: {file}\ndescription: {body}\ntype: {kind}\n---\n\n{body}\n"),
        )
        .unwrap();
    };
    note(
        "user_role.md",
        "user",
        "The user is a data scientist, new to Rust: explain ownership errors step by step.",
    );
    note(
        "user_habit.md",
        "user",
        "The user edits src/main.rs by hand, never with a generator.",
    );
    note(
        "project_freeze.md",
        "project",
        "No merges to main during the release freeze.",
    );
    let dir_arg = dir.to_str().unwrap();
    let first = env.wt_ok(&repo, &["import", "--claude-memory", dir_arg], None);
    assert!(
        first.contains("3 added, 0 updated, 0 forgotten, 0 unchanged"),
        "{first}"
    );
    let personal = env.wt_ok(&repo, &["--scope", "personal", "list"], None);
    let project = env.wt_ok(&repo, &["list"], None);
    assert!(personal.contains("data scientist") && !project.contains("data scientist"));
    assert!(project.contains("src/main.rs") && project.contains("release freeze"));
    assert!(!personal.contains("src/main.rs"));
    let again = env.wt_ok(&repo, &["import", "--claude-memory", dir_arg], None);
    assert!(
        again.contains("0 added, 0 updated, 0 forgotten, 3 unchanged"),
        "{again}"
    );
    std::fs::remove_file(dir.join("user_role.md")).unwrap();
    let gone = env.wt_ok(&repo, &["import", "--claude-memory", dir_arg], None);
    assert!(
        gone.contains("0 added, 0 updated, 1 forgotten, 2 unchanged"),
        "{gone}"
    );
    let personal = env.wt_json(&repo, &["--scope", "personal", "list"], None);
    assert!(personal.as_array().unwrap().is_empty(), "{personal}");
}
