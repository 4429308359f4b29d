//! The small blocking HTTP/1.1 server every scripted model API
//! ([`crate::mock_anthropic`], [`crate::mock_model`]) is built on: read one
//! request (`Content-Length` or chunked body), answer JSON or a server-sent
//! event stream.
//!
//! Why blocking std threads: the harness drives CLIs in tmux from plain
//! `#[test]`s and needs no async runtime. The CLIs under test are the only
//! peers, so this parses exactly what they send and nothing more.

use serde_json::Value;
use std::io::{self, BufRead, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A loopback listener serving each connection on a thread of its own with
/// `serve`, until dropped.
pub struct Listener {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept_thread: Option<JoinHandle<()>>,
}

impl Listener {
    /// Binds an OS-assigned port; `name` names the threads.
    pub fn start(
        name: &str,
        serve: impl Fn(TcpStream) + Send + Sync + 'static,
    ) -> io::Result<Listener> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let serve = Arc::new(serve);
        let (accept_stop, conn_name) = (stop.clone(), format!("{name}-conn"));
        let accept_thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                for stream in listener.incoming() {
                    if accept_stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let serve = serve.clone();
                    let _ = std::thread::Builder::new()
                        .name(conn_name.clone())
                        .spawn(move || serve(stream));
                }
            })?;
        Ok(Listener {
            addr,
            stop,
            accept_thread: Some(accept_thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept() so the thread sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.accept_thread.take() {
            let _ = t.join();
        }
    }
}

/// One request as read off the connection.
pub struct Request {
    pub method: String,
    /// Path including the query.
    pub path: String,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; a non-JSON body is kept as a JSON string; no
    /// body is `null`.
    pub body: Value,
}

/// Reads one request (head and body); `None` when the peer closed first.
pub fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let mut head = Vec::new();
    loop {
        let mut line = Vec::new();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&line);
        if line == b"\r\n" || line == b"\n" {
            break;
        }
        if head.len() > 1 << 20 {
            return Err(io::Error::other("request head too large"));
        }
    }
    let mut raw = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut raw);
    if req.parse(&head).map_err(io::Error::other)?.is_partial() {
        return Err(io::Error::other("partial request head"));
    }
    let method = req.method.unwrap_or("").to_string();
    let path = req.path.unwrap_or("").to_string();
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).trim().to_string(),
            )
        })
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let chunked =
        header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        read_chunked(reader)?
    } else {
        let len: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut b = vec![0; len];
        reader.read_exact(&mut b)?;
        b
    };
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()))
    };
    Ok(Some(Request {
        method,
        path,
        headers,
        body,
    }))
}

fn read_chunked(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line)?;
        let size_str = line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size_str, 16).map_err(io::Error::other)?;
        if size == 0 {
            // Trailers until a blank line.
            loop {
                let mut t = String::new();
                if r.read_line(&mut t)? == 0 || t == "\r\n" || t == "\n" {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        r.read_exact(&mut crlf)?;
    }
}

/// `200` with a JSON body; the connection stays open for the next request.
pub fn respond_json(w: &mut impl Write, v: &Value) -> io::Result<()> {
    let body = v.to_string();
    write!(
        w,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
        body.len(),
        body
    )?;
    w.flush()
}

/// `200` with `text/event-stream` and `body` (already formatted events), then
/// the connection ends: the stream's end is the end of the answer.
pub fn respond_sse(w: &mut impl Write, extra_headers: &str, body: &str) -> io::Result<()> {
    write!(
        w,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n{extra_headers}connection: close\r\n\r\n"
    )?;
    w.write_all(body.as_bytes())?;
    w.flush()
}

/// The last `n` characters of `s` (for failure messages).
pub fn last_chars(s: &str, n: usize) -> &str {
    let count = s.chars().count();
    match s.char_indices().nth(count.saturating_sub(n)) {
        Some((i, _)) => &s[i..],
        None => s,
    }
}
