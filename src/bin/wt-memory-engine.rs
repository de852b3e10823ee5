//! `wt-memory-engine`: the memory CLI with the engine linked in. The commands live in the library
//! (`wt_memory::cli`, on top of `wt_memory_ops` through a `Client`); this binary only sets the
//! process up and runs them. Users call `wt-memory`, which runs this binary, or forwards a
//! command to the project's daemon (itself `wt-memory-engine serve`). As
//! `wt-memory-engine --hook <Event>` it is the hook handler, run by `wt-hook-memory`'s front for
//! an event the service does not handle.

use wt_memory_base::hook_front::{ENGINE_HOOK_FLAG, ENGINE_HOOK_UNANSWERED_FLAG};

fn main() -> std::process::ExitCode {
    wt_memory_core::engine_env::prepare_process();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let memory = match args.first().map(String::as_str) {
        Some(ENGINE_HOOK_FLAG) => wt_memory::hook::Memory::Ask,
        Some(ENGINE_HOOK_UNANSWERED_FLAG) => wt_memory::hook::Memory::Unanswered,
        _ => return wt_memory::cli::main(),
    };
    wt_memory::hook::main_entry(&args[1..], memory);
    std::process::exit(0);
}
