//! `wt-memory-engine`: the memory CLI with the engine linked in. The commands live in the library
//! (`wt_memory::cli`, on top of `wt_memory::ops` through a `Client`); this binary only sets the
//! process up and runs them. Users call `wt-memory`, which runs this binary, or forwards a
//! command to the project's daemon (itself `wt-memory-engine serve`).

fn main() -> std::process::ExitCode {
    wt_memory::config::prepare_process();
    wt_memory::cli::main()
}
