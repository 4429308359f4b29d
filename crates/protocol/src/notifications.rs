//! Notifications exchanged on the IDE connection.
//!
//! Server → client: `selection_changed`, `at_mentioned`,
//! `diagnostics_changed` (the client has no handler for it; it is sent for
//! other clients and kept for compatibility), and `log_event`.
//! Client → server: `notifications/initialized`, `ide_connected`,
//! `notifications/cancelled`, `notifications/roots/list_changed`.

use crate::editor::{Diagnostic, Range, Selection};
use crate::jsonrpc::{Notification, RawJson};
use crate::uri::file_uri;
use serde::{Deserialize, Serialize};

pub const SELECTION_CHANGED: &str = "selection_changed";
pub const AT_MENTIONED: &str = "at_mentioned";
pub const DIAGNOSTICS_CHANGED: &str = "diagnostics_changed";
pub const LOG_EVENT: &str = "log_event";
pub const IDE_CONNECTED: &str = "ide_connected";
pub const INITIALIZED: &str = "notifications/initialized";
pub const CANCELLED: &str = "notifications/cancelled";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectionRange {
    pub start: crate::editor::Position,
    pub end: crate::editor::Position,
    pub is_empty: bool,
}

/// `selection_changed` params. A bare cursor is sent with `text: ""`: the
/// client then tells the model which file is open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectionChanged {
    pub text: String,
    pub file_path: String,
    pub file_url: String,
    pub selection: SelectionRange,
}

impl From<&Selection> for SelectionChanged {
    fn from(s: &Selection) -> Self {
        SelectionChanged {
            text: s.text.clone(),
            file_path: s.file_path.clone(),
            file_url: file_uri(&s.file_path),
            selection: SelectionRange {
                start: s.range.start,
                end: s.range.end,
                is_empty: s.range.is_empty(),
            },
        }
    }
}

impl SelectionChanged {
    pub fn into_notification(self) -> Notification {
        to_notification(SELECTION_CHANGED, &self)
    }
}

/// `at_mentioned` params; lines are 0-based, the client adds 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AtMentioned {
    pub file_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_start: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_end: Option<u32>,
}

impl AtMentioned {
    pub fn into_notification(self) -> Notification {
        to_notification(AT_MENTIONED, &self)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosticsChanged {
    pub uri: String,
    pub diagnostics: Vec<Diagnostic>,
}

impl DiagnosticsChanged {
    pub fn into_notification(self) -> Notification {
        to_notification(DIAGNOSTICS_CHANGED, &self)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEvent {
    pub event_name: String,
    /// Kept as text: only the name is ever looked at.
    #[serde(default)]
    pub event_data: Option<RawJson>,
}

/// `ide_connected {pid}`: the CLI's own pid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdeConnected {
    #[serde(default)]
    pub pid: Option<u32>,
}

fn to_notification(method: &str, params: &impl Serialize) -> Notification {
    Notification::with_params(method, params)
}

/// A range for `at_mentioned`-style whole-line references.
pub fn lines_of(range: &Range) -> (u32, u32) {
    (range.start.line, range.end.line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::editor::Position;
    use crate::jsonrpc::Message;
    use serde_json::json;

    #[test]
    fn selection_changed_matches_the_wire_shape() {
        let s = Selection {
            file_path: "/w/hello.py".into(),
            text: "a\nb\nc".into(),
            range: Range::new(Position::new(1, 0), Position::new(3, 1)),
        };
        let n = SelectionChanged::from(&s).into_notification();
        assert_eq!(
            Message::from(n).to_value(),
            json!({"jsonrpc":"2.0","method":"selection_changed","params":{
                "text":"a\nb\nc","filePath":"/w/hello.py","fileUrl":"file:///w/hello.py",
                "selection":{"start":{"line":1,"character":0},"end":{"line":3,"character":1},"isEmpty":false}}})
        );
    }

    #[test]
    fn cursor_only_selection_has_empty_text() {
        let s = Selection {
            file_path: "/w/a.rs".into(),
            text: String::new(),
            range: Range::new(Position::new(4, 2), Position::new(4, 2)),
        };
        let p = SelectionChanged::from(&s);
        assert_eq!(p.text, "");
        assert!(p.selection.is_empty);
    }

    #[test]
    fn at_mentioned_matches_the_real_message() {
        // reference: at_mentioned {filePath:<abs>, lineStart:1, lineEnd:3} inserts @hello.py#L2-4
        let n = AtMentioned {
            file_path: "/w/hello.py".into(),
            line_start: Some(1),
            line_end: Some(3),
        }
        .into_notification();
        assert_eq!(
            n.params_value().unwrap(),
            json!({"filePath":"/w/hello.py","lineStart":1,"lineEnd":3})
        );
        let whole = AtMentioned {
            file_path: "/w/x".into(),
            line_start: None,
            line_end: None,
        };
        assert_eq!(
            serde_json::to_value(whole).unwrap(),
            json!({"filePath":"/w/x"})
        );
    }

    #[test]
    fn ide_connected_and_log_event_parse() {
        let m =
            Message::parse(r#"{"jsonrpc":"2.0","method":"ide_connected","params":{"pid":4242}}"#)
                .unwrap();
        let Message::Notification(n) = m else {
            panic!()
        };
        assert_eq!(n.params::<IdeConnected>().unwrap().pid, Some(4242));
        let l: LogEvent =
            serde_json::from_value(json!({"eventName":"x","eventData":{"k":1}})).unwrap();
        assert_eq!(l.event_data.unwrap().to_value()["k"], 1);
    }
}
