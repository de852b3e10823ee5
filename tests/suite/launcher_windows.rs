//! The plugin's launcher on native Windows (Git Bash, MSYS2, Cygwin), which no release archive
//! serves yet: with a stand-in `uname` on PATH that answers as Git Bash does, every program says in
//! one line that native Windows is not supported and to use WSL, a hook exits 0 (SessionStart tells
//! the agent in one sentence), and nothing is downloaded even when the lock pins every target.

use crate::support::run;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const GIT_BASH: &str = "MINGW64_NT-10.0-19045 x86_64";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A copy of `plugin/` whose lock pins all four targets (served from a folder that does not
/// exist: a download would fail loudly), and a folder with a `uname` that prints `answer`.
struct Windows {
    tmp: tempfile::TempDir,
}

impl Windows {
    fn new(answer: &str) -> Windows {
        let tmp = tempfile::tempdir().unwrap();
        let copy = run(
            Command::new("cp")
                .arg("-R")
                .arg(repo_root().join("plugin"))
                .arg(tmp.path().join("plugin")),
            None,
        );
        assert!(copy.status.success(), "{}", text(&copy.stderr));
        let version = env!("CARGO_PKG_VERSION");
        let mut lock = format!("version {version}\nbase file:///nonexistent\n");
        for target in [
            "aarch64-apple-darwin",
            "aarch64-unknown-linux-gnu",
            "x86_64-apple-darwin",
            "x86_64-unknown-linux-gnu",
        ] {
            lock.push_str(&format!(
                "{target} wt-tools-{version}-{target}.tar.gz {}\n",
                "0".repeat(64)
            ));
        }
        std::fs::write(tmp.path().join("plugin/dist.lock"), lock).unwrap();
        let fake = tmp.path().join("fake-bin");
        std::fs::create_dir_all(&fake).unwrap();
        let uname = fake.join("uname");
        std::fs::write(&uname, format!("#!/bin/sh\necho '{answer}'\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&uname, std::fs::Permissions::from_mode(0o755)).unwrap();
        Windows { tmp }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// The plugin's `program`, as Claude Code runs it, with the stand-in `uname` first on PATH.
    fn run(&self, program: &str, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new(self.path("plugin/bin").join(program));
        cmd.args(args)
            .env_clear()
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", self.path("fake-bin").display()),
            )
            .env("HOME", self.tmp.path())
            .env("CLAUDE_PLUGIN_ROOT", self.path("plugin"))
            .env("CLAUDE_PLUGIN_DATA", self.path("data"));
        run(&mut cmd, stdin)
    }

    fn nothing_downloaded(&self) {
        assert!(
            !Path::new(&self.path("data/dist")).exists(),
            "no download may start on native Windows"
        );
    }
}

/// The one line every program writes on native Windows.
fn says_windows(stderr: &str) {
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.starts_with("wt-tools: ")
            && stderr.contains("does not support native Windows yet")
            && stderr.contains("WSL"),
        "{stderr}"
    );
}

#[test]
fn on_native_windows_the_launcher_says_so_in_one_line_and_no_hook_breaks_the_session() {
    let w = Windows::new(GIT_BASH);

    // SessionStart: exit 0, the line on stderr, and one sentence for the agent.
    let out = w.run("wt-hook-memory", &["SessionStart"], Some("{}"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    says_windows(&text(&out.stderr));
    let said: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    assert_eq!(said["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let context = said["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("native Windows") && context.contains("WSL"),
        "{context}"
    );
    assert!(
        context.ends_with('.') && context.matches('.').count() == 1,
        "one sentence: {context}"
    );

    // Every other event: exit 0, the line, nothing for the agent.
    for event in ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"] {
        let out = w.run("wt-hook-memory", &[event], Some("{}"));
        assert_eq!(out.status.code(), Some(0), "{event}: {}", text(&out.stderr));
        says_windows(&text(&out.stderr));
        assert!(out.stdout.is_empty(), "{event}: {}", text(&out.stdout));
    }

    // The other programs, `wt-project init` first: exit 1 with the line.
    for (program, args) in [
        ("wt-project", &["init"][..]),
        ("wt-memory", &["--version"][..]),
        ("wt-mcp-server", &[][..]),
        ("wt-launch", &["--which", "wt-memory"][..]),
        ("wt-launch", &["--fetch"][..]),
    ] {
        let out = w.run(program, args, None);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{program} {args:?}: {}",
            text(&out.stderr)
        );
        says_windows(&text(&out.stderr));
        assert!(out.stdout.is_empty(), "{program}: {}", text(&out.stdout));
    }
    w.nothing_downloaded();
}

#[test]
fn msys2_and_cygwin_are_native_windows_too_and_linux_is_not() {
    for answer in ["MSYS_NT-10.0-22631 x86_64", "CYGWIN_NT-10.0-19045 x86_64"] {
        let w = Windows::new(answer);
        let out = w.run("wt-hook-memory", &["UserPromptSubmit"], Some("{}"));
        assert_eq!(out.status.code(), Some(0), "{answer}");
        says_windows(&text(&out.stderr));
        let out = w.run("wt-project", &["init"], None);
        assert_eq!(out.status.code(), Some(1), "{answer}");
        says_windows(&text(&out.stderr));
        w.nothing_downloaded();
    }

    // The same stand-in answering as Linux: the launcher goes for the pinned archive instead (here
    // a download that fails), and says nothing about Windows.
    let w = Windows::new("Linux x86_64");
    let out = w.run("wt-memory", &["--version"], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("Windows") && stderr.contains("download"),
        "{stderr}"
    );
}
