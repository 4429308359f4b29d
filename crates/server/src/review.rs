//! Reviews and approvals asked for by a transport other than Claude's
//! WebSocket: the workspace tools server (`ccbridge-mcp`) proposes a
//! file's new text and waits for the user's verdict through the same diff
//! views, registry and frontend as `openDiff`, and asks before it runs a
//! command.
//!
//! Two differences from `openDiff`: nobody else decides (there is no
//! terminal prompt behind the view), so closing the view undecided rejects;
//! and nobody sends `close_tab` afterwards, so the view is closed here once
//! decided. A review whose caller goes away (the MCP client cancelled the
//! call) closes its view instead of leaving it waiting.

use crate::diffs::ConnId;
use crate::diffs::Settled;
use crate::engine::EngineHandle;
use crate::frontend::{Activity, AgentKind, ClientId, ClientInfo};
use crate::frontend::{Approval, CloseReason, CommandEvent, DiffDecision, DiffId};
use crate::frontend::{DiffView, FrontendError, RunId};
use crate::ide::{lock, Ide};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The diff-registry owner of every review asked for here: never a
/// WebSocket connection's id, so a Claude session's `closeAllDiffTabs` or
/// disconnect leaves these reviews alone.
const TOOLS_CONN: ConnId = ConnId::MAX;

/// A proposed new text for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// The agent session that proposes it ([`AgentSession::review`] sets
    /// it); `None` for the workspace tools, whose caller is not known.
    pub requester: Option<(ClientId, AgentKind)>,
    /// The file's absolute path.
    pub path: String,
    /// The title of the view (the tab name), unique per file.
    pub title: String,
    /// The current text; `None` for a new file.
    pub original: Option<String>,
    pub proposed: String,
}

/// The user's verdict on a [`Proposal`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The text to write: the proposal, with whatever the user changed in
    /// the view (hunks rejected, lines edited).
    Accepted { contents: String },
    /// Rejected, the view closed undecided, or ccbridge stopping.
    Rejected,
}

/// Closes the view if the review ends any way but through [`Self::settled`].
struct OpenView {
    ide: Arc<Ide>,
    id: DiffId,
    reason: CloseReason,
}

impl Drop for OpenView {
    fn drop(&mut self) {
        let closed = lock(&self.ide.diffs).close(self.id, self.reason);
        if let Some(reason) = closed {
            if tokio::runtime::Handle::try_current().is_ok() {
                self.ide.close_views(vec![(self.id, reason)]);
            }
        }
    }
}

impl Ide {
    async fn review(self: &Arc<Self>, p: Proposal) -> Result<Verdict, FrontendError> {
        if !self.frontend.capabilities().diff {
            return Err(FrontendError::Unsupported("reviewing diffs"));
        }
        let owner = p.requester.map_or(TOOLS_CONN, |(client, _)| client.0);
        let (id, decision, replaced) = lock(&self.diffs).open_review(&p.title, owner);
        if let Some(old) = replaced {
            self.close_views(vec![old]);
        }
        let view = DiffView {
            id,
            client_id: p.requester.map(|(client, _)| client),
            agent: p.requester.map(|(_, agent)| agent),
            tab_name: p.title,
            old_file_path: p.path.clone(),
            new_file_path: p.path,
            is_new_file: p.original.is_none(),
            original_contents: p.original,
            proposed_contents: p.proposed.clone(),
        };
        let mut open = OpenView {
            ide: self.clone(),
            id,
            // Dropped before a verdict: the caller gave up.
            reason: CloseReason::AgentClosed,
        };
        self.editor(self.frontend.show_diff(view)).await?;
        let verdict = match decision.await {
            Ok(Settled::Decided(DiffDecision::Accepted { contents })) => Verdict::Accepted {
                contents: contents.unwrap_or(p.proposed),
            },
            Ok(_) | Err(_) => Verdict::Rejected,
        };
        open.reason = CloseReason::Decided;
        Ok(verdict)
    }

    async fn approve(&self, a: Approval) -> Result<bool, FrontendError> {
        if !self.frontend.capabilities().approve {
            return Err(FrontendError::Unsupported("approving tool calls"));
        }
        self.frontend.approve(a).await
    }

    fn next_run(&self) -> RunId {
        RunId(self.runs.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

impl EngineHandle {
    /// Shows `proposal` for review and waits for the user's verdict, with
    /// no time limit (the user may take theirs). Fails at once when the
    /// editor cannot show diffs or did not show this one. Dropping the
    /// future closes the view.
    pub async fn review(&self, proposal: Proposal) -> Result<Verdict, FrontendError> {
        self.ide().review(proposal).await
    }

    /// Asks the user to allow a tool call; waits for the answer with no
    /// time limit.
    pub async fn approve(&self, approval: Approval) -> Result<bool, FrontendError> {
        self.ide().approve(approval).await
    }

    /// A fresh id for an approval and the command run it allows.
    pub fn next_run(&self) -> RunId {
        self.ide().next_run()
    }

    /// Passes a running command's progress to the frontend.
    pub fn command_event(&self, event: CommandEvent) {
        self.ide().frontend.command_event(event)
    }

    /// Whether the editor has unsaved changes to the file at `path`.
    pub fn is_dirty(&self, path: &str) -> bool {
        lock(&self.ide().state).dirty(path).unwrap_or(false)
    }

    /// Changes whenever the editor's diagnostics do.
    pub fn diagnostics_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.ide().diagnostics_rev.subscribe()
    }

    /// The editor's selection (or cursor) and open tabs, as last reported.
    pub fn editor_context(&self) -> EditorContext {
        let state = lock(&self.ide().state);
        EditorContext {
            selection: state.current.clone(),
            tabs: state.tabs.clone(),
        }
    }

    /// Changes whenever the editor's selection or open tabs do.
    pub fn context_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.ide().context_rev.subscribe()
    }

    /// Announces a session of an agent that is not on the WebSocket server
    /// (Gemini CLI, Qwen Code on the companion server) to the frontend, as
    /// `client_connected`, with an id from the same sequence as Claude's
    /// sessions. Dropping the session announces its end and withdraws its
    /// reviews still open.
    pub fn agent_session(&self, agent: AgentKind, name: &str, version: &str) -> AgentSession {
        let info = ClientInfo {
            id: ClientId(self.next_conn()),
            name: name.to_owned(),
            version: version.to_owned(),
            pid: None,
            agent,
        };
        self.ide().frontend.client_connected(&info);
        lock(&self.ide().agent_sessions).insert(info.id.0, info.clone());
        AgentSession {
            ide: self.ide().clone(),
            info,
        }
    }
}

/// One agent session outside the WebSocket server; see
/// [`EngineHandle::agent_session`].
pub struct AgentSession {
    ide: Arc<Ide>,
    info: ClientInfo,
}

impl AgentSession {
    pub fn info(&self) -> &ClientInfo {
        &self.info
    }

    /// [`EngineHandle::review`], shown as this session's: the frontend is
    /// told which agent and session proposes it.
    pub async fn review(&self, mut proposal: Proposal) -> Result<Verdict, FrontendError> {
        proposal.requester = Some((self.info.id, self.info.agent));
        self.ide.review(proposal).await
    }

    /// The text the user has left in this session's open review titled
    /// `title` (see [`crate::Frontend::review_text`]); `None` when it is not
    /// open or the frontend cannot tell.
    pub async fn review_text(&self, title: &str) -> Option<String> {
        let id = lock(&self.ide.diffs).find(title, self.info.id.0)?;
        self.ide.frontend.review_text(id).await
    }

    /// Tells the frontend this session's call of `tool` was answered.
    pub fn tool_called(&self, tool: &str, is_error: bool, summary: String, elapsed_ms: u64) {
        self.ide.frontend.activity(Activity::ToolCall {
            client: self.info.id,
            tool: tool.to_owned(),
            is_error,
            summary,
            elapsed_ms,
        });
    }
}

impl Drop for AgentSession {
    fn drop(&mut self) {
        let ids = lock(&self.ide.diffs).close_all(Some(self.info.id.0), CloseReason::Disconnected);
        if tokio::runtime::Handle::try_current().is_ok() {
            self.ide.close_views(ids);
        }
        lock(&self.ide.agent_sessions).remove(&self.info.id.0);
        self.ide.frontend.client_disconnected(self.info.id);
    }
}

/// What the editor shows, for a server that tells its client itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EditorContext {
    /// The selection or cursor in the active editor; `None` without one.
    pub selection: Option<ccbridge_protocol::editor::Selection>,
    pub tabs: Vec<ccbridge_protocol::editor::EditorTab>,
}

impl EditorContext {
    /// The file the user is in: the selection's (the editor reports the
    /// selection of the focused editor), else the tab marked active. Every
    /// agent protocol that names an active file names this one.
    pub fn active_path(&self) -> Option<&str> {
        self.selection
            .as_ref()
            .map(|s| s.file_path.as_str())
            .or_else(|| {
                self.tabs
                    .iter()
                    .find(|t| t.is_active)
                    .map(|t| t.path.as_str())
            })
    }

    /// The selection, if it is in the active file.
    pub fn active_selection(&self) -> Option<&ccbridge_protocol::editor::Selection> {
        let active = self.active_path()?;
        self.selection.as_ref().filter(|s| s.file_path == active)
    }
}
