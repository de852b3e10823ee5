//! The engine-free half of wt-memory: what a process needs before it knows whether it must open
//! a store. The `wt-memory` front binary links only this crate, so a command the project's daemon
//! can run costs a process that starts in about a millisecond instead of one that loads and
//! relocates the engine (RocksDB, ONNX Runtime bindings). Every crate above names these modules
//! by this crate (`wt_memory_base::config`).

pub mod config;
pub mod forward;
pub mod hook_events;
pub mod hook_front;
pub mod log;
pub mod model;
pub mod os;
pub mod paths;
pub mod project;
pub mod wire;

/// Lower-case hexadecimal of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
