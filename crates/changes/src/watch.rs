//! Hearing about every change in the workspace folders: inotify on each
//! directory that is not ignored.
//!
//! Editors watch a tree the same way (one watch per directory, ignored
//! directories such as `target/` or `node_modules/` never entered), so a
//! 100,000-file tree costs one watch per directory and nothing per file.
//! `.gitignore` files are read as the walk meets them (and again when one
//! changes); `.git` is never watched. A new directory is watched and
//! walked at once, since files may have been created in it before its
//! watch existed. When the kernel's watch limit is reached, the directories
//! left over are not watched and [`Watcher::limit`] says so, for the page
//! to tell the user (`fs.inotify.max_user_watches`).

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What one call of [`Watcher::wait`] heard.
#[derive(Debug, Default)]
pub struct Heard {
    /// Files that may have changed (created, written, removed, renamed).
    pub files: Vec<PathBuf>,
    /// The kernel dropped events: anything may have changed.
    pub overflow: bool,
}

pub struct Watcher {
    fd: OwnedFd,
    dirs: HashMap<i32, PathBuf>,
    roots: Vec<PathBuf>,
    ignores: HashMap<PathBuf, Arc<Gitignore>>,
    /// Why some directories are not watched.
    limit: Option<String>,
}

const DIR_EVENTS: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::DELETE)
    .union(WatchFlags::MODIFY)
    .union(WatchFlags::CLOSE_WRITE)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::EXCL_UNLINK)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::DONT_FOLLOW);

/// Whether `rules` (from the root down) ignore a path, each asked by
/// `matched`: the deepest that says anything decides.
fn ignored_by<'a>(
    rules: &'a [Arc<Gitignore>],
    matched: impl Fn(&'a Gitignore) -> ignore::Match<&'a ignore::gitignore::Glob>,
) -> bool {
    for gi in rules.iter().rev() {
        let m = matched(gi);
        if m.is_ignore() {
            return true;
        }
        if m.is_whitelist() {
            return false;
        }
    }
    false
}

/// Whether `name` is one of ccbridge's own temporary files (an atomic
/// write in progress: `.ccb-<16 hex>.tmp`).
fn own_temp(name: &str) -> bool {
    name.len() == 25 && name.starts_with(".ccb-") && name.ends_with(".tmp")
}

impl Watcher {
    /// Watches `roots` (canonical folders) and returns the files found in
    /// them, not ignored.
    pub fn start(roots: &[PathBuf]) -> std::io::Result<(Watcher, Vec<PathBuf>)> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
        let mut w = Watcher {
            fd,
            dirs: HashMap::new(),
            roots: roots.to_vec(),
            ignores: HashMap::new(),
            limit: None,
        };
        let mut files = Vec::new();
        for r in roots {
            w.walk(r, &mut files);
        }
        Ok((w, files))
    }

    /// How many directories are watched.
    pub fn watched(&self) -> usize {
        self.dirs.len()
    }

    /// Why some directories are not watched, if they are not.
    pub fn limit(&self) -> Option<&str> {
        self.limit.as_deref()
    }

    /// Watches `dir` and everything below it that is not ignored, adding
    /// the files found to `files`. Each directory carries the `.gitignore`
    /// files that apply to it, from the root down, so an entry is matched
    /// against those alone: its parents were not ignored, or the walk
    /// would not have reached it (matching every parent again, by path
    /// lookups, for each of 100,000 files was most of a large tree's
    /// start-up).
    fn walk(&mut self, dir: &Path, files: &mut Vec<PathBuf>) {
        let mut stack = vec![(dir.to_path_buf(), self.ignores_above(dir))];
        while let Some((dir, mut rules)) = stack.pop() {
            if let Some(gi) = self.load_ignore(&dir) {
                rules.push(gi);
            }
            match inotify::add_watch(&self.fd, &dir, DIR_EVENTS) {
                Ok(wd) => {
                    self.dirs.insert(wd, dir.clone());
                }
                Err(rustix::io::Errno::NOSPC) => {
                    self.limit.get_or_insert_with(|| {
                        format!(
                            "the system's limit of watched folders is reached (fs.inotify.max_user_watches); changes in {} and other folders are not seen",
                            dir.display()
                        )
                    });
                    continue;
                }
                Err(_) => continue,
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let Ok(kind) = e.file_type() else { continue };
                let name = e.file_name();
                let Some(name) = name.to_str() else { continue };
                if name == ".git" || own_temp(name) {
                    continue;
                }
                let path = e.path();
                if kind.is_dir() {
                    if !ignored_by(&rules, |gi| gi.matched(&path, true)) {
                        stack.push((path, rules.clone()));
                    }
                } else if kind.is_file() && !ignored_by(&rules, |gi| gi.matched(&path, false)) {
                    files.push(path);
                }
            }
        }
    }

    /// The `.gitignore` rules of the directories above `dir` up to its
    /// root, from the root down.
    fn ignores_above(&self, dir: &Path) -> Vec<Arc<Gitignore>> {
        let Some(root) = self.roots.iter().find(|r| dir.starts_with(r)) else {
            return Vec::new();
        };
        let mut rules: Vec<Arc<Gitignore>> = dir
            .ancestors()
            .skip(1)
            .take_while(|d| d.starts_with(root))
            .filter_map(|d| self.ignores.get(d).cloned())
            .collect();
        rules.reverse();
        rules
    }

    /// Reads `dir`'s `.gitignore` (again), and returns its rules.
    fn load_ignore(&mut self, dir: &Path) -> Option<Arc<Gitignore>> {
        let file = dir.join(".gitignore");
        if !file.is_file() {
            self.ignores.remove(dir);
            return None;
        }
        let mut b = GitignoreBuilder::new(dir);
        let _ = b.add(&file);
        let gi = Arc::new(b.build().ok()?);
        self.ignores.insert(dir.to_path_buf(), gi.clone());
        Some(gi)
    }

    /// Whether `path` is ignored: `.git`, ccbridge's temporary files, or
    /// what the `.gitignore` files from its folder down say.
    pub fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == ".git" || own_temp(name) {
            return true;
        }
        let Some(root) = self.roots.iter().find(|r| path.starts_with(r)) else {
            return true;
        };
        let rel = path.strip_prefix(root).unwrap_or(path);
        if rel.components().any(|c| c.as_os_str() == ".git") {
            return true;
        }
        // Its parents may be ignored too (a path from an event, or after a
        // .gitignore changed): each rule matches them as well.
        ignored_by(&self.ignores_above(path), |gi| {
            gi.matched_path_or_any_parents(path, is_dir)
        })
    }

    /// Waits up to `timeout` for events and returns what they were about.
    pub fn wait(&mut self, timeout: Duration) -> std::io::Result<Heard> {
        let mut heard = Heard::default();
        let mut fds = [rustix::event::PollFd::new(
            &self.fd,
            rustix::event::PollFlags::IN,
        )];
        let ts = rustix::event::Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: timeout.subsec_nanos() as i64,
        };
        match rustix::event::poll(&mut fds, Some(&ts)) {
            Ok(0) => return Ok(heard),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(heard),
            Err(e) => return Err(e.into()),
        }
        let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut new_dirs = Vec::new();
        let mut ignore_files = Vec::new();
        {
            let mut reader = inotify::Reader::new(self.fd.as_fd(), &mut buf);
            loop {
                let ev = match reader.next() {
                    Ok(ev) => ev,
                    Err(rustix::io::Errno::AGAIN) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(e.into()),
                };
                let flags = ev.events();
                if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                    heard.overflow = true;
                    continue;
                }
                let Some(dir) = self.dirs.get(&ev.wd()) else {
                    continue;
                };
                if flags.contains(ReadFlags::IGNORED) {
                    self.dirs.remove(&ev.wd());
                    continue;
                }
                let Some(name) = ev.file_name() else { continue };
                let Ok(name) = name.to_str() else { continue };
                let path = dir.join(name);
                if flags.contains(ReadFlags::ISDIR) {
                    if flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
                        new_dirs.push(path);
                    }
                    continue;
                }
                if name == ".gitignore" {
                    ignore_files.push(dir.clone());
                }
                heard.files.push(path);
            }
        }
        for d in ignore_files {
            let _ = self.load_ignore(&d);
        }
        for d in new_dirs {
            if !self.ignored(&d, true) {
                let mut found = Vec::new();
                self.walk(&d, &mut found);
                heard.files.extend(found);
            }
        }
        heard.files.retain(|f| !self.ignored(f, false));
        heard.files.sort();
        heard.files.dedup();
        Ok(heard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn wait_for(w: &mut Watcher, want: &Path) -> bool {
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            let h = w.wait(Duration::from_millis(200)).unwrap();
            if h.files.iter().any(|f| f == want) {
                return true;
            }
        }
        false
    }

    #[test]
    fn hears_files_in_new_folders_and_not_ignored_ones() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::create_dir(root.join("target")).unwrap();
        std::fs::write(root.join("a.rs"), "a").unwrap();
        let (mut w, files) = Watcher::start(std::slice::from_ref(&root)).unwrap();
        assert!(files.contains(&root.join("a.rs")));
        assert!(files.iter().all(|f| !f.starts_with(root.join("target"))));
        // Only the root is watched: target/ is ignored.
        assert_eq!(w.watched(), 1);
        std::fs::write(root.join("target/x.o"), "o").unwrap();
        std::fs::write(root.join("debug.log"), "l").unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/deep/new.rs"), "n").unwrap();
        assert!(wait_for(&mut w, &root.join("src/deep/new.rs")));
        std::fs::write(root.join("a.rs"), "b").unwrap();
        assert!(wait_for(&mut w, &root.join("a.rs")));
        assert!(w.ignored(&root.join("debug.log"), false));
        assert!(w.ignored(&root.join("target/x.o"), false));
        assert!(w.ignored(&root.join(".ccb-0123456789abcdef.tmp"), false));
        assert!(!w.ignored(&root.join("src/deep/new.rs"), false));
    }

    #[test]
    fn the_walk_applies_nested_gitignores_deepest_first() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n").unwrap();
        std::fs::create_dir_all(root.join("logs/build")).unwrap();
        std::fs::create_dir_all(root.join("src/gen")).unwrap();
        std::fs::write(root.join("logs/.gitignore"), "!keep.log\n").unwrap();
        std::fs::write(root.join("src/.gitignore"), "gen/\n").unwrap();
        for f in [
            "a.log",
            "logs/keep.log",
            "logs/other.log",
            "logs/build/x",
            "src/gen/g.rs",
            "src/m.rs",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let (w, files) = Watcher::start(std::slice::from_ref(&root)).unwrap();
        let mut found: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                ".gitignore",
                "logs/.gitignore",
                "logs/keep.log",
                "src/.gitignore",
                "src/m.rs"
            ]
        );
        // root, logs, src: build/ (in logs) and src/gen are not watched.
        assert_eq!(w.watched(), 3);
        // The event path's check agrees with the walk's.
        assert!(!w.ignored(&root.join("logs/keep.log"), false));
        assert!(w.ignored(&root.join("logs/other.log"), false));
        assert!(w.ignored(&root.join("src/gen/g.rs"), false));
    }
}
