//! One Claude Code connection: frames in, JSON-RPC dispatch, frames out,
//! keepalive.
//!
//! One task owns the socket. It handles notifications inline, in arrival
//! order, answers read-only tools inline and writes those answers directly
//! (no hop through another task: that hop was most of the round-trip cost,
//! see docs/benchmarks.md), and spawns a task per tool call that waits for
//! the editor or the user, so a blocking `openDiff` never delays other
//! calls. Those tasks, the notification broadcaster and an eviction reach
//! the socket through the connection's channel. A message over the size
//! limit closes with 1009, a malformed one gets `-32700` and the connection
//! stays up.

use crate::keepalive::{Action, Keepalive};
use crate::memory;
use crate::peer::Conn;
use crate::router;
use crate::sessions::Outbound;
use crate::shared::Shared;
use crate::socket::{self, Incoming};
use crate::traffic::{Direction, Peer};
use futures_util::StreamExt;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

pub(crate) async fn serve<S>(shared: Arc<Shared>, mut ws: WebSocketStream<S>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let id = shared.next_conn();
    let (tx, mut rx) = mpsc::channel::<Outbound>(256);
    let conn = Arc::new(Conn {
        id,
        shared: shared.clone(),
        tx,
        initialized: AtomicBool::new(false),
        waiting: Default::default(),
    });
    let interval = shared.config.keepalive_interval;
    let mut keepalive = Keepalive::new(interval, Instant::now());
    let mut ticker = tokio::time::interval_at(Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown = shared.shutdown.subscribe();
    // A client that stops reading (a suspended process) must not pin this
    // task in a write forever: give up after the keepalive's own patience.
    let write_limit = interval * 2;
    tracing::debug!(conn = id, "websocket open");

    // One task owns the socket: it reads, writes the answers of inline
    // requests directly, and writes what other tasks queue on `rx`
    // (answers of spawned tool calls, notifications, an eviction).
    let mut ending: Option<(u16, &'static str)> = None;
    // tungstenite keeps the read buffer of the largest frame for reuse
    // until the connection ends: give that memory back then too.
    let mut had_large = false;
    loop {
        let sent = tokio::select! {
            frame = ws.next() => {
                keepalive.seen(Instant::now());
                let text = match socket::incoming(frame) {
                    Incoming::Closed => {
                        socket::closed_by_peer(&mut ws).await;
                        break;
                    }
                    Incoming::Text(t) => {
                        traffic(&shared, id, Direction::In, t.as_str());
                        let answer = router::handle(&conn, t.as_str()).await;
                        if t.len() >= memory::LARGE_MESSAGE {
                            drop(t);
                            had_large = true;
                            memory::large_message_done();
                        }
                        answer
                    }
                    Incoming::Binary(b) => match std::str::from_utf8(&b) {
                        Ok(t) => {
                            traffic(&shared, id, Direction::In, t);
                            router::handle(&conn, t).await
                        }
                        Err(_) => router::handle(&conn, "\u{0}not utf-8").await,
                    },
                    Incoming::Control => None,
                    // socket::incoming has logged why.
                    Incoming::Failed(code, reason) => {
                        ending = Some((code, reason));
                        break;
                    }
                };
                match text {
                    Some(t) => {
                        traffic(&shared, id, Direction::Out, &t);
                        socket::write(&mut ws, Message::text(t), write_limit).await
                    }
                    None => Ok(()),
                }
            }
            out = rx.recv() => match out {
                Some(Outbound::Text(t)) => {
                    traffic(&shared, id, Direction::Out, &t);
                    socket::write(&mut ws, Message::text(t), write_limit).await
                }
                Some(Outbound::Close(code, reason)) => {
                    socket::send_close(&mut ws, code, reason).await;
                    break;
                }
                None => break,
            },
            _ = ticker.tick() => match keepalive.tick(Instant::now()) {
                Action::Ping => socket::write(&mut ws, Message::Ping(Default::default()), write_limit).await,
                Action::Drop => {
                    tracing::info!(conn = id, "client silent for two keepalive intervals; dropping it");
                    ending = Some((1001, "keepalive timeout"));
                    break;
                }
            },
            _ = shutdown.changed() => {
                ending = Some((1001, "IDE server shutting down"));
                break;
            }
        };
        if let Err(e) = sent {
            tracing::debug!(conn = id, "cannot write to the client: {e}");
            break;
        }
    }
    if let Some((code, reason)) = ending {
        // Answers already queued (e.g. diffs settled at shutdown) go first.
        while let Ok(Outbound::Text(t)) = rx.try_recv() {
            traffic(&shared, id, Direction::Out, &t);
            if socket::write(&mut ws, Message::text(t), Duration::from_secs(1))
                .await
                .is_err()
            {
                break;
            }
        }
        socket::send_close(&mut ws, code, reason.into()).await;
    }
    drop(ws);
    shared.disconnected(id);
    if had_large {
        memory::large_message_done();
    }
    tracing::debug!(conn = id, "websocket closed");
}

/// Records a message in the traffic log, if there is one.
fn traffic(shared: &Shared, conn: crate::diffs::ConnId, dir: Direction, text: &str) {
    if let Some(log) = &shared.traffic {
        log.record(Peer::Claude, conn, dir, text);
    }
}
