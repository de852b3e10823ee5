//! Claude Code's own notes on a project ("auto memory"), taken into the store: each topic file
//! becomes one memory, found by `recall` and the hooks and shared by `sync` like any other.
//!
//! Claude Code keeps them per machine and user under `<config>/projects/<slug>/memory/`
//! (`<config>`: `$CLAUDE_CONFIG_DIR`, else `~/.claude`; `<slug>`: the repository's root path with
//! every character but letters and digits turned into `-`): `MEMORY.md`, an index it loads into
//! every session itself (so it is not imported), and one Markdown file per fact with a
//! frontmatter of `name`, `description` and `type` (`user`, `feedback`, `project`, `reference`).

use crate::client::Client;
use crate::error::Result;
use crate::ops;
use crate::project::Project;
use crate::record::MemoryRecord;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The tag of every memory taken from a topic file.
pub const SOURCE_TAG: &str = "source:claude-auto-memory";
/// Metadata: the topic file's name, its sha256, its modification time.
pub const FILE_KEY: &str = "claude_memory_file";
pub const HASH_KEY: &str = "claude_memory_sha256";
pub const MODIFIED_KEY: &str = "claude_memory_modified";

/// The index Claude Code loads itself.
const INDEX: &str = "MEMORY.md";
/// Topic files larger than this are not notes (Claude Code keeps them short): skipped.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Where Claude Code keeps `project`'s auto memory.
pub fn default_dir(project: &Project) -> Option<PathBuf> {
    let root = project.main_root.as_ref().or(project.toplevel.as_ref())?;
    let config = &crate::config::get().claude_dir;
    let slug: String = root
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    Some(config.join("projects").join(slug).join("memory"))
}

/// One topic file as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Topic {
    pub file: String,
    pub name: String,
    pub description: String,
    pub kind: String,
    pub body: String,
    pub sha256: String,
    pub modified: String,
}

impl Topic {
    /// The memory's text: its title and description, then the note.
    fn content(&self) -> String {
        let head = match (self.name.is_empty(), self.description.is_empty()) {
            (false, false) => format!("{}: {}", self.name, self.description),
            (false, true) => self.name.clone(),
            (true, _) => self.description.clone(),
        };
        format!("{head}\n{}", self.body).trim().to_string()
    }

    fn request(&self) -> ops::Remember {
        let memory_type = match self.kind.as_str() {
            "feedback" => "Learning",
            _ => "Context",
        };
        let mut tags = vec![SOURCE_TAG.to_string()];
        if !self.kind.is_empty() {
            tags.push(format!("claude:{}", self.kind));
        }
        let mut metadata = HashMap::from([
            (FILE_KEY.to_string(), self.file.clone()),
            (HASH_KEY.to_string(), self.sha256.clone()),
            (MODIFIED_KEY.to_string(), self.modified.clone()),
        ]);
        if !self.name.is_empty() {
            let title = crate::hygiene::truncate_chars(&self.name, ops::MAX_TITLE_CHARS);
            metadata.insert(ops::TITLE.to_string(), title.to_string());
        }
        ops::Remember {
            content: self.content(),
            memory_type: memory_type.into(),
            tags,
            metadata,
            ..ops::Remember::default()
        }
    }
}

/// `---` frontmatter (`key: value` lines) and the body after it.
fn parse(text: &str) -> (HashMap<String, String>, String) {
    let mut fields = HashMap::new();
    let rest = text.trim_start_matches('\u{feff}');
    let Some(after) = rest
        .strip_prefix("---\n")
        .or_else(|| rest.strip_prefix("---\r\n"))
    else {
        return (fields, rest.trim().to_string());
    };
    let Some(end) = after.find("\n---") else {
        return (fields, rest.trim().to_string());
    };
    for line in after[..end].lines() {
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
            fields.insert(k.trim().to_lowercase(), v.to_string());
        }
    }
    let body = after[end + 4..].trim_start_matches('-');
    (fields, body.trim().to_string())
}

/// Every topic file of `dir` (not the index, not subdirectories), by name.
pub fn read_topics(dir: &Path) -> std::io::Result<Vec<Topic>> {
    let mut topics = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let file = entry.file_name().to_string_lossy().into_owned();
        let meta = entry.metadata()?;
        if !meta.is_file() || !file.ends_with(".md") || file == INDEX || meta.len() > MAX_FILE_BYTES
        {
            continue;
        }
        let bytes = std::fs::read(entry.path())?;
        let text = String::from_utf8_lossy(&bytes);
        let (fields, body) = parse(&text);
        let modified = fields.get("modified").cloned().unwrap_or_else(|| {
            meta.modified()
                .map(|t| chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339())
                .unwrap_or_default()
        });
        let topic = Topic {
            file,
            name: fields.get("name").cloned().unwrap_or_default(),
            description: fields.get("description").cloned().unwrap_or_default(),
            kind: fields.get("type").cloned().unwrap_or_default(),
            body,
            sha256: crate::hygiene::hex(&Sha256::digest(&bytes)),
            modified,
        };
        if !topic.content().is_empty() {
            topics.push(topic);
        }
    }
    topics.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(topics)
}

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize)]
pub struct Report {
    pub added: usize,
    pub updated: usize,
    pub forgotten: usize,
    pub unchanged: usize,
}

/// Bring `dir`'s topic files into the store: a new file is remembered, a changed one replaces its
/// memory, a deleted one's memory is forgotten, an unchanged one is left alone (a second run does
/// nothing).
pub fn import(client: &mut Client, dir: &Path) -> Result<Report> {
    let topics = read_topics(dir).map_err(|e| {
        crate::error::bad_input(format!(
            "import --claude-memory: cannot read {}: {e}",
            dir.display()
        ))
    })?;
    let known: Vec<MemoryRecord> = client.recall(&ops::Recall {
        limit: 100_000,
        tags: vec![SOURCE_TAG.to_string()],
        tags_only: true,
        ..ops::Recall::default()
    })?;
    let by_file: HashMap<&str, &MemoryRecord> = known
        .iter()
        .filter_map(|m| m.metadata.get(FILE_KEY).map(|f| (f.as_str(), m)))
        .collect();
    let mut report = Report::default();
    for topic in &topics {
        match by_file.get(topic.file.as_str()) {
            Some(m) if m.metadata.get(HASH_KEY) == Some(&topic.sha256) => report.unchanged += 1,
            Some(m) => {
                // The same text (only the file's bytes around it changed) is the same memory.
                let done = client.remember(&topic.request())?;
                if done.id == m.id {
                    report.unchanged += 1;
                } else {
                    forget(client, &m.id)?;
                    report.updated += 1;
                }
            }
            None => {
                client.remember(&topic.request())?;
                report.added += 1;
            }
        }
    }
    for (file, m) in &by_file {
        if !topics.iter().any(|t| t.file == *file) {
            forget(client, &m.id)?;
            report.forgotten += 1;
        }
    }
    Ok(report)
}

fn forget(client: &mut Client, id: &str) -> Result<()> {
    client.forget(&ops::Forget {
        id: Some(id.to_string()),
        ..ops::Forget::default()
    })?;
    Ok(())
}

/// A stamp of `dir`'s topic files (names, sizes, modification times): SessionStart imports again
/// only when it changed.
pub fn stamp(dir: &Path) -> Option<String> {
    let mut rows: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            let mtime = meta
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?
                .as_nanos();
            Some(format!(
                "{}\t{}\t{mtime}",
                e.file_name().to_string_lossy(),
                meta.len()
            ))
        })
        .collect();
    rows.sort();
    Some(crate::hygiene::hex(&Sha256::digest(
        rows.join("\n").as_bytes(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_and_body_are_read_as_claude_code_writes_them() {
        let (fields, body) = parse(
            "---\nname: Test database\ndescription: \"integration tests hit a real db\"\ntype: feedback\n---\n\nNever mock the database.\n**Why:** a mocked test passed while the migration failed.\n",
        );
        assert_eq!(fields["name"], "Test database");
        assert_eq!(fields["description"], "integration tests hit a real db");
        assert_eq!(fields["type"], "feedback");
        assert!(body.starts_with("Never mock the database."), "{body}");
        let (fields, body) = parse("plain note without frontmatter");
        assert!(fields.is_empty());
        assert_eq!(body, "plain note without frontmatter");
    }
}
