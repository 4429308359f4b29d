//! The IDE tools: names, descriptions, input schemas, typed arguments and
//! the exact result shapes and texts.
//!
//! Shapes follow the VS Code extension (the seeds) where the real client
//! does not care, and the real client where it does: `openDiff` answers
//! `FILE_SAVED` + final text, `DIFF_REJECTED` + tab name, or `TAB_CLOSED`;
//! `getDiagnostics` answers a JSON array in the first text item.

use crate::editor::{EditorTab, FileDiagnostics, Selection};
use crate::mcp::{CallToolResult, ToolDescriptor};
use crate::notifications::SelectionRange;
use crate::uri::file_uri;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const FILE_SAVED: &str = "FILE_SAVED";
pub const DIFF_REJECTED: &str = "DIFF_REJECTED";
pub const TAB_CLOSED: &str = "TAB_CLOSED";

/// `CLOSED_<n>_DIFF_TABS`, the `closeAllDiffTabs` answer.
pub fn closed_diff_tabs(n: usize) -> String {
    format!("CLOSED_{n}_DIFF_TABS")
}

/// Every IDE tool ccbridge knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    OpenFile,
    OpenDiff,
    GetCurrentSelection,
    GetLatestSelection,
    GetOpenEditors,
    GetWorkspaceFolders,
    GetDiagnostics,
    CheckDocumentDirty,
    SaveDocument,
    CloseTab,
    CloseAllDiffTabs,
    ExecuteCode,
    OpenFiles,
    GetAllOpenedFilePaths,
    ReformatFile,
}

impl Tool {
    pub const ALL: [Tool; 15] = [
        Tool::OpenFile,
        Tool::OpenDiff,
        Tool::GetCurrentSelection,
        Tool::GetLatestSelection,
        Tool::GetOpenEditors,
        Tool::GetWorkspaceFolders,
        Tool::GetDiagnostics,
        Tool::CheckDocumentDirty,
        Tool::SaveDocument,
        Tool::CloseTab,
        Tool::CloseAllDiffTabs,
        Tool::ExecuteCode,
        Tool::OpenFiles,
        Tool::GetAllOpenedFilePaths,
        Tool::ReformatFile,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tool::OpenFile => "openFile",
            Tool::OpenDiff => "openDiff",
            Tool::GetCurrentSelection => "getCurrentSelection",
            Tool::GetLatestSelection => "getLatestSelection",
            Tool::GetOpenEditors => "getOpenEditors",
            Tool::GetWorkspaceFolders => "getWorkspaceFolders",
            Tool::GetDiagnostics => "getDiagnostics",
            Tool::CheckDocumentDirty => "checkDocumentDirty",
            Tool::SaveDocument => "saveDocument",
            Tool::CloseTab => "close_tab",
            Tool::CloseAllDiffTabs => "closeAllDiffTabs",
            Tool::ExecuteCode => "executeCode",
            Tool::OpenFiles => "open_files",
            Tool::GetAllOpenedFilePaths => "get_all_opened_file_paths",
            Tool::ReformatFile => "reformat_file",
        }
    }

    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn description(self) -> &'static str {
        match self {
            Tool::OpenFile => "Open a file in the editor and optionally select a range of text (by startText/endText or startLine/endLine).",
            Tool::OpenDiff => "Show proposed changes to a file as a diff in the editor and wait until the user accepts (FILE_SAVED plus the final contents) or rejects (DIFF_REJECTED). The editor never writes the file itself.",
            Tool::GetCurrentSelection => "Get the current text selection in the active editor.",
            Tool::GetLatestSelection => "Get the most recent text selection, even if its editor is no longer active.",
            Tool::GetOpenEditors => "Get information about the currently open editor tabs.",
            Tool::GetWorkspaceFolders => "Get all workspace folders currently open in the editor.",
            Tool::GetDiagnostics => "Get language diagnostics (errors, warnings, hints) from the editor. Pass a file URI (file:///abs/path) to get one file's diagnostics; omit it for every file.",
            Tool::CheckDocumentDirty => "Check whether a document has unsaved changes.",
            Tool::SaveDocument => "Save a document with unsaved changes.",
            Tool::CloseTab => "Close a tab by name (a diff's tab_name, or a file path).",
            Tool::CloseAllDiffTabs => "Close every diff view this integration opened.",
            Tool::ExecuteCode => "Execute code in the editor's active kernel or REPL (for example the Jupyter kernel of the current notebook) and return its output. The user is asked to confirm every execution. State persists across calls unless the kernel is restarted; avoid declaring variables or changing kernel state unless asked.",
            Tool::OpenFiles => "Open several files in the editor.",
            Tool::GetAllOpenedFilePaths => "Get the paths of all open files, one per line.",
            Tool::ReformatFile => "Reformat a file with the editor's formatter.",
        }
    }

    pub fn input_schema(self) -> Value {
        let empty = json!({"type":"object","properties":{},"additionalProperties":false});
        let path_arg = |name: &str, what: &str| json!({"type":"object","properties":{name:{"type":"string","description":what}},"required":[name]});
        match self {
            Tool::OpenFile => json!({"type":"object","properties":{
                "filePath":{"type":"string","description":"Path of the file to open"},
                "preview":{"type":"boolean","description":"Open in preview mode","default":false},
                "startText":{"type":"string","description":"Text marking the start of the selection"},
                "endText":{"type":"string","description":"Text marking the end of the selection"},
                "selectToEndOfLine":{"type":"boolean","description":"Extend the selection to the end of the line","default":false},
                "makeFrontmost":{"type":"boolean","description":"Make the file the active editor","default":true},
                "startLine":{"type":"integer","minimum":1,"description":"First line to select (1-based)"},
                "endLine":{"type":"integer","minimum":1,"description":"Last line to select (1-based)"}
            },"required":["filePath"]}),
            Tool::OpenDiff => json!({"type":"object","properties":{
                "old_file_path":{"type":"string","description":"Path of the original file"},
                "new_file_path":{"type":"string","description":"Path of the file the changes are for"},
                "new_file_contents":{"type":"string","description":"Whole proposed contents of the file"},
                "tab_name":{"type":"string","description":"Name of the diff view"}
            },"required":["old_file_path","new_file_path","new_file_contents","tab_name"]}),
            Tool::GetDiagnostics => json!({"type":"object","properties":{
                "uri":{"type":"string","description":"file:// URI of one file; omit for all files"}
            }}),
            Tool::CheckDocumentDirty => path_arg("filePath", "Path of the file to check"),
            Tool::SaveDocument => path_arg("filePath", "Path of the file to save"),
            Tool::CloseTab => path_arg("tab_name", "Name of the tab to close"),
            Tool::ExecuteCode => path_arg("code", "The code to run"),
            Tool::OpenFiles => json!({"type":"object","properties":{
                "file_paths":{"type":"array","items":{"type":"string"},"description":"Absolute paths"}
            },"required":["file_paths"]}),
            Tool::ReformatFile => path_arg("file_path", "Path of the file to reformat"),
            Tool::GetCurrentSelection
            | Tool::GetLatestSelection
            | Tool::GetOpenEditors
            | Tool::GetWorkspaceFolders
            | Tool::CloseAllDiffTabs
            | Tool::GetAllOpenedFilePaths => empty,
        }
    }

    pub fn descriptor(self) -> ToolDescriptor {
        let annotations = match self {
            Tool::GetDiagnostics => Some(json!({"readOnlyHint": true})),
            _ => None,
        };
        ToolDescriptor {
            name: self.name().into(),
            description: self.description().into(),
            input_schema: self.input_schema(),
            annotations,
        }
    }
}

// ---------------------------------------------------------------- arguments

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenFileArgs {
    pub file_path: String,
    #[serde(default)]
    pub preview: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_text: Option<String>,
    #[serde(default)]
    pub select_to_end_of_line: bool,
    #[serde(default = "yes")]
    pub make_frontmost: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenDiffArgs {
    pub old_file_path: String,
    pub new_file_path: String,
    pub new_file_contents: String,
    pub tab_name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetDiagnosticsArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilePathArgs {
    pub file_path: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseTabArgs {
    pub tab_name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecuteCodeArgs {
    pub code: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenFilesArgs {
    pub file_paths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReformatFileArgs {
    pub file_path: String,
}

// ---------------------------------------------------------------- results

/// `{"success": false, "message": ...}`, the VS Code extension's way of
/// saying "no" for state queries.
pub fn failure(message: impl Into<String>) -> CallToolResult {
    CallToolResult::json(&json!({"success": false, "message": message.into()}))
}

pub fn document_not_open(path: &str) -> CallToolResult {
    failure(format!("Document not open: {path}"))
}

/// `getCurrentSelection` / `getLatestSelection` success.
pub fn selection_result(s: &Selection) -> CallToolResult {
    CallToolResult::json(&json!({
        "success": true,
        "text": s.text,
        "filePath": s.file_path,
        "fileUrl": file_uri(&s.file_path),
        "selection": SelectionRange { start: s.range.start, end: s.range.end, is_empty: s.range.is_empty() },
    }))
}

pub fn open_editors_result(tabs: &[EditorTab]) -> CallToolResult {
    let tabs: Vec<Value> = tabs
        .iter()
        .map(|t| {
            json!({
                "uri": file_uri(&t.path),
                "isActive": t.is_active,
                "label": t.label(),
                "languageId": t.language_id.clone().unwrap_or_else(|| language_id_for(&t.path).into()),
                "isDirty": t.is_dirty,
            })
        })
        .collect();
    CallToolResult::json(&json!({ "tabs": tabs }))
}

pub fn workspace_folders_result(folders: &[String]) -> CallToolResult {
    let list: Vec<Value> = folders
        .iter()
        .map(|p| {
            let name = p.trim_end_matches('/').rsplit('/').next().unwrap_or(p);
            json!({"name": name, "uri": file_uri(p), "path": p})
        })
        .collect();
    CallToolResult::json(&json!({
        "success": true,
        "folders": list,
        "rootPath": folders.first(),
    }))
}

pub fn diagnostics_result(files: &[FileDiagnostics]) -> CallToolResult {
    CallToolResult::json(&files)
}

pub fn dirty_result(path: &str, is_dirty: bool, is_untitled: bool) -> CallToolResult {
    CallToolResult::json(&json!({
        "success": true, "filePath": path, "isDirty": is_dirty, "isUntitled": is_untitled
    }))
}

pub fn saved_result(path: &str) -> CallToolResult {
    CallToolResult::json(&json!({
        "success": true, "filePath": path, "saved": true, "message": "Document saved successfully"
    }))
}

pub fn file_saved(final_contents: impl Into<String>) -> CallToolResult {
    CallToolResult::texts([FILE_SAVED.to_owned(), final_contents.into()])
}

pub fn diff_rejected(tab_name: impl Into<String>) -> CallToolResult {
    CallToolResult::texts([DIFF_REJECTED.to_owned(), tab_name.into()])
}

/// A best-effort VS Code language id from a file name, for tabs the editor
/// did not describe.
pub fn language_id_for(path: &str) -> &'static str {
    let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "rs" => "rust",
        "py" => "python",
        "js" | "mjs" | "cjs" => "javascript",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" => "cpp",
        "java" => "java",
        "rb" => "ruby",
        "lua" => "lua",
        "md" => "markdown",
        "json" => "json",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "sh" | "bash" => "shellscript",
        "html" => "html",
        "css" => "css",
        "ipynb" => "jupyter",
        _ => "plaintext",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::{Diagnostic, Position, Range, Severity};

    #[test]
    fn names_round_trip_and_are_unique() {
        for t in Tool::ALL {
            assert_eq!(Tool::from_name(t.name()), Some(t));
            let d = t.descriptor();
            assert!(!d.description.is_empty());
            assert_eq!(d.input_schema["type"], "object");
        }
        assert_eq!(Tool::from_name("nope"), None);
    }

    #[test]
    fn open_diff_answers_have_the_exact_texts() {
        let v = file_saved("x\n").to_value();
        assert_eq!(
            v,
            json!({"content":[{"type":"text","text":"FILE_SAVED"},{"type":"text","text":"x\n"}]})
        );
        let v = diff_rejected("✻ [Claude Code] a.py (abc123) ⧉").to_value();
        assert_eq!(v["content"][0]["text"], "DIFF_REJECTED");
        assert_eq!(closed_diff_tabs(3), "CLOSED_3_DIFF_TABS");
    }

    #[test]
    fn diagnostics_are_a_json_array_in_the_first_text_item() {
        let r = diagnostics_result(&[FileDiagnostics {
            uri: "file:///w/my file.ts".into(),
            diagnostics: vec![Diagnostic {
                message: "boom".into(),
                severity: Severity::Error,
                range: Range::new(Position::new(0, 1), Position::new(0, 3)),
                source: Some("tsc".into()),
                code: Some("2304".into()),
            }],
        }]);
        let parsed: Value = serde_json::from_str(r.first_text().unwrap()).unwrap();
        assert_eq!(
            parsed,
            json!([{"uri":"file:///w/my file.ts","diagnostics":[{"message":"boom","severity":"Error",
                "range":{"start":{"line":0,"character":1},"end":{"line":0,"character":3}},
                "source":"tsc","code":"2304"}]}])
        );
    }

    #[test]
    fn failure_shapes() {
        let r = document_not_open("/w/a.rs");
        let v: Value = serde_json::from_str(r.first_text().unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"success":false,"message":"Document not open: /w/a.rs"})
        );
        assert!(!r.is_error);
    }

    #[test]
    fn open_diff_args_from_the_real_client() {
        let a: OpenDiffArgs = serde_json::from_value(json!({
            "old_file_path":"/w/hello.py","new_file_path":"/w/hello.py",
            "new_file_contents":"print(1)\n","tab_name":"✻ [Claude Code] hello.py (65ade6) ⧉"
        }))
        .unwrap();
        assert_eq!(a.tab_name, "✻ [Claude Code] hello.py (65ade6) ⧉");
        let o: OpenFileArgs = serde_json::from_value(json!({"filePath":"/w/a"})).unwrap();
        assert!(o.make_frontmost);
    }

    #[test]
    fn workspace_folders_shape() {
        let r = workspace_folders_result(&["/home/u/proj".into()]);
        let v: Value = serde_json::from_str(r.first_text().unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"success":true,"folders":[{"name":"proj","uri":"file:///home/u/proj","path":"/home/u/proj"}],"rootPath":"/home/u/proj"})
        );
    }
}
