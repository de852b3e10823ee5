//! `wt-project`: wire a git project into Claude Code (hooks, MCP server, CLAUDE.md) or take it out.

use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wt_memory::init::{self, mcp_registration::Scope};

#[derive(Parser)]
#[command(
    name = "wt-project",
    version,
    about = "Set up persistent memory for Claude Code in a git project"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum ScopeArg {
    Local,
    Project,
    User,
}

#[derive(Clone, Copy, ValueEnum)]
enum HooksArg {
    /// The plugin's when it is enabled (user, project or local settings), else init's own.
    Auto,
    /// Init's hooks in the settings and its MCP registration, plugin or not.
    Settings,
    /// The plugin's: init writes no hooks or MCP server, and removes its own.
    Plugin,
}

#[derive(Subcommand)]
enum Command {
    /// Write the memory hooks, register the MCP server, add the CLAUDE.md block, clean up old setups.
    Init {
        /// Directory inside the git project (default: the current directory).
        path: Option<PathBuf>,
        /// Show every change as a diff and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Do not register the MCP server.
        #[arg(long)]
        no_mcp: bool,
        /// Also inject memory before Bash, Edit and Write calls (adds latency to every such call).
        #[arg(long)]
        pretool: bool,
        /// Where `claude mcp add` registers the server. `project` (.mcp.json, committed) is used
        /// only when wt-mcp-server is on PATH; with an absolute path it becomes `local`.
        #[arg(long, value_enum, default_value = "local")]
        scope: ScopeArg,
        /// Register the server as `docker run … IMAGE` (default image wt-memory:latest).
        /// Give PATH before this option, or use --docker=IMAGE.
        #[arg(long, value_name = "IMAGE", num_args = 0..=1, default_missing_value = init::mcp_registration::DEFAULT_IMAGE)]
        docker: Option<String>,
        /// Remove hook entries (of any tool, in the project's and the user's settings) whose
        /// program no longer exists; without it they are only named.
        #[arg(long)]
        remove_dangling_hooks: bool,
        /// Who runs the memory hooks and the MCP server: the wt-tools plugin or init's settings.
        #[arg(long, value_enum, default_value = "auto")]
        hooks: HooksArg,
        /// Enable the wt-tools plugin for everyone who clones the project (its marketplace and
        /// `enabledPlugins` in the committed .claude/settings.json). SOURCE: owner/repo, a git
        /// URL or a directory holding the marketplace.
        #[arg(long, value_name = "SOURCE", num_args = 0..=1, default_missing_value = wt_memory_foundation::plugin::MARKETPLACE_REPO)]
        team_plugin: Option<String>,
    },
    /// Remove exactly what init added: hook entries, MCP registration, the managed CLAUDE.md block.
    Uninstall {
        /// Directory inside the git project (default: the current directory).
        path: Option<PathBuf>,
        /// Show every change as a diff and write nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let here = || PathBuf::from(".");
    let result = match cli.command {
        Command::Init {
            path,
            dry_run,
            no_mcp,
            pretool,
            scope,
            docker,
            remove_dangling_hooks,
            hooks,
            team_plugin,
        } => init::init(&init::InitOptions {
            path: path.unwrap_or_else(here),
            dry_run,
            mcp: !no_mcp,
            pretool,
            scope: match scope {
                ScopeArg::Local => Scope::Local,
                ScopeArg::Project => Scope::Project,
                ScopeArg::User => Scope::User,
            },
            docker_image: docker,
            remove_dangling_hooks,
            hooks: match hooks {
                HooksArg::Auto => init::Wiring::Auto,
                HooksArg::Settings => init::Wiring::Settings,
                HooksArg::Plugin => init::Wiring::Plugin,
            },
            team_plugin,
        }),
        Command::Uninstall { path, dry_run } => {
            init::uninstall(&path.unwrap_or_else(here), dry_run)
        }
    };
    match result {
        Ok(outcome) => {
            for w in &outcome.warnings {
                eprintln!("warning: {w}");
            }
            // A closed stdout (`wt-project init --dry-run | head`) ends the output, not the program.
            let mut stdout = std::io::stdout().lock();
            for line in &outcome.lines {
                if writeln!(stdout, "{line}").is_err() {
                    break;
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("wt-project: {e:#}");
            ExitCode::FAILURE
        }
    }
}
