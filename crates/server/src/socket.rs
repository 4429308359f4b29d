//! The WebSocket layer under every Claude connection: the frame and message
//! limits, what each incoming frame means for the connection, bounded
//! writes, and both halves of the closing handshake.
//!
//! It is its own module so that the engine's connection loop and the
//! Autobahn conformance server (`examples/autobahn_echo.rs`, run by
//! `scripts/autobahn`) run the same code: the conformance suite then tests
//! what ships, not a look-alike.

use futures_util::SinkExt;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::error::Error as WsError;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Bytes, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

/// How long a close frame may take to leave, at the end of a connection.
const CLOSE_LIMIT: Duration = Duration::from_secs(1);

/// How much one read from a socket asks for. tungstenite zeroes that much
/// of its read buffer before every read, even one that finds nothing (and
/// a connection's task tries one each time it wakes to send): with its
/// default of 128 KiB, every notification to Claude cost a 128 KiB memset,
/// and every connection kept 128 KiB touched. A large message takes more
/// reads, each still as large as the socket has ready up to this.
const READ_CHUNK: usize = 16 * 1024;

/// Frame and message limits: nothing over `max` bytes is buffered, and
/// every frame is written as it is sent (no write buffering).
pub fn config(max: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
        .write_buffer_size(0)
        .read_buffer_size(READ_CHUNK)
}

/// What one read from the socket means for the connection.
#[derive(Debug)]
pub enum Incoming {
    Text(Utf8Bytes),
    /// A binary message (Claude Code sends text; the router decides).
    Binary(Bytes),
    /// A ping or pong: tungstenite answers pings itself.
    Control,
    /// The client closed (its close frame, or the end of the stream): call
    /// [`closed_by_peer`] so the close is answered.
    Closed,
    /// The connection must end with this close code and reason: 1009 for a
    /// message or frame over the limit, 1007 for invalid UTF-8 in a text
    /// message, 1002 for any other protocol violation.
    Failed(u16, &'static str),
}

/// Classifies what `StreamExt::next` gave.
pub fn incoming(frame: Option<Result<Message, WsError>>) -> Incoming {
    match frame {
        None | Some(Ok(Message::Close(_))) => Incoming::Closed,
        Some(Ok(Message::Text(t))) => Incoming::Text(t),
        Some(Ok(Message::Binary(b))) => Incoming::Binary(b),
        Some(Ok(_)) => Incoming::Control,
        Some(Err(WsError::Capacity(e))) => {
            tracing::warn!("closing: {e}");
            Incoming::Failed(1009, "message too big")
        }
        Some(Err(WsError::Utf8(_))) => Incoming::Failed(1007, "invalid UTF-8 in a text message"),
        // The peer's close was answered and the stream is done.
        Some(Err(WsError::ConnectionClosed | WsError::AlreadyClosed)) => Incoming::Closed,
        Some(Err(e)) => {
            tracing::debug!("websocket error: {e}");
            Incoming::Failed(1002, "protocol error")
        }
    }
}

/// Writes one frame, failing when the client has not taken it within `limit`.
pub async fn write<S>(
    ws: &mut WebSocketStream<S>,
    msg: Message,
    limit: Duration,
) -> Result<(), WsError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    match tokio::time::timeout(limit, ws.send(msg)).await {
        Ok(r) => r,
        Err(_) => Err(WsError::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the client stopped reading",
        ))),
    }
}

/// Starts the closing handshake: sends a close frame and flushes it,
/// bounded in time.
pub async fn send_close<S>(ws: &mut WebSocketStream<S>, code: u16, reason: String)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: reason.into(),
    };
    let _ = tokio::time::timeout(CLOSE_LIMIT, async {
        let _ = ws.send(Message::Close(Some(frame))).await;
        let _ = ws.flush().await;
    })
    .await;
}

/// Completes a closing handshake the client started: tungstenite queued
/// the answering close frame when it read the client's; flush it (bounded
/// in time) before the socket is dropped, so the client sees a clean close
/// rather than a reset.
pub async fn closed_by_peer<S>(ws: &mut WebSocketStream<S>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = tokio::time::timeout(CLOSE_LIMIT, ws.flush()).await;
}
