//! The messages of the editor protocol (docs/editor-protocol.md), typed.
//!
//! One place names every method and fixes every field's spelling, so the
//! session, the frontend, the tests and the document cannot drift apart.
//! Types the engine already defines with the right wire shape are reused
//! (`DiffView` is `showDiff`'s params, `ClientInfo` is `clientConnected`'s,
//! `Capabilities`, `EditorTab`, `Diagnostic`, `AtMentioned`); the rest live
//! here. Everything is camelCase on the wire. Incoming types are lenient
//! where the document says a field is optional and strict elsewhere, so a
//! plugin bug surfaces as `-32602` instead of as wrong state.

use ccbridge_protocol::editor::{Diagnostic, EditorTab, Range, Selection};
use ccbridge_protocol::mcp::Content;
use ccbridge_protocol::uri::{normalize, percent_decode};
use ccbridge_server::{Capabilities, ClientId, ClientInfo, DiffDecision, DiffId, EditorEvent};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of docs/editor-protocol.md this crate implements.
pub const PROTOCOL_VERSION: u32 = 1;

/// Method names, as on the wire.
pub mod method {
    // editor → ccbridge, requests
    pub const INITIALIZE: &str = "initialize";
    pub const STATUS: &str = "status";
    pub const SHUTDOWN: &str = "shutdown";
    // editor → ccbridge, notifications
    pub const SELECTION_CHANGED: &str = "selectionChanged";
    pub const OPEN_EDITORS_CHANGED: &str = "openEditorsChanged";
    pub const DIAGNOSTICS_CHANGED: &str = "diagnosticsChanged";
    pub const DIAGNOSTICS_CLEARED: &str = "diagnosticsCleared";
    pub const DOCUMENT_DIRTY_CHANGED: &str = "documentDirtyChanged";
    pub const AT_MENTIONED: &str = "atMentioned";
    pub const WORKSPACE_CHANGED: &str = "workspaceChanged";
    pub const DIFF_RESOLVED: &str = "diffResolved";
    // ccbridge → editor, requests
    pub const SHOW_DIFF: &str = "showDiff";
    pub const CLOSE_DIFF: &str = "closeDiff";
    pub const OPEN_FILE: &str = "openFile";
    pub const OPEN_FILES: &str = "openFiles";
    pub const CLOSE_TAB: &str = "closeTab";
    pub const SAVE_DOCUMENT: &str = "saveDocument";
    pub const REFORMAT_FILE: &str = "reformatFile";
    pub const CONFIRM_EXECUTE: &str = "confirmExecute";
    pub const EXECUTE_CODE: &str = "executeCode";
    // ccbridge → editor, notifications
    pub const CLIENT_CONNECTED: &str = "clientConnected";
    pub const CLIENT_DISCONNECTED: &str = "clientDisconnected";
}

// ------------------------------------------------------------ initialize

/// `initialize` params; all optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ide_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_folders: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Absent: only `diff` is assumed. Present: what it omits is `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
}

impl InitializeParams {
    /// The lock-file update `initialize` asks for, if any.
    pub fn workspace_event(&self) -> Option<EditorEvent> {
        workspace_event(&self.workspace_folders, &self.ide_name, self.pid)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: u32,
    pub server_info: ServerInfo,
    pub port: u16,
    /// `null` when ccbridge writes no lock file.
    pub lock_file: Option<String>,
    /// Variables to set on the terminal that runs `claude`.
    pub env: BTreeMap<String, String>,
}

/// The variables that make a `claude` started in the editor's terminal
/// connect to this server at once.
pub fn claude_env(port: u16) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("CLAUDE_CODE_SSE_PORT".to_owned(), port.to_string()),
        ("ENABLE_IDE_INTEGRATION".to_owned(), "true".to_owned()),
    ])
}

/// `status` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusResult {
    pub port: u16,
    pub lock_file: Option<String>,
    pub clients: Vec<ClientInfo>,
}

// ------------------------------------------------------------ notifications in

/// `selectionChanged`: a selection, a bare cursor (`text: ""`), or
/// `filePath: null` for "no active editor".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectionChangedParams {
    #[serde(default)]
    pub file_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<Range>,
}

impl SelectionChangedParams {
    pub fn into_event(self) -> Result<EditorEvent, String> {
        let Some(file_path) = self.file_path else {
            return Ok(EditorEvent::Selection(None));
        };
        let range = self
            .selection
            .ok_or("`selection` is required when `filePath` is set")?;
        Ok(EditorEvent::Selection(Some(Selection {
            file_path,
            text: self.text.unwrap_or_default(),
            range,
        })))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenEditorsChangedParams {
    pub tabs: Vec<EditorTab>,
}

/// `diagnosticsChanged`: `path`, or an LSP-style `uri` instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosticsChangedParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    pub diagnostics: Vec<Diagnostic>,
}

impl DiagnosticsChangedParams {
    pub fn into_event(self) -> Result<EditorEvent, String> {
        let path = match (self.path, self.uri) {
            (Some(p), _) => p,
            (None, Some(u)) => path_from_file_uri(&u)?,
            (None, None) => return Err("`path` or `uri` is required".into()),
        };
        Ok(EditorEvent::Diagnostics {
            path,
            diagnostics: self.diagnostics,
        })
    }
}

/// The absolute path a `file://` URI names. Editors send LSP URIs, which
/// are percent-encoded (`file:///a%20b`); `file://localhost/` is accepted.
pub fn path_from_file_uri(uri: &str) -> Result<String, String> {
    let rest = uri
        .strip_prefix("file://")
        .ok_or_else(|| format!("`uri` must start with file:// (got {uri:?})"))?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return Err(format!("`uri` must name an absolute path (got {uri:?})"));
    }
    let decoded = percent_decode(rest).unwrap_or_else(|| rest.to_owned());
    Ok(normalize(&decoded))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentDirtyChangedParams {
    pub path: String,
    pub is_dirty: bool,
}

/// `atMentioned` params: the protocol crate's type, same shape.
pub type AtMentionedParams = ccbridge_protocol::notifications::AtMentioned;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceChangedParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_folders: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ide_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

impl WorkspaceChangedParams {
    pub fn into_event(self) -> EditorEvent {
        EditorEvent::Workspace {
            folders: self.workspace_folders,
            ide_name: self.ide_name,
            pid: self.pid,
        }
    }
}

fn workspace_event(
    folders: &Option<Vec<String>>,
    ide_name: &Option<String>,
    pid: Option<u32>,
) -> Option<EditorEvent> {
    (folders.is_some() || ide_name.is_some() || pid.is_some()).then(|| EditorEvent::Workspace {
        folders: folders.clone(),
        ide_name: ide_name.clone(),
        pid,
    })
}

/// `diffResolved`: `{"id", "decision": "accepted", "contents"?}` or
/// `{"id", "decision": "rejected"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffResolvedParams {
    pub id: DiffId,
    #[serde(flatten)]
    pub decision: DiffDecision,
}

impl DiffResolvedParams {
    pub fn into_event(self) -> EditorEvent {
        EditorEvent::DiffResolved {
            id: self.id,
            decision: self.decision,
        }
    }
}

// ------------------------------------------------------------ requests out

/// `showDiff` params: the engine's view, which has the wire shape.
pub type ShowDiffParams = ccbridge_server::DiffView;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseDiffParams {
    pub id: DiffId,
}

/// `openFile` params: the `openFile` tool's arguments.
pub type OpenFileParams = ccbridge_protocol::tools::OpenFileArgs;

/// `openFile` result; the editor may also answer `null`.
pub type OpenFileResult = ccbridge_server::OpenedFile;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenFilesParams {
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenFilesResult {
    pub opened: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CloseTabParams {
    pub tab_name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseTabResult {
    pub closed: bool,
}

/// `saveDocument` and `reformatFile` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathParams {
    pub path: String,
}

/// `confirmExecute` and `executeCode` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeParams {
    pub code: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfirmExecuteResult {
    pub confirmed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecuteCodeResult {
    pub content: Vec<Content>,
}

// ------------------------------------------------------------ notifications out

/// `clientConnected` params.
pub type ClientConnectedParams = ClientInfo;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientDisconnectedParams {
    pub id: ClientId,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbridge_protocol::editor::{Position, Severity};
    use serde_json::json;

    #[test]
    fn initialize_params_from_the_document() {
        let p: InitializeParams = serde_json::from_value(json!({
            "protocolVersion": 1, "ideName": "Neovim", "workspaceFolders": ["/home/u/project"],
            "pid": 4242,
            "capabilities": {"diff": true, "openFile": true, "saveDocument": true,
                             "closeTab": true, "reformat": false, "executeCode": false}
        }))
        .unwrap();
        assert_eq!(p.protocol_version, Some(1));
        let caps = p.capabilities.clone().unwrap();
        assert!(caps.diff && caps.open_file && caps.save_document && caps.close_tab);
        assert!(!caps.reformat && !caps.execute_code);
        assert_eq!(
            p.workspace_event(),
            Some(EditorEvent::Workspace {
                folders: Some(vec!["/home/u/project".into()]),
                ide_name: Some("Neovim".into()),
                pid: Some(4242)
            })
        );
        let empty: InitializeParams = serde_json::from_value(json!({})).unwrap();
        assert_eq!(empty.workspace_event(), None);
        let partial: InitializeParams =
            serde_json::from_value(json!({"capabilities": {"openFile": true}})).unwrap();
        assert!(
            !partial.capabilities.unwrap().diff,
            "omitted capabilities are false"
        );
        assert!(serde_json::from_value::<InitializeParams>(json!({"pid": "x"})).is_err());
    }

    #[test]
    fn initialize_result_has_the_documented_shape() {
        let r = InitializeResult {
            protocol_version: PROTOCOL_VERSION,
            server_info: ServerInfo {
                name: "ccbridge".into(),
                version: "0.1.0".into(),
            },
            port: 53117,
            lock_file: Some("/home/u/.claude/ide/53117.lock".into()),
            env: claude_env(53117),
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"protocolVersion": 1, "serverInfo": {"name": "ccbridge", "version": "0.1.0"},
                   "port": 53117, "lockFile": "/home/u/.claude/ide/53117.lock",
                   "env": {"CLAUDE_CODE_SSE_PORT": "53117", "ENABLE_IDE_INTEGRATION": "true"}})
        );
    }

    #[test]
    fn selection_changed_variants() {
        let p: SelectionChangedParams = serde_json::from_value(json!({
            "filePath": "/w/a.rs", "text": "fn",
            "selection": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 2}}
        }))
        .unwrap();
        assert_eq!(
            p.into_event().unwrap(),
            EditorEvent::Selection(Some(Selection {
                file_path: "/w/a.rs".into(),
                text: "fn".into(),
                range: Range::new(Position::new(1, 0), Position::new(1, 2)),
            }))
        );
        let cursor: SelectionChangedParams = serde_json::from_value(json!({
            "filePath": "/w/a.rs",
            "selection": {"start": {"line": 3, "character": 4}, "end": {"line": 3, "character": 4}}
        }))
        .unwrap();
        let EditorEvent::Selection(Some(s)) = cursor.into_event().unwrap() else {
            panic!("cursor is a selection")
        };
        assert_eq!(s.text, "");
        let none: SelectionChangedParams =
            serde_json::from_value(json!({"filePath": null})).unwrap();
        assert_eq!(none.into_event().unwrap(), EditorEvent::Selection(None));
        let no_range: SelectionChangedParams =
            serde_json::from_value(json!({"filePath": "/w/a.rs"})).unwrap();
        assert!(no_range.into_event().is_err());
    }

    #[test]
    fn diagnostics_take_a_path_or_a_uri() {
        let d = json!([{"message": "boom", "severity": 1,
                        "range": {"start": {"line": 0, "character": 1}, "end": {"line": 0, "character": 2}}},
                       {"message": "meh", "severity": "warning", "code": 7,
                        "range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 1}}}]);
        let by_path: DiagnosticsChangedParams =
            serde_json::from_value(json!({"path": "/w/a b.ts", "diagnostics": d})).unwrap();
        let by_uri: DiagnosticsChangedParams =
            serde_json::from_value(json!({"uri": "file:///w/a%20b.ts", "diagnostics": d})).unwrap();
        let a = by_path.into_event().unwrap();
        assert_eq!(a, by_uri.into_event().unwrap());
        let EditorEvent::Diagnostics { path, diagnostics } = a else {
            panic!("diagnostics event")
        };
        assert_eq!(path, "/w/a b.ts");
        assert_eq!(diagnostics[0].severity, Severity::Error);
        assert_eq!(diagnostics[1].severity, Severity::Warning);
        assert_eq!(diagnostics[1].code.as_deref(), Some("7"));
        let neither: DiagnosticsChangedParams =
            serde_json::from_value(json!({"diagnostics": []})).unwrap();
        assert!(neither.into_event().is_err());
        assert!(serde_json::from_value::<DiagnosticsChangedParams>(
            json!({"path": "/a", "diagnostics": [{"message": "m", "severity": "fatal",
              "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}}]})
        )
        .is_err());
    }

    #[test]
    fn file_uris() {
        assert_eq!(path_from_file_uri("file:///a/b.rs").unwrap(), "/a/b.rs");
        assert_eq!(
            path_from_file_uri("file://localhost/a/./b").unwrap(),
            "/a/b"
        );
        assert_eq!(path_from_file_uri("file:///a/%E2%9C%BB").unwrap(), "/a/✻");
        assert!(path_from_file_uri("/a/b").is_err());
        assert!(path_from_file_uri("file://host/a").is_err());
        assert!(path_from_file_uri("untitled:1").is_err());
    }

    #[test]
    fn diff_resolved_both_decisions() {
        let a: DiffResolvedParams =
            serde_json::from_value(json!({"id": 3, "decision": "accepted", "contents": "x\n"}))
                .unwrap();
        assert_eq!(
            a.into_event(),
            EditorEvent::DiffResolved {
                id: DiffId(3),
                decision: DiffDecision::Accepted {
                    contents: Some("x\n".into())
                }
            }
        );
        let a: DiffResolvedParams =
            serde_json::from_value(json!({"id": 3, "decision": "accepted"})).unwrap();
        assert_eq!(a.decision, DiffDecision::Accepted { contents: None });
        let r: DiffResolvedParams =
            serde_json::from_value(json!({"id": 4, "decision": "rejected"})).unwrap();
        assert_eq!(r.decision, DiffDecision::Rejected);
        assert!(serde_json::from_value::<DiffResolvedParams>(
            json!({"id": 4, "decision": "maybe"})
        )
        .is_err());
        assert!(
            serde_json::from_value::<DiffResolvedParams>(json!({"decision": "rejected"})).is_err()
        );
    }

    #[test]
    fn outgoing_shapes() {
        let v = serde_json::to_value(ShowDiffParams {
            id: DiffId(1),
            tab_name: "t".into(),
            old_file_path: "/w/a".into(),
            new_file_path: "/w/a".into(),
            original_contents: None,
            proposed_contents: "x".into(),
        })
        .unwrap();
        assert_eq!(
            v,
            json!({"id": 1, "tabName": "t", "oldFilePath": "/w/a", "newFilePath": "/w/a",
                   "originalContents": null, "proposedContents": "x"})
        );
        let v = serde_json::to_value(ClientInfo {
            id: ClientId(2),
            name: "claude-code".into(),
            version: "2.1.328".into(),
            pid: None,
        })
        .unwrap();
        assert_eq!(
            v,
            json!({"id": 2, "name": "claude-code", "version": "2.1.328", "pid": null})
        );
        assert_eq!(
            serde_json::to_value(CloseTabParams {
                tab_name: "x".into()
            })
            .unwrap(),
            json!({"tabName": "x"})
        );
        let r: ExecuteCodeResult = serde_json::from_value(json!({"content": [
            {"type": "text", "text": "4"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]}))
        .unwrap();
        assert_eq!(r.content.len(), 2);
        let o: OpenFileResult = serde_json::from_value(json!({"filePath": "/w/a"})).unwrap();
        assert_eq!(o.line_count, None);
    }
}
