//! Recall and proactive context on top of [`crate::rank`]: filters, the branch-boosted dual query
//! (a branch-only query, then the rest) and the relevance gates of `proactive`. Every front end gets
//! these through the same `Client` request, so the CLI, hooks and MCP see the same answers.

use crate::rank::{self, Candidate, QueryKind};
use crate::record::{MemoryRecord, Redact};
use crate::store::{EmbedderKind, Packed, Quantized, RankView, Store};
use crate::trust::HELD_TAG;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// No memory below this calibrated relevance is ever injected: the point the calibration puts
/// between "answers the query" and "near miss" (`rank.rs`), and the floor of `wt-memory eval`.
pub const RELEVANCE_FLOOR: f64 = 0.3;
/// Proactive results (what a hook injects in full) below this relevance are dropped ...
/// Chosen with the index floor by cross-validation over both dev sets (`eval/fit/cv_gates.py`;
/// the choice per fold: docs/evaluation.md, "The gates, chosen by cross-validation").
pub const PROACTIVE_FLOOR: f64 = 0.45;
/// ... and so are results below this fraction of the best one.
pub const PROACTIVE_RELATIVE: f64 = 0.5;
/// In a store no larger than what a hook injects, the fraction of the best score a memory must
/// reach to be injected in full (chosen by cross-validation on small stores made from the dev
/// sets, `eval/fit/small_store_eval.py`).
pub const SMALL_STORE_RELATIVE: f64 = 0.5;

/// A store of at most this many memories is a new user's (not fitted: what the first days of
/// use leave).
pub const SMALL_STORE: usize = 10;

/// The index floor in a store of at most [`SMALL_STORE`] memories (chosen by cross-validation on
/// small stores made from the dev sets, `eval/fit/small_store_eval.py`).
pub const SMALL_STORE_INDEX_FLOOR: f64 = 0.03;

fn small_store_index_floor() -> f64 {
    wt_memory_base::config::get()
        .tune_small_index
        .unwrap_or(SMALL_STORE_INDEX_FLOOR)
}

fn small_store_relative() -> f64 {
    wt_memory_base::config::get()
        .tune_small_relative
        .unwrap_or(SMALL_STORE_RELATIVE)
}

/// A personal memory's relevance, on the project's scale: a preference ("the user prefers uv over
/// pip") bears on a task ("set up a virtualenv for the rates script") at a lower similarity than
/// a project fact on its own subject, so the personal store's relevance is multiplied by this
/// before the gates and the merge with the project's (at most 1). Chosen by cross-validation on
/// the personal hook set (`eval/fit/cv_personal.py`; docs/evaluation.md, "Two scopes").
pub const PERSONAL_SCALE: f64 = 1.0;

/// [`PERSONAL_SCALE`], or the value a tuning run sets (`WT_MEMORY_TUNE_PERSONAL`).
pub fn personal_scale() -> f64 {
    wt_memory_base::config::get()
        .tune_personal
        .unwrap_or(PERSONAL_SCALE)
}

/// A personal memory's relevance on the project's scale.
pub fn on_project_scale(relevance: f64) -> f64 {
    round3((relevance * personal_scale()).min(1.0))
}

/// Below the gates, a memory at least this relevant may be listed in a hook's index (a one-line
/// pointer the agent may fetch), never injected in full. Chosen with [`PROACTIVE_FLOOR`].
pub const INDEX_FLOOR: f64 = 0.25;

/// The gates as a tuning run replaces them (`WT_MEMORY_TUNE_GATES`), else the fitted ones:
/// (full floor, index floor).
fn gates() -> (f64, f64) {
    wt_memory_base::config::get()
        .tune_gates
        .unwrap_or((PROACTIVE_FLOOR, INDEX_FLOOR))
}

/// What a hook shows for one query: the memories it injects in full (`proactive`'s answer) and,
/// below them, likely ones it only lists by title.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Tiers {
    pub full: Vec<MemoryRecord>,
    pub index: Vec<MemoryRecord>,
    /// The memories of `full` not the user's that together read as an attack are withheld
    /// already ([`crate::trust::withheld_together`]), where the content check's rules are warm.
    #[serde(default)]
    pub checked_together: bool,
}

impl Redact for Tiers {
    fn redact(&mut self) {
        self.full.redact();
        self.index.redact();
    }
}

#[derive(Debug, Clone, Default)]
pub struct RecallQuery {
    pub text: String,
    pub limit: usize,
    /// Only memories carrying all of these tags; disables the branch boost.
    pub tags: Vec<String>,
    pub min_importance: Option<f32>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Current branch for the boost (None: no boost).
    pub branch: Option<String>,
    /// `semantic` mode ranks by meaning alone; every other mode is hybrid.
    pub semantic_only: bool,
    /// What the query is (None: inferred from its shape).
    pub kind: Option<QueryKind>,
}

/// Branch-query size of the dual query: limit.div_ceil(2) + 1.
pub fn branch_limit(limit: usize) -> usize {
    limit.div_ceil(2) + 1
}

fn in_range(r: Packed, q: &RecallQuery) -> bool {
    if q.since.is_none() && q.until.is_none() {
        return true; // no date to parse (this runs for every memory of every query)
    }
    let Ok(t) = DateTime::parse_from_rfc3339(r.created_at()) else {
        return q.since.is_none() && q.until.is_none();
    };
    let t = t.with_timezone(&Utc);
    q.since.is_none_or(|s| t >= s) && q.until.is_none_or(|u| t <= u)
}

/// The tag of the failure records the hooks write themselves (`hook/guard.rs`).
pub const AUTO_FAILURE_TAG: &str = "auto-failure";

/// The rows of `view` that pass `q`'s filters, ascending: those carrying every tag asked for, and
/// in a date range and over an importance when asked; never a memory held for review. The hooks' own failure records answer
/// queries about failures only (tagged `failure`): elsewhere they would crowd out what was written
/// to be read. Tags come from the view's rows per tag (found once per view, not per query).
fn filtered_rows(view: &RankView, q: &RecallQuery) -> Vec<usize> {
    let carrying = |tag: &str| view.rows_tagged(tag);
    let mut rows: Vec<usize> = match q.tags.first() {
        Some(tag) => carrying(tag).iter().map(|&i| i as usize).collect(),
        None => (0..view.records.len()).collect(),
    };
    for tag in q.tags.iter().skip(1) {
        let with = carrying(tag);
        rows.retain(|&i| with.binary_search(&(i as u32)).is_ok());
    }
    if !q.tags.iter().any(|t| t.starts_with("failure")) {
        let failures = carrying(AUTO_FAILURE_TAG);
        if !failures.is_empty() {
            rows.retain(|&i| failures.binary_search(&(i as u32)).is_err());
        }
    }
    // A memory held for review is never ranked for anyone: only `review` and `list` show it.
    if !q.tags.iter().any(|t| t == HELD_TAG) {
        let held = carrying(HELD_TAG);
        if !held.is_empty() {
            rows.retain(|&i| held.binary_search(&(i as u32)).is_err());
        }
    }
    if q.min_importance.is_some() || q.since.is_some() || q.until.is_some() {
        rows.retain(|&i| {
            let r = view.records.get(i);
            q.min_importance.is_none_or(|m| r.importance() >= m) && in_range(r, q)
        });
    }
    rows
}

/// Sentences of a long prompt scored on their own besides the whole prompt (at most this many).
const MAX_SENTENCES: usize = 6;
/// A prompt shorter than this is one part.
const SPLIT_FROM_CHARS: usize = 120;

/// Parts of a query scored on their own besides the whole: a long prompt's sentences, an error
/// text's lines (a hook sends the lines that say what went wrong, one per line).
pub fn parts(kind: QueryKind, text: &str) -> Vec<String> {
    match kind {
        QueryKind::Prompt => sentences(text),
        QueryKind::Error => {
            let lines: Vec<String> = text
                .lines()
                .map(str::trim)
                .filter(|l| l.split_whitespace().count() >= 2)
                .take(MAX_SENTENCES)
                .map(str::to_string)
                .collect();
            if lines.len() < 2 {
                Vec::new()
            } else {
                lines
            }
        }
        QueryKind::Path | QueryKind::Command => Vec::new(),
    }
}

/// Every text a query embeds: the query itself, then its [`parts`] (none for a semantic-only
/// query). A daemon embeds these ahead of the query's turn, so they must be exactly these.
pub fn query_texts(text: &str, kind: QueryKind, semantic_only: bool) -> Vec<String> {
    let mut texts = vec![text.to_string()];
    if !semantic_only {
        texts.extend(parts(kind, text));
    }
    texts
}

/// The sentences of a long prompt worth scoring alone: split after `.`, `!`, `?` or `;` followed
/// by a space, and at line breaks; pieces under four words carry too little meaning to score.
/// Empty when the prompt is short or is one sentence.
pub fn sentences(text: &str) -> Vec<String> {
    if text.chars().count() < SPLIT_FROM_CHARS {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(at, c)) in chars.iter().enumerate() {
        let next_is_space = chars.get(k + 1).is_none_or(|&(_, n)| n.is_whitespace());
        // Not after an abbreviation ("e.g.", "i.e.", "vs.").
        let abbreviation = c == '.' && {
            let word = text[start..at]
                .rsplit(char::is_whitespace)
                .next()
                .unwrap_or("");
            word.contains('.') || word.chars().count() <= 2
        };
        if c == '\n' || (matches!(c, '.' | '!' | '?' | ';') && next_is_space && !abbreviation) {
            out.push(text[start..at + c.len_utf8()].trim().to_string());
            start = at + c.len_utf8();
        }
    }
    out.push(text[start..].trim().to_string());
    out.retain(|s| s.split_whitespace().count() >= 4);
    if out.len() < 2 {
        return Vec::new();
    }
    out.truncate(MAX_SENTENCES);
    out
}

/// How deep in a ranking an explicitly superseded memory is moved below its replacement.
const REPLACED_WITHIN: usize = 50;

/// A memory replaced by another one that also matched (`remember --supersedes`) goes right after
/// its replacement, scored no higher: the user said the newer one is what holds now.
fn rank_replacements_first(view: &RankView, hits: &mut Vec<(usize, rank::Scored)>) {
    let (mut k, mut moves) = (0, 0);
    // The move budget ends a cycle of links (A replaces B replaces A) that an import can bring.
    while k < hits.len().min(REPLACED_WITHIN) && moves < REPLACED_WITHIN {
        let id = view.records.get(hits[k].0).id();
        let newer = view.superseded_by.get(id).and_then(|newer| {
            hits.iter()
                .position(|(i, _)| view.records.get(*i).id() == newer)
                .filter(|&at| at > k)
        });
        match newer {
            Some(at) => {
                let mut old = hits.remove(k);
                old.1.relevance = old.1.relevance.min(hits[at - 1].1.relevance);
                hits.insert(at, old);
                moves += 1;
            }
            None => k += 1,
        }
    }
}

/// A candidate's vectors as the exact pass reads them (f32, decoded from the view's codes).
struct ExactVectors {
    embedding: Vec<f32>,
    keys: Vec<f32>,
    key_norms: Vec<f64>,
}

/// At least this many of the best coarse matches are rescored exactly.
const CANDIDATES: usize = 64;

/// How far below the last of those a coarse score may be and still be rescored: twice the coarse
/// cosine's worst error (`store::vectors`, tested under 0.01) plus the supersession penalty, which
/// only the exact pass applies. Then every memory exact scoring puts among the best `k` is a
/// candidate: one left out scores exactly below `k` memories that were taken.
pub const COARSE_MARGIN: f64 = 2.0 * 0.01 + rank::SUPERSEDED_PENALTY;

/// The rows (of `keep`) worth scoring exactly for the best `depth`: each row's coarse score (int8
/// cosines, exact lexical and rare-term shares from the postings), then every row within
/// [`COARSE_MARGIN`] of the `k`-th best, and likewise among the rows on `branch`, whose hits a
/// recall lists first. In the order of `keep`.
fn select(
    view: &RankView,
    query: &rank::EmbeddedQuery,
    keep: &[usize],
    depth: usize,
    branch: Option<&str>,
    semantic_only: bool,
) -> Vec<usize> {
    let k = CANDIDATES.max(depth.saturating_mul(2).saturating_add(20));
    if keep.len() <= k {
        return keep.to_vec();
    }
    let parts: Vec<Quantized> = query.parts.iter().map(|(_, e)| Quantized::new(e)).collect();
    let coarse = view.coarse_semantic(&parts);
    let mut best = vec![f64::NEG_INFINITY; view.records.len()];
    let rare_weight = query.kind.rare_weight();
    for (p, (text, _)) in query.parts.iter().enumerate() {
        let (lexical, rare) = if semantic_only {
            (Vec::new(), Vec::new())
        } else {
            let weighed = view.corpus.weigh(&rank::terms(text));
            let rare = if rare_weight > 0.0 {
                view.corpus
                    .rare_all(&weighed, query.kind.rare_identifiers_only())
            } else {
                Vec::new()
            };
            (view.corpus.lexical_all(&weighed), rare)
        };
        for &i in keep {
            let score = coarse[p][i] as f64
                + rank::LEXICAL_WEIGHT * lexical.get(i).copied().unwrap_or(0.0)
                + rare_weight * rare.get(i).copied().unwrap_or(0.0);
            best[i] = best[i].max(score);
        }
    }
    let threshold = |rows: &mut dyn Iterator<Item = usize>| {
        let mut scores: Vec<f64> = rows.map(|i| best[i]).collect();
        if scores.len() <= k {
            return f64::NEG_INFINITY;
        }
        let (_, kth, _) = scores.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
        *kth - COARSE_MARGIN
    };
    let floor = threshold(&mut keep.iter().copied());
    let mut chosen: Vec<bool> = best.iter().map(|&b| b >= floor).collect();
    if let Some(branch) = branch {
        // `keep` may leave out some of the branch's rows (a scored row is never -inf).
        let on_branch = view.rows_tagged(&format!("branch:{branch}"));
        let rows = on_branch.iter().map(|&i| i as usize);
        // Where every memory is on the branch (a one-branch project), its floor is `floor`.
        let everyone = keep.len() == best.len() && on_branch.len() == best.len();
        if !everyone {
            let scored = rows.clone().filter(|&i| best[i] > f64::NEG_INFINITY);
            let branch_floor = threshold(&mut scored.into_iter());
            for i in rows.filter(|&i| best[i] >= branch_floor) {
                chosen[i] = true;
            }
        }
    }
    keep.iter().copied().filter(|&i| chosen[i]).collect()
}

/// The memories passing a query's filters, scored, best first: positions in the store's ranking
/// view, so nothing is copied until a caller picks the few it returns.
struct Ranking {
    view: Arc<RankView>,
    /// (index into `view.records`, its score), best first.
    hits: Vec<(usize, rank::Scored)>,
}

impl Ranking {
    /// The memories passing `q`'s filters, scored. `depth`: how many of the best the caller may
    /// read (`usize::MAX`: all, exactly); a query of an unfiltered store rescores only the
    /// candidates [`select`] finds for that depth.
    fn of(store: &Store, q: &RecallQuery, depth: usize) -> anyhow::Result<Ranking> {
        if q.text.trim().is_empty() {
            return Ok(Ranking {
                view: Arc::new(RankView::default()),
                hits: Vec::new(),
            });
        }
        let view = store.rank_view()?;
        // Without the model the store's vectors are the engine's hash fallback, which carries no
        // meaning: rank on the query's terms alone (see `rank::EmbeddedQuery::semantic`).
        let meaningful = store.ensure_embedder()? == EmbedderKind::MinilmL6;
        let records = &view.records;
        let unfiltered = q.tags.is_empty()
            && q.min_importance.is_none()
            && q.since.is_none()
            && q.until.is_none()
            && !view.tally.tags.contains_key(AUTO_FAILURE_TAG)
            && !view.tally.tags.contains_key(HELD_TAG);
        let keep: Vec<usize> = if unfiltered {
            (0..records.len()).collect() // nothing to look at per memory
        } else {
            filtered_rows(&view, q)
        };
        let kind = q.kind.unwrap_or_else(|| QueryKind::infer(&q.text));
        let semantic_only = q.semantic_only && meaningful;
        let query = if meaningful {
            let mut parts = Vec::new();
            for text in query_texts(&q.text, kind, semantic_only) {
                let embedding = store.embed(&text)?;
                parts.push((text, embedding));
            }
            rank::EmbeddedQuery {
                kind,
                parts,
                semantic: true,
            }
        } else {
            rank::EmbeddedQuery::lexical(kind, query_texts(&q.text, kind, false))
        };
        // A filter the caller chose ranks within what it keeps, IDF included; the hooks' own
        // exclusion of failure records does not (they stay in the store's corpus).
        let chosen_filter = !q.tags.is_empty()
            || q.min_importance.is_some()
            || q.since.is_some()
            || q.until.is_some();
        let rows = if depth == usize::MAX || chosen_filter || !query.semantic {
            keep
        } else {
            select(
                &view,
                &query,
                &keep,
                depth,
                q.branch.as_deref(),
                semantic_only,
            )
        };
        // The candidates' vectors, decoded once for the exact pass.
        let exact: Vec<ExactVectors> = rows
            .iter()
            .map(|&i| {
                let (keys, key_norms) = view.key_vectors(i);
                ExactVectors {
                    embedding: view.embedding(i),
                    keys,
                    key_norms,
                }
            })
            .collect();
        let candidates: Vec<Candidate> = rows
            .iter()
            .zip(&exact)
            .map(|(&i, v)| {
                let id = records.get(i).id();
                Candidate {
                    id,
                    created_at: records.get(i).created_at(),
                    embedding: &v.embedding,
                    norm: view.norm(i),
                    superseded: view.superseded_by.contains_key(id),
                    key_vectors: &v.keys,
                    key_norms: &v.key_norms,
                }
            })
            .collect();
        let scored = if semantic_only {
            rank::rank_semantic(kind, &query.parts[0].1, &candidates)
        } else if chosen_filter {
            let texts: Vec<String> = rows
                .iter()
                .map(|&i| records.get(i).lexical_text())
                .collect();
            rank::rank(&query, &candidates, &texts)
        } else {
            rank::rank_with(&query, &candidates, &view.corpus, &rows)
        };
        let mut hits: Vec<(usize, rank::Scored)> =
            scored.into_iter().map(|s| (rows[s.index], s)).collect();
        rank_replacements_first(&view, &mut hits);
        Ok(Ranking { view, hits })
    }

    fn relevance(&self, k: usize) -> f64 {
        round3(self.hits[k].1.relevance)
    }

    fn record(&self, k: usize) -> MemoryRecord {
        self.record_of(&self.hits[k])
    }

    fn record_of(&self, (i, s): &(usize, rank::Scored)) -> MemoryRecord {
        let mut r = self.view.records.record(*i);
        r.relevance_score = Some(round3(s.relevance));
        r.superseded_by = self.view.superseded_by.get(&r.id).cloned();
        r.relevance_reason = Some(match &r.superseded_by {
            Some(newer) => format!("{}; superseded by {newer}", s.reason()),
            None => s.reason(),
        });
        r
    }

    /// The best `limit` of the first `eligible` hits, current-branch hits first.
    fn pick(&self, eligible: usize, branch: Option<&str>, limit: usize) -> Vec<MemoryRecord> {
        let tag = branch.map(|b| format!("branch:{b}"));
        let on_branch = |k: usize| {
            tag.as_ref()
                .is_some_and(|t| self.view.records.get(self.hits[k].0).has_tag(t))
        };
        branch_merge(eligible, on_branch, branch.is_some(), limit)
            .into_iter()
            .map(|k| self.record(k))
            .collect()
    }
}

/// All memories passing the filters, scored for the query, best first.
pub fn ranked(store: &Store, q: &RecallQuery) -> anyhow::Result<Vec<MemoryRecord>> {
    let ranking = Ranking::of(store, q, usize::MAX)?;
    Ok((0..ranking.hits.len()).map(|k| ranking.record(k)).collect())
}

/// (id, score before calibration), best first: for refitting the calibration.
pub fn ranked_raw(store: &Store, q: &RecallQuery) -> anyhow::Result<Vec<(String, f64)>> {
    let ranking = Ranking::of(store, q, usize::MAX)?;
    Ok(ranking
        .hits
        .iter()
        .map(|(i, s)| (ranking.view.records.get(*i).id().to_string(), s.raw))
        .collect())
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Reference 3.5, over positions `0..n` of a ranked list: with a branch, its hits come first (at
/// most `branch_limit`), then the rest in rank order; `limit` in all.
fn branch_merge(
    n: usize,
    on_branch: impl Fn(usize) -> bool,
    boost: bool,
    limit: usize,
) -> Vec<usize> {
    if !boost {
        return (0..n.min(limit)).collect();
    }
    let mut out: Vec<usize> = (0..n)
        .filter(|&k| on_branch(k))
        .take(branch_limit(limit).min(limit))
        .collect();
    let mut k = 0;
    while out.len() < limit && k < n {
        if !out.contains(&k) {
            out.push(k);
        }
        k += 1;
    }
    out
}

/// `wt-memory recall`: the best `limit` memories with their relevance, branch hits first.
pub fn recall(store: &Store, q: &RecallQuery) -> anyhow::Result<Vec<MemoryRecord>> {
    let branch = if q.tags.is_empty() {
        q.branch.as_deref()
    } else {
        None
    };
    let ranking = Ranking::of(store, q, q.limit)?;
    Ok(ranking.pick(ranking.hits.len(), branch, q.limit))
}

/// `wt-memory proactive`: like recall, but only what clears the absolute floor and a fraction of
/// the best score, so a hook can inject it without adding noise. Never stores the context.
pub fn proactive(
    store: &Store,
    context: &str,
    kind: Option<QueryKind>,
    limit: usize,
    branch: Option<&str>,
    use_prior: &dyn Fn(&str) -> f64,
) -> anyhow::Result<Vec<MemoryRecord>> {
    let ask = TierAsk {
        context,
        kind,
        limit,
        index_limit: 0,
        branch,
        supplement: false,
    };
    Ok(tiers(store, &ask, use_prior)?.full)
}

/// The most a memory's use prior may shift its relevance, either way (the prior itself is the
/// metrics log's: `metrics::UseCounts::prior`).
pub const MAX_USE_PRIOR: f64 = 0.1;

/// [`proactive`]'s memories, and up to `index_limit` more for a hook's index: a file's hits that
/// passed the gates but do not name the file or its module, then what ranked below the gates down
/// to the index floor. `use_prior` shifts a memory's relevance by how the agent used it (at most
/// [`MAX_USE_PRIOR`] either way) before the gates.
/// What a hook asks of one store: the memories to show in full for `context` and up to
/// `index_limit` more to list by title.
#[derive(Debug, Clone, Copy)]
pub struct TierAsk<'a> {
    pub context: &'a str,
    pub kind: Option<QueryKind>,
    pub limit: usize,
    pub index_limit: usize,
    /// The caller's branch, for the boost.
    pub branch: Option<&'a str>,
    /// This store is read beside another (the personal store beside a project's): its handful of
    /// memories compete with the other store's, so the new-user gates never apply.
    pub supplement: bool,
}

pub fn tiers(
    store: &Store,
    ask: &TierAsk,
    use_prior: &dyn Fn(&str) -> f64,
) -> anyhow::Result<Tiers> {
    let TierAsk {
        context,
        kind,
        limit,
        index_limit,
        branch,
        supplement,
    } = *ask;
    let q = RecallQuery {
        text: context.to_string(),
        limit,
        branch: branch.map(str::to_string),
        kind,
        ..Default::default()
    };
    let (full_floor, index_floor) = gates();
    let mut ranking = Ranking::of(store, &q, limit.saturating_add(index_limit))?;
    if supplement {
        for hit in &mut ranking.hits {
            hit.1.relevance = on_project_scale(hit.1.relevance);
        }
    }
    // A new user's store holds a handful of memories, none a near miss of another: what ranks
    // first for a prompt there is worth a line in the index even at a low score. Only for prompts
    // (a tool call's query is a path or a command: there a low score is no match) and only with
    // the model (the hash fallback's low scores carry no meaning).
    let asks_prompt = q.kind.unwrap_or_else(|| QueryKind::infer(context)) == QueryKind::Prompt;
    let index_floor = if ranking.view.records.len() <= SMALL_STORE
        && !supplement
        && asks_prompt
        && store.ensure_embedder()? == EmbedderKind::MinilmL6
    {
        small_store_index_floor()
    } else {
        index_floor
    };
    // The full floor keeps out the near misses of a store where many memories compete; a store
    // that holds no more memories than the event injects (a new user's) has none to choose
    // between, so there the relevance floor alone decides.
    let small = ranking.view.records.len() <= limit && !supplement;
    let full_floor = if small { RELEVANCE_FLOOR } else { full_floor };
    let top = ranking.hits.first().map_or(0.0, |_| ranking.relevance(0));
    let relative = top
        * if small {
            small_store_relative()
        } else {
            PROACTIVE_RELATIVE
        };
    // A file gets in full the memories about it: those naming the file itself clear the
    // relevance floor only; those naming its module, the full floor; the rest go to the index.
    let path = q.kind.unwrap_or_else(|| QueryKind::infer(context)) == QueryKind::Path;
    let (anchors, file) = if path {
        (path_anchors(context), file_anchors(context))
    } else {
        Default::default()
    };
    let lowest = RELEVANCE_FLOOR.min(full_floor).min(index_floor);
    let view = ranking.view.clone();
    let (mut full, mut demoted, mut below) = (Vec::new(), Vec::new(), Vec::new());
    let mut shifted = std::collections::HashMap::new();
    for hit in std::mem::take(&mut ranking.hits) {
        if round3(hit.1.relevance) + MAX_USE_PRIOR < lowest {
            break; // best first: nothing later clears any gate, whatever its use
        }
        let id = view.records.get(hit.0).id();
        let prior = use_prior(id).clamp(-MAX_USE_PRIOR, MAX_USE_PRIOR);
        if prior != 0.0 {
            shifted.insert(id.to_string(), prior);
        }
        let rel = round3(hit.1.relevance + prior);
        if rel < lowest {
            continue;
        }
        let terms = path.then(|| rank::terms(&view.records.get(hit.0).lexical_text()));
        let names_file = terms.as_ref().is_some_and(|t| !t.is_disjoint(&file));
        let floor = if names_file {
            RELEVANCE_FLOOR
        } else {
            full_floor
        };
        if rel >= floor.max(relative) {
            if terms.is_some_and(|t| t.is_disjoint(&anchors)) {
                demoted.push(hit);
            } else {
                full.push(hit);
            }
        } else if rel >= index_floor {
            below.push(hit);
        }
    }
    let passing = full.len();
    ranking.hits = full;
    let full = ranking.pick(passing, branch, limit);
    let index = demoted
        .into_iter()
        .chain(below)
        .map(|hit| ranking.record_of(&hit))
        .filter(|r| !full.iter().any(|f| f.id == r.id))
        .take(index_limit)
        .collect();
    let mut tiers = Tiers {
        full,
        index,
        checked_together: false,
    };
    for r in tiers.full.iter_mut().chain(tiers.index.iter_mut()) {
        if let Some(prior) = shifted.get(&r.id) {
            // The score the gates saw, and why it differs from the query's own.
            let own = r.relevance_score.unwrap_or(0.0);
            r.relevance_score = Some(round3(own + prior));
            let why = r.relevance_reason.get_or_insert_with(String::new);
            why.push_str(&format!("; use prior {prior:+.2} (query alone {own:.3})"));
        }
    }
    Ok(tiers)
}

/// File names too common to say which file a memory means (`mod.rs`, `index.ts`): a memory names
/// such a file only with a directory (`auth/mod.rs`).
const GENERIC_STEMS: &[&str] = &[
    "mod", "index", "lib", "main", "__init__", "page", "+page", "route", "layout", "utils",
    "types", "config", "app", "server", "client", "test", "tests",
];

/// The terms by which a memory names the file at `path` itself: its name (`~state.rs`) or, for a
/// generic name, a path ending in it (`~api/mod.rs`).
pub fn file_anchors(path: &str) -> std::collections::HashSet<String> {
    let name = path.rsplit('/').next().unwrap_or(path).to_lowercase();
    let stem = name.split('.').next().unwrap_or(&name);
    let generic = GENERIC_STEMS.contains(&stem);
    rank::terms(path)
        .into_iter()
        .filter(|t| t.starts_with('~') && t.ends_with(&name) && t.len() > 1)
        .filter(|t| !generic || t.contains('/'))
        .collect()
}

/// Directory names that say nothing about what a file is for.
const GENERIC_DIRS: &[&str] = &[
    "src",
    "lib",
    "crates",
    "packages",
    "app",
    "apps",
    "tests",
    "test",
    "internal",
    "pkg",
    "cmd",
    "components",
    "web",
    "frontend",
    "backend",
    "server",
    "scripts",
    "docs",
    "source",
    "main",
    "java",
    "python",
    "include",
    "bin",
    "home",
    "users",
    "tmp",
    "root",
    "usr",
];

/// The terms a memory about `path` would use: the file's name (`~state.rs`), its stem as a word
/// (`state`), and the modules it sits in (`crates/billing/src/x.rs` -> `billing`).
pub fn path_anchors(path: &str) -> std::collections::HashSet<String> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let mut anchors = std::collections::HashSet::new();
    let Some((name, dirs)) = parts.split_last() else {
        return anchors;
    };
    let name_terms = rank::terms(name);
    let stem = name.split('.').find(|s| !s.is_empty()).unwrap_or(name);
    anchors.extend(name_terms.into_iter().filter(|t| t.starts_with('~')));
    anchors.extend(rank::terms(stem));
    for dir in dirs {
        let dir = dir.trim_start_matches('.').to_lowercase();
        if !GENERIC_DIRS.contains(&dir.as_str()) {
            anchors.extend(rank::terms(&dir));
        }
    }
    anchors
}

/// `recall --tags-only` and date-only recall: filtered memories, newest first (no query needed).
pub fn filtered_newest(store: &Store, q: &RecallQuery) -> anyhow::Result<Vec<MemoryRecord>> {
    let mut records = store.records_of(|view| filtered_rows(view, q))?;
    records.truncate(q.limit);
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_named_by_its_name_or_for_a_generic_name_by_a_path_to_it() {
        let names = |p: &str| {
            let mut v: Vec<String> = file_anchors(p).into_iter().collect();
            v.sort();
            v
        };
        assert_eq!(
            names("crates/api/src/state.rs"),
            [
                "~api/src/state.rs",
                "~crates/api/src/state.rs",
                "~src/state.rs",
                "~state.rs"
            ]
        );
        assert_eq!(
            names("crates/auth/src/mod.rs"),
            ["~auth/src/mod.rs", "~crates/auth/src/mod.rs", "~src/mod.rs"]
        );
        assert!(names("Makefile").is_empty());
    }

    #[test]
    fn a_path_is_anchored_by_its_name_stem_and_modules() {
        let anchors = |p: &str| {
            let mut a: Vec<String> = path_anchors(p).into_iter().collect();
            a.sort();
            a
        };
        assert_eq!(
            anchors("crates/billing/src/recurring.rs"),
            ["bill", "recurr", "~recurring.rs"]
        );
        assert_eq!(anchors("Dockerfile"), ["dockerfile"]);
        assert_eq!(
            anchors(".github/workflows/ci.yml"),
            ["ci", "github", "workflow", "~ci.yml"]
        );
        assert_eq!(
            anchors("web/src/hooks/useDebounce.ts"),
            ["hook", "usedebounce", "~usedebounce", "~usedebounce.ts"]
        );
    }

    #[test]
    fn long_prompts_split_into_sentences() {
        let prompt = "The end-of-month archive download keeps dying for our biggest customer. \
                      How do we give just that task more time without loosening the limit? Thanks, ok.";
        assert_eq!(
            sentences(prompt),
            [
                "The end-of-month archive download keeps dying for our biggest customer.",
                "How do we give just that task more time without loosening the limit?"
            ]
        );
        assert!(
            sentences("Why does crates/api/src/state.rs set max_connections to 20?").is_empty()
        );
        let one = "x".repeat(50)
            + " in one long sentence without any break at all, e.g. in state.rs and so on and on";
        assert!(sentences(&one).is_empty(), "no split inside a file name");
    }

    #[test]
    fn branch_limit_matches_reference() {
        assert_eq!(branch_limit(5), 4);
        assert_eq!(branch_limit(3), 3);
        assert_eq!(branch_limit(2), 2);
        assert_eq!(branch_limit(1), 2);
    }

    fn rec(id: &str, tags: &[&str]) -> MemoryRecord {
        MemoryRecord {
            tags: tags.iter().map(|s| s.to_string()).collect(),
            ..MemoryRecord::for_test(id, id)
        }
    }

    #[test]
    fn branch_hits_come_first_then_the_rest_without_repeats() {
        let ranked = [
            rec("a", &[]),
            rec("b", &["branch:x"]),
            rec("c", &[]),
            rec("d", &["branch:x"]),
        ];
        let on_x = |k: usize| ranked[k].has_tag("branch:x");
        let ids = |ks: Vec<usize>| -> Vec<String> {
            ks.into_iter().map(|k| ranked[k].id.clone()).collect()
        };
        assert_eq!(ids(branch_merge(4, on_x, true, 3)), ["b", "d", "a"]);
        assert_eq!(ids(branch_merge(4, on_x, false, 3)), ["a", "b", "c"]);
        assert_eq!(
            ids(branch_merge(2, on_x, true, 3)),
            ["b", "a"],
            "only the eligible prefix"
        );
    }
}
