//! Deterministic rules in `<project>/.claude/rules.yaml`: hard facts (credentials, "never do X")
//! that must not depend on semantic recall. A rule matches a prompt when any of its topics is a
//! case-insensitive substring of it.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Rule {
    pub id: String,
    #[serde(default)]
    pub topics: Vec<String>,
    #[serde(default)]
    pub content: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct RulesFile {
    #[serde(default)]
    rules: Vec<Rule>,
}

pub fn rules_path(project_root: &Path) -> PathBuf {
    project_root.join(".claude/rules.yaml")
}

/// Rules of a project; a missing or malformed file means no rules (the hook must stay quiet).
pub fn load_rules(project_root: &Path) -> Vec<Rule> {
    read_rules(&rules_path(project_root)).unwrap_or_default()
}

fn read_rules(path: &Path) -> anyhow::Result<Vec<Rule>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let file: RulesFile = serde_yaml::from_str(&text)?;
    Ok(file.rules)
}

/// The rules whose topics occur in `prompt` (case-insensitive, Unicode-aware), in file order.
pub fn matching_rules<'a>(rules: &'a [Rule], prompt: &str) -> Vec<&'a Rule> {
    let prompt = prompt.to_lowercase();
    rules
        .iter()
        .filter(|r| {
            r.topics
                .iter()
                .map(|t| t.trim().to_lowercase())
                .any(|t| !t.is_empty() && prompt.contains(&t))
        })
        .collect()
}

/// Id derived from content: lower-case, runs of non-`[a-z0-9]` become `-`, at most 40 characters.
pub fn rule_id(content: &str, existing: &[Rule]) -> String {
    let mut slug = String::new();
    for c in content.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let mut base: String = slug.trim_matches('-').chars().take(40).collect();
    base = base.trim_end_matches('-').to_string();
    if base.is_empty() {
        base = "rule".to_string();
    }
    let taken = |id: &str| existing.iter().any(|r| r.id == id);
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|id| !taken(id))
        .expect("some suffix is free")
}

/// Add a rule; returns it. Fails on a malformed existing file rather than overwriting it.
pub fn add_rule(project_root: &Path, topics: &[String], content: &str) -> anyhow::Result<Rule> {
    let path = rules_path(project_root);
    let mut rules = read_rules(&path)
        .map_err(|e| anyhow::anyhow!("{} is not valid rules YAML: {e}", path.display()))?;
    let rule = Rule {
        id: rule_id(content, &rules),
        topics: topics.to_vec(),
        content: content.to_string(),
    };
    rules.push(rule.clone());
    save(&path, rules)?;
    Ok(rule)
}

/// Remove a rule by id; Ok(false) when no such rule exists.
pub fn remove_rule(project_root: &Path, id: &str) -> anyhow::Result<bool> {
    let path = rules_path(project_root);
    let mut rules = read_rules(&path)
        .map_err(|e| anyhow::anyhow!("{} is not valid rules YAML: {e}", path.display()))?;
    let before = rules.len();
    rules.retain(|r| r.id != id);
    if rules.len() == before {
        return Ok(false);
    }
    save(&path, rules)?;
    Ok(true)
}

/// Rules as stored, or an error for a malformed file (for `rules list`).
pub fn list_rules(project_root: &Path) -> anyhow::Result<Vec<Rule>> {
    read_rules(&rules_path(project_root))
}

fn save(path: &Path, rules: Vec<Rule>) -> anyhow::Result<()> {
    let text = serde_yaml::to_string(&RulesFile { rules })?;
    wt_memory_base::paths::write_atomic(path, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: &str, topics: &[&str]) -> Rule {
        Rule {
            id: id.into(),
            topics: topics.iter().map(|s| s.to_string()).collect(),
            content: "c".into(),
        }
    }

    #[test]
    fn topics_match_as_case_insensitive_substrings() {
        let rules = vec![rule("db", &["Database", "psql"]), rule("ék", &["ÉKEZET"])];
        let hits = matching_rules(&rules, "How do I open PSQL on staging?");
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].id, "db");
        assert_eq!(matching_rules(&rules, "az ékezetek hibásak")[0].id, "ék");
        assert!(matching_rules(&rules, "unrelated").is_empty());
    }

    #[test]
    fn ids_are_slugs_with_collision_suffixes() {
        let existing = vec![rule("use-the-read-only-role", &[])];
        assert_eq!(
            rule_id("Use the READ-only role!", &[]),
            "use-the-read-only-role"
        );
        assert_eq!(
            rule_id("Use the read-only role", &existing),
            "use-the-read-only-role-2"
        );
        assert_eq!(rule_id("x".repeat(60).as_str(), &[]).len(), 40);
        assert_eq!(rule_id("!!!", &[]), "rule");
    }

    #[test]
    fn add_list_remove_round_trip_and_malformed_file_is_no_rules() {
        let dir = tempfile::tempdir().unwrap();
        let r = add_rule(dir.path(), &["database".into()], "Use the read-only role").unwrap();
        assert_eq!(load_rules(dir.path()), vec![r.clone()]);
        assert!(remove_rule(dir.path(), &r.id).unwrap());
        assert!(!remove_rule(dir.path(), &r.id).unwrap());
        std::fs::write(rules_path(dir.path()), "rules: [unclosed").unwrap();
        assert!(load_rules(dir.path()).is_empty());
        assert!(add_rule(dir.path(), &["x".into()], "y").is_err());
    }
}
