//! How the tools show a file's lines and the workspace's paths to a model,
//! the same way in every tool.

use ccbridge_workspace::Workspace;
use std::path::Path;

/// A line without its line break, cut after `max` bytes (never inside a
/// character); also how many bytes were left out.
pub(crate) fn line(raw: &[u8], max: usize) -> (String, usize) {
    let bytes = raw.strip_suffix(b"\n").unwrap_or(raw);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.len() <= max {
        return (String::from_utf8_lossy(bytes).into_owned(), 0);
    }
    let text = String::from_utf8_lossy(&bytes[..max]);
    // A cut inside a character shows as U+FFFD: drop it.
    (
        text.trim_end_matches('\u{FFFD}').to_owned(),
        bytes.len() - max,
    )
}

/// `abs` relative to the first workspace folder when it is beneath it (what
/// relative paths in the tools' arguments are taken from), else absolute.
pub(crate) fn path(ws: &Workspace, abs: &Path) -> String {
    ws.folders()
        .next()
        .and_then(|first| abs.strip_prefix(first).ok())
        .unwrap_or(abs)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_lose_their_break_and_are_cut_at_a_character() {
        assert_eq!(super::line(b"ab\r\n", 10), ("ab".to_owned(), 0));
        assert_eq!(super::line("aé".as_bytes(), 2), ("a".to_owned(), 1));
        assert_eq!(super::line(b"abcdef\n", 4), ("abcd".to_owned(), 2));
    }
}
