//! wt-memory: persistent, local, per-project memory for coding agents.
//!
//! One library owns every piece of memory logic (project identity, the store and its lock, ranking,
//! branch boosting, content hygiene, dedup, export/import, rules, todos): [`ops`] holds every
//! command's rules as typed functions, and [`client::Client`] is how every front end reaches them.
//! The binaries are thin: `wt-memory` ([`cli`]), `wt-hook-memory` ([`hook`]), `wt-mcp-server`
//! ([`mcp`]) and `wt-project` ([`init`]). [`config`] reads the environment, once.

pub mod anchors;
pub mod child;
pub mod claude_memory;
pub mod cli;
pub mod client;
pub mod config;
pub mod daemon;
pub mod dedup;
pub mod doctor;
pub mod embed;
pub mod enrich;
pub mod error;
pub mod eval;
pub mod exchange;
pub mod failure;
pub mod hook;
pub mod hygiene;
pub mod init;
pub mod integrity;
pub mod legacy_store;
pub mod llm;
pub mod lock;
pub mod log;
pub mod mcp;
pub mod metrics;
pub mod migrate;
pub mod model;
pub mod ops;
pub mod plugin;
pub mod rank;
pub mod recall;
pub mod record;
pub mod redact;
pub mod rules;
pub mod service;
pub mod snapshot;
pub mod spool;
pub mod store;
pub mod sync;
pub mod todo;
pub mod transcripts;
pub mod tui;

pub use wt_memory_base::{paths, project, wire};
