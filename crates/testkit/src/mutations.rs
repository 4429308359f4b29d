//! Seeded mutations of well-formed HTTP requests, sent over real sockets:
//! security checklist item 25 for the HTTP servers, which no cargo-fuzz
//! target reaches (one would build rmcp, axum and hyper with the sanitizer
//! in every run).
//!
//! A test gives well-formed requests of its server ([`Request`]);
//! [`attack`] sends mutations of them, each on a connection of its own:
//! half with a value of the JSON body replaced by one of another type,
//! size or aim ([`Mutation::Json`], the aims the test's own: paths into
//! a canary folder), a quarter with the body's bytes edited and its length
//! right, a quarter with the whole request's bytes edited. Each must be
//! answered or closed in time; the test then checks what must not have
//! changed. `CCBRIDGE_MUTATION_SEED` replays a run.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// `file` as a request would aim at it: its absolute path, and its path
/// from a folder beside its own (`../<its folder>/<its name>`), for
/// [`Attack::aims`] when `file` is a canary outside the served folder.
pub fn paths_to(file: &std::path::Path) -> Vec<Value> {
    let folder = file
        .parent()
        .and_then(|p| p.file_name())
        .unwrap_or_default();
    let name = file.file_name().unwrap_or_default();
    vec![
        json!(file),
        json!(format!(
            "../{}/{}",
            folder.to_string_lossy(),
            name.to_string_lossy()
        )),
    ]
}

/// One well-formed request: its head without the length, and its body.
pub struct Request {
    pub head: String,
    pub body: Vec<u8>,
}

impl Request {
    /// `POST path` with a loopback `Host`, `Authorization: Bearer token`,
    /// the JSON and event-stream `Accept`, JSON content, then `extra`
    /// (whole header lines, each ending in CRLF).
    pub fn post(port: u16, token: &str, path: &str, extra: &str, body: &Value) -> Request {
        Request {
            head: format!(
                "POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n{extra}"
            ),
            body: body.to_string().into_bytes(),
        }
    }

    /// `GET path` (with its query) with a loopback `Host` and
    /// `Authorization: Bearer token`.
    pub fn get(port: u16, token: &str, path: &str) -> Request {
        Request {
            head: format!(
                "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
            ),
            body: Vec::new(),
        }
    }

    fn bytes(&self, body: &[u8]) -> Vec<u8> {
        let mut out = format!("{}Content-Length: {}\r\n\r\n", self.head, body.len()).into_bytes();
        out.extend_from_slice(body);
        out
    }
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ended {
    /// Answered with this status.
    Status(u16),
    /// Closed without an answer.
    Closed,
    /// Neither in time.
    Hung,
}

/// What [`attack`] sends and what it must never get back.
pub struct Attack<'a> {
    pub port: u16,
    /// The well-formed requests to mutate.
    pub requests: &'a [Request],
    /// Values put into JSON bodies besides the usual ones (paths into a
    /// canary folder).
    pub aims: &'a [Value],
    /// Bytes no answer may hold (the canary's contents).
    pub secret: &'a [u8],
    pub count: usize,
    /// Replaced by `CCBRIDGE_MUTATION_SEED` when set.
    pub seed: u64,
}

/// Sends `a.count` mutations of `a.requests` (see the module doc); how
/// they ended, by kind. Panics, naming the seed and the request, at one
/// neither answered nor closed within 10 s or answered with the secret.
pub fn attack(a: &Attack<'_>) -> BTreeMap<Ended, usize> {
    let (port, requests, aims, count) = (a.port, a.requests, a.aims, a.count);
    let seed = std::env::var("CCBRIDGE_MUTATION_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(a.seed);
    let mut rng = Rng(seed.max(1));
    let mut ended = BTreeMap::new();
    for i in 0..count {
        let base = &requests[rng.below(requests.len())];
        let request = match rng.below(4) {
            _ if base.body.is_empty() => mutate(&base.bytes(&base.body), &mut rng),
            0 => mutate(&base.bytes(&base.body), &mut rng),
            1 => base.bytes(&mutate(&base.body, &mut rng)),
            _ => match mutate_json(&base.body, &mut rng, aims) {
                Some(body) => base.bytes(&body),
                None => base.bytes(&mutate(&base.body, &mut rng)),
            },
        };
        let (end, answer) = send(port, &request, Duration::from_secs(10));
        assert_ne!(
            end,
            Ended::Hung,
            "request {i} of seed {seed} was neither answered nor closed in 10 s: {:?}",
            String::from_utf8_lossy(&request)
        );
        assert!(
            a.secret.is_empty() || find(&answer, a.secret, 0).is_none(),
            "request {i} of seed {seed} got the secret back: {:?}\n=> {:?}",
            String::from_utf8_lossy(&request),
            String::from_utf8_lossy(&answer)
        );
        *ended.entry(end).or_default() += 1;
    }
    ended
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `base` with one to four random edits: bytes flipped, inserted, deleted
/// or repeated, the text cut short, a header's value or the length
/// replaced.
fn mutate(base: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut r = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        if r.is_empty() {
            r.push(b'{');
        }
        let at = rng.below(r.len());
        match rng.below(7) {
            0 => r[at] ^= 1 << rng.below(8),
            1 => r.insert(at, rng.next() as u8),
            2 => {
                let n = rng.below(16).min(r.len() - at);
                r.drain(at..at + n);
            }
            3 => {
                let n = rng.below(64).min(r.len() - at);
                let copy = r[at..at + n].to_vec();
                r.splice(at..at, copy);
            }
            4 => r.truncate(at.max(1)),
            5 => {
                // A value of some header: from its ": " to its line's end.
                if let Some(colon) = find(&r, b": ", at).map(|c| c + 2) {
                    let end = find(&r, b"\r\n", colon).unwrap_or(r.len());
                    let junk = ["", "0", "-1", "99999999999", "\u{ff}\u{fe}", "a\r\nX-Y: z"];
                    r.splice(colon..end, junk[rng.below(junk.len())].bytes());
                }
            }
            _ => {
                let lie = format!("Content-Length: {}", rng.below(100_000));
                if let Some(start) = find(&r, b"Content-Length: ", 0) {
                    let end = find(&r, b"\r\n", start).unwrap_or(r.len());
                    r.splice(start..end, lie.bytes());
                }
            }
        }
    }
    r
}

/// `body` (JSON) with one value replaced by another of any type or size,
/// or by one of `aims`; `None` if it is not JSON.
fn mutate_json(body: &[u8], rng: &mut Rng, aims: &[Value]) -> Option<Vec<u8>> {
    let mut v: Value = serde_json::from_slice(body).ok()?;
    let mut deep = json!(0);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let mut choices = vec![
        json!(null),
        json!(-1),
        json!(u64::MAX),
        json!(1.5e300),
        json!(""),
        json!("x".repeat(100_000)),
        json!([]),
        json!({}),
        json!(true),
        json!("\u{202e}\u{0}\u{ffff}"),
        json!("(a+)+$"),
        deep,
    ];
    choices.extend_from_slice(aims);
    let mut k = rng.below(count(&v));
    *nth(&mut v, &mut k)? = choices[rng.below(choices.len())].clone();
    Some(v.to_string().into_bytes())
}

/// The `k`th value of `v` in document order (`v` itself is the 0th).
fn nth<'a>(v: &'a mut Value, k: &mut usize) -> Option<&'a mut Value> {
    if *k == 0 {
        return Some(v);
    }
    *k -= 1;
    match v {
        Value::Array(items) => items.iter_mut().find_map(|x| nth(x, k)),
        Value::Object(fields) => fields.values_mut().find_map(|x| nth(x, k)),
        _ => None,
    }
}

fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(items) => items.iter().map(count).sum(),
        Value::Object(fields) => fields.values().map(count).sum(),
        _ => 0,
    }
}

/// Where `needle` first occurs in `hay` at or after `from`.
fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// Sends `request` on its own connection, closes the writing side, and
/// reads the answer: until the end, or for at most 2 s after its head (an
/// event stream stays open).
fn send(port: u16, request: &[u8], limit: Duration) -> (Ended, Vec<u8>) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(100))).ok();
    // The server may answer and close before it has read everything.
    let _ = s.write_all(request);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let status = |got: &[u8]| {
        let code = got.get(9..12).and_then(|c| std::str::from_utf8(c).ok());
        code.and_then(|c| c.parse().ok())
            .map_or(Ended::Closed, Ended::Status)
    };
    let mut deadline = Instant::now() + limit;
    let mut headed = false;
    let mut got = Vec::new();
    let mut buf = [0u8; 16384];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if !headed && find(&got, b"\r\n\r\n", 0).is_some() {
                    headed = true;
                    deadline = deadline.min(Instant::now() + Duration::from_secs(2));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(_) => {}
        }
    }
    if !headed && Instant::now() >= deadline {
        return (Ended::Hung, got);
    }
    (status(&got), got)
}
