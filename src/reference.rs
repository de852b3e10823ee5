//! The reference lists a user reads, each generated from its one definition: the commands and
//! their options (clap's tree of [`crate::cli::Cli`]), the MCP tools (their routers), the
//! environment variables ([`wt_memory_base::config::ENV_VARS`]) and the hook events
//! ([`wt_memory_base::hook_events`]). `docs/reference.md` is [`markdown`]'s output: a test fails
//! when the committed file differs, and `scripts/reference.sh` rewrites it. A variable the code
//! reads but the list lacks fails a test too.

use clap::CommandFactory;

/// The whole reference, as `docs/reference.md` holds it.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Reference\n\n\
         Generated from the code by `scripts/reference.sh` (a test fails when this file differs from \
         what the code says): the commands, the MCP tools, the environment variables and the hook \
         events. How to use them: [user-guide.md](user-guide.md).\n\n",
    );
    out.push_str("## Commands\n\n");
    out.push_str(&commands());
    out.push_str("\n## MCP tools\n\n");
    out.push_str(&tools());
    out.push_str("\n## Environment variables\n\n");
    out.push_str(&env_vars());
    out.push_str("\n## Hook events\n\n");
    out.push_str(
        "Every event `wt-project init` and the plugin register, with its timeout and the handler's \
         own deadline:\n\n",
    );
    out.push_str(&wt_memory_base::hook_events::markdown());
    out
}

/// One line of help: its first sentence's line, Markdown-safe.
fn first_line(text: Option<&clap::builder::StyledStr>) -> String {
    text.map(|t| t.to_string())
        .unwrap_or_default()
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .replace('|', "\\|")
}

/// The options of `cmd` (not its positional arguments, not help), as `--name VALUE`.
fn options(cmd: &clap::Command) -> Vec<String> {
    cmd.get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set() && !a.is_global_set())
        .filter_map(|a| {
            let long = a.get_long()?;
            if long == "help" {
                return None;
            }
            let takes_value = a.get_action().takes_values();
            let value = a
                .get_value_names()
                .and_then(|v| v.first())
                .map(|v| v.to_string())
                .unwrap_or_else(|| long.to_uppercase().replace('-', "_"));
            Some(if takes_value {
                format!("`--{long} {value}`")
            } else {
                format!("`--{long}`")
            })
        })
        .collect()
}

/// The positional arguments of `cmd`, as `ID` or `[QUERY]`.
fn positionals(cmd: &clap::Command) -> String {
    cmd.get_arguments()
        .filter(|a| a.is_positional() && !a.is_hide_set())
        .map(|a| {
            let name = a
                .get_value_names()
                .and_then(|v| v.first())
                .map(|v| v.to_string())
                .unwrap_or_else(|| a.get_id().to_string().to_uppercase());
            if a.is_required_set() {
                format!(" {name}")
            } else {
                format!(" [{name}]")
            }
        })
        .collect()
}

/// `wt-memory`'s command tree: the global options, then one row per command (a group's
/// subcommands as rows of their own).
fn commands() -> String {
    let root = crate::cli::Cli::command();
    let global: Vec<String> = root
        .get_arguments()
        .filter(|a| a.is_global_set() && !a.is_hide_set())
        .filter_map(|a| {
            let long = a.get_long()?;
            let help = first_line(a.get_help());
            Some(format!("- `--{long}`: {help}\n"))
        })
        .collect();
    let mut out = String::from("`wt-memory`'s options for every command:\n\n");
    out.extend(global);
    out.push_str("\n| command | what it does | options |\n|---|---|---|\n");
    let mut rows = Vec::new();
    for cmd in root.get_subcommands().filter(|c| !c.is_hide_set()) {
        let subs: Vec<&clap::Command> = cmd
            .get_subcommands()
            .filter(|c| !c.is_hide_set() && c.get_name() != "help")
            .collect();
        if subs.is_empty() {
            rows.push((vec![cmd.get_name().to_string()], cmd));
        }
        for sub in subs {
            rows.push((
                vec![cmd.get_name().to_string(), sub.get_name().to_string()],
                sub,
            ));
        }
    }
    for (path, cmd) in rows {
        out.push_str(&format!(
            "| `{}{}` | {} | {} |\n",
            path.join(" "),
            positionals(cmd),
            first_line(cmd.get_about()),
            options(cmd).join(", ")
        ));
    }
    out
}

/// Every MCP tool: its name, whether it is loaded up front, its description and its arguments
/// (required ones first, marked).
fn tools() -> String {
    let mut out = String::from(
        "`wt-mcp-server` (stdio). Tools marked *loaded* carry `anthropic/alwaysLoad` and reach \
         every request; the others are deferred behind Claude Code's tool search.\n\n\
         | tool | what it does | arguments |\n|---|---|---|\n",
    );
    for tool in crate::mcp::tool_list() {
        let loaded = tool
            .meta
            .as_ref()
            .is_some_and(|m| m.get("anthropic/alwaysLoad").is_some());
        let required: Vec<String> = tool
            .input_schema
            .get("required")
            .and_then(|r| r.as_array())
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut arguments: Vec<String> = required.iter().map(|a| format!("`{a}`*")).collect();
        if let Some(props) = tool
            .input_schema
            .get("properties")
            .and_then(|p| p.as_object())
        {
            arguments.extend(
                props
                    .keys()
                    .filter(|k| !required.contains(k))
                    .map(|k| format!("`{k}`")),
            );
        }
        let description = tool
            .description
            .as_deref()
            .unwrap_or_default()
            .replace('|', "\\|");
        out.push_str(&format!(
            "| `{}`{} | {} | {} |\n",
            tool.name,
            if loaded { " (*loaded*)" } else { "" },
            description,
            arguments.join(", ")
        ));
    }
    out.push_str("\n`*`: required.\n");
    out
}

/// Every environment variable the tools read.
fn env_vars() -> String {
    let mut out = String::from("| variable | what it does |\n|---|---|\n");
    for v in wt_memory_base::config::ENV_VARS {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            v.name,
            v.meaning.replace('|', "\\|")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    /// `WT_BLESS=1` (`scripts/reference.sh`) writes the file instead of comparing.
    #[test]
    fn the_committed_reference_is_the_generated_one() {
        let path = root().join("docs/reference.md");
        let generated = markdown();
        if std::env::var_os("WT_BLESS").is_some() {
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "docs/reference.md differs from what the code says (a command, tool, variable or hook \
             event changed): run scripts/reference.sh and commit the file"
        );
    }

    /// The prose that counts the tools (README, user guide) counts the tools there are.
    #[test]
    fn the_docs_count_the_tools_there_are() {
        let tools = crate::mcp::tool_list();
        let loaded = tools
            .iter()
            .filter(|t| {
                t.meta
                    .as_ref()
                    .is_some_and(|m| m.get("anthropic/alwaysLoad").is_some())
            })
            .count();
        let counts = regex::Regex::new(r"\b(\d+) tools\b").unwrap();
        let deferred = regex::Regex::new(r"the other (\d+)\s+tools stay deferred").unwrap();
        for doc in ["README.md", "docs/user-guide.md"] {
            let text = std::fs::read_to_string(root().join(doc)).unwrap();
            for n in counts
                .captures_iter(&text)
                .map(|c| c[1].parse::<usize>().unwrap())
            {
                assert_eq!(
                    n,
                    tools.len(),
                    "{doc} says {n} tools; there are {}",
                    tools.len()
                );
            }
            for n in deferred
                .captures_iter(&text)
                .map(|c| c[1].parse::<usize>().unwrap())
            {
                assert_eq!(n, tools.len() - loaded, "{doc}: {n} deferred tools");
            }
        }
    }

    /// Every variable the code reads (`env::var("X")`, and config's `var`, `flag`, `abs_dir`) is
    /// in `ENV_VARS`, so in the reference, `--help` and `doctor`.
    #[test]
    fn every_variable_the_code_reads_is_listed() {
        let listed: Vec<&str> = wt_memory_base::config::ENV_VARS
            .iter()
            .map(|v| v.name)
            .collect();
        let reads = regex::Regex::new(
            r#"(?:env::var(?:_os)?|\bvar|\bflag|\babs_dir)\("([A-Z][A-Z0-9_]+)"\)"#,
        )
        .unwrap();
        let mut missing = Vec::new();
        let mut files = vec![root().join("src")];
        files.extend(
            std::fs::read_dir(root().join("crates"))
                .unwrap()
                .map(|e| e.unwrap().path().join("src")),
        );
        let mut seen = 0;
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // The library's code, not its tests (which set variables of their own).
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for name in reads.captures_iter(code).map(|c| c[1].to_string()) {
                seen += 1;
                // The system's own (the home, PATH, Windows' machine name): every program's, not
                // ours to document.
                let system = ["HOME", "PATH", "COMPUTERNAME"].contains(&name.as_str());
                if !system && !listed.contains(&name.as_str()) {
                    missing.push(format!("{name} ({})", path.display()));
                }
            }
        }
        assert!(
            seen > 20,
            "the scan found only {seen} reads: is it looking in the right place?"
        );
        assert!(
            missing.is_empty(),
            "read but not in config::ENV_VARS: {missing:?}"
        );
    }
}
