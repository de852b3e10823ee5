//! enrich: retrieval keys for memories that have none, written by `claude -p` (crates/core/src/enrich.rs).

use super::Res;
use clap::Subcommand;
use std::process::ExitCode;
use wt_memory_core::enrich::{self, BATCH};
use wt_memory_foundation::error::{bad_input, other};
use wt_memory_ops as ops;
use wt_memory_service::client::Client;

#[derive(Subcommand)]
pub enum Cmd {
    /// Write retrieval keys for memories stored without them, with `claude -p --model haiku`, in
    /// batches of 20. Prints the cost estimate and does nothing more unless given --yes.
    Enrich {
        /// At most this many memories (newest first).
        #[arg(long)]
        limit: Option<usize>,
        /// Go ahead: call the model and write the keys.
        #[arg(long)]
        yes: bool,
    },
}

pub fn run(client: &mut Client, cmd: Cmd) -> Res {
    let Cmd::Enrich { limit, yes } = cmd;
    let todo = enrich::without_keys(client.run(ops::List::default())?, limit);
    if todo.is_empty() {
        println!("Every memory has retrieval keys: nothing to do.");
        return Ok(ExitCode::SUCCESS);
    }
    let e = enrich::estimate(&todo);
    println!(
        "{} memories without keys: {} calls to claude -p --model haiku, about {} input and {} output tokens, about ${:.3}.",
        e.memories, e.calls, e.input_tokens, e.output_tokens, e.dollars
    );
    if !yes {
        println!("Run `wt-memory enrich --yes` to write the keys.");
        return Ok(ExitCode::SUCCESS);
    }
    let bin = wt_memory_foundation::llm::claude_bin().ok_or_else(|| {
        bad_input("claude is not on PATH: install Claude Code, or give keys with `remember --keys`")
    })?;
    let (mut enriched, mut failures) = (0, Vec::new());
    for (n, batch) in todo.chunks(BATCH).enumerate() {
        eprintln!(
            "enrich: call {}/{} ({} memories)",
            n + 1,
            e.calls,
            batch.len()
        );
        // The model takes seconds: other processes may use the store meanwhile.
        client.release();
        let answer = match wt_memory_foundation::llm::run_claude(
            &bin,
            &enrich::prompt(batch),
            wt_memory_foundation::llm::LLM_TIMEOUT,
            &std::env::temp_dir(),
        ) {
            Ok(answer) => answer,
            Err(err) => {
                eprintln!("enrich: call {} failed: {err}", n + 1);
                failures.push(err);
                continue;
            }
        };
        for (id, keys) in enrich::parse_answer(batch, &answer) {
            client.run(ops::SetKeys {
                id: id.to_string(),
                keys: keys.to_vec(),
            })?;
            enriched += 1;
        }
    }
    println!("Wrote keys for {enriched} of {} memories.", todo.len());
    match failures.first() {
        None => Ok(ExitCode::SUCCESS),
        Some(first) => Err(other(format!(
            "{} of {} model calls failed (first: {first}); run `wt-memory enrich --yes` again for the rest",
            failures.len(),
            e.calls
        ))),
    }
}
