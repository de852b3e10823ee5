//! Stop: LLM insight extraction from the session transcript (the previous system's line format,
//! `Type|tags|content`).
//!
//! Stop fires after every assistant turn, so each transcript has a processed byte offset in a state
//! file in the project's store dir; only lines after it are ever sent. Extractions of one store
//! run one at a time (a lock held from reading the offset to recording the new one), and the
//! offset moves only after the span's insights are stored: no span is sent twice, none is lost.

use super::{memory, transcript, Ctx};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Duration;
use wt_memory_foundation::llm::{claude_bin, run_claude, LLM_TIMEOUT};

/// The newest transcript lines considered per extraction.
const WINDOW_LINES: usize = 100;
const MAX_INSIGHTS: usize = 3;
const INSIGHT_CHARS: usize = 200;
const STATE_FILE: &str = "hook-extract-state.json";
const STATE_LOCK: &str = "hook-extract-state.lock";
pub const BASE_TAGS: &str = "phase:auto-extract,source:hook";
/// Markers the agent (or wt-memory's own tools) print when a memory was saved during the session.
const SAVED_MARKERS: &[&str] = &["Memory saved:", "Agent insights saved:"];
/// Headers of our own injected blocks: never fed back to the model.
const INJECTED_HEADERS: &[&str] = &[
    "=== PROJECT MEMORY",
    "=== MEMORY:",
    "=== OPERATIONAL CHEAT SHEET",
    "=== PROJECT CONTEXT",
    "=== MANDATORY RULES",
];

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct TranscriptState {
    /// Bytes of the transcript already processed.
    pub offset: u64,
    /// An `opsx:*`/`openspec-*` skill was seen somewhere in the transcript.
    #[serde(default)]
    pub openspec: bool,
    /// Change name from the latest such skill's args.
    #[serde(default)]
    pub change: Option<String>,
    #[serde(default)]
    pub skills: Vec<String>,
    #[serde(default)]
    pub updated: i64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StateFile {
    #[serde(default)]
    transcripts: BTreeMap<String, TranscriptState>,
}

fn is_openspec_skill(skill: &str) -> bool {
    skill.starts_with("opsx:") || skill.starts_with("openspec-")
}

/// The compact excerpt sent to the model.
#[derive(Debug, Default)]
pub struct Window {
    pub lines: Vec<String>,
    /// New user or assistant text (without it there is nothing to extract).
    pub has_text: bool,
    /// The agent saved memories itself in this span.
    pub agent_saved: bool,
    /// The user said something about themselves ([`speaks_of_self`]): a preference, a habit, how
    /// to address them. Such a span is extracted even outside an OpenSpec session, for the
    /// personal store.
    pub about_the_user: bool,
    /// What the span read from outside the project, as its tool calls name it: a web fetch or
    /// search, another MCP server's tool, an absolute path read (outside or not: see
    /// [`Window::read_outside`]).
    pub fetched: Vec<String>,
}

impl Window {
    /// Did the span read content from outside the repository at `project_dir`? Its memories are
    /// then checked more strictly (`wt_memory_core::trust`): the model summarised text anyone
    /// could have written.
    pub fn read_outside(&self, project_dir: &Path) -> bool {
        self.fetched
            .iter()
            .any(|f| !f.starts_with('/') || !Path::new(f).starts_with(project_dir))
    }
}

/// A shell command that reads from the network (its output is outside content).
fn fetches(command: &str) -> bool {
    command
        .split(|c: char| c.is_whitespace() || "|;&(".contains(c))
        .any(|word| {
            matches!(
                word.rsplit('/').next().unwrap_or(word),
                "curl" | "wget" | "gh" | "http" | "xh" | "lynx" | "w3m" | "aria2c"
            )
        })
}

/// The tools whose results come from outside the project: the web, and MCP servers other than
/// ours (`mcp__wt-tools__…`, or the plugin's `mcp__plugin_wt-tools_wt-tools__…`).
fn reads_outside(tool: &str, input: Option<&Value>) -> Option<String> {
    match tool {
        "WebFetch" | "WebSearch" => Some(tool.to_string()),
        "Read" | "NotebookRead" => input
            .and_then(|i| i.get("file_path").or_else(|| i.get("notebook_path")))
            .and_then(Value::as_str)
            .map(str::to_string),
        t if t.starts_with("mcp__") && !t.contains("wt-tools") => Some(t.to_string()),
        _ => None,
    }
}

fn one_line(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    wt_memory_foundation::hygiene::truncate_with_ellipsis(&flat, max)
}

fn user_text(text: &str, w: &mut Window) {
    let text = transcript::strip_reminders(text);
    if transcript::is_wrapped(&text) || text.chars().count() <= 5 || text.chars().count() >= 2000 {
        return;
    }
    w.about_the_user |= speaks_of_self(&text);
    w.lines.push(format!("USER: {}", one_line(&text, 500)));
    w.has_text = true;
}

/// How people state a lasting preference or habit of their own, in the languages the trust
/// check reads (lower case; matched on word boundaries).
const SELF_CUES: &[&str] = &[
    "i prefer",
    "i'd rather",
    "i would rather",
    "i always",
    "i never",
    "i usually",
    "i like to",
    "i don't like",
    "i do not like",
    "i hate",
    "i want you to always",
    "i want you to never",
    "always use",
    "never use",
    "please always",
    "please never",
    "from now on",
    "going forward",
    "remember that i",
    "remember i",
    "call me",
    "always answer",
    "always reply",
    "always respond",
    "write to me in",
    "my preference",
    "i'm used to",
    "i am used to",
    "my accounts",
    "my test account",
    "my test accounts",
    // German, French, Spanish, Italian, Portuguese.
    "ich bevorzuge",
    "ich mag",
    "ich will immer",
    "ab jetzt",
    "antworte auf",
    "je préfère",
    "à partir de maintenant",
    "réponds en",
    "prefiero",
    "a partir de ahora",
    "responde en",
    "preferisco",
    "d'ora in poi",
    "rispondi in",
    "eu prefiro",
    "de agora em diante",
];

/// Does `text` (the user's) state something lasting about the user: a preference, a habit,
/// how to address them, their accounts?
pub fn speaks_of_self(text: &str) -> bool {
    let lower = format!(" {} ", text.to_lowercase().replace('’', "'"));
    SELF_CUES.iter().any(|cue| {
        lower.match_indices(cue).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + cue.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    })
}

/// Reduce transcript entries to `USER:`/`AGENT:`/`TOOL[Bash]:`/`ERROR:` lines.
pub fn summarize(entries: &[Value]) -> Window {
    let mut w = Window::default();
    for e in entries {
        let kind = transcript::entry_type(e);
        if kind != "user" && kind != "assistant" {
            continue;
        }
        let raw = e.to_string();
        if SAVED_MARKERS.iter().any(|m| raw.contains(m)) {
            w.agent_saved = true;
        }
        if kind == "user" && transcript::is_meta(e) {
            continue;
        }
        match transcript::content(e) {
            transcript::Content::Text(t) if kind == "user" => user_text(t, &mut w),
            transcript::Content::Blocks(blocks) => {
                for b in blocks {
                    match (kind, b.get("type").and_then(Value::as_str).unwrap_or("")) {
                        ("user", "text") => {
                            user_text(b.get("text").and_then(Value::as_str).unwrap_or(""), &mut w)
                        }
                        ("user", "tool_result")
                            if b.get("is_error").and_then(Value::as_bool) == Some(true) =>
                        {
                            let text = transcript::tool_result_text(b);
                            if !text.trim().is_empty() {
                                w.lines.push(format!("ERROR: {}", one_line(&text, 500)));
                            }
                        }
                        ("assistant", "text") => {
                            let text = b.get("text").and_then(Value::as_str).unwrap_or("").trim();
                            if text.is_empty()
                                || INJECTED_HEADERS.iter().any(|h| text.starts_with(h))
                            {
                                continue;
                            }
                            w.lines.push(format!("AGENT: {}", one_line(text, 500)));
                            w.has_text = true;
                        }
                        ("assistant", "tool_use")
                            if b.get("name").and_then(Value::as_str) != Some("Bash") =>
                        {
                            let name = b.get("name").and_then(Value::as_str).unwrap_or("");
                            w.fetched.extend(reads_outside(name, b.get("input")));
                        }
                        ("assistant", "tool_use") => {
                            if let Some(cmd) = b
                                .get("input")
                                .and_then(|i| i.get("command"))
                                .and_then(Value::as_str)
                            {
                                if fetches(cmd) {
                                    w.fetched.push(format!("Bash: {}", one_line(cmd, 80)));
                                }
                                w.lines.push(format!("TOOL[Bash]: {}", one_line(cmd, 200)));
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    w
}

pub const MISSED_ONLY: &str =
    "The agent already saved some memories itself during this span (see \"Memory saved:\" \
above). Extract only what the agent missed; do not repeat what it saved.";

pub fn build_prompt(state: &TranscriptState, window: &Window) -> String {
    let mut p = String::from(
        "You extract durable project knowledge from an excerpt of a coding-agent session, so that a \
future agent working on the same project in a new session does not repeat mistakes or ask again.\n\n",
    );
    if !state.skills.is_empty() {
        p.push_str(&format!(
            "Workflow skills used: {}.\n",
            state.skills.join(", ")
        ));
    }
    if let Some(c) = &state.change {
        p.push_str(&format!("OpenSpec change: {c}.\n"));
    }
    p.push_str(
        "\nKeep only insights a future session needs:\n\
- an error and the fix that worked\n\
- a correction or piece of knowledge from the user (in any language)\n\
- a non-obvious gotcha of this codebase, its build or its tools\n\
- a decision or preference the user stated\n\n\
Do not keep routine progress (task done, tests pass), general programming knowledge, session trivia, \
facts obvious from reading the code, and never credentials, tokens, passwords or other secrets.\n\n",
    );
    if window.agent_saved {
        p.push_str(MISSED_ONLY);
        p.push_str("\n\n");
    }
    p.push_str(
        "Answer with at most 3 lines, one insight per line, exactly in this form:\n\
Type|tags|content|keys: key; key; key\n\
Type is Learning, Decision or Context. An insight about the user rather than this project (a \
preference, working style, language, an account they use), true in any project they work on: \
start its line with Personal: and name no file or command of this project. tags are comma-separated lowercase words. content is one \
self-contained sentence of at most 200 characters. keys help a later session find the insight: \
two short questions or tasks a developer would type when it helps, in their own words, then one \
anchor listing only the files, commands, error codes and identifiers it is specific to; \
separate keys with ;.\n\
If nothing is worth keeping, answer exactly NONE.\n\nSession excerpt:\n",
    );
    for line in &window.lines {
        p.push_str(line);
        p.push('\n');
    }
    p
}

#[derive(Debug, Clone, PartialEq)]
pub struct Insight {
    pub ty: &'static str,
    pub tags: Vec<String>,
    pub content: String,
    /// Retrieval keys, when the model gave them.
    pub keys: Vec<String>,
    /// The model marked it `Personal:` (about the user, for every project); the store it goes
    /// to is [`scope_of`]'s decision.
    pub personal: bool,
}

fn clean_tag(t: &str) -> Option<String> {
    let t: String = t
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_whitespace() { '-' } else { c })
        .filter(|c| c.is_alphanumeric() || "-_.:/".contains(*c))
        .take(40)
        .collect();
    // The model may not claim our provenance tags.
    let reserved = ["phase:", "source:", "change:", "branch:"]
        .iter()
        .any(|p| t.starts_with(p));
    (!t.is_empty() && !reserved).then_some(t)
}

/// Valid `Type|tags|content` lines of the model's answer, optionally ending in
/// `|keys: key; key`, at most three; anything else is ignored.
pub fn parse_insights(output: &str) -> Vec<Insight> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for line in output.lines() {
        let line = line.trim().trim_start_matches(['-', '*', ' ']);
        let (personal, line) = match line.get(..9) {
            Some(head) if head.eq_ignore_ascii_case("personal:") => (true, line[9..].trim_start()),
            _ => (false, line),
        };
        let mut parts = line.splitn(3, '|');
        let (Some(ty), Some(tags), Some(content)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let ty = match ty.trim().to_ascii_lowercase().as_str() {
            "learning" => "Learning",
            "decision" => "Decision",
            "context" => "Context",
            _ => continue,
        };
        let (content, keys) = match content.rsplit_once("|keys:") {
            Some((content, keys)) => (content, keys.split(';').collect()),
            None => (content, Vec::new()),
        };
        let content = content.trim();
        if content.chars().count() < 10 {
            continue;
        }
        let content = wt_memory_foundation::hygiene::truncate_chars(content, INSIGHT_CHARS)
            .trim()
            .to_string();
        if !seen.insert(wt_memory_foundation::hygiene::normalize(&content)) {
            continue;
        }
        let mut tag_list: Vec<String> = Vec::new();
        for t in tags.split(',').filter_map(clean_tag) {
            if !tag_list.contains(&t) && tag_list.len() < 5 {
                tag_list.push(t);
            }
        }
        out.push(Insight {
            ty,
            tags: tag_list,
            content,
            keys: wt_memory_core::record::clean_keys(&keys),
            personal,
        });
        if out.len() == MAX_INSIGHTS {
            break;
        }
    }
    out
}

/// Where an insight is stored. The model's `Personal:` is believed only for a fact that names
/// nothing of this repository (a path or file that exists in it, a script or make target of it,
/// its name): such a fact is project memory whatever the model says, so nothing about a project
/// leaves it for the personal store by a model's mistake.
pub fn scope_of(insight: &Insight, root: &Path) -> crate::scope::Scope {
    use crate::scope::Scope;
    if !insight.personal {
        return Scope::Project;
    }
    let text = std::iter::once(insight.content.as_str())
        .chain(insight.keys.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    if crate::scope::names_project(&text, root) {
        Scope::Project
    } else {
        Scope::Personal
    }
}

pub fn tags_for(insight: &Insight, change: Option<&str>) -> String {
    let mut tags = vec![BASE_TAGS.to_string()];
    if let Some(c) = change {
        tags.push(format!("change:{c}"));
    }
    tags.extend(insight.tags.iter().cloned());
    tags.join(",")
}

fn state_key(path: &Path) -> String {
    let canonical =
        wt_memory_base::os::files::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    wt_memory_foundation::hygiene::content_hash(&canonical.to_string_lossy())[..16].to_string()
}

/// The extraction state of every transcript of a store.
fn read_state(state_path: &Path) -> StateFile {
    std::fs::read(state_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The transcript lines no extraction has taken yet, and the state once they are taken. Nothing
/// is written: see [`commit`].
fn new_lines(
    store_dir: &Path,
    path: &Path,
) -> Result<Option<(Vec<Value>, TranscriptState)>, String> {
    let mut state = read_state(&store_dir.join(STATE_FILE))
        .transcripts
        .remove(&state_key(path))
        .unwrap_or_default();
    let (entries, new_offset) = transcript::read_from(path, state.offset)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if new_offset == state.offset {
        return Ok(None);
    }
    for (skill, args) in entries.iter().flat_map(transcript::skill_calls) {
        if is_openspec_skill(&skill) {
            state.openspec = true;
            if !state.skills.contains(&skill) {
                state.skills.push(skill);
            }
            if let Some(change) = args.split_whitespace().next() {
                state.change = Some(change.to_string());
            }
        }
    }
    state.offset = new_offset;
    state.updated = chrono::Utc::now().timestamp();
    Ok(Some((entries, state)))
}

/// Record that the transcript's lines up to `state.offset` are done.
pub fn commit(store_dir: &Path, path: &Path, state: TranscriptState) -> Result<(), String> {
    let state_path = store_dir.join(STATE_FILE);
    let mut file = read_state(&state_path);
    file.transcripts.insert(state_key(path), state);
    wt_memory_base::paths::write_atomic(
        &state_path,
        &serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("cannot write {}: {e}", state_path.display()))
}

/// What a transcript holds for the extraction, after its processed offset.
pub enum Span {
    /// No new lines.
    Nothing,
    /// New lines the gates leave out (no OpenSpec skill, no user or agent text): recorded as done.
    Skipped(TranscriptState, &'static str),
    /// The prompt for the model, and the state to record once its insights are stored.
    Extract {
        prompt: String,
        state: TranscriptState,
        /// The span read outside content ([`Window::read_outside`]).
        outside: bool,
    },
}

/// The span of `path` the Stop extraction takes now (read only; see [`commit`]). Callers hold
/// [`lock`] from here until they commit.
pub fn span(store_dir: &Path, path: &Path, project_dir: &Path) -> Result<Span, String> {
    let Some((entries, state)) = new_lines(store_dir, path)? else {
        return Ok(Span::Nothing);
    };
    let window = summarize(&entries[entries.len().saturating_sub(WINDOW_LINES)..]);
    if !state.openspec && !window.about_the_user {
        return Ok(Span::Skipped(
            state,
            "no opsx/openspec skill in the transcript and nothing the user said of themselves: no extraction",
        ));
    }
    if !window.has_text {
        return Ok(Span::Skipped(
            state,
            "new lines hold no user or assistant text",
        ));
    }
    let prompt = build_prompt(&state, &window);
    Ok(Span::Extract {
        prompt,
        state,
        outside: window.read_outside(project_dir),
    })
}

/// One extraction at a time per store (the Stop workers' and the transcript import's): held
/// until dropped, given up at `deadline`.
pub fn lock(store_dir: &Path, deadline: std::time::Instant) -> Result<std::fs::File, String> {
    super::cache::lock_exclusive(&store_dir.join(STATE_LOCK), deadline)
}

/// What an extraction must have left after waiting for the one before it: the model call and
/// storing its insights.
const AFTER_WAIT: Duration = Duration::from_secs(LLM_TIMEOUT.as_secs() + 10);

/// The LLM path of Stop (run by a Stop hook's detached worker). Returns how many insights were
/// stored.
///
/// One extraction at a time per store: a worker waits for the one before it (the lock), so no
/// span is sent twice; and a span's offset is recorded only once its insights are stored, so a
/// worker that dies or a model call that fails leaves the span to the next Stop.
pub fn on_stop(ctx: &Ctx, transcript_path: &Path) -> Result<usize, String> {
    if !transcript_path.is_file() {
        return Err(format!(
            "transcript {} does not exist",
            transcript_path.display()
        ));
    }
    let store_dir = ctx.project.store_dir.clone();
    wt_memory_base::paths::ensure_private_dir(&store_dir)
        .map_err(|e| format!("cannot create {}: {e}", store_dir.display()))?;
    let _one_at_a_time = lock(
        &store_dir,
        ctx.deadline.checked_sub(AFTER_WAIT).unwrap_or(ctx.deadline),
    )?;
    let (prompt, state, outside) = match span(&store_dir, transcript_path, &ctx.project_dir)? {
        Span::Nothing => {
            super::log::debug(&ctx.event, "no new transcript lines");
            return Ok(0);
        }
        Span::Skipped(state, why) => {
            super::log::debug(&ctx.event, why);
            return commit(&store_dir, transcript_path, state).map(|_| 0);
        }
        Span::Extract {
            prompt,
            state,
            outside,
        } => (prompt, state, outside),
    };
    let skip = |why: &str| {
        super::log::debug(&ctx.event, why);
        commit(&store_dir, transcript_path, state.clone()).map(|_| 0)
    };
    let Some(bin) = claude_bin() else {
        return skip("claude not found on PATH: no insight extraction");
    };
    let timeout = LLM_TIMEOUT.min(ctx.remaining().saturating_sub(Duration::from_secs(5)));
    memory::release(ctx);
    let answer = run_claude(&bin, &prompt, timeout, &std::env::temp_dir())?;
    let insights = parse_insights(&answer);
    if insights.is_empty() {
        super::log::debug(
            &ctx.event,
            &format!("model answer held no insight: {}", one_line(&answer, 120)),
        );
    }
    let mut stored = 0;
    // Its provenance: a harvest, checked more strictly after outside content.
    let source = if outside {
        "extraction:outside"
    } else {
        "extraction"
    };
    let root = ctx
        .project
        .toplevel
        .clone()
        .unwrap_or_else(|| ctx.project_dir.clone());
    for insight in &insights {
        let tags = tags_for(insight, state.change.as_deref());
        let written = match scope_of(insight, &root) {
            crate::scope::Scope::Personal => memory::remember_personal(
                ctx,
                wt_memory_ops::Remember {
                    content: insight.content.clone(),
                    memory_type: insight.ty.to_string(),
                    tags: wt_memory_core::record::split_tags(&tags),
                    keys: insight.keys.clone(),
                    ..wt_memory_ops::Remember::default()
                },
                source,
            ),
            crate::scope::Scope::Project => memory::remember(
                ctx,
                &insight.content,
                insight.ty,
                &tags,
                &insight.keys,
                source,
            ),
        };
        match written {
            Ok(_) => stored += 1,
            Err(e) => super::log::error(&ctx.event, &format!("storing an insight failed: {e}")),
        }
    }
    commit(&store_dir, transcript_path, state)?;
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<Value> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/fixtures/transcripts")
            .join(name);
        transcript::read_from(&p, 0).unwrap().0
    }

    #[test]
    fn opsx_window_has_the_right_lines() {
        let w = summarize(&fixture("opsx_apply_session.jsonl"));
        assert!(w.has_text && w.agent_saved);
        assert!(w
            .lines
            .iter()
            .any(|l| l.starts_with("USER: No, don't call bcrypt directly")));
        assert!(w
            .lines
            .iter()
            .any(|l| l.starts_with("ERROR: Exit code 101")));
        assert!(w
            .lines
            .iter()
            .any(|l| l.starts_with("TOOL[Bash]: cargo test -p auth")));
        assert!(w.lines.iter().any(|l| l.starts_with("AGENT: ## Summary")));
        // Skill bodies (isMeta), thinking blocks and plain tool results are not in the window.
        assert!(!w
            .lines
            .iter()
            .any(|l| l.contains("Base directory for this skill")));
        assert!(!w
            .lines
            .iter()
            .any(|l| l.contains("The user wants the add-login")));
        assert!(!w.lines.iter().any(|l| l.contains("running 14 tests")));
    }

    #[test]
    fn odd_transcript_lines_are_char_safe() {
        let w = summarize(&fixture("compact_and_odd_entries.jsonl"));
        assert!(w.has_text);
        assert!(w.lines.iter().all(|l| l.chars().count() <= 510));
        assert!(
            !w.lines
                .iter()
                .any(|l| l.contains("<command-name>")
                    || l.contains("This session is being continued"))
        );
        assert!(w
            .lines
            .iter()
            .any(|l| l.starts_with("ERROR:") && l.contains("UnicodeEncodeError")));
    }

    #[test]
    fn insights_parse_strictly() {
        let out = "Learning|auth,Hashing|Hash passwords only via auth::hash::hash_secret\n\
                   garbage line\n\
                   Opinion|x|not a type\n\
                   - Decision|phase:fake,cookies|Session id lives in an HttpOnly SameSite=Lax cookie\n\
                   Learning|auth|Hash passwords only via AUTH::hash::hash_secret\n\
                   Context|a|Third valid insight about the build cache\n\
                   Context|b|Fourth valid insight is over the cap";
        let got = parse_insights(out);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].tags, vec!["auth", "hashing"]);
        assert_eq!(got[1].ty, "Decision");
        assert_eq!(got[1].tags, vec!["cookies"]);
        assert_eq!(got[2].content, "Third valid insight about the build cache");
        assert!(parse_insights("NONE").is_empty());
        assert!(parse_insights("I could not find anything | sorry").is_empty());
        assert_eq!(
            tags_for(&got[0], Some("add-login")),
            "phase:auto-extract,source:hook,change:add-login,auth,hashing"
        );
    }

    #[test]
    fn personal_insights_are_believed_only_when_they_name_nothing_of_the_project() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path().join("tallybook");
        std::fs::create_dir_all(root.join("src/auth")).unwrap();
        std::fs::write(root.join("Makefile"), "all:\n\ttrue\nseed:\n\ttrue\n").unwrap();
        std::fs::write(root.join("src/auth/hash.rs"), "").unwrap();
        let out = "Personal: Decision|tooling|The user prefers uv over pip for Python packages.|keys: which package manager; uv\n\
                   personal:Learning|style|The user wants answers in German.\n\
                   Personal: Decision|auth|The user hashes passwords via src/auth/hash.rs only.\n";
        let got = parse_insights(out);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|i| i.personal));
        assert_eq!(got[0].ty, "Decision");
        assert_eq!(
            got[0].content,
            "The user prefers uv over pip for Python packages."
        );
        use crate::scope::Scope;
        assert_eq!(scope_of(&got[0], &root), Scope::Personal);
        assert_eq!(scope_of(&got[1], &root), Scope::Personal);
        assert_eq!(
            scope_of(&got[2], &root),
            Scope::Project,
            "names a file of the repo"
        );
        for project_fact in [
            "The user always runs make seed before the demo",
            "The user keeps new modules in src/payments.rs",
            "The user says tallybook releases go out on Fridays",
            "The user edits the Makefile by hand",
        ] {
            assert!(
                crate::scope::names_project(project_fact, &root),
                "{project_fact}"
            );
        }
        for personal_fact in [
            "The user prefers uv over pip.",
            "Never force-push without asking the user first.",
            "Answer in German; code comments stay in English.",
            "The user's test accounts live in 1Password's Dev vault.",
            "The user prefers make over shell scripts in general",
        ] {
            assert!(
                !crate::scope::names_project(personal_fact, &root),
                "{personal_fact}"
            );
        }
        let unmarked = parse_insights("Decision|x|The user prefers uv over pip for Python.");
        assert_eq!(scope_of(&unmarked[0], &root), Scope::Project);
    }

    #[test]
    fn what_the_user_says_of_themselves_is_told_from_what_they_ask() {
        for said in [
            "I prefer uv over pip, always",
            "From now on answer in German please",
            "please never force-push without asking me",
            "My test accounts live in 1Password's Dev vault",
            "Ab jetzt antworte auf Deutsch",
            "I’d rather have small commits",
        ] {
            assert!(speaks_of_self(said), "{said}");
        }
        for asked in [
            "fix the failing test in the billing module",
            "why does the import preference dialog crash?",
            "add a never-expiring token option",
            "run the linter and commit",
        ] {
            assert!(!speaks_of_self(asked), "{asked}");
        }
    }

    #[test]
    fn missed_only_note_follows_the_agent_saved_marker() {
        let st = TranscriptState {
            change: Some("add-login".into()),
            ..Default::default()
        };
        let saved = Window {
            lines: vec!["AGENT: x".into()],
            has_text: true,
            agent_saved: true,
            fetched: Vec::new(),
            about_the_user: false,
        };
        let fresh = Window {
            lines: vec!["AGENT: x".into()],
            has_text: true,
            agent_saved: false,
            fetched: Vec::new(),
            about_the_user: false,
        };
        assert!(build_prompt(&st, &saved).contains("only what the agent missed"));
        assert!(!build_prompt(&st, &fresh).contains("only what the agent missed"));
        assert!(build_prompt(&st, &saved).contains("exactly NONE"));
    }
}
