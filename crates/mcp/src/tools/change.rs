//! What `write_file` and `apply_diff` share once they know the new text:
//! the review in the editor, the atomic write, and what goes back to the
//! model (`user_edits` when the user changed the proposal, `new_diagnostics`
//! when the editor reports new problems in the file within the delay).
//!
//! The editor is shown the text as a person edits it: no byte-order mark,
//! LF line breaks. The file's own conventions (BOM, CRLF, final line break)
//! are put back on what the user accepted, just before the write.

use super::Context;
use ccbridge_protocol::editor::{Diagnostic, FileDiagnostics, Severity};
use ccbridge_server::{hunks, Proposal, Verdict};
use ccbridge_tools::{get_diagnostics, write_file};
use ccbridge_workspace::{is_read_only, Expected, FileText, Workspace, WorkspaceError};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Files larger than this are not edited (nor shown for review).
const MAX_EDITED: u64 = 16 << 20;

/// A file about to change, with its lock held by the caller.
pub(crate) struct Change {
    pub tool: &'static str,
    /// The workspace the call started in.
    pub ws: Arc<Workspace>,
    /// The path as the model gave it.
    pub asked: String,
    pub abs: PathBuf,
    /// The path shown to the user (relative to the workspace folder).
    pub shown: String,
    /// The file's text as it is; `None` for a new file.
    pub original: Option<String>,
    /// The whole new text, LF line breaks, no BOM.
    pub proposed: String,
    /// For a new file, the text as the model sent it: the file keeps its
    /// BOM and CRLF line breaks (a `.bat` file), as a file replaced keeps
    /// the original's. `None` for an existing file.
    pub as_sent: Option<String>,
}

/// A file about to be edited: where it is, and its edit lock, held until
/// this is dropped.
pub(crate) struct Editing<'a> {
    pub ws: Arc<Workspace>,
    pub abs: PathBuf,
    /// Relative to the first workspace folder, else absolute: for the user
    /// and the model, and unique, as the review's title must be.
    pub shown: String,
    _lock: ccbridge_tools::file_locks::FileGuard<'a>,
}

/// Locates `path` in the workspace, takes its edit lock (waiting up to the
/// configured time) and refuses a file with unsaved changes in the editor.
pub(crate) async fn begin<'a>(ctx: &'a Context, path: &str) -> Result<Editing<'a>, String> {
    let ws = ctx.ws();
    let at = ws.locate(path).map_err(|e| error(path, e.to_string()))?;
    let abs = ws.absolute(&at);
    let lock = ctx
        .locks
        .lock(&abs, ctx.settings.lock_wait)
        .await
        .map_err(|e| error(path, e.to_string()))?;
    check_not_dirty(ctx, path, &abs)?;
    check_writable(path, &abs)?;
    Ok(Editing {
        // As the tools name paths to the model: relative to the first
        // folder, where relative paths are taken from, else absolute. A
        // review's title names it, and a title names one view: two
        // folders' `README.md` must not share one.
        shown: if at.root == 0 {
            at.rel.display().to_string()
        } else {
            abs.display().to_string()
        },
        ws,
        abs,
        _lock: lock,
    })
}

/// A write tool's error, in the shape its results have.
pub(crate) fn error(path: &str, message: impl Into<String>) -> String {
    json!({ "error": message.into(), "path": path }).to_string()
}

/// The text as it is edited: BOM dropped, CRLF as LF.
pub(crate) fn as_edited(text: &str) -> String {
    text.strip_prefix('\u{FEFF}')
        .unwrap_or(text)
        .replace("\r\n", "\n")
}

/// `edited` (as the review had it: LF ends) for a file whose lines end both
/// ways: each line the change left alone ends as it did in `original`, the
/// others as most of the file's lines do. Converting the whole file to one
/// ending would show lines nobody touched as changed in version control.
pub(crate) fn line_ends_kept(original: &str, edited: &str) -> String {
    let crlf = write_file::uses_crlf(original);
    // Every line of `edited` with the common ending; only the changed ones
    // are taken from it.
    let changed: String = hunks::lines(edited)
        .into_iter()
        .flat_map(|line| match line.strip_suffix('\n') {
            Some(body) if crlf && !body.ends_with('\r') => [body, "\r\n"],
            _ => [line, ""],
        })
        .collect();
    // `as_edited` keeps every line where it was: the hunks between the text
    // shown and `edited` count `original`'s lines (its BOM aside) too.
    let raw = original.strip_prefix('\u{FEFF}').unwrap_or(original);
    let hs = hunks::hunks(&as_edited(original), edited);
    hunks::apply(raw, &changed, &hs, &vec![true; hs.len()])
}

/// The file's text, `None` when it does not exist; binary, over-large and
/// non-regular files are refused (they are not written either).
pub(crate) async fn read_original(
    ws: &Arc<Workspace>,
    path: &str,
) -> Result<Option<String>, String> {
    let ws = ws.clone();
    let asked = path.to_owned();
    let read = tokio::task::spawn_blocking(move || ws.read_text(&asked, MAX_EDITED))
        .await
        .map_err(|e| error(path, format!("the tool failed: {e}")))?;
    match read {
        Ok(FileText::Text { text }) => Ok(Some(text)),
        Ok(FileText::Binary { .. }) => Err(error(
            path,
            format!("{path} is a binary file; only text files can be edited"),
        )),
        Err(WorkspaceError::NotFound(_)) => Ok(None),
        Err(e) => Err(error(path, e.to_string())),
    }
}

/// Refuses a file the user is editing with unsaved changes: writing under
/// them would make the editor's buffer and the disk disagree.
fn check_not_dirty(ctx: &Context, asked: &str, abs: &std::path::Path) -> Result<(), String> {
    if ctx.editor.is_dirty(&abs.display().to_string()) {
        return Err(error(
            asked,
            format!("{asked} has unsaved changes in the editor; ask the user to save or discard them, then try again"),
        ));
    }
    Ok(())
}

/// Refuses a read-only file before the user is asked to review a change
/// that could not be written (the write refuses it too).
fn check_writable(asked: &str, abs: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::symlink_metadata(abs) {
        Ok(m) if m.is_file() && is_read_only(m.permissions().mode()) => Err(error(
            asked,
            WorkspaceError::ReadOnly(asked.to_owned()).to_string(),
        )),
        _ => Ok(()),
    }
}

/// Reviews (unless the approval mode says not to) and writes the change.
/// `extra` fields are added to the result (`apply_diff`'s `partial`).
pub(crate) async fn land(
    ctx: &Context,
    c: Change,
    extra: Map<String, Value>,
) -> Result<String, String> {
    let shown_original = c.original.as_deref().map(as_edited);
    let mut result = Map::new();
    result.insert("path".into(), c.asked.clone().into());
    if shown_original.as_deref() == Some(c.proposed.as_str()) {
        result.insert("status".into(), "unchanged".into());
        result.insert(
            "message".into(),
            "The file already has this text; nothing was shown or written.".into(),
        );
        result.extend(extra);
        return Ok(Value::Object(result).to_string());
    }
    let proposed_eol = c.proposed.ends_with('\n');
    let abs = c.abs.display().to_string();
    let before = file_diagnostics(ctx, &abs);
    let mut changes = ctx.editor.diagnostics_changes();
    changes.borrow_and_update();
    let (final_text, status) = if ctx.approval().asks_for_changes() {
        let proposal = Proposal {
            requester: None,
            path: abs.clone(),
            title: format!("✎ {} (ccbridge {})", c.shown, c.tool),
            original: shown_original,
            proposed: c.proposed.clone(),
        };
        match ctx.editor.review(proposal).await {
            Ok(Verdict::Accepted { contents }) => {
                let labels = (
                    &*format!("{} (proposed)", c.shown),
                    &*format!("{} (as accepted)", c.shown),
                );
                if let Some(edits) = hunks::unified(&c.proposed, &contents, labels) {
                    result.insert("user_edits".into(), edits.into());
                }
                (contents, "accepted")
            }
            Ok(Verdict::Rejected) => {
                result.insert("status".into(), "rejected".into());
                result.insert(
                    "message".into(),
                    "The user rejected the change; the file was not touched.".into(),
                );
                return Ok(Value::Object(result).to_string());
            }
            Err(e) => {
                return Err(error(
                    &c.asked,
                    format!("the change could not be shown to the user for review, so nothing was written: {e}"),
                ))
            }
        }
    } else {
        (c.proposed, "written")
    };
    // Whose conventions the written text keeps.
    let template = c.original.as_deref().or(c.as_sent.as_deref());
    let final_text = match template {
        Some(t) if write_file::mixed_line_ends(t) => line_ends_kept(t, &final_text),
        _ => final_text,
    };
    let mut bytes = write_file::keep_conventions(template, &final_text);
    // The file's final line break is put back where the model left it out;
    // one the user took out in the review stays out (`user_edits` says so).
    if proposed_eol && !final_text.ends_with('\n') {
        let body = bytes.strip_suffix('\n').unwrap_or(&bytes);
        bytes.truncate(body.strip_suffix('\r').unwrap_or(body).len());
    }
    let ws = c.ws.clone();
    let asked = c.asked.clone();
    // The text the change was made (and reviewed) against must still be
    // there: a newer text on disk is never overwritten silently.
    let original = c.original.clone();
    let written = tokio::task::spawn_blocking(move || {
        let expected = match &original {
            Some(t) => Expected::Bytes(t.as_bytes()),
            None => Expected::Absent,
        };
        ws.replace(&asked, bytes.as_bytes(), expected).map(|w| {
            if w.created {
                "created"
            } else {
                "modified"
            }
        })
    })
    .await
    .map_err(|e| error(&c.asked, format!("the tool failed: {e}")))?
    .map_err(|e| match e {
        WorkspaceError::Changed(_) => error(
            &c.asked,
            format!(
                "{} changed on disk while the change was under review, so nothing was written \
                 (the newer text is kept). Read the file again and propose the change anew.",
                c.asked
            ),
        ),
        e => error(
            &c.asked,
            format!("the change was accepted but could not be written: {e}"),
        ),
    })?;
    result.insert("status".into(), status.into());
    result.insert("operation".into(), written.into());
    if let Some(new) = new_diagnostics(ctx, &abs, &before, changes).await {
        result.insert("new_diagnostics".into(), new.into());
    }
    result.extend(extra);
    Ok(Value::Object(result).to_string())
}

/// The editor's diagnostics of one file.
fn file_diagnostics(ctx: &Context, abs: &str) -> Vec<Diagnostic> {
    ctx.editor
        .diagnostics()
        .into_iter()
        .filter(|f| f.uri.strip_prefix("file://").unwrap_or(&f.uri) == abs)
        .flat_map(|f| f.diagnostics)
        .collect()
}

/// Waits (up to the configured delay) for the editor to report the file's
/// diagnostics anew, and lists the errors and warnings that were not there
/// before the write.
async fn new_diagnostics(
    ctx: &Context,
    abs: &str,
    before: &[Diagnostic],
    mut changes: tokio::sync::watch::Receiver<u64>,
) -> Option<String> {
    let wait = ctx.settings.diagnostics_delay;
    let deadline = tokio::time::Instant::now() + wait;
    if wait > Duration::ZERO {
        while let Ok(Ok(())) = tokio::time::timeout_at(deadline, changes.changed()).await {
            if file_diagnostics(ctx, abs) != before {
                break;
            }
        }
    }
    let worth_telling = get_diagnostics::rank(Severity::Warning);
    let new: Vec<Diagnostic> = file_diagnostics(ctx, abs)
        .into_iter()
        .filter(|d| get_diagnostics::rank(d.severity) <= worth_telling && !before.contains(d))
        .collect();
    if new.is_empty() {
        return None;
    }
    let files = [FileDiagnostics {
        uri: abs.to_owned(),
        diagnostics: new,
    }];
    Some(get_diagnostics::format(
        &files,
        Severity::Warning,
        None,
        &super::get_diagnostics::base(ctx),
    ))
}

#[cfg(test)]
mod tests {
    use super::line_ends_kept;

    #[test]
    fn lines_left_alone_keep_their_end_and_new_ones_take_the_common_one() {
        let mixed = "a\r\nb\nc\r\nd\r\n";
        assert_eq!(line_ends_kept(mixed, "a\nb\nc\nd\n"), mixed);
        assert_eq!(line_ends_kept(mixed, "a\nb\nX\nd\n"), "a\r\nb\nX\r\nd\r\n");
        assert_eq!(line_ends_kept(mixed, "a\nc\nd\n"), "a\r\nc\r\nd\r\n");
        assert_eq!(
            line_ends_kept(mixed, "a\nb\nc\nd\ne\n"),
            "a\r\nb\nc\r\nd\r\ne\r\n"
        );
        assert_eq!(line_ends_kept(mixed, "new\na\nb\n"), "new\r\na\r\nb\n");
        // Mostly LF: new lines take LF; a missing final break stays missing.
        let lf = "\u{FEFF}a\nb\r\nc\n";
        assert_eq!(line_ends_kept(lf, "a\nb\nc\nd"), "a\nb\r\nc\nd");
        assert_eq!(line_ends_kept(lf, ""), "");
    }
}
