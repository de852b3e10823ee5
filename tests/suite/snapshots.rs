//! Undo for destructive operations (issue 14, item 3): a snapshot of the store before forget of
//! several memories, cleanup, dedup, import, migrations, reembed and sync pull; `restore --list`
//! and `restore [NAME]`. Stores are seeded by importing a prepared export (one process) rather than
//! one `remember` each.

use crate::support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use support::TestEnv;

/// An export document (format wt-memory-export v1) of `(id suffix, content, tags)`.
fn export_doc(records: &[(u32, &str, &[&str])]) -> String {
    let records: Vec<Value> = records
        .iter()
        .map(|(n, content, tags)| {
            json!({
                "id": id(*n),
                "content": content,
                "experience_type": "Learning",
                "tags": tags,
                "importance": 0.5 + (*n as f64) / 100.0,
                "created_at": format!("2025-03-{:02}T10:00:00.000Z", n % 28 + 1),
                "metadata": {"source": format!("seed-{n}")},
                "entities": [],
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({
        "version": 1,
        "format": "wt-memory-export",
        "project": "seed",
        "exported_at": "2025-03-30T00:00:00.000Z",
        "count": records.len(),
        "records": records,
    }))
    .unwrap()
}

fn id(n: u32) -> String {
    format!("0000{n:04}-1111-4222-8333-444455556666")
}

fn import(env: &TestEnv, repo: &Path, name: &str, records: &[(u32, &str, &[&str])]) -> Value {
    let file = env.path().join(format!("{name}.json"));
    std::fs::write(&file, export_doc(records)).unwrap();
    env.wt_json(repo, &["import", file.to_str().unwrap()], None)
}

fn store_dir(env: &TestEnv) -> PathBuf {
    store_of(env, "")
}

/// The one store whose directory name starts with `prefix` (a repository's directory name).
fn store_of(env: &TestEnv, prefix: &str) -> PathBuf {
    let stores: Vec<PathBuf> = std::fs::read_dir(env.store_root())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            p.is_dir() && !name.starts_with('.') && name.starts_with(prefix)
        })
        .collect();
    assert_eq!(stores.len(), 1, "one store: {stores:?}");
    stores[0].clone()
}

/// Snapshot file names, oldest first.
fn snapshots(env: &TestEnv) -> Vec<String> {
    snapshots_in(&store_dir(env))
}

fn snapshots_in(store: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(store.join("snapshots"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn list(env: &TestEnv, repo: &Path) -> Vec<Value> {
    env.wt_json(repo, &["list", "--limit", "1000"], None)
        .as_array()
        .unwrap()
        .clone()
}

fn ids(env: &TestEnv, repo: &Path) -> Vec<String> {
    let mut ids: Vec<String> = list(env, repo)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

fn health_ok(env: &TestEnv, repo: &Path) {
    let out = env.wt(repo, &["health"], None);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "health: {} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

const SEED: [(u32, &str, &[&str]); 6] = [
    (
        1,
        "Release builds are cut from the release branches only",
        &["release"],
    ),
    (
        2,
        "Tag releases with a signed annotated git tag",
        &["release", "git"],
    ),
    (
        3,
        "The changelog is generated from conventional commits at release",
        &["release"],
    ),
    (
        4,
        "Integration tests need a running Redis on port 6380",
        &["tests"],
    ),
    (
        5,
        "Feature flags are read from flags.toml at process start",
        &["config", "todo"],
    ),
    (
        6,
        "The auth crate hashes secrets with argon2id, never bcrypt",
        &["auth"],
    ),
];

#[test]
fn forget_by_tags_then_restore_brings_them_back_with_their_ids() {
    let env = TestEnv::new();
    let repo = env.git_repo("app");
    assert_eq!(import(&env, &repo, "seed", &SEED)["imported"], 6);
    assert!(
        snapshots(&env).is_empty(),
        "an empty store takes no snapshot"
    );
    let before = list(&env, &repo);
    let before_ids = ids(&env, &repo);

    // One id: no snapshot needed.
    env.wt_json(&repo, &["forget", &id(6)], None);
    assert!(
        snapshots(&env).is_empty(),
        "single-id forget: {:?}",
        snapshots(&env)
    );
    let before: Vec<Value> = before.into_iter().filter(|r| r["id"] != id(6)).collect();
    let before_ids: Vec<String> = before_ids.into_iter().filter(|i| *i != id(6)).collect();

    let gone = env.wt_json(&repo, &["forget", "--tags", "release"], None);
    assert_eq!(gone["deleted_count"], 3);
    let snaps = snapshots(&env);
    assert_eq!(snaps.len(), 1, "{snaps:?}");
    assert!(snaps[0].ends_with("-forget.json"), "{snaps:?}");
    assert_eq!(list(&env, &repo).len(), 2);

    let out = env.wt_ok(&repo, &["restore"], None);
    assert!(out.contains("Re-inserted 3 missing memories"), "{out}");
    assert!(out.contains("Deleted 0 memories"), "{out}");
    assert!(out.lines().all(|l| !l.trim().is_empty()), "{out}");
    assert_eq!(ids(&env, &repo), before_ids, "same ids");
    let mut after = list(&env, &repo);
    let mut before = before;
    for v in [&mut after, &mut before] {
        v.sort_by_key(|r| r["id"].as_str().unwrap().to_string());
        for r in v.iter_mut() {
            let r = r.as_object_mut().unwrap();
            r.remove("access_count");
            r.remove("last_accessed");
        }
    }
    assert_eq!(
        after, before,
        "created_at, importance, tags, metadata come back"
    );
    health_ok(&env, &repo);

    // The restore took its own snapshot (of the 2 memories left), so it can be undone.
    let listed = env.wt_json(&repo, &["restore", "--list", "--json"], None);
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["operation"], "restore");
    assert_eq!(listed[0]["count"], 2);
    assert_eq!(listed[1]["operation"], "forget");
    assert_eq!(listed[1]["count"], 5);
    let undo = listed[0]["name"].as_str().unwrap();
    let out = env.wt_ok(&repo, &["restore", undo], None);
    assert!(out.contains("Deleted 3 memories"), "{out}");
    assert_eq!(ids(&env, &repo), vec![id(4), id(5)]);
    health_ok(&env, &repo);

    // `todo clear` deletes every todo: a snapshot too.
    let out = env.wt_ok(&repo, &["todo", "clear", "--confirm"], None);
    assert_eq!(out.trim(), "Cleared 1 todos.");
    let snaps = snapshots(&env);
    assert!(
        snaps.last().unwrap().ends_with("-todo-clear.json"),
        "{snaps:?}"
    );
}

#[test]
fn import_then_restore_removes_the_imported_and_bad_names_change_nothing() {
    let env = TestEnv::new();
    let repo = env.git_repo("app");
    import(&env, &repo, "seed", &SEED[..3]);
    let file = env.path().join("more.json");
    std::fs::write(&file, export_doc(&SEED[3..])).unwrap();
    let dry = env.wt_json(
        &repo,
        &["import", file.to_str().unwrap(), "--dry-run"],
        None,
    );
    assert_eq!(dry["would_import"], 3);
    assert!(snapshots(&env).is_empty(), "a dry run takes none");
    assert_eq!(import(&env, &repo, "seed-again", &SEED[..3])["skipped"], 3);
    assert!(
        snapshots(&env).is_empty(),
        "an import that adds nothing takes none"
    );
    assert_eq!(
        env.wt_json(&repo, &["import", file.to_str().unwrap()], None)["imported"],
        3
    );
    let snaps = snapshots(&env);
    assert_eq!(snaps.len(), 1);
    assert!(snaps[0].ends_with("-import.json"), "{snaps:?}");

    // `restore --list`: one line per snapshot, newest first.
    let out = env.wt_ok(&repo, &["restore", "--list"], None);
    let name = snaps[0].trim_end_matches(".json");
    assert_eq!(out.lines().count(), 1, "{out}");
    let line = out.lines().next().unwrap();
    assert!(line.starts_with(name), "{line}");
    assert!(
        line.contains(" import ") && line.ends_with("3 memories"),
        "{line}"
    );
    assert!(line.contains("T") && line.contains("Z"), "the time: {line}");

    // An unknown name: one line, exit 1, nothing changed.
    let out = env.wt(&repo, &["restore", "20250101T000000.000Z-nope"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("wt-memory: restore: no snapshot named") && err.contains("--list"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    assert_eq!(list(&env, &repo).len(), 6);
    assert_eq!(snapshots(&env), snaps);

    let out = env.wt_ok(&repo, &["restore", name], None);
    assert!(out.contains("Deleted 3 memories"), "{out}");
    assert!(out.contains(": 3 memories"), "{out}");
    assert_eq!(ids(&env, &repo), vec![id(1), id(2), id(3)]);
    health_ok(&env, &repo);
}

#[test]
fn every_destructive_command_snapshots_and_only_five_are_kept() {
    let env = TestEnv::new();
    let repo = env.git_repo("app");
    let seed: [(u32, &str, &[&str]); 8] = [
        (
            1,
            "Run cargo sqlx prepare before pushing or CI fails offline",
            &["sqlx"],
        ),
        (
            2,
            "Run cargo sqlx prepare before pushing, or CI fails offline!",
            &["ci"],
        ),
        (3, "tiny", &[]),
        (
            4,
            "Integration tests need a running Redis on port 6380",
            &["tests"],
        ),
        (
            5,
            "Feature flags are read from flags.toml at process start",
            &["old"],
        ),
        (
            6,
            "The auth crate hashes secrets with argon2id, never bcrypt",
            &["auth"],
        ),
        (
            7,
            "Session tokens expire after 30 minutes of inactivity",
            &["auth"],
        ),
        (8, "TKT-1234 tracks the flaky login test on CI", &[]),
    ];
    import(&env, &repo, "seed", &seed);
    let count = |n: usize, op: &str| {
        let snaps = snapshots(&env);
        assert_eq!(snaps.len(), n, "after {op}: {snaps:?}");
        assert!(
            snaps.last().unwrap().ends_with(&format!("-{op}.json")),
            "after {op}: {snaps:?}"
        );
    };
    env.wt_json(&repo, &["cleanup", "--dry-run"], None);
    env.wt_json(&repo, &["dedup", "--dry-run"], None);
    assert!(snapshots(&env).is_empty(), "dry runs take none");

    assert_eq!(env.wt_json(&repo, &["cleanup"], None)["deleted_count"], 1);
    count(1, "cleanup");
    let done = env.wt_json(&repo, &["dedup"], None);
    assert_eq!(done, json!({"deleted_count": 1, "merged_count": 1}));
    count(2, "dedup");
    // Nothing to delete: no snapshot.
    env.wt_json(&repo, &["cleanup"], None);
    env.wt_json(&repo, &["dedup"], None);
    env.wt_json(&repo, &["forget", "--tags", "nosuchtag"], None);
    assert_eq!(snapshots(&env).len(), 2);

    assert_eq!(
        env.wt_json(&repo, &["forget", "--pattern", "TKT-\\d+"], None)["deleted_count"],
        1
    );
    count(3, "forget");
    // A store that still has migration 001 to run snapshots before migrating.
    let marks = store_dir(&env).join(".migrations");
    std::fs::write(&marks, r#"{"applied": [], "last_run": ""}"#).unwrap();
    env.wt_ok(&repo, &["migrate"], None);
    count(4, "migrate");
    env.wt_ok(&repo, &["reembed"], None);
    count(5, "reembed");
    let first = snapshots(&env)[0].clone();
    assert_eq!(
        env.wt_json(&repo, &["forget", "--tags", "auth"], None)["deleted_count"],
        2
    );
    count(5, "forget");
    assert!(!snapshots(&env).contains(&first), "the oldest goes");
    let ops: Vec<String> = env
        .wt_json(&repo, &["restore", "--list", "--json"], None)
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["operation"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ops, ["forget", "reembed", "migrate", "forget", "dedup"]);

    // Restoring the pre-dedup snapshot gives back the deleted twin and the survivor's own tags.
    let list_json = env.wt_json(&repo, &["restore", "--list", "--json"], None);
    let dedup_snap = list_json[4]["name"].as_str().unwrap().to_string();
    let out = env.wt_ok(&repo, &["restore", &dedup_snap], None);
    assert!(out.contains("Re-inserted"), "{out}");
    let restored = ids(&env, &repo);
    assert_eq!(
        restored,
        [1, 2, 4, 5, 6, 7, 8].map(id).to_vec(),
        "everything but the cleaned-up note"
    );
    let survivor = env.wt_json(&repo, &["get", &id(2)], None);
    assert_eq!(survivor["tags"], json!(["ci"]), "tags as before the merge");
    health_ok(&env, &repo);
}

fn clone_as(env: &TestEnv, remote: &Path, dir: &str, user_name: &str) -> PathBuf {
    let repo = env.path().join(dir);
    support::git(
        env.path(),
        &[
            "clone",
            "-q",
            remote.to_str().unwrap(),
            repo.to_str().unwrap(),
        ],
    );
    support::git(&repo, &["config", "user.name", user_name]);
    support::git(
        &repo,
        &["config", "user.email", &format!("{dir}@example.com")],
    );
    repo
}

fn sync(env: &TestEnv, repo: &Path, args: &[&str]) -> String {
    let mut cmd = env.cmd("wt-memory", repo);
    cmd.arg("sync").args(args).env("WT_MEMORY_MACHINE", "box");
    let out = support::run(&mut cmd, None);
    assert!(
        out.status.success(),
        "sync {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn sync_pull_takes_one_snapshot_for_all_its_sources() {
    let env = TestEnv::new();
    let seed = env.git_repo("seed");
    let remote = env.path().join("remote.git");
    support::git(
        env.path(),
        &[
            "clone",
            "-q",
            "--bare",
            seed.to_str().unwrap(),
            remote.to_str().unwrap(),
        ],
    );
    let alice = clone_as(&env, &remote, "alice", "Alice");
    let carol = clone_as(&env, &remote, "carol", "Carol");
    let bob = clone_as(&env, &remote, "bob", "Bob");
    import(&env, &alice, "alice", &SEED[..2]);
    import(&env, &carol, "carol", &SEED[2..4]);
    import(&env, &bob, "bob", &SEED[4..]);
    sync(&env, &alice, &["push"]);
    sync(&env, &carol, &["push"]);

    let out = sync(&env, &bob, &["pull"]);
    assert!(out.contains("Total: 4 new"), "{out}");
    let bob_store = store_of(&env, "bob-");
    let snaps = snapshots_in(&bob_store);
    assert_eq!(
        snaps.len(),
        1,
        "one per pull, not one per source: {snaps:?}"
    );
    assert!(snaps[0].ends_with("-sync-pull.json"), "{snaps:?}");

    // Undo the pull.
    env.wt_ok(&bob, &["restore"], None);
    assert_eq!(ids(&env, &bob), vec![id(5), id(6)]);
}

#[test]
fn a_large_import_goes_in_parts_with_progress_and_one_undo_snapshot() {
    let env = TestEnv::new();
    let repo = env.git_repo("big");
    env.remember(&repo, "The store exists before the import", "Context", "");
    let records: Vec<Value> = (0..1201)
        .map(|i| json!({"id": format!("00000000-0000-4000-8000-{i:012}"), "content": format!("note {i} on topic {}", i % 7), "experience_type": "Context"}))
        .collect();
    let doc = json!({"version": 1, "format": "wt-memory-export", "records": records});
    let file = env.path().join("big.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = env.wt(&repo, &["import", file.to_str().unwrap()], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["imported"], 1201, "{report}");
    let progress = String::from_utf8_lossy(&out.stderr);
    for line in [
        "import: 1000 of 1201 records",
        "import: 1201 of 1201 records",
    ] {
        assert!(progress.contains(line), "{progress}");
    }
    let listed = env.wt_json(&repo, &["restore", "--list", "--json"], None);
    let listed = listed.as_array().unwrap();
    assert_eq!(
        listed.len(),
        1,
        "one undo snapshot for the whole import: {listed:?}"
    );
    assert_eq!(listed[0]["count"], 1, "taken before the first part");
    // A small import says nothing on stderr.
    let small = env.path().join("small.json");
    let doc = json!({"version": 1, "format": "wt-memory-export", "records": [{"id": "00000000-0000-4000-9000-000000000001", "content": "one more note", "experience_type": "Context"}]});
    std::fs::write(&small, doc.to_string()).unwrap();
    let out = env.wt(&repo, &["import", small.to_str().unwrap()], None);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), "");
}
