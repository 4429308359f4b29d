//! A cap on MCP sessions, around rmcp's in-memory session manager.
//!
//! rmcp's `LocalSessionManager` keeps every session until it is idle for
//! its `keep_alive`, however many there are: 5,000 `initialize` requests
//! (a token holder in a loop, or a buggy client) added 272 MB and lived
//! 30 minutes. [`CappedSessions`] keeps at
//! most a fixed number ([`MAX_SESSIONS`] for ccbridge's servers); creating
//! one more first closes the least recently used *idle* session. A session
//! is busy while a request of it is in flight or one of its event streams
//! (the GET stream, a POST's answer) is open: that is a client connected
//! now, and it is never closed for another. When every session is busy,
//! the new `initialize` is refused (rmcp answers a session manager's error
//! with 500, the message saying why).
//!
//! A server whose clients keep their GET stream open while they live (the
//! companions: Gemini CLI and Qwen Code reopen a broken one within
//! seconds) can close *orphans* sooner ([`CappedSessions::closing_orphans`]):
//! a session that had a GET stream, has none now and is idle for that long
//! lost its client (the agent was closed or killed: it sends no DELETE), and
//! what the session holds (a diff open in the editor) goes with it.
//!
//! A request id still in flight in its session is refused (-32600, as the
//! answer to the request that reused it): MCP forbids reusing one, and
//! rmcp routes an answer by its id, so the first request's answer went to
//! the second and the first POST waited for ever.
//!
//! Idle expiry is done here too, by the same notion of idle: a session
//! nobody used for [`SESSION_IDLE`] and with no stream open is closed.
//! (rmcp's own timer counts only messages, so it also closed a client that
//! kept its GET stream open but had nothing to say, and one waiting on a
//! long tool call; it is turned off.) A closed session answers 404, on
//! which an MCP client starts a new one.

use futures_util::future::Either;
use futures_util::{stream, Stream};
use rmcp::model::{ClientJsonRpcMessage, ErrorData, JsonRpcError, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The most sessions one of ccbridge's MCP servers keeps. A client holds
/// one (Claude Code, Gemini CLI and Qwen Code each open one per process,
/// and a new one after a reconnect); 64 leaves room for many agents at
/// once while bounding memory (about 55 KB a session) to a few MB.
pub const MAX_SESSIONS: usize = 64;

/// A session with no request in flight and no stream open for this long
/// is closed. Connected clients keep their GET stream open, so this only
/// reaps sessions whose client went away without a DELETE (and clients
/// that keep no stream, which start a new session on the 404).
pub const SESSION_IDLE: Duration = Duration::from_secs(10 * 60);

/// Messages a session's channels hold before their sender waits (rmcp's
/// default is 16). Each channel also keeps its last this many events for
/// resuming a stream, which nothing here does, so fewer is less memory
/// held per session.
pub const CHANNEL_CAPACITY: usize = 8;

/// Why a session could not be created or used.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error(
        "too many MCP sessions: all {0} are in use (a request in flight or a stream open); \
         close one (DELETE) or try again later"
    )]
    Full(usize),
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// A session manager keeping at most `max` sessions (see the module doc).
pub struct CappedSessions {
    shared: Arc<Shared>,
}

struct Shared {
    inner: LocalSessionManager,
    max: usize,
    idle: Duration,
    /// Idle time after which a session whose GET stream closed is closed.
    orphaned: Option<Duration>,
    uses: Mutex<HashMap<SessionId, Arc<Use>>>,
    /// One creation at a time, so two cannot both take the last place.
    creating: tokio::sync::Mutex<()>,
    reaper: std::sync::Once,
    epoch: Instant,
}

/// How a session is being used.
struct Use {
    /// Requests in flight and streams open.
    busy: AtomicUsize,
    /// When it was last used, in nanoseconds since [`Shared::epoch`]:
    /// milliseconds tied for sessions used within one, and the least
    /// recently used one was then picked at random among them.
    last: AtomicU64,
    /// The ids of its requests not answered yet.
    pending: Mutex<HashSet<RequestId>>,
    /// Whether its client ever opened the GET stream.
    listened: std::sync::atomic::AtomicBool,
}

impl Use {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A request in flight: its id is taken until its answer goes out or its
/// stream is dropped (the client went away).
struct Pending {
    usage: Arc<Use>,
    id: RequestId,
}

impl Pending {
    /// Takes `id` in `usage`'s session; `None` when a request in flight
    /// has it.
    fn take(usage: &Arc<Use>, id: &RequestId) -> Option<Pending> {
        usage.pending().insert(id.clone()).then(|| Pending {
            usage: usage.clone(),
            id: id.clone(),
        })
    }

    /// Whether `message` is this request's answer.
    fn answered_by(&self, message: &ServerJsonRpcMessage) -> bool {
        match message {
            ServerJsonRpcMessage::Response(r) => r.id == self.id,
            ServerJsonRpcMessage::Error(e) => e.id.as_ref() == Some(&self.id),
            _ => false,
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.usage.pending().remove(&self.id);
    }
}

/// The answer to a request reusing the id of one in flight.
fn id_in_use(id: RequestId) -> ServerSseMessage {
    let why = format!(
        "request id {id} is in use by a request of this session not answered yet; \
         an id may not be reused"
    );
    let error = JsonRpcError::new(Some(id), ErrorData::invalid_request(why, None));
    ServerSseMessage::from_message(ServerJsonRpcMessage::Error(error))
}

impl CappedSessions {
    /// At most `max` sessions (at least one), idle ones closed after `idle`.
    pub fn new(max: usize, idle: Duration) -> CappedSessions {
        CappedSessions::with_orphans(max, idle, None)
    }

    /// [`CappedSessions::default`], and a session whose GET stream closed
    /// closed once idle for `after` (see the module doc).
    pub fn closing_orphans(after: Duration) -> CappedSessions {
        CappedSessions::with_orphans(MAX_SESSIONS, SESSION_IDLE, Some(after))
    }

    fn with_orphans(max: usize, idle: Duration, orphaned: Option<Duration>) -> CappedSessions {
        let mut inner = LocalSessionManager::default();
        // Expiry is ours (it knows about open streams).
        inner.session_config.keep_alive = None;
        inner.session_config.channel_capacity = CHANNEL_CAPACITY;
        // Nothing resumes a stream: a finished request's events go at once.
        inner.session_config.completed_cache_ttl = Duration::ZERO;
        // No priming event on a POST's answer stream (see `http_service`).
        inner.session_config.sse_retry = None;
        CappedSessions {
            shared: Arc::new(Shared {
                inner,
                max: max.max(1),
                idle,
                orphaned,
                uses: Mutex::new(HashMap::new()),
                creating: tokio::sync::Mutex::new(()),
                reaper: std::sync::Once::new(),
                epoch: Instant::now(),
            }),
        }
    }

    /// How many sessions there are.
    pub fn len(&self) -> usize {
        self.shared.uses().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// rmcp's settings for each session.
    pub fn session_config(&self) -> &SessionConfig {
        &self.shared.inner.session_config
    }
}

impl Default for CappedSessions {
    fn default() -> Self {
        CappedSessions::new(MAX_SESSIONS, SESSION_IDLE)
    }
}

impl Shared {
    fn uses(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<Use>>> {
        self.uses.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn get(&self, id: &SessionId) -> Option<Arc<Use>> {
        self.uses().get(id).cloned()
    }

    /// Marks `id` busy until the guard drops, if it exists.
    fn enter(self: &Arc<Self>, id: &SessionId) -> Option<Busy> {
        let u = self.get(id)?;
        u.busy.fetch_add(1, Ordering::AcqRel);
        u.last.store(self.now(), Ordering::Release);
        Some(Busy {
            usage: u,
            shared: Arc::downgrade(self),
        })
    }

    /// Forgets `id` and ends its session.
    async fn close(&self, id: &SessionId) -> Result<(), LocalSessionManagerError> {
        self.uses().remove(id);
        self.inner.close_session(id).await
    }

    /// Sessions idle for [`Shared::idle`], and orphans idle for
    /// [`Shared::orphaned`].
    fn expired(&self) -> Vec<SessionId> {
        let now = self.now();
        let idle = self.idle.as_nanos() as u64;
        let orphaned = self.orphaned.map(|d| d.as_nanos() as u64);
        self.uses()
            .iter()
            .filter(|(_, u)| {
                let quiet = now.saturating_sub(u.last.load(Ordering::Acquire));
                let orphan = u.listened.load(Ordering::Acquire)
                    && orphaned.is_some_and(|after| quiet >= after);
                u.busy.load(Ordering::Acquire) == 0 && (quiet >= idle || orphan)
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    async fn reap(&self) {
        for id in self.expired() {
            tracing::info!(session = %id, "closing an idle MCP session");
            let _ = self.close(&id).await;
        }
    }

    /// The least recently used idle session, when there is no room.
    fn victim(&self) -> Result<Option<SessionId>, SessionsError> {
        let uses = self.uses();
        if uses.len() < self.max {
            return Ok(None);
        }
        uses.iter()
            .filter(|(_, u)| u.busy.load(Ordering::Acquire) == 0)
            .min_by_key(|(_, u)| u.last.load(Ordering::Acquire))
            .map(|(id, _)| Some(id.clone()))
            .ok_or(SessionsError::Full(self.max))
    }

    /// Runs [`Shared::reap`] now and then while the manager lives.
    fn start_reaper(self: &Arc<Self>) {
        self.reaper.call_once(|| {
            let weak = Arc::downgrade(self);
            let shortest = self.orphaned.map_or(self.idle, |o| o.min(self.idle));
            let period = (shortest / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(period).await;
                    let Some(shared) = weak.upgrade() else {
                        return;
                    };
                    shared.reap().await;
                }
            });
        });
    }
}

/// A request in flight or a stream open; the session is used until then.
struct Busy {
    usage: Arc<Use>,
    shared: Weak<Shared>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            self.usage.last.store(shared.now(), Ordering::Release);
        }
        self.usage.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A session's event stream, keeping it busy while open, and its
/// request's id taken until the answer passes.
struct Tracked<St> {
    inner: Pin<Box<St>>,
    _busy: Option<Busy>,
    pending: Option<Pending>,
}

impl<St: Stream<Item = ServerSseMessage>> Stream for Tracked<St> {
    type Item = ServerSseMessage;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        let this = self.get_mut();
        let next = this.inner.as_mut().poll_next(cx);
        if let Poll::Ready(Some(ServerSseMessage {
            message: Some(m), ..
        })) = &next
        {
            // Free before the client can read the answer and reuse the id.
            if this.pending.as_ref().is_some_and(|p| p.answered_by(m)) {
                this.pending = None;
            }
        }
        next
    }
}

fn tracked<St>(inner: St, busy: Option<Busy>, pending: Option<Pending>) -> Tracked<St> {
    Tracked {
        inner: Box::pin(inner),
        _busy: busy,
        pending,
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let shared = &self.shared;
        shared.start_reaper();
        let _one = shared.creating.lock().await;
        shared.reap().await;
        while let Some(victim) = shared.victim()? {
            tracing::info!(session = %victim, "closing the least recently used idle MCP session for a new one");
            shared.close(&victim).await?;
        }
        let (id, transport) = shared.inner.create_session().await?;
        // Busy until its `initialize` is answered (released there).
        let usage = Use {
            busy: AtomicUsize::new(1),
            last: AtomicU64::new(shared.now()),
            pending: Mutex::default(),
            listened: Default::default(),
        };
        shared.uses().insert(id.clone(), Arc::new(usage));
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        // Takes over the mark `create_session` set.
        let _busy = self.shared.get(id).map(|usage| Busy {
            usage,
            shared: Arc::downgrade(&self.shared),
        });
        Ok(self.shared.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.shared.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.shared.close(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.shared.enter(id);
        let mut pending = None;
        if let (ClientJsonRpcMessage::Request(r), Some(b)) = (&message, &busy) {
            pending = Pending::take(&b.usage, &r.id);
            if pending.is_none() {
                tracing::info!(session = %id, request = %r.id, "refused a request reusing the id of one in flight");
                return Ok(Either::Left(stream::iter([id_in_use(r.id.clone())])));
            }
        }
        let stream = self.shared.inner.create_stream(id, message).await?;
        Ok(Either::Right(tracked(stream, busy, pending)))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        let _busy = self.shared.enter(id);
        Ok(self.shared.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.shared.enter(id);
        if let Some(b) = &busy {
            b.usage.listened.store(true, Ordering::Release);
        }
        let stream = self.shared.inner.create_standalone_stream(id).await?;
        Ok(tracked(stream, busy, None))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.shared.enter(id);
        let stream = self.shared.inner.resume(id, last_event_id).await?;
        Ok(tracked(stream, busy, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session unused for the idle time is closed by the reaper (checklist
    /// item 16's expiry, here with 30 ms instead of 10 minutes); one with a
    /// request in flight or a stream open is never, however long it lasts.
    #[tokio::test]
    async fn an_idle_session_expires_and_a_busy_one_never_does() {
        let sessions = CappedSessions::new(8, Duration::from_millis(30));
        let (idle, _t1) = sessions.create_session().await.unwrap();
        let (busy, _t2) = sessions.create_session().await.unwrap();
        // Both are busy until `initialize` is answered; that of `idle` was.
        let usage = sessions.shared.get(&idle).unwrap();
        usage.busy.store(0, Ordering::Release);
        let deadline = Instant::now() + Duration::from_secs(10);
        while sessions.has_session(&idle).await.unwrap() {
            assert!(
                Instant::now() < deadline,
                "the idle session was never closed"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            sessions.has_session(&busy).await.unwrap(),
            "a busy session was closed"
        );
        assert_eq!(sessions.len(), 1);
    }
}
