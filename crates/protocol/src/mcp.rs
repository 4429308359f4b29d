//! The MCP subset the IDE transport uses: `initialize`, `ping`, `tools/list`,
//! `tools/call` and tool results.
//!
//! Results never carry `structuredContent`: the client may replace the
//! content with it and then fail to parse `FILE_SAVED` or the diagnostics
//! array.

use crate::jsonrpc::RawJson;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// Protocol versions this server speaks, newest first. The client (2.1.328)
/// sends `2025-11-25` and accepts any of these in the reply.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Answers the client's version when we support it, else our newest.
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| SUPPORTED_VERSIONS.iter().copied().find(|v| *v == r))
        .unwrap_or(SUPPORTED_VERSIONS[0])
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// Kept as text: the server declares no feature that depends on them.
    #[serde(default)]
    pub capabilities: Option<RawJson>,
    #[serde(default)]
    pub client_info: Option<Implementation>,
}

/// The `initialize` result: only the `tools` capability, never `prompts` or
/// `resources` (they would become slash commands and resource tools).
pub fn initialize_result(protocol_version: &str, server: &Implementation) -> Value {
    json!({
        "protocolVersion": protocol_version,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": server,
    })
}

/// One entry of `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

/// `tools/call` params. `arguments` stay raw JSON until the tool reads
/// them into its own typed struct.
#[derive(Debug, Clone, Deserialize)]
pub struct CallToolParams {
    pub name: String,
    #[serde(default)]
    pub arguments: Option<RawJson>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<RawJson>,
}

/// One content item of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    Text {
        text: String,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl Content {
    pub fn text(t: impl Into<String>) -> Self {
        Content::Text { text: t.into() }
    }
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// A `tools/call` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    pub content: Vec<Content>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl CallToolResult {
    pub fn text(t: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![Content::text(t)],
            is_error: false,
        }
    }
    pub fn texts<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> Self {
        CallToolResult {
            content: items.into_iter().map(Content::text).collect(),
            is_error: false,
        }
    }
    /// A JSON value serialized into a single text item, as the VS Code
    /// extension does for its structured answers.
    pub fn json(v: &impl Serialize) -> Self {
        Self::text(serde_json::to_string(v).unwrap_or_else(|_| "null".into()))
    }
    /// A tool-level failure: `isError: true` with a readable message.
    pub fn error(msg: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![Content::text(msg)],
            is_error: true,
        }
    }
    pub fn first_text(&self) -> Option<&str> {
        self.content.iter().find_map(Content::as_text)
    }
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_versions() {
        assert_eq!(negotiate_version(Some("2025-11-25")), "2025-11-25");
        assert_eq!(negotiate_version(Some("2024-11-05")), "2024-11-05");
        assert_eq!(negotiate_version(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate_version(Some("2026-07-28")), "2025-11-25");
        assert_eq!(negotiate_version(Some("1999-01-01")), "2025-11-25");
        assert_eq!(negotiate_version(None), "2025-11-25");
    }

    #[test]
    fn results_have_no_structured_content_and_omit_false_is_error() {
        let v = CallToolResult::text("FILE_SAVED").to_value();
        assert_eq!(v, json!({"content":[{"type":"text","text":"FILE_SAVED"}]}));
        let v = CallToolResult::error("boom").to_value();
        assert_eq!(
            v,
            json!({"content":[{"type":"text","text":"boom"}],"isError":true})
        );
    }

    #[test]
    fn initialize_declares_only_tools() {
        let v = initialize_result(
            "2025-11-25",
            &Implementation {
                name: "ccbridge".into(),
                version: "0.1.0".into(),
                title: None,
            },
        );
        let caps = v["capabilities"].as_object().unwrap();
        assert_eq!(caps.keys().collect::<Vec<_>>(), vec!["tools"]);
        assert_eq!(v["serverInfo"]["name"], "ccbridge");
    }

    #[test]
    fn call_params_keep_meta() {
        let p: CallToolParams = serde_json::from_value(json!({
            "name":"getDiagnostics","arguments":{},
            "_meta":{"claudecode/toolUseId":"toolu_1","progressToken":4}
        }))
        .unwrap();
        assert_eq!(p.name, "getDiagnostics");
        assert_eq!(p.meta.unwrap().to_value()["progressToken"], 4);
    }
}
