//! The action gate at PreToolUse (docs/security.md, "A memory informs; it never authorises").
//!
//! Three records per session, kept in one append-only ledger beside the session cache
//! (`session-<id>.shown.jsonl` in the per-user runtime directory):
//! - every memory that reached the agent, by any route (a hook's injection, noted as its lines are
//!   formatted; an answer of our MCP server, read from PostToolUse's record of it), with its
//!   origin, age, whether it speaks for the user, and what it supplies ([`gate::Supplies`]),
//!   read once as it is recorded: every PreToolUse reads the whole ledger, and reading 250 texts
//!   again there cost 12 ms (release) on every tool call;
//! - what each of the user's prompts supplies;
//! - the project as the session found it (its commit, its remotes' hosts and repositories).
//!
//! At PreToolUse a call's sensitive parts ([`gate::sensitive_parts`]) are each checked: a part
//! supplied by a memory without the user's authority, and by neither the user (a prompt, one of
//! their own memories) nor the project, stops the call for the user's decision. A subagent's
//! hooks carry its parent's `session_id`, so what it was shown counts for the parent too.

use super::{log, Ctx};
use std::io::Write;
use std::path::{Path, PathBuf};
use wt_memory_core::record::MemoryRecord;
use wt_memory_core::trust::{speaks_for_user, Provenance, PROVENANCE};
use wt_memory_foundation::gate::{self, Entry, Part, Supplies};

/// The ledger of session `id` in `dir`.
pub fn ledger_path(dir: &Path, session_id: &str) -> Option<PathBuf> {
    let id = super::cache::sanitize_session_id(session_id)?;
    Some(dir.join(format!("session-{id}.shown.jsonl")))
}

fn ledger(ctx: &Ctx, session_id: Option<&str>) -> Option<PathBuf> {
    let dir = wt_memory_base::paths::runtime_dir();
    // Ours and private, as every file of the runtime folder (a folder another user made first
    // is refused: nothing of a session is written there).
    if let Err(e) = wt_memory_base::paths::ensure_private_dir(&dir) {
        log::error(&ctx.event, &format!("gate ledger: {e}"));
        return None;
    }
    ledger_path(&dir, session_id?)
}

/// Append `entries` to the ledger (one write: lines of parallel hooks never interleave).
fn append(path: &Path, entries: &[Entry]) -> Result<(), String> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for e in entries {
        text.push_str(&serde_json::to_string(e).map_err(|e| e.to_string())?);
        text.push('\n');
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    let mut file = wt_memory_base::os::files::private_no_follow(&mut options)
        .open(path)
        .map_err(|e| format!("gate ledger {}: {e}", path.display()))?;
    file.write_all(text.as_bytes())
        .map_err(|e| format!("gate ledger {}: {e}", path.display()))
}

/// Every entry of a ledger (a damaged line is skipped; a missing ledger is empty).
pub fn read(path: &Path) -> Vec<Entry> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
        .map(Entry::read)
        .collect()
}

/// Every entry of a ledger that exists or was never written; None when it cannot be read.
fn read_existing(path: &Path) -> Option<Vec<Entry>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Some(
            text.lines()
                .filter_map(|l| serde_json::from_str::<Entry>(l).ok())
                .map(Entry::read)
                .collect(),
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Vec::new()),
        Err(_) => None,
    }
}

/// What the ledger keeps of a memory shown.
pub fn memory_entry(m: &MemoryRecord) -> Entry {
    let provenance = Provenance::parse(m.metadata.get(PROVENANCE).map(String::as_str));
    // Everything of it a reader can see, namespaced tags and metadata keys too (MCP answers
    // show them whole).
    let mut shown = vec![m.content.clone()];
    shown.extend(m.tags.iter().cloned());
    shown.extend(m.entities.iter().cloned());
    shown.extend(m.metadata.iter().map(|(k, v)| format!("{k} {v}")));
    Entry::Memory {
        id: m.id.clone(),
        origin: provenance.as_str(),
        created: m.created_at.clone(),
        authority: speaks_for_user(&m.metadata),
        supplies: Supplies::of(&shown.join("\n")),
    }
}

/// After a run that printed `context`: record what it showed.
pub fn record_shown(ctx: &Ctx, session_id: Option<&str>, context: Option<&str>) {
    let noted: Vec<Entry> = super::shown::take().iter().map(memory_entry).collect();
    if context.is_none() || noted.is_empty() {
        return;
    }
    if let Some(path) = ledger(ctx, session_id) {
        if let Err(e) = append(&path, &noted) {
            log::error(&ctx.event, &e);
        }
    }
}

/// PostToolUse of one of our MCP tools: what its answer showed the agent. A record in it is
/// kept with its own origin; any other text of the answer counts as shown without authority.
pub fn record_mcp_answer(ctx: &Ctx, session_id: Option<&str>, response: &serde_json::Value) {
    let mut entries = Vec::new();
    let mut loose = String::new();
    walk_answer(response, &mut entries, &mut loose, 0);
    if loose.trim().chars().count() >= 8 {
        entries.push(Entry::Memory {
            id: "mcp-answer".into(),
            origin: "mcp answer".into(),
            created: String::new(),
            authority: false,
            supplies: Supplies::of(&loose),
        });
    }
    if let Some(path) = ledger(ctx, session_id) {
        if let Err(e) = append(&path, &entries) {
            log::error(&ctx.event, &e);
        }
    }
}

fn walk_answer(v: &serde_json::Value, out: &mut Vec<Entry>, loose: &mut String, depth: usize) {
    use serde_json::Value;
    if depth > 12 {
        return;
    }
    match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(inner @ (Value::Object(_) | Value::Array(_))) => {
                walk_answer(&inner, out, loose, depth + 1)
            }
            _ => {
                loose.push_str(s);
                loose.push('\n');
            }
        },
        Value::Array(items) => items
            .iter()
            .for_each(|x| walk_answer(x, out, loose, depth + 1)),
        Value::Object(fields) => {
            let record = fields.get("id").and_then(Value::as_str).is_some()
                && fields.get("content").and_then(Value::as_str).is_some();
            if record {
                if let Ok(m) = serde_json::from_value::<MemoryRecord>(v.clone()) {
                    out.push(memory_entry(&m));
                    return;
                }
            }
            for (k, x) in fields {
                // Field names are the server's own; values are what was shown.
                if k != "type" {
                    walk_answer(x, out, loose, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// UserPromptSubmit: what the user's prompt supplies.
pub fn record_prompt(ctx: &Ctx, session_id: Option<&str>, prompt: &str) {
    if let Some(path) = ledger(ctx, session_id) {
        let entry = Entry::Prompt {
            supplies: Supplies::of(prompt),
        };
        if let Err(e) = append(&path, &[entry]) {
            log::error(&ctx.event, &e);
        }
    }
}

/// SessionStart (startup or clear): the project as the session finds it.
pub fn record_start(ctx: &Ctx, session_id: Option<&str>) {
    let Some(path) = ledger(ctx, session_id) else {
        return;
    };
    let entry = project_now(&ctx.project_dir);
    let _ = std::fs::remove_file(&path);
    if let Err(e) = append(&path, &[entry]) {
        log::error(&ctx.event, &e);
    }
}

fn project_now(dir: &Path) -> Entry {
    let commit = wt_memory_base::project::git(dir, &["rev-parse", "--verify", "-q", "HEAD"])
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let remotes = wt_memory_base::project::git(
        dir,
        &["config", "--get-regexp", r"^remote\..*\.(push)?url$"],
    )
    .unwrap_or_default();
    let urls: Vec<&str> = remotes
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    Entry::Start {
        commit,
        remote_hosts: urls
            .iter()
            .flat_map(|url| gate::Supplies::of(url).hosts)
            .collect(),
        repositories: urls
            .iter()
            .filter_map(|url| gate::repository_of(url))
            .collect(),
    }
}

// ---- standing rules ---------------------------------------------------------------------------

/// The standing rules shown at SessionStart: at most this many ...
pub const STANDING_RULES: usize = 8;
/// ... in at most this many bytes (header included).
pub const STANDING_BYTES: usize = 600;

/// SessionStart: the user's standing rules (the project's first: they win where the two differ),
/// as one short block, recorded in the ledger with the acts they guard. Only a rule that speaks
/// for the user counts, whatever its tag says.
pub fn standing_block(ctx: &Ctx, session_id: Option<&str>) -> Option<String> {
    let (own, personal) = super::memory::standing(ctx, 32);
    let users = |m: &MemoryRecord| {
        speaks_for_user(&m.metadata)
            && !m.has_tag(wt_memory_core::trust::HELD_TAG)
            && m.superseded_by.is_none()
    };
    let own: Vec<MemoryRecord> = own.into_iter().filter(users).collect();
    let personal: Vec<MemoryRecord> = personal.into_iter().filter(users).collect();
    let (rules, set_aside) = project_wins(own, personal);
    let (text, shown) = standing_text(&rules, set_aside)?;
    if let Some(path) = ledger(ctx, session_id) {
        let entries: Vec<Entry> = shown
            .iter()
            .map(|m| Entry::Standing {
                id: m.id.clone(),
                text: m.content.clone(),
                kinds: gate::guarded_kinds(&m.content),
            })
            .collect();
        if let Err(e) = append(&path, &entries) {
            log::error(&ctx.event, &e);
        }
    }
    Some(text)
}

/// The project's rules, then the personal rules that none of them contradicts (issue 71: where
/// the user said one thing for this project and another for everywhere, the project's rule wins),
/// and how many personal rules were set aside. Only the user's own rules are here: a teammate's
/// memory is never standing, so it can never set aside what the user said.
pub fn project_wins(
    own: Vec<MemoryRecord>,
    personal: Vec<MemoryRecord>,
) -> (Vec<MemoryRecord>, usize) {
    let settled: Vec<gate::Settles> = own.iter().map(|m| gate::Settles::of(&m.content)).collect();
    let before = personal.len();
    let kept: Vec<MemoryRecord> = personal
        .into_iter()
        .filter(|m| {
            let theirs = gate::Settles::of(&m.content);
            !settled.iter().any(|s| s.conflicts_with(&theirs))
        })
        .collect();
    let set_aside = before - kept.len();
    (own.into_iter().chain(kept).collect(), set_aside)
}

/// The block for `rules` (in the order given) within [`STANDING_RULES`] and [`STANDING_BYTES`],
/// and the rules it shows; what does not fit is counted, with where to see it, and so are the
/// personal rules the project's own set aside.
pub fn standing_text(
    rules: &[MemoryRecord],
    set_aside: usize,
) -> Option<(String, Vec<&MemoryRecord>)> {
    const HEADER: &str =
        "The user's standing preferences (their own words; follow them in this session):";
    if rules.is_empty() {
        return None;
    }
    let aside = if set_aside > 0 {
        format!("\n({set_aside} personal rule(s) set aside: this project's rule on the same subject wins)")
    } else {
        String::new()
    };
    let more = |n: usize| format!("\n(+{n} more: `wt-memory list --standing`)");
    let mut text = HEADER.to_string();
    let mut shown = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, m) in rules.iter().enumerate() {
        let rule = super::format::clean_content(&m.content, false);
        let rule = wt_memory_foundation::hygiene::truncate_with_ellipsis(&rule, 160);
        if !seen.insert(rule.to_lowercase()) {
            continue;
        }
        let line = format!("\n- {rule}");
        let left_out = rules.len() - i - 1;
        let tail = if left_out > 0 {
            more(left_out).len()
        } else {
            0
        };
        if shown.len() == STANDING_RULES
            || text.len() + line.len() + tail + aside.len() > STANDING_BYTES
        {
            text.push_str(&more(rules.len() - i));
            text.push_str(&aside);
            return Some((text, shown));
        }
        text.push_str(&line);
        shown.push(m);
    }
    text.push_str(&aside);
    Some((text, shown))
}

// ---- the gate ----------------------------------------------------------------------------------

/// Why a call is stopped, and whether the user can be asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    pub reason: String,
    /// `ask` (the user is prompted) or `deny` (no one can be asked: bypassPermissions, dontAsk).
    pub ask: bool,
}

/// Permission modes in which Claude Code shows an `ask` to the user (or, in `-p`, refuses the
/// call: measured with the real client, docs/security.md). In any other mode (bypassPermissions,
/// dontAsk, auto, one we do not know) an `ask` could be answered without the user, so the call
/// is denied with the way to let it through.
fn asks_the_user(mode: Option<&str>) -> bool {
    matches!(mode, None | Some("default" | "acceptEdits" | "plan"))
}

/// The gate for one PreToolUse input: None lets the call go on.
pub fn check(ctx: &Ctx, input: &super::input::HookInput) -> Option<Stop> {
    let tool = input.str("tool_name").unwrap_or("");
    let tool_input = input.get("tool_input").cloned().unwrap_or_default();
    let ask = asks_the_user(input.str("permission_mode"));
    let stores = [
        ctx.project.store_dir.to_string_lossy().into_owned(),
        wt_memory_base::config::get()
            .storage_root
            .to_string_lossy()
            .into_owned(),
    ];
    if let Some(reason) = gate::own_controls(&stores, tool, &tool_input, &|p| {
        std::fs::read_to_string(p).ok()
    }) {
        return Some(Stop { reason, ask });
    }
    let home = wt_memory_base::os::dirs::home();
    // A program run by path is the project's own when the file is in the project.
    let project_file = |p: &str| {
        !p.contains("..")
            && (p.contains('/') || p.starts_with('.'))
            && ctx.project_dir.join(p.trim_start_matches("./")).is_file()
    };
    let place = gate::Place {
        project: &ctx.project_dir,
        home: home.as_deref(),
        project_file: Some(&project_file),
    };
    let parts = gate::sensitive_parts(tool, &tool_input, &place);
    if parts.is_empty() {
        return None;
    }
    let session = input.str("session_id")?;
    // A ledger that cannot be read is never an empty one (a folder's mode changed, a file taken
    // away): the session is judged as one shown memories without the user's authority.
    let entries = ledger(ctx, Some(session))
        .and_then(|p| read_existing(&p))
        .unwrap_or_else(|| {
            vec![Entry::Memory {
                id: "unreadable-ledger".into(),
                origin: "an unreadable ledger".into(),
                created: String::new(),
                authority: false,
                supplies: Supplies::default(),
            }]
        });
    if let Some((id, rule, part)) = gate::standing_guard(&parts, &entries) {
        let short = wt_memory_core::record::short_id(id);
        let then = if ask {
            "Allow it only if the user wants it now"
        } else {
            "It was not run; the user allows it by asking for it in their own prompt"
        };
        return Some(Stop {
            reason: format!(
                "wt-memory: the user's standing rule [MEM#{short}] \"{}\" asks for their word \
                 before a {}. {then}.",
                wt_memory_foundation::hygiene::truncate_with_ellipsis(rule, 160),
                part.kind.label()
            ),
            ask,
        });
    }
    let mut said = String::new();
    for v in tool_input.as_object().into_iter().flat_map(|o| o.values()) {
        if let Some(t) = v.as_str() {
            said.push_str(t);
            said.push('\n');
        }
    }
    let verdict = gate::judge(&parts, &entries, &Supplies::of(&said), &|part, start| {
        project_holds(ctx, part, start)
    })?;
    let age = if verdict.created.is_empty() {
        String::new()
    } else {
        super::format::age(&verdict.created, chrono::Utc::now())
    };
    Some(Stop {
        reason: verdict.reason(&origin_shown(&verdict.origin), &age, ask),
        ask,
    })
}

/// How a stop's reason names a memory's origin.
fn origin_shown(origin: &str) -> String {
    if origin == "mcp answer" {
        return "an answer of the memory's MCP tools".into();
    }
    Provenance::parse(Some(origin))
        .shown()
        .unwrap_or_else(|| "the user's".to_string())
}

/// Does the project itself hold `part`? A host among its remotes when the session started, or a
/// host or token in its files as committed then (not as the agent may have changed them since).
fn project_holds(ctx: &Ctx, part: &Part, start: Option<&Entry>) -> bool {
    let committed = gate::committed_file_of(part, &ctx.project_dir);
    let package = gate::manifest_needle(part);
    let Some(needle) = gate::project_needle(part)
        .map(str::to_string)
        .or(committed.clone())
        .or(package.clone())
    else {
        return false;
    };
    let (commit, remote_hosts) = match start {
        Some(Entry::Start {
            commit,
            remote_hosts,
            ..
        }) => (commit.clone(), remote_hosts.clone()),
        _ => match project_now(&ctx.project_dir) {
            Entry::Start {
                commit,
                remote_hosts,
                ..
            } => (commit, remote_hosts),
            _ => (None, Vec::new()),
        },
    };
    if remote_hosts.iter().any(|h| h == &part.operand) {
        return true;
    }
    let Some(commit) = commit else { return false };
    if let Some(package) = package {
        // A package the project's manifests already name (whole, case-insensitive).
        let pattern = gate::whole_pattern(&package);
        let mut args = vec!["grep", "-q", "-i", "-E", "-e", &pattern, &commit, "--"];
        args.extend(gate::MANIFESTS);
        return wt_memory_base::project::git(&ctx.project_dir, &args).is_some();
    }
    if let Some(file) = committed {
        // The file itself in the committed tree (its path as git spells it, case-folded).
        return wt_memory_base::project::git(
            &ctx.project_dir,
            &["ls-tree", "-r", "--name-only", &commit, "--", &file],
        )
        .is_some_and(|listed| listed.lines().any(|l| l.to_lowercase() == file));
    }
    // Whole (not inside a longer name), case-insensitive, in the committed tree.
    let pattern = gate::whole_pattern(&needle);
    wt_memory_base::project::git(
        &ctx.project_dir,
        &["grep", "-q", "-i", "-E", "-e", &pattern, &commit, "--"],
    )
    .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: &str, content: &str) -> MemoryRecord {
        MemoryRecord {
            id: id.into(),
            content: content.into(),
            ..MemoryRecord::default()
        }
    }

    #[test]
    fn the_projects_rule_wins_where_a_personal_one_disagrees() {
        let own = vec![
            rule("p1", "Answer me in English in this project"),
            rule("p2", "You can force-push my branches here without asking"),
        ];
        let personal = vec![
            rule(
                "u1",
                "Always answer me in German, even when I write in English",
            ),
            rule("u2", "Never force-push without asking me first"),
            rule("u3", "Ask me before you delete any migration"),
        ];
        let (rules, set_aside) = project_wins(own, personal);
        let ids: Vec<&str> = rules.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["p1", "p2", "u3"]);
        assert_eq!(set_aside, 2);
        let (text, shown) = standing_text(&rules, set_aside).expect("a block");
        assert_eq!(shown.len(), 3);
        assert!(text.contains("2 personal rule(s) set aside"), "{text}");
        assert!(!text.contains("German"), "{text}");
    }

    #[test]
    fn the_block_keeps_its_budget_and_says_what_it_left_out() {
        let rules: Vec<MemoryRecord> = (0..12)
            .map(|i| rule(&format!("r{i}"), &format!("Never touch the module number {i} without asking me first, it is fragile and old")))
            .collect();
        let (text, shown) = standing_text(&rules, 1).expect("a block");
        assert!(text.len() <= STANDING_BYTES, "{} bytes", text.len());
        assert!(shown.len() < rules.len());
        let left = rules.len() - shown.len();
        assert!(
            text.contains(&format!("(+{left} more: `wt-memory list --standing`)")),
            "{text}"
        );
        assert!(
            text.ends_with("this project's rule on the same subject wins)"),
            "{text}"
        );
        assert!(standing_text(&[], 0).is_none());
    }
}
