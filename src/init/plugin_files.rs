//! The plugin's generated files (`plugin/` and the marketplace), made from the same hook specs,
//! MCP server name and guidance `wt-project init` writes into a project, so the two ways in never
//! drift apart. `tests/suite/plugin.rs` fails when the committed files differ from these, and rewrites
//! them with `WT_BLESS=1`.

use super::{claude_md, mcp_registration, settings};
use serde_json::json;
use wt_memory_foundation::plugin::{MARKETPLACE, NAME};

const DESCRIPTION: &str = "Persistent per-project memory for Claude Code: hooks inject what earlier sessions learned, an MCP server recalls and remembers, one local store per git project";
const AUTHOR: &str = "wt-tools";
const LICENSE: &str = "MIT";

/// (path relative to the repository root, content) of every generated file.
pub fn files() -> Vec<(&'static str, String)> {
    let version = env!("CARGO_PKG_VERSION");
    let keywords = json!(["memory", "hooks", "mcp", "context"]);
    let manifest = json!({
        "name": NAME,
        "version": version,
        "description": DESCRIPTION,
        "author": {"name": AUTHOR},
        "license": LICENSE,
        "keywords": keywords,
    });
    let hooks = json!({
        "description": "wt-tools memory: one handler for every event (see `wt-hook-memory`)",
        "hooks": settings::plugin_hooks(),
    });
    let mcp = json!({
        "mcpServers": {
            mcp_registration::SERVER_NAME: {"command": "${CLAUDE_PLUGIN_ROOT}/bin/wt-mcp-server"}
        }
    });
    let marketplace = json!({
        "name": MARKETPLACE,
        "owner": {"name": AUTHOR},
        "description": "wt-tools: persistent memory for coding agents",
        "plugins": [{
            "name": NAME,
            "source": "./plugin",
            "description": DESCRIPTION,
            "version": version,
            "license": LICENSE,
            "keywords": keywords,
        }],
    });
    let skill = format!(
        "---\nname: memory\ndescription: How to use this project's persistent memory (wt-tools): when to recall before work, when and how to remember, what the PROJECT MEMORY reminders mean.\n---\n\n{}",
        claude_md::guidance()
    );
    vec![
        (
            ".claude-plugin/marketplace.json",
            settings::render_default(&marketplace),
        ),
        (
            "plugin/.claude-plugin/plugin.json",
            settings::render_default(&manifest),
        ),
        ("plugin/hooks/hooks.json", settings::render_default(&hooks)),
        ("plugin/.mcp.json", settings::render_default(&mcp)),
        ("plugin/skills/memory/SKILL.md", skill),
    ]
}
