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
use crate::diffs::{ConnId, DiffRegistry};
use crate::frontend::{ClientInfo, CloseReason, DiffId, EditorEvent, Frontend, FrontendError};
use crate::handshake::{self, Policy};
use crate::lockfile::{self, LockError, LockGuard};
use crate::refusals::{AuthThrottle, RefusalLog, SUMMARY_PERIOD};
use crate::sessions::Sessions;
use crate::state::EditorState;
use crate::token::{AuthToken, RandomError};
use crate::traffic::TrafficLog;
use ccbridge_protocol::lockfile::{LockFile, ServerProcess};
use ccbridge_protocol::notifications::SelectionChanged;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
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

/// State shared by the accept loop, the connections, the tools and the
/// editor-event loop.
pub(crate) struct Shared {
    pub config: Config,
    pub token: AuthToken,
    pub port: u16,
    pub frontend: Arc<dyn Frontend>,
    pub state: Mutex<EditorState>,
    pub diffs: Mutex<DiffRegistry>,
    pub sessions: Mutex<Sessions>,
    pub lock: Mutex<Option<LockGuard>>,
    pub shutdown: watch::Sender<bool>,
    /// `tools/call` tasks that have not yet sent their answer.
    pub calls_in_flight: std::sync::atomic::AtomicUsize,
    pub calls_done: tokio::sync::Notify,
    /// `tools/list` results, serialized once: `[without, with]` executeCode.
    pub tools_list_json: [std::sync::OnceLock<Arc<str>>; 2],
    /// This process, recorded in the lock file so a lock left behind by a
    /// killed ccbridge is known to be stale even while the editor lives.
    server_process: ServerProcess,
    /// Delays for repeated authentication failures.
    throttle: AuthThrottle,
    /// Refused upgrades, summarised in the log.
    refusals: RefusalLog,
    /// `--log-traffic`.
    pub traffic: Option<Arc<TrafficLog>>,
    next_conn: AtomicU64,
}

/// Locks a mutex, recovering from poisoning: the data stays consistent
/// because no critical section here can panic halfway through an update.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub fn next_conn(&self) -> ConnId {
        self.next_conn.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Runs an editor request under the configured timeout.
    pub async fn editor<T>(
        &self,
        fut: impl Future<Output = Result<T, FrontendError>>,
    ) -> Result<T, FrontendError> {
        tokio::time::timeout(self.config.frontend_timeout, fut)
            .await
            .unwrap_or(Err(FrontendError::Timeout))
    }

    /// Closes editor views without waiting for the editor.
    pub fn close_views(self: &Arc<Self>, ids: Vec<(DiffId, CloseReason)>) {
        for (id, reason) in ids {
            let shared = self.clone();
            tokio::spawn(async move {
                if let Err(e) = shared.editor(shared.frontend.close_diff(id, reason)).await {
                    tracing::warn!(%id, "the editor could not close a diff view: {e}");
                }
            });
        }
    }

    fn lock_contents(&self) -> LockFile {
        let s = lock(&self.state);
        let mut l = LockFile::new(
            s.pid,
            s.workspace_folders.clone(),
            s.ide_name.clone(),
            self.token.expose().to_owned(),
        );
        l.server_process = Some(self.server_process);
        l
    }

    fn rewrite_lock(&self) -> Result<(), LockError> {
        let contents = self.lock_contents();
        match lock(&self.lock).as_ref() {
            Some(g) => g.update(&contents),
            None => Ok(()),
        }
    }

    /// Makes `conn` ready: replays the latest selection, then the queued
    /// at-mentions, to it alone.
    pub fn make_ready(&self, conn: ConnId) {
        let selection = lock(&self.state).latest.clone();
        let mut sessions = lock(&self.sessions);
        if let Some((tx, mentions)) =
            sessions.make_ready(conn, Instant::now(), self.config.at_mention_max_age)
        {
            let notes = selection
                .map(|s| SelectionChanged::from(&s).into_notification())
                .into_iter()
                .chain(mentions.into_iter().map(|m| m.into_notification()));
            for n in notes {
                tracing::debug!(conn, method = %n.method, "notification replayed");
                let text = ccbridge_protocol::jsonrpc::Message::Notification(n).to_json();
                let _ = tx.try_send(crate::sessions::Outbound::Text(text));
            }
            tracing::debug!(conn, "client ready for notifications");
        }
        let announce = sessions.announce(conn);
        drop(sessions);
        if let Some(info) = announce {
            self.frontend.client_connected(&info);
        }
    }

    /// A connection ended: forget it and settle its diffs.
    pub fn disconnected(self: &Arc<Self>, conn: ConnId) {
        let gone = lock(&self.sessions).remove(conn);
        let ids = lock(&self.diffs).close_all(Some(conn), CloseReason::Disconnected);
        self.close_views(ids);
        if let Some((info, announced)) = gone {
            tracing::info!(client = info.id.0, "Claude Code session disconnected");
            if announced {
                self.frontend.client_disconnected(info.id);
            }
        }
    }
}

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
        let shared = Arc::new(Shared {
            config,
            token,
            port: local.port(),
            frontend,
            state: Mutex::new(state),
            diffs: Mutex::new(DiffRegistry::default()),
            sessions: Mutex::new(Sessions::default()),
            lock: Mutex::new(None),
            shutdown: watch::channel(false).0,
            calls_in_flight: Default::default(),
            calls_done: Default::default(),
            tools_list_json: Default::default(),
            server_process: ccbridge_client::discovery::this_server_process(),
            throttle: AuthThrottle::default(),
            refusals: RefusalLog::new(Instant::now()),
            traffic,
            next_conn: AtomicU64::new(0),
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
        let ids = lock(&shared.diffs).close_all(None, CloseReason::Shutdown);
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
            let _ = shared.editor(shared.frontend.close_diff(id, reason)).await;
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

    pub fn lock_path(&self) -> Option<PathBuf> {
        lock(&self.shared.lock)
            .as_ref()
            .map(|g| g.path().to_owned())
    }

    pub fn clients(&self) -> Vec<ClientInfo> {
        lock(&self.shared.sessions).infos()
    }

    /// Every file's diagnostics as the editor last reported them.
    pub fn diagnostics(&self) -> Vec<ccbridge_protocol::editor::FileDiagnostics> {
        lock(&self.shared.state).all_diagnostics()
    }

    /// The workspace folders, as the lock file advertises them.
    pub fn workspace_folders(&self) -> Vec<String> {
        lock(&self.shared.state).workspace_folders.clone()
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
    let Some(sel) = lock(&shared.state).current.clone() else {
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
        EditorEvent::Selection(s) => lock(&shared.state).set_selection(s),
        EditorEvent::OpenEditors(tabs) => lock(&shared.state).set_tabs(tabs),
        EditorEvent::Diagnostics { path, diagnostics } => {
            lock(&shared.state).set_diagnostics(&path, diagnostics);
            shared.frontend.diagnostics_changed();
        }
        EditorEvent::ClearDiagnostics => {
            lock(&shared.state).clear_diagnostics();
            shared.frontend.diagnostics_changed();
        }
        EditorEvent::Dirty { path, is_dirty } => lock(&shared.state).set_dirty(&path, is_dirty),
        EditorEvent::AtMention(m) => {
            lock(&shared.sessions).mention(m, Instant::now(), shared.config.at_mention_queue_len)
        }
        EditorEvent::Workspace {
            folders,
            ide_name,
            pid,
        } => {
            {
                let mut s = lock(&shared.state);
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
            if !lock(&shared.diffs).resolve(id, decision) {
                return Err(ApplyError::DiffNotOpen(id));
            }
        }
    }
    Ok(())
}
