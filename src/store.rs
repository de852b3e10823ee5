//! The store: one shodh-memory engine per project, opened under the project lock.
//!
//! This is the one narrow interface to the engine (open, all, get, insert, update, delete, embed).
//! Everything above it (ranking, dedup, export) works on [`MemoryRecord`]s and embeddings; the
//! store is kept open by the resident service (`crate::daemon`) or opened per process, and the
//! front ends never see which.

use crate::hygiene;
use crate::integrity::{self, Alert, IdDigest, Record};
use crate::lock::{self, ProjectLock};
use crate::model::{self, Assets};
use crate::project::Project;
use crate::record::{rfc3339, MemoryRecord};
use anyhow::{bail, Context as _};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use shodh_memory::memory::{
    Experience, ExperienceType, ForgetCriteria, Memory, MemoryConfig, MemoryId, MemorySystem,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Which embedder produced a store's vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmbedderKind {
    /// MiniLM-L6 (neural, semantic).
    MinilmL6,
    /// The engine's hash fallback (not semantic).
    Hash,
}

impl EmbedderKind {
    pub fn label(self) -> &'static str {
        match self {
            EmbedderKind::MinilmL6 => "minilm-l6 (neural)",
            EmbedderKind::Hash => "hash fallback (NOT semantic)",
        }
    }
}

/// `<store>/wt-memory.json`: what wrote this store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoreMeta {
    pub embedder: EmbedderKind,
    pub created_by: String,
}

const META_FILE: &str = "wt-memory.json";

pub fn read_meta(store_dir: &Path) -> Option<StoreMeta> {
    let text = std::fs::read_to_string(store_dir.join(META_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Does a store exist for this project (any engine files on disk)?
pub fn exists(store_dir: &Path) -> bool {
    store_dir.join("storage").is_dir()
}

/// A memory to write.
#[derive(Debug, Clone)]
pub struct NewMemory {
    pub content: String,
    pub experience_type: ExperienceType,
    pub tags: Vec<String>,
    pub metadata: HashMap<String, String>,
    pub entities: Vec<String>,
    pub is_failure: bool,
    pub is_anomaly: bool,
    pub importance: f32,
    pub created_at: Option<DateTime<Utc>>,
    /// Keep this id (import), else a new one.
    pub id: Option<uuid::Uuid>,
}

impl NewMemory {
    pub fn new(content: &str, experience_type: ExperienceType) -> Self {
        NewMemory {
            content: content.to_string(),
            experience_type,
            tags: Vec::new(),
            metadata: HashMap::new(),
            entities: Vec::new(),
            is_failure: false,
            is_anomaly: false,
            importance: crate::record::DEFAULT_IMPORTANCE,
            created_at: None,
            id: None,
        }
    }
}

impl NewMemory {
    /// Every text field with secrets redacted: content, tags, metadata keys and values (a value
    /// under a secret-named key is redacted whole), entities. [`Store::insert`] applies it to
    /// every write, so remember, MCP, the hooks, seed, import and `sync pull` are all covered.
    pub fn redacted(mut self) -> Self {
        self.content = hygiene::redact(&self.content);
        self.tags = self.tags.iter().map(|t| hygiene::redact(t)).collect();
        self.metadata = self
            .metadata
            .iter()
            .map(|(k, v)| hygiene::redact_pair(k, v))
            .collect();
        self.entities = self.entities.iter().map(|e| hygiene::redact(e)).collect();
        self
    }
}

/// Outcome of a write.
#[derive(Debug, Clone, PartialEq)]
pub struct Inserted {
    pub id: String,
    /// The same (normalised) content was already stored; `id` is that memory.
    pub duplicate: bool,
}

pub struct Store {
    ms: MemorySystem,
    pub project: Project,
    embedder_checked: OnceLock<Result<EmbedderKind, String>>,
    /// The integrity record (see [`crate::integrity`]), kept in step with every write.
    integrity: Mutex<Option<Record>>,
    /// The recorded ids replayed from the journal (`Some(None)`: it cannot be trusted), loaded
    /// only while an alert stands.
    recorded_ids: Mutex<Option<Option<std::collections::HashSet<String>>>>,
    /// Normalised-content hash of every memory, built by the first write from one read of the
    /// store and kept in step with every write and delete: dedup-on-write is a lookup, not a
    /// scan, so an import is linear and a resident service never re-reads the store to write.
    content_index: Mutex<Option<ContentIndex>>,
    /// Every memory as last read, until the next write: a resident service answers queries
    /// without re-reading the store each time.
    cached_all: Mutex<Option<Vec<Arc<Memory>>>>,
    /// Every memory as a record with its lexical statistics, until the next write: a query
    /// scores the store without converting or tokenising it again.
    rank_view: Mutex<Option<Arc<RankView>>>,
    /// Our run of the model and its cache, shared with a daemon's connections.
    embedder: Arc<Embedder>,
    /// Inside [`Store::batch`]: the write-ahead log is synced once at the end, not per write.
    batching: std::sync::atomic::AtomicBool,
    /// Written since the last [`Store::checkpoint`]: the engine's memtables and its vector index
    /// file lag behind the (durable) write-ahead log.
    dirty: std::sync::atomic::AtomicBool,
    // Declared last: dropped after the engine has flushed and closed.
    _lock: ProjectLock,
}

impl Drop for Store {
    /// Close with the engine's files up to date (see [`Store::checkpoint`]); what this cannot
    /// flush is still in the synced log.
    fn drop(&mut self) {
        if let Err(e) = self.checkpoint() {
            integrity::log("WARN", &format!("closing {}: {e:#}", self.dir().display()));
        }
    }
}

/// The store as ranking sees it: memories, their records, and the corpus of all of them.
/// Kept in step with each write and delete, so neither rebuilds it.
#[derive(Clone, Default)]
pub struct RankView {
    pub memories: Vec<Arc<Memory>>,
    pub records: Vec<MemoryRecord>,
    pub corpus: crate::rank::Corpus,
    /// Each memory's embedding norm (a query computes only dot products).
    pub norms: Vec<f64>,
    /// Every memory's embedding, one row of [`Self::dim`] after another (zeros for a memory
    /// without one). A query reads them in order: measured at 10k memories, a pass over rows in
    /// one block takes 1.1 ms, over the memories' own scattered vectors 3.8 ms.
    vectors: Vec<f32>,
    dim: usize,
    /// Older memory id -> the memory that replaces it (`remember --supersedes`).
    pub superseded_by: HashMap<String, String>,
    /// The norms of each memory's key vectors, in the order of [`key_vectors_of`].
    pub key_norms: Vec<Vec<f64>>,
}

/// Our run of the engine's model (see [`crate::embed`]), loaded on first use, and the embeddings
/// of recently embedded texts (a file read twice, a prompt asked again, a write embedded ahead).
pub struct Embedder {
    assets: Option<Assets>,
    minilm: OnceLock<Option<crate::embed::MiniLm>>,
    cache: Mutex<HashMap<String, Vec<f32>>>,
    /// Texts the model has embedded (cache misses), for tests and the daemon's figures.
    model_runs: std::sync::atomic::AtomicU64,
}

impl Embedder {
    /// None without the model or when it does not load (the engine embeds then).
    fn minilm(&self) -> Option<&crate::embed::MiniLm> {
        self.minilm
            .get_or_init(|| {
                let assets = self.assets.as_ref()?;
                crate::embed::MiniLm::load(assets)
                    .map_err(|e| integrity::log("WARN", &format!("{e:#}; the engine embeds")))
                    .ok()
            })
            .as_ref()
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<f32>>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The model's embedding of `text`, from the cache when it is there (needs the model).
    fn embed(&self, text: &str) -> anyhow::Result<Vec<f32>> {
        if let Some(hit) = self.lock_cache().get(text) {
            return Ok(hit.clone());
        }
        let model = self
            .minilm()
            .ok_or_else(|| anyhow::anyhow!("the model is not loaded"))?;
        let embedding = model.embed(text)?;
        self.model_runs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut cache = self.lock_cache();
        if cache.len() >= EMBED_CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(text.to_string(), embedding.clone());
        Ok(embedding)
    }

    /// How many texts the model has embedded (the cache answered the rest).
    pub fn model_runs(&self) -> u64 {
        self.model_runs.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Embed `texts` into the cache now, so that the requests which need them find them there:
    /// [`EMBED_BATCH`] texts per model run. Without our model run (hash embeddings) there is
    /// nothing to gain, and each request embeds as usual.
    pub fn prime(&self, texts: &[&str]) {
        let Some(model) = self.minilm() else {
            return;
        };
        let mut todo: Vec<&str> = {
            let mut cache = self.lock_cache();
            let todo: Vec<&str> = texts
                .iter()
                .copied()
                .filter(|t| !cache.contains_key(*t))
                .take(EMBED_CACHE_ENTRIES)
                .collect();
            if cache.len() + todo.len() > EMBED_CACHE_ENTRIES {
                cache.clear();
            }
            todo
        };
        todo.sort_unstable();
        todo.dedup();
        // Texts of similar length share a run: less padding to compute.
        todo.sort_by_key(|t| t.len());
        for chunk in todo.chunks(EMBED_BATCH) {
            let Ok(vectors) = model.embed_many(chunk) else {
                return;
            };
            self.model_runs
                .fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
            let mut cache = self.lock_cache();
            for (text, v) in chunk.iter().zip(vectors) {
                cache.insert(text.to_string(), v);
            }
        }
    }
}

/// A memory's embedding (empty when it has none).
pub fn embedding_of(memory: &Memory) -> &[f32] {
    memory.experience.embeddings.as_deref().unwrap_or(&[])
}

/// The embeddings of a memory's retrieval keys, concatenated (empty when it has none). The engine
/// has no field for extra text vectors; its multimodal slot `image_embeddings`, which it stores
/// and never reads, holds them, so they are written once with the memory and never recomputed
/// when a store opens.
pub fn key_vectors_of(memory: &Memory) -> &[f32] {
    memory.experience.image_embeddings.as_deref().unwrap_or(&[])
}

impl RankView {
    fn new(memories: Vec<Arc<Memory>>) -> RankView {
        let mut view = RankView::default();
        if let Some(dim) = memories
            .iter()
            .map(|m| embedding_of(m).len())
            .find(|&d| d > 0)
        {
            view.vectors.reserve_exact(memories.len() * dim);
        }
        for m in memories {
            view.push(m);
        }
        view
    }

    fn push(&mut self, memory: Arc<Memory>) {
        let record = MemoryRecord::from_memory(&memory);
        if let Some(older) = record.metadata.get(crate::record::SUPERSEDES) {
            self.superseded_by.insert(older.clone(), record.id.clone());
        }
        self.corpus.push(&record.lexical_text());
        self.records.push(record);
        let embedding = embedding_of(&memory);
        if self.dim == 0 && !embedding.is_empty() {
            self.dim = embedding.len();
            self.vectors.resize(self.norms.len() * self.dim, 0.0);
        }
        if self.vectors.capacity() < self.vectors.len() + self.dim {
            // Grow by an eighth, not double: at 10k memories the block is 15 MB.
            let rows = (self.norms.len() / 8).max(64);
            self.vectors.reserve_exact(rows * self.dim);
        }
        if embedding.len() == self.dim {
            self.vectors.extend_from_slice(embedding);
            self.norms.push(crate::rank::norm(embedding));
        } else {
            // No embedding, or one of another length: it matches nothing, as before.
            self.vectors.resize(self.vectors.len() + self.dim, 0.0);
            self.norms.push(0.0);
        }
        let keys = key_vectors_of(&memory);
        self.key_norms.push(if embedding.is_empty() {
            Vec::new()
        } else {
            keys.chunks_exact(embedding.len())
                .map(crate::rank::norm)
                .collect()
        });
        self.memories.push(memory);
    }

    /// Memory `i`'s embedding (empty when it has none).
    pub fn embedding(&self, i: usize) -> &[f32] {
        if self.norms[i] == 0.0 {
            &[]
        } else {
            &self.vectors[i * self.dim..(i + 1) * self.dim]
        }
    }

    fn remove(&mut self, id: &str) {
        if let Some(i) = self.records.iter().position(|r| r.id == id) {
            // A forgotten replacement no longer hides what it replaced.
            self.superseded_by.retain(|_, newer| newer != id);
            self.corpus.remove(i);
            self.records.remove(i);
            self.norms.remove(i);
            self.vectors.drain(i * self.dim..(i + 1) * self.dim);
            self.key_norms.remove(i);
            self.memories.remove(i);
        }
    }
}

/// Texts per model run in [`Store::prime_embeddings`].
pub const EMBED_BATCH: usize = 8;

/// How many texts [`Store::embed`] remembers.
const EMBED_CACHE_ENTRIES: usize = 512;

/// Content hash -> id, and back.
#[derive(Default)]
struct ContentIndex {
    id_of: HashMap<String, String>,
    hash_of: HashMap<String, String>,
}

impl ContentIndex {
    fn add(&mut self, hash: String, id: String) {
        self.hash_of.insert(id.clone(), hash.clone());
        self.id_of.insert(hash, id);
    }

    fn remove(&mut self, id: &str) {
        if let Some(hash) = self.hash_of.remove(id) {
            if self.id_of.get(&hash).is_some_and(|i| i == id) {
                self.id_of.remove(&hash);
            }
        }
    }
}

/// How long to wait for the project lock (`WT_MEMORY_LOCK_WAIT_SECS`).
fn lock_wait() -> std::time::Duration {
    crate::config::get().lock_wait
}

const BM25_DIR: &str = "bm25_index";
const VECTOR_DIR: &str = "vector_index";

/// What `wt-memory repair` did and found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepairReport {
    /// Indexes set aside and rebuilt by the engine.
    pub rebuilt: Vec<String>,
    pub found: u64,
    /// Memories the integrity record expected.
    pub expected: u64,
    /// Recorded memories missing (accepted as lost with `accept_loss`).
    pub missing: u64,
    pub vector_index_ok: bool,
    /// The alert standing before the repair.
    pub previous_alert: Option<Alert>,
    /// The alert still standing (memories missing and not accepted).
    pub alert: Option<Alert>,
}

/// Open the engine. A lexical (BM25) index that does not open is derived data: it is set aside
/// and the engine rebuilds it from the stored memories, so it never makes the memories unreadable.
fn open_engine(dir: &Path) -> anyhow::Result<MemorySystem> {
    let config = || MemoryConfig {
        storage_path: dir.to_path_buf(),
        ..MemoryConfig::default()
    };
    let first = MemorySystem::new(config(), None);
    let err = match first {
        Ok(ms) => return Ok(ms),
        Err(e) => format!("{e:#}"),
    };
    let bm25 = dir.join(BM25_DIR);
    let lexical = err.contains("hybrid search engine") || err.contains("BM25");
    if !lexical || !bm25.exists() {
        bail!("cannot open the memory store at {}: {err}", dir.display());
    }
    let aside = dir.join(format!("{BM25_DIR}.damaged"));
    let _ = std::fs::remove_dir_all(&aside);
    std::fs::rename(&bm25, &aside).with_context(|| {
        format!(
            "the lexical index of {} is damaged and cannot be moved aside; run `wt-memory repair`",
            dir.display()
        )
    })?;
    match MemorySystem::new(config(), None) {
        Ok(ms) => {
            integrity::log(
                "INFO",
                &format!(
                    "rebuilt the damaged lexical index of {} from the stored memories ({})",
                    dir.display(),
                    hygiene::truncate_with_ellipsis(&err, 200)
                ),
            );
            let _ = std::fs::remove_dir_all(&aside);
            Ok(ms)
        }
        Err(e) => bail!(
            "cannot open the memory store at {} (its lexical index was damaged and has been moved to {}): {}; run `wt-memory repair`",
            dir.display(),
            aside.display(),
            hygiene::truncate_with_ellipsis(&format!("{e:#}"), 300)
        ),
    }
}

impl Store {
    /// Open (creating if needed) the project's store, waiting for its lock.
    pub fn open(project: &Project) -> anyhow::Result<Store> {
        Self::open_with_wait(project, lock_wait())
    }

    pub fn open_with_wait(project: &Project, wait: std::time::Duration) -> anyhow::Result<Store> {
        let lock = ProjectLock::acquire(&lock::store_lock_path(project), wait)?;
        Self::open_locked(project, lock)
    }

    fn open_locked(project: &Project, lock: ProjectLock) -> anyhow::Result<Store> {
        std::fs::create_dir_all(&project.store_dir)
            .with_context(|| format!("cannot create {}", project.store_dir.display()))?;
        // The engine's environment was set once, at process start (config::prepare_process).
        let assets = crate::config::engine_assets().cloned();
        let ms = open_engine(&project.store_dir)?;
        let store = Store {
            ms,
            project: project.clone(),
            embedder_checked: OnceLock::new(),
            integrity: Mutex::new(None),
            recorded_ids: Mutex::new(None),
            content_index: Mutex::new(None),
            cached_all: Mutex::new(None),
            rank_view: Mutex::new(None),
            embedder: Arc::new(Embedder {
                assets,
                minilm: OnceLock::new(),
                cache: Mutex::new(HashMap::new()),
                model_runs: Default::default(),
            }),
            batching: std::sync::atomic::AtomicBool::new(false),
            dirty: std::sync::atomic::AtomicBool::new(false),
            _lock: lock,
        };
        store.check_at_open()?;
        Ok(store)
    }

    /// Ids of every memory (a whole-store read).
    fn ids(&self) -> anyhow::Result<Vec<String>> {
        Ok(self
            .ms
            .get_all_memories()
            .map_err(|e| anyhow::anyhow!("cannot read memories: {e:#}"))?
            .iter()
            .map(|m| m.id.0.to_string())
            .collect())
    }

    fn integrity(&self) -> std::sync::MutexGuard<'_, Option<Record>> {
        self.integrity.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open-time check, cheap unless something happened: a store without a record gets one (one
    /// read of the store, once); new files in `storage/lost/` mean the engine has just repaired
    /// the store, so only then is the store counted against the record. A standing alert is
    /// queued as this process's warning.
    fn check_at_open(&self) -> anyhow::Result<()> {
        let dir = self.dir().clone();
        let lost = integrity::lost_files(&dir);
        let Some(mut rec) = integrity::read(&dir) else {
            let ids = self.ids()?;
            let rec = self.rebaseline(&ids, lost)?;
            *self.integrity() = Some(rec);
            return Ok(());
        };
        let new: Vec<String> = lost
            .into_iter()
            .filter(|f| !rec.lost_seen.contains(f))
            .collect();
        if !new.is_empty() {
            let ids = self.ids()?;
            let mut alert = self.compare(&rec, &ids).unwrap_or_else(|| Alert {
                since: Store::now(),
                expected: rec.count,
                found: ids.len() as u64,
                ids_differ: false,
                lost_files: Vec::new(),
                missing_ids: Some(Vec::new()),
            });
            if let Some(previous) = rec.alert.take() {
                alert.since = previous.since;
                alert.lost_files = previous.lost_files;
            }
            alert.lost_files.extend(new.iter().cloned());
            rec.lost_seen.extend(new);
            self.raise(&mut rec, alert);
        }
        if let Some(a) = &rec.alert {
            integrity::set_warning(a.warning(&self.project.name));
        }
        *self.integrity() = Some(rec);
        Ok(())
    }

    /// A new record (and journal) for the store as it is now.
    fn rebaseline(&self, ids: &[String], lost_seen: Vec<String>) -> anyhow::Result<Record> {
        let rec = Record::new(ids.iter().map(String::as_str), lost_seen);
        *self.recorded_ids.lock().unwrap_or_else(|e| e.into_inner()) = None;
        integrity::journal_reset(self.dir(), ids.iter().map(String::as_str))
            .context("cannot write the integrity journal")?;
        integrity::write(self.dir(), &rec).context("cannot write the integrity record")?;
        Ok(rec)
    }

    /// The store's ids against the record: an alert when recorded memories are missing (named
    /// when the journal can tell which), `None` when all are there.
    fn compare(&self, rec: &Record, ids: &[String]) -> Option<Alert> {
        let found = ids.len() as u64;
        let digest = IdDigest::of(ids.iter().map(String::as_str));
        if found == rec.count && digest == rec.id_digest() {
            return None;
        }
        let missing_ids = integrity::journal_ids(self.dir(), rec).map(|expected| {
            let have: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
            let mut v: Vec<String> = expected
                .into_iter()
                .filter(|id| !have.contains(id.as_str()))
                .collect();
            v.sort();
            v
        });
        let alert = Alert {
            since: Store::now(),
            expected: rec.count,
            found,
            ids_differ: true,
            lost_files: Vec::new(),
            missing_ids,
        };
        (alert.missing() > 0).then_some(alert)
    }

    /// Record a new alert: saved in the record, one line in the log, and this process's warning.
    fn raise(&self, rec: &mut Record, alert: Alert) {
        integrity::log("ERROR", &alert.summary(&self.project.name));
        integrity::set_warning(alert.warning(&self.project.name));
        rec.alert = Some(alert);
        let _ = integrity::write(self.dir(), rec);
    }

    /// A whole-store read found these memories: fewer than recorded is a loss (free, since the
    /// caller has read the store anyway; the rest of the check runs only then).
    fn note_count(&self, all: &[Arc<Memory>]) {
        let mut guard = self.integrity();
        let Some(rec) = guard.as_mut() else { return };
        if rec.alert.is_some() {
            return;
        }
        if (all.len() as u64) < rec.count {
            let ids: Vec<String> = all.iter().map(|m| m.id.0.to_string()).collect();
            if let Some(alert) = self.compare(rec, &ids) {
                self.raise(rec, alert);
            }
            return;
        }
        // Keep the journal short: once it has grown well past one line per memory, and the
        // store matches the record, rewrite it with the current ids.
        let journal_len = std::fs::metadata(self.dir().join(integrity::JOURNAL))
            .map(|m| m.len())
            .unwrap_or(0);
        if journal_len > 64 * (rec.count + 64) && all.len() as u64 == rec.count {
            let ids: Vec<String> = all.iter().map(|m| m.id.0.to_string()).collect();
            if IdDigest::of(ids.iter().map(String::as_str)) == rec.id_digest() {
                let _ = integrity::journal_reset(self.dir(), ids.iter().map(String::as_str));
            }
        }
    }

    /// One memory added or removed: keep the record in step (O(1): a line appended to the
    /// journal and a small atomic write). While memories are missing, a write of an id the record
    /// already holds (a lost memory being restored) leaves the record as it is.
    fn record_write(&self, id: &str, added: bool) -> anyhow::Result<()> {
        let mut guard = self.integrity();
        let Some(rec) = guard.as_mut() else {
            return Ok(());
        };
        if rec.alert.is_some() {
            let mut cache = self.recorded_ids.lock().unwrap_or_else(|e| e.into_inner());
            let recorded = cache.get_or_insert_with(|| integrity::journal_ids(self.dir(), rec));
            if let Some(recorded) = recorded.as_mut() {
                if recorded.contains(id) == added {
                    return Ok(());
                }
                if added {
                    recorded.insert(id.to_string());
                } else {
                    recorded.remove(id);
                }
            }
        }
        rec.apply(id, added);
        integrity::journal_append(self.dir(), id, added)
            .context("cannot update the integrity journal")?;
        // Inside a batch an addition leaves the record to the batch's end: the journal already
        // holds the id, and a record behind the store reads as "more than recorded", never as a
        // loss. A removal is recorded at once, before the memory goes.
        if !added || !self.batching.load(std::sync::atomic::Ordering::SeqCst) {
            integrity::write(self.dir(), rec).context("cannot update the integrity record")?;
        }
        Ok(())
    }

    /// The one-line warning of a standing integrity alert (a daemon attaches it to every answer,
    /// as a process that opens the store prints it once).
    pub fn standing_warning(&self) -> Option<String> {
        self.integrity()
            .as_ref()
            .and_then(|rec| rec.alert.as_ref())
            .map(|a| a.warning(&self.project.name))
    }

    /// Count the store against its record (a whole-store read; `health`, `doctor`).
    /// A loss becomes a standing alert; returns the standing alert, if any.
    pub fn verify(&self) -> anyhow::Result<Option<Alert>> {
        let ids = self.ids()?;
        let mut guard = self.integrity();
        let Some(rec) = guard.as_mut() else {
            return Ok(None);
        };
        let now = self.compare(rec, &ids);
        if let Some(mut alert) = rec.alert.clone() {
            alert.expected = rec.count;
            alert.found = ids.len() as u64;
            alert.missing_ids = Some(Vec::new());
            alert.ids_differ = false;
            if let Some(n) = &now {
                alert.ids_differ = n.ids_differ;
                alert.missing_ids = n.missing_ids.clone();
            }
            rec.alert = Some(alert.clone());
            let _ = integrity::write(self.dir(), rec);
            return Ok(Some(alert));
        }
        if let Some(alert) = now {
            self.raise(rec, alert.clone());
            return Ok(Some(alert));
        }
        let found = ids.len() as u64;
        if found != rec.count || IdDigest::of(ids.iter().map(String::as_str)) != rec.id_digest() {
            // More than recorded (a write whose record update did not happen): not a loss.
            *rec = self.rebaseline(&ids, rec.lost_seen.clone())?;
        }
        Ok(None)
    }

    /// `wt-memory repair`: set the derived indexes aside (the lexical BM25 index and the vector
    /// index), reopen so the engine rebuilds both from the stored memories, and count the store
    /// against its record. The alert is cleared when no recorded memory is missing (restored, or
    /// never lost), or with `accept_loss` (the store's current contents become the record).
    pub fn repair(project: &Project, accept_loss: bool) -> anyhow::Result<(Store, RepairReport)> {
        let lock = ProjectLock::acquire(&lock::store_lock_path(project), lock_wait())?;
        let dir = &project.store_dir;
        let aside = dir.join(format!("repair-{}", Utc::now().format("%Y%m%dT%H%M%S%.3f")));
        let mut rebuilt = Vec::new();
        for (sub, what) in [
            (BM25_DIR, "lexical index (bm25_index)"),
            (VECTOR_DIR, "vector index (vector_index)"),
        ] {
            if dir.join(sub).exists() {
                std::fs::create_dir_all(&aside)?;
                std::fs::rename(dir.join(sub), aside.join(sub))
                    .with_context(|| format!("cannot move {sub} aside"))?;
                rebuilt.push(what.to_string());
            }
        }
        let store = Self::open_locked(project, lock).with_context(|| {
            format!(
                "the store does not open even without its indexes (they are in {})",
                aside.display()
            )
        })?;
        let _ = std::fs::remove_dir_all(&aside);
        let ids = store.ids()?;
        let vector_ok = store
            .ms
            .verify_index_integrity()
            .map(|r| r.orphaned_count == 0)
            .unwrap_or(false);
        let mut guard = store.integrity();
        let rec = match guard.take() {
            Some(r) => r,
            None => store.rebaseline(&ids, integrity::lost_files(store.dir()))?,
        };
        let expected = rec.count;
        let previous = rec.alert.clone();
        let missing = store.compare(&rec, &ids);
        let cleared = missing.is_none() || accept_loss;
        let rec = if cleared {
            integrity::take_warning();
            store.rebaseline(&ids, integrity::lost_files(store.dir()))?
        } else {
            let mut rec = rec;
            let mut alert = missing.clone().expect("not cleared");
            if let Some(p) = &previous {
                alert.since = p.since.clone();
                alert.lost_files = p.lost_files.clone();
            }
            rec.alert = Some(alert);
            integrity::write(store.dir(), &rec).context("cannot write the integrity record")?;
            rec
        };
        let alert = rec.alert.clone();
        *guard = Some(rec);
        drop(guard);
        let report = RepairReport {
            rebuilt,
            found: ids.len() as u64,
            expected,
            missing: missing.as_ref().map_or(0, Alert::missing),
            vector_index_ok: vector_ok,
            previous_alert: previous,
            alert,
        };
        Ok((store, report))
    }

    pub fn dir(&self) -> &PathBuf {
        &self.project.store_dir
    }

    pub fn assets(&self) -> Option<&Assets> {
        self.embedder.assets.as_ref()
    }

    /// The embedder actually producing vectors in this process. With the model present it is
    /// checked once against the hash fallback, because ONNX failures fall back silently.
    pub fn current_embedder(&self) -> EmbedderKind {
        if self.embedder.assets.is_none() {
            return EmbedderKind::Hash;
        }
        if self.embedder.minilm().is_some() {
            return EmbedderKind::MinilmL6;
        }
        let probe = "wt-memory embedder probe: kubernetes pods get OOMKilled";
        let neural = self.ms.compute_embedding(probe);
        let hash = shodh_memory::embeddings::minilm::MiniLMEmbedder::new_simplified(
            shodh_memory::embeddings::minilm::EmbeddingConfig::default(),
        )
        .and_then(|h| {
            use shodh_memory::embeddings::Embedder;
            h.encode(probe)
        });
        match (neural, hash) {
            (Ok(n), Ok(h)) if crate::rank::cosine(&n, &h) > 0.999 => EmbedderKind::Hash,
            (Ok(_), _) => EmbedderKind::MinilmL6,
            (Err(_), _) => EmbedderKind::Hash,
        }
    }

    /// Make sure vectors written or compared now come from the embedder that wrote the store.
    /// Records the embedder of a new store. Called before anything that embeds.
    pub fn ensure_embedder(&self) -> anyhow::Result<EmbedderKind> {
        let res = self
            .embedder_checked
            .get_or_init(|| self.check_embedder().map_err(|e| format!("{e:#}")));
        res.clone()
            .map_err(|message| crate::error::Error::EmbedderMismatch { message }.into())
    }

    fn check_embedder(&self) -> anyhow::Result<EmbedderKind> {
        let current = self.current_embedder();
        let recorded = match read_meta(self.dir()) {
            Some(meta) => Some(meta.embedder),
            None => self.infer_legacy_embedder(current)?,
        };
        match recorded {
            None => {
                self.write_meta(current)?;
                Ok(current)
            }
            Some(r) if r == current => Ok(current),
            Some(EmbedderKind::MinilmL6) => bail!(
                "this store's vectors come from the MiniLM model, but the model is not available now, so recall would not be semantic and new vectors would not match; {}",
                model::FIX_HINT
            ),
            Some(EmbedderKind::Hash) => bail!(
                "this store was written with hash embeddings (no model was installed then); run `wt-memory reembed` once to re-embed its memories with the MiniLM model"
            ),
        }
    }

    /// A store without our meta file (older wt-memory, or the Python implementation): if it holds
    /// memories, re-embed the newest one and see whether its stored vector matches.
    fn infer_legacy_embedder(&self, current: EmbedderKind) -> anyhow::Result<Option<EmbedderKind>> {
        let all = self
            .ms
            .get_all_memories()
            .map_err(|e| anyhow::anyhow!("{e:#}"))?;
        let Some(sample) = all
            .iter()
            .filter(|m| m.experience.embeddings.is_some())
            .max_by_key(|m| m.created_at)
        else {
            return Ok(None);
        };
        let stored = sample.experience.embeddings.as_ref().unwrap();
        let fresh = self.embed(&sample.experience.content)?;
        // The same embedder gives >= 0.98 (ours at width 128 against the engine's at 256; see
        // `embed`), a different one about 0.1-0.3: 0.9 tells them apart either way.
        let kind = if crate::rank::cosine(stored, &fresh) > 0.9 {
            current
        } else if current == EmbedderKind::Hash {
            EmbedderKind::MinilmL6
        } else {
            EmbedderKind::Hash
        };
        self.write_meta(kind)?;
        Ok(Some(kind))
    }

    fn write_meta(&self, embedder: EmbedderKind) -> anyhow::Result<()> {
        let meta = StoreMeta {
            embedder,
            created_by: format!("wt-memory {}", env!("CARGO_PKG_VERSION")),
        };
        crate::paths::write_atomic(
            &self.dir().join(META_FILE),
            serde_json::to_string_pretty(&meta)?.as_bytes(),
        )?;
        Ok(())
    }

    /// Embedding of `text` with the store's embedder (no embedder check; see [`ensure_embedder`]).
    pub fn embed(&self, text: &str) -> anyhow::Result<Vec<f32>> {
        if self.embedder.minilm().is_some() {
            return self.embedder.embed(text);
        }
        self.ms
            .compute_embedding(text)
            .map_err(|e| anyhow::anyhow!("embedding failed: {e:#}"))
    }

    /// Embed many texts ahead of their writes (import) into the cache the writes then read; see
    /// [`Embedder::prime`].
    pub fn prime_embeddings(&self, texts: &[&str]) {
        self.embedder.prime(texts);
    }

    /// The model run and its cache, for a caller that embeds a text before it takes the store
    /// (a daemon's connection, while another request is served).
    pub fn embedder(&self) -> Arc<Embedder> {
        self.embedder.clone()
    }

    /// Every memory of the project (read once, then kept in step with each write).
    pub fn all(&self) -> anyhow::Result<Vec<Arc<Memory>>> {
        if let Some(all) = self
            .cached_all
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            return Ok(all.clone());
        }
        let all = self
            .ms
            .get_all_memories()
            .map_err(|e| anyhow::anyhow!("cannot read memories: {e:#}"))?;
        self.note_count(&all);
        *self.cached_all.lock().unwrap_or_else(|e| e.into_inner()) = Some(all.clone());
        Ok(all)
    }

    /// Something was written that the cached views cannot follow: the next read goes to the
    /// engine.
    fn changed(&self) {
        *self.cached_all.lock().unwrap_or_else(|e| e.into_inner()) = None;
        *self.rank_view.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// One memory was written (`replacing` the one with its id, or new): the cached views take
    /// it in place of a re-read of the whole store.
    fn written(&self, id: &MemoryId, replacing: bool) {
        match self.ms.get_memory(id) {
            Ok(memory) => self.update_views(replacing.then_some(id), Some(Arc::new(memory))),
            Err(_) => self.changed(),
        }
    }

    /// One memory was deleted: the cached views drop it.
    fn removed(&self, id: &MemoryId) {
        self.update_views(Some(id), None);
    }

    /// Drop `remove` from the cached views (those built so far) and append `add`.
    fn update_views(&self, remove: Option<&MemoryId>, add: Option<Arc<Memory>>) {
        if let Some(all) = self
            .cached_all
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            if let Some(id) = remove {
                all.retain(|m| m.id != *id);
            }
            all.extend(add.clone());
        }
        if let Some(view) = self
            .rank_view
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            // In place unless a query still holds this view (then that query keeps its copy).
            let view = Arc::make_mut(view);
            if let Some(id) = remove {
                view.remove(&id.0.to_string());
            }
            if let Some(memory) = add {
                view.push(memory);
            }
        }
    }

    /// Every memory, its record and the lexical statistics of all of them (built on first use,
    /// then kept in step with each write).
    pub fn rank_view(&self) -> anyhow::Result<Arc<RankView>> {
        if let Some(view) = self
            .rank_view
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            return Ok(view.clone());
        }
        let view = Arc::new(RankView::new(self.all()?));
        *self.rank_view.lock().unwrap_or_else(|e| e.into_inner()) = Some(view.clone());
        Ok(view)
    }

    pub fn records(&self) -> anyhow::Result<Vec<MemoryRecord>> {
        let mut all: Vec<MemoryRecord> = self
            .all()?
            .iter()
            .map(|m| MemoryRecord::from_memory(m))
            .collect();
        all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        Ok(all)
    }

    /// A memory by full id or unique prefix (8+ hex chars).
    pub fn get(&self, id: &str) -> anyhow::Result<Option<Arc<Memory>>> {
        let id = id.trim();
        if let Ok(uuid) = uuid::Uuid::parse_str(id) {
            return Ok(self.ms.get_memory(&MemoryId(uuid)).ok().map(Arc::new));
        }
        let matches: Vec<_> = self
            .all()?
            .into_iter()
            .filter(|m| m.id.0.to_string().starts_with(id))
            .collect();
        match matches.len() {
            0 => Ok(None),
            1 => Ok(matches.into_iter().next()),
            n => bail!("ambiguous id prefix '{id}': {n} memories match"),
        }
    }

    /// An existing memory with the same normalised content.
    pub fn find_same_content(&self, content: &str) -> anyhow::Result<Option<String>> {
        let want = hygiene::content_hash(content);
        let id = {
            let mut guard = self.content_index.lock().unwrap_or_else(|e| e.into_inner());
            if guard.is_none() {
                let mut index = ContentIndex::default();
                for m in self.all()? {
                    index.add(
                        hygiene::content_hash(&m.experience.content),
                        m.id.0.to_string(),
                    );
                }
                *guard = Some(index);
            }
            guard.as_ref().and_then(|i| i.id_of.get(&want).cloned())
        };
        Ok(id)
    }

    /// Keep the content index (once built) in step with a write or delete.
    fn update_content_index(&self, change: impl FnOnce(&mut ContentIndex)) {
        let mut guard = self.content_index.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(index) = guard.as_mut() {
            change(index);
        }
    }

    /// Run `f` with one sync of the write-ahead log at the end instead of one per write
    /// (import, restore, deletes); the checkpoint comes when the daemon is quiet, or at close.
    pub fn batch<T>(&self, f: impl FnOnce() -> T) -> anyhow::Result<T> {
        use std::sync::atomic::Ordering;
        /// Ends the batch even when `f` panics, so later writes sync the log again.
        struct Batching<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Batching<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::SeqCst);
            }
        }
        if self.batching.swap(true, Ordering::SeqCst) {
            return Ok(f()); // inside an outer batch, which syncs at its end
        }
        let out = {
            let _batching = Batching(&self.batching);
            f()
        };
        self.make_durable()?;
        if let Some(rec) = self.integrity().as_ref() {
            integrity::write(self.dir(), rec).context("cannot update the integrity record")?;
        }
        Ok(out)
    }

    /// A write was made: sync the engine's write-ahead log (outside a batch), so the write
    /// survives a crash, even of the machine, before it is acknowledged. This is an fsync of
    /// one log, not a flush of the store: the engine's memtables and vector index file catch up
    /// at the next [`Store::checkpoint`], and the engine replays the log if none comes.
    fn make_durable(&self) -> anyhow::Result<()> {
        use std::sync::atomic::Ordering;
        self.dirty.store(true, Ordering::SeqCst);
        if self.batching.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.ms
            .get_db()
            .flush_wal(true)
            .map_err(|e| anyhow::anyhow!("cannot sync the memory store's log: {e}"))
    }

    /// Bring the engine's files up to date with its log (flush RocksDB, save the vector index)
    /// when anything was written since the last checkpoint: a daemon does this once it is quiet,
    /// and every store on close, so the next open neither replays a long log nor rebuilds the
    /// vector index. Returns whether anything was written since.
    pub fn checkpoint(&self) -> anyhow::Result<bool> {
        if !self.dirty.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return Ok(false);
        }
        self.ms
            .flush_storage()
            .map_err(|e| anyhow::anyhow!("flush failed: {e:#}"))?;
        Ok(true)
    }

    /// Write one memory: the one door every write goes through. Content should already be
    /// cleaned (private spans dropped); secrets are redacted here again in every field, whoever
    /// the caller. Identical (normalised) content returns the existing id instead of storing it
    /// twice.
    pub fn insert(&self, new: NewMemory) -> anyhow::Result<Inserted> {
        let new = new.redacted();
        if new.content.trim().is_empty() {
            bail!("empty content");
        }
        if let Some(id) = self.find_same_content(&new.content)? {
            return Ok(Inserted {
                id,
                duplicate: true,
            });
        }
        self.ensure_embedder()?;
        let embedding = self.embed(&new.content)?;
        let key_vectors = self.embed_keys(&new.metadata)?;
        let hash = hygiene::content_hash(&new.content);
        let experience = Experience {
            content: new.content,
            experience_type: new.experience_type,
            tags: new.tags,
            metadata: new.metadata,
            entities: new.entities,
            embeddings: Some(embedding),
            image_embeddings: key_vectors,
            importance_override: Some(new.importance.clamp(0.0, 1.0)),
            is_failure: new.is_failure,
            is_anomaly: new.is_anomaly,
            ..Default::default()
        };
        // Always `remember_with_id`: plain `remember` also runs the engine's "interference", which
        // silently lowers the importance of the new note and of similar older ones.
        let uuid = match new.id {
            Some(uuid) if self.ms.get_memory(&MemoryId(uuid)).is_err() => uuid,
            _ => uuid::Uuid::new_v4(),
        };
        let id = match self
            .ms
            .remember_with_id(MemoryId(uuid), experience, new.created_at)
        {
            Ok(id) => id,
            Err(e) => {
                self.changed();
                bail!("the engine refused the write: {e:#}");
            }
        };
        // The views follow the engine first, so a failed sync leaves nothing stale behind.
        self.written(&id, false);
        self.update_content_index(|i| i.add(hash, id.0.to_string()));
        self.record_write(&id.0.to_string(), true)?;
        self.make_durable()?;
        Ok(Inserted {
            id: id.0.to_string(),
            duplicate: false,
        })
    }

    /// The key vectors for a memory's metadata (None without keys): see [`key_vectors_of`].
    fn embed_keys(&self, metadata: &HashMap<String, String>) -> anyhow::Result<Option<Vec<f32>>> {
        let Some(keys) = metadata.get(crate::record::KEYS) else {
            return Ok(None);
        };
        let mut vectors = Vec::new();
        for key in crate::record::split_keys(keys) {
            vectors.extend(self.embed(key)?);
        }
        Ok((!vectors.is_empty()).then_some(vectors))
    }

    /// Replace a memory's retrieval keys in place (same id), with their vectors (`enrich`).
    pub fn set_keys(&self, memory: &Memory, keys: &[String]) -> anyhow::Result<()> {
        let mut updated = memory.clone();
        let keys = crate::record::clean_keys(keys);
        let metadata = &mut updated.experience.metadata;
        if keys.is_empty() {
            metadata.remove(crate::record::KEYS);
        } else {
            metadata.insert(
                crate::record::KEYS.into(),
                hygiene::redact(&keys.join("\n")),
            );
        }
        self.ensure_embedder()?;
        updated.experience.image_embeddings = self.embed_keys(&updated.experience.metadata)?;
        self.replace(&updated)
    }

    /// Mark `memory` as the replacement of the memory `older` (same id; `supersede`).
    pub fn set_supersedes(&self, memory: &Memory, older: &str) -> anyhow::Result<()> {
        let mut updated = memory.clone();
        updated
            .experience
            .metadata
            .insert(crate::record::SUPERSEDES.into(), older.to_string());
        self.replace(&updated)
    }

    /// Replace a memory's tags in place (same id).
    pub fn set_tags(&self, memory: &Memory, tags: Vec<String>) -> anyhow::Result<()> {
        let mut updated = memory.clone();
        updated.experience.tags = tags.iter().map(|t| hygiene::redact(t)).collect();
        self.replace(&updated)
    }

    /// Write `updated` over the memory with its id, and keep the views in step.
    fn replace(&self, updated: &Memory) -> anyhow::Result<()> {
        if let Err(e) = self.ms.update_memory(updated) {
            self.changed();
            bail!("update failed: {e:#}");
        }
        self.written(&updated.id, true);
        self.make_durable()
    }

    /// Replace a memory's embedding (used by `reembed`).
    pub fn set_embedding(&self, memory: &Memory, embedding: Vec<f32>) -> anyhow::Result<()> {
        let mut updated = memory.clone();
        updated.experience.embeddings = Some(embedding);
        self.changed();
        self.ms
            .update_memory(&updated)
            .map_err(|e| anyhow::anyhow!("update failed: {e:#}"))?;
        self.make_durable()
    }

    /// Re-embed every memory with the current embedder and record it (after `setup` on a store
    /// written without the model). Returns the number of memories re-embedded.
    pub fn reembed(&self) -> anyhow::Result<usize> {
        let current = self.current_embedder();
        let all = self.all()?;
        self.batch(|| -> anyhow::Result<()> {
            for m in &all {
                let e = self.embed(&m.experience.content)?;
                self.set_embedding(m, e)?;
            }
            // Key vectors from the old embedder would not compare with the new queries.
            for m in all
                .iter()
                .filter(|m| m.experience.metadata.contains_key(crate::record::KEYS))
            {
                if let Some(current) = self.get(&m.id.0.to_string())? {
                    let keys: Vec<String> = MemoryRecord::from_memory(&current)
                        .keys()
                        .iter()
                        .map(|k| k.to_string())
                        .collect();
                    self.set_keys(&current, &keys)?;
                }
            }
            Ok(())
        })??;
        self.write_meta(current)?;
        Ok(all.len())
    }

    /// Delete one memory; false when it did not exist.
    pub fn delete(&self, id: &str) -> anyhow::Result<bool> {
        let Ok(uuid) = uuid::Uuid::parse_str(id) else {
            return Ok(false);
        };
        if self.ms.get_memory(&MemoryId(uuid)).is_err() {
            return Ok(false);
        }
        // The record first: a delete that stops half-way then reads as "more than recorded",
        // never as a loss.
        let full = uuid.to_string();
        self.record_write(&full, false)?;
        match self.ms.forget(ForgetCriteria::ById(MemoryId(uuid))) {
            Ok(n) if n > 0 => {
                self.removed(&MemoryId(uuid));
                self.update_content_index(|i| i.remove(&full));
                self.make_durable()?;
                Ok(true)
            }
            other => {
                self.changed();
                self.record_write(&full, true)?;
                other
                    .map(|_| false)
                    .map_err(|e| anyhow::anyhow!("delete failed: {e:#}"))
            }
        }
    }

    /// Delete many; returns how many were deleted.
    pub fn delete_many<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> anyhow::Result<usize> {
        self.batch(|| {
            let mut n = 0;
            for id in ids {
                if self.delete(id)? {
                    n += 1;
                }
            }
            Ok(n)
        })?
    }

    pub fn count(&self) -> usize {
        self.all().map(|a| a.len()).unwrap_or(0)
    }

    /// The engine's index health and integrity report, for `health --index`.
    pub fn index_report(&self) -> serde_json::Value {
        let health = self.ms.index_health();
        let verify = self.ms.verify_index_integrity();
        serde_json::json!({
            "index_health": {
                "total_vectors": health.total_vectors,
                "incremental_inserts": health.incremental_inserts,
                "deleted_count": health.deleted_count,
                "deletion_ratio": health.deletion_ratio,
                "needs_rebuild": health.needs_rebuild,
                "needs_compaction": health.needs_compaction,
            },
            "verify": match verify {
                Ok(r) => serde_json::to_value(&r).unwrap_or_else(|e| serde_json::json!({"error": e.to_string()})),
                Err(e) => serde_json::json!({"error": e.to_string()}),
            },
        })
    }

    pub fn engine_stats(&self) -> serde_json::Value {
        serde_json::to_value(self.ms.stats()).unwrap_or_default()
    }

    pub fn now() -> String {
        rfc3339(&Utc::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store written by the engine's own embedding (an older wt-memory, or the Python system)
    /// and without our meta file is recognised as MiniLM, not taken for hash vectors.
    #[test]
    fn a_legacy_store_embedded_by_the_engine_reads_as_minilm() {
        assert!(
            crate::config::engine_assets().is_some(),
            "the MiniLM model is installed (wt-memory setup)"
        );
        let tmp = tempfile::tempdir().unwrap();
        let project = Project {
            name: "legacy".into(),
            store_dir: tmp.path().join("store"),
            toplevel: None,
            main_root: None,
            cwd: tmp.path().to_path_buf(),
        };
        {
            let store = Store::open(&project).unwrap();
            for text in [
                "Start the whole dev environment with ./scripts/dev.sh",
                "Invoice numbers come from InvoiceRepo::next_number inside the transaction",
            ] {
                let experience = Experience {
                    content: text.into(),
                    ..Default::default()
                };
                store
                    .ms
                    .remember_with_id(MemoryId(uuid::Uuid::new_v4()), experience, None)
                    .unwrap();
            }
            store.make_durable().unwrap();
        }
        std::fs::remove_file(project.store_dir.join(META_FILE)).ok();
        let store = Store::open(&project).unwrap();
        assert_eq!(store.ensure_embedder().unwrap(), EmbedderKind::MinilmL6);
        assert_eq!(
            read_meta(&project.store_dir).unwrap().embedder,
            EmbedderKind::MinilmL6
        );
    }

    /// The ranking view kept in step with writes and deletes holds, row for row, what a view
    /// built anew from the store holds: the block of vectors stays aligned with the records.
    #[test]
    fn the_rank_view_kept_in_step_equals_one_built_anew() {
        let tmp = tempfile::tempdir().unwrap();
        let project = Project {
            name: "view".into(),
            store_dir: tmp.path().join("store"),
            toplevel: None,
            main_root: None,
            cwd: tmp.path().to_path_buf(),
        };
        let store = Store::open(&project).unwrap();
        let mut ids = Vec::new();
        for text in [
            "Start the whole dev environment with ./scripts/dev.sh",
            "Invoice numbers come from InvoiceRepo::next_number inside the transaction",
            "Postgres in docker compose listens on 5433",
        ] {
            let new = NewMemory::new(text, ExperienceType::Learning);
            ids.push(store.insert(new).unwrap().id);
        }
        let before = store.rank_view().unwrap();
        assert_eq!(before.records.len(), 3);
        store.delete(&ids[1]).unwrap();
        let added = NewMemory::new(
            "Stripe webhooks are verified on the raw body",
            ExperienceType::Decision,
        );
        store.insert(added).unwrap();
        let kept = store.rank_view().unwrap();
        let anew = RankView::new(store.ms.get_all_memories().unwrap());
        let order = |v: &RankView| {
            let mut rows: Vec<(String, Vec<f32>, f64)> = (0..v.records.len())
                .map(|i| (v.records[i].id.clone(), v.embedding(i).to_vec(), v.norms[i]))
                .collect();
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            rows
        };
        let (kept_rows, anew_rows) = (order(&kept), order(&anew));
        assert_eq!(kept_rows.len(), 3);
        assert!(kept_rows.iter().all(|(_, v, _)| v.len() == 384));
        assert_eq!(kept_rows, anew_rows);
        for i in 0..kept.records.len() {
            assert_eq!(kept.embedding(i), embedding_of(&kept.memories[i]));
        }
    }
}
