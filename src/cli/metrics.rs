//! metrics, report: what memory did for the agent, from the project's metrics log.

use super::{print_json, Res};
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;
use wt_memory_foundation::error::{other, Error};
use wt_memory_ops as ops;
use wt_memory_service::client::Client;

#[derive(Subcommand)]
pub enum Cmd {
    /// Hook injections and abstentions per event, relevance, usage rate, latency and the memories
    /// used most, never injected, or injected often but never used.
    Metrics {
        /// The window: days, as `7d` or `7`.
        #[arg(long, default_value = "7d", value_parser = parse_days)]
        since: u32,
        #[arg(long)]
        json: bool,
    },
    /// Write the metrics as one self-contained HTML page (charts included) and print its path.
    Report {
        /// The window: days, as `30d` or `30`.
        #[arg(long, default_value = "30d", value_parser = parse_days)]
        since: u32,
        /// Where to write it (default: the state directory's reports folder).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Open it in the desktop's browser.
        #[arg(long)]
        open: bool,
    },
    /// Browse, search, filter and forget memories in the terminal, with a metrics pane.
    Tui {
        /// The metrics pane's window: days, as `7d` or `7`.
        #[arg(long, default_value = "7d", value_parser = parse_days)]
        since: u32,
        /// Seconds between refreshes of the metrics pane.
        #[arg(long, default_value_t = 10)]
        interval: u64,
        /// Print one frame as text and exit (no terminal needed).
        #[arg(long)]
        once: bool,
    },
}

/// `7d`, `7` -> 7; a window of 1 to 3650 days.
fn parse_days(s: &str) -> Result<u32, String> {
    let n = s.trim().trim_end_matches(['d', 'D']);
    match n.parse::<u32>() {
        Ok(d) if (1..=3650).contains(&d) => Ok(d),
        _ => Err(format!(
            "'{s}' is not a number of days between 1 and 3650 (like 7d)"
        )),
    }
}

pub fn run(client: &mut Client, cmd: Cmd) -> Res {
    match cmd {
        Cmd::Metrics { since, json } => {
            let report = client.run(ops::Metrics { days: since })?;
            if json {
                print_json(&report);
            } else {
                print!("{}", report.to_text());
            }
        }
        Cmd::Report { since, out, open } => {
            let report = client.run(ops::Metrics { days: since })?;
            let path = out.unwrap_or_else(|| {
                wt_memory_base::paths::log_dir()
                    .join("reports")
                    .join(format!(
                        "{}-{}.html",
                        report.project,
                        chrono::Utc::now().format("%Y%m%d-%H%M%S")
                    ))
            });
            wt_memory_base::paths::write_atomic(
                &path,
                wt_memory_ops::metrics::html::render(&report).as_bytes(),
            )
            .map_err(|e| other(format!("report: cannot write {}: {e}", path.display())))?;
            println!("{}", path.display());
            if open {
                open_in_browser(&path)?;
            }
        }
        Cmd::Tui {
            since,
            interval,
            once,
        } => crate::tui::run(
            client,
            &crate::tui::TuiArgs {
                days: since,
                interval: interval.max(1),
                once,
            },
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

fn open_in_browser(path: &std::path::Path) -> Result<(), Error> {
    let opener = ["xdg-open", "open"]
        .into_iter()
        .find_map(|name| which::which(name).ok())
        .ok_or_else(|| {
            other("report: no xdg-open or open here to show it; open the file above in a browser")
        })?;
    std::process::Command::new(opener)
        .arg(path)
        .status()
        .map_err(|e| other(format!("report: cannot start a browser: {e}")))?;
    Ok(())
}
