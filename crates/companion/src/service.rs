//! The companion's MCP side, the one module of this crate that uses `rmcp`:
//! two tools, `openDiff` and `closeDiff`, and two kinds of notification
//! pushed on the session's event stream, `ide/contextUpdate` and the
//! verdicts `ide/diffAccepted` / `ide/diffRejected` (`ide/diffClosed` when
//! the client closed a diff without suppressing the notification).
//!
//! What the real clients do, and so what this answers
//! (observed with them; `docs/agents.md`): `openDiff` is answered at once
//! and the verdict comes later as a notification; one diff per file per
//! session, a second one replacing the first; `closeDiff` (sent when the
//! user answered in the terminal instead) closes the view quietly and
//! answers `{"content": null}` (the client then writes the model's text).
//! The context is pushed once the client has listed the tools (its event
//! stream is open by then), and again on every change, debounced.

use crate::context::ContextTracker;
use crate::discovery::CompanionAgent;
use ccbridge_http::mcp::CappedSessions;
use ccbridge_server::original::{Original, MAX_ORIGINAL};
use ccbridge_server::{AgentSession, EngineHandle, Proposal, Verdict};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomNotification,
    Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, ServerNotification, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::{ErrorData as McpError, Peer, ServerHandler};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Larger request bodies are refused with 413 (a proposal is a whole file).
pub const MAX_BODY_BYTES: usize = 32 << 20;
/// Proposals waiting for the user at once, over all sessions of one
/// agent's server: an agent holding the token cannot fill ccbridge (and
/// the page's state) with reviews.
pub const MAX_PENDING: usize = 16;
/// Their texts (the file now and the proposal) together, at most.
pub const MAX_PENDING_BYTES: usize = 64 << 20;
/// Quiet time before a context change is pushed.
pub const CONTEXT_DEBOUNCE: Duration = Duration::from_millis(50);

/// What every session shares.
pub(crate) struct Shared {
    /// Which agent this server is for (each has its own server, port and
    /// token: both clients introduce themselves as the same MCP SDK).
    pub agent: CompanionAgent,
    pub engine: EngineHandle,
    pub stop: CancellationToken,
    /// Sessions so far (names the diffs of each).
    pub sessions: AtomicU64,
    /// The proposals waiting for the user, and their bytes.
    pub pending: Mutex<Budget>,
}

/// What the waiting proposals of one server take (see [`MAX_PENDING`]).
#[derive(Debug, Default)]
pub(crate) struct Budget {
    count: usize,
    bytes: usize,
}

/// One proposal's share of the [`Budget`], given back when it is decided,
/// replaced or withdrawn (dropped with its task).
struct Reserved {
    shared: Arc<Shared>,
    bytes: usize,
}

impl Reserved {
    fn take(shared: &Arc<Shared>, bytes: usize) -> Result<Reserved, String> {
        let mut b = shared.pending.lock().unwrap_or_else(|e| e.into_inner());
        if b.count >= MAX_PENDING {
            return Err(format!(
                "{MAX_PENDING} proposals are already waiting for the user's review; \
                 wait for their verdicts before proposing more"
            ));
        }
        if b.bytes + bytes > MAX_PENDING_BYTES {
            return Err(format!(
                "the proposals waiting for review already hold {} MiB; wait for their \
                 verdicts before proposing more",
                b.bytes >> 20
            ));
        }
        b.count += 1;
        b.bytes += bytes;
        Ok(Reserved {
            shared: shared.clone(),
            bytes,
        })
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        let mut b = self
            .shared
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        b.count -= 1;
        b.bytes -= self.bytes;
    }
}

/// A diff waiting for the user, and how to withdraw it.
struct PendingDiff {
    generation: u64,
    task: tokio::task::AbortHandle,
}

/// One client session.
#[derive(Clone)]
pub struct Companion {
    shared: Arc<Shared>,
    session: u64,
    pending: Arc<Mutex<HashMap<String, PendingDiff>>>,
    generations: Arc<AtomicU64>,
    pushing: Arc<AtomicBool>,
    /// The session as the frontend knows it (who proposes a diff), from
    /// `initialize` on.
    agent_session: Arc<OnceLock<Arc<AgentSession>>>,
    _end: Arc<SessionEnd>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OpenDiffArgs {
    file_path: String,
    new_content: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CloseDiffArgs {
    file_path: String,
    #[serde(default)]
    suppress_notification: bool,
}

fn schema(v: Value) -> Arc<rmcp::model::JsonObject> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "openDiff",
            "Shows a proposed new text of a file as a diff in the editor for the user to accept (possibly edited) or reject. Answers at once; the verdict comes as ide/diffAccepted or ide/diffRejected.",
            schema(json!({
                "type": "object",
                "properties": {
                    "filePath": {"type": "string", "description": "The file's absolute path."},
                    "newContent": {"type": "string", "description": "The whole proposed text."}
                },
                "required": ["filePath", "newContent"]
            })),
        ),
        Tool::new(
            "closeDiff",
            "Closes the diff of a file without a verdict (the user answered elsewhere).",
            schema(json!({
                "type": "object",
                "properties": {
                    "filePath": {"type": "string", "description": "The file's absolute path."},
                    "suppressNotification": {"type": "boolean"}
                },
                "required": ["filePath"]
            })),
        ),
    ]
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t.into())])
}

fn error(t: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(t.into())])
}

/// `openDiff`'s answer for a proposal the editor will not show (too large,
/// an original it cannot read, too many waiting): the agent's own prompt in
/// its terminal decides, as when the editor cannot show diffs at all. Not
/// an error: Gemini CLI fails the edit on one, even when the user then
/// allows it in the terminal.
fn not_shown(path: &str, why: &str) -> CallToolResult {
    tracing::warn!(
        path,
        "the proposal is not shown for review ({why}); the agent's own prompt decides"
    );
    CallToolResult::success(vec![])
}

async fn notify(peer: &Peer<RoleServer>, method: &str, params: Value) -> bool {
    let n = ServerNotification::CustomNotification(CustomNotification::new(method, Some(params)));
    peer.send_notification(n).await.is_ok()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Companion {
    pub(crate) fn new(shared: Arc<Shared>) -> Companion {
        let session = shared.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        let pending: Arc<Mutex<HashMap<String, PendingDiff>>> = Arc::default();
        Companion {
            shared,
            session,
            _end: Arc::new(SessionEnd(pending.clone())),
            pending,
            generations: Arc::default(),
            pushing: Arc::default(),
            agent_session: Arc::default(),
        }
    }

    /// This session as the frontend knows it; announced by `initialize`
    /// (with the client's version), or here if a call comes first.
    fn agent_session(&self, version: &str) -> Arc<AgentSession> {
        self.agent_session
            .get_or_init(|| {
                let agent = self.shared.agent;
                Arc::new(self.shared.engine.agent_session(
                    agent.kind(),
                    agent.client_name(),
                    version,
                ))
            })
            .clone()
    }

    /// Pushes the editor's context now and after every change, until the
    /// session or the server ends.
    fn start_pushing(&self, peer: Peer<RoleServer>) {
        if self.pushing.swap(true, Ordering::SeqCst) {
            return;
        }
        let engine = self.shared.engine.clone();
        let stop = self.shared.stop.clone();
        tokio::spawn(async move {
            let mut changes = engine.context_changes();
            let mut tracker = ContextTracker::default();
            let mut last: Option<Value> = None;
            loop {
                changes.borrow_and_update();
                let ctx = engine.editor_context();
                let update = tracker.update(&ctx, now_ms(), |p| {
                    std::fs::metadata(p).is_ok_and(|m| m.is_file())
                });
                // Timestamps alone change nothing a client shows.
                let shown = strip_timestamps(&update);
                if last.as_ref() != Some(&shown) {
                    if !notify(&peer, "ide/contextUpdate", update).await {
                        return;
                    }
                    last = Some(shown);
                }
                // A closed session shows as a failed notification above.
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = changes.changed() => if changed.is_err() { return },
                }
                tokio::time::sleep(CONTEXT_DEBOUNCE).await;
            }
        });
    }

    async fn open_diff(&self, args: OpenDiffArgs, peer: Peer<RoleServer>) -> CallToolResult {
        let path = args.file_path;
        if !path.starts_with('/') {
            return error(format!("filePath must be absolute: {path}"));
        }
        if args.new_content.len() as u64 > MAX_ORIGINAL {
            let why = format!("larger than {} MiB", MAX_ORIGINAL >> 20);
            return not_shown(&path, &why);
        }
        // Off the runtime's workers, never blocking on a FIFO, capped.
        let original = match ccbridge_server::original::read(&path).await {
            Original::Text(t) => Some(t),
            Original::Missing => None,
            Original::Unreadable(why) => return not_shown(&path, &why),
        };
        let bytes = original.as_ref().map_or(0, String::len) + args.new_content.len();
        let reserved = match Reserved::take(&self.shared, bytes) {
            Ok(r) => r,
            Err(why) => return not_shown(&path, &why),
        };
        let proposal = Proposal {
            requester: None,
            title: self.title(&path),
            path: path.clone(),
            original,
            proposed: args.new_content,
        };
        let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
        let session = self.agent_session("");
        let pending = self.pending.clone();
        let key = path.clone();
        let task = tokio::spawn(async move {
            let _reserved = reserved;
            let verdict = session.review(proposal).await;
            let mine = {
                let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
                match p.get(&key) {
                    Some(d) if d.generation == generation => {
                        p.remove(&key);
                        true
                    }
                    _ => false,
                }
            };
            if !mine {
                return;
            }
            match verdict {
                Ok(Verdict::Accepted { contents }) => {
                    notify(
                        &peer,
                        "ide/diffAccepted",
                        json!({"filePath": key, "content": contents}),
                    )
                    .await;
                }
                Ok(Verdict::Rejected) => {
                    notify(&peer, "ide/diffRejected", json!({"filePath": key})).await;
                }
                // Not shown (the editor cannot show diffs): the terminal's
                // own prompt decides.
                Err(e) => tracing::warn!(path = %key, "the proposal could not be shown: {e}"),
            }
        });
        let replaced = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                path,
                PendingDiff {
                    generation,
                    task: task.abort_handle(),
                },
            );
        if let Some(old) = replaced {
            old.task.abort();
        }
        CallToolResult::success(vec![])
    }

    /// The title of this session's review of `path` (how the engine finds
    /// it again): one of its own for each agent, session and file. With the
    /// file's name only, a `README.md` of another folder, or Qwen Code's
    /// session 1 beside Gemini CLI's, took over the review and the first
    /// agent was told the user had rejected its change.
    fn title(&self, path: &str) -> String {
        let agent = self.shared.agent.display_name();
        format!("{path} ⟷ proposed ({agent} {})", self.session)
    }

    async fn close_diff(&self, args: CloseDiffArgs, peer: Peer<RoleServer>) -> CallToolResult {
        // The user answered in the agent's terminal. Gemini CLI writes the
        // `content` of this answer when it is not null: the text as the
        // user left it in the review (their edits), taken before the view
        // closes with the withdrawn task.
        let session = self.agent_session.get().cloned();
        let content = match session {
            Some(s) => s.review_text(&self.title(&args.file_path)).await,
            None => None,
        };
        let gone = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&args.file_path);
        if let Some(d) = gone {
            d.task.abort();
            if !args.suppress_notification {
                notify(&peer, "ide/diffClosed", json!({"filePath": args.file_path})).await;
            }
        }
        // Without one (no such review, or an editor that cannot tell), the
        // client falls back to the model's proposal.
        text(json!({ "content": content }).to_string())
    }
}

fn strip_timestamps(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(files) = v
        .pointer_mut("/workspaceState/openFiles")
        .and_then(Value::as_array_mut)
    {
        for f in files {
            if let Some(o) = f.as_object_mut() {
                o.remove("timestamp");
            }
        }
    }
    v
}

/// Held by a session's handler (and its clones) only: when the session
/// ends, its diffs still waiting are withdrawn (their views close).
struct SessionEnd(Arc<Mutex<HashMap<String, PendingDiff>>>);

impl Drop for SessionEnd {
    fn drop(&mut self) {
        for (_, d) in self.0.lock().unwrap_or_else(|e| e.into_inner()).drain() {
            d.task.abort();
        }
    }
}

impl ServerHandler for Companion {
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        self.agent_session(&request.client_info.version);
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("ccbridge-companion", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // The client opens its event stream before it lists the tools.
        self.start_pushing(context.peer.clone());
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let bad = |e: serde_json::Error| McpError::invalid_params(e.to_string(), None);
        let started = Instant::now();
        let result = match request.name.as_ref() {
            "openDiff" => {
                self.open_diff(
                    serde_json::from_value(args).map_err(bad)?,
                    context.peer.clone(),
                )
                .await
            }
            "closeDiff" => {
                self.close_diff(
                    serde_json::from_value(args).map_err(bad)?,
                    context.peer.clone(),
                )
                .await
            }
            other => return Err(McpError::invalid_params(format!("no tool {other}"), None)),
        };
        let summary = result
            .content
            .iter()
            .find_map(|c| c.as_text().map(|t| t.text.chars().take(120).collect()))
            .unwrap_or_default();
        self.agent_session("").tool_called(
            &request.name,
            result.is_error == Some(true),
            summary,
            started.elapsed().as_millis() as u64,
        );
        Ok(result.into())
    }
}

/// How long a session whose GET stream closed may stay idle before it is
/// closed, its diffs withdrawn: both agents keep that stream open while
/// they live and reopen a broken one within seconds (their SDK's retry), so
/// after this the agent was closed or killed. Until then its review stayed
/// open in the editor for the ten idle minutes every session gets, and
/// accepting it sent the verdict to nobody.
pub const ORPHANED: Duration = Duration::from_secs(15);

/// The MCP endpoint as a tower service, set up as the tools server's is
/// (`ccbridge_http::mcp::http_service`: no priming events, which broke
/// Gemini CLI's IDE connection; at most `MAX_SESSIONS` sessions), orphans
/// closed after [`ORPHANED`].
pub(crate) fn endpoint(shared: Arc<Shared>) -> StreamableHttpService<Companion, CappedSessions> {
    let stop = shared.stop.child_token();
    ccbridge_http::mcp::http_service(
        move || Ok(Companion::new(shared.clone())),
        CappedSessions::closing_orphans(ORPHANED),
        MAX_BODY_BYTES,
        stop,
    )
}
