//! The resident per-project service (the default; `WT_MEMORY_DAEMON=1` is set anyway, so these
//! tests hold when the suite runs with `WT_MEMORY_DAEMON=0`): real processes, real sockets, real
//! stores. Each test has its own runtime directory, so its daemons are its own; they exit when the
//! test's temporary directory (and with it their socket) goes away.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{bin_path, run, TestEnv};

/// `wt-memory` through the daemon.
fn wtd(env: &TestEnv, cwd: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = env.cmd("wt-memory", cwd);
    cmd.env("WT_MEMORY_DAEMON", "1").args(args);
    run(&mut cmd, stdin)
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "failed ({:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn status(env: &TestEnv, repo: &Path) -> Option<Value> {
    let out = wtd(env, repo, &["daemon", "status", "--json"], None);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).unwrap())
}

fn project_name(env: &TestEnv, repo: &Path) -> String {
    let s = env.wt_json(repo, &["status", "--json", "--no-daemon"], None);
    s["project"].as_str().unwrap().to_string()
}

/// The socket of the service of `repo`'s store: named by the store's directory, not its name.
fn socket(env: &TestEnv, repo: &Path) -> PathBuf {
    let store = env.store_root().join(project_name(env, repo));
    env.path()
        .join("runtime/wt-tools/daemon")
        .join(format!("{}.sock", wt_memory_base::wire::store_key(&store)))
}

/// Pids of the daemons serving `name` (from /proc, so a daemon that does not answer counts).
fn daemon_pids(name: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let named = format!("--project={name}");
        if args.iter().any(|a| a == "serve") && args.contains(&named) {
            pids.push(pid);
        }
    }
    pids
}

/// The UserPromptSubmit fixture, pointed at `repo`.
fn prompt_payload(repo: &Path) -> String {
    std::fs::read_to_string(support::fixtures_dir().join("hooks/user_prompt_submit.normal.json"))
        .unwrap()
        .replace("/path/to/proj", &repo.display().to_string())
}

/// A repository whose first note went through a daemon: (repo, project name, that daemon's pid).
fn one_note_through_a_daemon(env: &TestEnv, note: &str) -> (PathBuf, String, u32) {
    let repo = env.git_repo("proj");
    let name = project_name(env, &repo);
    ok(wtd(
        env,
        &repo,
        &["remember", "--type", "Context"],
        Some(note),
    ));
    let pids = daemon_pids(&name);
    assert_eq!(pids.len(), 1, "one daemon serves the project");
    (repo, name, pids[0])
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill(pid: u32, signal: &str) {
    Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
}

#[test]
fn racing_clients_start_exactly_one_daemon_and_all_see_each_others_writes() {
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let name = project_name(&env, &repo);
    let outputs: Vec<Output> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (env, repo) = (&env, &repo);
                s.spawn(move || {
                    let note = format!("Racing writer {i} notes that the cache warms in {i}0 ms");
                    wtd(env, repo, &["remember", "--type", "Learning"], Some(&note))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for out in outputs {
        ok(out);
    }
    assert_eq!(daemon_pids(&name).len(), 1, "{:?}", daemon_pids(&name));
    let listed: Value = serde_json::from_str(&ok(wtd(&env, &repo, &["list"], None))).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 8);
    let st = status(&env, &repo).expect("a daemon runs");
    assert!(st["requests"].as_u64().unwrap() >= 9, "{st}");
    // The direct path sees the same store once the daemon lets go of it.
    ok(wtd(&env, &repo, &["daemon", "stop"], None));
    wait_until("daemon gone", Duration::from_secs(10), || {
        daemon_pids(&name).is_empty()
    });
    let direct = env.wt_json(&repo, &["list", "--no-daemon"], None);
    assert_eq!(direct.as_array().unwrap().len(), 8);
}

#[test]
fn a_daemon_killed_mid_burst_loses_no_acknowledged_write_and_is_replaced() {
    let env = TestEnv::new();
    let (repo, name, first) = one_note_through_a_daemon(&env, "The burst starts here");
    let mut acknowledged = vec!["The burst starts here".to_string()];
    for i in 0..30 {
        if i == 10 {
            kill(first, "-KILL");
        }
        let note = format!("Burst write number {i} records build step {i}");
        let out = wtd(&env, &repo, &["remember", "--type", "Context"], Some(&note));
        if out.status.success() {
            acknowledged.push(note);
        }
    }
    assert!(
        acknowledged.len() >= 30,
        "only {} of 31 acknowledged",
        acknowledged.len()
    );
    let now = daemon_pids(&name);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now, [first], "the killed daemon was replaced");
    let listed: Value = serde_json::from_str(&ok(wtd(&env, &repo, &["list"], None))).unwrap();
    let contents: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    for note in &acknowledged {
        assert!(contents.contains(&note.as_str()), "lost: {note}");
    }
    // A hook after all this still answers inside its deadline.
    let payload = prompt_payload(&repo);
    let started = Instant::now();
    let mut hook = env.cmd("wt-hook-memory", &repo);
    hook.env("WT_MEMORY_DAEMON", "1").arg("UserPromptSubmit");
    let out = run(&mut hook, Some(&payload));
    assert_eq!(out.status.code(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_stale_socket_is_replaced_and_so_is_a_service_whose_binary_was_upgraded_in_place() {
    let env = TestEnv::new();
    // Our own copy of the binaries, so "upgrading" it touches nothing other tests use.
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["wt-memory", "wt-memory-engine", "wt-hook-memory"] {
        std::fs::copy(bin_path(name), bin.join(name)).unwrap();
    }
    let repo = env.git_repo("proj");
    let name = project_name(&env, &repo);
    let wt = |args: &[&str], stdin: Option<&str>| {
        let mut cmd = Command::new(bin.join("wt-memory"));
        support::clean_env(&mut cmd)
            .current_dir(&repo)
            .env("WT_MEMORY_DAEMON", "1")
            .args(args);
        for (k, v) in env.envs() {
            cmd.env(k, v);
        }
        run(&mut cmd, stdin)
    };
    // A socket file nobody listens on (a daemon that died without cleaning up).
    let sock = socket(&env, &repo);
    std::fs::create_dir_all(sock.parent().unwrap()).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    ok(wt(
        &["remember", "--type", "Learning"],
        Some("Stale sockets are replaced"),
    ));
    let first = daemon_pids(&name);
    assert_eq!(first.len(), 1);
    // The engine binary replaced at its own path (an upgrade or rebuild in place, here the same
    // bytes written a minute later): the service started from the old file is replaced, not
    // kept running old code beside the new one. (Another installation of one version elsewhere
    // shares the service: `two_installations_of_one_version_share_one_service`; a newer version
    // replacing an older one is `wire`'s unit test.)
    let engine = bin.join("wt-memory-engine");
    let bytes = std::fs::read(&engine).unwrap();
    std::fs::remove_file(&engine).unwrap();
    std::fs::write(&engine, &bytes).unwrap();
    std::fs::set_permissions(&engine, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&engine)
        .unwrap()
        .set_modified(std::time::SystemTime::now() + Duration::from_secs(60))
        .unwrap();
    ok(wt(
        &["remember", "--type", "Learning"],
        Some("An upgrade in place replaces the service"),
    ));
    let found: Value = serde_json::from_str(&ok(wt(&["recall", "stale sockets"], None))).unwrap();
    assert_eq!(found.as_array().unwrap().len(), 2, "{found}");
    let now = daemon_pids(&name);
    assert_eq!(now.len(), 1, "one service after the upgrade: {now:?}");
    assert_ne!(
        now, first,
        "the service of the replaced binary still serves"
    );
    wait_until(
        "the replaced service exits",
        Duration::from_secs(15),
        || !alive(first[0]),
    );
}

#[test]
fn idle_exit_and_sigterm_leave_no_socket_and_keep_every_write() {
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let name = project_name(&env, &repo);
    let mut cmd = env.cmd("wt-memory", &repo);
    cmd.env("WT_MEMORY_DAEMON", "1")
        .env("WT_MEMORY_DAEMON_IDLE_SECS", "1")
        .args(["remember", "--type", "Context"]);
    ok(run(&mut cmd, Some("Idle daemons exit on their own")));
    let pids = daemon_pids(&name);
    assert_eq!(pids.len(), 1);
    wait_until("idle exit", Duration::from_secs(15), || !alive(pids[0]));
    assert!(!socket(&env, &repo).exists(), "socket left behind");

    // SIGTERM while an import is in progress: the import finishes, then the daemon exits.
    let records: Vec<Value> = (0..60)
        .map(|i| {
            serde_json::json!({"id": uuid_like(i), "content": format!("Imported fact {i}: the parser accepts tab {i}"),
                "experience_type": "Learning", "tags": [], "created_at": "2026-01-01T00:00:00Z"})
        })
        .collect();
    let doc = serde_json::json!({"version": 1, "format": "wt-memory-export", "records": records});
    let file = env.path().join("import.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    ok(wtd(&env, &repo, &["status"], None));
    let pid = daemon_pids(&name)[0];
    let mut import = env.cmd("wt-memory", &repo);
    import
        .env("WT_MEMORY_DAEMON", "1")
        .args(["import", file.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = import.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    kill(pid, "-TERM");
    let out = child.wait_with_output().unwrap();
    wait_until("SIGTERM exit", Duration::from_secs(30), || !alive(pid));
    assert!(!socket(&env, &repo).exists(), "socket left behind");
    let listed = env.wt_json(&repo, &["list", "--no-daemon"], None);
    let n = listed.as_array().unwrap().len();
    if out.status.success() {
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["imported"], 60, "{report}");
        assert_eq!(n, 61);
    } else {
        // Not acknowledged: the request never started; nothing half-done.
        assert!(n == 1 || n == 61, "{n}");
    }
}

fn uuid_like(i: u32) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

#[test]
fn hooks_mcp_and_cli_share_one_daemon_and_see_writes_at_once() {
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let name = project_name(&env, &repo);
    ok(wtd(
        &env,
        &repo,
        &["remember", "--type", "Decision", "--tags", "db"],
        Some("The job queue uses Postgres, not SQLite, because of concurrent writers"),
    ));
    let payload = prompt_payload(&repo);
    let mut payload: Value = serde_json::from_str(&payload).unwrap();
    payload["prompt"] = Value::String("Should the job queue use SQLite or Postgres?".into());
    let mut hook = env.cmd("wt-hook-memory", &repo);
    hook.env("WT_MEMORY_DAEMON", "1")
        .env("CLAUDE_PROJECT_DIR", &repo)
        .arg("UserPromptSubmit");
    let out = run(&mut hook, Some(&payload.to_string()));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Postgres"), "hook injected: {text}");
    assert_eq!(daemon_pids(&name).len(), 1);
    let st = status(&env, &repo).unwrap();
    assert!(st["requests"].as_u64().unwrap() >= 2, "{st}");
    assert!(st["rss_kb"].as_u64().unwrap() > 0);
}

#[test]
fn another_user_gets_no_answer() {
    if !support::root_or_skipped(
        "another_user_gets_no_answer",
        "to run a client as another uid",
    ) {
        return;
    }
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let sock = socket(&env, &repo);
    ok(wtd(
        &env,
        &repo,
        &["remember", "--type", "Context"],
        Some("Only the owner may ask"),
    ));

    // The file modes keep another user out already; open them to reach the uid check itself.
    let dirs = [
        env.path().to_path_buf(),
        env.path().join("runtime"),
        env.path().join("runtime/wt-tools"),
        sock.parent().unwrap().to_path_buf(),
    ];
    for d in &dirs {
        set_mode(d, 0o711);
    }
    set_mode(&sock, 0o666);
    let script = format!(
        // The service refuses at once and closes: read its line before asking anything.
        "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect({:?})\n s.settimeout(5)\n said=s.recv(4096).decode()\n try:\n  s.sendall(b'{{\"control\":\"status\"}}\\n')\n  said+=s.recv(4096).decode()\n except OSError:\n  pass\n print(said)\nexcept OSError as e:\n print('refused', e)\n",
        sock.display().to_string()
    );
    use std::os::unix::process::CommandExt;
    let out = Command::new("python3")
        .args(["-c", &script])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    for d in &dirs {
        set_mode(d, 0o700);
    }
    set_mode(&sock, 0o600);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        !said.contains("uptime_secs"),
        "another user got an answer: {said}"
    );
    assert!(
        said.contains("serves only its own user"),
        "the refusal is said: {said}"
    );
    let mode = std::fs::metadata(&sock).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    let dir = std::fs::metadata(sock.parent().unwrap()).unwrap();
    assert_eq!(dir.permissions().mode() & 0o777, 0o700);
}

#[test]
fn a_daemon_started_while_the_last_one_closes_the_store_waits_and_takes_over() {
    let env = TestEnv::new();
    let (repo, _, first) =
        one_note_through_a_daemon(&env, "The handover between daemons keeps this note");
    ok(wtd(&env, &repo, &["daemon", "stop"], None));
    wait_until("the first daemon exits", Duration::from_secs(15), || {
        !alive(first)
    });
    // A daemon still closing the store holds the daemon lock, its socket already gone.
    let lock = socket(&env, &repo).with_extension("daemon.lock");
    let closing = support::hold_lock(&lock);
    let mut serve = env.cmd("wt-memory", &repo);
    serve
        .env("WT_MEMORY_DAEMON", "1")
        .arg("serve")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut next = serve.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        next.try_wait().unwrap().is_none(),
        "the new daemon gave up instead of waiting for the closing one"
    );
    assert!(!socket(&env, &repo).exists());
    drop(closing);
    wait_until("the waiting daemon serves", Duration::from_secs(10), || {
        status(&env, &repo).is_some()
    });
    assert_eq!(status(&env, &repo).unwrap()["pid"], next.id());
    let found = ok(wtd(&env, &repo, &["recall", "daemon handover"], None));
    assert!(found.contains("handover between daemons"), "{found}");
    let _ = next.kill();
    let _ = next.wait();
}

#[test]
fn a_quiet_daemon_brings_the_store_files_up_to_date() {
    let env = TestEnv::new();
    let (repo, name, _) = one_note_through_a_daemon(&env, "Checkpoints follow a quiet second");
    let store = env.store_root().join(&name);
    let log = env.path().join(format!(
        "state/wt-tools/daemon-{}.log",
        wt_memory_base::wire::store_key(&store)
    ));
    wait_until(
        "a checkpoint in the daemon's log",
        Duration::from_secs(10),
        || std::fs::read_to_string(&log).is_ok_and(|l| l.contains("checkpoint in")),
    );
    // Nothing written since: no second checkpoint, however long it stays quiet.
    std::thread::sleep(Duration::from_millis(2500));
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches("checkpoint in").count(), 1, "{text}");
    let found = ok(wtd(&env, &repo, &["recall", "quiet checkpoints"], None));
    assert!(found.contains("Checkpoints follow"), "{found}");
}

/// How many requests of kind `op` the running daemon served.
fn served_count(env: &TestEnv, repo: &Path, op: &str) -> u64 {
    let s = status(env, repo).expect("a daemon runs");
    s["service"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == op)
        .map_or(0, |o| o["count"].as_u64().unwrap())
}

/// How many command lines the `wt-memory` front forwarded to the running daemon.
fn forwarded_count(env: &TestEnv, repo: &Path) -> u64 {
    served_count(env, repo, "command_line")
}

#[test]
fn the_front_has_a_running_daemon_carry_out_remember_as_the_engine_binary_would() {
    let env = TestEnv::new();
    let first = "Deploys run through the staging cluster before production";
    let (repo, name, pid) = one_note_through_a_daemon(&env, first);
    let first_id = {
        let listed: Value = serde_json::from_str(&ok(wtd(&env, &repo, &["list"], None))).unwrap();
        listed[0]["id"].as_str().unwrap().to_string()
    };
    assert_eq!(
        forwarded_count(&env, &repo),
        0,
        "the first call started the daemon"
    );
    // A write: the answer the engine binary gives, and the older memory on the same subject.
    let similar = "Deploys run through the staging cluster before they reach production";
    let out = wtd(
        &env,
        &repo,
        &["remember", "--type", "Context", "--json"],
        Some(similar),
    );
    let answer: Value = serde_json::from_str(&ok(out)).unwrap();
    assert_eq!(answer["duplicate"], false);
    assert_eq!(answer["similar"][0]["id"], first_id.as_str());
    // The same content again is the same memory; the plain form prints its id.
    let again = ok(wtd(
        &env,
        &repo,
        &["remember", "--type", "Context"],
        Some(similar),
    ));
    assert_eq!(again.trim(), answer["id"].as_str().unwrap());
    // Refusals keep the engine binary's words and exit statuses.
    let empty = wtd(
        &env,
        &repo,
        &["remember", "--type", "Context"],
        Some("  \n"),
    );
    assert_eq!(empty.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&empty.stderr).starts_with("wt-memory: remember: nothing to store")
    );
    let untyped = wtd(&env, &repo, &["remember"], Some("a note"));
    assert_eq!(untyped.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&untyped.stderr).trim(),
        "wt-memory: remember: --type is required (Decision, Learning or Context)"
    );
    // All four went to the daemon that was running; the list sees the one new memory.
    assert_eq!(forwarded_count(&env, &repo), 4);
    assert_eq!(daemon_pids(&name), [pid]);
    let listed: Value = serde_json::from_str(&ok(wtd(&env, &repo, &["list"], None))).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    // A command line the daemon cannot parse is the engine binary's to refuse, with clap's words.
    let bad = wtd(
        &env,
        &repo,
        &["remember", "--type", "Context", "--bogus"],
        Some("x"),
    );
    let engine = wtd(
        &env,
        &repo,
        &["--no-daemon", "remember", "--type", "Context", "--bogus"],
        Some("x"),
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("'--bogus'"));
    assert_eq!(
        (bad.status, bad.stderr),
        (engine.status, engine.stderr),
        "the same refusal with and without a daemon"
    );
}

#[test]
fn the_front_has_a_running_daemon_answer_recall_and_proactive_as_the_engine_binary_would() {
    let env = TestEnv::new();
    let (repo, name, pid) = one_note_through_a_daemon(
        &env,
        "Background jobs are retried three times by the worker in src/jobs/worker.rs",
    );
    let asks: [&[&str]; 4] = [
        &["recall", "how are background jobs retried"],
        &["recall", "jobs", "--mode", "semantic", "--limit", "1"],
        &["proactive", "src/jobs/worker.rs", "--limit", "2"],
        &["recall", "nothing of the kind", "--kind", "command"],
    ];
    for (n, args) in asks.iter().enumerate() {
        let through = wtd(&env, &repo, args, None);
        let mut engine_args = vec!["--no-daemon"];
        engine_args.extend_from_slice(args);
        let engine = wtd(&env, &repo, &engine_args, None);
        assert_eq!(
            (&through.status, &through.stdout, &through.stderr),
            (&engine.status, &engine.stdout, &engine.stderr),
            "wt-memory {args:?}: the same answer with and without the daemon"
        );
        assert_eq!(
            forwarded_count(&env, &repo),
            n as u64 + 1,
            "{args:?} was forwarded"
        );
    }
    let found: Value = serde_json::from_str(&ok(wtd(&env, &repo, asks[0], None))).unwrap();
    assert!(found[0]["content"].as_str().unwrap().contains("retried"));
    // What the service would refuse stays the engine binary's to refuse, in its words.
    let before = forwarded_count(&env, &repo);
    for args in [
        &["recall", "x", "--mode", "bogus"][..],
        &["proactive", "x", "--kind", "bogus"][..],
    ] {
        let through = wtd(&env, &repo, args, None);
        let mut engine_args = vec!["--no-daemon"];
        engine_args.extend_from_slice(args);
        let engine = wtd(&env, &repo, &engine_args, None);
        assert_ne!(through.status.code(), Some(0), "{args:?}");
        assert_eq!(
            (through.status, through.stderr),
            (engine.status, engine.stderr)
        );
    }
    assert_eq!(forwarded_count(&env, &repo), before);
    assert_eq!(daemon_pids(&name), [pid]);
}

#[test]
fn a_daemon_that_goes_away_mid_command_leaves_the_front_to_run_it_with_the_same_input() {
    use std::io::{BufRead, BufReader, Write};
    let env = TestEnv::new();
    let (repo, name, pid) = one_note_through_a_daemon(&env, "The daemon starts here");
    // The daemon's own hello, for a stand-in that the front will take for it.
    let sock = socket(&env, &repo);
    let hello = {
        let stream = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        let mut reader = BufReader::new(stream);
        let ask = r#"{"hello":{"protocol":0,"build":"","model":null,"pid":0}}"#;
        writeln!(reader.get_mut(), "{ask}").unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        line
    };
    ok(wtd(&env, &repo, &["daemon", "stop"], None));
    wait_until("the daemon exits", Duration::from_secs(15), || !alive(pid));
    // The stand-in says hello, reads the command and its input, and dies without answering.
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let stand_in = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        reader.get_mut().write_all(hello.as_bytes()).unwrap();
        line.clear();
        reader.read_line(&mut line).unwrap();
        std::fs::remove_file(&sock).unwrap();
        line
    });
    let note = "Replayed input reaches the store when the daemon dies mid-command";
    let out = wtd(&env, &repo, &["remember", "--type", "Context"], Some(note));
    let forwarded: Value = serde_json::from_str(&stand_in.join().unwrap()).unwrap();
    assert_eq!(
        forwarded["forward"]["stdin"], note,
        "the front sent the command first"
    );
    ok(out);
    let listed: Value = serde_json::from_str(&ok(wtd(&env, &repo, &["list"], None))).unwrap();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["content"] == note),
        "{listed}"
    );
    assert_eq!(daemon_pids(&name).len(), 1, "a real daemon serves again");
}

// ---- One store, one service (issue 27) ----

/// `wt-memory` through the service, with the store root `root` instead of the test's own.
fn wtd_root(env: &TestEnv, root: &Path, cwd: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = env.cmd("wt-memory", cwd);
    cmd.env("WT_MEMORY_DAEMON", "1")
        .env("WT_MEMORY_HOME", root)
        .args(args);
    run(&mut cmd, stdin)
}

fn contents(listed: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(listed).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["content"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn two_store_roots_in_one_repository_get_two_services_and_never_mix() {
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let (a, b) = (env.path().join("A"), env.path().join("B"));
    // Concurrent writers into both roots, each through its own root's service.
    std::thread::scope(|s| {
        for i in 0..4 {
            for (root, tag) in [(&a, "A"), (&b, "B")] {
                let (env, repo) = (&env, &repo);
                s.spawn(move || {
                    let note = format!("Note {i} belongs to store {tag} only");
                    ok(wtd_root(
                        env,
                        root,
                        repo,
                        &["remember", "--type", "Context"],
                        Some(&note),
                    ));
                });
            }
        }
    });
    for (root, mine, theirs) in [(&a, "store A", "store B"), (&b, "store B", "store A")] {
        let listed = contents(&ok(wtd_root(&env, root, &repo, &["list"], None)));
        assert_eq!(listed.len(), 4, "{listed:?}");
        assert!(
            listed.iter().all(|c| c.ends_with(&format!("{mine} only"))),
            "{listed:?}"
        );
        assert!(!listed.iter().any(|c| c.contains(theirs)));
    }
    // Two services, one per store directory.
    let name = project_name(&env, &repo);
    assert_eq!(daemon_pids(&name).len(), 2);
    // Export from one root, import into another: everything arrives.
    let export = env.path().join("a.json");
    ok(wtd_root(
        &env,
        &a,
        &repo,
        &["export", "--output", export.to_str().unwrap()],
        None,
    ));
    let c = env.path().join("C");
    let imported: Value = serde_json::from_str(&ok(wtd_root(
        &env,
        &c,
        &repo,
        &["import", export.to_str().unwrap()],
        None,
    )))
    .unwrap();
    assert_eq!(imported["imported"], 4, "{imported}");
    assert_eq!(
        contents(&ok(wtd_root(&env, &c, &repo, &["list"], None))).len(),
        4
    );
}

#[test]
fn a_repository_whose_name_starts_with_a_dash_gets_its_service_at_once() {
    let env = TestEnv::new();
    let repo = env.git_repo("-odd");
    let name = project_name(&env, &repo);
    assert!(name.starts_with("-odd-"), "{name}");
    let started = Instant::now();
    ok(wtd(
        &env,
        &repo,
        &["remember", "--type", "Context"],
        Some("Dashes lead this repository's name"),
    ));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(daemon_pids(&name).len(), 1, "a service runs for it");
    let (_, took) = prompt_hook(&env, &repo, "what leads this repository's name?", "1");
    assert!(took < Duration::from_millis(1500), "{took:?}");
}

/// The prompt hook with `prompt`: (its stdout, its wall time).
fn prompt_hook(env: &TestEnv, repo: &Path, prompt: &str, daemon: &str) -> (String, Duration) {
    let mut payload: Value = serde_json::from_str(&prompt_payload(repo)).unwrap();
    payload["prompt"] = Value::from(prompt);
    let mut hook = env.cmd("wt-hook-memory", repo);
    hook.env("WT_MEMORY_DAEMON", daemon).arg("UserPromptSubmit");
    let started = Instant::now();
    let out = run(&mut hook, Some(&payload.to_string()));
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0));
    (String::from_utf8(out.stdout).unwrap(), took)
}

/// The prompt hook for `prompt` in session `session`, its process given `extra_env`: what it
/// printed.
fn prompt_hook_in(
    env: &TestEnv,
    repo: &Path,
    prompt: &str,
    session: &str,
    extra_env: &[(&str, &str)],
) -> String {
    let mut payload: Value = serde_json::from_str(&prompt_payload(repo)).unwrap();
    payload["prompt"] = Value::from(prompt);
    payload["session_id"] = Value::from(session);
    let mut hook = env.cmd("wt-hook-memory", repo);
    hook.env("WT_MEMORY_DAEMON", "1").arg("UserPromptSubmit");
    hook.envs(extra_env.iter().copied());
    let out = run(&mut hook, Some(&payload.to_string()));
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_running_service_handles_hook_events_as_a_hook_process_would() {
    let env = TestEnv::new();
    let (repo, name, pid) = one_note_through_a_daemon(
        &env,
        "Login sessions are stored in an HttpOnly cookie set by src/auth/session.rs",
    );
    let prompt = "how are login sessions stored?";
    assert_eq!(served_count(&env, &repo, "hook"), 0);
    let accepted = |env: &TestEnv| status(env, &repo).unwrap()["accepted"].as_u64().unwrap();
    let before = accepted(&env);
    // Handled by the service for the hook's front: what a hook process prints.
    let served = prompt_hook_in(&env, &repo, prompt, "session-a", &[]);
    assert_eq!(served_count(&env, &repo, "hook"), 1, "the service ran it");
    assert!(served.contains("HttpOnly cookie"), "{served}");
    // Its memory calls joined the service's queue in-process: the only connections since are
    // the front's and the two status queries'.
    assert_eq!(accepted(&env) - before, 3, "no connection back to itself");
    let in_process = prompt_hook_in(
        &env,
        &repo,
        prompt,
        "session-b",
        &[("WT_MEMORY_DAEMON", "0")],
    );
    assert_eq!(served, in_process, "the same output from a hook process");
    // A hook whose environment differs from the service's (here: debug logging) is not run
    // under the service's: its own process handles it, with the same answer.
    let debugged = prompt_hook_in(&env, &repo, prompt, "session-c", &[("WT_HOOK_DEBUG", "1")]);
    assert_eq!(debugged, served);
    assert_eq!(
        served_count(&env, &repo, "hook"),
        1,
        "left to a hook process"
    );
    // What the service handled is the hook process's: its project directory comes with it
    // (here a subdirectory of the repository, named by CLAUDE_PROJECT_DIR).
    let sub = repo.join("src");
    std::fs::create_dir_all(&sub).unwrap();
    let elsewhere = prompt_hook_in(
        &env,
        &repo,
        prompt,
        "session-d",
        &[("CLAUDE_PROJECT_DIR", sub.to_str().unwrap())],
    );
    assert_eq!(elsewhere, served);
    assert_eq!(served_count(&env, &repo, "hook"), 2);
    // A session's second prompt is not shown what its first was: the session cache is the
    // hook process's, whoever runs it.
    let again = prompt_hook_in(&env, &repo, prompt, "session-a", &[]);
    assert!(!again.contains("HttpOnly cookie"), "{again}");
    assert_eq!(daemon_pids(&name), [pid]);
}

/// A cold start (no service running): the hook process the front falls back to starts the
/// store's service and hands it the event, so the hook runs where the rules are compiled once
/// (docs/performance.md, "The allocator, the rules and the cold first hook"), printing what a
/// hook process of its own prints.
#[test]
fn a_cold_first_hook_starts_the_service_and_hands_it_the_event() {
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let name = project_name(&env, &repo);
    ok(wtd(
        &env,
        &repo,
        &["--no-daemon", "remember", "--type", "Context"],
        Some("Login sessions are stored in an HttpOnly cookie set by src/auth/session.rs"),
    ));
    assert!(daemon_pids(&name).is_empty(), "no service before the hook");
    let prompt = "how are login sessions stored?";
    let cold = prompt_hook_in(&env, &repo, prompt, "session-a", &[]);
    assert!(cold.contains("HttpOnly cookie"), "{cold}");
    assert_eq!(daemon_pids(&name).len(), 1, "the hook started the service");
    assert_eq!(
        served_count(&env, &repo, "hook"),
        1,
        "the service ran the event"
    );
    let in_process = prompt_hook_in(
        &env,
        &repo,
        prompt,
        "session-b",
        &[("WT_MEMORY_DAEMON", "0")],
    );
    assert_eq!(
        cold, in_process,
        "the same output as a hook process of its own"
    );
}

/// A commit made in `repo` and the PostToolUse hook that saves it.
fn commit_save_hook(env: &TestEnv, repo: &Path) -> Duration {
    std::fs::write(repo.join("cookie.rs"), "// cookie\n").unwrap();
    support::git(repo, &["add", "."]);
    support::git(
        repo,
        &[
            "commit",
            "-qm",
            "add-login: store session id in HttpOnly cookie",
        ],
    );
    let payload = std::fs::read_to_string(
        support::fixtures_dir().join("hooks/post_tool_use.bash_git_commit_m.json"),
    )
    .unwrap()
    .replace("/path/to/proj", &repo.display().to_string());
    let mut hook = env.cmd("wt-hook-memory", repo);
    hook.env("WT_MEMORY_DAEMON", "1").arg("PostToolUse");
    let started = Instant::now();
    let out = run(&mut hook, Some(&payload));
    assert_eq!(out.status.code(), Some(0));
    started.elapsed()
}

const COMMITTED: &str = "Committed: add-login: store session id in HttpOnly cookie";

#[test]
fn a_frozen_service_holds_no_prompt_and_loses_no_hook_write() {
    let env = TestEnv::new();
    let (repo, name, pid) =
        one_note_through_a_daemon(&env, "Login sessions are stored in an HttpOnly cookie");
    kill(pid, "-STOP");
    // The prompt hook gives up on memory within its budget, silently; its log says why (this
    // silence is a missed budget, which `support::assert_silent` would refuse).
    let log = support::HookLog::mark(&env);
    let (said, took) = prompt_hook(&env, &repo, "how are login sessions stored?", "1");
    assert_eq!(said, "");
    assert!(took < Duration::from_millis(1500), "prompt held {took:?}");
    assert!(!log.trouble().is_empty(), "{:?}", log.lines());
    // The same with the service bypassed: it still holds the store.
    let (said, took) = prompt_hook(&env, &repo, "how are login sessions stored?", "0");
    assert_eq!(said, "");
    assert!(took < Duration::from_millis(1500), "bypass held {took:?}");
    // A hook's write goes to the spool, in the budget.
    let took = commit_save_hook(&env, &repo);
    assert!(
        took < Duration::from_millis(1500),
        "commit save held {took:?}"
    );
    // The CLI says what is wrong, with the pid and the fix, within a few seconds.
    let started = Instant::now();
    let out = wtd(&env, &repo, &["list"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not answering")
            && err.contains(&format!("pid {pid}"))
            && err.contains("wt-memory daemon stop"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // A command the front forwards says the same, after one wait for the hello (2 s), not two.
    let started = Instant::now();
    let out = wtd(&env, &repo, &["recall", "login sessions"], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), err);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let doctor = String::from_utf8_lossy(&wtd(&env, &repo, &["doctor"], None).stdout).into_owned();
    assert!(doctor.contains("is not answering"), "{doctor}");
    // `daemon stop` ends even a frozen service; the next call stores what was spooled.
    ok(wtd(&env, &repo, &["daemon", "stop"], None));
    wait_until(
        "the frozen service is gone",
        Duration::from_secs(10),
        || !alive(pid),
    );
    let listed = contents(&ok(wtd(&env, &repo, &["list"], None)));
    assert!(listed.iter().any(|c| c == COMMITTED), "{listed:?}");
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(daemon_pids(&name).len(), 1);
    let spool = env
        .store_root()
        .join(".spool")
        .join(format!("{name}.jsonl"));
    assert!(!spool.exists(), "the spool is emptied once applied");
}

#[test]
fn a_spooled_write_is_stored_once_and_shown_while_it_waits() {
    let env = TestEnv::new();
    let (repo, name, pid) = one_note_through_a_daemon(&env, "The first note");
    kill(pid, "-STOP");
    commit_save_hook(&env, &repo);
    let spool = env
        .store_root()
        .join(".spool")
        .join(format!("{name}.jsonl"));
    let text = std::fs::read_to_string(&spool).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&spool).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // The same write spooled twice (a retried hook) is still one memory.
    std::fs::write(&spool, format!("{text}{text}")).unwrap();
    kill(pid, "-KILL");
    wait_until("the service is gone", Duration::from_secs(10), || {
        !alive(pid)
    });
    // Without a service, status names the spool; the first opening of the store applies it.
    let status = wtd(&env, &repo, &["daemon", "status"], None);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("2 hook write(s) wait in the spool"),
        "{:?}: {} {}",
        status.status,
        String::from_utf8_lossy(&status.stdout),
        String::from_utf8_lossy(&status.stderr)
    );
    let listed = contents(&ok(wtd(&env, &repo, &["--no-daemon", "list"], None)));
    assert_eq!(
        listed.iter().filter(|c| *c == COMMITTED).count(),
        1,
        "{listed:?}"
    );
    assert!(!spool.exists());
}

#[test]
fn a_service_that_cannot_start_is_seen_at_once() {
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let store = env.store_root().join(project_name(&env, &repo));
    // Its lifetime lock cannot be opened: `serve` exits at once.
    let dir = env.path().join("runtime/wt-tools/daemon");
    std::fs::create_dir_all(&dir).unwrap();
    let key = wt_memory_base::wire::store_key(&store);
    std::fs::create_dir_all(dir.join(format!("{key}.daemon.lock"))).unwrap();
    let started = Instant::now();
    let out = wtd(
        &env,
        &repo,
        &["remember", "--type", "Context"],
        Some("Still stored"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("could not start") && err.contains("working on the store directly"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    let (said, took) = prompt_hook(&env, &repo, "what is still stored?", "1");
    assert!(
        took < Duration::from_millis(1500),
        "prompt held {took:?}: {said}"
    );
}

#[test]
fn bypassing_a_live_service_uses_it_instead_of_waiting_for_its_lock() {
    let env = TestEnv::new();
    let (repo, _, pid) = one_note_through_a_daemon(
        &env,
        "Passwords are hashed with argon2id through hash::verify_secret",
    );
    let started = Instant::now();
    let listed = {
        let mut cmd = env.cmd("wt-memory", &repo);
        cmd.env("WT_MEMORY_DAEMON", "0").arg("list");
        contents(&ok(run(&mut cmd, None)))
    };
    assert_eq!(listed.len(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let served = |env: &TestEnv| status(env, &repo).unwrap()["requests"].as_u64().unwrap();
    let before = served(&env);
    let (_, took) = prompt_hook(&env, &repo, "How do we hash user passwords?", "0");
    assert!(took < Duration::from_millis(1500), "{took:?}");
    assert!(
        served(&env) > before,
        "the service answered the bypassed hook"
    );
    let st = status(&env, &repo).unwrap();
    assert_eq!(st["pid"].as_u64().unwrap() as u32, pid);
}

// ---- The service's socket and files: private and bounded (issue 28) ----

fn chown(path: &Path, uid: u32) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string path.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), uid, uid) }, 0);
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A command with `XDG_RUNTIME_DIR` unset and the temporary directory at `tmp`.
fn without_runtime_dir(env: &TestEnv, bin: &str, cwd: &Path, tmp: &Path) -> Command {
    let mut cmd = env.cmd(bin, cwd);
    cmd.env_remove("XDG_RUNTIME_DIR")
        .env("TMPDIR", tmp)
        .env("WT_MEMORY_DAEMON", "1");
    cmd
}

#[test]
fn a_runtime_directory_another_user_made_is_refused_and_ours_is_narrowed() {
    if !support::root_or_skipped(
        "a_runtime_directory_another_user_made_is_refused_and_ours_is_narrowed",
        "to make a directory of another uid",
    ) {
        return;
    }
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let tmp = env.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // Another user got there first: /tmp/wt-tools-<uid>, world-writable.
    let planted = tmp.join("wt-tools-0");
    std::fs::create_dir(&planted).unwrap();
    set_mode(&planted, 0o777);
    chown(&planted, 65534);
    let mut cmd = without_runtime_dir(&env, "wt-memory", &repo, &tmp);
    cmd.args(["remember", "--type", "Context"]);
    let out = run(&mut cmd, Some("Never through another user's directory"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not private") && err.contains("owned by uid 65534"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(&planted).unwrap().next().is_none(),
        "nothing was made in it"
    );
    // The hook says nothing and is quick about it.
    let mut hook = without_runtime_dir(&env, "wt-hook-memory", &repo, &tmp);
    hook.arg("UserPromptSubmit");
    let started = Instant::now();
    let out = run(&mut hook, Some(&prompt_payload(&repo)));
    assert_eq!((out.status.code(), out.stdout.len()), (Some(0), 0));
    assert!(started.elapsed() < Duration::from_millis(1500));
    // One of ours with a loose mode is made private, and used.
    std::fs::remove_dir(&planted).unwrap();
    std::fs::create_dir(&planted).unwrap();
    set_mode(&planted, 0o755);
    let mut cmd = without_runtime_dir(&env, "wt-memory", &repo, &tmp);
    cmd.args(["remember", "--type", "Context"]);
    ok(run(&mut cmd, Some("Through our own directory")));
    assert_eq!(mode(&planted), 0o700);
    assert!(planted.join("daemon").is_dir());
    env.stop_daemon(&repo);
    let mut stop = without_runtime_dir(&env, "wt-memory", &repo, &tmp);
    let _ = run(stop.args(["daemon", "stop"]), None);
}

#[test]
fn a_listener_of_another_user_is_told_nothing() {
    if !support::root_or_skipped(
        "a_listener_of_another_user_is_told_nothing",
        "to listen as another uid",
    ) {
        return;
    }
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let sock = socket(&env, &repo);
    let dir = sock.parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    // Another uid binds the service's socket (its directories opened for a moment) and keeps
    // whatever it is sent.
    for open in [
        env.path(),
        &env.path().join("runtime"),
        dir.parent().unwrap(),
        &dir,
    ] {
        set_mode(open, 0o777);
    }
    let heard = std::env::temp_dir().join(format!("wt-heard-{}", std::process::id()));
    std::fs::write(&heard, "").unwrap();
    chown(&heard, 65534);
    let script = format!(
        "import socket,os\ns=socket.socket(socket.AF_UNIX)\ns.bind({sock:?})\ns.listen(8)\nprint('up',flush=True)\nwhile True:\n c,_=s.accept()\n c.settimeout(3)\n try:\n  d=c.recv(65536)\n except OSError:\n  d=b''\n open({heard:?},'ab').write(d)\n try:\n  c.sendall(b'{{\"hello\":{{\"protocol\":5,\"build\":\"\",\"model\":null,\"pid\":1}}}}\\n')\n except OSError:\n  pass\n",
        sock = sock.display().to_string(),
        heard = heard.display().to_string()
    );
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let mut rogue = Command::new("python3")
        .args(["-c", &script])
        .uid(65534)
        .gid(65534)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut up = String::new();
    std::io::BufReader::new(rogue.stdout.as_mut().unwrap())
        .read_line(&mut up)
        .unwrap();
    for close in [
        env.path(),
        &env.path().join("runtime"),
        dir.parent().unwrap(),
        &dir,
    ] {
        set_mode(close, 0o700);
    }
    let secret = "The deploy key lives in the ops vault";
    let out = wtd(
        &env,
        &repo,
        &["remember", "--type", "Context"],
        Some(secret),
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let _ = rogue.kill();
    let _ = rogue.wait();
    assert!(out.status.success(), "{:?}: {err}", out.status);
    assert!(err.contains("another user"), "{err}");
    let heard_text = std::fs::read_to_string(&heard).unwrap();
    let _ = std::fs::remove_file(&heard);
    assert_eq!(heard_text, "", "the other user heard something");
    // It was stored, in our own store.
    let listed = contents(&ok(wtd(&env, &repo, &["--no-daemon", "list"], None)));
    assert_eq!(listed, [secret]);
}

#[test]
fn a_planted_link_is_never_followed() {
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let name = project_name(&env, &repo);
    let locks = env.store_root().join(".locks");
    std::fs::create_dir_all(&locks).unwrap();
    let victim = env.path().join("victim");
    std::os::unix::fs::symlink(&victim, locks.join(format!("{name}.lock"))).unwrap();
    let out = wtd(
        &env,
        &repo,
        &["--no-daemon", "remember", "--type", "Context"],
        Some("x y z"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!victim.exists(), "a file was made through the link");
}

#[test]
fn seed_sends_what_it_read_so_a_pipe_or_fifo_works_through_the_service() {
    let env = TestEnv::new();
    let (repo, _, pid) = one_note_through_a_daemon(&env, "The first note");
    let seeds = "seeds:\n  - type: Decision\n    content: We pin the toolchain in rust-toolchain.toml\n  - type: Learning\n    content: The bench runs at 1k and 10k memories\n";
    let out = ok(wtd(
        &env,
        &repo,
        &["seed", "--file", "/dev/stdin"],
        Some(seeds),
    ));
    assert!(out.contains('2'), "{out}");
    assert_eq!(contents(&ok(wtd(&env, &repo, &["list"], None))).len(), 3);
    // A FIFO nobody writes to blocks only the client that opened it, not the service.
    let fifo = env.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut blocked = env.cmd("wt-memory", &repo);
    blocked
        .env("WT_MEMORY_DAEMON", "1")
        .args(["seed", "--file", fifo.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut blocked = blocked.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    ok(wtd(&env, &repo, &["list"], None));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let _ = blocked.kill();
    let _ = blocked.wait();
    assert!(alive(pid));
}

/// A raw connection to `sock` that has said hello.
fn greeted(sock: &Path) -> std::io::BufReader<std::os::unix::net::UnixStream> {
    use std::io::{BufRead, Write};
    let stream = std::os::unix::net::UnixStream::connect(sock).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = std::io::BufReader::new(stream);
    writeln!(
        reader.get_mut(),
        r#"{{"hello":{{"protocol":5,"build":"","model":null,"pid":0}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with(r#"{"hello""#), "{line}");
    reader
}

fn say(reader: &mut std::io::BufReader<std::os::unix::net::UnixStream>, bytes: &[u8]) -> String {
    use std::io::{BufRead, Write};
    // A service that refuses a long line stops reading it: the rest may not be taken.
    let _ = reader.get_mut().write_all(bytes);
    let mut line = String::new();
    let _ = reader.read_line(&mut line);
    line
}

#[test]
fn connections_are_capped_silent_ones_closed_and_the_service_lives_on() {
    use std::io::{BufRead, Write};
    let env = TestEnv::new();
    let (repo, _, pid) = one_note_through_a_daemon(&env, "The first note");
    let sock = socket(&env, &repo);
    let held: Vec<_> = (0..64).map(|_| greeted(&sock)).collect();
    // The next one is told so, in one line.
    let stream = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(stream)
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("64 connections open"), "{line}");
    drop(held);
    wait_until("the slots are free again", Duration::from_secs(5), || {
        status(&env, &repo).is_some_and(|s| s["connections"].as_u64() == Some(1))
    });
    // A connection that never says hello is closed after a few seconds.
    let mut silent = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 64];
    use std::io::Read;
    assert_eq!(silent.read(&mut buf).unwrap_or(0), 0);
    assert!(started.elapsed() < Duration::from_secs(10));
    // Nothing is served before a hello; bytes that are not UTF-8 get an answer.
    let mut rude = std::io::BufReader::new(std::os::unix::net::UnixStream::connect(&sock).unwrap());
    let said = say(&mut rude, b"{\"control\":\"status\"}\n");
    assert!(
        said.contains("say hello first") && !said.contains("uptime"),
        "{said}"
    );
    let mut conn = greeted(&sock);
    let said = say(&mut conn, b"\xff\xfe{\"call\"\n");
    assert!(said.contains("not a request line"), "{said}");
    writeln!(conn.get_mut(), r#"{{"control":"status"}}"#).unwrap();
    assert!(alive(pid));
    assert_eq!(
        status(&env, &repo).unwrap()["pid"].as_u64().unwrap() as u32,
        pid
    );
}

#[test]
fn oversized_lines_and_fields_are_refused_by_name_and_never_echoed() {
    let env = TestEnv::new();
    let (repo, _, pid) = one_note_through_a_daemon(&env, "The first note");
    let sock = socket(&env, &repo);
    // Before a hello, a line is at most 64 KiB.
    let mut rude = std::io::BufReader::new(std::os::unix::net::UnixStream::connect(&sock).unwrap());
    let said = say(&mut rude, &vec![b'x'; 200 * 1024]);
    assert!(
        said.contains("a line over 64 KiB"),
        "{}",
        &said[..said.len().min(300)]
    );
    assert!(said.len() < 500);
    // A 10 MB tag is refused, named, and not quoted back.
    // (One argument of a command line is at most 128 KiB.)
    let tag = "t".repeat(100_000);
    for daemon in ["1", "0"] {
        let mut cmd = env.cmd("wt-memory", &repo);
        cmd.env("WT_MEMORY_DAEMON", daemon)
            .args(["remember", "--type", "Context", "--tags", &tag]);
        let out = run(&mut cmd, Some("A note with one huge tag"));
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("a tag is 100000 characters; the limit is 200"),
            "{}",
            &err[..err.len().min(300)]
        );
        assert!(err.len() < 500, "{} bytes of error", err.len());
    }
    // A metrics line over its limit is refused, and nothing grows.
    let mut conn = greeted(&sock);
    let big = format!(
        "{{\"call\":{{\"caller\":{{\"branch\":null,\"cwd\":\"/\"}},\"lock_wait_ms\":0,\"request\":{{\"op\":\"record\",\"args\":{{\"events\":[{}]}}}}}}}}\n",
        vec![r#"{"kind":"write","at_ms":1,"source":"x","memory":null,"count":1}"#; 5_000].join(",")
    );
    let said = say(&mut conn, big.as_bytes());
    assert!(
        said.contains("the limit is 256 KiB"),
        "{}",
        &said[..said.len().min(300)]
    );
    assert_eq!(contents(&ok(wtd(&env, &repo, &["list"], None))).len(), 1);
    // A count past any store's size (a socket fuzz once overflowed `limit + index` and killed the
    // connection's thread) is refused where it crosses the socket, and the connection goes on.
    let mut conn = greeted(&sock);
    let huge = format!(
        "{{\"call\":{{\"caller\":{{\"branch\":null,\"cwd\":\"/\"}},\"lock_wait_ms\":0,\"request\":{{\"op\":\"tiers\",\"args\":{{\"context\":\"the first note\",\"limit\":{max},\"index\":{max},\"kind\":null}}}}}}}}\n",
        max = u64::MAX
    );
    let said = say(&mut conn, huge.as_bytes());
    assert!(
        said.contains("the most is 100000"),
        "{}",
        &said[..said.len().min(300)]
    );
    assert_eq!(contents(&ok(wtd(&env, &repo, &["list"], None))).len(), 1);
    assert!(alive(pid));
}

#[test]
fn two_installations_of_one_version_share_one_service() {
    let env = TestEnv::new();
    let (repo, name, pid) = one_note_through_a_daemon(&env, "The first note");
    // Another installation: a copy of the binaries elsewhere, written later.
    let bin = env.path().join("other-install");
    std::fs::create_dir_all(&bin).unwrap();
    for b in ["wt-memory", "wt-memory-engine", "wt-hook-memory"] {
        std::fs::copy(bin_path(b), bin.join(b)).unwrap();
    }
    for i in 0..5 {
        for dir in [
            bin.clone(),
            bin_path("wt-memory").parent().unwrap().to_path_buf(),
        ] {
            let mut cmd = Command::new(dir.join("wt-memory"));
            support::clean_env(&mut cmd)
                .current_dir(&repo)
                .env("WT_MEMORY_DAEMON", "1");
            for (k, v) in env.envs() {
                cmd.env(k, v);
            }
            cmd.args(["remember", "--type", "Context"]);
            ok(run(
                &mut cmd,
                Some(&format!("Note {i} from {}", dir.display())),
            ));
        }
    }
    assert_eq!(
        daemon_pids(&name),
        [pid],
        "one service served both installations"
    );
}

#[test]
fn everything_we_create_is_private_even_under_an_open_root() {
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    set_mode(&env.store_root(), 0o755);
    set_mode(&env.path().join("state"), 0o755);
    let mut cmd = env.cmd("wt-memory", &repo);
    cmd.env("WT_MEMORY_DAEMON", "1").env("WT_HOOK_DEBUG", "1");
    ok(run(
        cmd.args(["remember", "--type", "Context"]),
        Some("Private by default"),
    ));
    let store = env.store_root().join(project_name(&env, &repo));
    assert_eq!(mode(&env.store_root()), 0o700);
    assert_eq!(mode(&store), 0o700);
    for entry in std::fs::read_dir(&store).unwrap().flatten() {
        let m = mode(&entry.path());
        assert_eq!(m & 0o077, 0, "{} is {m:o}", entry.path().display());
    }
    let mut hook = env.cmd("wt-hook-memory", &repo);
    hook.env("WT_MEMORY_DAEMON", "1")
        .env("WT_HOOK_DEBUG", "1")
        .arg("UserPromptSubmit");
    run(&mut hook, Some(&prompt_payload(&repo)));
    let logs = env.path().join("state/wt-tools");
    assert_eq!(mode(&logs), 0o700);
    for entry in std::fs::read_dir(&logs).unwrap().flatten() {
        if entry.path().is_file() {
            let m = mode(&entry.path());
            assert_eq!(m & 0o077, 0, "{} is {m:o}", entry.path().display());
        }
    }
}

/// The service's saved ranking view: `<state>/wt-tools/views/<key>/view.bin`.
fn saved_views(env: &TestEnv) -> Vec<PathBuf> {
    let dir = env.path().join("state/wt-tools/views");
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path().join("view.bin"))
                .filter(|p| p.exists())
                .collect()
        })
        .unwrap_or_default()
}

fn tools_log(env: &TestEnv) -> String {
    std::fs::read_to_string(env.path().join("state/wt-tools/wt-hook-memory.log"))
        .unwrap_or_default()
}

#[test]
fn a_saved_ranking_view_survives_kill_9_mid_write_and_answers_as_a_fresh_build() {
    let env = TestEnv::new();
    let (repo, name, _) =
        one_note_through_a_daemon(&env, "The dev environment starts with ./scripts/dev.sh");
    let topics = [
        "invoice numbers",
        "docker compose ports",
        "stripe webhooks",
        "fly.io deploys",
    ];
    for (i, topic) in topics.iter().cycle().take(12).enumerate() {
        let note = format!("Note {i} on {topic}: decided in review {i}, see docs/{i}.md");
        ok(wtd(
            &env,
            &repo,
            &["remember", "--type", "Decision"],
            Some(&note),
        ));
    }
    // The first query builds the view; the service then saves it.
    ok(wtd(&env, &repo, &["recall", "how do we deploy"], None));
    wait_until("the view is saved", Duration::from_secs(30), || {
        !saved_views(&env).is_empty()
    });
    for round in 0..3u64 {
        // A write through the service starts one if none runs (and it loads the saved view).
        let note = format!("Round {round} begins with the service up");
        ok(wtd(
            &env,
            &repo,
            &["remember", "--type", "Context"],
            Some(&note),
        ));
        let pids = daemon_pids(&name);
        assert_eq!(pids.len(), 1, "one service: {}", tools_log(&env));
        let pid = pids[0];
        // Writes in flight when the service is killed: some done, one maybe half-way, some
        // after (their clients start a new service or write in-process).
        let mut writer = Command::new("sh");
        support::clean_env(&mut writer)
            .current_dir(&repo)
            .envs(env.envs());
        let script = format!(
            "for j in 1 2 3 4 5 6; do echo \"Round {round} write $j about {} and stripe retries\" | '{}' remember --type Learning >/dev/null 2>&1; done",
            topics[round as usize],
            bin_path("wt-memory").display()
        );
        writer
            .env("WT_MEMORY_DAEMON", "1")
            .args(["-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let logged = || {
            saved_views(&env)
                .iter()
                .filter_map(|v| std::fs::metadata(v.with_file_name("writes.log")).ok())
                .map(|m| m.len())
                .sum::<u64>()
        };
        let before = logged();
        let mut child = writer.spawn().unwrap();
        // Killed once a write of this round is logged (on a loaded machine a fixed delay could
        // kill the service before any), a little later each round.
        wait_until("a write logged", Duration::from_secs(20), || {
            logged() > before
        });
        std::thread::sleep(Duration::from_millis(30 * round));
        kill(pid, "-KILL");
        child.wait().unwrap();
    }
    // A kill mid-write may leave the store a write ahead of the integrity record; the next
    // service then finds the saved view unsound and rebuilds it (right, but no replay), and that
    // whole read renews the record. So once more, deterministically: a query (the view loaded or
    // rebuilt), a clean stop (the view saved), a write acknowledged, the service killed before it
    // saves the view again (it saves only when far behind, or at its stop): the next service
    // replays the logged write.
    ok(wtd(&env, &repo, &["recall", "stripe retries"], None));
    env.stop_daemon(&repo);
    ok(wtd(
        &env,
        &repo,
        &["remember", "--type", "Context"],
        Some("Written just before the last kill"),
    ));
    let pid = daemon_pids(&name)[0];
    kill(pid, "-KILL");
    wait_until(
        "the killed service is gone",
        Duration::from_secs(10),
        || !alive(pid),
    );
    ok(wtd(&env, &repo, &["recall", "the last kill"], None));
    let queries = [
        "how are invoice numbers assigned",
        "which port does postgres listen on in docker compose",
        "stripe webhook retries",
        "Round 2 write",
    ];
    let recall = |daemon: &str| -> Vec<String> {
        queries
            .iter()
            .map(|q| {
                let mut cmd = env.cmd("wt-memory", &repo);
                cmd.env("WT_MEMORY_DAEMON", daemon)
                    .args(["recall", q, "--limit", "5"]);
                ok(run(&mut cmd, None))
            })
            .collect()
    };
    // The services started after a kill loaded the saved view and replayed the writes logged
    // since it was saved.
    let replayed = tools_log(&env)
        .lines()
        .filter_map(|l| l.split("memories (").nth(1))
        .filter_map(|l| l.split(' ').next()?.parse::<u32>().ok())
        .max()
        .unwrap_or(0);
    assert!(replayed > 0, "no write replayed: {}", tools_log(&env));
    // A new service loads the saved view (saved again when the last one stopped).
    env.stop_daemon(&repo);
    let log_before = tools_log(&env).len();
    let from_saved = recall("1");
    assert!(
        tools_log(&env)[log_before..].contains("loaded the saved ranking view"),
        "the service loaded the saved view: {}",
        &tools_log(&env)[log_before..]
    );
    env.stop_daemon(&repo);
    // The same queries on a view built afresh from the store.
    for view in saved_views(&env) {
        std::fs::remove_dir_all(view.parent().unwrap()).unwrap();
    }
    let fresh = recall("0");
    assert_eq!(from_saved, fresh, "the saved view answers as a fresh build");
    let listed: Value = serde_json::from_str(&ok(wtd(&env, &repo, &["list"], None))).unwrap();
    let stats = env.wt_json(&repo, &["stats", "--json"], None);
    assert_eq!(
        stats["total"].as_u64().unwrap() as usize,
        listed.as_array().unwrap().len()
    );
}

/// The user's engine's control socket in `env`'s runtime directory.
fn engine_socket(env: &TestEnv) -> PathBuf {
    env.path().join("runtime/wt-tools/daemon/engine.sock")
}

fn json(out: Output) -> Value {
    serde_json::from_str(&ok(out)).unwrap()
}

#[test]
fn one_engine_serves_two_stores_with_one_model_and_exits_once_none_is_open() {
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    // One configuration for every command (the idle time included): one engine serves them all.
    let w = |args: &[&str], stdin: Option<&str>| {
        let mut cmd = env.cmd("wt-memory", &repo);
        cmd.env("WT_MEMORY_DAEMON", "1")
            .env("WT_MEMORY_DAEMON_IDLE_SECS", "3")
            .args(args);
        run(&mut cmd, stdin)
    };
    ok(w(
        &["remember", "--type", "Context"],
        Some("The engine serves the project store"),
    ));
    let mine = ["--scope", "personal"];
    ok(w(
        &[&mine[..], &["remember", "--type", "Context"]].concat(),
        Some("I prefer short answers"),
    ));
    let found = ok(w(&["recall", "which store does the engine serve"], None));
    assert!(found.contains("engine serves the project"), "{found}");
    let project = json(w(&["daemon", "status", "--json"], None));
    let personal = json(w(
        &[&mine[..], &["daemon", "status", "--json"]].concat(),
        None,
    ));
    // Two stores, each behind its own socket and lock, in one process with one model.
    assert_eq!(project["pid"], personal["pid"], "{project} {personal}");
    assert_ne!(project["store"], personal["store"]);
    assert_eq!(project["stores_served"], 2, "{project}");
    assert_eq!(project["model_loads"], 1, "{project}");
    let pid = project["pid"].as_u64().unwrap() as u32;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    assert!(
        String::from_utf8_lossy(&cmdline).contains("--engine"),
        "{cmdline:?}"
    );
    // Each store's lines in its own log, the engine's in its own.
    let logs = env.path().join("state/wt-tools");
    let engine_log = std::fs::read_to_string(logs.join("engine.log")).unwrap();
    assert_eq!(engine_log.matches("opened ").count(), 2, "{engine_log}");
    for status in [&project, &personal] {
        let store = PathBuf::from(status["store"].as_str().unwrap());
        let key = wt_memory_base::wire::store_key(&store);
        let log = std::fs::read_to_string(logs.join(format!("daemon-{key}.log"))).unwrap();
        assert!(
            log.contains(&format!("serving {}", store.display())),
            "{log}"
        );
    }
    // `daemon stop` closes one store; the engine serves the other on.
    ok(w(&[&mine[..], &["daemon", "stop"]].concat(), None));
    assert!(alive(pid));
    let project = json(w(&["daemon", "status", "--json"], None));
    assert_eq!(project["pid"], pid);
    assert_eq!(project["stores_served"], 1, "{project}");
    // Idle: the store closes after its idle time, and the engine with no store open exits.
    wait_until("the engine exits", Duration::from_secs(20), || !alive(pid));
    assert!(!socket(&env, &repo).exists(), "store socket left behind");
    assert!(!engine_socket(&env).exists(), "engine socket left behind");
    let engine_log = std::fs::read_to_string(logs.join("engine.log")).unwrap();
    assert!(
        engine_log.contains("exiting: no store open"),
        "{engine_log}"
    );
}

/// A service of an older build at `sock` (an engine, or one store's own process): it says hello
/// as `version` for whatever store the client names and, asked to stop, stops listening first.
/// Returns whether it was asked to stop.
fn older_service(sock: PathBuf, dead_pid: u32) -> std::thread::JoinHandle<bool> {
    use std::io::{BufRead, Write};
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    listener.set_nonblocking(true).unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    std::thread::spawn(move || {
        while Instant::now() < until {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let mut reader = std::io::BufReader::new(stream);
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let Ok(said) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let mut hello = said["hello"].clone();
            hello["version"] = "0.0.1".into();
            hello["pid"] = dead_pid.into();
            let _ = writeln!(
                reader.get_mut(),
                "{}",
                serde_json::json!({ "hello": hello })
            );
            line.clear();
            let _ = reader.read_line(&mut line);
            if line.contains("shutdown") {
                // Gone before it answers: the client's next look finds nobody.
                let _ = std::fs::remove_file(&sock);
                let _ = writeln!(reader.get_mut(), r#"{{"ok":null}}"#);
                return true;
            }
        }
        false
    })
}

#[test]
fn an_engine_and_a_store_service_of_an_older_build_are_replaced() {
    let env = TestEnv::new();
    let repo = env.git_repo("proj");
    let runtime = env.path().join("runtime/wt-tools");
    std::fs::create_dir_all(runtime.join("daemon")).unwrap();
    set_mode(&runtime, 0o700);
    set_mode(&runtime.join("daemon"), 0o700);
    // Their pid: a process that has exited (replacing waits for the old one to be gone).
    let mut gone = Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    // An older build's engine, and an older per-store service left from before the engine.
    let engine = older_service(engine_socket(&env), dead_pid);
    let store = older_service(socket(&env, &repo), dead_pid);
    ok(wtd(
        &env,
        &repo,
        &["remember", "--type", "Context"],
        Some("Older services are replaced"),
    ));
    assert!(
        store.join().unwrap(),
        "the older store service was not asked to stop"
    );
    assert!(
        engine.join().unwrap(),
        "the older engine was not asked to stop"
    );
    let st = status(&env, &repo).expect("a service runs");
    let pid = st["pid"].as_u64().unwrap() as u32;
    assert!(alive(pid) && pid != dead_pid, "{st}");
    assert_eq!(st["version"], env!("CARGO_PKG_VERSION"));
    let found = ok(wtd(&env, &repo, &["recall", "older services"], None));
    assert!(found.contains("Older services are replaced"), "{found}");
}
