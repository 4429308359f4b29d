//! The `.gitignore` files that apply to one directory, read through the
//! workspace's own confined opens.

use crate::{Located, Root};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// `.gitignore` files larger than this are not read.
const MAX_GITIGNORE: u64 = 1 << 20;

/// The matchers of every directory from the folder down to one directory,
/// deepest last.
pub struct Chain(Vec<Gitignore>);

impl Chain {
    /// Loads the `.gitignore` of the folder and of every directory down to
    /// `at`; `open` opens a file beneath the folder (confined).
    pub fn load(root: &Root, at: &Located, open: impl Fn(&Path) -> Option<OwnedFd>) -> Chain {
        let mut dirs: Vec<PathBuf> = vec![PathBuf::new()];
        let mut cur = PathBuf::new();
        for c in at.rel.components() {
            cur.push(c);
            dirs.push(cur.clone());
        }
        let mut out = Vec::new();
        for rel in dirs {
            let Some(fd) = open(&rel.join(".gitignore")) else {
                continue;
            };
            let mut text = String::new();
            if std::fs::File::from(fd)
                .take(MAX_GITIGNORE)
                .read_to_string(&mut text)
                .is_err()
            {
                continue;
            }
            let abs = root.path.join(&rel);
            let mut b = GitignoreBuilder::new(&abs);
            for line in text.lines() {
                let _ = b.add_line(None, line);
            }
            if let Ok(g) = b.build() {
                out.push(g);
            }
        }
        Chain(out)
    }

    /// Whether `path` (absolute) is ignored: the deepest `.gitignore` with
    /// an opinion decides, as in git.
    pub fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for g in self.0.iter().rev() {
            match g.matched(path, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }
}
