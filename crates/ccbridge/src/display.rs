//! Printing text that came from outside ccbridge.
//!
//! Lock files, directory entries and IDE servers are not trusted: a planted
//! lock named `\e]0;…\a.lock` or an `ideName` holding `\e[2J` would rewrite
//! the user's terminal if printed as is, and bidirectional-override
//! characters can make a path read as another. Everything printed from such
//! input goes through [`line`] (table cells, error messages: one line, every
//! control character escaped) or [`text`] (tool output: line breaks and tabs
//! kept, every other control escaped). Escapes look like Rust's: `\u{1b}`.

use std::borrow::Cow;
use std::fmt::Write;

/// Characters that change how a terminal shows what follows them.
fn is_dangerous(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(s: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_dangerous(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_dangerous(c) && !keep(c) {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One line of outside text: every control character escaped.
pub fn line(s: &str) -> Cow<'_, str> {
    escape(s, |_| false)
}

/// Outside text printed as a block: line breaks and tabs kept.
pub fn text(s: &str) -> Cow<'_, str> {
    escape(s, |c| c == '\n' || c == '\t')
}

/// A path, shown as one line.
pub fn path(p: &std::path::Path) -> String {
    line(&p.display().to_string()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_are_shown_not_obeyed() {
        assert_eq!(line("\u{1b}]0;pwned\u{7}"), "\\u{1b}]0;pwned\\u{7}");
        assert_eq!(line("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(line("x\ny\tz\r"), "x\\ny\\tz\\r");
        assert_eq!(line("\u{9b}31m"), "\\u{9b}31m", "C1 CSI");
        assert_eq!(line("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(text("a\nb\tc\u{1b}"), "a\nb\tc\\u{1b}");
    }

    #[test]
    fn ordinary_text_is_borrowed_untouched() {
        assert!(matches!(line("/home/ü/project ✻"), Cow::Borrowed(_)));
        assert!(matches!(text("a\nb"), Cow::Borrowed(_)));
    }
}
