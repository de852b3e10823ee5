//! wt-memory: persistent, local, per-project memory for coding agents.
//!
//! This crate holds the front ends, what people and Claude Code call: the binaries are thin,
//! `wt-memory` ([`cli`]), `wt-hook-memory` ([`hook`]), `wt-mcp-server` ([`mcp`]) and
//! `wt-project` ([`init`]). Every piece of memory logic lives in the crates under it, each
//! depending only on those below (docs/architecture.md, "Crates"):
//!
//! - `wt_memory_base`: configuration, paths, project identity, the service's wire format and the
//!   thin fronts that forward to it;
//! - `wt_memory_foundation`: errors, hygiene and redaction, rules, the store lock;
//! - `wt_memory_core`: the store on the engine, ranking and recall;
//! - `wt_memory_ops`: every operation, defined once, and the metrics log;
//! - `wt_memory_service`: the `Client`, the one way in, and the resident service.

pub mod claude_memory;
pub mod cli;
pub mod doctor;
pub mod eval;
pub mod hook;
pub mod init;
pub mod mcp;
pub mod reference;
pub mod scope;
pub mod sync;
pub mod transcripts;
pub mod tui;
