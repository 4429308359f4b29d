//! Writing, rewriting and removing the discovery lock file, and sweeping
//! stale ones.
//!
//! The lock file holds the auth token, so it must never be readable by other
//! users or written through an attacker's symlink: the directory is created
//! (or tightened to) 0700, the file is written to a fresh temp file opened
//! with `O_CREAT|O_EXCL|O_NOFOLLOW` and mode 0600 set with `fchmod` (so the
//! umask does not matter), synced, then renamed over `<port>.lock`. A rename
//! replaces a planted symlink instead of following it. The [`LockGuard`]
//! removes the file when dropped.
//!
//! Other servers' stale lock files are swept with `ccbridge clean`'s rule
//! ([`sweep_stale`]), after this server's own lock is written.

use ccbridge_protocol::lockfile::LockFile;
use rustix::fs::{Mode, OFlags};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Each message includes its cause, so it is printed once (no `source()`
/// chain repeats it).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot create the lock directory {}: {error}", dir.display())]
    Dir { dir: PathBuf, error: io::Error },
    #[error("the lock directory {} is not a directory owned by this user", .0.display())]
    UnsafeDir(PathBuf),
    #[error("cannot write the lock file {}: {error}", path.display())]
    Write { path: PathBuf, error: io::Error },
}

/// An owned lock file; removed on drop.
#[derive(Debug)]
pub struct LockGuard(PrivateFile);

impl LockGuard {
    /// Writes `<dir>/<port>.lock` atomically with mode 0600.
    pub fn create(dir: &Path, port: u16, lock: &LockFile) -> Result<LockGuard, LockError> {
        PrivateFile::create(dir, &format!("{port}.lock"), lock.to_json().as_bytes()).map(LockGuard)
    }

    /// Rewrites the lock file in place (same port, same token).
    pub fn update(&self, lock: &LockFile) -> Result<(), LockError> {
        self.0.update(lock.to_json().as_bytes())
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// Another advertisement of this IDE that must say what the lock file says
/// (see `EngineHandle::add_lock_mirror`): rewritten with the lock file's
/// new contents each time the lock file is.
pub trait LockMirror: Send + Sync {
    fn rewrite(&self, lock: &LockFile) -> Result<(), LockError>;
}

/// A file holding a secret (a token), with the lock file's guarantees:
/// in a private directory (created 0700, refused when it is a symlink or
/// someone else's), written atomically with mode 0600 whatever the umask,
/// and removed on drop. The lock file is one; the discovery files of the
/// other agents' companion server are others.
#[derive(Debug)]
pub struct PrivateFile {
    path: PathBuf,
}

impl PrivateFile {
    /// Writes `<dir>/<name>`.
    pub fn create(dir: &Path, name: &str, bytes: &[u8]) -> Result<PrivateFile, LockError> {
        ensure_private_dir(dir)?;
        let path = dir.join(name);
        write_atomic(&path, bytes)?;
        Ok(PrivateFile { path })
    }

    /// Rewrites it in place.
    pub fn update(&self, bytes: &[u8]) -> Result<(), LockError> {
        write_atomic(&self.path, bytes)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateFile {
    fn drop(&mut self) {
        match std::fs::remove_file(&self.path) {
            Ok(()) => tracing::debug!(path = %self.path.display(), "private file removed"),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %self.path.display(), "cannot remove it: {e}"),
        }
    }
}

fn ensure_private_dir(dir: &Path) -> Result<(), LockError> {
    let derr = |error| LockError::Dir {
        dir: dir.to_owned(),
        error,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(derr)?;
    // Refuse a symlinked or foreign directory rather than write a secret into it.
    let meta = std::fs::symlink_metadata(dir).map_err(derr)?;
    use std::os::unix::fs::MetadataExt;
    if !meta.is_dir() || meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(LockError::UnsafeDir(dir.to_owned()));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(derr)?;
    }
    Ok(())
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), LockError> {
    replace_file(path, bytes, 0o600).map_err(|error| LockError::Write {
        path: path.to_owned(),
        error,
    })
}

/// Replaces `path` with `bytes` as one step: written and synced to a fresh
/// temporary file beside it (random name, `O_EXCL|O_NOFOLLOW`, so nothing
/// planted there is followed), given `mode` regardless of the umask, then
/// renamed over it. Readers see the old file or the new one, never a part;
/// on failure the temporary file is removed and `path` is untouched.
/// Also used for Claude's `.claude.json` (`ccbridge-mcp`'s registration).
pub fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mut attempt = 0u32;
    let (tmp, fd) = loop {
        let mut rnd = [0u8; 8];
        getrandom::fill(&mut rnd).map_err(|e| io::Error::other(e.to_string()))?;
        let tmp = dir.join(format!(
            ".{name}.{}.tmp",
            rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ));
        match rustix::fs::open(
            &tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        ) {
            Ok(fd) => break (tmp, fd),
            Err(rustix::io::Errno::EXIST) if attempt < 8 => attempt += 1,
            Err(e) => return Err(e.into()),
        }
    };
    let result = (|| {
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Removes the stale lock files in `dir` by `ccbridge clean`'s rule
/// (`ccbridge_discovery::stale`): only when neither the editor's pid nor the
/// recorded server process is known to run *and* the port does not answer,
/// so a live server's lock is never touched. Files are read capped and
/// without blocking on FIFOs; the directory scan runs on a blocking thread
/// and the port probes concurrently, so a hostile lock directory costs at
/// most about one probe timeout. Returns what was removed.
pub async fn sweep_stale(dir: PathBuf) -> Vec<PathBuf> {
    let scanned = tokio::task::spawn_blocking(move || ccbridge_discovery::scan(&[dir]));
    let Ok(scan) = scanned.await else {
        return Vec::new();
    };
    let report = ccbridge_discovery::stale::clean_entries(&scan.entries, false).await;
    for o in &report.removed {
        tracing::info!(path = %o.path.display(), "removed a stale lock file: {}", o.reason);
    }
    for f in &report.failed {
        tracing::debug!(path = %f.path.display(), "cannot remove a stale lock file: {}", f.error);
    }
    report.removed.into_iter().map(|o| o.path).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn lock(pid: u32) -> LockFile {
        LockFile::new(pid, vec!["/w".into()], "Test".into(), "tok".into())
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().mode() & 0o777
    }

    #[test]
    fn creates_private_dir_and_file_whatever_the_umask() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("cfg").join("ide");
        let old = rustix::process::umask(Mode::empty());
        let g = LockGuard::create(&dir, 12345, &lock(1));
        rustix::process::umask(old);
        let g = g.unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(g.path()), 0o600);
        assert!(std::fs::symlink_metadata(g.path()).unwrap().is_file());
        let back = LockFile::parse(&std::fs::read(g.path()).unwrap()).unwrap();
        assert_eq!(back, lock(1));
        let path = g.path().to_owned();
        drop(g);
        assert!(!path.exists());
    }

    #[test]
    fn tightens_an_existing_loose_dir() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ide");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let _g = LockGuard::create(&dir, 23456, &lock(1)).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn planted_symlink_is_replaced_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ide");
        std::fs::create_dir(&dir).unwrap();
        let victim = t.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("34567.lock")).unwrap();
        let g = LockGuard::create(&dir, 34567, &lock(1)).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(g.path()).unwrap().is_file());
        assert_eq!(mode(g.path()), 0o600);
    }

    #[test]
    fn symlinked_lock_dir_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("elsewhere");
        std::fs::create_dir(&real).unwrap();
        let dir = t.path().join("ide");
        std::os::unix::fs::symlink(&real, &dir).unwrap();
        let err = LockGuard::create(&dir, 45678, &lock(1)).unwrap_err();
        assert!(matches!(err, LockError::UnsafeDir(_)), "{err}");
        assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
    }

    #[test]
    fn update_rewrites_in_place_and_leaves_no_temp_files() {
        let t = tempfile::tempdir().unwrap();
        let g = LockGuard::create(t.path(), 12345, &lock(1)).unwrap();
        let mut l = lock(1);
        l.workspace_folders = vec!["/a".into(), "/b".into()];
        g.update(&l).unwrap();
        let back = LockFile::parse(&std::fs::read(g.path()).unwrap()).unwrap();
        assert_eq!(back.workspace_folders, vec!["/a", "/b"]);
        let names: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("12345.lock")]);
    }
}
