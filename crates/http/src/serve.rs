//! The serving loop: HTTP/1.1 with hyper directly (axum's own `serve` sets
//! no request-head timeout and no connection limit), with
//!
//! - a bounded time to send a request's head ([`Limits::header_timeout`]):
//!   a half-sent request does not hold a connection;
//! - two pools of connection slots. Every new connection is *anonymous*
//!   until one of its requests carries the server's credential (the
//!   [`SignedIn`] check); then it moves to the *signed-in* pool, which
//!   anonymous connections can never take. When the anonymous pool is
//!   full, a new connection pushes out the oldest anonymous one, so idle
//!   or slow sockets re-opened in a loop, or a flood of wrong tokens, delay
//!   the user's first request at most; they never lock the user out;
//! - a bounded number of connections in all (the two pools), so a flood of
//!   sockets costs this server a fixed number of file descriptors however
//!   many are opened, and the IDE port keeps the rest;
//! - a request with more than one `Host` header answered 400: which one a
//!   check reads and which one a handler reads must not differ.
//!
//! At shutdown every open connection (event streams included) is closed.

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, Request, Response, StatusCode};
use axum::Router;
use hyper::body::Incoming;
use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::AbortHandle;
use tower::{Service, ServiceExt};

/// Whether a request's head carries the server's credential (a bearer
/// token, the page's session header).
pub type SignedIn = Arc<dyn Fn(&HeaderMap) -> bool + Send + Sync>;

/// How much one server may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time allowed to send a request's head.
    pub header_timeout: Duration,
    /// Connections not (yet) signed in; a new one pushes out the oldest.
    pub anonymous: usize,
    /// Signed-in connections; past this, a signed-in connection stays in
    /// the anonymous pool (it is served, but can be pushed out).
    pub signed_in: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            anonymous: 32,
            signed_in: 64,
        }
    }
}

/// The connections being served.
#[derive(Default)]
struct Slots {
    /// Anonymous connections, oldest first.
    anonymous: VecDeque<(u64, AbortHandle)>,
    signed_in: usize,
}

fn lock(slots: &Mutex<Slots>) -> MutexGuard<'_, Slots> {
    slots.lock().unwrap_or_else(|p| p.into_inner())
}

/// One connection's place in [`Slots`], given back when its task ends,
/// however it ends (also when it is aborted).
struct Held {
    id: u64,
    slots: Arc<Mutex<Slots>>,
    signed_in: AtomicBool,
}

impl Held {
    /// Moves the connection to the signed-in pool if there is room (and
    /// it was not pushed out meanwhile).
    fn sign_in(&self, limits: &Limits) {
        if self.signed_in.load(Ordering::Acquire) {
            return;
        }
        let mut s = lock(&self.slots);
        if s.signed_in >= limits.signed_in {
            return;
        }
        if let Some(at) = s.anonymous.iter().position(|(id, _)| *id == self.id) {
            s.anonymous.remove(at);
            s.signed_in += 1;
            self.signed_in.store(true, Ordering::Release);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut s = lock(&self.slots);
        if self.signed_in.load(Ordering::Acquire) {
            s.signed_in -= 1;
        } else {
            s.anonymous.retain(|(id, _)| *id != self.id);
        }
    }
}

fn bad_request(text: &'static str) -> Response<Body> {
    let mut resp = Response::new(Body::from(text));
    *resp.status_mut() = StatusCode::BAD_REQUEST;
    resp
}

/// Serves `router` on `listener` until `shutdown` resolves, within
/// `limits` (see the module doc). Handlers can extract
/// `ConnectInfo<SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    signed_in: SignedIn,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Mutex::new(Slots::default()));
    let mut conns = tokio::task::JoinSet::new();
    let mut next_id = 0u64;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else {
                    // EMFILE and friends: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                next_id += 1;
                let held = Arc::new(Held {
                    id: next_id,
                    slots: slots.clone(),
                    signed_in: AtomicBool::new(false),
                });
                let svc = connection_service(router.clone(), peer, held.clone(), limits, signed_in.clone());
                // Held while spawning, so the connection cannot sign in
                // before it is in the anonymous pool.
                let mut s = lock(&slots);
                if s.anonymous.len() >= limits.anonymous.max(1) {
                    if let Some((_, oldest)) = s.anonymous.pop_front() {
                        tracing::debug!("anonymous connections full; closing the oldest");
                        oldest.abort();
                    }
                }
                let task = conns.spawn(async move {
                    let _held = held;
                    serve_with(stream, svc, limits).await;
                });
                s.anonymous.push_back((next_id, task));
            }
        }
    }
    conns.abort_all();
    while conns.join_next().await.is_some() {}
}

/// One connection served by `svc` within `limits`.
async fn serve_with<I, S>(io: I, svc: S, limits: Limits)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<Request<Incoming>, Response = Response<Body>> + Send,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::Future: Send + 'static,
{
    use hyper_util::rt::{TokioIo, TokioTimer};
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(TokioIo::new(io), svc);
    if let Err(e) = conn.await {
        tracing::trace!("HTTP connection ended: {e}");
    }
}

/// One connection served as [`serve`] serves each (the head timeout, the
/// `Host` rule, the router), from any byte stream, its peer a loopback
/// address: how the fuzz target (`fuzz/fuzz_targets/mcp_http.rs`) feeds
/// the MCP servers from memory. No slots: there is one connection.
#[doc(hidden)]
pub async fn serve_stream<I>(io: I, router: Router, limits: Limits, signed_in: SignedIn)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let held = Arc::new(Held {
        id: 0,
        slots: Arc::new(Mutex::new(Slots::default())),
        signed_in: AtomicBool::new(false),
    });
    let peer = SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0));
    serve_with(
        io,
        connection_service(router, peer, held, limits, signed_in),
        limits,
    )
    .await;
}

/// The service for one connection: the `Host` rule, the sign-in check,
/// then the router.
fn connection_service(
    router: Router,
    peer: SocketAddr,
    held: Arc<Held>,
    limits: Limits,
    signed_in: SignedIn,
) -> hyper_util::service::TowerToHyperService<
    impl Service<
            Request<Incoming>,
            Response = Response<Body>,
            Error = std::convert::Infallible,
            Future = impl Send,
        > + Clone,
> {
    let svc = tower::service_fn(move |mut req: Request<Incoming>| {
        let router = router.clone();
        let held = held.clone();
        let signed_in = signed_in.clone();
        async move {
            if req.headers().get_all(header::HOST).iter().count() > 1 {
                return Ok(bad_request("more than one Host header\n"));
            }
            if signed_in(req.headers()) {
                held.sign_in(&limits);
            }
            req.extensions_mut().insert(ConnectInfo(peer));
            router.oneshot(req).await
        }
    });
    hyper_util::service::TowerToHyperService::new(svc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    const WAIT: Duration = Duration::from_secs(10);

    struct Server {
        port: u16,
        stop: Option<tokio::sync::oneshot::Sender<()>>,
    }

    impl Drop for Server {
        fn drop(&mut self) {
            if let Some(s) = self.stop.take() {
                let _ = s.send(());
            }
        }
    }

    async fn start(limits: Limits) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let router = Router::new().route(
            "/",
            get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move {
                format!("hello {}", peer.ip())
            }),
        );
        let signed_in: SignedIn =
            Arc::new(|h: &HeaderMap| h.get("x-key").is_some_and(|v| v == "right"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, router, limits, signed_in, async move {
            let _ = stopped.await;
        }));
        Server {
            port,
            stop: Some(stop),
        }
    }

    /// Sends `head` on `s` and reads the answer to its end or to the
    /// first blank line's body, whichever the server gives.
    async fn ask(s: &mut TcpStream, head: &str) -> String {
        s.write_all(head.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(WAIT, s.read(&mut buf))
            .await
            .expect("an answer in time")
            .unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    fn get_head(port: u16, key: &str) -> String {
        format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-key: {key}\r\n\r\n")
    }

    /// Waits until the server closes `s` (a read of 0 bytes or an error).
    async fn closed_by_server(s: &mut TcpStream, within: Duration) -> bool {
        let mut buf = [0u8; 256];
        tokio::time::timeout(within, async {
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => continue,
                }
            }
        })
        .await
        .is_ok()
    }

    #[tokio::test]
    async fn a_half_sent_request_head_is_closed_after_the_header_timeout() {
        let srv = start(Limits {
            header_timeout: Duration::from_millis(300),
            ..Limits::default()
        })
        .await;
        let mut s = TcpStream::connect(("127.0.0.1", srv.port)).await.unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1")
            .await
            .unwrap();
        assert!(
            closed_by_server(&mut s, WAIT).await,
            "a half-sent head kept its connection"
        );
    }

    #[tokio::test]
    async fn two_host_headers_are_answered_400() {
        let srv = start(Limits::default()).await;
        let mut s = TcpStream::connect(("127.0.0.1", srv.port)).await.unwrap();
        let a = ask(
            &mut s,
            &format!(
                "GET / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nHost: evil.example\r\n\r\n",
                srv.port
            ),
        )
        .await;
        assert!(a.starts_with("HTTP/1.1 400"), "{a}");
    }

    #[tokio::test]
    async fn idle_sockets_cannot_lock_out_a_signed_in_client() {
        let limits = Limits {
            header_timeout: Duration::from_secs(30),
            anonymous: 4,
            signed_in: 2,
        };
        let srv = start(limits).await;
        // A client signed in before the flood keeps its connection.
        let mut user = TcpStream::connect(("127.0.0.1", srv.port)).await.unwrap();
        let a = ask(&mut user, &get_head(srv.port, "right")).await;
        assert!(a.contains("hello 127.0.0.1"), "{a}");
        // Many idle sockets and wrong keys, far more than the pool.
        let mut flood = Vec::new();
        for i in 0..60 {
            let mut s = TcpStream::connect(("127.0.0.1", srv.port)).await.unwrap();
            if i % 2 == 0 {
                s.write_all(get_head(srv.port, "wrong").as_bytes())
                    .await
                    .unwrap();
            }
            flood.push(s);
        }
        let a = ask(&mut user, &get_head(srv.port, "right")).await;
        assert!(
            a.contains("hello"),
            "the signed-in connection was lost: {a}"
        );
        // A new client still gets in (it pushes out the oldest idle one).
        let mut fresh = TcpStream::connect(("127.0.0.1", srv.port)).await.unwrap();
        let a = ask(&mut fresh, &get_head(srv.port, "right")).await;
        assert!(a.contains("hello"), "a new client was locked out: {a}");
        // The flood holds at most the anonymous pool: the rest were closed.
        let mut open = 0;
        for s in &mut flood {
            if !closed_by_server(s, Duration::from_millis(50)).await {
                open += 1;
            }
        }
        assert!(open <= limits.anonymous, "{open} flooding sockets kept");
    }

    #[tokio::test]
    async fn signed_in_connections_beyond_their_pool_are_served_as_anonymous() {
        let srv = start(Limits {
            header_timeout: Duration::from_secs(30),
            anonymous: 2,
            signed_in: 1,
        })
        .await;
        let mut a = TcpStream::connect(("127.0.0.1", srv.port)).await.unwrap();
        let mut b = TcpStream::connect(("127.0.0.1", srv.port)).await.unwrap();
        assert!(ask(&mut a, &get_head(srv.port, "right"))
            .await
            .contains("hello"));
        assert!(ask(&mut b, &get_head(srv.port, "right"))
            .await
            .contains("hello"));
        // Two more anonymous ones push `b` (anonymous: no room) out, not `a`.
        let _c = TcpStream::connect(("127.0.0.1", srv.port)).await.unwrap();
        let _d = TcpStream::connect(("127.0.0.1", srv.port)).await.unwrap();
        let mut e = TcpStream::connect(("127.0.0.1", srv.port)).await.unwrap();
        assert!(ask(&mut e, &get_head(srv.port, "x"))
            .await
            .contains("hello"));
        assert!(closed_by_server(&mut b, WAIT).await);
        assert!(ask(&mut a, &get_head(srv.port, "right"))
            .await
            .contains("hello"));
    }
}
