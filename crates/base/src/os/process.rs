//! Processes: whether one lives, its resident memory, signals, a detached worker; and this
//! process's identity (uids, umask, host name) and stop signals.

use std::process::Command;

/// Does a process with this pid exist (a zombie included)?
pub fn exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Is `pid` a live process (a zombie, killed and not yet reaped, is not)?
pub fn alive(pid: u32) -> bool {
    exists(pid) && !is_zombie(pid)
}

#[cfg(target_os = "linux")]
fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
            Some(state == 'Z' || state == 'X')
        })
        .unwrap_or(false)
}

#[cfg(target_os = "macos")]
fn is_zombie(pid: u32) -> bool {
    /// `SZOMB` of <sys/proc.h>.
    const ZOMBIE: u32 = 5;
    // SAFETY: proc_bsdinfo is plain data; proc_pidinfo writes at most its size.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    let got = unsafe {
        libc::proc_pidinfo(
            pid as libc::c_int,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    got == size && info.pbi_status == ZOMBIE
}

/// This process's resident memory in KiB (0 when the system does not say).
#[cfg(target_os = "linux")]
pub fn resident_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// This process's resident memory in KiB (0 when the system does not say).
#[cfg(target_os = "macos")]
pub fn resident_kb() -> u64 {
    // SAFETY: proc_taskinfo is plain data; proc_pidinfo writes at most its size.
    let mut info: libc::proc_taskinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_taskinfo>() as libc::c_int;
    let got = unsafe {
        libc::proc_pidinfo(
            std::process::id() as libc::c_int,
            libc::PROC_PIDTASKINFO,
            0,
            (&mut info as *mut libc::proc_taskinfo).cast(),
            size,
        )
    };
    if got == size {
        info.pti_resident_size / 1024
    } else {
        0
    }
}

/// The signals the tools send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Wake a stopped process, so that it can act on the next signal.
    Continue,
    Terminate,
    Kill,
}

impl Signal {
    fn number(self) -> libc::c_int {
        match self {
            Signal::Continue => libc::SIGCONT,
            Signal::Terminate => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// Send `signal` to the process `pid`.
pub fn signal(pid: u32, signal: Signal) {
    // SAFETY: kill has no memory effects; callers name processes of their own.
    unsafe { libc::kill(pid as libc::pid_t, signal.number()) };
}

/// Kill every process of the group `leader` started (a child run in a group of its own).
pub fn kill_group(leader: u32) {
    // SAFETY: as above; a negative pid names the process group.
    unsafe { libc::kill(-(leader as libc::pid_t), libc::SIGKILL) };
}

/// Have the child `cmd` starts leave our session and process group: our terminal's signals and
/// a kill of our group do not reach it (the service, the Stop hook's worker).
pub fn detach(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches no memory of this process.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}

/// This process's effective uid (the owner every private directory and socket must have).
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// This process's real uid (names the user's folder under the temporary directory).
pub fn real_uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// Set the file-creation mask; returns the previous one.
pub fn set_umask(mask: u32) -> u32 {
    // SAFETY: umask has no preconditions.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// This machine's host name.
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname NUL-terminates within it or
    // truncates, and we stop at the first NUL.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Call `on_stop` (which may only store to an atomic) on SIGTERM and SIGINT, and ignore SIGPIPE
/// (a client that hung up is seen as a write error instead).
pub fn on_stop_signals(on_stop: extern "C" fn(SignalNumber)) {
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// The argument of a stop-signal handler.
pub type SignalNumber = libc::c_int;
