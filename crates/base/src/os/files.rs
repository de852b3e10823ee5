//! Files: advisory locks, never following a link, descriptors.

use std::fs::File;
use std::os::unix::io::{AsRawFd, FromRawFd};
use std::path::Path;

/// The open flag that refuses to follow a symbolic link at the last component (for
/// `OpenOptionsExt::custom_flags`: a planted link cannot redirect a write).
pub const NO_FOLLOW: i32 = libc::O_NOFOLLOW;

/// Take an exclusive `flock` on `file` without waiting: `Ok(false)` when another holds it.
/// The kernel releases it when the descriptor closes or the holder dies.
pub fn try_lock_exclusive(file: &File) -> std::io::Result<bool> {
    // SAFETY: flock on a valid, owned descriptor.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EWOULDBLOCK) | Some(libc::EINTR) => Ok(false),
        _ => Err(err),
    }
}

/// Does another process hold a POSIX record lock on `file` that a write lock would conflict
/// with? Asks without taking one (`F_GETLK`), so nothing of ours is left on the file.
pub fn write_locked_by_other(file: &File) -> bool {
    // SAFETY: `flock` is plain data; F_GETLK fills it in and takes nothing.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as _;
    lock.l_whence = libc::SEEK_SET as _;
    let asked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock) };
    asked == 0 && lock.l_type as libc::c_int != libc::F_UNLCK as libc::c_int
}

/// May this process create files in `dir`?
pub fn writable_dir(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
    unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// A close-on-exec copy of standard input, owned by the returned file.
pub fn stdin_copy() -> std::io::Result<File> {
    // SAFETY: fcntl on fd 0 has no memory effects; the new descriptor is owned by the file alone.
    let fd = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// Run `f` with file descriptor 2 pointed at /dev/null (only before any other thread exists:
/// the descriptor is the process's).
pub fn with_stderr_silenced<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: plain descriptor duplication; fd 2 is restored before returning.
    unsafe {
        let saved = libc::dup(2);
        let devnull = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if saved < 0 || devnull < 0 {
            return f();
        }
        libc::dup2(devnull, 2);
        libc::close(devnull);
        let out = f();
        libc::dup2(saved, 2);
        libc::close(saved);
        out
    }
}
