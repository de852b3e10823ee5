//! Running another program (git, `claude`) with a deadline: the one place that starts, waits for
//! and kills child processes. None of them is `wt-memory`: every front end reaches the memory
//! through [`wt_memory_service::client::Client`] in its own process.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A program to run.
pub struct Child {
    /// A bare name is looked up on PATH (duct would read a `Path` as relative to the directory).
    program: OsString,
    args: Vec<String>,
    stdin: Option<Vec<u8>>,
    dir: Option<PathBuf>,
    set_env: Vec<(String, String)>,
    remove_env: Vec<String>,
    /// Own process group, killed as a whole at the deadline (a CLI that starts helpers).
    own_group: bool,
}

/// How a finished child ended.
pub struct Finished {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Finished {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("cannot start {program}: {source}")]
    Start {
        program: String,
        source: std::io::Error,
    },
    #[error("did not finish within {}s and was killed", .0.as_secs())]
    Timeout(Duration),
    #[error("cannot wait for {program}: {source}")]
    Wait {
        program: String,
        source: std::io::Error,
    },
}

impl Child {
    pub fn new<S: Into<String>>(
        program: impl AsRef<std::ffi::OsStr>,
        args: impl IntoIterator<Item = S>,
    ) -> Child {
        Child {
            program: program.as_ref().to_os_string(),
            args: args.into_iter().map(Into::into).collect(),
            stdin: None,
            dir: None,
            set_env: Vec::new(),
            remove_env: Vec::new(),
            own_group: false,
        }
    }

    pub fn stdin(mut self, bytes: &[u8]) -> Self {
        self.stdin = Some(bytes.to_vec());
        self
    }

    pub fn dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.dir = Some(dir.as_ref().to_path_buf());
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.set_env.push((key.into(), value.into()));
        self
    }

    pub fn env_remove(mut self, key: &str) -> Self {
        self.remove_env.push(key.into());
        self
    }

    pub fn own_process_group(mut self) -> Self {
        self.own_group = true;
        self
    }

    /// Run to completion, or kill the child (and its group) when `timeout` passes.
    pub fn run(self, timeout: Duration) -> Result<Finished, ChildError> {
        let program = self.program.to_string_lossy().into_owned();
        let mut expr = duct::cmd(&self.program, &self.args)
            .stdout_capture()
            .stderr_capture()
            .unchecked();
        expr = match self.stdin {
            Some(bytes) => expr.stdin_bytes(bytes),
            None => expr.stdin_null(),
        };
        if let Some(dir) = &self.dir {
            expr = expr.dir(dir);
        }
        for (k, v) in &self.set_env {
            expr = expr.env(k, v);
        }
        for k in &self.remove_env {
            expr = expr.env_remove(k);
        }
        if self.own_group {
            expr = expr.before_spawn(|cmd| {
                wt_memory_base::os::process::own_group(cmd);
                Ok(())
            });
        }
        let handle = expr.start().map_err(|source| ChildError::Start {
            program: program.clone(),
            source,
        })?;
        let deadline = Instant::now() + timeout;
        loop {
            match handle.try_wait() {
                Ok(Some(out)) => {
                    return Ok(Finished {
                        code: out.status.code(),
                        stdout: out.stdout.clone(),
                        stderr: out.stderr.clone(),
                    })
                }
                Ok(None) if Instant::now() >= deadline => {
                    if self.own_group {
                        for pid in handle.pids() {
                            wt_memory_base::os::process::kill_group(pid);
                        }
                    }
                    let _ = handle.kill();
                    return Err(ChildError::Timeout(timeout));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(source) => return Err(ChildError::Wait { program, source }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_exit_code_and_stdin_come_back() {
        let out = Child::new("sh", ["-c", "cat; echo err >&2; exit 3"])
            .stdin(b"hello")
            .run(Duration::from_secs(10))
            .unwrap();
        assert_eq!(out.code, Some(3));
        assert_eq!(out.stdout, b"hello");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn a_child_past_its_deadline_is_killed_with_its_group() {
        let started = Instant::now();
        let err = Child::new("sh", ["-c", "sleep 30 & sleep 30"])
            .own_process_group()
            .run(Duration::from_millis(300))
            .err()
            .expect("killed");
        assert!(matches!(err, ChildError::Timeout(_)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
