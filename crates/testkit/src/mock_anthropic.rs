//! The Anthropic Messages API as an [`Api`] of [`crate::mock_model`]: the
//! scripted model the real Claude Code CLI talks to.
//!
//! Why: the real CLI only reaches the IDE paths we test (diffs, diagnostics,
//! selection attachments) from inside a model turn, and the tests must run
//! offline and deterministically. The CLI honours `ANTHROPIC_BASE_URL`, so
//! this server plays the model: each `POST /v1/messages` is an agent turn
//! that takes the next scripted [`Reply`] and streams it back as
//! server-sent events in exactly the shape the CLI's SDK parses
//! (`message_start`, `content_block_*`, `message_delta`, `message_stop`,
//! each with its `event:` name, which the SDK dispatches on). With nothing
//! scripted the answer is the text `ok`. Every request is recorded, so tests
//! can assert on what the model was *sent*: a request's
//! [`text`](crate::mock_model::RecordedRequest::text)
//! is [`request_text`], the system prompt included (the `selected_lines`
//! system text), and [`tool_results`] picks out what Claude was told a tool
//! did. Any other path gets `200 {}`.
//!
//! The script, the log, the waits and the server are [`MockModel`]'s, shared
//! with the Gemini, OpenAI and Responses formats.

use crate::mock_model::{Api, Incoming, MockModel, Reply, RequestTimeout, Response, Served};
use serde_json::{json, Value};
use std::time::Duration;

/// The Messages API format.
pub struct Anthropic;

/// A running scripted Messages API on 127.0.0.1 (`ANTHROPIC_BASE_URL` is
/// its [`MockModel::url`]).
pub type MockAnthropic = MockModel<Anthropic>;

/// Claude Code's own file tools, as scripted calls.
impl Reply {
    /// `Edit {file_path, old_string, new_string}`.
    pub fn edit(file_path: &str, old_string: &str, new_string: &str) -> Self {
        Reply::call(
            "Edit",
            json!({"file_path": file_path, "old_string": old_string, "new_string": new_string}),
        )
    }

    /// `Write {file_path, content}`.
    pub fn write(file_path: &str, content: &str) -> Self {
        Reply::call("Write", json!({"file_path": file_path, "content": content}))
    }
}

/// A `POST /v1/messages` (the model loop), with or without a query.
fn is_messages(req: &Incoming) -> bool {
    req.method == "POST" && req.path.split('?').next() == Some("/v1/messages")
}

impl Api for Anthropic {
    const NAME: &'static str = "anthropic";

    fn classify(req: &Incoming) -> Served {
        if is_messages(req) {
            Served::Turn
        } else {
            Served::Other
        }
    }

    fn respond(
        req: &Incoming,
        served: Served,
        reply: Option<&Reply>,
        n: u64,
    ) -> (Response, Option<String>) {
        if served != Served::Turn {
            return (Response::Json(json!({})), None);
        }
        let fallback = Reply::text(crate::mock_model::DEFAULT_TEXT);
        let reply = reply.unwrap_or(&fallback);
        let model = req
            .body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("claude-mock");
        let tool_id = reply
            .call
            .as_ref()
            .map(|_| format!("toolu_mock{n:04}{:x}", std::process::id()));
        let response = if req.body.get("stream").and_then(Value::as_bool) == Some(true) {
            Response::NamedSse(sse_events(reply, model, n, tool_id.as_deref()))
        } else {
            Response::Json(message_json(reply, model, n, tool_id.as_deref()))
        };
        (response, tool_id)
    }

    fn request_text(body: &Value) -> String {
        request_text(body)
    }

    /// The last user message's own text (tool results left out).
    fn last_user_text(body: &Value) -> String {
        body.get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .rev()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .map(|m| match m.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(items)) => items
                    .iter()
                    .filter(|i| i.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|i| i.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            })
            .find(|t| !t.is_empty())
            .unwrap_or_default()
    }
}

impl MockModel<Anthropic> {
    /// The texts of the tool results the `n`-th (1-based) agent turn
    /// carried, one per line, once that request arrived: what the model was
    /// told a tool did.
    pub fn tool_results_of(&self, n: usize, timeout: Duration) -> Result<String, RequestTimeout> {
        let turns = self.wait_for_turn_count(n, timeout)?;
        Ok(tool_results(&turns[n - 1].body)
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

fn usage(output_tokens: u64) -> Value {
    json!({
        "input_tokens": 10,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    })
}

fn stop_reason(reply: &Reply) -> &'static str {
    if reply.call.is_some() {
        "tool_use"
    } else {
        "end_turn"
    }
}

/// The whole reply as one non-streaming message (for `stream: false` requests).
fn message_json(reply: &Reply, model: &str, n: u64, tool_id: Option<&str>) -> Value {
    let mut content = Vec::new();
    if let Some(t) = &reply.text {
        content.push(json!({"type": "text", "text": t}));
    }
    if let (Some(c), Some(id)) = (&reply.call, tool_id) {
        content.push(json!({"type": "tool_use", "id": id, "name": c.name, "input": c.args}));
    }
    json!({
        "id": format!("msg_mock{n}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(reply),
        "stop_sequence": null,
        "usage": usage(5),
    })
}

/// The turn as the server-sent-event stream the SDK expects: each event's
/// name and data.
fn sse_events(
    reply: &Reply,
    model: &str,
    n: u64,
    tool_id: Option<&str>,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut event = |name: &'static str, data: Value| out.push((name, data.to_string()));
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
    if let Some(text) = &reply.text {
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
    if let (Some(c), Some(id)) = (&reply.call, tool_id) {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": id, "name": c.name, "input": {}}}),
        );
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": c.args.to_string()}}),
        );
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
               "usage": {"output_tokens": 5}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_model::{post, sse_data};

    /// The `event:` names of an event stream, in order.
    fn event_names(body: &str) -> Vec<&str> {
        body.lines()
            .filter_map(|l| l.strip_prefix("event: "))
            .collect()
    }

    #[test]
    fn streams_scripted_turns_then_ok() {
        let mock =
            MockAnthropic::with_script([Reply::edit("/w/a.py", "x", "y").with_text("Editing.")])
                .unwrap();
        let req = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;

        let (head, first) = post(&mock.url(), "/v1/messages?beta=true", req);
        assert!(head.starts_with("HTTP/1.1 200"));
        assert!(head.contains("content-type: text/event-stream"));
        let names = event_names(&first);
        let ev: Vec<Value> = sse_data(&first)
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert_eq!(
            names,
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
        let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, names, "each event's data carries its own name");
        assert_eq!(ev[2]["delta"]["text"], "Editing.");
        assert_eq!(ev[4]["content_block"]["name"], "Edit");
        let input: Value =
            serde_json::from_str(ev[5]["delta"]["partial_json"].as_str().unwrap()).unwrap();
        assert_eq!(input["new_string"], "y");
        assert_eq!(ev[7]["delta"]["stop_reason"], "tool_use");

        let (_, second) = post(&mock.url(), "/v1/messages", req);
        let second: Vec<Value> = sse_data(&second)
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert_eq!(second[2]["delta"]["text"], "ok");
        assert_eq!(second[4]["delta"]["stop_reason"], "end_turn");

        let (head, other) = post(&mock.url(), "/api/other", "{}");
        assert!(head.starts_with("HTTP/1.1 200") && other == "{}");

        let turns = mock.turns();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].body["messages"][0]["content"], "hi");
        assert_eq!(turns[0].last_user_text, "hi");
        assert_eq!(
            turns[0].call_id.as_deref(),
            ev[4]["content_block"]["id"].as_str()
        );
        assert_eq!(mock.requests().len(), 3);
    }

    #[test]
    fn a_request_without_stream_gets_the_whole_message() {
        let mock = MockAnthropic::with_script([Reply::text("Hello.")]).unwrap();
        let (head, body) = post(
            &mock.url(),
            "/v1/messages",
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
        );
        assert!(head.contains("content-type: application/json"));
        let msg: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(msg["content"][0]["text"], "Hello.");
        assert_eq!(msg["stop_reason"], "end_turn");
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
        assert_eq!(Anthropic::last_user_text(&body), "hello");
    }
}
