//! Claude Code hook handler: `wt-hook-memory <Event>` with the hook input on stdin.
//! Always exits 0; see `wt_memory::hook`.

fn main() {
    // The plugin's launcher asks which version a `wt-hook-memory` on PATH is.
    if matches!(std::env::args().nth(1).as_deref(), Some("--version" | "-V")) {
        println!("wt-hook-memory {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    // Before the hook's watchdog thread starts: the engine's environment is set while
    // single-threaded.
    wt_memory::config::prepare_process();
    let args: Vec<String> = std::env::args().skip(1).collect();
    wt_memory::hook::main_entry(&args);
    std::process::exit(0);
}
