//! The metrics log through the store's one way in: what the hooks record, and the report.

use super::{Caller, Direct, Holding, Operation};
use crate::metrics::{self, Recorder};
use wt_memory_foundation::error::Result;

/// The metrics log's operations.
pub(super) const OPERATIONS: &[super::Registered] =
    &[super::entry::<Record>(), super::entry::<Metrics>()];

/// Add to the metrics log: a service answers at once and writes when quiet.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Record {
    pub events: Vec<metrics::Event>,
}

/// The longest line of metrics a service takes.
const MAX_RECORD_LINE: usize = 256 * 1024;

impl Record {
    /// The events to record, or `None` when there is nothing to send (no events, metrics off).
    pub fn of(events: Vec<metrics::Event>) -> Option<Record> {
        (!events.is_empty() && metrics::enabled()).then_some(Record { events })
    }
}

impl Operation for Record {
    const NAME: &'static str = "record";
    type Answer = ();
    const MAX_LINE: Option<usize> = Some(MAX_RECORD_LINE);
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<()> {
        direct.recorder.push(self.events.clone());
        if direct.holding == Holding::PerCall {
            direct.recorder.flush()?;
        }
        Ok(())
    }
    fn at_once(&self, recorder: &Recorder) -> Option<Result<()>> {
        if recorder.push(self.events.clone()) >= metrics::FLUSH_AT {
            recorder.flush_or_warn();
        }
        Some(Ok(()))
    }
}

/// The metrics report of the last `days` days.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Metrics {
    pub days: u32,
}

impl Operation for Metrics {
    const NAME: &'static str = "metrics";
    type Answer = metrics::Report;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<metrics::Report> {
        direct.recorder.flush()?;
        let records = direct.read(|s| Ok(s.records()?))?;
        let stale = direct.read(super::stale)?;
        let log = metrics::Log::open_existing(&metrics::db_path(&direct.project))?;
        let mut report =
            metrics::Report::build(&direct.project.name, log.as_ref(), &records, self.days)?;
        report.stale = stale;
        Ok(report)
    }
}
