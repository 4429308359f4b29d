//! What each file held when the session began: the left side of every
//! diff in the session review.
//!
//! A watcher hears of a change after it happened, when the old content is
//! gone, so the old content has to be known in advance without copying a
//! whole tree. In a git work tree it mostly is: a file git reports clean
//! holds exactly its blob in `HEAD` (read with `git cat-file --filters`, so
//! line-ending and smudge filters apply as in the checkout), and only the
//! few files that differ from `HEAD` at the start (modified, staged,
//! untracked) are copied now. The commit is remembered by id, so commits
//! the agent makes later change nothing. Outside git, the files not
//! ignored are copied up to a budget. A file that did not exist at the
//! start has no earlier content ("created"); a file beyond the budget has
//! an unknown one (listed, never reverted).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Largest file copied at the start.
pub const MAX_SNAPSHOT_FILE: u64 = 1 << 20;
/// Most bytes copied at the start, in all.
pub const SNAPSHOT_BUDGET: u64 = 64 << 20;

/// What a file held at the start of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Before {
    /// It did not exist.
    Absent,
    /// These bytes.
    Bytes(Vec<u8>),
    /// It existed, but its content was not kept (too large, or over the
    /// budget, or git could not give it).
    Unknown,
}

/// What a file that was there at the start is created again as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A regular file with these permission bits (less the umask when
    /// created): a deleted script comes back executable.
    File(u32),
    /// A symbolic link in git (mode 120000): its "content" is the target's
    /// name, which written as a file would be another file.
    Link,
}

/// One git work tree holding (part of) a workspace folder.
#[derive(Debug)]
struct Repo {
    top: PathBuf,
    /// `HEAD` at the start (None: no commit yet).
    commit: Option<String>,
}

/// The state of the workspace at the session's start.
#[derive(Debug, Default)]
pub struct Baseline {
    repos: Vec<Repo>,
    /// Files copied at the start: dirty ones in git, all outside it.
    copies: HashMap<PathBuf, Before>,
    /// The permission bits of the files there at the start and copied.
    modes: HashMap<PathBuf, u32>,
    /// What is left of [`SNAPSHOT_BUDGET`].
    budget: u64,
}

impl Baseline {
    /// Takes the baseline of `folders` (absolute, canonical). `files` are
    /// the files not ignored, as the watcher found them; used outside git.
    pub fn take(folders: &[PathBuf], files: &[PathBuf]) -> Baseline {
        let (mut b, plain) = Baseline::of_git(folders);
        b.copy_files(&plain, files);
        b
    }

    /// The part of the baseline git gives (the commit, and copies of the
    /// files that differ from it), and the folders outside git, whose
    /// files [`Self::copy_files`] copies. It needs no list of files, so it
    /// runs while the watcher walks the tree (each takes about as long on
    /// a large one).
    pub fn of_git(folders: &[PathBuf]) -> (Baseline, Vec<PathBuf>) {
        let mut b = Baseline {
            budget: SNAPSHOT_BUDGET,
            ..Baseline::default()
        };
        let mut plain = Vec::new();
        for folder in folders {
            match git_repo(folder) {
                Some(repo) => {
                    for f in dirty_files(&repo.top, folder) {
                        b.copy(f);
                    }
                    b.repos.push(repo);
                }
                None => plain.push(folder.clone()),
            }
        }
        (b, plain)
    }

    /// Copies the `files` (as the watcher found them) that are in the
    /// folders `plain`, outside git, within the budget.
    pub fn copy_files(&mut self, plain: &[PathBuf], files: &[PathBuf]) {
        for f in files
            .iter()
            .filter(|f| plain.iter().any(|p| f.starts_with(p)))
        {
            self.copy(f.clone());
        }
    }

    fn copy(&mut self, path: PathBuf) {
        let (before, mode) = copy(&path, &mut self.budget);
        if let Some(mode) = mode {
            self.modes.insert(path.clone(), mode);
        }
        self.copies.insert(path, before);
    }

    /// What `path`, there at the start, is created again as: its mode when
    /// copied, else its mode in the commit, else a plain file.
    pub fn shape(&self, path: &Path) -> Shape {
        const PLAIN: Shape = Shape::File(ccbridge_workspace::NEW_FILE_MODE);
        if let Some(m) = self.modes.get(path) {
            return Shape::File(*m);
        }
        let Some((repo, commit, rel)) = self.in_commit(path) else {
            return PLAIN;
        };
        // `<mode> blob <id>\t<name>`; git records only the executable bit.
        let out = git(&repo.top, &["ls-tree", "-z", commit, "--", rel]).unwrap_or_default();
        match out.split(|b| *b == b' ').next() {
            Some(b"100755") => Shape::File(0o777),
            Some(b"120000") => Shape::Link,
            _ => PLAIN,
        }
    }

    /// The repository holding `path`: nested ones first (the deepest top
    /// wins).
    fn repo_of(&self, path: &Path) -> Option<&Repo> {
        self.repos
            .iter()
            .filter(|r| path.starts_with(&r.top))
            .max_by_key(|r| r.top.as_os_str().len())
    }

    /// The repository holding `path`, its commit and `path` within it.
    fn in_commit<'a>(&'a self, path: &'a Path) -> Option<(&'a Repo, &'a str, &'a str)> {
        let repo = self.repo_of(path)?;
        let rel = path.strip_prefix(&repo.top).ok()?.to_str()?;
        Some((repo, repo.commit.as_deref()?, rel))
    }

    /// What `path` held at the start.
    pub fn before(&self, path: &Path) -> Before {
        if let Some(c) = self.copies.get(path) {
            return c.clone();
        }
        let Some(repo) = self.repo_of(path) else {
            // Outside git, every file there at the start was copied or is
            // recorded as unknown.
            return Before::Absent;
        };
        // Not copied: it was as in the commit, or absent from both.
        let Ok(rel) = path.strip_prefix(&repo.top) else {
            return Before::Unknown;
        };
        let Some(commit) = &repo.commit else {
            return Before::Absent;
        };
        let Some(rel) = rel.to_str() else {
            return Before::Unknown;
        };
        let out = Command::new("git")
            .arg("-C")
            .arg(&repo.top)
            .args(["cat-file", "--filters"])
            .arg(format!("{commit}:{rel}"))
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => Before::Bytes(o.stdout),
            // Not in the commit: it did not exist (an untracked file would
            // have been copied).
            _ if git(&repo.top, &["cat-file", "-e", &format!("{commit}:{rel}")]).is_none() => {
                Before::Absent
            }
            _ => Before::Unknown,
        }
    }
}

/// A file's content for the baseline, within the budget, and its
/// permission bits when it is a file.
fn copy(path: &Path, budget: &mut u64) -> (Before, Option<u32>) {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(
            rustix::fs::OFlags::NOFOLLOW.bits() as i32 | rustix::fs::OFlags::NONBLOCK.bits() as i32,
        )
        .open(path);
    use std::os::unix::fs::PermissionsExt;
    let Ok(file) = file else {
        return (Before::Absent, None);
    };
    let (mode, len) = match file.metadata() {
        Ok(m) if m.is_file() => (m.permissions().mode() & 0o7777, m.len()),
        _ => return (Before::Absent, None),
    };
    if len > MAX_SNAPSHOT_FILE || len > *budget {
        return (Before::Unknown, Some(mode));
    }
    let mut bytes = Vec::new();
    let before = match file.take(MAX_SNAPSHOT_FILE + 1).read_to_end(&mut bytes) {
        Ok(n) if (n as u64) <= MAX_SNAPSHOT_FILE => {
            *budget = budget.saturating_sub(n as u64);
            Before::Bytes(bytes)
        }
        _ => Before::Unknown,
    };
    (before, Some(mode))
}

fn git(dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

fn trim_line(mut b: Vec<u8>) -> Option<String> {
    while b.last().is_some_and(|c| *c == b'\n' || *c == b'\r') {
        b.pop();
    }
    String::from_utf8(b).ok().filter(|s| !s.is_empty())
}

/// The git work tree `folder` is in, and its commit. What the commit holds
/// is asked per file when a file changes ([`Baseline::before`]), never
/// listed for the whole tree.
fn git_repo(folder: &Path) -> Option<Repo> {
    let top = PathBuf::from(trim_line(git(folder, &["rev-parse", "--show-toplevel"])?)?);
    let top = top.canonicalize().unwrap_or(top);
    let commit = git(&top, &["rev-parse", "--verify", "-q", "HEAD"]).and_then(trim_line);
    Some(Repo { top, commit })
}

/// The files under `folder` that differ from `HEAD` (modified, staged,
/// deleted, untracked, not ignored), absolute. A deleted one is copied as
/// absent, so a file created there later is new.
fn dirty_files(top: &Path, folder: &Path) -> Vec<PathBuf> {
    let Some(out) = git(
        folder,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--",
            ".",
        ],
    ) else {
        return Vec::new();
    };
    out.split(|b| *b == 0)
        .filter(|e| e.len() > 3)
        .filter_map(|e| {
            let path = std::str::from_utf8(&e[3..]).ok()?;
            Some(top.join(path))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn a_git_tree_gives_head_for_clean_files_and_copies_of_the_rest() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        run(&root, &["init", "-q"]);
        std::fs::write(root.join("clean.txt"), "committed\n").unwrap();
        std::fs::write(root.join("dirty.txt"), "committed\n").unwrap();
        std::fs::write(root.join("gone.txt"), "committed\n").unwrap();
        run(&root, &["add", "."]);
        run(&root, &["commit", "-qm", "one"]);
        std::fs::write(root.join("dirty.txt"), "edited before the session\n").unwrap();
        std::fs::remove_file(root.join("gone.txt")).unwrap();
        std::fs::write(root.join("untracked.txt"), "mine\n").unwrap();
        let b = Baseline::take(std::slice::from_ref(&root), &[]);
        // The session begins; the agent changes everything and commits.
        std::fs::write(root.join("clean.txt"), "agent\n").unwrap();
        std::fs::write(root.join("dirty.txt"), "agent\n").unwrap();
        run(&root, &["commit", "-qam", "two"]);
        assert_eq!(
            b.before(&root.join("clean.txt")),
            Before::Bytes(b"committed\n".to_vec())
        );
        assert_eq!(
            b.before(&root.join("dirty.txt")),
            Before::Bytes(b"edited before the session\n".to_vec())
        );
        assert_eq!(
            b.before(&root.join("untracked.txt")),
            Before::Bytes(b"mine\n".to_vec())
        );
        assert_eq!(b.before(&root.join("new.txt")), Before::Absent);
        // Deleted before the session (still in the commit): created later,
        // it is new, not the commit's.
        assert_eq!(b.before(&root.join("gone.txt")), Before::Absent);
    }

    #[test]
    fn a_file_comes_back_as_git_or_the_copy_had_it_and_a_link_is_not_a_file() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        run(&root, &["init", "-q"]);
        std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::write(root.join("plain.txt"), "p\n").unwrap();
        std::os::unix::fs::symlink("plain.txt", root.join("link")).unwrap();
        run(&root, &["add", "."]);
        run(&root, &["commit", "-qm", "one"]);
        std::fs::write(root.join("mine.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(root.join("mine.sh"), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        let b = Baseline::take(std::slice::from_ref(&root), &[]);
        assert_eq!(b.shape(&root.join("run.sh")), Shape::File(0o777));
        assert_eq!(b.shape(&root.join("plain.txt")), Shape::File(0o666));
        assert_eq!(b.shape(&root.join("link")), Shape::Link);
        // Untracked, so copied: its own mode.
        assert_eq!(b.shape(&root.join("mine.sh")), Shape::File(0o700));
        assert_eq!(b.shape(&root.join("new.txt")), Shape::File(0o666));
    }

    #[test]
    fn outside_git_the_files_found_are_copied() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let f = root.join("a.txt");
        std::fs::write(&f, "a\n").unwrap();
        let big = root.join("big.bin");
        std::fs::write(&big, vec![b'x'; MAX_SNAPSHOT_FILE as usize + 1]).unwrap();
        let b = Baseline::take(std::slice::from_ref(&root), &[f.clone(), big.clone()]);
        assert_eq!(b.before(&f), Before::Bytes(b"a\n".to_vec()));
        assert_eq!(b.before(&big), Before::Unknown);
        assert_eq!(b.before(&root.join("later.txt")), Before::Absent);
    }
}
