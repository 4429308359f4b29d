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

/// The most selected text kept (and sent to Claude). Claude shows the model
/// at most 2,000 characters of it; the rest only costs memory in every
/// copy (current, latest, each client's notification).
pub const MAX_SELECTION_TEXT: usize = 1 << 20;

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

impl Selection {
    /// Cuts `text` to [`MAX_SELECTION_TEXT`] bytes at a character boundary
    /// and returns the memory beyond it. The range is kept: Claude counts
    /// lines from it, not from the text.
    pub fn cap_text(&mut self) {
        if self.text.len() > MAX_SELECTION_TEXT {
            let mut cut = MAX_SELECTION_TEXT;
            while !self.text.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.truncate(cut);
            self.text.shrink_to_fit();
        }
    }
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
        let s = match Scalar::deserialize(d)? {
            Scalar::Text(s) | Scalar::Number(s) => s,
            Scalar::Null => String::new(),
        };
        Severity::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown severity {s:?} (expected Error, Warning, Information, Hint or 1-4)"
            ))
        })
    }
}

/// A JSON scalar read without building a `serde_json::Value`; objects and
/// arrays are refused at their first byte instead of being buffered.
enum Scalar {
    Text(String),
    Number(String),
    Null,
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar::Text(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar::Text(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar::Number(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar::Number(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar::Number(v.to_string()))
            }
            fn visit_unit<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
        }
        d.deserialize_any(V)
    }
}

fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Scalar::deserialize(d)? {
        Scalar::Null => None,
        Scalar::Text(s) | Scalar::Number(s) => Some(s),
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

/// `s` cut to its first `max` characters (never inside a character): what
/// an agent is sent of a selection it caps.
pub fn cap_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((cut, _)) => &s[..cut],
        None => s,
    }
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
        assert!(serde_json::from_value::<Severity>(json!(5)).is_err());
        assert!(serde_json::from_value::<Severity>(json!({"a": 1})).is_err());
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
    fn selection_text_is_capped_at_a_char_boundary() {
        let mut s = Selection {
            file_path: "/a".into(),
            text: "é".repeat(MAX_SELECTION_TEXT),
            range: Range::default(),
        };
        s.cap_text();
        assert!(s.text.len() <= MAX_SELECTION_TEXT);
        assert!(s.text.len() > MAX_SELECTION_TEXT - 4);
        assert!(s.text.chars().all(|c| c == 'é'));
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
