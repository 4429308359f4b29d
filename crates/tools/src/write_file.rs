//! `write_file`'s text handling, around the review and the atomic write
//! (`Workspace::write_atomic`): what is written keeps the conventions of the
//! file it replaces. (What the user changed in the proposal is reported to
//! the model as a unified diff by `ccbridge_server::hunks::unified`, the
//! same line diff the review's hunks come from.)
//!
//! Conventions kept from the original: a UTF-8 byte-order mark, CRLF line
//! endings (a proposal with bare LF lines is converted), and a final line
//! break. A model rarely reproduces them, and a file rewritten without them
//! shows every line changed in version control. A file whose lines end both
//! ways is left as the caller gives it: only it knows which lines the change
//! left alone, and those keep their own ending (`ccbridge-mcp`'s
//! `change::line_ends_kept`).

/// `proposed` with `original`'s BOM, line endings and final line break.
/// With no original, `proposed` as it is (for a new file the caller passes
/// the model's text as sent for `original`: its conventions are kept).
pub fn keep_conventions(original: Option<&str>, proposed: &str) -> String {
    let Some(original) = original else {
        return proposed.to_owned();
    };
    const BOM: char = '\u{FEFF}';
    let had_bom = original.starts_with(BOM);
    let body = proposed.strip_prefix(BOM).unwrap_or(proposed);
    let crlf = uses_crlf(original);
    let mut text = if crlf && !mixed_line_ends(original) {
        body.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        body.to_owned()
    };
    let eol = if crlf { "\r\n" } else { "\n" };
    if original.ends_with('\n') && !text.is_empty() && !text.ends_with('\n') {
        text.push_str(eol);
    }
    if had_bom {
        text.insert(0, BOM);
    }
    text
}

/// Some of the text's lines end in CRLF, others in a bare LF.
pub fn mixed_line_ends(text: &str) -> bool {
    let (lf, crlf) = line_breaks(text);
    crlf > 0 && crlf < lf
}

/// Most of the text's line breaks are CRLF.
pub fn uses_crlf(text: &str) -> bool {
    let (lf, crlf) = line_breaks(text);
    crlf > 0 && crlf * 2 >= lf
}

/// How many line breaks the text has, and how many of them are CRLF.
fn line_breaks(text: &str) -> (usize, usize) {
    (text.matches('\n').count(), text.matches("\r\n").count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_is_written_as_proposed() {
        assert_eq!(keep_conventions(None, "a\nb"), "a\nb");
    }

    #[test]
    fn the_final_line_break_bom_and_crlf_of_the_original_are_kept() {
        assert_eq!(keep_conventions(Some("a\n"), "b"), "b\n");
        assert_eq!(keep_conventions(Some("a"), "b"), "b");
        assert_eq!(keep_conventions(Some("\u{FEFF}a\n"), "b\n"), "\u{FEFF}b\n");
        assert_eq!(
            keep_conventions(Some("\u{FEFF}a\n"), "\u{FEFF}b\n"),
            "\u{FEFF}b\n"
        );
        assert_eq!(keep_conventions(Some("a\r\nb\r\n"), "x\ny"), "x\r\ny\r\n");
        assert_eq!(
            keep_conventions(Some("a\r\nb\r\n"), "x\r\ny\n"),
            "x\r\ny\r\n"
        );
        // An emptied file stays empty.
        assert_eq!(keep_conventions(Some("a\n"), ""), "");
    }

    #[test]
    fn a_mixed_files_endings_are_left_to_the_caller_its_final_break_kept() {
        assert!(mixed_line_ends("a\r\nb\n"));
        assert!(!mixed_line_ends("a\r\nb\r\n") && !mixed_line_ends("a\nb\n"));
        assert_eq!(
            keep_conventions(Some("a\r\nb\r\nc\n"), "a\r\nx\nc"),
            "a\r\nx\nc\r\n"
        );
    }
}
