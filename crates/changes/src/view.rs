//! The session review as a page or an editor shows it: per file, its
//! status, who changed it, and its hunks with their lines and a little
//! context, capped so one huge file cannot make the answer huge.

use crate::{Before, Entry, Source};
use ccbridge_server::hunks::{self, Hunk};
use serde::Serialize;
use std::collections::BTreeMap;

/// Lines of context shown around a hunk.
const CONTEXT: usize = 3;
/// Hunks described per file (a decision on the rest waits for a reload).
const MAX_HUNKS: usize = 500;
/// Lines shown per side of a hunk.
const MAX_LINES: usize = 400;
/// Longest line shown, in bytes (cut on a character boundary).
const MAX_LINE: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FileStatus {
    Created,
    Modified,
    Deleted,
    /// Not text (or too large to read): listed, reverted as a whole only.
    Binary,
    /// Its content before the session is not known: listed only.
    Unknown,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HunkView {
    pub key: String,
    #[serde(flatten)]
    pub hunk: Hunk,
    /// Lines before the hunk (from the new text), without terminators.
    pub context_before: Vec<String>,
    pub removed: Vec<String>,
    pub added: Vec<String>,
    pub context_after: Vec<String>,
    /// Some lines were left out of `removed`/`added`.
    pub cut: bool,
    pub kept: bool,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileView {
    pub path: String,
    pub status: FileStatus,
    pub sources: Vec<Source>,
    /// The version a decision must name (see [`crate::version_of`]).
    pub version: String,
    pub viewed: bool,
    /// Viewed, or every hunk kept.
    pub reviewed: bool,
    pub added: usize,
    pub removed: usize,
    pub hunks: Vec<HunkView>,
    /// More hunks exist than are described.
    pub more_hunks: usize,
    pub revertible: bool,
    pub changed_at: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangesView {
    /// The baseline is taken and the folders watched.
    pub ready: bool,
    pub files: Vec<FileView>,
    pub reviewed: usize,
    pub can_undo: bool,
    pub watched_folders: usize,
    /// Why some changes may not be seen.
    pub limit: Option<String>,
}

fn line(l: &str) -> String {
    let l = l.strip_suffix('\n').unwrap_or(l);
    let l = l.strip_suffix('\r').unwrap_or(l);
    if l.len() <= MAX_LINE {
        return l.to_owned();
    }
    let mut end = MAX_LINE;
    while !l.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &l[..end])
}

fn lines_of(all: &[&str], from: usize, to: usize, cut: &mut bool) -> Vec<String> {
    let to = to.min(all.len());
    let from = from.min(to);
    if to - from > MAX_LINES {
        *cut = true;
    }
    all[from..to]
        .iter()
        .take(MAX_LINES)
        .map(|l| line(l))
        .collect()
}

fn file(path: &str, e: &Entry) -> FileView {
    // Both sides checked as text once (a scan of each), for the status and
    // the lines.
    let texts = e.texts();
    let status = match (&e.before, &e.now) {
        (Before::Unknown, _) => FileStatus::Unknown,
        _ if e.too_large => FileStatus::Binary,
        (_, _) if texts.is_none() => FileStatus::Binary,
        (Before::Absent, Some(_)) => FileStatus::Created,
        (_, None) => FileStatus::Deleted,
        _ => FileStatus::Modified,
    };
    let mut view = FileView {
        path: path.to_owned(),
        status,
        sources: e.sources.iter().cloned().collect(),
        version: e.version.clone(),
        viewed: e.viewed,
        reviewed: e.viewed,
        added: 0,
        removed: 0,
        hunks: Vec::new(),
        more_hunks: 0,
        revertible: !matches!(e.before, Before::Unknown),
        changed_at: e.changed_at,
    };
    let Some((before, now)) = texts else {
        return view;
    };
    let (old, new) = (hunks::lines(before), hunks::lines(now));
    let mut all_kept = !e.hunks.is_empty();
    for (i, (h, key)) in e.hunks.iter().enumerate() {
        view.added += h.new_lines as usize;
        view.removed += h.old_lines as usize;
        let kept = e.kept.contains(key);
        all_kept &= kept;
        if i >= MAX_HUNKS {
            view.more_hunks += 1;
            continue;
        }
        let (ns, ne) = (h.new_start as usize, (h.new_start + h.new_lines) as usize);
        let (os, oe) = (h.old_start as usize, (h.old_start + h.old_lines) as usize);
        let mut cut = false;
        let mut unused = false;
        view.hunks.push(HunkView {
            key: key.clone(),
            hunk: *h,
            context_before: lines_of(&new, ns.saturating_sub(CONTEXT), ns, &mut unused),
            removed: lines_of(&old, os, oe, &mut cut),
            added: lines_of(&new, ns, ne, &mut cut),
            context_after: lines_of(&new, ne, ne + CONTEXT, &mut unused),
            cut,
            kept,
        });
    }
    view.reviewed = e.viewed || all_kept;
    view
}

pub(crate) fn build(
    files: &BTreeMap<String, Entry>,
    ready: bool,
    can_undo: bool,
    watched_folders: usize,
    limit: Option<String>,
) -> ChangesView {
    let files: Vec<FileView> = files.iter().map(|(p, e)| file(p, e)).collect();
    ChangesView {
        ready,
        reviewed: files.iter().filter(|f| f.reviewed).count(),
        files,
        can_undo,
        watched_folders,
        limit,
    }
}
