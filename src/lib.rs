//! wt-memory: persistent, local, per-project memory for coding agents.
//!
//! One library owns every piece of memory logic (project identity, the store and its lock, ranking,
//! branch boosting, content hygiene, dedup, export/import, rules, todos). The binaries are thin
//! front ends: `wt-memory` (the only one that opens a store), `wt-hook-memory` and `wt-mcp-server`
//! (both run `wt-memory` as a subprocess through [`runner`]) and `wt-project` (init/uninstall).

pub mod dedup;
pub mod eval;
pub mod exchange;
pub mod hook;
pub mod hygiene;
pub mod init;
pub mod integrity;
pub mod lock;
pub mod mcp;
pub mod migrate;
pub mod model;
pub mod paths;
pub mod project;
pub mod rank;
pub mod recall;
pub mod record;
pub mod redact;
pub mod rules;
pub mod runner;
pub mod snapshot;
pub mod store;
pub mod sync;
pub mod todo;
