//! The few LSP messages ccbridge exchanges, as JSON built and read by hand.
//!
//! Why not `lsp-types`: ccbridge sends six messages and reads one
//! notification and one response; the crate's types would be converted to
//! ccbridge's own `Diagnostic` anyway, and its strict deserialization loses a
//! whole `publishDiagnostics` over one odd item, where this reads each item
//! on its own (a bad one is dropped, the others kept) and turns any `code`
//! into the string Claude Code needs.

use ccbridge_protocol::editor::{Diagnostic, Position, Range, Severity};
use serde::Deserialize;
use serde_json::{json, Value};

/// A message from the server, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request the server expects an answer to.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// An answer to one of ours (`error` set when it failed).
    Response {
        id: Value,
        error: Option<Value>,
    },
}

#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

impl Incoming {
    /// Reads one message body; `None` for anything that is not a JSON-RPC
    /// message (serde_json's depth limit keeps hostile nesting cheap).
    pub fn parse(body: &[u8]) -> Option<Incoming> {
        let raw: Raw = serde_json::from_slice(body).ok()?;
        let params = raw.params.unwrap_or(Value::Null);
        match (raw.id.filter(|i| !i.is_null()), raw.method) {
            (Some(id), Some(method)) => Some(Incoming::Request { id, method, params }),
            (None, Some(method)) => Some(Incoming::Notification { method, params }),
            (Some(id), None) => Some(Incoming::Response {
                id,
                error: raw.error,
            }),
            (None, None) => None,
        }
    }
}

pub fn request(id: u64, method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap_or_default()
}

pub fn notification(method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
        .unwrap_or_default()
}

pub fn response(id: &Value, result: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap_or_default()
}

pub fn error_response(id: &Value, code: i64, message: &str) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    )
    .unwrap_or_default()
}

/// What ccbridge answers a server's request: configuration from the
/// workspace's settings for the server (`null`, the server's defaults,
/// where they say nothing), acknowledgements for registrations and
/// progress, "not supported" for the rest (servers carry on without them).
pub fn answer(
    id: &Value,
    method: &str,
    params: &Value,
    folders: Value,
    settings: Option<&crate::config::ServerConfig>,
) -> Vec<u8> {
    match method {
        "workspace/configuration" => {
            let items = params
                .get("items")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            let answers = items
                .iter()
                .take(1024)
                .map(|item| {
                    let section = item.get("section").and_then(Value::as_str);
                    settings.map_or(Value::Null, |s| s.section(section))
                })
                .collect();
            response(id, Value::Array(answers))
        }
        "workspace/workspaceFolders" => response(id, folders),
        "client/registerCapability"
        | "client/unregisterCapability"
        | "window/workDoneProgress/create"
        | "window/showMessageRequest"
        | "workspace/diagnostic/refresh"
        | "workspace/semanticTokens/refresh"
        | "workspace/inlayHint/refresh"
        | "workspace/codeLens/refresh" => response(id, Value::Null),
        _ => error_response(id, -32601, "not supported by ccbridge"),
    }
}

/// A `file://` URI for a server: the path percent-encoded (servers parse
/// URIs strictly, unlike Claude Code).
pub fn file_uri(path: &str) -> String {
    let mut out = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path of a server's `file://` URI (percent-decoded, normalized);
/// `None` for any other scheme.
pub fn path_of_uri(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    // `file://localhost/p` and `file:///p`.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let decoded = ccbridge_protocol::uri::percent_decode(rest).unwrap_or_else(|| rest.to_owned());
    Some(ccbridge_protocol::uri::normalize(&decoded))
}

/// At most this many diagnostics are kept per file.
pub const MAX_DIAGNOSTICS: usize = 1000;

/// `textDocument/publishDiagnostics`' file and diagnostics; items that are
/// not diagnostics are dropped one by one.
pub fn published(params: &Value) -> Option<(String, Vec<Diagnostic>)> {
    let path = path_of_uri(params.get("uri")?.as_str()?)?;
    let items = params.get("diagnostics")?.as_array()?;
    let diagnostics = items
        .iter()
        .filter_map(diagnostic)
        .take(MAX_DIAGNOSTICS)
        .collect();
    Some((path, diagnostics))
}

fn diagnostic(v: &Value) -> Option<Diagnostic> {
    let message = v.get("message")?.as_str()?.to_owned();
    let range = range(v.get("range")?)?;
    // LSP: "If omitted it is up to the client to interpret"; an error.
    let severity = match v.get("severity").and_then(Value::as_u64) {
        None | Some(1) => Severity::Error,
        Some(2) => Severity::Warning,
        Some(3) => Severity::Information,
        Some(4) => Severity::Hint,
        Some(_) => return None,
    };
    let code = match v.get("code") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let source = v.get("source").and_then(Value::as_str).map(str::to_owned);
    Some(Diagnostic {
        message,
        severity,
        range,
        source,
        code,
    })
}

fn range(v: &Value) -> Option<Range> {
    let pos = |p: &Value| {
        let n = |k| p.get(k)?.as_u64().and_then(|n| u32::try_from(n).ok());
        Some(Position::new(n("line")?, n("character")?))
    };
    Some(Range::new(pos(v.get("start")?)?, pos(v.get("end")?)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_classified_and_junk_is_none() {
        assert!(matches!(
            Incoming::parse(br#"{"jsonrpc":"2.0","id":3,"method":"workspace/configuration","params":{"items":[{},{}]}}"#),
            Some(Incoming::Request { method, .. }) if method == "workspace/configuration"
        ));
        assert!(matches!(
            Incoming::parse(br#"{"jsonrpc":"2.0","method":"x"}"#),
            Some(Incoming::Notification {
                params: Value::Null,
                ..
            })
        ));
        assert!(matches!(
            Incoming::parse(br#"{"id":1,"result":{}}"#),
            Some(Incoming::Response { error: None, .. })
        ));
        let deep = "[".repeat(100_000);
        for junk in [
            &b""[..],
            b"null",
            b"[]",
            b"{\"method\":5}",
            b"\xff",
            deep.as_bytes(),
            b"{}",
        ] {
            assert_eq!(Incoming::parse(junk), None);
        }
    }

    #[test]
    fn configuration_is_answered_with_one_default_per_item() {
        let a = answer(
            &json!(7),
            "workspace/configuration",
            &json!({"items": [{}, {}]}),
            json!(null),
            None,
        );
        let v: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(v["result"], json!([null, null]));
        let a = answer(
            &json!("x"),
            "something/else",
            &json!(null),
            json!(null),
            None,
        );
        let v: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(v["error"]["code"], -32601);
        assert_eq!(v["id"], "x");
    }

    #[test]
    fn configuration_is_answered_by_section_from_the_settings() {
        let config = crate::config::Config::parse(
            "[servers.pyright.settings.python.analysis]\ntypeCheckingMode = \"strict\"\n",
            std::path::Path::new("lsp.toml"),
        )
        .unwrap()
        .server("pyright");
        let a = answer(
            &json!(1),
            "workspace/configuration",
            &json!({"items": [{"section": "python.analysis"}, {"section": "python"}, {"section": "pyright"}, {}]}),
            json!(null),
            Some(&config),
        );
        let v: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(
            v["result"],
            json!([
                {"typeCheckingMode": "strict"},
                {"analysis": {"typeCheckingMode": "strict"}},
                null,
                {"python": {"analysis": {"typeCheckingMode": "strict"}}}
            ])
        );
    }

    #[test]
    fn uris_round_trip_through_percent_encoding() {
        let p = "/w/a dir/é#?%.py";
        let uri = file_uri(p);
        assert_eq!(uri, "file:///w/a%20dir/%C3%A9%23%3F%25.py");
        assert_eq!(path_of_uri(&uri).as_deref(), Some(p));
        assert_eq!(
            path_of_uri("file:///w/./x/../y.py").as_deref(),
            Some("/w/y.py")
        );
        assert_eq!(path_of_uri("untitled:1"), None);
        assert_eq!(path_of_uri("file://host/x"), None);
    }

    #[test]
    fn diagnostics_are_read_item_by_item_with_string_codes() {
        let r = json!({"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 9}});
        let (path, d) = published(&json!({"uri": "file:///w/a.py", "version": 3, "diagnostics": [
            {"range": r, "severity": 1, "code": "reportAttributeAccessIssue", "source": "Pyright", "message": "m1"},
            {"range": r, "code": 2304, "message": "m2"},
            {"range": r, "severity": 2, "code": {"value": 1}, "message": "m3"},
            {"range": r, "severity": 9, "message": "bad severity"},
            {"range": {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}}, "message": "bad"},
            {"range": r},
            "junk", 5, null
        ]}))
        .unwrap();
        assert_eq!(path, "/w/a.py");
        let got: Vec<_> = d
            .iter()
            .map(|d| (d.message.as_str(), d.severity, d.code.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("m1", Severity::Error, Some("reportAttributeAccessIssue")),
                ("m2", Severity::Error, Some("2304")),
                ("m3", Severity::Warning, None)
            ]
        );
        assert_eq!(
            d[0].range,
            Range::new(Position::new(2, 4), Position::new(2, 9))
        );
        assert_eq!(d[0].source.as_deref(), Some("Pyright"));
        assert_eq!(published(&json!({"uri": 5, "diagnostics": []})), None);
        assert_eq!(
            published(&json!({"uri": "file:///a", "diagnostics": {}})),
            None
        );
    }
}
