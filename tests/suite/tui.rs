//! `wt-memory tui` end to end: `--once` prints the main screen without a terminal, a pipe gets a
//! one-line refusal, and in a real terminal (tmux) a user browses, opens a memory, forgets one,
//! searches and quits.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use support::TestEnv;

const RUSQLITE: &str = "Use rusqlite for the metrics log";
const WEBHOOK: &str = "The webhook retries five times with backoff";
const WEBHOOK_MORE: &str = "See src/payments/webhook.rs for the retry limit";
const STAGING: &str = "Staging cluster stg-eu-2 runs before production";

/// A repository with three memories; the webhook one, second newest, has a second line.
fn project(env: &TestEnv) -> PathBuf {
    let repo = env.git_repo("shop");
    env.remember(&repo, STAGING, "Context", "deploy");
    env.remember(
        &repo,
        &format!("{WEBHOOK}\n{WEBHOOK_MORE}"),
        "Learning",
        "payments",
    );
    env.remember(&repo, RUSQLITE, "Decision", "metrics");
    repo
}

#[test]
fn once_prints_the_main_screen() {
    let env = TestEnv::new();
    let repo = project(&env);
    let out = env.wt_ok(&repo, &["tui", "--once"], None);
    for expected in [
        RUSQLITE,
        WEBHOOK,
        STAGING,
        "Decision",
        "3 memories",
        "Metrics: last 7 days",
    ] {
        assert!(out.contains(expected), "{expected:?} missing:\n{out}");
    }
    assert!(
        !out.contains(WEBHOOK_MORE),
        "the list shows first lines:\n{out}"
    );
    assert!(
        out.find(RUSQLITE) < out.find(WEBHOOK) && out.find(WEBHOOK) < out.find(STAGING),
        "newest first:\n{out}"
    );
    assert_eq!(out.lines().count(), 40, "one 120x40 frame");
}

#[test]
fn without_a_terminal_it_says_how_to_run_it() {
    let env = TestEnv::new();
    let repo = env.git_repo("shop");
    let out = env.wt(&repo, &["tui"], None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not a terminal") && stderr.contains("--once"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// A tmux server of its own, killed when the test ends, passing or not. Its socket lives in
/// the test's temporary directory, so nothing is left behind in tmux's own.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "tui"]).stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "tui"];
        args.extend(keys);
        assert!(self.run(&args).status.success(), "send-keys {keys:?}");
    }

    /// Wait (up to `secs`) until the screen satisfies `ok`; returns it.
    fn wait_for(&self, what: &str, secs: u64, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn session_alive(&self) -> bool {
        self.run(&["has-session", "-t", "tui"]).status.success()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// `text` as one shell word.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn tmux_installed() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn browse_open_forget_search_and_quit_in_a_real_terminal() {
    if !tmux_installed() {
        support::skipped(
            "browse_open_forget_search_and_quit_in_a_real_terminal",
            "tmux not installed (scripts/deps.sh installs it)",
        );
        return;
    }
    let env = TestEnv::new();
    let repo = project(&env);
    // The isolated environment, as `env.cmd` gives it, through `env` in tmux's shell command.
    let mut command = vec!["env".to_string()];
    for k in support::leaked_vars() {
        command.push(format!("-u {k}"));
    }
    for (k, v) in env.envs() {
        command.push(format!("{k}={}", quoted(&v)));
    }
    if let Ok(daemon) = std::env::var("WT_MEMORY_DAEMON") {
        command.push(format!("WT_MEMORY_DAEMON={}", quoted(&daemon)));
    }
    command.push(quoted(&support::bin_path("wt-memory").to_string_lossy()));
    command.push("tui".into());
    let tmux = Tmux {
        socket: env.path().join("tmux.sock"),
    };
    let started = tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "tui",
        "-x",
        "140",
        "-y",
        "40",
        "-c",
        &repo.to_string_lossy(),
        &command.join(" "),
    ]);
    assert!(
        started.status.success(),
        "tmux: {}",
        String::from_utf8_lossy(&started.stderr)
    );

    // The first call may start a daemon that loads the model.
    tmux.wait_for("the list", 20, |s| {
        s.contains(RUSQLITE) && s.contains(WEBHOOK) && s.contains(STAGING)
    });

    // Down to the webhook memory, open it: the whole content.
    tmux.keys(&["j", "Enter"]);
    tmux.wait_for("the detail view", 20, |s| {
        s.contains(WEBHOOK_MORE) && s.contains("Near-duplicates") && s.contains("type: Learning")
    });
    tmux.keys(&["Escape"]);
    tmux.wait_for("the list again", 10, |s| {
        !s.contains(WEBHOOK_MORE) && s.contains(RUSQLITE)
    });

    // Forget it: asked first, gone after `y`, from the screen and from the store.
    tmux.keys(&["d"]);
    tmux.wait_for("the confirmation", 10, |s| s.contains("y to forget"));
    tmux.keys(&["y"]);
    tmux.wait_for("the list without it", 20, |s| {
        !s.contains(WEBHOOK) && s.contains(RUSQLITE) && s.contains("forgot ")
    });
    assert_store_holds(&env, &repo, &[RUSQLITE, STAGING]);

    // Search: the query runs on Enter.
    tmux.keys(&["/"]);
    tmux.keys(&["-l", "staging cluster"]);
    tmux.wait_for("the query", 10, |s| s.contains("/staging cluster"));
    tmux.keys(&["Enter"]);
    tmux.wait_for("the results", 20, |s| {
        s.contains("Search \"staging cluster\"") && s.contains(STAGING)
    });

    tmux.keys(&["q"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while tmux.session_alive() {
        assert!(
            Instant::now() < deadline,
            "q did not quit:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = env.wt(&repo, &["daemon", "stop"], None);
}

fn assert_store_holds(env: &TestEnv, repo: &Path, contents: &[&str]) {
    let listed = env.wt_json(repo, &["list"], None);
    let mut have: Vec<&str> = listed
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    have.sort();
    let mut want = contents.to_vec();
    want.sort();
    assert_eq!(have, want);
}
