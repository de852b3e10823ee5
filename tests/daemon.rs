//! The resident per-project service (the default; `WT_MEMORY_DAEMON=1` is set anyway, so these
//! tests hold when the suite runs with `WT_MEMORY_DAEMON=0`): real processes, real sockets, real
//! stores. Each test has its own runtime directory, so its daemons are its own; they exit when the
//! test's temporary directory (and with it their socket) goes away.

mod support;

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

fn socket(env: &TestEnv, repo: &Path) -> PathBuf {
    env.path()
        .join("runtime/wt-tools/daemon")
        .join(format!("{}.sock", project_name(env, repo)))
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
        if args.iter().any(|a| a == "serve") && args.iter().any(|a| a == name) {
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
fn a_stale_socket_and_a_daemon_of_another_build_are_replaced() {
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
        cmd.current_dir(&repo)
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
    // Upgrade: the engine binary changes; the next client replaces the old daemon, also when
    // it is a command the `wt-memory` front would forward to a daemon of its own build.
    let copy = bin.join("wt-memory-engine");
    let bytes = std::fs::read(&copy).unwrap();
    std::fs::remove_file(&copy).unwrap();
    std::fs::write(&copy, &bytes).unwrap();
    std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    ok(wt(
        &["remember", "--type", "Learning"],
        Some("Upgrades replace the daemon"),
    ));
    wait_until("old daemon gone", Duration::from_secs(10), || {
        !alive(first[0])
    });
    let found: Value = serde_json::from_str(&ok(wt(&["recall", "stale sockets"], None))).unwrap();
    assert_eq!(found.as_array().unwrap().len(), 2);
    let now = daemon_pids(&name);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now, first);
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
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        eprintln!("SKIPPED another_user_gets_no_answer: needs root to run a client as another uid");
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

    let script = format!(
        "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect({:?})\n s.sendall(b'{{\"control\":\"status\"}}\\n')\n print(s.recv(4096).decode())\nexcept OSError as e:\n print('refused', e)\n",
        sock.display().to_string()
    );
    use std::os::unix::process::CommandExt;
    let out = Command::new("python3")
        .args(["-c", &script])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        !said.contains("uptime_secs"),
        "another user got an answer: {said}"
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
    let log = env.path().join(format!("state/wt-tools/daemon-{name}.log"));
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

/// How many command lines the `wt-memory` front forwarded to the running daemon.
fn forwarded_count(env: &TestEnv, repo: &Path) -> u64 {
    let s = status(env, repo).expect("a daemon runs");
    s["service"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "command_line")
        .map_or(0, |o| o["count"].as_u64().unwrap())
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
fn a_daemon_that_goes_away_mid_command_leaves_the_front_to_run_it_with_the_same_input() {
    use std::io::{BufRead, BufReader, Write};
    let env = TestEnv::new();
    let (repo, name, pid) = one_note_through_a_daemon(&env, "The daemon starts here");
    // The daemon's own hello, for a stand-in that the front will take for it.
    let sock = env
        .path()
        .join("runtime/wt-tools/daemon")
        .join(format!("{name}.sock"));
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
