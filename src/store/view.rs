//! The views of the store kept in memory and in step with every write: the ranking view (every
//! memory, its record, its vector in one block, the lexical corpus) and the content index.

use super::*;

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
    /// Memories per type and per tag.
    pub tally: Tally,
}

/// How many memories have each type and each tag, kept in step with writes so a summary of the
/// store (the SessionStart map) never walks its memories.
#[derive(Clone, Default, Debug)]
pub struct Tally {
    pub types: HashMap<String, usize>,
    pub tags: HashMap<String, usize>,
}

impl Tally {
    fn add(&mut self, record: &MemoryRecord) {
        *self
            .types
            .entry(record.experience_type.clone())
            .or_default() += 1;
        for tag in &record.tags {
            *self.tags.entry(tag.clone()).or_default() += 1;
        }
    }

    fn remove(&mut self, record: &MemoryRecord) {
        fn drop_one(counts: &mut HashMap<String, usize>, key: &str) {
            if let Some(n) = counts.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(key);
                }
            }
        }
        drop_one(&mut self.types, &record.experience_type);
        for tag in &record.tags {
            drop_one(&mut self.tags, tag);
        }
    }
}

impl RankView {
    pub(super) fn new(memories: Vec<Arc<Memory>>) -> RankView {
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

    pub(super) fn push(&mut self, memory: Arc<Memory>) {
        let record = MemoryRecord::from_memory(&memory);
        if let Some(older) = record.metadata.get(crate::record::SUPERSEDES) {
            self.superseded_by.insert(older.clone(), record.id.clone());
        }
        self.corpus.push(&record.lexical_text());
        self.tally.add(&record);
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

    pub(super) fn remove(&mut self, id: &str) {
        if let Some(i) = self.records.iter().position(|r| r.id == id) {
            // A forgotten replacement no longer hides what it replaced.
            self.superseded_by.retain(|_, newer| newer != id);
            self.corpus.remove(i);
            self.tally.remove(&self.records.remove(i));
            self.norms.remove(i);
            self.vectors.drain(i * self.dim..(i + 1) * self.dim);
            self.key_norms.remove(i);
            self.memories.remove(i);
        }
    }
}

/// Content hash -> id, and back.
#[derive(Default)]
pub(super) struct ContentIndex {
    pub(super) id_of: HashMap<String, String>,
    pub(super) hash_of: HashMap<String, String>,
}

impl ContentIndex {
    pub(super) fn add(&mut self, hash: String, id: String) {
        self.hash_of.insert(id.clone(), hash.clone());
        self.id_of.insert(hash, id);
    }

    pub(super) fn remove(&mut self, id: &str) {
        if let Some(hash) = self.hash_of.remove(id) {
            if self.id_of.get(&hash).is_some_and(|i| i == id) {
                self.id_of.remove(&hash);
            }
        }
    }
}

impl Store {
    /// Drop `remove` from the cached views (those built so far) and append `add`.
    pub(super) fn update_views(&self, remove: Option<&MemoryId>, add: Option<Arc<Memory>>) {
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

    /// Keep the content index (once built) in step with a write or delete.
    pub(super) fn update_content_index(&self, change: impl FnOnce(&mut ContentIndex)) {
        let mut guard = self.content_index.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(index) = guard.as_mut() {
            change(index);
        }
    }
}
