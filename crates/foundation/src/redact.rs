//! Secret redaction, applied to every field on every write (`Store::insert`) and again on every way
//! out (printed records, exports, `sync push`, hook injection). The store is shared across machines
//! by `sync`, so nothing secret may reach it.
//!
//! Token shapes follow gitleaks' published default rule set (config/gitleaks.toml, v8): the rules
//! `aws-access-token`, `gcp-api-key`, `github-pat`, `github-oauth`, `github-app-token`,
//! `github-refresh-token`, `github-fine-grained-pat`, `gitlab-pat` (and the other `gl*-` GitLab
//! token rules, `gitlab-pat-routable`), `slack-bot-token`, `slack-user-token`, `slack-app-token`,
//! `slack-legacy-*`, `slack-webhook-url`, `stripe-access-token`, `sendgrid-api-token`,
//! `twilio-api-key`, `openai-api-key`, `anthropic-api-key`, `anthropic-admin-api-key`,
//! `npm-access-token`, `pypi-upload-token`, `jwt`, `private-key`, `curl-auth-header` and the
//! idea of `generic-api-key` (a secret-named identifier, an assignment operator, a value, with an
//! allow list for names such as `*_id`, `*_url`, `key_length`, `public_key`). The shapes are
//! deliberately a little looser than gitleaks' (prefix plus a minimum length instead of an exact
//! length), because here a miss is a leak to every teammate while a false hit only hides a
//! string. Not in gitleaks, written here: Azure `AccountKey=`/`SharedAccessKey=`/SAS `sig=`,
//! Discord webhooks, Twilio auth tokens next to an `AC…` account sid, AWS secret access keys in
//! context, credentials in URLs (with and without a user), `Authorization: Basic`, passwords in
//! prose, and the high-entropy fallback for unknown tokens.
//!
//! Every rule replaces only the secret itself with `[REDACTED:<kind>]`, so the variable name,
//! the URL host or the header name stays readable. A value that already is a marker is left
//! alone, so `redact` is idempotent.

use regex::Regex;
use std::sync::OnceLock;

/// What a rule found: the byte range of the secret in the text and its kind.
type Found = Option<(std::ops::Range<usize>, &'static str)>;

struct SecretRule {
    kind: &'static str,
    regex: Regex,
    /// Decides on one match: `None` leaves it alone. The default redacts group 1, else the match.
    decide: fn(&regex::Captures, &str, &'static str) -> Found,
    /// After a rejected match, look again from its next character (rules whose candidates can
    /// overlap, such as `note:password=…`); otherwise skip the whole match.
    rescan: bool,
}

/// Redact group 1 when it exists and matched, else the whole match.
fn group_or_all(caps: &regex::Captures, _text: &str, kind: &'static str) -> Found {
    let m = caps.get(1).or_else(|| caps.get(0))?;
    Some((m.range(), kind))
}

fn has_digit(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

fn has_upper(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_uppercase())
}

fn has_lower(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_lowercase())
}

/// Keys with `sk-` (OpenAI, Anthropic): random, so they hold a digit; `sk-learn-style-words` do not.
fn sk_key(caps: &regex::Captures, text: &str, kind: &'static str) -> Found {
    let m = caps.get(0)?;
    if has_digit(m.as_str()) && (has_lower(m.as_str()) || has_upper(m.as_str())) {
        group_or_all(caps, text, kind)
    } else {
        None
    }
}

/// Mixed-case base64 (an AWS secret access key); a 40-hex git SHA has no upper case.
fn mixed_case_b64(caps: &regex::Captures, text: &str, kind: &'static str) -> Found {
    let s = caps.get(1)?.as_str();
    if has_upper(s) && has_lower(s) && (has_digit(s) || s.contains('/') || s.contains('+')) {
        group_or_all(caps, text, kind)
    } else {
        None
    }
}

/// `Basic <b64>` outside an `Authorization:` header: only when it decodes to `user:password`.
fn basic_credentials(caps: &regex::Captures, text: &str, kind: &'static str) -> Found {
    let decoded = base64_decode(caps.get(1)?.as_str())?;
    let s = String::from_utf8(decoded).ok()?;
    if s.contains(':') && !s.chars().any(char::is_control) {
        group_or_all(caps, text, kind)
    } else {
        None
    }
}

/// A bearer token outside a header: long, with a digit (not "Bearer token authentication").
fn bearer_token(caps: &regex::Captures, text: &str, kind: &'static str) -> Found {
    let s = caps.get(1)?.as_str();
    if s.len() >= 16 && has_digit(s) && (has_lower(s) || has_upper(s)) {
        group_or_all(caps, text, kind)
    } else {
        None
    }
}

/// Standard or URL-safe base64, padding optional; `None` when it is not base64.
pub(crate) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// How a name (variable, key, header) relates to secrets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameClass {
    /// `password`, `*_SECRET`, `*_TOKEN`, `api_key`, ...: any real value is a secret.
    Strong(&'static str),
    /// `*_KEY`: a secret only when the value looks random (`sort_key: created_at` is not).
    Weak,
    None,
}

/// The words of an identifier, lower-cased: `dbPassword` / `DB_PASSWORD` / `db.password` give
/// `["db", "password"]`.
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Last words that make a secret-sounding name harmless (gitleaks' generic-api-key allow list:
/// `key_length`, `secret_name`, `token_url`, `api_version`, ...).
const HARMLESS_LAST_WORDS: &[&str] = &[
    "ttl",
    "timeout",
    "expiry",
    "expires",
    "expiration",
    "lifetime",
    "age",
    "length",
    "len",
    "size",
    "count",
    "max",
    "min",
    "limit",
    "id",
    "ids",
    "url",
    "uri",
    "endpoint",
    "host",
    "port",
    "path",
    "file",
    "dir",
    "name",
    "names",
    "type",
    "header",
    "prefix",
    "version",
    "enabled",
    "disabled",
    "required",
    "policy",
    "algorithm",
    "alg",
    "field",
    "param",
    "format",
    "kind",
    "mode",
    "source",
    "env",
    "var",
    "bucket",
    "reset",
    "rotation",
    "provider",
    "store",
    "manager",
    "strength",
    "hint",
    "prompt",
    "label",
    "placeholder",
    "pattern",
    "regex",
    "validation",
    "usage",
    "scope",
    "scopes",
];

/// Words anywhere in a name that make it harmless.
const HARMLESS_WORDS: &[&str] = &["public", "publishable", "csrf", "xsrf", "bucket"];

fn classify_name(name: &str) -> NameClass {
    let words = name_words(name);
    let Some(last) = words.last() else {
        return NameClass::None;
    };
    if HARMLESS_LAST_WORDS.contains(&last.as_str())
        || words.iter().any(|w| HARMLESS_WORDS.contains(&w.as_str()))
    {
        return NameClass::None;
    }
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    let pair = |a: &str, b: &str| w.windows(2).any(|p| p[0] == a && p[1] == b);
    if w.iter().any(|x| {
        matches!(*x, "passphrase" | "pwd" | "pass" | "passwords")
            || x.ends_with("password")
            || x.ends_with("passwd")
    }) {
        return NameClass::Strong("password");
    }
    if w.iter().any(|x| {
        matches!(
            *x,
            "secrets" | "tokens" | "privatekey" | "credential" | "credentials" | "creds"
        ) || x.ends_with("secret")
            || x.ends_with("token")
            || x.ends_with("apikey")
    }) || pair("api", "key")
        || pair("access", "key")
        || pair("private", "key")
        || pair("auth", "key")
        || pair("signing", "key")
        || pair("encryption", "key")
        || pair("master", "key")
    {
        return NameClass::Strong("secret");
    }
    if *last == "key" {
        return NameClass::Weak;
    }
    NameClass::None
}

/// Words that, right after "password is", describe the password instead of being it.
const NOT_A_PASSWORD: &[&str] = &[
    "a",
    "an",
    "the",
    "not",
    "no",
    "now",
    "in",
    "on",
    "at",
    "for",
    "from",
    "to",
    "of",
    "by",
    "with",
    "and",
    "or",
    "but",
    "it",
    "this",
    "that",
    "here",
    "there",
    "below",
    "above",
    "same",
    "different",
    "correct",
    "wrong",
    "invalid",
    "valid",
    "empty",
    "blank",
    "missing",
    "set",
    "unset",
    "stored",
    "required",
    "optional",
    "mandatory",
    "weak",
    "strong",
    "long",
    "short",
    "ok",
    "okay",
    "fine",
    "good",
    "bad",
    "secret",
    "secure",
    "insecure",
    "unknown",
    "known",
    "hidden",
    "visible",
    "gone",
    "new",
    "old",
    "too",
    "still",
    "also",
    "only",
    "always",
    "never",
    "what",
    "which",
    "one",
    "ours",
    "yours",
    "mine",
    "theirs",
    "his",
    "hers",
    "its",
    "their",
    "your",
    "my",
    "our",
    "see",
    "use",
    "none",
    "null",
    "nil",
    "true",
    "false",
    "undefined",
    "str",
    "string",
    "bool",
    "boolean",
    "number",
    "int",
    "integer",
    "bytes",
    "text",
    "any",
    "object",
    "secretstring",
    "password",
    "token",
    "key",
    "value",
    "tbd",
    "todo",
    "n/a",
    "na",
    "changeme",
];

/// A value that is not a real secret: a reference to one (`${DB_PASSWORD}`, `$TOKEN`,
/// `process.env.X`, `<your-token>`), a mask (`***`, `xxxx`), an earlier marker, a literal.
fn is_placeholder(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    v.is_empty()
        || !v.chars().any(|c| c.is_alphanumeric())
        || v.contains("[REDACTED")
        || v.starts_with('$')
        || v.starts_with('%')
        || v.starts_with('<')
        || v.starts_with("{{")
        || v.starts_with("#{")
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("os.getenv")
        || lower.starts_with("env(")
        || lower.starts_with("env.")
        || lower.starts_with("secrets.")
        || lower.starts_with("vault:")
        || v.chars().all(|c| c == v.chars().next().unwrap_or(' '))
        || matches!(
            lower.as_str(),
            "null" | "none" | "nil" | "true" | "false" | "undefined" | "n/a" | "tbd" | "todo"
        )
}

/// A file system path (`/home/dev/app`, `~/.ssh`, `./keys`), e.g. the value of `pwd:`.
fn looks_like_path(v: &str) -> bool {
    v.starts_with('/') || v.starts_with("~/") || v.starts_with("./") || v.starts_with("../")
}

/// Strong evidence without context: three of lower, upper, digit, symbol (`Tr0ub4dor&3`), or
/// random-looking.
fn looks_like_strong_password(v: &str) -> bool {
    let classes = [
        has_lower(v),
        has_upper(v),
        has_digit(v),
        v.chars().any(|c| !c.is_alphanumeric()),
    ];
    (v.len() >= 8 && classes.iter().filter(|&&b| b).count() >= 3) || looks_random(v)
}

/// A bare value that is code, not a literal: `config.api_key`, `get_token()`, `user_password`,
/// `&str`, `Option<String>`.
fn looks_like_code(v: &str) -> bool {
    static IDENT: OnceLock<Regex> = OnceLock::new();
    let ident = IDENT.get_or_init(|| {
        Regex::new(
            r"^(?:[a-z_][a-z0-9_]*(?:(?:\.|::)[a-z_][a-z0-9_]*)+|[a-z]+(?:_[a-z]+)+|self\.\w+)$",
        )
        .unwrap()
    });
    v.contains('(')
        || v.starts_with('&')
        || v.contains('<')
        || v.ends_with('[')
        || v.contains("::")
        || (ident.is_match(v) && !has_digit(v))
        || v.starts_with("Option")
        || v.starts_with("Vec")
}

/// Looks random enough to be a key even without a telling name.
fn looks_random(v: &str) -> bool {
    v.len() >= 16 && has_digit(v) && v.chars().any(|c| c.is_ascii_alphabetic()) && entropy(v) >= 3.0
}

/// Looks like a password rather than a word: a digit, a symbol, or an upper case letter inside.
fn looks_like_password(v: &str) -> bool {
    v.chars().count() >= 6
        && (has_digit(v)
            || v.chars().any(|c| !c.is_alphanumeric())
            || v.chars().skip(1).any(|c| c.is_ascii_uppercase()))
        && v.chars().any(|c| c.is_alphabetic())
}

/// An English word form that describes instead of naming (`hashed`, `rotating`, `weekly`).
fn descriptive_word(v: &str) -> bool {
    let l = v.to_ascii_lowercase();
    l.chars().all(|c| c.is_ascii_alphabetic())
        && [
            "ed", "ing", "ly", "able", "ible", "ful", "less", "ive", "ous", "ment", "tion",
        ]
        .iter()
        .any(|s| l.len() > s.len() + 2 && l.ends_with(s))
}

/// Is the rest of the line after `end` only closing punctuation (the value ends the clause)?
fn ends_clause(text: &str, end: usize, allow_period: bool) -> bool {
    let rest = &text[end..];
    let line = rest.split('\n').next().unwrap_or("");
    let closing = |c: char| c.is_whitespace() || matches!(c, ',' | ')' | ']' | '}' | ';');
    if line.chars().all(closing) {
        return true;
    }
    allow_period && {
        let t = line.trim_start_matches(closing);
        t.strip_prefix(['.', '!', '?', ';', ','])
            .is_some_and(|after| {
                after
                    .chars()
                    .next()
                    .is_none_or(|c| c.is_whitespace() || c == '"' || c == '\'')
            })
    }
}

/// A bare value without the punctuation that ends its sentence (`swordfish.` → `swordfish`).
fn trim_trailing_punct(v: &str) -> &str {
    v.trim_end_matches(['.', ',', ';', ':', ')', ']', '}', '?'])
}

/// The value of an `name <op> value` capture: (range, quoted).
fn value_of(caps: &regex::Captures) -> Option<(std::ops::Range<usize>, bool)> {
    for g in ["dq", "sq", "bq"] {
        if let Some(m) = caps.name(g) {
            return Some((m.range(), true));
        }
    }
    let m = caps.name("bare")?;
    let kept = trim_trailing_punct(m.as_str()).len();
    Some((m.start()..m.start() + kept, false))
}

/// `NAME=value`, `name: value`, `"name": "value"`, `name => value`, `name := value` with a
/// secret-named identifier (gitleaks' generic-api-key idea, with its allow list).
fn assignment(caps: &regex::Captures, text: &str, _kind: &'static str) -> Found {
    let name = caps.name("name")?.as_str();
    let sep = caps.name("sep")?.as_str();
    let (range, quoted) = value_of(caps)?;
    let value = &text[range.clone()];
    if is_placeholder(value) {
        return None;
    }
    let env_style = name.chars().any(|c| c.is_ascii_uppercase())
        && !name.chars().any(|c| c.is_ascii_lowercase());
    let kind = match classify_name(name) {
        NameClass::None => return None,
        // `LICENSE_KEY=ABCD-EFGH-…` yes, `SORT_KEY=created_at` and `sort_key: name` no.
        NameClass::Weak => {
            let env_value = env_style
                && sep != ":"
                && value.len() >= 8
                && !value.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            return (env_value || looks_random(value)).then_some((range, "secret"));
        }
        NameClass::Strong(kind) => kind,
    };
    if value.eq_ignore_ascii_case(name)
        || (!quoted && (looks_like_code(value) || looks_like_path(value)))
    {
        return None;
    }
    let secret = if quoted || (sep != ":" && env_style) {
        true
    } else if sep != ":" {
        !NOT_A_PASSWORD.contains(&value.to_ascii_lowercase().as_str()) || has_digit(value)
    } else {
        // `name: value` is YAML, JSON, a header, or prose ("password: use the read-only role",
        // "Passwords: argon2id with m=19456"): a value that ends its line or sentence is the
        // secret; one followed by more words needs strong evidence.
        let word = value.to_ascii_lowercase();
        if ends_clause(text, range.end, true) {
            !NOT_A_PASSWORD.contains(&word.as_str()) && !descriptive_word(value)
        } else {
            looks_like_strong_password(value)
        }
    };
    secret.then_some((range, kind))
}

/// "the password is hunter2", "password for the admin account: Tr0ub4dor&3".
fn prose_password(caps: &regex::Captures, text: &str, kind: &'static str) -> Found {
    let mid = caps.name("mid").map_or("", |m| m.as_str());
    let mid_words = name_words(mid);
    if mid_words.iter().any(|w| {
        HARMLESS_LAST_WORDS.contains(&w.as_str())
            || matches!(
                w.as_str(),
                "flow"
                    | "form"
                    | "hash"
                    | "hashes"
                    | "rule"
                    | "rules"
                    | "requirement"
                    | "requirements"
                    | "complexity"
                    | "change"
                    | "changes"
                    | "input"
                    | "column"
                    | "check"
                    | "checks"
                    | "protected"
                    | "protection"
                    | "less"
                    | "based"
                    | "history"
                    | "expiry"
                    | "dialog"
                    | "page"
                    | "screen"
                    | "link"
                    | "email"
                    | "mail"
            )
    }) {
        return None;
    }
    let (range, quoted) = value_of(caps)?;
    let value = &text[range.clone()];
    if is_placeholder(value) || value.contains("://") || value.starts_with('/') {
        return None;
    }
    if quoted {
        return Some((range, kind));
    }
    let word = value.to_ascii_lowercase();
    if NOT_A_PASSWORD.contains(&word.as_str()) || looks_like_code(value) {
        return None;
    }
    if looks_like_password(value) {
        return Some((range, kind));
    }
    // A plain word: only "password is swordfish." with nothing between and nothing after.
    let direct = mid.trim().is_empty();
    (direct && !descriptive_word(value) && ends_clause(text, range.end, true))
        .then_some((range, kind))
}

/// "the api key is 9f8e…", "token: AbC123…": a token-ish word, then a random-looking value.
fn prose_token(caps: &regex::Captures, text: &str, kind: &'static str) -> Found {
    let (range, _) = value_of(caps)?;
    let value = &text[range.clone()];
    (!is_placeholder(value) && looks_random(value) && !value.contains("://"))
        .then_some((range, kind))
}

/// The high-entropy fallback: long mixed-case tokens with digits.
fn random_token(caps: &regex::Captures, _text: &str, kind: &'static str) -> Found {
    let m = caps.get(0)?;
    looks_like_random_token(m.as_str()).then_some((m.range(), kind))
}

fn secret_rules() -> &'static [SecretRule] {
    static RULES: OnceLock<Vec<SecretRule>> = OnceLock::new();
    RULES.get_or_init(|| {
        type Decide = fn(&regex::Captures, &str, &'static str) -> Found;
        let r = |kind: &'static str, re: &str, decide: Decide| SecretRule {
            kind,
            regex: Regex::new(re).unwrap_or_else(|e| panic!("secret rule {kind}: {e}")),
            decide,
            rescan: kind != "token",
        };
        let g: Decide = group_or_all;
        // Order matters: specific shapes first, so the generic rules see their markers.
        vec![
            // gitleaks private-key: the whole block, BEGIN to END (to the end if never closed).
            r(
                "private-key",
                r"(?s)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\z)",
                g,
            ),
            // gitleaks jwt (the signature may be empty: alg "none").
            r(
                "jwt",
                r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_/\\-]{8,}\.(?:[A-Za-z0-9_/\\-]{8,}={0,2})?",
                g,
            ),
            // gitleaks anthropic-api-key, anthropic-admin-api-key, openai-api-key (and older,
            // shorter `sk-` keys).
            r(
                "api-key",
                r"\bsk-(?:ant-(?:api|admin|sid)\d\d-|proj-|svcacct-|admin-|live-|test-)?[A-Za-z0-9_-]{20,}",
                sk_key,
            ),
            // gitleaks github-pat, github-oauth, github-app-token, github-refresh-token,
            // github-fine-grained-pat.
            r(
                "github-token",
                r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
                g,
            ),
            // gitleaks gitlab-pat, gitlab-pat-routable, gitlab-deploy-token, gitlab-rrt, ...
            r(
                "gitlab-token",
                r"\b(?:gl(?:pat|dt|ft|rt|soat|ffct|cbt|imt|oas|agent|ptt)-[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{9})?|GR1348941[A-Za-z0-9_-]{20,})",
                g,
            ),
            // gitleaks slack-webhook-url (path kept out, host kept readable).
            r(
                "slack-webhook",
                r"\bhooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9+/_-]{16,})",
                g,
            ),
            // gitleaks slack-bot-token, slack-user-token, slack-app-token, slack-legacy-*.
            r(
                "slack-token",
                r"\b(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+)",
                g,
            ),
            // Discord webhook: /api/webhooks/<id>/<token>.
            r(
                "discord-webhook",
                r"\b(?:discord(?:app)?\.com|discord\.gg)/api/webhooks/(\d{5,}/[A-Za-z0-9_-]{20,})",
                g,
            ),
            // gitleaks stripe-access-token; Stripe webhook signing secrets.
            r(
                "stripe-key",
                r"\b(?:(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{24,})",
                g,
            ),
            // gitleaks sendgrid-api-token: SG.<22>.<43>.
            r(
                "sendgrid-key",
                r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",
                g,
            ),
            // gitleaks twilio-api-key: SK + 32 hex.
            r("twilio-key", r"\bSK[0-9a-fA-F]{32}\b", g),
            // A Twilio auth token next to its account sid (`AC…:token`, `-u AC…:token`).
            r(
                "twilio-auth-token",
                r"\bAC[0-9a-f]{32}\b[^\n]{0,40}?\b([0-9a-f]{32})\b",
                g,
            ),
            r(
                "twilio-auth-token",
                r"(?i)\btwilio\b[^\n]{0,60}?\b([0-9a-f]{32})\b",
                g,
            ),
            // gitleaks npm-access-token and pypi-upload-token.
            r("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", g),
            r("pypi-token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}", g),
            // gitleaks gcp-api-key.
            r("gcp-api-key", r"\bAIza[A-Za-z0-9_-]{35}", g),
            // gitleaks aws-access-token (AWS's own documented EXAMPLE keys included).
            r(
                "aws-access-key",
                r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
                g,
            ),
            // Azure storage / Service Bus connection strings and SAS signatures.
            r(
                "azure-key",
                r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=([^;\s'`]{16,})",
                g,
            ),
            r("azure-key", r"[?&]sig=([A-Za-z0-9%+/=]{16,})", g),
            // Credentials in URLs, with or without a user: scheme://user:pass@host, scheme://:pass@host.
            r(
                "url-password",
                r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*:([^@\s/]+)@",
                g,
            ),
            // gitleaks curl-auth-header: Authorization / Proxy-Authorization headers.
            r(
                "auth-header",
                r#"(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:basic|bearer|token|digest|bot|apikey|sso-key)\s+([A-Za-z0-9+/=._~:-]{6,})"#,
                g,
            ),
            r(
                "auth-header",
                r"\b(?:Basic|BASIC|basic)\s+([A-Za-z0-9+/]{8,}={0,2})(?:[^A-Za-z0-9+/=]|\z)",
                basic_credentials,
            ),
            r(
                "auth-header",
                r"\b(?:Bearer|BEARER|bearer)\s+([A-Za-z0-9._~+/-]{16,}=*)",
                bearer_token,
            ),
            // An AWS secret access key (40 base64 chars) near "aws"/"secret access key".
            r(
                "aws-secret-key",
                r"(?i)\b(?:aws|amazon|secret[_ -]?access[_ -]?key)[^\n]{0,60}?(?:^|[^A-Za-z0-9/+=])((?-i)[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|\z)",
                mixed_case_b64,
            ),
            // `--password X`, `--token=X` on a command line.
            r(
                "password",
                r#"(?:^|\s)--(?:password|passwd|pass|token|api-key|secret|client-secret)(?:=|\s+)["']?([^\s"']+)"#,
                |caps, text, kind| {
                    let v = caps.get(1)?.as_str();
                    if !is_placeholder(v) && !v.starts_with('-') {
                        group_or_all(caps, text, kind)
                    } else {
                        None
                    }
                },
            ),
            // `.env`, YAML, JSON, code: a secret-named identifier assigned a value.
            r(
                "secret",
                r#"\b(?P<name>[A-Za-z_][A-Za-z0-9_.-]*?)["']?[ \t]*(?P<sep>:=|=>|\?=|=|:)[ \t]*(?:"(?P<dq>[^"\n]*)"|'(?P<sq>[^'\n]*)'|`(?P<bq>[^`\n]*)`|(?P<bare>[^\s"'`,;]+))"#,
                assignment,
            ),
            // Passwords in prose.
            r(
                "password",
                r#"(?i)\b(?:password|passwd|passphrase)\b(?P<mid>(?:[ \t]+[\w@.'-]+){0,4}?)(?:[ \t]+(?:is|was|is set to|was set to|set to|changed to|reset to|is now|now is|are)[ \t]+|[ \t]*[:=][ \t]*)(?:"(?P<dq>[^"\n]+)"|'(?P<sq>[^'\n]+)'|“(?P<bq>[^”\n]+)”|(?P<bare>[^\s"']+))"#,
                prose_password,
            ),
            // Tokens and keys in prose: only random-looking values.
            r(
                "secret",
                r#"(?i)\b(?:api[_ -]?key|access[_ -]?key|secret[_ -]?key|auth[_ -]?token|access[_ -]?token|token|secret|client[_ -]?secret)\b(?:[ \t]+(?:is|was|of|=|:))?[ \t]*[:=]?[ \t]*["']?(?P<bare>[A-Za-z0-9_+/=.~-]{16,})"#,
                prose_token,
            ),
            // The fallback: an unknown long random token.
            r("token", r"[A-Za-z0-9+/_=-]{32,}", random_token),
        ]
    })
}

/// Shannon entropy in bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = s.chars().count() as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// A long random-looking token (mixed case and digits, high entropy). Hex ids, UUIDs, git SHAs,
/// CamelCase identifiers, paths and integrity hashes (`sha512-…`) are left alone.
fn looks_like_random_token(t: &str) -> bool {
    let letters = t.chars().filter(|c| c.is_ascii_alphabetic()).count();
    let upper = t.chars().filter(|c| c.is_ascii_uppercase()).count();
    let lower = letters - upper;
    let basic = t.len() >= 32
        && has_digit(t)
        && upper * 5 >= letters
        && lower * 5 >= letters
        && entropy(t) >= 4.0;
    if !basic {
        return false;
    }
    // SSH public keys (wire format: the key type's length, then its name) are not secrets.
    if [
        "AAAAB3NzaC1",
        "AAAAC3NzaC1",
        "AAAAE2VjZHNh",
        "AAAAG3NrLXNzaC1",
    ]
    .iter()
    .any(|p| t.starts_with(p))
    {
        return false;
    }
    let lower_t = t.to_ascii_lowercase();
    if ["sha1-", "sha256-", "sha384-", "sha512-"]
        .iter()
        .any(|p| lower_t.starts_with(p))
    {
        return false;
    }
    if t.contains('/') {
        // A path: a word-like segment, or a leading/trailing slash.
        if t.starts_with('/') || t.ends_with('/') {
            return false;
        }
        let wordy = t.split('/').any(|seg| {
            seg.len() >= 2
                && seg
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-' || c == '_')
        });
        if wordy {
            return false;
        }
    }
    true
}

/// Replace secrets with `[REDACTED:<kind>]`, keeping what is around them (the variable name, the
/// URL host, the header name) readable. Idempotent.
pub fn redact(s: &str) -> String {
    let mut out = s.to_string();
    for rule in secret_rules() {
        out = apply_rule(rule, &out);
    }
    out
}

fn apply_rule(rule: &SecretRule, text: &str) -> String {
    if !rule.regex.is_match(text) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let (mut last, mut pos) = (0usize, 0usize);
    while pos <= text.len() {
        let Some(caps) = rule.regex.captures_at(text, pos) else {
            break;
        };
        let m = caps.get(0).expect("group 0");
        let found = (rule.decide)(&caps, text, rule.kind).filter(|(r, _)| {
            r.start >= last && r.end > r.start && !text[r.clone()].contains("[REDACTED:")
        });
        match found {
            Some((range, kind)) => {
                out.push_str(&text[last..range.start]);
                out.push_str("[REDACTED:");
                out.push_str(kind);
                out.push(']');
                last = range.end;
                pos = m.end().max(range.end).max(m.start() + 1);
            }
            // Not a secret: look again from the next character (a later, overlapping candidate
            // such as `note:password=…` must still be seen).
            None if rule.rescan => {
                pos = m.start() + text[m.start()..].chars().next().map_or(1, char::len_utf8)
            }
            None => pos = m.end().max(m.start() + 1),
        }
        while pos < text.len() && !text.is_char_boundary(pos) {
            pos += 1;
        }
    }
    out.push_str(&text[last..]);
    out
}

/// Redaction for a `key → value` pair (memory metadata): a value under a secret-named key is a
/// secret whatever it looks like; any other value goes through [`redact`]. Returns the cleaned
/// key and value.
pub fn redact_pair(key: &str, value: &str) -> (String, String) {
    let clean_key = redact(key);
    let v = value.trim();
    let whole = match classify_name(key) {
        NameClass::Strong(kind) if !is_placeholder(v) => Some(kind),
        NameClass::Weak if looks_random(v) => Some("secret"),
        _ => None,
    };
    match whole {
        Some(kind) => (clean_key, format!("[REDACTED:{kind}]")),
        None => (clean_key, redact(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacts(input: &str, kind: &str, secret: &str) {
        let out = redact(input);
        assert!(out.contains(&format!("[REDACTED:{kind}]")), "{kind}: {out}");
        assert!(!out.contains(secret), "{kind} leaked: {out}");
    }

    #[test]
    fn every_secret_kind_is_redacted() {
        redacts(
            "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx here",
            "api-key",
            "AbCdEfGhIjKlMnOp",
        );
        redacts(
            "OPENAI=sk-proj-abcdefghijklmnopqrstuvwx1234",
            "api-key",
            "abcdefghijklmnop",
        );
        redacts(
            "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github-token",
            "ghp_abcdef",
        );
        redacts(
            "aws AKIAIOSFODNN7EXAMPLE done",
            "aws-access-key",
            "AKIAIOSFODNN7EXAMPLE",
        );
        redacts(
            "slack xoxb-123456789012-abcdefghij",
            "slack-token",
            "xoxb-1234",
        );
        redacts(
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt",
            "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        );
        redacts(
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "private-key",
            "MIIEowIBAAKCAQEA",
        );
        redacts(
            "db postgres://app:s3cr3tPass@db:5432/app",
            "url-password",
            "s3cr3tPass",
        );
        redacts(
            "set password=hunter2hunter2 now",
            "password",
            "hunter2hunter2",
        );
        redacts(
            "x Zq8kP2mN7vR4tY6wB3cD9fG1hJ5kL0sA8xE end",
            "token",
            "Zq8kP2mN7vR4tY6wB3cD9fG1hJ5kL0sA8xE",
        );
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for s in [
            "Rotate the Postgres password for staging through Vault",
            "commit 3f2a9c7e1b4d5f60718293a4b5c6d7e8f9012345 fixed it",
            "id 6d3f2b9e-8c41-4a7e-b0d5-2f9a17c4e8b1",
            "see crates/storage/migrations/20240602120000_add_due_date.sql",
            "password: use the read-only role",
            "InvoiceRepository::next_invoice_number_for_tenant",
        ] {
            assert_eq!(redact(s), s);
        }
        assert_eq!(
            redact("url https://user:[REDACTED:url-password]@h"),
            "url https://user:[REDACTED:url-password]@h"
        );
    }

    /// `\n` is a newline, `\\n` a literal backslash-n (JSON-escaped PEM blocks).
    fn unescape(s: &str) -> String {
        s.replace("\\\\n", "\u{0}")
            .replace("\\n", "\n")
            .replace('\u{0}', "\\n")
    }

    fn corpus(name: &str) -> Vec<Vec<String>> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/redaction")
            .join(name);
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| l.split('\t').map(unescape).collect())
            .collect()
    }

    /// testdata/redaction: every fake secret is gone (and its surroundings stay), every
    /// look-alike comes through unchanged, and redaction is idempotent.
    #[test]
    fn redaction_corpus_has_no_leaks_and_no_false_redactions() {
        let secrets = corpus("secrets.txt");
        let kinds: std::collections::HashSet<&str> =
            secrets.iter().map(|r| r[0].as_str()).collect();
        assert!(secrets.len() >= 40 && kinds.len() >= 25, "corpus too small");
        let mut failures = Vec::new();
        for row in &secrets {
            let (kind, secret, text) = (&row[0], &row[1], &row[2]);
            assert!(
                text.contains(secret.as_str()),
                "{kind}: secret not in its text"
            );
            let out = redact(text);
            if out.contains(secret.as_str()) || !out.contains("[REDACTED:") {
                failures.push(format!("LEAK {kind}: {out}"));
            }
            if let Some(keep) = row.get(3).filter(|k| !k.is_empty()) {
                if !out.contains(keep.as_str()) {
                    failures.push(format!("LOST {kind} context {keep:?}: {out}"));
                }
            }
            if redact(&out) != out {
                failures.push(format!("NOT IDEMPOTENT {kind}: {out}"));
            }
        }
        let look_alikes = corpus("look-alikes.txt");
        assert!(look_alikes.len() >= 30, "look-alike corpus too small");
        for row in &look_alikes {
            let out = redact(&row[1]);
            if out != row[1] {
                failures.push(format!("FALSE {}: {out}", row[0]));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// The eval dev set is real project prose: redaction must not touch any of it.
    #[test]
    fn eval_memories_are_not_redacted() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/eval/dev/memories.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let changed: Vec<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["content"].as_str().map(str::to_string))
            .map(|c| redact(&c))
            // A credential in a URL is redacted even in a dev-only compose URL.
            .filter(|out| {
                out.matches("[REDACTED:").count() != out.matches("[REDACTED:url-password]").count()
            })
            .collect();
        assert!(changed.is_empty(), "{}", changed.join("\n"));
    }

    #[test]
    fn metadata_pairs_are_redacted_by_key() {
        assert_eq!(
            redact_pair("db_password", "plainword"),
            ("db_password".into(), "[REDACTED:password]".into())
        );
        assert_eq!(
            redact_pair("apiKey", "anything at all"),
            ("apiKey".into(), "[REDACTED:secret]".into())
        );
        assert_eq!(
            redact_pair("original_id", "6d3f2b9e-8c41-4a7e-b0d5-2f9a17c4e8b1").1,
            "6d3f2b9e-8c41-4a7e-b0d5-2f9a17c4e8b1"
        );
        assert_eq!(redact_pair("token_ttl", "3600").1, "3600");
        assert_eq!(redact_pair("sort_key", "created_at").1, "created_at");
        assert_eq!(
            redact_pair("note", "see https://u:s3cr3tPass@h/x").1,
            "see https://u:[REDACTED:url-password]@h/x"
        );
        assert_eq!(
            redact_pair("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "x").0,
            "[REDACTED:github-token]"
        );
    }
}
