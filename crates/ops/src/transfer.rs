//! Moving memories in and out: export, import, restore from an undo snapshot, seed files.

use super::{take_snapshot, Caller, Direct, Operation};
use serde::{Deserialize, Serialize};
use std::path::Path;
use wt_memory_core::exchange::{self, ImportReport};
use wt_memory_core::record::{parse_user_type, split_tags};
use wt_memory_core::snapshot::{self, Restored};
use wt_memory_core::store::{NewMemory, Store};
use wt_memory_core::trust;
use wt_memory_foundation::error::{bad_input, not_found, other, Error, Result};
use wt_memory_foundation::hygiene;

/// The export document of a project without a store.
pub fn empty_export(project: &str) -> serde_json::Value {
    serde_json::json!({"version": exchange::VERSION, "format": exchange::FORMAT, "project": project,
        "exported_at": Store::now(), "count": 0, "records": []})
}

pub fn export(store: &Store, exclude_private: bool) -> Result<serde_json::Value> {
    Ok(exchange::export(store, exclude_private)?)
}

/// An import: the document's text, and how to take the undo snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Import {
    /// The export document (text as read from the file).
    pub document: String,
    pub dry_run: bool,
    /// The operation named in the undo snapshot taken before the first write (`None`: no
    /// snapshot; `sync pull` takes one per pull, not one per source).
    pub snapshot_as: Option<String>,
    /// The teammate's sync source (`user/machine`) the document is from (`sync pull`); `None`: an
    /// export file the user imports. A source the user has not trusted yet has its memories held
    /// for review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The document holds memories moved from the user's other store (`promote`, `demote`):
    /// they keep their provenance and review.
    #[serde(default)]
    pub moved: bool,
}

/// An import's counts; a dry run says what would happen.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Imported {
    Done(ImportReport),
    DryRun {
        would_import: usize,
        would_skip: usize,
        errors: usize,
        dry_run: bool,
    },
}

impl Imported {
    pub fn report(&self) -> ImportReport {
        match self {
            Imported::Done(r) => r.clone(),
            Imported::DryRun {
                would_import,
                would_skip,
                errors,
                ..
            } => ImportReport {
                imported: *would_import,
                skipped: *would_skip,
                errors: *errors,
                held: 0,
            },
        }
    }
}

pub fn check_import(req: &Import) -> Result<exchange::ExportDoc> {
    exchange::parse_doc(&req.document).map_err(|message| Error::UnusableExport { message })
}

pub fn import(store: &Store, req: &Import) -> Result<Imported> {
    let doc = check_import(req)?;
    let origin = match &req.from {
        None if req.moved => exchange::Origin::own_store(),
        None => exchange::Origin::file(),
        Some(source) => exchange::Origin {
            provenance: trust::Provenance::Teammate(source.clone()),
            hold: (!trust::trusted_sources(store.dir()).contains(source))
                .then(|| trust::untrusted_source_reason(source)),
            own_store: false,
        },
    };
    let report = exchange::import_with(store, &doc, req.dry_run, &origin, || {
        match &req.snapshot_as {
            Some(op) => take_snapshot(store, op).map_err(anyhow::Error::new),
            None => Ok(()),
        }
    })?;
    Ok(if req.dry_run {
        Imported::DryRun {
            would_import: report.imported,
            would_skip: report.skipped,
            errors: report.errors,
            dry_run: true,
        }
    } else {
        Imported::Done(report)
    })
}

/// What `restore` did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RestoreOutcome {
    /// The snapshot restored.
    pub restored: snapshot::Info,
    /// The snapshot of the store taken first (`None` when the store was empty).
    pub undo: Option<snapshot::Info>,
    pub changes: Restored,
    /// Memories after the restore.
    pub count: usize,
}

/// Bring the store back to a snapshot (default: the newest), after snapshotting it as it is.
pub fn restore(store: &Store, name: Option<&str>) -> Result<RestoreOutcome> {
    let prefix = |e: anyhow::Error| other(format!("restore: {e:#}"));
    let target =
        snapshot::find(store.dir(), name).map_err(|e| not_found(format!("restore: {e:#}")))?;
    let records = snapshot::load(&target).map_err(prefix)?;
    let undo = snapshot::take(store, "restore")
        .map_err(|e| other(format!("restore: no undo snapshot, nothing changed: {e:#}")))?;
    let changes = snapshot::restore(store, &records).map_err(prefix)?;
    Ok(RestoreOutcome {
        restored: target,
        undo,
        changes,
        count: store.count(),
    })
}

#[derive(Deserialize)]
struct SeedFile {
    #[serde(default)]
    seeds: Vec<SeedEntry>,
}

#[derive(Deserialize)]
struct SeedEntry {
    #[serde(rename = "type", default = "default_seed_type")]
    ty: String,
    content: String,
    #[serde(default)]
    tags: serde_yaml::Value,
}

fn default_seed_type() -> String {
    "Learning".into()
}

/// What `seed` did (or would do).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Seeded {
    pub imported: usize,
    pub skipped: usize,
}

/// A seed file's memories, checked before the store opens.
pub struct CheckedSeeds(Vec<NewMemory>);

/// The largest seed file read.
pub const MAX_SEED_BYTES: u64 = 16 * 1024 * 1024;

/// A seed file's text, read once by the process that was given its path.
pub fn read_seed_file(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SEED_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| bad_input(format!("seed: cannot read {}: {e}", path.display())))?;
    if text.len() as u64 > MAX_SEED_BYTES {
        return Err(bad_input(format!(
            "seed: {} is over {} MiB; split it",
            path.display(),
            MAX_SEED_BYTES >> 20
        )));
    }
    Ok(text)
}

/// A seed file's text checked: every seed has a known type (`path` names it in messages).
pub fn check_seed_text(text: &str, path: &Path) -> Result<CheckedSeeds> {
    let parsed: SeedFile = serde_yaml::from_str(text).map_err(|e| {
        bad_input(format!(
            "seed: {} is not valid seed YAML: {e}",
            path.display()
        ))
    })?;
    let mut out = Vec::new();
    for s in parsed.seeds {
        let (ty, _) = parse_user_type(&s.ty).map_err(|e| bad_input(format!("seed: {e}")))?;
        let mut tags = match &s.tags {
            serde_yaml::Value::String(t) => split_tags(t),
            serde_yaml::Value::Sequence(seq) => seq
                .iter()
                .filter_map(|v| v.as_str())
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        tags.push("source:seed".into());
        let mut new = NewMemory::new(&hygiene::clean_content(&s.content), ty);
        new.tags = tags;
        // A seed file is in the repository: whoever got a change merged wrote it.
        new.provenance = trust::Provenance::Import;
        out.push(new);
    }
    Ok(CheckedSeeds(out))
}

/// Store the seeds whose content is not stored yet.
pub fn seed(store: &Store, seeds: CheckedSeeds, dry_run: bool) -> Result<Seeded> {
    let (mut imported, mut skipped) = (0, 0);
    for new in seeds.0 {
        if new.content.is_empty() || store.find_same_content(&new.content)?.is_some() {
            skipped += 1;
            continue;
        }
        if !dry_run {
            store.insert(new)?;
        }
        imported += 1;
    }
    Ok(Seeded { imported, skipped })
}

/// Moving memories in and out.
pub(super) const OPERATIONS: &[super::Registered] = &[
    super::entry::<Export>(),
    super::entry::<Import>(),
    super::entry::<Restore>(),
    super::entry::<Seed>(),
];

/// The export document (`wt-memory-export`, version 1).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Export {
    pub exclude_private: bool,
}

impl Operation for Export {
    const NAME: &'static str = "export";
    type Answer = serde_json::Value;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<serde_json::Value> {
        let name = direct.project.name.clone();
        let doc = direct.peek(|s| export(s, self.exclude_private))?;
        Ok(doc.unwrap_or_else(|| empty_export(&name)))
    }
}

impl Operation for Import {
    const NAME: &'static str = "import";
    type Answer = Imported;
    fn validate(&self) -> Result<()> {
        if let Some(source) = &self.from {
            trust::check_source_name(source).map_err(bad_input)?;
        }
        check_import(self).map(drop)
    }
    fn run(&self, direct: &mut Direct, caller: &Caller) -> Result<Imported> {
        let done = direct.write(|s| import(s, self))?;
        if let Imported::Done(report) = &done {
            // Sync pulls through import; everything else that imports is an import.
            let source = match caller.source.as_deref() {
                Some("sync") => "sync",
                _ => "import",
            };
            direct.record_write(source, None, report.imported);
        }
        Ok(done)
    }
}

/// Put back an undo snapshot (the newest, or the one named).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Restore {
    pub name: Option<String>,
}

impl Operation for Restore {
    const NAME: &'static str = "restore";
    type Answer = RestoreOutcome;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<RestoreOutcome> {
        snapshot::find(&direct.project.store_dir, self.name.as_deref())
            .map_err(|e| not_found(format!("restore: {e:#}")))?;
        direct.write(|s| restore(s, self.name.as_deref()))
    }
}

/// A seed file's memories, as the client read the file (the service never opens a client's path).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Seed {
    pub text: String,
    /// The file's name, for messages.
    pub file: std::path::PathBuf,
    pub dry_run: bool,
}

impl Seed {
    /// Read the seed file at `path`.
    pub fn from_file(path: &Path, dry_run: bool) -> Result<Seed> {
        Ok(Seed {
            text: read_seed_file(path)?,
            file: path.to_path_buf(),
            dry_run,
        })
    }
}

impl Operation for Seed {
    const NAME: &'static str = "seed";
    type Answer = Seeded;
    fn validate(&self) -> Result<()> {
        check_seed_text(&self.text, &self.file).map(drop)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Seeded> {
        let seeds = check_seed_text(&self.text, &self.file)?;
        let done = direct.write(|s| seed(s, seeds, self.dry_run))?;
        if !self.dry_run {
            direct.record_write("seed", None, done.imported);
        }
        Ok(done)
    }
}

wt_memory_core::shows_no_memory!(Imported, RestoreOutcome, Seeded);
