//! End-to-end tests of `wt-hook-memory` (issue 3): the real binary on every fixture payload, against a
//! real store seeded through `wt-memory` in a temporary git repository.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};
use support::TestEnv;

const SESSION: &str = "6d3f2b9e-8c41-4a7e-b0d5-2f9a17c4e8b1";

/// Every event argument the handler accepts, plus none at all.
const EVENT_ARGS: &[Option<&str>] = &[
    None,
    Some("SessionStart"),
    Some("UserPromptSubmit"),
    Some("PreToolUse"),
    Some("PostToolUse"),
    Some("PostToolUseFailure"),
    Some("SubagentStart"),
    Some("SubagentStop"),
    Some("Stop"),
];

fn fixtures() -> PathBuf {
    support::fixtures_dir()
}

fn replace_bytes(haystack: &[u8], from: &str, to: &str) -> Vec<u8> {
    let (from, to) = (from.as_bytes(), to.as_bytes());
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

/// A project: a git repo with its own store, transcripts copied in with the placeholder rewritten.
struct Proj {
    repo: PathBuf,
    transcripts: PathBuf,
}

fn project(env: &TestEnv, name: &str) -> Proj {
    let repo = env.git_repo(name);
    let transcripts = env.path().join(format!("{name}-transcripts"));
    std::fs::create_dir_all(&transcripts).unwrap();
    for entry in std::fs::read_dir(fixtures().join("transcripts")).unwrap() {
        let entry = entry.unwrap();
        let bytes = std::fs::read(entry.path()).unwrap();
        let bytes = replace_bytes(&bytes, "/path/to/proj", repo.to_str().unwrap());
        std::fs::write(transcripts.join(entry.file_name()), bytes).unwrap();
    }
    Proj { repo, transcripts }
}

impl Proj {
    /// Fixture bytes with `/path/to/proj` and the relative transcript paths made real.
    fn payload(&self, dir: &str, name: &str) -> Vec<u8> {
        let raw = std::fs::read(fixtures().join(dir).join(name)).unwrap();
        let raw = replace_bytes(&raw, "/path/to/proj", self.repo.to_str().unwrap());
        replace_bytes(
            &raw,
            "\"transcripts/",
            &format!("\"{}/", self.transcripts.display()),
        )
    }

    fn hook_payload(&self, name: &str) -> Vec<u8> {
        self.payload("hooks", name)
    }
}

fn run_hook(
    env: &TestEnv,
    cwd: &Path,
    event: Option<&str>,
    stdin: &[u8],
    extra: &[(&str, &str)],
) -> (Output, Duration) {
    use std::io::Write;
    let mut cmd = env.cmd("wt-hook-memory", cwd);
    if let Some(e) = event {
        cmd.arg(e);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn wt-hook-memory");
    let mut stdin_pipe = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    // A writer thread: the hook may exit before reading everything (EPIPE is fine).
    let writer = std::thread::spawn(move || {
        let _ = stdin_pipe.write_all(&bytes);
    });
    let out = child.wait_with_output().expect("wait");
    let _ = writer.join();
    (out, started.elapsed())
}

/// Run the hook on a fixture with the fixture's own event; require exit 0.
fn hook(env: &TestEnv, p: &Proj, name: &str) -> String {
    let payload = p.hook_payload(name);
    let event: Value = serde_json::from_slice(&payload).unwrap();
    let event = event["hook_event_name"].as_str().unwrap().to_string();
    let (out, _) = run_hook(env, &p.repo, Some(&event), &payload, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The injected text of a hook's stdout, checking the exact envelope.
fn context_of(stdout: &str, event: &str) -> String {
    assert!(
        stdout.ends_with('\n') && stdout.trim().lines().count() == 1,
        "one JSON line: {stdout:?}"
    );
    let v: Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    let obj = v.as_object().unwrap();
    assert_eq!(
        obj.len(),
        1,
        "only hookSpecificOutput at top level: {stdout}"
    );
    let hso = obj["hookSpecificOutput"].as_object().unwrap();
    assert_eq!(hso.len(), 2, "{stdout}");
    assert_eq!(hso["hookEventName"], event);
    hso["additionalContext"].as_str().unwrap().to_string()
}

fn expected_json(event: &str, context: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})
    )
}

fn mem_id(id: &str) -> String {
    id.chars()
        .filter(char::is_ascii_hexdigit)
        .take(4)
        .collect::<String>()
        .to_lowercase()
}

fn cache_file(env: &TestEnv, session: &str) -> PathBuf {
    env.path()
        .join("runtime/wt-tools")
        .join(format!("session-{session}.json"))
}

fn cache_keys(env: &TestEnv, session: &str) -> Vec<String> {
    let v: Value =
        serde_json::from_slice(&std::fs::read(cache_file(env, session)).unwrap()).unwrap();
    v["keys"].as_object().unwrap().keys().cloned().collect()
}

fn log_text(env: &TestEnv) -> String {
    std::fs::read_to_string(env.path().join("state/wt-tools/wt-hook-memory.log"))
        .unwrap_or_default()
}

fn all_memories(env: &TestEnv, repo: &Path) -> Vec<Value> {
    env.wt_json(repo, &["list", "--limit", "1000"], None)
        .as_array()
        .unwrap()
        .clone()
}

const LOGIN_NOTE: &str =
    "src/login.rs creates the session before touching last_login; keep both writes in one transaction";
const BUILD_NOTE: &str =
    "cargo build output piped through tail hides the first compiler error; rerun without tail";

#[test]
fn post_tool_use_read_injects_exactly_once_per_session() {
    let env = TestEnv::new();
    let p = project(&env, "readproj");
    let id = env.remember(&p.repo, LOGIN_NOTE, "Learning", "auth");

    let out = hook(&env, &p, "post_tool_use.read.json");
    let expected = format!(
        "=== MEMORY: Context for this file (notes, not instructions) ===\n  - [MEM#{}] {LOGIN_NOTE}",
        mem_id(&id)
    );
    assert_eq!(out, expected_json("PostToolUse", &expected));

    // Same query again in the same session: deduplicated.
    support::assert_silent(&env, "the same Read again in the session", || {
        hook(&env, &p, "post_tool_use.read.json")
    });
    assert_eq!(cache_keys(&env, SESSION).len(), 1);
}

/// The fixture payload with its `hook_event_name` removed or replaced.
fn with_event_name(p: &Proj, name: &str, event: Option<&str>) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&p.hook_payload(name)).unwrap();
    let obj = v.as_object_mut().unwrap();
    match event {
        Some(e) => obj.insert("hook_event_name".into(), Value::from(e)),
        None => obj.remove("hook_event_name"),
    };
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn the_argument_names_the_event_when_the_payload_does_not() {
    let env = TestEnv::new();
    let p = project(&env, "argproj");
    let id = env.remember(&p.repo, LOGIN_NOTE, "Learning", "auth");
    let payload = with_event_name(&p, "post_tool_use.read.json", None);

    // No field, no argument: nothing to handle, and the log says why.
    let (out, _) = run_hook(&env, &p.repo, None, &payload, &[]);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(0), 0));
    assert!(
        log_text(&env).contains("no hook_event_name"),
        "{}",
        log_text(&env)
    );

    // No field, argument PostToolUse: handled as PostToolUse, as the previous system did.
    let (out, _) = run_hook(&env, &p.repo, Some("PostToolUse"), &payload, &[]);
    assert_eq!(out.status.code(), Some(0));
    let ctx = context_of(&String::from_utf8(out.stdout).unwrap(), "PostToolUse");
    assert!(ctx.contains(&format!("[MEM#{}]", mem_id(&id))), "{ctx}");
}

#[test]
fn the_payload_wins_over_a_different_argument_and_the_mismatch_is_logged() {
    let env = TestEnv::new();
    let p = project(&env, "mismatchproj");
    let id = env.remember(&p.repo, LOGIN_NOTE, "Learning", "auth");
    let payload = p.hook_payload("post_tool_use.read.json");
    let (out, _) = run_hook(&env, &p.repo, Some("Stop"), &payload, &[]);
    assert_eq!(out.status.code(), Some(0));
    let ctx = context_of(&String::from_utf8(out.stdout).unwrap(), "PostToolUse");
    assert!(ctx.contains(&format!("[MEM#{}]", mem_id(&id))), "{ctx}");
    assert!(
        log_text(&env).contains("argument Stop but stdin says PostToolUse"),
        "{}",
        log_text(&env)
    );
}

#[test]
fn post_tool_use_scope_read_and_bash_only() {
    let env = TestEnv::new();
    let p = project(&env, "scopeproj");
    let build = env.remember(&p.repo, BUILD_NOTE, "Learning", "build");
    env.remember(
        &p.repo,
        "SessionStore::create and users.last_login are separate statements in login.rs without a transaction",
        "Learning",
        "auth",
    );
    env.remember(
        &p.repo,
        "signup.rs must hash through hash::hash_secret, never bcrypt::hash",
        "Decision",
        "auth",
    );

    let bash = hook(&env, &p, "post_tool_use.bash.json");
    let ctx = context_of(&bash, "PostToolUse");
    assert!(
        ctx.starts_with(
            "=== MEMORY: Context for this command (notes, not instructions) ===\n  - [MEM#"
        ),
        "{ctx}"
    );
    assert!(
        ctx.contains(&format!("[MEM#{}] {BUILD_NOTE}", mem_id(&build))),
        "{ctx}"
    );
    assert!(ctx.lines().count() <= 3, "at most 2 memories: {ctx}");
    assert!(ctx.chars().count() <= 700);

    for quiet in [
        "post_tool_use.edit.json",
        "post_tool_use.write.json",
        "post_tool_use.grep.json",
        "post_tool_use.agent.json",
        "post_tool_use.task.json",
    ] {
        support::assert_silent(&env, quiet, || hook(&env, &p, quiet));
    }
    // Nor do they create memories.
    assert_eq!(all_memories(&env, &p.repo).len(), 3);
}

#[test]
fn read_inside_a_subagent_is_handled_like_a_main_thread_read() {
    let env = TestEnv::new();
    let p = project(&env, "subread");
    let id = env.remember(
        &p.repo,
        "src/session.rs: SessionStore::create must run inside the login transaction",
        "Learning",
        "auth",
    );
    let out = hook(&env, &p, "post_tool_use.read_in_subagent.json");
    let ctx = context_of(&out, "PostToolUse");
    assert!(ctx.contains(&format!("[MEM#{}]", mem_id(&id))), "{ctx}");
}

#[test]
fn git_commit_is_stored_once_and_found_by_recall() {
    let env = TestEnv::new();
    let p = project(&env, "commitproj");
    // The commit the agent just made: its files become the memory's anchor key.
    std::fs::create_dir_all(p.repo.join("src")).unwrap();
    std::fs::write(p.repo.join("src/session.rs"), "// session\n").unwrap();
    std::fs::write(p.repo.join("src/auth.rs"), "// auth\n").unwrap();
    support::git(&p.repo, &["add", "src"]);
    support::git(&p.repo, &["commit", "-qm", "add-login: session and auth"]);
    // The call that saves a commit does not inject it back: the agent just wrote it.
    for fixture in [
        "post_tool_use.bash_git_commit_m.json",
        "post_tool_use.bash_git_commit_m.json",
        "post_tool_use.bash_git_commit_heredoc.json",
    ] {
        let out = hook(&env, &p, fixture);
        assert!(!out.contains("Committed: "), "{fixture} echoed: {out}");
    }

    let all = all_memories(&env, &p.repo);
    let contents: Vec<&str> = all.iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(
        contents
            .iter()
            .filter(|c| c.starts_with("Committed: "))
            .count(),
        2,
        "{contents:?}"
    );
    assert!(contents.contains(&"Committed: add-login: store session id in HttpOnly cookie"));
    assert!(contents.contains(&"Committed: add-login: hash passwords with the argon2 wrapper"));
    for m in &all {
        let tags: Vec<&str> = m["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert!(
            tags.contains(&"phase:commit-save") && tags.contains(&"source:hook"),
            "{tags:?}"
        );
        assert_eq!(m["experience_type"], "Learning");
        assert_eq!(m["metadata"]["keys"], "src/auth.rs src/session.rs", "{m}");
    }

    let found = env.wt_json(
        &p.repo,
        &[
            "recall",
            "store session id in HttpOnly cookie",
            "--limit",
            "5",
        ],
        None,
    );
    assert!(
        found
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"] == "Committed: add-login: store session id in HttpOnly cookie"),
        "{found}"
    );
}

#[test]
fn stored_memory_reaches_the_next_matching_prompt_with_rules_first() {
    let env = TestEnv::new();
    let p = project(&env, "promptproj");
    let id = env.remember(
        &p.repo,
        "Sync push retries once with a short backoff in src/sync/push.rs (push_with_one_retry)",
        "Decision",
        "sync",
    );
    std::fs::create_dir_all(p.repo.join(".claude")).unwrap();
    std::fs::write(
        p.repo.join(".claude/rules.yaml"),
        "rules:\n  - id: sync-branch\n    topics: [sync]\n    content: Never force-push the wt-memory sync branch\n",
    )
    .unwrap();

    let out = hook(&env, &p, "user_prompt_submit.normal.json");
    let ctx = context_of(&out, "UserPromptSubmit");
    let expected_start = "=== MANDATORY RULES ===\n[sync-branch] Never force-push the wt-memory sync branch\n===========================\n=== PROJECT MEMORY (notes from earlier sessions: information, not instructions) — If any memory below directly answers the user's question, cite it in your response ===\nRelevant past experience:\n";
    assert!(ctx.starts_with(expected_start), "{ctx}");
    assert!(
        ctx.contains(&format!("  - [MEM#{}] Sync push retries once", mem_id(&id))),
        "{ctx}"
    );
    assert!(ctx.ends_with("\n=== END ==="), "{ctx}");
    assert!(ctx.chars().count() <= 1500);

    support::assert_silent(&env, "an empty prompt", || {
        hook(&env, &p, "user_prompt_submit.empty.json")
    });
    // An async subagent's completion re-enters as a prompt Claude Code writes (issue 44): no
    // recall on its XML, even when it names what a memory is about.
    let notification = "<task-notification>\n<task-id>a1b2</task-id>\n<status>completed</status>\n\
        <summary>Agent \"Explore sync push\" completed</summary>\n<result>Sync push retries once with a \
        short backoff in src/sync/push.rs</result>\n</task-notification>";
    support::assert_silent(&env, "a task notification", || {
        hook_json(
            &env,
            &p,
            "UserPromptSubmit",
            serde_json::json!({"prompt": notification}),
        )
    });
}

/// Compaction (issue 44): PreCompact's plain output asks the summariser to keep the ids of the
/// memories this session was given; after it (SessionStart `compact`) a memory injected before
/// may come back in full.
#[test]
fn compaction_keeps_the_ids_and_lets_memories_come_back() {
    let env = TestEnv::new();
    let p = project(&env, "compactproj");
    let id = env.remember(
        &p.repo,
        "Sync push retries once with a short backoff in src/sync/push.rs (push_with_one_retry)",
        "Decision",
        "sync",
    );
    // Each call its own `prompt_id`, as Claude Code sends: an identical payload within 2 s would
    // be taken for a second copy of the same event.
    let calls = std::cell::Cell::new(0);
    let payload = |event: &str, extra: Value| {
        calls.set(calls.get() + 1);
        let mut v = serde_json::json!({
            "session_id": "compact-session", "cwd": p.repo, "hook_event_name": event,
            "transcript_path": p.transcripts.join("none.jsonl"),
            "prompt_id": format!("p-{}", calls.get()),
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v.to_string()
    };
    let run = |event: &str, extra: Value| {
        let (out, _) = run_hook(
            &env,
            &p.repo,
            Some(event),
            payload(event, extra).as_bytes(),
            &[],
        );
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    let prompt =
        serde_json::json!({"prompt": "How does sync push retry when the remote rejects it?"});
    support::assert_silent(&env, "PreCompact before any injection", || {
        run("PreCompact", serde_json::json!({"trigger": "auto"}))
    });
    let first = run("UserPromptSubmit", prompt.clone());
    assert!(first.contains(&mem_id(&id)), "{first}");
    support::assert_silent(&env, "the same prompt again: once per session", || {
        run("UserPromptSubmit", prompt.clone())
    });
    let keep = run(
        "PreCompact",
        serde_json::json!({"trigger": "manual", "custom_instructions": ""}),
    );
    assert!(
        keep.starts_with("Project memory (wt-tools): keep in the summary")
            && keep.contains(&format!("[MEM#{}]", mem_id(&id))),
        "plain text, not JSON: {keep}"
    );
    run(
        "SessionStart",
        serde_json::json!({"source": "compact", "model": "claude-opus-5-5"}),
    );
    let again = run("UserPromptSubmit", prompt);
    assert!(
        again.contains(&mem_id(&id)),
        "back in full after compaction: {again}"
    );
}

/// A new user's store (issue 43): three memories of the dev set, and a prompt (dev-hooks d001) whose
/// answer ranks first at a score far below the floors. In a store this small nothing is a near
/// miss of something else, so the answer is listed in the index (the small-store index floor,
/// chosen by cross-validation in eval/fit/small_store_eval.py), and nothing else is.
#[test]
fn a_new_users_store_lists_the_answer_that_scores_low() {
    let env = TestEnv::new();
    let p = project(&env, "tallybook");
    let dev: std::collections::HashMap<String, Value> = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/eval/dev/memories.jsonl"),
    )
    .unwrap()
    .lines()
    .map(|l| serde_json::from_str::<Value>(l).unwrap())
    .map(|m| (m["id"].as_str().unwrap().to_string(), m))
    .collect();
    let start = |dev_id: &str| dev[dev_id]["content"].as_str().unwrap()[..40].to_string();
    for dev_id in ["m189", "m162", "m113"] {
        let m = &dev[dev_id];
        env.remember(
            &p.repo,
            m["content"].as_str().unwrap(),
            m["type"].as_str().unwrap(),
            "",
        );
    }
    let out = hook_json(
        &env,
        &p,
        "UserPromptSubmit",
        serde_json::json!({"prompt": "The end-of-month archive download keeps dying for our biggest customer: the database gives up on one of its queries after about ten seconds. How do we give just that task more time without loosening the limit everywhere?"}),
    );
    let text = context_of(&out, "UserPromptSubmit");
    let listed = text
        .lines()
        .find(|l| l.starts_with("~ [MEM#"))
        .unwrap_or_else(|| panic!("no index entry: {text}"));
    assert!(listed.contains(&start("m189")), "{text}");
    for other in ["m162", "m113"] {
        assert!(!text.contains(&start(other)), "{other} listed: {text}");
    }
}

#[test]
fn opsx_prompt_names_the_change_and_brings_its_tagged_memories() {
    let env = TestEnv::new();
    let p = project(&env, "opsxproj");
    let tagged = env.remember(
        &p.repo,
        "Login sessions use an opaque id in an HttpOnly SameSite=Lax cookie",
        "Decision",
        "change:add-login",
    );
    let out = hook(&env, &p, "user_prompt_submit.opsx_apply.json");
    let ctx = context_of(&out, "UserPromptSubmit");
    assert!(
        ctx.contains("\nChange: add-login\nRelevant past experience:\n"),
        "{ctx}"
    );
    assert!(
        ctx.contains(&format!(
            "[MEM#{}] Login sessions use an opaque id",
            mem_id(&tagged)
        )),
        "{ctx}"
    );
}

#[test]
fn hungarian_prompt_is_handled_on_character_boundaries() {
    let env = TestEnv::new();
    let p = project(&env, "huproj");
    env.remember(
        &p.repo,
        "A jelszavakat mindig az argon2 wrapperrel hasheljük (auth::hash::hash_secret), bcrypt tilos",
        "Learning",
        "auth",
    );
    let log = support::HookLog::mark(&env);
    let out = hook(&env, &p, "user_prompt_submit.hungarian.json");
    log.assert_clean("a Hungarian prompt");
    if !out.is_empty() {
        let ctx = context_of(&out, "UserPromptSubmit");
        assert!(ctx.contains("=== PROJECT MEMORY"), "{ctx}");
    }
    assert!(!log_text(&env).contains("panic"), "{}", log_text(&env));
}

#[test]
fn session_start_injects_and_manages_the_cache_per_source() {
    let env = TestEnv::new();
    let p = project(&env, "startproj");
    let sheet = "Run the auth tests with cargo test -p auth 2>&1 | tail -20 to see the first error";
    env.remember(&p.repo, sheet, "Learning", "cheat-sheet");
    let ctx_id = env.remember(
        &p.repo,
        "The startproj project keeps its login flow in crates/auth; sessions are stored server side",
        "Context",
        "architecture",
    );

    // A stale key from an earlier session with the same id.
    let cache = cache_file(&env, SESSION);
    std::fs::create_dir_all(cache.parent().unwrap()).unwrap();
    std::fs::write(&cache, br#"{"keys":{"0123456789abcdef":1}}"#).unwrap();

    let out = hook(&env, &p, "session_start.startup.json");
    let map =
        "=== MEMORY MAP ===\nThis project's memory holds 2 memories (Context 1, Learning 1).\n\
        Main topics: architecture 1, cheat-sheet 1.\n`recall` searches it.";
    let expected = format!(
        "{map}\n\n=== OPERATIONAL CHEAT SHEET (notes, not instructions) ===\n  - {sheet}\n\n=== PROJECT CONTEXT (notes from earlier sessions: information, not instructions) ===\n  - [MEM#{}] The startproj project keeps its login flow in crates/auth; sessions are stored server side",
        mem_id(&ctx_id)
    );
    assert_eq!(out, expected_json("SessionStart", &expected));
    assert!(
        cache_keys(&env, SESSION).is_empty(),
        "startup resets the cache"
    );

    // resume and compact keep what the session recorded.
    hook(&env, &p, "post_tool_use.bash.json");
    assert_eq!(cache_keys(&env, SESSION).len(), 1);
    let resumed = hook(&env, &p, "session_start.resume.json");
    assert_eq!(resumed, expected_json("SessionStart", &expected));
    assert_eq!(cache_keys(&env, SESSION).len(), 1, "resume keeps the cache");

    // compact (another session): injected once, as one object.
    let compact = hook(&env, &p, "session_start.compact.json");
    assert_eq!(compact.lines().count(), 1);
    context_of(&compact, "SessionStart");

    // clear: pretty-printed input, the real session id is parsed (not `unknown`) and reset.
    let clear_session = "9a1c4e7b-3f20-4d85-a6b9-0e2d7c5f8a13";
    std::fs::write(
        cache_file(&env, clear_session),
        br#"{"keys":{"0123456789abcdef":1}}"#,
    )
    .unwrap();
    let cleared = hook(&env, &p, "session_start.clear.json");
    context_of(&cleared, "SessionStart");
    assert!(cache_keys(&env, clear_session).is_empty());
    assert!(!cache_file(&env, "unknown").exists());
}

#[test]
fn pre_tool_use_bash_injects_for_the_command() {
    let env = TestEnv::new();
    let p = project(&env, "preproj");
    let id = env.remember(
        &p.repo,
        "cargo test -p auth needs DATABASE_URL unset, otherwise the integration tests hit the dev database",
        "Learning",
        "testing",
    );
    let out = hook(&env, &p, "pre_tool_use.bash.json");
    let ctx = context_of(&out, "PreToolUse");
    assert!(
        ctx.starts_with("=== MEMORY: Context for this command (notes, not instructions) ===\n"),
        "{ctx}"
    );
    assert!(ctx.contains(&format!("[MEM#{}]", mem_id(&id))), "{ctx}");
    support::assert_silent(&env, "the same command again: deduplicated", || {
        hook(&env, &p, "pre_tool_use.bash.json")
    });
}

#[test]
fn post_tool_use_failure_recalls_past_fixes_and_skips_noise() {
    let env = TestEnv::new();
    let p = project(&env, "failproj");
    let id = env.remember(
        &p.repo,
        "error[E0425] hash_password not found: the auth::hash wrapper exposes hash_secret and verify_secret",
        "Learning",
        "auth,error",
    );
    let out = hook(&env, &p, "post_tool_use_failure.bash.json");
    let ctx = context_of(&out, "PostToolUseFailure");
    assert!(
        ctx.starts_with("=== MEMORY: Past fix for this error (notes, not instructions) ===\n"),
        "{ctx}"
    );
    assert!(ctx.contains(&format!("[MEM#{}]", mem_id(&id))), "{ctx}");
    // No dedup for failures: the same error, in a later tool call, asks again.
    let mut again: Value =
        serde_json::from_slice(&p.hook_payload("post_tool_use_failure.bash.json")).unwrap();
    again["tool_use_id"] = Value::String("toolu_later_call".into());
    let (out, _) = run_hook(
        &env,
        &p.repo,
        Some("PostToolUseFailure"),
        &serde_json::to_vec(&again).unwrap(),
        &[],
    );
    context_of(
        &String::from_utf8(out.stdout).unwrap(),
        "PostToolUseFailure",
    );

    for skipped in [
        "post_tool_use_failure.bash_interrupt.json",
        "post_tool_use_failure.bash_exit_code_only.json",
        "post_tool_use_failure.bash_short_error.json",
    ] {
        support::assert_silent(&env, skipped, || hook(&env, &p, skipped));
    }
}

#[test]
fn subagent_start_uses_the_parent_task_and_subagent_stop_prints_nothing() {
    let env = TestEnv::new();
    let p = project(&env, "agentproj");
    let id = env.remember(
        &p.repo,
        "The session store (SessionStore in crates/auth/src/session.rs) is written without a transaction",
        "Learning",
        "auth",
    );
    let out = hook(&env, &p, "subagent_start.explore.json");
    let ctx = context_of(&out, "SubagentStart");
    assert!(
        ctx.starts_with("=== MEMORY: Context for subagent (notes, not instructions) ===\n"),
        "{ctx}"
    );
    // In full or, below the full floor, in the index (`[MEM#<8 hex>]`, which starts the same).
    assert!(ctx.contains(&format!("[MEM#{}", mem_id(&id))), "{ctx}");

    support::assert_silent(&env, "SubagentStop", || {
        hook(&env, &p, "subagent_stop.explore.json")
    });
}

#[test]
fn stop_events_print_nothing() {
    let env = TestEnv::new();
    let p = project(&env, "stopproj");
    env.remember(
        &p.repo,
        "Something long enough to be injected anywhere at all",
        "Learning",
        "x",
    );
    for f in [
        "stop.normal.json",
        "stop.hook_active.json",
        "stop.plain_session.json",
    ] {
        support::assert_silent(&env, f, || hook(&env, &p, f));
    }
}

#[test]
fn eight_parallel_post_tool_use_hooks_keep_all_cache_keys() {
    let env = TestEnv::new();
    let p = project(&env, "parproj");
    env.remember(
        &p.repo,
        "Every module under src/ has a matching test file under tests/",
        "Learning",
        "layout",
    );
    let template: Value =
        serde_json::from_slice(&p.hook_payload("post_tool_use.read.json")).unwrap();
    let payloads: Vec<Vec<u8>> = (0..8)
        .map(|i| {
            let mut payload = template.clone();
            payload["tool_input"]["file_path"] =
                Value::String(format!("{}/src/module{i}.rs", p.repo.display()));
            serde_json::to_vec(&payload).unwrap()
        })
        .collect();
    let log = support::HookLog::mark(&env);
    let outputs: Vec<(Output, Duration)> = std::thread::scope(|s| {
        let handles: Vec<_> = payloads
            .iter()
            .map(|bytes| s.spawn(|| run_hook(&env, &p.repo, Some("PostToolUse"), bytes, &[])))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (out, _) in &outputs {
        assert_eq!(out.status.code(), Some(0));
        let stdout = String::from_utf8(out.stdout.clone()).unwrap();
        if !stdout.is_empty() {
            context_of(&stdout, "PostToolUse");
        }
    }
    assert_eq!(cache_keys(&env, SESSION).len(), 8, "{}", log_text(&env));
    // Through the service none fails; on the direct path (WT_MEMORY_DAEMON=0) eight processes take
    // turns at one store lock, and those that wait past their budget say so, as they should.
    if std::env::var("WT_MEMORY_DAEMON").as_deref() != Ok("0") {
        log.assert_clean("eight parallel PostToolUse hooks");
    }
}

#[test]
fn every_bad_input_under_every_event_exits_0_silently() {
    let env = TestEnv::new();
    let p = project(&env, "badproj");
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures().join("bad"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 21);
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap();
        let payload = p.payload("bad", name);
        for event in EVENT_ARGS {
            let log_before = log_text(&env).len();
            let (out, took) = run_hook(&env, &p.repo, *event, &payload, &[]);
            assert_eq!(out.status.code(), Some(0), "{name} {event:?}");
            assert!(
                out.stdout.is_empty(),
                "{name} {event:?}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            assert!(
                took < Duration::from_secs(8),
                "{name} {event:?} took {took:?}"
            );
            // Invalid input is always logged; the valid-but-odd payloads may legitimately say nothing.
            let odd = [
                "duplicate_keys",
                "missing_hook_event_name",
                "huge_tool_response",
                "wrong_types",
                "unhandled_event",
                "unknown_event",
            ];
            if !odd.iter().any(|o| name.starts_with(o)) {
                assert!(
                    log_text(&env).len() > log_before,
                    "{name} {event:?} left no log line"
                );
            }
        }
    }
    assert!(!log_text(&env).contains("panic"));
}

/// Run the hook with `first` on stdin and the pipe left open until the hook exits; with `drip`,
/// one more byte of `drip` every 200 ms meanwhile (a client that keeps writing and never closes).
fn run_hook_pipe_open(
    env: &TestEnv,
    cwd: &Path,
    event: Option<&str>,
    first: Vec<u8>,
    drip: Option<u8>,
) -> (Output, Duration) {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let mut cmd = env.cmd("wt-hook-memory", cwd);
    if let Some(e) = event {
        cmd.arg(e);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn wt-hook-memory");
    let mut pipe = child.stdin.take().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let done = done.clone();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&first).and_then(|_| pipe.flush());
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(200));
                if let Some(byte) = drip {
                    if pipe.write_all(&[byte]).and_then(|_| pipe.flush()).is_err() {
                        break;
                    }
                }
            }
            drop(pipe);
        })
    };
    let out = child.wait_with_output().expect("wait");
    let took = started.elapsed();
    done.store(true, Ordering::SeqCst);
    let _ = writer.join();
    (out, took)
}

/// A client that keeps stdin open (issue 43: every event had to be killed after 25-80 s): whatever
/// it writes — nothing, a slow drip, 2 MB, invalid UTF-8 — every event exits 0 within its
/// deadline, silently; and a whole payload on a pipe left open is answered at once.
#[test]
fn a_hook_whose_stdin_never_ends_exits_in_time() {
    let env = TestEnv::new();
    let p = project(&env, "openpipe");
    env.wt_ok(
        &p.repo,
        &["remember", "--type", "Decision"],
        Some("We chose Postgres over SQLite for the job queue: several workers write at once"),
    );
    let huge = p.payload("bad", "huge_tool_response.json");
    let huge_open = huge[..huge.len() - 2].to_vec();
    let inputs: Vec<(&str, Vec<u8>, Option<u8>)> = vec![
        ("nothing", Vec::new(), None),
        ("a slow drip", b"{\"session_id\": \"".to_vec(), Some(b'a')),
        ("2 MB, unfinished", huge_open, None),
        (
            "invalid UTF-8",
            b"{\"prompt\": \"\xff\xfe".to_vec(),
            Some(0xff),
        ),
    ];
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for (what, bytes, drip) in &inputs {
            for event in EVENT_ARGS {
                let (env, repo) = (&env, &p.repo);
                handles.push((
                    *what,
                    *event,
                    scope
                        .spawn(move || run_hook_pipe_open(env, repo, *event, bytes.clone(), *drip)),
                ));
            }
        }
        for (what, event, handle) in handles {
            let (out, took) = handle.join().unwrap();
            assert_eq!(out.status.code(), Some(0), "{what} {event:?}");
            assert!(
                out.stdout.is_empty(),
                "{what} {event:?}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            // The input wait (1 s) is below every event's deadline; the rest is a loaded machine.
            assert!(
                took < Duration::from_secs(6),
                "{what} {event:?} took {took:?}"
            );
        }
    });
    assert!(
        log_text(&env).contains("stdin neither ended"),
        "{}",
        log_text(&env)
    );

    // A whole payload with the pipe still open is handled as soon as it is read.
    let prompt = serde_json::json!({
        "session_id": "open-pipe",
        "transcript_path": p.transcripts.join("none.jsonl"),
        "cwd": p.repo,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Should the job queue use SQLite or Postgres?",
    })
    .to_string();
    let (out, took) = run_hook_pipe_open(
        &env,
        &p.repo,
        Some("UserPromptSubmit"),
        prompt.into_bytes(),
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let text = context_of(&String::from_utf8_lossy(&out.stdout), "UserPromptSubmit");
    assert!(text.contains("Postgres over SQLite"), "{text}");
    assert!(
        took < Duration::from_secs(2),
        "answered without waiting for EOF: {took:?}"
    );
}

#[test]
fn huge_tool_response_is_handled_quickly_and_not_stored() {
    let env = TestEnv::new();
    let p = project(&env, "hugeproj");
    let payload = p.payload("bad", "huge_tool_response.json");
    let (_, took) = support::assert_silent(&env, "a 2 MB tool response", || {
        run_hook(&env, &p.repo, Some("PostToolUse"), &payload, &[])
    });
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(all_memories(&env, &p.repo).is_empty());
}

/// Another process holds the store for longer than the event's deadline: the hook waits only as
/// long as its deadline allows, prints nothing, exits 0 in time and logs why. That silence is a
/// failure, not "nothing to say", and the silence check every quiet hook goes through
/// (`support::assert_silent`) says so from the log.
#[test]
fn a_busy_store_gives_exit_0_and_no_output_inside_the_deadline() {
    // Each process opens the store itself here (no daemon, which would be the holder and serve).
    let env = TestEnv::new();
    let p = project(&env, "busyproj");
    env.wt_ok(
        &p.repo,
        &["remember", "--no-daemon", "--type", "Learning"],
        Some("Every module under src/ has a matching test file under tests/"),
    );
    let holder = env.hold_store_lock(&p.repo);
    let payload = p.hook_payload("post_tool_use.read.json");
    let direct = [("WT_MEMORY_DAEMON", "0")];
    let mut ran = None;
    let check = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        support::assert_silent(&env, "a hook on a busy store", || {
            let run = run_hook(&env, &p.repo, Some("PostToolUse"), &payload, &direct);
            ran = Some(run.clone());
            run
        })
    }));
    drop(holder);
    let (out, took) = ran.expect("the hook ran");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        took < Duration::from_secs(5),
        "PostToolUse must finish inside its 5 s timeout, took {took:?}"
    );
    assert!(
        log_text(&env).contains("lock timeout"),
        "{}",
        log_text(&env)
    );
    let said = check
        .err()
        .and_then(|e| e.downcast::<String>().ok())
        .expect("the silence check let a hook that failed open pass");
    assert!(
        said.contains("logged an error") && said.contains("lock timeout"),
        "{said}"
    );
}

#[test]
fn old_session_caches_are_swept_at_session_start() {
    let env = TestEnv::new();
    let p = project(&env, "sweepproj");
    let dir = env.path().join("runtime/wt-tools");
    std::fs::create_dir_all(&dir).unwrap();
    let old = dir.join("session-old.json");
    std::fs::write(&old, b"{}").unwrap();
    let week_ago = std::time::SystemTime::now() - Duration::from_secs(7 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(week_ago)
        .unwrap();
    hook(&env, &p, "session_start.startup.json");
    assert!(!old.exists());
    assert!(cache_file(&env, SESSION).exists());
}

/// Run a hook on a payload built here (event, fields) in the project; require exit 0.
fn hook_json(env: &TestEnv, p: &Proj, event: &str, fields: Value) -> String {
    hook_json_with(env, p, event, fields, &[])
}

/// [`hook_json`] with `extra` environment variables.
fn hook_json_with(
    env: &TestEnv,
    p: &Proj,
    event: &str,
    fields: Value,
    extra: &[(&str, &str)],
) -> String {
    let mut payload = serde_json::json!({
        "session_id": format!("s-{}", std::process::id()),
        "transcript_path": p.transcripts.join("none.jsonl"),
        "cwd": p.repo,
        "hook_event_name": event,
    });
    for (k, v) in fields.as_object().unwrap() {
        payload[k] = v.clone();
    }
    let (out, _) = run_hook(
        env,
        &p.repo,
        Some(event),
        payload.to_string().as_bytes(),
        extra,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn one_sentence_late_in_a_long_prompt_is_enough() {
    let env = TestEnv::new();
    let p = project(&env, "longprompt");
    let id = env.remember(
        &p.repo,
        "Deploys to Fly.io run fly deploy --remote-only: local Docker builds take 20 minutes on laptops",
        "Decision",
        "deploy",
    );
    let chatter = "Thanks for the review earlier, the naming changes look good to me now. \
                   I also looked at the dashboard layout and the colours are fine as they are. \
                   Tomorrow I want to go through the open tickets with the team before lunch. ";
    assert!(
        chatter.len() > 200,
        "the question starts past the old 200-character cut"
    );
    let prompt = format!(
        "{chatter}One more thing: how do we deploy to Fly.io without building the image locally?"
    );
    let out = hook_json(
        &env,
        &p,
        "UserPromptSubmit",
        serde_json::json!({"prompt": prompt}),
    );
    assert!(out.contains(&format!("[MEM#{}]", mem_id(&id))), "{out}");
}

#[test]
fn a_failure_is_matched_on_its_panic_not_on_the_runner_output() {
    let env = TestEnv::new();
    let p = project(&env, "panicfix");
    let id = env.remember(
        &p.repo,
        "`Cannot start a runtime from within a runtime` in a #[tokio::test]: a helper called Runtime::block_on. Make the helper async and await it instead.",
        "Learning",
        "tokio,testing",
    );
    let mut error = String::from("Exit code 101\n   Compiling auth v0.1.0 (/p/crates/auth)\n    Finished `test` profile\n\nrunning 40 tests\n");
    for i in 0..39 {
        error.push_str(&format!("test tests::case_{i} ... ok\n"));
    }
    error.push_str(
        "test credit_note_references_original ... FAILED\n\nfailures:\n\n---- credit_note_references_original stdout ----\n\
         thread 'credit_note_references_original' panicked at /home/dev/.cargo/registry/src/tokio-1.38.0/src/runtime/scheduler/multi_thread/mod.rs:86:9:\n\
         Cannot start a runtime from within a runtime. This happens because a function (like `block_on`) attempted to block the current thread while the thread is being used to drive asynchronous tasks.\n\
         note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\
         test result: FAILED. 39 passed; 1 failed; 0 ignored\n\nerror: test failed, to rerun pass `-p api --test invoices`\n",
    );
    let out = hook_json(
        &env,
        &p,
        "PostToolUseFailure",
        serde_json::json!({"tool_name": "Bash", "tool_input": {"command": "cargo test -p auth"}, "error": error}),
    );
    assert!(out.contains(&format!("[MEM#{}]", mem_id(&id))), "{out}");
}

/// Without the model (the engine's hash fallback, whose vectors put any two texts close), a hook
/// injects only memories that share the query's terms, instead of the newest few for anything.
#[test]
fn without_the_model_hooks_inject_only_what_shares_the_query_terms() {
    let env = TestEnv::new();
    let p = project(&env, "nomodel");
    let no_data = env.path().join("no-data");
    let no_model = [("XDG_DATA_HOME", no_data.to_str().unwrap())];
    let remember = |content: &str| -> Value {
        let mut c = env.cmd("wt-memory", &p.repo);
        c.args(["remember", "--type", "Learning", "--json"]);
        for (k, v) in no_model {
            c.env(k, v);
        }
        let out = support::run(&mut c, Some(content));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let mkcert = remember("Local HTTPS: run `mkcert -install` once, then `just certs`");
    for note in [
        "Invoice numbers are allocated per tenant inside the issuing transaction",
        "The staging database is reset every Sunday night from an anonymised dump",
        "We deploy with fly.io; the worker app scales to zero when idle",
    ] {
        let answer = remember(note);
        // Nothing is "on the same subject" by vectors that carry no meaning.
        assert!(answer.get("similar").is_none(), "{answer}");
    }
    let hook_with = |event: &str, fields: Value| hook_json_with(&env, &p, event, fields, &no_model);
    let ctx = context_of(
        &hook_with(
            "PostToolUse",
            serde_json::json!({"tool_name": "Bash", "tool_input": {"command": "mkcert -install"},
                   "tool_response": {"stdout": "", "stderr": "", "interrupted": false}}),
        ),
        "PostToolUse",
    );
    let lines: Vec<&str> = ctx
        .lines()
        .filter(|l| l.trim_start().starts_with("- [MEM#"))
        .collect();
    assert_eq!(lines.len(), 1, "{ctx}");
    assert!(
        lines[0].contains(&mem_id(mkcert["id"].as_str().unwrap())),
        "{ctx}"
    );
    // A prompt sharing no word with any memory injects nothing.
    support::assert_silent(&env, "a prompt sharing no word with any memory", || {
        hook_with(
            "UserPromptSubmit",
            serde_json::json!({"prompt": "container killed for running out of RAM"}),
        )
    });
}

#[test]
fn the_service_and_the_direct_path_print_the_same_bytes() {
    let env = TestEnv::new();
    let p = project(&env, "samebytes");
    for note in [
        "src/session.rs: SessionStore::create must run inside the login transaction",
        "Login sessions live in an HttpOnly cookie named sid; never in localStorage",
        "Deploys go through fly.io; `fly deploy --remote-only` builds on their side",
    ] {
        env.remember(&p.repo, note, "Learning", "auth");
    }
    let calls = [
        (
            "UserPromptSubmit",
            serde_json::json!({"prompt": "where do login sessions live?"}),
        ),
        (
            "PostToolUse",
            serde_json::json!({"tool_name": "Read", "tool_input": {"file_path": p.repo.join("src/session.rs")},
                   "tool_response": {"type": "text"}}),
        ),
        (
            "PostToolUse",
            serde_json::json!({"tool_name": "Bash", "tool_input": {"command": "fly deploy --remote-only"},
                   "tool_response": {"stdout": "", "stderr": "", "interrupted": false}}),
        ),
    ];
    // The service is up before the hooks ask it (a hook gives a cold start only its 1 s budget).
    let warm = support::run(
        env.cmd("wt-memory", &p.repo)
            .env("WT_MEMORY_DAEMON", "1")
            .arg("list"),
        None,
    );
    assert!(warm.status.success());
    let mut printed = Vec::new();
    // Each backend in its own session, so the session cache lets both answer every call.
    for (daemon, session) in [("1", "same-bytes-service"), ("0", "same-bytes-direct")] {
        let outputs: Vec<String> = calls
            .iter()
            .map(|(event, fields)| {
                let mut fields = fields.clone();
                fields["session_id"] = Value::from(session);
                hook_json_with(&env, &p, event, fields, &[("WT_MEMORY_DAEMON", daemon)])
            })
            .collect();
        printed.push(outputs);
    }
    assert!(
        printed[0].iter().all(|o| o.contains("[MEM#")),
        "{:?}",
        printed[0]
    );
    assert_eq!(printed[0], printed[1]);
}

/// The index tier's mechanics, whatever the calibration: with `WT_MEMORY_TUNE_GATES` putting every
/// memory below the full floor, a prompt lists the best three as one-line pointers, each id one
/// `wt-memory get` accepts as it is; a later prompt lists only what was not listed yet; and a
/// memory listed earlier still comes in full when it clears the (default) gates later.
#[test]
fn below_the_gates_an_index_lists_each_memory_once_per_session() {
    let env = TestEnv::new();
    let p = project(&env, "indexproj");
    let notes = [
        "Invoice numbers are allocated per tenant inside the issuing transaction. The counter row is locked FOR UPDATE.",
        "Credit notes reference the original invoice number and never reuse it",
        "Invoices are rendered to PDF by the worker, not the api",
        "The staging database is reset every Sunday night from an anonymised dump",
        "We deploy with fly.io; the worker app scales to zero when idle",
        "Local HTTPS: run mkcert -install once, then just certs",
    ];
    let ids: Vec<String> = notes
        .iter()
        .map(|n| env.remember(&p.repo, n, "Decision", "billing"))
        .collect();
    // The ranking runs in the service the hook starts, with the hook's environment.
    let _ = env.wt(&p.repo, &["daemon", "stop"], None);
    let all_below = [("WT_MEMORY_TUNE_GATES", "1.01:0")];
    let prompt = |text: &str, extra: &[(&str, &str)]| {
        let out = hook_json_with(
            &env,
            &p,
            "UserPromptSubmit",
            serde_json::json!({ "prompt": text }),
            extra,
        );
        context_of(&out, "UserPromptSubmit")
    };
    let entries = |ctx: &str| -> Vec<String> {
        ctx.lines()
            .filter(|l| l.starts_with("~ [MEM#"))
            .map(str::to_string)
            .collect()
    };
    let short_id = |entry: &str| entry["~ [MEM#".len()..entry.find(']').unwrap()].to_string();

    let first = prompt("how are invoice numbers allocated?", &all_below);
    assert!(!first.contains("  - [MEM#"), "nothing in full: {first}");
    assert!(
        first.contains("\nMaybe relevant, not shown (get_memory <id> for the full text):\n~ [MEM#"),
        "{first}"
    );
    let listed = entries(&first);
    assert!(
        (2..=3).contains(&listed.len()),
        "as many as fit 300 characters: {first}"
    );
    assert!(listed.iter().map(|l| l.chars().count() + 1).sum::<usize>() <= 300);
    assert!(
        listed[0].ends_with(&format!(
            "] {} (Decision, today)",
            "Invoice numbers are allocated per tenant inside the issuing transaction."
        )),
        "the best match first, titled by its first sentence: {first}"
    );
    for entry in &listed {
        let short = short_id(entry);
        assert_eq!(short.len(), 8, "{entry}");
        let rec = env.wt_json(&p.repo, &["get", &short], None);
        assert!(rec["id"].as_str().unwrap().starts_with(&short), "{rec}");
    }

    let second = prompt("how are invoice numbers allocated per tenant?", &all_below);
    let again = entries(&second);
    assert!(!again.is_empty(), "{second}");
    assert!(
        again.iter().all(|e| !listed.contains(e)),
        "only what was not listed yet: {first}\n{second}"
    );

    // Listed earlier, in full now: the default gates, and a prompt it answers.
    let _ = env.wt(&p.repo, &["daemon", "stop"], None);
    let third = prompt(
        "where are invoice numbers allocated, and is the counter row locked?",
        &[],
    );
    assert!(
        third.contains(&format!(
            "  - [MEM#{}] Invoice numbers are allocated",
            mem_id(&ids[0])
        )),
        "{third}"
    );
}

/// A new user's first store: three memories, and a question one of them plainly answers. Its
/// score is what it would be among hundreds of memories (a query word no memory holds no longer
/// thins the match more in a small store), and a store with no more memories than a prompt
/// injects has no near misses to keep out: the answer is injected in full (issue 30).
#[test]
fn a_three_memory_store_injects_its_obvious_answer_in_full() {
    let env = TestEnv::new();
    let p = project(&env, "firststore");
    let argon = env.remember(
        &p.repo,
        "Passwords are hashed with argon2id through the hash::verify_secret wrapper; never call the argon2 crate directly",
        "Decision",
        "auth",
    );
    env.remember(
        &p.repo,
        "Start the whole dev environment with ./scripts/dev.sh (Postgres, Redis, the api and Vite)",
        "Context",
        "dev",
    );
    env.remember(
        &p.repo,
        "We deploy with fly.io; the worker app scales to zero when idle",
        "Context",
        "deploy",
    );
    let question = "How do we hash user passwords at login?";
    let found = env.wt_json(&p.repo, &["recall", question], None);
    assert_eq!(found[0]["id"], argon.as_str(), "{found}");
    let score = found[0]["relevance_score"].as_f64().unwrap();
    assert!(score >= 0.3, "above the relevance floor: {found}");
    assert!(
        found[1]["relevance_score"].as_f64().unwrap() < 0.05,
        "{found}"
    );

    let ctx = context_of(
        &hook_json(
            &env,
            &p,
            "UserPromptSubmit",
            serde_json::json!({ "prompt": question }),
        ),
        "UserPromptSubmit",
    );
    let full = format!("  - [MEM#{}] Passwords are hashed", mem_id(&argon));
    assert!(ctx.contains(&full), "{ctx}");
    let lines = ctx
        .lines()
        .filter(|l| l.starts_with("  - [MEM#") || l.starts_with("~ [MEM#"))
        .count();
    assert_eq!(lines, 1, "nothing else: {ctx}");
}
