//! Editor state as the engine keeps it and the client reads it.
//!
//! Coordinates are 0-based lines and characters, as the client expects on
//! every IDE message. Paths are absolute paths in the CLI's own path space.

use serde::{Deserialize, Deserializer, Serialize};

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

impl Position {
    pub const fn new(line: u32, character: u32) -> Self {
        Position { line, character }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Range {
    pub start: Position,
    pub end: Position,
}

impl Range {
    pub const fn new(start: Position, end: Position) -> Self {
        Range { start, end }
    }
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// The user's selection, or a bare cursor (`text` empty, `start == end`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Selection {
    pub file_path: String,
    #[serde(default)]
    pub text: String,
    #[serde(alias = "selection")]
    pub range: Range,
}

/// One open editor tab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditorTab {
    pub path: String,
    #[serde(default)]
    pub is_active: bool,
    #[serde(default)]
    pub is_dirty: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default)]
    pub is_untitled: bool,
}

impl EditorTab {
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| {
            self.path
                .rsplit(['/', '\\'])
                .next()
                .unwrap_or(&self.path)
                .to_owned()
        })
    }
}

/// Diagnostic severity, serialized as the client's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    /// Reads the spellings editors use: names in any case (`error`, `WARNING`,
    /// `info`, `WEAK_WARNING`) and LSP's numbers 1–4.
    pub fn parse(s: &str) -> Option<Severity> {
        match s.to_ascii_lowercase().as_str() {
            "error" | "1" => Some(Severity::Error),
            "warning" | "warn" | "weak_warning" | "2" => Some(Severity::Warning),
            "information" | "info" | "3" => Some(Severity::Information),
            "hint" | "4" => Some(Severity::Hint),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Severity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let s = match &v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => String::new(),
        };
        Severity::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown severity {v}")))
    }
}

fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    })
}

/// One diagnostic. `code` is always a string on the wire: the client drops
/// codes of any other type.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Diagnostic {
    pub message: String,
    pub severity: Severity,
    pub range: Range,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(
        default,
        deserialize_with = "string_or_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub code: Option<String>,
}

/// The diagnostics of one file, as `getDiagnostics` returns them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiagnostics {
    pub uri: String,
    pub diagnostics: Vec<Diagnostic>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn severity_accepts_editor_spellings() {
        for (s, want) in [
            ("Error", Severity::Error),
            ("ERROR", Severity::Error),
            ("warning", Severity::Warning),
            ("WEAK_WARNING", Severity::Warning),
            ("info", Severity::Information),
            ("Information", Severity::Information),
            ("hint", Severity::Hint),
        ] {
            assert_eq!(Severity::parse(s), Some(want), "{s}");
        }
        let d: Severity = serde_json::from_value(json!(2)).unwrap();
        assert_eq!(d, Severity::Warning);
        assert!(serde_json::from_value::<Severity>(json!("fatal")).is_err());
        assert_eq!(
            serde_json::to_value(Severity::Information).unwrap(),
            "Information"
        );
    }

    #[test]
    fn numeric_codes_become_strings() {
        let d: Diagnostic = serde_json::from_value(json!({
            "message":"m","severity":1,"code":2304,
            "range":{"start":{"line":0,"character":1},"end":{"line":0,"character":2}}
        }))
        .unwrap();
        assert_eq!(d.code.as_deref(), Some("2304"));
        assert_eq!(serde_json::to_value(&d).unwrap()["code"], "2304");
    }

    #[test]
    fn tab_label_defaults_to_basename() {
        let t = EditorTab {
            path: "/a/b/c.rs".into(),
            is_active: true,
            is_dirty: false,
            language_id: None,
            label: None,
            is_untitled: false,
        };
        assert_eq!(t.label(), "c.rs");
    }
}
