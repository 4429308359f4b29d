//! The data both servers serve and the client sends: 1,000 diagnostics over
//! 50 files, distinct selections, and the client's own messages.
//!
//! The floor's canned answers are produced from the same protocol types
//! ccbridge uses, so both put the same bytes (give or take key order) on the
//! wire.

use ccbridge_protocol::editor::{
    Diagnostic, FileDiagnostics, Position, Range, Selection, Severity,
};
use ccbridge_protocol::jsonrpc::Message;
use ccbridge_protocol::notifications::SelectionChanged;
use ccbridge_protocol::uri::file_uri;

/// Files that carry diagnostics.
pub const FILES: usize = 50;
/// Diagnostics per file; `FILES * PER_FILE` = 1,000.
pub const PER_FILE: usize = 20;
/// The workspace folder both servers advertise.
pub const WORKSPACE: &str = "/bench/workspace";

/// The path of file `i`.
pub fn file_path(i: usize) -> String {
    format!("{WORKSPACE}/src/module_{i:02}/component.rs")
}

/// The diagnostics of file `i`: realistic compiler messages of varied length.
pub fn diagnostics_for(i: usize) -> Vec<Diagnostic> {
    const MESSAGES: [&str; 5] = [
        "mismatched types: expected `u32`, found `usize`",
        "unused variable: `connection_state`; if this is intentional, prefix it with an underscore: `_connection_state`",
        "cannot borrow `self.sessions` as mutable because it is also borrowed as immutable",
        "this function takes 3 arguments but 2 arguments were supplied",
        "unnecessary `unsafe` block",
    ];
    const SEVERITIES: [Severity; 4] = [
        Severity::Error,
        Severity::Warning,
        Severity::Information,
        Severity::Hint,
    ];
    (0..PER_FILE)
        .map(|j| {
            let line = (j * 7 + i) as u32;
            Diagnostic {
                message: MESSAGES[(i + j) % MESSAGES.len()].to_owned(),
                severity: SEVERITIES[j % SEVERITIES.len()],
                range: Range::new(Position::new(line, 4), Position::new(line, 24)),
                source: Some(if j % 2 == 0 { "rustc" } else { "clippy" }.to_owned()),
                code: Some(format!("E{:04}", 300 + j)),
            }
        })
        .collect()
}

/// Every file's diagnostics in path order, as `getDiagnostics {}` answers.
pub fn all_diagnostics() -> Vec<FileDiagnostics> {
    let mut files: Vec<FileDiagnostics> = (0..FILES)
        .map(|i| FileDiagnostics {
            uri: file_uri(&file_path(i)),
            diagnostics: diagnostics_for(i),
        })
        .collect();
    files.sort_by(|a, b| a.uri.cmp(&b.uri));
    files
}

/// Selection number `n`: distinct text, file and range for every `n`.
pub fn selection(n: u64) -> Selection {
    let line = (n % 5000) as u32;
    Selection {
        file_path: file_path((n % FILES as u64) as usize),
        text: format!("let selection_{n} = engine.handle().send(event).await?;"),
        range: Range::new(Position::new(line, 4), Position::new(line, 58)),
    }
}

/// The `selection_changed` notification ccbridge sends for `s`, serialized.
pub fn selection_notification(s: &Selection) -> String {
    Message::Notification(SelectionChanged::from(s).into_notification()).to_json()
}

/// The real CLI's `initialize` request (Claude Code 2.1.x).
pub fn initialize_request(id: u64) -> String {
    format!(
        r#"{{"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{"roots":{{"listChanged":true}},"elicitation":{{}}}},"clientInfo":{{"name":"claude-code","title":"Claude Code","version":"2.1.328"}}}},"jsonrpc":"2.0","id":{id}}}"#
    )
}

pub const INITIALIZED: &str = r#"{"method":"notifications/initialized","jsonrpc":"2.0"}"#;

pub fn tools_list_request(id: u64) -> String {
    format!(r#"{{"method":"tools/list","jsonrpc":"2.0","id":{id}}}"#)
}

/// `tools/call getDiagnostics {}`: every file's diagnostics.
pub fn get_diagnostics_request(id: u64) -> String {
    format!(
        r#"{{"method":"tools/call","params":{{"name":"getDiagnostics","arguments":{{}}}},"jsonrpc":"2.0","id":{id}}}"#
    )
}

/// Extracts the number `n` from a `selection_changed` built by
/// [`selection`]; `None` for anything else.
pub fn selection_number(notification: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(notification).ok()?;
    if v.get("method")?.as_str()? != ccbridge_protocol::notifications::SELECTION_CHANGED {
        return None;
    }
    let text = v.get("params")?.get("text")?.as_str()?;
    let rest = text.strip_prefix("let selection_")?;
    rest.split(' ').next()?.parse().ok()
}

/// Counts the diagnostics in a `getDiagnostics` response (for validation,
/// outside the timed loops).
pub fn count_diagnostics(response: &str) -> anyhow::Result<usize> {
    let v: serde_json::Value = serde_json::from_str(response)?;
    let text = v
        .pointer("/result/content/0/text")
        .and_then(|t| t.as_str())
        .ok_or_else(|| anyhow::anyhow!("no text content in {}", truncate(response)))?;
    let files: Vec<FileDiagnostics> = serde_json::from_str(text)?;
    Ok(files.iter().map(|f| f.diagnostics.len()).sum())
}

/// The id of a JSON-RPC response, if it is one.
pub fn response_id(text: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    if v.get("method").is_some() {
        return None;
    }
    v.get("id")?.as_u64()
}

/// At most 200 characters of `s`, for error messages.
pub fn truncate(s: &str) -> &str {
    let mut end = s.len().min(200);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thousand_diagnostics_and_distinct_selections() {
        let n: usize = all_diagnostics().iter().map(|f| f.diagnostics.len()).sum();
        assert_eq!(n, 1000);
        let a = selection_notification(&selection(1));
        let b = selection_notification(&selection(2));
        assert_ne!(a, b);
        assert_eq!(selection_number(&a), Some(1));
        assert_eq!(selection_number(&b), Some(2));
    }
}
