//! Which embedder wrote a store's vectors, and our run of the model with its cache.

use super::*;

/// Our run of the engine's model (see [`crate::embed`]), loaded on first use, and the embeddings
/// of recently embedded texts (a file read twice, a prompt asked again, a write embedded ahead).
pub struct Embedder {
    pub(super) assets: Option<Assets>,
    pub(super) cache: Mutex<HashMap<String, Vec<f32>>>,
    /// Texts the model has embedded (cache misses), for tests and the daemon's figures.
    pub(super) model_runs: std::sync::atomic::AtomicU64,
}

/// The model, loaded once per process and shared by every store open in it: a service that
/// serves several stores (the user's engine) holds one copy of the model and its runtime (~60
/// MB) instead of one per store. Every store of a process uses the same assets
/// ([`crate::engine_env::engine_assets`], found once), so one model fits them all.
static MODEL: OnceLock<Option<crate::embed::MiniLm>> = OnceLock::new();

/// How many times this process loaded the model (0 or 1): for tests and `daemon status`.
static MODEL_LOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times this process has loaded the embedding model.
pub fn model_loads() -> u64 {
    MODEL_LOADS.load(std::sync::atomic::Ordering::Relaxed)
}

impl Embedder {
    /// None without the model or when it does not load (the engine embeds then).
    pub(super) fn minilm(&self) -> Option<&'static crate::embed::MiniLm> {
        let assets = self.assets.as_ref()?;
        MODEL
            .get_or_init(|| {
                MODEL_LOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let started = std::time::Instant::now();
                let model = crate::embed::MiniLm::load(assets)
                    .map_err(|e| integrity::log("WARN", &format!("{e:#}; the engine embeds")))
                    .ok()?;
                // A cold first hook waits for this: its time, for docs/performance.md.
                integrity::log(
                    "INFO",
                    &format!("loaded the model in {} ms", started.elapsed().as_millis()),
                );
                Some(model)
            })
            .as_ref()
    }

    pub(super) fn lock_cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<f32>>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The model's embedding of `text`, from the cache when it is there (needs the model).
    pub(super) fn embed(&self, text: &str) -> anyhow::Result<Vec<f32>> {
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

    /// The model's embeddings of `texts`, from the cache or computed now (None without the
    /// model): for a caller that hands them to another store's service with the same model (the
    /// personal store's, beside a project's), so one query is embedded once.
    pub fn embeddings(&self, texts: &[&str]) -> Option<Vec<Vec<f32>>> {
        self.minilm()?;
        self.prime(texts);
        texts.iter().map(|t| self.embed(t).ok()).collect()
    }

    /// Take `vectors`, the embeddings of `texts` another service of this build computed with the
    /// same model (see [`Embedder::embeddings`]), into the cache for the texts it does not hold
    /// yet. Only vectors of the model's width with finite values are taken; without the model,
    /// none (the engine embeds then, and a foreign vector would not match its own).
    pub fn adopt(&self, texts: &[String], vectors: &[Vec<f32>]) {
        let Some(model) = self.minilm() else {
            return;
        };
        if texts.len() != vectors.len() {
            return;
        }
        let mut cache = self.lock_cache();
        for (text, vector) in texts.iter().zip(vectors) {
            let usable = vector.len() == model.dimension() && vector.iter().all(|x| x.is_finite());
            if usable && !cache.contains_key(text) {
                if cache.len() >= EMBED_CACHE_ENTRIES {
                    cache.clear();
                }
                cache.insert(text.clone(), vector.clone());
            }
        }
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

/// Texts per model run in [`Store::prime_embeddings`].
pub const EMBED_BATCH: usize = 8;

/// How many texts [`Store::embed`] remembers.
const EMBED_CACHE_ENTRIES: usize = 512;

impl Store {
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
        let neural = self.ms().and_then(|ms| ms.compute_embedding(probe));
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
        res.clone().map_err(|message| {
            wt_memory_foundation::error::Error::EmbedderMismatch { message }.into()
        })
    }

    pub(super) fn check_embedder(&self) -> anyhow::Result<EmbedderKind> {
        let current = self.current_embedder();
        let recorded = match read_meta(self.dir()) {
            Some(meta) => Some(meta.embedder),
            None => self.infer_legacy_embedder(current)?,
        };
        match recorded {
            None => {
                self.write_meta(current)?;
                if current == EmbedderKind::Hash {
                    self.created_without_model
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                }
                Ok(current)
            }
            Some(r) if r == current => Ok(current),
            // Written before the model was installed, opened with it now: re-embedded here, once,
            // so no write or recall is refused for the order things were installed in. Writes
            // that arrive meanwhile wait their turn (a hook's are spooled past its budget).
            // A read copy is thrown away after its reads: it ranks by terms, as the store's
            // vectors allow, until the store itself is opened and re-embedded.
            Some(EmbedderKind::Hash) if current == EmbedderKind::MinilmL6 && self.is_read_copy() => {
                Ok(EmbedderKind::Hash)
            }
            Some(EmbedderKind::Hash) if current == EmbedderKind::MinilmL6 => {
                let n = self.rewrite_vectors()?;
                wt_memory_base::log::info(
                    "store",
                    &format!("re-embedded {n} memories written before the model was installed"),
                );
                Ok(current)
            }
            Some(EmbedderKind::MinilmL6) => bail!(
                "this store's vectors come from the MiniLM model, but the model is not available now, so recall would not be semantic and new vectors would not match; {}",
                wt_memory_foundation::setup::fix_hint()
            ),
            Some(EmbedderKind::Hash) => bail!(
                "this store was written with hash embeddings (no model was installed then); run `wt-memory reembed` once to re-embed its memories with the MiniLM model"
            ),
        }
    }

    /// A store without our meta file (older wt-memory, or the Python implementation): if it holds
    /// memories, re-embed the newest one and see whether its stored vector matches.
    pub(super) fn infer_legacy_embedder(
        &self,
        current: EmbedderKind,
    ) -> anyhow::Result<Option<EmbedderKind>> {
        let all = self
            .ms()?
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
        // The same embedder gives a cosine near 1 (ours at width 128 against the engine's at 256;
        // see `embed`), a different embedder a low one: 0.9 tells them apart either way (measured:
        // docs/evaluation.md, "Without the embedding model").
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

    pub(super) fn write_meta(&self, embedder: EmbedderKind) -> anyhow::Result<()> {
        let meta = StoreMeta {
            embedder,
            created_by: format!("wt-memory {}", env!("CARGO_PKG_VERSION")),
        };
        wt_memory_base::paths::write_atomic(
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
        self.ms()?
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
}
