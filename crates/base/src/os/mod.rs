//! Everything that differs between the systems the tools run on (Linux and macOS, x86_64 and
//! arm64), one small file per concern. The rest of the code calls these functions and has no
//! `cfg` of its own; this module is also the only caller of `libc` (the root crate does not
//! depend on it), so checking this crate for every target (`scripts/check-targets.sh`, seconds)
//! catches a Linux-only call wherever it is written.
//!
//! - [`process`]: processes (alive or a zombie, resident memory, signals, detaching a worker),
//!   the process's identity (uids, umask, host name) and its stop signals;
//! - [`socket`]: the service's Unix socket (the peer's uid, a peer that hung up, the longest
//!   socket path, waiting for a connection);
//! - [`files`]: advisory locks, never following links, descriptors;
//! - [`alloc`]: the allocator's tuning for the service;
//! - [`platform`]: which of the supported platforms this build is for, and its file names.

pub mod alloc;
pub mod files;
pub mod platform;
pub mod process;
pub mod socket;
