//! Shared helpers for the `ccbridge-server` integration tests.
//!
//! - [`FakeFrontend`]: a scriptable editor that records every call in order
//!   and lets a test wait (bounded) for a call to happen.
//! - [`WsClient`]: a minimal Claude Code-like WebSocket client on
//!   tokio-tungstenite, with request ids, a backlog of not-yet-consumed
//!   messages and close-frame inspection.
//! - [`raw_exchange`] and friends: handshake probes over plain TCP.
//! - [`start_server`] / [`TestServer`]: a real engine on 127.0.0.1:0 with
//!   its lock directory in a tempdir.
//!
//! Every wait here is bounded; a helper that times out panics with what it
//! was waiting for.

use async_trait::async_trait;
use ccbridge_protocol::mcp::Content;
use ccbridge_protocol::tools::OpenFileArgs;
use ccbridge_server::{
    Capabilities, ClientId, ClientInfo, CloseReason, Config, DiffId, DiffView, EditorEvent,
    EngineHandle, Frontend, FrontendError, OpenedFile, Server, ServerError,
};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderMap, HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

/// The default bound for "this should happen soon".
pub const WAIT: Duration = Duration::from_secs(5);

pub const AUTH_HEADER: &str = "X-Claude-Code-Ide-Authorization";

/// Runs `f` under a bound, panicking with `what` on timeout.
pub async fn bounded<T>(what: &str, limit: Duration, f: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {limit:?} waiting for {what}"),
    }
}

/// Polls `cond` until it holds, bounded by `limit`. For state that has no
/// notification (files on disk); polls every few milliseconds.
pub async fn eventually(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    bounded(what, limit, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
}

// ------------------------------------------------------------ FakeFrontend

/// One call the engine made on the frontend.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    ShowDiff(DiffView),
    CloseDiff(DiffId, CloseReason),
    OpenFile(OpenFileArgs),
    OpenFiles(Vec<String>),
    CloseTab(String),
    SaveDocument(String),
    ReformatFile(String),
    ConfirmExecute(String),
    ExecuteCode(String),
    ClientConnected(ClientInfo),
    ClientDisconnected(ClientId),
}

/// What the fake editor answers. `None` for `open_file`/`open_files` means
/// "succeed, echoing the request".
#[derive(Debug, Clone)]
pub struct Answers {
    pub show_diff: Result<(), FrontendError>,
    pub close_diff: Result<(), FrontendError>,
    pub open_file: Option<Result<OpenedFile, FrontendError>>,
    pub open_files: Option<Result<Vec<String>, FrontendError>>,
    pub close_tab: Result<bool, FrontendError>,
    pub save_document: Result<(), FrontendError>,
    pub reformat_file: Result<(), FrontendError>,
    pub confirm_execute: Result<bool, FrontendError>,
    pub execute_code: Result<Vec<Content>, FrontendError>,
}

impl Default for Answers {
    fn default() -> Self {
        Answers {
            show_diff: Ok(()),
            close_diff: Ok(()),
            open_file: None,
            open_files: None,
            close_tab: Ok(true),
            save_document: Ok(()),
            reformat_file: Ok(()),
            confirm_execute: Ok(false),
            execute_code: Ok(vec![Content::text("executed")]),
        }
    }
}

/// A scriptable editor: records calls in order, answers from [`Answers`].
pub struct FakeFrontend {
    caps: Mutex<Capabilities>,
    answers: Mutex<Answers>,
    calls: Mutex<Vec<Call>>,
    changed: watch::Sender<u64>,
}

impl FakeFrontend {
    /// Every capability except `executeCode`.
    pub fn new() -> Arc<Self> {
        Self::with_caps(Capabilities {
            execute_code: false,
            ..Capabilities::all()
        })
    }

    pub fn with_caps(caps: Capabilities) -> Arc<Self> {
        Arc::new(FakeFrontend {
            caps: Mutex::new(caps),
            answers: Mutex::new(Answers::default()),
            calls: Mutex::new(Vec::new()),
            changed: watch::channel(0).0,
        })
    }

    /// Changes what the editor answers from now on.
    pub fn script(&self, f: impl FnOnce(&mut Answers)) {
        f(&mut self.answers.lock().unwrap());
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    fn record(&self, c: Call) {
        self.calls.lock().unwrap().push(c);
        self.changed.send_modify(|v| *v += 1);
    }

    fn answers(&self) -> Answers {
        self.answers.lock().unwrap().clone()
    }

    /// Waits until `f` finds what it wants in the calls so far.
    pub async fn wait_for<T>(&self, what: &str, mut f: impl FnMut(&[Call]) -> Option<T>) -> T {
        let mut rx = self.changed.subscribe();
        let found = tokio::time::timeout(WAIT, async {
            loop {
                rx.borrow_and_update();
                if let Some(t) = f(&self.calls.lock().unwrap()) {
                    return t;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        })
        .await;
        match found {
            Ok(t) => t,
            Err(_) => panic!(
                "timed out waiting for the frontend: {what}; calls so far: {:#?}",
                self.calls()
            ),
        }
    }

    /// The diff shown with this tab name (waits for `show_diff`).
    pub async fn wait_show_diff(&self, tab_name: &str) -> DiffView {
        self.wait_for(&format!("show_diff {tab_name:?}"), |calls| {
            calls.iter().find_map(|c| match c {
                Call::ShowDiff(v) if v.tab_name == tab_name => Some(v.clone()),
                _ => None,
            })
        })
        .await
    }

    /// Waits until `close_diff(id)` was called.
    pub async fn wait_close_diff(&self, id: DiffId) {
        self.wait_for(&format!("close_diff({id})"), |calls| {
            calls
                .iter()
                .any(|c| matches!(c, Call::CloseDiff(i, _) if *i == id))
                .then_some(())
        })
        .await
    }

    /// Why `id` was closed (the first close seen).
    pub fn close_reason(&self, id: DiffId) -> Option<CloseReason> {
        self.calls().iter().find_map(|c| match c {
            Call::CloseDiff(i, r) if *i == id => Some(*r),
            _ => None,
        })
    }

    pub fn close_diff_count(&self, id: DiffId) -> usize {
        self.count(|c| matches!(c, Call::CloseDiff(i, _) if *i == id))
    }

    pub fn count(&self, pred: impl Fn(&Call) -> bool) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| pred(c))
            .count()
    }
}

#[async_trait]
impl Frontend for FakeFrontend {
    fn capabilities(&self) -> Capabilities {
        self.caps.lock().unwrap().clone()
    }

    async fn show_diff(&self, diff: DiffView) -> Result<(), FrontendError> {
        self.record(Call::ShowDiff(diff));
        self.answers().show_diff
    }

    async fn close_diff(&self, id: DiffId, reason: CloseReason) -> Result<(), FrontendError> {
        self.record(Call::CloseDiff(id, reason));
        self.answers().close_diff
    }

    async fn open_file(&self, args: OpenFileArgs) -> Result<OpenedFile, FrontendError> {
        self.record(Call::OpenFile(args.clone()));
        self.answers().open_file.unwrap_or_else(|| {
            Ok(OpenedFile {
                file_path: args.file_path,
                language_id: None,
                line_count: Some(3),
            })
        })
    }

    async fn open_files(&self, paths: Vec<String>) -> Result<Vec<String>, FrontendError> {
        self.record(Call::OpenFiles(paths.clone()));
        self.answers().open_files.unwrap_or(Ok(paths))
    }

    async fn close_tab(&self, tab_name: String) -> Result<bool, FrontendError> {
        self.record(Call::CloseTab(tab_name));
        self.answers().close_tab
    }

    async fn save_document(&self, path: String) -> Result<(), FrontendError> {
        self.record(Call::SaveDocument(path));
        self.answers().save_document
    }

    async fn reformat_file(&self, path: String) -> Result<(), FrontendError> {
        self.record(Call::ReformatFile(path));
        self.answers().reformat_file
    }

    async fn confirm_execute(&self, code: String) -> Result<bool, FrontendError> {
        self.record(Call::ConfirmExecute(code));
        self.answers().confirm_execute
    }

    async fn execute_code(&self, code: String) -> Result<Vec<Content>, FrontendError> {
        self.record(Call::ExecuteCode(code));
        self.answers().execute_code
    }

    fn client_connected(&self, client: &ClientInfo) {
        self.record(Call::ClientConnected(client.clone()));
    }

    fn client_disconnected(&self, client: ClientId) {
        self.record(Call::ClientDisconnected(client));
    }
}

// ---------------------------------------------------------------- WsClient

/// How a connection ended, as the client saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closed {
    /// A close frame with this code and reason.
    Frame(u16, String),
    /// A close frame without a code.
    Bare,
    /// The stream ended without a close frame.
    Eof,
    /// A transport error.
    Error(String),
}

impl Closed {
    pub fn code(&self) -> Option<u16> {
        match self {
            Closed::Frame(c, _) => Some(*c),
            _ => None,
        }
    }
}

/// The real client's `initialize` params (2.1.328).
pub fn real_initialize_params(protocol_version: &str) -> Value {
    json!({
        "protocolVersion": protocol_version,
        "capabilities": {
            "roots": {"listChanged": true},
            "elicitation": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
        "clientInfo": {
            "name": "claude-code",
            "title": "Claude Code",
            "version": "2.1.328",
            "description": "Anthropic's agentic coding tool",
            "websiteUrl": "https://claude.com/claude-code"
        }
    })
}

/// A pid for `ide_connected` (the CLI sends its own).
pub const CLI_PID: u32 = 424242;

/// A minimal Claude Code-like WebSocket client.
pub struct WsClient<S = TcpStream> {
    ws: WebSocketStream<S>,
    next_id: i64,
    /// The subprotocol the server chose, if any.
    pub protocol: Option<String>,
    /// Headers of the server's 101 answer (empty for in-memory pairs).
    pub response_headers: HeaderMap,
    backlog: VecDeque<Value>,
    closed: Option<Closed>,
}

/// Generous client-side limits: the tests send and receive large frames.
fn client_ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(64 << 20))
        .max_frame_size(Some(64 << 20))
}

impl WsClient<TcpStream> {
    /// Connects like the real CLI: token header, subprotocol `mcp`, its
    /// User-Agent and compression offer, no Origin.
    pub async fn connect(port: u16, token: &str) -> Result<Self, WsError> {
        Self::connect_with(
            port,
            &[
                (AUTH_HEADER, token),
                ("Sec-WebSocket-Protocol", "mcp"),
                ("User-Agent", "claude-code/2.1.328 (cli)"),
                (
                    "Sec-WebSocket-Extensions",
                    "permessage-deflate; client_max_window_bits",
                ),
            ],
        )
        .await
    }

    /// Connects with exactly these extra headers.
    pub async fn connect_with(port: u16, headers: &[(&str, &str)]) -> Result<Self, WsError> {
        let mut req = format!("ws://127.0.0.1:{port}/").into_client_request()?;
        for (k, v) in headers {
            req.headers_mut().append(
                HeaderName::from_bytes(k.as_bytes()).expect("header name"),
                HeaderValue::from_str(v).expect("header value"),
            );
        }
        let tcp = bounded("TCP connect", WAIT, TcpStream::connect(("127.0.0.1", port)))
            .await
            .map_err(WsError::Io)?;
        let (ws, resp) = bounded(
            "the WebSocket handshake",
            WAIT,
            tokio_tungstenite::client_async_with_config(req, tcp, Some(client_ws_config())),
        )
        .await?;
        let protocol = resp
            .headers()
            .get("sec-websocket-protocol")
            .map(|v| v.to_str().unwrap_or("<non-ascii>").to_owned());
        Ok(WsClient {
            ws,
            next_id: 0,
            protocol,
            response_headers: resp.headers().clone(),
            backlog: VecDeque::new(),
            closed: None,
        })
    }

    /// The TCP stream, to write raw bytes behind tungstenite's back.
    pub fn tcp(&mut self) -> &mut TcpStream {
        self.ws.get_mut()
    }

    /// The WebSocket itself, to drive it frame by frame.
    pub fn into_inner(self) -> WebSocketStream<TcpStream> {
        self.ws
    }
}

impl<S> WsClient<S>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    pub async fn send_raw(&mut self, text: &str) {
        bounded("sending a frame", WAIT, self.ws.send(Message::text(text)))
            .await
            .expect("send failed");
    }

    pub async fn send_json(&mut self, v: &Value) {
        self.send_raw(&v.to_string()).await
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send_json(&json!({"jsonrpc":"2.0","method":method,"params":params}))
            .await
    }

    /// Sends a request and returns its id without waiting for the answer.
    pub async fn start_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send_json(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        id
    }

    /// The response to request `id` (the whole message).
    pub async fn response(&mut self, id: i64) -> Value {
        self.response_within(id, WAIT)
            .await
            .unwrap_or_else(|| panic!("no response to request {id} (closed: {:?})", self.closed))
    }

    pub async fn response_within(&mut self, id: i64, limit: Duration) -> Option<Value> {
        self.recv_until(|m| is_response_to(m, id), limit).await
    }

    /// Sends a request and waits for its response (the whole message).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.start_request(method, params).await;
        self.response(id).await
    }

    /// `tools/call`; returns the `result` (panics on a JSON-RPC error).
    pub async fn call_tool(&mut self, name: &str, args: Value) -> Value {
        let r = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await;
        assert!(r.get("error").is_none(), "{name} failed: {r}");
        r["result"].clone()
    }

    /// Starts a `tools/call` without waiting; returns its id.
    pub async fn start_tool(&mut self, name: &str, args: Value) -> i64 {
        self.start_request("tools/call", json!({"name": name, "arguments": args}))
            .await
    }

    /// `initialize` with the real client's params and this version; returns
    /// the response message.
    pub async fn initialize(&mut self, version: &str) -> Value {
        self.request("initialize", real_initialize_params(version))
            .await
    }

    /// The real client's whole opening: `initialize` (2025-11-25),
    /// `notifications/initialized`, `ide_connected {pid}`, `tools/list`.
    /// Returns the listed tools.
    pub async fn handshake(&mut self) -> Vec<Value> {
        let init = self.initialize("2025-11-25").await;
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        self.notify("notifications/initialized", json!({})).await;
        self.notify("ide_connected", json!({"pid": CLI_PID})).await;
        let list = self.request("tools/list", json!({})).await;
        list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list failed: {list}"))
            .clone()
    }

    /// Reads one JSON message, or `None` at `deadline` or once closed.
    async fn read_one(&mut self, deadline: Instant) -> Option<Value> {
        loop {
            if self.closed.is_some() {
                return None;
            }
            let next = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .ok()?;
            match next {
                None => self.closed = Some(Closed::Eof),
                Some(Ok(Message::Text(t))) => {
                    return Some(serde_json::from_str(t.as_str()).unwrap_or_else(|e| {
                        panic!("the server sent a frame that is not JSON ({e}): {t}")
                    }))
                }
                Some(Ok(Message::Binary(b))) => {
                    panic!("the server sent a binary frame: {b:?}")
                }
                Some(Ok(Message::Close(f))) => {
                    self.closed = Some(match f {
                        Some(f) => Closed::Frame(f.code.into(), f.reason.to_string()),
                        None => Closed::Bare,
                    })
                }
                Some(Ok(_)) => {}
                Some(Err(WsError::ConnectionClosed | WsError::AlreadyClosed)) => {
                    self.closed = Some(Closed::Eof)
                }
                Some(Err(e)) => self.closed = Some(Closed::Error(e.to_string())),
            }
        }
    }

    /// The first message matching `pred` (earlier unmatched messages stay
    /// in the backlog for later calls), or `None` after `limit`.
    pub async fn recv_until(
        &mut self,
        mut pred: impl FnMut(&Value) -> bool,
        limit: Duration,
    ) -> Option<Value> {
        if let Some(pos) = self.backlog.iter().position(&mut pred) {
            return self.backlog.remove(pos);
        }
        let deadline = Instant::now() + limit;
        while let Some(v) = self.read_one(deadline).await {
            if pred(&v) {
                return Some(v);
            }
            self.backlog.push_back(v);
        }
        None
    }

    /// Like [`Self::recv_until`], panicking with `what` on timeout.
    pub async fn expect(&mut self, what: &str, pred: impl FnMut(&Value) -> bool) -> Value {
        match self.recv_until(pred, WAIT).await {
            Some(v) => v,
            None => panic!(
                "timed out waiting for {what}; closed: {:?}; backlog: {:?}",
                self.closed, self.backlog
            ),
        }
    }

    /// Every message matching `pred` that arrives within `window` (plus
    /// those already in the backlog), in order.
    pub async fn collect(
        &mut self,
        mut pred: impl FnMut(&Value) -> bool,
        window: Duration,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        let mut rest = VecDeque::new();
        for v in self.backlog.drain(..) {
            if pred(&v) {
                out.push(v);
            } else {
                rest.push_back(v);
            }
        }
        self.backlog = rest;
        let deadline = Instant::now() + window;
        while let Some(v) = self.read_one(deadline).await {
            if pred(&v) {
                out.push(v);
            } else {
                self.backlog.push_back(v);
            }
        }
        out
    }

    /// Asserts that no message matching `pred` arrives within `window`.
    pub async fn assert_none(
        &mut self,
        what: &str,
        pred: impl FnMut(&Value) -> bool,
        window: Duration,
    ) {
        let got = self.collect(pred, window).await;
        assert!(
            got.is_empty(),
            "expected no {what} within {window:?}, got {got:#?}"
        );
    }

    /// Reads until the connection ends; returns how.
    pub async fn wait_closed(&mut self, limit: Duration) -> Closed {
        let deadline = Instant::now() + limit;
        while self.closed.is_none() {
            match self.read_one(deadline).await {
                Some(v) => self.backlog.push_back(v),
                None if self.closed.is_none() => {
                    panic!("the connection was not closed within {limit:?}")
                }
                None => {}
            }
        }
        self.closed.clone().expect("closed")
    }

    pub fn closed(&self) -> Option<&Closed> {
        self.closed.as_ref()
    }

    /// Starts the closing handshake with `code` and leaves the connection
    /// open for reading: [`Self::wait_closed`] then tells how the server
    /// answered.
    pub async fn start_close(&mut self, code: u16) {
        let frame = tokio_tungstenite::tungstenite::protocol::CloseFrame {
            code: code.into(),
            reason: "done".into(),
        };
        tokio::time::timeout(WAIT, self.ws.send(Message::Close(Some(frame))))
            .await
            .expect("the close frame was taken in time")
            .expect("the close frame was sent");
    }

    /// Closes the connection politely.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(WAIT, self.ws.close(None)).await;
    }
}

/// `m` is the response to request `id`.
pub fn is_response_to(m: &Value, id: i64) -> bool {
    m.get("method").is_none() && m["id"] == json!(id)
}

/// `m` is a notification with this method.
pub fn is_notification(method: &'static str) -> impl Fn(&Value) -> bool {
    move |m| m["method"] == method && m.get("id").is_none()
}

/// The text items of a tool result.
pub fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content in {result}"))
        .iter()
        .map(|c| {
            assert_eq!(c["type"], "text", "{result}");
            c["text"].as_str().expect("text").to_owned()
        })
        .collect()
}

/// The first text item parsed as JSON.
pub fn first_json(result: &Value) -> Value {
    let t = texts(result);
    serde_json::from_str(&t[0]).unwrap_or_else(|e| panic!("not JSON ({e}): {}", t[0]))
}

pub fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

/// The error code of a JSON-RPC error response.
pub fn error_code(m: &Value) -> i64 {
    m["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error response: {m}"))
}

// ------------------------------------------------------------------- raw TCP

/// A standard WebSocket key.
pub const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// An upgrade request: `GET <path> HTTP/1.1`, the given `Host` (none when
/// `None`), the standard upgrade headers, then `headers` verbatim.
pub fn upgrade_request(path: &str, host: Option<&str>, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut s = format!("GET {path} HTTP/1.1\r\n");
    if let Some(h) = host {
        s.push_str(&format!("Host: {h}\r\n"));
    }
    s.push_str(&format!(
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {KEY}\r\n"
    ));
    for (k, v) in headers {
        s.push_str(&format!("{k}: {v}\r\n"));
    }
    s.push_str("\r\n");
    s.into_bytes()
}

/// What the server answered to a raw request.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The HTTP status, 0 if the server sent nothing.
    pub status: u16,
    /// The status line and headers.
    pub head: String,
    /// Everything received.
    pub raw: Vec<u8>,
    /// The server closed the connection (seen for non-101 answers).
    pub closed: bool,
}

impl RawResponse {
    /// A header of the answer (case-insensitive name), if present once.
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

fn find_head_end(b: &[u8]) -> Option<usize> {
    b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// Writes `bytes` on a fresh connection and reads the answer. For a 101
/// it stops after the head; otherwise it also waits for the server to close.
pub async fn raw_exchange(port: u16, bytes: &[u8]) -> RawResponse {
    let mut s = bounded("TCP connect", WAIT, TcpStream::connect(("127.0.0.1", port)))
        .await
        .expect("connect");
    // The server may answer and close before reading everything.
    let _ = tokio::time::timeout(WAIT, s.write_all(bytes)).await;
    read_http_answer(&mut s).await
}

/// Reads an HTTP answer from `s` (see [`raw_exchange`]).
pub async fn read_http_answer(s: &mut TcpStream) -> RawResponse {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + WAIT;
    let mut closed = false;
    // The head.
    while find_head_end(&raw).is_none() {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => panic!(
                "no complete HTTP answer within {WAIT:?}; got {:?}",
                String::from_utf8_lossy(&raw)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => {
                closed = true;
                break;
            }
            Ok(Ok(n)) => raw.extend_from_slice(&buf[..n]),
        }
    }
    let head_len = find_head_end(&raw).unwrap_or(raw.len());
    let head = String::from_utf8_lossy(&raw[..head_len]).into_owned();
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    // A refusal must end the connection.
    if status != 101 && !closed {
        loop {
            match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
                Err(_) => break,
                Ok(Ok(0)) | Ok(Err(_)) => {
                    closed = true;
                    break;
                }
                Ok(Ok(n)) => raw.extend_from_slice(&buf[..n]),
            }
        }
    }
    RawResponse {
        status,
        head,
        raw,
        closed,
    }
}

/// A client frame (masked with a zero key, which is legal and leaves the
/// payload as is) with FIN set as given.
pub fn client_frame(opcode: u8, fin: bool, payload: &[u8]) -> Vec<u8> {
    let mut f = frame_header(opcode, fin, payload.len() as u64);
    f.extend_from_slice(payload);
    f
}

/// The header of a masked client frame claiming `len` payload bytes.
pub fn frame_header(opcode: u8, fin: bool, len: u64) -> Vec<u8> {
    let mut f = vec![(if fin { 0x80 } else { 0 }) | opcode];
    if len < 126 {
        f.push(0x80 | len as u8);
    } else if len <= u16::MAX as u64 {
        f.push(0x80 | 126);
        f.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        f.push(0x80 | 127);
        f.extend_from_slice(&len.to_be_bytes());
    }
    f.extend_from_slice(&[0, 0, 0, 0]);
    f
}

/// Splits bytes a server sent after the upgrade into frames
/// `(opcode, payload)`; server frames are never masked. A trailing
/// incomplete frame is ignored.
pub fn parse_server_frames(mut b: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while b.len() >= 2 {
        let opcode = b[0] & 0x0f;
        assert_eq!(b[1] & 0x80, 0, "a server frame must not be masked");
        let (len, head) = match b[1] & 0x7f {
            126 if b.len() >= 4 => (u16::from_be_bytes([b[2], b[3]]) as usize, 4),
            127 if b.len() >= 10 => (
                u64::from_be_bytes(b[2..10].try_into().unwrap()) as usize,
                10,
            ),
            126 | 127 => break,
            n => (n as usize, 2),
        };
        if b.len() < head + len {
            break;
        }
        out.push((opcode, b[head..head + len].to_vec()));
        b = &b[head + len..];
    }
    out
}

/// The code and reason of a close frame's payload.
pub fn close_payload(p: &[u8]) -> (u16, String) {
    assert!(p.len() >= 2, "close frame without a code");
    (
        u16::from_be_bytes([p[0], p[1]]),
        String::from_utf8_lossy(&p[2..]).into_owned(),
    )
}

// ------------------------------------------------------------------ servers

pub type Join = JoinHandle<Result<(), ServerError>>;

/// A test config: lock files in `lock_dir`, short debounce and notify delay.
pub fn test_config(lock_dir: Option<std::path::PathBuf>) -> Config {
    let mut c = Config::new("TestIDE", vec!["/work/test-workspace".into()]);
    c.lock_dir = lock_dir;
    c.port = None;
    c.selection_debounce = Duration::from_millis(20);
    c.notify_delay = Duration::from_millis(50);
    c.frontend_timeout = Duration::from_secs(5);
    c
}

/// Binds and runs a server; returns once it serves (and, with a lock dir,
/// once its lock file exists).
pub async fn start_server(
    config: Config,
    frontend: Arc<dyn Frontend>,
) -> (u16, String, EngineHandle, oneshot::Sender<()>, Join) {
    let has_lock = config.lock_dir.is_some();
    let server = Server::bind(config, frontend).await.expect("bind");
    let port = server.port();
    let token = server.token().to_owned();
    let handle = server.handle();
    let (tx, rx) = oneshot::channel::<()>();
    let join = tokio::spawn(server.run(async {
        let _ = rx.await;
    }));
    if has_lock {
        let h = handle.clone();
        eventually("the lock file to be written", WAIT, || {
            h.lock_path().is_some_and(|p| p.exists())
        })
        .await;
    }
    (port, token, handle, tx, join)
}

/// A running engine with a [`FakeFrontend`] and a private lock directory.
pub struct TestServer {
    pub port: u16,
    pub token: String,
    pub handle: EngineHandle,
    pub frontend: Arc<FakeFrontend>,
    pub dir: tempfile::TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    join: Option<Join>,
}

static BARRIER: AtomicU64 = AtomicU64::new(0);

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(FakeFrontend::new(), |_| {}).await
    }

    /// Starts with `tweak` applied to [`test_config`].
    pub async fn start_with(frontend: Arc<FakeFrontend>, tweak: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = test_config(Some(dir.path().join("ide")));
        tweak(&mut config);
        let (port, token, handle, tx, join) = start_server(config, frontend.clone()).await;
        TestServer {
            port,
            token,
            handle,
            frontend,
            dir,
            shutdown: Some(tx),
            join: Some(join),
        }
    }

    /// A connected client that has not yet said anything.
    pub async fn connect(&self) -> WsClient {
        WsClient::connect(self.port, &self.token)
            .await
            .expect("connect with the right token")
    }

    /// A client after the real client's opening sequence.
    pub async fn client(&self) -> WsClient {
        let mut c = self.connect().await;
        c.handshake().await;
        c
    }

    /// A client after the opening sequence that is known to receive
    /// notifications: a probe at-mention has reached it.
    pub async fn ready_client(&self) -> WsClient {
        let mut c = self.client().await;
        self.wait_ready(&mut c).await;
        c
    }

    /// Waits until `c` receives notifications, by sending a probe
    /// at-mention (queued until a client is ready, then delivered). Only
    /// meaningful while no other client is ready: a ready one would take
    /// the probe live instead.
    pub async fn wait_ready<S>(&self, c: &mut WsClient<S>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        let n = BARRIER.fetch_add(1, Ordering::Relaxed);
        let probe = format!("/__probe__/{n}");
        self.send(EditorEvent::AtMention(
            ccbridge_protocol::notifications::AtMentioned {
                file_path: probe.clone(),
                line_start: None,
                line_end: None,
            },
        ))
        .await;
        c.expect("the readiness probe", |m| {
            m["method"] == "at_mentioned" && m["params"]["filePath"] == probe.as_str()
        })
        .await;
    }

    pub async fn send(&self, ev: EditorEvent) {
        self.handle.send(ev).await.expect("engine alive");
    }

    /// Returns once every event sent before has been applied: events are
    /// applied in order, so a marker event that `c` can observe through
    /// `checkDocumentDirty` proves the earlier ones are in.
    pub async fn sync(&self, c: &mut WsClient) {
        let n = BARRIER.fetch_add(1, Ordering::Relaxed);
        let path = format!("/__barrier__/{n}");
        self.send(EditorEvent::Dirty {
            path: path.clone(),
            is_dirty: true,
        })
        .await;
        bounded("the event barrier", WAIT, async {
            loop {
                let r = c
                    .call_tool("checkDocumentDirty", json!({"filePath": path}))
                    .await;
                if first_json(&r)["success"] == json!(true) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await
    }

    /// Shuts the engine down and returns `run`'s result.
    pub async fn stop(&mut self) -> Result<(), ServerError> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let join = self.join.take().expect("stopped once");
        bounded("the engine to stop", Duration::from_secs(10), join)
            .await
            .expect("run panicked")
    }

    /// True while `run` has not returned.
    pub fn is_running(&self) -> bool {
        self.join.as_ref().is_some_and(|j| !j.is_finished())
    }

    /// A client with the right token still gets through a full handshake.
    pub async fn assert_serving(&self) {
        let mut c = self.connect().await;
        let r = c.initialize("2025-11-25").await;
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
        let p = c.request("ping", json!({})).await;
        assert_eq!(p["result"], json!({}));
    }
}
