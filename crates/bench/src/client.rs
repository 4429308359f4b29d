//! The one client both servers are measured with: tokio-tungstenite, the
//! auth header and the `mcp` subprotocol, like the Claude Code CLI.
//!
//! Requests are sequential on a connection: [`Client::request`] sends one
//! and returns when the next response frame has arrived. Telling a response
//! from a notification looks only at the frame's first bytes (both servers
//! put `"method"` there in notifications and never in responses), so the
//! timed loops do not parse the 200 KB answers; validation is done once,
//! outside them.

use crate::fixture;
use anyhow::{bail, Context};
use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Upper bound for any single wait; a stuck server fails the run instead of
/// hanging it.
pub const WAIT: Duration = Duration::from_secs(10);

pub struct Client {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

impl Client {
    /// Opens the WebSocket (TCP connect and upgrade).
    pub async fn connect(port: u16, token: &str) -> anyhow::Result<Client> {
        let mut req = format!("ws://127.0.0.1:{port}").into_client_request()?;
        let h = req.headers_mut();
        h.insert(
            "X-Claude-Code-Ide-Authorization",
            HeaderValue::from_str(token)?,
        );
        h.insert("Sec-WebSocket-Protocol", HeaderValue::from_static("mcp"));
        let (ws, _) = tokio::time::timeout(
            WAIT,
            tokio_tungstenite::connect_async_with_config(req, None, true),
        )
        .await
        .context("connect timed out")?
        .context("connect failed")?;
        Ok(Client { ws, next_id: 0 })
    }

    /// Connects and does what the CLI does before using a server:
    /// `initialize`, `notifications/initialized`, `tools/list`.
    pub async fn session(port: u16, token: &str) -> anyhow::Result<Client> {
        let mut c = Client::connect(port, token).await?;
        let id = c.id();
        c.request(fixture::initialize_request(id)).await?;
        c.notify(fixture::INITIALIZED).await?;
        let id = c.id();
        c.request(fixture::tools_list_request(id)).await?;
        Ok(c)
    }

    /// A fresh request id.
    pub fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub async fn notify(&mut self, text: &str) -> anyhow::Result<()> {
        self.ws.send(Message::text(text)).await?;
        Ok(())
    }

    /// Sends a request and returns the next response frame (notifications
    /// in between are skipped).
    pub async fn request(&mut self, text: String) -> anyhow::Result<Utf8Bytes> {
        self.ws.send(Message::text(text)).await?;
        loop {
            let t = self.next_text().await?;
            if !is_notification(t.as_str()) {
                return Ok(t);
            }
        }
    }

    /// The next text frame.
    pub async fn next_text(&mut self) -> anyhow::Result<Utf8Bytes> {
        loop {
            let frame = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .context("no frame from the server in time")?;
            match frame {
                Some(Ok(Message::Text(t))) => return Ok(t),
                Some(Ok(Message::Close(c))) => bail!("server closed the connection: {c:?}"),
                Some(Ok(_)) => continue,
                Some(Err(e)) => bail!("websocket error: {e}"),
                None => bail!("server closed the connection"),
            }
        }
    }

    /// Closes politely and waits (bounded) for the server to let go.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
        let drain = async { while let Some(Ok(_)) = self.ws.next().await {} };
        let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    }
}

/// A notification names its method in its first bytes; a response never does.
pub fn is_notification(text: &str) -> bool {
    let head = &text.as_bytes()[..text.len().min(48)];
    head.windows(8).any(|w| w == b"\"method\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_notifications_from_responses() {
        let n = fixture::selection_notification(&fixture::selection(3));
        assert!(is_notification(&n), "{n}");
        assert!(!is_notification(
            r#"{"id":1,"jsonrpc":"2.0","result":{"content":[{"text":"{\"method\":1}"}]}}"#
        ));
        assert!(!is_notification(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
    }
}
