//! The messages of the editor protocol (docs/editor-protocol.md), typed.
//!
//! One place names every method and fixes every field's spelling, so the
//! session, the frontend, the tests and the document cannot drift apart.
//! Types the engine already defines with the right wire shape are reused
//! (`DiffView` is most of `showDiff`'s params, `ClientInfo` is `clientConnected`'s,
//! `Capabilities`, `EditorTab`, `Diagnostic`, `AtMentioned`); the rest live
//! here. Everything is camelCase on the wire. Incoming types are lenient
//! where the document says a field is optional and strict elsewhere, so a
//! plugin bug surfaces as `-32602` instead of as wrong state.

pub use ccbridge_mcp::ApprovalMode;
use ccbridge_protocol::editor::{Diagnostic, EditorTab, Range, Selection};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::lockfile::McpEndpoint;
use ccbridge_protocol::mcp::Content;
use ccbridge_protocol::uri::{normalize, percent_decode};
use ccbridge_server::hunks::{self, Hunk};
use ccbridge_server::{
    Capabilities, ClientId, ClientInfo, CloseReason, DiffDecision, DiffId, DiffView, EditorEvent,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The version of docs/editor-protocol.md this crate implements.
pub const PROTOCOL_VERSION: u32 = 3;
/// Versions an editor may ask for in `initialize`. Each version only adds
/// to the one before (version 2: the `dismissed` verdict,
/// `invalidNotification`, the workspace tools; version 3: the other
/// agents, and which agent each session and diff is; later, without a new
/// number, `showDiff`'s `hunks`), so an older editor
/// keeps working; it is just not sent what it would not know.
pub const SUPPORTED_PROTOCOL_VERSIONS: [u32; 3] = [1, 2, 3];

/// Method names, as on the wire.
pub mod method {
    // editor → ccbridge, requests
    pub const INITIALIZE: &str = "initialize";
    pub const STATUS: &str = "status";
    pub const SHUTDOWN: &str = "shutdown";
    /// The session review (`ccbridge serve --stdio` watches the workspace
    /// unless `--no-changes`): the list, and a decision on it.
    pub const CHANGES: &str = "changes";
    pub const CHANGE_ACTION: &str = "changeAction";
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
    pub const REVIEW_TEXT: &str = "reviewText";
    pub const OPEN_FILE: &str = "openFile";
    pub const OPEN_FILES: &str = "openFiles";
    pub const CLOSE_TAB: &str = "closeTab";
    pub const SAVE_DOCUMENT: &str = "saveDocument";
    pub const REFORMAT_FILE: &str = "reformatFile";
    pub const CONFIRM_EXECUTE: &str = "confirmExecute";
    pub const EXECUTE_CODE: &str = "executeCode";
    pub const APPROVE: &str = "approve";
    pub const COMMAND_EVENT: &str = "commandEvent";
    // ccbridge → editor, notifications
    pub const CLIENT_CONNECTED: &str = "clientConnected";
    pub const CLIENT_DISCONNECTED: &str = "clientDisconnected";
    /// The session review changed (sent when `initialize` said `changes`).
    pub const CHANGES_CHANGED: &str = "changesChanged";
    /// Version 2: a notification from the editor that ccbridge could not
    /// use, in whole or in part.
    pub const INVALID_NOTIFICATION: &str = "invalidNotification";
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
    /// When the workspace tools ask the user (version 2; absent: as
    /// `ccbridge serve --approval-mode` said, `write-only` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<ApprovalMode>,
    /// The editor shows the session review: ccbridge sends it
    /// `changesChanged` whenever the list of changed files changes. Absent:
    /// as before (off until an `initialize` says `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<bool>,
    /// Whose diagnostics Claude gets (`crate::diagnostics`); absent: as
    /// before (`auto` until an `initialize` says otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<DiagnosticsSource>,
}

/// `initialize.diagnostics`: who reports a file's diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DiagnosticsSource {
    /// ccbridge's language servers, until the editor reports on a file.
    #[default]
    Auto,
    /// The editor's reports only.
    Editor,
    /// ccbridge's language servers only.
    Ccbridge,
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
    /// The workspace tools' MCP server (version 2; absent when it does not
    /// run): register it with an MCP client, e.g. `claude mcp add
    /// --transport http ccbridge <url> --header "Authorization: Bearer <token>"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsEndpoint>,
    /// Every agent that can find this editor, with the environment of a
    /// terminal that starts it (version 3; absent before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentEnv>,
    /// Whose diagnostics Claude gets now (version 3): what
    /// `initialize.diagnostics` asked, or `editor` when ccbridge runs no
    /// language servers (`--no-language-servers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<DiagnosticsSource>,
}

/// An agent the editor may start in a terminal: `{"id": "gemini", "name":
/// "Gemini CLI", "env": {...}, "args"?: [...]}` (version 3). `id` is also
/// its command; `args` go before the user's own arguments (for Claude Code:
/// `--settings <json>`, which makes every edit ask, and so reach the
/// editor's review, even in the auto mode it starts in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentEnv {
    #[serde(flatten)]
    pub agent: ccbridge_server::AgentKind,
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
}

/// Where the workspace tools are served, the bearer token they take
/// (`url`, `token`), and when they ask the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsEndpoint {
    #[serde(flatten)]
    pub endpoint: McpEndpoint,
    pub approval_mode: ApprovalMode,
}

/// The variables that make a `claude` started in the editor's terminal
/// connect to this server at once.
pub use ccbridge_protocol::lockfile::claude_env;

/// `status` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusResult {
    pub port: u16,
    pub lock_file: Option<String>,
    pub clients: Vec<ClientInfo>,
}

// ------------------------------------------------------------ notifications in

/// An editor notification made into an engine event, and what was wrong
/// with it. Editors make mistakes (a relative path, one odd diagnostic);
/// the usable part is applied and the rest is reported back to the editor
/// (`invalidNotification`) instead of being dropped silently.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// `None` when nothing of the notification was usable.
    pub event: Option<EditorEvent>,
    /// What was wrong; with an event, the parts that were left out.
    pub problems: Vec<String>,
}

impl Checked {
    fn ok(event: EditorEvent) -> Self {
        Checked {
            event: Some(event),
            problems: Vec::new(),
        }
    }

    fn rejected(problem: impl Into<String>) -> Self {
        Checked {
            event: None,
            problems: vec![problem.into()],
        }
    }
}

impl From<Result<EditorEvent, String>> for Checked {
    fn from(r: Result<EditorEvent, String>) -> Self {
        match r {
            Ok(e) => Checked::ok(e),
            Err(p) => Checked::rejected(p),
        }
    }
}

/// Paths the editor reports must be absolute: Claude matches them against
/// its own absolute paths (a relative one reaches it as `file://a.py`).
pub fn check_path(field: &str, path: &str) -> Result<(), String> {
    if path.starts_with('/') && !path.contains('\0') {
        Ok(())
    } else {
        Err(format!("`{field}` must be an absolute path (got {path:?})"))
    }
}

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
    /// A selection whose end comes before its start (the cursor at the
    /// anchor's left) is turned around: Claude counts lines from start to
    /// end.
    pub fn into_event(self) -> Result<EditorEvent, String> {
        let Some(file_path) = self.file_path else {
            return Ok(EditorEvent::Selection(None));
        };
        check_path("filePath", &file_path)?;
        let mut range = self
            .selection
            .ok_or("`selection` is required when `filePath` is set")?;
        if range.end < range.start {
            std::mem::swap(&mut range.start, &mut range.end);
        }
        Ok(EditorEvent::Selection(Some(Selection {
            file_path,
            text: self.text.unwrap_or_default(),
            range,
        })))
    }
}

/// `openEditorsChanged`; each tab is read on its own, so one bad tab does
/// not lose the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenEditorsChangedParams {
    pub tabs: Vec<RawJson>,
}

impl OpenEditorsChangedParams {
    pub fn check(self) -> Checked {
        let mut problems = Vec::new();
        let mut tabs = Vec::with_capacity(self.tabs.len());
        for (i, raw) in self.tabs.iter().enumerate() {
            match raw.parse::<EditorTab>() {
                Err(e) => problems.push(format!("tabs[{i}]: {e}")),
                Ok(t) if !t.is_untitled => match check_path("path", &t.path) {
                    Ok(()) => tabs.push(t),
                    Err(e) => problems.push(format!("tabs[{i}]: {e}")),
                },
                Ok(t) => tabs.push(t),
            }
        }
        left_out(
            EditorEvent::OpenEditors(tabs),
            problems,
            self.tabs.len(),
            "tabs",
        )
    }
}

/// The checked event, noting how many items were left out of it.
fn left_out(event: EditorEvent, mut problems: Vec<String>, total: usize, what: &str) -> Checked {
    if !problems.is_empty() {
        let kept = total - problems.len();
        problems.push(format!("the other {kept} {what} were applied"));
    }
    Checked {
        event: Some(event),
        problems,
    }
}

/// `diagnosticsChanged`: `path`, or an LSP-style `uri` instead. Each
/// diagnostic is read on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosticsChangedParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    pub diagnostics: Vec<RawJson>,
}

impl DiagnosticsChangedParams {
    pub fn check(self) -> Checked {
        let path = match (self.path, self.uri) {
            (Some(p), _) => match check_path("path", &p) {
                Ok(()) => p,
                Err(e) => return Checked::rejected(e),
            },
            (None, Some(u)) => match path_from_file_uri(&u) {
                Ok(p) => p,
                Err(e) => return Checked::rejected(e),
            },
            (None, None) => return Checked::rejected("`path` or `uri` is required"),
        };
        let mut problems = Vec::new();
        let mut diagnostics = Vec::with_capacity(self.diagnostics.len());
        for (i, raw) in self.diagnostics.iter().enumerate() {
            match raw.parse::<Diagnostic>() {
                Ok(d) => diagnostics.push(d),
                Err(e) => problems.push(format!("diagnostics[{i}]: {e}")),
            }
        }
        let total = self.diagnostics.len();
        left_out(
            EditorEvent::Diagnostics { path, diagnostics },
            problems,
            total,
            "diagnostics",
        )
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

impl DocumentDirtyChangedParams {
    pub fn into_event(self) -> Result<EditorEvent, String> {
        check_path("path", &self.path)?;
        Ok(EditorEvent::Dirty {
            path: self.path,
            is_dirty: self.is_dirty,
        })
    }
}

/// `atMentioned` params: the protocol crate's type, same shape.
pub type AtMentionedParams = ccbridge_protocol::notifications::AtMentioned;

/// Checks an `atMentioned`: an absolute path; lines in order.
pub fn at_mention_event(mut m: AtMentionedParams) -> Result<EditorEvent, String> {
    check_path("filePath", &m.file_path)?;
    if let (Some(a), Some(b)) = (m.line_start, m.line_end) {
        if b < a {
            m.line_start = Some(b);
            m.line_end = Some(a);
        }
    }
    Ok(EditorEvent::AtMention(m))
}

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
    pub fn into_event(self) -> Result<EditorEvent, String> {
        if let Some(f) = &self.workspace_folders {
            check_folders(f)?;
        }
        Ok(EditorEvent::Workspace {
            folders: self.workspace_folders,
            ide_name: self.ide_name,
            pid: self.pid,
        })
    }
}

/// Workspace folders go into the lock file, where the CLI matches its cwd
/// against them: they must be absolute.
pub fn check_folders(folders: &[String]) -> Result<(), String> {
    folders
        .iter()
        .try_for_each(|f| check_path("workspaceFolders", f))
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

/// `diffResolved`: `{"id", "decision": "accepted", "contents"?}`,
/// `{"id", "decision": "rejected"}` or (version 2) `{"id", "decision":
/// "dismissed"}`. `id` is `showDiff`'s `params.id`, not the JSON-RPC id of
/// the `showDiff` request.
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

/// `invalidNotification` params (version 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidNotificationParams {
    /// The editor's notification.
    pub method: String,
    /// What was wrong, once, with what was done about it.
    pub message: String,
    /// Whether the usable rest of the notification was applied.
    pub partial: bool,
}

// ------------------------------------------------------------ requests out

/// `showDiff` params: the engine's view, which has the wire shape, and the
/// hunks between its original and its proposal as the engine computes them
/// ([`ccbridge_server::hunks`]), so an editor offering per-hunk decisions
/// shows exactly the hunks the browser UI shows instead of diffing again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShowDiffParams {
    #[serde(flatten)]
    pub view: DiffView,
    /// `None` when the original could not be read (there is nothing to
    /// diff against: only the whole file can be decided). A new file is
    /// diffed against the empty text: one hunk of every line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<Vec<Hunk>>,
}

impl ShowDiffParams {
    /// The params for `view`, its hunks computed.
    pub fn new(view: DiffView) -> ShowDiffParams {
        let original = match (&view.original_contents, view.is_new_file) {
            (Some(text), _) => Some(text.as_str()),
            (None, true) => Some(""),
            (None, false) => None,
        };
        let hunks = original.map(|o| hunks::hunks(o, &view.proposed_contents));
        ShowDiffParams { view, hunks }
    }
}

/// `closeDiff` params; `reason` (version 2) says why, for an editor that
/// wants to tell the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseDiffParams {
    pub id: DiffId,
    pub reason: CloseReason,
}

/// `reviewText` params (capability `reviewText`): which open diff view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewTextParams {
    pub id: DiffId,
}

/// `reviewText` result: the proposed side as the user left it, or `null`
/// when the editor cannot tell (the view is gone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewTextResult {
    pub contents: Option<String>,
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

/// `approve` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApproveResult {
    pub approved: bool,
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
    use ccbridge_server::AgentKind;
    use serde_json::{json, Value};

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
            tools: None,
            agents: vec![
                AgentEnv {
                    agent: AgentKind::Claude,
                    env: claude_env(53117),
                    args: vec!["--settings".into(), "{}".into()],
                },
                AgentEnv {
                    agent: AgentKind::Gemini,
                    env: BTreeMap::from([("GEMINI_CLI_IDE_SERVER_PORT".into(), "41000".into())]),
                    args: Vec::new(),
                },
            ],
            diagnostics: Some(DiagnosticsSource::Auto),
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            json!({"protocolVersion": 3, "serverInfo": {"name": "ccbridge", "version": "0.1.0"},
                   "port": 53117, "lockFile": "/home/u/.claude/ide/53117.lock",
                   "env": {"CLAUDE_CODE_SSE_PORT": "53117", "ENABLE_IDE_INTEGRATION": "true"},
                   "agents": [
                     {"id": "claude", "name": "Claude Code",
                      "env": {"CLAUDE_CODE_SSE_PORT": "53117", "ENABLE_IDE_INTEGRATION": "true"},
                      "args": ["--settings", "{}"]},
                     {"id": "gemini", "name": "Gemini CLI",
                      "env": {"GEMINI_CLI_IDE_SERVER_PORT": "41000"}}],
                   "diagnostics": "auto"})
        );
        assert_eq!(serde_json::from_value::<InitializeResult>(v).unwrap(), r);
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
        let a = by_path.check();
        assert_eq!(a, by_uri.check());
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        let Some(EditorEvent::Diagnostics { path, diagnostics }) = a.event else {
            panic!("diagnostics event")
        };
        assert_eq!(path, "/w/a b.ts");
        assert_eq!(diagnostics[0].severity, Severity::Error);
        assert_eq!(diagnostics[1].severity, Severity::Warning);
        assert_eq!(diagnostics[1].code.as_deref(), Some("7"));
        let neither: DiagnosticsChangedParams =
            serde_json::from_value(json!({"diagnostics": []})).unwrap();
        assert_eq!(neither.check().event, None);
    }

    /// Issue 11, defect 11: one bad diagnostic (severity 5) silently
    /// dropped the whole file's update, and relative paths reached Claude
    /// as `file://relative.py`. Now the rest is applied and the problem
    /// named; a relative path is refused, saying why.
    #[test]
    fn regression_bad_editor_input_is_named_not_dropped_silently() {
        let range =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}});
        let p: DiagnosticsChangedParams = serde_json::from_value(json!({"path": "/w/a.py",
            "diagnostics": [{"message": "ok", "severity": 1, "range": range},
                            {"message": "odd", "severity": 5, "range": range}]}))
        .unwrap();
        let c = p.check();
        let Some(EditorEvent::Diagnostics { diagnostics, .. }) = &c.event else {
            panic!("{c:?}")
        };
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(c.problems.len(), 2, "{:?}", c.problems);
        assert!(
            c.problems[0].starts_with("diagnostics[1]: unknown severity \"5\""),
            "{:?}",
            c.problems
        );
        assert_eq!(c.problems[1], "the other 1 diagnostics were applied");

        let rel: DiagnosticsChangedParams =
            serde_json::from_value(json!({"path": "relative.py", "diagnostics": []})).unwrap();
        assert_eq!(
            rel.check().problems,
            vec!["`path` must be an absolute path (got \"relative.py\")"]
        );
        let tabs: OpenEditorsChangedParams = serde_json::from_value(json!({"tabs": [
            {"path": "/w/a.py", "isActive": true},
            {"path": "b.py"},
            {"path": "Untitled-1", "isUntitled": true}]}))
        .unwrap();
        let c = tabs.check();
        let Some(EditorEvent::OpenEditors(kept)) = &c.event else {
            panic!("{c:?}")
        };
        assert_eq!(kept.len(), 2);
        assert!(c.problems[0].contains("tabs[1]"), "{:?}", c.problems);
        let sel = SelectionChangedParams {
            file_path: Some("a.py".into()),
            text: None,
            selection: Some(Range::default()),
        };
        assert!(sel.into_event().unwrap_err().contains("absolute"));
        assert!(at_mention_event(AtMentionedParams {
            file_path: "a.py".into(),
            line_start: None,
            line_end: None
        })
        .is_err());
    }

    #[test]
    fn backwards_ranges_are_put_in_order() {
        let sel = SelectionChangedParams {
            file_path: Some("/w/a".into()),
            text: Some("x".into()),
            selection: Some(Range::new(Position::new(5, 2), Position::new(3, 1))),
        };
        let EditorEvent::Selection(Some(s)) = sel.into_event().unwrap() else {
            panic!()
        };
        assert_eq!(
            s.range,
            Range::new(Position::new(3, 1), Position::new(5, 2))
        );
        let EditorEvent::AtMention(m) = at_mention_event(AtMentionedParams {
            file_path: "/w/a".into(),
            line_start: Some(9),
            line_end: Some(2),
        })
        .unwrap() else {
            panic!()
        };
        assert_eq!((m.line_start, m.line_end), (Some(2), Some(9)));
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

    fn view(original: Option<&str>, is_new_file: bool, proposed: &str) -> DiffView {
        DiffView {
            id: DiffId(3),
            client_id: None,
            tab_name: "t".into(),
            old_file_path: "/w/a".into(),
            new_file_path: "/w/a".into(),
            original_contents: original.map(Into::into),
            is_new_file,
            proposed_contents: proposed.into(),
            agent: None,
        }
    }

    fn hunks_sent(view: DiffView) -> Value {
        serde_json::to_value(ShowDiffParams::new(view)).unwrap()["hunks"].clone()
    }

    #[test]
    fn show_diff_carries_the_engines_hunks() {
        // The same line replaced the same way in three places: three hunks,
        // each at its own place.
        let original = "x = 1\na\nx = 1\nb\nx = 1\n";
        let proposed = "x = 2\na\nx = 2\nb\nx = 2\n";
        assert_eq!(
            hunks_sent(view(Some(original), false, proposed)),
            json!([
                {"oldStart": 0, "oldLines": 1, "newStart": 0, "newLines": 1},
                {"oldStart": 2, "oldLines": 1, "newStart": 2, "newLines": 1},
                {"oldStart": 4, "oldLines": 1, "newStart": 4, "newLines": 1},
            ])
        );
        // A pure insertion and a pure deletion.
        assert_eq!(
            hunks_sent(view(Some("a\nb\nc\n"), false, "a\nn\nb\n")),
            json!([
                {"oldStart": 1, "oldLines": 0, "newStart": 1, "newLines": 1},
                {"oldStart": 2, "oldLines": 1, "newStart": 3, "newLines": 0},
            ])
        );
        // A last line without a newline counts as a line; adding the
        // newline changes that line.
        assert_eq!(
            hunks_sent(view(Some("a\nb"), false, "a\nb\n")),
            json!([{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1}])
        );
        // A new file is diffed against nothing: one hunk of every line.
        assert_eq!(
            hunks_sent(view(None, true, "a\nb\n")),
            json!([{"oldStart": 0, "oldLines": 0, "newStart": 0, "newLines": 2}])
        );
        // No change: an empty list, not an absent field.
        assert_eq!(hunks_sent(view(Some("a\n"), false, "a\n")), json!([]));
        // An unreadable original: nothing to diff against, no field.
        assert_eq!(hunks_sent(view(None, false, "a\n")), Value::Null);
        // The params read back, with and without the field.
        let p = ShowDiffParams::new(view(Some(original), false, proposed));
        let back: ShowDiffParams =
            serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn outgoing_shapes() {
        let v = serde_json::to_value(ShowDiffParams::new(DiffView {
            id: DiffId(1),
            client_id: None,
            tab_name: "t".into(),
            old_file_path: "/w/a".into(),
            new_file_path: "/w/a".into(),
            original_contents: None,
            is_new_file: false,
            proposed_contents: "x".into(),
            agent: None,
        }))
        .unwrap();
        // An unreadable original: no hunks, the field is left out.
        assert_eq!(
            v,
            json!({"id": 1, "clientId": null, "tabName": "t", "oldFilePath": "/w/a",
                   "newFilePath": "/w/a", "originalContents": null, "isNewFile": false,
                   "proposedContents": "x"})
        );
        let v = serde_json::to_value(ShowDiffParams::new(DiffView {
            id: DiffId(2),
            client_id: Some(ClientId(4)),
            tab_name: "t".into(),
            old_file_path: "/w/a".into(),
            new_file_path: "/w/a".into(),
            original_contents: Some("o".into()),
            is_new_file: false,
            proposed_contents: "x".into(),
            agent: Some(AgentKind::Qwen),
        }))
        .unwrap();
        assert_eq!(v["agent"], json!({"id": "qwen", "name": "Qwen Code"}));
        assert_eq!(
            v["hunks"],
            json!([{"oldStart": 0, "oldLines": 1, "newStart": 0, "newLines": 1}])
        );
        let v = serde_json::to_value(ClientInfo {
            id: ClientId(2),
            name: "claude-code".into(),
            version: "2.1.328".into(),
            pid: None,
            agent: AgentKind::Claude,
        })
        .unwrap();
        assert_eq!(
            v,
            json!({"id": 2, "name": "claude-code", "version": "2.1.328", "pid": null,
                   "agent": {"id": "claude", "name": "Claude Code"}})
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

// ------------------------------------------------------------ the session review

/// `changeAction`'s params: as the page's `POST /api/changes/{action}`.
#[derive(Debug, Clone, Deserialize)]
pub struct ChangeActionParams {
    /// `keep`, `revert`, `viewed`, `keepAll`, `revertAll`, `undo`.
    pub action: String,
    #[serde(flatten)]
    pub decision: ccbridge_changes::Decision,
}
