//! Everything that differs between the systems the tools run on (Linux, macOS and Windows,
//! x86_64 and arm64), one small file per concern. The rest of the code calls these functions and
//! has no `cfg` of its own; this module is also the only caller of `libc` and `windows-sys` and
//! the only user of `std::os::unix` and `std::os::windows`, so checking this crate for every
//! target (`scripts/check-targets.sh`, seconds) catches a call of one system wherever it is
//! written.
//!
//! - [`process`]: processes (alive or a zombie, resident memory, signals, detaching a worker,
//!   handing over to another program), the process's identity (uids, umask, host name) and its
//!   stop signals;
//! - [`socket`]: the service's local endpoint (a Unix socket; loopback TCP with keys on
//!   Windows): listening, connecting to and admitting only this user, a peer that hung up;
//! - [`files`]: advisory locks, private files and folders, never following links, descriptors;
//! - [`dirs`]: the default home, data, state and runtime folders;
//! - [`platform`]: which of the supported platforms this build is for, and its file names.

pub mod dirs;
pub mod files;
pub mod platform;
pub mod process;
pub mod socket;
