//! The per-project store lock. RocksDB admits one process per store and a second open fails at
//! once, so every access waits for this lock first (up to 10 s).
//!
//! It is an `flock` on `<root>/.locks/<project>.lock`: the kernel releases it when the holder dies,
//! so a killed process never leaves a stale lock behind. The holder's PID is written into the file
//! only to name it in messages.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct ProjectLock {
    file: File,
    pub path: PathBuf,
}

pub fn lock_path(root: &Path, project: &str) -> PathBuf {
    root.join(".locks").join(format!("{project}.lock"))
}

/// The lock of `project`'s store: `<storage root>/.locks/<name>.lock`, the root being the
/// directory that holds the store.
pub fn store_lock_path(project: &wt_memory_base::project::Project) -> PathBuf {
    let root = project
        .store_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(wt_memory_base::paths::storage_root);
    lock_path(&root, &project.name)
}

fn try_flock(file: &File) -> std::io::Result<bool> {
    wt_memory_base::os::files::try_lock_exclusive(file)
}

/// PID recorded by the current holder, if any.
pub fn holder_pid(path: &Path) -> Option<u32> {
    let mut s = String::new();
    File::open(path).ok()?.read_to_string(&mut s).ok()?;
    s.trim().parse().ok()
}

/// Is the lock free right now? (for `doctor`; does not keep it)
pub fn is_free(path: &Path) -> bool {
    match File::open(path) {
        Ok(f) => {
            let free = try_flock(&f).unwrap_or(false);
            // Dropping `f` closes the descriptor, which releases a lock we may just have taken.
            free
        }
        Err(_) => true,
    }
}

/// An exclusive `flock` on `path` (created if missing, in a private directory), polled every
/// `poll` until `wait` has passed: the file holding it, or `None` when the wait ran out. The one
/// lock loop of the tools (the store lock, the hook's session cache and state files). Polling
/// never blocks, so a stuck holder cannot make a caller miss its deadline.
pub fn exclusive(path: &Path, wait: Duration, poll: Duration) -> std::io::Result<Option<File>> {
    if let Some(dir) = path.parent() {
        wt_memory_base::paths::ensure_private_dir(dir)?;
    }
    // Never through a link: a planted one would have us create or truncate another file.
    let file = wt_memory_base::os::files::private_no_follow(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
    .open(path)?;
    let deadline = Instant::now() + wait;
    loop {
        if try_flock(&file)? {
            return Ok(Some(file));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(poll);
    }
}

impl ProjectLock {
    pub fn acquire(path: &Path, wait: Duration) -> anyhow::Result<ProjectLock> {
        let Some(mut file) = exclusive(path, wait, Duration::from_millis(50))? else {
            let who = holder_pid(path)
                .map(|p| format!(" (held by pid {p})"))
                .unwrap_or_default();
            return Err(crate::error::Error::Busy {
                waited_secs: wait.as_secs(),
                holder: who,
            }
            .into());
        };
        file.set_len(0)?;
        file.rewind()?;
        write!(file, "{}", std::process::id())?;
        Ok(ProjectLock {
            file,
            path: path.to_path_buf(),
        })
    }
}

impl Drop for ProjectLock {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}
