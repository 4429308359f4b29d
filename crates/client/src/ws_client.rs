//! An MCP client for IDE servers, connecting the way Claude Code does.
//!
//! `ccbridge call` uses it to exercise any IDE server (ccbridge, the VS Code
//! extension, claudecode.nvim, ...) by hand or from scripts, and tests use it
//! as a stand-in for the Claude Code CLI. It reproduces the CLI's upgrade
//! request (`ws://127.0.0.1:<port>/`, subprotocol `mcp`,
//! `X-Claude-Code-Ide-Authorization`, no `Origin`) and its MCP handshake
//! (`initialize`, then `notifications/initialized`), then sends one request
//! at a time.
//!
//! It is deliberately tolerant of what comes back: frames that are not
//! JSON-RPC are skipped, notifications are queued for
//! [`IdeClient::take_notifications`], requests from the server are answered
//! (`ping` → `{}`, `roots/list` → no roots, anything else → method not
//! found), and answers to requests we gave up on are dropped. Nothing here
//! waits without a bound except [`IdeClient::call_tool`] with no timeout,
//! which is what `openDiff` needs (it blocks until the user decides).
//!
//! It does not send the CLI's `ide_connected` notification: that is how a
//! server learns a Claude Code session is attached, and a debugging client
//! must not pose as one.

use ccbridge_protocol::jsonrpc::{
    ErrorObject, Message, Notification, Request, RequestId, Response,
};
use ccbridge_protocol::mcp::{CallToolResult, Content, ToolDescriptor};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::{ProtocolError, SubProtocolError};
use tokio_tungstenite::tungstenite::http::{self, HeaderValue};
use tokio_tungstenite::tungstenite::{Error as WsError, Message as WsMessage};
use tokio_tungstenite::WebSocketStream;

/// The upgrade header carrying the lock file's `authToken`.
pub const AUTH_HEADER: &str = "X-Claude-Code-Ide-Authorization";
/// The protocol version we ask for (the CLI's).
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// `clientInfo.name` in `initialize`.
pub const CLIENT_NAME: &str = "ccbridge-call";
/// The protocol versions the real CLI (2.1.328) accepts in the
/// `initialize` reply.
pub const CLAUDE_ACCEPTED_VERSIONS: [&str; 5] = [
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
    "2024-10-07",
];
/// At most this many notifications are queued; older ones are dropped.
pub const MAX_QUEUED_NOTIFICATIONS: usize = 10_000;
/// How long `close` and the cancellation notice may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
/// Bound on `tools/list` pages followed.
const MAX_TOOL_PAGES: usize = 100;

/// Everything that can go wrong talking to an IDE server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to 127.0.0.1:{port}: {error}")]
    Connect { port: u16, error: std::io::Error },
    #[error("the lock file's token contains characters that cannot be sent in an HTTP header")]
    InvalidToken,
    #[error("the server refused the token (HTTP {status})")]
    Refused { status: u16 },
    #[error("the server requires a token (HTTP {status}) and none was sent")]
    TokenRequired { status: u16 },
    #[error("the server answered the WebSocket upgrade with HTTP {status}")]
    UpgradeRejected { status: u16 },
    #[error("the WebSocket handshake failed: {0}")]
    Handshake(Box<WsError>),
    #[error("timed out after {} {during}", fmt_duration(*.after))]
    Timeout { after: Duration, during: String },
    #[error("the server closed the connection{}", close_suffix(*.code, .reason))]
    Closed { code: Option<u16>, reason: String },
    #[error("WebSocket error: {0}")]
    WebSocket(Box<WsError>),
    #[error("the server answered {method} with error {}: {}", .error.code, .error.message)]
    Rpc { method: String, error: ErrorObject },
    #[error("the server's answer to {method} is malformed: {detail}")]
    BadResult { method: String, detail: String },
}

fn fmt_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

fn close_suffix(code: Option<u16>, reason: &str) -> String {
    match (code, reason.is_empty()) {
        (None, _) => String::new(),
        (Some(c), true) => format!(" (code {c})"),
        (Some(c), false) => format!(" (code {c}: {reason})"),
    }
}

fn ws_error(e: WsError) -> ClientError {
    match e {
        WsError::ConnectionClosed | WsError::AlreadyClosed => ClientError::Closed {
            code: None,
            reason: String::new(),
        },
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => ClientError::Closed {
            code: None,
            reason: "the connection was reset without a closing handshake".into(),
        },
        WsError::Io(ref io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            ) =>
        {
            ClientError::Closed {
                code: None,
                reason: io.to_string(),
            }
        }
        e => ClientError::WebSocket(Box::new(e)),
    }
}

/// The upgrade request the CLI sends, minus its `User-Agent` and
/// compression offer: `GET ws://127.0.0.1:<port>/`, `Sec-WebSocket-Protocol:
/// mcp` (unless `subprotocol` is false) and the token header when there is a
/// token. No `Origin`.
pub fn handshake_request(
    port: u16,
    token: Option<&str>,
    subprotocol: bool,
) -> Result<http::Request<()>, ClientError> {
    let mut req = format!("ws://127.0.0.1:{port}/")
        .into_client_request()
        .map_err(|e| ClientError::Handshake(Box::new(e)))?;
    let headers = req.headers_mut();
    if subprotocol {
        headers.insert(
            http::header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("mcp"),
        );
    }
    if let Ok(ua) = HeaderValue::from_str(&format!("{CLIENT_NAME}/{}", env!("CARGO_PKG_VERSION"))) {
        headers.insert(http::header::USER_AGENT, ua);
    }
    if let Some(token) = token {
        let mut v = HeaderValue::from_str(token).map_err(|_| ClientError::InvalidToken)?;
        v.set_sensitive(true);
        headers.insert(AUTH_HEADER, v);
    }
    Ok(req)
}

/// A frame we understood, or an error the server could not tie to an id.
enum Incoming {
    Message(Message),
    /// `{"id": null, "error": ...}`: with one request in flight, it is about that one.
    OrphanError(ErrorObject),
}

/// A connected, initialized MCP session with an IDE server.
pub struct IdeClient {
    ws: WebSocketStream<TcpStream>,
    next_id: i64,
    notifications: VecDeque<Notification>,
    dropped_notifications: u64,
    initialize_result: Value,
    default_timeout: Duration,
}

impl std::fmt::Debug for IdeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdeClient")
            .field("next_id", &self.next_id)
            .field("queued_notifications", &self.notifications.len())
            .field("protocol_version", &self.protocol_version())
            .finish_non_exhaustive()
    }
}

impl IdeClient {
    /// Connects to `127.0.0.1:port`, upgrades with `token`, and performs
    /// `initialize` + `notifications/initialized`, all within `timeout`.
    /// `timeout` is also the bound for [`list_tools`](Self::list_tools).
    ///
    /// A server that accepts the upgrade without echoing the `mcp`
    /// subprotocol (browsers and the CLI tolerate that; tungstenite does
    /// not) is retried once without offering it.
    pub async fn connect(
        port: u16,
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<IdeClient, ClientError> {
        Self::connect_as(port, token, timeout, CLIENT_NAME).await
    }

    /// [`connect`](Self::connect) with another `clientInfo.name`. ccbridge
    /// treats [`CLIENT_NAME`] as a one-shot tool (it neither evicts Claude's
    /// session nor receives notifications); `"claude-code"` makes this
    /// client a Claude session: it evicts others (unless the server serves
    /// several) and, once it has listed the tools, receives the selection
    /// and @-mentions. Tests play Claude that way.
    pub async fn connect_as(
        port: u16,
        token: Option<&str>,
        timeout: Duration,
        client_name: &str,
    ) -> Result<IdeClient, ClientError> {
        let attempt = async {
            let ws = match Self::upgrade(port, token, true).await {
                Err(ClientError::Handshake(e))
                    if matches!(
                        *e,
                        WsError::Protocol(ProtocolError::SecWebSocketSubProtocolError(
                            SubProtocolError::NoSubProtocol
                        ))
                    ) =>
                {
                    tracing::debug!("server did not echo the mcp subprotocol; retrying without");
                    Self::upgrade(port, token, false).await?
                }
                other => other?,
            };
            let mut client = IdeClient {
                ws,
                next_id: 0,
                notifications: VecDeque::new(),
                dropped_notifications: 0,
                initialize_result: Value::Null,
                default_timeout: timeout,
            };
            let params = json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": client_name, "version": env!("CARGO_PKG_VERSION")},
            });
            let result = client.round_trip("initialize", Some(params)).await?;
            if !result.is_object() {
                return Err(ClientError::BadResult {
                    method: "initialize".into(),
                    detail: "the result is not an object".into(),
                });
            }
            client.initialize_result = result;
            client
                .send(Notification::new("notifications/initialized", None).into())
                .await?;
            Ok(client)
        };
        match tokio::time::timeout(timeout, attempt).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Timeout {
                after: timeout,
                during: format!("connecting to the IDE server on port {port}"),
            }),
        }
    }

    async fn upgrade(
        port: u16,
        token: Option<&str>,
        subprotocol: bool,
    ) -> Result<WebSocketStream<TcpStream>, ClientError> {
        let tcp = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .await
            .map_err(|error| ClientError::Connect { port, error })?;
        // Small request/response messages: don't let Nagle delay them.
        let _ = tcp.set_nodelay(true);
        let request = handshake_request(port, token, subprotocol)?;
        match tokio_tungstenite::client_async(request, tcp).await {
            Ok((ws, _response)) => Ok(ws),
            Err(WsError::Http(resp)) => {
                let status = resp.status().as_u16();
                Err(match (status, token.is_some()) {
                    (401 | 403, true) => ClientError::Refused { status },
                    (401 | 403, false) => ClientError::TokenRequired { status },
                    _ => ClientError::UpgradeRejected { status },
                })
            }
            Err(e) => Err(ClientError::Handshake(Box::new(e))),
        }
    }

    /// The server's `initialize` result.
    pub fn initialize_result(&self) -> &Value {
        &self.initialize_result
    }

    /// The protocol version the server chose (empty if it sent none).
    pub fn protocol_version(&self) -> &str {
        self.initialize_result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// Whether the real CLI would accept the server's protocol version.
    pub fn claude_accepts_version(&self) -> bool {
        CLAUDE_ACCEPTED_VERSIONS.contains(&self.protocol_version())
    }

    /// `serverInfo.name` and `serverInfo.version`, when present.
    pub fn server_info(&self) -> (Option<&str>, Option<&str>) {
        let info = self.initialize_result.get("serverInfo");
        let field = |k: &str| info.and_then(|i| i.get(k)).and_then(Value::as_str);
        (field("name"), field("version"))
    }

    /// `tools/list`, following `nextCursor`. Entries without a name are
    /// skipped; a missing description or schema becomes empty.
    pub async fn list_tools(&mut self) -> Result<Vec<ToolDescriptor>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = cursor.take().map(|c| json!({ "cursor": c }));
            let timeout = Some(self.default_timeout);
            let result = self.request("tools/list", params, timeout).await?;
            let list = result
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| ClientError::BadResult {
                    method: "tools/list".into(),
                    detail: "no `tools` array".into(),
                })?;
            tools.extend(list.iter().filter_map(tool_from_value));
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => cursor = Some(c.to_owned()),
                _ => return Ok(tools),
            }
        }
        Ok(tools)
    }

    /// `tools/call` returning the result as sent.
    pub async fn call_tool_raw(
        &mut self,
        name: &str,
        arguments: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        let params = json!({ "name": name, "arguments": arguments });
        self.request("tools/call", Some(params), timeout).await
    }

    /// `tools/call`. `timeout: None` waits as long as the server takes (as
    /// the CLI does for `openDiff`). A tool-level failure is `Ok` with
    /// `is_error: true`; see [`parse_call_result`] for content handling.
    pub async fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
        timeout: Option<Duration>,
    ) -> Result<CallToolResult, ClientError> {
        let raw = self.call_tool_raw(name, arguments, timeout).await?;
        parse_call_result(&raw)
    }

    /// Sends any request and returns its result. On timeout the server gets
    /// `notifications/cancelled` and a late answer is ignored.
    pub async fn request(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Option<Duration>,
    ) -> Result<Value, ClientError> {
        let Some(limit) = timeout else {
            return self.round_trip(method, params).await;
        };
        let id = self.next_id;
        match tokio::time::timeout(limit, self.round_trip(method, params)).await {
            Ok(r) => r,
            Err(_) => {
                let cancel = Notification::new(
                    "notifications/cancelled",
                    Some(json!({"requestId": id, "reason": "timed out"})),
                );
                let _ = tokio::time::timeout(CLOSE_TIMEOUT, self.send(cancel.into())).await;
                Err(ClientError::Timeout {
                    after: limit,
                    during: format!("waiting for the answer to {method}"),
                })
            }
        }
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Option<Value>) -> Result<(), ClientError> {
        self.send(Notification::new(method, params).into()).await
    }

    /// Notifications received so far (oldest first), emptying the queue.
    pub fn take_notifications(&mut self) -> Vec<Notification> {
        self.notifications.drain(..).collect()
    }

    /// How many notifications were dropped because the queue was full.
    pub fn dropped_notifications(&self) -> u64 {
        self.dropped_notifications
    }

    /// The next notification: a queued one, or the next to arrive within
    /// `timeout` (`Ok(None)` if none does).
    pub async fn next_notification(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<Notification>, ClientError> {
        if let Some(n) = self.notifications.pop_front() {
            return Ok(Some(n));
        }
        let wait = async {
            loop {
                if let Incoming::Message(m) = self.read().await? {
                    self.handle_unsolicited(m).await?;
                }
                if let Some(n) = self.notifications.pop_front() {
                    return Ok(n);
                }
            }
        };
        match tokio::time::timeout(timeout, wait).await {
            Ok(r) => r.map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Closes the connection politely, waiting at most about a second.
    pub async fn close(mut self) -> Result<(), ClientError> {
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, async {
            if self.ws.close(None).await.is_ok() {
                while let Some(Ok(_)) = self.ws.next().await {}
            }
        })
        .await;
        Ok(())
    }

    async fn round_trip(
        &mut self,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(Request::new(id, method, params).into()).await?;
        loop {
            match self.read().await? {
                Incoming::Message(Message::Response(Response {
                    id: Some(RequestId::Number(n)),
                    outcome,
                })) if n == id => {
                    return outcome
                        .map(|raw| raw.to_value())
                        .map_err(|error| ClientError::Rpc {
                            method: method.to_owned(),
                            error,
                        })
                }
                Incoming::OrphanError(error) => {
                    return Err(ClientError::Rpc {
                        method: method.to_owned(),
                        error,
                    })
                }
                Incoming::Message(m) => self.handle_unsolicited(m).await?,
            }
        }
    }

    /// Queues notifications, answers server requests, drops stray responses.
    async fn handle_unsolicited(&mut self, m: Message) -> Result<(), ClientError> {
        match m {
            Message::Notification(n) => {
                if self.notifications.len() >= MAX_QUEUED_NOTIFICATIONS {
                    self.notifications.pop_front();
                    self.dropped_notifications += 1;
                }
                self.notifications.push_back(n);
                Ok(())
            }
            Message::Request(r) => {
                let outcome = match r.method.as_str() {
                    "ping" => Ok(json!({}).into()),
                    "roots/list" => Ok(json!({ "roots": [] }).into()),
                    other => Err(ErrorObject::method_not_found(other)),
                };
                self.send(
                    Response {
                        id: Some(r.id),
                        outcome,
                    }
                    .into(),
                )
                .await
            }
            Message::Response(r) => {
                tracing::debug!(id = ?r.id, "ignoring a response to no pending request");
                Ok(())
            }
        }
    }

    async fn send(&mut self, m: Message) -> Result<(), ClientError> {
        self.ws
            .send(WsMessage::text(m.to_json()))
            .await
            .map_err(ws_error)
    }

    /// The next frame that is a JSON-RPC message; skips everything else.
    async fn read(&mut self) -> Result<Incoming, ClientError> {
        loop {
            let frame = match self.ws.next().await {
                None => {
                    return Err(ClientError::Closed {
                        code: None,
                        reason: String::new(),
                    })
                }
                Some(Err(e)) => return Err(ws_error(e)),
                Some(Ok(f)) => f,
            };
            let text = match &frame {
                WsMessage::Text(t) => t.as_str(),
                WsMessage::Binary(b) => match std::str::from_utf8(b) {
                    Ok(t) => t,
                    Err(_) => continue,
                },
                WsMessage::Close(c) => {
                    return Err(ClientError::Closed {
                        code: c.as_ref().map(|c| u16::from(c.code)),
                        reason: c
                            .as_ref()
                            .map(|c| c.reason.as_str().to_owned())
                            .unwrap_or_default(),
                    })
                }
                // tungstenite answers pings itself.
                WsMessage::Ping(_) | WsMessage::Pong(_) | WsMessage::Frame(_) => continue,
            };
            match Message::parse(text) {
                // `{"id": null, "error": ...}`: the server could not read
                // our request.
                Ok(Message::Response(Response {
                    id: None,
                    outcome: Err(e),
                })) => return Ok(Incoming::OrphanError(e)),
                Ok(m) => return Ok(Incoming::Message(m)),
                Err(_) => {
                    tracing::debug!(len = text.len(), "skipping a frame that is not JSON-RPC");
                }
            }
        }
    }
}

fn tool_from_value(v: &Value) -> Option<ToolDescriptor> {
    Some(ToolDescriptor {
        name: v.get("name")?.as_str()?.to_owned(),
        description: v
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        input_schema: v
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"})),
        annotations: v.get("annotations").cloned(),
    })
}

/// Reads a `tools/call` result leniently: `isError` defaults to false, a
/// missing `content` is empty, and content items other than text and image
/// (resources, audio, ...) become a text item holding their JSON.
pub fn parse_call_result(v: &Value) -> Result<CallToolResult, ClientError> {
    let bad = |detail: &str| ClientError::BadResult {
        method: "tools/call".into(),
        detail: detail.into(),
    };
    if !v.is_object() {
        return Err(bad("the result is not an object"));
    }
    let content = match v.get("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                serde_json::from_value::<Content>(item.clone())
                    .unwrap_or_else(|_| Content::text(item.to_string()))
            })
            .collect(),
        Some(_) => return Err(bad("`content` is not an array")),
    };
    Ok(CallToolResult {
        content,
        is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_carries_the_clients_headers_and_no_origin() {
        let r = handshake_request(4242, Some("s3cret"), true).unwrap();
        assert_eq!(r.uri().to_string(), "ws://127.0.0.1:4242/");
        let h = r.headers();
        assert_eq!(h["sec-websocket-protocol"], "mcp");
        assert_eq!(h["x-claude-code-ide-authorization"], "s3cret");
        assert!(h.get("origin").is_none());
        assert!(
            !format!("{h:?}").contains("s3cret"),
            "token marked sensitive"
        );
        let r = handshake_request(4242, None, false).unwrap();
        assert!(r.headers().get("x-claude-code-ide-authorization").is_none());
        assert!(r.headers().get("sec-websocket-protocol").is_none());
        assert!(matches!(
            handshake_request(1, Some("a\nb"), true),
            Err(ClientError::InvalidToken)
        ));
    }

    #[test]
    fn call_results_are_read_leniently() {
        let r = parse_call_result(&json!({
            "content": [
                {"type": "text", "text": "a"},
                {"type": "resource", "resource": {"uri": "file:///x", "text": "b"}},
            ],
            "isError": true,
        }))
        .unwrap();
        assert!(r.is_error);
        assert_eq!(r.content[0], Content::text("a"));
        assert!(r.content[1]
            .as_text()
            .is_some_and(|t| t.contains("file:///x")));
        assert!(parse_call_result(&json!({})).unwrap().content.is_empty());
        assert!(parse_call_result(&json!([])).is_err());
        assert!(parse_call_result(&json!({"content": "x"})).is_err());
    }

    #[test]
    fn error_messages_read_well() {
        assert_eq!(
            ClientError::Refused { status: 401 }.to_string(),
            "the server refused the token (HTTP 401)"
        );
        assert_eq!(
            ClientError::Closed {
                code: Some(4001),
                reason: "Another Claude Code session connected to this IDE".into()
            }
            .to_string(),
            "the server closed the connection (code 4001: Another Claude Code session connected to this IDE)"
        );
        assert_eq!(
            ClientError::Timeout {
                after: Duration::from_millis(250),
                during: "x".into()
            }
            .to_string(),
            "timed out after 250 ms x"
        );
    }
}
