//! Files: advisory locks, private files and folders, never following a link, descriptors.
//!
//! "Private" is owner-only access: mode 0600/0700 on Linux and macOS. On Windows the user's own
//! folders (`%LOCALAPPDATA%`, `%TEMP%`, the profile) inherit an access list that admits only the
//! user, the system and administrators, and everything of ours lives under them: files made
//! there are private by inheritance, so nothing is set and no mode is checked.

use std::fs::{File, Metadata, OpenOptions};
use std::path::Path;

/// Open options for a file only its owner may read, created 0600, never through a symbolic link
/// at the last component (a planted link cannot redirect a write). On Windows the link itself is
/// opened (`FILE_FLAG_OPEN_REPARSE_POINT`), never what it points to.
pub fn private_no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        options.custom_flags(windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT)
    }
}

/// Create `dir` and its parents, each new one for its owner only (0700).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// The user id owning a file, when the system has one (`None` on Windows).
pub fn owner(meta: &Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(meta.uid())
    }
    #[cfg(windows)]
    {
        let _ = meta;
        None
    }
}

/// Does the file's mode give others any access (group or world bits)? Never on Windows (see the
/// module's note).
pub fn open_to_others(meta: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.mode() & 0o077 != 0
    }
    #[cfg(windows)]
    {
        let _ = meta;
        false
    }
}

/// The file's permission bits (`None` on Windows, which has none).
pub fn mode(meta: &Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Some(meta.permissions().mode() & 0o7777)
    }
    #[cfg(windows)]
    {
        let _ = meta;
        None
    }
}

/// Set the file's permission bits (nothing on Windows).
pub fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(windows)]
    {
        let _ = (path, mode);
        Ok(())
    }
}

/// The file system a file is on (git's discovery stops at a boundary); `None` where the system
/// does not say (Windows, in stable Rust).
pub fn device(meta: &Metadata) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(meta.dev())
    }
    #[cfg(windows)]
    {
        let _ = meta;
        None
    }
}

/// Read exactly `buf.len()` bytes at `offset`, without moving a shared cursor (several threads
/// read the same file).
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buf, offset)
    }
    #[cfg(windows)]
    {
        // `seek_read` moves the file's cursor, which no reader of ours uses (all read at offsets).
        use std::os::windows::fs::FileExt;
        let mut done = 0;
        while done < buf.len() {
            match file.seek_read(&mut buf[done..], offset + done as u64)? {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

/// Take an exclusive lock on `file` without waiting: `Ok(false)` when another holds it. The
/// system releases it when the file closes or the holder dies. (`flock`; on Windows a one-byte
/// range far past any content, so that others can still read the holder's pid in the file:
/// Windows forbids reading a locked range.)
pub fn try_lock_exclusive(file: &File) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
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
    #[cfg(windows)]
    {
        use std::os::windows::io::AsRawHandle;
        use windows_sys::Win32::Storage::FileSystem::{
            LockFileEx, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY,
        };
        // SAFETY: OVERLAPPED is plain data; it only carries the range's offset here.
        let mut at: windows_sys::Win32::System::IO::OVERLAPPED = unsafe { std::mem::zeroed() };
        at.Anonymous.Anonymous.OffsetHigh = LOCK_BYTE_HIGH;
        // SAFETY: a valid handle owned by `file`; the call is synchronous (no overlapped I/O).
        let locked = unsafe {
            LockFileEx(
                file.as_raw_handle(),
                LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY,
                0,
                1,
                0,
                &mut at,
            )
        };
        if locked != 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error().map(|c| c as u32) {
            Some(windows_sys::Win32::Foundation::ERROR_LOCK_VIOLATION) => Ok(false),
            _ => Err(err),
        }
    }
}

/// The high half of the offset of the byte a Windows lock takes (at 2^62: no file of ours gets
/// there).
#[cfg(windows)]
const LOCK_BYTE_HIGH: u32 = 0x4000_0000;

/// Does another process hold a POSIX record lock on `file` that a write lock would conflict
/// with? Asks without taking one (`F_GETLK`), so nothing of ours is left on the file. (The
/// previous system's store, which this asks about, never ran on Windows: `false` there.)
pub fn write_locked_by_other(file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: `flock` is plain data; F_GETLK fills it in and takes nothing.
        let mut lock: libc::flock = unsafe { std::mem::zeroed() };
        lock.l_type = libc::F_WRLCK as _;
        lock.l_whence = libc::SEEK_SET as _;
        let asked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock) };
        asked == 0 && lock.l_type as libc::c_int != libc::F_UNLCK as libc::c_int
    }
    #[cfg(windows)]
    {
        let _ = file;
        false
    }
}

/// May this process create files in `dir`?
pub fn writable_dir(dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
        unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
    }
    #[cfg(windows)]
    {
        // Access lists decide, and only trying tells: make and drop a file there.
        tempfile::tempfile_in(dir).is_ok()
    }
}

/// A copy of standard input that children do not inherit, owned by the returned file.
pub fn stdin_copy() -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::io::FromRawFd;
        // SAFETY: fcntl on fd 0 has no memory effects; the new descriptor is owned by the file.
        let fd = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(unsafe { File::from_raw_fd(fd) })
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsHandle;
        let owned = std::io::stdin().as_handle().try_clone_to_owned()?;
        Ok(File::from(owned))
    }
}

/// Run `f` with file descriptor 2 pointed at the null device (only before any other thread
/// exists: the descriptor is the process's). On Windows `f` runs as it is: the C runtime's
/// descriptor 2 is not the process's standard error handle, and nothing there prints to it.
pub fn with_stderr_silenced<T>(f: impl FnOnce() -> T) -> T {
    #[cfg(unix)]
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
    #[cfg(windows)]
    f()
}

/// Make `link` a symbolic link to `original` (on Windows a directory link or a file link, as
/// `original` is; making one needs developer mode or an administrator there).
pub fn symlink(original: impl AsRef<Path>, link: impl AsRef<Path>) -> std::io::Result<()> {
    let (original, link) = (original.as_ref(), link.as_ref());
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(original, link)
    }
    #[cfg(windows)]
    {
        if original.is_dir() {
            std::os::windows::fs::symlink_dir(original, link)
        } else {
            std::os::windows::fs::symlink_file(original, link)
        }
    }
}

/// `path` absolute with every link resolved, as people and other programs write it: on Windows
/// without the `\\?\` prefix std's `canonicalize` adds (git, Claude Code and the user never write
/// it, and the same folder must give the same name whether it was resolved or not), except where
/// the path needs it (longer than the classic limit).
pub fn canonicalize(path: &Path) -> std::io::Result<std::path::PathBuf> {
    let canonical = std::fs::canonicalize(path)?;
    #[cfg(windows)]
    if let Some(text) = canonical.to_str() {
        if let Some(rest) = text.strip_prefix(r"\\?\") {
            if let Some(share) = rest.strip_prefix(r"UNC\") {
                return Ok(std::path::PathBuf::from(format!(r"\\{share}")));
            }
            if rest.len() < 260 && rest.as_bytes().get(1) == Some(&b':') {
                return Ok(std::path::PathBuf::from(rest));
            }
        }
    }
    Ok(canonical)
}
