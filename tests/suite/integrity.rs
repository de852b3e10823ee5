//! Loss is never silent (issue 14, item 2): a real store with 10 memories, damaged the way a crash
//! or a bad disk would, then `health`, `doctor`, every command's warning, the hook's silence and
//! `repair`.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use support::TestEnv;

const NOTES: [&str; 10] = [
    "cargo build needs libclang-dev for the RocksDB bindings",
    "The auth crate hashes secrets with argon2id, never bcrypt",
    "CI runs cargo test with --test-threads=2 on the shared runners",
    "Postgres migrations live in crates/db/migrations and run at start-up",
    "The web crate serves static files from web/public with a one-day cache",
    "Session tokens expire after 30 minutes of inactivity",
    "Release builds are cut from the release/* branches only",
    "Feature flags are read from flags.toml at process start",
    "The login handler must update users.last_login in the same transaction",
    "Integration tests need a running Redis on port 6380",
];

struct Seeded {
    repo: PathBuf,
    store: PathBuf,
}

fn seeded(env: &TestEnv) -> Seeded {
    let repo = env.git_repo("proj");
    for (i, note) in NOTES.iter().enumerate() {
        let ty = if i % 2 == 0 { "Learning" } else { "Decision" };
        env.remember(&repo, note, ty, "");
    }
    let stores: Vec<PathBuf> = std::fs::read_dir(env.store_root())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(stores.len(), 1, "one store: {stores:?}");
    let s = Seeded {
        repo,
        store: stores[0].clone(),
    };
    assert_eq!(list(env, &s).len(), 10);
    s
}

fn list(env: &TestEnv, s: &Seeded) -> Vec<Value> {
    env.wt_json(&s.repo, &["list", "--limit", "1000"], None)
        .as_array()
        .unwrap()
        .clone()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn nonempty_lines(s: &str) -> Vec<&str> {
    s.lines().filter(|l| !l.trim().is_empty()).collect()
}

fn log_text(env: &TestEnv) -> String {
    std::fs::read_to_string(env.path().join("state/wt-tools/wt-hook-memory.log"))
        .unwrap_or_default()
}

/// The SST file holding the newest memory: of the SSTs whose bytes contain its key (the 16 bytes
/// of its id), the largest (the memory's record; the others hold small index entries); the
/// largest SST if no file shows the key.
fn sst_of_newest_memory(store: &Path, newest_id: &str) -> PathBuf {
    let key = uuid::Uuid::parse_str(newest_id).unwrap();
    let key = key.as_bytes();
    let mut ssts: Vec<(u64, PathBuf)> = std::fs::read_dir(store.join("storage"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .map(|p| (std::fs::metadata(&p).unwrap().len(), p))
        .collect();
    ssts.sort();
    let holding: Vec<&(u64, PathBuf)> = ssts
        .iter()
        .filter(|(_, p)| {
            std::fs::read(p)
                .unwrap()
                .windows(key.len())
                .any(|w| w == key)
        })
        .collect();
    holding
        .last()
        .copied()
        .or(ssts.last())
        .expect("the store has SST files")
        .1
        .clone()
}

fn run_hook(env: &TestEnv, repo: &Path, event: &str, payload: &[u8]) -> Output {
    use std::io::Write;
    let mut cmd = env.cmd("wt-hook-memory", repo);
    cmd.arg(event)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn wt-hook-memory");
    let mut pipe = child.stdin.take().unwrap();
    let bytes = payload.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&bytes);
    });
    let out = child.wait_with_output().expect("wait");
    let _ = writer.join();
    out
}

fn post_tool_use_payload(repo: &Path) -> Vec<u8> {
    let raw =
        std::fs::read_to_string(support::fixtures_dir().join("hooks/post_tool_use.bash.json"))
            .unwrap();
    raw.replace("/path/to/proj", repo.to_str().unwrap())
        .replace("\"transcripts/", "\"/nonexistent/transcripts/")
        .into_bytes()
}

/// What the hook prints must be its normal output: nothing, or the hook JSON with memories,
/// never a word about the damage.
fn assert_normal_hook_output(out: &Output) {
    assert!(
        out.status.success(),
        "hook exit {:?}: {}",
        out.status,
        text(&out.stderr)
    );
    assert_eq!(text(&out.stderr), "", "the hook writes nothing to stderr");
    let stdout = text(&out.stdout);
    if !stdout.trim().is_empty() {
        let v: Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("hook stdout is not its JSON ({e}): {stdout}"));
        assert!(v.get("hookSpecificOutput").is_some(), "{stdout}");
    }
    for word in ["damaged", "warning", "lost", "doctor"] {
        assert!(!stdout.contains(word), "hook printed '{word}': {stdout}");
    }
}

#[test]
fn a_damaged_sst_is_never_silent_and_restore_plus_repair_recovers() {
    let env = TestEnv::new();
    let s = seeded(&env);
    assert!(
        s.store.join("wt-memory-integrity.json").is_file(),
        "the integrity record sits next to the store"
    );
    let export = env.path().join("export.json");
    let exported = env.wt_ok(&s.repo, &["export"], None);
    std::fs::write(&export, &exported).unwrap();

    // Healthy: no warning anywhere, health ok.
    let out = env.wt(&s.repo, &["list"], None);
    assert!(out.status.success());
    assert_eq!(text(&out.stderr), "");
    assert_eq!(env.wt_ok(&s.repo, &["health"], None).trim(), "ok");
    let payload = post_tool_use_payload(&s.repo);
    let before = run_hook(&env, &s.repo, "PostToolUse", &payload);
    assert_normal_hook_output(&before);

    // Damage: truncate the SST file holding the newest memory (with nothing holding the store
    // open, as after a crash).
    let before_ids: Vec<String> = list(&env, &s)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    let newest = before_ids[0].clone();
    env.stop_daemon(&s.repo);
    let sst = sst_of_newest_memory(&s.store, &newest);
    let f = std::fs::OpenOptions::new().write(true).open(&sst).unwrap();
    f.set_len(100).unwrap();
    drop(f);

    // Every command still runs, and warns once, on stderr, in one line.
    let out = env.wt(&s.repo, &["list", "--limit", "1000"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let left = serde_json::from_slice::<Value>(&out.stdout).unwrap();
    let lost_ids: Vec<&String> = before_ids
        .iter()
        .filter(|id| !left.to_string().contains(id.as_str()))
        .collect();
    let left = left.as_array().unwrap().len();
    assert!(left < 10, "the damage lost memories ({left} left)");
    let stderr = text(&out.stderr);
    let lines = nonempty_lines(&stderr);
    assert_eq!(lines.len(), 1, "one warning line: {stderr}");
    assert!(
        lines[0].contains("warning") && lines[0].contains("lost"),
        "{stderr}"
    );
    assert!(lines[0].contains("wt-memory doctor"), "{stderr}");
    // ... on every command, not only the first one after the damage.
    let out = env.wt(&s.repo, &["recall", "which crate hashes secrets"], None);
    assert!(out.status.success());
    assert_eq!(nonempty_lines(&text(&out.stderr)).len(), 1);

    // health: non-zero, one line, says memories were lost.
    let out = env.wt(&s.repo, &["health"], None);
    assert!(!out.status.success(), "health must fail on a damaged store");
    let stdout = text(&out.stdout);
    assert_eq!(nonempty_lines(&stdout).len(), 1, "{stdout}");
    assert!(
        stdout.contains(&format!("{} of 10 recorded memories were lost", 10 - left)),
        "{stdout}"
    );
    assert!(
        nonempty_lines(&text(&out.stderr)).len() <= 1,
        "{}",
        text(&out.stderr)
    );

    // doctor: what was lost and how to recover.
    let doctor = env.wt_ok(&s.repo, &["doctor"], None);
    let lost = 10 - left;
    let what = if lost == 1 {
        "1 memory was lost".to_string()
    } else {
        format!("{lost} memories were lost")
    };
    assert!(doctor.contains(&what), "{doctor}");
    for hint in [
        "sync pull",
        "wt-memory import",
        "storage/lost",
        "wt-memory repair",
    ] {
        assert!(
            doctor.contains(hint),
            "doctor must mention {hint}: {doctor}"
        );
    }
    // One SST may hold one memory (a process per write) or all of them (a daemon's): doctor names
    // lost ids (the first five, in order), whichever they are.
    assert!(
        lost_ids.iter().any(|id| doctor.contains(&id[..8])),
        "doctor names the lost ids: {doctor}"
    );

    // The hook: exit 0, its normal output only, and the incident in its log.
    let after = run_hook(&env, &s.repo, "PostToolUse", &payload);
    assert_normal_hook_output(&after);
    let log = log_text(&env);
    assert!(
        log.contains("is damaged") && log.contains("were lost"),
        "log: {log}"
    );

    // repair alone cannot bring memories back: it says so and keeps the alert.
    let out = env.wt(&s.repo, &["repair"], None);
    assert!(!out.status.success());
    assert!(text(&out.stdout).contains("--accept-loss"));
    assert!(!env.wt(&s.repo, &["health"], None).status.success());

    // Restore from the export, then repair: all 10 back, warning gone.
    let out = env.wt(&s.repo, &["import", export.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = env.wt(&s.repo, &["repair"], None);
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("10 memories, all recorded ones present"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(env.wt_ok(&s.repo, &["health"], None).trim(), "ok");
    let out = env.wt(&s.repo, &["list", "--limit", "1000"], None);
    assert_eq!(text(&out.stderr), "", "no warning after the repair");
    assert_eq!(list(&env, &s).len(), 10);
}

#[test]
fn an_unrestorable_loss_can_be_accepted() {
    let env = TestEnv::new();
    let s = seeded(&env);
    env.stop_daemon(&s.repo);
    for entry in std::fs::read_dir(s.store.join("storage"))
        .unwrap()
        .flatten()
    {
        if entry.path().extension().is_some_and(|e| e == "sst") {
            std::fs::OpenOptions::new()
                .write(true)
                .open(entry.path())
                .unwrap()
                .set_len(0)
                .unwrap();
        }
    }
    let out = env.wt(&s.repo, &["health"], None);
    assert!(!out.status.success());
    assert!(
        text(&out.stdout).contains("of 10 recorded memories were lost"),
        "{}",
        text(&out.stdout)
    );
    let out = env.wt(&s.repo, &["repair", "--accept-loss"], None);
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("accepted as lost"));
    assert_eq!(env.wt_ok(&s.repo, &["health"], None).trim(), "ok");
    // New memories are tracked from the new baseline.
    env.remember(&s.repo, "A note after the loss", "Learning", "");
    assert_eq!(env.wt_ok(&s.repo, &["health"], None).trim(), "ok");
}

#[test]
fn a_damaged_lexical_index_never_hides_the_memories() {
    let env = TestEnv::new();
    let s = seeded(&env);
    let meta = s.store.join("bm25_index/meta.json");
    assert!(
        meta.is_file(),
        "the engine keeps a tantivy index in bm25_index/"
    );
    env.stop_daemon(&s.repo);
    std::fs::write(&meta, b"{ this is not the index meta").unwrap();

    // Either the command works (the index is rebuilt on open), or it fails in one line naming
    // `wt-memory repair`.
    let out = env.wt(&s.repo, &["list", "--limit", "1000"], None);
    if out.status.success() {
        let n = serde_json::from_slice::<Value>(&out.stdout).unwrap();
        assert_eq!(n.as_array().unwrap().len(), 10);
        assert_eq!(text(&out.stderr), "", "a rebuilt index is not a loss");
    } else {
        let stderr = text(&out.stderr);
        assert_eq!(nonempty_lines(&stderr).len(), 1, "{stderr}");
        assert!(stderr.contains("wt-memory repair"), "{stderr}");
    }

    // repair brings everything back, from a damaged index too.
    env.stop_daemon(&s.repo);
    std::fs::write(&meta, b"garbage").unwrap();
    let out = env.wt(&s.repo, &["repair"], None);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("rebuilt lexical index"), "{stdout}");
    assert!(
        stdout.contains("10 memories, all recorded ones present"),
        "{stdout}"
    );
    assert!(s.store.join("bm25_index/meta.json").is_file());
    assert_eq!(list(&env, &s).len(), 10);
    assert_eq!(env.wt_ok(&s.repo, &["health"], None).trim(), "ok");
    let hits = env.wt_json(
        &s.repo,
        &["recall", "which password hashing does auth use"],
        None,
    );
    let top = hits.as_array().unwrap().first().expect("recall finds it");
    assert!(
        top["content"].as_str().unwrap().contains("argon2id"),
        "{hits}"
    );
    let report = env.wt_json(&s.repo, &["health", "--index"], None);
    assert_eq!(report["verify"]["total_storage"], 10, "{report}");
    assert_eq!(report["verify"]["orphaned_count"], 0, "{report}");
}
