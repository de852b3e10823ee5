//! The service's local endpoint: listening, connecting only to a service of this user and
//! admitting only this user's clients, whether a client hung up, and waiting for a connection.
//!
//! On Linux and macOS it is a Unix socket (mode 0600 in a private folder, the peer's uid checked
//! on both sides). On Windows it is a TCP socket on the loopback address, with the port and two
//! random keys in a file at the endpoint's path, in the user's private folder; a client proves
//! it read the file by sending the first key, the service by answering the second, before
//! anything else is said. Not a named pipe, though one gives the peer's user too: the protocol
//! withdraws a request by shutting down the client's writing side while still reading
//! (`wire::ask_in_turn`), reads with timeouts and shares a connection between a reader and a
//! writer thread, and a TCP stream does all three in std exactly as a Unix socket does, where a
//! pipe has no half-close and times out only through overlapped I/O. (Wine also has no AF_UNIX,
//! so the Windows build's tests here use the same path as Windows.)

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A connection to or from the service.
#[cfg(unix)]
pub type Stream = std::os::unix::net::UnixStream;
/// The service's listening endpoint.
#[cfg(unix)]
pub type Listener = std::os::unix::net::UnixListener;
/// A connection to or from the service.
#[cfg(windows)]
pub type Stream = std::net::TcpStream;
/// The service's listening endpoint.
#[cfg(windows)]
pub type Listener = std::net::TcpListener;

/// The longest endpoint path the system takes: `sun_path` holds 108 bytes on Linux and 104 on
/// macOS, each with its terminating NUL; on Windows the endpoint is a file, kept under the
/// classic path limit.
pub const MAX_SOCKET_PATH: usize = if cfg!(target_os = "linux") {
    107
} else if cfg!(windows) {
    240
} else {
    103
};

/// A short folder for sockets whose usual path is too long, private to this user (checked
/// before use). macOS gives each user a long `$TMPDIR` (`/var/folders/…/T/`, about 50 bytes),
/// so there it is under `/tmp`; elsewhere under the temporary directory.
pub fn short_socket_dir(uid: u32) -> PathBuf {
    let base = if cfg!(target_os = "macos") {
        PathBuf::from("/tmp")
    } else {
        std::env::temp_dir()
    };
    base.join(format!("wt-tools-{uid}-sockets"))
}

/// Listen at `path`, replacing an endpoint left there: only this user can connect. The listener
/// does not block (the accept loop waits with [`wait_readable`]).
pub fn listen(path: &Path) -> std::io::Result<Listener> {
    let _ = std::fs::remove_file(path);
    #[cfg(unix)]
    let listener = {
        use std::os::unix::fs::PermissionsExt;
        let listener = Listener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        listener
    };
    #[cfg(windows)]
    let listener = {
        let listener = Listener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
        let keys = windows::Keys::new(listener.local_addr()?.port())?;
        keys.write(path)?;
        listener
    };
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Take a waiting connection (`WouldBlock` when none is), as a blocking stream.
pub fn accept(listener: &Listener) -> std::io::Result<Stream> {
    let (stream, _) = listener.accept()?;
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Connect to the endpoint at `path`, refusing a service that another user runs: nothing of
/// ours is sent to it.
pub fn connect_own(path: &Path) -> std::io::Result<Stream> {
    #[cfg(unix)]
    {
        let stream = Stream::connect(path)?;
        let me = super::process::effective_uid();
        match peer_uid(&stream) {
            Some(uid) if uid == me => Ok(stream),
            Some(uid) => Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "{} is served by another user (uid {uid}); refusing to talk to it: remove it",
                    path.display()
                ),
            )),
            None => Err(std::io::Error::other("cannot tell who serves the socket")),
        }
    }
    #[cfg(windows)]
    windows::connect(path)
}

/// Is the client at the other end of `stream` this user? `Err` says who it is instead. (On
/// Windows the client's key is read and the service's answered: call once, first.)
pub fn admit(stream: &Stream, path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        let _ = path;
        match peer_uid(stream) {
            Some(uid) if uid == super::process::effective_uid() => Ok(()),
            Some(uid) => Err(format!("uid {uid}")),
            None => Err("a client whose uid cannot be told".into()),
        }
    }
    #[cfg(windows)]
    windows::admit(stream, path)
}

/// What the endpoint at `path` is, to tell whether it was removed or replaced since (its inode;
/// on Windows, a hash of the port and keys in its file).
pub fn identity(path: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| m.ino())
    }
    #[cfg(windows)]
    {
        use std::hash::{Hash, Hasher};
        let text = std::fs::read(path).ok()?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        Some(hasher.finish())
    }
}

/// The uid of the process at the other end of `stream` (`SO_PEERCRED`).
#[cfg(target_os = "linux")]
fn peer_uid(stream: &Stream) -> Option<u32> {
    use std::os::unix::io::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a properly sized ucred.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

/// The uid of the process at the other end of `stream` (`getpeereid`, which reads the
/// credentials the kernel recorded at connect time, `LOCAL_PEERCRED`).
#[cfg(target_os = "macos")]
fn peer_uid(stream: &Stream) -> Option<u32> {
    use std::os::unix::io::AsRawFd;
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: getpeereid writes one uid and one gid into the given places.
    let rc = unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) };
    (rc == 0).then_some(uid)
}

/// Has the client of `stream` hung up (closed, or withdrawn its request by shutting down its
/// side)? Never waits.
#[cfg(unix)]
pub fn peer_hung_up(stream: &Stream) -> bool {
    use std::os::unix::io::AsRawFd;
    let mut fd = libc::pollfd {
        fd: stream.as_raw_fd(),
        events: libc::POLLIN | HANG_UP_EVENT,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    if ready <= 0 {
        return false;
    }
    if fd.revents & (HANG_UP_EVENT | libc::POLLHUP | libc::POLLERR) != 0 {
        return true;
    }
    // Without POLLRDHUP (macOS), a half-closed peer shows as readable with nothing to read.
    !cfg!(target_os = "linux") && fd.revents & libc::POLLIN != 0 && at_end_of_stream(stream)
}

/// Has the client of `stream` hung up (closed, or withdrawn its request by shutting down its
/// side)? Never waits: readable with nothing to read is the end of its stream.
#[cfg(windows)]
pub fn peer_hung_up(stream: &Stream) -> bool {
    use windows_sys::Win32::Networking::WinSock::{POLLERR, POLLHUP, POLLRDNORM};
    let revents = windows::poll(stream, POLLRDNORM, 0);
    revents & (POLLHUP | POLLERR) != 0
        || (revents & POLLRDNORM != 0 && matches!(stream.peek(&mut [0u8]), Ok(0)))
}

/// Linux reports a peer's shutdown of its writing side as its own event.
#[cfg(target_os = "linux")]
const HANG_UP_EVENT: libc::c_short = libc::POLLRDHUP;
#[cfg(all(unix, not(target_os = "linux")))]
const HANG_UP_EVENT: libc::c_short = 0;

/// Is the next read of `stream` its end (the peer sent everything and shut down)? Peeks, so any
/// pending bytes stay for the reader.
#[cfg(unix)]
fn at_end_of_stream(stream: &Stream) -> bool {
    use std::os::unix::io::AsRawFd;
    let mut byte = 0u8;
    // SAFETY: recv writes at most one byte into `byte`.
    let got = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    got == 0
}

/// Block until `listener` has a connection waiting or `timeout` passes.
pub fn wait_readable(listener: &Listener, timeout: Duration) {
    let millis = timeout.as_millis().min(i32::MAX as u128) as i32;
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        let mut fd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut fd, 1, millis) };
    }
    #[cfg(windows)]
    windows::poll(
        listener,
        windows_sys::Win32::Networking::WinSock::POLLRDNORM,
        millis,
    );
}

#[cfg(windows)]
mod windows {
    use super::Stream;
    use std::io::{Read, Write};
    use std::path::Path;
    use std::time::Duration;

    /// How long either side waits for the other's key.
    const KEY_WAIT: Duration = Duration::from_secs(2);
    const KEY_BYTES: usize = 32;
    /// The first word of an endpoint file and its version.
    const MAGIC: &str = "wt-memory-endpoint 1";

    /// What the endpoint file says: where the service listens, and the keys each side proves
    /// itself with.
    pub struct Keys {
        port: u16,
        client: String,
        service: String,
    }

    impl Keys {
        pub fn new(port: u16) -> std::io::Result<Keys> {
            Ok(Keys {
                port,
                client: random_hex()?,
                service: random_hex()?,
            })
        }

        /// Written whole (a temporary file renamed over the endpoint), in the user's folder.
        pub fn write(&self, path: &Path) -> std::io::Result<()> {
            let dir = path.parent().unwrap_or(Path::new("."));
            let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
            writeln!(
                tmp,
                "{MAGIC} {} {} {}",
                self.port, self.client, self.service
            )?;
            tmp.persist(path).map_err(|e| e.error)?;
            Ok(())
        }

        fn read(path: &Path) -> std::io::Result<Keys> {
            let text = std::fs::read_to_string(path)?;
            let fields: Vec<&str> = text
                .trim()
                .strip_prefix(MAGIC)
                .unwrap_or_default()
                .split_whitespace()
                .collect();
            match fields.as_slice() {
                [port, client, service] => Ok(Keys {
                    port: port.parse().map_err(std::io::Error::other)?,
                    client: client.to_string(),
                    service: service.to_string(),
                }),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} is not a memory service's endpoint", path.display()),
                )),
            }
        }
    }

    pub fn connect(path: &Path) -> std::io::Result<Stream> {
        let keys = Keys::read(path)?;
        let address = (std::net::Ipv4Addr::LOCALHOST, keys.port).into();
        let mut stream = Stream::connect_timeout(&address, KEY_WAIT)?;
        stream.set_nodelay(true)?;
        writeln!(stream, "{}", keys.client)?;
        stream.set_read_timeout(Some(KEY_WAIT))?;
        let said = read_key(&mut stream);
        stream.set_read_timeout(None)?;
        match said {
            Ok(key) if same(&key, &keys.service) => Ok(stream),
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "the program listening on port {} is not the service {} names; refusing to talk to it: remove that file",
                    keys.port,
                    path.display()
                ),
            )),
        }
    }

    pub fn admit(stream: &Stream, path: &Path) -> Result<(), String> {
        let keys = Keys::read(path).map_err(|e| format!("a client, and the endpoint: {e}"))?;
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(KEY_WAIT));
        let mut reader = stream;
        match read_key(&mut reader) {
            Ok(key) if same(&key, &keys.client) => {
                let mut writer = stream;
                writeln!(writer, "{}", keys.service).map_err(|e| e.to_string())
            }
            _ => Err("a client without the endpoint's key".into()),
        }
    }

    /// One key line, read byte by byte: nothing after it is taken from the stream.
    fn read_key(stream: &mut impl Read) -> std::io::Result<String> {
        let mut line = Vec::with_capacity(2 * KEY_BYTES + 1);
        let mut byte = [0u8];
        while line.len() <= 2 * KEY_BYTES {
            stream.read_exact(&mut byte)?;
            if byte[0] == b'\n' {
                return Ok(String::from_utf8_lossy(&line).into_owned());
            }
            line.push(byte[0]);
        }
        Err(std::io::ErrorKind::InvalidData.into())
    }

    /// Equal, in a time that does not depend on where they differ.
    fn same(a: &str, b: &str) -> bool {
        a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0, |d, (x, y)| d | (x ^ y)) == 0
    }

    fn random_hex() -> std::io::Result<String> {
        use windows_sys::Win32::Security::Cryptography::{
            BCryptGenRandom, BCRYPT_USE_SYSTEM_PREFERRED_RNG,
        };
        let mut bytes = [0u8; KEY_BYTES];
        // SAFETY: the buffer is valid for its length; no algorithm handle with this flag.
        let status = unsafe {
            BCryptGenRandom(
                std::ptr::null_mut(),
                bytes.as_mut_ptr(),
                bytes.len() as u32,
                BCRYPT_USE_SYSTEM_PREFERRED_RNG,
            )
        };
        if status != 0 {
            return Err(std::io::Error::other(format!(
                "no random key from the system (status {status:#x})"
            )));
        }
        Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Wait up to `millis` for `events` on a socket; the events seen (0 when none).
    pub fn poll(socket: &impl std::os::windows::io::AsRawSocket, events: i16, millis: i32) -> i16 {
        use windows_sys::Win32::Networking::WinSock::{WSAPoll, WSAPOLLFD};
        let mut fd = WSAPOLLFD {
            fd: socket.as_raw_socket() as usize,
            events,
            revents: 0,
        };
        // SAFETY: one valid WSAPOLLFD for the duration of the call.
        let ready = unsafe { WSAPoll(&mut fd, 1, millis) };
        if ready > 0 {
            fd.revents
        } else {
            0
        }
    }
}
