//! The metrics report: one summary of the log (and the store's memories) over a window, shared
//! by `wt-memory metrics`, `wt-memory report`, the TUI and the MCP `memory_metrics` tool.

use super::Log;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use wt_memory_core::record::MemoryRecord;
use wt_memory_foundation::error::{other, Result};

/// Relevance buckets, as in the previous system: strong > 0.7, partial 0.3–0.7, weak < 0.3.
pub const STRONG: f64 = 0.7;
pub const PARTIAL: f64 = 0.3;
/// Entries in each memory list.
const LIST: usize = 10;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    pub project: String,
    pub days: u32,
    pub since: String,
    pub memories: usize,
    /// Of them, held for review (never injected; `wt-memory review`).
    #[serde(default)]
    pub held: usize,
    pub events: Vec<EventStats>,
    pub relevance: Relevance,
    pub sessions: usize,
    pub chars_per_session: f64,
    pub usage: Usage,
    pub writes: BTreeMap<String, u64>,
    /// Hook runs per day and event, oldest day first.
    pub daily: Vec<Day>,
    /// Memories in the store at the end of each day with a new one, oldest first.
    pub growth: Vec<Growth>,
    pub most_used: Vec<MemoryStats>,
    pub never_injected: Vec<MemoryStats>,
    pub never_injected_count: usize,
    /// Injected in at least two sessions and never used: candidates to forget.
    pub injected_never_used: Vec<MemoryStats>,
    /// Failed commands: how often the guard warned, how often a mistake came back.
    pub repeat_mistakes: RepeatMistakes,
    /// Memories whose files (code anchors) changed or vanished since they were written.
    #[serde(default)]
    pub stale: Vec<wt_memory_core::anchors::StaleMemory>,
}

/// `metrics --json`'s `repeat_mistakes`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RepeatMistakes {
    /// Warnings before a command close to a recorded failure.
    pub guarded: u64,
    /// Of the warnings, the commands the guard stopped before they ran (once per session).
    #[serde(default)]
    pub prevented: u64,
    /// Stopped commands that then ran and worked: the guard was wrong.
    #[serde(default)]
    pub false_fires: u64,
    /// Failures of a signature that had failed before.
    pub repeated: u64,
    /// Of those, after the guard had warned in the same session.
    pub repeated_after_guard: u64,
    /// Every failure seen.
    pub failures: u64,
    /// `repeated / failures` (None before the first failure).
    pub repeat_rate: Option<f64>,
    /// The signatures that failed most often.
    pub signatures: Vec<MistakeStats>,
}

impl RepeatMistakes {
    /// One line for the text report and the TUI (None before the first failure or warning).
    pub fn line(&self) -> Option<String> {
        if self.failures == 0 && self.guarded == 0 {
            return None;
        }
        Some(format!(
            "Repeat mistakes: {} command failures, {} of them repeats ({:.0}%, {} after a warning); {} warnings before a command that failed before ({} stopped before it ran, {} false fires)",
            self.failures,
            self.repeated,
            self.repeat_rate.unwrap_or(0.0) * 100.0,
            self.repeated_after_guard,
            self.guarded,
            self.prevented,
            self.false_fires
        ))
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MistakeStats {
    pub signature: String,
    pub head: String,
    pub failures: u64,
    pub repeated: u64,
    pub guarded: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EventStats {
    pub event: String,
    pub runs: u64,
    pub injected: u64,
    pub abstained: u64,
    pub deadline: u64,
    pub error: u64,
    pub memories_injected: u64,
    pub chars_avg: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Relevance {
    pub strong: u64,
    pub partial: u64,
    pub weak: u64,
    pub unscored: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Distinct (session, memory) injections.
    pub injected: u64,
    pub used: u64,
    pub cited: u64,
    pub echoed: u64,
    /// used / injected; None before anything was injected.
    pub rate: Option<f64>,
    /// The same, per event that injected the memory in that session.
    #[serde(default)]
    pub by_event: BTreeMap<String, EventUse>,
}

/// Injections of one event, and how many of them the agent cited or otherwise used.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EventUse {
    /// Distinct (session, memory) injections by this event.
    pub injected: u64,
    pub cited: u64,
    pub used: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Day {
    pub day: String,
    pub runs: BTreeMap<String, u64>,
    pub injected: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Growth {
    pub day: String,
    pub memories: usize,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MemoryStats {
    pub id: String,
    pub preview: String,
    pub sessions_injected: u64,
    pub sessions_used: u64,
}

/// The `p` quantile (0..1) of ascending `sorted`, nearest rank; 0 when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn day_of(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_default()
}

fn preview(records: &HashMap<&str, &MemoryRecord>, id: &str) -> String {
    match records.get(id) {
        Some(r) => r.preview(),
        None => "(forgotten since)".to_string(),
    }
}

impl Report {
    /// Summarise the last `days` days of `log` (None: nothing recorded yet) for a store holding
    /// `records`.
    pub fn build(
        project: &str,
        log: Option<&Log>,
        records: &[MemoryRecord],
        days: u32,
    ) -> Result<Report> {
        let since_ms = super::now_ms() - i64::from(days) * 86_400_000;
        let mut report = Report {
            project: project.to_string(),
            days,
            since: chrono::DateTime::from_timestamp_millis(since_ms)
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
                .unwrap_or_default(),
            memories: records.len(),
            held: records
                .iter()
                .filter(|r| r.has_tag(wt_memory_core::trust::HELD_TAG))
                .count(),
            growth: growth(records),
            ..Report::default()
        };
        let by_id: HashMap<&str, &MemoryRecord> =
            records.iter().map(|r| (r.id.as_str(), r)).collect();
        let Some(log) = log else {
            report.never_injected_count = records.len();
            report.never_injected = records
                .iter()
                .take(LIST)
                .map(|r| memory_stats(&by_id, &r.id, 0, 0))
                .collect();
            return Ok(report);
        };
        fill(&mut report, log, since_ms, records, &by_id)
            .map_err(|e| other(format!("metrics report: {e}")))?;
        Ok(report)
    }

    /// One plain-text page for a terminal.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "Memory metrics for {}: last {} days ({} memories in the store{})\n\n",
            self.project,
            self.days,
            self.memories,
            match self.held {
                0 => String::new(),
                n => format!(", {n} held for review: `wt-memory review`"),
            }
        );
        if self.events.is_empty() {
            out.push_str("No hook runs recorded in this window.\n");
        } else {
            out.push_str(&format!(
                "{:<20} {:>6} {:>9} {:>10} {:>6} {:>10} {:>8} {:>8}\n",
                "event", "runs", "injected", "abstained", "other", "chars avg", "p50 ms", "p95 ms"
            ));
            for e in &self.events {
                out.push_str(&format!(
                    "{:<20} {:>6} {:>9} {:>10} {:>6} {:>10.0} {:>8.1} {:>8.1}\n",
                    e.event,
                    e.runs,
                    e.injected,
                    e.abstained,
                    e.deadline + e.error,
                    e.chars_avg,
                    e.p50_ms,
                    e.p95_ms
                ));
            }
        }
        let r = &self.relevance;
        out.push_str(&format!(
            "\nRelevance of injected memories: {} strong (> {STRONG}), {} partial ({PARTIAL}-{STRONG}), {} weak, {} unscored\n",
            r.strong, r.partial, r.weak, r.unscored
        ));
        out.push_str(&format!(
            "Sessions: {}, {:.0} characters injected per session\n",
            self.sessions, self.chars_per_session
        ));
        let u = &self.usage;
        out.push_str(&match u.rate {
            Some(rate) => format!(
                "Usage: {} of {} injected memories used ({:.0}%: {} cited, {} echoed)\n",
                u.used,
                u.injected,
                rate * 100.0,
                u.cited,
                u.echoed
            ),
            None => "Usage: nothing injected yet\n".to_string(),
        });
        if !u.by_event.is_empty() {
            let parts: Vec<String> = u
                .by_event
                .iter()
                .map(|(event, e)| format!("{event} {}/{} cited", e.cited, e.injected))
                .collect();
            out.push_str(&format!("Cited by event: {}\n", parts.join(", ")));
        }
        if !self.writes.is_empty() {
            let parts: Vec<String> = self
                .writes
                .iter()
                .map(|(source, n)| format!("{source} {n}"))
                .collect();
            out.push_str(&format!("Writes: {}\n", parts.join(", ")));
        }
        if let Some(line) = self.repeat_mistakes.line() {
            out.push_str(&format!("{line}\n"));
        }
        if !self.stale.is_empty() {
            out.push_str(&format!(
                "Stale: {} memories name files that changed or vanished (wt-memory audit --stale)\n",
                self.stale.len()
            ));
        }
        let mut list = |title: &str, items: &[MemoryStats]| {
            if items.is_empty() {
                return;
            }
            out.push_str(&format!("\n{title}\n"));
            for m in items {
                out.push_str(&format!(
                    "  {}  used {}/{} sessions  {}\n",
                    &m.id[..m.id.len().min(8)],
                    m.sessions_used,
                    m.sessions_injected,
                    m.preview
                ));
            }
        };
        list("Used most:", &self.most_used);
        list(
            "Injected often, never used (candidates to forget):",
            &self.injected_never_used,
        );
        out.push_str(&format!(
            "\nNever injected in this window: {} of {} memories\n",
            self.never_injected_count, self.memories
        ));
        out
    }
}

fn memory_stats(
    by_id: &HashMap<&str, &MemoryRecord>,
    id: &str,
    injected: u64,
    used: u64,
) -> MemoryStats {
    MemoryStats {
        id: id.to_string(),
        preview: preview(by_id, id),
        sessions_injected: injected,
        sessions_used: used,
    }
}

fn growth(records: &[MemoryRecord]) -> Vec<Growth> {
    let mut per_day: BTreeMap<String, usize> = BTreeMap::new();
    for r in records {
        let day = r.created_at.get(..10).unwrap_or("").to_string();
        *per_day.entry(day).or_default() += 1;
    }
    let mut total = 0;
    per_day
        .into_iter()
        .map(|(day, n)| {
            total += n;
            Growth {
                day,
                memories: total,
            }
        })
        .collect()
}

fn fill(
    report: &mut Report,
    log: &Log,
    since_ms: i64,
    records: &[MemoryRecord],
    by_id: &HashMap<&str, &MemoryRecord>,
) -> rusqlite::Result<()> {
    let db = log.conn();
    // Runs per event and outcome, with their durations for percentiles.
    let mut per_event: BTreeMap<String, (EventStats, Vec<f64>, u64)> = BTreeMap::new();
    let mut daily: BTreeMap<String, Day> = BTreeMap::new();
    let mut session_chars: HashMap<String, u64> = HashMap::new();
    let mut stmt = db.prepare(
        "SELECT r.event, r.outcome, r.chars, r.duration_ms, r.at_ms, r.session,
                (SELECT COUNT(*) FROM injections i WHERE i.run = r.id)
         FROM runs r WHERE r.at_ms >= ?1",
    )?;
    let mut rows = stmt.query([since_ms])?;
    while let Some(row) = rows.next()? {
        let (event, outcome): (String, String) = (row.get(0)?, row.get(1)?);
        let (chars, ms, at): (i64, f64, i64) = (row.get(2)?, row.get(3)?, row.get(4)?);
        let (session, memories): (String, i64) = (row.get(5)?, row.get(6)?);
        let entry = per_event.entry(event.clone()).or_default();
        entry.0.event = event.clone();
        entry.0.runs += 1;
        match outcome.as_str() {
            "injected" => entry.0.injected += 1,
            "abstained" => entry.0.abstained += 1,
            "deadline" => entry.0.deadline += 1,
            _ => entry.0.error += 1,
        }
        entry.0.memories_injected += memories as u64;
        entry.1.push(ms);
        entry.2 += chars as u64;
        let day = daily.entry(day_of(at)).or_default();
        *day.runs.entry(event).or_default() += 1;
        day.injected += memories as u64;
        *session_chars.entry(session).or_default() += chars as u64;
    }
    for (_, (mut stats, mut times, chars)) in per_event {
        times.sort_by(f64::total_cmp);
        stats.p50_ms = percentile(&times, 0.5);
        stats.p95_ms = percentile(&times, 0.95);
        stats.chars_avg = chars as f64 / stats.runs.max(1) as f64;
        report.events.push(stats);
    }
    report.daily = daily
        .into_iter()
        .map(|(d, mut day)| {
            day.day = d;
            day
        })
        .collect();
    report.sessions = session_chars.len();
    report.chars_per_session =
        session_chars.values().sum::<u64>() as f64 / session_chars.len().max(1) as f64;

    let mut stmt = db.prepare("SELECT score FROM injections WHERE at_ms >= ?1")?;
    let mut rows = stmt.query([since_ms])?;
    while let Some(row) = rows.next()? {
        match row.get::<_, Option<f64>>(0)? {
            Some(s) if s > STRONG => report.relevance.strong += 1,
            Some(s) if s >= PARTIAL => report.relevance.partial += 1,
            Some(_) => report.relevance.weak += 1,
            None => report.relevance.unscored += 1,
        }
    }

    // Sessions per memory: injected, and used.
    let mut injected: HashMap<String, HashSet<String>> = HashMap::new();
    let mut stmt =
        db.prepare("SELECT DISTINCT memory, session FROM injections WHERE at_ms >= ?1")?;
    let mut rows = stmt.query([since_ms])?;
    while let Some(row) = rows.next()? {
        injected.entry(row.get(0)?).or_default().insert(row.get(1)?);
    }
    let mut used: HashMap<String, HashSet<String>> = HashMap::new();
    // (memory, session) -> cited (true) or echoed.
    let mut how_used: HashMap<(String, String), bool> = HashMap::new();
    let mut stmt = db.prepare("SELECT memory, session, how FROM usage WHERE at_ms >= ?1")?;
    let mut rows = stmt.query([since_ms])?;
    while let Some(row) = rows.next()? {
        let (memory, session, how): (String, String, String) =
            (row.get(0)?, row.get(1)?, row.get(2)?);
        // Only what was injected in that session counts towards the usage rate.
        if injected.get(&memory).is_some_and(|s| s.contains(&session)) {
            if how == "cited" {
                report.usage.cited += 1;
            } else {
                report.usage.echoed += 1;
            }
            *how_used
                .entry((memory.clone(), session.clone()))
                .or_default() |= how == "cited";
            used.entry(memory).or_default().insert(session);
        }
    }
    let mut stmt = db.prepare(
        "SELECT DISTINCT r.event, i.memory, i.session FROM injections i JOIN runs r ON r.id = i.run WHERE i.at_ms >= ?1",
    )?;
    let mut rows = stmt.query([since_ms])?;
    while let Some(row) = rows.next()? {
        let (event, memory, session): (String, String, String) =
            (row.get(0)?, row.get(1)?, row.get(2)?);
        let stats = report.usage.by_event.entry(event).or_default();
        stats.injected += 1;
        if let Some(cited) = how_used.get(&(memory, session)) {
            stats.used += 1;
            stats.cited += u64::from(*cited);
        }
    }
    report.usage.injected = injected.values().map(|s| s.len() as u64).sum();
    report.usage.used = used.values().map(|s| s.len() as u64).sum();
    report.usage.rate = (report.usage.injected > 0)
        .then(|| report.usage.used as f64 / report.usage.injected as f64);

    let count = |m: &HashMap<String, HashSet<String>>, id: &str| {
        m.get(id).map(|s| s.len() as u64).unwrap_or(0)
    };
    let mut most: Vec<&String> = used.keys().collect();
    most.sort_by_key(|id| (std::cmp::Reverse(count(&used, id)), (*id).clone()));
    report.most_used = most
        .into_iter()
        .take(LIST)
        .map(|id| memory_stats(by_id, id, count(&injected, id), count(&used, id)))
        .collect();
    let mut idle: Vec<&String> = injected
        .keys()
        .filter(|id| !used.contains_key(*id) && count(&injected, id) >= 2)
        .collect();
    idle.sort_by_key(|id| (std::cmp::Reverse(count(&injected, id)), (*id).clone()));
    report.injected_never_used = idle
        .into_iter()
        .take(LIST)
        .map(|id| memory_stats(by_id, id, count(&injected, id), 0))
        .collect();
    let never: Vec<&MemoryRecord> = records
        .iter()
        .filter(|r| !injected.contains_key(&r.id))
        .collect();
    report.never_injected_count = never.len();
    report.never_injected = never
        .into_iter()
        .take(LIST)
        .map(|r| memory_stats(by_id, &r.id, 0, 0))
        .collect();

    report.repeat_mistakes = repeat_mistakes(db, since_ms)?;

    let mut stmt = db.prepare(
        "SELECT source, SUM(count) FROM writes WHERE at_ms >= ?1 GROUP BY source ORDER BY source",
    )?;
    let mut rows = stmt.query([since_ms])?;
    while let Some(row) = rows.next()? {
        report
            .writes
            .insert(row.get(0)?, row.get::<_, i64>(1)? as u64);
    }
    Ok(())
}

fn repeat_mistakes(db: &rusqlite::Connection, since_ms: i64) -> rusqlite::Result<RepeatMistakes> {
    let mut out = RepeatMistakes::default();
    let mut by_signature: BTreeMap<String, MistakeStats> = BTreeMap::new();
    let mut stmt = db.prepare(
        "SELECT signature, head, what, after_guard FROM mistakes WHERE at_ms >= ?1 ORDER BY at_ms",
    )?;
    let mut rows = stmt.query([since_ms])?;
    while let Some(row) = rows.next()? {
        let (signature, head, what): (String, String, String) =
            (row.get(0)?, row.get(1)?, row.get(2)?);
        let after_guard: bool = row.get(3)?;
        let stats = by_signature
            .entry(signature.clone())
            .or_insert_with(|| MistakeStats {
                signature,
                head,
                ..MistakeStats::default()
            });
        match what.as_str() {
            "failed" => {
                out.failures += 1;
                stats.failures += 1;
            }
            "repeated" => {
                out.repeated += 1;
                stats.repeated += 1;
                out.repeated_after_guard += u64::from(after_guard);
            }
            "guarded" => {
                out.guarded += 1;
                out.prevented += 1;
                stats.guarded += 1;
            }
            "false-fire" => out.false_fires += 1,
            _ => {}
        }
    }
    out.repeat_rate = (out.failures > 0).then(|| out.repeated as f64 / out.failures as f64);
    let mut signatures: Vec<MistakeStats> = by_signature.into_values().collect();
    signatures.sort_by(|a, b| {
        (b.failures + b.guarded)
            .cmp(&(a.failures + a.guarded))
            .then(a.head.cmp(&b.head))
    });
    signatures.truncate(LIST);
    out.signatures = signatures;
    Ok(out)
}

// Its memories' previews are redacted as they are made.
wt_memory_core::shows_no_memory!(Report);
