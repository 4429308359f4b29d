//! A scripted stand-in for the Gemini API, for the real Gemini CLI.
//!
//! Why: Gemini CLI talks to its IDE companion (ccbridge) only around model
//! turns — editor context goes into the next request, an edit the model
//! proposes opens a diff — so its end-to-end tests need a model that says
//! exactly what the test wants, offline. The CLI honours
//! `GOOGLE_GEMINI_BASE_URL` (with an API key from `GEMINI_API_KEY`), and its
//! SDK appends `/v1beta/models/<model>:<method>`, so this server plays the
//! model. Requests are routed by the method suffix, never by the model: the
//! CLI's router picks the model per turn.
//!
//! - `:streamGenerateContent?alt=sse` is the agent turn: it gets the next
//!   scripted [`Reply`] (see [`crate::mock_model`] for markers and the queue)
//!   as server-sent events, one `GenerateContentResponse` per part, the last
//!   with `finishReason: STOP`. A tool call is a `functionCall` part such as
//!   [`replace`] or [`write_file`]; the CLI runs it and sends the result back
//!   as a `functionResponse` part ([`function_responses`]).
//! - `:generateContent` is a utility call (the router's complexity
//!   classifier, the next-speaker check, a session summary): a request with a
//!   `responseJsonSchema` gets JSON valid against it (the classifier needs a
//!   `complexity_score` of at least 1, or it fails the turn), any other
//!   a short text.
//! - `:countTokens` gets a token count; anything else `200 {}`.
//!
//! Every request is recorded with its text flattened, so a test can assert
//! that "Here is the user's editor context…" reached the model.

use crate::mock_model::{Api, Incoming, Reply, Response, Served};
use serde_json::{json, Value};

pub use crate::mock_model::{RecordedRequest, RequestTimeout};

/// The running mock; see [`crate::mock_model::MockModel`] for its methods.
pub type MockGemini = crate::mock_model::MockModel<Gemini>;

/// The text a utility call without a schema gets.
pub const UTILITY_TEXT: &str = "Mock summary.";

/// `replace {file_path, instruction, old_string, new_string}`: Gemini CLI's
/// edit tool, which opens a diff in the IDE in approval mode `default`.
pub fn replace(file_path: &str, instruction: &str, old_string: &str, new_string: &str) -> Reply {
    Reply::call(
        "replace",
        json!({
            "file_path": file_path,
            "instruction": instruction,
            "old_string": old_string,
            "new_string": new_string,
        }),
    )
}

/// `write_file {file_path, content}`.
pub fn write_file(file_path: &str, content: &str) -> Reply {
    Reply::call(
        "write_file",
        json!({"file_path": file_path, "content": content}),
    )
}

/// The `functionResponse` parts of a request body, in order: each is
/// `{"id", "name", "response": {"output": …} or {"error": …}}`.
pub fn function_responses(body: &Value) -> Vec<Value> {
    parts(body)
        .filter_map(|(_, p)| p.get("functionResponse").cloned())
        .collect()
}

/// The model named in a request path (`/v1beta/models/<model>:<method>`).
pub fn model_of(path: &str) -> Option<&str> {
    let rest = path.split('?').next()?.split("/models/").nth(1)?;
    rest.rsplit_once(':').map(|(m, _)| m)
}

/// The method suffix of a request path (`streamGenerateContent`, ...).
pub fn method_of(path: &str) -> Option<&str> {
    let p = path.split('?').next()?;
    p.contains("/models/")
        .then(|| p.rsplit_once(':').map(|(_, m)| m))
        .flatten()
}

/// Every `(role, part)` of the request's `contents`, in order.
fn parts(body: &Value) -> impl Iterator<Item = (&str, &Value)> {
    body.get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|c| {
            let role = c.get("role").and_then(Value::as_str).unwrap_or("user");
            c.get("parts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(move |p| (role, p))
        })
}

/// The response schema of a utility call, if it asks for JSON.
fn response_schema(body: &Value) -> Option<&Value> {
    let config = body.get("generationConfig")?;
    config
        .get("responseJsonSchema")
        .or_else(|| config.get("responseSchema"))
}

/// The Gemini API format; see the module docs.
pub struct Gemini;

impl Api for Gemini {
    const NAME: &'static str = "gemini";

    fn classify(req: &Incoming) -> Served {
        if req.method != "POST" {
            return Served::Other;
        }
        match method_of(req.path) {
            Some("streamGenerateContent") if response_schema(req.body).is_none() => Served::Turn,
            Some("streamGenerateContent" | "generateContent") => Served::Utility,
            _ => Served::Other,
        }
    }

    fn respond(
        req: &Incoming,
        served: Served,
        reply: Option<&Reply>,
        _n: u64,
    ) -> (Response, Option<String>) {
        let model = model_of(req.path).unwrap_or("gemini-mock");
        let streamed = method_of(req.path) == Some("streamGenerateContent");
        let response = match (served, reply) {
            (Served::Turn, Some(reply)) => {
                let mut parts = Vec::new();
                if let Some(t) = &reply.text {
                    parts.push(json!({"text": t}));
                }
                if let Some(c) = &reply.call {
                    parts.push(json!({"functionCall": {"name": c.name, "args": c.args}}));
                }
                if parts.is_empty() {
                    parts.push(json!({"text": ""}));
                }
                let last = parts.len() - 1;
                let chunks = parts
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| chunk(model, vec![p], i == last).to_string())
                    .collect();
                Response::Sse(chunks)
            }
            (Served::Utility, _) => {
                let text = match response_schema(req.body) {
                    Some(schema) => crate::mock_model::schema_sample(schema).to_string(),
                    None => UTILITY_TEXT.to_string(),
                };
                let answer = chunk(model, vec![json!({"text": text})], true);
                if streamed {
                    Response::Sse(vec![answer.to_string()])
                } else {
                    Response::Json(answer)
                }
            }
            _ if method_of(req.path) == Some("countTokens") => {
                Response::Json(json!({"totalTokens": 10}))
            }
            _ => Response::Json(json!({})),
        };
        (response, None)
    }

    /// Every part of `contents` in order: texts, `functionCall`s as
    /// `name(args)`, `functionResponse`s as their JSON. The system
    /// instruction is left out.
    fn request_text(body: &Value) -> String {
        let mut out = String::new();
        for (_, p) in parts(body) {
            if let Some(t) = p.get("text").and_then(Value::as_str) {
                out.push_str(t);
            } else if let Some(c) = p.get("functionCall") {
                let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = c.get("args").cloned().unwrap_or(Value::Null);
                out.push_str(&format!("{name}({args})"));
            } else if let Some(r) = p.get("functionResponse") {
                out.push_str(&r.to_string());
            } else {
                continue;
            }
            out.push('\n');
        }
        out
    }

    fn last_user_text(body: &Value) -> String {
        let contents = body.get("contents").and_then(Value::as_array);
        for c in contents.into_iter().flatten().rev() {
            if c.get("role").and_then(Value::as_str).unwrap_or("user") != "user" {
                continue;
            }
            let texts: Vec<&str> = c
                .get("parts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            if !texts.is_empty() {
                return texts.join("\n");
            }
        }
        String::new()
    }
}

/// One `GenerateContentResponse` with `parts`; the last one of an answer
/// carries the finish reason and the usage.
fn chunk(model: &str, parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut out = json!({"modelVersion": model});
    if last {
        candidate["finishReason"] = json!("STOP");
        out["usageMetadata"] =
            json!({"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15});
    }
    out["candidates"] = json!([candidate]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock_model::{post, sse_data};

    fn turn_body(prompt: &str) -> String {
        json!({
            "contents": [{"role": "user", "parts": [
                {"text": "Here is the user's editor context as a JSON object."},
                {"text": prompt},
            ]}],
            "systemInstruction": {"parts": [{"text": "SYSTEM"}]},
            "tools": [{"functionDeclarations": [{"name": "replace"}]}],
        })
        .to_string()
    }

    #[test]
    fn turns_stream_the_script_and_utilities_answer_schemas() {
        let mock = MockGemini::start().unwrap();
        mock.on(
            "MARK-1",
            [
                replace("/w/a.txt", "fix", "a", "b").with_text("Editing."),
                Reply::text("DONE-1"),
            ],
        );
        let path = "/v1beta/models/gemini-x:streamGenerateContent?alt=sse";

        let (head, body) = post(&mock.url(), path, &turn_body("go MARK-1"));
        assert!(head.contains("text/event-stream"), "{head}");
        let chunks: Vec<Value> = sse_data(&body)
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert_eq!(chunks.len(), 2);
        assert_eq!(
            chunks[0]["candidates"][0]["content"]["parts"][0]["text"],
            "Editing."
        );
        assert!(chunks[0]["candidates"][0].get("finishReason").is_none());
        let call = &chunks[1]["candidates"][0]["content"]["parts"][0]["functionCall"];
        assert_eq!(call["name"], "replace");
        assert_eq!(call["args"]["new_string"], "b");
        assert_eq!(chunks[1]["candidates"][0]["finishReason"], "STOP");

        // The tool result comes back in a later user turn; the marker is in
        // the earlier user text.
        let follow_up = json!({"contents": [
            {"role": "user", "parts": [{"text": "go MARK-1"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "replace", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "x", "name": "replace",
                "response": {"output": "Successfully modified"}}}]},
        ]});
        let (_, body) = post(
            &mock.url(),
            "/v1beta/models/other:streamGenerateContent?alt=sse",
            &follow_up.to_string(),
        );
        assert!(body.contains("DONE-1"), "{body}");

        let classifier = json!({
            "contents": [{"role": "user", "parts": [{"text": "go MARK-1"}]}],
            "generationConfig": {"responseJsonSchema": {"type": "object", "properties": {
                "complexity_reasoning": {"type": "string"},
                "complexity_score": {"type": "integer"},
            }}},
        });
        let (_, body) = post(
            &mock.url(),
            "/v1beta/models/gemini-lite:generateContent",
            &classifier.to_string(),
        );
        let answer: Value = serde_json::from_str(&body).unwrap();
        let text = answer["candidates"][0]["content"]["parts"][0]["text"]
            .as_str()
            .unwrap();
        let parsed: Value = serde_json::from_str(text).unwrap();
        assert_eq!(parsed["complexity_score"], 50);
        let (_, body) = post(
            &mock.url(),
            "/v1beta/models/m:generateContent",
            &json!({"contents": []}).to_string(),
        );
        assert!(body.contains(UTILITY_TEXT));

        let turns = mock.turns();
        assert_eq!(turns.len(), 2);
        assert!(turns[0].text.contains("editor context") && !turns[0].text.contains("SYSTEM"));
        assert_eq!(turns[0].last_user_text.lines().last(), Some("go MARK-1"));
        assert_eq!(model_of(&turns[0].path), Some("gemini-x"));
        let responses = function_responses(&turns[1].body);
        assert_eq!(responses[0]["name"], "replace");
        assert!(turns[1].text.contains("Successfully modified"));
        assert_eq!(mock.requests().len(), 4);
        assert_eq!(mock.remaining(), 0);
    }
}
