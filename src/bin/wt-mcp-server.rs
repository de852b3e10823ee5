//! `wt-mcp-server`: MCP server (stdio) exposing the `wt-memory` CLI as tools. See `wt_memory::mcp`.

use std::process::ExitCode;

const USAGE: &str = "Usage: wt-mcp-server [--version | --help]

MCP server on stdin/stdout exposing the wt-memory CLI as tools. Runs wt-memory in
$CLAUDE_PROJECT_DIR (or the current directory). Register it with Claude Code, e.g.
  claude mcp add -s project wt-memory -- wt-mcp-server";

#[tokio::main]
async fn main() -> ExitCode {
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
    match wt_memory::mcp::serve_stdio().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wt-mcp-server: {e:#}");
            ExitCode::FAILURE
        }
    }
}
