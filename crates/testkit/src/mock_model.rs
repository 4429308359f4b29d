//! The part the scripted model APIs share: the script, the request log and
//! the HTTP server. Each format is an [`Api`]: Claude Code's
//! ([`crate::mock_anthropic`]), Gemini CLI's ([`crate::mock_gemini`]),
//! Qwen Code's ([`crate::mock_openai`]) and Codex CLI's
//! ([`crate::mock_responses`]).
//!
//! Why: every agent CLI reaches the IDE paths we test (editor context in
//! the prompt, a diff for an edit) only from inside a model turn, and the
//! tests must run offline and deterministically. Each honours a
//! configurable API base URL, so a local server plays the model. The wire
//! formats differ; everything else is the same and lives here, behind the
//! small [`Api`] trait each format implements:
//!
//! - **The script.** A test queues [`Reply`]s: text, a tool call, or both.
//!   Replies can be keyed on a marker ([`MockModel::on`]): they then answer
//!   only agent turns whose *last user text* (the prompt the user typed, also
//!   while the CLI sends tool results back) contains the marker, in order,
//!   so a background request that carries tools too (Qwen's memory agent,
//!   which runs after each turn unless switched off) cannot eat a keyed reply unless it
//!   quotes the marker. Turns that match no marker take the unkeyed queue
//!   ([`MockModel::push`]); with nothing scripted the answer is the text `ok`.
//!   A marker whose replies are used up answers `ok` too, rather than taking
//!   replies queued for other turns.
//! - **Utility requests** (the Gemini router's complexity classifier, the
//!   next-speaker check, session summaries, Qwen's `respond_in_schema`
//!   calls) are answered automatically, schema-valid where a schema is
//!   given ([`schema_sample`]), and never consume the script.
//! - **The log.** Every request is recorded ([`RecordedRequest`]) with its
//!   flattened text, so a test can assert on what the model was *sent*: the
//!   editor context, a tool result.
//!
//! The server is blocking HTTP/1.1 on std threads (one per connection), so
//! the harness needs no async runtime. Streamed answers are server-sent
//! events ending with the connection.

use crate::stub_http::{last_chars, read_request, respond_json, respond_sse, Listener, Request};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{self, BufReader};
use std::marker::PhantomData;
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The text of an agent turn nothing was scripted for.
pub const DEFAULT_TEXT: &str = "ok";

/// A tool call the scripted model makes: the tool's name and its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub args: Value,
}

/// One scripted model answer: optional text, then optionally one tool call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    pub text: Option<String>,
    pub call: Option<ToolCall>,
}

impl Reply {
    /// A text-only answer, which ends the model's turn.
    pub fn text(text: impl Into<String>) -> Self {
        Reply {
            text: Some(text.into()),
            call: None,
        }
    }

    /// An answer that calls the tool `name` with `args`.
    pub fn call(name: impl Into<String>, args: Value) -> Self {
        Reply {
            text: None,
            call: Some(ToolCall {
                name: name.into(),
                args,
            }),
        }
    }

    /// Adds text before the tool call.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }
}

/// How the mock classified a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// An agent turn: answered from the script.
    Turn,
    /// A background call of the CLI (classifier, summary, JSON check):
    /// answered automatically.
    Utility,
    /// Anything else (token counting, model lists, unknown paths).
    Other,
}

/// One HTTP request the mock received.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    /// Path including the query (`/v1beta/models/m:streamGenerateContent?alt=sse`).
    pub path: String,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; a non-JSON body is kept as a JSON string;
    /// no body is `null`.
    pub body: Value,
    pub served: Served,
    /// All message text of the body, flattened in order, tool calls and tool
    /// results included: what substring assertions run on. The system
    /// prompt is left out, except in Anthropic's format
    /// ([`crate::mock_anthropic`]), where tests look for it.
    pub text: String,
    /// The text of the last user message that has text (not a tool result):
    /// the prompt this turn belongs to. Markers are looked for here.
    pub last_user_text: String,
    /// For a turn: the reply it got.
    pub reply: Option<Reply>,
    /// For an answer with a tool call in the OpenAI format: the call's id.
    pub call_id: Option<String>,
}

impl RecordedRequest {
    /// A header's value (first of that name, case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// An agent turn (see [`Served::Turn`]).
    pub fn is_turn(&self) -> bool {
        self.served == Served::Turn
    }
}

/// A request as parsed, before the API answers it.
pub struct Incoming<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub body: &'a Value,
}

/// An answer to a request.
pub enum Response {
    /// `200` with a JSON body.
    Json(Value),
    /// `200` with `text/event-stream`: each item is one `data:` payload.
    Sse(Vec<String>),
    /// `200` with `text/event-stream`: each item is one event's `event:`
    /// name and its `data:` payload (the Anthropic SDK dispatches on names).
    NamedSse(Vec<(&'static str, String)>),
}

/// One model API wire format (the module docs list the four). The methods
/// are pure functions of the request, so each is unit-tested without a
/// server.
pub trait Api: Send + Sync + 'static {
    /// For thread names and failure messages.
    const NAME: &'static str;

    /// Is this an agent turn, a utility call, or something else?
    fn classify(req: &Incoming) -> Served;

    /// The answer. `reply` is the scripted reply for a [`Served::Turn`],
    /// `None` otherwise; `n` numbers the request (for ids). Also returns the
    /// tool call id the answer used, if any.
    fn respond(
        req: &Incoming,
        served: Served,
        reply: Option<&Reply>,
        n: u64,
    ) -> (Response, Option<String>);

    /// See [`RecordedRequest::text`].
    fn request_text(body: &Value) -> String;

    /// See [`RecordedRequest::last_user_text`].
    fn last_user_text(body: &Value) -> String;
}

/// Scripted replies: keyed on a marker, or in one queue.
#[derive(Default)]
struct Script {
    keyed: Vec<(String, VecDeque<Reply>)>,
    queue: VecDeque<Reply>,
}

impl Script {
    fn next(&mut self, last_user_text: &str) -> Reply {
        let mut marked = false;
        for (marker, replies) in &mut self.keyed {
            if last_user_text.contains(marker.as_str()) {
                marked = true;
                if let Some(r) = replies.pop_front() {
                    return r;
                }
            }
        }
        if marked {
            return Reply::text(DEFAULT_TEXT);
        }
        self.queue
            .pop_front()
            .unwrap_or_else(|| Reply::text(DEFAULT_TEXT))
    }

    fn remaining(&self) -> usize {
        self.queue.len() + self.keyed.iter().map(|(_, q)| q.len()).sum::<usize>()
    }
}

#[derive(Default)]
struct State {
    script: Script,
    requests: Vec<RecordedRequest>,
    next_id: u64,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running scripted model API of format `A` on 127.0.0.1. Dropping it
/// stops accepting connections.
pub struct MockModel<A: Api> {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _listener: Listener,
    _api: PhantomData<A>,
}

/// A condition on the recorded requests did not hold in time.
pub struct RequestTimeout {
    pub what: String,
    pub requests: Vec<RecordedRequest>,
}

impl std::fmt::Debug for RequestTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "timed out waiting for {}; the mock API saw {} request(s):",
            self.what,
            self.requests.len()
        )?;
        for r in &self.requests {
            writeln!(
                f,
                "--- {} {} ({:?}; last 1500 chars of its text):\n{}",
                r.method,
                r.path,
                r.served,
                last_chars(&r.text, 1500)
            )?;
        }
        Ok(())
    }
}

impl std::fmt::Display for RequestTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

impl std::error::Error for RequestTimeout {}

impl<A: Api> MockModel<A> {
    /// Binds 127.0.0.1:0 and starts serving with an empty script.
    pub fn start() -> io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let conn_shared = shared.clone();
        let listener = Listener::start(&format!("mock-{}", A::NAME), move |stream| {
            let _ = serve_connection::<A>(stream, &conn_shared);
        })?;
        Ok(MockModel {
            addr: listener.addr(),
            shared,
            _listener: listener,
            _api: PhantomData,
        })
    }

    /// Starts with `replies` queued (see [`MockModel::push`]).
    pub fn with_script(replies: impl IntoIterator<Item = Reply>) -> io::Result<Self> {
        let mock = Self::start()?;
        for r in replies {
            mock.push(r);
        }
        Ok(mock)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Queues a reply for the next agent turn that matches no marker.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().script.queue.push_back(reply);
    }

    /// Queues `replies` for the agent turns whose last user text contains
    /// `marker`, in order (the turn of the prompt, then the turns that bring
    /// tool results back). Adds to the marker's earlier replies.
    pub fn on(&self, marker: impl Into<String>, replies: impl IntoIterator<Item = Reply>) {
        let marker = marker.into();
        let mut state = self.shared.lock();
        let keyed = &mut state.script.keyed;
        let i = match keyed.iter().position(|(m, _)| *m == marker) {
            Some(i) => i,
            None => {
                keyed.push((marker, VecDeque::new()));
                keyed.len() - 1
            }
        };
        keyed[i].1.extend(replies);
    }

    /// Replies not yet served, keyed ones included.
    pub fn remaining(&self) -> usize {
        self.shared.lock().script.remaining()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// The agent turns received so far, in order.
    pub fn turns(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(RecordedRequest::is_turn)
            .collect()
    }

    /// Waits until some request of any kind (already received or arriving
    /// within `timeout`) satisfies `pred`; returns the first such.
    pub fn wait_for_any(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&RecordedRequest) -> bool,
    ) -> Result<RecordedRequest, RequestTimeout> {
        crate::wait_on(&self.shared.state, &self.shared.changed, timeout, |s| {
            s.requests.iter().find(|r| pred(r)).cloned()
        })
        .map_err(|s| RequestTimeout {
            what: what.to_string(),
            requests: s.requests.clone(),
        })
    }

    /// Waits until some agent turn satisfies `pred`; returns the first such.
    pub fn wait_for_request(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&RecordedRequest) -> bool,
    ) -> Result<RecordedRequest, RequestTimeout> {
        self.wait_for_any(what, timeout, |r| r.is_turn() && pred(r))
    }

    /// Waits for an agent turn whose [`RecordedRequest::text`] contains `needle`.
    pub fn wait_for_request_containing(
        &self,
        needle: &str,
        timeout: Duration,
    ) -> Result<RecordedRequest, RequestTimeout> {
        self.wait_for_request(&format!("a turn containing {needle:?}"), timeout, |r| {
            r.text.contains(needle)
        })
    }

    /// Waits until at least `n` agent turns have arrived; returns them all.
    pub fn wait_for_turn_count(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, RequestTimeout> {
        crate::wait_on(&self.shared.state, &self.shared.changed, timeout, |s| {
            let turns: Vec<_> = s.requests.iter().filter(|r| r.is_turn()).cloned().collect();
            (turns.len() >= n).then_some(turns)
        })
        .map_err(|s| RequestTimeout {
            what: format!("{n} agent turn(s)"),
            requests: s.requests.clone(),
        })
    }
}

/// A value that satisfies the JSON schema `schema` (JSON Schema as in
/// `responseJsonSchema` and tool parameters, or Gemini's `Schema` with
/// upper-case types): objects get every property, strings `"mock"`, numbers
/// 50 kept within `minimum`/`maximum`, booleans `false`, arrays
/// `minItems` elements. An `enum` gives `"user"` when listed (the
/// next-speaker check then hands the turn back to the user), else its first
/// value. So the Gemini router's classifier gets
/// `{"complexity_reasoning":"mock","complexity_score":50}`.
pub fn schema_sample(schema: &Value) -> Value {
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let user = Value::String("user".into());
        return if values.contains(&user) {
            user
        } else {
            values.first().cloned().unwrap_or(Value::Null)
        };
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return schema_sample(first);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.to_ascii_lowercase(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| !t.eq_ignore_ascii_case("null"))
            .unwrap_or("null")
            .to_ascii_lowercase(),
        _ if schema.get("properties").is_some() => "object".into(),
        _ => String::new(),
    };
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    match ty.as_str() {
        "object" => {
            let mut out = serde_json::Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    out.insert(k.clone(), schema_sample(v));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema
                .get("items")
                .map(schema_sample)
                .unwrap_or(Value::Null);
            Value::Array((0..n).map(|_| item.clone()).collect())
        }
        "string" => {
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
            Value::String(format!("{:m<min$}", "mock"))
        }
        "integer" | "number" => {
            let mut v = 50.0_f64;
            if let Some(max) = bound("maximum") {
                v = v.min(max);
            }
            if let Some(min) = bound("minimum") {
                v = v.max(min);
            }
            if ty == "integer" {
                json!(v.round() as i64)
            } else {
                json!(v)
            }
        }
        "boolean" => Value::Bool(false),
        _ => Value::Null,
    }
}

fn serve_connection<A: Api>(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let Some(Request {
            method,
            path,
            headers,
            body,
        }) = read_request(&mut reader)?
        else {
            return Ok(()); // peer closed
        };
        let incoming = Incoming {
            method: &method,
            path: &path,
            body: &body,
        };
        let served = A::classify(&incoming);
        let text = A::request_text(&body);
        let last_user_text = A::last_user_text(&body);
        let (reply, n) = {
            let mut state = shared.lock();
            state.next_id += 1;
            let n = state.next_id;
            let reply = (served == Served::Turn).then(|| state.script.next(&last_user_text));
            (reply, n)
        };
        let (response, call_id) = A::respond(&incoming, served, reply.as_ref(), n);
        let record = RecordedRequest {
            method,
            path,
            headers,
            body,
            served,
            text,
            last_user_text,
            reply,
            call_id,
        };
        // Recorded before answering: once the CLI shows the answer, the
        // request is in the log.
        shared.lock().requests.push(record);
        shared.changed.notify_all();
        // An event stream ends with the connection: the stream's end is
        // the end of the answer.
        let events: String = match response {
            Response::Json(v) => {
                respond_json(&mut writer, &v)?;
                continue;
            }
            Response::Sse(data) => data.iter().map(|d| format!("data: {d}\r\n\r\n")).collect(),
            Response::NamedSse(events) => events
                .iter()
                .map(|(name, d)| format!("event: {name}\r\ndata: {d}\r\n\r\n"))
                .collect(),
        };
        respond_sse(&mut writer, "", &events)?;
        return Ok(());
    }
}

/// For the formats' unit tests: one request over a fresh connection; the
/// answer's head and body as text.
#[cfg(test)]
pub(crate) fn post(url: &str, path: &str, body: &str) -> (String, String) {
    use std::io::{BufRead, Read, Write};
    let addr = url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut head = String::new();
    let mut len = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = Some(v.trim().parse::<usize>().unwrap());
        }
        head.push_str(&line);
    }
    let mut out = Vec::new();
    match len {
        Some(n) => {
            out.resize(n, 0);
            r.read_exact(&mut out).unwrap();
        }
        None => {
            r.read_to_end(&mut out).unwrap();
        }
    }
    (head, String::from_utf8(out).unwrap())
}

/// For the formats' unit tests: the `data:` payloads of an event stream.
#[cfg(test)]
pub(crate) fn sse_data(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_replies_serve_only_their_marker_then_ok() {
        let mut s = Script::default();
        s.keyed.push((
            "M-1".into(),
            [Reply::call("t", json!({})), Reply::text("done 1")].into(),
        ));
        s.queue.push_back(Reply::text("unkeyed"));
        assert_eq!(s.next("please M-1 now").call.unwrap().name, "t");
        assert_eq!(s.next("other prompt"), Reply::text("unkeyed"));
        assert_eq!(s.next("please M-1 now"), Reply::text("done 1"));
        assert_eq!(s.next("please M-1 now"), Reply::text(DEFAULT_TEXT));
        assert_eq!(s.next("other"), Reply::text(DEFAULT_TEXT));
        assert_eq!(s.remaining(), 0);
    }

    #[test]
    fn schema_samples_are_valid() {
        let classifier = json!({
            "type": "OBJECT",
            "properties": {
                "complexity_reasoning": {"type": "STRING"},
                "complexity_score": {"type": "INTEGER"},
            },
            "required": ["complexity_reasoning", "complexity_score"],
        });
        assert_eq!(
            schema_sample(&classifier),
            json!({"complexity_reasoning": "mock", "complexity_score": 50})
        );
        let next_speaker = json!({"type": "object", "properties": {
            "reasoning": {"type": "string"},
            "next_speaker": {"type": "string", "enum": ["model", "user"]},
        }});
        assert_eq!(schema_sample(&next_speaker)["next_speaker"], "user");
        let misc = json!({"type": "object", "properties": {
            "n": {"type": ["integer", "null"], "minimum": 60, "maximum": 90},
            "x": {"type": "number", "maximum": 1},
            "list": {"type": "array", "minItems": 2, "items": {"type": "boolean"}},
            "s": {"type": "string", "minLength": 6},
            "any": {"anyOf": [{"const": 3}]},
        }});
        assert_eq!(
            schema_sample(&misc),
            json!({"n": 60, "x": 1.0, "list": [false, false], "s": "mockmm", "any": 3})
        );
    }
}
