//! What every CLI's sandbox ([`crate::claude::Sandbox`],
//! [`crate::agents::Sandbox`]) shares: a private, canonical temporary root
//! kept for the post-mortem when its test fails, files written into it, and
//! the once-per-binary version check.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A temporary directory with named subdirectories. Canonical, because the
/// CLIs compare their (real) cwd with the paths they are given. Dropped
/// while the test panics, it is kept and its path printed.
pub struct SandboxDir {
    dir: tempfile::TempDir,
    root: PathBuf,
}

impl SandboxDir {
    /// Creates `<tmp>/<prefix>XXXX` and `subdirs` in it.
    pub fn new(prefix: &str, subdirs: &[&str]) -> std::io::Result<SandboxDir> {
        let dir = crate::temp_dir(prefix)?;
        let root = dir.path().canonicalize()?;
        for d in subdirs {
            std::fs::create_dir_all(root.join(d))?;
        }
        Ok(SandboxDir { dir, root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `root/sub`.
    pub fn join(&self, sub: &str) -> PathBuf {
        self.root.join(sub)
    }
}

impl Drop for SandboxDir {
    /// A failing test keeps its sandbox (settings, logs, the CLI's own
    /// logs) and says where it is.
    fn drop(&mut self) {
        if std::thread::panicking() && !crate::keep_artifacts() {
            self.dir.disable_cleanup(true);
            eprintln!(
                "[testkit] test failed; sandbox kept at {}",
                self.root.display()
            );
        }
    }
}

/// Writes `rel` under `dir` (creating parents); returns its absolute path.
pub fn write_under(dir: &Path, rel: &str, contents: &str) -> std::io::Result<PathBuf> {
    let p = dir.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&p, contents)?;
    Ok(p)
}

/// Runs `check` for `bin` once per process and remembers its verdict: the
/// scenarios encode one CLI version's behaviour, and another version is a
/// setup error to report as such, not as confusing scenario failures.
pub fn checked_once(bin: &Path, check: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    static CHECKED: Mutex<Vec<(PathBuf, Result<(), String>)>> = Mutex::new(Vec::new());
    let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, r)) = checked.iter().find(|(p, _)| p == bin) {
        return r.clone();
    }
    let result = check();
    checked.push((bin.to_path_buf(), result.clone()));
    result
}
