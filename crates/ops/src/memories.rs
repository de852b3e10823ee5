//! Writing, finding and deleting memories: remember, recall, proactive, list, get, forget,
//! context, brain.

use super::{parse_time, take_snapshot};
use super::{Caller, Direct, Operation};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use wt_memory_core::rank::{self, QueryKind};
use wt_memory_core::recall::{self, RecallQuery, COARSE_MARGIN};
use wt_memory_core::record::{self, parse_user_type, MemoryRecord, Redact};
use wt_memory_core::store::{EmbedderKind, NewMemory, Quantized, Store};
use wt_memory_foundation::error::{bad_input, not_found, other, Error, Result};
use wt_memory_foundation::hygiene;

/// Largest content `remember` accepts (characters). Bigger input is refused, not truncated.
pub const MAX_CONTENT_CHARS: usize = 100_000;
/// Largest query `recall`, `proactive` and `context` accept (characters): far above any real
/// question, far below what makes one call slow (a 2 MB query is refused, not ranked).
pub const MAX_QUERY_CHARS: usize = 20_000;
/// The most memories one answer may hold (`--limit`, an MCP tool's `limit`, a hook's index): the
/// store's scale. Every count a caller sends is checked against it where it crosses the socket
/// and the MCP boundary, so no count overflows or asks for an allocation the size of the address
/// space.
pub const MAX_COUNT: usize = 100_000;

/// Refuse a count above [`MAX_COUNT`].
pub fn check_count(cmd: &str, what: &str, n: usize) -> Result<()> {
    if n > MAX_COUNT {
        return Err(bad_input(format!(
            "{cmd}: {what} is {n}; the most is {MAX_COUNT}"
        )));
    }
    Ok(())
}

/// Fewest hex digits of an id that `get` and `forget` accept as a prefix: shorter ones match
/// memories by accident (`forget 2` once deleted whichever memory's id began with 2).
pub const MIN_ID_PREFIX: usize = 8;
/// `context <topic>` lists what concerns the topic: looser than the injection floor (0.3), because
/// the user asked for the topic, but it still drops the unrelated.
pub const CONTEXT_FLOOR: f64 = 0.1;

/// A memory to store, as a user or an agent gives it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Remember {
    /// Raw text: `<private>` spans are dropped and whitespace normalised before storing.
    pub content: String,
    /// Decision, Learning or Context (Observation and Event are accepted and mapped).
    pub memory_type: String,
    pub tags: Vec<String>,
    pub metadata: HashMap<String, String>,
    pub failure: bool,
    pub anomaly: bool,
    /// 0..1; default 0.5.
    pub importance: Option<f32>,
    /// An older memory this one replaces (its id, or a prefix of 8+ hex digits): recall ranks
    /// the older one lower and marks it, and the hooks stop injecting it.
    #[serde(default)]
    pub supersedes: Option<String>,
    /// Retrieval keys: questions a developer would ask when this memory helps, and an anchor line
    /// of the files, commands and identifiers it is specific to (at most 6, 200 characters each).
    #[serde(default)]
    pub keys: Vec<String>,
}

pub use wt_memory_core::record::TITLE;
/// A title's longest length, in characters.
pub const MAX_TITLE_CHARS: usize = 80;

/// What `remember` stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Remembered {
    pub id: String,
    /// The same content was already stored; `id` is that memory.
    pub duplicate: bool,
    /// A note on how the type was read (legacy type names), for stderr.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Why the memory is held for review instead of reaching the agent (hidden text, an order to
    /// the agent, ...): it is stored, never injected, listed by `wt-memory review`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
    /// Older memories on the same subject: the new one may replace one of them (then link them
    /// with `supersede`). Similarity alone cannot tell an update from a related fact
    /// (studies/supersede.py), so the writer decides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub similar: Vec<Similar>,
}

/// An older memory close in meaning to a new one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Similar {
    pub id: String,
    /// Content cosine, two decimals.
    pub similarity: f64,
    pub experience_type: String,
    /// The start of its content.
    pub content: String,
}

/// At most this many [`Similar`] memories per write.
const MAX_SIMILAR: usize = 3;
/// Limits of a memory's fields besides its content (see [`Remember::check`]).
pub const MAX_TAGS: usize = 50;
pub const MAX_TAG_CHARS: usize = 200;
pub const MAX_RAW_KEYS: usize = 50;
pub const MAX_RAW_KEY_CHARS: usize = 2_000;
pub const MAX_METADATA_ENTRIES: usize = 50;
pub const MAX_METADATA_VALUE_CHARS: usize = 10_000;

/// Characters of a [`Similar`] memory's content shown.
const SIMILAR_PREVIEW_CHARS: usize = 120;

/// A [`Remember`] that passed validation: nothing is left to refuse once the store is open.
pub struct CheckedRemember {
    new: NewMemory,
    note: Option<String>,
    supersedes: Option<String>,
}

impl CheckedRemember {
    /// The text the store will embed for this memory: its content as stored. `check` cleaned and
    /// redacted it already, and the store's own redaction on insert is idempotent.
    pub fn text_to_embed(&self) -> String {
        self.new.content.clone()
    }
}

/// `remember --metadata`: a JSON object; non-string values are stored as their JSON text.
pub fn parse_metadata(text: &str) -> Result<HashMap<String, String>> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map
            .into_iter()
            .map(|(k, v)| {
                let v = v
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string());
                (k, v)
            })
            .collect()),
        Ok(_) => Err(bad_input("remember: --metadata must be a JSON object")),
        Err(e) => Err(bad_input(format!(
            "remember: --metadata is not valid JSON: {e}"
        ))),
    }
}

impl Remember {
    /// The refusals a front end can give before sending the request: type, importance, and
    /// something left outside `<private>` spans. Cheaper than [`Remember::check`]: it skips the
    /// redaction (the process that stores redacts), whose rules are costly to compile in every
    /// process (measured: docs/performance.md, "Before the dated rounds: from a child process per
    /// call to the resident service").
    pub fn precheck(&self) -> Result<()> {
        self.check_fields()?;
        parse_user_type(&self.memory_type).map_err(bad_input)?;
        self.check_importance()?;
        self.checked_supersedes()?;
        if hygiene::strip_private(&self.content).trim().is_empty() {
            return Err(self.nothing_to_store());
        }
        Ok(())
    }

    /// The size of every field besides the content: a tag, key or metadata value is printed
    /// with the memory and retrieved by hooks, so a huge one costs every later call. The error
    /// names the field and never quotes it.
    fn check_fields(&self) -> Result<()> {
        let too_long = |what: &str, n: usize, limit: usize| {
            bad_input(format!(
                "remember: {what} is {n} characters; the limit is {limit}; nothing stored"
            ))
        };
        let too_many = |what: &str, n: usize, limit: usize| {
            bad_input(format!(
                "remember: {n} {what}; the limit is {limit}; nothing stored"
            ))
        };
        let chars = |s: &str| s.chars().count();
        if self.memory_type.len() > MAX_TAG_CHARS {
            return Err(too_long(
                "the type",
                chars(&self.memory_type),
                MAX_TAG_CHARS,
            ));
        }
        if self.tags.len() > MAX_TAGS {
            return Err(too_many("tags", self.tags.len(), MAX_TAGS));
        }
        if let Some(t) = self.tags.iter().find(|t| chars(t) > MAX_TAG_CHARS) {
            return Err(too_long("a tag", chars(t), MAX_TAG_CHARS));
        }
        if self.keys.len() > MAX_RAW_KEYS {
            return Err(too_many("retrieval keys", self.keys.len(), MAX_RAW_KEYS));
        }
        if let Some(k) = self.keys.iter().find(|k| chars(k) > MAX_RAW_KEY_CHARS) {
            return Err(too_long("a retrieval key", chars(k), MAX_RAW_KEY_CHARS));
        }
        if self.metadata.len() > MAX_METADATA_ENTRIES {
            return Err(too_many(
                "metadata entries",
                self.metadata.len(),
                MAX_METADATA_ENTRIES,
            ));
        }
        for (k, v) in &self.metadata {
            if chars(k) > MAX_TAG_CHARS {
                return Err(too_long("a metadata key", chars(k), MAX_TAG_CHARS));
            }
            if chars(v) > MAX_METADATA_VALUE_CHARS {
                return Err(too_long(
                    &format!(
                        "metadata value `{}`",
                        wt_memory_foundation::hygiene::truncate_chars(k, 40)
                    ),
                    chars(v),
                    MAX_METADATA_VALUE_CHARS,
                ));
            }
        }
        if let Some(title) = self.metadata.get(TITLE) {
            if chars(title) > MAX_TITLE_CHARS {
                return Err(too_long("the title", chars(title), MAX_TITLE_CHARS));
            }
        }
        if let Some(id) = &self.supersedes {
            if id.len() > 64 {
                return Err(too_long("--supersedes", chars(id), 64));
            }
        }
        Ok(())
    }

    fn check_importance(&self) -> Result<()> {
        match self.importance {
            Some(i) if !(0.0..=1.0).contains(&i) => {
                Err(bad_input("remember: --importance must be between 0 and 1"))
            }
            _ => Ok(()),
        }
    }

    fn checked_supersedes(&self) -> Result<Option<String>> {
        self.supersedes
            .as_deref()
            .map(|id| checked_id("remember --supersedes", id))
            .transpose()
    }

    fn nothing_to_store(&self) -> Error {
        let why = if self.content.trim().is_empty() {
            "the input is empty (pipe the text to remember on stdin)"
        } else {
            "all of the input is inside <private>...</private>"
        };
        Error::NothingToStore { why: why.into() }
    }

    /// Every rule that needs no store: type, importance, content present and within the limit.
    pub fn check(&self) -> Result<CheckedRemember> {
        self.check_fields()?;
        let (experience_type, note) = parse_user_type(&self.memory_type).map_err(bad_input)?;
        self.check_importance()?;
        let supersedes = self.checked_supersedes()?;
        let content = hygiene::clean_content(&self.content);
        if content.is_empty() {
            return Err(self.nothing_to_store());
        }
        let chars = content.chars().count();
        if chars > MAX_CONTENT_CHARS {
            return Err(bad_input(format!("remember: content is {chars} characters; the limit is {MAX_CONTENT_CHARS} (store a summary instead)")));
        }
        let mut new = NewMemory::new(&content, experience_type);
        new.tags = self.tags.clone();
        new.metadata = self.metadata.clone();
        let keys = record::clean_keys(&self.keys);
        if !keys.is_empty() {
            new.metadata
                .insert(record::KEYS.to_string(), keys.join("\n"));
        }
        new.is_failure = self.failure;
        new.is_anomaly = self.anomaly;
        if let Some(i) = self.importance {
            new.importance = i;
        }
        Ok(CheckedRemember {
            new,
            note,
            supersedes,
        })
    }
}

/// Store a checked memory, tagged with the caller's branch unless it names one.
pub fn remember(store: &Store, req: CheckedRemember, caller: &Caller) -> Result<Remembered> {
    let mut new = req.new;
    if let Some(id) = &req.supersedes {
        let Some(older) = resolve_id(store, "remember --supersedes", id)?
            .filter(|full| store.get(full).ok().flatten().is_some())
        else {
            return Err(not_found(format!(
                "remember: no memory {id} to supersede; nothing stored (see `wt-memory list`)"
            )));
        };
        new.metadata.insert(record::SUPERSEDES.to_string(), older);
    }
    if !new.tags.iter().any(|t| t.starts_with("branch:")) {
        if let Some(b) = &caller.branch {
            new.tags.push(format!("branch:{b}"));
        }
    }
    new.provenance = wt_memory_core::trust::Provenance::of_writer(caller.source.as_deref());
    let keys: Vec<String> = new
        .metadata
        .get(record::KEYS)
        .map(|k| record::split_keys(k).map(str::to_string).collect())
        .unwrap_or_default();
    let ins = store
        .insert(new)
        .map_err(|e| other(format!("remember failed, nothing stored: {e:#}")))?;
    if ins.duplicate && !keys.is_empty() {
        // The same content again, now with keys: the stored memory takes them if it has none.
        if let Some(existing) = store.get(&ins.id)? {
            if MemoryRecord::from_memory(&existing).keys().is_empty() {
                store
                    .write_keys(&existing, &keys)
                    .map_err(|e| other(format!("remember: keys not stored: {e:#}")))?;
            }
        }
    }
    // Only a writer who reads the answer can act on it: a person (CLI) or an agent (MCP), not
    // the hooks' saves or sync, which would pay a pass over every memory for nothing.
    let reads_answer = matches!(caller.source.as_deref(), None | Some("cli" | "mcp"));
    let similar = if ins.duplicate || !reads_answer {
        Vec::new()
    } else {
        similar_older(store, &ins.id)?
    };
    // Said once, by the write that created the store without the model: nothing is lost, and the
    // store re-embeds itself the first time it is opened with the model.
    let note = match (req.note, store.take_created_without_model()) {
        (note, false) => note,
        (note, true) => Some(
            note.into_iter()
                .chain(["wt-memory: note: stored without the embedding model, so recall matches words only until `wt-memory setup` installs it; the store re-embeds itself once it is there".to_string()])
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    };
    Ok(Remembered {
        id: ins.id,
        duplicate: ins.duplicate,
        note,
        held: ins.held,
        similar,
    })
}

/// The older memories on the same subject as memory `id` (content cosine at least the ranker's
/// [`rank::SAME_SUBJECT`]) that nothing has replaced yet and `id` does not already replace, most
/// similar first. One dot product per memory, over the ranking view a daemon keeps resident.
fn similar_older(store: &Store, id: &str) -> Result<Vec<Similar>> {
    if store.ensure_embedder()? != EmbedderKind::MinilmL6 {
        // The hash fallback's vectors put every pair at a high cosine: all would look "similar"
        // (measured: docs/evaluation.md, "Without the embedding model").
        return Ok(Vec::new());
    }
    let view = store.rank_view()?;
    let Some(at) = view.records.iter().rposition(|r| r.id() == id) else {
        return Ok(Vec::new());
    };
    let (new, norm) = (view.embedding(at), view.norm(at));
    let replaces = view.records.get(at).metadata(record::SUPERSEDES);
    let created = view.records.get(at).created_at();
    // The coarse cosine first, in one pass over the view's int8 rows; only the few memories close
    // enough are scored exactly and looked at further.
    let coarse = view.coarse_content(&Quantized::new(&new));
    let mut similar: Vec<(f64, usize)> = (0..view.records.len())
        .filter(|&i| i != at && coarse[i] as f64 >= rank::SAME_SUBJECT - COARSE_MARGIN)
        .map(|i| {
            (
                rank::cosine_normed(&new, norm, &view.embedding(i), view.norm(i)),
                i,
            )
        })
        .filter(|&(cos, _)| cos >= rank::SAME_SUBJECT)
        .filter(|&(_, i)| {
            let r = view.records.get(i);
            r.created_at() <= created
                && Some(r.id()) != replaces
                && !view.superseded_by.contains_key(r.id())
                // A held memory's text is shown to no writer, least of all the agent.
                && !r.has_tag(wt_memory_core::trust::HELD_TAG)
        })
        .collect();
    similar.sort_by(|a, b| b.0.total_cmp(&a.0));
    Ok(similar
        .into_iter()
        .take(MAX_SIMILAR)
        .map(|(cos, i)| {
            let r = view.records.get(i);
            Similar {
                id: r.id().to_string(),
                similarity: (cos * 100.0).round() / 100.0,
                experience_type: r.experience_type().to_string(),
                // Redacted before it is cut, so a secret cut in two is still found.
                content: wt_memory_foundation::hygiene::redact(&r.content())
                    .chars()
                    .take(SIMILAR_PREVIEW_CHARS)
                    .collect(),
            }
        })
        .collect())
}

/// What `supersede` did: the newer memory, now marked as the replacement of the older one.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Superseded {
    pub newer: String,
    pub older: String,
}

/// Mark memory `newer` as the replacement of memory `older` (ids or prefixes of 8+ hex digits):
/// recall then ranks the older one after it and marks it, and the hooks stop injecting it.
pub fn supersede(store: &Store, newer: &str, older: &str) -> Result<Superseded> {
    let find = |id: &str| -> Result<std::sync::Arc<shodh_memory::memory::Memory>> {
        resolve_id(store, "supersede", id)?
            .and_then(|full| store.get(&full).ok().flatten())
            .ok_or_else(|| {
                not_found(format!(
                    "supersede: no memory {id}; nothing changed (see `wt-memory list`)"
                ))
            })
    };
    let (new, old) = (find(newer)?, find(older)?);
    let (new_id, old_id) = (new.id.0.to_string(), old.id.0.to_string());
    if new_id == old_id {
        return Err(bad_input("supersede: a memory cannot replace itself"));
    }
    if old.experience.metadata.get(record::SUPERSEDES) == Some(&new_id) {
        return Err(bad_input(format!(
            "supersede: {old_id} already replaces {new_id}; nothing changed"
        )));
    }
    store
        .set_supersedes(&new, &old_id)
        .map_err(|e| other(format!("supersede failed, nothing changed: {e:#}")))?;
    Ok(Superseded {
        newer: new_id,
        older: old_id,
    })
}

/// How `recall` orders what it finds.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RecallMode {
    // Plain comments, not docs: a documented variant makes the tools' JSON schema much longer
    // (measured: docs/performance.md, "Figures moved from code comments"), and the schema is sent
    // with every request of a session.
    // Meaning and keywords combined, current branch first.
    #[default]
    Hybrid,
    // Meaning only.
    Semantic,
    // The same relevant memories as hybrid, newest first.
    Temporal,
}

impl RecallMode {
    pub const NAMES: [&'static str; 3] = ["hybrid", "semantic", "temporal"];

    pub fn parse(s: &str) -> Result<RecallMode> {
        match s {
            "hybrid" => Ok(RecallMode::Hybrid),
            "semantic" => Ok(RecallMode::Semantic),
            "temporal" => Ok(RecallMode::Temporal),
            other => Err(bad_input(format!(
                "recall: unknown --mode '{other}' (use one of {})",
                Self::NAMES.join(", ")
            ))),
        }
    }
}

/// A search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recall {
    pub query: String,
    pub limit: usize,
    pub mode: RecallMode,
    /// Only memories carrying every one of these tags.
    pub tags: Vec<String>,
    /// Ignore the query: the tagged memories, newest first.
    pub tags_only: bool,
    pub min_importance: Option<f32>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// What the query is (None: inferred from its shape).
    #[serde(default)]
    pub kind: Option<QueryKind>,
    /// Say in each result's `relevance_reason` how the agent used the memory and what that does
    /// to the hooks (the use prior).
    #[serde(default)]
    pub explain: bool,
}

impl Default for Recall {
    fn default() -> Self {
        Recall {
            query: String::new(),
            limit: 5,
            mode: RecallMode::Hybrid,
            tags: Vec::new(),
            tags_only: false,
            min_importance: None,
            since: None,
            until: None,
            kind: None,
            explain: false,
        }
    }
}

/// A query short enough to rank.
pub fn check_query(what: &str, text: &str) -> Result<()> {
    let chars = text.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(bad_input(format!("{what}: the query is {chars} characters; the limit is {MAX_QUERY_CHARS} (ask with a few words or sentences)")));
    }
    Ok(())
}

impl Recall {
    pub fn check(&self) -> Result<()> {
        if self.tags_only && self.tags.is_empty() {
            return Err(bad_input("recall: --tags-only needs --tags"));
        }
        check_count("recall", "--limit", self.limit)?;
        check_query("recall", &self.query)
    }

    /// `--since`/`--until` from the command line or a tool argument.
    pub fn with_dates(mut self, since: Option<&str>, until: Option<&str>) -> Result<Self> {
        self.since = since.map(|s| parse_time(s, "--since")).transpose()?;
        self.until = until.map(|s| parse_time(s, "--until")).transpose()?;
        Ok(self)
    }
}

pub fn recall(store: &Store, req: &Recall, caller: &Caller) -> Result<Vec<MemoryRecord>> {
    req.check()?;
    let q = RecallQuery {
        text: req.query.clone(),
        limit: req.limit,
        tags: req.tags.clone(),
        min_importance: req.min_importance,
        since: req.since,
        until: req.until,
        branch: caller.branch.clone(),
        semantic_only: req.mode == RecallMode::Semantic,
        kind: req.kind,
    };
    let dated = q.since.is_some() || q.until.is_some();
    if req.tags_only || (dated && q.text.trim().is_empty()) {
        return Ok(recall::filtered_newest(store, &q)?);
    }
    let mut found = recall::recall(store, &q)?;
    for record in &mut found {
        if let Some(note) = staleness(store, record).and_then(|f| f.note()) {
            let reason = record.relevance_reason.take().unwrap_or_default();
            record.relevance_reason = Some(if reason.is_empty() {
                note
            } else {
                format!("{reason}; {note}")
            });
        }
    }
    if req.mode == RecallMode::Temporal {
        // RFC 3339 times of one writer sort as text.
        found.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    }
    Ok(found)
}

/// Memories worth injecting for a context (gated by relevance; never stores the context).
pub fn proactive(
    store: &Store,
    context: &str,
    kind: Option<QueryKind>,
    limit: usize,
    caller: &Caller,
    use_prior: &dyn Fn(&str) -> f64,
) -> Result<Vec<MemoryRecord>> {
    check_query("proactive", context)?;
    let branch = caller.branch.as_deref();
    let mut found = recall::proactive(store, context, kind, limit, branch, use_prior)?;
    let gone = mark_stale(store, &mut found);
    found.retain(|r| !gone.contains(&r.id));
    Ok(found)
}

/// How a memory's code anchors compare with the repository now (None: it has none, or the
/// store does not know its repository).
pub fn staleness(
    store: &Store,
    record: &MemoryRecord,
) -> Option<wt_memory_core::anchors::Freshness> {
    let value = record.metadata.get(wt_memory_core::anchors::ANCHORS)?;
    store.freshness(value)
}

/// Memories about to be injected, checked against the files they name: one whose file changed
/// says so first (`(src/a.rs changed since) …`); the ids of those whose file is gone are
/// returned (they are not injected in full) and their titles say so.
fn mark_stale(store: &Store, records: &mut [MemoryRecord]) -> Vec<String> {
    let mut gone = Vec::new();
    for record in records {
        let Some(state) = staleness(store, record) else {
            continue;
        };
        let Some(note) = state.note() else { continue };
        if state.gone.is_empty() {
            record.content = format!("({note}) {}", record.content);
        } else {
            let title = match record.metadata.get(TITLE) {
                Some(own) => own.clone(),
                None => hygiene::truncate_chars(&record.content, MAX_TITLE_CHARS).to_string(),
            };
            record
                .metadata
                .insert(TITLE.to_string(), format!("({note}) {title}"));
            gone.push(record.id.clone());
        }
    }
    gone
}

pub use wt_memory_core::anchors::StaleMemory;

/// Every memory whose anchors changed or vanished, newest first.
pub fn stale(store: &Store) -> Result<Vec<StaleMemory>> {
    let mut out = Vec::new();
    for record in store.records()? {
        let Some(state) = staleness(store, &record) else {
            continue;
        };
        if state.is_fresh() {
            continue;
        }
        out.push(StaleMemory {
            preview: record.preview(),
            id: record.id,
            changed: state.changed,
            gone: state.gone,
        });
    }
    Ok(out)
}

/// Memories older than `days`, not in `used` (what the agent used in that window), whose code
/// anchors changed or vanished: for `audit` to list, oldest first.
pub fn to_review(
    store: &Store,
    used: &std::collections::HashSet<String>,
    days: i64,
) -> Result<Vec<wt_memory_core::dedup::Review>> {
    let cutoff = Utc::now() - chrono::Duration::days(days);
    let mut out = Vec::new();
    for record in store.records()? {
        let old = DateTime::parse_from_rfc3339(&record.created_at)
            .is_ok_and(|t| t.with_timezone(&Utc) < cutoff);
        if !old || used.contains(&record.id) {
            continue;
        }
        let Some(state) = staleness(store, &record) else {
            continue;
        };
        if state.is_fresh() {
            continue;
        }
        out.push(wt_memory_core::dedup::Review {
            preview: record.preview(),
            id: record.id,
            created_at: record.created_at,
            changed: state.changed,
            gone: state.gone,
        });
    }
    out.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    Ok(out)
}

/// The memories a hook injects in full and those it lists below them.
pub fn tiers(
    store: &Store,
    ask: &recall::TierAsk,
    use_prior: &dyn Fn(&str) -> f64,
) -> Result<recall::Tiers> {
    check_query("proactive", ask.context)?;
    let mut tiers = recall::tiers(store, ask, use_prior)?;
    // A memory whose file is gone is listed in the index at most, marked.
    let gone = mark_stale(store, &mut tiers.full);
    mark_stale(store, &mut tiers.index);
    let (demoted, full): (Vec<_>, Vec<_>) =
        tiers.full.into_iter().partition(|r| gone.contains(&r.id));
    tiers.full = full;
    tiers.index.splice(0..0, demoted);
    Ok(tiers)
}

/// `list`: newest first, optionally one type.
pub fn list(
    store: &Store,
    memory_type: Option<&str>,
    limit: Option<usize>,
) -> Result<Vec<MemoryRecord>> {
    let mut records = store.records()?;
    if let Some(t) = memory_type {
        let want = parse_user_type(t)
            .map(|(ty, _)| ty)
            .unwrap_or_else(|_| record::parse_any_type(t));
        let want = record::type_name(&want);
        records.retain(|r| r.experience_type == want);
    }
    if let Some(n) = limit {
        records.truncate(n);
    }
    Ok(records)
}

/// `id` checked and normalised for `get` and `forget`: a full id, or a prefix of one with at least
/// [`MIN_ID_PREFIX`] hex digits (lower-cased). Anything else is refused with what to do.
pub fn checked_id(cmd: &str, id: &str) -> Result<String> {
    let id = id.trim();
    if let Ok(uuid) = uuid::Uuid::parse_str(id) {
        return Ok(uuid.hyphenated().to_string());
    }
    let hint = format!(
        "give the full id or at least {MIN_ID_PREFIX} hex digits of it (see `wt-memory list`)"
    );
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Err(bad_input(format!(
            "{cmd}: '{id}' is not a memory id; {hint}"
        )));
    }
    if id.chars().filter(char::is_ascii_hexdigit).count() < MIN_ID_PREFIX {
        return Err(bad_input(format!(
            "{cmd}: id prefix '{id}' is too short; {hint}"
        )));
    }
    Ok(id.to_ascii_lowercase())
}

/// The full id that a [`checked_id`] names: itself when it is a full id, else the one memory whose
/// id starts with it (`None` when none does). An ambiguous prefix is refused.
pub(super) fn resolve_id(store: &Store, cmd: &str, id: &str) -> Result<Option<String>> {
    if uuid::Uuid::parse_str(id).is_ok() {
        return Ok(Some(id.to_string()));
    }
    let view = store.rank_view()?;
    let mut matches: Vec<String> = view
        .records
        .iter()
        .filter(|r| r.id().starts_with(id))
        .map(|r| r.id().to_string())
        .collect();
    match matches.len() {
        0 | 1 => Ok(matches.pop()),
        n => Err(bad_input(format!(
            "{cmd}: id prefix '{id}' is ambiguous: {n} memories match; give more digits or the full id"
        ))),
    }
}

/// One memory by a [`checked_id`].
pub fn get(store: &Store, id: &str) -> Result<Option<MemoryRecord>> {
    Ok(match resolve_id(store, "get", id)? {
        Some(full) => store.get(&full)?.map(|m| MemoryRecord::from_memory(&m)),
        None => None,
    })
}

/// Metadata of a failure record (hooks' guard): how often its command failed, its latest form, when.
pub const FAILURE_COUNT: &str = "failure_count";
pub const FAILURE_COMMAND: &str = "failure_command";
pub const LAST_FAILED: &str = "last_failed";

/// A failure record's command failed again as `command`: the record keeps one entry per mistake,
/// counting it and keeping the latest form and time.
pub fn failed_again(store: &Store, id: &str, command: &str) -> Result<MemoryRecord> {
    let memory = resolve_id(store, "failed-again", id)?
        .and_then(|full| store.get(&full).ok().flatten())
        .ok_or_else(|| not_found(format!("no memory {id}; nothing changed")))?;
    let count = memory
        .experience
        .metadata
        .get(FAILURE_COUNT)
        .and_then(|c| c.parse::<u64>().ok())
        .unwrap_or(1);
    store
        .set_metadata(
            &memory,
            [
                (FAILURE_COUNT.to_string(), (count + 1).to_string()),
                (FAILURE_COMMAND.to_string(), command.to_string()),
                (LAST_FAILED.to_string(), Store::now()),
            ],
        )
        .map_err(|e| other(format!("failed-again: nothing changed: {e:#}")))?;
    let updated = store
        .get(&memory.id.0.to_string())?
        .ok_or_else(|| other("the memory vanished while it was updated"))?;
    Ok(MemoryRecord::from_memory(&updated))
}

/// What `forget` deletes: one id, or every memory matching any of the filters.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Forget {
    pub id: Option<String>,
    pub all: bool,
    pub confirm: bool,
    pub older_than_days: Option<u32>,
    pub tags: Vec<String>,
    pub pattern: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
}

/// What `forget` did: `{"deleted", "id"}` for one id, `{"deleted_count"}` for filters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Forgotten {
    One { deleted: bool, id: String },
    Many { deleted_count: usize },
}

impl Forget {
    fn dated(&self) -> bool {
        self.since.is_some() || self.until.is_some()
    }

    /// Refuses a forget that names nothing, a bulk one without `confirm`, a bad id or regex.
    pub fn check(&self) -> Result<Option<regex::Regex>> {
        let nothing = self.id.is_none()
            && !self.all
            && self.older_than_days.is_none()
            && self.tags.is_empty()
            && self.pattern.is_none()
            && !self.dated();
        if nothing {
            return Err(bad_input("forget: say what to forget: <id>, --tags, --pattern, --older-than, --since/--until --confirm, or --all --confirm"));
        }
        if (self.all || self.dated()) && !self.confirm {
            return Err(bad_input(
                "forget: --all and date ranges delete many memories; add --confirm",
            ));
        }
        if let Some(id) = &self.id {
            checked_id("forget", id)?;
        }
        self.pattern
            .as_deref()
            .map(regex::Regex::new)
            .transpose()
            .map_err(|e| {
                let why = e
                    .to_string()
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim()
                    .to_string();
                bad_input(format!("forget: --pattern is not a valid regex: {why}"))
            })
    }

    /// The answer when there is no store at all.
    pub fn nothing_found(&self) -> Result<Forgotten> {
        self.check()?;
        Ok(match &self.id {
            Some(id) => Forgotten::One {
                deleted: false,
                id: checked_id("forget", id)?,
            },
            None => Forgotten::Many { deleted_count: 0 },
        })
    }
}

pub fn forget(store: &Store, req: &Forget) -> Result<Forgotten> {
    let pattern = req.check()?;
    if let Some(id) = &req.id {
        let id = checked_id("forget", id)?;
        let target = resolve_id(store, "forget", &id)?;
        let deleted = match &target {
            Some(full) => store.delete_many([full.as_str()])? == 1,
            None => false,
        };
        return Ok(Forgotten::One {
            deleted,
            id: target.unwrap_or(id),
        });
    }
    let dated = req.dated();
    let cutoff = req
        .older_than_days
        .map(|d| Utc::now() - chrono::Duration::days(d as i64));
    let records = store.records()?;
    let victims: Vec<&str> = records
        .iter()
        .filter(|r| {
            let created = DateTime::parse_from_rfc3339(&r.created_at)
                .map(|t| t.with_timezone(&Utc))
                .ok();
            req.all
                || req.tags.iter().any(|t| r.has_tag(t))
                || pattern.as_ref().is_some_and(|p| p.is_match(&r.content))
                || cutoff.is_some_and(|c| created.is_some_and(|t| t < c))
                || (dated
                    && created.is_some_and(|t| {
                        req.since.is_none_or(|s| t >= s) && req.until.is_none_or(|u| t <= u)
                    }))
        })
        .map(|r| r.id.as_str())
        .collect();
    if !victims.is_empty() {
        take_snapshot(store, "forget")?;
    }
    Ok(Forgotten::Many {
        deleted_count: store.delete_many(victims)?,
    })
}

/// `context`: decisions, learnings and context, about a topic if given.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ContextSummary {
    pub topic: Option<String>,
    pub decisions: Vec<MemoryRecord>,
    pub learnings: Vec<MemoryRecord>,
    pub context: Vec<MemoryRecord>,
    pub total_memories: usize,
}

impl Redact for ContextSummary {
    fn redact(&mut self) {
        self.decisions.redact();
        self.learnings.redact();
        self.context.redact();
    }
}

pub fn context(store: &Store, topic: Option<&str>) -> Result<ContextSummary> {
    let topic = topic.map(str::trim).filter(|t| !t.is_empty());
    let records = match topic {
        Some(t) => {
            check_query("context", t)?;
            let q = RecallQuery {
                text: t.to_string(),
                limit: usize::MAX,
                ..Default::default()
            };
            // A memory tagged with the topic (exact, case-insensitive) belongs to it whatever its
            // content scores; those come first, then content matches above the floor.
            let wanted = t.to_lowercase();
            let (mut tagged, rest): (Vec<MemoryRecord>, Vec<MemoryRecord>) =
                recall::ranked(store, &q)?
                    .into_iter()
                    .partition(|r| r.tags.iter().any(|tag| tag.to_lowercase() == wanted));
            tagged.extend(
                rest.into_iter()
                    .filter(|r| r.relevance_score.unwrap_or(0.0) >= CONTEXT_FLOOR),
            );
            tagged
        }
        None => store.records()?,
    };
    let pick = |ty: &str| -> Vec<MemoryRecord> {
        records
            .iter()
            .filter(|r| r.experience_type == ty)
            .take(5)
            .cloned()
            .collect()
    };
    Ok(ContextSummary {
        topic: topic.map(str::to_string),
        decisions: pick("Decision"),
        learnings: pick("Learning"),
        context: pick("Context"),
        total_memories: store.count(),
    })
}

/// `brain`: the engine's tiers as a one-shot process sees them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BrainReport {
    pub working: Vec<MemoryRecord>,
    pub session: Vec<MemoryRecord>,
    pub longterm: Vec<MemoryRecord>,
    pub note: String,
}

impl Redact for BrainReport {
    fn redact(&mut self) {
        self.working.redact();
        self.session.redact();
        self.longterm.redact();
    }
}

pub const BRAIN_NOTE: &str = "each wt-memory call is a fresh process, so every memory is long-term";

pub fn brain(records: Vec<MemoryRecord>) -> BrainReport {
    BrainReport {
        longterm: records.into_iter().take(100).collect(),
        note: BRAIN_NOTE.into(),
        ..Default::default()
    }
}

/// Writing, finding and deleting memories.
pub(super) const OPERATIONS: &[super::Registered] = &[
    super::entry::<Remember>(),
    super::entry::<Recall>(),
    super::entry::<Proactive>(),
    super::entry::<Tiers>(),
    super::entry::<List>(),
    super::entry::<Get>(),
    super::entry::<FailedAgain>(),
    super::entry::<Supersede>(),
    super::entry::<Forget>(),
    super::entry::<Context>(),
    super::entry::<Brain>(),
    super::entry::<Stale>(),
];

impl Operation for Remember {
    const NAME: &'static str = "remember";
    type Answer = Remembered;
    const NEEDS_CALLER: bool = true;
    fn validate(&self) -> Result<()> {
        self.precheck()
    }
    fn texts_to_embed(&self) -> Vec<String> {
        self.check()
            .map(|c| c.text_to_embed())
            .into_iter()
            .collect()
    }
    fn run(&self, direct: &mut Direct, caller: &Caller) -> Result<Remembered> {
        // The full check redacts: only the process that stores pays for its rules.
        let checked = self.check()?;
        let done = direct.write(|s| remember(s, checked, caller))?;
        if !done.duplicate {
            let source = caller.source.as_deref().unwrap_or("cli");
            // `extraction:outside` is an extraction to the metrics log.
            let source = source.split(':').next().unwrap_or(source);
            direct.record_write(source, Some(&done.id), 1);
        }
        Ok(done)
    }
}

impl Operation for Recall {
    const NAME: &'static str = "recall";
    type Answer = Vec<MemoryRecord>;
    const NEEDS_CALLER: bool = true;
    const FROM_VIEW: bool = true;
    fn validate(&self) -> Result<()> {
        self.check()
    }
    fn texts_to_embed(&self) -> Vec<String> {
        if self.check().is_err() || self.tags_only || self.query.trim().is_empty() {
            return Vec::new();
        }
        let kind = self.kind.unwrap_or_else(|| QueryKind::infer(&self.query));
        recall::query_texts(&self.query, kind, self.mode == RecallMode::Semantic)
    }
    fn run(&self, direct: &mut Direct, caller: &Caller) -> Result<Vec<MemoryRecord>> {
        let mut found = direct.read(|s| recall(s, self, caller))?;
        if self.explain {
            let uses = direct.recorder().use_counts();
            for r in &mut found {
                let counts = uses.get(&r.id).copied().unwrap_or_default();
                let mut use_note = format!("; use: {}", counts.explain());
                let learned = r.learned_keys();
                if !learned.is_empty() {
                    use_note.push_str(&format!("; keys learned from use: {learned:?}"));
                }
                let why = r.relevance_reason.get_or_insert_with(String::new);
                why.push_str(&use_note);
            }
        }
        Ok(found)
    }
}

/// The texts a proactive query embeds: the context and, when long, its parts.
fn context_texts(context: &str, kind: Option<QueryKind>) -> Vec<String> {
    if context.trim().is_empty() || check_query("proactive", context).is_err() {
        return Vec::new();
    }
    let kind = kind.unwrap_or_else(|| QueryKind::infer(context));
    recall::query_texts(context, kind, false)
}

/// The use counts a query's relevance is shifted by: none when its caller turned the prior off.
fn use_prior(direct: &Direct, on: bool) -> std::sync::Arc<crate::metrics::UseCountsOf> {
    if on {
        direct.recorder().use_counts()
    } else {
        Default::default()
    }
}

fn yes() -> bool {
    true
}

/// Memories worth injecting for a context, a query of `kind` (None: inferred from its shape).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Proactive {
    pub context: String,
    pub limit: usize,
    #[serde(default)]
    pub kind: Option<QueryKind>,
    /// Shift relevance by use (the caller's `WT_MEMORY_USE_PRIOR`).
    #[serde(default = "yes")]
    pub use_prior: bool,
}

impl Proactive {
    pub fn new(context: &str, kind: Option<QueryKind>, limit: usize) -> Proactive {
        Proactive {
            context: context.to_string(),
            limit,
            kind,
            use_prior: wt_memory_base::config::get().use_prior,
        }
    }
}

impl Operation for Proactive {
    const NAME: &'static str = "proactive";
    type Answer = Vec<MemoryRecord>;
    const NEEDS_CALLER: bool = true;
    const FROM_VIEW: bool = true;
    fn validate(&self) -> Result<()> {
        check_count("proactive", "the limit", self.limit)?;
        check_query("proactive", &self.context)
    }
    fn texts_to_embed(&self) -> Vec<String> {
        context_texts(&self.context, self.kind)
    }
    fn run(&self, direct: &mut Direct, caller: &Caller) -> Result<Vec<MemoryRecord>> {
        let uses = use_prior(direct, self.use_prior);
        let prior = |id: &str| uses.get(id).map_or(0.0, |c| c.prior());
        direct.read(|s| proactive(s, &self.context, self.kind, self.limit, caller, &prior))
    }
}

/// A hook's query: what [`Proactive`] answers, in full, and up to `index` more to list by title.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tiers {
    pub context: String,
    pub limit: usize,
    pub index: usize,
    pub kind: Option<QueryKind>,
    #[serde(default = "yes")]
    pub use_prior: bool,
    /// This store is read beside another (the personal store beside a project's): no new-user
    /// gates, whatever its size, and its relevance on the other's scale
    /// (`recall::on_project_scale`).
    #[serde(default)]
    pub supplement: bool,
    /// The embeddings of the query's texts, when the caller has them from the same model (see
    /// [`Operation::embedded`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vectors: Vec<Vec<f32>>,
}

impl Tiers {
    pub fn new(context: &str, kind: Option<QueryKind>, limit: usize, index: usize) -> Tiers {
        Tiers {
            context: context.to_string(),
            limit,
            index,
            kind,
            use_prior: wt_memory_base::config::get().use_prior,
            supplement: false,
            vectors: Vec::new(),
        }
    }
}

impl Operation for Tiers {
    const NAME: &'static str = "tiers";
    type Answer = recall::Tiers;
    const NEEDS_CALLER: bool = true;
    const FROM_VIEW: bool = true;
    fn validate(&self) -> Result<()> {
        check_count("proactive", "the limit", self.limit)?;
        check_count("proactive", "the index limit", self.index)?;
        check_query("proactive", &self.context)?;
        if !self.vectors.is_empty() && self.vectors.len() != self.texts_to_embed().len() {
            return Err(bad_input(format!(
                "proactive: {} embeddings for {} texts",
                self.vectors.len(),
                self.texts_to_embed().len()
            )));
        }
        Ok(())
    }
    fn texts_to_embed(&self) -> Vec<String> {
        context_texts(&self.context, self.kind)
    }
    fn embedded(&self) -> &[Vec<f32>] {
        &self.vectors
    }
    fn run(&self, direct: &mut Direct, caller: &Caller) -> Result<recall::Tiers> {
        let uses = use_prior(direct, self.use_prior);
        let prior = |id: &str| uses.get(id).map_or(0.0, |c| c.prior());
        let ask = recall::TierAsk {
            context: &self.context,
            kind: self.kind,
            limit: self.limit,
            index_limit: self.index,
            branch: caller.branch.as_deref(),
            supplement: self.supplement,
        };
        let mut answer = direct.read(|s| tiers(s, &ask, &prior))?;
        // Here, in the service, the content check's rules are compiled once; a hook process
        // would compile them for every prompt (120 ms, release).
        let withheld = wt_memory_core::trust::withheld_together(&answer.full);
        answer.full.retain(|m| !withheld.contains(&m.id));
        answer.checked_together = true;
        Ok(answer)
    }
}

/// Memories newest first, of one type or all.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct List {
    pub memory_type: Option<String>,
    pub limit: Option<usize>,
}

impl Operation for List {
    const NAME: &'static str = "list";
    type Answer = Vec<MemoryRecord>;
    fn validate(&self) -> Result<()> {
        check_count("list", "--limit", self.limit.unwrap_or(0))
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Vec<MemoryRecord>> {
        direct.read(|s| list(s, self.memory_type.as_deref(), self.limit))
    }
}

/// One memory by full id or unique prefix of [`MIN_ID_PREFIX`]+ hex digits. Its arguments are the
/// command line's (`wt-memory get ID`) and the MCP tool's (`get_memory`).
#[derive(Debug, Clone, Serialize, Deserialize, clap::Args, schemars::JsonSchema)]
pub struct Get {
    /// The memory id (as recall, list or remember give it), or 8+ hex digits of it.
    pub id: String,
}

impl Operation for Get {
    const NAME: &'static str = "get";
    type Answer = Option<MemoryRecord>;
    fn validate(&self) -> Result<()> {
        checked_id("get", &self.id).map(drop)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Option<MemoryRecord>> {
        let id = checked_id("get", &self.id)?;
        direct.read(|s| get(s, &id))
    }
}

/// Change the one memory `id` names (a full id or a prefix, checked as `cmd` checks ids), with
/// the error every such operation gives when it names none.
pub(super) fn change_one<T>(
    direct: &mut Direct,
    cmd: &str,
    id: &str,
    change: impl FnOnce(&Store, &str) -> Result<T>,
) -> Result<T> {
    let id = checked_id(cmd, id)?;
    direct
        .change(|s| change(s, &id))?
        .ok_or_else(|| not_found(format!("no memory {id}")))
}

/// A failure record's command failed again (the hooks' guard): its count and latest form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailedAgain {
    pub id: String,
    pub command: String,
}

impl Operation for FailedAgain {
    const NAME: &'static str = "failed_again";
    type Answer = MemoryRecord;
    fn validate(&self) -> Result<()> {
        checked_id("failed-again", &self.id).map(drop)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<MemoryRecord> {
        change_one(direct, "failed-again", &self.id, |s, id| {
            failed_again(s, id, &self.command)
        })
    }
}

/// Mark memory `newer` as the replacement of memory `older` (ids or prefixes). Its arguments are
/// the command line's (`wt-memory supersede NEWER OLDER`) and the MCP tool's.
#[derive(Debug, Clone, Serialize, Deserialize, clap::Args, schemars::JsonSchema)]
pub struct Supersede {
    /// The id of the memory that holds now (full, or a unique prefix of 8+ characters).
    pub newer: String,
    /// The id of the memory it replaces (full, or a unique prefix of 8+ characters).
    pub older: String,
}

impl Operation for Supersede {
    const NAME: &'static str = "supersede";
    type Answer = Superseded;
    fn validate(&self) -> Result<()> {
        checked_id("supersede", &self.newer)?;
        checked_id("supersede", &self.older).map(drop)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Superseded> {
        let newer = checked_id("supersede", &self.newer)?;
        let older = checked_id("supersede", &self.older)?;
        direct
            .change(|s| supersede(s, &newer, &older))?
            .ok_or_else(|| {
                not_found(format!(
                    "supersede: no memory {newer}; nothing changed (see `wt-memory list`)"
                ))
            })
    }
}

impl Operation for Forget {
    const NAME: &'static str = "forget";
    type Answer = Forgotten;
    fn validate(&self) -> Result<()> {
        self.check().map(drop)
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Forgotten> {
        match direct.change(|s| forget(s, self))? {
            Some(done) => Ok(done),
            None => self.nothing_found(),
        }
    }
}

/// What the store knows about a topic, or about everything; `None` when there is no store (the
/// CLI prints `{}`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Context {
    pub topic: Option<String>,
}

impl Operation for Context {
    const NAME: &'static str = "context";
    type Answer = Option<ContextSummary>;
    fn validate(&self) -> Result<()> {
        match &self.topic {
            Some(t) => check_query("context", t),
            None => Ok(()),
        }
    }
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Option<ContextSummary>> {
        direct.peek(|s| context(s, self.topic.as_deref()))
    }
}

/// The previous system's memory tiers, for its command line.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Brain;

impl Operation for Brain {
    const NAME: &'static str = "brain";
    type Answer = BrainReport;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<BrainReport> {
        Ok(brain(direct.read(|s| Ok(s.records()?))?))
    }
}

/// Memories whose code anchors changed or vanished (`audit --stale`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stale;

impl Operation for Stale {
    const NAME: &'static str = "stale";
    type Answer = Vec<StaleMemory>;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Vec<StaleMemory>> {
        direct.read(stale)
    }
}

// Their previews (`Similar::content`, `MemoryRecord::preview`) are redacted before they are cut.
wt_memory_core::shows_no_memory!(Remembered, Superseded, Forgotten);
