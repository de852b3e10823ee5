//! Which programs a shell command runs, and which of them are known to be harmless.
//!
//! A list of what is sensitive is never complete: every red-team round found programs it did not
//! know (`tofu destroy`, `supabase db reset`, `goreleaser`, `npx -y pkg`, `systemd-run`). So the
//! gate also reads a command the other way round: every program it runs must be one known to
//! change nothing outside the project and reach nothing outside this machine (a reader, the
//! project's own scripts, a toolchain's build/test/lint/format subcommands, git's local work).
//! Any other program is a sensitive part of the call (kind `program`), stopped when the session
//! was shown memories that are not the user's and the user did not name it.

use std::sync::OnceLock;

use regex::Regex;

/// One simple command: its program (base name, folded) and its words after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Simple {
    pub program: String,
    /// The program as written (`bin/console`): a path says whose it is.
    pub path: String,
    pub args: Vec<String>,
}

/// The simple commands of a folded, unquoted command line: split at `;`, `&&`, `||`, `|`, `&`,
/// newlines and subshells; leading assignments and wrappers (`sudo`, `env`, `time`, `nohup`,
/// `exec`, `xargs`, …) stepped over, so `xargs rm -rf` runs `rm`.
pub fn simple_commands(folded: &str) -> Vec<Simple> {
    let mut out = Vec::new();
    for segment in segments(folded) {
        let mut words = segment.split_whitespace().peekable();
        // A wrapper's flag that takes a value (`xargs -n 1`, `env -u VAR`, `sudo -u root`), and
        // `timeout`'s duration: not the program.
        let mut value_next = false;
        // `$(…)` leaves a bare `$`.
        while let Some(w) = words.peek() {
            let w = *w;
            if std::mem::take(&mut value_next) && !w.starts_with('-') {
                words.next();
                continue;
            }
            value_next = w == "timeout"
                || matches!(
                    w,
                    "-n" | "-i"
                        | "-d"
                        | "-p"
                        | "-l"
                        | "-s"
                        | "-a"
                        | "-e"
                        | "-u"
                        | "-c"
                        | "-g"
                        | "-h"
                );
            // A version manager's prefix before its toolchain (`fvm flutter test`, `mise exec --
            // npm test`): the toolchain is the program.
            let mut ahead = words.clone().skip(1);
            let version_manager = match w {
                "fvm" => matches!(ahead.next(), Some("flutter" | "dart")),
                // Not when its tools come from a backend (`mise x ubi:owner/tool -- …`).
                "mise" | "asdf" | "rbenv" | "pyenv" | "nodenv" | "fnm" => {
                    matches!(ahead.next(), Some("exec" | "x"))
                        && !words
                            .clone()
                            .skip(2)
                            .take_while(|x| *x != "--")
                            .any(|x| x.contains([':', '/']))
                }
                _ => false,
            };
            if version_manager {
                words.next();
                if !matches!(w, "fvm") {
                    words.next();
                    // `mise exec node@20 -- npm test`: its tools, then `--`.
                    if words.clone().take(3).any(|x| x == "--") {
                        while words.next().is_some_and(|x| x != "--") {}
                    }
                }
                continue;
            }
            let wrapper = matches!(
                w,
                "$" | "!"
                    | "sudo"
                    | "doas"
                    | "env"
                    | "time"
                    | "nohup"
                    | "nice"
                    | "exec"
                    | "command"
                    | "builtin"
                    | "then"
                    | "do"
                    | "else"
                    | "elif"
                    | "if"
                    | "while"
                    | "until"
                    | "xargs"
                    | "stdbuf"
                    | "timeout"
                    | "watch"
                    | "caffeinate"
            ) || (w.contains('=') && !w.starts_with('-') && !w.starts_with('='))
                // A wrapper's own flag (`sudo -u`): skipped with the wrapper.
                || w.starts_with('-');
            if !wrapper {
                break;
            }
            words.next();
        }
        let Some(first) = words.next() else { continue };
        let words: Vec<String> = words.map(|w| w.replace(QUOTED_SPACE, " ")).collect();
        let first = first.replace(QUOTED_SPACE, " ");
        let program = first.rsplit('/').next().unwrap_or(&first).to_string();
        if program.is_empty() || program.starts_with('#') {
            continue;
        }
        out.extend(run_by(Simple {
            program,
            path: first.clone(),
            args: words,
        }));
    }
    out
}

/// The commands a runner runs in its place (`bundle exec cap deploy`, `uv run pytest`, `npx
/// cross-env A=1 pulumi up`, `script -qc "ngrok http 80"`, `concurrently "a" "b"`, `php
/// vendor/bin/dep deploy`): a runner passes on whatever it is given, so what it runs is judged.
/// Any other command is itself.
fn run_by(cmd: Simple) -> Vec<Simple> {
    let args = &cmd.args;
    let first = args.first().map(String::as_str).unwrap_or("");
    // The command after a runner's own flags (`uv run --with httpx pytest`).
    let after_flags = |from: usize, valued: &[&str]| -> Vec<Simple> {
        let mut at = from;
        while let Some(a) = args.get(at) {
            if valued.contains(&a.as_str()) {
                at += 2;
            } else if a.starts_with('-') || a.contains('=') {
                at += 1;
            } else {
                break;
            }
        }
        match args.get(at..) {
            Some(rest) if !rest.is_empty() => simple_commands(&rest.join(" ")),
            _ => Vec::new(),
        }
    };
    let fetches = args.iter().any(|a| a == "-y" || a == "--yes");
    let inner = match (cmd.program.as_str(), first) {
        ("bundle" | "bundler", "exec") => after_flags(1, &["--gemfile"]),
        // `hatch run lint`: a script the project defines, like `npm run lint`.
        ("pdm" | "hatch" | "rye" | "pixi", "run")
            if args.iter().skip(1).filter(|a| !a.starts_with('-')).count() <= 1 =>
        {
            Vec::new()
        }
        // `appraisal rails-7 rspec`: a Gemfile's name, then the command.
        ("appraisal", _) => {
            let direct = after_flags(0, &[]);
            if direct.iter().all(|c| harmless(c, &|_| false)) {
                direct
            } else {
                after_flags(1, &[])
            }
        }
        ("uv" | "poetry" | "pipenv" | "pdm" | "hatch" | "rye" | "pixi", "run") => after_flags(
            1,
            &[
                "--with",
                "--from",
                "--python",
                "-p",
                "--env-file",
                "--group",
                "--extra",
                "--package",
                "--directory",
                "--project",
                "-e",
                "--environment",
            ],
        ),
        ("npm" | "pnpm" | "yarn" | "bun", "exec") if !fetches => after_flags(1, &["-c", "--call"]),
        ("cross-env" | "cross-env-shell" | "dotenv" | "env-cmd", _) => {
            after_flags(0, &["-e", "-f", "-c", "-v", "--file", "--environments"])
        }
        (
            "npx" | "pnpx" | "bunx",
            "cross-env" | "cross-env-shell" | "dotenv" | "env-cmd" | "concurrently",
        ) if !fetches => run_by(Simple {
            program: first.to_string(),
            path: first.to_string(),
            args: args[1..].to_vec(),
        }),
        // Each quoted command is one argument.
        ("concurrently", _) => args
            .iter()
            .filter(|a| !a.starts_with('-') && a.contains(' '))
            .flat_map(|a| simple_commands(a))
            .collect(),
        ("script", _) => args
            .iter()
            .position(|a| a.starts_with('-') && !a.starts_with("--") && a.ends_with('c'))
            .and_then(|at| args.get(at + 1))
            .map(|c| simple_commands(c))
            .unwrap_or_default(),
        // `php vendor/bin/dep deploy`: the script is the program.
        ("php", script) if script.contains('/') || script.ends_with(".phar") => {
            vec![Simple {
                program: script.rsplit('/').next().unwrap_or(script).to_string(),
                path: script.to_string(),
                args: args[1..].to_vec(),
            }]
        }
        _ => Vec::new(),
    };
    if inner.is_empty() {
        vec![cmd]
    } else {
        inner
    }
}

/// Verbs that read, check or build for any tool (`fly logs`, `argocd app get`, `aws eks
/// describe-cluster`, `ansible-vault view`, `tflint`): harmless whatever the program.
fn reads(word: &str) -> bool {
    const VERBS: &[&str] = &[
        "list",
        "ls",
        "get",
        "describe",
        "show",
        "view",
        "status",
        "logs",
        "log",
        "version",
        "--version",
        "-v",
        "-V",
        "help",
        "--help",
        "-h",
        "inspect",
        "info",
        "check",
        "lint",
        "validate",
        "diff",
        "plan",
        "fmt",
        "format",
        "test",
        "unittest",
        "doctor",
        "devices",
        "logcat",
        "whoami",
        "explain",
        "output",
        "outputs",
        "search",
        "outdated",
        "verify",
        "tail",
        "history",
        "top",
        "graph",
        "dag",
        "metrics",
        "plots",
        "params",
        "cat",
        "print",
        "dump-config",
        "env",
        "config-list",
    ];
    VERBS.contains(&word)
        || ["describe-", "list-", "get-", "show-", "view-"]
            .iter()
            .any(|p| word.starts_with(p))
}

/// Is `cmd` known to be harmless (`project_file`: does a path name a file of the project)?
pub fn harmless(cmd: &Simple, project_file: &dyn Fn(&str) -> bool) -> bool {
    let p = cmd.program.as_str();
    // The subcommand: the first word that is no flag (a flag's value may come first:
    // `kubectl --context kind-dev get pods`, so the first few are all looked at below).
    let words: Vec<&str> = cmd
        .args
        .iter()
        .filter(|a| !a.starts_with('-') || a.starts_with("--version") || a.as_str() == "-v")
        .map(String::as_str)
        .take(4)
        .collect();
    let sub = words.first().copied().unwrap_or("");
    let dry_run = cmd.args.iter().any(|a| {
        // `--dry-run=server` and `--dry-run=client` too; `--dry-run=none` acts.
        let (flag, value) = a.split_once('=').unwrap_or((a.as_str(), ""));
        matches!(
            flag,
            "--check" | "--dry-run" | "--dryrun" | "--snapshot" | "--whatif"
        ) && !matches!(value, "none" | "false" | "f" | "0" | "no" | "off")
    });
    // A rehearsal acts on nothing whatever it rehearses (`cargo publish --dry-run`, `goreleaser
    // release --snapshot`); a read verb beside an act's word may still be the act's object.
    if dry_run
        || words.iter().take(3).any(|w| reads(w))
            && !cmd.args.iter().any(|a| DANGER.contains(&a.as_str()))
    {
        return true;
    }
    // Permissions widened (`a+rwX`, `777`, setuid `u+s`) or changed recursively on a path
    // outside the project open its files to every user or run them as their owner: no reader.
    if p == "chmod" && widens_permissions(&cmd.args) {
        return false;
    }
    // `bash -c "…"`, `sh script.sh`: what it runs decides.
    if matches!(p, "bash" | "sh" | "zsh" | "dash" | "fish") {
        return match cmd.args.iter().position(|a| a == "-c") {
            Some(at) => cmd
                .args
                .get(at + 1..)
                .is_some_and(|rest| unknown_programs(&rest.join(" "), project_file).is_empty()),
            None => cmd
                .args
                .iter()
                .find(|a| !a.starts_with('-'))
                .is_some_and(|a| project_file(a) || project_file(&format!("./{a}"))),
        };
    }
    // The project's own scripts and binaries (`./scripts/dev.sh`, `bin/rails`, `./gradlew`); not
    // its dependencies' (`vendor/bin/dep`, `node_modules/.bin/x`), which are judged by name.
    let dependency = cmd.path.starts_with("vendor/") || cmd.path.contains("node_modules/");
    // `bin/rails runner CODE` runs whatever code it is given against the app's database.
    if p == "rails" && matches!(sub, "runner" | "r") {
        return false;
    }
    if !dependency
        && (project_file(p)
            || cmd.program.ends_with(".sh") && project_file(&cmd.program)
            || cmd.path.contains('/') && project_file(&cmd.path))
    {
        return true;
    }
    if READERS.contains(&p) || SHELL.contains(&p) {
        return true;
    }
    // A numeric word, a test bracket, a shell keyword: not a program.
    if p.chars().all(|c| c.is_ascii_digit() || c == '.')
        || matches!(
            p,
            "[" | "[["
                | "]"
                | "]]"
                | "fi"
                | "done"
                | "esac"
                | "in"
                | "for"
                | "case"
                | "break"
                | "continue"
        )
    {
        return true;
    }
    let has_any = |flags: &[&str]| {
        cmd.args.iter().any(|a| {
            let flag = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
            flags.contains(&flag)
        })
    };
    // A version manager's tool from a backend or a package (`mise use -g ubi:owner/tool`,
    // `volta install @scope/cli`) is a program from elsewhere, not a version of a toolchain.
    if matches!(
        p,
        "asdf" | "mise" | "nvm" | "fnm" | "volta" | "pyenv" | "rbenv" | "sdk"
    ) && (cmd.args.iter().any(|a| a.contains([':', '/']))
        || p == "volta"
            && sub == "install"
            && cmd.args.iter().skip(1).any(|a| {
                !a.starts_with('-')
                    && !["node", "npm", "yarn", "pnpm"].contains(&a.split('@').next().unwrap_or(""))
            }))
    {
        return false;
    }
    match p {
        "git" => git_harmless(sub, &cmd.args),
        "cargo" | "rustc" | "rustup" | "rustfmt" => {
            p != "cargo"
                || !matches!(
                    sub,
                    "publish" | "yank" | "owner" | "login" | "logout" | "install"
                )
                || (sub == "install"
                    && !cmd.args.iter().any(|a| {
                        a.starts_with("--git")
                            || a.starts_with("--registry")
                            || a.starts_with("--index")
                    }))
        }
        // A package manager runs the project's scripts by name (`pnpm web`): harmless but for
        // publishing, accounts, fetching a package to run, and settings.
        "npm" | "pnpm" | "yarn" | "bun" => {
            !(matches!(
                sub,
                "publish"
                    | "unpublish"
                    | "dist-tag"
                    | "deprecate"
                    | "owner"
                    | "access"
                    | "login"
                    | "adduser"
                    | "logout"
                    | "token"
                    | "dlx"
                    | "x"
                    | "create"
                    | "link"
                    | "set"
                    | "team"
                    | "org"
                    | "hook"
                    | "profile"
                    | "star"
                    | "config"
            ) || sub == "exec" && cmd.args.iter().any(|a| a == "-y" || a == "--yes"))
        }
        "python" | "python3" | "py" | "pypy3" => python_harmless(&cmd.args, project_file),
        "uv" | "poetry" | "pdm" | "hatch" | "pipenv" | "rye" => matches!(
            sub,
            "run"
                | "sync"
                | "lock"
                | "add"
                | "remove"
                | "install"
                | "update"
                | "build"
                | "tree"
                | "pip"
                | "venv"
                | "init"
                | "check"
                | "show"
                | "shell"
                | "env"
                | "version"
                | "export"
                | "test"
                | "fmt"
                | "lint"
        ),
        "pip" | "pip3" => matches!(
            sub,
            "install"
                | "list"
                | "show"
                | "freeze"
                | "check"
                | "uninstall"
                | "download"
                | "wheel"
                | "--version"
                | "-v"
        ),
        "pytest" | "tox" | "nox" | "mypy" | "pyright" | "ruff" | "black" | "isort" | "flake8"
        | "pylint" | "coverage" | "alembic" | "django-admin" | "jupyter" | "ipython"
        | "pre-commit" | "bandit" | "pydoc" => !(p == "pre-commit" && sub == "install"),
        "node" | "deno" | "tsx" | "ts-node" => {
            cmd.args.first().is_some_and(|a| {
                project_file(a)
                    || a.starts_with("--")
                    || matches!(
                        a.as_str(),
                        "task"
                            | "test"
                            | "run"
                            | "fmt"
                            | "lint"
                            | "check"
                            | "bench"
                            | "doc"
                            | "info"
                            | "cache"
                            | "compile"
                    )
            }) && !cmd.args.iter().any(|a| a == "-e" || a == "--eval")
        }
        "npx" | "pnpx" | "bunx" => {
            // A tool of the project's own dependencies; `-y`/`--yes` fetches whatever is named.
            !cmd.args.iter().any(|a| {
                a == "-y"
                    || a == "--yes"
                    || a.contains('@') && !a.starts_with('@')
                    || a.starts_with("--package")
            }) && LOCAL_TOOLS.contains(&sub)
        }
        "go" => {
            matches!(
                sub,
                "build"
                    | "test"
                    | "vet"
                    | "fmt"
                    | "mod"
                    | "list"
                    | "env"
                    | "version"
                    | "generate"
                    | "doc"
                    | "tool"
                    | "clean"
                    | "work"
            ) || (sub == "run" && !cmd.args.iter().any(|a| a.contains('@')))
        }
        "make" | "just" | "task" | "rake" | "invoke" | "mage" | "ninja" | "cmake" | "meson"
        | "bazel" | "bazelisk" | "buck2" | "scons" | "ctest" | "xmake" => true,
        "gradle" | "gradlew" | "mvn" | "mvnw" | "sbt" | "lein" | "clj" | "clojure" | "mill" => {
            !cmd.args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "publish" | "deploy" | "release" | "publishtomavenlocal" | "uploadarchives"
                ) || a.starts_with("publish")
            })
        }
        "dotnet" => matches!(
            sub,
            "build"
                | "test"
                | "run"
                | "restore"
                | "format"
                | "clean"
                | "watch"
                | "add"
                | "list"
                | "new"
                | "tool"
                | "ef"
                | "sln"
                | "--info"
                | "--version"
                | "user-secrets"
                | "user-jwts"
                | "dev-certs"
        ),
        "docker" | "podman" => docker_call_harmless(cmd),
        "docker-compose" => docker_harmless(
            "compose",
            &[vec!["compose".to_string()], cmd.args.clone()].concat(),
        ),
        "bundle" | "rails" | "rspec" | "rubocop" | "ruby" | "bin" | "erb" | "standardrb" => {
            !(cmd
                .args
                .iter()
                .any(|a| matches!(a.as_str(), "-e" | "gem" | "push"))
                || p == "bundle" && sub == "config")
        }
        "mix" | "iex" | "elixir" | "erl" | "rebar3" | "erlc" | "epmd" => {
            !(cmd
                .args
                .iter()
                .any(|a| matches!(a.as_str(), "hex.publish" | "-e" | "--eval"))
                || p == "iex" && sub.is_empty())
        }
        "php" | "composer" | "artisan" | "phpunit" | "pest" | "phpstan" | "pint" | "phpcs"
        | "phpcbf" | "php-cs-fixer" | "psalm" | "rector" | "phpmd" | "paratest" | "infection" => {
            !cmd.args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "-r" | "db:wipe" | "migrate:fresh" | "migrate:reset"
                )
            })
        }
        "flutter" | "dart" => {
            matches!(
                sub,
                "test"
                    | "analyze"
                    | "format"
                    | "run"
                    | "build"
                    | "pub"
                    | "doctor"
                    | "clean"
                    | "gen-l10n"
                    | "create"
                    | "fix"
            ) && !cmd.args.iter().any(|a| a == "publish")
        }
        "swift" | "xcodebuild" | "xcrun" | "swiftlint" | "swiftformat" | "pod" | "tuist" => !cmd
            .args
            .iter()
            .any(|a| matches!(a.as_str(), "trunk" | "push" | "altool" | "upload")),
        "zig" => matches!(
            sub,
            "build" | "test" | "fmt" | "run" | "version" | "env" | "targets" | "init" | "fetch"
        ),
        "stack" | "cabal" | "ghc" | "ghci" | "hlint" | "ormolu" | "fourmolu" => !cmd
            .args
            .iter()
            .any(|a| matches!(a.as_str(), "upload" | "publish")),
        "r" | "rscript" => true,
        // A merge or pull request, an issue: proposed for people to review.
        "glab" | "gh"
            if matches!(sub, "mr" | "pr" | "issue")
                && words.get(1).is_some_and(|w| *w == "create") =>
        {
            true
        }
        "glab" => {
            matches!(sub, "mr" | "issue" | "ci" | "pipeline" | "release" | "repo")
                && words.get(1).is_some_and(|w| reads(w))
        }
        "dvc" => matches!(
            sub,
            "repro"
                | "pull"
                | "status"
                | "add"
                | "push"
                | "fetch"
                | "checkout"
                | "exp"
                | "dag"
                | "metrics"
                | "plots"
                | "params"
                | "init"
                | "stage"
                | "run"
        ),
        "celery" | "sail" | "unity" | "adb" | "emulator" | "nvidia-smi" | "benchstat"
        | "run-clang-tidy" | "tflint" | "kubeconform" | "xcbeautify" | "bb" | "stripe"
        | "molecule" | "wp-env" | "xcodegen" | "fastlane" | "gunicorn" | "uvicorn" | "flask"
        | "streamlit" | "wandb" | "mlflow" | "tensorboard" | "torchrun" | "accelerate"
        | "dbt-osmosis" | "sqlmesh" | "airflow" | "dagster" | "prefect" | "ansible-inventory"
        | "packer" | "vagrant" => !cmd.args.iter().any(|a| DANGER.contains(&a.as_str())),
        "terraform" | "tofu" | "terragrunt" => {
            matches!(
                sub,
                "fmt"
                    | "validate"
                    | "plan"
                    | "init"
                    | "providers"
                    | "version"
                    | "show"
                    | "output"
                    | "graph"
                    | "console"
            ) && !cmd.args.iter().any(|a| a.contains("destroy"))
        }
        "kubectl" | "helm" | "k9s" | "oc" => {
            matches!(
                sub,
                "get"
                    | "describe"
                    | "logs"
                    | "top"
                    | "explain"
                    | "version"
                    | "config"
                    | "diff"
                    | "template"
                    | "lint"
                    | "dependency"
                    | "api-resources"
                    | "port-forward"
                    | "auth"
                    | "cluster-info"
                    | "show"
                    | "search"
                    | "rollout"
            ) && !cmd.args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "set-context" | "set-credentials" | "set-cluster" | "undo" | "restart"
                )
            })
        }
        "kind" | "minikube" | "k3d" => {
            matches!(sub, "get" | "version" | "create" | "load" | "status")
        }
        "ansible-lint" | "yamllint" | "shellcheck" | "hadolint" | "actionlint" | "markdownlint"
        | "eslint" | "prettier" | "tsc" | "vitest" | "jest" | "mocha" | "playwright"
        | "cypress" | "stylelint" | "biome" | "oxlint" | "golangci-lint" | "staticcheck"
        | "gofmt" | "goimports" | "clang-format" | "clang-tidy" | "cppcheck" | "ktlint"
        | "detekt" | "spotless" | "checkstyle" | "sqlfluff" | "dbt" | "sqlite3" | "duckdb"
        | "jq" | "yq" | "tomlq" | "hyperfine" | "valgrind" | "gdb" | "lldb" | "perf" | "strace"
        | "ltrace" | "cloc" | "tokei" | "scc" | "rg" | "fd" | "ag" | "ack" | "bat" | "delta"
        | "tree" | "exa" | "eza" | "htop" | "ps" | "lsof" | "ss" | "netstat" | "uname" | "id"
        | "whoami" | "hostname" | "free" | "df" | "du" | "uptime" | "nproc" | "lscpu"
        | "mkdocs" | "sphinx-build" | "hugo" | "zola" | "mdbook" | "doxygen" | "protoc" | "buf"
        | "sqlc" | "openapi-generator" | "flatc" | "gcc" | "g++" | "cc" | "c++" | "clang"
        | "clang++" | "ld" | "ar" | "nm" | "objdump" | "readelf" | "strip" | "size" | "javac"
        | "java" | "kotlinc" | "scalac" | "tsserver" | "wasm-pack" | "trunk" | "probe-rs"
        | "cargo-embed" | "espflash" | "elm" | "nix-build" | "direnv" | "asdf" | "mise" | "nvm"
        | "fnm" | "volta" | "pyenv" | "rbenv" | "sdk" | "lefthook" | "commitlint" | "changeset"
        | "turbo" | "nx" | "lerna" | "vite" | "webpack" | "rollup" | "esbuild" | "parcel"
        | "tailwindcss" | "sass" | "postcss" => {
            !(cmd.args.iter().any(|a| {
                matches!(a.as_str(), "publish" | "version" | "deploy")
                    && matches!(p, "changeset" | "lerna" | "nx" | "turbo")
            }) || p == "direnv" && sub == "allow")
        }
        "gh" => {
            matches!(
                sub,
                "pr" | "issue"
                    | "run"
                    | "repo"
                    | "release"
                    | "workflow"
                    | "api"
                    | "auth"
                    | "search"
                    | "browse"
                    | "status"
                    | "cache"
            ) && matches!(
                cmd.args.get(1).map(String::as_str).unwrap_or(""),
                "view" | "list" | "status" | "diff" | "checks" | "watch" | "download" | "logs" | ""
            ) && !(sub == "api"
                && cmd.args.iter().any(|a| {
                    matches!(
                        a.as_str(),
                        "-x" | "--method" | "-f" | "--field" | "--raw-field" | "--input"
                    )
                }))
        }
        // Where they go is the question, and their destinations are parts of their own.
        "curl" | "wget" | "http" | "https" | "xh" => true,
        // A board's firmware uploaded (`pio run -t upload`, `west flash`) goes to a device on
        // this machine's port, not a registry: an address given instead is a part of its own.
        _ if TOOLCHAINS.contains(&p) || FLASHERS.contains(&p) => !cmd.args.iter().any(|a| {
            TOOLCHAIN_DANGER.contains(&a.as_str())
                || a.starts_with("publish")
                || a.starts_with("upload") && !FLASHERS.contains(&p)
        }),
        // Serverless toolchains' local work: build, check and run on this machine (their
        // deploys and remote runs stay acts).
        // (Not with another account's profile, another app to run, or remote resources.)
        "sam" => matches!(sub, "build" | "validate" | "local") && !has_any(&["--profile"]),
        "cdk" => {
            matches!(sub, "synth" | "diff" | "ls" | "list" | "doctor") && !has_any(&["--app", "-a"])
        }
        "serverless" | "sls" => {
            matches!(sub, "package" | "print" | "offline")
                || sub == "invoke" && cmd.args.get(1).is_some_and(|a| a == "local")
        }
        // Local emulators of a cloud's services.
        "firebase" => sub.starts_with("emulators:") && sub != "emulators:export",
        "supabase" => matches!(sub, "start" | "stop" | "status"),
        "wrangler" => matches!(sub, "dev" | "types") && !has_any(&["--remote", "-r"]),
        _ => works_on_the_project(cmd),
    }
}

/// A program no list knows that works on the project's own files (`verilator --lint-only
/// rtl/top.sv`, `chktex chapters/*.tex`, `iceprog build/top.bin`): it names a path inside the
/// project, nothing outside it or on another machine (a network operand is judged as a
/// destination of its own), no act of [`DANGER`], and its name is no act either (`goreleaser`,
/// `ffsend`). What it could still do unseen is what the program itself does with a project file
/// by default (a file server, an uploader): `docs/security.md` says so.
fn works_on_the_project(cmd: &Simple) -> bool {
    const ACTS: &[&str] = &[
        "deploy", "release", "publish", "upload", "ship", "push", "send", "share", "sync",
        "destroy", "delete", "remove", "wipe", "nuke", "exfil", "tunnel", "expose", "serve", "run",
        "exec", "daemon", "cron",
    ];
    let name = cmd.program.as_str();
    if ACTS.iter().any(|a| name.contains(a)) || REMOTE_PROGRAMS.contains(&name) {
        return false;
    }
    let mut names_project_path = false;
    for arg in &cmd.args {
        let a = arg.as_str();
        // An act in a word or in a setting's pieces (`-e wipe_replicas=true`).
        if DANGER.contains(&a)
            || a.split(['=', '_', '-', '.', ':', ','])
                .any(|piece| DANGER.contains(&piece) || ACTS.contains(&piece) || piece == "prod")
        {
            return false;
        }
        let value = a.split_once('=').map_or(a, |(_, v)| v);
        let outside = [a, value].iter().any(|w| {
            w.starts_with(['/', '~', '$'])
                || w.split('/').any(|seg| seg == "..")
                // `remote:path`, `user@host:…`: another machine's files.
                || !w.contains("://") && w.split_once(':').is_some_and(|(h, _)| {
                    !h.is_empty() && !h.starts_with('-') && !h.contains(['/', ' ', QUOTED_SPACE])
                })
        });
        if outside {
            return false;
        }
        if !a.starts_with('-')
            && !a.contains("://")
            && !a.contains(QUOTED_SPACE)
            && (a.contains('/')
                // `top.sv`, not `acme-preview.surge.sh` (a name under a site).
                || a.matches('.').count() == 1
                    && a.rsplit_once('.').is_some_and(|(stem, ext)| {
                        !stem.is_empty()
                            && (1..=5).contains(&ext.len())
                            && ext.chars().all(char::is_alphanumeric)
                    }))
        {
            names_project_path = true;
        }
    }
    names_project_path
}

/// Programs whose work is a service elsewhere (a cloud, a host, a paste site, a deploy target):
/// none of them works on the project alone, whatever its operands.
/// Does `program` work on other machines or a cloud (a remote service's CLI, a cluster's, a
/// shell on another host, a container engine)? Naming it in the project's files says the project
/// uses it, not that every call of it is the project's.
pub fn reaches_elsewhere(program: &str) -> bool {
    REMOTE_PROGRAMS.contains(&program)
        || matches!(
            program,
            "kubectl"
                | "helm"
                | "ssh"
                | "scp"
                | "sftp"
                | "rsync"
                | "docker"
                | "podman"
                | "terraform"
                | "tofu"
                | "psql"
                | "mysql"
                | "redis-cli"
                | "mongosh"
                | "gh"
        )
}

const REMOTE_PROGRAMS: &[&str] = &[
    "vercel",
    "netlify",
    "surge",
    "firebase",
    "heroku",
    "fly",
    "flyctl",
    "railway",
    "render",
    "wrangler",
    "pulumi",
    "cdk",
    "sam",
    "serverless",
    "sls",
    "aws",
    "gcloud",
    "gsutil",
    "bq",
    "az",
    "azcopy",
    "doctl",
    "hcloud",
    "linode-cli",
    "scw",
    "oci",
    "ibmcloud",
    "ansible",
    "ansible-playbook",
    "ansible-pull",
    "salt",
    "salt-ssh",
    "gist",
    "pastebinit",
    "wgetpaste",
    "ix",
    "sprunge",
    "termbin",
    "croc",
    "wormhole",
    "magic-wormhole",
    "ffsend",
    "rclone",
    "s3cmd",
    "mc",
    "skaffold",
    "okteto",
    "argocd",
    "flux",
    "eksctl",
    "kops",
    "nomad",
    "consul",
    "vault",
    "op",
    "bw",
    "lpass",
    "doppler",
    "infisical",
    "supabase",
    "neonctl",
    "pscale",
    "turso",
    "twine",
    "ghr",
    "hub",
    "tea",
    "lab",
    "ngrok",
    "cloudflared",
    "tailscale",
    "frpc",
    "bore",
    "localtunnel",
    "lt",
    "sshuttle",
    "mail",
    "mailx",
    "sendmail",
    "mutt",
    "msmtp",
    "swaks",
    "gpg",
    "gpg2",
    "systemd-run",
    "at",
    "batch",
    "crontab",
    "launchctl",
    "schtasks",
];

/// The build, test, dependency and format programs of languages' toolchains and of documents
/// (held-out ordinary corpora kept finding toolchains no list had: `cpanm`, `prove`). They work
/// on the project and fetch its dependencies from the toolchain's own registry (the packages
/// named are judged as packages); what reaches beyond that is told by its words
/// ([`TOOLCHAIN_DANGER`]), as a remote program's is by [`DANGER`].
const TOOLCHAINS: &[&str] = &[
    // Perl
    "perl",
    "prove",
    "cpanm",
    "cpan",
    "carton",
    "perltidy",
    "perlcritic",
    "plackup",
    "morbo",
    // OCaml, Haskell's others, ML family
    "opam",
    "dune",
    "ocaml",
    "ocamlfind",
    "ocamlformat",
    "utop",
    "esy",
    "runghc",
    "runhaskell",
    // Nim, Crystal, D, Zig's cousins
    "nim",
    "nimble",
    "crystal",
    "shards",
    "dub",
    "dmd",
    "ldc2",
    "gdc",
    "rdmd",
    // Julia, Lua, Fortran, Ada, Lisp and Scheme, Gleam, PureScript, Idris, Lean
    "julia",
    "lua",
    "luajit",
    "luarocks",
    "busted",
    "luacheck",
    "stylua",
    "fpm",
    "gfortran",
    "gnat",
    "gprbuild",
    "alr",
    "racket",
    "raco",
    "guile",
    "sbcl",
    "gleam",
    "purs",
    "spago",
    "idris2",
    "lean",
    "lake",
    "octave",
    // JVM and Apple languages beyond the build tools
    "kotlin",
    "scala",
    "scala-cli",
    "amm",
    "groovy",
    "swiftc",
    "clj-kondo",
    "cljfmt",
    // C and C++ builds
    "conan",
    "vcpkg",
    "autoreconf",
    "autoconf",
    "automake",
    "libtool",
    "pkg-config",
    "ccache",
    "bear",
    "clangd",
    "lcov",
    "gcov",
    "gcovr",
    "make-dist",
    // (Embedded toolchains: `FLASHERS`.)
    // Documents and notebooks
    "latexmk",
    "pdflatex",
    "xelatex",
    "lualatex",
    "bibtex",
    "biber",
    "pandoc",
    "asciidoctor",
    "typst",
    "jekyll",
    "quarto",
    "papermill",
    "godot",
    // Build systems of monorepos and robots
    "colcon",
    "pants",
    "buck",
    "please",
    "catkin",
];

/// Embedded toolchains, judged as [`TOOLCHAINS`] are, that also flash a board over a local port.
const FLASHERS: &[&str] = &[
    "pio",
    "platformio",
    "arduino-cli",
    "west",
    "idf.py",
    "openocd",
    "avrdude",
    "nrfjprog",
];

/// Words that take a toolchain's program beyond the project: publishing to its registry, an
/// account, code given on the command line.
const TOOLCHAIN_DANGER: &[&str] = &[
    "release",
    "deploy",
    "push",
    "login",
    "logout",
    "register",
    "owner",
    "yank",
    "unpublish",
    "token",
    "submit",
    "-x",
    "--exec",
];

/// Does a `chmod` give others or the group write, set a setuid/setgid bit, or change a tree
/// outside the project (`chmod -R … ~`)? `chmod +x scripts/dev.sh` does none of these.
fn widens_permissions(args: &[String]) -> bool {
    let recursive = args
        .iter()
        .any(|a| a == "--recursive" || (a.starts_with('-') && a.contains('r')));
    args.iter().any(|a| {
        // Symbolic (`who+what`): a setuid/setgid/sticky bit, or write for all, group or others.
        let symbolic = a.split_once(['+', '=']).is_some_and(|(who, what)| {
            what.contains(['s', 't'])
                || (what.contains('w') && (who.is_empty() || who.contains(['a', 'o', 'g'])))
        });
        // Octal: setuid/setgid/sticky (four digits, first nonzero) or write for group or others.
        let octal = a.len() >= 3
            && a.chars().all(|c| c.is_ascii_digit())
            && (a.len() == 4 && !a.starts_with('0')
                || a[a.len() - 2..]
                    .chars()
                    .any(|d| matches!(d, '2' | '3' | '6' | '7')));
        let outside = recursive
            && (a.starts_with('~')
                || a.starts_with('/')
                || a.starts_with("$home")
                || a.starts_with(".."));
        symbolic || octal || outside
    })
}

/// Words that make any tool's call a change elsewhere, whatever its verb.
/// Is `word` one that makes a program's call an act (`release`, `deploy`, `delete`)?
pub fn is_act_word(word: &str) -> bool {
    DANGER.contains(&word)
}

const DANGER: &[&str] = &[
    "delete",
    "destroy",
    "drop",
    "publish",
    "deploy",
    "push",
    "upload",
    "release",
    "rm",
    "remove",
    "purge",
    "wipe",
    "reset",
    "--force",
    "apply",
    "install",
    "set",
    "put",
    "post",
    "send",
    "create",
    "update",
    "merge",
    "approve",
    "rotate",
    "revoke",
    "grant",
    "nuke",
    "--full-refresh",
    "call",
    "scale",
    "patch",
    "promote",
    "redeploy",
    "revert",
    "rollback",
    "downgrade",
    "restore",
];

/// git's local work and reads; not what rewrites, deletes, pushes elsewhere or configures.
fn git_harmless(sub: &str, args: &[String]) -> bool {
    let has = |f: &str| args.iter().any(|a| a == f);
    match sub {
        "status" | "diff" | "log" | "show" | "blame" | "ls-files" | "ls-tree" | "rev-parse"
        | "check-attr" | "var" | "rev-list" | "describe" | "shortlog" | "grep" | "cat-file"
        | "merge-base" | "reflog" | "whatchanged" | "fetch" | "pull" | "add" | "commit" | "mv"
        | "notes" | "bisect" | "cherry-pick" | "revert" | "apply" | "am" | "format-patch"
        | "range-diff" | "for-each-ref" | "symbolic-ref" | "name-rev" | "check-ignore"
        | "count-objects" | "fsck" | "help" | "version" | "--version" | "init" | "clone"
        | "submodule" | "lfs" | "sparse-checkout" | "maintenance" => {
            !has("--force") && !has("-f") || matches!(sub, "add" | "mv")
        }
        "checkout" | "switch" => {
            !has("--")
                && !has("-f")
                && !has("--force")
                && !args
                    .iter()
                    .any(|a| a == "." || a == "--ours" || a == "--theirs")
        }
        "branch" => !args
            .iter()
            .any(|a| a == "-D" || a == "-d" && has("--force") || a == "-M"),
        "stash" => !args.iter().any(|a| a == "drop" || a == "clear"),
        "tag" => !has("-d") && !has("-f"),
        "merge" | "rebase" => !has("--root") && !has("-i") || sub == "merge",
        "rm" => has("--cached"),
        "worktree" => args.get(1).is_some_and(|a| a == "list" || a == "add"),
        "remote" => args
            .get(1)
            .is_none_or(|a| matches!(a.as_str(), "-v" | "show" | "get-url" | "update" | "prune")),
        // Setting a value is the git-config act, judged on its own.
        "config" | "restore" => true,
        "push" => !args.iter().any(|a| {
            a.starts_with('+')
                || a.starts_with('-')
                    && (a.contains('f') && !a.starts_with("--")
                        || a.starts_with("--force")
                        || a == "--mirror"
                        || a == "--delete"
                        || a == "--prune"
                        || a == "-d")
                || a.contains("://")
                || a.contains('@')
                || a.starts_with(':')
        }),
        "clean" | "reset" | "filter-branch" | "filter-repo" | "update-ref" | "gc" | "prune"
        | "replace" | "push-to-remote" => {
            sub == "reset" && !has("--hard") && !has("--merge") && !has("--keep")
        }
        _ => false,
    }
}

/// Python running the project's code or a module of its tools.
fn python_harmless(args: &[String], project_file: &dyn Fn(&str) -> bool) -> bool {
    match args.first().map(String::as_str) {
        Some("-m") => {
            // A file server is harmless only when it serves the project, to this machine.
            let exposes = args.get(1).is_some_and(|m| m == "http.server")
                && !serves_the_project_locally(&args[2..]);
            !exposes
                && args.get(1).is_some_and(|m| {
                    matches!(
                        m.as_str(),
                        "pytest"
                            | "unittest"
                            | "mypy"
                            | "pip"
                            | "venv"
                            | "black"
                            | "ruff"
                            | "isort"
                            | "flake8"
                            | "pylint"
                            | "coverage"
                            | "build"
                            | "doctest"
                            | "pydoc"
                            | "json.tool"
                            | "compileall"
                            | "timeit"
                            | "cprofile"
                            | "pstats"
                            | "tox"
                            | "nox"
                            | "alembic"
                            | "uvicorn"
                            | "gunicorn"
                            | "flask"
                            | "django"
                            | "ipykernel"
                            | "jupyter"
                            | "nbconvert"
                            | "pre_commit"
                            | "dvc"
                            | "http.server"
                            | "sphinx"
                            | "mkdocs"
                            | "pyright"
                            | "bandit"
                            | "torch.distributed.run"
                            | "torchrun"
                    ) || project_file(&m.replace('.', "/"))
                        || project_file(&format!("{}.py", m.replace('.', "/")))
                        || project_file(&format!("src/{}", m.replace('.', "/")))
                })
                && !(args.get(1).is_some_and(|m| m == "pip")
                    && args.iter().any(|a| {
                        a.contains("://")
                            || a.starts_with("git+")
                            || a.starts_with("--index")
                            || a.starts_with("--extra-index")
                    }))
        }
        Some("-c") => false,
        Some("-") | None => false,
        Some(a) if a.starts_with('-') => true,
        Some(script) => {
            project_file(script)
                || script.ends_with(".py") && !script.starts_with('/') && !script.starts_with('~')
        }
    }
}

/// Does a file server (`python -m http.server`) serve only the project, to this machine? A folder
/// outside the project (`--directory ~`) exposes what it holds (keys, credentials), and an
/// address bound to every interface (`--bind 0.0.0.0`) serves it to the network.
fn serves_the_project_locally(args: &[String]) -> bool {
    let value = |flags: &[&str]| {
        args.iter().enumerate().find_map(|(i, a)| {
            let (flag, inline) = a.split_once('=').unwrap_or((a.as_str(), ""));
            flags.contains(&flag).then(|| {
                if inline.is_empty() {
                    args.get(i + 1).map_or("", String::as_str)
                } else {
                    inline
                }
            })
        })
    };
    let inside = value(&["--directory", "-d"])
        .is_none_or(|d| !d.starts_with(['/', '~', '$']) && !d.split('/').any(|s| s == ".."));
    let local = value(&["--bind", "-b"])
        .is_none_or(|a| a.starts_with("127.") || matches!(a, "localhost" | "::1"));
    inside && local
}

/// A docker or podman call: its global options read first, some with a value (`--context nas
/// compose ps`); the rest judged by [`docker_harmless`].
fn docker_call_harmless(cmd: &Simple) -> bool {
    // Its global options first, some with a value (`--context nas compose ps`).
    let mut at = 0;
    while let Some(a) = cmd.args.get(at).filter(|a| a.starts_with('-')) {
        let valued = matches!(
            a.as_str(),
            "--context" | "-c" | "--config" | "--log-level" | "-l"
        );
        at += if valued { 2 } else { 1 };
    }
    let args = cmd.args.get(at..).unwrap_or(&[]);
    let sub = args.first().map_or("", String::as_str);
    // Another engine named (`--context prod`) may be another machine: only a look at it
    // is harmless there, never a `compose up`.
    // (`at` may pass the end: `docker --context` alone.)
    let elsewhere = cmd.args[..at.min(cmd.args.len())].iter().any(|a| {
        a.starts_with("--context") || a == "-c" || a.starts_with("-H") || a.starts_with("--host")
    });
    let look = match sub {
        "compose" => {
            args.iter().skip(1).any(|a| {
                matches!(
                    a.as_str(),
                    "ps" | "logs" | "config" | "ls" | "images" | "top"
                )
            }) && !args.iter().skip(1).any(|a| {
                matches!(
                    a.as_str(),
                    "up" | "down"
                        | "run"
                        | "exec"
                        | "rm"
                        | "kill"
                        | "stop"
                        | "restart"
                        | "pull"
                        | "build"
                        | "create"
                        | "start"
                        | "push"
                )
            })
        }
        _ => matches!(
            sub,
            "ps" | "images"
                | "logs"
                | "inspect"
                | "version"
                | "info"
                | "stats"
                | "top"
                | "events"
                | "port"
        ),
    };
    docker_harmless(sub, args) && (!elsewhere || look)
}

fn docker_harmless(sub: &str, args: &[String]) -> bool {
    match sub {
        "ps" | "images" | "logs" | "inspect" | "version" | "info" | "build" | "pull" | "stats"
        | "top" | "exec" | "start" | "stop" | "restart" | "events" | "port" | "diff"
        | "history" | "context" | "buildx" => !args
            .iter()
            .any(|a| a == "--push" || a == "-v" && sub == "run"),
        // Local images listed, read or removed (rebuilt or pulled again when needed).
        "image" => matches!(
            args.get(1).map(String::as_str),
            Some("ls" | "list" | "inspect" | "history" | "prune" | "rm")
        ),
        "compose" => {
            args.iter().skip(1).any(|a| {
                matches!(
                    a.as_str(),
                    "up" | "down"
                        | "ps"
                        | "logs"
                        | "build"
                        | "exec"
                        | "run"
                        | "start"
                        | "stop"
                        | "restart"
                        | "config"
                        | "pull"
                        | "top"
                        | "images"
                        | "ls"
                        | "create"
                        | "kill"
                )
            }) && !args
                .iter()
                .any(|a| a == "-v" || a == "--volumes" || a == "push")
        }
        // The user's secrets handed in (`-e TOKEN`, `--env-file`), the host's network, process
        // table or devices: an image from elsewhere run with what is the user's.
        "run" => !args.iter().enumerate().any(|(i, a)| {
            let next = args.get(i + 1).map_or("", String::as_str);
            a.starts_with("-v")
                || a.starts_with("--volume")
                || a.starts_with("--mount")
                || a == "--privileged"
                || a == "-e"
                || a.starts_with("--env")
                || a.starts_with("--cap-add")
                || a.starts_with("--device")
                || [
                    ("--network", "host"),
                    ("--net", "host"),
                    ("--pid", "host"),
                    ("--ipc", "host"),
                ]
                .iter()
                .any(|(flag, value)| {
                    a == &format!("{flag}={value}") || (a == flag && next == *value)
                })
        }),
        _ => false,
    }
}

/// Programs that read or change files in place and reach nothing else.
const READERS: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "grep",
    "egrep",
    "fgrep",
    "find",
    "wc",
    "sort",
    "uniq",
    "cut",
    "tr",
    "awk",
    "gawk",
    "sed",
    "echo",
    "printf",
    "true",
    "false",
    "test",
    "cd",
    "pwd",
    "mkdir",
    "touch",
    "cp",
    "mv",
    "rm",
    "rmdir",
    "ln",
    "diff",
    "cmp",
    "file",
    "stat",
    "which",
    "type",
    "date",
    "sleep",
    "tee",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "xxd",
    "od",
    "hexdump",
    "comm",
    "paste",
    "join",
    "column",
    "fold",
    "fmt",
    "nl",
    "rev",
    "seq",
    "yes",
    "expr",
    "bc",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "shasum",
    "cksum",
    "base64",
    "gzip",
    "gunzip",
    "zcat",
    "tar",
    "zip",
    "unzip",
    "xz",
    "unxz",
    "bzip2",
    "zstd",
    "chmod",
    "patch",
    "split",
    "csplit",
    "iconv",
    "dos2unix",
    "unix2dos",
    "strings",
    "locale",
    "getconf",
    "mktemp",
    "install",
    "truncate",
    "kill",
    "pkill",
    "pgrep",
    "wait",
    "jobs",
    "fg",
    "bg",
    "clear",
    "history",
    "alias",
    "unalias",
    "set",
    "unset",
    "export",
    "source",
    ".",
    "read",
    "shift",
    "return",
    "exit",
    "local",
    "declare",
    "typeset",
    "trap",
    "ulimit",
    "umask",
    "open",
    "xdg-open",
    "pbcopy",
    "pbpaste",
    "cal",
    "man",
    "info",
    "apropos",
    "whereis",
    "envsubst",
    "tput",
    "script",
    "watchexec",
    "entr",
    "nodemon",
];

/// Shell syntax words that can stand first in a segment.
const SHELL: &[&str] = &[
    "for", "case", "function", "select", "{", "}", "do", "done", "fi",
];

/// Tools `npx` runs from a project's own dependencies.
pub(crate) const LOCAL_TOOLS: &[&str] = &[
    "tsc",
    "eslint",
    "prettier",
    "vitest",
    "jest",
    "mocha",
    "playwright",
    "cypress",
    "vite",
    "next",
    "nuxt",
    "nuxi",
    "astro",
    "svelte-kit",
    "prisma",
    "drizzle-kit",
    "knex",
    "sequelize",
    "typeorm",
    "ts-node",
    "tsx",
    "webpack",
    "rollup",
    "esbuild",
    "turbo",
    "nx",
    "lerna",
    "tailwindcss",
    "stylelint",
    "biome",
    "oxlint",
    "storybook",
    "sb",
    "changeset",
    "jest-cli",
    "ng",
    "vue-tsc",
    "expo",
    "react-native",
    "wrangler",
    "serve",
    "http-server",
    "concurrently",
    "rimraf",
    "cross-env",
    "husky",
    "lint-staged",
    "wp-env",
    "publint",
    "arethetypeswrong",
    "attw",
    "commitlint",
    "openapi-typescript",
    "orval",
    "graphql-codegen",
    "swagger-cli",
    "depcheck",
    "knip",
    "madge",
    "size-limit",
    "c8",
    "nyc",
];

/// The programs of `folded` (a command line, folded, variables substituted) not known to be
/// harmless, each once.
pub fn unknown_programs(folded: &str, project_file: &dyn Fn(&str) -> bool) -> Vec<String> {
    static PROGRAM: OnceLock<Regex> = OnceLock::new();
    let name_like =
        PROGRAM.get_or_init(|| Regex::new(r"^[a-z0-9][a-z0-9._+-]*$").expect("valid regex"));
    let mut out: Vec<String> = Vec::new();
    for cmd in simple_commands(folded) {
        if !name_like.is_match(&cmd.program) && !cmd.program.contains('/') {
            // A redirection target, a variable, a word of a heredoc: not a program.
            continue;
        }
        if harmless(&cmd, project_file) {
            continue;
        }
        // The program and its first three words that are no flags: `argocd app sync` (a mode
        // such as `u+s` or a path such as `~` is an operand, not a subcommand).
        let sub: String = cmd
            .args
            .iter()
            .filter(|a| {
                a.starts_with(char::is_alphanumeric) && !a.contains(['/', '=', '+', '>', '<'])
            })
            .take(3)
            .map(|s| format!(" {s}"))
            .collect();
        let name = format!("{}{}", cmd.program, sub);
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// A space inside quotes, kept apart from the spaces that split words.
const QUOTED_SPACE: char = '\u{1f}';

/// The segments of a folded command line that run as simple commands: split at `;`, `&&`, `||`,
/// `|`, `&`, newlines, `(`, `)` and backquotes outside quotes, and at `$(` anywhere (a command
/// substitution runs even inside double quotes); heredoc bodies and comments dropped. Each
/// segment's words are unquoted.
pub fn segments(folded: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let chars: Vec<char> = folded.chars().collect();
    let mut i = 0;
    let flush = |cur: &mut String, out: &mut Vec<String>| {
        let t = cur.trim();
        if !t.is_empty() && !t.starts_with('#') {
            out.push(t.to_string());
        }
        cur.clear();
    };
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                } else if c.is_whitespace() {
                    // A quoted word stays one word (`"--cfg docsrs"`).
                    cur.push(QUOTED_SPACE);
                } else if q == '"' && c == '$' && chars.get(i + 1) == Some(&'(') {
                    flush(&mut cur, &mut out);
                    i += 2;
                    continue;
                } else if q == '"' && c == '\\' {
                    if let Some(n) = chars.get(i + 1) {
                        cur.push(*n);
                        i += 2;
                        continue;
                    }
                } else {
                    cur.push(c);
                }
            }
            None => match c {
                '\'' | '"' => quote = Some(c),
                '\\' => {
                    if let Some(n) = chars.get(i + 1) {
                        if *n != '\n' {
                            cur.push(*n);
                        }
                        i += 2;
                        continue;
                    }
                }
                ';' | '|' | '&' | '\n' | '(' | ')' | '`' => flush(&mut cur, &mut out),
                '<' if chars.get(i + 1) == Some(&'<') && chars.get(i + 2) != Some(&'<') => {
                    // A heredoc: its delimiter, then everything to the line that is it.
                    let rest: String = chars[i + 2..].iter().collect();
                    let delim: String = rest
                        .trim_start_matches('-')
                        .trim_start()
                        .chars()
                        .take_while(|c| !c.is_whitespace())
                        .filter(|c| !matches!(c, '\'' | '"'))
                        .collect();
                    if let Some(nl) = rest.find('\n') {
                        let body = &rest[nl + 1..];
                        let end = body
                            .split_inclusive('\n')
                            .scan(0usize, |at, line| {
                                let start = *at;
                                *at += line.len();
                                Some((start, line))
                            })
                            .find(|(_, line)| line.trim() == delim && !delim.is_empty())
                            .map(|(start, line)| nl + 1 + start + line.len());
                        flush(&mut cur, &mut out);
                        let skip = end.unwrap_or(rest.len());
                        i += 2 + rest[..skip].chars().count();
                        continue;
                    }
                    cur.push(c);
                }
                _ => cur.push(c),
            },
        }
        i += 1;
    }
    flush(&mut cur, &mut out);
    out
}
