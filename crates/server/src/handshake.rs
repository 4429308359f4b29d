//! The HTTP upgrade request: read within bounds, judged, answered.
//!
//! Written by hand (with `httparse`) rather than through tungstenite's
//! accept callback so every rejection is an exact HTTP status sent *before*
//! any upgrade, and so reading the request is bounded in bytes and time:
//!
//! | check | answer |
//! |---|---|
//! | not `GET` | 405 |
//! | `Host` missing, repeated or not loopback/allowed | 400 / 403 |
//! | any `Origin` (browsers always send one; the CLI never does) | 403 |
//! | `X-Claude-Code-Ide-Authorization` missing, repeated or wrong | 401 |
//! | not a WebSocket upgrade, bad key | 400 / 426 |
//! | request over 16 KiB or 64 headers | 431 |
//!
//! The token is accepted only from its header — never from the query,
//! a cookie, `Authorization` or the subprotocol list, all of which a web
//! page can set. The subprotocol `mcp` is echoed when offered, and nothing
//! else ever is; compression offers are ignored.

use crate::token::AuthToken;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub const AUTH_HEADER: &str = "x-claude-code-ide-authorization";
pub const MAX_REQUEST_BYTES: usize = 16 * 1024;
const MAX_HEADERS: usize = 64;

/// What the handshake needs to know.
pub struct Policy<'a> {
    pub token: &'a AuthToken,
    /// Extra accepted `Host` names (lower-case comparison), for WSL/containers.
    pub allowed_hosts: &'a [String],
}

/// The decision on one upgrade request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accept {
        key: String,
        protocol: Option<&'static str>,
    },
    Reject(Rejection),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub status: u16,
    /// Short, token-free reason, sent as the body and logged.
    pub reason: &'static str,
}

fn reject(status: u16, reason: &'static str) -> Verdict {
    Verdict::Reject(Rejection { status, reason })
}

/// Judges a parsed request. Pure: no I/O, never panics.
pub fn evaluate(req: &httparse::Request<'_, '_>, policy: &Policy<'_>) -> Verdict {
    if req.method != Some("GET") {
        return reject(405, "only GET upgrades are served");
    }
    if req.version != Some(1) {
        return reject(400, "HTTP/1.1 is required");
    }
    let headers = |name: &'static str| {
        req.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    let one = |name: &'static str| -> Result<Option<&[u8]>, ()> {
        let mut it = headers(name);
        match (it.next(), it.next()) {
            (None, _) => Ok(None),
            (Some(v), None) => Ok(Some(v)),
            _ => Err(()),
        }
    };

    match one("host") {
        Err(()) => return reject(400, "repeated Host header"),
        Ok(None) => return reject(400, "missing Host header"),
        Ok(Some(h)) => {
            if !std::str::from_utf8(h).is_ok_and(|h| host_allowed(h, policy.allowed_hosts)) {
                return reject(403, "Host is not a loopback name");
            }
        }
    }
    if headers("origin").next().is_some() {
        return reject(403, "browser origins are refused");
    }
    match one(AUTH_HEADER) {
        Ok(Some(t)) if policy.token.matches(t) => {}
        Ok(None) => return reject(401, "missing auth token"),
        Err(()) => return reject(401, "repeated auth token"),
        Ok(Some(_)) => return reject(401, "wrong auth token"),
    }
    if !headers("upgrade").any(|v| has_token(v, "websocket")) {
        return reject(426, "this port only serves WebSocket upgrades");
    }
    if !headers("connection").any(|v| has_token(v, "upgrade")) {
        return reject(400, "Connection: Upgrade is required");
    }
    match one("sec-websocket-version") {
        Ok(Some(b"13")) => {}
        _ => return reject(426, "WebSocket version 13 is required"),
    }
    let key = match one("sec-websocket-key") {
        Ok(Some(k)) if valid_key(k) => String::from_utf8_lossy(k).into_owned(),
        _ => return reject(400, "invalid Sec-WebSocket-Key"),
    };
    let protocol = headers("sec-websocket-protocol")
        .any(|v| has_token(v, "mcp"))
        .then_some("mcp");
    Verdict::Accept { key, protocol }
}

/// Is `value` a comma-separated list containing `token` (case-insensitive)?
fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|b| *b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

/// A base64 encoding of 16 bytes: 22 base64 characters and `==`.
fn valid_key(k: &[u8]) -> bool {
    k.len() == 24
        && k.ends_with(b"==")
        && k[..22]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
}

/// Exact names only: `127.0.0.1`, `localhost`, `[::1]` and the configured
/// ones, each with an optional numeric port. No DNS, no lenient IP parsing
/// (`2130706433`, `0x7f.0.0.1`, `localhost6`, `127.0.0.1.nip.io` all fail).
/// The one rule for a loopback `Host` (the workspace tools server uses it
/// too).
pub fn host_allowed(host: &str, extra: &[String]) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inner, port)) if port.is_empty() || valid_port(port) => {
                return inner == "::1";
            }
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if valid_port(&format!(":{port}")) => name,
            Some(_) => return false,
            None => host,
        }
    };
    name == "127.0.0.1"
        || name.eq_ignore_ascii_case("localhost")
        || extra.iter().any(|h| h.eq_ignore_ascii_case(name))
}

fn valid_port(p: &str) -> bool {
    p.strip_prefix(':')
        .is_some_and(|d| !d.is_empty() && d.len() <= 5 && d.bytes().all(|b| b.is_ascii_digit()))
}

/// A successful upgrade: the bytes the client sent after its request.
#[derive(Debug)]
pub struct Upgraded {
    pub leftover: Vec<u8>,
    pub protocol: Option<&'static str>,
}

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("rejected with {}: {}", .0.status, .0.reason)]
    Rejected(Rejection),
    #[error("the client did not finish its request in time")]
    Timeout,
    #[error("connection closed during the handshake")]
    Closed,
    #[error("i/o error during the handshake: {0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for HandshakeError {
    fn from(e: std::io::Error) -> Self {
        HandshakeError::Io(e)
    }
}

/// Reads and judges one upgrade request, and answers it: `101` on success,
/// the rejection status otherwise.
pub async fn perform<S>(
    stream: &mut S,
    policy: &Policy<'_>,
    timeout: Duration,
) -> Result<Upgraded, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    perform_with_delay(stream, policy, timeout, |_| Duration::ZERO).await
}

/// [`perform`], answering a rejection only after `delay(&rejection)`: the
/// decision is made at once, the answer is held (see `refusals`).
pub async fn perform_with_delay<S>(
    stream: &mut S,
    policy: &Policy<'_>,
    timeout: Duration,
    delay: impl FnOnce(&Rejection) -> Duration,
) -> Result<Upgraded, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let read = tokio::time::timeout(timeout, read_request(stream)).await;
    let (buf, head_len) = match read {
        Err(_) => return Err(HandshakeError::Timeout),
        Ok(Err(ReadError::Io(e))) => return Err(e.into()),
        Ok(Err(ReadError::Closed)) => return Err(HandshakeError::Closed),
        Ok(Err(ReadError::Reject(r))) => {
            let wait = delay(&r);
            return refuse(stream, r, wait).await;
        }
        Ok(Ok(v)) => v,
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    // Parsed successfully once already in read_request.
    let _ = req.parse(&buf[..head_len]);
    match evaluate(&req, policy) {
        Verdict::Reject(r) => {
            let wait = delay(&r);
            refuse(stream, r, wait).await
        }
        Verdict::Accept { key, protocol } => {
            let accept =
                tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
            let mut resp = format!(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n"
            );
            if let Some(p) = protocol {
                resp.push_str(&format!("Sec-WebSocket-Protocol: {p}\r\n"));
            }
            resp.push_str("\r\n");
            stream.write_all(resp.as_bytes()).await?;
            stream.flush().await?;
            Ok(Upgraded {
                leftover: buf[head_len..].to_vec(),
                protocol,
            })
        }
    }
}

enum ReadError {
    Io(std::io::Error),
    Closed,
    Reject(Rejection),
}

async fn read_request<S: AsyncRead + Unpin>(stream: &mut S) -> Result<(Vec<u8>, usize), ReadError> {
    let mut buf = vec![0u8; MAX_REQUEST_BYTES];
    let mut filled = 0;
    loop {
        let n = stream
            .read(&mut buf[filled..])
            .await
            .map_err(ReadError::Io)?;
        if n == 0 {
            return Err(ReadError::Closed);
        }
        filled += n;
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf[..filled]) {
            Ok(httparse::Status::Complete(len)) => {
                buf.truncate(filled);
                return Ok((buf, len));
            }
            Ok(httparse::Status::Partial) if filled < buf.len() => continue,
            Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
                return Err(ReadError::Reject(Rejection {
                    status: 431,
                    reason: "request header fields too large",
                }))
            }
            Err(_) => {
                return Err(ReadError::Reject(Rejection {
                    status: 400,
                    reason: "malformed HTTP request",
                }))
            }
        }
    }
}

/// Answers a rejection after `wait`.
async fn refuse<S: AsyncWrite + Unpin>(
    stream: &mut S,
    r: Rejection,
    wait: Duration,
) -> Result<Upgraded, HandshakeError> {
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    respond_error(stream, &r).await;
    Err(HandshakeError::Rejected(r))
}

async fn respond_error<S: AsyncWrite + Unpin>(stream: &mut S, r: &Rejection) {
    let text = match r.status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        405 => "Method Not Allowed",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    };
    let mut resp = format!(
        "HTTP/1.1 {} {text}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n",
        r.status,
        r.reason.len() + 1
    );
    if r.status == 426 {
        resp.push_str("Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n");
    }
    resp.push_str("\r\n");
    resp.push_str(r.reason);
    resp.push('\n');
    let _ = stream.write_all(resp.as_bytes()).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";
    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    fn judge(raw: &str) -> Verdict {
        let token = AuthToken::from_value(TOKEN.into());
        let extra = vec!["host.docker.internal".to_string()];
        let policy = Policy {
            token: &token,
            allowed_hosts: &extra,
        };
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(raw.as_bytes()) {
            Ok(httparse::Status::Complete(_)) => evaluate(&req, &policy),
            other => panic!("test request did not parse: {other:?}"),
        }
    }

    fn request(extra: &str) -> String {
        format!(
            "GET / HTTP/1.1\r\nHost: 127.0.0.1:5000\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Protocol: mcp\r\n{extra}\r\n"
        )
    }

    fn with_token(extra: &str) -> String {
        request(&format!(
            "X-Claude-Code-Ide-Authorization: {TOKEN}\r\n{extra}"
        ))
    }

    fn status(v: Verdict) -> u16 {
        match v {
            Verdict::Accept { .. } => 101,
            Verdict::Reject(r) => r.status,
        }
    }

    #[test]
    fn the_real_clients_request_is_accepted_with_mcp() {
        let raw = with_token(
            "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\nUser-Agent: claude-code/2.1.328 (cli)\r\n",
        );
        assert_eq!(
            judge(&raw),
            Verdict::Accept {
                key: KEY.into(),
                protocol: Some("mcp")
            }
        );
    }

    #[test]
    fn token_matrix() {
        assert_eq!(status(judge(&request(""))), 401, "missing");
        let bad = [
            String::new(),
            "0123456789abcdef0123456789abcdeF".into(),
            format!("{TOKEN}x"),
            TOKEN[..31].into(),
            TOKEN.to_uppercase(),
            "1123456789abcdef0123456789abcdef".into(),
        ];
        for b in bad {
            let raw = request(&format!("X-Claude-Code-Ide-Authorization: {b}\r\n"));
            assert_eq!(status(judge(&raw)), 401, "{b:?}");
        }
        let twice = with_token(&format!("X-Claude-Code-Ide-Authorization: {TOKEN}\r\n"));
        assert_eq!(status(judge(&twice)), 401, "duplicated header");
        // httparse trims surrounding whitespace of header values (RFC 9110 OWS).
        let spaced = request(&format!("X-Claude-Code-Ide-Authorization:   {TOKEN}  \r\n"));
        assert_eq!(status(judge(&spaced)), 101);
        let lower = request(&format!("x-claude-code-ide-authorization: {TOKEN}\r\n"));
        assert_eq!(
            status(judge(&lower)),
            101,
            "header names are case-insensitive"
        );
    }

    #[test]
    fn browser_settable_carriers_do_not_authenticate() {
        let q = request("").replace("GET / ", &format!("GET /?token={TOKEN} "));
        assert_eq!(status(judge(&q)), 401);
        let q = request("").replace("GET / ", &format!("GET /?authToken={TOKEN} "));
        assert_eq!(status(judge(&q)), 401);
        for carrier in [
            format!("Cookie: authToken={TOKEN}\r\n"),
            format!("Authorization: Bearer {TOKEN}\r\n"),
            format!("Sec-WebSocket-Protocol: {TOKEN}\r\n"),
        ] {
            assert_eq!(status(judge(&request(&carrier))), 401, "{carrier}");
        }
    }

    #[test]
    fn any_origin_is_refused() {
        for o in [
            "http://evil.example",
            "null",
            "http://127.0.0.1:5000",
            "vscode-webview://x",
        ] {
            let raw = with_token(&format!("Origin: {o}\r\n"));
            assert_eq!(status(judge(&raw)), 403, "{o}");
        }
    }

    #[test]
    fn host_matrix() {
        let base = with_token("");
        for bad in [
            "evil.example:5000",
            "localhost6",
            "127.0.0.1.nip.io",
            "2130706433",
            "0x7f.0.0.1",
            "127.1",
            "[::2]:5000",
            "127.0.0.1:abc",
            "127.0.0.1:",
            "",
        ] {
            let raw = base.replace("Host: 127.0.0.1:5000", &format!("Host: {bad}"));
            assert_eq!(status(judge(&raw)), 403, "{bad:?}");
        }
        for good in [
            "127.0.0.1:5000",
            "127.0.0.1",
            "localhost:5000",
            "LOCALHOST",
            "[::1]:5000",
            "[::1]",
            "host.docker.internal:5000",
        ] {
            let raw = base.replace("Host: 127.0.0.1:5000", &format!("Host: {good}"));
            assert_eq!(status(judge(&raw)), 101, "{good:?}");
        }
        let missing = base.replace("Host: 127.0.0.1:5000\r\n", "");
        assert_eq!(status(judge(&missing)), 400);
        let two = base.replace(
            "Host: 127.0.0.1:5000\r\n",
            "Host: 127.0.0.1\r\nHost: evil.example\r\n",
        );
        assert_eq!(status(judge(&two)), 400);
    }

    #[test]
    fn subprotocol_is_mcp_or_nothing() {
        let raw = with_token("").replace(
            "Sec-WebSocket-Protocol: mcp",
            "Sec-WebSocket-Protocol: evil, mcp",
        );
        assert_eq!(
            judge(&raw),
            Verdict::Accept {
                key: KEY.into(),
                protocol: Some("mcp")
            }
        );
        let raw = with_token("").replace(
            "Sec-WebSocket-Protocol: mcp",
            "Sec-WebSocket-Protocol: evil",
        );
        assert_eq!(
            judge(&raw),
            Verdict::Accept {
                key: KEY.into(),
                protocol: None
            }
        );
        let long = "x,".repeat(5000);
        let raw = with_token("").replace(
            "Sec-WebSocket-Protocol: mcp",
            &format!("Sec-WebSocket-Protocol: {long}"),
        );
        assert_eq!(
            judge(&raw),
            Verdict::Accept {
                key: KEY.into(),
                protocol: None
            }
        );
    }

    #[test]
    fn non_upgrades_are_refused() {
        let post = with_token("").replace("GET /", "POST /");
        assert_eq!(status(judge(&post)), 405);
        let plain = with_token("").replace("Upgrade: websocket\r\n", "");
        assert_eq!(status(judge(&plain)), 426);
        let v8 = with_token("").replace("Version: 13", "Version: 8");
        assert_eq!(status(judge(&v8)), 426);
        let badkey = with_token("").replace(KEY, "short");
        assert_eq!(status(judge(&badkey)), 400);
        let http10 = with_token("").replace("HTTP/1.1", "HTTP/1.0");
        assert_eq!(status(judge(&http10)), 400);
    }

    async fn over_duplex(input: Vec<u8>) -> (Result<Upgraded, HandshakeError>, String) {
        let token = AuthToken::from_value(TOKEN.into());
        let (mut client, mut server) = tokio::io::duplex(1 << 20);
        client.write_all(&input).await.unwrap();
        let policy = Policy {
            token: &token,
            allowed_hosts: &[],
        };
        let r = perform(&mut server, &policy, Duration::from_secs(2)).await;
        drop(server);
        let mut out = String::new();
        let _ = client.read_to_string(&mut out).await;
        (r, out)
    }

    #[tokio::test]
    async fn answers_101_with_accept_key_and_keeps_leftover_bytes() {
        let mut raw = with_token("").into_bytes();
        raw.extend_from_slice(b"\x81\x00");
        let (r, out) = over_duplex(raw).await;
        let up = r.unwrap();
        assert_eq!(up.leftover, b"\x81\x00");
        assert!(
            out.starts_with("HTTP/1.1 101 Switching Protocols\r\n"),
            "{out}"
        );
        assert!(out.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
        assert!(out.contains("Sec-WebSocket-Protocol: mcp\r\n"));
        assert!(!out.to_ascii_lowercase().contains("extensions"));
    }

    #[tokio::test]
    async fn rejection_is_an_http_answer_without_the_token() {
        let (r, out) =
            over_duplex(request("X-Claude-Code-Ide-Authorization: nope\r\n").into_bytes()).await;
        assert!(matches!(
            r,
            Err(HandshakeError::Rejected(Rejection { status: 401, .. }))
        ));
        assert!(out.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{out}");
        assert!(!out.contains(TOKEN));
    }

    #[tokio::test]
    async fn oversized_and_garbage_requests() {
        let huge = with_token(&format!("X-Pad: {}\r\n", "a".repeat(70 * 1024)));
        let (r, out) = over_duplex(huge.into_bytes()).await;
        assert!(
            matches!(
                r,
                Err(HandshakeError::Rejected(Rejection { status: 431, .. }))
            ),
            "{r:?}"
        );
        assert!(out.starts_with("HTTP/1.1 431"));
        let many: String = (0..200).map(|i| format!("X-H{i}: v\r\n")).collect();
        let (r, _) = over_duplex(with_token(&many).into_bytes()).await;
        assert!(
            matches!(
                r,
                Err(HandshakeError::Rejected(Rejection { status: 431, .. }))
            ),
            "{r:?}"
        );
        let tls_hello = vec![
            0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
        ];
        let (r, out) = over_duplex(tls_hello).await;
        assert!(
            matches!(
                r,
                Err(HandshakeError::Rejected(Rejection { status: 400, .. }))
            ),
            "{r:?}"
        );
        assert!(out.starts_with("HTTP/1.1 400"));
        let bad_utf8 = with_token("X-Bin: \u{1}\r\n").into_bytes();
        let (r, _) = over_duplex(bad_utf8).await;
        assert!(r.is_err());
    }

    #[tokio::test]
    async fn slow_client_times_out() {
        let token = AuthToken::from_value(TOKEN.into());
        let (mut client, mut server) = tokio::io::duplex(1024);
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: 127")
            .await
            .unwrap();
        let policy = Policy {
            token: &token,
            allowed_hosts: &[],
        };
        let r = perform(&mut server, &policy, Duration::from_millis(100)).await;
        assert!(matches!(r, Err(HandshakeError::Timeout)));
    }
}
