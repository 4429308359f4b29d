//! `get_diagnostics`: the editor's diagnostics as lines a model reads at a
//! glance, `[error] src/app.py:12 — undefined name 'x' (pyflakes E0602)`,
//! lines 1-based (the editor protocol's are 0-based), errors first, and
//! filterable by minimum severity and by path (a file, or a directory and
//! everything under it).

use ccbridge_protocol::editor::{FileDiagnostics, Severity};

/// 0 for errors up to 3 for hints: lower is more severe.
pub fn rank(s: Severity) -> u8 {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Information => 2,
        Severity::Hint => 3,
    }
}

fn label(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Information => "info",
        Severity::Hint => "hint",
    }
}

/// The diagnostics of `files` at least as severe as `min`, under `under`
/// (a path: the file itself, or a directory) when given, one per line,
/// paths shown relative to `base` when beneath it.
pub fn format(files: &[FileDiagnostics], min: Severity, under: Option<&str>, base: &str) -> String {
    let mut rows: Vec<(u8, String, u32, String)> = Vec::new();
    for f in files {
        let path = f.uri.strip_prefix("file://").unwrap_or(&f.uri);
        if let Some(u) = under {
            let u = u.trim_end_matches('/');
            if !(path == u || path.starts_with(&format!("{u}/"))) {
                continue;
            }
        }
        let shown = path
            .strip_prefix(base.trim_end_matches('/'))
            .and_then(|p| p.strip_prefix('/'))
            .unwrap_or(path);
        for d in &f.diagnostics {
            if rank(d.severity) > rank(min) {
                continue;
            }
            let mut text = format!(
                "[{}] {shown}:{} — {}",
                label(d.severity),
                d.range.start.line + 1,
                d.message.replace('\n', " ")
            );
            match (&d.source, &d.code) {
                (Some(s), Some(c)) => text.push_str(&format!(" ({s} {c})")),
                (Some(s), None) => text.push_str(&format!(" ({s})")),
                (None, Some(c)) => text.push_str(&format!(" ({c})")),
                (None, None) => {}
            }
            rows.push((rank(d.severity), shown.to_owned(), d.range.start.line, text));
        }
    }
    rows.sort();
    if rows.is_empty() {
        return "No diagnostics.\n".to_owned();
    }
    rows.into_iter().map(|r| r.3 + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn files() -> Vec<FileDiagnostics> {
        serde_json::from_value(json!([
            {"uri": "file:///ws/src/app.py", "diagnostics": [
                {"message": "unused import", "severity": "Warning",
                 "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 9}}},
                {"message": "undefined name 'x'", "severity": "Error", "source": "pyflakes", "code": "E0602",
                 "range": {"start": {"line": 11, "character": 4}, "end": {"line": 11, "character": 5}}}
            ]},
            {"uri": "file:///ws/README.md", "diagnostics": [
                {"message": "long line", "severity": "Hint",
                 "range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 1}}}
            ]}
        ]))
        .unwrap()
    }

    #[test]
    fn lines_are_one_based_errors_first_with_source_and_code() {
        let out = format(&files(), Severity::Hint, None, "/ws");
        assert_eq!(
            out,
            "[error] src/app.py:12 — undefined name 'x' (pyflakes E0602)\n\
             [warning] src/app.py:1 — unused import\n\
             [hint] README.md:3 — long line\n"
        );
    }

    #[test]
    fn severity_and_path_filter() {
        let out = format(&files(), Severity::Warning, None, "/ws");
        assert!(!out.contains("[hint]"), "{out}");
        let out = format(&files(), Severity::Hint, Some("/ws/src"), "/ws");
        assert!(out.contains("app.py") && !out.contains("README"), "{out}");
        assert_eq!(
            format(&files(), Severity::Error, Some("/ws/README.md"), "/ws"),
            "No diagnostics.\n"
        );
        // `/ws/sr` is not a directory prefix of `/ws/src`.
        assert_eq!(
            format(&files(), Severity::Hint, Some("/ws/sr"), "/ws"),
            "No diagnostics.\n"
        );
    }
}
