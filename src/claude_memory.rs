//! Claude Code's own notes on a project ("auto memory"), taken into the store: each topic file
//! becomes one memory, found by `recall` and the hooks and shared by `sync` like any other.
//!
//! Claude Code keeps them per machine and user under `<config>/projects/<slug>/memory/`
//! (`<config>`: `$CLAUDE_CONFIG_DIR`, else `~/.claude`; `<slug>`: the repository's root path with
//! every character but letters and digits turned into `-`): `MEMORY.md`, an index it loads into
//! every session itself (so it is not imported), and one Markdown file per fact with a
//! frontmatter of `name`, `description` and `type` (`user`, `feedback`, `project`, `reference`).

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use wt_memory_base::project::Project;
use wt_memory_core::record::MemoryRecord;
use wt_memory_foundation::error::Result;
use wt_memory_ops as ops;
use wt_memory_service::client::Client;

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
    let config = &wt_memory_base::config::get().claude_dir;
    Some(
        config
            .join("projects")
            .join(slug(&root.to_string_lossy()))
            .join("memory"),
    )
}

/// Longest slug Claude Code uses as it is; a longer one is cut and told apart by a hash.
const MAX_SLUG_CHARS: usize = 200;

/// Claude Code's folder name for a path (read from its code, 2.1.332): every character but an
/// ASCII letter or digit becomes `-`; past 200, the first 200 then `-` and the base-36 absolute
/// value of the path's 32-bit string hash (Java's `s[0]*31^(n-1) + ...` over UTF-16 units).
pub fn slug(path: &str) -> String {
    // Per UTF-16 unit, as JavaScript's `replace(/[^a-zA-Z0-9]/g, "-")` and `length` count: a
    // character outside the BMP is two units, so two dashes.
    let slug: String = path
        .encode_utf16()
        .map(|unit| match char::from_u32(u32::from(unit)) {
            Some(c) if c.is_ascii_alphanumeric() => c,
            _ => '-',
        })
        .collect();
    if slug.len() <= MAX_SLUG_CHARS {
        return slug;
    }
    let hash = path.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    format!(
        "{}-{}",
        &slug[..MAX_SLUG_CHARS],
        base36(i64::from(hash).unsigned_abs())
    )
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
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
            let title =
                wt_memory_foundation::hygiene::truncate_chars(&self.name, ops::MAX_TITLE_CHARS);
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
    // One level of nesting, as Claude Code writes `metadata:` then `  type: feedback`: an
    // indented key under a key without a value is `parent.key`.
    let mut parent: Option<String> = None;
    for line in after[..end].lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let key = k.trim().to_lowercase();
        let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
        let indented = line.starts_with([' ', '\t']);
        match (&parent, indented) {
            (Some(p), true) => {
                fields.insert(format!("{p}.{key}"), v.to_string());
            }
            _ if v.is_empty() => parent = Some(key),
            _ => {
                parent = None;
                fields.insert(key, v.to_string());
            }
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
            // `metadata.type` as Claude Code 2.1.332 writes it; a top-level `type` as earlier.
            kind: fields
                .get("metadata.type")
                .or_else(|| fields.get("type"))
                .cloned()
                .unwrap_or_default(),
            body,
            sha256: wt_memory_foundation::hygiene::hex(&Sha256::digest(&bytes)),
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
/// nothing). With `personal` (the personal store beside the project), a topic about the user
/// (`type: user`) that names nothing of this repository goes there instead, keyed by its full
/// path (every project's auto memory has its own `user_*.md`).
pub fn import(client: &mut Client, personal: Option<&mut Client>, dir: &Path) -> Result<Report> {
    // Files the agent writes: stored as from Claude's auto memory, whoever runs the import.
    client.set_source("claude-auto-memory");
    let topics = read_topics(dir).map_err(|e| {
        wt_memory_foundation::error::bad_input(format!(
            "import --claude-memory: cannot read {}: {e}",
            dir.display()
        ))
    })?;
    let Some(personal) = personal else {
        return sync_topics(client, &topics, None);
    };
    let root = client
        .project()
        .toplevel
        .clone()
        .unwrap_or_else(|| client.project().cwd.clone());
    let (about_user, about_project): (Vec<Topic>, Vec<Topic>) = topics
        .into_iter()
        .partition(|t| t.kind == "user" && !crate::scope::names_project(&t.content(), &root));
    let mut report = sync_topics(client, &about_project, None)?;
    if about_user.is_empty() && !wt_memory_core::store::exists(&personal.project().store_dir) {
        return Ok(report); // nothing for a personal store that does not exist
    }
    personal.set_source("claude-auto-memory");
    let theirs = sync_topics(personal, &about_user, Some(dir))?;
    report.added += theirs.added;
    report.updated += theirs.updated;
    report.forgotten += theirs.forgotten;
    report.unchanged += theirs.unchanged;
    Ok(report)
}

/// [`import`] of `topics` into one store; `under`: the topics are keyed by their full path in
/// that folder (the personal store's), and only memories of that folder are compared.
fn sync_topics(client: &mut Client, topics: &[Topic], under: Option<&Path>) -> Result<Report> {
    let key = |file: &str| match under {
        Some(dir) => dir.join(file).to_string_lossy().into_owned(),
        None => file.to_string(),
    };
    let known: Vec<MemoryRecord> = client.run(ops::Recall {
        limit: 100_000,
        tags: vec![SOURCE_TAG.to_string()],
        tags_only: true,
        ..ops::Recall::default()
    })?;
    let by_file: HashMap<&str, &MemoryRecord> = known
        .iter()
        .filter_map(|m| m.metadata.get(FILE_KEY).map(|f| (f.as_str(), m)))
        .filter(|(f, _)| under.is_none_or(|dir| Path::new(f).parent() == Some(dir)))
        .collect();
    let mut report = Report::default();
    for topic in topics {
        let file = key(&topic.file);
        let mut request = topic.request();
        request.metadata.insert(FILE_KEY.to_string(), file.clone());
        match by_file.get(file.as_str()) {
            Some(m) if m.metadata.get(HASH_KEY) == Some(&topic.sha256) => report.unchanged += 1,
            Some(m) => {
                // The same text (only the file's bytes around it changed) is the same memory.
                let done = client.run(request)?;
                if done.id == m.id {
                    report.unchanged += 1;
                } else {
                    forget(client, &m.id)?;
                    report.updated += 1;
                }
            }
            None => {
                client.run(request)?;
                report.added += 1;
            }
        }
    }
    for (file, m) in &by_file {
        if !topics.iter().any(|t| key(&t.file) == *file) {
            forget(client, &m.id)?;
            report.forgotten += 1;
        }
    }
    Ok(report)
}

fn forget(client: &mut Client, id: &str) -> Result<()> {
    client.run(ops::Forget {
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
    Some(wt_memory_foundation::hygiene::hex(&Sha256::digest(
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
        // Claude Code 2.1.332 nests the type under `metadata:`.
        let (fields, body) = parse(
            "---\nname: test-database\ndescription: integration tests hit a real db\nmetadata:\n  type: feedback\n---\n\nNever mock the database.\n",
        );
        assert_eq!(fields["metadata.type"], "feedback");
        assert!(!fields.contains_key("type"), "{fields:?}");
        assert_eq!(body, "Never mock the database.");
        let (fields, body) = parse("plain note without frontmatter");
        assert!(fields.is_empty());
        assert_eq!(body, "plain note without frontmatter");
    }

    #[test]
    fn slugs_are_claude_codes_with_a_hash_past_200_characters() {
        assert_eq!(slug("/a/my.proj_dir x"), "-a-my-proj-dir-x");
        assert_eq!(
            slug("/p/\u{1F600}é"),
            "-p----",
            "UTF-16 units, as JavaScript counts"
        );
        let long = format!(
            "/home/developer/{}shopapp",
            "very-long-directory-name-for-a-monorepo/".repeat(6)
        );
        let expected = format!(
            "{}-e8uqhz",
            long.chars()
                .take(200)
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect::<String>()
        );
        assert_eq!(slug(&long), expected);
    }
}
