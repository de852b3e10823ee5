//! Running `wt-memory` as a child process. The hook handler and the MCP server never open a store
//! themselves: they call this, so every front end shares the CLI's one code path.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a finished `wt-memory` call produced.
#[derive(Debug, Clone)]
pub struct CliOutput {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl CliOutput {
    pub fn success(&self) -> bool {
        self.status == 0
    }
}

#[derive(Debug)]
pub enum RunError {
    /// No `wt-memory` binary next to us nor on PATH.
    NotFound,
    /// The child did not finish in time and was killed.
    Timeout(Duration),
    Io(std::io::Error),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::NotFound => write!(
                f,
                "wt-memory not found next to this program nor on PATH (install it with `cargo install --path .`)"
            ),
            RunError::Timeout(d) => write!(f, "wt-memory did not finish within {}s and was killed", d.as_secs_f32()),
            RunError::Io(e) => write!(f, "could not run wt-memory: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

/// Locate the `wt-memory` binary: `$WT_MEMORY_BIN`, then next to the current executable, then PATH.
pub fn find_wt_memory() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WT_MEMORY_BIN").map(PathBuf::from) {
        if p.is_file() {
            return Some(p);
        }
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            let sibling = dir.join("wt-memory");
            if sibling.is_file() {
                return Some(sibling);
            }
        }
    }
    which::which("wt-memory").ok()
}

/// One `wt-memory` invocation.
pub struct Invocation<'a> {
    pub args: Vec<String>,
    pub stdin: Option<&'a [u8]>,
    pub cwd: Option<&'a Path>,
    pub timeout: Duration,
    pub env: Vec<(String, String)>,
}

impl<'a> Invocation<'a> {
    pub fn new<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Invocation {
            args: args.into_iter().map(Into::into).collect(),
            stdin: None,
            cwd: None,
            timeout: Duration::from_secs(30),
            env: Vec::new(),
        }
    }
    pub fn stdin(mut self, bytes: &'a [u8]) -> Self {
        self.stdin = Some(bytes);
        self
    }
    pub fn cwd(mut self, dir: &'a Path) -> Self {
        self.cwd = Some(dir);
        self
    }
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Run with the binary found by [`find_wt_memory`].
    pub fn run(&self) -> Result<CliOutput, RunError> {
        let bin = find_wt_memory().ok_or(RunError::NotFound)?;
        self.run_with(&bin)
    }

    /// Run a specific binary; the child is killed when the timeout passes.
    pub fn run_with(&self, bin: &Path) -> Result<CliOutput, RunError> {
        let mut expr = duct::cmd(bin, &self.args)
            .stdout_capture()
            .stderr_capture()
            .unchecked();
        expr = match self.stdin {
            Some(bytes) => expr.stdin_bytes(bytes.to_vec()),
            None => expr.stdin_null(),
        };
        if let Some(dir) = self.cwd {
            expr = expr.dir(dir);
        }
        for (k, v) in &self.env {
            expr = expr.env(k, v);
        }
        let handle = expr.start().map_err(RunError::Io)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            match handle.try_wait().map_err(RunError::Io)? {
                Some(out) => {
                    return Ok(CliOutput {
                        status: out.status.code().unwrap_or(-1),
                        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                    })
                }
                None if Instant::now() >= deadline => {
                    let _ = handle.kill();
                    return Err(RunError::Timeout(self.timeout));
                }
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
}
