//! A scripted stand-in for the Anthropic Messages API.
//!
//! Why: the real CLI only reaches the IDE paths we test (diffs, diagnostics,
//! selection attachments) from inside a model turn, and the tests must run
//! offline and deterministically. The CLI honours `ANTHROPIC_BASE_URL`, so this
//! server plays the model: each `POST /v1/messages` pops the next scripted
//! [`Turn`] and streams it back as server-sent events in exactly the shape the
//! CLI's SDK parses (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`). An empty script answers a plain "ok" text turn. Every
//! request body is recorded so tests can assert on what the model was *sent*
//! (the `selected_lines` system text, tool results, ...).
//!
//! It is a small blocking HTTP/1.1 server on std threads (one per connection),
//! which keeps the harness free of an async runtime; any other path gets
//! `200 {}`.

use crate::stub_http::{last_chars, read_request, respond_json, respond_sse, Listener, Request};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{self, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A tool call the scripted model makes.
#[derive(Clone, Debug)]
pub struct ToolUse {
    pub name: String,
    pub input: Value,
}

/// One scripted model answer: optional text, then optionally one tool call
/// (which makes the stop reason `tool_use`, otherwise `end_turn`).
#[derive(Clone, Debug, Default)]
pub struct Turn {
    pub text: Option<String>,
    pub tool_use: Option<ToolUse>,
}

impl Turn {
    /// A text-only turn that ends the model's turn.
    pub fn text(text: impl Into<String>) -> Self {
        Turn {
            text: Some(text.into()),
            tool_use: None,
        }
    }

    /// A turn that calls `name` with `input`.
    pub fn tool(name: impl Into<String>, input: Value) -> Self {
        Turn {
            text: None,
            tool_use: Some(ToolUse {
                name: name.into(),
                input,
            }),
        }
    }

    /// Adds text before the tool call.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// `Edit {file_path, old_string, new_string}`.
    pub fn edit(file_path: &str, old_string: &str, new_string: &str) -> Self {
        Turn::tool(
            "Edit",
            json!({"file_path": file_path, "old_string": old_string, "new_string": new_string}),
        )
    }

    /// `Write {file_path, content}`.
    pub fn write(file_path: &str, content: &str) -> Self {
        Turn::tool("Write", json!({"file_path": file_path, "content": content}))
    }
}

/// One HTTP request the mock received.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub method: String,
    /// Path including the query (`/v1/messages?beta=true`).
    pub path: String,
    /// The body parsed as JSON; a non-JSON body is kept as a JSON string;
    /// no body is `null`.
    pub body: Value,
    /// The tool_use id the mock answered with, if the answer was a tool call.
    pub answered_tool_use_id: Option<String>,
}

impl RecordedRequest {
    /// A `POST /v1/messages` (the model loop), with or without a query.
    pub fn is_messages(&self) -> bool {
        self.method == "POST"
            && (self.path == "/v1/messages" || self.path.starts_with("/v1/messages?"))
    }
}

#[derive(Default)]
struct Inner {
    script: VecDeque<Turn>,
    requests: Vec<RecordedRequest>,
    next_id: u64,
}

struct Shared {
    inner: Mutex<Inner>,
    changed: Condvar,
}

/// The running mock. Dropping it stops accepting connections.
pub struct MockAnthropic {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _listener: Listener,
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
            let text = request_text(&r.body);
            writeln!(
                f,
                "--- {} {} (last 1500 chars of its text):\n{}",
                r.method,
                r.path,
                last_chars(&text, 1500)
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

impl MockAnthropic {
    /// Binds 127.0.0.1:0 and starts serving with an empty script.
    pub fn start() -> io::Result<Self> {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner::default()),
            changed: Condvar::new(),
        });
        let conn_shared = shared.clone();
        let listener = Listener::start("mock-anthropic", move |stream| {
            let _ = serve_connection(stream, &conn_shared);
        })?;
        Ok(MockAnthropic {
            addr: listener.addr(),
            shared,
            _listener: listener,
        })
    }

    /// Starts with `turns` queued.
    pub fn with_script(turns: impl IntoIterator<Item = Turn>) -> io::Result<Self> {
        let mock = Self::start()?;
        for t in turns {
            mock.push(t);
        }
        Ok(mock)
    }

    /// `http://127.0.0.1:<port>`, for `ANTHROPIC_BASE_URL`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues a turn; requests pop turns in order.
    pub fn push(&self, turn: Turn) {
        self.shared.inner.lock().unwrap().script.push_back(turn);
    }

    /// Turns not yet served.
    pub fn remaining_turns(&self) -> usize {
        self.shared.inner.lock().unwrap().script.len()
    }

    /// Every request received so far, in order.
    pub fn all_requests(&self) -> Vec<RecordedRequest> {
        self.shared.inner.lock().unwrap().requests.clone()
    }

    /// The `POST /v1/messages` requests received so far, in order.
    pub fn message_requests(&self) -> Vec<RecordedRequest> {
        self.all_requests()
            .into_iter()
            .filter(RecordedRequest::is_messages)
            .collect()
    }

    /// Waits until some `POST /v1/messages` request (already received or
    /// arriving within `timeout`) satisfies `pred`; returns the first such.
    pub fn wait_for_request(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&RecordedRequest) -> bool,
    ) -> Result<RecordedRequest, RequestTimeout> {
        crate::wait_on(&self.shared.inner, &self.shared.changed, timeout, |inner| {
            inner
                .requests
                .iter()
                .find(|r| r.is_messages() && pred(r))
                .cloned()
        })
        .map_err(|inner| RequestTimeout {
            what: what.to_string(),
            requests: inner.requests.clone(),
        })
    }

    /// Waits for a messages request whose text (see [`request_text`]) contains `needle`.
    pub fn wait_for_request_containing(
        &self,
        needle: &str,
        timeout: Duration,
    ) -> Result<RecordedRequest, RequestTimeout> {
        self.wait_for_request(&format!("a request containing {needle:?}"), timeout, |r| {
            request_text(&r.body).contains(needle)
        })
    }

    /// Waits until at least `n` messages requests have arrived; returns them all.
    pub fn wait_for_message_count(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, RequestTimeout> {
        crate::wait_on(&self.shared.inner, &self.shared.changed, timeout, |inner| {
            let msgs: Vec<_> = inner
                .requests
                .iter()
                .filter(|r| r.is_messages())
                .cloned()
                .collect();
            (msgs.len() >= n).then_some(msgs)
        })
        .map_err(|inner| RequestTimeout {
            what: format!("{n} messages request(s)"),
            requests: inner.requests.clone(),
        })
    }

    /// The texts of the tool results the `n`-th (1-based) Messages request
    /// carried, one per line, once that request arrived: what the model was
    /// told a tool did.
    pub fn tool_results_of(&self, n: usize, timeout: Duration) -> Result<String, RequestTimeout> {
        let reqs = self.wait_for_message_count(n, timeout)?;
        Ok(tool_results(&reqs[n - 1].body)
            .into_iter()
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

/// All text in a Messages request body, flattened in order: `system`, then
/// every message's string content, text blocks and tool_result contents. Good
/// for substring assertions on what the model was shown.
pub fn request_text(body: &Value) -> String {
    fn push_content(out: &mut String, content: &Value) {
        match content {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(items) => {
                for item in items {
                    match item.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(t) = item.get("text").and_then(Value::as_str) {
                                out.push_str(t);
                                out.push('\n');
                            }
                        }
                        Some("tool_result") => {
                            if let Some(c) = item.get("content") {
                                push_content(out, c);
                            }
                        }
                        Some("tool_use") => {
                            if let Some(i) = item.get("input") {
                                out.push_str(&i.to_string());
                                out.push('\n');
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    if let Some(system) = body.get("system") {
        push_content(&mut out, system);
    }
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        for m in messages {
            if let Some(c) = m.get("content") {
                push_content(&mut out, c);
            }
        }
    }
    out
}

/// The `tool_result` blocks of a request, as `(tool_use_id, flattened text)`.
pub fn tool_results(body: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for item in m
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if item.get("type").and_then(Value::as_str) == Some("tool_result") {
                let id = item
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let mut text = String::new();
                if let Some(c) = item.get("content") {
                    let wrapper =
                        json!({"messages": [{"content": [{"type": "tool_result", "content": c}]}]});
                    text = request_text(&wrapper);
                }
                out.push((id, text));
            }
        }
    }
    out
}

fn serve_connection(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let Some(Request {
            method, path, body, ..
        }) = read_request(&mut reader)?
        else {
            return Ok(()); // peer closed
        };
        let mut record = RecordedRequest {
            method,
            path,
            body,
            answered_tool_use_id: None,
        };
        if record.is_messages() {
            let (turn, n) = {
                let mut inner = shared.inner.lock().unwrap();
                inner.next_id += 1;
                let n = inner.next_id;
                (
                    inner.script.pop_front().unwrap_or_else(|| Turn::text("ok")),
                    n,
                )
            };
            let model = record
                .body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("claude-mock")
                .to_string();
            let tool_id = turn
                .tool_use
                .as_ref()
                .map(|_| format!("toolu_mock{n:04}{:x}", std::process::id()));
            record.answered_tool_use_id = tool_id.clone();
            let stream_requested = record.body.get("stream").and_then(Value::as_bool) == Some(true);
            record_request(shared, record);
            if stream_requested {
                let sse = sse_body(&turn, &model, n, tool_id.as_deref());
                respond_sse(&mut writer, &format!("request-id: req_mock{n}\r\n"), &sse)?;
                return Ok(());
            }
            let msg = message_json(&turn, &model, n, tool_id.as_deref());
            respond_json(&mut writer, &msg)?;
        } else {
            record_request(shared, record);
            respond_json(&mut writer, &json!({}))?;
        }
    }
}

fn record_request(shared: &Shared, record: RecordedRequest) {
    shared.inner.lock().unwrap().requests.push(record);
    shared.changed.notify_all();
}

fn usage(output_tokens: u64) -> Value {
    json!({
        "input_tokens": 10,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    })
}

fn stop_reason(turn: &Turn) -> &'static str {
    if turn.tool_use.is_some() {
        "tool_use"
    } else {
        "end_turn"
    }
}

/// The whole turn as one non-streaming message (for `stream: false` requests).
fn message_json(turn: &Turn, model: &str, n: u64, tool_id: Option<&str>) -> Value {
    let mut content = Vec::new();
    if let Some(t) = &turn.text {
        content.push(json!({"type": "text", "text": t}));
    }
    if let (Some(tu), Some(id)) = (&turn.tool_use, tool_id) {
        content.push(json!({"type": "tool_use", "id": id, "name": tu.name, "input": tu.input}));
    }
    json!({
        "id": format!("msg_mock{n}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(turn),
        "stop_sequence": null,
        "usage": usage(5),
    })
}

/// The turn as the server-sent-event stream the SDK expects.
fn sse_body(turn: &Turn, model: &str, n: u64, tool_id: Option<&str>) -> String {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_mock{n}"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage(1),
        }}),
    );
    let mut index = 0;
    if let Some(text) = &turn.text {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "text", "text": ""}}),
        );
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "text_delta", "text": text}}),
        );
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
        index += 1;
    }
    if let (Some(tu), Some(id)) = (&turn.tool_use, tool_id) {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": id, "name": tu.name, "input": {}}}),
        );
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": tu.input.to_string()}}),
        );
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason(turn), "stop_sequence": null},
               "usage": {"output_tokens": 5}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, Read, Write};

    fn post(mock: &MockAnthropic, path: &str, body: &str, chunked: bool) -> String {
        let mut s = TcpStream::connect(mock.addr).unwrap();
        let head = if chunked {
            format!(
                "POST {path} HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
                body.len()
            )
        } else {
            format!(
                "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
        };
        s.write_all(head.as_bytes()).unwrap();
        let mut out = String::new();
        if chunked {
            // SSE answers close the connection themselves.
            s.read_to_string(&mut out).unwrap();
        } else {
            let mut r = BufReader::new(s);
            let mut line = String::new();
            let mut len = 0;
            while r.read_line(&mut line).unwrap() > 0 {
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                out.push_str(&line);
                line.clear();
            }
            let mut body = vec![0; len];
            r.read_exact(&mut body).unwrap();
            out.push_str(&String::from_utf8(body).unwrap());
        }
        out
    }

    fn events(sse: &str) -> Vec<Value> {
        sse.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    #[test]
    fn streams_scripted_turns_then_ok() {
        let mock =
            MockAnthropic::with_script([Turn::edit("/w/a.py", "x", "y").with_text("Editing.")])
                .unwrap();
        let req = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

        let first = post(&mock, "/v1/messages?beta=true", req, true);
        assert!(first.starts_with("HTTP/1.1 200"));
        assert!(first.contains("content-type: text/event-stream"));
        let ev = events(&first);
        let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(ev[2]["delta"]["text"], "Editing.");
        assert_eq!(ev[4]["content_block"]["name"], "Edit");
        let input: Value =
            serde_json::from_str(ev[5]["delta"]["partial_json"].as_str().unwrap()).unwrap();
        assert_eq!(input["new_string"], "y");
        assert_eq!(ev[7]["delta"]["stop_reason"], "tool_use");

        let second = events(&post(&mock, "/v1/messages", req, true));
        assert_eq!(second[2]["delta"]["text"], "ok");
        assert_eq!(second[4]["delta"]["stop_reason"], "end_turn");

        let other = post(&mock, "/api/other", "{}", false);
        assert!(other.starts_with("HTTP/1.1 200") && other.ends_with("{}"));

        let msgs = mock.message_requests();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0].body["messages"][0]["content"], "hi");
        assert_eq!(
            msgs[0].answered_tool_use_id.as_deref(),
            ev[4]["content_block"]["id"].as_str()
        );
        assert_eq!(mock.all_requests().len(), 3);
    }

    #[test]
    fn request_text_and_tool_results_flatten_bodies() {
        let body = json!({
            "system": [{"type": "text", "text": "SYS"}],
            "messages": [
                {"role": "user", "content": "hello"},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1",
                     "content": [{"type": "text", "text": "RESULT"}]},
                ]},
            ],
        });
        let text = request_text(&body);
        assert!(text.contains("SYS") && text.contains("hello") && text.contains("RESULT"));
        assert_eq!(tool_results(&body), vec![("t1".into(), "RESULT\n".into())]);
    }
}
