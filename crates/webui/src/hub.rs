//! Everything the page shows, in one place, and the stream of changes to it.
//!
//! The engine reaches the hub through [`crate::BrowserFrontend`] (a diff to
//! review, a session connected, a tool call answered); the page reaches it
//! through the HTTP API (a decision, an edit, a selection). The hub keeps
//! the state a reloaded page needs (reviews with their working text,
//! sessions, the activity log, the open tabs) and publishes every change as
//! one JSON event on a broadcast channel that each page's event stream
//! follows. A page that falls behind is sent a fresh snapshot.

use crate::reviews::{Asker, Outcome, Review, ReviewError};
use crate::runs::{Change, Runs};
use ccbridge_mcp::tools::Context as ToolsContext;
use ccbridge_mcp::ApprovalMode;
use ccbridge_protocol::editor::FileDiagnostics;
use ccbridge_protocol::lockfile::McpEndpoint;
use ccbridge_server::{
    Activity, AgentKind, ApplyError, Approval, ClientId, ClientInfo, CloseReason, CommandEvent,
    DiffDecision, DiffId, DiffView, EditorEvent, EngineHandle, FrontendError, RunId,
};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::broadcast;

/// Activity entries kept for a reloaded page.
pub const ACTIVITY_KEPT: usize = 200;
/// Proposals the agent closed undecided, kept for a reloaded page (the
/// oldest go first)...
pub const CLOSED_KEPT: usize = 50;
/// ... and at most this many bytes of their texts in all (each can be a
/// 16 MiB file three times over).
pub const CLOSED_BYTES: usize = 64 << 20;
/// Events a slow page may fall behind by before it gets a new snapshot.
const EVENT_BACKLOG: usize = 256;

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Diagnostics as the page has them: `[{path, diagnostics}]`, each path
/// the file's (its `file://` uri without the scheme).
fn by_path(files: Vec<FileDiagnostics>) -> Vec<Value> {
    files
        .into_iter()
        .map(|f| {
            let path = f.uri.strip_prefix("file://").unwrap_or(&f.uri).to_owned();
            json!({"path": path, "diagnostics": f.diagnostics})
        })
        .collect()
}

/// A connected agent session (Claude Code, Gemini CLI, Qwen Code) as the
/// page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub id: ClientId,
    pub name: String,
    pub version: String,
    pub pid: Option<u32>,
    pub connected_at: u64,
    pub agent: AgentKind,
}

/// An agent that can find this IDE, and how the user starts it connected
/// (`env` for a terminal; in the page's "no session" hint).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentOffer {
    #[serde(flatten)]
    pub agent: AgentKind,
    pub env: std::collections::BTreeMap<String, String>,
}

/// The files open in the page's viewer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Tabs {
    pub open: Vec<String>,
    pub active: Option<String>,
}

/// What the server tells the page about itself.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerView {
    pub version: String,
    pub ide_name: String,
    pub workspace_folders: Vec<String>,
    pub ide_port: u16,
    /// The agents offered (`--agents`).
    pub agents: Vec<AgentOffer>,
}

/// A proposal the agent closed before the reviewer decided (from its
/// terminal, at a new prompt, by going away): the page keeps showing it,
/// read-only, to copy from, until the reviewer dismisses it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClosedReview {
    pub review: Review,
    pub reason: CloseReason,
    pub note: String,
    pub closed_at: u64,
}

impl ClosedReview {
    fn bytes(&self) -> usize {
        let r = &self.review;
        r.original.as_ref().map_or(0, String::len) + r.proposed.len() + r.working.len()
    }
}

/// Close reasons for which an undecided proposal is kept (the agent ended
/// it undecided; not replaced by a newer one, not ccbridge stopping).
fn kept_when_closed(reason: CloseReason) -> bool {
    matches!(
        reason,
        CloseReason::AgentClosed | CloseReason::NewPrompt | CloseReason::Disconnected
    )
}

#[derive(Default)]
struct Inner {
    reviews: BTreeMap<DiffId, Review>,
    /// Oldest first, bounded by [`CLOSED_KEPT`] and [`CLOSED_BYTES`].
    closed: VecDeque<ClosedReview>,
    sessions: BTreeMap<ClientId, SessionView>,
    activity: VecDeque<Value>,
    tabs: Tabs,
    runs: Runs,
}

/// The workspace tools server the page shows and configures.
struct ToolsLink {
    endpoint: McpEndpoint,
    ctx: Arc<ToolsContext>,
}

/// Why a page's request about a review failed.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("there is no review {0}")]
    Unknown(DiffId),
    #[error("{error}")]
    Review {
        error: ReviewError,
        review: Box<Review>,
    },
    #[error("ccbridge is stopping")]
    Stopped,
    #[error("nothing waits for approval {0} (it was answered, or the call was cancelled)")]
    NoApproval(RunId),
    #[error("the workspace tools are not served (ccbridge was started with --no-tools, or they could not start)")]
    NoTools,
}

/// What a reviewer told the agent when rejecting its change: for the
/// launcher of that agent to pass on (`ccbridge claude` adds it to
/// Claude's next request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewerNote {
    /// The agent whose proposal it was (`None`: the workspace tools).
    pub agent: Option<AgentKind>,
    pub path: String,
    pub note: String,
}

/// Longest note kept, in bytes (cut on a character boundary).
pub const MAX_NOTE: usize = 4096;

/// The shared state; cheap to clone (`Arc`).
pub struct Hub {
    inner: Mutex<Inner>,
    /// Something has reported diagnostics (in standalone mode, nothing).
    diagnostics_source: std::sync::atomic::AtomicBool,
    events: broadcast::Sender<Arc<str>>,
    engine: OnceLock<EngineHandle>,
    server: OnceLock<ServerView>,
    /// The tools server, or why it does not run.
    tools: OnceLock<Result<ToolsLink, String>>,
    notes: broadcast::Sender<ReviewerNote>,
    /// The session review, when ccbridge watches the workspace.
    changes: OnceLock<ccbridge_changes::Changes>,
    language_servers: OnceLock<ccbridge_lsp::LanguageServers>,
    /// Languages whose files get no diagnostics, and why (not installed,
    /// given up on): the Diagnostics view says so instead of looking empty.
    unavailable: Mutex<BTreeMap<String, String>>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            inner: Mutex::default(),
            diagnostics_source: Default::default(),
            events: broadcast::channel(EVENT_BACKLOG).0,
            engine: OnceLock::new(),
            server: OnceLock::new(),
            tools: OnceLock::new(),
            notes: broadcast::channel(EVENT_BACKLOG).0,
            changes: OnceLock::new(),
            language_servers: OnceLock::new(),
            unavailable: Mutex::default(),
        }
    }
}

impl Hub {
    pub fn new() -> Arc<Hub> {
        Arc::new(Hub::default())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Connects the hub to the running engine (once).
    pub fn attach(&self, engine: EngineHandle, server: ServerView) {
        let _ = self.engine.set(engine);
        let _ = self.server.set(server);
    }

    /// Shows (and lets the page configure) the workspace tools server, or
    /// says why it does not run.
    pub fn attach_tools(&self, tools: Result<(McpEndpoint, Arc<ToolsContext>), String>) {
        let _ = self
            .tools
            .set(tools.map(|(endpoint, ctx)| ToolsLink { endpoint, ctx }));
    }

    /// Shows the session review (`changes`) and tells pages of each change
    /// to it (a `changes` event; the page fetches the list). Needs a Tokio
    /// runtime; the forwarding ends when the hub goes.
    pub fn attach_changes(self: &Arc<Self>, changes: ccbridge_changes::Changes) {
        let mut revisions = changes.subscribe();
        if self.changes.set(changes).is_err() {
            return;
        }
        let hub = Arc::downgrade(self);
        tokio::spawn(async move {
            let (mut seen, mut logged) = (0, 0);
            while revisions.changed().await.is_ok() {
                let revision = *revisions.borrow_and_update();
                let Some(hub) = hub.upgrade() else { return };
                hub.publish(json!({"type": "changes", "revision": revision}));
                seen = hub.involve_changed(seen);
                logged = hub.log_unreviewed(logged);
            }
        });
    }

    /// Logs every file whose content changed without a review since
    /// `seen` (a revision of [`ccbridge_changes::Changes::unreviewed_since`])
    /// in the history, so a reload shows it; the revision to pass next time.
    fn log_unreviewed(&self, seen: u64) -> u64 {
        let Some(c) = self.changes.get() else {
            return seen;
        };
        let (now, files) = c.unreviewed_since(seen);
        if !files.is_empty() {
            let mut inner = self.lock();
            for f in files {
                self.log(
                    &mut inner,
                    json!({"kind": "unreviewed", "path": f.path, "by": f.by,
                        "connected": f.connected}),
                );
            }
        }
        now
    }

    /// Diagnostics from the workspace's language servers: the files the
    /// page or an agent involves are opened in them (see [`Self::involve`]).
    pub fn attach_language_servers(&self, servers: ccbridge_lsp::LanguageServers) {
        if self.language_servers.set(servers).is_ok() {
            self.diagnostics_source
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// `path` was viewed, proposed or changed: its language server (if
    /// any) checks it, or checks its new text. Never waits.
    pub fn involve(&self, path: &str) {
        if let Some(l) = self.language_servers.get() {
            l.involve(path);
        }
    }

    /// Whether a language server ccbridge runs checks `path`.
    fn analyzed(&self, path: &str) -> bool {
        self.language_servers.get().is_some()
            && ccbridge_lsp::servers::serves(std::path::Path::new(path))
    }

    /// Every file whose content changed in the session review since
    /// `seen` (a revision of [`ccbridge_changes::Changes::changed_since`])
    /// is involved, so a file an agent wrote gets fresh diagnostics; the
    /// revision to pass next time.
    fn involve_changed(&self, seen: u64) -> u64 {
        let (Some(l), Some(c)) = (self.language_servers.get(), self.changes.get()) else {
            return seen;
        };
        let (now, paths) = c.changed_since(seen);
        for path in paths {
            if ccbridge_lsp::servers::serves(std::path::Path::new(&path)) {
                l.involve(&path);
            }
        }
        now
    }

    /// The session review, if the workspace is watched.
    pub fn changes(&self) -> Option<&ccbridge_changes::Changes> {
        self.changes.get()
    }

    /// The running tools server, if it runs.
    fn tools_link(&self) -> Option<&ToolsLink> {
        self.tools.get()?.as_ref().ok()
    }

    /// The tools server as the page shows it: where, the token, how to
    /// register it with Claude Code, and when it asks; or why it is off.
    pub fn tools(&self) -> Option<Value> {
        let t = match self.tools.get()? {
            Ok(t) => t,
            Err(why) => return Some(json!({ "off": why })),
        };
        Some(json!({
            "url": t.endpoint.url,
            "token": t.endpoint.token,
            "approvalMode": t.ctx.approval(),
            "addCommand": ccbridge_mcp::registration::command(&t.endpoint),
        }))
    }

    pub fn engine(&self) -> Option<&EngineHandle> {
        self.engine.get()
    }

    /// The reviewer's notes from now on (see [`ReviewerNote`]).
    pub fn reviewer_notes(&self) -> broadcast::Receiver<ReviewerNote> {
        self.notes.subscribe()
    }

    /// Passes on the note a reviewer gave with a rejection of `review`.
    pub fn note(&self, review: &Review, note: &str) {
        let mut end = note.len().min(MAX_NOTE);
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        let note = note[..end].trim();
        if note.is_empty() {
            return;
        }
        // Nobody listening (no launcher that passes notes on) is fine.
        let _ = self.notes.send(ReviewerNote {
            agent: review.agent,
            path: review.path.clone(),
            note: note.to_owned(),
        });
    }

    /// Follows every change from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.events.subscribe()
    }

    fn publish(&self, event: Value) {
        // No page open is fine.
        let _ = self.events.send(event.to_string().into());
    }

    /// The whole state, as the `snapshot` event.
    pub fn snapshot(&self) -> Value {
        let (diagnostics, source) = self.diagnostics();
        let inner = self.lock();
        json!({
            "type": "snapshot",
            "server": self.server.get(),
            "sessions": inner.sessions.values().collect::<Vec<_>>(),
            "reviews": inner.reviews.values().rev().collect::<Vec<_>>(),
            "closedReviews": inner.closed.iter().rev().collect::<Vec<_>>(),
            "activity": inner.activity,
            "tabs": inner.tabs,
            "diagnostics": diagnostics,
            "diagnosticsSource": source,
            "proposedDiagnostics": self.proposed_diagnostics(),
            "unavailableServers": self.unavailable_servers(),
            "tools": self.tools(),
            "approvals": inner.runs.pending(),
            "runs": inner.runs.runs(),
            "changes": self.changes.get().is_some(),
        })
    }

    /// Every file's diagnostics, and whether anything reports them (in
    /// standalone mode nothing does, unless an embedder feeds the engine).
    pub fn diagnostics(&self) -> (Vec<Value>, bool) {
        let files = by_path(
            self.engine
                .get()
                .map(EngineHandle::diagnostics)
                .unwrap_or_default(),
        );
        let source = self
            .diagnostics_source
            .load(std::sync::atomic::Ordering::Relaxed);
        (files, source)
    }

    /// The diagnostics of the texts proposed in open reviews, as
    /// `[{path, diagnostics}]`: a review card says what its change would
    /// introduce before anyone accepts it.
    pub fn proposed_diagnostics(&self) -> Vec<Value> {
        by_path(
            self.engine
                .get()
                .map(EngineHandle::proposed_diagnostics)
                .unwrap_or_default(),
        )
    }

    /// The engine's diagnostics changed: the pages get them.
    pub fn diagnostics_changed(&self) {
        self.diagnostics_source
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let (files, source) = self.diagnostics();
        self.publish(json!({"type": "diagnostics", "diagnostics": files,
                            "diagnosticsSource": source,
                            "proposedDiagnostics": self.proposed_diagnostics(),
                            "unavailableServers": self.unavailable_servers()}));
    }

    /// Files of `language` get no diagnostics, because `why`.
    pub fn language_server_unavailable(&self, language: String, why: String) {
        self.unavailable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(language, why);
        self.diagnostics_changed();
    }

    /// `[{language, why}]`: the languages without diagnostics, and why.
    pub fn unavailable_servers(&self) -> Vec<Value> {
        let u = self.unavailable.lock().unwrap_or_else(|p| p.into_inner());
        u.iter()
            .map(|(language, why)| json!({"language": language, "why": why}))
            .collect()
    }

    fn log(&self, inner: &mut Inner, mut entry: Value) {
        if let Some(o) = entry.as_object_mut() {
            o.insert("at".into(), now_ms().into());
        }
        inner.activity.push_back(entry.clone());
        while inner.activity.len() > ACTIVITY_KEPT {
            inner.activity.pop_front();
        }
        self.publish(json!({"type": "activity", "entry": entry}));
    }

    fn publish_sessions(&self, inner: &Inner) {
        self.publish(json!({
            "type": "sessions",
            "sessions": inner.sessions.values().collect::<Vec<_>>(),
        }));
    }

    // ---------------------------------------------------------- from the engine

    pub fn show_diff(&self, view: DiffView) {
        let mut inner = self.lock();
        let session = view
            .client_id
            .and_then(|c| inner.sessions.get(&c))
            .map(|s| Asker {
                id: s.id,
                name: s.name.clone(),
                agent: view.agent.unwrap_or(s.agent),
            });
        self.involve(&view.old_file_path);
        if let Some(l) = self.language_servers.get() {
            l.propose(&view.old_file_path, Some(view.proposed_contents.clone()));
        }
        let review = Review::new(view, session, now_ms());
        self.publish(json!({"type": "review", "review": review}));
        let entry = json!({"kind": "proposed", "review": review.id, "path": review.path,
            "agent": review.agent.map(AgentKind::display_name),
            "hunks": review.hunks.len(), "isNewFile": review.is_new_file});
        inner.reviews.insert(review.id, review);
        self.log(&mut inner, entry);
    }

    /// Review `id` as the page shows it, while it is listed.
    pub fn review(&self, id: DiffId) -> Option<Review> {
        self.lock().reviews.get(&id).cloned()
    }

    /// The reviewer dismissed the closed proposal `id`: no page shows it
    /// any more. False when it is not kept (dismissed already, or gone to
    /// the bound).
    pub fn forget_closed(&self, id: DiffId) -> bool {
        let mut inner = self.lock();
        let before = inner.closed.len();
        inner.closed.retain(|c| c.review.id != id);
        let forgotten = inner.closed.len() != before;
        if forgotten {
            self.publish(json!({"type": "forgotten", "id": id}));
        }
        forgotten
    }

    /// The right side of review `id` as the reviewer left it, while it is
    /// pending.
    pub fn working_text(&self, id: DiffId) -> Option<String> {
        let inner = self.lock();
        let r = inner.reviews.get(&id)?;
        (r.status == crate::reviews::Status::Pending).then(|| r.working.clone())
    }

    pub fn close_diff(&self, id: DiffId, reason: CloseReason) {
        let mut inner = self.lock();
        let Some(review) = inner.reviews.remove(&id) else {
            return;
        };
        if let Some(l) = self.language_servers.get() {
            l.propose(&review.path, None);
        }
        let agent = review.agent.map_or("the agent", AgentKind::display_name);
        let what = match (reason, review.status) {
            (CloseReason::Decided, crate::reviews::Status::Accepted) => {
                format!("you accepted it ({agent} has your decision)")
            }
            (CloseReason::Decided, crate::reviews::Status::Rejected) => {
                format!("you rejected it ({agent} has your decision)")
            }
            _ => reason.describe(agent),
        };
        let note = format!("{}: {what}", review.path);
        self.publish(json!({"type": "closed", "id": id, "reason": reason, "note": note}));
        // For the history: how many of the proposal's hunks the text kept.
        let (proposed, kept) = review.hunk_counts();
        let entry = json!({"kind": "closed", "review": id, "path": review.path,
               "reason": reason, "note": note, "status": review.status,
               "agent": review.agent.map(AgentKind::display_name),
               "proposedHunks": proposed, "keptHunks": kept,
               "edited": review.edited, "isNewFile": review.is_new_file});
        if review.status == crate::reviews::Status::Pending && kept_when_closed(reason) {
            inner.closed.push_back(ClosedReview {
                review,
                reason,
                note,
                closed_at: now_ms(),
            });
            let mut bytes: usize = inner.closed.iter().map(ClosedReview::bytes).sum();
            while inner.closed.len() > CLOSED_KEPT
                || (bytes > CLOSED_BYTES && inner.closed.len() > 1)
            {
                if let Some(gone) = inner.closed.pop_front() {
                    bytes -= gone.bytes();
                }
            }
        }
        self.log(&mut inner, entry);
    }

    pub fn open_file(&self, path: &str, line: Option<u32>) {
        self.involve(path);
        self.publish(json!({"type": "open", "path": path, "line": line}));
    }

    pub fn client_connected(&self, info: &ClientInfo) {
        let mut inner = self.lock();
        let view = SessionView {
            id: info.id,
            name: info.name.clone(),
            version: info.version.clone(),
            pid: info.pid,
            connected_at: now_ms(),
            agent: info.agent,
        };
        inner.sessions.insert(info.id, view.clone());
        self.publish_sessions(&inner);
        self.log(&mut inner, json!({"kind": "connected", "session": view}));
    }

    pub fn client_disconnected(&self, id: ClientId) {
        let mut inner = self.lock();
        if inner.sessions.remove(&id).is_some() {
            self.publish_sessions(&inner);
            self.log(&mut inner, json!({"kind": "disconnected", "session": id}));
        }
    }

    pub fn activity(&self, event: Activity) {
        let mut inner = self.lock();
        let entry = match event {
            Activity::ToolCall {
                client,
                tool,
                is_error,
                summary,
                elapsed_ms,
            } => {
                // The start of a result can quote a command or a file:
                // hidden and look-alike characters are shown, not obeyed.
                let summary = ccbridge_protocol::reveal::reveal_line(&summary).shown;
                json!({"kind": "toolCall", "session": client, "tool": tool,
                       "isError": is_error, "summary": summary, "elapsedMs": elapsed_ms})
            }
            Activity::SessionReplaced { old, by } => {
                json!({"kind": "replaced", "old": old, "by": by})
            }
        };
        self.log(&mut inner, entry);
    }

    /// Asks the page's user to allow `approval`; resolves with the answer.
    /// Dropped before the answer (the call was cancelled), the question
    /// leaves the page.
    pub async fn approve(&self, approval: Approval) -> Result<bool, FrontendError> {
        let id = approval.id;
        let rx = {
            let mut inner = self.lock();
            let (view, rx) = inner.runs.ask(approval, now_ms());
            self.publish(json!({"type": "approval", "approval": view}));
            rx
        };
        struct Withdraw<'a>(&'a Hub, RunId);
        impl Drop for Withdraw<'_> {
            fn drop(&mut self) {
                let mut inner = self.0.lock();
                if inner.runs.withdraw(self.1) {
                    self.0
                        .publish(json!({"type": "approvalClosed", "id": self.1,
                                          "allowed": null}));
                }
            }
        }
        let _withdraw = Withdraw(self, id);
        rx.await.map_err(|_| FrontendError::Disconnected)
    }

    /// A command's progress, for the pages to show live.
    pub fn command_event(&self, event: CommandEvent) {
        let mut inner = self.lock();
        let Some(change) = inner.runs.record(event, now_ms()) else {
            return;
        };
        match change {
            Change::Started(run) => self.publish(json!({"type": "run", "run": run})),
            Change::Output { id, data } => {
                self.publish(json!({"type": "runOutput", "id": id, "data": data}));
            }
            Change::Exited { id, exit } => {
                self.publish(json!({"type": "runExited", "id": id, "exit": exit}));
                // For the history: "ran `cargo test`: exit 0, 4 s".
                let run = inner
                    .runs
                    .runs()
                    .iter()
                    .rev()
                    .find(|r| r.id == id)
                    .map(|r| {
                        (
                            r.command_shown.clone(),
                            exit.at.saturating_sub(r.started_at),
                        )
                    });
                if let Some((command, elapsed_ms)) = run {
                    self.log(
                        &mut inner,
                        json!({"kind": "run", "run": id, "command": command,
                               "exitCode": exit.exit_code, "timedOut": exit.timed_out,
                               "cancelled": exit.cancelled, "elapsedMs": elapsed_ms}),
                    );
                }
            }
        }
    }

    // ---------------------------------------------------------- from the page

    /// The user's answer to approval `id`.
    pub fn answer_approval(&self, id: RunId, allow: bool) -> Result<(), ActionError> {
        let mut inner = self.lock();
        let view = inner
            .runs
            .answer(id, allow)
            .ok_or(ActionError::NoApproval(id))?;
        self.publish(json!({"type": "approvalClosed", "id": id, "allowed": allow}));
        self.log(
            &mut inner,
            json!({"kind": "approval", "tool": view.approval.tool,
                   "summary": view.approval.summary, "allowed": allow}),
        );
        Ok(())
    }

    /// Changes when the workspace tools ask (until ccbridge restarts).
    pub fn set_approval_mode(&self, mode: ApprovalMode) -> Result<Value, ActionError> {
        let t = self.tools_link().ok_or(ActionError::NoTools)?;
        t.ctx.set_approval(mode);
        let tools = self.tools().unwrap_or_default();
        self.publish(json!({"type": "tools", "tools": tools}));
        Ok(tools)
    }

    pub fn set_tabs(&self, tabs: Tabs) {
        self.lock().tabs = tabs;
    }

    /// Applies `act` to review `id`, publishes the result, and tells the
    /// engine when the review finished (or was dismissed).
    pub async fn review_action(
        &self,
        id: DiffId,
        act: impl FnOnce(&mut Review) -> Result<Outcome, ReviewError>,
    ) -> Result<Review, ActionError> {
        self.act_on(
            id,
            |r| act(r).map(|o| (o, ())),
            |r, ()| (json!({"type": "review", "review": r}), r.clone()),
        )
        .await
    }

    /// Accepts or rejects hunk `index` of version `seen` of review `id`.
    /// The answer, and the event the pages get, say only what the decision
    /// changed (`hunk` in docs/web-ui.md): which hunk, as it stood, and the
    /// new version and status. The whole review (two texts of up to 16 MiB
    /// and every hunk) was sent and parsed twice per decision, ~700 kB on a
    /// 2,000-hunk proposal.
    pub async fn decide_hunk(
        &self,
        id: DiffId,
        index: usize,
        accept: bool,
        seen: u64,
    ) -> Result<Value, ActionError> {
        self.act_on(
            id,
            |r| {
                let hunk = r.hunks.get(index).map(|h| h.hunk);
                r.decide(index, accept, seen).map(|o| (o, hunk))
            },
            |r, hunk| {
                let event = json!({"type": "hunk", "id": r.id, "version": r.version,
                    "index": index, "decision": if accept { "accept" } else { "reject" },
                    "hunk": hunk, "status": r.status});
                (event.clone(), event)
            },
        )
        .await
    }

    /// Applies `act` to review `id`; `view` makes the event published for
    /// the pages and the answer from the review after it.
    async fn act_on<E, R>(
        &self,
        id: DiffId,
        act: impl FnOnce(&mut Review) -> Result<(Outcome, E), ReviewError>,
        view: impl FnOnce(&Review, E) -> (Value, R),
    ) -> Result<R, ActionError> {
        let mut accepted = None;
        let (answer, decision) = {
            let mut inner = self.lock();
            let review = inner.reviews.get_mut(&id).ok_or(ActionError::Unknown(id))?;
            let (outcome, extra) = act(review).map_err(|error| ActionError::Review {
                error,
                review: Box::new(review.clone()),
            })?;
            if let (Outcome::Accept(text), Some(changes)) = (&outcome, self.changes.get()) {
                // Seen on disk, this write is the reviewed one.
                let agent = review
                    .agent
                    .map_or("the workspace tools", |a| a.display_name());
                changes.expect_reviewed(&review.path, text.as_bytes(), agent);
            }
            if matches!(outcome, Outcome::Accept(_)) {
                accepted = Some(review.path.clone());
            }
            let decision = match outcome {
                Outcome::Pending if review.status == crate::reviews::Status::Dismissed => {
                    Some(DiffDecision::Dismissed)
                }
                Outcome::Pending => None,
                Outcome::Accept(text) => Some(DiffDecision::Accepted {
                    contents: Some(text),
                }),
                Outcome::Reject => Some(DiffDecision::Rejected),
            };
            let (event, answer) = view(review, extra);
            self.publish(event);
            (answer, decision)
        };
        if let Some(decision) = decision {
            let engine = self.engine.get().ok_or(ActionError::Stopped)?;
            if let Some(path) = accepted.filter(|p| self.analyzed(p)) {
                // The agent writes the file next and asks for the new
                // diagnostics at once: the whole-workspace answer waits
                // for the language server's report on the new text.
                let _ = engine
                    .send(EditorEvent::Analyzing {
                        path,
                        write_pending: true,
                    })
                    .await;
            }
            match engine
                .apply(EditorEvent::DiffResolved { id, decision })
                .await
            {
                Ok(()) => {}
                // Claude closed it meanwhile; the close event follows.
                Err(ApplyError::DiffNotOpen(_)) => {}
                Err(_) => return Err(ActionError::Stopped),
            }
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(id: u64) -> DiffView {
        DiffView {
            id: DiffId(id),
            client_id: Some(ClientId(7)),
            tab_name: format!("tab {id}"),
            old_file_path: "/w/a.py".into(),
            new_file_path: "/w/a.py".into(),
            original_contents: Some("a\n".into()),
            is_new_file: false,
            proposed_contents: "b\n".into(),
            agent: Some(AgentKind::Gemini),
        }
    }

    #[test]
    fn tool_call_summaries_show_hidden_characters() {
        let hub = Hub::new();
        hub.activity(Activity::ToolCall {
            client: ClientId(1),
            tool: "execute_command".into(),
            is_error: false,
            summary: "echo safe \u{2067}; touch X; : #\u{2069}".into(),
            elapsed_ms: 1,
        });
        let summary = hub.snapshot()["activity"][0]["summary"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            summary.contains("⟨U+2067⟩") && !summary.contains('\u{2067}'),
            "{summary}"
        );
    }

    #[test]
    fn the_working_text_of_a_pending_review_only() {
        let hub = Hub::new();
        hub.show_diff(view(1));
        assert_eq!(hub.working_text(DiffId(1)).as_deref(), Some("b\n"));
        hub.close_diff(DiffId(1), CloseReason::AgentClosed);
        assert_eq!(hub.working_text(DiffId(1)), None);
    }

    #[test]
    fn a_reviewers_note_names_the_agent_and_file_and_is_bounded() {
        let hub = Hub::new();
        let mut notes = hub.reviewer_notes();
        hub.client_connected(&ClientInfo {
            id: ClientId(7),
            name: "gemini-cli".into(),
            version: "0.61.0".into(),
            pid: None,
            agent: AgentKind::Gemini,
        });
        hub.show_diff(view(1));
        let review = hub.lock().reviews.get(&DiffId(1)).unwrap().clone();
        hub.note(&review, "   ");
        hub.note(&review, &"é".repeat(MAX_NOTE));
        let n = notes.try_recv().expect("a note");
        assert_eq!(n.agent, Some(AgentKind::Gemini));
        assert_eq!(n.path, "/w/a.py");
        assert!(n.note.len() <= MAX_NOTE && n.note.chars().all(|c| c == 'é'));
        assert!(notes.try_recv().is_err(), "a blank note is not passed on");
    }

    #[test]
    fn reviews_are_newest_first_name_their_session_and_leave_with_a_note() {
        let hub = Hub::new();
        let mut events = hub.subscribe();
        hub.client_connected(&ClientInfo {
            id: ClientId(7),
            name: "claude-code".into(),
            version: "2.1.328".into(),
            pid: Some(42),
            agent: AgentKind::Gemini,
        });
        hub.show_diff(view(1));
        hub.show_diff(view(2));
        let snap = hub.snapshot();
        let ids: Vec<u64> = snap["reviews"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_u64().unwrap())
            .collect();
        assert_eq!(ids, vec![2, 1]);
        assert_eq!(snap["reviews"][0]["session"]["name"], "claude-code");
        assert_eq!(
            snap["reviews"][0]["session"]["agent"],
            json!({"id": "gemini", "name": "Gemini CLI"}),
            "the page can say which agent proposes it"
        );
        assert_eq!(snap["sessions"][0]["agent"]["id"], "gemini");
        assert_eq!(snap["sessions"][0]["pid"], 42);
        hub.close_diff(DiffId(1), CloseReason::NewPrompt);
        let mut kinds = Vec::new();
        while let Ok(e) = events.try_recv() {
            let v: Value = serde_json::from_str(&e).unwrap();
            kinds.push(v["type"].as_str().unwrap().to_owned());
            if v["type"] == "closed" {
                assert_eq!(v["reason"], "newPrompt");
                let note = v["note"].as_str().unwrap();
                assert!(note.starts_with("/w/a.py: "), "{note}");
                // Named after the agent that proposed it, not always Claude.
                assert!(
                    note.ends_with("closed by Gemini CLI at a new prompt"),
                    "{note}"
                );
            }
        }
        assert_eq!(
            kinds,
            [
                "sessions", "activity", "review", "activity", "review", "activity", "closed",
                "activity"
            ]
        );
        let snap = hub.snapshot();
        assert_eq!(snap["reviews"].as_array().unwrap().len(), 1);
        // The history's facts: who proposed how many changes, and how many
        // the text kept when it closed.
        let log = snap["activity"].as_array().unwrap();
        let proposed = &log[1];
        assert_eq!(proposed["kind"], "proposed");
        assert_eq!(proposed["agent"], "Gemini CLI");
        assert_eq!(proposed["hunks"], 1);
        let closed = log.last().unwrap();
        assert_eq!(closed["kind"], "closed");
        assert_eq!(closed["status"], "pending");
        assert_eq!(closed["proposedHunks"], 1);
        assert_eq!(closed["keptHunks"], 1);
        assert_eq!(closed["edited"], false);
    }

    /// Issue 19: a decision on one hunk sent the whole review (two texts
    /// and every hunk) to every page and back as the answer.
    #[tokio::test]
    async fn a_hunk_decision_is_published_as_that_decision_only() {
        let hub = Hub::new();
        let mut v = view(1);
        v.original_contents = Some("a\nb\nc\nd\ne\n".into());
        v.proposed_contents = "A\nb\nc\nd\nE\n".into();
        hub.show_diff(v);
        let mut events = hub.subscribe();
        let answer = hub.decide_hunk(DiffId(1), 1, false, 1).await.unwrap();
        assert_eq!(
            answer,
            json!({"type": "hunk", "id": 1, "version": 2, "index": 1, "decision": "reject",
                   "hunk": {"oldStart": 4, "oldLines": 1, "newStart": 4, "newLines": 1},
                   "status": "pending"})
        );
        let published: Value = serde_json::from_str(&events.try_recv().unwrap()).unwrap();
        assert_eq!(published, answer);
        // The review itself moved on as the event says.
        let r = hub.review(DiffId(1)).unwrap();
        assert_eq!((r.version, r.hunks.len()), (2, 1));
        assert_eq!(r.working, "A\nb\nc\nd\ne\n");
        // A stale version is refused with the whole review.
        let stale = hub.decide_hunk(DiffId(1), 0, true, 1).await;
        assert!(
            matches!(stale, Err(ActionError::Review { .. })),
            "{stale:?}"
        );
    }

    #[test]
    fn proposals_closed_undecided_are_kept_bounded_and_forgotten_when_dismissed() {
        let hub = Hub::new();
        hub.show_diff(view(1));
        hub.close_diff(DiffId(1), CloseReason::AgentClosed);
        hub.show_diff(view(2));
        hub.close_diff(DiffId(2), CloseReason::Replaced);
        let snap = hub.snapshot();
        let kept = snap["closedReviews"].as_array().unwrap();
        assert_eq!(kept.len(), 1, "a replaced proposal is not kept: {kept:?}");
        assert_eq!(kept[0]["review"]["id"], 1);
        assert_eq!(kept[0]["reason"], "claudeClosed");
        assert!(kept[0]["note"].as_str().unwrap().starts_with("/w/a.py: "));
        assert_eq!(kept[0]["review"]["working"], "b\n");
        let mut events = hub.subscribe();
        assert!(hub.forget_closed(DiffId(1)));
        assert!(!hub.forget_closed(DiffId(1)), "forgotten once");
        let e: Value = serde_json::from_str(&events.try_recv().unwrap()).unwrap();
        assert_eq!(e, json!({"type": "forgotten", "id": 1}));
        assert_eq!(hub.snapshot()["closedReviews"], json!([]));
        // Bounded: the newest CLOSED_KEPT, newest first.
        for id in 10..(10 + CLOSED_KEPT as u64 + 5) {
            hub.show_diff(view(id));
            hub.close_diff(DiffId(id), CloseReason::NewPrompt);
        }
        let snap = hub.snapshot();
        let ids: Vec<u64> = snap["closedReviews"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["review"]["id"].as_u64().unwrap())
            .collect();
        assert_eq!(ids.len(), CLOSED_KEPT);
        assert_eq!(ids[0], 10 + CLOSED_KEPT as u64 + 4);
        assert_eq!(*ids.last().unwrap(), 15);
        // A decided proposal is not kept, whatever closed it.
        let before = ids.len();
        hub.show_diff(view(200));
        hub.lock()
            .reviews
            .get_mut(&DiffId(200))
            .unwrap()
            .dismiss()
            .unwrap();
        hub.close_diff(DiffId(200), CloseReason::AgentClosed);
        let after = hub.snapshot()["closedReviews"].as_array().unwrap().len();
        assert_eq!(after, before);
        assert_eq!(
            hub.snapshot()["closedReviews"][0]["review"]["id"],
            10 + CLOSED_KEPT as u64 + 4
        );
    }

    #[test]
    fn the_activity_log_is_bounded() {
        let hub = Hub::new();
        for i in 0..(ACTIVITY_KEPT + 10) {
            hub.activity(Activity::SessionReplaced {
                old: ClientId(i as u64),
                by: ClientId(i as u64 + 1),
            });
        }
        let snap = hub.snapshot();
        let log = snap["activity"].as_array().unwrap();
        assert_eq!(log.len(), ACTIVITY_KEPT);
        assert_eq!(log[0]["old"], 10);
        assert!(log[0]["at"].as_u64().unwrap() > 0);
    }
}
