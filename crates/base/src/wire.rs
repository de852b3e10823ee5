//! What crosses a store's service socket that an engine-free process must know: where the
//! socket is, who is talking ([`Hello`]), the line framing, and a forwarded command line
//! ([`Forward`]). The typed requests of the engine's front ends are `wt_memory::daemon`'s; both
//! speak one line protocol: one JSON object per line, `{"hello": Hello}` first, then requests.
//! A request's turn is announced by `{"started": null}` (so a client can tell a queue from a
//! slow answer), and it is answered by `{"ok": …}` or `{"err": …}`.
//!
//! A service is identified by the store it serves: the canonical store directory, hashed into
//! the socket's name. Two store roots holding a store of the same name get two services.

use crate::config;
pub use crate::os::socket::Stream;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Version of the line protocol; a service speaking another one is not used. Raise it with every
/// new or changed request: a service of the same crate version but an older build would otherwise
/// be used, and answer a request it does not know with an error (7: every request is
/// `{"op": name, "args": …}`, one type per operation).
pub const PROTOCOL: u32 = 8;

/// The binary that links the engine: the full command line, and the service (`serve`).
pub const ENGINE: &str = "wt-memory-engine";

/// The longest line a service reads before the client's hello.
pub const MAX_HELLO_LINE: usize = 64 * 1024;

/// The longest request line (an import document travels as one line).
pub const MAX_LINE: usize = 256 * 1024 * 1024;

pub fn daemon_dir() -> PathBuf {
    crate::paths::runtime_dir().join("daemon")
}

/// The store directory as the service knows it: absolute, with its root's links resolved. The
/// store, and even its root, may not exist yet: the deepest folder above it that does is
/// resolved and the rest joined as written, so the name is the same before and after they are
/// made (on Windows, resolving also gives the folders' own letter case).
pub fn canonical_store(store_dir: &Path) -> PathBuf {
    let absolute = std::path::absolute(store_dir).unwrap_or_else(|_| store_dir.to_path_buf());
    let Some(root) = absolute.parent() else {
        return absolute;
    };
    for existing in root.ancestors() {
        if let Ok(resolved) = crate::os::files::canonicalize(existing) {
            let rest = absolute.strip_prefix(existing).unwrap_or(Path::new(""));
            return resolved.join(rest);
        }
    }
    absolute
}

/// The service's file name stem for `store_dir`: the store's name (for people) and a hash of
/// its canonical path (for identity).
pub fn store_key(store_dir: &Path) -> String {
    let canonical = canonical_store(store_dir);
    let name: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(40).collect())
        .unwrap_or_default();
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    format!("{name}-{}", &crate::hex(&digest)[..12])
}

use crate::os::socket::MAX_SOCKET_PATH;

/// The socket of the service of the store at `store_dir`: in [`daemon_dir`], or, when that path
/// is too long for a socket (a long `XDG_RUNTIME_DIR`), under a short private folder of the
/// system's temporary directory, named by a hash of the long path (so it stays one per store
/// and runtime folder).
pub fn socket_path(store_dir: &Path) -> PathBuf {
    socket_in(&daemon_dir(), store_dir)
}

fn socket_in(daemon_dir: &Path, store_dir: &Path) -> PathBuf {
    socket_named(daemon_dir, &store_key(store_dir))
}

/// `<stem>.sock` in `daemon_dir`, or in the short folder when that path is too long.
fn socket_named(daemon_dir: &Path, stem: &str) -> PathBuf {
    let path = daemon_dir.join(format!("{stem}.sock"));
    if path.as_os_str().len() <= MAX_SOCKET_PATH {
        return path;
    }
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    short_socket_dir().join(format!("{}.sock", &crate::hex(&digest)[..24]))
}

/// The control socket of the user's engine, the one process that serves every store it is asked
/// to open (`wt-memory serve --engine`); beside the stores' sockets, under the same checks.
pub fn engine_socket_path() -> PathBuf {
    socket_named(&daemon_dir(), ENGINE_STEM)
}

/// Held by the user's engine for its life, with its pid inside: one engine at a time.
pub fn engine_lock_path() -> PathBuf {
    daemon_dir().join(format!("{ENGINE_STEM}.lock"))
}

/// The file stem of the engine's socket and locks (no store key has this form: a key ends in
/// `-` and twelve hex digits).
const ENGINE_STEM: &str = "engine";

/// Where sockets go whose path in [`daemon_dir`] would be too long.
fn short_socket_dir() -> PathBuf {
    crate::os::socket::short_socket_dir(crate::paths::my_uid())
}

/// Make the (private) folder `socket` goes in.
pub fn ensure_socket_dir(socket: &Path) -> std::io::Result<()> {
    match socket.parent() {
        Some(dir) => crate::paths::ensure_private_dir(dir),
        None => Ok(()),
    }
}

/// Held by the service of the store at `store_dir` for its life, with its pid inside (named
/// when it does not answer).
pub fn daemon_lock_path(store_dir: &Path) -> PathBuf {
    daemon_dir().join(format!("{}.daemon.lock", store_key(store_dir)))
}

/// The pid a live service of the store at `store_dir` wrote into its lock, if any.
pub fn service_pid(store_dir: &Path) -> Option<u32> {
    pid_in(&daemon_lock_path(store_dir)).filter(|&pid| crate::os::process::exists(pid))
}

/// The pid a service wrote into its lock.
fn pid_in(lock: &Path) -> Option<u32> {
    std::fs::read_to_string(lock).ok()?.trim().parse().ok()
}

/// Every live service of this user and runtime folder: (store key, pid), by the locks each holds
/// for its life with its pid inside.
pub fn running_services() -> Vec<(String, u32)> {
    let Ok(entries) = std::fs::read_dir(daemon_dir()) else {
        return Vec::new();
    };
    let mut out: Vec<(String, u32)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let key = name.strip_suffix(".daemon.lock")?.to_string();
            let pid = pid_in(&e.path())?;
            crate::os::process::alive(pid).then_some((key, pid))
        })
        .collect();
    out.sort();
    out
}

/// The one line for a service that is there and does not answer.
pub fn not_answering(store_dir: &Path, pid: Option<u32>) -> String {
    let who = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
    format!(
        "the memory service for {}{who} is not answering; stop it with `wt-memory daemon stop`",
        store_dir.display()
    )
}

/// Who is talking: exchanged first on every connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    /// The engine binary's identity (version, size, modification time), for messages.
    pub build: String,
    /// The crate version: a newer installation replaces an older service, never the reverse.
    #[serde(default)]
    pub version: String,
    /// The engine binary (which installation this is).
    #[serde(default)]
    pub exe: PathBuf,
    /// The model directory the engine uses (`None`: hash embeddings).
    pub model: Option<PathBuf>,
    /// The canonical store directory served (the service), or wanted (a client).
    #[serde(default)]
    pub store: PathBuf,
    pub pid: u32,
}

/// What a client does with the service it reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Use,
    /// An older or incompatible service of this store: stop it and start ours.
    Replace,
    /// Not ours to use or replace: the message says why and what to do.
    Refuse(String),
}

impl Hello {
    /// What this process says: the service it would start for `store_dir`, with the model at
    /// `model`.
    pub fn here(store_dir: &Path, model: Option<PathBuf>) -> Hello {
        let engine = config::locate_binary(ENGINE).unwrap_or_default();
        Hello {
            protocol: PROTOCOL,
            build: build_of(&engine),
            version: env!("CARGO_PKG_VERSION").to_string(),
            exe: engine,
            model,
            store: canonical_store(store_dir),
            pid: std::process::id(),
        }
    }

    /// This hello as a running service says it: its build is the binary the process started
    /// from, read once, not the file at that path now (which an upgrade in place replaces).
    pub fn as_served(mut self) -> Hello {
        static STARTED_AS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        self.build = STARTED_AS.get_or_init(|| self.build.clone()).clone();
        self
    }

    /// Whether to use `peer`, the service that answered. Compatible builds (the same protocol
    /// and model) share a service whatever their binary's path or time, so two installations
    /// of one version never replace each other; a newer version replaces an older service, and
    /// an older client never replaces a newer one. A service whose binary was replaced at its
    /// own path since it started (an upgrade or rebuild in place) is replaced: otherwise a user
    /// who works without a pause keeps the old code running for days.
    pub fn judge(&self, peer: &Hello) -> Verdict {
        if peer.store != self.store {
            return Verdict::Refuse(format!(
                "the memory service on this socket (pid {}) serves {}, not {}; stop it: kill {}",
                peer.pid,
                peer.store.display(),
                self.store.display(),
                peer.pid
            ));
        }
        let newer = |a: &str, b: &str| version_key(a) > version_key(b);
        if newer(&self.version, &peer.version) {
            return Verdict::Replace;
        }
        // `self.build` is read from the file now, `peer.build` when the service started: at
        // one path they differ only if the file was replaced since.
        let replaced_in_place = peer.exe == self.exe && peer.build != self.build;
        if replaced_in_place && !self.build.is_empty() && !peer.build.is_empty() {
            return Verdict::Replace;
        }
        if peer.protocol == self.protocol && peer.model == self.model {
            return Verdict::Use;
        }
        if newer(&peer.version, &self.version) {
            return Verdict::Refuse(format!(
                "an older wt-memory ({}, {}) is in use beside a newer one ({}, {}); remove the older installation",
                self.version,
                self.exe.display(),
                peer.version,
                peer.exe.display()
            ));
        }
        Verdict::Replace
    }
}

/// `1.2.3` as numbers, for ordering (anything else counts as 0).
fn version_key(v: &str) -> Vec<u64> {
    v.split(['.', '-', '+'])
        .take(3)
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// The identity of the binary at `path`.
fn build_of(path: &Path) -> String {
    let meta = std::fs::metadata(path).ok();
    let stamp = meta
        .as_ref()
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    format!(
        "{} {} {stamp}",
        env!("CARGO_PKG_VERSION"),
        meta.map_or(0, |m| m.len())
    )
}

/// Connect to the service of the store at `store_dir` and say this process's hello; the
/// connection reads with `wait` as its timeout. Returns the connection and the hello said.
pub fn say_hello(
    store_dir: &Path,
    wait: std::time::Duration,
) -> std::io::Result<(std::io::BufReader<Stream>, Hello)> {
    // Refusing a service that another user runs: nothing is sent to it.
    let stream = crate::os::socket::connect_own(&socket_path(store_dir))?;
    stream.set_read_timeout(Some(wait))?;
    let mut conn = std::io::BufReader::new(stream);
    let mine = Hello::here(store_dir, crate::model::find_assets().map(|a| a.model_dir));
    write_line(conn.get_mut(), &serde_json::json!({ "hello": &mine }))?;
    Ok((conn, mine))
}

/// How a request that takes a turn on the store ended without its answer.
#[derive(Debug)]
pub enum Unanswered {
    /// Its turn did not come within the wait: it was withdrawn, and the service did nothing.
    NotStarted,
    /// It started and its answer did not come within the wait after that.
    Late,
    /// The connection failed or closed (a service going away before it answered has stored
    /// nothing it did not acknowledge).
    Gone(std::io::Error),
}

/// Send `line`, a request that takes a turn on the store, and read its answer line (returned
/// unparsed). The protocol's one way to do it, for every client (the `wt-memory` front, the
/// engine's `Client`): the service says `{"started": null}` when the request's turn comes; before
/// that the request waits at most `turn_wait`, after it until `answer_by` (`None`: as long as the
/// work takes). A request whose turn does not come in time is withdrawn by hanging up our
/// side: the service skips it, or says at once that its turn came meanwhile (then it is
/// answered after all).
pub fn ask_in_turn(
    conn: &mut std::io::BufReader<Stream>,
    line: &impl Serialize,
    turn_wait: std::time::Duration,
    answer_by: Option<std::time::Instant>,
) -> Result<Vec<u8>, Unanswered> {
    let at_least = |d: std::time::Duration| d.max(std::time::Duration::from_millis(20));
    let wait = |conn: &mut std::io::BufReader<Stream>, d: Option<std::time::Duration>| {
        conn.get_ref().set_read_timeout(d.map(at_least))
    };
    let answer_wait =
        || answer_by.map(|by| by.saturating_duration_since(std::time::Instant::now()));
    wait(conn, Some(turn_wait)).map_err(Unanswered::Gone)?;
    write_line(conn.get_mut(), line).map_err(Unanswered::Gone)?;
    let mut started = false;
    loop {
        let read = read_line(conn, MAX_LINE).and_then(|read| {
            read.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the memory service closed the connection",
                )
            })
        });
        match read {
            Ok(answer) if is_started(&answer) => {
                started = true;
                wait(conn, answer_wait()).map_err(Unanswered::Gone)?;
            }
            Ok(answer) => return Ok(answer),
            Err(e) if timed_out(&e) && started => return Err(Unanswered::Late),
            Err(e) if timed_out(&e) => {
                let _ = conn.get_ref().shutdown(std::net::Shutdown::Write);
                let _ = wait(conn, Some(std::time::Duration::from_millis(300)));
                match read_line(conn, MAX_LINE) {
                    Ok(Some(answer)) if is_started(&answer) => {
                        started = true;
                        wait(conn, answer_wait()).map_err(Unanswered::Gone)?;
                    }
                    _ => return Err(Unanswered::NotStarted),
                }
            }
            Err(e) => return Err(Unanswered::Gone(e)),
        }
    }
}

/// Is this answer line the service's `{"started": null}`?
fn is_started(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Started {
        #[allow(dead_code)]
        started: (),
    }
    serde_json::from_slice::<Started>(line).is_ok()
}

/// Did a read with a timeout give up waiting (as opposed to failing)?
pub fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Read one line of at most `max` bytes (without its newline). `Ok(None)` at the end of input;
/// an `InvalidData` error for a longer line (the rest of it is not read).
pub fn read_line(reader: &mut impl BufRead, max: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let n = reader
        .by_ref()
        .take(max as u64 + 1)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a line over {} is refused", human_bytes(max)),
        ));
    }
    Ok(Some(line))
}

/// Write `value` as one line.
pub fn write_line(stream: &mut impl Write, value: &impl Serialize) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(value)?;
    bytes.push(b'\n');
    stream.write_all(&bytes)
}

/// `64 KiB`, `256 MiB`.
pub fn human_bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 20 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// A message cut to `max` characters, for errors that might quote what they refuse.
pub fn clip(message: &str, max: usize) -> String {
    match message.char_indices().nth(max) {
        Some((at, _)) => format!("{}… (cut)", &message[..at]),
        None => message.to_string(),
    }
}

/// A `wt-memory` command line for the service to run as the engine binary would
/// (`{"forward": Forward}`), answered by `{"ok": Forwarded}`, or by `{"err": …}` when the
/// service does not run that command (then nothing was done).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Forward {
    /// The arguments after the program name.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Standard input, read whole (empty when it is a terminal).
    pub stdin: String,
    /// How long the service may wait for the store on the command's behalf.
    pub lock_wait_ms: u64,
}

/// What the command printed and its exit status.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Forwarded {
    pub stdout: String,
    pub stderr: String,
    pub code: u8,
}

/// A Claude Code hook event for the service to handle as the hook binary would
/// (`{"hook": HookRun}`), answered by `{"ok": HookDone}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HookRun {
    /// The hook binary's arguments after the program name (the event, `--guard-only`).
    pub argv: Vec<String>,
    /// The hook's input, read whole.
    pub stdin: String,
    /// What the run takes from the hook's own process.
    pub claude_project_dir: Option<PathBuf>,
    pub plugin_root: bool,
    pub cwd: PathBuf,
    /// The hook process's [`config::Config::fingerprint`]: the service runs the event only
    /// under the same configuration.
    pub config: String,
}

/// The service's answer to a [`HookRun`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HookDone {
    /// `false`: the service left the event alone (the Stop extraction, another configuration),
    /// and the hook binary handles it; `why` says why.
    pub handled: bool,
    /// The line the hook prints, if any.
    pub stdout: Option<String>,
    #[serde(default)]
    pub why: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(version: &str, protocol: u32, store: &str) -> Hello {
        Hello {
            protocol,
            build: String::new(),
            version: version.into(),
            exe: PathBuf::from(format!("/opt/{version}/wt-memory-engine")),
            model: None,
            store: PathBuf::from(store),
            pid: 7,
        }
    }

    #[test]
    fn a_client_uses_a_compatible_service_and_replaces_only_an_older_one() {
        let mine = hello("0.2.0", PROTOCOL, "/r/a");
        // Another installation of the same version: shared, whatever its path.
        assert_eq!(mine.judge(&hello("0.2.0", PROTOCOL, "/r/a")), Verdict::Use);
        // A newer service speaking our protocol serves us; an older one is replaced.
        assert_eq!(mine.judge(&hello("0.3.0", PROTOCOL, "/r/a")), Verdict::Use);
        assert_eq!(
            mine.judge(&hello("0.1.9", PROTOCOL, "/r/a")),
            Verdict::Replace
        );
        assert_eq!(mine.judge(&hello("0.2.0", 4, "/r/a")), Verdict::Replace);
        // A newer service we cannot talk to is not ours to stop: one line says what to remove.
        let Verdict::Refuse(why) = mine.judge(&hello("0.10.0", PROTOCOL + 1, "/r/a")) else {
            panic!("an older client replaced a newer service");
        };
        assert!(why.contains("remove the older installation") && why.contains("/opt/0.2.0"));
        // Another store's service is never used.
        assert!(matches!(
            mine.judge(&hello("0.2.0", PROTOCOL, "/r/b")),
            Verdict::Refuse(_)
        ));
    }

    #[test]
    fn a_service_whose_binary_was_replaced_in_place_is_replaced() {
        let built = |build: &str| Hello {
            build: build.into(),
            ..hello("0.2.0", PROTOCOL, "/r/a")
        };
        let mine = built("0.2.0 9000 1700000200");
        // The file at the service's own path is another build now: an upgrade in place.
        assert_eq!(
            mine.judge(&built("0.2.0 8000 1700000100")),
            Verdict::Replace
        );
        assert_eq!(mine.judge(&built("0.2.0 9000 1700000200")), Verdict::Use);
        // Another installation's binary of the same version is shared, whatever its build.
        let elsewhere = Hello {
            exe: "/elsewhere/wt-memory-engine".into(),
            ..built("0.2.0 8000 1700000100")
        };
        assert_eq!(mine.judge(&elsewhere), Verdict::Use);
    }

    #[test]
    fn a_socket_path_too_long_for_the_system_moves_to_a_short_folder() {
        let long_runtime = Path::new("/tmp").join("r".repeat(80)).join("daemon");
        let store = Path::new("/tmp/stores/app-12345678");
        let socket = socket_in(&long_runtime, store);
        assert!(socket.as_os_str().len() <= MAX_SOCKET_PATH, "{socket:?}");
        assert!(socket.starts_with(short_socket_dir()), "{socket:?}");
        assert_eq!(socket, socket_in(&long_runtime, store), "stable");
        assert_ne!(
            socket,
            socket_in(&long_runtime, Path::new("/tmp/stores/app-87654321"))
        );
        let short = socket_in(Path::new("/run/user/1000/wt-tools/daemon"), store);
        assert!(
            short.starts_with("/run/user/1000/wt-tools/daemon"),
            "{short:?}"
        );
    }

    #[test]
    fn two_roots_give_two_sockets_for_one_store_name() {
        let a = socket_path(Path::new("/tmp/A/app-12345678"));
        let b = socket_path(Path::new("/tmp/B/app-12345678"));
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("app-12345678-") && name.ends_with(".sock"));
        // One directory reached through a link is one service.
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("real")).unwrap();
        crate::os::files::symlink(tmp.path().join("real"), tmp.path().join("link")).unwrap();
        assert_eq!(
            socket_path(&tmp.path().join("real/app")),
            socket_path(&tmp.path().join("link/app"))
        );
    }

    #[test]
    fn long_lines_are_refused_and_short_ones_read_whole() {
        let mut input = std::io::Cursor::new(b"{\"a\":1}\nxxxxxxxxxxxx\n".to_vec());
        assert_eq!(read_line(&mut input, 8).unwrap().unwrap(), b"{\"a\":1}");
        let err = read_line(&mut input, 8).unwrap_err();
        assert!(err.to_string().contains("a line over 8 bytes"), "{err}");
        assert!(clip(&"x".repeat(10_000), 100).len() < 120);
    }
}
