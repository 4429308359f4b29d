//! A scripted stand-in for OpenAI's Responses API, for the real Codex CLI.
//!
//! Why: Codex CLI fetches its IDE context (the editor's selection, `/ide`)
//! only when it sends a prompt to the model, and the tests run offline. Its
//! `config.toml` takes a custom model provider with a base URL
//! (`wire_api = "responses"`, the only wire API 0.171.0 speaks), so this
//! server plays the model on `POST <base>/responses`:
//!
//! - An agent turn (a request offering tools: Codex sends `exec_command`
//!   and others with every turn) gets the next scripted [`Reply`] (see
//!   [`crate::mock_model`] for markers and the queue) as server-sent
//!   events, the minimum Codex reads: `response.created`, the text as an
//!   `output_text.delta` and a finished `message` item, a tool call as a
//!   finished `function_call` item, then `response.completed` with usage.
//! - A request without tools (a title, a summary) gets a short text and
//!   never consumes the script.
//! - `GET <base>/models` lists no models; anything else gets `200 {}`.
//!
//! The prompt Codex sends is the last `role: "user"` message; with IDE
//! context it starts with "# Context from my IDE setup:" and ends with
//! "## My request for Codex:" and what the user typed.

use crate::mock_model::{Api, Incoming, Reply, Response, Served};
use serde_json::{json, Value};

pub use crate::mock_model::{RecordedRequest, RequestTimeout};

/// The running mock; see [`crate::mock_model::MockModel`] for its methods.
pub type MockResponses = crate::mock_model::MockModel<Responses>;

/// The text a request without tools gets.
pub const UTILITY_TEXT: &str = "Mock summary.";

/// The Responses API wire format.
pub struct Responses;

fn items(body: &Value) -> impl DoubleEndedIterator<Item = &Value> {
    body.get("input")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The text parts of one input item (a message's `input_text` /
/// `output_text` parts, a call's arguments, a call's output).
fn item_text(item: &Value) -> String {
    match item.get("type").and_then(Value::as_str) {
        Some("function_call") => item
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        Some("function_call_output") => match item.get("output") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        },
        _ => match item.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        },
    }
}

fn role(item: &Value) -> &str {
    item.get("role").and_then(Value::as_str).unwrap_or_default()
}

fn event(kind: &str, mut v: Value) -> String {
    v["type"] = kind.into();
    v.to_string()
}

/// The events of one answer.
fn stream(reply: &Reply, n: u64) -> (Vec<String>, Option<String>) {
    let id = format!("resp_{n}");
    let mut out = vec![event("response.created", json!({"response": {"id": id}}))];
    let mut index = 0;
    if let Some(text) = &reply.text {
        let msg = format!("msg_{n}");
        out.push(event(
            "response.output_item.added",
            json!({"output_index": index, "item": {"type": "message", "role": "assistant", "id": msg, "content": []}}),
        ));
        out.push(event(
            "response.output_text.delta",
            json!({"item_id": msg, "output_index": index, "content_index": 0, "delta": text}),
        ));
        out.push(event(
            "response.output_item.done",
            json!({"output_index": index, "item": {"type": "message", "role": "assistant", "id": msg,
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}}),
        ));
        index += 1;
    }
    let mut call_id = None;
    if let Some(call) = &reply.call {
        let id = format!("call_{n}");
        out.push(event(
            "response.output_item.done",
            json!({"output_index": index, "item": {"type": "function_call", "id": format!("fc_{n}"),
                    "call_id": id, "name": call.name, "arguments": call.args.to_string()}}),
        ));
        call_id = Some(id);
    }
    out.push(event(
        "response.completed",
        json!({"response": {"id": format!("resp_{n}"), "usage": {
            "input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15}}}),
    ));
    (out, call_id)
}

impl Api for Responses {
    const NAME: &'static str = "responses";

    fn classify(req: &Incoming) -> Served {
        if req.method != "POST"
            || !req
                .path
                .split('?')
                .next()
                .unwrap_or("")
                .ends_with("/responses")
        {
            return Served::Other;
        }
        let has_tools = req
            .body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty());
        if has_tools {
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
        match served {
            Served::Turn => {
                let fallback = Reply::text(crate::mock_model::DEFAULT_TEXT);
                let (events, id) = stream(reply.unwrap_or(&fallback), n);
                (Response::Sse(events), id)
            }
            Served::Utility => (Response::Sse(stream(&Reply::text(UTILITY_TEXT), n).0), None),
            Served::Other
                if req
                    .path
                    .split('?')
                    .next()
                    .unwrap_or("")
                    .ends_with("/models") =>
            {
                (Response::Json(json!({"object": "list", "data": []})), None)
            }
            Served::Other => (Response::Json(json!({})), None),
        }
    }

    fn request_text(body: &Value) -> String {
        items(body)
            .filter(|i| !matches!(role(i), "developer" | "system"))
            .map(item_text)
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn last_user_text(body: &Value) -> String {
        items(body)
            .rev()
            .find(|i| role(i) == "user" && !item_text(i).starts_with("<environment_context>"))
            .map(item_text)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_streams_the_text_and_completes_and_the_prompt_is_the_last_user_message() {
        let body = json!({"tools": [{"type": "function", "name": "exec_command"}], "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "SYSTEM"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "# Context from my IDE setup:\nSEL\n## My request for Codex:\nhi"}]},
        ]});
        let req = Incoming {
            method: "POST",
            path: "/v1/responses",
            body: &body,
        };
        assert_eq!(Responses::classify(&req), Served::Turn);
        assert!(Responses::last_user_text(&body).ends_with("hi"));
        let text = Responses::request_text(&body);
        assert!(text.contains("SEL") && !text.contains("SYSTEM"), "{text}");
        let (Response::Sse(events), None) =
            Responses::respond(&req, Served::Turn, Some(&Reply::text("DONE")), 3)
        else {
            panic!("not a stream")
        };
        let kinds: Vec<String> = events
            .iter()
            .map(|e| {
                serde_json::from_str::<Value>(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(kinds.first().unwrap(), "response.created");
        assert_eq!(kinds.last().unwrap(), "response.completed");
        assert!(events.iter().any(|e| e.contains("DONE")));
    }
}
