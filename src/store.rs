//! The store: one shodh-memory engine per project, opened under the project lock.
//!
//! This is the one narrow interface to the engine (open, all, get, insert, update, delete, embed).
//! Everything above it (ranking, dedup, export) works on [`MemoryRecord`]s and embeddings, so the
//! store can later live in a long-lived daemon without touching the front ends.

use crate::hygiene;
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
use std::sync::{Arc, OnceLock};

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
    assets: Option<Assets>,
    embedder_checked: OnceLock<Result<EmbedderKind, String>>,
    // Declared last: dropped after the engine has flushed and closed.
    _lock: ProjectLock,
}

/// Run `f` with file descriptor 2 pointed at /dev/null: the engine prints `[shodh] …` lines
/// with `eprintln!` while it opens, which would clutter every command.
fn with_stderr_silenced<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: plain descriptor duplication; fd 2 is restored before returning.
    unsafe {
        let saved = libc::dup(2);
        let devnull = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if saved < 0 || devnull < 0 {
            return f();
        }
        libc::dup2(devnull, 2);
        libc::close(devnull);
        let out = f();
        libc::dup2(saved, 2);
        libc::close(saved);
        out
    }
}

impl Store {
    /// Open (creating if needed) the project's store, waiting for its lock.
    pub fn open(project: &Project) -> anyhow::Result<Store> {
        // WT_MEMORY_LOCK_WAIT_SECS shortens the wait (tests, impatient scripts).
        let wait = std::env::var("WT_MEMORY_LOCK_WAIT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .map(std::time::Duration::from_secs_f64)
            .unwrap_or(lock::DEFAULT_WAIT);
        Self::open_with_wait(project, wait)
    }

    pub fn open_with_wait(project: &Project, wait: std::time::Duration) -> anyhow::Result<Store> {
        let root = crate::paths::storage_root();
        let lock = ProjectLock::acquire(&lock::lock_path(&root, &project.name), wait)?;
        std::fs::create_dir_all(&project.store_dir)
            .with_context(|| format!("cannot create {}", project.store_dir.display()))?;
        let assets = model::find_assets();
        model::configure_engine_env(assets.as_ref());
        let config = MemoryConfig {
            storage_path: project.store_dir.clone(),
            ..MemoryConfig::default()
        };
        let ms = with_stderr_silenced(|| MemorySystem::new(config, None)).map_err(|e| {
            anyhow::anyhow!(
                "cannot open the memory store at {}: {e:#}",
                project.store_dir.display()
            )
        })?;
        Ok(Store {
            ms,
            project: project.clone(),
            assets,
            embedder_checked: OnceLock::new(),
            _lock: lock,
        })
    }

    pub fn dir(&self) -> &PathBuf {
        &self.project.store_dir
    }

    pub fn assets(&self) -> Option<&Assets> {
        self.assets.as_ref()
    }

    /// The embedder actually producing vectors in this process. With the model present it is
    /// checked once against the hash fallback, because ONNX failures fall back silently.
    pub fn current_embedder(&self) -> EmbedderKind {
        if self.assets.is_none() {
            return EmbedderKind::Hash;
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
        res.clone().map_err(|e| anyhow::anyhow!(e))
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
        let kind = if crate::rank::cosine(stored, &fresh) > 0.98 {
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
        self.ms
            .compute_embedding(text)
            .map_err(|e| anyhow::anyhow!("embedding failed: {e:#}"))
    }

    /// Every memory of the project.
    pub fn all(&self) -> anyhow::Result<Vec<Arc<Memory>>> {
        self.ms
            .get_all_memories()
            .map_err(|e| anyhow::anyhow!("cannot read memories: {e:#}"))
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
    pub fn find_same_content(&self, content: &str) -> anyhow::Result<Option<Arc<Memory>>> {
        let want = hygiene::content_hash(content);
        Ok(self
            .all()?
            .into_iter()
            .find(|m| hygiene::content_hash(&m.experience.content) == want))
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
        if let Some(existing) = self.find_same_content(&new.content)? {
            return Ok(Inserted {
                id: existing.id.0.to_string(),
                duplicate: true,
            });
        }
        self.ensure_embedder()?;
        let embedding = self.embed(&new.content)?;
        let experience = Experience {
            content: new.content,
            experience_type: new.experience_type,
            tags: new.tags,
            metadata: new.metadata,
            entities: new.entities,
            embeddings: Some(embedding),
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
        let id = self
            .ms
            .remember_with_id(MemoryId(uuid), experience, new.created_at)
            .map_err(|e| anyhow::anyhow!("the engine refused the write: {e:#}"))?;
        self.ms
            .flush_storage()
            .map_err(|e| anyhow::anyhow!("flush failed: {e:#}"))?;
        Ok(Inserted {
            id: id.0.to_string(),
            duplicate: false,
        })
    }

    /// Replace a memory's tags in place (same id).
    pub fn set_tags(&self, memory: &Memory, tags: Vec<String>) -> anyhow::Result<()> {
        let mut updated = memory.clone();
        updated.experience.tags = tags.iter().map(|t| hygiene::redact(t)).collect();
        self.ms
            .update_memory(&updated)
            .map_err(|e| anyhow::anyhow!("update failed: {e:#}"))?;
        self.ms
            .flush_storage()
            .map_err(|e| anyhow::anyhow!("flush failed: {e:#}"))
    }

    /// Replace a memory's embedding (used by `reembed`).
    pub fn set_embedding(&self, memory: &Memory, embedding: Vec<f32>) -> anyhow::Result<()> {
        let mut updated = memory.clone();
        updated.experience.embeddings = Some(embedding);
        self.ms
            .update_memory(&updated)
            .map_err(|e| anyhow::anyhow!("update failed: {e:#}"))
    }

    /// Re-embed every memory with the current embedder and record it (after `setup` on a store
    /// written without the model). Returns the number of memories re-embedded.
    pub fn reembed(&self) -> anyhow::Result<usize> {
        let current = self.current_embedder();
        let all = self.all()?;
        for m in &all {
            let e = self.embed(&m.experience.content)?;
            self.set_embedding(m, e)?;
        }
        self.ms
            .flush_storage()
            .map_err(|e| anyhow::anyhow!("flush failed: {e:#}"))?;
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
        let n = self
            .ms
            .forget(ForgetCriteria::ById(MemoryId(uuid)))
            .map_err(|e| anyhow::anyhow!("delete failed: {e:#}"))?;
        Ok(n > 0)
    }

    /// Delete many; returns how many were deleted.
    pub fn delete_many<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> anyhow::Result<usize> {
        let mut n = 0;
        for id in ids {
            if self.delete(id)? {
                n += 1;
            }
        }
        self.ms
            .flush_storage()
            .map_err(|e| anyhow::anyhow!("flush failed: {e:#}"))?;
        Ok(n)
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
