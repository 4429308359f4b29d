//! The router ccbridge hosts when no one else does: the same role the
//! Codex desktop app plays on its socket, reduced to what Codex CLI's
//! `/ide` and providers need.
//!
//! - A connection that sends `initialize` becomes a client: it gets a
//!   `clientId` and is asked about later requests (a provider: another
//!   ccbridge, an IDE extension). Codex CLI does not initialize: it sends
//!   one `ide-context` request per prompt on a fresh connection.
//! - A request is answered by ccbridge itself when it serves the
//!   `workspaceRoot`; otherwise every other client is asked
//!   (`client-discovery-request`, [`DISCOVERY_TIMEOUT`] each, all at once),
//!   the request is forwarded to the first that can handle it, and its
//!   response goes back with `handledByClientId`. Errors are the ones
//!   Codex knows: `no-client-found`, `client-disconnected`,
//!   `request-timeout`.
//! - `broadcast` frames go to every other client.
//!
//! Nothing a peer does can block the engine or another peer: each
//! connection has its own task; what is sent to it goes through a bounded
//! queue drained by its own writer (a peer that does not read loses
//! frames, then its connection); reads are capped ([`frame::MAX_FRAME`],
//! an oversize frame closes that peer, logged), a connection that has not
//! initialized must send something every [`IDLE_TIMEOUT`], and each
//! connection has a bounded number of requests in flight.

use crate::frame::{self, FrameError};
use crate::provider::{answer, error_response, handles, new_id, str_of, ContextSource};
use crate::socket::check_peer;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio_util::sync::CancellationToken;

/// How long a client may take to say whether it handles a request.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the chosen client may take to answer it (Codex gives up after 5 s).
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(4);
/// How long a connection that is not a client may stay silent.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Frames queued for one peer, at most.
pub const QUEUE: usize = 64;
/// Requests of one connection in flight, at most.
pub const IN_FLIGHT: usize = 16;
/// Connections at once, at most.
pub const MAX_CONNECTIONS: usize = 128;

struct Peer {
    client_id: String,
    tx: mpsc::Sender<Value>,
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
}

impl Peer {
    /// Sends `frame` (whose `requestId` is `rid`) and waits for the frame
    /// answering it.
    async fn ask(
        &self,
        rid: String,
        frame: Value,
        timeout: Duration,
    ) -> Result<Value, &'static str> {
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(rid.clone(), tx);
        let result = if self.tx.try_send(frame).is_err() {
            Err("client-disconnected")
        } else {
            match tokio::time::timeout(timeout, rx).await {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(_)) => Err("client-disconnected"),
                Err(_) => Err("request-timeout"),
            }
        };
        lock(&self.pending).remove(&rid);
        result
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A hosted router, answering for `source` itself.
pub struct Router {
    id: String,
    source: Arc<dyn ContextSource>,
    clients: Mutex<Vec<Arc<Peer>>>,
    connections: Arc<Semaphore>,
}

impl Router {
    pub fn new(source: Arc<dyn ContextSource>) -> Arc<Router> {
        Arc::new(Router {
            id: new_id("router"),
            source,
            clients: Mutex::new(Vec::new()),
            connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        })
    }

    /// How many clients have initialized.
    pub fn client_count(&self) -> usize {
        lock(&self.clients).len()
    }

    /// Accepts connections on `listener` until `stop` fires; each runs in a
    /// task of its own, ended by `stop` too.
    pub async fn serve(self: Arc<Self>, listener: UnixListener, stop: CancellationToken) {
        loop {
            let stream = tokio::select! {
                () = stop.cancelled() => return,
                r = listener.accept() => match r {
                    Ok((s, _)) => s,
                    Err(e) => {
                        tracing::warn!("the Codex IPC router cannot accept: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            if let Err(why) = check_peer(&stream) {
                tracing::warn!("refused a Codex IPC connection: the peer {why}");
                continue;
            }
            let Ok(permit) = self.connections.clone().try_acquire_owned() else {
                tracing::warn!("refused a Codex IPC connection: {MAX_CONNECTIONS} already open");
                continue;
            };
            let router = self.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                router.connection(stream, stop).await;
                drop(permit);
            });
        }
    }

    async fn connection(self: Arc<Self>, stream: UnixStream, stop: CancellationToken) {
        let (mut rd, mut wr) = stream.into_split();
        let (tx, mut rx) = mpsc::channel::<Value>(QUEUE);
        let done = stop.child_token();
        let writer_done = done.clone();
        tokio::spawn(async move {
            loop {
                let v = tokio::select! {
                    () = writer_done.cancelled() => break,
                    v = rx.recv() => match v { Some(v) => v, None => break },
                };
                if let Err(e) = frame::write_frame(&mut wr, &v).await {
                    tracing::debug!("dropping a Codex IPC peer that does not read: {e}");
                    break;
                }
            }
            writer_done.cancel();
        });
        let in_flight = Arc::new(Semaphore::new(IN_FLIGHT));
        let mut me: Option<Arc<Peer>> = None;
        loop {
            let read = async {
                if me.is_some() {
                    frame::read_frame(&mut rd, frame::MAX_FRAME).await.map(Some)
                } else {
                    match tokio::time::timeout(
                        IDLE_TIMEOUT,
                        frame::read_frame(&mut rd, frame::MAX_FRAME),
                    )
                    .await
                    {
                        Ok(r) => r.map(Some),
                        Err(_) => Ok(None),
                    }
                }
            };
            let v = tokio::select! {
                () = done.cancelled() => break,
                r = read => match r {
                    Ok(Some(v)) => v,
                    Ok(None) => break,
                    Err(FrameError::Closed) => break,
                    Err(e @ FrameError::TooLarge { .. }) => {
                        tracing::warn!("closing a Codex IPC peer that announced {e}");
                        break;
                    }
                    Err(e) => {
                        tracing::warn!("closing a Codex IPC peer that sent {e}");
                        break;
                    }
                },
            };
            match str_of(&v, "type") {
                Some("request") if str_of(&v, "method") == Some("initialize") => {
                    let peer = me.get_or_insert_with(|| {
                        let p = Arc::new(Peer {
                            client_id: new_id("client"),
                            tx: tx.clone(),
                            pending: Mutex::new(HashMap::new()),
                        });
                        lock(&self.clients).push(p.clone());
                        p
                    });
                    let _ = tx.try_send(json!({
                        "type": "response",
                        "requestId": v.get("requestId").cloned().unwrap_or(Value::Null),
                        "method": "initialize",
                        "handledByClientId": self.id,
                        "resultType": "success",
                        "result": {"clientId": peer.client_id},
                    }));
                }
                Some("request") => {
                    let Ok(permit) = in_flight.clone().try_acquire_owned() else {
                        let _ = tx.try_send(error_response(&v, "request-timeout"));
                        continue;
                    };
                    let router = self.clone();
                    let tx = tx.clone();
                    let asker = me.clone();
                    tokio::spawn(async move {
                        let response = router.route(&v, asker.as_ref()).await;
                        let _ = tx.try_send(response);
                        drop(permit);
                    });
                }
                Some("response") | Some("client-discovery-response") => {
                    if let (Some(p), Some(rid)) = (&me, str_of(&v, "requestId")) {
                        if let Some(waiter) = lock(&p.pending).remove(rid) {
                            let _ = waiter.send(v);
                        }
                    }
                }
                Some("broadcast") if me.is_some() => {
                    let others: Vec<Arc<Peer>> = lock(&self.clients)
                        .iter()
                        .filter(|p| !me.as_ref().is_some_and(|m| Arc::ptr_eq(m, p)))
                        .cloned()
                        .collect();
                    for p in others {
                        let _ = p.tx.try_send(v.clone());
                    }
                }
                Some("client-discovery-request") => {
                    let _ = tx.try_send(json!({
                        "type": "client-discovery-response",
                        "requestId": v.get("requestId").cloned().unwrap_or(Value::Null),
                        "response": {"canHandle": false},
                    }));
                }
                _ => {
                    if v.get("requestId").is_some() {
                        let _ = tx.try_send(error_response(&v, "no-handler-for-request"));
                    }
                }
            }
        }
        done.cancel();
        if let Some(p) = me {
            lock(&self.clients).retain(|c| !Arc::ptr_eq(c, &p));
            lock(&p.pending).clear();
        }
    }

    /// The response to `request` from `asker` (`None`: a connection that
    /// did not initialize, such as Codex CLI).
    async fn route(&self, request: &Value, asker: Option<&Arc<Peer>>) -> Value {
        if handles(self.source.as_ref(), request) {
            return answer(self.source.as_ref(), request, &self.id);
        }
        let candidates: Vec<Arc<Peer>> = lock(&self.clients)
            .iter()
            .filter(|p| !asker.is_some_and(|a| Arc::ptr_eq(a, p)))
            .cloned()
            .collect();
        let mut asked = tokio::task::JoinSet::new();
        for p in candidates {
            let request = request.clone();
            asked.spawn(async move {
                let rid = new_id("discovery");
                let frame = json!({
                    "type": "client-discovery-request",
                    "requestId": rid,
                    "request": request,
                });
                let yes = p
                    .ask(rid, frame, DISCOVERY_TIMEOUT)
                    .await
                    .is_ok_and(|r| r["response"]["canHandle"].as_bool() == Some(true));
                yes.then_some(p)
            });
        }
        let mut chosen = None;
        while let Some(r) = asked.join_next().await {
            if let Ok(Some(p)) = r {
                chosen = Some(p);
                break;
            }
        }
        asked.abort_all();
        let Some(p) = chosen else {
            return error_response(request, "no-client-found");
        };
        let rid = new_id("forward");
        let mut forwarded = request.clone();
        forwarded["requestId"] = rid.clone().into();
        match p.ask(rid, forwarded, FORWARD_TIMEOUT).await {
            Ok(mut response) => {
                response["requestId"] = request.get("requestId").cloned().unwrap_or(Value::Null);
                if response.get("handledByClientId").is_none() {
                    response["handledByClientId"] = p.client_id.clone().into();
                }
                response
            }
            Err(error) => error_response(request, error),
        }
    }
}
