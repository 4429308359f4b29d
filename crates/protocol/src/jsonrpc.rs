//! JSON-RPC 2.0 envelope.
//!
//! [`Message::parse`] is total: any input yields either a message or the
//! exact error response to send back (`-32700` for bytes that are not JSON,
//! `-32600` for JSON that is not a valid message), so a transport never has to
//! decide error semantics itself and never panics on hostile bytes.
//!
//! Parsing costs about the size of the message, whatever is in it: the
//! envelope is read into borrowed raw slices, unknown members are skipped
//! without being built, and `params`, `result` and error `data` stay raw
//! JSON text ([`RawJson`]) until a handler deserializes them straight into
//! its typed struct. A `serde_json::Value` of a message with a million keys
//! would cost ten times its size; nothing here builds one.

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// A request id: the client uses integers starting at 0; strings are legal too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

/// Standard JSON-RPC error codes.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Server-defined: a request arrived before `initialize`.
    pub const SERVER_NOT_INITIALIZED: i64 = -32002;
}

/// A JSON value kept as its text: cheap to hold and to pass on, parsed only
/// into the type a handler wants. Equality compares the values, not the
/// spelling (`{"a": 1}` equals `{"a":1}`).
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// Serializes `v` into raw JSON.
    pub fn to_raw(v: &impl Serialize) -> Result<RawJson, serde_json::Error> {
        serde_json::value::to_raw_value(v).map(RawJson)
    }

    /// Deserializes into `T` directly from the text.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.get())
    }

    /// A `Value` of it: for tests and small values only (a `Value` costs
    /// many times the text's size).
    pub fn to_value(&self) -> Value {
        self.parse().unwrap_or(Value::Null)
    }

    pub fn is_null(&self) -> bool {
        self.get() == "null"
    }

    /// `{}`.
    pub fn empty_object() -> RawJson {
        RawJson(RawValue::from_string("{}".into()).expect("valid JSON"))
    }

    fn from_borrowed(raw: &RawValue) -> RawJson {
        RawJson(raw.to_owned())
    }

    /// The first character of the text (never whitespace: serde_json trims).
    fn first(&self) -> Option<char> {
        self.get().chars().next()
    }
}

impl From<Value> for RawJson {
    fn from(v: Value) -> Self {
        RawJson::to_raw(&v).unwrap_or_else(|_| RawJson::empty_object())
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
            || matches!(
                (self.parse::<Value>(), other.parse::<Value>()),
                (Ok(a), Ok(b)) if a == b
            )
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 200;
        let text = self.get();
        match text.char_indices().nth(SHOWN) {
            Some((cut, _)) => write!(f, "{}… ({} bytes)", &text[..cut], text.len()),
            None => f.write_str(text),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<RawJson>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data.into());
        self
    }
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(code::PARSE_ERROR, format!("Parse error: {detail}"))
    }
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(code::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }
    pub fn method_not_found(method: &str) -> Self {
        Self::new(code::METHOD_NOT_FOUND, "Method not found")
            .with_data(Value::String(method.to_owned()))
    }
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(code::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Option<RawJson>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<RawJson>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// `None` only for errors about a message whose id could not be read.
    pub id: Option<RequestId>,
    pub outcome: Result<RawJson, ErrorObject>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

/// Why an input could not be understood, with the response to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub response: Response,
    /// The input has no `method` but a `result` or an `error`: it is an
    /// answer (a malformed one). Answers are never answered, so a
    /// transport should not send [`Rejected::response`] for it.
    pub answer_like: bool,
}

/// The top-level members of a message, borrowed from its text. A member
/// that is present, even as `null`, is `Some`; unknown members are skipped
/// without being built.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// An error object as received: `data` is kept only when small.
#[derive(Deserialize)]
struct WireError {
    code: i64,
    message: String,
    #[serde(default)]
    data: Option<RawJson>,
}

/// Any JSON value, checked and thrown away without building anything. Unlike
/// `IgnoredAny`, it descends through `deserialize_seq`/`deserialize_map`,
/// so serde_json's nesting limit (128) applies.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> serde::de::Visitor<'de> for SkipVisitor {
    type Value = Skip;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<IgnoredAny, Skip>()?.is_some() {}
        Ok(Skip)
    }
}

/// Error `data` larger than this is dropped when an error is received.
const MAX_ERROR_DATA: usize = 64 * 1024;

const JSON_WS: [char; 4] = [' ', '\t', '\n', '\r'];

impl Message {
    /// Classifies `text` as a JSON-RPC 2.0 message.
    ///
    /// Batches (JSON arrays) are rejected with `-32600`: the IDE transport
    /// never batches and MCP removed batching in 2025-06-18. serde_json's
    /// recursion limit (128) stays on wherever a value is built, so nesting
    /// bombs are errors; skipped values cost no stack. `"params": null`
    /// means no params (LSP clients send it).
    pub fn parse(text: &str) -> Result<Message, Rejected> {
        let rejected = |id, error| Rejected {
            response: Response::error(id, error),
            answer_like: false,
        };
        // One pass that builds nothing decides "is it JSON at all", with
        // serde_json's nesting limit; the envelope is read in a second.
        if let Err(e) = serde_json::from_str::<Skip>(text) {
            return Err(rejected(None, ErrorObject::parse_error(e)));
        }
        let start = text.trim_start_matches(JSON_WS);
        if start.starts_with('[') {
            return Err(rejected(
                None,
                ErrorObject::invalid_request("batches are not supported"),
            ));
        }
        if !start.starts_with('{') {
            return Err(rejected(
                None,
                ErrorObject::invalid_request("a message must be a JSON object"),
            ));
        }
        let env: Envelope = match serde_json::from_str(text) {
            Ok(env) => env,
            // A repeated member (`"id"` twice) is valid JSON but no message.
            Err(e) if e.is_data() => {
                return Err(rejected(None, ErrorObject::invalid_request(e)));
            }
            Err(e) => return Err(rejected(None, ErrorObject::parse_error(e))),
        };
        Self::from_envelope(env)
    }

    fn from_envelope(env: Envelope<'_>) -> Result<Message, Rejected> {
        let answer_like = env.method.is_none() && (env.result.is_some() || env.error.is_some());
        let invalid = |id: Option<RequestId>, what: &str| Rejected {
            response: Response::error(id, ErrorObject::invalid_request(what)),
            answer_like,
        };
        // `"id": null` is only legal on an error answer to a message whose
        // id could not be read.
        let null_id = env.id.is_some_and(|raw| raw.get() == "null");
        let id = match env.id {
            None => None,
            Some(_) if null_id && env.method.is_none() && env.error.is_some() => None,
            Some(raw) => match serde_json::from_str::<RequestId>(raw.get()) {
                Ok(id) => Some(id),
                Err(_) => return Err(invalid(None, "id must be an integer or a string")),
            },
        };
        match env.jsonrpc.map(|v| serde_json::from_str::<String>(v.get())) {
            Some(Ok(v)) if v == "2.0" => {}
            _ => return Err(invalid(id, "\"jsonrpc\" must be \"2.0\"")),
        }
        let params = match env.params.map(RawJson::from_borrowed) {
            Some(p) if p.is_null() => None,
            Some(p) if !matches!(p.first(), Some('{' | '[')) => {
                return Err(invalid(id, "params must be an object or an array"));
            }
            other => other,
        };
        match env.method {
            Some(raw) => match serde_json::from_str::<String>(raw.get()) {
                Ok(method) => Ok(match id {
                    Some(id) => Message::Request(Request { id, method, params }),
                    None => Message::Notification(Notification { method, params }),
                }),
                Err(_) => Err(invalid(id, "method must be a string")),
            },
            None => {
                let outcome = match (env.result, env.error) {
                    (Some(r), None) => Ok(RawJson::from_borrowed(r)),
                    (None, Some(e)) => match serde_json::from_str::<WireError>(e.get()) {
                        Ok(w) => Err(ErrorObject {
                            code: w.code,
                            message: w.message,
                            data: w.data.filter(|d| d.get().len() <= MAX_ERROR_DATA),
                        }),
                        Err(_) => return Err(invalid(id, "malformed error object")),
                    },
                    _ => return Err(invalid(id, "no method, result or error")),
                };
                match (id, outcome) {
                    (Some(id), outcome) => Ok(Message::Response(Response {
                        id: Some(id),
                        outcome,
                    })),
                    // An error about something the peer could not read.
                    (None, Err(e)) => Ok(Message::Response(Response::error(None, e))),
                    (None, Ok(_)) => Err(invalid(None, "response without id")),
                }
            }
        }
    }

    /// The message as JSON text.
    pub fn to_json(&self) -> String {
        match self {
            Message::Request(r) => serde_json::to_string(&WireCall {
                jsonrpc: "2.0",
                id: Some(&r.id),
                method: &r.method,
                params: r.params.as_ref(),
            }),
            Message::Notification(n) => serde_json::to_string(&WireCall {
                jsonrpc: "2.0",
                id: None,
                method: &n.method,
                params: n.params.as_ref(),
            }),
            Message::Response(r) => return r.to_json(),
        }
        .unwrap_or_else(|_| "{}".into())
    }

    /// A `Value` of the message (tests, small messages).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.to_json()).unwrap_or(Value::Null)
    }
}

/// The wire form of a request or notification, borrowing its parts.
#[derive(Serialize)]
struct WireCall<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a RawJson>,
}

impl Request {
    pub fn new(id: impl Into<RequestId>, method: impl Into<String>, params: Option<Value>) -> Self {
        Request {
            id: id.into(),
            method: method.into(),
            params: params.map(RawJson::from),
        }
    }
    /// Deserializes `params` (absent means `{}`).
    pub fn params<P: DeserializeOwned>(&self) -> Result<P, ErrorObject> {
        params_as(self.params.as_ref())
    }
    /// `params` as a `Value` (tests, small messages).
    pub fn params_value(&self) -> Option<Value> {
        self.params.as_ref().map(RawJson::to_value)
    }
}

impl Notification {
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Notification {
            method: method.into(),
            params: params.map(RawJson::from),
        }
    }
    /// A notification whose params are serialized straight from `params`.
    pub fn with_params(method: impl Into<String>, params: &impl Serialize) -> Self {
        Notification {
            method: method.into(),
            params: RawJson::to_raw(params).ok(),
        }
    }
    pub fn params<P: DeserializeOwned>(&self) -> Result<P, ErrorObject> {
        params_as(self.params.as_ref())
    }
    /// `params` as a `Value` (tests, small messages).
    pub fn params_value(&self) -> Option<Value> {
        self.params.as_ref().map(RawJson::to_value)
    }
}

/// Every method of this protocol takes named params. serde would also read
/// a struct from a JSON array, by position, so arrays are refused here.
pub fn params_as<P: DeserializeOwned>(params: Option<&RawJson>) -> Result<P, ErrorObject> {
    match params {
        None => serde_json::from_str("{}"),
        Some(p) if p.is_null() => serde_json::from_str("{}"),
        Some(p) if p.first() == Some('[') => {
            return Err(ErrorObject::invalid_params("params must be an object"))
        }
        Some(p) => p.parse(),
    }
    .map_err(ErrorObject::invalid_params)
}

impl Response {
    pub fn ok(id: RequestId, result: Value) -> Self {
        Response {
            id: Some(id),
            outcome: Ok(result.into()),
        }
    }
    /// A success response whose result is serialized straight from `result`.
    pub fn ok_from(id: RequestId, result: &impl Serialize) -> Self {
        match RawJson::to_raw(result) {
            Ok(raw) => Response {
                id: Some(id),
                outcome: Ok(raw),
            },
            Err(e) => Response::error(
                Some(id),
                ErrorObject::new(
                    code::INTERNAL_ERROR,
                    format!("cannot encode the result: {e}"),
                ),
            ),
        }
    }
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Err(error),
        }
    }
    /// The result as a `Value` (tests, small messages).
    pub fn result_value(&self) -> Option<Value> {
        self.outcome.as_ref().ok().map(RawJson::to_value)
    }
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.to_json()).unwrap_or(Value::Null)
    }

    /// Serializes without building an intermediate `Value` (answers can be
    /// hundreds of kilobytes of diagnostics).
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.wire()).unwrap_or_else(|_| {
            Response::error(
                self.id.clone(),
                ErrorObject::new(code::INTERNAL_ERROR, "unserializable result"),
            )
            .to_json()
        })
    }

    /// A success response around an already serialized `result`, so a
    /// cached answer is sent without parsing or re-escaping it.
    pub fn ok_json_with_raw_result(id: &RequestId, result_json: &str) -> String {
        let id = serde_json::to_string(id).unwrap_or_else(|_| "null".into());
        let mut out = String::with_capacity(result_json.len() + id.len() + 32);
        out.push_str(r#"{"jsonrpc":"2.0","id":"#);
        out.push_str(&id);
        out.push_str(r#","result":"#);
        out.push_str(result_json);
        out.push('}');
        out
    }

    fn wire(&self) -> WireResponse<'_> {
        let (result, error) = match &self.outcome {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e)),
        };
        WireResponse {
            jsonrpc: "2.0",
            id: self.id.as_ref(),
            result,
            error,
        }
    }
}

/// The wire form of a response, borrowing its parts.
#[derive(Serialize)]
struct WireResponse<'a> {
    jsonrpc: &'static str,
    /// Serialized as `null` when absent, as JSON-RPC requires.
    id: Option<&'a RequestId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Message::Request(r)
    }
}
impl From<Notification> for Message {
    fn from(n: Notification) -> Self {
        Message::Notification(n)
    }
}
impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Message::Response(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rejected_code(text: &str) -> (Option<RequestId>, i64) {
        let r = Message::parse(text).unwrap_err().response;
        (r.id, r.outcome.unwrap_err().code)
    }

    #[test]
    fn parses_the_real_clients_initialize() {
        let text = r#"{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"elicitation":{}},"clientInfo":{"name":"claude-code","title":"Claude Code","version":"2.1.328"}},"jsonrpc":"2.0","id":0}"#;
        let Message::Request(r) = Message::parse(text).unwrap() else {
            panic!("not a request")
        };
        assert_eq!(r.id, RequestId::Number(0));
        assert_eq!(r.method, "initialize");
    }

    #[test]
    fn notification_has_no_id() {
        let m = Message::parse(r#"{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":42}}"#)
            .unwrap();
        assert_eq!(
            m,
            Message::Notification(Notification::new("ide_connected", Some(json!({"pid":42}))))
        );
    }

    #[test]
    fn garbage_is_a_parse_error_with_null_id() {
        assert_eq!(rejected_code("{not json"), (None, code::PARSE_ERROR));
        assert_eq!(rejected_code(""), (None, code::PARSE_ERROR));
        assert_eq!(rejected_code("\u{0}\u{1}"), (None, code::PARSE_ERROR));
    }

    #[test]
    fn nesting_bomb_is_a_parse_error() {
        let bomb = "[".repeat(100_000);
        assert_eq!(rejected_code(&bomb), (None, code::PARSE_ERROR));
        let bomb = "{\"a\":".repeat(10_000);
        assert_eq!(rejected_code(&bomb), (None, code::PARSE_ERROR));
    }

    #[test]
    fn invalid_shapes_are_invalid_requests() {
        assert_eq!(rejected_code("[]"), (None, code::INVALID_REQUEST));
        assert_eq!(rejected_code("42"), (None, code::INVALID_REQUEST));
        assert_eq!(
            rejected_code(r#"{"id":1,"method":"ping"}"#),
            (Some(RequestId::Number(1)), code::INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            (Some(RequestId::Number(1)), code::INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":"a","method":7}"#),
            (Some(RequestId::String("a".into())), code::INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            (None, code::INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#),
            (None, code::INVALID_REQUEST)
        );
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#),
            (Some(RequestId::Number(1)), code::INVALID_REQUEST)
        );
    }

    #[test]
    fn responses_round_trip() {
        let r = Response::ok(RequestId::Number(3), json!({}));
        assert_eq!(r.to_json(), r#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
        assert_eq!(
            Response::ok_json_with_raw_result(&RequestId::Number(3), "{}"),
            r.to_json()
        );
        let s = Response::ok(RequestId::String("a\"b".into()), json!([1]));
        assert_eq!(
            Response::ok_json_with_raw_result(&RequestId::String("a\"b".into()), "[1]"),
            s.to_json()
        );
        let back = Message::parse(&r.to_json()).unwrap();
        assert_eq!(back, Message::Response(r));
        let e = Response::error(None, ErrorObject::parse_error("x"));
        assert_eq!(e.to_value()["id"], Value::Null);
    }

    #[test]
    fn absent_and_null_params_mean_empty_object() {
        #[derive(serde::Deserialize)]
        struct P {
            #[serde(default)]
            uri: Option<String>,
        }
        let r = Request::new(1, "x", None);
        assert!(r.params::<P>().unwrap().uri.is_none());
        let r = Request::new(1, "x", Some(Value::Null));
        assert!(r.params::<P>().unwrap().uri.is_none());
        let r = Request::new(1, "x", Some(json!({"uri": "file:///a"})));
        assert_eq!(r.params::<P>().unwrap().uri.as_deref(), Some("file:///a"));
    }

    #[test]
    fn errors_about_unreadable_messages_have_no_id() {
        for text in [
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#,
        ] {
            let Message::Response(r) = Message::parse(text).unwrap() else {
                panic!("{text}")
            };
            assert_eq!(r.id, None);
            assert_eq!(r.outcome.unwrap_err().message, "Parse error");
        }
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":null,"result":1}"#),
            (None, code::INVALID_REQUEST)
        );
    }

    #[test]
    fn repeated_members_are_invalid_requests() {
        assert_eq!(
            rejected_code(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#),
            (None, code::INVALID_REQUEST)
        );
    }

    #[test]
    fn null_params_mean_none_and_answers_are_flagged() {
        let Message::Request(r) =
            Message::parse(r#"{"jsonrpc":"2.0","id":1,"method":"shutdown","params":null}"#)
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(r.params, None);
        let bad_answer =
            Message::parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#).unwrap_err();
        assert!(bad_answer.answer_like);
        let bad_request = Message::parse(r#"{"jsonrpc":"2.0","id":1,"method":3}"#).unwrap_err();
        assert!(!bad_request.answer_like);
    }

    /// Issue 11, defect 8: members nobody reads are skipped, never built,
    /// and nesting bombs inside them cost no stack.
    #[test]
    fn regression_unread_members_are_skipped_not_built() {
        let keys: String = (0..50_000).map(|i| format!(r#""k{i}":{i},"#)).collect();
        let text = format!(r#"{{{keys}"jsonrpc":"2.0","method":"n","params":{{{keys}"a":1}}}}"#);
        let Message::Notification(n) = Message::parse(&text).unwrap() else {
            panic!()
        };
        #[derive(serde::Deserialize)]
        struct A {
            a: u32,
        }
        assert_eq!(n.params::<A>().unwrap().a, 1);
        for bomb in [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","x":{}}}"#,
                "[".repeat(200_000)
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"p":{}1{}}}}}"#,
                "[".repeat(100_000),
                "]".repeat(100_000)
            ),
            format!("{}1{}", "[".repeat(5000), "]".repeat(5000)),
        ] {
            assert_eq!(
                rejected_code(&bomb),
                (None, code::PARSE_ERROR),
                "the nesting limit holds everywhere, also where nothing is built"
            );
        }
    }

    #[test]
    fn raw_json_compares_values_not_spelling() {
        let a: RawJson = serde_json::from_str(r#"{ "a" : [1, 2] }"#).unwrap();
        assert_eq!(a, RawJson::from(json!({"a": [1, 2]})));
        assert_ne!(a, RawJson::from(json!({"a": [2, 1]})));
        assert_eq!(format!("{a:?}"), r#"{ "a" : [1, 2] }"#);
    }

    #[test]
    fn positional_params_are_refused() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct P {
            name: String,
        }
        let r = Request::new(1, "x", Some(json!(["getDiagnostics"])));
        assert_eq!(r.params::<P>().unwrap_err().code, code::INVALID_PARAMS);
    }
}
