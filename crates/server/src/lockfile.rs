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

use ccbridge_protocol::lockfile::LockFile;
use rustix::fs::{Mode, OFlags};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot create the lock directory {dir}: {source}")]
    Dir { dir: PathBuf, source: io::Error },
    #[error("the lock directory {0} is not a directory owned by this user")]
    UnsafeDir(PathBuf),
    #[error("cannot write the lock file {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// An owned lock file; removed on drop.
#[derive(Debug)]
pub struct LockGuard {
    path: PathBuf,
}

impl LockGuard {
    /// Writes `<dir>/<port>.lock` atomically with mode 0600.
    pub fn create(dir: &Path, port: u16, lock: &LockFile) -> Result<LockGuard, LockError> {
        ensure_private_dir(dir)?;
        let path = dir.join(format!("{port}.lock"));
        write_atomic(&path, lock.to_json().as_bytes())?;
        Ok(LockGuard { path })
    }

    /// Rewrites the lock file in place (same port, same token).
    pub fn update(&self, lock: &LockFile) -> Result<(), LockError> {
        write_atomic(&self.path, lock.to_json().as_bytes())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        match std::fs::remove_file(&self.path) {
            Ok(()) => tracing::debug!(path = %self.path.display(), "lock file removed"),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(path = %self.path.display(), "cannot remove lock file: {e}"),
        }
    }
}

fn ensure_private_dir(dir: &Path) -> Result<(), LockError> {
    let derr = |source| LockError::Dir {
        dir: dir.to_owned(),
        source,
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
    let werr = |source| LockError::Write {
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("lock");
    let mut attempt = 0u32;
    let (tmp, fd) = loop {
        let mut rnd = [0u8; 8];
        getrandom::fill(&mut rnd).map_err(|e| werr(io::Error::other(e.to_string())))?;
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
            Err(e) => return Err(werr(e.into())),
        }
    };
    let result = (|| {
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(werr(e));
    }
    Ok(())
}

/// What [`sweep_stale`] removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub removed: Vec<PathBuf>,
}

/// Removes `*.lock` files in `dir` whose `pid` is dead (ESRCH). Locks with a
/// live pid (or one we may not signal), without a pid, or that do not parse
/// are left alone: they may belong to another user or another tool.
pub fn sweep_stale(dir: &Path) -> SweepReport {
    let mut report = SweepReport::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return report;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_lock = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| LockFile::port_from_file_name(n).is_some());
        if !is_lock || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Some(pid) = LockFile::parse(&bytes).ok().and_then(|l| l.pid) else {
            continue;
        };
        if pid_is_dead(pid) && std::fs::remove_file(&path).is_ok() {
            tracing::info!(path = %path.display(), pid, "removed stale lock file");
            report.removed.push(path);
        }
    }
    report
}

/// True only when the process certainly does not exist.
pub fn pid_is_dead(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    let Some(pid) = rustix::process::Pid::from_raw(raw) else {
        return false;
    };
    matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
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

    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
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

    #[test]
    fn sweep_removes_only_dead_pids() {
        let t = tempfile::tempdir().unwrap();
        let dead = t.path().join("11111.lock");
        let live = t.path().join("22222.lock");
        let nopid = t.path().join("33333.lock");
        let other = t.path().join("notes.txt");
        std::fs::write(&dead, lock(dead_pid()).to_json()).unwrap();
        std::fs::write(&live, lock(std::process::id()).to_json()).unwrap();
        std::fs::write(&nopid, "/some/folder\n").unwrap();
        std::fs::write(&other, lock(dead_pid()).to_json()).unwrap();
        let r = sweep_stale(t.path());
        assert_eq!(r.removed, vec![dead.clone()]);
        assert!(!dead.exists());
        assert!(live.exists() && nopid.exists() && other.exists());
    }

    #[test]
    fn pid_liveness() {
        assert!(!pid_is_dead(std::process::id()));
        assert!(pid_is_dead(dead_pid()));
        assert!(
            !pid_is_dead(1),
            "init exists (EPERM or alive) and is never 'dead'"
        );
    }
}
