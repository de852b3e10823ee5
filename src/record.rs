//! The JSON shape of a memory as every command prints it (reference 3.2), and the types
//! `wt-memory` writes.

use serde::{Deserialize, Serialize};
use shodh_memory::memory::{ExperienceType, Memory};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
        }
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
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
