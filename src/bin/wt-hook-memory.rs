//! Claude Code hook handler: `wt-hook-memory <Event>` with the hook input on stdin. A front that
//! links no engine: the project's service handles the event, or the engine binary does
//! (`wt-memory-engine --hook <Event>`, see `wt_memory::hook`). Always exits 0.

fn main() {
    wt_memory_base::hook_front::main();
    std::process::exit(0);
}
