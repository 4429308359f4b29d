//! The boundary between the engine and an editor.
//!
//! The engine needs the editor's UI for a few things — show a diff and learn
//! the user's decision, open files, close tabs, save, reformat, run code —
//! and it learns about the editor's state from one stream of
//! [`EditorEvent`]s. A Rust editor embeds the engine and implements
//! [`Frontend`]; the stdio sidecar (`ccbridge-sidecar`) implements it by
//! forwarding to an editor plugin; the browser UI will be a third.
//!
//! Decisions on diffs arrive as events ([`EditorEvent::DiffResolved`]) rather
//! than as the return value of [`Frontend::show_diff`], so that a view can
//! be closed, replaced or settled by the engine (the client's `close_tab`,
//! `closeAllDiffTabs`, a disconnect) without cancelling a future inside the
//! editor.

use async_trait::async_trait;
use ccbridge_protocol::editor::{Diagnostic, EditorTab, Selection};
use ccbridge_protocol::mcp::Content;
use ccbridge_protocol::notifications::AtMentioned;
use ccbridge_protocol::reveal::{reveal, reveal_line, HiddenChar};
use ccbridge_protocol::tools::OpenFileArgs;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Identifies one diff view for its whole life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DiffId(pub u64);

impl fmt::Display for DiffId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "diff-{}", self.0)
    }
}

/// A diff the user is asked to review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffView {
    pub id: DiffId,
    /// The agent session that asked, when known.
    #[serde(default)]
    pub client_id: Option<ClientId>,
    /// The agent that asked; `None` for a workspace tools client (which
    /// agent runs it is not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentKind>,
    pub tab_name: String,
    pub old_file_path: String,
    pub new_file_path: String,
    /// The file's current contents as read by the engine, or `None` when the
    /// file does not exist yet (a new file) or could not be read as UTF-8.
    pub original_contents: Option<String>,
    /// The file does not exist yet (otherwise a `None` original means it
    /// could not be read: binary, not UTF-8 or over 16 MiB).
    #[serde(default)]
    pub is_new_file: bool,
    /// The whole proposed file.
    pub proposed_contents: String,
}

/// A frontend with no editor behind it: no capabilities, and every diff
/// "shown" without anyone to decide it (Claude's own terminal prompt then
/// decides). For an engine run for its other parts (the workspace tools,
/// the companion, benchmarks, tests) and as the smallest example of the
/// trait.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoEditor;

#[async_trait]
impl Frontend for NoEditor {
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    async fn show_diff(&self, _diff: DiffView) -> Result<(), FrontendError> {
        Ok(())
    }
    async fn close_diff(&self, _id: DiffId, _reason: CloseReason) -> Result<(), FrontendError> {
        Ok(())
    }
}

/// The user's verdict on a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
pub enum DiffDecision {
    /// Accept. `contents` is the final text including the user's own edits;
    /// `None` means the proposal unchanged.
    Accepted {
        #[serde(default)]
        contents: Option<String>,
    },
    /// Reject.
    Rejected,
    /// The view was closed without a decision. Claude's own prompt in the
    /// terminal stays up and decides; the `openDiff` call stays pending.
    /// (Claude Code takes `TAB_CLOSED` as *accepting* the proposal, so a
    /// closed view is never reported to it as that.)
    Dismissed,
}

/// What the editor can do; decides which tools are offered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Capabilities {
    /// The editor can show diffs for review (`openDiff`).
    pub diff: bool,
    /// `openFile`, `open_files`.
    pub open_file: bool,
    /// `saveDocument`.
    pub save_document: bool,
    /// `close_tab` for tabs that are not ccbridge's diffs.
    pub close_tab: bool,
    /// `reformat_file`.
    pub reformat: bool,
    /// `executeCode`: listed only when true, and every run is confirmed by
    /// the user first.
    pub execute_code: bool,
    /// The editor asks the user to approve the workspace tools' commands
    /// (and, in `always` mode, every tool call), and shows a command's
    /// output as it runs ([`Frontend::approve`], [`Frontend::command_event`]).
    pub approve: bool,
    /// The editor tells the text the user left in an open diff view
    /// ([`Frontend::review_text`]), for an agent answered in its own
    /// terminal. Offers no tool.
    pub review_text: bool,
}

impl Capabilities {
    pub fn all() -> Self {
        Capabilities {
            diff: true,
            open_file: true,
            save_document: true,
            close_tab: true,
            reformat: true,
            execute_code: true,
            approve: true,
            review_text: true,
        }
    }
}

/// An editor-side failure, shown to the client as an `isError` result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontendError {
    #[error("the editor does not support {0}")]
    Unsupported(&'static str),
    #[error("the editor did not answer in time")]
    Timeout,
    #[error("the editor is gone")]
    Disconnected,
    /// The editor has stopped reading what ccbridge sends it (its input
    /// pipe and ccbridge's bounded queue are full); asking it anything more
    /// now would only pile up.
    #[error("the editor is not reading ccbridge's messages (is it frozen?)")]
    NotReading,
    #[error("{0}")]
    Failed(String),
}

/// Which client a request came from; lets frontends tell sessions apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientId(pub u64);

/// Which coding agent a session (and so its diffs and activity) belongs
/// to: Claude Code on the WebSocket server, Gemini CLI or Qwen Code on the
/// companion server (Codex CLI only asks for context over its IPC socket:
/// it has no sessions nor diffs, but is offered like the others). Frontends show its [`display_name`](Self::display_name)
/// ("Gemini CLI proposes ...") so a user running two agents at once can
/// tell them apart. On the wire: `{"id": "gemini", "name": "Gemini CLI"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AgentKind {
    #[default]
    Claude,
    Gemini,
    Qwen,
    Codex,
}

impl AgentKind {
    pub const ALL: [AgentKind; 4] = [
        AgentKind::Claude,
        AgentKind::Gemini,
        AgentKind::Qwen,
        AgentKind::Codex,
    ];

    /// The short name: `claude`, `gemini`, `qwen` (also the CLI's command).
    pub fn id(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Gemini => "gemini",
            AgentKind::Qwen => "qwen",
            AgentKind::Codex => "codex",
        }
    }

    /// The product's name, for people.
    pub fn display_name(self) -> &'static str {
        match self {
            AgentKind::Claude => "Claude Code",
            AgentKind::Gemini => "Gemini CLI",
            AgentKind::Qwen => "Qwen Code",
            AgentKind::Codex => "Codex CLI",
        }
    }

    /// The kind whose [`id`](Self::id) is `id`.
    pub fn from_id(id: &str) -> Option<AgentKind> {
        Self::ALL.into_iter().find(|a| a.id() == id)
    }
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display_name())
    }
}

impl Serialize for AgentKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Agent", 2)?;
        st.serialize_field("id", self.id())?;
        st.serialize_field("name", self.display_name())?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for AgentKind {
    /// From `{"id": ...}` (the `name` is not needed) or a bare id string.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Id(String),
            Object { id: String },
        }
        let id = match Wire::deserialize(d)? {
            Wire::Id(id) | Wire::Object { id } => id,
        };
        AgentKind::from_id(&id)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown agent {id:?}")))
    }
}

/// A connected agent session: a Claude Code WebSocket connection, or a
/// Gemini CLI / Qwen Code session on the companion server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    pub id: ClientId,
    pub name: String,
    pub version: String,
    /// The CLI's pid from `ide_connected`, once known.
    pub pid: Option<u32>,
    /// Which agent this is.
    #[serde(default)]
    pub agent: AgentKind,
}

/// Why a diff view is being closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CloseReason {
    /// The user decided in the editor, and Claude is done with the view.
    Decided,
    /// The agent closed it undecided: the user answered in the agent's
    /// terminal, or the edit was cancelled. On the wire `claudeClosed`,
    /// the name editors match since version 1, whichever agent it was.
    #[serde(rename = "claudeClosed")]
    AgentClosed,
    /// A new prompt started (`closeAllDiffTabs`).
    NewPrompt,
    /// Claude opened another diff with the same tab name.
    Replaced,
    /// The agent session that asked disconnected.
    Disconnected,
    /// ccbridge is stopping.
    Shutdown,
}

impl CloseReason {
    /// A short note for a person, naming `agent` (the one that proposed
    /// the diff: "Gemini CLI", or "the agent" when unknown). The wire names
    /// (`claudeClosed`, ...) stay as they are for editors that match them;
    /// what a person reads names the agent it is about.
    pub fn describe(self, agent: &str) -> String {
        match self {
            CloseReason::Decided => format!("done: {agent} has your decision"),
            CloseReason::AgentClosed => {
                format!("closed by {agent} (answered in the terminal, or cancelled)")
            }
            CloseReason::NewPrompt => format!("closed by {agent} at a new prompt"),
            CloseReason::Replaced => "replaced by a newer proposal for the same file".into(),
            CloseReason::Disconnected => format!("the {agent} session disconnected"),
            CloseReason::Shutdown => "ccbridge is stopping".into(),
        }
    }
}

/// Something a Claude session did, for frontends that show activity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Activity {
    /// A `tools/call` was answered.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        client: ClientId,
        tool: String,
        is_error: bool,
        /// The start of the answer's text (an error, `FILE_SAVED`, ...).
        summary: String,
        elapsed_ms: u64,
    },
    /// A newer session replaced an older one (newest wins).
    #[serde(rename_all = "camelCase")]
    SessionReplaced { old: ClientId, by: ClientId },
}

/// Identifies one approval request or one command run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub u64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "run-{}", self.0)
    }
}

/// A workspace tool call that needs the user's yes: a command to run
/// (`command` and `cwd` set, exactly as they will run), or, in the `always`
/// approval mode, any other call (`summary` says what it does).
///
/// A face shows `command_shown` and `cwd_shown`, never the raw `command` and
/// `cwd`: those may hold bidirectional, invisible or control characters that
/// make the drawn text differ from what runs (see
/// [`ccbridge_protocol::reveal`]). `summary` is built from the shown texts.
/// Build one with [`Approval::command`] or [`Approval::call`], which fill
/// the shown fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    pub id: RunId,
    /// The tool: `execute_command`, `read_file`, ...
    pub tool: String,
    /// One line for a person: "Run `cargo test` in /ws", "Read src/a.rs",
    /// with hidden characters shown as `⟨U+XXXX⟩` markers.
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The command's working directory, absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `command` as it must be shown: hidden characters as `⟨U+XXXX⟩`
    /// markers, line feeds kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_shown: Option<String>,
    /// `cwd` as it must be shown (on one line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd_shown: Option<String>,
    /// Every character replaced by a marker; when not empty, a face warns.
    #[serde(default)]
    pub hidden_characters: Vec<HiddenCharacter>,
}

/// A character of an [`Approval`] shown as a marker, and where it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HiddenCharacter {
    /// `command`, `cwd` or `summary` (for a call without a command).
    pub field: String,
    #[serde(flatten)]
    pub char: HiddenChar,
}

impl Approval {
    /// Asks to run `command` in `cwd` (absolute).
    pub fn command(id: RunId, command: String, cwd: String) -> Self {
        let shown = reveal(&command);
        let line = reveal_line(&command);
        let dir = reveal_line(&cwd);
        let hidden = tagged("command", shown.hidden)
            .chain(tagged("cwd", dir.hidden))
            .collect();
        Approval {
            id,
            tool: "execute_command".into(),
            summary: format!("Run `{}` in {}", line.shown, dir.shown),
            command: Some(command),
            cwd: Some(cwd),
            command_shown: Some(shown.shown),
            cwd_shown: Some(dir.shown),
            hidden_characters: hidden,
        }
    }

    /// Asks to allow a `tool` call other than a command; `summary` says
    /// what it does (it may hold paths, so it is revealed too).
    pub fn call(id: RunId, tool: String, summary: &str) -> Self {
        let shown = reveal_line(summary);
        Approval {
            id,
            tool,
            summary: shown.shown,
            command: None,
            cwd: None,
            command_shown: None,
            cwd_shown: None,
            hidden_characters: tagged("summary", shown.hidden).collect(),
        }
    }
}

fn tagged(field: &str, hidden: Vec<HiddenChar>) -> impl Iterator<Item = HiddenCharacter> + '_ {
    hidden.into_iter().map(move |char| HiddenCharacter {
        field: field.to_owned(),
        char,
    })
}

/// What a running command did, for the frontend to show live. Every run
/// sends `Started`, any number of `Output`s, then one `Exited`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum CommandEvent {
    #[serde(rename_all = "camelCase")]
    Started {
        id: RunId,
        command: String,
        cwd: String,
        /// `command` and `cwd` as they must be shown (see [`Approval`]).
        #[serde(default)]
        command_shown: String,
        #[serde(default)]
        cwd_shown: String,
    },
    /// Output as the command wrote it (stdout and stderr interleaved,
    /// terminal escapes included: a terminal view renders them).
    #[serde(rename_all = "camelCase")]
    Output { id: RunId, data: String },
    #[serde(rename_all = "camelCase")]
    Exited {
        id: RunId,
        /// `None` when a signal ended it.
        exit_code: Option<i32>,
        /// Killed after the call's time limit.
        timed_out: bool,
        /// Killed because the client cancelled the call.
        cancelled: bool,
    },
}

impl CommandEvent {
    /// `Started`, with the shown texts filled.
    pub fn started(id: RunId, command: String, cwd: String) -> Self {
        CommandEvent::Started {
            id,
            command_shown: reveal(&command).shown,
            cwd_shown: reveal_line(&cwd).shown,
            command,
            cwd,
        }
    }
}

/// What the engine asks of the editor. Every method may be called
/// concurrently; the engine serializes nothing on the frontend's behalf.
#[async_trait]
pub trait Frontend: Send + Sync + 'static {
    fn capabilities(&self) -> Capabilities;

    /// Show `diff` for review and return once it is shown. The decision
    /// comes later as [`EditorEvent::DiffResolved`].
    async fn show_diff(&self, diff: DiffView) -> Result<(), FrontendError>;

    /// Close a diff view the engine opened. Called once per view, whether or
    /// not the user already decided; `reason` says why.
    async fn close_diff(&self, id: DiffId, reason: CloseReason) -> Result<(), FrontendError>;

    /// The proposed side of an open diff view as the user has left it (their
    /// edits included); `None` when the frontend cannot tell (quickly: the
    /// agent is waiting) or the view is not open. An agent that is answered
    /// in its own terminal takes this text instead of its proposal (Gemini
    /// CLI's `closeDiff`), so the user's edits are not lost.
    async fn review_text(&self, _id: DiffId) -> Option<String> {
        None
    }

    async fn open_file(&self, _args: OpenFileArgs) -> Result<OpenedFile, FrontendError> {
        Err(FrontendError::Unsupported("openFile"))
    }

    /// Opens each path; returns the ones opened.
    async fn open_files(&self, _paths: Vec<String>) -> Result<Vec<String>, FrontendError> {
        Err(FrontendError::Unsupported("open_files"))
    }

    /// Closes a tab that is not a ccbridge diff; `Ok(false)` when none matched.
    async fn close_tab(&self, _tab_name: String) -> Result<bool, FrontendError> {
        Err(FrontendError::Unsupported("close_tab"))
    }

    async fn save_document(&self, _path: String) -> Result<(), FrontendError> {
        Err(FrontendError::Unsupported("saveDocument"))
    }

    async fn reformat_file(&self, _path: String) -> Result<(), FrontendError> {
        Err(FrontendError::Unsupported("reformat_file"))
    }

    /// Asks the user whether to run `code`. The engine calls this before
    /// every [`Frontend::execute_code`] and runs nothing without a yes.
    async fn confirm_execute(&self, _code: String) -> Result<bool, FrontendError> {
        Ok(false)
    }

    async fn execute_code(&self, _code: String) -> Result<Vec<Content>, FrontendError> {
        Err(FrontendError::Unsupported("executeCode"))
    }

    /// Asks the user to allow a workspace tool call (see [`Approval`]).
    /// Waits for the user, without a time limit; `Ok(false)` is a no.
    async fn approve(&self, _approval: Approval) -> Result<bool, FrontendError> {
        Err(FrontendError::Unsupported("approving tool calls"))
    }

    /// A command the user allowed is running; show its output.
    fn command_event(&self, _event: CommandEvent) {}

    /// A Claude Code session finished its handshake.
    fn client_connected(&self, _client: &ClientInfo) {}

    /// A session went away (closed, evicted or dropped by keepalive).
    fn client_disconnected(&self, _client: ClientId) {}

    /// Something happened that a frontend may show (see [`Activity`]).
    fn activity(&self, _event: Activity) {}

    /// The editor's diagnostics changed (read them through the
    /// `EngineHandle`); for frontends that show them.
    fn diagnostics_changed(&self) {}
}

/// What `openFile` reports back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenedFile {
    pub file_path: String,
    #[serde(default)]
    pub language_id: Option<String>,
    #[serde(default)]
    pub line_count: Option<u32>,
}

/// Editor state changes and user actions, in the order they happened.
#[derive(Debug, Clone, PartialEq)]
pub enum EditorEvent {
    /// The selection or cursor moved; `None` when no editor is active.
    Selection(Option<Selection>),
    /// The full list of open tabs (replaces the previous one).
    OpenEditors(Vec<EditorTab>),
    /// The diagnostics of one file (replaces that file's; empty clears).
    Diagnostics {
        path: String,
        diagnostics: Vec<Diagnostic>,
    },
    /// Forget every file's diagnostics.
    ClearDiagnostics,
    /// Diagnostics of the text proposed for `path` in an open review (a
    /// language server checked it as a document of its own); an empty
    /// list once the proposal is gone. `getDiagnostics {}` gives them to
    /// Claude as `_claude_fs_right:<path>`, the right side of the diff.
    ProposedDiagnostics {
        path: String,
        diagnostics: Vec<Diagnostic>,
    },
    /// A diagnostics source (a language server ccbridge runs) is analyzing
    /// `path`'s new text: `getDiagnostics` waits for its report, within
    /// Claude's budget, rather than answer with the old one. With
    /// `write_pending`, the file is about to be written (a review of it was
    /// accepted) and only the whole-workspace answer waits: the `{uri}`
    /// baseline Claude takes before writing must stay the old one.
    Analyzing { path: String, write_pending: bool },
    /// A document's unsaved-changes flag.
    Dirty { path: String, is_dirty: bool },
    /// The user sent a file or range to Claude.
    AtMention(AtMentioned),
    /// The workspace changed; rewrites the lock file. `None` keeps a value.
    Workspace {
        folders: Option<Vec<String>>,
        ide_name: Option<String>,
        pid: Option<u32>,
    },
    /// The user decided on a diff.
    DiffResolved { id: DiffId, decision: DiffDecision },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command hiding text from the person approving it: the approval of
    /// a command hiding `touch X` behind right-to-left isolates shows them
    /// as markers everywhere it is shown, and keeps the command exact.
    #[test]
    fn an_approval_shows_hidden_characters_as_markers_and_keeps_the_command() {
        let command = "echo safe \u{2067}; touch X; : #\u{2069}\nls";
        let a = Approval::command(RunId(7), command.into(), "/w/\u{202E}dir".into());
        assert_eq!(a.command.as_deref(), Some(command));
        assert_eq!(a.cwd.as_deref(), Some("/w/\u{202E}dir"));
        assert_eq!(
            a.command_shown.as_deref(),
            Some("echo safe \u{27E8}U+2067\u{27E9}; touch X; : #\u{27E8}U+2069\u{27E9}\nls")
        );
        assert_eq!(a.cwd_shown.as_deref(), Some("/w/\u{27E8}U+202E\u{27E9}dir"));
        assert_eq!(
            a.summary,
            "Run `echo safe \u{27E8}U+2067\u{27E9}; touch X; : #\u{27E8}U+2069\u{27E9}\u{27E8}U+000A\u{27E9}ls` in /w/\u{27E8}U+202E\u{27E9}dir"
        );
        let fields: Vec<_> = a
            .hidden_characters
            .iter()
            .map(|h| (h.field.as_str(), h.char.code_point.as_str(), h.char.index))
            .collect();
        assert_eq!(
            fields,
            [
                ("command", "U+2067", 10),
                ("command", "U+2069", 25),
                ("cwd", "U+202E", 3)
            ]
        );
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(v["commandShown"], a.command_shown.clone().unwrap());
        assert_eq!(v["cwdShown"], a.cwd_shown.clone().unwrap());
        assert_eq!(
            v["hiddenCharacters"][0],
            serde_json::json!({"field": "command", "codePoint": "U+2067",
                               "name": "RIGHT-TO-LEFT ISOLATE", "index": 10})
        );
        assert_eq!(serde_json::from_value::<Approval>(v).unwrap(), a);
    }

    #[test]
    fn a_call_summary_with_a_hidden_character_is_shown_with_a_marker() {
        let a = Approval::call(RunId(1), "read_file".into(), "Read a\u{200B}b.rs");
        assert_eq!(a.summary, "Read a\u{27E8}U+200B\u{27E9}b.rs");
        assert_eq!(a.hidden_characters[0].field, "summary");
        assert!(a.command_shown.is_none());
        let plain = Approval::call(RunId(2), "read_file".into(), "Read src/a.rs");
        assert_eq!(plain.summary, "Read src/a.rs");
        assert!(plain.hidden_characters.is_empty());
    }
}
