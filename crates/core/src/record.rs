//! The JSON shape of a memory as every command prints it (the previous system's record shape, which agents and scripts already read), and the types
//! `wt-memory` writes.

use serde::{Deserialize, Serialize};
use shodh_memory::memory::{ExperienceType, Memory};
use std::collections::BTreeMap;
use wt_memory_foundation::hygiene;

/// A memory as every command prints it. An answer's records are redacted once, where the answer is
/// made ([`Redact`]): secrets again in every text field (content, tags, metadata keys and values,
/// entities), defence in depth for memories written before redaction covered a field or a secret
/// kind. Ranking and maintenance, which scan every memory, pay nothing; only the records an
/// answer shows (list, get, recall, proactive, context, brain, todo list, export) do.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MemoryRecord {
    pub id: String,
    pub content: String,
    pub experience_type: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default = "default_importance")]
    pub importance: f32,
    #[serde(default)]
    pub access_count: u32,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub last_accessed: String,
    #[serde(default)]
    pub compressed: bool,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub entities: Vec<String>,
    #[serde(default)]
    pub is_failure: bool,
    #[serde(default)]
    pub is_anomaly: bool,
    /// Calibrated 0..1 relevance; only in `recall` and `proactive` results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevance_score: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevance_reason: Option<String>,
    /// The newer memory that replaces this one (`remember --supersedes`); in `recall` and
    /// `proactive` results. Hooks never inject a superseded memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Which store answered (`project` or `personal`); only in answers read from both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<wt_memory_base::project::Scope>,
}

/// The first 8 characters of a memory id: enough for every command that takes an id prefix.
pub fn short_id(id: &str) -> &str {
    wt_memory_foundation::hygiene::truncate_chars(id, 8)
}

/// How many characters of a memory's content [`MemoryRecord::preview`] shows.
pub const PREVIEW_CHARS: usize = 100;

/// The metadata key of a memory's provenance (`trust::Provenance::as_str`). A memory written before
/// provenance was recorded has none and counts as the user's own.
pub const PROVENANCE: &str = "provenance";
/// The tag of a memory held for review: the view's tag index keeps it out of every ranking at no
/// cost per query, and counts it.
pub const HELD_TAG: &str = "held-for-review";
/// The metadata key of why a memory is held (for the person reviewing it).
pub const HELD_REASON: &str = "held_reason";
/// The metadata key of what hidden characters a write removed (`3 tag characters`).
pub const HIDDEN_REMOVED: &str = "hidden_removed";
/// The metadata key of a held memory's approval (`approved <time>`).
pub const REVIEWED: &str = "reviewed";
/// Metadata key: the user approved this memory by its id (`wt-memory review --approve`), so it
/// speaks for them (the action gate lets what it supplies through). Trusting a teammate's source
/// does not set it: a teammate informs, they do not authorise.
pub const AUTHORISED: &str = "authorised";
/// Tag: a standing rule of the user's ("always answer in German", "never force-push without
/// asking"): injected at every SessionStart, and PreToolUse asks before an action it guards. Set
/// at write for the user's own memories that read as one, or by `wt-memory standing`.
pub const STANDING_TAG: &str = "standing";

/// The metadata key of a memory's title (MCP `remember`'s `title`), shown by the hooks' index.
pub const TITLE: &str = "title";

/// The metadata key naming the older memory a memory replaces.
pub const SUPERSEDES: &str = "supersedes";

/// The metadata key holding a memory's retrieval keys, one per line: short questions or tasks a
/// developer would type when the memory helps, and an anchor line of the files, commands and
/// identifiers it is specific to. Written with the memory; ranking matches queries against them
/// as well as against the content.
pub const KEYS: &str = "keys";
/// The metadata key listing which of a memory's [`KEYS`] were learned from use (prompts whose
/// answer cited the memory), one per line, oldest first; the rest were given by a writer.
pub const LEARNED_KEYS: &str = "keys_learned";
/// At most this many learned keys per memory: the newest replace the oldest.
pub const MAX_LEARNED_KEYS: usize = 2;
/// At most this many keys per memory, each at most [`KEY_CHARS`] characters.
pub const MAX_KEYS: usize = 6;
pub const KEY_CHARS: usize = 200;

/// Text a memory is matched on word for word: its content, then its keys (`keys`: the stored
/// [`KEYS`] value).
pub fn lexical_text(content: &str, keys: Option<&str>) -> String {
    let keys: Vec<&str> = keys.map(|k| split_keys(k).collect()).unwrap_or_default();
    if keys.is_empty() {
        content.to_string()
    } else {
        format!("{content}\n{}", keys.join("\n"))
    }
}

/// The keys in a stored `keys` value (one per line).
pub fn split_keys(value: &str) -> impl Iterator<Item = &str> {
    value.lines().filter(|l| !l.trim().is_empty())
}

/// Whether two keys are the same question (case and spacing aside).
pub fn same_key(a: &str, b: &str) -> bool {
    hygiene::normalize(a) == hygiene::normalize(b)
}

/// Keys as stored: trimmed, non-empty, one line each, at most [`MAX_KEYS`], no repeats.
pub fn clean_keys<S: AsRef<str>>(keys: &[S]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in keys {
        let k = k.as_ref().split_whitespace().collect::<Vec<_>>().join(" ");
        let k = hygiene::truncate_chars(&k, KEY_CHARS).to_string();
        if !k.is_empty() && !out.contains(&k) && out.len() < MAX_KEYS {
            out.push(k);
        }
    }
    out
}

/// What an answer shows of memories, made safe to show: each record's text fields redacted, once,
/// where the answer is made (`wt_memory_ops::answer`, for every operation and every way it is
/// carried out), so the JSON of a socket, an MCP tool or `--json` and the text a front prints are
/// the same. An answer type that holds no record says so with an empty `redact`.
pub trait Redact {
    fn redact(&mut self);
}

impl Redact for MemoryRecord {
    /// Secrets redacted, and hidden characters removed again (a memory written before they were
    /// removed on the way in, or brought back by a restore, still shows none).
    fn redact(&mut self) {
        use wt_memory_foundation::hidden::visible;
        self.content = visible(&self.content);
        self.tags = self.tags.iter().map(|t| visible(t)).collect();
        self.metadata = self
            .metadata
            .iter()
            .map(|(k, v)| (visible(k), visible(v)))
            .collect();
        self.entities = self.entities.iter().map(|e| visible(e)).collect();
        self.content = hygiene::redact(&self.content);
        self.tags = redacted_list(self.tags.iter().map(String::as_str));
        self.metadata =
            redacted_metadata(self.metadata.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        self.entities = redacted_list(self.entities.iter().map(String::as_str));
    }
}

impl<T: Redact> Redact for Vec<T> {
    fn redact(&mut self) {
        self.iter_mut().for_each(Redact::redact);
    }
}

impl<T: Redact> Redact for Option<T> {
    fn redact(&mut self) {
        if let Some(inner) = self {
            inner.redact();
        }
    }
}

/// Answers that hold no memory's text: nothing to redact.
#[macro_export]
macro_rules! shows_no_memory {
    ($($answer:ty),* $(,)?) => {
        $(impl $crate::record::Redact for $answer {
            fn redact(&mut self) {}
        })*
    };
}

// `serde_json::Value`: the export document, whose records `exchange::export` redacts as it writes
// them, and the engine's index report, which holds no memory's text.
shows_no_memory!((), bool, usize, String, (usize, String), serde_json::Value);

/// Tags or entities with secrets redacted.
fn redacted_list<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    items.into_iter().map(hygiene::redact).collect()
}

/// One metadata pair with secrets redacted ([`hygiene::redact_pair`]: a value under a secret-named
/// key goes whole). Retrieval keys are redacted one line at a time: a rule must not reach from
/// one key into the next.
pub fn redact_metadata_pair(key: &str, value: &str) -> (String, String) {
    if key == KEYS || key == LEARNED_KEYS {
        let lines: Vec<String> = value.split('\n').map(hygiene::redact).collect();
        return (key.to_string(), lines.join("\n"));
    }
    hygiene::redact_pair(key, value)
}

/// Metadata with secrets redacted ([`redact_metadata_pair`]). Two keys that become equal once
/// redacted keep the later value.
fn redacted_metadata<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(k, v)| redact_metadata_pair(k, v))
        .collect()
}

/// The same redaction as [`Redact`] on a [`MemoryRecord`] (the same per-field rules), for a record
/// already in JSON form (an export document read back, as `sync push` does): content, tags,
/// metadata keys and values, and entities. Other fields, and metadata values that need no
/// redaction, are left exactly as they are (a non-string value is checked as its JSON text).
pub fn redact_record_json(record: &mut serde_json::Value) {
    use serde_json::Value;
    let Some(fields) = record.as_object_mut() else {
        return;
    };
    if let Some(Value::String(content)) = fields.get_mut("content") {
        *content = hygiene::redact(content);
    }
    for list in ["tags", "entities"] {
        if let Some(Value::Array(items)) = fields.get_mut(list) {
            for item in items.iter_mut() {
                if let Value::String(text) = item {
                    *text = hygiene::redact(text);
                }
            }
        }
    }
    if let Some(Value::Object(metadata)) = fields.get_mut("metadata") {
        let clean: serde_json::Map<String, Value> = metadata
            .iter()
            .map(|(key, value)| {
                let text = match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let (key, redacted) = redact_metadata_pair(key, &text);
                let value = if redacted == text {
                    value.clone()
                } else {
                    Value::String(redacted)
                };
                (key, value)
            })
            .collect();
        *metadata = clean;
    }
}

pub fn default_importance() -> f32 {
    DEFAULT_IMPORTANCE
}

/// Importance of a memory written without `--importance`. The engine would derive it from the type
/// (Decision 0.3, Context 0.1, ...), which makes `cleanup` delete ordinary notes.
pub const DEFAULT_IMPORTANCE: f32 = 0.5;

pub fn rfc3339(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl MemoryRecord {
    /// A bare record for unit tests.
    #[cfg(test)]
    pub fn for_test(id: &str, content: &str) -> MemoryRecord {
        MemoryRecord {
            id: id.into(),
            content: content.into(),
            experience_type: "Learning".into(),
            tags: vec![],
            importance: 0.5,
            access_count: 0,
            created_at: String::new(),
            last_accessed: String::new(),
            compressed: false,
            metadata: Default::default(),
            entities: vec![],
            is_failure: false,
            is_anomaly: false,
            relevance_score: None,
            relevance_reason: None,
            superseded_by: None,
            scope: None,
        }
    }

    pub fn from_memory(m: &Memory) -> Self {
        let e = &m.experience;
        MemoryRecord {
            id: m.id.0.to_string(),
            content: e.content.clone(),
            experience_type: type_name(&e.experience_type).to_string(),
            tags: e.tags.clone(),
            importance: m.importance(),
            access_count: m.access_count(),
            created_at: rfc3339(&m.created_at),
            last_accessed: rfc3339(&m.last_accessed()),
            compressed: m.compressed,
            metadata: e
                .metadata
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            entities: e.entities.clone(),
            is_failure: e.is_failure,
            is_anomaly: e.is_anomaly,
            relevance_score: None,
            relevance_reason: None,
            superseded_by: None,
            scope: None,
        }
    }

    /// The start of its content on one line, as a report or a list of memories to review shows
    /// it: redacted before it is cut, so a secret cut in two is still found.
    pub fn preview(&self) -> String {
        hygiene::truncate_chars(&hygiene::redact(self.summary_text()), PREVIEW_CHARS)
            .replace('\n', " ")
    }

    /// What a summary of memories (a preview, an audit's cluster, a report's list) shows of this
    /// one: its content, or for a memory held for review only that it is held; `wt-memory review`
    /// is where its text is read.
    pub fn summary_text(&self) -> &str {
        if self.has_tag(HELD_TAG) {
            "[held for review: see `wt-memory review`]"
        } else {
            &self.content
        }
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    /// Text the memory is matched on word for word: its content, then its keys.
    pub fn lexical_text(&self) -> String {
        lexical_text(&self.content, self.metadata.get(KEYS).map(String::as_str))
    }

    /// The memory's retrieval keys (none for most memories).
    pub fn keys(&self) -> Vec<&str> {
        self.metadata
            .get(KEYS)
            .map(|k| split_keys(k).collect())
            .unwrap_or_default()
    }

    /// The keys a writer gave (`remember --keys`, extraction, `enrich`, `keys --add`): every key
    /// but the learned ones, in order.
    pub fn written_keys(&self) -> Vec<&str> {
        let learned = self.learned_keys();
        self.keys()
            .into_iter()
            .filter(|k| !learned.contains(k))
            .collect()
    }

    /// The keys learned from use ([`LEARNED_KEYS`]), oldest first; only those still among
    /// [`Self::keys`].
    pub fn learned_keys(&self) -> Vec<&str> {
        let keys = self.keys();
        self.metadata
            .get(LEARNED_KEYS)
            .map(|k| split_keys(k).filter(|l| keys.contains(l)).collect())
            .unwrap_or_default()
    }
}

pub fn type_name(t: &ExperienceType) -> &'static str {
    match t {
        ExperienceType::Conversation => "Conversation",
        ExperienceType::Decision => "Decision",
        ExperienceType::Error => "Error",
        ExperienceType::Learning => "Learning",
        ExperienceType::Discovery => "Discovery",
        ExperienceType::Pattern => "Pattern",
        ExperienceType::Context => "Context",
        ExperienceType::Task => "Task",
        ExperienceType::CodeEdit => "CodeEdit",
        ExperienceType::FileAccess => "FileAccess",
        ExperienceType::Search => "Search",
        ExperienceType::Command => "Command",
        ExperienceType::Observation => "Observation",
        ExperienceType::Intention => "Intention",
    }
}

/// A type accepted from users: Decision, Learning, Context, plus the legacy names the previous
/// implementation mapped (Observation -> Learning, Event -> Context). Returns the type and, for a
/// legacy name, a note to print.
pub fn parse_user_type(s: &str) -> Result<(ExperienceType, Option<String>), String> {
    match s {
        "Decision" | "decision" => Ok((ExperienceType::Decision, None)),
        "Learning" | "learning" => Ok((ExperienceType::Learning, None)),
        "Context" | "context" => Ok((ExperienceType::Context, None)),
        "Observation" | "observation" => Ok((
            ExperienceType::Learning,
            Some("note: type Observation is stored as Learning".into()),
        )),
        "Event" | "event" => Ok((
            ExperienceType::Context,
            Some("note: type Event is stored as Context".into()),
        )),
        other => Err(format!(
            "invalid type '{other}': use Decision, Learning or Context"
        )),
    }
}

/// Any engine type name, for import of records written by other tools (unknown -> Context).
pub fn parse_any_type(s: &str) -> ExperienceType {
    match s {
        "Decision" => ExperienceType::Decision,
        "Learning" | "Observation" => ExperienceType::Learning,
        "Error" => ExperienceType::Error,
        "Discovery" => ExperienceType::Discovery,
        "Pattern" => ExperienceType::Pattern,
        "Task" => ExperienceType::Task,
        "Conversation" => ExperienceType::Conversation,
        _ => ExperienceType::Context,
    }
}

/// Split a comma-separated tag list, trimming and dropping empties and repeats.
pub fn split_tags(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if !out.iter().any(|x| x == t) {
            out.push(t.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GITHUB: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
    const URL_PASSWORD: &str = "s3cr3tPass";

    /// A record as a memory written before redaction covered every field could hold it.
    fn leaky() -> MemoryRecord {
        MemoryRecord {
            id: "2de8a1b3-0000-4000-8000-000000000001".into(),
            content: format!("deploy with {GITHUB} via postgres://app:{URL_PASSWORD}@db/app"),
            experience_type: "Learning".into(),
            tags: vec!["deploy".into(), format!("key:{AWS}")],
            importance: 0.5,
            access_count: 0,
            created_at: String::new(),
            last_accessed: String::new(),
            compressed: false,
            metadata: BTreeMap::from([
                ("password".to_string(), "hunter2hunter2".to_string()),
                ("source".to_string(), format!("token {GITHUB}")),
                ("ticket".to_string(), "TKT-1234".to_string()),
            ]),
            entities: vec![AWS.into(), "payments".into()],
            is_failure: false,
            is_anomaly: false,
            relevance_score: Some(0.5),
            relevance_reason: None,
            superseded_by: None,
            scope: None,
        }
    }

    fn assert_no_secret(text: &str) {
        for secret in [GITHUB, AWS, URL_PASSWORD, "hunter2hunter2"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
    }

    #[test]
    fn redacting_a_record_covers_every_text_field_and_keeps_the_rest() {
        let record = leaky();
        let mut shown = record.clone();
        shown.redact();
        let json = serde_json::to_value(&shown).unwrap();
        assert_no_secret(&json.to_string());
        assert!(json["content"]
            .as_str()
            .unwrap()
            .starts_with("deploy with [REDACTED:"));
        assert_eq!(json["tags"][0], "deploy");
        assert!(json["tags"][1].as_str().unwrap().contains("[REDACTED:"));
        assert_eq!(json["metadata"]["password"], "[REDACTED:password]");
        assert!(json["metadata"]["source"]
            .as_str()
            .unwrap()
            .contains("[REDACTED:"));
        assert_eq!(json["metadata"]["ticket"], "TKT-1234");
        assert_eq!(json["entities"][1], "payments");
        assert_eq!(json["id"], record.id);
        assert_eq!(json["relevance_score"], 0.5);
        // Serialising shows what the record holds: the redaction is the answer's, made once.
        assert!(serde_json::to_string(&record).unwrap().contains(GITHUB));
        // Redacting what was redacted changes nothing.
        let mut again = shown.clone();
        again.redact();
        assert_eq!(again, shown);
        // A list, and a record that may be absent, redact each record.
        let mut list = vec![leaky(), leaky()];
        list.redact();
        assert!(list.iter().all(|r| *r == shown));
        let mut maybe = Some(leaky());
        maybe.redact();
        assert_eq!(maybe, Some(shown));
    }

    #[test]
    fn json_records_get_the_same_redaction_as_typed_ones() {
        let mut shown = leaky();
        shown.redact();
        let typed = serde_json::to_value(shown).unwrap();
        let mut raw = serde_json::json!({
            "id": "2de8a1b3-0000-4000-8000-000000000001",
            "content": leaky().content,
            "experience_type": "Learning",
            "tags": leaky().tags,
            "metadata": leaky().metadata,
            "entities": leaky().entities,
            "extra": {"kept": GITHUB},
        });
        redact_record_json(&mut raw);
        for field in ["content", "tags", "metadata", "entities"] {
            assert_eq!(raw[field], typed[field], "{field}");
        }
        assert_eq!(
            raw["extra"]["kept"], GITHUB,
            "only the record's text fields"
        );
        // A non-string metadata value that holds no secret stays as it was.
        let mut numbers = serde_json::json!({"metadata": {"n": 3, "password": 12345678}});
        redact_record_json(&mut numbers);
        assert_eq!(numbers["metadata"]["n"], 3);
        assert_eq!(numbers["metadata"]["password"], "[REDACTED:password]");
    }
}
