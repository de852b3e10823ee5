//! Standing rules: what the user always wants (issue 71). Which memories are rules, which acts a
//! rule guards, and when two rules disagree (the project's rule then wins over the personal one).

use super::{fold, kinds_named, shell_reading, Kind};
use regex::Regex;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Does `text` state how the user always wants the work done (a standing rule), rather than a
/// fact about them or the project? `Always answer me in German`, `Never force-push without
/// asking me first`, `Don't publish packages`, `I always want tests before a commit`.
pub fn standing_rule(text: &str) -> bool {
    static RULE: OnceLock<Regex> = OnceLock::new();
    let rule = RULE.get_or_init(|| {
        Regex::new(r"^(?:please\s+)?(?:always|never|don'?t|do not|every time|whenever|from now on|in every (?:project|session|answer|reply)|(?:answer|reply|respond|talk|speak|write)(?: to)? me\b|ask (?:me )?(?:first|before)|i (?:always|never|want you to|need you to|don'?t want)|the user (?:always|never|wants|insists))|\b(?:without asking(?: me)?|ask(?:ing)? me (?:first|before)|(?:get|need|needs|with|without) my (?:ok|okay|approval|permission|consent|go-ahead)|check with me (?:first|before)|(?:answer|reply|respond)(?: me)? (?:always )?in (?:\p{L}+)|in every (?:project|session|answer|reply))\b")
            .expect("valid regex")
    });
    // About the user's own wishes (`me`, `my`, `I`): a project's convention ("always run cargo
    // fmt") is found by relevance, as before; `wt-memory standing ID` makes any memory one.
    static PERSON: OnceLock<Regex> = OnceLock::new();
    let person = PERSON.get_or_init(|| {
        Regex::new(r"\b(?:me|my|i|i'm|i've|myself|the user|user's)\b").expect("valid regex")
    });
    let t = fold(text.trim());
    t.chars().count() <= 300 && rule.is_match(&t) && person.is_match(&t)
}

/// What a rule about an act wants when the act comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stance {
    /// Ask the user first, or do not do it (`never force-push without asking me`).
    Ask,
    /// Go ahead without asking (`feel free to force-push my feature branches`).
    Allow,
}

/// The stance of a rule's folded words, if it takes one. A permission (`you can`, `no need to
/// ask`, `without asking`) is taken out first; what remains asks when it still forbids or asks
/// (`never force-push without asking` asks: the `never` remains).
fn stance(reading: &str) -> Option<Stance> {
    static ALLOWS: OnceLock<Regex> = OnceLock::new();
    let allows = ALLOWS.get_or_init(|| {
        Regex::new(r"\b(?:no need to (?:ask|check)|(?:you )?(?:don'?t|do not|never) (?:need to |have to )?(?:ask|check with|bother)|without (?:asking|checking|my (?:ok|okay|approval|permission|consent|go-ahead))|feel free to|(?:you are |you're )?free to|(?:you )?(?:may|can) (?:always )?|(?:is|are|it'?s) (?:fine|ok|okay|allowed)|go ahead and)\b")
            .expect("valid regex")
    });
    static ASKS: OnceLock<Regex> = OnceLock::new();
    let asks = ASKS.get_or_init(|| {
        Regex::new(r"\b(?:never|don'?t|do not|without|ask|permission|approval|approve|confirm|check with|consent|go-ahead|okay|ok)\b")
            .expect("valid regex")
    });
    let rest = allows.replace_all(reading, " ");
    if asks.is_match(&rest) {
        Some(Stance::Ask)
    } else if rest.len() != reading.len() {
        Some(Stance::Allow)
    } else {
        None
    }
}

/// The acts a rule is about (none for a rule about style or language), with its stance.
fn acts(rule: &str) -> (BTreeSet<Kind>, Option<Stance>) {
    const ACTS: &[Kind] = &[
        Kind::ForcePush,
        Kind::HistoryRewrite,
        Kind::RecursiveDelete,
        Kind::DropData,
        Kind::Publish,
        Kind::GitConfig,
        Kind::GitHooks,
        Kind::Ci,
        Kind::PackageSource,
        Kind::ShellStartup,
        Kind::AgentConfig,
        Kind::SecretFile,
    ];
    let reading = shell_reading(rule);
    let Some(stance) = stance(&reading) else {
        return (BTreeSet::new(), None);
    };
    let mut named = kinds_named(&reading);
    // `force-push` names a push, not a history rewrite of one's own.
    if named.contains(&Kind::ForcePush) {
        named.remove(&Kind::HistoryRewrite);
    }
    let kinds = named.into_iter().filter(|k| ACTS.contains(k)).collect();
    (kinds, Some(stance))
}

/// The actions a standing rule asks permission for (or forbids): none for a rule about style or
/// language, and none for one that lets an act happen without asking. `Never force-push without
/// asking` guards force pushes; `feel free to force-push my branches` guards nothing.
pub fn guarded_kinds(rule: &str) -> BTreeSet<Kind> {
    match acts(rule) {
        (kinds, Some(Stance::Ask)) => kinds,
        _ => BTreeSet::new(),
    }
}

/// What a rule settles, in a form two rules can disagree on.
#[derive(Debug, PartialEq)]
enum Subject {
    /// The language of the answers (or of commit messages, or comments): `answer me in German`.
    Language { of: &'static str, language: String },
    /// Whether an act needs the user's word first.
    Act { kind: Kind, stance: Stance },
    /// One of a few interchangeable tools: `always use pnpm`.
    Choice { among: &'static str, pick: String },
    /// Anything else, by its words, and whether it forbids: `always use tabs` / `never use tabs`.
    Words {
        words: BTreeSet<String>,
        forbids: bool,
    },
}

const LANGUAGES: &str = "english|german|deutsch|french|spanish|italian|portuguese|dutch|polish|russian|ukrainian|czech|swedish|norwegian|danish|finnish|turkish|greek|hungarian|romanian|chinese|mandarin|japanese|korean|hindi|arabic|hebrew|vietnamese|indonesian|thai";

/// Interchangeable tools: a rule that picks one of them settles the choice.
const CHOICES: &[(&str, &[&str])] = &[
    ("indentation", &["tabs", "spaces"]),
    ("js package manager", &["npm", "pnpm", "yarn", "bun"]),
    (
        "python installer",
        &["pip", "poetry", "uv", "pipenv", "conda"],
    ),
    ("quotes", &["single quotes", "double quotes"]),
];

/// What one rule settles, worked out once so that many rules can be compared pairwise.
#[derive(Debug)]
pub struct Settles(Vec<Subject>);

impl Settles {
    pub fn of(rule: &str) -> Self {
        Settles(subjects(rule))
    }

    /// Do the two rules disagree: the same subject settled two ways?
    pub fn conflicts_with(&self, other: &Settles) -> bool {
        self.0
            .iter()
            .any(|x| other.0.iter().any(|y| disagree(x, y)))
    }
}

fn subjects(rule: &str) -> Vec<Subject> {
    static LANGUAGE: OnceLock<Regex> = OnceLock::new();
    let language = LANGUAGE
        .get_or_init(|| Regex::new(&format!(r"\bin ({LANGUAGES})\b")).expect("valid regex"));
    static FORBIDS: OnceLock<Regex> = OnceLock::new();
    let forbids =
        FORBIDS.get_or_init(|| Regex::new(r"\b(?:never|don'?t|do not|no)\b").expect("valid regex"));
    let t = fold(rule);
    let mut out = Vec::new();
    if let Some(m) = language.captures(&t) {
        let of = if t.contains("commit") {
            "commit messages"
        } else if t.contains("comment") {
            "code comments"
        } else {
            "answers"
        };
        let language = match &m[1] {
            "deutsch" => "german".to_string(),
            "mandarin" => "chinese".to_string(),
            l => l.to_string(),
        };
        out.push(Subject::Language { of, language });
    }
    let (kinds, stance) = acts(rule);
    if let Some(stance) = stance {
        out.extend(kinds.into_iter().map(|kind| Subject::Act { kind, stance }));
    }
    let forbidden = forbids.is_match(&t);
    // The tool a rule picks: named, and not just after a `never`/`not`/`no` (`pnpm, never npm`
    // picks pnpm).
    let words: Vec<&str> = t
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let picked = |pick: &str| {
        let parts: Vec<&str> = pick.split(' ').collect();
        words.windows(parts.len()).enumerate().any(|(i, w)| {
            w == parts.as_slice()
                && !words[i.saturating_sub(2)..i].iter().any(|b| {
                    matches!(
                        *b,
                        "never" | "not" | "no" | "don't" | "dont" | "avoid" | "instead"
                    )
                })
        })
    };
    for (among, picks) in CHOICES {
        let named: Vec<&&str> = picks.iter().filter(|p| picked(p)).collect();
        if let [pick] = named.as_slice() {
            out.push(Subject::Choice {
                among,
                pick: pick.to_string(),
            });
        }
    }
    out.push(Subject::Words {
        words: content_words(&t),
        forbids: forbidden,
    });
    out
}

/// The words that say what a rule is about: not its polarity, not the person, not glue.
fn content_words(folded: &str) -> BTreeSet<String> {
    const GLUE: &[&str] = &[
        "always", "never", "don't", "dont", "not", "please", "the", "and", "for", "you", "your",
        "when", "with", "without", "before", "after", "first", "ask", "asking", "any", "all",
        "every", "from", "now", "even", "also", "want", "wants", "need", "should", "must", "can",
        "may", "use", "using", "user", "that", "this", "them", "they", "into", "onto", "unless",
        "i'm", "i've", "myself", "are", "was", "our", "its", "it's",
    ];
    folded
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-' || c == '.'))
        .map(|w| w.trim_matches(|c: char| c == '.' || c == '\'' || c == '-'))
        .filter(|w| w.chars().count() >= 3 && !GLUE.contains(w))
        .map(str::to_string)
        .collect()
}

fn disagree(x: &Subject, y: &Subject) -> bool {
    match (x, y) {
        (
            Subject::Language { of, language },
            Subject::Language {
                of: of2,
                language: language2,
            },
        ) => of == of2 && language != language2,
        (
            Subject::Act { kind, stance },
            Subject::Act {
                kind: k2,
                stance: s2,
            },
        ) => kind == k2 && stance != s2,
        (
            Subject::Choice { among, pick },
            Subject::Choice {
                among: a2,
                pick: p2,
            },
        ) => among == a2 && pick != p2,
        (
            Subject::Words { words, forbids },
            Subject::Words {
                words: w2,
                forbids: f2,
            },
        ) => {
            // Nearly the same words, one forbidding what the other asks for.
            let shared = words.intersection(w2).count();
            let all = words.union(w2).count();
            forbids != f2 && words.len() >= 2 && w2.len() >= 2 && shared * 5 >= all * 3
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Do two standing rules disagree: the same subject settled two ways? (`Answer me in German` and
    /// `answer in English`; `never force-push without asking me` and `force-push my feature branches
    /// freely, no need to ask`; `always use pnpm` and `always use yarn`; `always use tabs` and `never
    /// use tabs`.) Rules on different subjects never conflict, however they are worded.
    fn conflicts(a: &str, b: &str) -> bool {
        Settles::of(a).conflicts_with(&Settles::of(b))
    }

    #[test]
    fn standing_rules_are_the_users_wishes_and_guard_what_they_name() {
        for rule in [
            "Always answer me in German, even when I write in English",
            "Never force-push without asking me first",
            "Ask me before you delete any migration",
            "I never want packages published without my approval",
        ] {
            assert!(standing_rule(rule), "{rule}");
        }
        for fact in [
            "The user prefers uv over pip for installing Python packages",
            "We chose Postgres over SQLite because of concurrent writers",
            "Always run cargo fmt before committing; CI fails on any diff.",
            "The parser lives in src/parse.rs",
        ] {
            assert!(!standing_rule(fact), "{fact}");
        }
        assert_eq!(
            guarded_kinds("Never force-push without asking me first"),
            BTreeSet::from([Kind::ForcePush])
        );
        assert!(guarded_kinds("Always answer me in German").is_empty());
        assert!(
            guarded_kinds("I never want packages published without my approval")
                .contains(&Kind::Publish)
        );
        assert_eq!(
            guarded_kinds("Ask me before you delete any migration"),
            BTreeSet::from([Kind::RecursiveDelete])
        );
    }

    #[test]
    fn a_rule_that_lets_an_act_happen_guards_nothing() {
        for allows in [
            "Feel free to force-push my feature branches without asking me",
            "You can force-push my own branches, no need to ask",
            "Don't ask me before deleting build directories",
            "It's fine to publish the docs site without my approval",
        ] {
            assert!(guarded_kinds(allows).is_empty(), "{allows}");
            assert_eq!(acts(allows).1, Some(Stance::Allow), "{allows}");
        }
        // A prohibition stays one, however it mentions asking.
        for asks in [
            "Never force-push without asking me",
            "You can delete build output, but ask me before deleting migrations",
            "Don't publish packages without my ok",
        ] {
            assert!(!guarded_kinds(asks).is_empty(), "{asks}");
        }
    }

    #[test]
    fn rules_conflict_only_when_they_settle_one_subject_two_ways() {
        for (project, personal) in [
            (
                "Answer me in English in this project",
                "Always answer me in German, even when I write in English",
            ),
            (
                "You can force-push my feature branches here without asking",
                "Never force-push without asking me first",
            ),
            (
                "Always use yarn for me here",
                "I always want pnpm, never npm",
            ),
            ("Always use tabs for my code", "Never use tabs for my code"),
            (
                "Write my commit messages in English",
                "Write my commit messages in German",
            ),
        ] {
            assert!(conflicts(project, personal), "{project} / {personal}");
            assert!(conflicts(personal, project), "{personal} / {project}");
        }
        for (project, personal) in [
            (
                "Never force-push without asking me first",
                "Always answer me in German",
            ),
            (
                "Write my commit messages in English",
                "Always answer me in German",
            ),
            (
                "Never force-push without asking me first",
                "Ask me before you delete any migration",
            ),
            (
                "Ask me before publishing anything",
                "Never publish packages without my approval",
            ),
            ("Always use tabs for my code", "Always answer me in German"),
            (
                "Always answer me in German",
                "Always answer me in German, even when I write in English",
            ),
        ] {
            assert!(!conflicts(project, personal), "{project} / {personal}");
        }
    }
}
