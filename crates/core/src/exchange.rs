//! Export and import (format `wt-memory-export`, version 1, the previous Python system's format:
//! it reads our files and we read its).
//! Unlike the previous implementation, import keeps `created_at` and `importance`, and keeps the
//! source id when it is free, so ids stay stable across machines; `metadata.original_id` still
//! records the source for the dedup rule "skip a record whose id or original_id is known".

use crate::record::{parse_any_type, MemoryRecord, Redact};
use crate::store::{Inserted, NewMemory, Store};
use crate::trust::{Provenance, HELD_REASON, HELD_TAG, PROVENANCE, REVIEWED};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use wt_memory_foundation::hygiene;

pub const FORMAT: &str = "wt-memory-export";
pub const VERSION: u64 = 1;

#[derive(Debug, Serialize, Deserialize)]
pub struct ExportDoc {
    pub version: u64,
    pub format: String,
    #[serde(default)]
    pub project: String,
    #[serde(default)]
    pub exported_at: String,
    #[serde(default)]
    pub count: usize,
    #[serde(default)]
    pub records: Vec<serde_json::Value>,
}

/// Export every memory (oldest first, so an import replays history in order). Each record is
/// redacted again in every text field as the document is made ([`Redact`]), so a memory stored
/// before redaction covered it leaves the machine clean (and an undo snapshot holds no secret).
pub fn export(store: &Store, exclude_private: bool) -> anyhow::Result<serde_json::Value> {
    let mut records = store.records()?;
    records.reverse();
    if exclude_private {
        records.retain(|r| !r.has_tag("private"));
    }
    records.redact();
    Ok(serde_json::json!({
        "version": VERSION,
        "format": FORMAT,
        "project": store.project.name,
        "exported_at": Store::now(),
        "count": records.len(),
        "records": records,
    }))
}

/// Parse and validate an export document; the error text names the problem in the previous
/// implementation's words (`Invalid JSON: …`, `Unsupported version: 99 (only version 1 supported)`).
pub fn parse_doc(text: &str) -> Result<ExportDoc, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("Invalid JSON: {e}"))?;
    if !value.is_object() {
        return Err("Invalid export: the file holds JSON but not an object".into());
    }
    match value.get("format") {
        Some(serde_json::Value::String(f)) if f == FORMAT => {}
        Some(other) => return Err(format!("Unknown format: {other} (expected \"{FORMAT}\")")),
        None => return Err(format!("Unknown format: missing (expected \"{FORMAT}\")")),
    }
    match value.get("version") {
        Some(v) if v.as_u64() == Some(VERSION) => {}
        Some(other) => {
            return Err(format!(
                "Unsupported version: {other} (only version {VERSION} supported)"
            ))
        }
        None => {
            return Err(format!(
                "Unsupported version: missing (only version {VERSION} supported)"
            ))
        }
    }
    serde_json::from_value(value).map_err(|e| format!("Invalid export: {e}"))
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ImportReport {
    pub imported: usize,
    pub skipped: usize,
    pub errors: usize,
    /// Of those imported, held for review (a source not trusted yet, or what they say).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn parse_time(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// A record as it goes back into a store: same id (when free), created_at, importance, type,
/// tags, metadata, entities and flags; `content` is the record's content, already cleaned.
pub fn new_memory(rec: &MemoryRecord, content: &str) -> NewMemory {
    let mut new = NewMemory::new(content, parse_any_type(&rec.experience_type));
    new.tags = rec.tags.clone();
    new.metadata = rec.metadata.clone().into_iter().collect();
    new.entities = rec.entities.clone();
    new.is_failure = rec.is_failure;
    new.is_anomaly = rec.is_anomaly;
    // Where it came from and whether it was held or approved, as the record says: what a restore
    // puts back. An import replaces the first two and drops the approval ([`import_with`]).
    new.provenance = Provenance::parse(rec.metadata.get(PROVENANCE).map(String::as_str));
    if rec.has_tag(HELD_TAG) {
        new.hold = Some(
            rec.metadata
                .get(HELD_REASON)
                .cloned()
                .unwrap_or_else(|| "held where it was written".into()),
        );
    }
    new.reviewed = rec.metadata.get(REVIEWED).cloned();
    new.importance = rec.importance;
    new.created_at = parse_time(&rec.created_at);
    new.id = uuid::Uuid::parse_str(&rec.id).ok();
    new
}

/// Where an import's records come from: their provenance in this store, and a hold for all of
/// them (a teammate the user has not trusted yet).
#[derive(Debug, Clone, Default)]
pub struct Origin {
    pub provenance: Provenance,
    pub hold: Option<String>,
    /// The records come from another store of this user (a memory moved between the project's
    /// store and the personal one): they keep their provenance, hold and approval.
    pub own_store: bool,
}

impl Origin {
    /// An export file the user imports.
    pub fn file() -> Origin {
        Origin {
            provenance: Provenance::Import,
            hold: None,
            own_store: false,
        }
    }

    /// A memory moved from the user's other store (`promote`, `demote`).
    pub fn own_store() -> Origin {
        Origin {
            own_store: true,
            ..Origin::file()
        }
    }
}

/// Import records; with `dry_run` nothing is written and the counts say what would happen.
pub fn import(store: &Store, doc: &ExportDoc, dry_run: bool) -> anyhow::Result<ImportReport> {
    import_with(store, doc, dry_run, &Origin::file(), || Ok(()))
}

/// [`import`], calling `before_first_write` once, just before the first record is written (the
/// CLI takes its undo snapshot there, so an import that adds nothing takes none).
pub fn import_with(
    store: &Store,
    doc: &ExportDoc,
    dry_run: bool,
    origin: &Origin,
    mut before_first_write: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<ImportReport> {
    let existing = store.records()?;
    let mut known: HashSet<String> = HashSet::new();
    let mut known_content: HashSet<String> = HashSet::new();
    for r in &existing {
        known.insert(r.id.clone());
        if let Some(o) = r.metadata.get("original_id") {
            known.insert(o.clone());
        }
        known_content.insert(hygiene::content_hash(&r.content));
    }
    store.batch(|| {
        import_records(
            store,
            doc,
            dry_run,
            origin,
            known,
            known_content,
            &mut before_first_write,
        )
    })?
}

fn import_records(
    store: &Store,
    doc: &ExportDoc,
    dry_run: bool,
    origin: &Origin,
    mut known: HashSet<String>,
    mut known_content: HashSet<String>,
    before_first_write: &mut impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<ImportReport> {
    let mut report = ImportReport::default();
    let mut to_write: Vec<NewMemory> = Vec::new();
    for value in &doc.records {
        let Ok(rec) = serde_json::from_value::<MemoryRecord>(value.clone()) else {
            report.errors += 1;
            continue;
        };
        let origin_id = rec
            .metadata
            .get("original_id")
            .cloned()
            .unwrap_or_else(|| rec.id.clone());
        let content = hygiene::clean_content(&rec.content);
        if known.contains(&rec.id)
            || known.contains(&origin_id)
            || known_content.contains(&hygiene::content_hash(&content))
        {
            report.skipped += 1;
            continue;
        }
        if content.is_empty() {
            report.errors += 1;
            continue;
        }
        known.insert(rec.id.clone());
        known.insert(origin_id.clone());
        known_content.insert(hygiene::content_hash(&content));
        if dry_run {
            report.imported += 1;
            continue;
        }
        let mut new = new_memory(&rec, &content);
        new.metadata.insert("original_id".into(), origin_id);
        if !origin.own_store {
            // Whatever the file says of itself: it arrives as what brought it, unapproved here.
            new.provenance = origin.provenance.clone();
            new.reviewed = None;
            // The file's own words for why it was held are not kept: they are the writer's text.
            if new.hold.is_some() {
                new.hold = Some("held where it was written".into());
            }
        }
        if let Some(why) = &origin.hold {
            new.hold = Some(match new.hold.take() {
                Some(held_there) => format!("{why}; {held_there}"),
                None => why.clone(),
            });
        }
        to_write.push(new);
    }
    if to_write.is_empty() {
        return Ok(report);
    }
    before_first_write()?;
    // Embedded ahead, many texts per model run (what `insert` will embed: the redacted content).
    let per_round = crate::store::EMBED_BATCH * 8;
    for round in to_write.chunks(per_round) {
        let texts: Vec<String> = round.iter().map(|n| hygiene::redact(&n.content)).collect();
        store.prime_embeddings(&texts.iter().map(String::as_str).collect::<Vec<_>>());
        for new in round {
            match insert_record(store, new.clone())? {
                Some(ins) if ins.duplicate => report.skipped += 1,
                Some(ins) => {
                    report.imported += 1;
                    report.held += usize::from(ins.held.is_some());
                }
                None => report.errors += 1,
            }
        }
    }
    Ok(report)
}

/// Insert one record of a batch (import, restore). `Ok(None)`: this record failed and the caller
/// counts it; `Err`: an embedder problem that would fail every record, so the batch stops.
pub fn insert_record(store: &Store, new: NewMemory) -> anyhow::Result<Option<Inserted>> {
    match store.insert(new) {
        Ok(ins) => Ok(Some(ins)),
        Err(e)
            if matches!(
                e.downcast_ref::<wt_memory_foundation::error::Error>(),
                Some(wt_memory_foundation::error::Error::EmbedderMismatch { .. })
            ) =>
        {
            Err(e)
        }
        Err(_) => Ok(None),
    }
}
