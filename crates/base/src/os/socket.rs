//! The service's Unix socket: who is at the other end, whether they hung up, how long a socket's
//! path may be, and waiting for a connection.

use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// The longest socket path the system takes: `sun_path` holds 108 bytes on Linux and 104 on
/// macOS, each with its terminating NUL.
pub const MAX_SOCKET_PATH: usize = if cfg!(target_os = "linux") { 107 } else { 103 };

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

/// The uid of the process at the other end of `stream` (`SO_PEERCRED`).
#[cfg(target_os = "linux")]
pub fn peer_uid(stream: &UnixStream) -> Option<u32> {
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
pub fn peer_uid(stream: &UnixStream) -> Option<u32> {
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: getpeereid writes one uid and one gid into the given places.
    let rc = unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) };
    (rc == 0).then_some(uid)
}

/// Has the client of `stream` hung up (closed, or withdrawn its request by shutting down its
/// side)? Never waits.
pub fn peer_hung_up(stream: &UnixStream) -> bool {
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

/// Linux reports a peer's shutdown of its writing side as its own event.
#[cfg(target_os = "linux")]
const HANG_UP_EVENT: libc::c_short = libc::POLLRDHUP;
#[cfg(not(target_os = "linux"))]
const HANG_UP_EVENT: libc::c_short = 0;

/// Is the next read of `stream` its end (the peer sent everything and shut down)? Peeks, so any
/// pending bytes stay for the reader.
fn at_end_of_stream(stream: &UnixStream) -> bool {
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
pub fn wait_readable(listener: &impl AsRawFd, timeout: Duration) {
    let mut fd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = timeout.as_millis().min(libc::c_int::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut fd, 1, millis) };
}
