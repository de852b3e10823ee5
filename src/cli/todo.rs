//! todo (backlog items kept in memory) and rules (keyword rules in .claude/rules.yaml).

use super::{print_json, read_stdin, Res};
use clap::Subcommand;
use std::process::ExitCode;
use wt_memory_core::record::split_tags;
use wt_memory_foundation::error::bad_input;
use wt_memory_foundation::hygiene::{redact, truncate_chars};
use wt_memory_foundation::rules;
use wt_memory_ops as ops;
use wt_memory_service::client::Client;

#[derive(Subcommand)]
pub enum Cmd {
    /// Backlog items kept in memory.
    Todo {
        #[command(subcommand)]
        action: TodoCmd,
    },
    /// Deterministic keyword rules in .claude/rules.yaml.
    Rules {
        #[command(subcommand)]
        action: RulesCmd,
    },
}

#[derive(Subcommand)]
pub enum TodoCmd {
    Add {
        #[arg(long, default_value = "")]
        tags: String,
    },
    List {
        #[arg(long)]
        json: bool,
    },
    Done {
        id: String,
    },
    Clear {
        #[arg(long)]
        confirm: bool,
    },
}

#[derive(Subcommand)]
pub enum RulesCmd {
    Add {
        #[arg(long)]
        topics: Option<String>,
        content: Option<String>,
    },
    List,
    Remove {
        id: String,
    },
}

pub fn run(client: &mut Client, cmd: Cmd) -> Res {
    match cmd {
        Cmd::Todo { action } => todo(client, action)?,
        Cmd::Rules { action } => rules_cmd(client, action)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn todo(client: &mut Client, action: TodoCmd) -> Result<(), wt_memory_foundation::error::Error> {
    match action {
        TodoCmd::Add { tags } => {
            let text = read_stdin()?;
            client.run(ops::TodoAdd {
                text: text.to_string(),
                tags: split_tags(&tags),
            })?;
            println!("{}", ops::todo_saved(&text));
        }
        TodoCmd::List { json } => {
            let todos = client.run(ops::TodoList)?;
            if json {
                print_json(&todos);
            } else if todos.is_empty() {
                println!("No open todos.");
            } else {
                for t in &todos {
                    let tags: Vec<&str> = t
                        .tags
                        .iter()
                        .map(String::as_str)
                        .filter(|x| *x != "todo" && *x != "backlog")
                        .collect();
                    println!(
                        "  {}  {} [{}]  ({})",
                        &t.id[..8],
                        truncate_chars(&redact(&t.content), 72),
                        tags.join(","),
                        truncate_chars(&t.created_at, 10)
                    );
                }
                println!("{} open todo(s)", todos.len());
            }
        }
        TodoCmd::Done { id } => {
            println!(
                "{}",
                ops::todo_done_line(&client.run(ops::TodoDone { id: id.to_string() })?.content)
            )
        }
        TodoCmd::Clear { confirm } => {
            if !confirm {
                return Err(bad_input("todo clear deletes every todo; add --confirm"));
            }
            println!("Cleared {} todos.", client.run(ops::TodoClear)?);
        }
    }
    Ok(())
}

fn rules_cmd(client: &Client, action: RulesCmd) -> Result<(), wt_memory_foundation::error::Error> {
    let root = client.project().files_root();
    match action {
        RulesCmd::Add { topics, content } => {
            let missing =
                || bad_input("rules add: both --topics \"t1,t2\" and the rule text are required");
            let (Some(topics), Some(content)) = (topics, content) else {
                return Err(missing());
            };
            let topics = split_tags(&topics);
            if topics.is_empty() || content.trim().is_empty() {
                return Err(missing());
            }
            let rule = rules::add_rule(&root, &topics, content.trim())?;
            println!("Rule added: {}", rule.id);
            println!("  topics: {}", rule.topics.join(", "));
            println!("  file:   {}", rules::rules_path(&root).display());
        }
        RulesCmd::List => {
            let path = rules::rules_path(&root);
            if !path.exists() {
                println!("No rules yet ({} does not exist). Add one with: wt-memory rules add --topics \"t1,t2\" \"text\"", path.display());
                return Ok(());
            }
            let list = rules::list_rules(&root)?;
            println!("Rules ({}):", list.len());
            for r in list {
                println!("  [{}] topics: {}", r.id, r.topics.join(", "));
                println!("      {}", truncate_chars(&redact(&r.content), 120));
            }
        }
        RulesCmd::Remove { id } => {
            if !rules::remove_rule(&root, &id)? {
                return Err(wt_memory_foundation::error::not_found(format!(
                    "rule '{id}' not found; see wt-memory rules list"
                )));
            }
            println!("Rule removed: {id}");
        }
    }
    Ok(())
}
