//! wt-memory: persistent, local, per-project memory for coding agents.
//!
//! One library owns every piece of memory logic (project identity, the store and its lock, ranking,
//! branch boosting, content hygiene, dedup, export/import, rules, todos): [`ops`] holds every
//! command's rules as typed functions, and [`client::Client`] is how every front end reaches them.
//! The binaries are thin: `wt-memory` ([`cli`]), `wt-hook-memory` ([`hook`]), `wt-mcp-server`
//! ([`mcp`]) and `wt-project` ([`init`]). [`config`] reads the environment, once.
//!
//! The modules sit in one folder per layer, lowest first: `foundation/`, `engine/`,
//! `operations/`, `service/`, `fronts/`. A module may import its own layer and those below it,
//! never one above (`scripts/module_cycles.py` checks it; docs/architecture.md, "Layer rule").
//! Each is loaded from its folder with `#[path]`, so its path in the crate stays `crate::name`.

// foundation: small pieces with no store
#[path = "foundation/child.rs"]
pub mod child;
#[path = "foundation/engine_env.rs"]
pub mod engine_env;
#[path = "foundation/error.rs"]
pub mod error;
#[path = "foundation/failure.rs"]
pub mod failure;
#[path = "foundation/hygiene.rs"]
pub mod hygiene;
#[path = "foundation/integrity.rs"]
pub mod integrity;
#[path = "foundation/llm.rs"]
pub mod llm;
#[path = "foundation/lock.rs"]
pub mod lock;
#[path = "foundation/plugin.rs"]
pub mod plugin;
#[path = "foundation/redact.rs"]
pub mod redact;
#[path = "foundation/rules.rs"]
pub mod rules;
#[path = "foundation/setup.rs"]
pub mod setup;

// engine: the store and everything computed on it
#[path = "engine/anchors.rs"]
pub mod anchors;
#[path = "engine/dedup.rs"]
pub mod dedup;
#[path = "engine/embed.rs"]
pub mod embed;
#[path = "engine/enrich.rs"]
pub mod enrich;
#[path = "engine/exchange.rs"]
pub mod exchange;
#[path = "engine/legacy_store.rs"]
pub mod legacy_store;
#[path = "engine/migrate.rs"]
pub mod migrate;
#[path = "engine/rank.rs"]
pub mod rank;
#[path = "engine/recall.rs"]
pub mod recall;
#[path = "engine/record.rs"]
pub mod record;
#[path = "engine/snapshot.rs"]
pub mod snapshot;
#[path = "engine/store/mod.rs"]
pub mod store;
#[path = "engine/todo.rs"]
pub mod todo;

// operations: the typed operations (with the spool of hook writes), the metrics log
#[path = "operations/metrics/mod.rs"]
pub mod metrics;
#[path = "operations/ops/mod.rs"]
pub mod ops;

// service: one way in: the resident service and the `Client`
#[path = "service/client.rs"]
pub mod client;
#[path = "service/service/mod.rs"]
pub mod service;

// fronts: what people and Claude Code call
#[path = "fronts/claude_memory.rs"]
pub mod claude_memory;
#[path = "fronts/cli/mod.rs"]
pub mod cli;
#[path = "fronts/doctor.rs"]
pub mod doctor;
#[path = "fronts/eval.rs"]
pub mod eval;
#[path = "fronts/hook/mod.rs"]
pub mod hook;
#[path = "fronts/init/mod.rs"]
pub mod init;
#[path = "fronts/mcp/mod.rs"]
pub mod mcp;
#[path = "fronts/sync/mod.rs"]
pub mod sync;
#[path = "fronts/transcripts.rs"]
pub mod transcripts;
#[path = "fronts/tui.rs"]
pub mod tui;

pub use wt_memory_base::{config, log, model, os, paths, project, wire};
