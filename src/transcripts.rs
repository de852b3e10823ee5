//! Day one: memory from the sessions a user already had. Claude Code keeps every session of a
//! project as a transcript (`<config>/projects/<slug of the session's cwd>/<session>.jsonl`,
//! subagents under `<session>/subagents/`); `wt-memory import --claude-transcripts` mines what
//! is certain in them, without a model:
//! - a Bash command that failed, and a later form of it that worked in the same session: a failure
//!   record and its fix, the same records and signatures the hooks write (so the guard knows them);
//! - a command that failed without a fix: its failure record;
//! - a commit made in the session: a commit record, as the commit hook writes it.
//!
//! Each record carries the transcript's branch (`gitBranch`) and the time it happened
//! (`occurred_at`), and is redacted like every write. A transcript is read once: the size read is
//! kept per transcript in the store (`transcript-import.json`), so a second run reads only what
//! was appended since, and an interrupted run resumes where it stopped (a transcript's size is
//! recorded only once its records are stored). A failure whose signature the store knows already
//! (from the hooks, or an earlier import) adds nothing.

use crate::hook::guard;
use crate::hook::transcript::{self, Content};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use wt_memory_foundation::error::Result;
use wt_memory_foundation::failure;
use wt_memory_foundation::hygiene::truncate_chars;
use wt_memory_ops::{Recall, Remember};
use wt_memory_service::client::Client;

/// The tag of every record this import writes.
pub const SOURCE_TAG: &str = "source:transcript";
/// Metadata: when what a record describes happened (the transcript's timestamp).
pub const OCCURRED_AT: &str = "occurred_at";
const STATE_FILE: &str = "transcript-import.json";

/// What one transcript says for certain.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    Failure {
        command: String,
        error_line: String,
        signature: String,
        /// The later form of it that worked in the same session.
        fix: Option<String>,
        branch: Option<String>,
        at: Option<String>,
    },
    Commit {
        message: String,
        branch: Option<String>,
        at: Option<String>,
    },
}

/// A Bash call seen in a transcript, waiting for its result.
struct Call {
    command: String,
    description: Option<String>,
    branch: Option<String>,
    at: Option<String>,
}

/// Results that are not the command's own failure: a cancelled call, a permission refusal, a
/// hook (our guard) that stopped it.
fn not_a_failure(text: &str) -> bool {
    text.contains("[Request interrupted")
        || text.contains("hook error:")
        || text.contains("permission to use")
        || text.contains("doesn't want to proceed")
}

/// The findings of one transcript's entries, in the order they happened.
pub fn mine(entries: &[Value]) -> Vec<Finding> {
    let mut calls: BTreeMap<String, Call> = BTreeMap::new();
    let mut findings: Vec<Finding> = Vec::new();
    // Failures of this session still waiting for a fix: index into `findings`.
    let mut open: Vec<usize> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for e in entries {
        let branch = e
            .get("gitBranch")
            .and_then(Value::as_str)
            .map(str::to_string);
        let at = e
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_string);
        let Content::Blocks(blocks) = transcript::content(e) else {
            continue;
        };
        for b in blocks {
            match (
                transcript::entry_type(e),
                b.get("type").and_then(Value::as_str),
            ) {
                ("assistant", Some("tool_use"))
                    if b.get("name").and_then(Value::as_str) == Some("Bash") =>
                {
                    let input = b.get("input");
                    let text = |k: &str| input.and_then(|i| i.get(k)).and_then(Value::as_str);
                    if let (Some(id), Some(command)) =
                        (b.get("id").and_then(Value::as_str), text("command"))
                    {
                        calls.insert(
                            id.to_string(),
                            Call {
                                command: truncate_chars(command.trim(), guard::COMMAND_CHARS)
                                    .to_string(),
                                description: text("description").map(str::to_string),
                                branch: branch.clone(),
                                at: at.clone(),
                            },
                        );
                    }
                }
                ("user", Some("tool_result")) => {
                    let Some(call) = b
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .and_then(|id| calls.remove(id))
                    else {
                        continue;
                    };
                    let output = transcript::tool_result_text(b);
                    if b.get("is_error").and_then(Value::as_bool) == Some(true) {
                        if not_a_failure(&output) {
                            continue;
                        }
                        let (Some(parsed), Some(error_line)) =
                            (failure::parse(&call.command), failure::error_line(&output))
                        else {
                            continue;
                        };
                        let signature = failure::signature(&parsed, &error_line);
                        if !seen.insert(signature.clone()) {
                            continue; // the same mistake again in this session
                        }
                        open.push(findings.len());
                        findings.push(Finding::Failure {
                            command: call.command,
                            error_line,
                            signature,
                            fix: None,
                            branch: call.branch,
                            at: call.at,
                        });
                        continue;
                    }
                    if let Some(message) = crate::hook::commits::commit_message(
                        &call.command,
                        call.description.as_deref(),
                    ) {
                        findings.push(Finding::Commit {
                            message,
                            branch: call.branch.clone(),
                            at: call.at.clone(),
                        });
                    }
                    link_fix(&mut findings, &mut open, &call.command);
                }
                _ => {}
            }
        }
    }
    findings
}

/// `worked` ran fine: the latest open failure of the same program and subcommand, in another
/// form, has its fix.
fn link_fix(findings: &mut [Finding], open: &mut Vec<usize>, worked: &str) {
    let Some(head) = failure::parse(worked).map(|c| c.head()) else {
        return;
    };
    let found = open.iter().rposition(|&i| {
        matches!(&findings[i], Finding::Failure { command, .. }
            if command != worked && failure::parse(command).is_some_and(|c| c.head() == head))
    });
    if let Some(at) = found {
        if let Finding::Failure { fix, .. } = &mut findings[open.remove(at)] {
            *fix = Some(worked.to_string());
        }
    }
}

/// Every transcript of this repository: the folders Claude Code names after each of its
/// worktrees (sessions are kept by their working directory), subagents' included.
pub fn project_transcripts(project: &wt_memory_base::project::Project) -> Vec<PathBuf> {
    let config = &wt_memory_base::config::get().claude_dir;
    let mut roots: Vec<PathBuf> = project
        .toplevel
        .iter()
        .chain(&project.main_root)
        .cloned()
        .collect();
    if let Some(list) = project
        .toplevel
        .as_ref()
        .and_then(|t| wt_memory_base::project::git(t, &["worktree", "list", "--porcelain"]))
    {
        roots.extend(
            list.lines()
                .filter_map(|l| l.strip_prefix("worktree "))
                .map(PathBuf::from),
        );
    }
    let mut files = Vec::new();
    let mut dirs: Vec<PathBuf> = roots
        .iter()
        .map(|r| {
            config
                .join("projects")
                .join(crate::claude_memory::slug(&r.to_string_lossy()))
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        jsonl_under(&dir, &mut files);
    }
    files
}

/// The `.jsonl` files under `dir` (any depth), sorted.
pub fn jsonl_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            jsonl_under(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// Bytes of each transcript already imported, by path.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    #[serde(default)]
    read: BTreeMap<String, u64>,
}

fn state_path(client: &Client) -> PathBuf {
    client.project().store_dir.join(STATE_FILE)
}

fn load_state(path: &Path) -> State {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// What an import did (or, in a dry run, would do).
#[derive(Debug, Default, Clone, Serialize)]
pub struct Report {
    pub transcripts: usize,
    /// Transcripts with nothing new since the last import.
    pub unchanged: usize,
    pub failures: usize,
    pub fixes: usize,
    pub commits: usize,
    /// Findings the store held already (a known signature, the same content).
    pub duplicates: usize,
    /// Records in which a secret was found and redacted before storing.
    pub secrets_withheld: usize,
    pub dry_run: bool,
}

impl Report {
    pub fn line(&self) -> String {
        let verb = if self.dry_run { "would write" } else { "wrote" };
        format!(
            "{} transcript(s) read ({} unchanged); {verb} {} failure record(s), {} with a fix, and {} commit record(s); {} already known; secrets withheld from {} record(s).",
            self.transcripts,
            self.unchanged,
            self.failures,
            self.fixes,
            self.commits,
            self.duplicates,
            self.secrets_withheld
        )
    }
}

/// How many of `files` have something the last import did not read (for `doctor` and `init`).
pub fn waiting(store_dir: &Path, files: &[PathBuf]) -> usize {
    let state = load_state(&store_dir.join(STATE_FILE));
    files
        .iter()
        .filter(|f| {
            let size = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
            state
                .read
                .get(&f.to_string_lossy().into_owned())
                .copied()
                .unwrap_or(0)
                < size
        })
        .count()
}

/// One line for `wt-project init` and `doctor` when past sessions of `project` are not in memory
/// yet (None when there are none, or all were imported).
pub fn hint(project: &wt_memory_base::project::Project) -> Option<String> {
    let count = waiting(&project.store_dir, &project_transcripts(project));
    (count > 0).then(|| {
        format!(
            "{count} past Claude Code session(s) of this project are not in memory yet: bring in their failed commands, fixes and commits with `wt-memory import --claude-transcripts` (`--dry-run` to see first)"
        )
    })
}

/// The transcripts of `files` modified since `since` (all when None).
pub fn changed_since(files: &[PathBuf], since: Option<DateTime<Utc>>) -> Vec<&PathBuf> {
    files
        .iter()
        .filter(|f| {
            since.is_none_or(|since| {
                std::fs::metadata(f)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| DateTime::<Utc>::from(t) >= since)
            })
        })
        .collect()
}

/// With `--llm`: what the model calls would send, or did.
#[derive(Debug, Default, Clone, Serialize)]
pub struct LlmReport {
    pub calls: usize,
    /// About a token per four characters of the prompts.
    pub approx_tokens: usize,
    pub insights: usize,
    /// Transcripts left for a later run by the call limit.
    pub left: usize,
}

impl LlmReport {
    pub fn line(&self, dry_run: bool) -> String {
        if dry_run {
            format!(
                "--llm would make {} model call(s), about {} input tokens{}.",
                self.calls,
                self.approx_tokens,
                self.left_note()
            )
        } else {
            format!(
                "--llm made {} model call(s) (about {} input tokens) and stored {} insight(s){}.",
                self.calls,
                self.approx_tokens,
                self.insights,
                self.left_note()
            )
        }
    }

    fn left_note(&self) -> String {
        match self.left {
            0 => String::new(),
            n => format!("; {n} transcript(s) left for the next run (--max-calls)"),
        }
    }
}

/// The Stop hook's extraction over `files`, at most `max_calls` model calls: the same span (after
/// the offset Stop keeps for each transcript, so what Stop extracted is skipped and what this
/// extracts Stop skips), the same gate and the same lean nested call. A dry run sends nothing.
pub fn extract(
    client: &mut Client,
    files: &[&PathBuf],
    max_calls: usize,
    dry_run: bool,
) -> Result<LlmReport> {
    use crate::hook::extract::{self as x, Span};
    let store_dir = client.project().store_dir.clone();
    let project_dir = client.project().cwd.clone();
    client.set_source("transcript");
    wt_memory_base::paths::ensure_private_dir(&store_dir).map_err(|e| {
        wt_memory_foundation::error::other(format!("cannot create {}: {e}", store_dir.display()))
    })?;
    let bin = if dry_run {
        None
    } else {
        Some(wt_memory_foundation::llm::claude_bin().ok_or_else(|| {
            wt_memory_foundation::error::bad_input(
                "import --llm: no `claude` on PATH to run the extraction",
            )
        })?)
    };
    let mut report = LlmReport::default();
    let mut personal: Option<Client> = None;
    for file in files {
        let wait = std::time::Instant::now() + wt_memory_foundation::llm::LLM_TIMEOUT * 3;
        let _one_at_a_time =
            x::lock(&store_dir, wait).map_err(wt_memory_foundation::error::other)?;
        let (prompt, state) = match x::span(&store_dir, file, &project_dir)
            .map_err(wt_memory_foundation::error::other)?
        {
            Span::Nothing => continue,
            Span::Skipped(state, _) => {
                if !dry_run {
                    x::commit(&store_dir, file, state)
                        .map_err(wt_memory_foundation::error::other)?;
                }
                continue;
            }
            // A transcript import's memories are all checked as from a past transcript.
            Span::Extract { prompt, state, .. } => (prompt, state),
        };
        if report.calls == max_calls {
            report.left += 1;
            continue;
        }
        report.calls += 1;
        report.approx_tokens += prompt.len() / 4;
        let Some(bin) = &bin else { continue };
        let answer = wt_memory_foundation::llm::run_claude(
            bin,
            &prompt,
            wt_memory_foundation::llm::LLM_TIMEOUT,
            &std::env::temp_dir(),
        )
        .map_err(wt_memory_foundation::error::other)?;
        let root = client
            .project()
            .toplevel
            .clone()
            .unwrap_or_else(|| project_dir.clone());
        for insight in x::parse_insights(&answer) {
            let req = Remember {
                content: insight.content.clone(),
                memory_type: insight.ty.into(),
                tags: wt_memory_core::record::split_tags(&x::tags_for(
                    &insight,
                    state.change.as_deref(),
                )),
                keys: insight.keys.clone(),
                ..Remember::default()
            };
            // What the session learned about the person goes to the personal store (the same
            // rule as the Stop hook's: see `x::scope_of`).
            let store = match x::scope_of(&insight, &root) {
                crate::scope::Scope::Personal if !client.project().is_personal() => personal
                    .get_or_insert_with(|| {
                        let mut c = Client::open(
                            wt_memory_base::project::personal(&project_dir),
                            wt_memory_service::client::Mode::configured(
                                wt_memory_ops::OpenOptions::default(),
                                wt_memory_service::client::Holding::UntilDropped,
                            ),
                        );
                        c.set_source("transcript");
                        c
                    }),
                _ => &mut *client,
            };
            let done = store.run(req)?;
            report.insights += usize::from(!done.duplicate);
        }
        x::commit(&store_dir, file, state).map_err(wt_memory_foundation::error::other)?;
    }
    Ok(report)
}

/// Import `files`, those modified since `since` (all when None). `progress(done, total)` is called
/// after each transcript.
pub fn import(
    client: &mut Client,
    files: &[PathBuf],
    since: Option<DateTime<Utc>>,
    dry_run: bool,
    mut progress: impl FnMut(usize, usize),
) -> Result<Report> {
    // Whatever the transcripts say is stored as from a past transcript (wt_memory_core::trust).
    client.set_source("transcript");
    let path = state_path(client);
    let mut state = load_state(&path);
    let mut report = Report {
        dry_run,
        ..Report::default()
    };
    let files = changed_since(files, since);
    for (n, file) in files.iter().enumerate() {
        report.transcripts += 1;
        let key = file.to_string_lossy().into_owned();
        let from = state.read.get(&key).copied().unwrap_or(0);
        let (entries, to) = transcript::read_from(file, from).map_err(|e| {
            wt_memory_foundation::error::other(format!("cannot read {}: {e}", file.display()))
        })?;
        if to == from {
            report.unchanged += 1;
            progress(n + 1, files.len());
            continue;
        }
        for finding in mine(&entries) {
            store(client, &finding, dry_run, &mut report)?;
        }
        if !dry_run {
            state.read.insert(key, to);
            let bytes = serde_json::to_vec_pretty(&state)?;
            wt_memory_base::paths::write_atomic(&path, &bytes).map_err(|e| {
                wt_memory_foundation::error::other(format!("cannot write {}: {e}", path.display()))
            })?;
        }
        progress(n + 1, files.len());
    }
    Ok(report)
}

fn store(client: &mut Client, finding: &Finding, dry_run: bool, report: &mut Report) -> Result<()> {
    let (mut reqs, branch, at): (Vec<Remember>, _, _) = match finding {
        Finding::Failure {
            command,
            error_line,
            signature,
            fix,
            branch,
            at,
        } => {
            let known = client.run(Recall {
                tags: vec![guard::signature_tag(signature)],
                tags_only: true,
                limit: 4,
                ..Recall::default()
            })?;
            let has_failure = known.iter().any(|r| !r.has_tag(guard::FIX_TAG));
            let has_fix = known.iter().any(|r| r.has_tag(guard::FIX_TAG));
            let mut reqs = Vec::new();
            if has_failure {
                report.duplicates += 1;
            } else {
                report.failures += 1;
                reqs.push(guard::failure_record(
                    command, error_line, signature, SOURCE_TAG,
                ));
            }
            if let Some(worked) = fix {
                if has_fix {
                    report.duplicates += 1;
                } else {
                    report.fixes += 1;
                    reqs.push(guard::fix_record(
                        command, error_line, signature, worked, SOURCE_TAG,
                    ));
                }
            }
            (reqs, branch, at)
        }
        Finding::Commit {
            message,
            branch,
            at,
        } => {
            report.commits += 1;
            let req = Remember {
                content: format!("Committed: {message}"),
                memory_type: "Learning".into(),
                tags: vec!["phase:commit-save".into(), SOURCE_TAG.into()],
                ..Remember::default()
            };
            (vec![req], branch, at)
        }
    };
    // Every write is redacted on its way in; this only counts what that will withhold.
    report.secrets_withheld += reqs
        .iter()
        .filter(|r| wt_memory_foundation::redact::redact(&r.content) != r.content)
        .count();
    if dry_run {
        return Ok(());
    }
    for req in &mut reqs {
        if let Some(b) = branch {
            req.tags.push(format!("branch:{b}"));
        }
        if let Some(at) = at {
            req.metadata.insert(OCCURRED_AT.into(), at.clone());
        }
        let done = client.run(req.clone())?;
        if done.duplicate {
            report.duplicates += 1;
            match finding {
                Finding::Commit { .. } => report.commits -= 1,
                Finding::Failure { .. } if req.tags.iter().any(|t| t == guard::FIX_TAG) => {
                    report.fixes -= 1
                }
                Finding::Failure { .. } => report.failures -= 1,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(lines: &[Value]) -> Vec<Value> {
        lines.to_vec()
    }

    fn bash(id: &str, command: &str) -> Value {
        serde_json::json!({"type": "assistant", "gitBranch": "main", "timestamp": "2026-11-20T10:00:00Z",
            "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}}]}})
    }

    fn result(id: &str, text: &str, is_error: bool) -> Value {
        serde_json::json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": text, "is_error": is_error}]}})
    }

    #[test]
    fn a_failure_and_the_form_that_worked_are_one_finding() {
        let found = mine(&entries(&[
            bash("t1", "npm run build"),
            result("t1", "Exit code 1\nCommand failed with exit code 1\nError: Cannot find module 'vite-plugin-checker'", true),
            bash("t2", "npm run build"),
            result("t2", "Exit code 1\nError: Cannot find module 'vite-plugin-checker'", true),
            bash("t3", "npm run build -- --config vite.prod.ts"),
            result("t3", "built in 2.1s", false),
            bash("t4", "cargo test -p auth"),
            result("t4", "[Request interrupted by user for tool use]", true),
            bash("t5", "git commit -m 'build: pin vite-plugin-checker'"),
            result("t5", "[main 1a2b3c4] build: pin vite-plugin-checker", false),
        ]));
        assert_eq!(found.len(), 2, "{found:#?}");
        let Finding::Failure {
            command,
            error_line,
            fix,
            branch,
            at,
            ..
        } = &found[0]
        else {
            panic!("{found:#?}")
        };
        assert_eq!(command, "npm run build");
        assert_eq!(
            error_line,
            "Error: Cannot find module 'vite-plugin-checker'"
        );
        assert_eq!(
            fix.as_deref(),
            Some("npm run build -- --config vite.prod.ts")
        );
        assert_eq!(branch.as_deref(), Some("main"));
        assert_eq!(at.as_deref(), Some("2026-11-20T10:00:00Z"));
        assert!(
            matches!(&found[1], Finding::Commit { message, .. } if message == "build: pin vite-plugin-checker")
        );
    }

    #[test]
    fn a_secret_in_a_failed_command_is_counted_as_withheld() {
        let found = mine(&entries(&[
            bash("t1", "curl -H 'Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789' https://api.github.com/user"),
            result("t1", "Exit code 22\ncurl: (22) The requested URL returned error: 401", true),
        ]));
        let Finding::Failure {
            command,
            error_line,
            signature,
            ..
        } = &found[0]
        else {
            panic!("{found:#?}")
        };
        let req = guard::failure_record(command, error_line, signature, SOURCE_TAG);
        assert_ne!(
            wt_memory_foundation::redact::redact(&req.content),
            req.content
        );
    }

    #[test]
    fn the_fixture_session_yields_its_failure() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/fixtures/transcripts/opsx_apply_session.jsonl");
        let (all, _) = transcript::read_from(&path, 0).unwrap();
        let found = mine(&all);
        assert!(
            found.iter().any(|f| matches!(f, Finding::Failure { command, error_line, .. }
                if command.starts_with("cargo test -p auth") && error_line.contains("hash_password"))),
            "{found:#?}"
        );
    }
}
