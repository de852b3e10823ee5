//! The two scopes a memory lives in ([`Scope`]): the project's store, and the user's personal
//! store (preferences, working style, accounts, language), which follows the person into every
//! project. A write goes to one of them; the reads made for the agent (the hooks, `recall`,
//! `proactive`, the memory map, MCP) ask both and rank the two answers on one scale: in what a
//! hook injects the project's memories always come first, in a search answer a personal memory
//! ranks after a project memory unless it is clearly closer. The personal store is a store like the others
//! (its own directory, service, lock, redaction, undo and integrity record); nothing personal is
//! ever synced, exported or reported with a project, because those read the project's store only.

use wt_memory_base::project::{self, Project};
use wt_memory_core::recall::{Tiers, PROACTIVE_RELATIVE};
use wt_memory_core::record::{MemoryRecord, HELD_TAG};
use wt_memory_foundation::error::{bad_input, not_found, Result};
use wt_memory_ops as ops;
use wt_memory_service::client::Client;

pub use wt_memory_base::project::Scope;

/// How much more relevant a personal memory must be to rank above a project memory in a search
/// answer (`recall`): on the same subject the project's own memory comes first (its conventions
/// over the person's habits). Not fitted: a tie margin, a tenth of the relevance scale.
pub const PROJECT_FIRST: f64 = 0.1;

/// The personal store read beside `project`: None when `project` is the personal store itself (outside
/// any repository), or when no personal memory was ever stored (nothing to ask, and no service is
/// started for it).
pub fn personal_beside(project: &Project) -> Option<Project> {
    if project.is_personal() {
        return None;
    }
    let personal = project::personal(&project.cwd);
    wt_memory_core::store::exists(&personal.store_dir).then_some(personal)
}

/// The scope of the store `project` names.
pub fn of(project: &Project) -> Scope {
    if project.is_personal() {
        Scope::Personal
    } else {
        Scope::Project
    }
}

/// Mark each record with the store it came from.
pub fn mark(records: &mut [MemoryRecord], scope: Scope) {
    for r in records {
        r.scope = Some(scope);
    }
}

/// A record's place on the shared scale: its relevance, a personal memory's less [`PROJECT_FIRST`].
fn rank_key(r: &MemoryRecord) -> f64 {
    let own = r.relevance_score.unwrap_or(0.0);
    if r.scope == Some(Scope::Personal) {
        own - PROJECT_FIRST
    } else {
        own
    }
}

fn by_rank(records: &mut [MemoryRecord]) {
    records.sort_by(|a, b| rank_key(b).total_cmp(&rank_key(a)));
}

/// Both answers in one list, each record marked with its scope, the project's first.
fn marked(mut project: Vec<MemoryRecord>, mut personal: Vec<MemoryRecord>) -> Vec<MemoryRecord> {
    mark(&mut project, Scope::Project);
    mark(&mut personal, Scope::Personal);
    project.append(&mut personal);
    project
}

/// Two ranked answers as one, each record marked with its scope: best first on the shared
/// scale, at most `limit`.
pub fn merge_ranked(
    project: Vec<MemoryRecord>,
    personal: Vec<MemoryRecord>,
    limit: usize,
) -> Vec<MemoryRecord> {
    let mut all = marked(project, personal);
    by_rank(&mut all);
    all.truncate(limit);
    all
}

/// Two answers in time order as one (temporal recall, a tag listing): newest first.
pub fn merge_newest(
    project: Vec<MemoryRecord>,
    personal: Vec<MemoryRecord>,
    limit: usize,
) -> Vec<MemoryRecord> {
    let mut all = marked(project, personal);
    all.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    all.truncate(limit);
    all
}

/// What a hook shows from both stores. The project's tiers are its own gates' answer, untouched
/// but for the limit; a personal memory goes in full only when it also clears the relative gate
/// against the best of both (half the best), and always after the project's memories: what the
/// agent is shown in full puts the project first whatever the scores (a project memory wins a
/// conflict with a personal one), and a personal memory takes only the places the project's
/// leave. At most `limit` in full in all (what does not fit is listed in the index), at most
/// `index_limit` in the index. With no personal memory to show, the project's answer as it was.
pub fn merge_tiers(project: Tiers, personal: Tiers, limit: usize, index_limit: usize) -> Tiers {
    if personal.full.is_empty() && personal.index.is_empty() {
        return project;
    }
    // Each store's answer was checked alone; memories not the user's from both may still make
    // an attack together, which the hook then checks.
    let not_users = |t: &Tiers| {
        t.full
            .iter()
            .any(|m| !wt_memory_core::trust::speaks_for_user(&m.metadata))
    };
    let checked_together = project.checked_together
        && personal.checked_together
        && !(not_users(&project) && not_users(&personal));
    let best = project
        .full
        .iter()
        .chain(&personal.full)
        .filter_map(|r| r.relevance_score)
        .fold(0.0, f64::max);
    let (full_personal, listed_personal): (Vec<_>, Vec<_>) = personal
        .full
        .into_iter()
        .partition(|r| r.relevance_score.unwrap_or(0.0) >= PROACTIVE_RELATIVE * best);
    let mut full = marked(project.full, full_personal);
    let overflow = full.split_off(limit.min(full.len()));
    let listed_personal = listed_personal.into_iter().chain(personal.index).collect();
    let mut index = marked(project.index, listed_personal);
    by_rank(&mut index);
    let mut index: Vec<MemoryRecord> = overflow.into_iter().chain(index).collect();
    let mut seen = std::collections::HashSet::new();
    index.retain(|r| !full.iter().any(|f| f.id == r.id) && seen.insert(r.id.clone()));
    index.truncate(index_limit);
    Tiers {
        full,
        index,
        checked_together,
    }
}

/// Does `text` name something of the repository at `root`: a path in it (`src/auth.rs`,
/// `./run.sh`, `Makefile`), a command that runs one of its scripts or targets (`make deploy`,
/// `npm run seed`), or the repository's own name?
pub fn names_project(text: &str, root: &std::path::Path) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || "`'\"()[]{}<>,;".contains(c))
        .map(|w| w.trim_end_matches(['.', ':', '!', '?']))
        .filter(|w| !w.is_empty())
        .collect();
    let exists = |rel: &str| {
        let rel = rel.trim_start_matches("./");
        !rel.is_empty() && !rel.starts_with('/') && !rel.contains("..") && root.join(rel).exists()
    };
    let pathlike = |w: &str| {
        w.contains('/')
            || w.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && (1..=5).contains(&ext.len())
                    && ext.chars().all(|c| c.is_ascii_alphanumeric())
            })
            || w.chars().next().is_some_and(char::is_uppercase)
                && w.chars().all(|c| c.is_ascii_alphabetic())
    };
    if words.iter().any(|w| pathlike(w) && exists(w)) {
        return true;
    }
    // A directory named at the head of a path that does not exist yet (`src/new_module.rs`).
    if words.iter().any(|w| {
        w.split_once('/')
            .is_some_and(|(head, _)| !head.is_empty() && head != "." && root.join(head).is_dir())
    }) {
        return true;
    }
    // Its scripts and targets, run by name.
    let runs = |runner: &str, file: &str, defines: &dyn Fn(&str) -> String| {
        let Ok(script) = std::fs::read_to_string(root.join(file)) else {
            return false;
        };
        let script = format!("\n{script}");
        words
            .windows(2)
            .any(|w| w[0] == runner && !w[1].starts_with('-') && script.contains(&defines(w[1])))
    };
    if runs("make", "Makefile", &|t| format!("\n{t}:"))
        || runs("just", "justfile", &|t| format!("\n{t}"))
        || runs("run", "package.json", &|t| format!("\"{t}\":"))
    {
        return true;
    }
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    name.chars().count() >= 4
        && lower
            .split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
            .any(|w| w == name)
}

/// A read the fronts make of both stores for the agent: `recall` and `proactive` (the hooks ask
/// [`merge_tiers`] directly).
#[derive(Debug, Clone)]
pub enum BothRead {
    Recall(ops::Recall),
    Proactive(ops::Proactive),
}

impl BothRead {
    /// The read of the project's store.
    pub fn project_request(&self) -> Box<dyn ops::Request> {
        match self {
            BothRead::Recall(r) => Box::new(r.clone()),
            BothRead::Proactive(p) => Box::new(p.clone()),
        }
    }

    /// The same read of the personal store. `proactive` there is a hook's tiers with no index,
    /// as a supplement: a handful of personal memories never get a new user's gates.
    pub fn personal_request(&self) -> Box<dyn ops::Request> {
        match self {
            BothRead::Recall(r) => Box::new(r.clone()),
            BothRead::Proactive(p) => Box::new(self.personal_tiers(p)),
        }
    }

    fn personal_tiers(&self, p: &ops::Proactive) -> ops::Tiers {
        ops::Tiers {
            context: p.context.clone(),
            limit: p.limit,
            index: 0,
            kind: p.kind,
            use_prior: p.use_prior,
            supplement: true,
            vectors: Vec::new(),
        }
    }

    /// The personal store's answer as records, from its service's JSON.
    pub fn personal_records(&self, answer: serde_json::Value) -> Result<Vec<MemoryRecord>> {
        Ok(match self {
            BothRead::Recall(_) => serde_json::from_value(answer)?,
            BothRead::Proactive(_) => serde_json::from_value::<Tiers>(answer)?.full,
        })
    }

    /// The two answers as one. A recall's personal relevance is put on the project's scale here
    /// (a hook's by the personal store's service: `ops::Tiers::supplement`).
    pub fn merge(
        &self,
        project: Vec<MemoryRecord>,
        mut personal: Vec<MemoryRecord>,
    ) -> Vec<MemoryRecord> {
        if let BothRead::Recall(_) = self {
            for r in &mut personal {
                r.relevance_score = r
                    .relevance_score
                    .map(wt_memory_core::recall::on_project_scale);
            }
        }
        match self {
            BothRead::Recall(r) if r.tags_only || r.mode == ops::RecallMode::Temporal => {
                merge_newest(project, personal, r.limit)
            }
            BothRead::Recall(r) => merge_ranked(project, personal, r.limit),
            BothRead::Proactive(p) => {
                let only = |full| Tiers {
                    full,
                    index: Vec::new(),
                    checked_together: false,
                };
                let merged = merge_tiers(only(project), only(personal), p.limit, 0);
                let mut full = merged.full;
                if full.iter().all(|r| r.scope.is_none()) {
                    mark(&mut full, Scope::Project);
                }
                full
            }
        }
    }

    /// The read through the two stores' clients (`personal`: None when there is no personal
    /// store beside the project). A personal store that cannot answer costs its memories only:
    /// the project's answer comes back with the reason beside it.
    pub fn run(
        &self,
        project: &mut Client,
        personal: Option<&mut Client>,
    ) -> Result<(Vec<MemoryRecord>, Option<String>)> {
        let own = match self {
            BothRead::Recall(r) => project.run(r.clone())?,
            BothRead::Proactive(p) => project.run(p.clone())?,
        };
        let Some(personal) = personal else {
            return Ok((own, None));
        };
        let theirs = match self {
            BothRead::Recall(r) => personal.run(r.clone()),
            BothRead::Proactive(p) => personal.run(self.personal_tiers(p)).map(|t| t.full),
        };
        match theirs {
            Ok(theirs) => Ok((self.merge(own, theirs), None)),
            Err(e) => Ok((own, Some(format!("the personal store did not answer: {e}")))),
        }
    }
}

/// What [`move_memory`] did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Moved {
    pub id: String,
    pub from: Scope,
    pub to: Scope,
    /// The same content was in the target store already: only the source's copy was removed.
    pub already_there: bool,
}

/// Move memory `id` from the store `from` reaches to the one `to` reaches (`promote`: project to
/// personal; `demote`: personal to project). It keeps its id, type, tags, keys, time,
/// provenance and review; it is written to the target (with an undo snapshot there) before it
/// is removed from the source, so a failure between the two leaves it in both, never in none. A
/// memory held for review moves only once approved, and a teammate's memory never to the personal
/// store.
pub fn move_memory(from: &mut Client, to: &mut Client, id: &str) -> Result<Moved> {
    let (from_scope, to_scope) = (of(from.project()), of(to.project()));
    if from_scope == to_scope {
        return Err(bad_input(format!(
            "the memory is in the {} store already",
            to_scope.as_str()
        )));
    }
    let Some(record) = from.run(ops::Get { id: id.to_string() })? else {
        return Err(not_found(format!(
            "no memory {id} in the {} store (see `wt-memory --scope {} list`)",
            from_scope.as_str(),
            from_scope.as_str()
        )));
    };
    if record.has_tag(HELD_TAG) {
        return Err(bad_input(format!(
            "memory {} is held for review: approve it first (`wt-memory review`)",
            wt_memory_core::record::short_id(&record.id)
        )));
    }
    // A teammate's memory is about the project, never about this user: promoted, it would reach
    // every project of theirs on a teammate's word.
    let written_by = wt_memory_core::trust::Provenance::parse(
        record
            .metadata
            .get(wt_memory_core::record::PROVENANCE)
            .map(String::as_str),
    );
    if to_scope == Scope::Personal {
        if let wt_memory_core::trust::Provenance::Teammate(who) = written_by {
            return Err(bad_input(format!(
                "memory {} came from teammate {who}: it is the project's, not about you; if it is true of you, say it in your own words with `wt-memory remember --scope personal`",
                wt_memory_core::record::short_id(&record.id)
            )));
        }
    }
    let document = serde_json::json!({
        "version": wt_memory_core::exchange::VERSION,
        "format": wt_memory_core::exchange::FORMAT,
        "project": from.project().name,
        "exported_at": wt_memory_core::store::Store::now(),
        "count": 1,
        "records": [record],
    });
    let report = to
        .run(ops::Import {
            document: document.to_string(),
            dry_run: false,
            snapshot_as: Some(match to_scope {
                Scope::Personal => "promote".into(),
                Scope::Project => "demote".into(),
            }),
            from: None,
            moved: true,
        })?
        .report();
    if report.imported + report.skipped != 1 {
        return Err(wt_memory_foundation::error::other(format!(
            "the {} store did not take memory {}; it stays where it was",
            to_scope.as_str(),
            record.id
        )));
    }
    from.run(ops::Forget {
        id: Some(record.id.clone()),
        ..ops::Forget::default()
    })?;
    Ok(Moved {
        id: record.id,
        from: from_scope,
        to: to_scope,
        already_there: report.skipped == 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, rel: f64) -> MemoryRecord {
        MemoryRecord {
            id: id.into(),
            content: format!("memory {id}"),
            relevance_score: Some(rel),
            ..MemoryRecord::default()
        }
    }

    fn ids(records: &[MemoryRecord]) -> Vec<&str> {
        records.iter().map(|r| r.id.as_str()).collect()
    }

    #[test]
    fn a_project_memory_ranks_first_unless_a_personal_one_is_clearly_closer() {
        let merged = merge_ranked(vec![rec("p", 0.6)], vec![rec("me", 0.65)], 5);
        assert_eq!(ids(&merged), ["p", "me"]);
        assert_eq!(merged[1].scope, Some(Scope::Personal));
        let merged = merge_ranked(vec![rec("p", 0.5)], vec![rec("me", 0.7)], 5);
        assert_eq!(ids(&merged), ["me", "p"]);
        let merged = merge_ranked(vec![rec("p", 0.5)], vec![rec("me", 0.7)], 1);
        assert_eq!(ids(&merged), ["me"]);
    }

    #[test]
    fn tiers_keep_the_projects_answer_and_gate_personal_memories_against_the_best() {
        let project = Tiers {
            full: vec![rec("p1", 0.9), rec("p2", 0.6)],
            index: vec![rec("p3", 0.3)],
            ..Default::default()
        };
        let untouched = merge_tiers(project.clone(), Tiers::default(), 3, 3);
        assert_eq!(ids(&untouched.full), ["p1", "p2"]);
        assert_eq!(untouched.full[0].scope, None);
        // Below half the best (0.45): listed, not shown in full.
        let personal = Tiers {
            full: vec![rec("me1", 0.75), rec("me2", 0.44)],
            index: vec![],
            ..Default::default()
        };
        // The project's first, whatever the scores.
        let merged = merge_tiers(project.clone(), personal.clone(), 3, 3);
        assert_eq!(ids(&merged.full), ["p1", "p2", "me1"]);
        assert_eq!(ids(&merged.index), ["me2", "p3"]);
        assert_eq!(merged.full[2].scope, Some(Scope::Personal));
        // The limit: a personal memory takes only the places left; what does not fit goes first
        // in the index.
        let merged = merge_tiers(project, personal, 2, 2);
        assert_eq!(ids(&merged.full), ["p1", "p2"]);
        assert_eq!(ids(&merged.index), ["me1", "me2"]);
    }
}
