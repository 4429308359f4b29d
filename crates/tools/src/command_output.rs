//! `execute_command`'s output as a model should read it: what a terminal
//! would finally show, without the escape sequences that drew it.
//!
//! Removed: CSI sequences (colours, cursor moves), OSC sequences (titles,
//! hyperlinks, and the shell-integration marks `133;…` and `633;…` that
//! terminals use to find commands and their exit codes), DCS/SOS/PM/APC
//! strings, two-byte escapes, their 8-bit C1 forms, and other control
//! characters. A carriage return that redraws a line (progress bars) keeps
//! only what was drawn last; a backspace erases the character before it.
//! (Output beyond a cap keeps its head and its tail, where the command line
//! and the errors usually are: `execute_command` keeps them as it reads.)

/// `raw` without escape sequences and control characters, each line as a
/// terminal would finally show it.
pub fn clean(raw: &str) -> String {
    let text = strip_escapes(raw);
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        // The last redraw of the line wins; a redraw shorter than what it
        // covers leaves the rest visible, as in a terminal.
        let mut shown: Vec<char> = Vec::new();
        for part in line.split('\r') {
            let mut col: usize = 0;
            for c in part.chars() {
                if c == '\u{8}' {
                    col = col.saturating_sub(1);
                    continue;
                }
                if col < shown.len() {
                    shown[col] = c;
                } else {
                    shown.push(c);
                }
                col += 1;
            }
        }
        out.extend(shown.into_iter().filter(|c| !c.is_control() || *c == '\t'));
    }
    out
}

fn strip_escapes(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // A two-byte escape (ESC 7, ESC =, ESC (B's first half…).
                Some('(' | ')' | '*' | '+') => {
                    chars.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            _ => out.push(c),
        }
    }
    out
}

/// Parameters and intermediates up to the final byte.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return;
        }
    }
}

/// Up to BEL, ESC \ or ST.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' if chars.peek() == Some(&'\\') => {
                chars.next();
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_cursor_moves_go() {
        assert_eq!(clean("\x1b[1;31merror\x1b[0m: bad\x1b[K"), "error: bad");
        assert_eq!(clean("\u{9b}32mok\u{9b}0m"), "ok");
    }

    #[test]
    fn shell_integration_titles_and_links_go() {
        let raw = "\x1b]633;A\x07$ \x1b]633;B\x07ls\n\x1b]633;C\x07a.txt\n\x1b]633;D;0\x07\x1b]0;title\x1b\\\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\";
        assert_eq!(clean(raw), "$ ls\na.txt\nlink");
        assert_eq!(clean("\x1b]133;A\x07prompt"), "prompt");
    }

    #[test]
    fn redraws_keep_what_was_drawn_last() {
        assert_eq!(clean("10%\r50%\r100%\n"), "100%\n");
        assert_eq!(clean("abcdef\rXY"), "XYcdef");
        assert_eq!(clean("ab\u{8}c"), "ac");
        assert_eq!(clean("crlf\r\nlines\r\n"), "crlf\nlines\n");
        assert_eq!(clean("bell\u{7} and\ttab"), "bell and\ttab");
    }

    #[test]
    fn an_unterminated_sequence_does_not_eat_the_world() {
        assert_eq!(clean("ok\x1b["), "ok");
        assert_eq!(clean("ok\x1b]unterminated"), "ok");
    }
}
