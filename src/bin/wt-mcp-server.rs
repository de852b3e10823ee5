//! `wt-mcp-server`: MCP server (stdio) exposing the `wt-memory` commands as tools. See
//! `wt_memory::mcp`.

use std::process::ExitCode;

const USAGE: &str = "Usage: wt-mcp-server [--version | --help]

MCP server on stdin/stdout exposing the wt-memory commands as tools, on the store of
$CLAUDE_PROJECT_DIR (or the current directory). Register it with Claude Code, e.g.
  claude mcp add -s project wt-memory -- wt-mcp-server";

fn main() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        None => {}
        Some("--version" | "-V") => {
            println!("wt-mcp-server {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some("--help" | "-h") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("wt-mcp-server: unknown argument {other:?}\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    // Before the runtime's threads exist: the engine's environment is set while single-threaded.
    wt_memory_core::engine_env::prepare_process();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("wt-mcp-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(wt_memory::mcp::serve_stdio()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wt-mcp-server: {e:#}");
            ExitCode::FAILURE
        }
    }
}
