//! `wt-memory`: the memory CLI's front. It links no engine: a command the project's daemon runs is
//! sent to it, anything else runs `wt-memory-engine` with the same arguments
//! (see `wt_memory_base::forward`).

fn main() -> std::process::ExitCode {
    wt_memory_base::forward::main()
}
