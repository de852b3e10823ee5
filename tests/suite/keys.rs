//! Retrieval keys end to end: `remember --keys`, recall matching a key, export/import carrying
//! them, `audit` listing supersede links, and `enrich` through a contract-faithful fake `claude`.

use crate::support;

use serde_json::Value;
use std::path::Path;
use support::TestEnv;

const NOTE: &str =
    "The monthly export job raises statement_timeout with SET LOCAL inside its own transaction; \
                    after_connect sets 10 s for every other connection.";
const ASKED: &str = "the archive download for our biggest customer dies after ten seconds, how do we give it more time";

fn relevance_of(env: &TestEnv, repo: &Path, query: &str, id: &str) -> f64 {
    let found = env.wt_json(repo, &["recall", "--limit", "10", query], None);
    found
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .and_then(|m| m["relevance_score"].as_f64())
        .unwrap_or(0.0)
}

#[test]
fn a_key_in_the_askers_words_lifts_recall_and_travels_with_export() {
    let env = TestEnv::new();
    let plain = env.git_repo("plain");
    let keyed = env.git_repo("keyed");
    let plain_id = env.remember(&plain, NOTE, "Learning", "");
    let keyed_id = env
        .wt_ok(
            &keyed,
            &[
                "remember",
                "--type",
                "Learning",
                "--keys",
                "a big customer's archive download times out after ten seconds",
                "how do I give one slow job more database time",
                "statement_timeout SET LOCAL after_connect",
            ],
            Some(NOTE),
        )
        .trim()
        .to_string();
    let stored = env.wt_json(&keyed, &["get", &keyed_id], None);
    assert_eq!(
        stored["metadata"]["keys"].as_str().unwrap().lines().count(),
        3,
        "{stored}"
    );
    let without = relevance_of(&env, &plain, ASKED, &plain_id);
    // (measured before the plain memory gets keys below)
    // The same content again with keys: the stored memory takes them (same id, no copy).
    let again = env
        .wt_ok(
            &plain,
            &[
                "remember",
                "--type",
                "Learning",
                "--keys",
                "why does the export time out?",
            ],
            Some(NOTE),
        )
        .trim()
        .to_string();
    assert_eq!(again, plain_id);
    let plain_keys = env.wt_json(&plain, &["get", &plain_id], None)["metadata"]["keys"].clone();
    assert_eq!(plain_keys, "why does the export time out?");
    env.wt_ok(
        &plain,
        &["remember", "--type", "Learning", "--keys", "other"],
        Some(NOTE),
    );
    assert_eq!(
        env.wt_json(&plain, &["get", &plain_id], None)["metadata"]["keys"],
        plain_keys,
        "keys already there are kept"
    );
    let with = relevance_of(&env, &keyed, ASKED, &keyed_id);
    assert!(
        with > without + 0.05,
        "keys should lift the paraphrased question: {with} vs {without}"
    );

    // Export and import into a third project: the keys come along and still match.
    let file = env.path().join("keyed.json");
    env.wt_ok(
        &keyed,
        &["export", "--output", file.to_str().unwrap()],
        None,
    );
    let other = env.git_repo("other");
    env.wt_ok(&other, &["import", file.to_str().unwrap()], None);
    let imported = env.wt_json(&other, &["get", &keyed_id], None);
    assert_eq!(imported["metadata"]["keys"], stored["metadata"]["keys"]);
    let after_import = relevance_of(&env, &other, ASKED, &keyed_id);
    assert!(
        (after_import - with).abs() < 0.01,
        "imported keys are embedded again: {after_import} vs {with}"
    );
}

#[test]
fn keys_added_by_hand_lift_recall_and_a_bad_edit_changes_nothing() {
    let env = TestEnv::new();
    let repo = env.git_repo("by-hand");
    let id = env.remember(&repo, NOTE, "Learning", "");
    let before = relevance_of(&env, &repo, ASKED, &id);
    let keys = |args: &[&str]| {
        let mut all = vec!["keys", &id[..8]];
        all.extend_from_slice(args);
        env.wt(&repo, &all, None)
    };
    let added = keys(&[
        "--add",
        "the archive download for a big customer dies after ten seconds",
    ]);
    assert!(added.status.success(), "{added:?}");
    let shown: Value = serde_json::from_slice(&added.stdout).unwrap();
    assert_eq!(shown["keys"].as_array().unwrap().len(), 1, "{shown}");
    let after = relevance_of(&env, &repo, ASKED, &id);
    assert!(after > before + 0.1, "{before} -> {after}");
    // Removing a key the memory does not have: one line saying so, exit 1, keys as they were.
    let refused = keys(&["--remove", "no such key"]);
    assert_eq!(refused.status.code(), Some(1));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(said.contains("has no key"), "{said}");
    let listed: Value = serde_json::from_slice(&keys(&[]).stdout).unwrap();
    assert_eq!(listed["keys"], shown["keys"]);
}

#[test]
fn too_many_or_blank_keys_are_trimmed_not_refused() {
    let env = TestEnv::new();
    let repo = env.git_repo("r");
    let mut args = vec!["remember", "--type", "Context", "--keys"];
    let keys: Vec<String> = (1..=9).map(|i| format!("question {i}?")).collect();
    args.extend(keys.iter().map(String::as_str));
    args.push("  ");
    let id = env
        .wt_ok(
            &repo,
            &args,
            Some("Deploys go out with fly deploy --remote-only"),
        )
        .trim()
        .to_string();
    let got = env.wt_json(&repo, &["get", &id], None);
    let stored: Vec<&str> = got["metadata"]["keys"].as_str().unwrap().lines().collect();
    assert_eq!(
        stored,
        keys[..6].iter().map(String::as_str).collect::<Vec<_>>()
    );
}

#[test]
fn audit_lists_supersede_links() {
    let env = TestEnv::new();
    let repo = env.git_repo("r");
    let old = env.remember(
        &repo,
        "Deploys go to Fly.io from the main branch",
        "Decision",
        "",
    );
    let new = env
        .wt_ok(
            &repo,
            &["remember", "--type", "Decision", "--supersedes", &old],
            Some("Deploys go to Fly.io from release tags only, never from main"),
        )
        .trim()
        .to_string();
    let audit = env.wt_json(&repo, &["audit", "--json"], None);
    assert_eq!(audit["supersede_links"][0]["newer_id"], new.as_str());
    assert_eq!(audit["supersede_links"][0]["older_id"], old.as_str());
    let text = env.wt_ok(&repo, &["audit"], None);
    assert!(text.contains("Superseded (1):"), "{text}");
    assert!(text.contains(&format!("replaces {}", &old[..8])), "{text}");
}

/// `wt-memory args` with the fake model on PATH.
fn wt_with(
    model: &support::FakeModel,
    env: &TestEnv,
    repo: &Path,
    args: &[&str],
) -> std::process::Output {
    support::run(model.wire(env.cmd("wt-memory", repo).args(args)), None)
}

#[test]
fn enrich_estimates_first_then_writes_the_models_keys() {
    let env = TestEnv::new();
    let repo = env.git_repo("r");
    let keyed = env
        .wt_ok(
            &repo,
            &[
                "remember",
                "--type",
                "Context",
                "--keys",
                "where is the pool built?",
            ],
            Some("The PgPool is built once in crates/api/src/state.rs"),
        )
        .trim()
        .to_string();
    let older = env.remember(
        &repo,
        "Local Postgres listens on port 5433, not 5432",
        "Context",
        "",
    );
    let newer = env.remember(
        &repo,
        "Use pnpm in web/, never npm: CI installs with a frozen lockfile",
        "Decision",
        "",
    );
    // Newest first in the prompt: M1 is the pnpm note, M2 the port note.
    let fake = support::FakeModel::install(
        &env,
        "Here you go:\nM1|which package manager does the web app use?; npm install broke the lockfile; pnpm install\n\
         M2|why can't I connect to the local database?; psql localhost:5433\nM7|no such note\n",
    );

    let out = wt_with(&fake, &env, &repo, &["enrich"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("2 memories without keys: 1 calls"), "{text}");
    assert!(text.contains("--yes"), "{text}");
    assert!(fake.calls().is_empty(), "no model call without --yes");

    let out = wt_with(&fake, &env, &repo, &["enrich", "--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Wrote keys for 2 of 2 memories."));
    assert!(String::from_utf8_lossy(&out.stderr).contains("enrich: call 1/1 (2 memories)"));
    let calls = fake.calls();
    assert_eq!(calls.len(), 1);
    let (argv, _, prompt) = &calls[0];
    assert_eq!(argv[..3], ["-p", "--model", "haiku"]);
    assert!(
        prompt.contains("M1: Use pnpm in web/") && prompt.contains("M2: Local Postgres"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("PgPool"),
        "a memory with keys is not sent: {prompt}"
    );

    let keys_of = |id: &str| {
        let m: Value = env.wt_json(&repo, &["get", id], None);
        m["metadata"]["keys"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(
        keys_of(&newer),
        "which package manager does the web app use?\nnpm install broke the lockfile\npnpm install"
    );
    assert_eq!(
        keys_of(&older),
        "why can't I connect to the local database?\npsql localhost:5433"
    );
    assert_eq!(keys_of(&keyed), "where is the pool built?");

    // Nothing left to do: no further call.
    let out = wt_with(&fake, &env, &repo, &["enrich", "--yes"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to do"));
    assert_eq!(fake.calls().len(), 1);
}

#[test]
fn enrich_without_claude_says_what_to_do() {
    let env = TestEnv::new();
    let repo = env.git_repo("r");
    env.remember(&repo, "Local Postgres listens on port 5433", "Context", "");
    let out = support::run(
        env.cmd("wt-memory", &repo)
            .args(["enrich", "--yes"])
            .env("PATH", "/usr/bin:/bin"),
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("claude is not on PATH"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
