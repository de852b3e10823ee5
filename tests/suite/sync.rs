//! `wt-memory sync` against a real bare repository acting as the shared remote, with clones acting
//! as different users/machines (each clone is its own store).

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use support::{git, TestEnv};
use wt_memory::sync::{self, Committer, Identity, PublishOutcome, Remote};

const ALICE: &str = "alice-smith/laptop";
const BOB: &str = "bob/desktop";

/// A bare remote plus clones; `alice` is on a feature branch with staged and untracked changes, so
/// "the checkout is untouched" is checked against a realistic, dirty working tree.
struct Team {
    env: TestEnv,
    remote: PathBuf,
    alice: PathBuf,
    bob: PathBuf,
}

impl Team {
    fn new() -> Team {
        let env = TestEnv::new();
        let seed = env.git_repo("seed");
        let remote = env.path().join("remote.git");
        git(
            env.path(),
            &[
                "clone",
                "-q",
                "--bare",
                &path_str(&seed),
                &path_str(&remote),
            ],
        );
        let alice = clone_as(&env, &remote, "alice", "Alice Smith");
        let bob = clone_as(&env, &remote, "bob", "Bob");
        git(&alice, &["checkout", "-q", "-b", "feature"]);
        std::fs::write(alice.join("README.md"), "staged edit\n").unwrap();
        git(&alice, &["add", "README.md"]);
        std::fs::write(alice.join("README.md"), "staged edit\nplus unstaged\n").unwrap();
        std::fs::write(alice.join("notes.txt"), "untracked\n").unwrap();
        Team {
            env,
            remote,
            alice,
            bob,
        }
    }

    /// Another clone with its own user name (and so its own store).
    fn member(&self, dir: &str, user_name: &str) -> PathBuf {
        clone_as(&self.env, &self.remote, dir, user_name)
    }

    /// `wt-memory sync <args>` in `repo` as machine `machine`, asserting the checkout is untouched.
    /// Alice names her machine with `--machine`, everyone else through `WT_MEMORY_MACHINE`.
    fn sync(&self, repo: &Path, machine: &str, args: &[&str]) -> Output {
        let before = checkout_state(repo);
        let mut cmd = self.env.cmd("wt-memory", repo);
        cmd.arg("sync").args(args);
        if repo == self.alice {
            cmd.args(["--machine", machine]);
        } else {
            cmd.env("WT_MEMORY_MACHINE", machine);
        }
        let out = support::run(&mut cmd, None);
        assert_eq!(
            checkout_state(repo),
            before,
            "sync {args:?} changed the user's checkout"
        );
        out
    }

    fn sync_ok(&self, repo: &Path, machine: &str, args: &[&str]) -> String {
        let out = self.sync(repo, machine, args);
        assert!(
            out.status.success(),
            "sync {args:?} failed: {}{}",
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }

    fn alice(&self, args: &[&str]) -> String {
        self.sync_ok(&self.alice, "laptop", args)
    }

    fn bob(&self, args: &[&str]) -> String {
        self.sync_ok(&self.bob, "desktop", args)
    }

    /// Files on the remote's sync branch.
    fn remote_files(&self) -> Vec<String> {
        let listing = git(
            &self.remote,
            &["ls-tree", "-r", "--name-only", sync::BRANCH],
        );
        listing.lines().map(str::to_string).collect()
    }

    fn remote_tip(&self) -> String {
        git(&self.remote, &["rev-parse", sync::BRANCH])
    }

    fn remote_export(&self, source: &str) -> Value {
        let spec = format!("{}:{source}/{}", sync::BRANCH, sync::FILE_NAME);
        serde_json::from_str(&git(&self.remote, &["show", &spec])).expect("export JSON")
    }

    fn contents(&self, repo: &Path) -> Vec<String> {
        let list = self.env.wt_json(repo, &["list", "--limit", "1000"], None);
        let mut contents: Vec<String> = list
            .as_array()
            .expect("list prints an array")
            .iter()
            .map(|r| r["content"].as_str().unwrap_or_default().to_string())
            .collect();
        contents.sort();
        contents
    }
}

fn clone_as(env: &TestEnv, remote: &Path, dir: &str, user_name: &str) -> PathBuf {
    let repo = env.path().join(dir);
    git(
        env.path(),
        &["clone", "-q", &path_str(remote), &path_str(&repo)],
    );
    git(&repo, &["config", "user.name", user_name]);
    git(
        &repo,
        &["config", "user.email", &format!("{dir}@example.com")],
    );
    repo
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Everything of the user's checkout that sync must leave alone: branch, HEAD, index, working
/// tree status, local branches and the worktree list.
fn checkout_state(repo: &Path) -> Vec<String> {
    vec![
        git(repo, &["branch", "--show-current"]),
        git(repo, &["rev-parse", "HEAD"]),
        git(repo, &["ls-files", "--stage"]),
        git(repo, &["status", "--porcelain", "--untracked-files=all"]),
        git(repo, &["diff"]),
        git(
            repo,
            &[
                "for-each-ref",
                "refs/heads",
                "--format=%(refname) %(objectname)",
            ],
        ),
        git(repo, &["worktree", "list", "--porcelain"]),
    ]
}

fn committer() -> Committer {
    Committer {
        name: "Test User".into(),
        email: "test@example.com".into(),
    }
}

fn ident(user: &str, machine: &str) -> Identity {
    Identity {
        user: user.into(),
        machine: machine.into(),
    }
}

fn export_doc(contents: &[&str]) -> Vec<u8> {
    let records: Vec<Value> = contents
        .iter()
        .enumerate()
        .map(|(i, c)| {
            serde_json::json!({"id": format!("00000000-0000-4000-8000-00000000000{i}"),
                "content": c, "experience_type": "Learning", "tags": [], "metadata": {}})
        })
        .collect();
    let doc = serde_json::json!({"version": 1, "format": "wt-memory-export", "project": "p",
        "exported_at": "2026-01-01T00:00:00Z", "count": records.len(), "records": records});
    serde_json::to_vec_pretty(&doc).unwrap()
}

/// Install an executable hook in the bare remote.
fn install_hook(remote: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let hook = remote.join("hooks").join(name);
    std::fs::write(&hook, script).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
}

// ---------------------------------------------------------------------------------------------
// The git side, through the library (no store involved)

#[test]
fn publish_creates_an_orphan_branch_and_skips_identical_content() {
    let team = Team::new();
    let remote = Remote::open(&team.alice, "origin").unwrap();
    let me = ident("alice-smith", "laptop");
    let doc = export_doc(&["first"]);

    let outcome = sync::publish(&remote, &me, &doc, &committer()).unwrap();
    assert!(matches!(
        outcome,
        PublishOutcome::Pushed { attempts: 1, .. }
    ));
    assert_eq!(team.remote_files(), vec![format!("{ALICE}/memories.json")]);
    // Orphan: one root commit, sharing no history with the project's branches.
    assert_eq!(
        git(&team.remote, &["rev-list", "--count", sync::BRANCH]),
        "1"
    );
    let unrelated = std::process::Command::new("git")
        .args(["merge-base", "main", sync::BRANCH])
        .current_dir(&team.remote)
        .output()
        .unwrap();
    assert!(
        !unrelated.status.success(),
        "sync branch shares history with main"
    );
    let subject = git(&team.remote, &["log", "-1", "--format=%s", sync::BRANCH]);
    assert!(subject.starts_with(&format!("sync: {ALICE} ")), "{subject}");

    let tip = team.remote_tip();
    let again = sync::publish(&remote, &me, &doc, &committer()).unwrap();
    assert_eq!(again, PublishOutcome::Unchanged);
    assert_eq!(team.remote_tip(), tip);

    let changed = sync::publish(
        &remote,
        &me,
        &export_doc(&["first", "second"]),
        &committer(),
    );
    assert!(matches!(changed.unwrap(), PublishOutcome::Pushed { .. }));
    assert_eq!(
        git(&team.remote, &["rev-list", "--count", sync::BRANCH]),
        "2"
    );
}

#[test]
fn publish_keeps_other_sources_files() {
    let team = Team::new();
    let alice = Remote::open(&team.alice, "origin").unwrap();
    let bob = Remote::open(&team.bob, "origin").unwrap();
    sync::publish(
        &alice,
        &ident("alice-smith", "laptop"),
        &export_doc(&["a"]),
        &committer(),
    )
    .unwrap();
    sync::publish(
        &bob,
        &ident("bob", "desktop"),
        &export_doc(&["b"]),
        &committer(),
    )
    .unwrap();

    let snap = sync::snapshot(&bob).unwrap().expect("branch exists");
    assert_eq!(snap.sources, vec![ALICE.to_string(), BOB.to_string()]);
    assert_eq!(snap.tip, team.remote_tip());
    let alice_doc: Value = serde_json::from_slice(&snap.read(ALICE).unwrap()).unwrap();
    assert_eq!(alice_doc["records"][0]["content"], "a");
}

#[test]
fn publish_reapplies_its_file_when_the_remote_moved_during_the_push() {
    let team = Team::new();
    let alice = Remote::open(&team.alice, "origin").unwrap();
    let me = ident("alice-smith", "laptop");
    sync::publish(&alice, &me, &export_doc(&["v1"]), &committer()).unwrap();

    // Carol prepares a commit on the current tip; the remote's pre-receive hook pushes it the
    // first time anyone pushes, so Alice's push loses the race exactly once.
    let carol = team.member("carol", "Carol");
    git(&carol, &["fetch", "-q", "origin", sync::BRANCH]);
    git(
        &carol,
        &["checkout", "-q", "-b", sync::BRANCH, "FETCH_HEAD"],
    );
    std::fs::create_dir_all(carol.join("carol/box")).unwrap();
    std::fs::write(carol.join("carol/box/memories.json"), export_doc(&["c"])).unwrap();
    git(&carol, &["add", "."]);
    git(&carol, &["commit", "-q", "-m", "carol"]);
    let marker = team.env.path().join("raced");
    install_hook(
        &team.remote,
        "pre-receive",
        &format!(
            "#!/bin/sh\ncat >/dev/null\nif [ ! -e '{marker}' ]; then\n  touch '{marker}'\n  \
             env -u GIT_DIR -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY \
             -u GIT_ALTERNATE_OBJECT_DIRECTORIES git -C '{carol}' push -q origin {branch} \
             >/dev/null 2>&1 || exit 1\nfi\nexit 0\n",
            marker = marker.display(),
            carol = carol.display(),
            branch = sync::BRANCH
        ),
    );

    let outcome = sync::publish(&alice, &me, &export_doc(&["v2"]), &committer()).unwrap();
    assert!(marker.exists(), "the racing push did not happen");
    assert!(
        matches!(outcome, PublishOutcome::Pushed { attempts: 2, .. }),
        "{outcome:?}"
    );
    let mut files = team.remote_files();
    files.sort();
    assert_eq!(
        files,
        vec![
            format!("{ALICE}/memories.json"),
            "carol/box/memories.json".to_string()
        ]
    );
    assert_eq!(team.remote_export(ALICE)["records"][0]["content"], "v2");
}

#[test]
fn publish_gives_up_when_the_remote_keeps_moving() {
    let team = Team::new();
    let alice = Remote::open(&team.alice, "origin").unwrap();
    let me = ident("alice-smith", "laptop");
    sync::publish(&alice, &me, &export_doc(&["v1"]), &committer()).unwrap();

    // Every push by Alice is overtaken by a fresh commit from Carol.
    let carol = team.member("carol", "Carol");
    let counter = team.env.path().join("outer-pushes");
    install_hook(
        &team.remote,
        "pre-receive",
        &format!(
            "#!/bin/sh\ncat >/dev/null\n[ -n \"$INNER_PUSH\" ] && exit 0\n\
             echo x >> '{counter}'\n\
             cd '{carol}' && unset GIT_DIR GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY \
             GIT_ALTERNATE_OBJECT_DIRECTORIES && export INNER_PUSH=1 && \
             git fetch -q origin {branch} && git checkout -q -B {branch} FETCH_HEAD && \
             date +%s%N > carol.txt && git add carol.txt && \
             git -c user.name=C -c user.email=c@x commit -q -m c && \
             git push -q origin {branch} >/dev/null 2>&1\nexit 0\n",
            counter = counter.display(),
            carol = carol.display(),
            branch = sync::BRANCH
        ),
    );

    let err = sync::publish(&alice, &me, &export_doc(&["v2"]), &committer())
        .unwrap_err()
        .to_string();
    let attempts = sync::PUSH_RETRIES + 1;
    assert!(
        err.contains(&format!("changed during each of {attempts} attempts")),
        "{err}"
    );
    let outer = std::fs::read_to_string(&counter).unwrap().lines().count();
    assert_eq!(outer, attempts);
}

#[test]
fn publish_reports_a_declined_push_without_retrying() {
    let team = Team::new();
    let counter = team.env.path().join("pushes");
    install_hook(
        &team.remote,
        "pre-receive",
        &format!(
            "#!/bin/sh\ncat >/dev/null\necho x >> '{}'\necho 'branch is protected' >&2\nexit 1\n",
            counter.display()
        ),
    );
    let alice = Remote::open(&team.alice, "origin").unwrap();
    let err = sync::publish(
        &alice,
        &ident("alice-smith", "laptop"),
        &export_doc(&["a"]),
        &committer(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("push to 'origin' failed"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&counter).unwrap().lines().count(),
        1
    );
}

#[test]
fn concurrent_publishes_from_two_machines_both_land() {
    let team = Team::new();
    let seed = Remote::open(&team.alice, "origin").unwrap();
    sync::publish(
        &seed,
        &ident("seed", "box"),
        &export_doc(&["s"]),
        &committer(),
    )
    .unwrap();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = [
        (team.alice.clone(), "alice-smith", "laptop"),
        (team.bob.clone(), "bob", "desktop"),
    ]
    .into_iter()
    .map(|(repo, user, machine)| {
        let barrier = barrier.clone();
        std::thread::spawn(move || {
            let remote = Remote::open(&repo, "origin").unwrap();
            barrier.wait();
            sync::publish(
                &remote,
                &ident(user, machine),
                &export_doc(&[user]),
                &committer(),
            )
        })
    })
    .collect();
    for h in handles {
        h.join()
            .unwrap()
            .expect("publish succeeds despite the race");
    }
    let mut files = team.remote_files();
    files.sort();
    assert_eq!(
        files,
        vec![
            format!("{ALICE}/memories.json"),
            format!("{BOB}/memories.json"),
            "seed/box/memories.json".to_string()
        ]
    );
}

#[test]
fn remote_problems_are_clear_errors() {
    let team = Team::new();
    let plain = team.env.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let err = Remote::open(&plain, "origin").unwrap_err().to_string();
    assert_eq!(err, "not a git repository");
    let err = Remote::open(&team.alice, "upstream")
        .unwrap_err()
        .to_string();
    assert_eq!(err, "no git remote 'upstream' found");

    git(
        &team.bob,
        &["remote", "set-url", "origin", "/nonexistent/remote.git"],
    );
    let bob = Remote::open(&team.bob, "origin").unwrap();
    let err = sync::remote_tip(&bob).unwrap_err().to_string();
    assert!(err.starts_with("remote 'origin' unreachable:"), "{err}");
    assert!(sync::snapshot(&bob).is_err());

    // A relative path remote resolves from the repository top level, not the current directory.
    git(&team.bob, &["remote", "set-url", "origin", "../remote.git"]);
    let subdir = team.bob.join("src/deep");
    std::fs::create_dir_all(&subdir).unwrap();
    let bob = Remote::open(&subdir, "origin").unwrap();
    assert_eq!(sync::remote_tip(&bob).unwrap(), None);
}

// ---------------------------------------------------------------------------------------------
// The command, with real stores (export/import run as child processes)

#[test]
fn first_push_creates_the_branch_and_file_and_an_unchanged_push_is_skipped() {
    let team = Team::new();
    team.env.remember(
        &team.alice,
        "Use sqlx for database access",
        "Decision",
        "db",
    );
    team.env.remember(
        &team.alice,
        "The staging password is hunter2 on box 7",
        "Context",
        "private",
    );

    let out = team.alice(&["push"]);
    assert!(out.starts_with(&format!("Pushed to {ALICE}")), "{out}");
    assert_eq!(team.remote_files(), vec![format!("{ALICE}/memories.json")]);
    let doc = team.remote_export(ALICE);
    assert_eq!(doc["format"], "wt-memory-export");
    let contents: Vec<&str> = doc["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        vec!["Use sqlx for database access"],
        "private memory pushed"
    );
    assert_eq!(doc["count"], 1);

    let tip = team.remote_tip();
    assert_eq!(team.alice(&["push"]).trim(), "Nothing to push.");
    assert_eq!(team.remote_tip(), tip);

    let status = team.alice(&["status"]);
    assert!(status.contains(&format!("Identity: {ALICE}")), "{status}");
    assert!(status.contains("Push: 20"), "{status}");
    assert!(status.contains(&format!("  {ALICE} (you)")), "{status}");
}

#[test]
fn pull_imports_other_sources_and_skips_its_own() {
    let team = Team::new();
    team.env.remember(
        &team.alice,
        "Alice learned the cache is per tenant",
        "Learning",
        "",
    );
    team.env.wt_ok(
        &team.alice,
        &[
            "remember",
            "--type",
            "Decision",
            "--keys",
            "which async runtime do we use?",
        ],
        Some("Alice decided on tokio"),
    );
    team.env
        .remember(&team.bob, "Bob's own note about CI", "Context", "");
    team.alice(&["push"]);
    team.bob(&["push"]);

    let out = team.bob(&["pull"]);
    assert!(out.contains(&format!("{ALICE}: 2 new, 0 skipped")), "{out}");
    assert!(
        !out.contains(&format!("{BOB}:")),
        "pulled its own file: {out}"
    );
    assert!(
        out.contains("Total: 2 new, 0 skipped from 1 source(s)"),
        "{out}"
    );
    assert_eq!(
        team.contents(&team.bob),
        vec![
            "Alice decided on tokio",
            "Alice learned the cache is per tenant",
            "Bob's own note about CI"
        ]
    );
    // A new source's memories are held until Bob trusts it (docs/security.md).
    assert!(
        out.contains(&format!("{ALICE}: 2 new, 0 skipped, 2 held for review")),
        "{out}"
    );
    team.env
        .wt_ok(&team.bob, &["review", "--trust", ALICE], None);
    // Retrieval keys travel with the memory.
    let found = team.env.wt_json(
        &team.bob,
        &["recall", "which async runtime do we use?"],
        None,
    );
    let found = found.as_array().unwrap();
    let tokio = found
        .iter()
        .find(|m| m["content"] == "Alice decided on tokio")
        .unwrap();
    assert_eq!(tokio["metadata"]["keys"], "which async runtime do we use?");
    let best = |m: &&Value| m["relevance_score"].as_f64().unwrap();
    assert!(found.iter().all(|m| best(&m) <= best(&tokio)), "{found:?}");
    assert_eq!(team.bob(&["pull"]).trim(), "Up to date.");
}

#[test]
fn round_trip_a_to_b_to_a_leaves_no_duplicates() {
    let team = Team::new();
    team.env.remember(
        &team.alice,
        "Alice: migrations run at startup",
        "Decision",
        "",
    );
    team.env.remember(
        &team.alice,
        "Alice: the API is rate limited",
        "Learning",
        "",
    );
    team.env
        .remember(&team.bob, "Bob: use the nightly toolchain", "Decision", "");

    team.alice(&["push"]);
    team.bob(&["pull"]);
    team.bob(&["push"]);
    let out = team.alice(&["pull"]);
    assert!(out.contains(&format!("{BOB}: 1 new, 2 skipped")), "{out}");
    team.alice(&["push"]);
    let out = team.bob(&["pull"]);
    assert!(out.contains(&format!("{ALICE}: 0 new, 3 skipped")), "{out}");

    let expected = vec![
        "Alice: migrations run at startup",
        "Alice: the API is rate limited",
        "Bob: use the nightly toolchain",
    ];
    assert_eq!(team.contents(&team.alice), expected);
    assert_eq!(team.contents(&team.bob), expected);
}

#[test]
fn both_users_pushing_at_once_both_land_on_the_remote() {
    let team = std::sync::Arc::new(Team::new());
    team.env.remember(&team.alice, "Alice races", "Context", "");
    team.env.remember(&team.bob, "Bob races", "Context", "");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let handles: Vec<_> = [true, false]
        .into_iter()
        .map(|is_alice| {
            let (team, barrier) = (team.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                if is_alice {
                    team.alice(&["push"])
                } else {
                    team.bob(&["push"])
                }
            })
        })
        .collect();
    for h in handles {
        let out = h.join().unwrap();
        assert!(out.starts_with("Pushed to "), "{out}");
    }
    let mut files = team.remote_files();
    files.sort();
    assert_eq!(
        files,
        vec![
            format!("{ALICE}/memories.json"),
            format!("{BOB}/memories.json")
        ]
    );
}

#[test]
fn from_selects_one_source() {
    let team = Team::new();
    let carol = team.member("carol", "Carol");
    team.env.remember(&team.alice, "From Alice", "Context", "");
    team.env.remember(&carol, "From Carol", "Context", "");
    team.alice(&["push"]);
    team.sync_ok(&carol, "box", &["push"]);

    let out = team.bob(&["pull", "--from", "carol/box"]);
    assert!(out.contains("carol/box: 1 new, 0 skipped"), "{out}");
    assert!(!out.contains(ALICE), "{out}");
    assert_eq!(team.contents(&team.bob), vec!["From Carol"]);

    let miss = team.sync(&team.bob, "desktop", &["pull", "--from", "nobody/x"]);
    assert_eq!(miss.status.code(), Some(1));
    let err = stderr(&miss);
    assert!(
        err.contains("no source 'nobody/x'") && err.contains("carol/box"),
        "{err}"
    );

    // A filtered pull does not count as having pulled everything.
    let out = team.bob(&["pull"]);
    assert!(out.contains(&format!("{ALICE}: 1 new")), "{out}");
    assert!(out.contains("carol/box: 0 new, 1 skipped"), "{out}");
}

#[test]
fn a_corrupt_source_is_reported_and_the_others_still_import() {
    let team = Team::new();
    team.env
        .remember(&team.alice, "Alice's good memory", "Learning", "");
    team.alice(&["push"]);

    let mallory = team.member("mallory", "Mallory");
    git(&mallory, &["fetch", "-q", "origin", sync::BRANCH]);
    git(
        &mallory,
        &["checkout", "-q", "-b", sync::BRANCH, "FETCH_HEAD"],
    );
    std::fs::create_dir_all(mallory.join("mallory/box")).unwrap();
    std::fs::write(mallory.join("mallory/box/memories.json"), "{ not json").unwrap();
    git(&mallory, &["add", "."]);
    git(&mallory, &["commit", "-q", "-m", "broken"]);
    git(&mallory, &["push", "-q", "origin", sync::BRANCH]);

    let out = team.bob(&["pull"]);
    assert!(
        out.contains("mallory/box: skipped, corrupt file (invalid JSON"),
        "{out}"
    );
    assert!(out.contains(&format!("{ALICE}: 1 new, 0 skipped")), "{out}");
    assert!(
        out.contains("Total: 1 new, 0 skipped from 1 source(s)"),
        "{out}"
    );
    assert_eq!(team.contents(&team.bob), vec!["Alice's good memory"]);
}

#[test]
fn sync_without_subcommand_pushes_then_pulls() {
    let team = Team::new();
    team.env
        .remember(&team.alice, "Alice shares", "Context", "");
    team.env.remember(&team.bob, "Bob shares", "Context", "");
    team.alice(&["push"]);
    let out = team.bob(&[]);
    let push_at = out.find("--- Push ---").expect(&out);
    let pull_at = out.find("--- Pull ---").expect(&out);
    assert!(push_at < pull_at);
    assert!(
        out[push_at..pull_at].contains(&format!("Pushed to {BOB}")),
        "{out}"
    );
    assert!(out[pull_at..].contains(&format!("{ALICE}: 1 new")), "{out}");
    assert_eq!(team.contents(&team.bob), vec!["Alice shares", "Bob shares"]);
}

#[test]
fn status_before_any_sync_and_with_no_branch() {
    let team = Team::new();
    let out = team.bob(&["status"]);
    assert!(out.contains(&format!("Identity: {BOB}")), "{out}");
    assert!(out.contains("Never synced."), "{out}");
    assert!(out.contains("(no sync branch)"), "{out}");
    let out = team.bob(&["pull"]);
    assert_eq!(
        out.trim(),
        "No sync branch found. Run 'wt-memory sync push' first."
    );
}

#[test]
fn command_errors_are_one_line_and_exit_1() {
    let team = Team::new();
    let plain = team.env.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let out = support::run(
        team.env.cmd("wt-memory", &plain).args(["sync", "push"]),
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .trim()
            .starts_with("wt-memory: not a git repository: "),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("personal store") && stderr(&out).lines().count() == 1);

    let out = team.sync(&team.bob, "desktop", &["push", "--remote", "upstream"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim(),
        "wt-memory: no git remote 'upstream' found"
    );

    git(
        &team.bob,
        &["remote", "set-url", "origin", "/nonexistent/remote.git"],
    );
    let out = team.sync(&team.bob, "desktop", &["pull"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("wt-memory: remote 'origin' unreachable:"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    let out = team.sync(&team.bob, "desktop", &["bogus"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with("wt-memory: unknown sync subcommand 'bogus'"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(stdout(&out).is_empty());
}
