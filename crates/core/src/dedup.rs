//! Near-duplicate detection for `audit` and `dedup` (the previous system's `audit`/`dedup` rules, with its bugs fixed: every
//! cluster is handled, ties keep the most recent memory, and tags are merged into the survivor in
//! place so its id, which sync's `original_id` chains rely on, never changes).
//!
//! Similarity is a sequence-matcher ratio (2 * matched / total, as Python's difflib) over words
//! rather than characters: near-identical notes score high, notes that merely share a topic (and
//! therefore letter frequencies) do not. A bag-of-words bound skips most pairs cheaply.

use crate::record::MemoryRecord;
use serde::Serialize;
use std::collections::HashMap;

pub const DEFAULT_THRESHOLD: f64 = 0.75;

fn words(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Upper bound of the ratio from word multisets (difflib's `quick_ratio`).
fn quick_ratio(a: &[String], b: &[String]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut counts: HashMap<&str, i32> = HashMap::new();
    for w in a {
        *counts.entry(w).or_default() += 1;
    }
    let mut matches = 0;
    for w in b {
        if let Some(c) = counts.get_mut(w.as_str()) {
            if *c > 0 {
                *c -= 1;
                matches += 1;
            }
        }
    }
    2.0 * matches as f64 / (a.len() + b.len()) as f64
}

/// Longest common run of `a[alo..ahi]` and `b[blo..bhi]`: (start in a, start in b, length).
fn longest_match(
    a: &[String],
    b: &[String],
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> (usize, usize, usize) {
    let mut best = (alo, blo, 0);
    let mut prev = vec![0usize; bhi - blo + 1];
    for (i, ai) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut cur = vec![0usize; bhi - blo + 1];
        for (j, bj) in b.iter().enumerate().take(bhi).skip(blo) {
            if ai == bj {
                let k = prev[j - blo] + 1;
                cur[j - blo + 1] = k;
                if k > best.2 {
                    best = (i + 1 - k, j + 1 - k, k);
                }
            }
        }
        prev = cur;
    }
    best
}

fn matched(a: &[String], b: &[String], alo: usize, ahi: usize, blo: usize, bhi: usize) -> usize {
    if alo >= ahi || blo >= bhi {
        return 0;
    }
    let (i, j, k) = longest_match(a, b, alo, ahi, blo, bhi);
    if k == 0 {
        return 0;
    }
    k + matched(a, b, alo, i, blo, j) + matched(a, b, i + k, ahi, j + k, bhi)
}

/// Sequence-matcher ratio of two texts over words, 0..1.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (wa, wb) = (words(a), words(b));
    if wa.is_empty() && wb.is_empty() {
        return 1.0;
    }
    2.0 * matched(&wa, &wb, 0, wa.len(), 0, wb.len()) as f64 / (wa.len() + wb.len()) as f64
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Cluster {
    pub count: usize,
    pub preview: String,
    pub survivor_id: String,
    pub ids: Vec<String>,
    pub victim_ids: Vec<String>,
    pub all_tags: Vec<String>,
    pub survivor_tags: Vec<String>,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Audit {
    pub total: usize,
    pub clusters: usize,
    pub redundant: usize,
    pub unique: usize,
    pub dedup_ratio: f64,
    /// Every cluster, largest first (the name is kept from the previous JSON shape).
    pub top_clusters: Vec<Cluster>,
    /// Explicit supersede links (`remember --supersedes`) between memories that both exist.
    #[serde(default)]
    pub supersede_links: Vec<SupersedeLink>,
    /// Memories to review: older than the use window, not used by the agent in it, and whose
    /// code anchors changed or vanished. Listed only: nothing is deleted automatically.
    #[serde(default)]
    pub review: Vec<Review>,
}

/// A memory `audit` lists for review (see [`Audit::review`]).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Review {
    pub id: String,
    pub preview: String,
    pub created_at: String,
    pub changed: Vec<String>,
    pub gone: Vec<String>,
}

/// A newer memory that names the one it replaces.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct SupersedeLink {
    pub newer_id: String,
    pub older_id: String,
    pub newer_preview: String,
    pub older_preview: String,
}

/// Audit and dedup previews are printed (and returned over MCP): redacted like every way out,
/// and never the text of a memory held for review ([`MemoryRecord::summary_text`]).
fn preview(record: &MemoryRecord) -> String {
    wt_memory_foundation::hygiene::truncate_chars(
        &wt_memory_foundation::hygiene::redact(record.summary_text()),
        120,
    )
    .to_string()
}

/// The supersede links among `records`, newest replacement first.
pub fn supersede_links(records: &[MemoryRecord]) -> Vec<SupersedeLink> {
    let by_id: HashMap<&str, &MemoryRecord> = records.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut links: Vec<SupersedeLink> = records
        .iter()
        .filter_map(|newer| {
            let older = by_id.get(newer.metadata.get(crate::record::SUPERSEDES)?.as_str())?;
            Some(SupersedeLink {
                newer_id: newer.id.clone(),
                older_id: older.id.clone(),
                newer_preview: preview(newer),
                older_preview: preview(older),
            })
        })
        .collect();
    links.sort_by(|a, b| {
        let created = |id: &str| by_id.get(id).map(|r| r.created_at.clone());
        created(&b.newer_id).cmp(&created(&a.newer_id))
    });
    links
}

fn find(parent: &mut [usize], x: usize) -> usize {
    let mut r = x;
    while parent[r] != r {
        r = parent[r];
    }
    let mut x = x;
    while parent[x] != r {
        let next = parent[x];
        parent[x] = r;
        x = next;
    }
    r
}

fn survivor_score(r: &MemoryRecord) -> f64 {
    r.access_count as f64 * 10.0
        + r.importance as f64 * 5.0
        + r.content.chars().count() as f64 / 100.0
}

/// Group near-duplicates (ratio strictly above `threshold`) and pick each cluster's survivor:
/// highest score, ties to the most recent.
pub fn audit(records: &[MemoryRecord], threshold: f64) -> Audit {
    let toks: Vec<Vec<String>> = records.iter().map(|r| words(&r.content)).collect();
    let mut parent: Vec<usize> = (0..records.len()).collect();
    for i in 0..records.len() {
        for j in i + 1..records.len() {
            let (a, b) = (&toks[i], &toks[j]);
            let len_bound = 2.0 * a.len().min(b.len()) as f64 / (a.len() + b.len()).max(1) as f64;
            if len_bound <= threshold || quick_ratio(a, b) <= threshold {
                continue;
            }
            let ratio = 2.0 * matched(a, b, 0, a.len(), 0, b.len()) as f64
                / (a.len() + b.len()).max(1) as f64;
            if ratio > threshold {
                let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
                parent[ri] = rj;
            }
        }
    }
    let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..records.len() {
        let root = find(&mut parent, i);
        groups.entry(root).or_default().push(i);
    }
    let mut clusters: Vec<Cluster> = groups
        .into_values()
        .filter(|g| g.len() > 1)
        .map(|mut g| {
            // A memory replaced by another one of its cluster never survives it.
            let replaced: std::collections::HashSet<&str> = g
                .iter()
                .filter_map(|&j| records[j].metadata.get(crate::record::SUPERSEDES))
                .map(String::as_str)
                .collect();
            let replaced = |i: usize| replaced.contains(records[i].id.as_str());
            g.sort_by(|&x, &y| {
                replaced(x)
                    .cmp(&replaced(y))
                    .then_with(|| {
                        survivor_score(&records[y]).total_cmp(&survivor_score(&records[x]))
                    })
                    .then_with(|| records[y].created_at.cmp(&records[x].created_at))
                    .then_with(|| records[x].id.cmp(&records[y].id))
            });
            let survivor = &records[g[0]];
            let mut all_tags: Vec<String> = Vec::new();
            for &i in &g {
                for t in &records[i].tags {
                    if !all_tags.contains(t) {
                        all_tags.push(t.clone());
                    }
                }
            }
            Cluster {
                count: g.len(),
                preview: preview(survivor),
                survivor_id: survivor.id.clone(),
                ids: g.iter().map(|&i| records[i].id.clone()).collect(),
                victim_ids: g[1..].iter().map(|&i| records[i].id.clone()).collect(),
                all_tags,
                survivor_tags: survivor.tags.clone(),
            }
        })
        .collect();
    clusters.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.survivor_id.cmp(&b.survivor_id))
    });
    let redundant: usize = clusters.iter().map(|c| c.count - 1).sum();
    let total = records.len();
    Audit {
        total,
        clusters: clusters.len(),
        redundant,
        unique: total - redundant,
        dedup_ratio: if total == 0 {
            0.0
        } else {
            (redundant as f64 / total as f64 * 1000.0).round() / 10.0
        },
        top_clusters: clusters,
        supersede_links: supersede_links(records),
        review: Vec::new(),
    }
}

// Previews are redacted as they are made ([`preview`]).
crate::shows_no_memory!(Audit);

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, content: &str, created: &str, supersedes: Option<&str>) -> MemoryRecord {
        let mut r = MemoryRecord::for_test(id, content);
        r.created_at = created.into();
        if let Some(older) = supersedes {
            r.metadata
                .insert(crate::record::SUPERSEDES.into(), older.into());
        }
        r
    }

    #[test]
    fn audit_lists_supersede_links_and_keeps_the_replacement() {
        let records = [
            rec(
                "old",
                "Deploys go to Fly.io from the main branch with flyctl deploy",
                "1",
                None,
            ),
            rec(
                "new",
                "Deploys go to Fly.io from the release branch with flyctl deploy",
                "2",
                Some("old"),
            ),
            rec(
                "other",
                "Postgres runs on port 5433 locally",
                "3",
                Some("gone"),
            ),
        ];
        // The older one is accessed more, which alone would make it the survivor.
        let mut records = records.to_vec();
        records[0].access_count = 9;
        let audit = audit(&records, 0.75);
        assert_eq!(audit.top_clusters.len(), 1);
        assert_eq!(audit.top_clusters[0].survivor_id, "new");
        assert_eq!(audit.top_clusters[0].victim_ids, ["old"]);
        assert_eq!(
            audit.supersede_links.len(),
            1,
            "a link to a forgotten memory is not listed"
        );
        let link = &audit.supersede_links[0];
        assert_eq!(
            (link.newer_id.as_str(), link.older_id.as_str()),
            ("new", "old")
        );
        assert!(link.older_preview.contains("main branch"));
    }

    #[test]
    fn similarity_is_a_word_sequence_ratio() {
        assert_eq!(similarity("a b c d", "a b c d"), 1.0);
        assert_eq!(similarity("a b c d", "a b x y"), 0.5);
        assert_eq!(similarity("one two", "three four"), 0.0);
        assert!(
            similarity(
                "Run cargo sqlx prepare before pushing",
                "Run cargo sqlx prepare before you push"
            ) > 0.75
        );
    }
}
