//! The editor's context as Gemini CLI and Qwen Code want it pushed
//! (`ide/contextUpdate`, `docs/agents.md`): the open
//! files that exist on disk, most recently focused first (ten at most),
//! each with when it was last focused; the active one with its 1-based
//! cursor and selected text (16 KiB at most); whether the workspace is
//! trusted. Built from the same editor state Claude Code's server uses.
//!
//! The editor protocol reports which tab is active, not when each was
//! focused, so the tracker remembers when it last saw each file active.

use ccbridge_protocol::editor::cap_chars;
use ccbridge_server::EditorContext;
use serde_json::{json, Value};
use std::collections::HashMap;

/// Files sent at most (the clients keep ten).
pub const MAX_FILES: usize = 10;
/// Selected text sent at most, in characters (the clients cut at 16,384).
pub const MAX_SELECTED_CHARS: usize = 16_384;

/// Remembers when each file was last focused.
#[derive(Debug, Default)]
pub struct ContextTracker {
    focused_at: HashMap<String, u64>,
}

impl ContextTracker {
    /// The `ide/contextUpdate` params for `ctx` at `now_ms`. `exists`
    /// says whether a path is a file on disk (the clients list only those).
    pub fn update(
        &mut self,
        ctx: &EditorContext,
        now_ms: u64,
        exists: impl Fn(&str) -> bool,
    ) -> Value {
        let active = ctx.active_path().map(str::to_owned);
        // Tabs seen for the first time count as focused now, behind the
        // active one; the active one is focused now.
        for t in &ctx.tabs {
            self.focused_at
                .entry(t.path.clone())
                .or_insert(now_ms.saturating_sub(1));
        }
        if let Some(a) = &active {
            self.focused_at.insert(a.clone(), now_ms);
        }
        let open: Vec<&str> = ctx
            .tabs
            .iter()
            .filter(|t| !t.is_untitled)
            .map(|t| t.path.as_str())
            .chain(active.as_deref())
            .collect();
        self.focused_at.retain(|p, _| open.contains(&p.as_str()));
        let mut files: Vec<(&String, u64)> = self
            .focused_at
            .iter()
            .filter(|(p, _)| exists(p))
            .map(|(p, t)| (p, *t))
            .collect();
        files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        files.truncate(MAX_FILES);
        let open_files: Vec<Value> = files
            .into_iter()
            .map(|(path, ts)| {
                let mut f = json!({"path": path, "timestamp": ts});
                if active.as_ref() == Some(path) {
                    f["isActive"] = true.into();
                    if let Some(sel) = ctx.active_selection() {
                        let cursor = sel.range.end;
                        f["cursor"] =
                            json!({"line": cursor.line + 1, "character": cursor.character + 1});
                        if !sel.text.is_empty() {
                            f["selectedText"] = cap_chars(&sel.text, MAX_SELECTED_CHARS).into();
                        }
                    }
                }
                f
            })
            .collect();
        // No `isTrusted`: the agents take it over their own folder trust
        // (Gemini CLI asks the IDE first, then its trustedFolders.json), and
        // ccbridge has no trust decision of the editor's to pass on; `true`
        // trusted every folder the user had marked not to trust.
        json!({"workspaceState": {"openFiles": open_files}})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbridge_protocol::editor::{EditorTab, Position, Range, Selection};

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
    fn the_active_file_comes_first_with_a_one_based_cursor_and_its_selection() {
        let mut t = ContextTracker::default();
        let ctx = EditorContext {
            selection: Some(Selection {
                file_path: "/w/b.rs".into(),
                text: "sel".into(),
                range: Range::new(Position::new(1, 2), Position::new(1, 5)),
            }),
            tabs: vec![
                tab("/w/a.rs", false),
                tab("/w/b.rs", true),
                tab("/w/gone.rs", false),
            ],
        };
        let v = t.update(&ctx, 1000, |p| p != "/w/gone.rs");
        let files = v["workspaceState"]["openFiles"].as_array().unwrap();
        assert_eq!(files.len(), 2, "{v}");
        assert_eq!(files[0]["path"], "/w/b.rs");
        assert_eq!(files[0]["isActive"], true);
        assert_eq!(files[0]["cursor"], json!({"line": 2, "character": 6}));
        assert_eq!(files[0]["selectedText"], "sel");
        assert_eq!(files[1]["path"], "/w/a.rs");
        assert!(files[1].get("isActive").is_none() && files[1].get("cursor").is_none());
        assert!(
            v["workspaceState"].get("isTrusted").is_none(),
            "regression: every folder was said to be trusted, over the user's own choice: {v}"
        );

        // a.rs focused later: it moves to the front; b.rs keeps its time.
        let ctx = EditorContext {
            selection: None,
            tabs: vec![tab("/w/a.rs", true), tab("/w/b.rs", false)],
        };
        let v = t.update(&ctx, 2000, |_| true);
        let files = v["workspaceState"]["openFiles"].as_array().unwrap();
        assert_eq!(files[0]["path"], "/w/a.rs");
        assert_eq!(files[0]["timestamp"], 2000);
        assert_eq!(files[1]["timestamp"], 1000);
    }

    #[test]
    fn ten_files_at_most_and_long_selections_are_cut_on_a_character() {
        let mut t = ContextTracker::default();
        let tabs: Vec<EditorTab> = (0..15).map(|i| tab(&format!("/w/{i}.rs"), false)).collect();
        let long = "é".repeat(MAX_SELECTED_CHARS + 10);
        let ctx = EditorContext {
            selection: Some(Selection {
                file_path: "/w/3.rs".into(),
                text: long,
                range: Range::new(Position::new(0, 0), Position::new(0, 1)),
            }),
            tabs,
        };
        let v = t.update(&ctx, 50, |_| true);
        let files = v["workspaceState"]["openFiles"].as_array().unwrap();
        assert_eq!(files.len(), MAX_FILES);
        assert_eq!(files[0]["path"], "/w/3.rs");
        assert_eq!(
            files[0]["selectedText"].as_str().unwrap().chars().count(),
            MAX_SELECTED_CHARS
        );
    }
}
