//! `search_files`: a regex over the files under a workspace directory,
//! matches grouped by file with their line numbers and one line of context,
//! ripgrep style (`12:match`, `11-context`).
//!
//! Built on ripgrep's own crates: `ignore` walks the tree in parallel
//! (`.gitignore` and `.ignore` respected, hidden files and `.git` skipped,
//! links not followed; an optional glob narrows the files further, it never
//! brings an ignored one back), `grep-regex` compiles the pattern
//! (with size limits, so a hostile pattern cannot eat the memory) and
//! `grep-searcher` searches each file, skipping binary ones. Each file is
//! opened through the workspace's confined open, so a link or a directory
//! swapped for one during the walk cannot lead the search outside.
//!
//! At most `max_results` matching lines are returned (300 by default); the
//! walk stops once they are found and the answer says it was cut. Which
//! files a cut answer holds depends on the parallel walk: narrow the pattern
//! or the path for a complete one. Files are listed in path order.
//!
//! A search also ends at [`TIME_LIMIT`] (a huge tree, a slow disk), with
//! what it found and saying so, and at once when no one waits for its
//! answer any more ([`Until::abandoned`]: the call was cancelled), so a
//! forgotten search does not keep walking in the background.

use ccbridge_workspace::{Workspace, WorkspaceError};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::{WalkBuilder, WalkState};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Matching lines returned when no cap is given.
pub const DEFAULT_MAX_RESULTS: usize = 300;
/// Files larger than this are not searched.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// A shown line is cut after this many bytes.
const MAX_LINE_BYTES: usize = 500;
/// How long a search walks before it answers with what it found.
pub const TIME_LIMIT: Duration = Duration::from_secs(30);

/// When a search stops before its walk is done.
#[derive(Debug, Clone)]
pub struct Until {
    /// It answers with what it found by then, saying it stopped.
    pub deadline: Instant,
    /// Set when no one waits for the answer any more: the walk ends at the
    /// next file.
    pub abandoned: Arc<AtomicBool>,
}

impl Until {
    /// `limit` from now.
    pub fn after(limit: Duration) -> Until {
        Until {
            deadline: Instant::now() + limit,
            abandoned: Arc::default(),
        }
    }
}

/// One line of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub number: u64,
    pub text: String,
    /// A match, or context around one.
    pub is_match: bool,
}

/// The lines found in one file, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMatches {
    /// Relative to the first workspace folder when it is beneath it, else
    /// absolute: a path `read_file` takes back.
    pub path: String,
    pub lines: Vec<Line>,
}

/// A search's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub files: Vec<FileMatches>,
    /// Matching lines returned.
    pub matches: usize,
    /// More matches exist than were returned.
    pub truncated: bool,
    /// The time limit ended the walk: files it had not reached were not
    /// searched.
    pub timed_out: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error("invalid regex: {0}")]
    Regex(String),
    #[error("invalid file_pattern: {0}")]
    Glob(String),
}

impl Found {
    /// The answer as text for a model: per file its path, then
    /// `N:line` for matches and `N-line` for context, `--` between
    /// separate groups.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for f in &self.files {
            out.push_str(&f.path);
            out.push('\n');
            let mut prev: Option<u64> = None;
            for l in &f.lines {
                if prev.is_some_and(|p| l.number > p + 1) {
                    out.push_str("--\n");
                }
                let sep = if l.is_match { ':' } else { '-' };
                out.push_str(&format!("{}{sep}{}\n", l.number, l.text));
                prev = Some(l.number);
            }
            out.push('\n');
        }
        if self.timed_out {
            out.push_str(&format!(
                "({} after {} s: files the walk had not reached were not searched; narrow the path or the file_pattern.)\n",
                if self.files.is_empty() { "No matches found" } else { "The search stopped" },
                TIME_LIMIT.as_secs()
            ));
        } else if self.files.is_empty() {
            out.push_str("No matches.\n");
        } else if self.truncated {
            out.push_str(&format!(
                "(Only the first {} matching lines are shown; narrow the regex, the path or the file_pattern for the rest.)\n",
                self.matches
            ));
        }
        out
    }
}

/// Collects one file's matches and context, counting matches against the
/// search's cap.
struct Collect<'a> {
    lines: Vec<Line>,
    taken: &'a AtomicUsize,
    cap: usize,
    cut: &'a AtomicBool,
}

fn shown(bytes: &[u8]) -> String {
    match crate::shown::line(bytes, MAX_LINE_BYTES) {
        (text, 0) => text,
        (text, _) => format!("{text} …"),
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        if self.taken.fetch_add(1, Ordering::Relaxed) >= self.cap {
            self.cut.store(true, Ordering::Relaxed);
            return Ok(false);
        }
        self.lines.push(Line {
            number: m.line_number().unwrap_or(0),
            text: shown(m.bytes()),
            is_match: true,
        });
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, std::io::Error> {
        self.lines.push(Line {
            number: c.line_number().unwrap_or(0),
            text: shown(c.bytes()),
            is_match: false,
        });
        Ok(true)
    }
}

/// Searches the files under `path` for `regex`, only those matching the
/// glob `file_pattern` when given, for at most [`TIME_LIMIT`].
pub fn search(
    ws: &Workspace,
    path: &str,
    regex: &str,
    file_pattern: Option<&str>,
    max_results: usize,
) -> Result<Found, SearchError> {
    let until = Until::after(TIME_LIMIT);
    search_until(ws, path, regex, file_pattern, max_results, &until)
}

/// [`search`], ending at `until`.
pub fn search_until(
    ws: &Workspace,
    path: &str,
    regex: &str,
    file_pattern: Option<&str>,
    max_results: usize,
    until: &Until,
) -> Result<Found, SearchError> {
    let at = ws.locate(path)?;
    // The walk starts from a path; first make sure that path, opened
    // component by component, stays inside (a symlink out is refused here
    // rather than walked as an empty directory).
    match ws.open_dir(path) {
        Ok(_) => {}
        Err(WorkspaceError::NotADirectory(_)) => drop(ws.open_file(path)?),
        Err(e) => return Err(e.into()),
    }
    let start = ws.absolute(&at);
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .size_limit(10 << 20)
        .dfa_size_limit(10 << 20)
        .build(regex)
        .map_err(|e| SearchError::Regex(e.to_string()))?;
    let mut walk = WalkBuilder::new(&start);
    walk.hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false);
    // The glob filters files; it is not given to the walker as an
    // override, which would let it bring back ignored and hidden files.
    let only = match file_pattern.filter(|g| !g.is_empty()) {
        Some(glob) => {
            let mut o = OverrideBuilder::new(&start);
            o.add(glob).map_err(|e| SearchError::Glob(e.to_string()))?;
            Some(o.build().map_err(|e| SearchError::Glob(e.to_string()))?)
        }
        None => None,
    };
    let taken = AtomicUsize::new(0);
    let cut = AtomicBool::new(false);
    let late = AtomicBool::new(false);
    let files: Mutex<Vec<FileMatches>> = Mutex::new(Vec::new());
    walk.build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .before_context(1)
            .after_context(1)
            .build();
        let matcher: RegexMatcher = matcher.clone();
        let (taken, cut, late, files, ws, only) = (&taken, &cut, &late, &files, ws, &only);
        Box::new(move |entry| {
            if cut.load(Ordering::Relaxed) || until.abandoned.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            if Instant::now() >= until.deadline {
                late.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            if only
                .as_ref()
                .is_some_and(|o| !o.matched(entry.path(), false).is_whitelist())
            {
                return WalkState::Continue;
            }
            // Opened beneath the folder: never through a link out.
            let Ok(opened) = ws.open_file(&entry.path().to_string_lossy()) else {
                return WalkState::Continue;
            };
            // Size from the open file's own fstat, not a second stat per
            // entry in the walker (`max_filesize`): 100k files, 100k calls.
            if opened.size > MAX_FILE_BYTES {
                return WalkState::Continue;
            }
            let mut sink = Collect {
                lines: Vec::new(),
                taken,
                cap: max_results,
                cut,
            };
            if searcher
                .search_file(&matcher, &opened.file, &mut sink)
                .is_ok()
                && sink.lines.iter().any(|l| l.is_match)
            {
                // Context after the last match kept is dropped when the
                // cap cut the file short.
                while sink.lines.last().is_some_and(|l| !l.is_match) && cut.load(Ordering::Relaxed)
                {
                    sink.lines.pop();
                }
                files
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(FileMatches {
                        path: crate::shown::path(ws, entry.path()),
                        lines: sink.lines,
                    });
            }
            if cut.load(Ordering::Relaxed) {
                WalkState::Quit
            } else {
                WalkState::Continue
            }
        })
    });
    let mut files = files.into_inner().unwrap_or_else(|p| p.into_inner());
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let matches = files
        .iter()
        .map(|f| f.lines.iter().filter(|l| l.is_match).count())
        .sum();
    Ok(Found {
        files,
        matches,
        truncated: cut.into_inner(),
        timed_out: late.into_inner(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let ws = Workspace::open(&[dir.path().to_path_buf()]).unwrap();
        (dir, ws)
    }

    #[test]
    fn a_search_past_its_time_or_abandoned_stops_and_says_so() {
        let (_d, ws) = tree(&[("a.txt", "needle\n"), ("b.txt", "needle\n")]);
        let over = Until {
            deadline: Instant::now(),
            abandoned: Arc::default(),
        };
        let f = search_until(&ws, ".", "needle", None, 300, &over).unwrap();
        assert!(f.timed_out && f.files.is_empty(), "{f:?}");
        assert!(
            f.render()
                .starts_with("(No matches found after 30 s: files the walk had not reached"),
            "{}",
            f.render()
        );
        let gone = Until::after(TIME_LIMIT);
        gone.abandoned.store(true, Ordering::Relaxed);
        let f = search_until(&ws, ".", "needle", None, 300, &gone).unwrap();
        assert!(f.files.is_empty() && !f.timed_out, "{f:?}");
        let f = search(&ws, ".", "needle", None, 300).unwrap();
        assert_eq!((f.files.len(), f.timed_out), (2, false));
    }

    #[test]
    fn matches_come_grouped_by_file_with_a_line_of_context() {
        let (_d, ws) = tree(&[
            ("src/a.rs", "fn one() {}\nfn two() {}\nlet x = 1;\n"),
            ("src/b.rs", "// nothing\n"),
            ("README.md", "fn in docs\n"),
        ]);
        let f = search(&ws, ".", r"fn t\w+", None, 300).unwrap();
        assert_eq!(f.matches, 1);
        assert_eq!(f.files.len(), 1);
        assert_eq!(f.files[0].path, "src/a.rs");
        assert_eq!(
            f.render(),
            "src/a.rs\n1-fn one() {}\n2:fn two() {}\n3-let x = 1;\n\n"
        );
    }

    #[test]
    fn gitignore_hidden_files_and_the_glob_are_respected() {
        let (_d, ws) = tree(&[
            (".gitignore", "target/\n*.log\n"),
            ("target/out.rs", "needle\n"),
            ("app.log", "needle\n"),
            (".hidden.rs", "needle\n"),
            ("src/lib.rs", "needle\n"),
            ("src/notes.txt", "needle\n"),
        ]);
        let f = search(&ws, ".", "needle", None, 300).unwrap();
        let paths: Vec<&str> = f.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["src/lib.rs", "src/notes.txt"]);
        let f = search(&ws, ".", "needle", Some("*.rs"), 300).unwrap();
        let paths: Vec<&str> = f.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["src/lib.rs"]);
    }

    #[test]
    fn the_cap_stops_the_search_and_says_so() {
        let body = "hit\n".repeat(50);
        let files: Vec<(String, String)> = (0..10)
            .map(|i| (format!("f{i}.txt"), body.clone()))
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let (_d, ws) = tree(&refs);
        let f = search(&ws, ".", "hit", None, 120).unwrap();
        assert_eq!(f.matches, 120);
        assert!(f.truncated);
        assert!(f.render().contains("Only the first 120 matching lines"));
    }

    #[test]
    fn binary_files_are_skipped_and_bad_patterns_explained() {
        let (d, ws) = tree(&[("t.txt", "needle\n")]);
        std::fs::write(d.path().join("b.bin"), b"needle\x00\x01").unwrap();
        let f = search(&ws, ".", "needle", None, 300).unwrap();
        assert_eq!(f.files.len(), 1);
        let e = search(&ws, ".", "(", None, 300).unwrap_err().to_string();
        assert!(e.starts_with("invalid regex"), "{e}");
        let e = search(&ws, ".", "x", Some("a{"), 300)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("invalid file_pattern"), "{e}");
    }

    #[test]
    fn nothing_outside_the_workspace_is_searched() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "needle\n").unwrap();
        let (d, ws) = tree(&[("in.txt", "needle\n")]);
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), d.path().join("s.txt"))
            .unwrap();
        let f = search(&ws, ".", "needle", None, 300).unwrap();
        let paths: Vec<&str> = f.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["in.txt"]);
        assert!(matches!(
            search(&ws, "../", "needle", None, 300),
            Err(SearchError::Workspace(_))
        ));
    }

    #[test]
    fn no_match_says_so() {
        let (_d, ws) = tree(&[("a.txt", "x\n")]);
        let f = search(&ws, ".", "zzz", None, 300).unwrap();
        assert_eq!(f.render(), "No matches.\n");
    }
}
