//! One Claude Code connection: frames in, JSON-RPC dispatch, frames out,
//! keepalive.
//!
//! The reader handles notifications inline, in arrival order, and spawns a
//! task per `tools/call`, so a blocking `openDiff` never delays other calls.
//! One writer task owns the socket's sending half; everything else sends
//! through its channel. A message over the size limit closes with 1009,
//! a malformed one gets `-32700` and the connection stays up.

use crate::engine::{lock, Shared};
use crate::frontend::{ClientId, ClientInfo};
use crate::keepalive::{Action, Keepalive};
use crate::router;
use crate::sessions::Outbound;
use futures_util::{SinkExt, StreamExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::error::Error as WsError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// What request handlers know about their connection.
pub(crate) struct Conn {
    pub id: crate::diffs::ConnId,
    pub shared: Arc<Shared>,
    pub tx: mpsc::Sender<Outbound>,
    pub initialized: AtomicBool,
}

impl Conn {
    /// Queues a frame for the writer; false once the connection is gone.
    pub async fn send(&self, text: String) -> bool {
        self.tx.send(Outbound::Text(text)).await.is_ok()
    }

    pub fn client_id(&self) -> ClientId {
        ClientId(self.id)
    }

    /// Called when `initialize` has been answered.
    pub fn initialized(self: &Arc<Self>, info: ClientInfo) {
        self.initialized.store(true, Ordering::SeqCst);
        let evicted = lock(&self.shared.sessions).register(
            self.id,
            info.clone(),
            self.tx.clone(),
            self.shared.config.multi_client,
        );
        for (old, tx) in evicted {
            tracing::info!(
                old,
                new = self.id,
                "newer session connected; evicting the older one"
            );
            let _ = tx.try_send(Outbound::Close(
                crate::sessions::SUPERSEDED_CODE,
                crate::sessions::SUPERSEDED_REASON.into(),
            ));
            // The session is forgotten here, so its connection's teardown
            // will not find it: tell the editor now.
            self.shared.frontend.client_disconnected(ClientId(old));
        }
        tracing::info!(client = self.id, name = %info.name, version = %info.version, "Claude Code session connected");
    }

    /// Schedules the replay of context `delay` from now.
    pub fn ready_after(self: &Arc<Self>, delay: Duration) {
        let shared = self.shared.clone();
        let id = self.id;
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            shared.make_ready(id);
        });
    }
}

pub(crate) async fn serve<S>(shared: Arc<Shared>, ws: WebSocketStream<S>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let id = shared.next_conn();
    let (mut sink, mut stream) = ws.split();
    let (tx, mut rx) = mpsc::channel::<Outbound>(256);
    let mut writer = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            let result = match out {
                Outbound::Text(t) => sink.send(Message::text(t)).await,
                Outbound::Ping => sink.send(Message::Ping(Default::default())).await,
                Outbound::Close(code, reason) => {
                    let frame = CloseFrame {
                        code: CloseCode::from(code),
                        reason: reason.into(),
                    };
                    let _ = sink.send(Message::Close(Some(frame))).await;
                    let _ = sink.close().await;
                    break;
                }
            };
            if result.is_err() {
                break;
            }
        }
    });
    let conn = Arc::new(Conn {
        id,
        shared: shared.clone(),
        tx: tx.clone(),
        initialized: AtomicBool::new(false),
    });
    let interval = shared.config.keepalive_interval;
    let mut keepalive = Keepalive::new(interval, Instant::now());
    let mut ticker = tokio::time::interval_at(Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown = shared.shutdown.subscribe();
    tracing::debug!(conn = id, "websocket open");

    let close = |code: u16, reason: &str| {
        let _ = tx.try_send(Outbound::Close(code, reason.to_owned()));
    };
    loop {
        tokio::select! {
            frame = stream.next() => {
                keepalive.seen(Instant::now());
                match frame {
                    None => break,
                    Some(Ok(Message::Text(t))) => router::handle(&conn, t.as_str()).await,
                    Some(Ok(Message::Binary(b))) => match std::str::from_utf8(&b) {
                        Ok(t) => router::handle(&conn, t).await,
                        Err(_) => router::handle(&conn, "\u{0}not utf-8").await,
                    },
                    Some(Ok(Message::Close(_))) => break,
                    Some(Ok(_)) => {}
                    Some(Err(WsError::Capacity(e))) => {
                        tracing::warn!(conn = id, "closing: {e}");
                        close(1009, "message too big");
                        break;
                    }
                    Some(Err(e)) => {
                        tracing::debug!(conn = id, "websocket error: {e}");
                        close(1002, "protocol error");
                        break;
                    }
                }
            }
            _ = ticker.tick() => match keepalive.tick(Instant::now()) {
                Action::Ping => { let _ = tx.try_send(Outbound::Ping); }
                Action::Drop => {
                    tracing::info!(conn = id, "client silent for two keepalive intervals; dropping it");
                    close(1001, "keepalive timeout");
                    break;
                }
            },
            _ = &mut writer => break,
            _ = shutdown.changed() => {
                close(1001, "IDE server shutting down");
                break;
            }
        }
    }
    shared.disconnected(id);
    drop(conn);
    drop(tx);
    // Let the writer flush a pending close frame; bounded.
    if !writer.is_finished() {
        let _ = tokio::time::timeout(Duration::from_secs(1), &mut writer).await;
        writer.abort();
    }
    tracing::debug!(conn = id, "websocket closed");
}
