//! Writing a file in the workspace atomically: readers see the old text or
//! the new one, never a part; a failure leaves the old file as it was and
//! no temporary file behind.
//!
//! The parent directory is opened beneath its folder (`openat2`, so no link
//! leads out) and everything after happens relative to that descriptor: the
//! temporary file is created in it with `O_EXCL | O_NOFOLLOW`, written,
//! flushed to disk, given the old file's permissions, and renamed over the
//! target with `renameat`. The temporary file is created with the mode it
//! will keep (the old file's), never wider and then narrowed: another
//! local user must not be able to open a private file's new text in
//! between. Its name is short and fixed in length, so a file whose own
//! name is at the 255-byte limit can still be written. A directory swapped for a link after the open
//! changes nothing, since the descriptor is what is used. Missing parent
//! directories are created (and removed again if the write fails). A target
//! that is a symbolic link is refused rather than replaced by a file.

use crate::{io_error, Located, Workspace, WorkspaceError};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// What the file must hold just before a write replaces it, for the write
/// to happen: a change reviewed against one text must not land over
/// another that appeared on disk meanwhile (the newer text would be lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected<'a> {
    /// Whatever it holds.
    Any,
    /// No file there.
    Absent,
    /// Exactly these bytes.
    Bytes(&'a [u8]),
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The file did not exist before.
    pub created: bool,
    /// Where it is.
    pub path: PathBuf,
}

/// The permission bits of a file created with nothing else to go by (less
/// the umask), as editors and `touch` create them.
pub const NEW_FILE_MODE: u32 = 0o666;

/// Whether a file of mode `mode` is one its owner may not write: someone
/// protected it (`chmod a-w`). An editor refuses to save over such a file,
/// and so does every write here, although renaming over it would succeed.
pub fn is_read_only(mode: u32) -> bool {
    mode & 0o200 == 0
}

impl Workspace {
    /// Replaces (or creates) the file at `path` with `bytes`, atomically.
    pub fn write_atomic(&self, path: &str, bytes: &[u8]) -> Result<Written, WorkspaceError> {
        self.replace(path, bytes, Expected::Any)
    }

    /// Like [`Self::write_atomic`], only if the file holds what `expected`
    /// says right before the rename (else [`WorkspaceError::Changed`] and
    /// nothing is written). The check and the rename are two steps: a
    /// change in the microseconds between them is not seen.
    pub fn replace(
        &self,
        path: &str,
        bytes: &[u8],
        expected: Expected<'_>,
    ) -> Result<Written, WorkspaceError> {
        self.replace_creating(path, bytes, expected, NEW_FILE_MODE)
    }

    /// [`Self::replace`], a file it creates getting the permission bits
    /// `mode` (less the umask) instead of 0666's: a file restored as it was
    /// (an executable script stays executable). A file that exists keeps its
    /// own.
    pub fn replace_creating(
        &self,
        path: &str,
        bytes: &[u8],
        expected: Expected<'_>,
        mode: u32,
    ) -> Result<Written, WorkspaceError> {
        let at = self.locate(path)?;
        let (Some(name), parent) = (at.rel.file_name(), at.rel.parent()) else {
            return Err(WorkspaceError::NotAFile(at.asked));
        };
        let name = name.to_owned();
        let (dir, made) = self.parent_dir(&at, parent.unwrap_or(Path::new("")))?;
        let result = self.write_in(&dir, &name, bytes, expected, mode, &at);
        if result.is_err() {
            // Directories made for this write go again (deepest first).
            for d in made.iter().rev() {
                let root = &self.roots[at.root].dir;
                let _ = rustix::fs::unlinkat(root, d, AtFlags::REMOVEDIR);
            }
        }
        result.map(|created| Written {
            created,
            path: self.absolute(&at),
        })
    }

    /// Removes the file at `path` if it holds what `expected` says right
    /// before (else [`WorkspaceError::Changed`] and nothing is removed): the
    /// session review's revert of a file an agent created. A link or a
    /// directory there is refused, never followed or emptied. Returns the
    /// removed file's permission bits, to create it again as it was.
    pub fn remove(&self, path: &str, expected: Expected<'_>) -> Result<u32, WorkspaceError> {
        let at = self.locate(path)?;
        let (Some(name), parent) = (at.rel.file_name(), at.rel.parent()) else {
            return Err(WorkspaceError::NotAFile(at.asked));
        };
        let here = Located {
            root: at.root,
            rel: parent.unwrap_or(Path::new("")).to_owned(),
            asked: at.asked.clone(),
        };
        let dir = self.open_beneath(&here, OFlags::RDONLY | OFlags::DIRECTORY)?;
        let mode = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => st.st_mode & 0o7777,
                FileType::Symlink => return Err(WorkspaceError::IsALink(at.asked.clone())),
                _ => return Err(WorkspaceError::NotAFile(at.asked.clone())),
            },
            Err(rustix::io::Errno::NOENT) => return Err(WorkspaceError::NotFound(at.asked)),
            Err(e) => return Err(io_error(&at.asked, e)),
        };
        if !holds(&dir, name, expected).map_err(|error| WorkspaceError::Io {
            path: at.asked.clone(),
            error,
        })? {
            return Err(WorkspaceError::Changed(at.asked));
        }
        rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(|e| io_error(&at.asked, e))?;
        let _ = rustix::fs::fsync(&dir);
        Ok(mode)
    }

    /// The parent directory's descriptor, creating what is missing of it;
    /// also the directories created (relative to the folder).
    fn parent_dir(
        &self,
        at: &Located,
        parent: &Path,
    ) -> Result<(OwnedFd, Vec<PathBuf>), WorkspaceError> {
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let here = |rel: &Path| Located {
            root: at.root,
            rel: rel.to_owned(),
            asked: at.asked.clone(),
        };
        match self.open_beneath(&here(parent), dir_flags) {
            Ok(fd) => return Ok((fd, Vec::new())),
            Err(WorkspaceError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        // The deepest directory that exists, then the rest made one by one.
        let parts: Vec<_> = parent.components().collect();
        let mut have = parts.len();
        let mut fd = loop {
            if have == 0 {
                // Not even the folder itself is there any more.
                return Err(WorkspaceError::NotFound(at.asked.clone()));
            }
            have -= 1;
            let prefix: PathBuf = parts[..have].iter().collect();
            match self.open_beneath(&here(&prefix), dir_flags) {
                Ok(fd) => break fd,
                Err(WorkspaceError::NotFound(_)) if have > 0 => continue,
                Err(e) => return Err(e),
            }
        };
        let mut made = Vec::new();
        let mut rel: PathBuf = parts[..have].iter().collect();
        for part in &parts[have..] {
            rel.push(part);
            rustix::fs::mkdirat(&fd, part.as_os_str(), Mode::from_raw_mode(0o777))
                .map_err(|e| io_error(&at.asked, e))?;
            made.push(rel.clone());
            fd = rustix::fs::openat(
                &fd,
                part.as_os_str(),
                dir_flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| io_error(&at.asked, e))?;
        }
        Ok((fd, made))
    }

    /// Writes `name` in `dir` through a temporary file; true if it is new.
    fn write_in(
        &self,
        dir: &OwnedFd,
        name: &std::ffi::OsStr,
        bytes: &[u8],
        expected: Expected<'_>,
        new_mode: u32,
        at: &Located,
    ) -> Result<bool, WorkspaceError> {
        let err = |e| io_error(&at.asked, e);
        let (created, mode) = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile if is_read_only(st.st_mode) => {
                    return Err(WorkspaceError::ReadOnly(at.asked.clone()))
                }
                FileType::RegularFile => (false, Some(Mode::from_raw_mode(st.st_mode & 0o7777))),
                FileType::Symlink => return Err(WorkspaceError::IsALink(at.asked.clone())),
                _ => return Err(WorkspaceError::NotAFile(at.asked.clone())),
            },
            Err(rustix::io::Errno::NOENT) => (true, None),
            Err(e) => return Err(err(e)),
        };
        let (temp, fd) = create_temp(dir, mode.unwrap_or(Mode::from_raw_mode(new_mode & 0o7777)))
            .map_err(|e| io_error(&at.asked, e))?;
        let written = (|| {
            if let Some(mode) = mode {
                // The umask may have taken bits the old file had.
                rustix::fs::fchmod(&fd, mode)?;
            }
            let mut file = std::fs::File::from(fd);
            file.write_all(bytes)?;
            file.sync_all()?;
            if !holds(dir, name, expected)? {
                return Ok(false);
            }
            rustix::fs::renameat(dir, temp.as_str(), dir, name)?;
            Ok::<bool, std::io::Error>(true)
        })();
        match written {
            Ok(true) => {}
            Ok(false) => {
                let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
                return Err(WorkspaceError::Changed(at.asked.clone()));
            }
            Err(error) => {
                let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
                return Err(WorkspaceError::Io {
                    path: at.asked.clone(),
                    error,
                });
            }
        }
        // The rename itself reaches the disk with the directory.
        let _ = rustix::fs::fsync(dir);
        Ok(created)
    }
}

/// Whether `name` in `dir` holds what `expected` says (read without
/// following a link or blocking on a FIFO, no more than the expected size
/// plus one byte).
fn holds(dir: &OwnedFd, name: &std::ffi::OsStr, expected: Expected<'_>) -> std::io::Result<bool> {
    use std::io::Read;
    let want = match expected {
        Expected::Any => return Ok(true),
        Expected::Absent => {
            return match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Err(rustix::io::Errno::NOENT) => Ok(true),
                Err(e) => Err(e.into()),
                Ok(_) => Ok(false),
            }
        }
        Expected::Bytes(b) => b,
    };
    let fd = match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::LOOP) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    if FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) != FileType::RegularFile {
        return Ok(false);
    }
    let mut now = Vec::with_capacity(want.len());
    std::fs::File::from(fd)
        .take(want.len() as u64 + 1)
        .read_to_end(&mut now)?;
    Ok(now == want)
}

/// A fresh temporary file in `dir`, created with `mode` (less the umask)
/// from the start, under a short random name (`.ccb-<16 hex>.tmp`).
fn create_temp(dir: &OwnedFd, mode: Mode) -> rustix::io::Result<(String, OwnedFd)> {
    let mut attempt = 0;
    loop {
        let mut rnd = [0u8; 8];
        // Without randomness, the clock and pid still make a fresh name.
        if getrandom::fill(&mut rnd).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            rnd = (t ^ u64::from(std::process::id()) << 32).to_le_bytes();
        }
        let hex: String = rnd.iter().map(|b| format!("{b:02x}")).collect();
        let name = format!(".ccb-{hex}.tmp");
        match rustix::fs::openat(
            dir,
            name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            mode,
        ) {
            Ok(fd) => return Ok((name, fd)),
            Err(rustix::io::Errno::EXIST) if attempt < 8 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Workspace, WorkspaceError};
    use std::os::unix::fs::PermissionsExt;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::open(&[d.path().to_path_buf()]).unwrap();
        (d, ws)
    }

    fn leftovers(dir: &std::path::Path) -> Vec<String> {
        let mut out = Vec::new();
        for e in walk(dir) {
            let n = e.file_name().unwrap().to_string_lossy().into_owned();
            if n.starts_with(".ccb-") {
                out.push(n);
            }
        }
        out
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                out.extend(walk(&p));
            }
            out.push(p);
        }
        out
    }

    /// Checklist item 38's full disk: the write fails with the system's
    /// own words, the old file keeps its text, and no temporary file or
    /// directory made for the write stays. The disk is a 64 KiB tmpfs,
    /// mounted in a user and mount namespace of this test's own: the test
    /// runs itself again there (`unshare -rm`), and does the writes in that
    /// run.
    #[test]
    fn a_full_disk_keeps_the_old_file_and_leaves_nothing_behind() {
        const IN_NAMESPACE: &str = "CCBRIDGE_TEST_FULL_DISK";
        if std::env::var_os(IN_NAMESPACE).is_none() {
            let name = "write::tests::a_full_disk_keeps_the_old_file_and_leaves_nothing_behind";
            let out = std::process::Command::new("unshare")
                .args(["--user", "--map-root-user", "--mount", "--"])
                .arg(std::env::current_exe().unwrap())
                .args(["--exact", name, "--nocapture", "--test-threads=1"])
                .env(IN_NAMESPACE, "1")
                .output()
                .expect("unshare (util-linux) runs");
            let said = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{said}");
            assert!(
                said.contains("1 passed"),
                "the run in the namespace ran nothing: {said}"
            );
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "ccbridge-full-disk"])
            .arg(d.path())
            .status()
            .unwrap();
        assert!(mounted.success(), "mount tmpfs in the namespace");
        std::fs::write(d.path().join("keep.txt"), "old\n").unwrap();
        let mut filler = std::fs::File::create(d.path().join("filler")).unwrap();
        let full = loop {
            if let Err(e) = std::io::Write::write_all(&mut filler, &[0; 4096]) {
                break e;
            }
        };
        assert_eq!(full.raw_os_error(), Some(28), "{full}");
        let ws = Workspace::open(&[d.path().to_path_buf()]).unwrap();
        let before = walk(d.path());
        for path in ["keep.txt", "new/deep/file.txt"] {
            let err = ws.write_atomic(path, &[b'x'; 32 * 1024]).unwrap_err();
            assert!(
                err.to_string().contains("No space left on device"),
                "{path}: {err}"
            );
            assert_eq!(walk(d.path()), before, "{path}: left behind");
        }
        assert_eq!(
            std::fs::read_to_string(d.path().join("keep.txt")).unwrap(),
            "old\n"
        );
    }

    #[test]
    fn a_new_file_in_new_directories_is_created() {
        let (d, ws) = ws();
        let w = ws
            .write_atomic("src/deep/new.rs", b"fn main() {}\n")
            .unwrap();
        assert!(w.created);
        assert_eq!(
            std::fs::read(d.path().join("src/deep/new.rs")).unwrap(),
            b"fn main() {}\n"
        );
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn an_existing_file_is_replaced_keeping_its_permissions() {
        let (d, ws) = ws();
        let p = d.path().join("run.sh");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o750)).unwrap();
        let w = ws.write_atomic("run.sh", b"new").unwrap();
        assert!(!w.created);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
            0o750
        );
    }

    #[test]
    fn links_are_neither_followed_out_nor_replaced() {
        let (d, ws) = ws();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("victim"), "safe").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("victim"), d.path().join("link")).unwrap();
        assert!(matches!(
            ws.write_atomic("out/victim", b"pwned"),
            Err(WorkspaceError::Escapes(_))
        ));
        assert!(matches!(
            ws.write_atomic("link", b"pwned"),
            Err(WorkspaceError::IsALink(_))
        ));
        assert!(matches!(
            ws.write_atomic("out/new/x", b"pwned"),
            Err(WorkspaceError::Escapes(_))
        ));
        assert_eq!(
            std::fs::read_to_string(outside.path().join("victim")).unwrap(),
            "safe"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
        assert!(ws.write_atomic("../x", b"x").is_err());
        assert!(ws.write_atomic("/etc/x", b"x").is_err());
    }

    /// Issue 20, item 6: the temporary file was created `0666 & ~umask`
    /// and only then narrowed to the old file's mode, so another local
    /// user could open a private file's new text in between (won 1 time
    /// in 14). It is created with its final mode.
    #[test]
    fn the_temporary_file_of_a_private_file_is_private_from_its_creation() {
        let d = tempfile::tempdir().unwrap();
        let dir = rustix::fs::open(
            d.path(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let (name, fd) = super::create_temp(&dir, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        let st = rustix::fs::fstat(&fd).unwrap();
        assert_eq!(st.st_mode & 0o777, 0o600, "{name} was created wider");
        // And through the whole write: the file keeps its mode.
        let (d, ws) = ws();
        let p = d.path().join("secret");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        ws.write_atomic("secret", b"new secret").unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
            0o600
        );
    }

    /// A file made read-only was replaced all the same (renaming over it
    /// needs only the folder's write permission): refused, untouched.
    #[test]
    fn regression_a_read_only_file_is_not_written() {
        use std::os::unix::fs::PermissionsExt;
        let (d, ws) = ws();
        let p = d.path().join("locked.txt");
        std::fs::write(&p, "keep\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
        let err = ws.write_atomic("locked.txt", b"changed\n").unwrap_err();
        assert!(matches!(err, WorkspaceError::ReadOnly(_)), "{err}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "keep\n");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o444
        );
    }

    /// Issue 20, item 12: the temporary name was the file's name plus about
    /// 30 bytes, so a legal 250-byte name could not be written.
    #[test]
    fn a_file_with_a_name_at_the_length_limit_can_be_written() {
        let (d, ws) = ws();
        let name = "n".repeat(250);
        ws.write_atomic(&name, b"long\n").unwrap();
        assert_eq!(std::fs::read(d.path().join(&name)).unwrap(), b"long\n");
        ws.write_atomic(&name, b"again\n").unwrap();
        assert_eq!(std::fs::read(d.path().join(&name)).unwrap(), b"again\n");
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn a_replace_expecting_other_contents_writes_nothing() {
        use super::Expected;
        let (d, ws) = ws();
        let p = d.path().join("a.txt");
        std::fs::write(&p, "newer\n").unwrap();
        assert!(matches!(
            ws.replace("a.txt", b"mine\n", Expected::Bytes(b"older\n")),
            Err(WorkspaceError::Changed(_))
        ));
        assert!(matches!(
            ws.replace("a.txt", b"mine\n", Expected::Absent),
            Err(WorkspaceError::Changed(_))
        ));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "newer\n");
        assert!(leftovers(d.path()).is_empty());
        ws.replace("a.txt", b"mine\n", Expected::Bytes(b"newer\n"))
            .unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "mine\n");
        // A file that appeared where none was expected.
        assert!(matches!(
            ws.replace("b.txt", b"x", Expected::Bytes(b"")),
            Err(WorkspaceError::Changed(_))
        ));
        ws.replace("b.txt", b"x", Expected::Absent).unwrap();
    }

    #[test]
    fn a_failed_write_leaves_nothing_behind() {
        let (d, ws) = ws();
        std::fs::create_dir(d.path().join("adir")).unwrap();
        assert!(matches!(
            ws.write_atomic("adir", b"x"),
            Err(WorkspaceError::NotAFile(_))
        ));
        // A file where a directory is needed.
        std::fs::write(d.path().join("blocker"), "b").unwrap();
        assert!(ws.write_atomic("blocker/x/y", b"x").is_err());
        assert_eq!(
            std::fs::read_to_string(d.path().join("blocker")).unwrap(),
            "b"
        );
        assert!(leftovers(d.path()).is_empty());
        assert!(ws.write_atomic(".", b"x").is_err());
    }

    #[test]
    fn remove_takes_only_the_expected_file() {
        use crate::Expected;
        let (d, ws) = ws();
        let p = d.path().join("made.txt");
        std::fs::write(&p, "agent's\n").unwrap();
        assert!(matches!(
            ws.remove("made.txt", Expected::Bytes(b"other\n")),
            Err(WorkspaceError::Changed(_))
        ));
        assert!(p.exists());
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("link")).unwrap();
        assert!(matches!(
            ws.remove("link", Expected::Any),
            Err(WorkspaceError::IsALink(_))
        ));
        std::fs::create_dir(d.path().join("adir")).unwrap();
        assert!(matches!(
            ws.remove("adir", Expected::Any),
            Err(WorkspaceError::NotAFile(_))
        ));
        ws.remove("made.txt", Expected::Bytes(b"agent's\n"))
            .unwrap();
        assert!(!p.exists());
        assert!(matches!(
            ws.remove("made.txt", Expected::Any),
            Err(WorkspaceError::NotFound(_))
        ));
        assert!(ws.remove("../x", Expected::Any).is_err());
    }
}
