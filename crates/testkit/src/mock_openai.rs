//! A scripted stand-in for an OpenAI-compatible chat completions API, for
//! the real Qwen Code.
//!
//! Why: Qwen Code (a Gemini CLI fork) talks to its IDE companion around
//! model turns just as Gemini CLI does, and speaks OpenAI's API to any
//! provider whose base URL its settings name (`modelProviders.openai[].baseUrl`,
//! `<url>/v1` here). So for offline, deterministic tests this server plays
//! the model on `POST /v1/chat/completions`:
//!
//! - An agent turn (a request offering tools) gets the next scripted
//!   [`Reply`] (see [`crate::mock_model`] for markers and the queue) as
//!   server-sent `chat.completion.chunk`s: the text as `delta.content`, a
//!   tool call as `delta.tool_calls` (id and name first, then the
//!   arguments), `finish_reason` `tool_calls` or `stop`, a usage chunk with
//!   no choices, then `data: [DONE]`; a non-streamed request gets one
//!   `chat.completion`. The CLI sends the tool's result back as a
//!   `role: "tool"` message ([`tool_results`]).
//! - A utility call — one without tools, or one that forces a tool (Qwen's
//!   `generateJson` forces `respond_in_schema`) — is answered automatically:
//!   the forced tool is called with arguments valid against its schema, a
//!   `response_format` JSON schema gets a valid JSON text, anything else a
//!   short text. It never consumes the script.
//! - `GET /v1/models` lists one model; anything else gets `200 {}`.
//!
//! Qwen needs a `read_file` of a file before it will `edit` it (otherwise
//! its tool answers "File … has not been read in this session" and no diff
//! opens), so an edit is scripted as [`read_file`] then [`edit`].

use crate::mock_model::{schema_sample, Api, Incoming, Reply, Response, Served};
use serde_json::{json, Value};

pub use crate::mock_model::{RecordedRequest, RequestTimeout};

/// The running mock; see [`crate::mock_model::MockModel`] for its methods.
pub type MockOpenAi = crate::mock_model::MockModel<OpenAi>;

/// The text a utility call without a schema gets.
pub const UTILITY_TEXT: &str = "Mock summary.";

/// `read_file {file_path}`.
pub fn read_file(file_path: &str) -> Reply {
    Reply::call("read_file", json!({"file_path": file_path}))
}

/// `edit {file_path, old_string, new_string}`: Qwen Code's edit tool, which
/// opens a diff in the IDE in approval mode `default` (after a `read_file`
/// of the same file).
pub fn edit(file_path: &str, old_string: &str, new_string: &str) -> Reply {
    Reply::call(
        "edit",
        json!({"file_path": file_path, "old_string": old_string, "new_string": new_string}),
    )
}

/// `write_file {file_path, content}`.
pub fn write_file(file_path: &str, content: &str) -> Reply {
    Reply::call(
        "write_file",
        json!({"file_path": file_path, "content": content}),
    )
}

/// The `role: "tool"` messages of a request body, as `(tool_call_id, text)`.
pub fn tool_results(body: &Value) -> Vec<(String, String)> {
    messages(body)
        .filter(|m| role(m) == "tool")
        .map(|m| {
            let id = m.get("tool_call_id").and_then(Value::as_str);
            (id.unwrap_or_default().to_string(), content_text(m))
        })
        .collect()
}

fn messages(body: &Value) -> impl DoubleEndedIterator<Item = &Value> {
    body.get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or_default()
}

/// A message's content as text: a string, or its `text` parts joined.
fn content_text(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn is_completions(req: &Incoming) -> bool {
    let path = req.path.split('?').next().unwrap_or_default();
    req.method == "POST" && path.ends_with("/chat/completions")
}

/// The tool a utility call forces, with its parameter schema: the one
/// `tool_choice` names, else the only tool when `tool_choice` is
/// `required`, else `respond_in_schema` when it is the only tool.
fn forced_tool(body: &Value) -> Option<(String, Value)> {
    let tools: Vec<&Value> = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("function"))
        .collect();
    let name_of = |f: &Value| {
        f.get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let named = body
        .pointer("/tool_choice/function/name")
        .and_then(Value::as_str)
        .map(str::to_string);
    let only = (tools.len() == 1).then(|| name_of(tools[0]));
    let name = named
        .or_else(|| {
            (body.get("tool_choice").and_then(Value::as_str) == Some("required"))
                .then(|| only.clone())
                .flatten()
        })
        .or_else(|| only.filter(|n| n == "respond_in_schema"))?;
    let params = tools
        .iter()
        .find(|f| name_of(f) == name)
        .and_then(|f| f.get("parameters").cloned())
        .unwrap_or(json!({}));
    Some((name, params))
}

/// The OpenAI chat completions format; see the module docs.
pub struct OpenAi;

impl Api for OpenAi {
    const NAME: &'static str = "openai";

    fn classify(req: &Incoming) -> Served {
        if !is_completions(req) {
            return Served::Other;
        }
        let has_tools = req
            .body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty());
        if has_tools && forced_tool(req.body).is_none() {
            Served::Turn
        } else {
            Served::Utility
        }
    }

    fn respond(
        req: &Incoming,
        served: Served,
        reply: Option<&Reply>,
        n: u64,
    ) -> (Response, Option<String>) {
        if served == Served::Other {
            let path = req.path.split('?').next().unwrap_or_default();
            let answer = if req.method == "GET" && path.ends_with("/models") {
                json!({"object": "list", "data": [{"id": "mock-model", "object": "model",
                                                   "created": 0, "owned_by": "mock"}]})
            } else {
                json!({})
            };
            return (Response::Json(answer), None);
        }
        let reply = match reply {
            Some(r) => r.clone(),
            None => utility_reply(req.body),
        };
        let model = req
            .body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("mock-model");
        let call_id = reply.call.as_ref().map(|_| format!("call_mock{n}"));
        let id = format!("chatcmpl-mock{n}");
        let finish = if reply.call.is_some() {
            "tool_calls"
        } else {
            "stop"
        };
        let usage = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
        if req.body.get("stream").and_then(Value::as_bool) != Some(true) {
            let mut message = json!({"role": "assistant", "content": reply.text});
            if let (Some(c), Some(cid)) = (&reply.call, &call_id) {
                message["tool_calls"] = json!([{"id": cid, "type": "function", "function":
                    {"name": c.name, "arguments": c.args.to_string()}}]);
            }
            let answer = json!({
                "id": id, "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            });
            return (Response::Json(answer), call_id);
        }
        let chunk = |choices: Value| {
            json!({"id": id, "object": "chat.completion.chunk", "created": 0,
                   "model": model, "choices": choices})
        };
        let delta = |d: Value, finish: Option<&str>| {
            chunk(json!([{"index": 0, "delta": d, "finish_reason": finish}])).to_string()
        };
        let mut events = vec![delta(json!({"role": "assistant", "content": ""}), None)];
        if let Some(t) = &reply.text {
            events.push(delta(json!({"content": t}), None));
        }
        if let (Some(c), Some(cid)) = (&reply.call, &call_id) {
            events.push(delta(
                json!({"tool_calls": [{"index": 0, "id": cid, "type": "function",
                                       "function": {"name": c.name, "arguments": ""}}]}),
                None,
            ));
            events.push(delta(
                json!({"tool_calls": [{"index": 0,
                                       "function": {"arguments": c.args.to_string()}}]}),
                None,
            ));
        }
        events.push(delta(json!({}), Some(finish)));
        let mut last = chunk(json!([]));
        last["usage"] = usage;
        events.push(last.to_string());
        events.push("[DONE]".into());
        (Response::Sse(events), call_id)
    }

    /// Every non-system message in order: texts, tool calls as
    /// `name(arguments)`, tool results.
    fn request_text(body: &Value) -> String {
        let mut out = String::new();
        for m in messages(body) {
            if matches!(role(m), "system" | "developer") {
                continue;
            }
            let text = content_text(m);
            if !text.is_empty() {
                out.push_str(&text);
                out.push('\n');
            }
            for call in m
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let f = call.get("function").cloned().unwrap_or(Value::Null);
                let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = f.get("arguments").and_then(Value::as_str).unwrap_or("");
                out.push_str(&format!("{name}({args})\n"));
            }
        }
        out
    }

    fn last_user_text(body: &Value) -> String {
        messages(body)
            .rev()
            .filter(|m| role(m) == "user")
            .map(content_text)
            .find(|t| !t.is_empty())
            .unwrap_or_default()
    }
}

/// What a utility call gets: see the module docs.
fn utility_reply(body: &Value) -> Reply {
    if let Some((name, params)) = forced_tool(body) {
        return Reply::call(name, schema_sample(&params));
    }
    match body.pointer("/response_format/json_schema/schema") {
        Some(schema) => Reply::text(schema_sample(schema).to_string()),
        None => Reply::text(UTILITY_TEXT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_model::{post, sse_data};

    fn turn(messages: Value) -> String {
        json!({
            "model": "mock-model", "stream": true, "messages": messages,
            "tools": [{"type": "function", "function": {"name": "edit", "parameters": {}}},
                      {"type": "function", "function": {"name": "read_file", "parameters": {}}}],
        })
        .to_string()
    }

    #[test]
    fn turns_stream_the_script_and_utilities_answer_themselves() {
        let mock = MockOpenAi::start().unwrap();
        mock.on(
            "MARK-2",
            [
                edit("/w/a.txt", "a", "b").with_text("Editing."),
                Reply::text("DONE-2"),
            ],
        );
        let url = mock.url();
        let first = turn(json!([
            {"role": "system", "content": "SYSTEM"},
            {"role": "user", "content": [{"type": "text", "text": "<system-reminder>ctx</system-reminder>go MARK-2"}]},
        ]));
        let (head, body) = post(&url, "/v1/chat/completions", &first);
        assert!(head.contains("text/event-stream"), "{head}");
        let data = sse_data(&body);
        assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
        let chunks: Vec<Value> = data[..data.len() - 1]
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert_eq!(chunks[1]["choices"][0]["delta"]["content"], "Editing.");
        let call = &chunks[2]["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], "edit");
        let args: Value = serde_json::from_str(
            chunks[3]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(args["new_string"], "b");
        assert_eq!(chunks[4]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(chunks[5]["choices"], json!([]));
        assert!(chunks[5]["usage"].is_object());

        let second = turn(json!([
            {"role": "user", "content": [{"type": "text", "text": "go MARK-2"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": call["id"], "type": "function",
                "function": {"name": "edit", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": call["id"], "content": [{"type": "text", "text": "The file was updated"}]},
        ]));
        let (_, body) = post(&url, "/v1/chat/completions", &second);
        assert!(body.contains("DONE-2") && body.contains("\"finish_reason\":\"stop\""));

        // generateJson: a forced respond_in_schema call, not streamed.
        let json_call = json!({
            "model": "mock-model", "messages": [{"role": "user", "content": "go MARK-2"}],
            "tools": [{"type": "function", "function": {"name": "respond_in_schema",
                "parameters": {"type": "object", "properties": {"next_speaker": {"enum": ["model", "user"]}}}}}],
            "tool_choice": "required",
        });
        let (_, body) = post(&url, "/v1/chat/completions", &json_call.to_string());
        let answer: Value = serde_json::from_str(&body).unwrap();
        let f = &answer["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(f["name"], "respond_in_schema");
        assert_eq!(f["arguments"], r#"{"next_speaker":"user"}"#);

        let turns = mock.turns();
        assert_eq!(turns.len(), 2);
        assert!(turns[0].text.contains("system-reminder") && !turns[0].text.contains("SYSTEM"));
        assert_eq!(turns[0].call_id.as_deref(), call["id"].as_str());
        assert_eq!(
            tool_results(&turns[1].body),
            vec![(
                call["id"].as_str().unwrap().to_string(),
                "The file was updated".to_string()
            )]
        );
        assert_eq!(mock.requests().len(), 3);
        assert_eq!(mock.remaining(), 0);
    }
}
