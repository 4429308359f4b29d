//! The server: binding, the accept loop, the editor-event loop, the lock
//! file's life, and orderly shutdown.
//!
//! `Server::bind` → `Server::handle` (for editor events) → `Server::run(shutdown)`.
//! `run` sweeps stale lock files, writes its own, accepts connections until
//! `shutdown` resolves, then closes every connection, settles every diff and
//! removes the lock file before returning — also when it returns early with
//! an error, because the lock file lives in a drop guard.

use crate::config::Config;
use crate::connection;
use crate::frontend::{ClientInfo, CloseReason, DiffId, EditorEvent, Frontend};
use crate::handshake::{self, Policy};
use crate::ide::lock;
use crate::ide::Ide;
use crate::lockfile::{self, LockError, LockGuard};
use crate::refusals::{AuthThrottle, RefusalLog, SUMMARY_PERIOD};
use crate::sessions::Sessions;
pub(crate) use crate::shared::Shared;
use crate::state::EditorState;
use crate::token::{AuthToken, RandomError};
use crate::traffic::TrafficLog;

use ccbridge_protocol::notifications::SelectionChanged;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

/// Upgrade requests being read at once. A newcomer beyond this abandons
/// the oldest pending one (see [`PendingHandshakes`]).
const MAX_PENDING_HANDSHAKES: usize = 64;

/// The handshakes in progress, oldest first. When every slot is taken, the
/// oldest is abandoned for the newcomer rather than the newcomer refused:
/// otherwise a few dozen idle sockets (any local user can open them) would
/// lock the real client out for as long as they are renewed. A client that
/// sends its request at once, as the CLI does, always gets through.
#[derive(Default)]
struct PendingHandshakes {
    next: u64,
    queue: std::collections::VecDeque<(u64, oneshot::Sender<()>)>,
}

/// One pending handshake's place in [`PendingHandshakes`]; freed on drop.
struct HandshakeSlot {
    pending: Arc<Mutex<PendingHandshakes>>,
    id: u64,
}

impl HandshakeSlot {
    /// Takes a slot, abandoning the oldest handshake if all are taken. The
    /// receiver fires when this one is abandoned in turn.
    fn take(
        pending: &Arc<Mutex<PendingHandshakes>>,
        refusals: &RefusalLog,
    ) -> (HandshakeSlot, oneshot::Receiver<()>) {
        let mut p = lock(pending);
        if p.queue.len() >= MAX_PENDING_HANDSHAKES {
            if let Some((_, abandon)) = p.queue.pop_front() {
                refusals.abandoned();
                let _ = abandon.send(());
            }
        }
        p.next += 1;
        let id = p.next;
        let (tx, rx) = oneshot::channel();
        p.queue.push_back((id, tx));
        let slot = HandshakeSlot {
            pending: pending.clone(),
            id,
        };
        (slot, rx)
    }
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        lock(&self.pending).queue.retain(|(id, _)| *id != self.id);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("refusing to listen on {0}: only loopback addresses are allowed")]
    NotLoopback(SocketAddr),
    #[error("port {0} is outside 10000-65535")]
    PortRange(u16),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Random(#[from] RandomError),
    #[error("cannot open the traffic log {}: {error}", path.display())]
    TrafficLog {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// The engine has stopped; events can no longer be delivered.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the ccbridge engine has stopped")]
pub struct EngineGone;

/// Why an editor event sent with [`EngineHandle::apply`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Gone(#[from] EngineGone),
    /// The workspace changed in memory, but the lock file on disk could not
    /// follow: Claude still sees the previous workspace.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A verdict for a diff that is not open: Claude closed it already (it
    /// answered in the terminal, or moved on), or it was never shown.
    #[error("{0} is not open (Claude already closed it, or it was never shown); the verdict was dropped")]
    DiffNotOpen(DiffId),
}

/// An editor event, and who waits to hear it was applied.
type Inbound = (EditorEvent, Option<oneshot::Sender<Result<(), ApplyError>>>);

/// A bound server that is not yet serving.
pub struct Server {
    shared: Arc<Shared>,
    listener: TcpListener,
    events: mpsc::Sender<Inbound>,
}

/// The editor's side of a running engine: send it events, read its status.
#[derive(Clone)]
pub struct EngineHandle {
    shared: Arc<Shared>,
    events: mpsc::Sender<Inbound>,
}

impl Server {
    /// Binds `127.0.0.1` on `config.port` or an OS-assigned port.
    pub async fn bind(config: Config, frontend: Arc<dyn Frontend>) -> Result<Server, ServerError> {
        if let Some(p) = config.port {
            if p < 10000 {
                return Err(ServerError::PortRange(p));
            }
        }
        let addr = SocketAddr::from(([127, 0, 0, 1], config.port.unwrap_or(0)));
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|error| ServerError::Bind { addr, error })?;
        Self::with_listener(listener, config, frontend)
    }

    /// Serves an already bound listener, which must be on a loopback address.
    pub fn with_listener(
        listener: TcpListener,
        config: Config,
        frontend: Arc<dyn Frontend>,
    ) -> Result<Server, ServerError> {
        let local = listener.local_addr().map_err(|error| ServerError::Bind {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            error,
        })?;
        if !local.ip().is_loopback() {
            return Err(ServerError::NotLoopback(local));
        }
        let token = AuthToken::generate()?;
        let traffic = match &config.traffic_log {
            Some(path) => Some(Arc::new(TrafficLog::open(path, token.expose()).map_err(
                |error| ServerError::TrafficLog {
                    path: path.clone(),
                    error,
                },
            )?)),
            None => None,
        };
        let mut state = EditorState::default();
        state.workspace_folders = config.workspace_folders.clone();
        state.ide_name = config.ide_name.clone();
        state.pid = config.pid;
        let (events, rx) = mpsc::channel(1024);
        let ide = Arc::new(Ide::new(frontend, state, config.frontend_timeout));
        let shared = Arc::new(Shared {
            config,
            token,
            port: local.port(),
            ide,
            sessions: Mutex::new(Sessions::default()),
            lock: Mutex::new(None),
            shutdown: watch::channel(false).0,
            calls_in_flight: Default::default(),
            calls_done: Default::default(),
            server_process: ccbridge_discovery::this_server_process(),
            throttle: AuthThrottle::default(),
            refusals: RefusalLog::new(Instant::now()),
            traffic,
            next_conn: AtomicU64::new(0),
            mirrors: Mutex::default(),
            tools: Mutex::new(None),
            page: Mutex::new(None),
        });
        tokio::spawn(event_loop(shared.clone(), rx));
        Ok(Server {
            shared,
            listener,
            events,
        })
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// The token clients must present. For embedding and tests; it is also
    /// in the lock file.
    pub fn token(&self) -> &str {
        self.shared.token.expose()
    }

    pub fn handle(&self) -> EngineHandle {
        EngineHandle {
            shared: self.shared.clone(),
            events: self.events.clone(),
        }
    }

    /// Writes this server's lock file, so Claude can find it, then sweeps
    /// other servers' stale lock files in the background (a hostile lock
    /// directory can never delay start-up). Idempotent; [`Server::run`]
    /// calls it if nobody did. Must be called within a tokio runtime.
    /// Returns the lock file's path (`None` without a lock directory).
    pub fn publish(&self) -> Result<Option<PathBuf>, ServerError> {
        let shared = &self.shared;
        let Some(dir) = &shared.config.lock_dir else {
            return Ok(None);
        };
        let mut slot = lock(&shared.lock);
        if let Some(g) = slot.as_ref() {
            return Ok(Some(g.path().to_owned()));
        }
        let guard = LockGuard::create(dir, shared.port, &shared.lock_contents())?;
        tracing::info!(port = shared.port, lock = %guard.path().display(), "lock file written");
        let path = guard.path().to_owned();
        *slot = Some(guard);
        tokio::spawn(lockfile::sweep_stale(dir.clone()));
        Ok(Some(path))
    }

    /// Serves until `shutdown` resolves, then settles every pending diff
    /// (so waiting `openDiff` calls are answered `DIFF_REJECTED`), closes
    /// every connection with 1001 and removes the lock file.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServerError> {
        self.publish()?;
        let shared = self.shared;
        tracing::info!(port = shared.port, "listening");
        let handshakes = Arc::new(Mutex::new(PendingHandshakes::default()));
        let mut connections = tokio::task::JoinSet::new();
        let mut summaries = tokio::time::interval(SUMMARY_PERIOD);
        summaries.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = summaries.tick() => shared.refusals.summarise(Instant::now(), false),
                accepted = self.listener.accept() => {
                    let (stream, peer) = match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            // EMFILE and friends: back off instead of spinning.
                            tracing::warn!("accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    tracing::trace!(%peer, "connection accepted");
                    let (slot, abandoned) = HandshakeSlot::take(&handshakes, &shared.refusals);
                    let _ = stream.set_nodelay(true);
                    connections.spawn(accept_one(shared.clone(), stream, peer.ip(), slot, abandoned));
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        let ids = lock(&shared.ide.diffs).close_all(None, CloseReason::Shutdown);
        // Let the settled calls answer before their connections close.
        let answered = async {
            loop {
                let notified = shared.calls_done.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if shared.calls_in_flight.load(Ordering::SeqCst) == 0 {
                    break;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(Duration::from_millis(500), answered).await;
        let _ = shared.shutdown.send(true);
        for (id, reason) in ids {
            let _ = shared
                .ide
                .editor(shared.ide.frontend.close_diff(id, reason))
                .await;
        }
        let drain = async { while connections.join_next().await.is_some() {} };
        if tokio::time::timeout(Duration::from_secs(2), drain)
            .await
            .is_err()
        {
            connections.abort_all();
        }
        lock(&shared.lock).take();
        shared.refusals.summarise(Instant::now(), true);
        tracing::info!("stopped");
        Ok(())
    }
}

async fn accept_one(
    shared: Arc<Shared>,
    mut stream: tokio::net::TcpStream,
    source: std::net::IpAddr,
    slot: HandshakeSlot,
    abandoned: oneshot::Receiver<()>,
) {
    let policy = Policy {
        token: &shared.token,
        allowed_hosts: &shared.config.allowed_hosts,
    };
    // Decided at once; answered after a delay when this source keeps failing.
    let delay = |r: &handshake::Rejection| {
        if AuthThrottle::counts(r) {
            shared.throttle.failed(source, Instant::now())
        } else {
            Duration::ZERO
        }
    };
    let timeout = shared.config.handshake_timeout;
    let upgraded = tokio::select! {
        u = handshake::perform_with_delay(&mut stream, &policy, timeout, delay) => u,
        _ = abandoned => {
            tracing::debug!("handshake abandoned for a newer connection");
            return;
        }
    };
    drop(slot);
    let upgraded = match upgraded {
        Ok(u) => u,
        Err(e @ handshake::HandshakeError::Rejected(_)) => {
            shared.refusals.refused(e.to_string());
            return;
        }
        Err(e) => {
            // Port probes (`ccbridge list`, the CLI's liveness check) end here.
            tracing::debug!("handshake abandoned: {e}");
            return;
        }
    };
    let ws = WebSocketStream::from_partially_read(
        stream,
        upgraded.leftover,
        Role::Server,
        Some(crate::socket::config(shared.config.max_message_size)),
    )
    .await;
    connection::serve(shared, ws).await;
}

impl EngineHandle {
    /// Delivers an editor event; events are applied in the order sent.
    pub async fn send(&self, event: EditorEvent) -> Result<(), EngineGone> {
        self.events
            .send((event, None))
            .await
            .map_err(|_| EngineGone)
    }

    /// Delivers an editor event, in order with [`Self::send`], and returns
    /// once it has been applied: for [`EditorEvent::Workspace`], once the
    /// lock file on disk says so (or could not be rewritten).
    pub async fn apply(&self, event: EditorEvent) -> Result<(), ApplyError> {
        let (done, applied) = oneshot::channel();
        self.events
            .send((event, Some(done)))
            .await
            .map_err(|_| EngineGone)?;
        applied.await.map_err(|_| EngineGone)?
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// Records where the workspace tools are served in the lock file (for
    /// `ccbridge mcp-config`), rewriting it at once.
    pub fn advertise_tools(
        &self,
        tools: Option<ccbridge_protocol::lockfile::McpEndpoint>,
    ) -> Result<(), LockError> {
        *lock(&self.shared.tools) = tools;
        self.shared.rewrite_lock()
    }

    /// Records the review page and its link-making token in the lock file
    /// (for `ccbridge link`), rewriting it at once.
    pub fn advertise_page(
        &self,
        page: Option<ccbridge_protocol::lockfile::PageLink>,
    ) -> Result<(), LockError> {
        *lock(&self.shared.page) = page;
        self.shared.rewrite_lock()
    }

    /// What the lock file says now (or would say, without one).
    pub fn lock_contents(&self) -> ccbridge_protocol::lockfile::LockFile {
        self.shared.lock_contents()
    }

    /// Rewrites `mirror` whenever the lock file is rewritten (the editor
    /// changed the workspace, its name or pid), before the change is
    /// acknowledged, until [`Self::remove_lock_mirror`].
    pub fn add_lock_mirror(&self, mirror: Arc<dyn crate::lockfile::LockMirror>) {
        lock(&self.shared.mirrors).push(mirror);
    }

    pub fn remove_lock_mirror(&self, mirror: &Arc<dyn crate::lockfile::LockMirror>) {
        lock(&self.shared.mirrors).retain(|m| !Arc::ptr_eq(m, mirror));
    }

    pub(crate) fn ide(&self) -> &Arc<Ide> {
        &self.shared.ide
    }

    /// A fresh connection id (also a session's [`crate::ClientId`]).
    pub(crate) fn next_conn(&self) -> crate::diffs::ConnId {
        self.shared.next_conn()
    }

    pub fn lock_path(&self) -> Option<PathBuf> {
        lock(&self.shared.lock)
            .as_ref()
            .map(|g| g.path().to_owned())
    }

    /// The connected agent sessions: Claude Code's on the WebSocket
    /// server, then the others' ([`Self::agent_session`]).
    pub fn clients(&self) -> Vec<ClientInfo> {
        clients_of(&self.shared)
    }

    /// [`clients`](Self::clients), to be asked later by something that
    /// outlives requests (the session review's watcher) without keeping
    /// the engine alive: empty once it is gone.
    pub fn clients_later(&self) -> impl Fn() -> Vec<ClientInfo> + Send + Sync + 'static {
        let shared = Arc::downgrade(&self.shared);
        move || shared.upgrade().map_or_else(Vec::new, |s| clients_of(&s))
    }

    /// Every file's diagnostics as the editor last reported them.
    pub fn diagnostics(&self) -> Vec<ccbridge_protocol::editor::FileDiagnostics> {
        lock(&self.shared.ide.state).all_diagnostics()
    }

    /// The diagnostics of the texts proposed in open reviews, by file path
    /// (see `EditorEvent::ProposedDiagnostics`).
    pub fn proposed_diagnostics(&self) -> Vec<ccbridge_protocol::editor::FileDiagnostics> {
        lock(&self.shared.ide.state).proposed_diagnostics()
    }

    /// The workspace folders, as the lock file advertises them.
    pub fn workspace_folders(&self) -> Vec<String> {
        lock(&self.shared.ide.state).workspace_folders.clone()
    }

    /// The traffic log, when `Config::traffic_log` asked for one: a
    /// frontend logs its own side of the conversation there too.
    pub fn traffic_log(&self) -> Option<Arc<TrafficLog>> {
        self.shared.traffic.clone()
    }

    /// Serves one already upgraded WebSocket, e.g. an in-memory pair in
    /// tests. The handshake and its checks are the caller's business.
    pub async fn serve_websocket<S>(&self, ws: WebSocketStream<S>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        connection::serve(self.shared.clone(), ws).await
    }

    /// The engine's WebSocket limits, for callers of [`Self::serve_websocket`].
    pub fn websocket_config(&self) -> WebSocketConfig {
        crate::socket::config(self.shared.config.max_message_size)
    }
}

/// Applies editor events in order and debounces selections.
async fn event_loop(shared: Arc<Shared>, mut rx: mpsc::Receiver<Inbound>) {
    let debounce = shared.config.selection_debounce;
    let mut shutdown = shared.shutdown.subscribe();
    // (deadline, first pending moment): trailing debounce, capped at 5x.
    let mut pending: Option<(Instant, Instant)> = None;
    let mut last_sent: Option<SelectionChanged> = None;
    loop {
        let deadline = pending.map(|(d, _)| d);
        tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            _ = sleep_until_opt(deadline) => {
                pending = None;
                flush_selection(&shared, &mut last_sent);
            }
            ev = rx.recv() => {
                let Some((ev, done)) = ev else { break };
                let is_selection = matches!(ev, EditorEvent::Selection(_));
                let result = apply(&shared, ev);
                match (done, result) {
                    (Some(done), result) => {
                        let _ = done.send(result);
                    }
                    (None, Err(e @ ApplyError::DiffNotOpen(_))) => tracing::debug!("{e}"),
                    (None, Err(e)) => tracing::error!("{e}"),
                    (None, Ok(())) => {}
                }
                if is_selection {
                    if debounce.is_zero() {
                        flush_selection(&shared, &mut last_sent);
                    } else {
                        let now = Instant::now();
                        let first = pending.map_or(now, |(_, f)| f);
                        let cap = first + debounce * 5;
                        pending = Some(((now + debounce).min(cap), first));
                    }
                }
            }
        }
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

fn flush_selection(shared: &Shared, last_sent: &mut Option<SelectionChanged>) {
    let Some(sel) = lock(&shared.ide.state).current.clone() else {
        return;
    };
    let params = SelectionChanged::from(&sel);
    if last_sent.as_ref() == Some(&params) {
        return;
    }
    lock(&shared.sessions).broadcast(&params.clone().into_notification());
    *last_sent = Some(params);
}

fn apply(shared: &Arc<Shared>, ev: EditorEvent) -> Result<(), ApplyError> {
    match ev {
        EditorEvent::Selection(s) => {
            lock(&shared.ide.state).set_selection(s);
            shared.ide.context_rev.send_modify(|n| *n += 1);
        }
        EditorEvent::OpenEditors(tabs) => {
            lock(&shared.ide.state).set_tabs(tabs);
            shared.ide.context_rev.send_modify(|n| *n += 1);
        }
        EditorEvent::Diagnostics { path, diagnostics } => {
            lock(&shared.ide.state).set_diagnostics(&path, diagnostics);
            shared.ide.diagnostics_changed();
        }
        EditorEvent::ProposedDiagnostics { path, diagnostics } => {
            lock(&shared.ide.state).set_proposed_diagnostics(&path, diagnostics);
            shared.ide.diagnostics_changed();
        }
        EditorEvent::ClearDiagnostics => {
            lock(&shared.ide.state).clear_diagnostics();
            shared.ide.diagnostics_changed();
        }
        EditorEvent::Analyzing {
            path,
            write_pending,
        } => lock(&shared.ide.state).set_analyzing(&path, write_pending),
        EditorEvent::Dirty { path, is_dirty } => lock(&shared.ide.state).set_dirty(&path, is_dirty),
        EditorEvent::AtMention(m) => {
            lock(&shared.sessions).mention(m, Instant::now(), shared.config.at_mention_queue_len)
        }
        EditorEvent::Workspace {
            folders,
            ide_name,
            pid,
        } => {
            {
                let mut s = lock(&shared.ide.state);
                if let Some(f) = folders {
                    s.workspace_folders = f;
                }
                if let Some(n) = ide_name {
                    s.ide_name = n;
                }
                if let Some(p) = pid {
                    s.pid = p;
                }
            }
            shared.rewrite_lock()?;
        }
        EditorEvent::DiffResolved { id, decision } => {
            if !lock(&shared.ide.diffs).resolve(id, decision) {
                return Err(ApplyError::DiffNotOpen(id));
            }
        }
    }
    Ok(())
}

/// See [`EngineHandle::clients`].
fn clients_of(shared: &Shared) -> Vec<ClientInfo> {
    let mut all = lock(&shared.sessions).infos();
    all.extend(lock(&shared.ide.agent_sessions).values().cloned());
    all
}
