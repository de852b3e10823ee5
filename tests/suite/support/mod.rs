//! Shared helpers for integration tests: an isolated environment (store root, state and runtime
//! dirs in a temp dir), real git repositories, and the built binaries.
//!
//! The neural model is found through the real `wt-memory setup` cache (`~/.local/share/...`), which
//! `.ci/run` fills before the tests; `XDG_DATA_HOME` is therefore left alone.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["store", "state", "runtime", "config"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        TestEnv { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn store_root(&self) -> PathBuf {
        self.path().join("store")
    }

    /// Environment every child gets, so nothing touches the user's real stores or caches.
    pub fn envs(&self) -> Vec<(String, String)> {
        let p = |s: &str| self.path().join(s).to_string_lossy().into_owned();
        vec![
            ("WT_MEMORY_HOME".into(), p("store")),
            ("XDG_STATE_HOME".into(), p("state")),
            ("XDG_RUNTIME_DIR".into(), p("runtime")),
            ("CLAUDE_CONFIG_DIR".into(), p("config")),
            ("GIT_AUTHOR_NAME".into(), "Test User".into()),
            ("GIT_AUTHOR_EMAIL".into(), "test@example.com".into()),
            ("GIT_COMMITTER_NAME".into(), "Test User".into()),
            ("GIT_COMMITTER_EMAIL".into(), "test@example.com".into()),
            // A Stop hook extracts before it returns, so a test sees the result when it does
            // (the default detached worker has a test of its own in tests/suite/extract.rs).
            ("WT_MEMORY_HARVEST".into(), "foreground".into()),
        ]
    }

    /// A command for one of this package's binaries (`wt-memory`, `wt-hook-memory`, ...).
    pub fn cmd(&self, bin: &str, cwd: &Path) -> Command {
        let mut c = Command::new(bin_path(bin));
        c.current_dir(cwd);
        for (k, v) in self.envs() {
            c.env(k, v);
        }
        clean_env(&mut c);
        c
    }

    /// Run `wt-memory args...` in `cwd` with optional stdin.
    pub fn wt(&self, cwd: &Path, args: &[&str], stdin: Option<&str>) -> Output {
        run(self.cmd("wt-memory", cwd).args(args), stdin)
    }

    /// Run `wt-memory` and require success; returns stdout.
    pub fn wt_ok(&self, cwd: &Path, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.wt(cwd, args, stdin);
        assert!(
            out.status.success(),
            "wt-memory {args:?} failed ({:?}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    /// Run `wt-memory ... ` expecting JSON on stdout.
    pub fn wt_json(&self, cwd: &Path, args: &[&str], stdin: Option<&str>) -> serde_json::Value {
        let out = self.wt_ok(cwd, args, stdin);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// Store a memory and return its id.
    pub fn remember(&self, cwd: &Path, content: &str, ty: &str, tags: &str) -> String {
        let mut args = vec!["remember", "--type", ty];
        if !tags.is_empty() {
            args.extend(["--tags", tags]);
        }
        self.wt_ok(cwd, &args, Some(content)).trim().to_string()
    }

    /// The store directory of the project whose store name starts with `name`.
    pub fn store_dir_of(&self, name: &str) -> PathBuf {
        std::fs::read_dir(self.store_root())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(name))
            .unwrap_or_else(|| panic!("no store of {name} under {}", self.store_root().display()))
    }

    /// A fresh git repository at `<tmp>/<rel>` with one commit on `main`.
    pub fn git_repo(&self, rel: &str) -> PathBuf {
        let repo = self.path().join(rel);
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "demo\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "init"]);
        repo
    }
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Test User")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test User")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn run(cmd: &mut Command, stdin: Option<&str>) -> Output {
    use std::io::Write;
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    if let Some(input) = stdin {
        // A command may exit before reading its input (a refusal): a closed pipe is not a failure.
        if let Err(e) = child.stdin.take().unwrap().write_all(input.as_bytes()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
    }
    child.wait_with_output().expect("wait")
}

impl TestEnv {
    /// Stop `repo`'s memory daemon, if one runs, and wait until it is gone (as after a reboot:
    /// the next command opens the store anew).
    pub fn stop_daemon(&self, repo: &Path) {
        let _ = self.wt(repo, &["daemon", "stop"], None);
        for _ in 0..400 {
            if !self.wt(repo, &["daemon", "status"], None).status.success() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("the memory daemon did not stop");
    }
}

/// Another process holding a project's store lock (as a long write would), until dropped.
pub struct LockHolder(std::process::Child);

impl Drop for LockHolder {
    fn drop(&mut self) {
        // The whole group: `flock` and the `sleep` that inherited the locked descriptor.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

impl TestEnv {
    /// Hold `repo`'s store lock from a separate `flock` process; returns once it is held.
    pub fn hold_store_lock(&self, repo: &Path) -> LockHolder {
        let status = self.wt_json(repo, &["status", "--json", "--no-daemon"], None);
        let name = status["project"]
            .as_str()
            .expect("project name")
            .to_string();
        let lock = self
            .store_root()
            .join(".locks")
            .join(format!("{name}.lock"));
        hold_lock(&lock)
    }
}

/// Hold an exclusive `flock` on `lock` from a separate process; returns once it is held.
#[allow(dead_code)]
pub fn hold_lock(lock: &Path) -> LockHolder {
    std::fs::create_dir_all(lock.parent().unwrap()).unwrap();
    use std::os::unix::process::CommandExt;
    let holder = Command::new("flock")
        .arg("-x")
        .arg(lock)
        .args(["sleep", "120"])
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("flock (util-linux)");
    let holder = LockHolder(holder);
    for _ in 0..200 {
        let free = Command::new("flock")
            .args(["-n", "-x"])
            .arg(lock)
            .arg("true")
            .status()
            .expect("flock")
            .success();
        if !free {
            return holder;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("flock never took {}", lock.display());
}

/// Variables of the environment the tests run in that would change what a test measures: the
/// shipped product reads the `WT_MEMORY_TUNE_*` tuning variables (crates/base/src/config.rs), so one left
/// exported by a study would silently move every score; and a store or project of the caller's.
/// A test that tunes on purpose sets its variable on the command after this (`cmd.env(...)` wins).
/// `WT_MEMORY_DAEMON` is kept: `scripts/test.sh` runs the suite a second time with it set to 0.
pub fn leaked_vars() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| {
            k.starts_with("WT_MEMORY_TUNE_")
                || matches!(
                    k.as_str(),
                    "SHODH_STORAGE"
                        | "CLAUDE_PROJECT_DIR"
                        | "CLAUDE_PLUGIN_ROOT"
                        | "CLAUDE_PLUGIN_DATA"
                        | "WT_HOOK_DISABLED"
                        | "WT_HOOK_DEBUG"
                        | "WT_MEMORY_USE_PRIOR"
                        | "WT_MEMORY_METRICS"
                        | "WT_MEMORY_LOCK_WAIT_SECS"
                        | "WT_MEMORY_MACHINE"
                        | "WT_MEMORY_DAEMON_IDLE_SECS"
                )
        })
        .collect()
}

/// Remove [`leaked_vars`] from a command of ours (every `TestEnv::cmd` gets this).
pub fn clean_env(cmd: &mut Command) -> &mut Command {
    for k in leaked_vars() {
        cmd.env_remove(k);
    }
    cmd
}

/// The tools' log (`$XDG_STATE_HOME/wt-tools/wt-hook-memory.log`, crates/base/src/log.rs): a hook is
/// fail-open, so when it errs or misses its budget it exits 0 and prints nothing, exactly as when
/// it has nothing to say; this log is the only place that tells the two apart. A mark remembers
/// where the log ended, so what a run added can be read on its own.
pub struct HookLog {
    path: PathBuf,
    start: u64,
}

impl HookLog {
    /// The log of `env` as it is now (the service `env` starts logs there too).
    pub fn mark(env: &TestEnv) -> HookLog {
        let path = env.path().join("state/wt-tools/wt-hook-memory.log");
        let start = std::fs::metadata(&path).map_or(0, |m| m.len());
        HookLog { path, start }
    }

    /// The lines written since the mark (all of the file if it was rotated meanwhile).
    pub fn lines(&self) -> Vec<String> {
        let bytes = std::fs::read(&self.path).unwrap_or_default();
        let from = if (bytes.len() as u64) < self.start {
            0
        } else {
            self.start as usize
        };
        String::from_utf8_lossy(&bytes[from..])
            .lines()
            .map(String::from)
            .collect()
    }

    /// The lines since the mark that say a hook failed or missed its budget ([`is_trouble`]).
    pub fn trouble(&self) -> Vec<String> {
        self.lines().into_iter().filter(|l| is_trouble(l)).collect()
    }

    /// Require that nothing since the mark says a hook failed or missed its budget.
    pub fn assert_clean(&self, what: &str) {
        let trouble = self.trouble();
        assert!(
            trouble.is_empty(),
            "{what}: the hook logged an error or a missed budget ({}):\n{}",
            self.path.display(),
            trouble.join("\n")
        );
    }
}

/// Words of the messages a hook logs when it runs out of time or the store did not answer in its
/// budget (src/hook/{mod,memory}.rs, crates/base/src/hook_front.rs): some are INFO lines (a write
/// spooled for later), the rest ERROR.
const BUDGET_WORDS: &[&str] = &[
    "deadline",
    "budget",
    "spooled",
    "did not answer",
    "no time left",
    "lock timeout",
    "timed out",
];

/// Is this log line (`<time> pid=<pid> <event> <LEVEL>: <message>`) an error, a warning or a
/// missed budget? Only INFO and DEBUG lines free of [`BUDGET_WORDS`] are not; a line not in that
/// shape counts as trouble too.
pub fn is_trouble(line: &str) -> bool {
    let mut parts = line.splitn(4, ' ');
    let (Some(_time), Some(pid), Some(_event), Some(rest)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return !line.trim().is_empty();
    };
    let Some((level, message)) = rest.split_once(": ") else {
        return true;
    };
    !pid.starts_with("pid=")
        || !matches!(level, "INFO" | "DEBUG")
        || BUDGET_WORDS.iter().any(|w| message.contains(w))
}

/// What a hook run gave back, as [`assert_silent`] reads it.
pub trait HookRun {
    /// The exit status, when this value still holds it (a wrapper that returns stdout alone has
    /// checked it already).
    fn status(&self) -> Option<std::process::ExitStatus> {
        None
    }
    fn stdout(&self) -> &[u8];
}

impl HookRun for Output {
    fn status(&self) -> Option<std::process::ExitStatus> {
        Some(self.status)
    }
    fn stdout(&self) -> &[u8] {
        &self.stdout
    }
}

impl HookRun for String {
    fn stdout(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl<T: HookRun> HookRun for (T, std::time::Duration) {
    fn status(&self) -> Option<std::process::ExitStatus> {
        self.0.status()
    }
    fn stdout(&self) -> &[u8] {
        self.0.stdout()
    }
}

/// The one check of a hook that must stay silent: `run` (one hook run, or several) exits 0, prints
/// nothing, and leaves no error, warning or missed budget in the hook's log ([`HookLog`]). Exit 0
/// and an empty stdout alone cannot tell "nothing to say" from a hook that failed open. Returns
/// what `run` returned.
pub fn assert_silent<R: HookRun>(env: &TestEnv, what: &str, run: impl FnOnce() -> R) -> R {
    let log = HookLog::mark(env);
    let out = run();
    if let Some(status) = out.status() {
        assert_eq!(status.code(), Some(0), "{what}: exit {status:?}");
    }
    assert!(
        out.stdout().is_empty(),
        "{what}: must print nothing, printed {:?}",
        String::from_utf8_lossy(out.stdout())
    );
    log.assert_clean(what);
    out
}

/// A test that cannot run here (a missing tool, or not root for a second uid): say so where it
/// cannot be missed, past the harness's capture of a passing test's output, and fail under
/// `CI=true` (`.ci/run`), where every test must run. Call it and return.
pub fn skipped(test: &str, why: &str) {
    let line = format!("SKIPPED {test}: {why}: this test did NOT run");
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{line}, and CI=true requires it to run");
    }
    use std::io::Write;
    let bar = "#".repeat(100);
    let _ = writeln!(std::io::stderr(), "\n{bar}\n# {line}\n{bar}");
}

/// Does this process run as root, as the cross-user tests need (a client, a directory or a
/// listener of another uid)? When not, [`skipped`] says so and the caller returns.
pub fn root_or_skipped(test: &str, why: &str) -> bool {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } == 0 {
        return true;
    }
    skipped(test, &format!("needs root {why}"));
    false
}

/// The data home where `wt-memory setup` put the model for the user running the tests, for a
/// command given a HOME of its own (without it, such a command's hooks find no model and fail).
pub fn model_data_home() -> PathBuf {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".local/share"))
}

/// Path of a binary built by this package (cargo sets CARGO_BIN_EXE_* only for the test's own
/// package; the target dir layout is stable, so derive it from the test executable).
pub fn bin_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap(); // target/debug/deps -> target/debug
    dir.join(name)
}

/// The shared fixtures directory (copied into `testdata/fixtures` so a clean clone is self-contained).
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fixtures")
}

/// The contract-faithful fake `claude -p` of `tests/fake_llm`, installed in `<env>/fake-bin`, with
/// its calls recorded under `<env>/claude-calls` and its answer read from `<env>/answer.txt`.
pub struct FakeModel {
    pub bin_dir: PathBuf,
    pub calls: PathBuf,
    pub answer: PathBuf,
}

impl FakeModel {
    pub fn install(env: &TestEnv, answer: &str) -> FakeModel {
        let bin_dir = env.path().join("fake-bin");
        let calls = env.path().join("claude-calls");
        std::fs::create_dir_all(&bin_dir).unwrap();
        std::fs::create_dir_all(&calls).unwrap();
        let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_llm/claude");
        std::fs::copy(fake, bin_dir.join("claude")).unwrap();
        std::fs::set_permissions(
            bin_dir.join("claude"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let answer_file = env.path().join("answer.txt");
        std::fs::write(&answer_file, answer).unwrap();
        FakeModel {
            bin_dir,
            calls,
            answer: answer_file,
        }
    }

    /// `cmd` with the fake first on PATH, recording and answering.
    pub fn wire<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        let path = format!(
            "{}:{}",
            self.bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.env("PATH", path)
            .env("FAKE_CLAUDE_DIR", &self.calls)
            .env("FAKE_CLAUDE_ANSWER", &self.answer)
    }

    /// Recorded calls, oldest first: (argv lines, env text, stdin).
    pub fn calls(&self) -> Vec<(Vec<String>, String, String)> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&self.calls)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        dirs.sort();
        dirs.iter()
            .map(|d| {
                let argv = std::fs::read_to_string(d.join("argv"))
                    .unwrap()
                    .lines()
                    .map(String::from)
                    .collect();
                let env = std::fs::read_to_string(d.join("env")).unwrap();
                let stdin = std::fs::read_to_string(d.join("stdin")).unwrap_or_default();
                (argv, env, stdin)
            })
            .collect()
    }
}

/// What the UserPromptSubmit hook injects for `prompt` in `repo`, as session `session` (empty
/// when it injects nothing); the hook exits 0.
pub fn prompt_injection(env: &TestEnv, repo: &Path, prompt: &str, session: &str) -> String {
    let payload = serde_json::json!({
        "session_id": session,
        "hook_event_name": "UserPromptSubmit",
        "cwd": repo, "prompt": prompt,
    });
    let mut cmd = env.cmd("wt-hook-memory", repo);
    cmd.arg("UserPromptSubmit").env("CLAUDE_PROJECT_DIR", repo);
    let out = run(&mut cmd, Some(&payload.to_string()));
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    if stdout.trim().is_empty() {
        return String::new();
    }
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Where Claude Code keeps its auto memory of `repo` in this test's config folder (the project's
/// path with every other character as `-`), made.
pub fn auto_memory_dir(env: &TestEnv, repo: &Path) -> PathBuf {
    let slug: String = repo
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = env.path().join("config/projects").join(slug).join("memory");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
