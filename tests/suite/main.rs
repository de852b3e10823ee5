//! The end-to-end tests: one binary (one link of the engine instead of one per file), a module
//! per area. Each runs the real binaries against the real engine in a temp dir, real git
//! repositories and real subprocesses; `support` holds what they share.
//! Run one area: `cargo test --test suite hook::`.

mod support;

mod anchors;
mod cli;
mod daemon;
mod extract;
mod guard;
mod hook;
mod init;
mod integrity;
mod keys;
mod launcher_windows;
mod mcp;
mod metrics;
mod plugin;
mod redaction;
mod report;
mod scope;
mod setup;
mod snapshots;
mod sync;
mod trust;
mod tui;
