//! The sidecar's life: start the engine, serve the editor's input until it
//! ends, stop the engine cleanly.
//!
//! One loop reads the editor's frames and handles each before reading the
//! next, so editor state reaches the engine in exactly the order the editor
//! sent it (a selection after the tab list it refers to, a verdict after
//! the diff it decides). Nothing is spawned per message: notifications are
//! awaited into the engine's queue, the three requests (`initialize`,
//! `status`, `shutdown`) are answered inline, and answers to our own
//! requests are handed to the [`StdioFrontend`]'s pending table.
//!
//! Ending is the same for every cause (end of input, `shutdown`, a signal,
//! a dead output, a failed engine): fail every request still waiting on
//! the editor, stop the engine (which closes the CLI connections, settles
//! open diffs and removes the lock file), flush what is queued for the
//! editor, close the output.

use crate::error::SidecarError;
use crate::frontend::StdioFrontend;
use crate::messages::{
    self, check_folders, claude_env, method, AgentEnv, Checked, InitializeParams, InitializeResult,
    ServerInfo, StatusResult, ToolsEndpoint, PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};
use async_trait::async_trait;
use ccbridge_lsp::framing::{
    close_output, spawn_writer, Frame, FrameReader, FrameSink, MAX_BODY_BYTES,
};
use ccbridge_protocol::jsonrpc::{
    code, ErrorObject, Message, Notification, Request, RequestId, Response,
};
use ccbridge_protocol::lockfile::McpEndpoint;
use ccbridge_server::traffic::{Direction, Peer, TrafficLog};
use ccbridge_server::{
    AgentKind, ApplyError, ClientInfo, Config, EditorEvent, EngineGone, EngineHandle, Server,
};
use ccbridge_services::Offer;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::future::Future;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

/// Why the sidecar stopped, when it stopped cleanly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// The editor closed our input between two frames.
    InputClosed,
    /// The editor sent `shutdown`.
    ShutdownRequested,
    /// The caller's `shutdown` future resolved (a signal).
    Stopped,
    /// Writing to the editor failed: nobody reads our output any more.
    OutputClosed,
    /// The engine stopped by itself.
    EngineStopped,
}

/// Runs the sidecar: binds the engine, serves `input`/`output` until one of
/// the ends listed in [`ExitReason`], then stops the engine (the lock file
/// is removed and open diffs are settled before this returns).
///
/// Only protocol frames are ever written to `output`.
pub async fn run<R, W>(
    config: Config,
    input: R,
    output: W,
    shutdown: impl Future<Output = ()>,
) -> Result<ExitReason, SidecarError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    run_with(config, Options::default(), input, output, shutdown).await
}

/// What the sidecar serves besides the Claude Code IDE server: the same
/// options as the browser UI's. The editor's `initialize` may change the
/// workspace tools' approval mode.
pub use ccbridge_services::Options;

/// [`run`], with [`Options`].
pub async fn run_with<R, W>(
    config: Config,
    options: Options,
    input: R,
    output: W,
    shutdown: impl Future<Output = ()>,
) -> Result<ExitReason, SidecarError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut config = config;
    if !options.claude {
        // Claude Code finds an IDE by its lock file only.
        config.lock_dir = None;
    }
    let folders: Vec<PathBuf> = config.workspace_folders.iter().map(PathBuf::from).collect();
    let (sink, writer) = spawn_writer(output);
    let frontend = Arc::new(StdioFrontend::new(sink.clone(), config.frontend_timeout));
    let server_info = ServerInfo {
        name: config.server_name.clone(),
        version: config.server_version.clone(),
    };
    // Bounded: a pipe the editor no longer reads never keeps us from exiting.
    let finish_output = |sink: FrameSink, writer: tokio::task::JoinHandle<_>| async move {
        if let Err(e) = close_output(&sink, writer).await {
            tracing::debug!("the output ended with an error: {e}");
        }
    };

    let server = match Server::bind(config, frontend.clone()).await {
        Ok(server) => server,
        Err(e) => {
            finish_output(sink, writer).await;
            return Err(SidecarError::Start(e));
        }
    };
    // The lock file exists before the editor's first message is read:
    // `initialize` always reports it, and Claude can connect at once.
    if let Err(e) = server.publish() {
        frontend.disconnect();
        finish_output(sink, writer).await;
        return Err(SidecarError::Start(e));
    }
    let handle = server.handle();
    let server_token = server.token().to_owned();
    if let Some(log) = handle.traffic_log() {
        sink.set_tap(Arc::new(move |body: &[u8]| {
            log.record(
                Peer::Editor,
                0,
                Direction::Out,
                &String::from_utf8_lossy(body),
            )
        }));
    }
    let (stop_engine, engine_stop) = oneshot::channel::<()>();
    let mut engine_task = tokio::spawn(server.run(async move {
        let _ = engine_stop.await;
    }));
    tracing::info!(port = handle.port(), lock = ?handle.lock_path(), "sidecar serving");
    let tools = ccbridge_services::start_tools(&options, &folders, &handle, &server_token).await;
    let analysis = options.language_servers.clone().map(|o| {
        let a = crate::diagnostics::Analysis::start(o, folders.clone(), handle.clone());
        frontend.analyse_proposals(a.clone());
        a
    });
    let services = ccbridge_services::Services::start(&options, &folders, &handle, tools).await;
    let changes = services.changes().cloned();
    let changes_wanted = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let forward_changes = changes.as_ref().map(|c| {
        let mut revisions = c.subscribe();
        let (sink, wanted) = (sink.clone(), changes_wanted.clone());
        // A file an agent wrote gets fresh diagnostics from its server.
        let (review, analysis) = (c.clone(), analysis.clone());
        let mut analysed = 0;
        tokio::spawn(async move {
            while revisions.changed().await.is_ok() {
                let revision = *revisions.borrow_and_update();
                if let Some(a) = &analysis {
                    let (now, paths) = review.changed_since(analysed);
                    analysed = now;
                    for path in paths {
                        a.involve(&path);
                    }
                }
                if wanted.load(Ordering::Relaxed) {
                    let n = Notification::new(
                        method::CHANGES_CHANGED,
                        Some(json!({ "revision": revision })),
                    );
                    // A full queue (an editor not reading) drops this one:
                    // the next change sends the newest revision again.
                    if let Err(ccbridge_lsp::framing::SendError::Closed) =
                        sink.send(Message::from(n).to_json())
                    {
                        return;
                    }
                }
            }
        })
    });
    let session = Session::new(
        Arc::new(handle),
        frontend.clone(),
        sink.clone(),
        server_info,
    )
    .with_tools(
        services
            .tools()
            .ok()
            .map(|t| (t.endpoint.clone(), t.ctx.clone())),
    )
    .with_agents(services.offers())
    .with_changes(changes, changes_wanted)
    .with_analysis(analysis.clone());
    let mut reader = FrameReader::new(input);
    let mut engine_result = None;
    let outcome = {
        let stop = async {
            tokio::select! {
                () = shutdown => ExitReason::Stopped,
                r = &mut engine_task => {
                    engine_result = Some(r);
                    ExitReason::EngineStopped
                }
            }
        };
        session.serve(&mut reader, stop).await
    };
    match &outcome {
        Ok(reason) => tracing::info!(?reason, "sidecar stopping"),
        // The caller reports the error itself; logging it too would print
        // it twice.
        Err(e) => tracing::debug!("sidecar stopping: {e}"),
    }

    // The editor will answer nothing more: fail what waits on it, so the
    // engine's shutdown (which closes diff views) does not wait for it.
    frontend.disconnect();
    if let Some(f) = forward_changes {
        f.abort();
    }
    let _ = stop_engine.send(());
    services.stop().await;
    if let Some(a) = &analysis {
        a.stop().await;
    }
    let engine_result = match engine_result {
        Some(r) => r,
        None => (&mut engine_task).await,
    };
    finish_output(sink, writer).await;

    let reason = outcome?;
    match engine_result {
        Ok(Ok(())) => Ok(reason),
        Ok(Err(e)) => Err(SidecarError::Engine(e)),
        Err(join) => Err(SidecarError::EngineTask(join.to_string())),
    }
}

/// What the session needs from the engine. A trait so that the dispatch
/// can be tested against a fake.
#[async_trait]
pub(crate) trait Engine: Send + Sync {
    async fn send(&self, event: EditorEvent) -> Result<(), EngineGone>;
    /// Like `send`, returning once the event is applied (or why it failed).
    async fn apply(&self, event: EditorEvent) -> Result<(), ApplyError>;
    fn port(&self) -> u16;
    fn lock_path(&self) -> Option<PathBuf>;
    fn clients(&self) -> Vec<ClientInfo>;
    fn workspace_folders(&self) -> Vec<String>;
    fn traffic_log(&self) -> Option<Arc<TrafficLog>>;
}

#[async_trait]
impl Engine for EngineHandle {
    async fn send(&self, event: EditorEvent) -> Result<(), EngineGone> {
        EngineHandle::send(self, event).await
    }
    async fn apply(&self, event: EditorEvent) -> Result<(), ApplyError> {
        EngineHandle::apply(self, event).await
    }
    fn port(&self) -> u16 {
        EngineHandle::port(self)
    }
    fn lock_path(&self) -> Option<PathBuf> {
        EngineHandle::lock_path(self)
    }
    fn clients(&self) -> Vec<ClientInfo> {
        EngineHandle::clients(self)
    }
    fn workspace_folders(&self) -> Vec<String> {
        EngineHandle::workspace_folders(self)
    }
    fn traffic_log(&self) -> Option<Arc<TrafficLog>> {
        EngineHandle::traffic_log(self)
    }
}

/// What handling one frame led to.
enum Step {
    Continue,
    Exit(ExitReason),
    Fail(SidecarError),
}

pub(crate) struct Session {
    engine: Arc<dyn Engine>,
    frontend: Arc<StdioFrontend>,
    sink: FrameSink,
    server_info: ServerInfo,
    /// The protocol version the editor asked for (the newest until it says).
    version: AtomicU32,
    /// The workspace tools server, when it runs: where, and what its tools
    /// share (their workspace and approval mode follow `initialize`).
    tools: Option<(McpEndpoint, Arc<ccbridge_mcp::tools::Context>)>,
    /// The agents offered, with their companion server's port (Claude's
    /// is the engine's).
    agents: Vec<Offer>,
    /// The session review, when the workspace is watched.
    changes: Option<ccbridge_changes::Changes>,
    /// The editor asked for `changesChanged` (`initialize`'s `changes`).
    changes_wanted: Arc<std::sync::atomic::AtomicBool>,
    /// ccbridge's language servers, when they run.
    analysis: Option<Arc<crate::diagnostics::Analysis>>,
}

impl Session {
    pub(crate) fn new(
        engine: Arc<dyn Engine>,
        frontend: Arc<StdioFrontend>,
        sink: FrameSink,
        server_info: ServerInfo,
    ) -> Self {
        Session {
            engine,
            frontend,
            sink,
            server_info,
            version: AtomicU32::new(PROTOCOL_VERSION),
            tools: None,
            agents: vec![Offer {
                agent: AgentKind::Claude,
                companion_port: None,
            }],
            changes: None,
            changes_wanted: Arc::default(),
            analysis: None,
        }
    }

    /// Involves the files the editor shows in ccbridge's language servers,
    /// and lets the editor's `initialize.diagnostics` say whose win.
    pub(crate) fn with_analysis(
        mut self,
        analysis: Option<Arc<crate::diagnostics::Analysis>>,
    ) -> Self {
        self.analysis = analysis;
        self
    }

    /// Serves the session review (`changes`, `changeAction`), telling the
    /// editor of each change through `wanted`'s flag once it asks.
    pub(crate) fn with_changes(
        mut self,
        changes: Option<ccbridge_changes::Changes>,
        wanted: Arc<std::sync::atomic::AtomicBool>,
    ) -> Self {
        self.changes = changes;
        self.changes_wanted = wanted;
        self
    }

    /// Tells the session review that the write an accepted verdict leads
    /// to was reviewed here (seen on disk, it is marked so).
    fn mark_reviewed(&self, p: &messages::DiffResolvedParams) {
        let (Some(changes), ccbridge_server::DiffDecision::Accepted { contents }) =
            (&self.changes, &p.decision)
        else {
            return;
        };
        let Some(shown) = self.frontend.shown(p.id) else {
            return;
        };
        let version = contents.as_ref().map_or(shown.proposed_version, |c| {
            ccbridge_changes::version_of(Some(c.as_bytes()))
        });
        changes.expect_reviewed_version(&shown.path, version, shown.agent);
    }

    /// An accepted review's file is written next, by the agent. When
    /// ccbridge's language servers answer for it (and the session review's
    /// watcher will see the write), Claude's whole-workspace
    /// `getDiagnostics` right after waits for their report on the new text
    /// rather than answer with the old one.
    fn write_pending(&self, p: &messages::DiffResolvedParams) -> Option<EditorEvent> {
        let a = self.analysis.as_ref()?;
        self.changes.as_ref()?;
        if !matches!(p.decision, ccbridge_server::DiffDecision::Accepted { .. }) {
            return None;
        }
        let shown = self.frontend.shown(p.id)?;
        a.checks(&shown.path).then_some(EditorEvent::Analyzing {
            path: shown.path,
            write_pending: true,
        })
    }

    /// `changes` and `changeAction`: the session review, as the page's API.
    async fn changes_request(&self, req: Request) {
        let Some(changes) = self.changes.clone() else {
            self.reply(Response::error(
                Some(req.id),
                ErrorObject::new(
                    code::INVALID_REQUEST,
                    "the workspace is not watched (ccbridge was started with --no-changes)",
                ),
            ));
            return;
        };
        if req.method == method::CHANGES {
            self.reply(Response::ok_from(req.id, &changes.view()));
            return;
        }
        let p: messages::ChangeActionParams = match req.params() {
            Ok(p) => p,
            Err(e) => {
                self.reply(Response::error(Some(req.id), e));
                return;
            }
        };
        let id = req.id;
        let done = tokio::task::spawn_blocking(move || change_action(&changes, p)).await;
        let response = match done {
            Ok(Ok(v)) => Response::ok(id, v),
            Ok(Err(e)) => Response::error(Some(id), e),
            Err(_) => Response::error(
                Some(id),
                ErrorObject::new(code::INTERNAL_ERROR, "the decision failed"),
            ),
        };
        self.reply(response);
    }

    /// Reports these agents in `initialize` (version 3).
    pub(crate) fn with_agents(mut self, agents: Vec<Offer>) -> Self {
        self.agents = agents;
        self
    }

    /// Each agent offered, with the environment of a terminal that starts
    /// it connected to this editor.
    fn agents_env(&self, port: u16) -> Vec<AgentEnv> {
        let folders = self.engine.workspace_folders();
        self.agents
            .iter()
            .map(|offer| AgentEnv {
                agent: offer.agent,
                env: offer.env(port, &folders),
                args: match offer.agent {
                    AgentKind::Claude => {
                        // Edits ask (so they are reviewed here) in any mode;
                        // the workspace tools, which the editor asks about
                        // itself, are not asked about in the terminal too.
                        let allow: &[&str] = if self.tools.is_some() {
                            &[ccbridge_mcp::registration::PERMISSION_RULE]
                        } else {
                            &[]
                        };
                        vec![
                            "--settings".into(),
                            ccbridge_protocol::lockfile::claude_settings(true, allow).to_string(),
                        ]
                    }
                    _ => Vec::new(),
                },
            })
            .collect()
    }

    /// Reports the tools server in `initialize` (version 2).
    pub(crate) fn with_tools(
        mut self,
        tools: Option<(McpEndpoint, Arc<ccbridge_mcp::tools::Context>)>,
    ) -> Self {
        self.tools = tools;
        self
    }

    /// Serves frames from `reader` until the input ends, the editor asks to
    /// shut down, the output dies, or `stop` resolves (with the reason).
    pub(crate) async fn serve<R: AsyncRead + Unpin>(
        &self,
        reader: &mut FrameReader<R>,
        stop: impl Future<Output = ExitReason>,
    ) -> Result<ExitReason, SidecarError> {
        let mut stop = pin!(stop);
        loop {
            let step = tokio::select! {
                biased;
                reason = &mut stop => Step::Exit(reason),
                () = self.sink.closed() => Step::Exit(ExitReason::OutputClosed),
                step = self.next(reader) => step,
            };
            match step {
                Step::Continue => {}
                Step::Exit(reason) => return Ok(reason),
                Step::Fail(e) => return Err(e),
            }
        }
    }

    /// Reads one frame and handles it completely.
    async fn next<R: AsyncRead + Unpin>(&self, reader: &mut FrameReader<R>) -> Step {
        match reader.read_frame().await {
            Ok(None) => Step::Exit(ExitReason::InputClosed),
            Ok(Some(Frame::Body(body))) => self.body(&body).await,
            Ok(Some(Frame::TooLarge { length, sniffed })) => {
                tracing::warn!(length, "dropped a message over the size limit");
                let error = ErrorObject::invalid_request(format!(
                    "a message of {length} bytes exceeds the limit of {MAX_BODY_BYTES} bytes"
                ));
                match (sniffed.has_method, sniffed.id) {
                    (true, Some(id)) => self.reply(Response::error(Some(id), error)),
                    (false, Some(id)) => {
                        // An answer to one of our requests: fail that request
                        // rather than let it wait for its timeout. Answers
                        // are never answered.
                        self.frontend.complete(
                            &id,
                            Err(ErrorObject::new(
                                code::INTERNAL_ERROR,
                                "the editor's answer exceeds the size limit",
                            )),
                        );
                    }
                    (_, None) => self.reply(Response::error(None, error)),
                }
                Step::Continue
            }
            Err(e) if e.is_recoverable() => {
                tracing::warn!("bad frame from the editor: {e}");
                self.reply(Response::error(None, ErrorObject::parse_error(&e)));
                Step::Continue
            }
            Err(e) => Step::Fail(SidecarError::Input(e)),
        }
    }

    async fn body(&self, body: &[u8]) -> Step {
        if let Some(log) = self.engine.traffic_log() {
            log.record(
                Peer::Editor,
                0,
                Direction::In,
                &String::from_utf8_lossy(body),
            );
        }
        let Ok(text) = std::str::from_utf8(body) else {
            tracing::warn!("a message from the editor is not UTF-8");
            self.reply(Response::error(
                None,
                ErrorObject::parse_error("the message is not UTF-8"),
            ));
            return Step::Continue;
        };
        let step = match Message::parse(text) {
            Ok(Message::Request(r)) => self.request(r).await,
            Ok(Message::Notification(n)) => self.notification(n).await,
            Ok(Message::Response(r)) => {
                self.response(r);
                Step::Continue
            }
            // Never answer an answer: JSON-RPC forbids it, and two peers
            // that both answered malformed answers with errors would loop
            // forever. A malformed answer to one of our requests fails it.
            Err(rejected) if rejected.answer_like => {
                let detail = rejected
                    .response
                    .outcome
                    .err()
                    .map_or_else(String::new, |e| e.message);
                match rejected.response.id {
                    Some(id) => {
                        self.frontend.complete(
                            &id,
                            Err(ErrorObject::new(
                                code::INTERNAL_ERROR,
                                format!("the editor's answer is malformed: {detail}"),
                            )),
                        );
                        tracing::warn!(%id, "malformed answer from the editor: {detail}");
                    }
                    None => tracing::warn!("malformed answer from the editor: {detail}"),
                }
                Step::Continue
            }
            Err(rejected) => {
                tracing::warn!(id = ?rejected.response.id, "invalid message from the editor");
                self.reply(rejected.response);
                Step::Continue
            }
        };
        if body.len() >= ccbridge_server::memory::LARGE_MESSAGE {
            ccbridge_server::memory::large_message_done();
        }
        step
    }

    async fn request(&self, req: Request) -> Step {
        tracing::debug!(method = %req.method, id = %req.id, "request from the editor");
        match req.method.as_str() {
            method::INITIALIZE => self.initialize(req).await,
            method::STATUS => {
                let result = StatusResult {
                    port: self.engine.port(),
                    lock_file: self.lock_file(),
                    clients: self.engine.clients(),
                };
                self.reply(Response::ok_from(req.id, &result));
                Step::Continue
            }
            method::SHUTDOWN => {
                self.reply(Response::ok(req.id, Value::Null));
                Step::Exit(ExitReason::ShutdownRequested)
            }
            method::CHANGES | method::CHANGE_ACTION => {
                self.changes_request(req).await;
                Step::Continue
            }
            other => {
                self.reply(Response::error(
                    Some(req.id),
                    ErrorObject::method_not_found(other),
                ));
                Step::Continue
            }
        }
    }

    /// Answers once the lock file says what `initialize` asked for, so an
    /// editor (or Claude) reading it right after the answer sees the new
    /// workspace; a lock file that cannot be rewritten is an error.
    async fn initialize(&self, req: Request) -> Step {
        let params: InitializeParams = match req.params() {
            Ok(p) => p,
            Err(e) => {
                self.reply(Response::error(Some(req.id), e));
                return Step::Continue;
            }
        };
        let version = params.protocol_version.unwrap_or(PROTOCOL_VERSION);
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
            let e = ErrorObject::invalid_params(format!(
                "protocolVersion {version} is not supported; this ccbridge speaks {SUPPORTED_PROTOCOL_VERSIONS:?}"
            ))
            .with_data(json!({ "supported": SUPPORTED_PROTOCOL_VERSIONS }));
            self.reply(Response::error(Some(req.id), e));
            return Step::Continue;
        }
        if let Some(folders) = &params.workspace_folders {
            if let Err(e) = check_folders(folders) {
                self.reply(Response::error(
                    Some(req.id),
                    ErrorObject::invalid_params(e),
                ));
                return Step::Continue;
            }
        }
        self.version.store(version, Ordering::Relaxed);
        // What a repeated `initialize` leaves out keeps its value, as the
        // capabilities and the approval mode do.
        if let Some(wanted) = params.changes {
            self.changes_wanted
                .store(wanted && self.changes.is_some(), Ordering::Relaxed);
        }
        if let Some(caps) = params.capabilities.clone() {
            self.frontend.set_capabilities(caps);
        }
        let diagnostics = match &self.analysis {
            Some(a) => {
                if let Some(source) = params.diagnostics {
                    a.set_source(source);
                }
                a.source()
            }
            None => messages::DiagnosticsSource::Editor,
        };
        if let Some(event) = params.workspace_event() {
            match self.engine.apply(event).await {
                Ok(()) => {}
                Err(ApplyError::Gone(_)) => {
                    self.reply(Response::error(
                        Some(req.id),
                        ErrorObject::new(code::INTERNAL_ERROR, "the engine has stopped"),
                    ));
                    return Step::Exit(ExitReason::EngineStopped);
                }
                Err(e) => {
                    tracing::error!("initialize: {e}");
                    self.reply(Response::error(
                        Some(req.id),
                        ErrorObject::new(code::INTERNAL_ERROR, e.to_string()),
                    ));
                    return Step::Continue;
                }
            }
        }
        let port = self.engine.port();
        let result = InitializeResult {
            protocol_version: version,
            server_info: self.server_info.clone(),
            port,
            lock_file: self.lock_file(),
            env: if self.agents.iter().any(|o| o.agent == AgentKind::Claude) {
                claude_env(port)
            } else {
                Default::default()
            },
            tools: if version >= 2 {
                self.update_tools(&params)
            } else {
                None
            },
            agents: if version >= 3 {
                self.agents_env(port)
            } else {
                Vec::new()
            },
            diagnostics: (version >= 3).then_some(diagnostics),
        };
        self.reply(Response::ok_from(req.id, &result));
        Step::Continue
    }

    /// Applies `initialize`'s approval mode and workspace folders to the
    /// tools; returns the endpoint as it now is.
    fn update_tools(&self, params: &InitializeParams) -> Option<ToolsEndpoint> {
        let (endpoint, ctx) = self.tools.as_ref()?;
        if let Some(mode) = params.approval_mode {
            ctx.set_approval(mode);
        }
        if let Some(folders) = &params.workspace_folders {
            self.tools_follow(folders);
        }
        Some(ToolsEndpoint {
            endpoint: endpoint.clone(),
            approval_mode: ctx.approval(),
        })
    }

    /// Moves the workspace tools to the editor's new folders.
    fn tools_follow(&self, folders: &[String]) {
        let Some((_, ctx)) = &self.tools else { return };
        let paths: Vec<PathBuf> = folders.iter().map(PathBuf::from).collect();
        match ccbridge_mcp::launch::open_workspace(&paths) {
            Ok(ws) => ctx.set_workspace(Arc::new(ws)),
            Err(e) => tracing::warn!("the workspace tools keep their folders: {e}"),
        }
    }

    async fn notification(&self, n: Notification) -> Step {
        let checked: Checked = match n.method.as_str() {
            method::SELECTION_CHANGED => params::<messages::SelectionChangedParams>(&n)
                .and_then(|p| p.into_event())
                .into(),
            method::OPEN_EDITORS_CHANGED => {
                match params::<messages::OpenEditorsChangedParams>(&n) {
                    Ok(p) => p.check(),
                    Err(e) => Checked::from(Err(e)),
                }
            }
            method::DIAGNOSTICS_CHANGED => match params::<messages::DiagnosticsChangedParams>(&n) {
                Ok(p) => p.check(),
                Err(e) => Checked::from(Err(e)),
            },
            method::DIAGNOSTICS_CLEARED => Ok(EditorEvent::ClearDiagnostics).into(),
            method::DOCUMENT_DIRTY_CHANGED => params::<messages::DocumentDirtyChangedParams>(&n)
                .and_then(|p| p.into_event())
                .into(),
            method::AT_MENTIONED => params::<messages::AtMentionedParams>(&n)
                .and_then(messages::at_mention_event)
                .into(),
            method::WORKSPACE_CHANGED => params::<messages::WorkspaceChangedParams>(&n)
                .and_then(|p| {
                    let folders = p.workspace_folders.clone();
                    let event = p.into_event()?;
                    if let Some(f) = folders {
                        self.tools_follow(&f);
                    }
                    Ok(event)
                })
                .into(),
            method::DIFF_RESOLVED => match params::<messages::DiffResolvedParams>(&n) {
                Ok(p) => {
                    self.mark_reviewed(&p);
                    if let Some(e) = self.write_pending(&p) {
                        if self.engine.send(e).await.is_err() {
                            return Step::Exit(ExitReason::EngineStopped);
                        }
                    }
                    Ok(p.into_event()).into()
                }
                Err(e) => Checked::from(Err(e)),
            },
            // LSP's own notifications (`$/cancelRequest`, ...) are not ours
            // to judge.
            other if other.starts_with("$/") => {
                tracing::debug!(method = other, "ignoring an LSP notification");
                return Step::Continue;
            }
            other => {
                tracing::debug!(method = other, "unknown notification");
                Checked::from(Err(format!(
                    "unknown notification (this ccbridge speaks editor protocol {PROTOCOL_VERSION})"
                )))
            }
        };
        let Checked {
            mut event,
            mut problems,
        } = checked;
        if let Some(a) = &self.analysis {
            match &event {
                Some(EditorEvent::Selection(Some(s))) => a.involve(&s.file_path),
                Some(EditorEvent::Diagnostics { path, .. }) if !a.editor_reported(path) => {
                    // `diagnostics: "ccbridge"`: the servers' reports stand.
                    event = None;
                }
                Some(EditorEvent::ClearDiagnostics) if !a.editor_cleared() => event = None,
                _ => {}
            }
        }
        let partial = event.is_some();
        if let Some(event) = event {
            // Events whose outcome the editor may want to hear about are
            // applied and awaited; the rest only queued, in order.
            let wants_outcome = matches!(
                event,
                EditorEvent::Workspace { .. } | EditorEvent::DiffResolved { .. }
            );
            let outcome = if wants_outcome {
                self.engine.apply(event).await
            } else {
                self.engine.send(event).await.map_err(ApplyError::from)
            };
            match outcome {
                Ok(()) => tracing::trace!(method = %n.method, "notification from the editor"),
                Err(ApplyError::Gone(_)) => return Step::Exit(ExitReason::EngineStopped),
                Err(e) => problems.push(e.to_string()),
            }
        }
        if !problems.is_empty() {
            self.invalid_notification(&n.method, problems.join("; "), partial);
        }
        Step::Continue
    }

    /// Tells the editor what was wrong with one of its notifications: once,
    /// in the log, and (protocol 2) as `invalidNotification`.
    fn invalid_notification(&self, method: &str, message: String, partial: bool) {
        tracing::warn!(%method, "a notification from the editor was not (fully) used: {message}");
        if self.version.load(Ordering::Relaxed) < 2 {
            return;
        }
        let params = messages::InvalidNotificationParams {
            method: method.to_owned(),
            message,
            partial,
        };
        let note = Notification::with_params(method::INVALID_NOTIFICATION, &params);
        if let Err(e) = self.sink.send(Message::from(note).to_json()) {
            tracing::debug!("cannot tell the editor: {e}");
        }
    }

    fn response(&self, r: Response) {
        let Some(id) = r.id else {
            // An error about something we sent that the editor could not
            // read (its `id` unknown to it).
            if let Err(e) = &r.outcome {
                tracing::warn!(code = e.code, "the editor reported an error: {}", e.message);
            }
            return;
        };
        if let Err(e) = &r.outcome {
            if !is_ours(&id) {
                // An error about something we sent, e.g. the editor could
                // not parse a frame; its id (if any) is not one of ours.
                tracing::warn!(code = e.code, "the editor reported an error: {}", e.message);
                return;
            }
        }
        if !self.frontend.complete(&id, r.outcome) {
            tracing::debug!(%id, "an answer nobody waits for (late or unknown id)");
        }
    }

    fn lock_file(&self) -> Option<String> {
        self.engine
            .lock_path()
            .map(|p| p.to_string_lossy().into_owned())
    }

    fn reply(&self, response: Response) {
        if let Err(e) = self.sink.send(response.to_json()) {
            tracing::debug!("cannot answer the editor: {e}");
        }
    }
}

/// Carries out one decision in the session review; errors as JSON-RPC
/// errors (a refused revert carries the three versions in `data`).
fn change_action(
    changes: &ccbridge_changes::Changes,
    p: messages::ChangeActionParams,
) -> Result<Value, ErrorObject> {
    use ccbridge_changes::{ChangeError, DecideError};
    match changes.decide(&p.action, p.decision) {
        Ok(failed) => Ok(json!({ "failed": failed })),
        Err(e) => {
            let msg = e.to_string();
            Err(match e {
                DecideError::Change(ChangeError::Conflict(c)) => {
                    ErrorObject::invalid_params(msg).with_data(json!({ "conflict": c }))
                }
                DecideError::Change(ChangeError::Stale(_)) => {
                    ErrorObject::invalid_params(msg).with_data(json!({ "stale": true }))
                }
                _ => ErrorObject::invalid_params(msg),
            })
        }
    }
}

/// Our requests use integer ids; anything else cannot be an answer to one.
fn is_ours(id: &RequestId) -> bool {
    matches!(id, RequestId::Number(n) if *n > 0)
}

fn params<P: DeserializeOwned>(n: &Notification) -> Result<P, String> {
    n.params().map_err(|e| e.message)
}

#[cfg(test)]
mod tests;
