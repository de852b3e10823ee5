//! Processes: whether one lives, its resident memory, signals, a detached worker; and this
//! process's identity (uids, umask, host name) and stop signals.

use std::process::Command;

/// Does a process with this pid exist (a zombie included)?
#[cfg(unix)]
pub fn exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Is `pid` a live process (a zombie, killed and not yet reaped, is not)?
#[cfg(unix)]
pub fn alive(pid: u32) -> bool {
    exists(pid) && !is_zombie(pid)
}

/// Does a process with this pid exist? (Windows: one that has not exited; an exited process
/// whose handle someone still holds is only a record, like a zombie.)
#[cfg(windows)]
pub fn exists(pid: u32) -> bool {
    alive(pid)
}

/// Is `pid` a live process?
#[cfg(windows)]
pub fn alive(pid: u32) -> bool {
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    let Some(process) = windows::open(pid, PROCESS_QUERY_LIMITED_INFORMATION) else {
        return false;
    };
    let mut code = 0u32;
    // SAFETY: a valid process handle and a place for one u32.
    let asked = unsafe { GetExitCodeProcess(process.0, &mut code) };
    // STILL_ACTIVE (259) is also a code a process may exit with; no process of ours does.
    asked != 0 && code == windows_sys::Win32::Foundation::STILL_ACTIVE as u32
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

/// This process's resident memory in KiB (its working set on Windows).
#[cfg(windows)]
pub fn resident_kb() -> u64 {
    use windows_sys::Win32::System::ProcessStatus::{
        K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS,
    };
    // SAFETY: the counters are plain data of the size given; the pseudo-handle needs no closing.
    unsafe {
        let mut counters: PROCESS_MEMORY_COUNTERS = std::mem::zeroed();
        let size = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
        let me = windows_sys::Win32::System::Threading::GetCurrentProcess();
        if K32GetProcessMemoryInfo(me, &mut counters, size) != 0 {
            counters.WorkingSetSize as u64 / 1024
        } else {
            0
        }
    }
}

/// Another process's resident memory in KiB, and its proportional share (PSS: pages shared with
/// other processes counted in part) where the system says (Linux); None when it is gone or the
/// system does not tell us.
#[cfg(target_os = "linux")]
pub fn memory_of(pid: u32) -> Option<(u64, Option<u64>)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    Some((field("Rss:")?, field("Pss:")))
}

#[cfg(target_os = "macos")]
pub fn memory_of(pid: u32) -> Option<(u64, Option<u64>)> {
    // SAFETY: proc_taskinfo is plain data; proc_pidinfo writes at most its size.
    let mut info: libc::proc_taskinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_taskinfo>() as libc::c_int;
    let got = unsafe {
        libc::proc_pidinfo(
            pid as libc::c_int,
            libc::PROC_PIDTASKINFO,
            0,
            (&mut info as *mut libc::proc_taskinfo).cast(),
            size,
        )
    };
    (got == size).then_some((info.pti_resident_size / 1024, None))
}

#[cfg(windows)]
pub fn memory_of(pid: u32) -> Option<(u64, Option<u64>)> {
    use windows_sys::Win32::System::ProcessStatus::{
        K32GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS,
    };
    use windows_sys::Win32::System::Threading::PROCESS_QUERY_LIMITED_INFORMATION;
    let process = windows::open(pid, PROCESS_QUERY_LIMITED_INFORMATION)?;
    // SAFETY: the counters are plain data of the size given; the handle is valid and ours.
    unsafe {
        let mut counters: PROCESS_MEMORY_COUNTERS = std::mem::zeroed();
        let size = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
        (K32GetProcessMemoryInfo(process.0, &mut counters, size) != 0)
            .then_some((counters.WorkingSetSize as u64 / 1024, None))
    }
}

/// The signals the tools send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Wake a stopped process, so that it can act on the next signal (nothing on Windows, where
    /// no process of ours is stopped).
    Continue,
    /// Ask it to stop (on Windows, where a detached process has no console to be asked through,
    /// it is ended as by `Kill`: the service's writes are synced as they are made).
    Terminate,
    Kill,
}

/// Send `signal` to the process `pid`.
pub fn signal(pid: u32, signal: Signal) {
    #[cfg(unix)]
    {
        let number = match signal {
            Signal::Continue => libc::SIGCONT,
            Signal::Terminate => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        };
        // SAFETY: kill has no memory effects; callers name processes of their own.
        unsafe { libc::kill(pid as libc::pid_t, number) };
    }
    #[cfg(windows)]
    if signal != Signal::Continue {
        windows::terminate(pid);
    }
}

/// Kill every process of the group `leader` started (a child run in a group of its own, see
/// [`own_group`]). Windows ends no group at once (that needs a job object): the leader is ended,
/// and what it started, if anything, is left to end with its pipes.
pub fn kill_group(leader: u32) {
    #[cfg(unix)]
    // SAFETY: as above; a negative pid names the process group.
    unsafe {
        libc::kill(-(leader as libc::pid_t), libc::SIGKILL)
    };
    #[cfg(windows)]
    windows::terminate(leader);
}

/// Have the child `cmd` starts lead a process group of its own, so that [`kill_group`] ends it
/// with what it started.
pub fn own_group(cmd: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        cmd.creation_flags(windows_sys::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP);
    }
}

/// Have the child `cmd` starts leave our session and process group: our terminal's signals and
/// a kill of our group do not reach it (the service, the Stop hook's worker). On Windows it gets
/// no console (no window flashes), and our standard handles are made uninheritable first: a
/// detached child holding the hook's output pipe would keep Claude Code waiting for it.
pub fn detach(cmd: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe and touches no memory of this process.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        use windows_sys::Win32::System::Threading::{CREATE_NEW_PROCESS_GROUP, DETACHED_PROCESS};
        windows::keep_std_handles_to_ourselves();
        cmd.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
    }
}

/// Start `cmd`'s program under the name `name` (its `argv[0]`, what `ps` shows and its messages
/// call it). Windows passes no separate name: the program sees its own path.
pub fn set_name(cmd: &mut Command, name: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.arg0(name);
    }
    #[cfg(windows)]
    let _ = (cmd, name);
}

/// Run `cmd` in place of this process, under the name `name` (its `argv[0]`, where the system
/// has one): `exec` on Linux and macOS, so the program gets our pid and standard streams. Windows
/// has no `exec`: the program is run with our standard streams, waited for, and this process
/// exits with its exit code. Returns only when it could not be run.
pub fn hand_over(cmd: &mut Command, name: &str) -> std::io::Error {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        set_name(cmd, name);
        cmd.exec()
    }
    #[cfg(windows)]
    {
        let _ = name;
        match cmd.status() {
            Ok(status) => std::process::exit(status.code().unwrap_or(1)),
            Err(e) => e,
        }
    }
}

/// This process's effective uid (the owner every private directory and socket must have; 0 on
/// Windows, where files have no uid: see `files::owner`).
pub fn effective_uid() -> u32 {
    #[cfg(unix)]
    // SAFETY: geteuid has no preconditions.
    unsafe {
        libc::geteuid()
    }
    #[cfg(windows)]
    0
}

/// This process's real uid (names the user's folder under the temporary directory).
pub fn real_uid() -> u32 {
    #[cfg(unix)]
    // SAFETY: getuid has no preconditions.
    unsafe {
        libc::getuid()
    }
    #[cfg(windows)]
    0
}

/// Set the file-creation mask; returns the previous one (Windows has none: nothing is set).
pub fn set_umask(mask: u32) -> u32 {
    #[cfg(unix)]
    // SAFETY: umask has no preconditions.
    unsafe {
        libc::umask(mask as libc::mode_t) as u32
    }
    #[cfg(windows)]
    {
        let _ = mask;
        0
    }
}

/// This machine's host name.
pub fn hostname() -> Option<String> {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is valid for its whole length; gethostname NUL-terminates within it
        // or truncates, and we stop at the first NUL.
        let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if rc != 0 {
            return None;
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Some(String::from_utf8_lossy(&buf[..end]).into_owned())
    }
    #[cfg(windows)]
    std::env::var("COMPUTERNAME").ok().filter(|n| !n.is_empty())
}

/// Call `on_stop` (which may only store to an atomic) on SIGTERM and SIGINT, and ignore SIGPIPE
/// (a client that hung up is seen as a write error instead). On Windows: on the console's
/// Ctrl+C, Ctrl+Break and close events (a detached service has no console; it is stopped by
/// its `shutdown` request, or ended).
pub fn on_stop_signals(on_stop: extern "C" fn(SignalNumber)) {
    #[cfg(unix)]
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    #[cfg(windows)]
    windows::on_console_stop(on_stop);
}

/// The argument of a stop-signal handler.
pub type SignalNumber = i32;

#[cfg(windows)]
mod windows {
    use std::sync::OnceLock;
    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};

    /// A process handle, closed when dropped.
    pub struct Process(pub HANDLE);

    impl Drop for Process {
        fn drop(&mut self) {
            // SAFETY: a handle OpenProcess gave us, closed once.
            unsafe { CloseHandle(self.0) };
        }
    }

    pub fn open(pid: u32, access: u32) -> Option<Process> {
        // SAFETY: OpenProcess has no memory effects; a null handle is failure.
        let handle = unsafe { windows_sys::Win32::System::Threading::OpenProcess(access, 0, pid) };
        (!handle.is_null()).then_some(Process(handle))
    }

    pub fn terminate(pid: u32) {
        use windows_sys::Win32::System::Threading::{TerminateProcess, PROCESS_TERMINATE};
        if let Some(process) = open(pid, PROCESS_TERMINATE) {
            // SAFETY: a valid handle with terminate access.
            unsafe { TerminateProcess(process.0, 1) };
        }
    }

    /// Clear the inherit flag of our standard handles (a child given them explicitly gets its
    /// own inheritable copies from std, so only a detached child's accidental hold is removed).
    pub fn keep_std_handles_to_ourselves() {
        use windows_sys::Win32::Foundation::{SetHandleInformation, HANDLE_FLAG_INHERIT};
        use windows_sys::Win32::System::Console::{
            GetStdHandle, STD_ERROR_HANDLE, STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
        };
        for which in [STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, STD_ERROR_HANDLE] {
            // SAFETY: GetStdHandle returns our handle or null/invalid, which the call refuses.
            unsafe { SetHandleInformation(GetStdHandle(which), HANDLE_FLAG_INHERIT, 0) };
        }
    }

    static ON_STOP: OnceLock<extern "C" fn(super::SignalNumber)> = OnceLock::new();

    unsafe extern "system" fn console_event(kind: u32) -> windows_sys::core::BOOL {
        match ON_STOP.get() {
            Some(on_stop) => {
                on_stop(kind as super::SignalNumber);
                1
            }
            None => 0,
        }
    }

    pub fn on_console_stop(on_stop: extern "C" fn(super::SignalNumber)) {
        let _ = ON_STOP.set(on_stop);
        // SAFETY: the handler only calls `on_stop`, which stores to an atomic.
        unsafe {
            windows_sys::Win32::System::Console::SetConsoleCtrlHandler(Some(console_event), 1)
        };
    }
}
