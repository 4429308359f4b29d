//! JSON-RPC 2.0 envelope.
//!
//! [`Message::parse`] is total: any input yields either a message or the
//! exact error response to send back (`-32700` for bytes that are not JSON,
//! `-32600` for JSON that is not a valid message), so a transport never has to
//! decide error semantics itself and never panics on hostile bytes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(code::PARSE_ERROR, format!("Parse error: {detail}"))
    }
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(code::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }
    pub fn method_not_found(method: &str) -> Self {
        ErrorObject {
            code: code::METHOD_NOT_FOUND,
            message: "Method not found".into(),
            data: Some(Value::String(method.to_owned())),
        }
    }
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(code::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    pub params: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// `None` only for errors about a message whose id could not be read.
    pub id: Option<RequestId>,
    pub outcome: Result<Value, ErrorObject>,
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
}

impl Message {
    /// Classifies `text` as a JSON-RPC 2.0 message.
    ///
    /// Batches (JSON arrays) are rejected with `-32600`: the IDE transport
    /// never batches and MCP removed batching in 2025-06-18. serde_json's
    /// recursion limit (128) stays on, so nesting bombs are parse errors.
    pub fn parse(text: &str) -> Result<Message, Rejected> {
        let value: Value = serde_json::from_str(text).map_err(|e| Rejected {
            response: Response::error(None, ErrorObject::parse_error(e)),
        })?;
        Self::from_value(value)
    }

    pub fn from_value(value: Value) -> Result<Message, Rejected> {
        let Value::Object(mut obj) = value else {
            let what = if value.is_array() {
                "batches are not supported"
            } else {
                "a message must be a JSON object"
            };
            return Err(Rejected {
                response: Response::error(None, ErrorObject::invalid_request(what)),
            });
        };
        let id = match obj.remove("id") {
            None => None,
            Some(v) => match serde_json::from_value::<RequestId>(v) {
                Ok(id) => Some(id),
                Err(_) => {
                    return Err(Rejected {
                        response: Response::error(
                            None,
                            ErrorObject::invalid_request("id must be an integer or a string"),
                        ),
                    })
                }
            },
        };
        let invalid = |id: Option<RequestId>, what: &str| Rejected {
            response: Response::error(id, ErrorObject::invalid_request(what)),
        };
        match obj.get("jsonrpc") {
            Some(Value::String(v)) if v == "2.0" => {}
            _ => return Err(invalid(id, "\"jsonrpc\" must be \"2.0\"")),
        }
        let params = obj.remove("params");
        if let Some(p) = &params {
            if !(p.is_object() || p.is_array()) {
                return Err(invalid(id, "params must be an object or an array"));
            }
        }
        match obj.remove("method") {
            Some(Value::String(method)) => Ok(match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params }),
            }),
            Some(_) => Err(invalid(id, "method must be a string")),
            None => {
                let outcome = match (obj.remove("result"), obj.remove("error")) {
                    (Some(r), None) => Ok(r),
                    (None, Some(e)) => match serde_json::from_value::<ErrorObject>(e) {
                        Ok(e) => Err(e),
                        Err(_) => return Err(invalid(id, "malformed error object")),
                    },
                    _ => return Err(invalid(id, "no method, result or error")),
                };
                match id {
                    Some(id) => Ok(Message::Response(Response {
                        id: Some(id),
                        outcome,
                    })),
                    None => Err(invalid(None, "response without id")),
                }
            }
        }
    }

    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("jsonrpc".into(), Value::from("2.0"));
        match self {
            Message::Request(r) => {
                m.insert(
                    "id".into(),
                    serde_json::to_value(&r.id).unwrap_or(Value::Null),
                );
                m.insert("method".into(), Value::from(r.method.clone()));
                if let Some(p) = &r.params {
                    m.insert("params".into(), p.clone());
                }
            }
            Message::Notification(n) => {
                m.insert("method".into(), Value::from(n.method.clone()));
                if let Some(p) = &n.params {
                    m.insert("params".into(), p.clone());
                }
            }
            Message::Response(r) => return r.to_value(),
        }
        Value::Object(m)
    }

    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

impl Request {
    pub fn new(id: impl Into<RequestId>, method: impl Into<String>, params: Option<Value>) -> Self {
        Request {
            id: id.into(),
            method: method.into(),
            params,
        }
    }
    /// Deserializes `params` (absent and `null` both mean `{}`).
    pub fn params<P: serde::de::DeserializeOwned>(&self) -> Result<P, ErrorObject> {
        params_as(self.params.as_ref())
    }
}

impl Notification {
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Notification {
            method: method.into(),
            params,
        }
    }
    pub fn params<P: serde::de::DeserializeOwned>(&self) -> Result<P, ErrorObject> {
        params_as(self.params.as_ref())
    }
}

/// Every method of this protocol takes named params. serde would also read
/// a struct from a JSON array, by position, so arrays are refused here.
fn params_as<P: serde::de::DeserializeOwned>(params: Option<&Value>) -> Result<P, ErrorObject> {
    let empty = Value::Object(Map::new());
    let v = match params {
        None | Some(Value::Null) => &empty,
        Some(Value::Array(_)) => {
            return Err(ErrorObject::invalid_params("params must be an object"))
        }
        Some(v) => v,
    };
    P::deserialize(v).map_err(ErrorObject::invalid_params)
}

impl Response {
    pub fn ok(id: RequestId, result: Value) -> Self {
        Response {
            id: Some(id),
            outcome: Ok(result),
        }
    }
    pub fn error(id: Option<RequestId>, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Err(error),
        }
    }
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self.wire()).unwrap_or(Value::Null)
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
    result: Option<&'a Value>,
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
