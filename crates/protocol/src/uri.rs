//! `file://` URIs the way the client builds and compares them.
//!
//! The client concatenates `file://` and the raw absolute path, with no
//! percent-encoding, and compares after stripping the prefix and normalizing
//! the path. ccbridge does the same in both directions, and
//! additionally understands percent-encoded URIs from other clients.

/// `file://` + the raw path, exactly as the client expects.
pub fn file_uri(path: &str) -> String {
    format!("file://{path}")
}

/// The path a URI names, normalized for comparison: the prefix `file://`,
/// `_claude_fs_right:` or `_claude_fs_left:` stripped, `.` and `..`
/// components and duplicate or trailing separators removed.
pub fn path_from_uri(uri: &str) -> String {
    let raw = ["file://", "_claude_fs_right:", "_claude_fs_left:"]
        .iter()
        .find_map(|p| uri.strip_prefix(p))
        .unwrap_or(uri);
    normalize(raw)
}

/// Decodes `%XX` escapes; returns `None` when the input has none or they do
/// not decode to UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return None;
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Lexical normalization like Node's `path.normalize` for absolute POSIX
/// paths, minus the trailing separator.
pub fn normalize(path: &str) -> String {
    if path.is_empty() {
        return String::new();
    }
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_not_percent_encoded() {
        assert_eq!(file_uri("/home/u/my file.ts"), "file:///home/u/my file.ts");
    }

    #[test]
    fn prefixes_are_stripped_and_paths_normalized() {
        assert_eq!(path_from_uri("file:///a/b/../c/"), "/a/c");
        assert_eq!(path_from_uri("_claude_fs_right:/a/./b"), "/a/b");
        assert_eq!(path_from_uri("_claude_fs_left:/a//b"), "/a/b");
        assert_eq!(path_from_uri("/x/y"), "/x/y");
        assert_eq!(normalize("/.."), "/");
        assert_eq!(normalize("a/../.."), "..");
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("/a%20b").as_deref(), Some("/a b"));
        assert_eq!(percent_decode("/a b"), None);
        assert_eq!(percent_decode("/50%").as_deref(), Some("/50%"));
        assert_eq!(percent_decode("/%zz").as_deref(), Some("/%zz"));
        assert_eq!(percent_decode("/%ff"), None);
    }
}
