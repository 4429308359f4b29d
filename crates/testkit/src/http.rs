//! A bare HTTP/1.1 client for tests that must control every header (Host,
//! Origin, Authorization) and see the answer as sent: one request per
//! connection, an event-stream answer read until its first JSON-RPC message.

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// An answer: status, head and body as text.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answer {
    /// A header's value (first of that name, case-insensitive).
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }

    /// Panics unless every `data:` of an event-stream body is a JSON
    /// object: an empty one (an SSE priming event) is what Gemini CLI's
    /// MCP SDK cannot parse, and takes for a lost connection.
    pub fn assert_every_event_is_json(&self) {
        for line in self.body.lines() {
            if let Some(data) = line.strip_prefix("data:") {
                let parsed: Result<Value, _> = serde_json::from_str(data.trim());
                assert!(
                    parsed.as_ref().is_ok_and(Value::is_object),
                    "an event whose data is not a JSON object: {line:?}\n{}\n{}",
                    self.head,
                    self.body
                );
            }
        }
        assert!(
            !self.body.lines().any(|l| l.starts_with("retry:")),
            "a retry field makes the client re-open the stream: {}",
            self.body
        );
    }

    /// The JSON-RPC message in the body: plain JSON, or the first `data:`
    /// line of an event stream. Panics with the answer if there is none.
    pub fn message(&self) -> Value {
        let data = self
            .body
            .lines()
            .find_map(|l| {
                l.strip_prefix("data:")
                    .map(str::trim)
                    .filter(|d| d.starts_with('{'))
            })
            .unwrap_or(self.body.trim());
        serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {}\n{}", self.head, self.body))
    }
}

/// `POST path` to 127.0.0.1:`port` with exactly `headers` (plus
/// `Content-Length` and `Connection: close`), within `timeout`.
pub fn post(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    timeout: Duration,
) -> Answer {
    request(port, "POST", path, headers, body, timeout)
}

/// [`post`] with another method (`GET`, `DELETE`, `OPTIONS`, ...).
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    timeout: Duration,
) -> Answer {
    try_request(port, method, path, headers, body, timeout).expect("connect")
}

/// [`request`], or `None` when nothing listens on `port`.
pub fn try_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    timeout: Duration,
) -> Option<Answer> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(200))).ok();
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    s.write_all(req.as_bytes()).expect("send the head");
    // The server may answer (413, 401) before the body is all sent.
    let _ = s.write_all(body.as_bytes());
    let deadline = Instant::now() + timeout;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            // A signal (SIGCHLD when a command a test runs ends) interrupts
            // a socket read that has a timeout, SA_RESTART or not.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => break,
        }
        // An event stream stays open: stop at its first whole message.
        let text = String::from_utf8_lossy(&raw);
        if let Some((_, body)) = text.split_once("\r\n\r\n") {
            if body.contains("\"jsonrpc\"") && body.contains("}\n") {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Some(Answer {
        status: head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        head: head.to_owned(),
        body: body.to_owned(),
    })
}

/// A JSON-RPC `body` POSTed to an MCP server's `/mcp` on 127.0.0.1:`port`
/// as a client does: loopback `Host`, `Authorization: Bearer <token>`, both
/// answer types accepted, and the session's id and protocol version once
/// there is a `session`.
pub fn mcp_post(
    port: u16,
    token: &str,
    session: Option<&str>,
    body: &str,
    timeout: Duration,
) -> Answer {
    let session: &[(&str, &str)] = match session {
        Some(s) => &[
            ("Mcp-Session-Id", s),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        None => &[],
    };
    mcp_post_with(port, token, session, body, timeout)
}

/// A JSON-RPC `body` (a request of `method`; a tool call names its tool,
/// `name`) POSTed as a client of the 2026-07-28 MCP revision sends it: no
/// session, the revision in `MCP-Protocol-Version`, and the revision's
/// routing headers (`Mcp-Method`, `Mcp-Name`; SEP-2243). The revision's
/// `_meta` (protocol version, client capabilities) is the body's business.
pub fn mcp_post_stateless(
    port: u16,
    token: &str,
    (method, name): (&str, Option<&str>),
    body: &str,
    timeout: Duration,
) -> Answer {
    let mut extra = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        extra.push(("Mcp-Name", name));
    }
    mcp_post_with(port, token, &extra, body, timeout)
}

/// `body` POSTed to `/mcp` with a client's `Host`, `Authorization`,
/// `Accept` and `Content-Type`, then `extra`.
fn mcp_post_with(
    port: u16,
    token: &str,
    extra: &[(&str, &str)],
    body: &str,
    timeout: Duration,
) -> Answer {
    try_mcp_post_with(port, token, extra, body, timeout).expect("connect")
}

/// [`mcp_post_with`], or `None` when nothing listens on `port`.
fn try_mcp_post_with(
    port: u16,
    token: &str,
    extra: &[(&str, &str)],
    body: &str,
    timeout: Duration,
) -> Option<Answer> {
    let host = format!("127.0.0.1:{port}");
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("Host", host.as_str()),
        ("Authorization", auth.as_str()),
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
    ];
    headers.extend_from_slice(extra);
    try_request(port, "POST", "/mcp", &headers, body, timeout)
}

/// A client's `initialize` request.
fn initialize() -> String {
    serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})
    .to_string()
}

/// Whether the MCP server that gave out `token` still answers on
/// 127.0.0.1:`port`. A port is free once its server exits and another
/// server may take it at once: only one that accepts `token` is the same.
pub fn mcp_server_answers(port: u16, token: &str, timeout: Duration) -> bool {
    try_mcp_post_with(port, token, &[], &initialize(), timeout).is_some_and(|a| a.status == 200)
}

/// The port of an MCP server's URL as ccbridge reports it
/// (`http://127.0.0.1:<port>/mcp`). Panics on anything else.
pub fn url_port(url: &str) -> u16 {
    url.strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.strip_suffix("/mcp"))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not an MCP URL of ccbridge's: {url}"))
}

/// Opens a session on the MCP server at 127.0.0.1:`port` (`initialize`)
/// and returns its id. Panics unless the server accepts.
pub fn mcp_session(port: u16, token: &str, timeout: Duration) -> String {
    let a = mcp_post(port, token, None, &initialize(), timeout);
    assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
    a.header("mcp-session-id").expect("a session")
}

/// Calls `tool` with `args` in a session of its own and returns the
/// JSON-RPC answer; `timeout` bounds the call (one may wait for a person).
pub fn mcp_call(port: u16, token: &str, tool: &str, args: Value, timeout: Duration) -> Value {
    let session = mcp_session(port, token, timeout);
    let call = serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name": tool, "arguments": args}});
    mcp_post(port, token, Some(&session), &call.to_string(), timeout).message()
}
