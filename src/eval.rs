//! `wt-memory eval <set-dir>`: load an evaluation set (format of `testdata/eval/*/README.md`) into a
//! throwaway store, run every query through the same `recall` path the hooks and MCP use, and score
//! it with the definitions of `eval/score.py`.

use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use wt_memory_base::project::Project;
use wt_memory_core::rank::QueryKind;
use wt_memory_core::recall::{self, RecallQuery};
use wt_memory_core::store::{NewMemory, Store};

#[derive(Deserialize)]
struct EvalMemory {
    id: String,
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    tags: Vec<String>,
    content: String,
    /// Retrieval keys, stored as `remember --keys` stores them (a set's `keys.jsonl` merged in).
    #[serde(default)]
    keys: Vec<String>,
}

#[derive(Deserialize)]
struct EvalQuery {
    qid: String,
    kind: String,
    query: String,
    #[serde(default)]
    relevant: Vec<String>,
}

impl EvalQuery {
    /// The kind the ranker is told, as a hook would tell it: the set's path, command and error
    /// kinds are what Read, Bash and a failed tool send, and every question is a prompt. An
    /// abstain query is told by its shape (it may be phrased as a path, a command or an error).
    fn query_kind(&self) -> QueryKind {
        match self.kind.as_str() {
            "abstain" => QueryKind::infer(&self.query),
            other => QueryKind::parse(other).unwrap_or(QueryKind::Prompt),
        }
    }
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct KindScore {
    pub n: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub mrr: f64,
    /// Abstain queries: share with nothing at or above the floor in the top 5.
    pub abstention: Option<f64>,
    /// Answerable queries: share with a relevant result injected at the floor.
    pub coverage: Option<f64>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct EvalReport {
    pub floor: f64,
    pub overall: KindScore,
    pub by_kind: BTreeMap<String, KindScore>,
    /// Queries whose top 5 from the candidates the ranking view generates differs from the top 5
    /// of scoring every memory exactly (`recall::select`): 0 when candidate generation loses
    /// nothing.
    #[serde(default)]
    pub candidate_misses: usize,
    /// One line per query in the scorer's results format.
    #[serde(skip)]
    pub results_jsonl: String,
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            serde_json::from_str(l)
                .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), n + 1))
        })
        .collect()
}

/// Scoring annotations that must not be ingested.
fn is_annotation(tag: &str) -> bool {
    tag.starts_with("dupgroup:") || tag.starts_with("supersedes:")
}

/// Per query: recall@1, recall@5, reciprocal rank, abstained (abstain queries), covered (others).
type Row = (f64, f64, f64, Option<bool>, Option<bool>);

pub fn run(set_dir: &Path, floor: f64) -> anyhow::Result<EvalReport> {
    run_with_features(set_dir, floor, None)
}

/// Like [`run`]; with `features`, also writes the raw ranking features of every (query, memory)
/// pair as JSONL, for refitting the constants in `rank.rs` (`eval/fit/tune_rank.py`).
pub fn run_with_features(
    set_dir: &Path,
    floor: f64,
    features: Option<&Path>,
) -> anyhow::Result<EvalReport> {
    let memories: Vec<EvalMemory> = read_jsonl(&set_dir.join("memories.jsonl"))?;
    let queries: Vec<EvalQuery> = read_jsonl(&set_dir.join("queries.jsonl"))?;
    let tmp = tempfile::tempdir()?;
    let project = Project {
        name: "eval".into(),
        store_dir: tmp.path().join("eval"),
        toplevel: None,
        main_root: None,
        cwd: tmp.path().to_path_buf(),
    };
    let store = Store::open(&project)?;
    // Ids are chronological: give them increasing timestamps so "newer" means what the set says.
    let base = chrono::Utc::now() - chrono::Duration::days(400);
    let mut to_eval: HashMap<String, String> = HashMap::new();
    for (i, m) in memories.iter().enumerate() {
        let mut new = NewMemory::new(
            &wt_memory_foundation::hygiene::clean_content(&m.content),
            wt_memory_core::record::parse_any_type(&m.ty),
        );
        new.tags = m
            .tags
            .iter()
            .filter(|t| !is_annotation(t))
            .cloned()
            .collect();
        new.metadata.insert("eval_id".into(), m.id.clone());
        let keys = wt_memory_core::record::clean_keys(&m.keys);
        if !keys.is_empty() {
            new.metadata
                .insert(wt_memory_core::record::KEYS.into(), keys.join("\n"));
        }

        new.created_at = Some(base + chrono::Duration::hours(i as i64));
        let ins = store.insert(new)?;
        to_eval.insert(ins.id, m.id.clone());
    }
    if let Some(path) = features {
        write_features(&store, &queries, &to_eval, path)?;
    }
    let mut results_jsonl = String::new();
    let mut candidate_misses = 0;
    let mut per_kind: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for q in &queries {
        let rq = RecallQuery {
            text: q.query.clone(),
            limit: 10,
            kind: Some(q.query_kind()),
            ..Default::default()
        };
        let got = recall::recall(&store, &rq)?;
        let exact = recall::ranked(&store, &rq)?;
        let top5 = |records: &[wt_memory_core::record::MemoryRecord]| -> Vec<String> {
            records.iter().take(5).map(|r| r.id.clone()).collect()
        };
        if top5(&got) != top5(&exact) {
            candidate_misses += 1;
        }
        let ranked: Vec<(String, f64)> = got
            .iter()
            .map(|r| {
                (
                    to_eval.get(&r.id).cloned().unwrap_or_default(),
                    r.relevance_score.unwrap_or(0.0),
                )
            })
            .collect();
        let line = serde_json::json!({
            "qid": q.qid,
            "results": ranked.iter().map(|(id, s)| serde_json::json!({"id": id, "score": s})).collect::<Vec<_>>(),
        });
        results_jsonl.push_str(&line.to_string());
        results_jsonl.push('\n');
        let injected: Vec<&String> = ranked
            .iter()
            .take(5)
            .filter(|(_, s)| *s >= floor)
            .map(|(id, _)| id)
            .collect();
        let entry = if q.relevant.is_empty() {
            (0.0, 0.0, 0.0, Some(injected.is_empty()), None)
        } else {
            let rel = |id: &String| q.relevant.contains(id);
            let hits_at = |k: usize| ranked.iter().take(k).filter(|(id, _)| rel(id)).count() as f64;
            let r1 = hits_at(1) / 1f64.min(q.relevant.len() as f64);
            let r5 = hits_at(5) / 5f64.min(q.relevant.len() as f64);
            let mrr = ranked
                .iter()
                .position(|(id, _)| rel(id))
                .map_or(0.0, |p| 1.0 / (p + 1) as f64);
            (r1, r5, mrr, None, Some(injected.iter().any(|id| rel(id))))
        };
        per_kind.entry(q.kind.clone()).or_default().push(entry);
    }
    let summarize = |rows: &[Row]| {
        let answerable: Vec<_> = rows.iter().filter(|r| r.4.is_some()).collect();
        let abstain: Vec<_> = rows.iter().filter(|r| r.3.is_some()).collect();
        let mean = |f: &dyn Fn(&&Row) -> f64| {
            if answerable.is_empty() {
                0.0
            } else {
                answerable.iter().map(f).sum::<f64>() / answerable.len() as f64
            }
        };
        KindScore {
            n: rows.len(),
            recall_at_1: mean(&|r| r.0),
            recall_at_5: mean(&|r| r.1),
            mrr: mean(&|r| r.2),
            abstention: (!abstain.is_empty()).then(|| {
                abstain.iter().filter(|r| r.3 == Some(true)).count() as f64 / abstain.len() as f64
            }),
            coverage: (!answerable.is_empty()).then(|| {
                answerable.iter().filter(|r| r.4 == Some(true)).count() as f64
                    / answerable.len() as f64
            }),
        }
    };
    let all: Vec<_> = per_kind.values().flatten().cloned().collect();
    Ok(EvalReport {
        floor,
        overall: summarize(&all),
        by_kind: per_kind
            .iter()
            .map(|(k, rows)| (k.clone(), summarize(rows)))
            .collect(),
        candidate_misses,
        results_jsonl,
    })
}

fn write_features(
    store: &Store,
    queries: &[EvalQuery],
    to_eval: &HashMap<String, String>,
    path: &Path,
) -> anyhow::Result<()> {
    let mut out = String::new();
    for q in queries {
        let rq = RecallQuery {
            text: q.query.clone(),
            limit: 10,
            kind: Some(q.query_kind()),
            ..Default::default()
        };
        let ranked = recall::ranked_raw(store, &rq)?;
        // The query's background: how its raw score is spread over the whole store.
        let n = ranked.len().max(1) as f64;
        let mean = ranked.iter().map(|(_, raw)| raw).sum::<f64>() / n;
        let sd = (ranked
            .iter()
            .map(|(_, raw)| (raw - mean).powi(2))
            .sum::<f64>()
            / n)
            .sqrt();
        let rows: Vec<serde_json::Value> = ranked
            .into_iter()
            .take(10)
            .map(|(id, raw)| {
                serde_json::json!([to_eval.get(&id).cloned().unwrap_or_default(), raw])
            })
            .collect();
        out.push_str(&serde_json::json!({"qid": q.qid, "kind": q.kind, "query_kind": q.query_kind().name(), "relevant": q.relevant, "rows": rows, "mean": mean, "sd": sd}).to_string());
        out.push('\n');
    }
    std::fs::write(path, out)?;
    Ok(())
}

impl EvalReport {
    pub fn to_text(&self) -> String {
        let fmt = |o: Option<f64>| o.map_or("-".to_string(), |x| format!("{x:.3}"));
        let mut s = format!(
            "{:<12} {:>4} {:>9} {:>9} {:>7} {:>10} {:>9}\n",
            "kind", "n", "recall@1", "recall@5", "MRR", "abstain", "coverage"
        );
        for (k, v) in self
            .by_kind
            .iter()
            .chain(std::iter::once((&"overall".to_string(), &self.overall)))
        {
            s.push_str(&format!(
                "{:<12} {:>4} {:>9.3} {:>9.3} {:>7.3} {:>10} {:>9}\n",
                k,
                v.n,
                v.recall_at_1,
                v.recall_at_5,
                v.mrr,
                fmt(v.abstention),
                fmt(v.coverage)
            ));
        }
        s.push_str(&format!(
            "recall@5={:.4} mrr={:.4} abstain={:.4} (floor {})\n",
            self.overall.recall_at_5,
            self.overall.mrr,
            self.overall.abstention.unwrap_or(0.0),
            self.floor
        ));
        s.push_str(&format!(
            "candidate generation: {} queries whose top 5 differs from exact scoring\n",
            self.candidate_misses
        ));
        s
    }
}
