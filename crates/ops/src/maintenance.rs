//! Looking after a store: stats, status, health, dedup, cleanup, migrations, re-embedding,
//! repair, and the list of stores.

use super::{take_snapshot, Caller, Direct, Operation};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use wt_memory_base::model::Assets;
use wt_memory_base::project::Project;
use wt_memory_core::dedup;
use wt_memory_core::migrate;
use wt_memory_core::record::MemoryRecord;
use wt_memory_core::store::{self, EmbedderKind, RepairReport, Store};
use wt_memory_core::trust::HELD_TAG;
use wt_memory_foundation::error::Result;
use wt_memory_foundation::integrity::{self, Alert};

/// Importance buckets of `stats`.
pub const IMPORTANCE_BUCKETS: [&str; 5] = ["0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1.0"];

/// `stats`: counts by type and tag, importance histogram, noise ratio.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatsReport {
    pub total: usize,
    pub type_distribution: BTreeMap<String, usize>,
    /// The ten most used tags, most used first.
    pub tag_distribution: serde_json::Map<String, serde_json::Value>,
    /// Counts per [`IMPORTANCE_BUCKETS`], in that order.
    pub importance_histogram: serde_json::Map<String, serde_json::Value>,
    /// Share of memories with importance below 0.3, three decimals.
    pub noise_ratio: f64,
}

pub fn stats(records: &[MemoryRecord]) -> StatsReport {
    let mut types = BTreeMap::<String, usize>::new();
    let mut tags = HashMap::<String, usize>::new();
    let mut hist = [0usize; 5];
    for r in records {
        *types.entry(r.experience_type.clone()).or_default() += 1;
        for t in &r.tags {
            *tags.entry(t.clone()).or_default() += 1;
        }
        hist[((r.importance.clamp(0.0, 0.999)) * 5.0) as usize] += 1;
    }
    let mut top: Vec<(String, usize)> = tags.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(10);
    let noise = records.iter().filter(|r| r.importance < 0.3).count();
    let ratio = if records.is_empty() {
        0.0
    } else {
        noise as f64 / records.len() as f64
    };
    StatsReport {
        total: records.len(),
        type_distribution: types,
        tag_distribution: top.into_iter().map(|(t, n)| (t, n.into())).collect(),
        importance_histogram: IMPORTANCE_BUCKETS
            .iter()
            .zip(hist)
            .map(|(l, n)| (l.to_string(), n.into()))
            .collect(),
        noise_ratio: (ratio * 1000.0).round() / 1000.0,
    }
}

/// What SessionStart shows of a store: how many memories, of which types, about which topics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryMap {
    pub total: usize,
    /// Types, most used first.
    pub types: Vec<(String, usize)>,
    /// The most used topic tags, most used first (not the namespaced tags the tools add, such as
    /// `branch:…` or `source:hook`).
    pub topics: Vec<(String, usize)>,
    /// Memories held for review (not in `total`: the agent is never shown them).
    #[serde(default)]
    pub held: usize,
}

/// Topic tags a map lists.
pub const MAP_TOPICS: usize = 8;

/// The map of the store from its kept counts: no memory is read.
pub fn memory_map(view: &store::RankView) -> MemoryMap {
    fn most_used<'a>(
        counts: impl Iterator<Item = (&'a String, &'a usize)>,
    ) -> Vec<(String, usize)> {
        let mut all: Vec<(String, usize)> = counts.map(|(k, n)| (k.clone(), *n)).collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        all
    }
    let held_rows = view.rows_tagged(HELD_TAG);
    let held = held_rows.len();
    // The agent reads the topics: a held memory's tags are not counted (they are its words).
    let mut counts = view.tally.tags.clone();
    for &i in held_rows.iter() {
        for tag in view.records.get(i as usize).tags() {
            if let Some(n) = counts.get_mut(tag) {
                *n = n.saturating_sub(1);
            }
        }
    }
    let mut topics = most_used(
        counts
            .iter()
            .filter(|(tag, n)| **n > 0 && !tag.contains(':') && tag.as_str() != HELD_TAG),
    );
    topics.truncate(MAP_TOPICS);
    // Names shown are redacted here, where a resident service has the patterns ready: every write
    // redacts tags already, and this is the second line of defence, as for records going out.
    let redacted = |items: Vec<(String, usize)>| -> Vec<(String, usize)> {
        items
            .into_iter()
            .map(|(name, n)| (wt_memory_foundation::redact::redact(&name), n))
            .collect()
    };
    let topics = redacted(topics);
    MemoryMap {
        total: view.records.len().saturating_sub(held),
        types: redacted(most_used(view.tally.types.iter())),
        topics,
        held,
    }
}

/// What `status`, `health` and `doctor` say about embeddings.
pub fn semantic_line(assets: Option<&Assets>) -> String {
    match assets {
        Some(a) => format!("semantic (MiniLM-L6 from {})", a.source),
        None => format!(
            "NOT semantic: recall falls back to hash embeddings; {}",
            wt_memory_foundation::setup::fix_hint()
        ),
    }
}

/// `status --json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    pub available: bool,
    pub project: String,
    pub count: usize,
    pub storage_path: PathBuf,
    pub semantic: bool,
    pub embedder: Option<EmbedderKind>,
    pub model_path: Option<PathBuf>,
}

pub fn status(project: &Project, count: usize) -> Status {
    let assets = wt_memory_core::engine_env::engine_assets();
    Status {
        available: true,
        project: project.name.clone(),
        count,
        storage_path: project.store_dir.clone(),
        semantic: assets.is_some(),
        embedder: store::read_meta(&project.store_dir).map(|m| m.embedder),
        model_path: assets.map(|a| a.model_dir.clone()),
    }
}

/// `health`: is the store usable, and is recall semantic.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HealthReport {
    pub ok: bool,
    /// What to print, one line each (`ok`, a warning, or the error with its next step).
    pub lines: Vec<String>,
}

pub fn health(store: &Store) -> HealthReport {
    let alert = store.verify();
    integrity::take_warning();
    let broken = |line: String| HealthReport {
        ok: false,
        lines: vec![line],
    };
    match alert {
        Ok(None) => {}
        Ok(Some(a)) => {
            let next = if a.missing() > 0 || a.ids_differ {
                "see `wt-memory doctor` to recover"
            } else {
                "run `wt-memory repair`"
            };
            return broken(format!("error: store damaged: {}; {next}", a.reason()));
        }
        Err(e) => return broken(format!("error: {e:#}")),
    }
    match store.ensure_embedder() {
        Ok(EmbedderKind::MinilmL6) => HealthReport {
            ok: true,
            lines: vec!["ok".into()],
        },
        Ok(EmbedderKind::Hash) => HealthReport {
            ok: true,
            lines: vec![
                "ok".into(),
                format!("warning: recall is {}", semantic_line(None)),
            ],
        },
        Err(e) => broken(format!("error: {e:#}")),
    }
}

/// `health` of a project with no store yet: whether one can be made there, and the model.
pub fn health_without_store(store_dir: &std::path::Path) -> HealthReport {
    // The nearest folder that exists must take the store (nothing is created to find out).
    let existing = store_dir.ancestors().find(|a| a.exists());
    let unusable = match existing {
        Some(dir) if !dir.is_dir() => Some(format!("{} is not a directory", dir.display())),
        Some(dir) if !wt_memory_base::paths::writable(dir) => {
            Some(format!("{} is not writable", dir.display()))
        }
        _ => None,
    };
    if let Some(why) = unusable {
        return HealthReport {
            ok: false,
            lines: vec![format!(
                "error: no store can be made at {}: {why}; set WT_MEMORY_HOME to a folder you can write",
                store_dir.display()
            )],
        };
    }
    let mut lines = vec!["ok (no store yet)".to_string()];
    if wt_memory_core::engine_env::engine_assets().is_none() {
        lines.push(format!("warning: recall is {}", semantic_line(None)));
    }
    HealthReport { ok: true, lines }
}

/// `cleanup`'s result: what was (or, with `dry_run`, would be) deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Cleaned {
    Done {
        deleted_count: usize,
        garbage: usize,
        low_importance: usize,
    },
    DryRun {
        garbage: usize,
        low_importance: usize,
        would_delete: usize,
        dry_run: bool,
    },
}

/// `cleanup`'s defaults: importance below this is low value...
pub const CLEANUP_THRESHOLD: f32 = 0.2;
/// ... and content shorter than this many characters is garbage.
pub const CLEANUP_MIN_LENGTH: usize = 20;

/// Delete memories shorter than `min_length` characters, and the rest below `threshold`
/// importance.
pub fn cleanup(store: &Store, threshold: f32, min_length: usize, dry_run: bool) -> Result<Cleaned> {
    super::check_unit("threshold", threshold as f64)?;
    let records = unheld(store.records()?);
    let short = |r: &&MemoryRecord| r.content.chars().count() < min_length;
    let garbage: Vec<&MemoryRecord> = records.iter().filter(short).collect();
    let low: Vec<&MemoryRecord> = records
        .iter()
        .filter(|r| !short(r) && r.importance < threshold)
        .collect();
    if dry_run {
        return Ok(Cleaned::DryRun {
            garbage: garbage.len(),
            low_importance: low.len(),
            would_delete: garbage.len() + low.len(),
            dry_run: true,
        });
    }
    if !garbage.is_empty() || !low.is_empty() {
        take_snapshot(store, "cleanup")?;
    }
    let deleted_count =
        store.delete_many(garbage.iter().chain(low.iter()).map(|r| r.id.as_str()))?;
    Ok(Cleaned::Done {
        deleted_count,
        garbage: garbage.len(),
        low_importance: low.len(),
    })
}

/// `cleanup` on a project without a store.
pub const NOTHING_CLEANED: Cleaned = Cleaned::Done {
    deleted_count: 0,
    garbage: 0,
    low_importance: 0,
};

/// The memories an audit or a dedup looks at: none held for review, which are the review's to
/// answer (a cluster would merge one into a trusted memory, or delete the trusted one).
fn unheld(mut records: Vec<MemoryRecord>) -> Vec<MemoryRecord> {
    records.retain(|r| !r.has_tag(HELD_TAG));
    records
}

pub fn audit(records: &[MemoryRecord], threshold: f64) -> Result<dedup::Audit> {
    super::check_unit("threshold", threshold)?;
    Ok(dedup::audit(records, threshold))
}

/// `dedup`'s result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Deduped {
    Done {
        deleted_count: usize,
        merged_count: usize,
    },
    DryRun {
        dry_run: bool,
        clusters: usize,
        would_delete: usize,
        top_clusters: Vec<dedup::Cluster>,
        /// Kept by dedup (a replacement always survives its cluster), shown so the user sees them.
        #[serde(default)]
        supersede_links: Vec<dedup::SupersedeLink>,
    },
}

/// Keep one survivor per near-duplicate cluster, with the cluster's tags merged into it.
pub fn dedup(store: &Store, threshold: f64, dry_run: bool) -> Result<Deduped> {
    let report = audit(&unheld(store.records()?), threshold)?;
    if dry_run {
        return Ok(Deduped::DryRun {
            dry_run: true,
            clusters: report.clusters,
            would_delete: report.redundant,
            top_clusters: report.top_clusters,
            supersede_links: report.supersede_links,
        });
    }
    if !report.top_clusters.is_empty() {
        take_snapshot(store, "dedup")?;
    }
    let (mut merged, mut deleted) = (0, 0);
    for c in &report.top_clusters {
        if c.all_tags.len() != c.survivor_tags.len() {
            if let Some(survivor) = store.get(&c.survivor_id)? {
                store.set_tags(&survivor, c.all_tags.clone())?;
                merged += 1;
            }
        }
        deleted += store.delete_many(c.victim_ids.iter().map(String::as_str))?;
    }
    Ok(Deduped::Done {
        deleted_count: deleted,
        merged_count: merged,
    })
}

/// One migration and its state, for `migrate` and `migrate --status`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MigrationState {
    pub id: String,
    pub description: String,
    /// `applied (<when>)`, `pending`, `applied` (now) or `already applied`.
    pub state: String,
}

pub fn migration_status(project: &Project) -> Vec<MigrationState> {
    let done = migrate::applied(&project.store_dir);
    migrate::MIGRATIONS
        .iter()
        .map(|(id, desc)| MigrationState {
            id: id.to_string(),
            description: desc.to_string(),
            state: if done.applied.iter().any(|a| a == id) {
                format!("applied ({})", done.last_run)
            } else {
                "pending".into()
            },
        })
        .collect()
}

/// Apply the pending migrations (after an undo snapshot).
pub fn migrate(store: &Store) -> Result<Vec<MigrationState>> {
    let pending = migrate::pending(store.dir());
    if !pending.is_empty() {
        take_snapshot(store, "migrate")?;
    }
    migrate::run_pending(store)?;
    Ok(migrate::MIGRATIONS
        .iter()
        .map(|(id, desc)| MigrationState {
            id: id.to_string(),
            description: desc.to_string(),
            state: if pending.contains(id) {
                "applied"
            } else {
                "already applied"
            }
            .into(),
        })
        .collect())
}

/// Re-embed every memory with the current model; returns how many.
pub fn reembed(store: &Store) -> Result<usize> {
    take_snapshot(store, "reembed")?;
    Ok(store.rewrite_vectors()?)
}

/// `repair`: rebuild the derived indexes and check the store against its integrity record.
pub fn repair(project: &Project, accept_loss: bool) -> Result<RepairReport> {
    let (_store, report) = Store::repair(project, accept_loss)?;
    integrity::take_warning();
    Ok(report)
}

/// One store of `projects`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProjectCount {
    pub name: String,
    /// The count, or why the store did not open.
    pub count: std::result::Result<usize, String>,
}

/// Every project store under the storage root, by name, counted by `count`.
pub fn projects(count: impl Fn(&Project) -> Result<usize>) -> Vec<ProjectCount> {
    let root = wt_memory_base::paths::storage_root();
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    // Read copies (`.read-copy-…`) and other dot-folders are not projects.
                    !e.file_name().to_string_lossy().starts_with('.') && store::exists(&e.path())
                })
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let p = Project {
                name: name.clone(),
                store_dir: root.join(&name),
                toplevel: None,
                main_root: None,
                cwd: root.clone(),
            };
            let count = count(&p).map_err(|e| e.to_string());
            ProjectCount { name, count }
        })
        .collect()
}

/// The fix `doctor` names for an integrity alert.
pub fn integrity_fix(a: &Alert, store_dir: &std::path::Path) -> String {
    let lost = if a.lost_files.is_empty() {
        String::new()
    } else {
        format!(
            " The damaged files are in {}.",
            integrity::lost_dir(store_dir).display()
        )
    };
    let named = match &a.missing_ids {
        Some(ids) if !ids.is_empty() => {
            let shown: Vec<&str> = ids.iter().take(5).map(|i| &i[..8.min(i.len())]).collect();
            format!(
                " Missing ids: {}{}.",
                shown.join(", "),
                if ids.len() > 5 { ", ..." } else { "" }
            )
        }
        _ => String::new(),
    };
    if a.missing() > 0 || a.ids_differ {
        format!(
            "{} memor{} lost (since {}): `wt-memory repair` rebuilds the indexes but cannot bring them back. Restore them with `wt-memory sync pull` (a teammate's copy) or `wt-memory import <export.json>` (an export), or from the damaged files in storage/lost/ with RocksDB tools; then run `wt-memory repair` (or `wt-memory repair --accept-loss` to accept the loss).{named}{lost}",
            a.missing().max(1),
            if a.missing() == 1 { "y was" } else { "ies were" },
            a.since
        )
    } else {
        format!("no memory is missing; run `wt-memory repair` to rebuild the indexes and clear this.{lost}")
    }
}

/// Looking after a store.
pub(super) const OPERATIONS: &[super::Registered] = &[
    super::entry::<Stats>(),
    super::entry::<Map>(),
    super::entry::<Count>(),
    super::entry::<Health>(),
    super::entry::<IndexReport>(),
    super::entry::<Audit>(),
    super::entry::<Dedup>(),
    super::entry::<Cleanup>(),
    super::entry::<Migrate>(),
    super::entry::<Reembed>(),
    super::entry::<Repair>(),
    super::entry::<StoreChecks>(),
    super::entry::<Warm>(),
];

/// Counts by type and tag, the importance histogram, the noise ratio.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stats;

impl Operation for Stats {
    const NAME: &'static str = "stats";
    type Answer = StatsReport;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<StatsReport> {
        Ok(stats(&direct.read(|s| Ok(s.records()?))?))
    }
}

/// The store's map for SessionStart (counts kept in step with writes; empty without a store).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Map;

impl Operation for Map {
    const NAME: &'static str = "map";
    type Answer = MemoryMap;
    const FROM_VIEW: bool = true;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<MemoryMap> {
        direct.read(|s| Ok(memory_map(&*s.rank_view()?)))
    }
}

/// How many memories (0 without a store).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Count;

impl Operation for Count {
    const NAME: &'static str = "count";
    type Answer = usize;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<usize> {
        direct.read(|s| Ok(s.count()))
    }
}

/// Opens (or creates) the store: that it opens is half of the check.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Health;

impl Operation for Health {
    const NAME: &'static str = "health";
    type Answer = HealthReport;
    const REPORTS_INTEGRITY: bool = true;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<HealthReport> {
        Ok(direct
            .peek(|s| Ok(health(s)))?
            .unwrap_or_else(|| health_without_store(&direct.project.store_dir)))
    }
}

/// The engine's index report (`health --index`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IndexReport;

impl Operation for IndexReport {
    const NAME: &'static str = "index_report";
    type Answer = serde_json::Value;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<serde_json::Value> {
        direct.read(|s| Ok(s.index_report()))
    }
}

/// Near-duplicates, and the memories to review (shown often, never used).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Audit {
    pub threshold: f64,
}

impl Operation for Audit {
    const NAME: &'static str = "audit";
    type Answer = dedup::Audit;
    fn validate(&self) -> Result<()> {
        super::check_unit("threshold", self.threshold)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<dedup::Audit> {
        let mut report = audit(&unheld(direct.read(|s| Ok(s.records()?))?), self.threshold)?;
        let days = crate::metrics::REVIEW_AFTER_DAYS;
        let used = direct.recorder().used_within(days).unwrap_or_default();
        report.review = direct.read(|s| super::to_review(s, &used, days))?;
        Ok(report)
    }
}

/// Merge near-duplicates; `None` when there is no store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Dedup {
    pub threshold: f64,
    pub dry_run: bool,
}

impl Operation for Dedup {
    const NAME: &'static str = "dedup";
    type Answer = Option<Deduped>;
    fn validate(&self) -> Result<()> {
        super::check_unit("threshold", self.threshold)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Option<Deduped>> {
        direct.change(|s| dedup(s, self.threshold, self.dry_run))
    }
}

/// Remove noise: low-importance or too-short memories.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cleanup {
    pub threshold: f32,
    pub min_length: usize,
    pub dry_run: bool,
}

impl Operation for Cleanup {
    const NAME: &'static str = "cleanup";
    type Answer = Cleaned;
    fn validate(&self) -> Result<()> {
        super::check_unit("threshold", self.threshold as f64)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Cleaned> {
        let (threshold, min_length, dry_run) = (self.threshold, self.min_length, self.dry_run);
        let done = direct.change(|s| cleanup(s, threshold, min_length, dry_run))?;
        Ok(done.unwrap_or(NOTHING_CLEANED))
    }
}

/// Run the pending migrations, by name rather than as a side effect of opening.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Migrate;

impl Operation for Migrate {
    const NAME: &'static str = "migrate";
    type Answer = Vec<MigrationState>;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Vec<MigrationState>> {
        let before = direct.options.migrate;
        direct.options.migrate = false;
        let out = direct.write(migrate);
        direct.options.migrate = before;
        out
    }
}

/// Re-embed every memory; answers how many, and the embedder used.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Reembed;

impl Operation for Reembed {
    const NAME: &'static str = "reembed";
    type Answer = (usize, String);
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<(usize, String)> {
        direct.write(|s| {
            let n = reembed(s)?;
            Ok((n, s.current_embedder().label().to_string()))
        })
    }
}

/// Rebuild the store's indexes; `None` when there is no store to repair.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Repair {
    pub accept_loss: bool,
}

impl Operation for Repair {
    const NAME: &'static str = "repair";
    type Answer = Option<RepairReport>;
    const REPORTS_INTEGRITY: bool = true;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Option<RepairReport>> {
        if !store::exists(&direct.project.store_dir) {
            return Ok(None);
        }
        // Repair opens the store itself, after setting its indexes aside.
        direct.store = None;
        Ok(Some(repair(&direct.project, self.accept_loss)?))
    }
}

/// For `doctor`: the store's own checks, when it exists and opens.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StoreChecks;

impl Operation for StoreChecks {
    const NAME: &'static str = "store_checks";
    type Answer = Option<super::checks::StoreChecks>;
    const REPORTS_INTEGRITY: bool = true;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Option<super::checks::StoreChecks>> {
        direct.peek(|s| Ok(super::checks::store_checks(s)))
    }
}

/// Open the store (when it exists) and load the model and the ranking view: a service's start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Warm;

impl Operation for Warm {
    const NAME: &'static str = "warm";
    type Answer = ();
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<()> {
        direct.peek(|s| {
            s.embed("wt-memory warm-up")?;
            Ok(s.rank_view()?)
        })?;
        Ok(())
    }
}

// Cluster previews are redacted as they are made (`dedup::preview`).
wt_memory_core::shows_no_memory!(
    StatsReport,
    MemoryMap,
    HealthReport,
    Deduped,
    Cleaned,
    MigrationState,
    super::checks::StoreChecks,
);
