//! The process-wide set-up the engine needs (the configuration itself is
//! [`wt_memory_base::config`], `wt_memory_base::config`).
//!
//! [`prepare_process`] sets the engine's environment and resolves the ONNX Runtime path; every
//! binary that links the engine calls it first, while it is still single-threaded, so a
//! multi-threaded process can own a [`crate::store::Store`].

use std::sync::OnceLock;
use wt_memory_base::model::{self, Assets};

/// The model and runtime this process uses, found by [`prepare_process`] (or at first use).
pub fn engine_assets() -> Option<&'static Assets> {
    ENGINE.get_or_init(configure_engine).as_ref()
}

static ENGINE: OnceLock<Option<Assets>> = OnceLock::new();

/// Point the engine at the model (or at nothing: hash embeddings), forbid downloads, and resolve
/// the ONNX Runtime path once, with the engine's `[shodh] Using ONNX Runtime …` line kept off
/// stderr. Environment writes are only sound while the process is single-threaded: every binary
/// calls [`prepare_process`] first thing in `main`.
fn configure_engine() -> Option<Assets> {
    let assets = model::find_assets();
    std::env::set_var("SHODH_OFFLINE", "true");
    match &assets {
        Some(a) => {
            std::env::set_var("SHODH_MODEL_PATH", &a.model_dir);
            std::env::set_var("ORT_DYLIB_PATH", &a.ort_lib);
        }
        None => {
            // A runtime of another machine (a copied home, a mixed install) is refused before the
            // engine could panic loading it; say so where every process can (a hook prints
            // nothing), and the commands that need the model print the same line as their fix.
            let why = model::why_missing();
            if why != model::NONE_FOUND {
                wt_memory_base::log::write(
                    "warn",
                    "model",
                    &wt_memory_foundation::setup::fix_hint(),
                );
            }
            // A path that cannot exist, so the engine does not pick up stray model copies in
            // `./models` or `~/.cache` and then mix embedders.
            std::env::set_var("SHODH_MODEL_PATH", "/nonexistent/wt-memory-no-model");
            std::env::remove_var("ORT_DYLIB_PATH");
        }
    }
    if assets.is_some() {
        wt_memory_base::os::files::with_stderr_silenced(|| {
            shodh_memory::embeddings::minilm::pre_init_ort_runtime(true)
        });
    }
    assets
}

/// The process-wide set-up: the configuration and the engine's environment. Call first in `main`.
pub fn prepare_process() {
    // Everything these processes create (stores, logs, caches, spools, exports) is the user's
    // alone, whatever the umask or the directories above it.
    wt_memory_base::os::process::set_umask(0o077);
    wt_memory_base::config::get();
    engine_assets();
}
