//! `wt-memory review`: the memories held for review (hidden text, orders to the agent, a teammate
//! not trusted yet), and the user's answers: approve, forget, trust a source. The agent has no
//! tool for these (docs/security.md).

use super::{print_json, Res};
use clap::Subcommand;
use std::process::ExitCode;
use wt_memory_core::record::{short_id, MemoryRecord};
use wt_memory_core::trust::{Provenance, HELD_REASON, PROVENANCE};
use wt_memory_ops as ops;
use wt_memory_service::client::Client;

#[derive(Subcommand)]
pub enum Cmd {
    /// Memories held for review (never injected, withheld from MCP): list them, --approve or
    /// --forget some, or --trust a teammate's sync source.
    Review {
        /// Approve these memories (ids or 8+ hex digits): trusted from then on.
        #[arg(long, num_args = 1.., value_name = "ID")]
        approve: Vec<String>,
        /// Forget these memories.
        #[arg(long, num_args = 1.., value_name = "ID")]
        forget: Vec<String>,
        /// Trust a teammate's sync source (user/machine, as `sync status` lists it): its memories
        /// held only because it was new are approved, and its next pulls are not held for that.
        #[arg(long, value_name = "SOURCE")]
        trust: Option<String>,
        /// The held memories as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make a memory (id or 8+ hex digits) one of your standing rules: shown at every session's
    /// start, and the actions it guards ("never force-push without asking me") ask you first;
    /// --off makes it an ordinary memory again. `list --standing` shows them.
    Standing {
        id: String,
        #[arg(long)]
        off: bool,
    },
}

pub fn run(client: &mut Client, cmd: Cmd) -> Res {
    let answers = match &cmd {
        Cmd::Standing { .. } => true,
        Cmd::Review { approve, trust, .. } => !approve.is_empty() || trust.is_some(),
    };
    if answers && wt_memory_base::config::in_agent_session() {
        return Err(wt_memory_foundation::error::bad_input(
            "only you answer a review or make a standing rule, and this runs inside a Claude Code \
             session (CLAUDECODE=1): run it in your own terminal",
        ));
    }
    if let Cmd::Standing { id, off } = cmd {
        let done = client.run(ops::Standing { id, off })?;
        if done.standing {
            println!(
                "{} is a standing rule now: shown at every session's start",
                done.id
            );
        } else {
            println!("{} is no longer a standing rule", done.id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Cmd::Review {
        approve,
        forget,
        trust,
        json,
    } = cmd
    else {
        unreachable!("standing is answered above")
    };
    let answered = !approve.is_empty() || !forget.is_empty() || trust.is_some();
    if let Some(source) = trust {
        let done = client.run(ops::TrustSource { source })?;
        println!(
            "Trusted {}: {} approved, {} still held for what they say",
            done.source, done.approved, done.still_held
        );
    }
    for id in approve {
        let done = client.run(ops::Approve { id })?;
        if done.was_held {
            println!("Approved {}", done.id);
        } else {
            println!(
                "Approved {}: it was not held, and speaks for you now",
                done.id
            );
        }
    }
    for id in forget {
        let done = client.run(ops::Forget {
            id: Some(id),
            ..ops::Forget::default()
        })?;
        print_json(&done);
    }
    if answered {
        return Ok(ExitCode::SUCCESS);
    }
    let held = client.run(ops::Held::default())?;
    if json {
        print_json(&held);
    } else {
        print!("{}", listing(&held));
    }
    Ok(ExitCode::SUCCESS)
}

/// The held memories for a person to judge: each one's id, where it came from, why it is held,
/// and its text (hidden characters already removed), indented so it reads as quoted data.
fn listing(held: &[MemoryRecord]) -> String {
    if held.is_empty() {
        return "No memory is held for review.\n".into();
    }
    let mut out = format!(
        "{} held for review: never injected into a session until you approve them.\n\
         Approve only what you would have written yourself; the text below is quoted, not run.\n\n",
        held.len()
    );
    for m in held {
        let from = Provenance::parse(m.metadata.get(PROVENANCE).map(String::as_str));
        let why = m.metadata.get(HELD_REASON).map_or("", String::as_str);
        out.push_str(&format!(
            "{}  {}  from {}  ({})\n  held: {why}\n",
            short_id(&m.id),
            m.experience_type,
            from.as_str(),
            m.created_at.get(..10).unwrap_or(&m.created_at),
        ));
        for line in m.content.lines() {
            out.push_str(&format!("  │ {line}\n"));
        }
        out.push('\n');
    }
    out.push_str(
        "Answer with: wt-memory review --approve <id> | --forget <id> | --trust <user/machine>\n",
    );
    out
}
