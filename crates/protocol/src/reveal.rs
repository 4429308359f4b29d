//! Text shown to a person for a decision, with every character that renders
//! invisibly or misleadingly made visible.
//!
//! An approval asks "may this command run?". If the command contains
//! bidirectional controls, the text a terminal, a browser or an editor draws
//! is not the text the shell reads: in `echo safe <RLI>; touch X; : #<PDI>`
//! (U+2067 right-to-left isolate, U+2069 pop directional isolate) the
//! isolated part is drawn right to left, so the `#` comes first and
//! `touch X` looks commented out, yet the shell runs it. Zero-width
//! characters, control characters (a carriage return lets a terminal draw
//! over the start of the line), and spaces that are not a space to the shell
//! do the same on a smaller scale. [`reveal`] replaces each such character by
//! a visible marker, `⟨U+2067⟩`, and lists it, so every face (the page, each
//! editor plugin) shows the same, computed once in Rust.
//!
//! What is kept as it is:
//! - a tab, which is whitespace to the shell as it looks;
//! - a line feed, in [`reveal`]: a multi-line command stays readable as lines
//!   (views that show it must show every line). [`reveal_line`] is for one
//!   line (a summary, a one-line prompt): there a line feed is `⟨U+000A⟩` too,
//!   so a one-line view never drops what follows it. Line feeds are not listed
//!   as hidden: they are visible either way.
//!
//! The marker's own opening bracket `⟨` (U+27E8) is always escaped as
//! `⟨U+27E8⟩` (and listed), so every `⟨` in the shown text starts a marker and
//! a command cannot spell a fake one: the shown text maps back to exactly one
//! original.

use serde::{Deserialize, Serialize};

/// The opening bracket of a marker.
const OPEN: char = '\u{27E8}';

/// One character [`reveal`] replaced by a marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HiddenChar {
    /// `U+2067`, as in the marker.
    pub code_point: String,
    /// Its Unicode name when it is one of the common ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its position in the original text, in characters (Unicode scalar
    /// values), from 0.
    pub index: usize,
}

/// The shown text and what was replaced in it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Revealed {
    pub shown: String,
    pub hidden: Vec<HiddenChar>,
}

/// `text` with every invisible or misleading character replaced by
/// `⟨U+XXXX⟩`; line feeds and tabs kept.
pub fn reveal(text: &str) -> Revealed {
    reveal_with(text, false)
}

/// Like [`reveal`], for a single line: a line feed is shown as `⟨U+000A⟩`.
pub fn reveal_line(text: &str) -> Revealed {
    reveal_with(text, true)
}

fn reveal_with(text: &str, one_line: bool) -> Revealed {
    let mut out = Revealed {
        shown: String::with_capacity(text.len()),
        hidden: Vec::new(),
    };
    for (index, c) in text.chars().enumerate() {
        if c == '\n' && one_line {
            out.shown.push_str("\u{27E8}U+000A\u{27E9}");
        } else if needs_marker(c) {
            let code_point = format!("U+{:04X}", c as u32);
            out.shown.push(OPEN);
            out.shown.push_str(&code_point);
            out.shown.push('\u{27E9}');
            out.hidden.push(HiddenChar {
                code_point,
                name: name(c).map(str::to_owned),
                index,
            });
        } else {
            out.shown.push(c);
        }
    }
    out
}

/// Whether `c` is drawn invisibly, moves or reorders other text, or looks
/// like something it is not (to the shell).
pub fn needs_marker(c: char) -> bool {
    matches!(c as u32,
        // C0 controls but tab and line feed, DEL, C1 controls (NEL included).
        0x00..=0x08 | 0x0B..=0x1F | 0x7F..=0x9F
        // Soft hyphen, combining grapheme joiner, Arabic letter mark.
        | 0xAD | 0x34F | 0x61C
        // Arabic and Syriac format characters.
        | 0x600..=0x605 | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2
        // Hangul fillers, Khmer inherent vowels, Mongolian vowel separator
        // and free variation selectors.
        | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
        // Spaces that are not a space to the shell.
        | 0xA0 | 0x1680 | 0x2000..=0x200A | 0x202F | 0x205F | 0x3000
        // Zero-width characters, direction marks, line and paragraph
        // separators, embeddings and overrides.
        | 0x200B..=0x200F | 0x2028..=0x202E
        // Word joiner, invisible operators, isolates, deprecated format
        // characters.
        | 0x2060..=0x2064 | 0x2066..=0x206F
        // Braille blank, Hangul filler.
        | 0x2800 | 0x3164
        // Private use: a font decides what they look like.
        | 0xE000..=0xF8FF | 0xF0000..=0x10FFFF
        // Variation selectors, byte order mark, halfwidth Hangul filler,
        // interlinear annotations, object replacement.
        | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0 | 0xFFF9..=0xFFFC
        // Noncharacters in the BMP.
        | 0xFDD0..=0xFDEF | 0xFFFE | 0xFFFF
        // Egyptian hieroglyph and shorthand format controls, musical
        // formatting.
        | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
        // Tag characters and variation selectors supplement (with the
        // unassigned rest of plane 14).
        | 0xE0000..=0xEFFFF
    ) || c == OPEN
}

/// The names of the characters most used to hide text.
fn name(c: char) -> Option<&'static str> {
    Some(match c {
        '\0' => "NULL",
        '\u{7}' => "BELL",
        '\u{8}' => "BACKSPACE",
        '\u{B}' => "LINE TABULATION",
        '\u{C}' => "FORM FEED",
        '\r' => "CARRIAGE RETURN",
        '\u{1B}' => "ESCAPE",
        '\u{7F}' => "DELETE",
        '\u{85}' => "NEXT LINE",
        '\u{9B}' => "CONTROL SEQUENCE INTRODUCER",
        '\u{A0}' => "NO-BREAK SPACE",
        '\u{AD}' => "SOFT HYPHEN",
        '\u{34F}' => "COMBINING GRAPHEME JOINER",
        '\u{61C}' => "ARABIC LETTER MARK",
        '\u{115F}' => "HANGUL CHOSEONG FILLER",
        '\u{1160}' => "HANGUL JUNGSEONG FILLER",
        '\u{180E}' => "MONGOLIAN VOWEL SEPARATOR",
        '\u{2000}'..='\u{200A}' => "SPACE (not U+0020)",
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{2028}' => "LINE SEPARATOR",
        '\u{2029}' => "PARAGRAPH SEPARATOR",
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{202F}' => "NARROW NO-BREAK SPACE",
        '\u{205F}' => "MEDIUM MATHEMATICAL SPACE",
        '\u{2060}' => "WORD JOINER",
        '\u{2061}'..='\u{2064}' => "INVISIBLE OPERATOR",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{3000}' => "IDEOGRAPHIC SPACE",
        '\u{3164}' => "HANGUL FILLER",
        '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' => "VARIATION SELECTOR",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE",
        '\u{FFA0}' => "HALFWIDTH HANGUL FILLER",
        '\u{E0000}'..='\u{E007F}' => "TAG",
        OPEN => "MATHEMATICAL LEFT ANGLE BRACKET (the marker's own)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command that reads as `echo safe` with a comment: right-to-left
    /// isolates draw `; touch X; :` after the `#`, as if commented out, and
    /// the shell runs it.
    const ATTACK: &str = "echo safe \u{2067}; touch X; : #\u{2069}";

    fn points(r: &Revealed) -> Vec<&str> {
        r.hidden.iter().map(|h| h.code_point.as_str()).collect()
    }

    #[test]
    fn bidi_isolates_that_hide_a_command_in_a_comment_are_shown() {
        let r = reveal(ATTACK);
        assert_eq!(
            r.shown,
            "echo safe \u{27E8}U+2067\u{27E9}; touch X; : #\u{27E8}U+2069\u{27E9}"
        );
        assert_eq!(points(&r), ["U+2067", "U+2069"]);
        assert_eq!(r.hidden[0].name.as_deref(), Some("RIGHT-TO-LEFT ISOLATE"));
        assert_eq!(r.hidden[0].index, 10);
        assert_eq!(r.hidden[1].index, ATTACK.chars().count() - 1);
        assert!(!r.shown.contains(['\u{2067}', '\u{2069}']));
    }

    #[test]
    fn plain_text_is_unchanged() {
        for s in [
            "",
            "cargo test -p x -- --nocapture",
            "ls 'été' | grep ü → 日本語",
        ] {
            let r = reveal(s);
            assert_eq!(r.shown, s);
            assert!(r.hidden.is_empty());
        }
    }

    #[test]
    fn every_class_is_shown() {
        let cases: &[(&[u32], &str)] = &[
            // bidi controls
            (
                &[0x202A, 0x202B, 0x202C, 0x202D, 0x202E],
                "bidi embedding/override",
            ),
            (
                &[0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F, 0x061C],
                "bidi isolate/mark",
            ),
            // zero-width and invisible
            (
                &[
                    0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064,
                ],
                "zero width",
            ),
            (&[0xFEFF, 0x180E, 0x00AD, 0x034F], "invisible"),
            (&[0x115F, 0x1160, 0x3164, 0xFFA0], "hangul fillers"),
            (&[0xE0000, 0xE0001, 0xE0041, 0xE007F], "tags"),
            (&[0xFE00, 0xFE0F, 0xE0100, 0xE01EF], "variation selectors"),
            // controls
            (
                &[0x00, 0x07, 0x08, 0x0B, 0x0C, 0x0D, 0x1B, 0x1F, 0x7F],
                "C0 and DEL",
            ),
            (&[0x80, 0x85, 0x9B, 0x9F], "C1"),
            (&[0x2028, 0x2029], "line/paragraph separators"),
            // look-alike spaces
            (
                &[0x00A0, 0x2000, 0x2005, 0x200A, 0x202F, 0x205F, 0x3000],
                "spaces",
            ),
            // the marker's own bracket
            (&[0x27E8], "marker"),
        ];
        for (cps, what) in cases {
            for &cp in *cps {
                let c = char::from_u32(cp).unwrap();
                let text = format!("a{c}b");
                let r = reveal(&text);
                let marker = format!("U+{cp:04X}");
                assert_eq!(
                    r.shown,
                    format!("a\u{27E8}{marker}\u{27E9}b"),
                    "{what}: {marker}"
                );
                assert_eq!(points(&r), [marker.as_str()], "{what}");
                assert_eq!(r.hidden[0].index, 1);
            }
        }
    }

    #[test]
    fn a_carriage_return_cannot_draw_over_the_line() {
        let r = reveal("rm -rf ~/x\recho hello   ");
        assert_eq!(r.shown, "rm -rf ~/x\u{27E8}U+000D\u{27E9}echo hello   ");
        assert!(!r.shown.contains('\r'));
        assert_eq!(r.hidden[0].name.as_deref(), Some("CARRIAGE RETURN"));
    }

    #[test]
    fn line_feeds_are_lines_in_reveal_and_markers_in_reveal_line() {
        let text = "echo a\ntouch X\tdone";
        let r = reveal(text);
        assert_eq!(r.shown, text);
        assert!(r.hidden.is_empty());
        let one = reveal_line(text);
        assert_eq!(one.shown, "echo a\u{27E8}U+000A\u{27E9}touch X\tdone");
        assert!(!one.shown.contains('\n'));
        assert!(one.hidden.is_empty(), "a line feed is not hidden");
    }

    #[test]
    fn a_marker_cannot_be_forged() {
        // A command spelling a marker shows its bracket escaped, so it
        // differs from the real one.
        let fake = reveal("echo \u{27E8}U+2067\u{27E9}");
        let real = reveal("echo \u{2067}");
        assert_ne!(fake.shown, real.shown);
        assert_eq!(fake.shown, "echo \u{27E8}U+27E8\u{27E9}U+2067\u{27E9}");
    }

    #[test]
    fn hidden_chars_serialize_camel_case() {
        let v = serde_json::to_value(&reveal("\u{2067}").hidden[0]).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"codePoint": "U+2067", "name": "RIGHT-TO-LEFT ISOLATE", "index": 0})
        );
    }
}
