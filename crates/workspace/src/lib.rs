//! The user's workspace folders, as ccbridge may touch them.
//!
//! Anything that reads the user's files on someone else's behalf (the
//! browser UI's file viewer, and the workspace tools Claude calls) must
//! stay inside the folders the user opened, whatever path it is handed:
//! `../../etc/passwd`, `/etc/passwd`, `/ws-evil/x` next to `/ws`, a symbolic
//! link pointing out, or a link swapped in while a call runs
//! (security checklist items 26–29). So nothing here builds a path and
//! opens it:
//!
//! - a path is first *located*: split into components, `..` refused, an
//!   absolute path matched against the folders component by component (not
//!   as a string prefix), giving a folder and a relative path;
//! - then it is opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`
//!   from a descriptor of that folder, so the kernel refuses any step out,
//!   symbolic links included, at the moment of the open (no check-then-use
//!   race). Kernels without `openat2` get a walk with `O_NOFOLLOW` that
//!   refuses every symbolic link;
//! - what is opened is checked on the descriptor: a regular file for
//!   reading (FIFOs and devices are refused without blocking, `O_NONBLOCK`),
//!   a size cap enforced while reading;
//! - errors name the path as it was asked for, never where a link leads.
//!
//! Writes ([`Workspace::write_atomic`]) go through a temporary file in the
//! target's directory, opened beneath its folder, renamed over the target.
//!
//! Listings ([`Workspace::list_dir`]) read the directory through its
//! descriptor and leave out what the `.gitignore` files from the folder
//! down say to ignore (and `.git`).

mod gitignore;
mod locate;
mod write;

pub use locate::Located;
pub use write::{is_read_only, Expected, Written, NEW_FILE_MODE};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use serde::Serialize;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Why a workspace path could not be used. Messages name the path as given.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{0} is outside the workspace folders")]
    Outside(String),
    #[error("{0}: `..` is not allowed in workspace paths")]
    ParentComponent(String),
    #[error("{0} is not a valid path")]
    Invalid(String),
    #[error("{0} leads outside the workspace through a symbolic link")]
    Escapes(String),
    #[error("{0} does not exist")]
    NotFound(String),
    #[error("{0} is not a regular file")]
    NotAFile(String),
    #[error("{0} is a symbolic link; write to the file it points to instead")]
    IsALink(String),
    #[error("{0} is not a directory")]
    NotADirectory(String),
    #[error("{0} changed on disk since it was read; nothing was written")]
    Changed(String),
    #[error("{0} is read-only; nothing was written (make it writable first if it is to change)")]
    ReadOnly(String),
    #[error("{path} is larger than {limit} bytes")]
    TooLarge { path: String, limit: u64 },
    #[error("cannot use the workspace folder {}: {error}", path.display())]
    Folder {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
}

/// One workspace folder: its canonical path and a descriptor of it.
#[derive(Debug)]
struct Root {
    path: PathBuf,
    dir: OwnedFd,
}

/// The workspace folders, opened.
#[derive(Debug)]
pub struct Workspace {
    roots: Vec<Root>,
}

/// A file's contents as a viewer can show them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum FileText {
    /// UTF-8 text.
    Text { text: String },
    /// Not UTF-8, or holds NUL bytes: shown as "cannot display".
    Binary { size: u64 },
}

/// A regular file opened beneath a workspace folder.
#[derive(Debug)]
pub struct OpenFile {
    pub file: std::fs::File,
    /// Its size when opened.
    pub size: u64,
    /// The path as it was asked for (for messages).
    pub asked: String,
}

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EntryKind {
    Dir,
    File,
    Symlink,
    Other,
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub name: String,
    pub kind: EntryKind,
}

/// A listing, directories first, then by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    pub entries: Vec<Entry>,
    /// More entries exist than were listed.
    pub truncated: bool,
}

/// How many entries one listing returns at most.
pub const MAX_ENTRIES: usize = 10_000;

impl Workspace {
    /// Opens `folders` (resolved once, here: a folder that is itself a
    /// symbolic link counts as where it points).
    pub fn open(folders: &[PathBuf]) -> Result<Workspace, WorkspaceError> {
        let mut roots = Vec::new();
        for f in folders {
            let err = |error| WorkspaceError::Folder {
                path: f.clone(),
                error,
            };
            let path = std::fs::canonicalize(f).map_err(err)?;
            let dir = rustix::fs::open(
                &path,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| err(e.into()))?;
            roots.push(Root { path, dir });
        }
        Ok(Workspace { roots })
    }

    /// A folder that is the whole file system or the user's home (`$HOME`),
    /// if any: too broad to hand to an agent's tools (keys, shell history,
    /// other projects), so the tools server refuses such a workspace.
    pub fn too_broad(&self) -> Option<&Path> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .and_then(|h| std::fs::canonicalize(h).ok());
        self.folders()
            .find(|f| f.parent().is_none() || home.as_deref() == Some(*f))
    }

    /// The folders' canonical paths.
    pub fn folders(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|r| r.path.as_path())
    }

    /// Where `path` is: absolute and inside a folder, or relative to the
    /// first folder.
    pub fn locate(&self, path: &str) -> Result<Located, WorkspaceError> {
        locate::locate(self.roots.iter().map(|r| r.path.as_path()), path)
    }

    /// The absolute path of a located path.
    pub fn absolute(&self, at: &Located) -> PathBuf {
        self.roots[at.root].path.join(&at.rel)
    }

    /// Opens a located path beneath its folder with `flags` (plus
    /// `O_CLOEXEC`, `O_NOCTTY`).
    fn open_beneath(&self, at: &Located, flags: OFlags) -> Result<OwnedFd, WorkspaceError> {
        let root = &self.roots[at.root];
        let flags = flags | OFlags::CLOEXEC | OFlags::NOCTTY;
        let rel: &Path = if at.rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &at.rel
        };
        let opened = rustix::fs::openat2(
            &root.dir,
            rel,
            flags,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        );
        match opened {
            Err(rustix::io::Errno::NOSYS) => locate::open_without_links(&root.dir, rel, flags)
                .map_err(|e| io_error(&at.asked, e)),
            other => other.map_err(|e| io_error(&at.asked, e)),
        }
    }

    /// Opens a directory, confined to the workspace: a command's working
    /// directory is entered through this descriptor (`fchdir`), so a
    /// symlink swapped in after the check cannot send it elsewhere.
    /// Returns the descriptor and the directory's absolute path (for
    /// showing).
    pub fn open_dir(&self, path: &str) -> Result<(OwnedFd, PathBuf), WorkspaceError> {
        let at = self.locate(path)?;
        let fd = self.open_beneath(&at, OFlags::RDONLY | OFlags::DIRECTORY)?;
        Ok((fd, self.absolute(&at)))
    }

    /// Opens a regular file for reading, confined to the workspace. FIFOs,
    /// devices and directories are refused without blocking (opened with
    /// `O_NONBLOCK`, which changes nothing for a regular file's reads).
    pub fn open_file(&self, path: &str) -> Result<OpenFile, WorkspaceError> {
        let at = self.locate(path)?;
        let fd = self.open_beneath(&at, OFlags::RDONLY | OFlags::NONBLOCK)?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| io_error(&at.asked, e))?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(WorkspaceError::NotAFile(at.asked));
        }
        Ok(OpenFile {
            file: std::fs::File::from(fd),
            size: stat.st_size as u64,
            asked: at.asked,
        })
    }

    /// Reads a text file of at most `limit` bytes. FIFOs, devices and
    /// directories are refused without blocking; the limit is checked on
    /// the opened file and enforced while reading (a file growing under us
    /// cannot push past it).
    pub fn read_text(&self, path: &str, limit: u64) -> Result<FileText, WorkspaceError> {
        let OpenFile { file, size, asked } = self.open_file(path)?;
        if size > limit {
            return Err(WorkspaceError::TooLarge { path: asked, limit });
        }
        let mut bytes = Vec::with_capacity(size as usize);
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| WorkspaceError::Io {
                path: asked.clone(),
                error,
            })?;
        if bytes.len() as u64 > limit {
            return Err(WorkspaceError::TooLarge { path: asked, limit });
        }
        Ok(as_text(bytes))
    }

    /// The entries of a directory, `.gitignore`d ones and `.git` left out,
    /// at most [`MAX_ENTRIES`].
    pub fn list_dir(&self, path: &str) -> Result<Listing, WorkspaceError> {
        let at = self.locate(path)?;
        let fd = self.open_beneath(&at, OFlags::RDONLY | OFlags::DIRECTORY)?;
        let ignores = gitignore::Chain::load(&self.roots[at.root], &at, |rel| {
            self.open_beneath(
                &Located {
                    root: at.root,
                    rel: rel.to_owned(),
                    asked: at.asked.clone(),
                },
                OFlags::RDONLY | OFlags::NONBLOCK,
            )
            .ok()
        });
        let dir_abs = self.absolute(&at);
        let mut entries = Vec::new();
        let mut truncated = false;
        let dir = rustix::fs::Dir::read_from(&fd).map_err(|e| io_error(&at.asked, e))?;
        for entry in dir {
            let entry = entry.map_err(|e| io_error(&at.asked, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." || name == ".git" {
                continue;
            }
            let kind = match entry.file_type() {
                rustix::fs::FileType::Directory => EntryKind::Dir,
                rustix::fs::FileType::RegularFile => EntryKind::File,
                rustix::fs::FileType::Symlink => EntryKind::Symlink,
                rustix::fs::FileType::Unknown => kind_of(&fd, entry.file_name()),
                _ => EntryKind::Other,
            };
            if ignores.ignored(&dir_abs.join(&name), kind == EntryKind::Dir) {
                continue;
            }
            if entries.len() == MAX_ENTRIES {
                truncated = true;
                break;
            }
            entries.push(Entry { name, kind });
        }
        entries.sort_by(|a, b| {
            (a.kind != EntryKind::Dir, &a.name).cmp(&(b.kind != EntryKind::Dir, &b.name))
        });
        Ok(Listing { entries, truncated })
    }
}

/// The kind of an entry whose type `readdir` did not give.
fn kind_of(dir: &OwnedFd, name: &std::ffi::CStr) -> EntryKind {
    match rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => match rustix::fs::FileType::from_raw_mode(st.st_mode) {
            rustix::fs::FileType::Directory => EntryKind::Dir,
            rustix::fs::FileType::RegularFile => EntryKind::File,
            rustix::fs::FileType::Symlink => EntryKind::Symlink,
            _ => EntryKind::Other,
        },
        Err(_) => EntryKind::Other,
    }
}

/// Text when it is UTF-8 without NUL bytes; otherwise binary.
fn as_text(bytes: Vec<u8>) -> FileText {
    let size = bytes.len() as u64;
    if bytes.contains(&0) {
        return FileText::Binary { size };
    }
    match String::from_utf8(bytes) {
        Ok(text) => FileText::Text { text },
        Err(_) => FileText::Binary { size },
    }
}

/// Maps an errno from opening `asked` to what it means here.
fn io_error(asked: &str, e: rustix::io::Errno) -> WorkspaceError {
    match e {
        // RESOLVE_BENEATH refuses a step out with EXDEV; the walk without
        // openat2 refuses any link with ELOOP.
        rustix::io::Errno::XDEV | rustix::io::Errno::LOOP => {
            WorkspaceError::Escapes(asked.to_owned())
        }
        rustix::io::Errno::NOENT => WorkspaceError::NotFound(asked.to_owned()),
        rustix::io::Errno::NOTDIR => WorkspaceError::NotADirectory(asked.to_owned()),
        e => WorkspaceError::Io {
            path: asked.to_owned(),
            error: e.into(),
        },
    }
}

#[cfg(test)]
mod tests;
