//! Secrets never reach the store: the fake-secret corpus in `testdata/redaction/secrets.txt`
//! goes in through `wt-memory remember` (content, `--tags`, `--metadata`) and `wt-memory import`
//! (content, tags, metadata keys and values, entities), and then no secret value may appear in
//! `list`, `export`, or any byte of any file under the store root.
//!
//! The rules themselves (0 leaks, 0 false redactions on the corpus and its look-alikes) are
//! tested in `crates/foundation/src/hygiene.rs`.

use crate::support;

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use support::TestEnv;

struct Case {
    kind: String,
    secret: String,
    text: String,
}

/// `\n` is a newline, `\\n` a literal backslash-n (as in `crates/foundation/src/hygiene.rs`).
fn unescape(s: &str) -> String {
    s.replace("\\\\n", "\u{0}")
        .replace("\\n", "\n")
        .replace('\u{0}', "\\n")
}

fn corpus() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/redaction/secrets.txt");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<String> = l.split('\t').map(unescape).collect();
            Case {
                kind: f[0].clone(),
                secret: f[1].clone(),
                text: f[2].clone(),
            }
        })
        .collect()
}

/// Usable as one `--tags` entry (tags are comma-separated, one line).
fn tag_safe(c: &Case) -> bool {
    !c.text.contains([',', '\n'])
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Every secret found in `haystack`, as "kind in <where>".
fn leaks(cases: &[Case], haystack: &[u8], place: &str) -> Vec<String> {
    cases
        .iter()
        .filter(|c| contains(haystack, c.secret.as_bytes()))
        .map(|c| format!("{} ({}) in {place}", c.kind, c.secret))
        .collect()
}

#[test]
fn no_secret_reaches_list_export_or_the_store_files() {
    let env = TestEnv::new();
    let repo = env.git_repo("app");
    let cases = corpus();
    assert!(cases.len() >= 40);

    // 1. remember: content, tags and metadata (values under neutral and secret-named keys, and
    //    keys that are themselves secrets), a few cases per memory.
    let batches: Vec<&[Case]> = cases.chunks(8).collect();
    for (i, batch) in batches.iter().enumerate() {
        let content = batch
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        let tags = batch
            .iter()
            .filter(|c| tag_safe(c))
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join(",");
        let mut meta = Map::new();
        meta.insert("batch".into(), json!(i));
        for (j, c) in batch.iter().enumerate() {
            meta.insert(format!("note_{j}"), json!(c.text));
            meta.insert(format!("credential_{j}"), json!(c.secret));
            if tag_safe(c) {
                meta.insert(c.text.clone(), json!("key holds the secret"));
            }
        }
        let meta = Value::Object(meta).to_string();
        let mut args = vec!["remember", "--type", "Learning", "--metadata", &meta];
        if !tags.is_empty() {
            args.extend(["--tags", &tags]);
        }
        let id = env.wt_ok(&repo, &args, Some(&content));
        assert!(!id.trim().is_empty(), "batch {i} stored nothing");
    }

    // 2. import (what `sync pull` runs): secrets in every field of every record.
    let records: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut metadata = Map::new();
            metadata.insert("context".into(), json!(c.text));
            metadata.insert("password".into(), json!(c.secret));
            metadata.insert("original_id".into(), json!(format!("origin-{i}")));
            if tag_safe(c) {
                metadata.insert(c.text.clone(), json!("x"));
            }
            json!({
                "id": format!("00000000-0000-4000-8000-{i:012}"),
                "content": format!("imported note {i}: {}", c.text),
                "experience_type": "Context",
                "tags": if tag_safe(c) { json!(["imported", c.text]) } else { json!(["imported"]) },
                "importance": 0.5,
                "created_at": "2025-01-02T03:04:05.000Z",
                "metadata": metadata,
                "entities": [c.text],
            })
        })
        .collect();
    let doc = json!({"version": 1, "format": "wt-memory-export", "project": "elsewhere",
        "exported_at": "2025-01-02T03:04:05.000Z", "count": records.len(), "records": records});
    let file = env.path().join("incoming.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let report = env.wt_json(&repo, &["import", file.to_str().unwrap()], None);
    assert_eq!(
        report["imported"].as_u64(),
        Some(cases.len() as u64),
        "{report}"
    );

    // 3. Nothing comes back out, and nothing is on disk.
    let mut found = Vec::new();
    let list = env.wt_ok(&repo, &["list"], None);
    let listed: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(
        listed.as_array().map(Vec::len),
        Some(batches.len() + cases.len()),
        "every write was stored"
    );
    found.extend(leaks(&cases, list.as_bytes(), "list"));
    let export = env.wt_ok(&repo, &["export"], None);
    found.extend(leaks(&cases, export.as_bytes(), "export"));
    let files = files_under(&env.store_root());
    assert!(files.len() > 5, "the store has files: {files:?}");
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        found.extend(leaks(&cases, &bytes, &f.display().to_string()));
    }
    assert!(found.is_empty(), "leaked:\n{}", found.join("\n"));

    // The structure around the secrets is still there, with markers in every field.
    let text = export.as_str();
    for marker in [
        "[REDACTED:aws-access-key]",
        "[REDACTED:slack-webhook]",
        "[REDACTED:url-password]",
        "[REDACTED:password]",
        "[REDACTED:private-key]",
    ] {
        assert!(text.contains(marker), "{marker} missing from the export");
    }
    assert!(text.contains("hooks.slack.com/services/"));
    let exported: Value = serde_json::from_str(&export).unwrap();
    let recs = exported["records"].as_array().unwrap();
    let imported = recs
        .iter()
        .find(|r| {
            r["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("imported note 0:"))
        })
        .expect("imported note 0");
    assert_eq!(imported["metadata"]["password"], "[REDACTED:password]");
    assert!(imported["entities"][0]
        .as_str()
        .unwrap()
        .contains("[REDACTED:"));
    assert!(imported["tags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t.as_str().unwrap().contains("[REDACTED:")));
}
