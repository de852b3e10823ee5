//! Cleanup of memory instructions that earlier generations wrote into `.claude/`:
//! inline `<!-- wt-memory hooks … start -->…<!-- wt-memory hooks … end -->` blocks in skills and
//! commands, manual `wt-memory recall|remember` lines in command files, and `.claude/hot-topics.json`.
//! (Old CLAUDE.md memory sections are handled by [`super::claude_md`].)

use super::Workspace;
use anyhow::Result;
use regex::Regex;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn block_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?s)[ \t]*<!--[ \t]*wt-memory hooks\b[^\n]*?\bstart[ \t]*-->.*?<!--[ \t]*wt-memory hooks\b[^\n]*?\bend[ \t]*-->[ \t]*(?:\r?\n)?",
        )
        .expect("valid regex")
    })
}

fn start_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"<!--[ \t]*wt-memory hooks\b[^\n]*?\bstart[ \t]*-->").expect("valid regex")
    })
}

/// `text` without the inline memory blocks, plus how many were removed and how many start markers
/// had no end marker (left alone).
pub fn remove_inline_blocks(text: &str) -> (String, usize, usize) {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut removed = 0;
    for m in block_re().find_iter(text) {
        let before = &text[last..m.start()];
        out.push_str(before);
        last = m.end();
        removed += 1;
        // A block set off by blank lines on both sides leaves one blank line, not two.
        let blank_before = out.is_empty() || out.ends_with("\n\n");
        if blank_before && text[last..].starts_with('\n') {
            last += 1;
        }
    }
    out.push_str(&text[last..]);
    let unterminated = start_re().find_iter(&out).count();
    (out, removed, unterminated)
}

/// `text` without lines that tell the agent to run `wt-memory recall|remember` by hand.
pub fn remove_manual_memory_lines(text: &str) -> (String, usize) {
    let mut removed = 0;
    let kept: String = text
        .split_inclusive('\n')
        .filter(|line| {
            let manual = line.contains("wt-memory recall") || line.contains("wt-memory remember");
            removed += usize::from(manual);
            !manual
        })
        .collect();
    (kept, removed)
}

/// Every `.md` file under `dir`, without following symlinked directories.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            markdown_files(&path, out);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// Plan the cleanup for `target`; every removal becomes a note.
pub fn plan(
    ws: &mut Workspace,
    target: &Path,
    notes: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let claude_dir = target.join(".claude");
    let commands_dir = claude_dir.join("commands");
    let own_commands = commands_dir.join("wt");
    let mut files = Vec::new();
    markdown_files(&claude_dir, &mut files);
    for path in files {
        let rel = path
            .strip_prefix(target)
            .unwrap_or(&path)
            .display()
            .to_string();
        // Unreadable or non-UTF-8 files are not ours to rewrite.
        let Ok(Some(text)) = ws.read(&path) else {
            continue;
        };
        let (mut new, blocks, unterminated) = remove_inline_blocks(&text);
        if blocks > 0 {
            notes.push(format!(
                "{rel}: removed {blocks} inline wt-memory hooks block(s)"
            ));
        }
        if unterminated > 0 {
            warnings.push(format!(
                "{rel}: a `wt-memory hooks` start marker has no end marker; left as is"
            ));
        }
        if path.starts_with(&commands_dir) && !path.starts_with(&own_commands) {
            let (kept, lines) = remove_manual_memory_lines(&new);
            if lines > 0 {
                notes.push(format!(
                    "{rel}: removed {lines} manual `wt-memory recall/remember` line(s)"
                ));
                new = kept;
            }
        }
        if new != text {
            ws.write(&path, new);
        }
    }
    let hot_topics = claude_dir.join("hot-topics.json");
    if hot_topics.is_file() {
        ws.read(&hot_topics).ok();
        ws.delete(&hot_topics);
        notes.push(".claude/hot-topics.json: removed (obsolete hot-topic recall)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_real_end_markers_and_keeps_surroundings() {
        let text = "# Skill\n\nStep 1.\n\n<!-- wt-memory hooks: recall start -->\nRun wt-memory recall.\n<!-- wt-memory hooks: recall end -->\n\nStep 2.\n";
        let (out, n, open) = remove_inline_blocks(text);
        assert_eq!(
            (out.as_str(), n, open),
            ("# Skill\n\nStep 1.\n\nStep 2.\n", 1, 0)
        );
    }

    #[test]
    fn unterminated_block_is_left_and_counted() {
        let text = "a\n<!-- wt-memory hooks start -->\nb\n";
        let (out, n, open) = remove_inline_blocks(text);
        assert_eq!((out.as_str(), n, open), (text, 0, 1));
    }

    #[test]
    fn manual_lines_go_other_lines_stay() {
        let (out, n) = remove_manual_memory_lines("do x\n- run `wt-memory recall \"q\"`\necho y | wt-memory remember --type Learning\nend\n");
        assert_eq!((out.as_str(), n), ("do x\nend\n", 2));
    }
}
