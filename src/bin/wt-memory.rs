//! `wt-memory`: the memory CLI. The commands live in the library (`wt_memory::cli`, on top of
//! `wt_memory::ops` through a `Client`); this binary only sets the process up and runs them.

fn main() -> std::process::ExitCode {
    wt_memory::config::prepare_process();
    wt_memory::cli::main()
}
