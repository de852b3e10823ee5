//! The views of the store kept in memory and in step with every write: the ranking view (every
//! memory, its record, its vector in one block, the lexical corpus) and the content index.

use super::records::{Packed, Records};
use super::view_file;
use super::*;
use wt_memory_vectors::{Quantized, Rows};

/// The store as ranking sees it: each memory's record, its vectors (compact, see
/// [`wt_memory_vectors`]) and the lexical corpus of all of them. Kept in step with each write and
/// delete, so neither rebuilds it; saved beside the store ([`super::view_file`]) so a service
/// starting on a large store loads it instead of reading and tokenising every memory.
#[derive(Clone, Default)]
pub struct RankView {
    pub records: Records,
    pub corpus: crate::rank::Corpus,
    /// Each memory's content embedding, row `i` for record `i`.
    pub(super) vectors: Rows,
    /// Every memory's retrieval-key embeddings, one after another: memory `i`'s are rows
    /// `key_spans[i].0 ..` (`key_spans[i].1` of them).
    pub(super) keys: Rows,
    pub(super) key_spans: Vec<(u32, u32)>,
    /// Older memory id -> the memory that replaces it (`remember --supersedes`).
    pub superseded_by: HashMap<String, String>,
    /// Memories per type and per tag.
    pub tally: Tally,
    /// The rows carrying a tag, found once per tag and view (a branch-boosted query asks for its
    /// branch's rows every time; comparing every memory's tags cost a large share of a query at
    /// 10^5, measured: docs/performance.md, "2026-11-27, midday: 10^5 memories, second session").
    tagged: TaggedRows,
}

/// Rows per tag, as [`RankView::rows_tagged`] found them; emptied by every change of the view.
#[derive(Default)]
struct TaggedRows(Mutex<HashMap<String, Arc<Vec<u32>>>>);

impl Clone for TaggedRows {
    fn clone(&self) -> Self {
        TaggedRows::default() // a copy is changed next: it finds its rows again
    }
}

impl TaggedRows {
    fn clear(&mut self) {
        self.0.get_mut().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// How many memories have each type and each tag, kept in step with writes so a summary of the
/// store (the SessionStart map) never walks its memories.
#[derive(Clone, Default, Debug)]
pub struct Tally {
    pub types: HashMap<String, usize>,
    pub tags: HashMap<String, usize>,
}

impl Tally {
    pub(super) fn add(&mut self, record: Packed) {
        *self
            .types
            .entry(record.experience_type().to_string())
            .or_default() += 1;
        for tag in record.tags() {
            *self.tags.entry(tag.to_string()).or_default() += 1;
        }
    }

    fn remove(&mut self, record: Packed) {
        fn drop_one(counts: &mut HashMap<String, usize>, key: &str) {
            if let Some(n) = counts.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    counts.remove(key);
                }
            }
        }
        drop_one(&mut self.types, record.experience_type());
        for tag in record.tags() {
            drop_one(&mut self.tags, tag);
        }
    }
}

impl RankView {
    pub(super) fn new(memories: Vec<Arc<Memory>>) -> RankView {
        let mut view = RankView::default();
        for m in memories {
            view.push(&m);
        }
        view
    }

    pub(super) fn push(&mut self, memory: &Memory) {
        self.tagged.clear();
        let record = MemoryRecord::from_memory(memory);
        if let Some(older) = record.metadata.get(crate::record::SUPERSEDES) {
            self.superseded_by.insert(older.clone(), record.id.clone());
        }
        self.corpus.push(&record.lexical_text());
        self.records.push(&record);
        self.tally.add(self.records.get(self.records.len() - 1));
        let embedding = embedding_of(memory);
        self.vectors.push(embedding);
        let start = self.keys.len() as u32;
        let mut count = 0;
        if !embedding.is_empty() {
            for key in key_vectors_of(memory).chunks_exact(embedding.len()) {
                self.keys.push(key);
                count += 1;
            }
        }
        self.key_spans.push((start, count));
    }

    /// Memory `i`'s embedding (empty when it has none), decoded from its int8 codes.
    pub fn embedding(&self, i: usize) -> Vec<f32> {
        self.vectors.exact(i)
    }

    /// The norm of memory `i`'s embedding (0 without one).
    pub fn norm(&self, i: usize) -> f64 {
        self.vectors.norm(i)
    }

    /// Memory `i`'s key vectors, concatenated, and their norms.
    pub fn key_vectors(&self, i: usize) -> (Vec<f32>, Vec<f64>) {
        let (start, count) = self.key_spans[i];
        let rows = start as usize..(start + count) as usize;
        let vectors = rows.clone().flat_map(|k| self.keys.exact(k)).collect();
        (vectors, rows.map(|k| self.keys.norm(k)).collect())
    }

    /// Every memory's coarse meaning match with each query part (`out[p][i]`), scored as
    /// [`crate::rank::Candidate`] scores it exactly: the content's cosine, or its blend with the
    /// best key's when that is higher. One pass over the int8 rows.
    pub fn coarse_semantic(&self, parts: &[Quantized]) -> Vec<Vec<f32>> {
        let mut out = self.vectors.coarse_all(parts);
        if self.keys.is_empty() {
            return out;
        }
        let blend = crate::rank::KEY_BLEND as f32;
        for (i, &(start, count)) in self.key_spans.iter().enumerate() {
            if count == 0 {
                continue;
            }
            for (q, scores) in parts.iter().zip(out.iter_mut()) {
                let best = (start..start + count)
                    .map(|k| self.keys.coarse(q, k as usize))
                    .fold(f32::NEG_INFINITY, f32::max);
                let content = scores[i];
                scores[i] = content.max(blend * content + (1.0 - blend) * best);
            }
        }
        out
    }

    /// Every memory's coarse content cosine with `q` (keys aside).
    pub fn coarse_content(&self, q: &Quantized) -> Vec<f32> {
        self.vectors
            .coarse_all(std::slice::from_ref(q))
            .pop()
            .unwrap_or_default()
    }

    /// The rows whose memory carries `tag`, ascending (none when the tally knows no such tag).
    pub fn rows_tagged(&self, tag: &str) -> Arc<Vec<u32>> {
        if !self.tally.tags.contains_key(tag) {
            return Arc::default();
        }
        let mut cache = self.tagged.0.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(tag.to_string())
            .or_insert_with(|| {
                let rows = self.records.iter().enumerate();
                Arc::new(
                    rows.filter(|(_, r)| r.has_tag(tag))
                        .map(|(i, _)| i as u32)
                        .collect(),
                )
            })
            .clone()
    }

    pub(super) fn remove(&mut self, id: &str) {
        self.tagged.clear();
        if let Some(i) = self.records.position(id) {
            // A forgotten replacement no longer hides what it replaced.
            self.superseded_by.retain(|_, newer| newer != id);
            let record = self.records.get(i);
            self.corpus.remove(i, &record.lexical_text());
            self.tally.remove(record);
            self.records.remove(i);
            self.vectors.remove(i, 1);
            let (start, count) = self.key_spans.remove(i);
            self.keys.remove(start as usize, count as usize);
            for span in &mut self.key_spans[i..] {
                span.0 -= count;
            }
        }
    }
}

/// A quiet service saves its view once the write log is this long (about 1,700 writes, replayed
/// in well under a second).
const SAVE_AFTER_LOG_BYTES: u64 = 64 * 1024;

/// The ranking view as the store holds it (`None` until built), shared with a thread saving it.
pub(super) type ViewCell = Arc<Mutex<Option<Arc<RankView>>>>;

/// Where and whether a store saves its ranking view (see [`view_file`]).
pub(super) struct SavedView {
    pub(super) dir: PathBuf,
    /// The store the view is of (a read copy names the store it copies).
    pub(super) store_dir: PathBuf,
    /// False for a read copy: it may load the store's view, never log or save.
    pub(super) writable: bool,
    /// Saves (the resident service only: see [`Store::keep_view_saved`]).
    pub(super) keep: std::sync::atomic::AtomicBool,
    /// Held from a write's log line until the views follow it, and while a view is taken to be
    /// saved: a saved view never lacks a write whose log line it drops.
    pub(super) log: Mutex<()>,
    /// One save at a time.
    saving: Mutex<()>,
}

impl SavedView {
    pub(super) fn new(store_dir: &Path, writable: bool) -> SavedView {
        SavedView {
            dir: view_file::dir_for(store_dir),
            store_dir: store_dir.to_path_buf(),
            writable,
            keep: Default::default(),
            log: Mutex::new(()),
            saving: Mutex::new(()),
        }
    }

    /// Save the view in `cell` as it is now, with the log's length at that moment.
    fn save(&self, cell: &ViewCell) {
        let _one = self.saving.lock().unwrap_or_else(|e| e.into_inner());
        let (view, log_len) = {
            let _held = self.log.lock().unwrap_or_else(|e| e.into_inner());
            // From here on every write is logged (see `view_file::note_write`).
            if let Err(e) = wt_memory_base::paths::ensure_private_dir(&self.dir) {
                integrity::log("WARN", &format!("cannot save the ranking view: {e}"));
                return;
            }
            let view = cell.lock().unwrap_or_else(|e| e.into_inner()).clone();
            (view, view_file::log_len(&self.dir))
        };
        let Some(view) = view else { return };
        let started = std::time::Instant::now();
        match view_file::save(&self.dir, &self.store_dir, &view, log_len, &self.log) {
            Ok(()) => integrity::log(
                "INFO",
                &format!(
                    "saved the ranking view of {} memories in {} ms",
                    view.records.len(),
                    started.elapsed().as_millis()
                ),
            ),
            Err(e) => integrity::log("WARN", &format!("cannot save the ranking view: {e:#}")),
        }
    }
}

/// Content hash -> id, and back.
#[derive(Default)]
pub(super) struct ContentIndex {
    /// Content hash -> the memory holding that content, and back. The hash is kept as its first
    /// 128 bits (a chance collision among 10^5 contents is about 10^-29), the id (a UUID, as every
    /// memory's) as its 128 bits: far less than as hex strings or with the id as a shared string
    /// (measured: docs/performance.md, "2026-11-27, evening: memory that fits (10^5, fourth
    /// session)").
    id_of: HashMap<u128, u128>,
    hash_of: HashMap<u128, u128>,
}

/// The first 128 bits of a [`hygiene::content_hash`] (hex).
fn short_hash(hash: &str) -> u128 {
    u128::from_str_radix(hash.get(..32).unwrap_or(hash), 16).unwrap_or_default()
}

fn uuid_bits(id: &str) -> Option<u128> {
    uuid::Uuid::parse_str(id).ok().map(|u| u.as_u128())
}

impl ContentIndex {
    pub(super) fn add(&mut self, hash: &str, id: &str) {
        let Some(id) = uuid_bits(id) else {
            return; // not a memory id: nothing in the store can name it
        };
        let hash = short_hash(hash);
        self.hash_of.insert(id, hash);
        self.id_of.insert(hash, id);
    }

    pub(super) fn remove(&mut self, id: &str) {
        let Some(id) = uuid_bits(id) else { return };
        if let Some(hash) = self.hash_of.remove(&id) {
            if self.id_of.get(&hash) == Some(&id) {
                self.id_of.remove(&hash);
            }
        }
    }

    /// The memory holding content of this hash.
    pub(super) fn id_of(&self, hash: &str) -> Option<String> {
        let id = self.id_of.get(&short_hash(hash))?;
        Some(uuid::Uuid::from_u128(*id).to_string())
    }
}

impl Store {
    /// Drop `remove` from the cached views (those built so far) and append `add`.
    pub(super) fn update_views(&self, remove: Option<&MemoryId>, add: Option<Arc<Memory>>) {
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
                view.push(&memory);
            }
        }
    }

    /// Every memory, its record and the lexical statistics of all of them: loaded from the saved
    /// view when there is a sound one, else built from the engine (then saved, by the service);
    /// kept in step with each write.
    pub fn rank_view(&self) -> anyhow::Result<Arc<RankView>> {
        if let Some(view) = self
            .rank_view
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            return Ok(view.clone());
        }
        let started = std::time::Instant::now();
        let (view, save) = match self.load_saved_view() {
            Some((view, replayed)) => {
                integrity::log(
                    "INFO",
                    &format!(
                        "loaded the saved ranking view of {} memories ({} writes replayed) in {} ms",
                        view.records.len(),
                        replayed,
                        started.elapsed().as_millis()
                    ),
                );
                (Arc::new(view), replayed > 0)
            }
            // The view keeps what ranking needs, compactly; the engine's objects are dropped.
            None => (Arc::new(RankView::new(self.all()?)), true),
        };
        *self.rank_view.lock().unwrap_or_else(|e| e.into_inner()) = Some(view.clone());
        if save {
            self.save_view(false);
        }
        Ok(view)
    }

    /// The saved view brought up to date with the writes logged since, if it is sound: it holds
    /// exactly the memories the integrity record counts. Also says how many writes were replayed
    /// (the saved view is then worth saving again).
    pub(super) fn load_saved_view(&self) -> Option<(RankView, usize)> {
        let saved = self.saved_view.as_ref()?;
        let (mut view, replay) = match view_file::load(&saved.dir, &saved.store_dir) {
            Ok(Some(loaded)) => loaded,
            Ok(None) => return None,
            Err(e) => {
                integrity::log(
                    "INFO",
                    &format!("saved ranking view not used: {e:#}; rebuilding"),
                );
                return None;
            }
        };
        let view_file::Replay::Ids(ids) = replay else {
            return None;
        };
        // Replaying asks the engine (a service waits for it to open only then).
        let ms = if ids.is_empty() {
            None
        } else {
            Some(self.ms().ok()?)
        };
        for id in &ids {
            view.remove(id);
            let memory = uuid::Uuid::parse_str(id)
                .ok()
                .and_then(|uuid| ms?.get_memory(&MemoryId(uuid)).ok());
            if let Some(memory) = memory {
                view.push(&memory);
            }
        }
        // The record as checked at open, or (the engine still opening) as on disk; the check
        // that follows the engine's opening drops the view if it finds a loss.
        let record = self
            .integrity()
            .clone()
            .or_else(|| integrity::read(self.dir()));
        let sound = record.is_some_and(|rec| {
            rec.alert.is_none()
                && rec.count == view.records.len() as u64
                && rec.id_digest() == IdDigest::of(view.records.iter().map(|r| r.id()))
        });
        if !sound {
            integrity::log(
                "INFO",
                "saved ranking view does not hold the store's memories; rebuilding",
            );
            return None;
        }
        Some((view, ids.len()))
    }

    /// Let this store save its ranking view (the resident service: one process, between
    /// requests), now if the saved one lags.
    pub fn keep_view_saved(&self) {
        if let Some(saved) = &self.saved_view {
            if saved.writable {
                saved.keep.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }

    /// Writes were logged since the view was saved.
    pub(super) fn view_behind(&self) -> bool {
        self.saved_view
            .as_ref()
            .is_some_and(|s| s.writable && view_file::log_len(&s.dir) > 0)
    }

    /// Save the view on a thread of its own if many writes were logged since it was saved (a
    /// service's quiet moment). Not after every write: while a save holds the view, the next
    /// write copies it whole, which is slow at 10^5 memories (measured: docs/performance.md,
    /// "Figures moved from code comments"); the log only has to stay short enough to replay
    /// quickly after a crash. A service that stops saves it in any case.
    pub fn save_view_if_behind(&self) {
        let far_behind = self
            .saved_view
            .as_ref()
            .is_some_and(|s| s.writable && view_file::log_len(&s.dir) > SAVE_AFTER_LOG_BYTES);
        if far_behind {
            self.save_view(false);
        }
    }

    /// Save the view (when this store keeps it and has one): on a thread of its own unless `wait`.
    pub(super) fn save_view(&self, wait: bool) {
        let Some(saved) = self.saved_view.clone() else {
            return;
        };
        if !saved.keep.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let cell = self.rank_view_cell();
        let job = move || saved.save(&cell);
        if wait {
            job();
        } else if let Err(e) = std::thread::Builder::new()
            .name("save-view".into())
            .spawn(job)
        {
            integrity::log("WARN", &format!("cannot save the ranking view: {e}"));
        }
    }

    /// Note that memory `id` (`None`: anything) is about to be written or deleted. The returned
    /// guard is held until the views follow the write, so a view being saved is taken either
    /// before the write is logged or after it is in the view.
    pub(super) fn note_view_write(
        &self,
        id: Option<&str>,
    ) -> Option<std::sync::MutexGuard<'_, ()>> {
        let saved = self.saved_view.as_ref().filter(|s| s.writable)?;
        let guard = saved.log.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = view_file::note_write(&saved.dir, id) {
            // The saved view could no longer follow: it must not be used.
            integrity::log(
                "WARN",
                &format!("cannot log a write for the ranking view: {e}"),
            );
            view_file::discard(&saved.dir);
        }
        Some(guard)
    }

    fn rank_view_cell(&self) -> ViewCell {
        self.rank_view.clone()
    }

    /// Keep the content index (once built) in step with a write or delete.
    pub(super) fn update_content_index(&self, change: impl FnOnce(&mut ContentIndex)) {
        let mut guard = self.content_index.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(index) = guard.as_mut() {
            change(index);
        }
    }
}
