//! `list_files`: the entries under a workspace directory, one per line,
//! directories marked with a trailing `/`, optionally recursive.
//!
//! Directories are read through [`Workspace::list_dir`]: opened beneath
//! their folder (a directory swapped for a link during the listing cannot
//! lead outside), `.gitignore`d entries and `.git` left out. Links are
//! listed, never followed. At most `max_entries` (500 by default) are
//! returned, and a cut listing says so.

use ccbridge_workspace::{EntryKind, Workspace, WorkspaceError};

/// Entries returned when no cap is given.
pub const DEFAULT_MAX_ENTRIES: usize = 500;

/// A listing's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Paths relative to the first workspace folder (absolute for other
    /// folders), directories ending in `/`, in walk order: each directory
    /// followed by its contents when recursive.
    pub entries: Vec<String>,
    /// More entries exist than were listed.
    pub truncated: bool,
}

impl Listed {
    /// The answer as text for a model.
    pub fn render(&self) -> String {
        let mut out = self.entries.join("\n");
        if self.entries.is_empty() {
            out.push_str("(empty)");
        }
        out.push('\n');
        if self.truncated {
            out.push_str(&format!(
                "(Only the first {} entries are listed; list a subdirectory for the rest.)\n",
                self.entries.len()
            ));
        }
        out
    }
}

/// Lists `path` (a directory), and everything below it with `recursive`.
pub fn list(
    ws: &Workspace,
    path: &str,
    recursive: bool,
    max_entries: usize,
) -> Result<Listed, WorkspaceError> {
    let at = ws.locate(path)?;
    let mut out = Listed {
        entries: Vec::new(),
        truncated: false,
    };
    // Depth first, pre-order: a directory, then its contents, then its
    // next sibling. An explicit stack: a deep tree cannot overflow ours.
    let root = ws.absolute(&at);
    let top = ws.list_dir(&root.to_string_lossy())?;
    let mut truncated = top.truncated;
    let mut stack = vec![(root, top.entries.into_iter())];
    while let Some((dir, entries)) = stack.last_mut() {
        let Some(e) = entries.next() else {
            stack.pop();
            continue;
        };
        if out.entries.len() == max_entries {
            truncated = true;
            break;
        }
        let abs = dir.join(&e.name);
        let mut name = crate::shown::path(ws, &abs);
        if e.kind == EntryKind::Dir {
            name.push('/');
        }
        out.entries.push(name);
        if e.kind == EntryKind::Dir && recursive {
            // A directory that vanished or is refused mid-walk is skipped.
            if let Ok(below) = ws.list_dir(&abs.to_string_lossy()) {
                truncated |= below.truncated;
                stack.push((abs, below.entries.into_iter()));
            }
        }
    }
    out.truncated = truncated;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for name in files {
            let p = dir.path().join(name);
            if name.ends_with('/') {
                std::fs::create_dir_all(&p).unwrap();
            } else {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, "x").unwrap();
            }
        }
        let ws = Workspace::open(&[dir.path().to_path_buf()]).unwrap();
        (dir, ws)
    }

    #[test]
    fn one_level_with_directories_marked() {
        let (_d, ws) = tree(&["b.txt", "a/x.rs", "c/"]);
        let l = list(&ws, ".", false, 500).unwrap();
        assert_eq!(l.entries, ["a/", "c/", "b.txt"]);
        assert_eq!(l.render(), "a/\nc/\nb.txt\n");
    }

    #[test]
    fn recursive_walks_depth_first_and_respects_gitignore() {
        let (_d, ws) = tree(&[
            ".gitignore",
            "src/lib.rs",
            "src/deep/mod.rs",
            "target/debug/x",
            "README.md",
        ]);
        std::fs::write(_d.path().join(".gitignore"), "target/\n").unwrap();
        let l = list(&ws, ".", true, 500).unwrap();
        assert_eq!(
            l.entries,
            [
                "src/",
                "src/deep/",
                "src/deep/mod.rs",
                "src/lib.rs",
                ".gitignore",
                "README.md"
            ]
        );
        let l = list(&ws, "src", false, 500).unwrap();
        assert_eq!(l.entries, ["src/deep/", "src/lib.rs"]);
    }

    #[test]
    fn the_cap_cuts_and_says_so() {
        let names: Vec<String> = (0..20).map(|i| format!("f{i:02}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let (_d, ws) = tree(&refs);
        let l = list(&ws, ".", true, 5).unwrap();
        assert_eq!(l.entries.len(), 5);
        assert!(l.truncated);
        assert!(l.render().contains("Only the first 5 entries"));
    }

    #[test]
    fn links_are_listed_not_followed_and_outside_paths_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let (d, ws) = tree(&["in.txt"]);
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        let l = list(&ws, ".", true, 500).unwrap();
        assert_eq!(l.entries, ["in.txt", "out"]);
        assert!(list(&ws, "../", false, 500).is_err());
        assert!(list(&ws, "out", false, 500).is_err());
        assert!(list(&ws, "in.txt", false, 500).is_err());
    }
}
