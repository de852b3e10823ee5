//! Failed commands, told apart and matched: what a shell command line runs (program, subcommand,
//! arguments), the line of its error output that says what went wrong, a signature for "the same
//! mistake", and whether a command about to run is close to one that failed.
//!
//! Used by the hooks: PostToolUseFailure stores one failure record per signature, PreToolUse
//! warns before a command close to a recorded failure runs (docs/user-guide.md, "Repeat mistakes").

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// What a command line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The program's file name (`cargo`, `pytest`, `test.sh`), or `python -m <module>`.
    pub program: String,
    /// The subcommand of programs that have them (`cargo test`, `git push`).
    pub subcommand: Option<String>,
    /// The remaining words, unquoted.
    pub args: Vec<String>,
}

impl Command {
    /// `program subcommand`, as the warning names it.
    pub fn head(&self) -> String {
        match &self.subcommand {
            Some(sub) => format!("{} {sub}", self.program),
            None => self.program.clone(),
        }
    }
}

/// Programs whose first plain word is a subcommand.
const WITH_SUBCOMMANDS: &[&str] = &[
    "apt",
    "apt-get",
    "brew",
    "bun",
    "bundle",
    "cargo",
    "composer",
    "conda",
    "deno",
    "docker",
    "docker-compose",
    "dotnet",
    "flutter",
    "gh",
    "git",
    "go",
    "gradle",
    "helm",
    "kubectl",
    "make",
    "mix",
    "mvn",
    "nix",
    "npm",
    "npx",
    "pip",
    "pip3",
    "pnpm",
    "poetry",
    "rails",
    "rake",
    "rustup",
    "swift",
    "systemctl",
    "terraform",
    "uv",
    "wt-memory",
    "yarn",
];

/// Options before a subcommand that take the next word as their value.
const OPTIONS_WITH_VALUES: &[&str] = &[
    "-C",
    "-c",
    "-f",
    "--git-dir",
    "--work-tree",
    "--manifest-path",
    "--file",
];

/// Words that only set up the command that follows them.
const WRAPPERS: &[&str] = &[
    "sudo", "time", "command", "exec", "nohup", "env", "nice", "xargs", "timeout",
];

/// Segments that only prepare the shell (`cd x && cargo test`): never the command that failed.
const SETUP: &[&str] = &[
    "cd", "pushd", "popd", "export", "source", ".", "set", "unset", "echo", "printf", "true",
    "false", ":", "sleep", "mkdir", "ls", "pwd", "clear",
];

/// Split a command line into its simple commands' words (quotes removed, operators `&&`, `||`,
/// `;`, `|`, `&` and newlines separating commands). Good enough for telling commands apart; not a
/// shell.
fn segments(line: &str) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let end_word = |word: &mut String, in_word: &mut bool, out: &mut Vec<Vec<String>>| {
        if *in_word {
            out.last_mut()
                .expect("one segment")
                .push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            // `2>&1` and `&>file` redirect: part of a word, not the end of a command.
            '&' if word.ends_with('>') || chars.peek() == Some(&'>') => {
                in_word = true;
                word.push(c);
            }
            ';' | '|' | '&' | '\n' => {
                end_word(&mut word, &mut in_word, &mut out);
                while chars.peek().is_some_and(|n| matches!(n, '|' | '&')) {
                    chars.next();
                }
                if !out.last().expect("one segment").is_empty() {
                    out.push(Vec::new());
                }
            }
            c if c.is_whitespace() => end_word(&mut word, &mut in_word, &mut out),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut out);
    out.retain(|s| !s.is_empty());
    out
}

/// A redirection word (`2>&1`, `>out.log`, `<in`), which says nothing of the command.
fn is_redirection(word: &str) -> bool {
    word.contains('>') || word.starts_with('<')
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The command of one segment, or None when it only prepares the shell.
fn command_of(words: &[String]) -> Option<Command> {
    // Without redirections and the files they name (`> out.log`, `2>&1`).
    let mut plain = Vec::with_capacity(words.len());
    let mut target_next = false;
    for w in words {
        if std::mem::take(&mut target_next) {
            continue;
        }
        if is_redirection(w) {
            target_next = w.ends_with('>') || w == "<";
        } else {
            plain.push(w.as_str());
        }
    }
    let mut rest = plain.into_iter();
    // Past assignments, wrappers and the wrappers' own options (`sudo -E`, `timeout 30`).
    let mut after_wrapper = false;
    let first = rest.find(|w| {
        let skip = is_assignment(w)
            || WRAPPERS.contains(w)
            || (after_wrapper
                && (w.starts_with('-') || w.chars().all(|c| c.is_ascii_digit() || c == 's')));
        after_wrapper |= WRAPPERS.contains(w);
        !skip
    })?;
    let program = first.rsplit('/').next().unwrap_or(first).to_string();
    if program.is_empty() || SETUP.contains(&program.as_str()) {
        return None;
    }
    let mut args: Vec<String> = rest.map(str::to_string).collect();
    let mut program = program;
    // `python -m pytest …` runs pytest.
    if program.starts_with("python") && args.first().is_some_and(|a| a == "-m") && args.len() > 1 {
        program = format!("python -m {}", args[1]);
        args.drain(..2);
    }
    let mut subcommand = None;
    if WITH_SUBCOMMANDS.contains(&program.as_str()) {
        // The first plain word that is not an option's value (`git -C dir push`, `cargo +nightly
        // test`: the options before the subcommand stay arguments).
        let at = (0..args.len()).find(|&i| {
            let word = &args[i];
            let value_of_option = i > 0 && OPTIONS_WITH_VALUES.contains(&args[i - 1].as_str());
            !word.starts_with(['-', '+'])
                && !value_of_option
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_:".contains(c))
        });
        if let Some(at) = at {
            subcommand = Some(args.remove(at));
        }
    }
    Some(Command {
        program,
        subcommand,
        args,
    })
}

/// What a command line runs: its first simple command that is not shell set-up.
pub fn parse(line: &str) -> Option<Command> {
    segments(line).iter().find_map(|s| command_of(s))
}

/// Lines of tool output that say nothing of the failure.
fn is_noise(line: &str) -> bool {
    let l = line.trim();
    l.is_empty()
        || l.starts_with("Exit code")
        || l.starts_with("Compiling ")
        || l.starts_with("Finished ")
        || l.starts_with("Running ")
        || l.starts_with("Downloading ")
        || l.starts_with("warning:")
        || l.starts_with("  --> ")
        || l.chars().all(|c| !c.is_alphanumeric())
}

const ERROR_WORDS: &[&str] = &[
    "error",
    "Error",
    "ERROR",
    "fatal",
    "FATAL",
    "FAILED",
    "failed",
    "panicked",
    "not found",
    "No such",
    "denied",
    "refused",
    "cannot",
    "Cannot",
    "unknown",
    "Unknown",
    "invalid",
    "Invalid",
    "missing",
    "timed out",
    "Traceback",
];

/// Lines that report that something failed without saying what: a runner's or wrapper's own
/// verdict (`Command failed with exit code 1`, `npm ERR! code ELIFECYCLE`, `make: *** [x] Error 2`,
/// `error: could not compile`). The line that names the error comes before or after them.
fn says_only_that_it_failed(line: &str) -> bool {
    let l = line.trim().to_ascii_lowercase();
    const VERDICTS: &[&str] = &[
        "exit code",
        "exit status",
        "exited with",
        "returned non-zero",
        "non-zero exit",
        "command failed",
        "elifecycle",
        "a complete log of this run",
        "make: ***",
        "make[",
        "could not compile",
        "build failed",
        "test failed, to rerun",
        "process completed with",
        "errors occurred",
        // Python's header before the frames; the exception's own line comes last.
        "traceback (most recent call last)",
    ];
    VERDICTS.iter().any(|v| l.contains(v))
}

/// The line of a failure's output that says what went wrong: the first that names an error and
/// is more than a verdict (the missing module or command, the failing test, the error code), else
/// the first verdict, else the first line that is not noise; at most 160 characters.
pub fn error_line(output: &str) -> Option<String> {
    let lines: Vec<&str> = output.lines().filter(|l| !is_noise(l)).collect();
    let names_error = |l: &&&str| ERROR_WORDS.iter().any(|w| l.contains(w));
    let line = lines
        .iter()
        .filter(|l| !says_only_that_it_failed(l))
        .find(names_error)
        .or_else(|| lines.iter().find(names_error))
        .or(lines.first())?;
    Some(crate::hygiene::truncate_chars(line.trim(), 160).to_string())
}

/// The error line with what varies between two runs of one mistake taken out: numbers, hex ids,
/// temporary paths.
fn normalized(error: &str) -> String {
    let mut out = String::with_capacity(error.len());
    let mut last_digit = false;
    for c in error.chars() {
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('#');
            }
            last_digit = true;
        } else {
            last_digit = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out.split_whitespace()
        .filter(|w| !w.starts_with("/tmp/"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One mistake's signature: the command's program and subcommand, and its error line without
/// what varies from run to run (16 hex digits).
pub fn signature(command: &Command, error: &str) -> String {
    let digest = Sha256::digest(format!("{}\n{}", command.head(), normalized(error)).as_bytes());
    format!("{digest:x}")[..16].to_string()
}

/// An argument list as (flags, values): words split at `=`, those starting with `-` are flags.
fn flags_and_values(c: &Command) -> (BTreeSet<&str>, BTreeSet<&str>) {
    let mut flags = BTreeSet::new();
    let mut values = BTreeSet::new();
    for word in c
        .args
        .iter()
        .flat_map(|a| a.split('='))
        .filter(|w| !w.is_empty())
    {
        if word.starts_with('-') {
            flags.insert(word);
        } else {
            values.insert(word);
        }
    }
    (flags, values)
}

/// More than half of the smaller set shared.
fn mostly_shared(a: &BTreeSet<&str>, b: &BTreeSet<&str>) -> bool {
    a.intersection(b).count() * 2 > a.len().min(b.len())
}

/// Is `next` close to `failed`: the same program and subcommand, and about the same things
/// (more than half of the smaller set of values shared: `-p auth` is not `-p billing`); with no
/// values to compare, the same flags; a bare command is close to any of its forms.
pub fn is_close(next: &Command, failed: &Command) -> bool {
    if next.program != failed.program || next.subcommand != failed.subcommand {
        return false;
    }
    if next.args.is_empty() || failed.args.is_empty() {
        return true;
    }
    let (next_flags, next_values) = flags_and_values(next);
    let (failed_flags, failed_values) = flags_and_values(failed);
    if !next_values.is_empty() && !failed_values.is_empty() {
        return mostly_shared(&next_values, &failed_values);
    }
    next_flags.is_empty() || failed_flags.is_empty() || mostly_shared(&next_flags, &failed_flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(line: &str) -> Command {
        parse(line).unwrap_or_else(|| panic!("{line}: no command"))
    }

    #[test]
    fn commands_are_found_behind_set_up_and_wrappers() {
        let c = cmd(
            "cd crates/auth && RUST_LOG=debug cargo test -p auth --features pg 2>&1 | tail -20",
        );
        assert_eq!(
            (c.program.as_str(), c.subcommand.as_deref()),
            ("cargo", Some("test"))
        );
        assert_eq!(c.args, ["-p", "auth", "--features", "pg"]);
        let c = cmd("source .venv/bin/activate; python -m pytest tests/test_api.py -x");
        assert_eq!(c.program, "python -m pytest");
        assert_eq!(c.subcommand, None);
        let c = cmd("sudo -E timeout 30 docker compose up -d");
        assert_eq!(
            (c.program.as_str(), c.subcommand.as_deref()),
            ("docker", Some("compose"))
        );
        let c = cmd("git -C ../other push origin main");
        assert_eq!(c.subcommand.as_deref(), Some("push"));
        let c = cmd("./scripts/test.sh --fast");
        assert_eq!(
            (c.program.as_str(), c.subcommand.as_deref()),
            ("test.sh", None)
        );
        let c = cmd(r#"git commit -m "fix: handle the empty list; finally""#);
        assert_eq!(c.args, ["-m", "fix: handle the empty list; finally"]);
        assert!(parse("cd /tmp && ls").is_none());
    }

    #[test]
    fn the_error_line_is_the_one_naming_the_error() {
        let out = "Exit code 101\n   Compiling auth v0.1.0\nerror[E0425]: cannot find function `hash_password` in module `auth`\n  --> src/lib.rs:4:5";
        assert_eq!(
            error_line(out).as_deref(),
            Some("error[E0425]: cannot find function `hash_password` in module `auth`")
        );
        assert_eq!(error_line("Exit code 1\n\n"), None);
        // The real client's `error` for `npm run build` (issue 43): the wrapper's verdict first,
        // the line that names the error after it.
        let npm = "Exit code 1\n\n> shopapp@0.4.0 build\n> vite build\n\nCommand failed with exit code 1\n\
                   Error: Cannot find module 'vite-plugin-checker'\nRequire stack:\n- /p/vite.config.ts\n\
                   npm ERR! code ELIFECYCLE\nnpm ERR! A complete log of this run can be found in: /r/x.log";
        assert_eq!(
            error_line(npm).as_deref(),
            Some("Error: Cannot find module 'vite-plugin-checker'")
        );
        let missing = "Exit code 127\nmake: *** [Makefile:12: lint] Error 127\n/bin/sh: 1: golangci-lint: not found";
        assert_eq!(
            error_line(missing).as_deref(),
            Some("/bin/sh: 1: golangci-lint: not found")
        );
        let pytest = "Exit code 1\nFAILED tests/test_auth.py::test_login - AssertionError: 401 != 200\nerror: Process completed with exit code 1";
        assert_eq!(
            error_line(pytest).as_deref(),
            Some("FAILED tests/test_auth.py::test_login - AssertionError: 401 != 200")
        );
        let python = "Exit code 1\nTraceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nModuleNotFoundError: No module named 'jobqueue_ext'";
        assert_eq!(
            error_line(python).as_deref(),
            Some("ModuleNotFoundError: No module named 'jobqueue_ext'")
        );
        // Only a verdict: it is what there is.
        assert_eq!(
            error_line("Exit code 2\nCommand failed with exit code 2").as_deref(),
            Some("Command failed with exit code 2")
        );
        assert_eq!(
            error_line("Exit code 2\nsomething odd").as_deref(),
            Some("something odd")
        );
    }

    #[test]
    fn one_mistake_one_signature() {
        let a = cmd("cargo test -p auth");
        let b = cmd("cargo test -p auth --release");
        let e1 = "error: could not connect to server at 127.0.0.1:5432 (pid 4411)";
        let e2 = "error: could not connect to server at 127.0.0.1:5433 (pid 977)";
        assert_eq!(signature(&a, e1), signature(&b, e2));
        assert_ne!(signature(&a, e1), signature(&cmd("cargo build"), e1));
        assert_ne!(
            signature(&a, e1),
            signature(&a, "error: linker `cc` not found")
        );
    }

    #[test]
    fn close_means_same_program_subcommand_and_mostly_the_same_arguments() {
        let failed = cmd("cargo test -p auth --features postgres");
        assert!(is_close(
            &cmd("cargo test -p auth --features postgres --release"),
            &failed
        ));
        assert!(is_close(&cmd("cargo test --features=postgres"), &failed));
        assert!(!is_close(
            &cmd("cargo test -p billing --features postgres"),
            &cmd("cargo test -p auth")
        ));
        assert!(is_close(&cmd("cargo test"), &failed));
        assert!(!is_close(
            &cmd("cargo test -p billing --features sqlite"),
            &failed
        ));
        assert!(!is_close(
            &cmd("cargo build -p auth --features postgres"),
            &failed
        ));
        assert!(!is_close(&cmd("npm test"), &failed));
    }
}
