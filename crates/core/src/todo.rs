//! Todos: memories tagged `todo,backlog` with `metadata.todo_status` (the previous system's layout, so its todos carry over).

use crate::record::MemoryRecord;
use crate::store::{NewMemory, Store};
use shodh_memory::memory::ExperienceType;

pub fn is_open(r: &MemoryRecord) -> bool {
    r.has_tag("todo") && r.metadata.get("todo_status").is_none_or(|s| s == "open")
}

/// The first in-progress OpenSpec change, if the `openspec` CLI is installed.
pub fn active_change(dir: &std::path::Path) -> Option<String> {
    let bin = which::which("openspec").ok()?;
    let out = duct::cmd!(bin, "list", "--json")
        .dir(dir)
        .stdout_capture()
        .stderr_null()
        .unchecked()
        .run()
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let changes = v
        .get("changes")
        .and_then(|c| c.as_array())
        .or_else(|| v.as_array())?;
    changes.iter().find_map(|c| {
        let status = c.get("status").and_then(|s| s.as_str()).unwrap_or("");
        (status == "in-progress")
            .then(|| c.get("name").and_then(|n| n.as_str()).map(str::to_string))
            .flatten()
    })
}

pub fn add(
    store: &Store,
    text: &str,
    extra_tags: &[String],
    branch: Option<&str>,
    dir: &std::path::Path,
    provenance: crate::trust::Provenance,
) -> anyhow::Result<String> {
    let mut tags = vec!["todo".to_string(), "backlog".to_string()];
    tags.extend(extra_tags.iter().cloned());
    if let Some(change) = active_change(dir) {
        tags.push(format!("change:{change}"));
    }
    if let Some(b) = branch {
        tags.push(format!("branch:{b}"));
    }
    let mut new = NewMemory::new(text, ExperienceType::Context);
    new.tags = tags;
    new.metadata.insert("todo_status".into(), "open".into());
    new.provenance = provenance;
    Ok(store.insert(new)?.id)
}

pub fn open_todos(store: &Store) -> anyhow::Result<Vec<MemoryRecord>> {
    Ok(store.records()?.into_iter().filter(is_open).collect())
}
