//! Ranking: ours, not the engine's `recall` (measured: BM25-heavy fusion, type bias, a competition
//! step that drops close competitors, and answers that change after every query).
//!
//! Score of memory `m` for query `q`:
//!   raw = cos(emb(q), emb(m)) + LEXICAL_WEIGHT * lexical(q, m) + rare_weight(kind) * rare(q, m)
//!         - SUPERSEDED_PENALTY * superseded(m)
//!   relevance = logistic(CAL_SLOPE * (raw - CAL_MIDPOINT))
//! `lexical` is the share of the query's IDF mass found in the memory (exact identifiers, paths,
//! flags and error codes carry most of it); `rare` is how rare the rarest query term the memory
//! holds is (a command that names `mkcert` or `insta` points at the few memories that say it, however
//! many common words come with it); `superseded` marks an older memory when a newer one on
//! the same subject (embedding cosine >= SAME_SUBJECT) also matches the query.
//!
//! Calibration: the constants were fitted on `testdata/eval/dev` (see `wt-memory eval`) so that
//! relevance 0.3, the hooks' injection floor, separates "answers the query" from "near miss":
//! at 0.3 most abstain queries inject nothing while most answerable ones inject a relevant memory.
//! Without the model (the engine's hash vectors carry no meaning) a query is scored on its terms
//! alone, with its own calibration ([`EmbeddedQuery::semantic`]).
//! Everything is a pure function of the stored memories and the query: the same query on the same
//! store gives the same ids in the same order, and reading never changes later answers.

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

pub const LEXICAL_WEIGHT: f64 = 0.4;
pub const SUPERSEDED_PENALTY: f64 = 0.03;
pub const SAME_SUBJECT: f64 = 0.65;
/// Store size from which a rare term counts in full (see [`Corpus::rare_all`]): in a store of 5
/// memories, `git status` would otherwise find "the status page ..." rare enough to inject.
pub const RARE_FULL_AT: f64 = 100.0;

/// Weight of the content's cosine against the best key's, for memories with retrieval keys.
pub const KEY_BLEND: f64 = 0.5;

/// What a query is: a question in words, a file path (Read), a shell command (Bash) or an error
/// text (a failed tool). Their raw scores are distributed differently (a path shares few words
/// with the memory about it, a paraphrased prompt has a low cosine), so each kind has its own
/// calibration curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum QueryKind {
    #[default]
    Prompt,
    Path,
    Command,
    Error,
}

impl QueryKind {
    pub const NAMES: [&'static str; 4] = ["prompt", "path", "command", "error"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub fn parse(s: &str) -> Option<QueryKind> {
        [Self::Prompt, Self::Path, Self::Command, Self::Error]
            .into_iter()
            .find(|k| k.name() == s)
    }

    /// The kind a query's shape suggests, for callers that do not say (CLI and MCP recall; the
    /// hooks always say).
    pub fn infer(text: &str) -> QueryKind {
        static ERROR: OnceLock<Regex> = OnceLock::new();
        static COMMAND: OnceLock<Regex> = OnceLock::new();
        let t = text.trim();
        let error = ERROR.get_or_init(|| {
            Regex::new(r"(?m)^\s*(error|fatal|panic|warning)\b|error\[|\b[A-Z]\w+(Error|Exception)\b|\bERR_[A-Z_]{3,}|SQLSTATE|panicked at|Traceback|[Ee]xit code \d+|\berror:")
                .expect("error pattern")
        });
        let command = COMMAND.get_or_init(|| {
            Regex::new(r"^(sudo\s+)?(\./\S+|cargo|git|npm|npx|pnpm|yarn|docker|docker-compose|kubectl|make|just|psql|sqlx|fly|flyctl|curl|wget|python3?|pip|uv|node|go|rustup|ls|cd|cat|grep|rg|sed|awk|find|mkdir|rm|cp|mv|chmod|ssh|tar|openssl|mkcert|op|gh|terraform|helm|aws|gcloud|bash|sh|env|export|source|redis-cli|du|df|ps|kill|systemctl|journalctl|tail|head|echo|vite|vitest|jest|pytest|ruff|mypy|nix|cmake|gradle|mvn|java)(\s|$)")
                .expect("command pattern")
        });
        if !t.contains(char::is_whitespace)
            && (t.contains('/')
                || t.rsplit_once('.')
                    .is_some_and(|(a, b)| !a.is_empty() && (1..=5).contains(&b.len())))
        {
            QueryKind::Path
        } else if command.is_match(t) && !t.contains('?') {
            QueryKind::Command
        } else if error.is_match(t) {
            QueryKind::Error
        } else {
            QueryKind::Prompt
        }
    }

    /// This kind's parameters as `WT_MEMORY_TUNE_RANK` replaces them (tuning scripts only).
    fn tuning(self) -> Option<&'static wt_memory_base::config::RankTuning> {
        wt_memory_base::config::get()
            .rank_tuning
            .iter()
            .find(|t| t.kind == self.name())
    }

    /// Does only a rare identifier (`invalid_grant`, `ExpiredSignature`, a path, a flag) count
    /// for the rare-term bonus, not a rare word? For prompts: rare words in prose are often
    /// incidental (`Ctrl`, a Hungarian word one memory happens to hold; counting them injected
    /// more wrong memories and no right one on the hook-level set, measured: docs/evaluation.md,
    /// "Rare terms"), an identifier the user typed names what they ask about.
    pub fn rare_identifiers_only(self) -> bool {
        self == QueryKind::Prompt
    }

    /// Weight of the rarest query term a memory holds ([`Corpus::rare_all`]), fitted per kind on
    /// `testdata/eval/dev` by `eval/fit/tune_rare.py --hooks`, which breaks the set's ties on the
    /// hook-level set: the dev set's commands, and its short, clean errors, score the same over a
    /// range of weights, while real tool output is long and its one rare identifier
    /// (`ExpiredSignature`, `40P01`) decides. Paths gain nothing. A prompt counts only its
    /// identifiers ([`QueryKind::rare_identifiers_only`]); the dev set scores those the same at
    /// almost every weight, so the hook-level set chose the prompts' weight. The fitted figures:
    /// docs/evaluation.md, "Rare terms".
    pub fn rare_weight(self) -> f64 {
        if let Some(t) = self.tuning() {
            return t.rare_weight;
        }
        match self {
            QueryKind::Command => 0.3,
            QueryKind::Error | QueryKind::Prompt => 0.15,
            QueryKind::Path => 0.0,
        }
    }

    /// `(slope, midpoint)` of `relevance = logistic(slope * (raw - midpoint))`, fitted per kind on
    /// `testdata/eval/dev` by `eval/fit/tune_rank.py`.
    pub fn calibration(self) -> (f64, f64) {
        if let Some(curve) = self.tuning().and_then(|t| t.curve) {
            return curve;
        }
        match self {
            QueryKind::Prompt => (6.85, 0.701),
            QueryKind::Path => (6.33, 0.676),
            QueryKind::Command => (7.95, 0.750),
            QueryKind::Error => (9.57, 0.742),
        }
    }

    /// The curve for a store whose vectors carry no meaning (the engine's hash fallback: no
    /// model installed), where the raw score is the lexical and rare-term share alone. Fitted per
    /// kind the same way, on `testdata/eval/dev` evaluated without a model.
    pub fn lexical_calibration(self) -> (f64, f64) {
        match self {
            QueryKind::Prompt => (11.23, 0.278),
            QueryKind::Path => (11.24, 0.284),
            QueryKind::Command => (11.35, 0.379),
            QueryKind::Error => (12.72, 0.338),
        }
    }
}

pub use wt_memory_vectors::{cosine, cosine_normed, norm};

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for", "from",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or",
    "our", "so", "that", "the", "their", "then", "there", "these", "this", "to", "was", "we",
    "what", "when", "where", "which", "who", "why", "will", "with", "you", "your", "should",
    "would", "again", "all", "any", "about", "after", "before", "have", "has", "had", "get", "got",
    "use", "used", "using", "der", "die", "das", "und", "ist", "nicht", "mit", "wie", "ein",
    "eine", "a", "az", "és", "hogy", "nem", "egy", "van", "meg",
];

/// Light stemming so "workers"/"worker", "claiming"/"claim" meet; identifiers stay exact.
fn stem(w: &str) -> String {
    let n = w.chars().count();
    for suffix in ["ing", "ed", "es", "s"] {
        if n > suffix.len() + 3 && w.ends_with(suffix) {
            return w[..w.len() - suffix.len()].to_string();
        }
    }
    w.to_string()
}

/// Terms of a text: stemmed words (runs of alphanumerics and `_`), and whole "compound" tokens
/// that keep their punctuation (`crates/jobs/src/worker.rs`, `--all-targets`, `sqlx::Error`,
/// `InvoiceRepo::next_number`) so exact identifiers count as one strong term.
pub fn terms(text: &str) -> HashSet<String> {
    let lower = text.to_lowercase();
    let mut out = HashSet::new();
    for word in lower.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if word.is_empty()
            || STOPWORDS.contains(&word)
            || (word.chars().count() < 2 && !word.chars().all(|c| c.is_ascii_digit()))
        {
            continue;
        }
        out.insert(stem(word));
    }
    // Identifiers spelled as one word count as exact too: snake_case (`invalid_grant`) and
    // camelCase (`ExpiredSignature`, `useDebounce`).
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let camel = word
            .chars()
            .zip(word.chars().skip(1))
            .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
        let snake = word.trim_matches('_').contains('_');
        if word.chars().count() >= 4 && (camel || snake) {
            out.insert(format!("~{}", word.to_lowercase()));
        }
    }
    for raw in lower.split_whitespace() {
        let tok = raw.trim_matches(|c: char| "`'\"()[]{}<>,;:!?".contains(c) || c == '.');
        let has_punct = tok.chars().any(|c| !(c.is_alphanumeric() || c == '_'));
        if tok.chars().count() >= 4 && has_punct {
            out.insert(format!("~{tok}"));
            // A path also names its shorter forms: `crates/api/src/state.rs` meets a memory
            // that says `src/state.rs` or `state.rs`, and the other way round.
            for (at, _) in tok.match_indices('/') {
                let suffix = &tok[at + 1..];
                if suffix.chars().count() >= 4 && suffix.contains('.') {
                    out.insert(format!("~{suffix}"));
                }
            }
        }
    }
    out
}

/// Per-corpus term statistics for IDF, and which documents hold each term (so a query's lexical
/// scores cost its terms' postings, not terms x documents); a resident store adds and removes
/// documents in place.
#[derive(Clone, Default)]
pub struct Corpus {
    /// How many documents.
    docs: usize,
    /// Term -> the documents holding it, ascending; its length is the term's document frequency.
    postings: HashMap<String, Vec<u32>>,
}

/// A query's terms with their IDF in one corpus, weighed once per query (not per document).
pub struct WeighedQuery {
    terms: Vec<(String, f64)>,
    total: f64,
}

impl Corpus {
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut corpus = Corpus::default();
        for text in texts {
            corpus.push(text);
        }
        corpus
    }

    /// Add a document at the end.
    pub fn push(&mut self, text: &str) {
        let at = self.docs as u32;
        for t in terms(text) {
            self.postings.entry(t).or_default().push(at);
        }
        self.docs += 1;
    }

    /// Remove document `i`, whose text is `text` (later documents move down by one).
    pub fn remove(&mut self, i: usize, text: &str) {
        let gone = i as u32;
        for t in terms(text) {
            if let Some(docs) = self.postings.get_mut(&t) {
                docs.retain(|&d| d != gone);
                if docs.is_empty() {
                    self.postings.remove(&t);
                }
            }
        }
        for docs in self.postings.values_mut() {
            docs.iter_mut().filter(|d| **d > gone).for_each(|d| *d -= 1);
        }
        self.docs -= 1;
    }

    /// How many documents.
    pub fn len(&self) -> usize {
        self.docs
    }

    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    /// Every term with its documents, for the view file.
    pub fn postings(&self) -> impl Iterator<Item = (&String, &Vec<u32>)> {
        self.postings.iter()
    }

    /// A corpus of `docs` documents from its postings (the view file), `None` if a posting names
    /// a document out of range.
    pub fn from_postings(docs: usize, postings: HashMap<String, Vec<u32>>) -> Option<Corpus> {
        postings
            .values()
            .all(|d| d.iter().all(|&d| (d as usize) < docs))
            .then_some(Corpus { docs, postings })
    }

    fn idf(&self, term: &str) -> f64 {
        let n = self.docs as f64;
        // A term no memory holds weighs as one held once: it cannot tell memories apart, and
        // weighing it as rarer than any held term would thin every memory's share most in a
        // small store, where nearly every query word is unseen.
        let df = self.postings.get(term).map_or(0, Vec::len).max(1) as f64;
        // Compound tokens are exact identifiers: worth more than a word.
        let weight = if term.starts_with('~') { 2.0 } else { 1.0 };
        weight * (1.0 + n / (df + 1.0)).ln()
    }

    pub fn weigh(&self, query_terms: &HashSet<String>) -> WeighedQuery {
        let terms: Vec<(String, f64)> = query_terms
            .iter()
            .map(|t| (t.clone(), self.idf(t)))
            .collect();
        let total = terms.iter().map(|(_, w)| w).sum();
        WeighedQuery { terms, total }
    }

    /// Per document, how rare the rarest query term it holds is: 0 unless the term is held by
    /// fewer than sqrt(N) documents, rising to 1 for a term only that document holds. One such
    /// term (`mkcert`, `insta`) names a memory's subject however many common words surround it.
    /// In a small store every word is held by one memory or two, so rarity says little there: it
    /// counts in full from [`RARE_FULL_AT`] documents and in proportion below. `identifiers_only`:
    /// only exact identifiers (the `~` terms of [`terms`]) count.
    pub fn rare_all(&self, query: &WeighedQuery, identifiers_only: bool) -> Vec<f64> {
        let n = self.docs as f64;
        let mut best = vec![0f64; self.docs];
        if n < 2.0 {
            return best;
        }
        let confidence = (n / RARE_FULL_AT).min(1.0);
        for (t, _) in &query.terms {
            if identifiers_only && !t.starts_with('~') {
                continue;
            }
            let Some(docs) = self.postings.get(t) else {
                continue;
            };
            // Specificity ln(N/df)/ln(N): 1 for one holder, 0.5 at sqrt(N) holders.
            let specificity = (n / docs.len() as f64).ln() / n.ln();
            let rarity = confidence * (2.0 * specificity - 1.0).max(0.0);
            if rarity == 0.0 {
                continue;
            }
            for &d in docs {
                let b = &mut best[d as usize];
                *b = b.max(rarity);
            }
        }
        best
    }

    /// Each document's share of the query's IDF mass (0..1), from the query terms' postings.
    pub fn lexical_all(&self, query: &WeighedQuery) -> Vec<f64> {
        let mut hits = vec![0f64; self.docs];
        if query.total == 0.0 {
            return hits;
        }
        for (t, w) in &query.terms {
            for &d in self.postings.get(t).map_or(&[][..], Vec::as_slice) {
                hits[d as usize] += w;
            }
        }
        hits.iter_mut().for_each(|h| *h /= query.total);
        hits
    }
}

/// A memory as the ranker sees it.
pub struct Candidate<'a> {
    pub id: &'a str,
    /// RFC 3339, as stored: newer sorts later.
    pub created_at: &'a str,
    pub embedding: &'a [f32],
    /// `norm(embedding)`, kept by the store's view.
    pub norm: f64,
    /// A newer memory replaces this one (an explicit link).
    pub superseded: bool,
    /// The memory's key vectors, concatenated (`store::key_vectors_of`), and their norms.
    pub key_vectors: &'a [f32],
    pub key_norms: &'a [f64],
}

impl Candidate<'_> {
    /// Meaning match of a query part: the content's cosine, or, when the memory has retrieval
    /// keys, the even blend of it with the best key's cosine if that is higher (the measured
    /// scoring of document expansion; taking the higher of the two means a poor key never hurts).
    fn semantic(&self, query: &[f32], query_norm: f64) -> f64 {
        let content = cosine_normed(query, query_norm, self.embedding, self.norm);
        if self.key_norms.is_empty() || query.is_empty() {
            return content;
        }
        let best_key = self
            .key_vectors
            .chunks_exact(query.len())
            .zip(self.key_norms)
            .map(|(key, &key_norm)| cosine_normed(query, query_norm, key, key_norm))
            .fold(f64::NEG_INFINITY, f64::max);
        content.max(KEY_BLEND * content + (1.0 - KEY_BLEND) * best_key)
    }
}

/// One scored result.
#[derive(Debug, Clone)]
pub struct Scored {
    pub index: usize,
    /// Score before calibration (what `eval/fit/tune_rank.py` fits the calibration on).
    pub raw: f64,
    pub relevance: f64,
    pub semantic: f64,
    pub lexical: f64,
    /// The rare-term bonus's rarity (0 for kinds that score none).
    pub rare: f64,
    pub superseded: bool,
    /// Scored on the query's terms alone (no embedding model: see [`EmbeddedQuery::semantic`]).
    pub terms_only: bool,
}

impl Scored {
    pub fn reason(&self) -> String {
        let mut r = if self.terms_only {
            format!(
                "lexical {:.2} (terms only: no embedding model)",
                self.lexical + 0.0
            )
        } else {
            format!(
                "semantic {:.2}, lexical {:.2}",
                self.semantic + 0.0,
                self.lexical + 0.0
            )
        };
        if self.rare > 0.0 {
            r.push_str(&format!(", rare term {:.2}", self.rare));
        }
        if self.superseded {
            r.push_str(", newer memory on the same subject");
        }
        r
    }
}

pub fn calibrate(kind: QueryKind, raw: f64) -> f64 {
    logistic(kind.calibration(), raw)
}

fn logistic((slope, midpoint): (f64, f64), raw: f64) -> f64 {
    1.0 / (1.0 + (-(slope * (raw - midpoint))).exp())
}

/// A query as the ranker sees it: its kind and one or more parts, each with its embedding. A long
/// prompt has a part per sentence besides the whole, so one sentence that matches a memory is
/// enough; every other query has one part.
pub struct EmbeddedQuery {
    pub kind: QueryKind,
    pub parts: Vec<(String, Vec<f32>)>,
    /// False when the store's vectors carry no meaning (the engine's hash fallback puts every
    /// pair of texts at a high cosine; measured: docs/evaluation.md, "Without the embedding
    /// model"): the query is then scored on its terms alone, with its own calibration, so a store
    /// without a model abstains instead of injecting its newest memories.
    pub semantic: bool,
}

impl EmbeddedQuery {
    pub fn single(kind: QueryKind, text: &str, embedding: Vec<f32>) -> EmbeddedQuery {
        EmbeddedQuery {
            kind,
            parts: vec![(text.to_string(), embedding)],
            semantic: true,
        }
    }

    /// A query scored on its terms alone (no embeddings): each text is one part.
    pub fn lexical(kind: QueryKind, texts: impl IntoIterator<Item = String>) -> EmbeddedQuery {
        EmbeddedQuery {
            kind,
            parts: texts.into_iter().map(|t| (t, Vec::new())).collect(),
            semantic: false,
        }
    }

    fn calibrate(&self, raw: f64) -> f64 {
        if self.semantic {
            calibrate(self.kind, raw)
        } else {
            logistic(self.kind.lexical_calibration(), raw)
        }
    }
}

/// Score every candidate for the query, `texts[i]` the words candidate `i` is matched on
/// ([`crate::record::MemoryRecord::lexical_text`]); best first. Ties break on newer first, then id, so the
/// order is fully deterministic.
pub fn rank(query: &EmbeddedQuery, candidates: &[Candidate], texts: &[String]) -> Vec<Scored> {
    let corpus = Corpus::new(texts.iter().map(String::as_str));
    let docs: Vec<usize> = (0..candidates.len()).collect();
    rank_with(query, candidates, &corpus, &docs)
}

/// [`rank`] with corpus statistics computed beforehand (a resident store keeps them between
/// queries): candidate `i` is the corpus's document `docs[i]`.
pub fn rank_with(
    query: &EmbeddedQuery,
    candidates: &[Candidate],
    corpus: &Corpus,
    docs: &[usize],
) -> Vec<Scored> {
    let mut scored: Vec<Scored> = candidates
        .iter()
        .enumerate()
        .map(|(i, _)| Scored {
            index: i,
            raw: 0.0,
            relevance: f64::NEG_INFINITY,
            semantic: 0.0,
            lexical: 0.0,
            rare: 0.0,
            superseded: false,
            terms_only: !query.semantic,
        })
        .collect();
    let rare_weight = query.kind.rare_weight();
    // Each memory keeps its best part.
    for (text, embedding) in &query.parts {
        let weighed = corpus.weigh(&terms(text));
        let lexical_scores = corpus.lexical_all(&weighed);
        let rare_scores = if rare_weight > 0.0 {
            corpus.rare_all(&weighed, query.kind.rare_identifiers_only())
        } else {
            Vec::new()
        };
        let query_norm = norm(embedding);
        for (s, c) in scored.iter_mut().zip(candidates) {
            let semantic = if query.semantic {
                c.semantic(embedding, query_norm)
            } else {
                0.0
            };
            let doc = docs[s.index];
            let lexical = lexical_scores[doc];
            let rare = rare_scores.get(doc).copied().unwrap_or(0.0);
            let combined = semantic + LEXICAL_WEIGHT * lexical + rare_weight * rare;
            if combined > s.relevance {
                (s.relevance, s.semantic, s.lexical, s.rare) = (combined, semantic, lexical, rare);
            }
        }
    }
    // Supersession: among the strongest matches, an older memory loses to a newer one on the
    // same subject. Only cosines that mean something say "same subject"; a linked replacement
    // (`candidates[_].superseded`) counts always.
    let mut penalised = HashSet::new();
    if query.semantic {
        scored.sort_by(|a, b| b.relevance.total_cmp(&a.relevance));
        let top: Vec<usize> = scored.iter().take(20).map(|s| s.index).collect();
        for &i in &top {
            for &j in &top {
                if i != j
                    && candidates[j].created_at > candidates[i].created_at
                    && cosine(candidates[i].embedding, candidates[j].embedding) >= SAME_SUBJECT
                {
                    penalised.insert(i);
                }
            }
        }
    }
    for s in &mut scored {
        if penalised.contains(&s.index) || candidates[s.index].superseded {
            s.superseded = true;
            s.relevance -= SUPERSEDED_PENALTY;
        }
        s.raw = s.relevance;
        s.relevance = query.calibrate(s.raw);
    }
    sort_best_first(&mut scored, candidates);
    scored
}

/// Best first; ties go to the newer memory, then the smaller id, so the order is deterministic.
fn sort_best_first(scored: &mut [Scored], candidates: &[Candidate]) {
    scored.sort_by(|a, b| {
        let (ra, rb) = (&candidates[a.index], &candidates[b.index]);
        b.relevance
            .total_cmp(&a.relevance)
            .then_with(|| rb.created_at.cmp(ra.created_at))
            .then_with(|| ra.id.cmp(rb.id))
    });
}

/// Meaning alone (`--mode semantic`): calibrated cosine, no lexical or supersession terms.
pub fn rank_semantic(
    kind: QueryKind,
    query_embedding: &[f32],
    candidates: &[Candidate],
) -> Vec<Scored> {
    let mut scored: Vec<Scored> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let semantic = cosine(query_embedding, c.embedding);
            Scored {
                index: i,
                raw: semantic,
                relevance: calibrate(kind, semantic),
                semantic,
                lexical: 0.0,
                rare: 0.0,
                superseded: false,
                terms_only: false,
            }
        })
        .collect();
    sort_best_first(&mut scored, candidates);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compound_identifiers_and_paths_are_terms() {
        let t = terms(
            "See `crates/jobs/src/worker.rs` and InvoiceRepo::next_number, run with --all-targets",
        );
        assert!(t.contains("~crates/jobs/src/worker.rs"));
        assert!(t.contains("~invoicerepo::next_number"));
        assert!(t.contains("~--all-targets"));
        assert!(t.contains("worker"));
        assert!(!t.contains("and"));
    }

    #[test]
    fn one_word_identifiers_are_exact_terms() {
        let t = terms("OIDC fails with invalid_grant, then Error(ExpiredSignature) in useDebounce");
        for exact in ["~invalid_grant", "~expiredsignature", "~usedebounce"] {
            assert!(t.contains(exact), "{exact} in {t:?}");
        }
        assert!(t.contains("invalid_grant") && t.contains("expiredsignature"));
        assert!(!t.contains("~oidc") && !t.contains("~fails") && !t.contains("~then"));
    }

    #[test]
    fn paths_name_their_shorter_forms() {
        let t = terms("crates/api/src/state.rs");
        assert!(t.contains("~crates/api/src/state.rs"));
        assert!(t.contains("~src/state.rs"));
        assert!(t.contains("~state.rs"));
        assert!(
            !t.contains("~src"),
            "a directory alone is a word, not an identifier"
        );
    }

    #[test]
    fn query_kinds_from_shape() {
        use QueryKind::*;
        let cases = [
            ("crates/api/src/state.rs", Path),
            ("fly.toml", Path),
            ("Dockerfile", Prompt),
            ("cargo sqlx prepare --workspace", Command),
            ("git commit -m 'x'", Command),
            ("error[E0425]: cannot find value `x` in this scope", Error),
            ("ERR_PNPM_OUTDATED_LOCKFILE Cannot install", Error),
            ("thread 'main' panicked at src/main.rs:3", Error),
            ("why do we pin the pool size?", Prompt),
            ("cargo test fails with a linker error, why?", Prompt),
            ("How do we deploy to Fly.io", Prompt),
        ];
        for (text, kind) in cases {
            assert_eq!(QueryKind::infer(text), kind, "{text}");
        }
        for name in QueryKind::NAMES {
            assert_eq!(QueryKind::parse(name).map(QueryKind::name), Some(name));
        }
    }

    #[test]
    fn one_matching_part_is_enough() {
        let a = crate::record::MemoryRecord::for_test("a", "retry 40P01 deadlocks");
        let b = crate::record::MemoryRecord::for_test("b", "deploy to fly");
        let (ea, eb) = (vec![1.0, 0.0], vec![0.0, 1.0]);
        let candidates = [
            Candidate {
                id: &a.id,
                created_at: &a.created_at,
                embedding: &ea,
                norm: 1.0,
                superseded: false,
                key_vectors: &[],
                key_norms: &[],
            },
            Candidate {
                id: &b.id,
                created_at: &b.created_at,
                embedding: &eb,
                norm: 1.0,
                superseded: false,
                key_vectors: &[],
                key_norms: &[],
            },
        ];
        let texts = [a.lexical_text(), b.lexical_text()];
        let whole = EmbeddedQuery::single(QueryKind::Prompt, "a long prompt", vec![0.7, 0.1]);
        let mut parted = EmbeddedQuery::single(QueryKind::Prompt, "a long prompt", vec![0.7, 0.1]);
        parted.parts.push(("deploy it".into(), vec![0.0, 1.0]));
        let score_of = |q: &EmbeddedQuery, id: &str| {
            rank(q, &candidates, &texts)
                .into_iter()
                .find(|s| candidates[s.index].id == id)
                .map(|s| s.semantic)
                .unwrap()
        };
        assert!(score_of(&whole, "b") < 0.2);
        assert!(
            (score_of(&parted, "b") - 1.0).abs() < 1e-6,
            "the sentence that matches counts"
        );
        assert!((score_of(&parted, "a") - score_of(&whole, "a")).abs() < 1e-9);
    }

    #[test]
    fn a_matching_key_lifts_a_memory_and_a_poor_one_never_lowers_it() {
        let r = crate::record::MemoryRecord::for_test("a", "x");
        let content = [1.0f32, 0.0, 0.0];
        let keys = [0.0f32, 1.0, 0.0, 0.0, 0.0, 1.0];
        let with_keys = Candidate {
            id: &r.id,
            created_at: &r.created_at,
            embedding: &content,
            norm: 1.0,
            superseded: false,
            key_vectors: &keys,
            key_norms: &[1.0, 1.0],
        };
        let without = Candidate {
            key_vectors: &[],
            key_norms: &[],
            ..with_keys
        };
        let asks_key = [0.0f32, 1.0, 0.0];
        assert!((with_keys.semantic(&asks_key, 1.0) - 0.5).abs() < 1e-9);
        assert_eq!(without.semantic(&asks_key, 1.0), 0.0);
        let asks_content = [1.0f32, 0.0, 0.0];
        assert_eq!(with_keys.semantic(&asks_content, 1.0), 1.0);
    }

    #[test]
    fn a_query_word_no_memory_holds_weighs_the_same_in_a_small_store_and_a_large_one() {
        let answer = "Passwords are hashed with argon2id through the verify_secret wrapper";
        let query = terms("how do we hash user passwords at login");
        let share = |corpus: &Corpus| {
            let weighed = corpus.weigh(&query);
            corpus.lexical_all(&weighed)[0]
        };
        let small = Corpus::new([answer, "Deploys go through fly.io", "Run ./scripts/dev.sh"]);
        let filler: Vec<String> = (0..200)
            .map(|i| format!("Unrelated note number {i} about invoices and tenants"))
            .collect();
        let large = Corpus::new(std::iter::once(answer).chain(filler.iter().map(String::as_str)));
        // "hash" and "password" are held (once), "user" and "login" by no memory.
        assert!((share(&small) - 0.5).abs() < 1e-9, "{}", share(&small));
        assert!((share(&large) - 0.5).abs() < 1e-9, "{}", share(&large));
    }

    #[test]
    fn lexical_is_share_of_idf_mass() {
        let c = Corpus::new(["retry 40P01 deadlocks", "deploy to fly", "retry later"]);
        let q = c.weigh(&terms("40P01 retry"));
        let lexical = c.lexical_all(&q);
        let first = lexical[0];
        assert!((first - 1.0).abs() < 1e-9);
        assert!(
            lexical[2] > 0.0 && lexical[2] < 0.5,
            "rare code outweighs a common word"
        );
        assert_eq!(lexical[1], 0.0);
    }

    #[test]
    fn rare_term_counts_however_long_the_query() {
        // 100 documents: a term in at most 10 (sqrt N) of them counts, one in a single document most.
        let mut texts = vec!["run mkcert install for local https".to_string()];
        texts.extend((0..99).map(|i| format!("run the deploy step {i}")));
        texts[1].push_str(" with insta snapshots");
        texts[2].push_str(" with insta snapshots");
        let c = Corpus::new(texts.iter().map(String::as_str));
        let long = c.weigh(&terms(
            "please run mkcert and then the deploy step again quickly",
        ));
        let rare = c.rare_all(&long, false);
        assert!(
            (rare[0] - 1.0).abs() < 1e-9,
            "only document 0 says mkcert: {}",
            rare[0]
        );
        assert!(
            rare[3..].iter().all(|&r| r == 0.0),
            "run/deploy/step are everywhere"
        );
        // The same term in a store of 10: it counts a tenth.
        let small = Corpus::new(texts[..10].iter().map(String::as_str));
        let rare_small = small.rare_all(&small.weigh(&terms("run mkcert")), false);
        assert!((rare_small[0] - 0.1).abs() < 1e-9, "{}", rare_small[0]);
        let two = c.rare_all(&c.weigh(&terms("insta review")), false);
        assert!(two[1] > 0.0 && two[1] < 1.0 && two[1] == two[2], "{two:?}");
        // The share of IDF mass alone barely moves for one rare word among many common ones.
        assert!(c.lexical_all(&long)[0] < 0.6);
    }

    #[test]
    fn a_prompt_counts_only_its_rare_identifiers() {
        let mut texts = vec![
            "the OIDC callback failed with invalid_grant in dev".to_string(),
            "keyboard shortcuts use Ctrl in the editor".to_string(),
        ];
        texts.extend((0..98).map(|i| format!("the deploy step {i} runs on fly")));
        let c = Corpus::new(texts.iter().map(String::as_str));
        let q = c.weigh(&terms(
            "why does sign-in fail with invalid_grant after Ctrl+R?",
        ));
        let words_too = c.rare_all(&q, false);
        assert!(words_too[0] > 0.9 && words_too[1] > 0.9, "{words_too:?}");
        let identifiers = c.rare_all(&q, true);
        assert!(identifiers[0] > 0.9, "invalid_grant is an identifier");
        assert_eq!(identifiers[1], 0.0, "a rare word in prose is not");
        assert!(QueryKind::Prompt.rare_identifiers_only());
        assert!(!QueryKind::Command.rare_identifiers_only());
    }

    #[test]
    fn a_command_or_an_error_ranks_the_memory_holding_its_rare_term_first() {
        // One memory names `mkcert`; ten share the command's other words; 89 are about something
        // else. Equal meaning for all.
        let mut records = vec![crate::record::MemoryRecord::for_test(
            "rare",
            "Safari needs https locally: mkcert makes the certificates",
        )];
        records.extend((0..99).map(|i| {
            let text = if i < 10 {
                format!("the cert file and key file live in the local certs folder {i}")
            } else {
                format!("the deploy step {i} runs on fly")
            };
            crate::record::MemoryRecord::for_test(&format!("other{i}"), &text)
        }));
        let embedding = vec![1.0f32, 0.0];
        let candidates: Vec<Candidate> = records
            .iter()
            .map(|record| Candidate {
                id: &record.id,
                created_at: &record.created_at,
                embedding: &embedding,
                norm: 1.0,
                superseded: false,
                key_vectors: &[],
                key_norms: &[],
            })
            .collect();
        let texts: Vec<String> = records.iter().map(|r| r.lexical_text()).collect();
        let text =
            "mkcert -cert-file certs/local.pem -key-file certs/local-key.pem local cert key file";
        let first = |kind| {
            let q = EmbeddedQuery::single(kind, text, vec![0.5, 0.5]);
            candidates[rank(&q, &candidates, &texts)[0].index]
                .id
                .to_string()
        };
        assert_eq!(first(QueryKind::Command), "rare");
        // A failed tool's output is as long and as noisy: its one rare identifier decides too.
        assert_eq!(first(QueryKind::Error), "rare");
        let top = &rank(
            &EmbeddedQuery::single(QueryKind::Command, text, vec![0.5, 0.5]),
            &candidates,
            &texts,
        )[0];
        assert!(top.reason().contains("rare term 1.00"), "{}", top.reason());
        assert_ne!(
            first(QueryKind::Prompt),
            "rare",
            "in a prompt a rare plain word (mkcert) earns no bonus"
        );
    }

    #[test]
    fn without_meaningful_vectors_only_shared_terms_count() {
        // The hash fallback's vectors: every pair of texts nearly the same direction.
        let a = crate::record::MemoryRecord::for_test("a", "Local HTTPS: run mkcert -install once");
        let b = crate::record::MemoryRecord::for_test("b", "Invoice numbers are per tenant");
        let (ea, eb) = (vec![1.0f32, 0.10], vec![1.0f32, 0.12]);
        use crate::record::MemoryRecord;
        fn candidate<'a>(record: &'a MemoryRecord, embedding: &'a [f32]) -> Candidate<'a> {
            Candidate {
                id: &record.id,
                created_at: &record.created_at,
                embedding,
                norm: norm(embedding),
                superseded: false,
                key_vectors: &[],
                key_norms: &[],
            }
        }
        let candidates = [candidate(&a, &ea), candidate(&b, &eb)];
        let texts = [a.lexical_text(), b.lexical_text()];
        // Read as meaningful, such vectors put every memory over the hooks' floor.
        let as_meaning = rank(
            &EmbeddedQuery::single(QueryKind::Command, "mkcert -install", vec![1.0, 0.11]),
            &candidates,
            &texts,
        );
        assert!(as_meaning.iter().all(|s| s.relevance > 0.3));
        let terms_only = rank(
            &EmbeddedQuery::lexical(QueryKind::Command, ["mkcert -install".to_string()]),
            &candidates,
            &texts,
        );
        assert_eq!(candidates[terms_only[0].index].id, "a");
        assert!(terms_only[0].relevance > 0.3, "{:?}", terms_only[0]);
        assert!(terms_only[1].relevance < 0.05, "{:?}", terms_only[1]);
        assert!(terms_only
            .iter()
            .all(|s| s.semantic == 0.0 && !s.superseded));
        assert!(terms_only[0].reason().contains("terms only"));
    }

    #[test]
    fn a_corpus_kept_in_place_equals_one_built_anew() {
        let texts = [
            "retry 40P01 deadlocks",
            "deploy to fly",
            "retry later",
            "fly.io deploy",
        ];
        let mut kept = Corpus::new(texts[..3].iter().copied());
        kept.push(texts[3]);
        kept.remove(1, texts[1]);
        let fresh = Corpus::new([texts[0], texts[2], texts[3]]);
        let q = terms("retry deploy 40P01");
        for i in 0..3 {
            let (a, b) = (
                kept.lexical_all(&kept.weigh(&q))[i],
                fresh.lexical_all(&fresh.weigh(&q))[i],
            );
            assert!((a - b).abs() < 1e-12, "document {i}: {a} vs {b}");
        }
        assert_eq!(kept.postings, fresh.postings);
    }

    #[test]
    fn calibration_is_monotone_and_bounded() {
        for kind in [
            QueryKind::Prompt,
            QueryKind::Path,
            QueryKind::Command,
            QueryKind::Error,
        ] {
            let (_, midpoint) = kind.calibration();
            let xs = [-1.0, 0.0, 0.3, 0.6, midpoint, 0.9, 1.5];
            let ys: Vec<f64> = xs.iter().map(|&x| calibrate(kind, x)).collect();
            assert!(ys.windows(2).all(|w| w[0] < w[1]));
            assert!(ys.iter().all(|&y| (0.0..=1.0).contains(&y)));
            assert!((calibrate(kind, midpoint) - 0.5).abs() < 1e-9);
        }
    }
}
