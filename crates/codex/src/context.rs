//! The editor's context as Codex CLI wants it (`result.ideContext` of an
//! `ide-context` answer), built from the same editor state Claude Code's
//! server and the Gemini/Qwen companion use.
//!
//! Codex 0.171.0 reads `activeFile` (`label`, `path`, `selection` with
//! 0-based `line`/`character`, `activeSelectionContent`, `selections`) and
//! `openTabs` (`label`, `path`); older releases also required `fsPath` on
//! each file, so it is always sent. `path` is the workspace-relative path
//! when the file is inside the asked-for root (what the VS Code extension
//! sends, and what Codex shows the model as "## Active file: <path>"), the
//! absolute one otherwise. The CLI cuts the selection at 200,000
//! characters; ccbridge cuts it there too, so an answer stays small.

use ccbridge_protocol::editor::{cap_chars, Range};
use ccbridge_server::EditorContext;
use serde_json::{json, Value};
use std::path::Path;

/// Selected text sent at most, in characters (Codex keeps as many).
pub const MAX_SELECTION_CHARS: usize = 200_000;

/// Open tabs sent at most.
pub const MAX_TABS: usize = 50;

/// Whether `root` (the `workspaceRoot` Codex asks about: its working
/// directory) is one of `folders` or inside one. Compared as given and
/// with links resolved, since either side may have been canonicalized.
pub fn serves(folders: &[String], root: &str) -> bool {
    let root = Path::new(root);
    if !root.is_absolute() {
        return false;
    }
    let real_root = root.canonicalize().ok();
    folders.iter().any(|f| {
        let f = Path::new(f);
        root.starts_with(f)
            || real_root
                .as_deref()
                .zip(f.canonicalize().ok())
                .is_some_and(|(r, f)| r.starts_with(f))
    })
}

/// A file as Codex names it: `path` relative to the first of `bases` that
/// holds it (the asked-for root, then the workspace folders), else absolute.
fn descriptor(abs: &str, bases: &[&Path]) -> Value {
    let p = Path::new(abs);
    let label = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| abs.to_owned());
    let path = bases
        .iter()
        .filter_map(|b| p.strip_prefix(b).ok())
        .find(|r| !r.as_os_str().is_empty())
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_else(|| abs.to_owned());
    json!({"label": label, "path": path, "fsPath": abs})
}

fn range(r: &Range) -> Value {
    json!({
        "start": {"line": r.start.line, "character": r.start.character},
        "end": {"line": r.end.line, "character": r.end.character},
    })
}

/// The `ideContext` for `ctx`, paths relative to `root` (or, for files
/// outside it, to the workspace folder that holds them).
pub fn ide_context(ctx: &EditorContext, root: &str, folders: &[String]) -> Value {
    let root: Vec<&Path> = std::iter::once(Path::new(root))
        .chain(folders.iter().map(Path::new))
        .collect();
    let root = root.as_slice();
    let active_file = ctx.active_path().map(|path| {
        let mut f = descriptor(path, root);
        match ctx.active_selection() {
            Some(sel) => {
                f["selection"] = range(&sel.range);
                f["selections"] = json!([range(&sel.range)]);
                f["activeSelectionContent"] = cap_chars(&sel.text, MAX_SELECTION_CHARS).into();
            }
            None => {
                f["selection"] =
                    json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}});
                f["selections"] = json!([]);
                f["activeSelectionContent"] = "".into();
            }
        }
        f
    });
    let open_tabs: Vec<Value> = ctx
        .tabs
        .iter()
        .filter(|t| !t.is_untitled)
        .take(MAX_TABS)
        .map(|t| descriptor(&t.path, root))
        .collect();
    json!({"activeFile": active_file, "openTabs": open_tabs})
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbridge_protocol::editor::{EditorTab, Position, Selection};

    fn tab(path: &str, active: bool) -> EditorTab {
        EditorTab {
            path: path.into(),
            is_active: active,
            is_dirty: false,
            language_id: None,
            label: None,
            is_untitled: false,
        }
    }

    #[test]
    fn the_selection_is_zero_based_with_its_text_and_paths_are_relative_to_the_root() {
        let ctx = EditorContext {
            selection: Some(Selection {
                file_path: "/w/src/b.rs".into(),
                text: "sel".into(),
                range: Range::new(Position::new(1, 2), Position::new(1, 5)),
            }),
            tabs: vec![
                tab("/w/a.rs", false),
                tab("/w/src/b.rs", true),
                tab("/elsewhere/c.rs", false),
            ],
        };
        let v = ide_context(&ctx, "/w", &[]);
        let f = &v["activeFile"];
        assert_eq!(f["label"], "b.rs");
        assert_eq!(f["path"], "src/b.rs");
        assert_eq!(f["fsPath"], "/w/src/b.rs");
        assert_eq!(f["selection"]["start"], json!({"line": 1, "character": 2}));
        assert_eq!(f["selection"]["end"], json!({"line": 1, "character": 5}));
        assert_eq!(f["selections"].as_array().unwrap().len(), 1);
        assert_eq!(f["activeSelectionContent"], "sel");
        let tabs = v["openTabs"].as_array().unwrap();
        assert_eq!(tabs.len(), 3);
        assert_eq!(tabs[0]["path"], "a.rs");
        assert_eq!(tabs[2]["path"], "/elsewhere/c.rs");
    }

    #[test]
    fn without_a_selection_the_active_tab_is_sent_with_an_empty_one_and_without_either_none() {
        let ctx = EditorContext {
            selection: None,
            tabs: vec![tab("/w/a.rs", true)],
        };
        let v = ide_context(&ctx, "/w", &[]);
        assert_eq!(v["activeFile"]["path"], "a.rs");
        assert_eq!(v["activeFile"]["activeSelectionContent"], "");
        let v = ide_context(&EditorContext::default(), "/w", &[]);
        assert!(v["activeFile"].is_null());
        assert_eq!(v["openTabs"], json!([]));
    }

    #[test]
    fn a_root_is_served_when_it_is_a_folder_or_inside_one() {
        let folders = vec!["/w/proj".to_string()];
        assert!(serves(&folders, "/w/proj"));
        assert!(serves(&folders, "/w/proj/sub"));
        assert!(!serves(&folders, "/w/project"));
        assert!(!serves(&folders, "/w"));
        assert!(!serves(&folders, "proj"));
    }
}
