//! Memories from commits: the message of a `git commit` run through Bash (PostToolUse), and the
//! `**Choice**:` lines of an OpenSpec change's design.md once its commits appear (Stop).

use regex::Regex;
use std::path::Path;
use std::sync::OnceLock;

/// How far into a Bash command `git commit` is looked for (a long heredoc message must not hide it).
const COMMIT_WINDOW: usize = 300;
const COMMIT_MESSAGE_CHARS: usize = 200;
const DESIGN_MEMORY_CHARS: usize = 300;

pub const LAST_COMMIT_MARKER: &str = ".wt-tools/.last-memory-commit";
pub const SAVED_DESIGNS: &str = ".wt-tools/.saved-designs";
pub const DESIGN_TAGS_BASE: &str = "phase:apply,source:hook,decisions";

/// The commit message of a Bash command that runs `git commit`, else None. A heredoc body wins
/// (Claude Code writes `-m "$(cat <<'EOF' … EOF)"`, where a plain `-m "…"` match would capture
/// `$(cat <<'EOF'`), then `-m "…"` / `-m '…'`, then the tool's description.
pub fn commit_message(command: &str, description: Option<&str>) -> Option<String> {
    if !wt_memory_foundation::hygiene::truncate_chars(command, COMMIT_WINDOW).contains("git commit")
    {
        return None;
    }
    static HEREDOC: OnceLock<Regex> = OnceLock::new();
    static DOUBLE: OnceLock<Regex> = OnceLock::new();
    static SINGLE: OnceLock<Regex> = OnceLock::new();
    let heredoc = HEREDOC.get_or_init(|| {
        Regex::new(r#"<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?[^\n]*\n"#).unwrap()
    });
    let double =
        DOUBLE.get_or_init(|| Regex::new(r#"(?:-m|--message)[= ]\s*"((?:[^"\\]|\\.)*)""#).unwrap());
    let single = SINGLE.get_or_init(|| Regex::new(r#"(?:-m|--message)[= ]\s*'([^']*)'"#).unwrap());

    let first_line = |s: &str| {
        s.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(String::from)
    };
    let message = if let Some(c) = heredoc.captures(command) {
        let delimiter = c.get(1).unwrap().as_str();
        let body = &command[c.get(0).unwrap().end()..];
        body.lines()
            .take_while(|l| l.trim() != delimiter)
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(String::from)
    } else if let Some(c) = double.captures(command) {
        first_line(&c[1].replace("\\\"", "\"").replace("\\\\", "\\"))
    } else if let Some(c) = single.captures(command) {
        first_line(&c[1])
    } else {
        None
    };
    message
        .or_else(|| description.and_then(first_line))
        .map(|m| {
            wt_memory_foundation::hygiene::truncate_chars(&m, COMMIT_MESSAGE_CHARS).to_string()
        })
}

/// A change name usable as a single path component.
fn valid_change(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// The change a commit belongs to: the subject text before the first `:`.
pub fn change_of_subject(subject: &str) -> Option<String> {
    let (head, _) = subject.split_once(':')?;
    let head = head.trim();
    valid_change(head).then(|| head.to_string())
}

/// `"<change>: <choice>. <choice>"` from the `**Choice**:` lines of a design.md, at most 300
/// characters (`...` when cut); None without choices.
pub fn design_memory(change: &str, design_md: &str) -> Option<String> {
    let choices: Vec<&str> = design_md
        .lines()
        .filter_map(|l| {
            l.trim()
                .trim_start_matches(['-', '*', ' '])
                .strip_prefix("Choice**:")
        })
        .chain(
            design_md
                .lines()
                .filter_map(|l| l.trim().strip_prefix("**Choice:**")),
        )
        .map(|c| c.trim().trim_end_matches('.'))
        .filter(|c| !c.is_empty())
        .collect();
    if choices.is_empty() {
        return None;
    }
    let full = format!("{change}: {}", choices.join(". "));
    if full.chars().count() <= DESIGN_MEMORY_CHARS {
        return Some(full);
    }
    let cut =
        wt_memory_foundation::hygiene::truncate_chars(&full, DESIGN_MEMORY_CHARS - 3).trim_end();
    Some(format!("{cut}..."))
}

/// `(sha, subject)` of the commits to look at: `<last>..HEAD`, or only HEAD without a usable marker.
pub fn new_commits(root: &Path, last: Option<&str>) -> Vec<(String, String)> {
    let range = last.map(|l| format!("{l}..HEAD"));
    let mut args = vec!["log", "--format=%H%x09%s"];
    match &range {
        Some(r) => args.push(r),
        None => args.extend(["-1", "HEAD"]),
    }
    let out = wt_memory_base::project::git(root, &args).or_else(|| {
        // The recorded commit may be gone (rebased away): fall back to HEAD alone.
        range.as_ref().and_then(|_| {
            wt_memory_base::project::git(root, &["log", "--format=%H%x09%s", "-1", "HEAD"])
        })
    });
    out.unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(h, s)| (h.to_string(), s.to_string()))
        .collect()
}

/// Stop: for commits since the recorded HEAD, store each OpenSpec change's design choices once.
pub fn on_stop(ctx: &super::Ctx) -> Result<(), String> {
    let Some(root) = wt_memory_base::project::toplevel(&ctx.project_dir) else {
        return Ok(());
    };
    let Some(head) = wt_memory_base::project::git(&root, &["rev-parse", "HEAD"]) else {
        return Ok(());
    };
    let marker = root.join(LAST_COMMIT_MARKER);
    let _lock = super::cache::lock_exclusive(&root.join(".wt-tools/.hook.lock"), ctx.deadline)?;
    let last = std::fs::read_to_string(&marker)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    if last.as_deref() == Some(head.as_str()) {
        return Ok(());
    }
    let saved_path = root.join(SAVED_DESIGNS);
    let mut saved: Vec<String> = std::fs::read_to_string(&saved_path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    for (_, subject) in new_commits(&root, last.as_deref()) {
        let change = change_of_subject(&subject).unwrap_or_else(|| "general".to_string());
        if saved.contains(&change) {
            continue;
        }
        let design = root
            .join("openspec/changes")
            .join(&change)
            .join("design.md");
        let Ok(text) = std::fs::read_to_string(&design) else {
            continue;
        };
        let Some(content) = design_memory(&change, &text) else {
            continue;
        };
        // On failure the HEAD marker stays put, so the next Stop retries.
        super::memory::remember(
            ctx,
            &content,
            "Decision",
            &format!("change:{change},{DESIGN_TAGS_BASE}"),
            &[],
            "commit",
        )?;
        saved.push(change);
        let mut list = saved.join("\n");
        list.push('\n');
        wt_memory_base::paths::write_atomic(&saved_path, list.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    wt_memory_base::paths::write_atomic(&marker, format!("{head}\n").as_bytes())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heredoc_message_wins_over_dash_m() {
        let cmd = "git add x && git commit -m \"$(cat <<'EOF'\nadd-login: hash passwords with the argon2 wrapper\n\nBody.\n\nCo-Authored-By: Claude <noreply@anthropic.com>\nEOF\n)\"";
        assert_eq!(
            commit_message(cmd, Some("Commit")).as_deref(),
            Some("add-login: hash passwords with the argon2 wrapper")
        );
    }

    #[test]
    fn dash_m_quotes_and_description_fallback() {
        assert_eq!(
            commit_message(
                "git commit -m \"add-login: store \\\"sid\\\" cookie\"",
                None
            )
            .as_deref(),
            Some("add-login: store \"sid\" cookie")
        );
        assert_eq!(
            commit_message("git commit -m 'fix: typo'", None).as_deref(),
            Some("fix: typo")
        );
        assert_eq!(
            commit_message("git commit --amend --no-edit", Some("Amend")).as_deref(),
            Some("Amend")
        );
        assert_eq!(commit_message("cargo test", Some("x")), None);
        let late = format!("{} && git commit -m \"late\"", "echo a; ".repeat(60));
        assert_eq!(commit_message(&late, None), None);
    }

    #[test]
    fn commit_message_is_cut_on_characters() {
        let msg = "é".repeat(300);
        let got = commit_message(&format!("git commit -m \"{msg}\""), None).unwrap();
        assert_eq!(got.chars().count(), 200);
    }

    #[test]
    fn change_names_from_subjects() {
        assert_eq!(
            change_of_subject("add-login: hash").as_deref(),
            Some("add-login")
        );
        assert_eq!(change_of_subject("no colon here"), None);
        assert_eq!(change_of_subject("../etc: x"), None);
        assert_eq!(change_of_subject("fix(api): x"), None);
    }

    #[test]
    fn design_choices_joined_and_capped() {
        let md = "# D\n\n**Choice**: argon2id through the wrapper.\n\nText\n\n**Choice**: HttpOnly cookie\n";
        assert_eq!(
            design_memory("add-login", md).as_deref(),
            Some("add-login: argon2id through the wrapper. HttpOnly cookie")
        );
        assert_eq!(design_memory("x", "no choices"), None);
        let long = format!("**Choice**: {}\n", "ő".repeat(400));
        let m = design_memory("c", &long).unwrap();
        assert_eq!(m.chars().count(), 300);
        assert!(m.ends_with("..."));
    }
}
