//! The floor: the least an MCP server on bare tokio-tungstenite can do for
//! the same client.
//!
//! It accepts with `accept_hdr_async`, checking the auth header and echoing
//! the `mcp` subprotocol; parses each request with serde_json just enough to
//! get its id, method and tool name; and answers from strings serialized once
//! at start-up (`initialize`, `tools/list` and a `getDiagnostics` result of
//! the same size and shape as ccbridge's), splicing in the id. Notifications
//! are ignored. A `selection_changed` is pushed, pre-serialized, to every
//! connection when one is sent through [`Floor::notify`]'s channel.
//!
//! One task per connection, no writer task, no state, no timeouts.

use crate::fixture;
use ccbridge_protocol::mcp::{self, Implementation};
use ccbridge_protocol::tools::{diagnostics_result, Tool};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use std::borrow::Cow;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

/// The canned `result` members, serialized once.
struct Canned {
    initialize: String,
    tools_list: String,
    diagnostics: String,
    empty: String,
}

impl Canned {
    fn new() -> Self {
        let server = Implementation {
            name: "floor".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            title: None,
        };
        let tools: Vec<_> = Tool::ALL
            .into_iter()
            .filter(|t| *t != Tool::ExecuteCode)
            .map(Tool::descriptor)
            .collect();
        Canned {
            initialize: mcp::initialize_result("2025-11-25", &server).to_string(),
            tools_list: serde_json::json!({ "tools": tools }).to_string(),
            diagnostics: diagnostics_result(&fixture::all_diagnostics())
                .to_value()
                .to_string(),
            empty: "{}".into(),
        }
    }
}

/// Just enough of a request to answer it.
#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
}

/// A bound floor server.
pub struct Floor {
    listener: TcpListener,
    port: u16,
    token: Arc<str>,
    notify: broadcast::Sender<Utf8Bytes>,
}

impl Floor {
    /// Binds `127.0.0.1` on an OS-assigned port.
    pub async fn bind(token: &str) -> std::io::Result<Floor> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        Ok(Floor {
            listener,
            port,
            token: token.into(),
            notify: broadcast::channel(1024).0,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// Send a pre-serialized notification here to push it to every open
    /// connection.
    pub fn notify(&self) -> broadcast::Sender<Utf8Bytes> {
        self.notify.clone()
    }

    /// Serializes the canned answers, then accepts connections forever.
    /// (The serializing happens here, after [`Floor::bind`], so that the
    /// `floor-server` binary writes its lock file before doing it: start-up
    /// is measured to the lock file, and ccbridge has no such work.)
    pub async fn run(self) {
        let canned = Arc::new(Canned::new());
        loop {
            let Ok((stream, _)) = self.listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let rx = self.notify.subscribe();
            tokio::spawn(serve(stream, self.token.clone(), canned.clone(), rx));
        }
    }
}

fn reject(status: StatusCode) -> ErrorResponse {
    let mut r = ErrorResponse::new(None);
    *r.status_mut() = status;
    r
}

// The callback's error type is tungstenite's `ErrorResponse`.
#[allow(clippy::result_large_err)]
async fn serve(
    stream: TcpStream,
    token: Arc<str>,
    canned: Arc<Canned>,
    mut notes: broadcast::Receiver<Utf8Bytes>,
) {
    let check = |req: &Request, mut resp: Response| -> Result<Response, ErrorResponse> {
        let h = req.headers();
        match h.get("x-claude-code-ide-authorization") {
            Some(v) if v.as_bytes() == token.as_bytes() => {}
            _ => return Err(reject(StatusCode::UNAUTHORIZED)),
        }
        let mcp = h
            .get_all("sec-websocket-protocol")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|p| p.trim() == "mcp"));
        if mcp {
            resp.headers_mut()
                .insert("sec-websocket-protocol", HeaderValue::from_static("mcp"));
        }
        Ok(resp)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(stream, check).await else {
        return;
    };
    loop {
        tokio::select! {
            frame = ws.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => continue,
                };
                if let Some(answer) = answer(&canned, text.as_str()) {
                    if ws.send(Message::text(answer)).await.is_err() {
                        break;
                    }
                }
            }
            note = notes.recv() => match note {
                Ok(n) => {
                    if ws.send(Message::Text(n)).await.is_err() {
                        break;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            },
        }
    }
}

/// The answer to one message; `None` for notifications and junk.
fn answer(canned: &Canned, text: &str) -> Option<String> {
    let req: Incoming<'_> = serde_json::from_str(text).ok()?;
    let id = req.id?;
    let result = match req.method.as_deref()? {
        "initialize" => &canned.initialize,
        "tools/list" => &canned.tools_list,
        "tools/call" => match req.params.and_then(|p| p.name).as_deref() {
            Some("getDiagnostics") => &canned.diagnostics,
            _ => &canned.empty,
        },
        _ => &canned.empty,
    };
    let id = id.to_string();
    let mut out = String::with_capacity(result.len() + id.len() + 40);
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(&id);
    out.push_str(r#","result":"#);
    out.push_str(result);
    out.push('}');
    Some(out)
}

/// A fresh random token, 32 hex digits, from `/dev/urandom`.
pub fn random_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_carry_the_id_and_the_canned_result() {
        let c = Canned::new();
        let a = answer(&c, &fixture::get_diagnostics_request(42)).unwrap();
        assert_eq!(fixture::response_id(&a), Some(42));
        assert_eq!(fixture::count_diagnostics(&a).unwrap(), 1000);
        assert!(answer(&c, fixture::INITIALIZED).is_none());
        let l = answer(&c, &fixture::tools_list_request(7)).unwrap();
        assert_eq!(fixture::response_id(&l), Some(7));
    }
}
