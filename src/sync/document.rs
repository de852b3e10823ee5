//! Export documents on the sync branch: checked before import, scrubbed before publishing,
//! hashed to skip a push that would change nothing.

use super::identity::Identity;
use anyhow::{anyhow, bail, Result};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Check that `bytes` is an export document this version can import; returns its records.
pub fn validate_export(bytes: &[u8]) -> Result<Vec<Value>> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| anyhow!("invalid JSON ({e})"))?;
    if doc.get("format").and_then(Value::as_str) != Some("wt-memory-export") {
        bail!("not a wt-memory export (format is not \"wt-memory-export\")");
    }
    if doc.get("version").and_then(Value::as_i64) != Some(1) {
        bail!(
            "unsupported export version {}",
            doc.get("version").unwrap_or(&Value::Null)
        );
    }
    match doc.get("records") {
        Some(Value::Array(records)) => Ok(records.clone()),
        _ => bail!("export has no \"records\" list"),
    }
}

fn is_private(record: &Value) -> bool {
    record
        .get("tags")
        .and_then(Value::as_array)
        .is_some_and(|tags| {
            tags.iter()
                .filter_map(Value::as_str)
                .any(|t| t.eq_ignore_ascii_case("private"))
        })
}

/// Last line of defence before anything leaves the machine: drop `private`-tagged records and
/// redact every text field again (content, tags, metadata, entities), with the same rules as
/// every printed record (export already does both; redaction is idempotent).
pub fn scrub_export(doc: &mut Value) {
    let Some(records) = doc.get_mut("records").and_then(Value::as_array_mut) else {
        return;
    };
    records.retain(|r| !is_private(r));
    for record in records.iter_mut() {
        wt_memory_core::record::redact_record_json(record);
    }
    let count = records.len();
    doc["count"] = Value::from(count);
}

/// JSON with object keys sorted at every level (independent of serde_json's map ordering).
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(canonical).collect::<Vec<_>>().join(",")
            )
        }
        other => other.to_string(),
    }
}

/// SHA-256 over what a push publishes that matters: the records' stable fields
/// (`id, content, experience_type, tags, metadata`, sorted by id), plus the destination, so a new
/// identity or remote URL is not mistaken for "already pushed".
pub fn content_hash(records: &[Value], identity: &Identity, remote_url: &str) -> String {
    let mut projected: Vec<(String, Value)> = records
        .iter()
        .map(|r| {
            let id = r
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let mut stable = serde_json::Map::new();
            for key in ["id", "content", "experience_type", "tags", "metadata"] {
                stable.insert(key.into(), r.get(key).cloned().unwrap_or(Value::Null));
            }
            (id, Value::Object(stable))
        })
        .collect();
    projected.sort_by(|a, b| a.0.cmp(&b.0));
    let list = Value::Array(projected.into_iter().map(|(_, v)| v).collect());
    let mut hasher = Sha256::new();
    hasher.update(format!("{identity}\n{remote_url}\n").as_bytes());
    hasher.update(canonical(&list).as_bytes());
    wt_memory_foundation::hygiene::hex(&hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    fn record(id: &str, content: &str, extra: Value) -> Value {
        let mut r = serde_json::json!({"id": id, "content": content, "experience_type": "Learning",
            "tags": ["a"], "metadata": {}});
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    }

    #[test]
    fn hash_ignores_volatile_fields_and_order_but_not_content_or_destination() {
        let me = Identity {
            user: "u".into(),
            machine: "m".into(),
        };
        let a = vec![
            record("1", "x", serde_json::json!({"access_count": 1})),
            record("2", "y", serde_json::json!({})),
        ];
        let b = vec![
            record("2", "y", serde_json::json!({"last_accessed": "later"})),
            record("1", "x", serde_json::json!({"access_count": 9})),
        ];
        let h = content_hash(&a, &me, "url");
        assert_eq!(h, content_hash(&b, &me, "url"));
        let changed = vec![record("1", "x2", serde_json::json!({}))];
        assert_ne!(h, content_hash(&changed, &me, "url"));
        assert_ne!(h, content_hash(&a, &me, "other-url"));
    }

    #[test]
    fn scrub_drops_private_records_and_redacts() {
        let mut doc = serde_json::json!({"format": "wt-memory-export", "version": 1, "count": 2,
        "records": [
            {"id": "1", "content": "token sk-ant-abcdefghijklmnopqrstuvwxyz123456", "tags": []},
            {"id": "2", "content": "secret", "tags": ["Private"]}
        ]});
        scrub_export(&mut doc);
        assert_eq!(doc["count"], 1);
        let content = doc["records"][0]["content"].as_str().unwrap();
        assert!(!content.contains("sk-ant-"), "{content}");
    }

    #[test]
    fn export_validation_names_the_problem() {
        assert!(validate_export(b"{not json")
            .unwrap_err()
            .to_string()
            .contains("invalid JSON"));
        let wrong = br#"{"format":"x","version":1,"records":[]}"#;
        assert!(validate_export(wrong)
            .unwrap_err()
            .to_string()
            .contains("format"));
        let v2 = br#"{"format":"wt-memory-export","version":2,"records":[]}"#;
        assert!(validate_export(v2)
            .unwrap_err()
            .to_string()
            .contains("version"));
        let ok = br#"{"format":"wt-memory-export","version":1,"records":[{"id":"1"}]}"#;
        assert_eq!(validate_export(ok).unwrap().len(), 1);
    }
}
