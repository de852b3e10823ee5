//! What crosses a project daemon's socket that an engine-free process must know: where the
//! socket is, who is talking ([`Hello`]) and a forwarded command line ([`Forward`]). The typed
//! requests of the engine's front ends are `wt_memory::daemon`'s; both speak one line protocol:
//! one JSON object per line, `{"hello": Hello}` first, then requests, each answered by
//! `{"ok": …}` or `{"err": …}`.

use crate::config;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Version of the line protocol; a daemon speaking another one is replaced.
pub const PROTOCOL: u32 = 4;

/// The binary that links the engine: the full command line, and the daemon (`serve`).
pub const ENGINE: &str = "wt-memory-engine";

pub fn daemon_dir() -> PathBuf {
    crate::paths::runtime_dir().join("daemon")
}

/// The socket of the daemon serving the store named `project`.
pub fn socket_path(project: &str) -> PathBuf {
    daemon_dir().join(format!("{project}.sock"))
}

/// Who is talking: exchanged first on every connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    /// The engine binary's identity (version, size, modification time): a rebuilt or upgraded
    /// binary means a new daemon.
    pub build: String,
    /// The model directory the engine uses (`None`: hash embeddings).
    pub model: Option<PathBuf>,
    pub pid: u32,
}

impl Hello {
    /// What this process says: the daemon it would start, for the model at `model`.
    pub fn here(model: Option<PathBuf>) -> Hello {
        let engine = config::locate_binary(ENGINE).unwrap_or_default();
        Hello {
            protocol: PROTOCOL,
            build: build_of(&engine),
            model,
            pid: std::process::id(),
        }
    }

    /// Is `peer` the daemon this side would start (same protocol, build and model)?
    pub fn agrees_with(&self, peer: &Hello) -> bool {
        peer.protocol == self.protocol && peer.build == self.build && peer.model == self.model
    }
}

/// The identity of the binary at `path`.
fn build_of(path: &Path) -> String {
    let meta = std::fs::metadata(path).ok();
    let stamp = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!(
        "{} {} {stamp}",
        env!("CARGO_PKG_VERSION"),
        meta.map_or(0, |m| m.len())
    )
}

/// A `wt-memory` command line for the daemon to run as the engine binary would
/// (`{"forward": Forward}`), answered by `{"ok": Forwarded}`, or by `{"err": …}` when the
/// daemon does not run that command (then nothing was done).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Forward {
    /// The arguments after the program name.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Standard input, read whole (empty when it is a terminal).
    pub stdin: String,
    /// How long the daemon may wait for the store on the command's behalf.
    pub lock_wait_ms: u64,
}

/// What the command printed and its exit status.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Forwarded {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
}
