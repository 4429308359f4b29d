//! Turning a path someone handed us into (folder, relative path), by
//! components, before anything is opened.

use crate::WorkspaceError;
use rustix::fs::{Mode, OFlags};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// A path known to name something beneath a workspace folder (if it
/// exists), not yet opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Which folder.
    pub root: usize,
    /// Beneath it: normal components only (empty for the folder itself).
    pub rel: PathBuf,
    /// The path as it was asked for, for messages.
    pub asked: String,
}

/// Locates `path` among `roots`: an absolute path must lie inside one of
/// them (compared component by component, so `/ws-evil` is not inside
/// `/ws`); a relative one is taken from the first. `..` is refused
/// outright, `.` ignored; `~` is not expanded (it is a name like any
/// other); a `file://` URL is not a path.
pub fn locate<'a>(
    roots: impl Iterator<Item = &'a Path> + Clone,
    path: &str,
) -> Result<Located, WorkspaceError> {
    let asked = path.to_owned();
    if path.contains('\0') || path.starts_with("file:") {
        return Err(WorkspaceError::Invalid(asked));
    }
    let p = Path::new(path);
    if p.components().any(|c| c == Component::ParentDir) {
        return Err(WorkspaceError::ParentComponent(asked));
    }
    let normal = |p: &Path| -> PathBuf {
        p.components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .collect()
    };
    if p.is_absolute() {
        for (root, dir) in roots.enumerate() {
            if let Ok(rest) = p.strip_prefix(dir) {
                return Ok(Located {
                    root,
                    rel: normal(rest),
                    asked,
                });
            }
        }
        return Err(WorkspaceError::Outside(asked));
    }
    if roots.clone().next().is_none() {
        return Err(WorkspaceError::Outside(asked));
    }
    Ok(Located {
        root: 0,
        rel: normal(p),
        asked,
    })
}

/// Opens `rel` beneath `dir` one component at a time with `O_NOFOLLOW`,
/// refusing every symbolic link (`ELOOP`): the fallback for kernels
/// without `openat2`.
pub fn open_without_links(
    dir: &OwnedFd,
    rel: &Path,
    flags: OFlags,
) -> Result<OwnedFd, rustix::io::Errno> {
    let parts: Vec<_> = rel
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    let mut current: OwnedFd = rustix::fs::openat(
        dir,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let f = if last {
            flags | OFlags::NOFOLLOW
        } else {
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
        };
        current = match rustix::fs::openat(current.as_fd(), part.as_os_str(), f, Mode::empty()) {
            Ok(fd) => fd,
            // O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR: call it a link.
            Err(rustix::io::Errno::NOTDIR) if is_link(&current, part.as_os_str()) => {
                return Err(rustix::io::Errno::LOOP)
            }
            Err(e) => return Err(e),
        };
    }
    if parts.is_empty() {
        return rustix::fs::openat(dir, ".", flags, Mode::empty());
    }
    Ok(current)
}

fn is_link(dir: &OwnedFd, name: &std::ffi::OsStr) -> bool {
    rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
    })
}
