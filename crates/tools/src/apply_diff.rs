//! `apply_diff`: edits a file with SEARCH/REPLACE blocks.
//!
//! ```text
//! <<<<<<< SEARCH
//! the exact lines to find
//! =======
//! what replaces them
//! >>>>>>> REPLACE
//! ```
//!
//! The rules a model can rely on (and that its error messages explain):
//!
//! - a SEARCH block must match **exactly one** place in the file, whole
//!   lines, whitespace included; no match and several matches are errors
//!   naming the block (its number and its first line);
//! - blocks apply in order, each to the text the previous ones left;
//! - a block that fails does not stop the others: what applied is kept and
//!   the failures are listed (`partial`, `failed_blocks`);
//! - line endings follow the file: LF blocks match a CRLF file, and their
//!   replacements are written with CRLF;
//! - at most [`MAX_BLOCKS`] blocks in one call (each is looked for through
//!   the whole file, in time linear in both).
//!
//! This module computes the new text only; the review and the write are
//! the caller's.

/// Blocks one call may hold: each is looked for through the whole file
/// (up to 16 MiB), so a body of 100,000 tiny blocks would have the file
/// scanned 100,000 times.
pub const MAX_BLOCKS: usize = 1000;

/// One parsed block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// 1-based, in the order given.
    pub number: usize,
    pub search: String,
    pub replace: String,
}

/// The `diff` argument could not be read as blocks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("no SEARCH/REPLACE block found: a block is `<<<<<<< SEARCH`, the lines to find, `=======`, the new lines, `>>>>>>> REPLACE`, each marker on its own line")]
    NoBlocks,
    #[error("block {block}: `{found}` on line {line} where {expected} was expected")]
    Unexpected {
        block: usize,
        line: usize,
        found: String,
        expected: &'static str,
    },
    #[error("block {block} is not finished: `{expected}` is missing")]
    Unfinished {
        block: usize,
        expected: &'static str,
    },
    #[error("block {block}: the SEARCH part is empty; give the lines to replace (to write a whole file, use write_file)")]
    EmptySearch { block: usize },
    #[error("{count} blocks in one call, more than the {MAX_BLOCKS} allowed: split the change into several calls")]
    TooMany { count: usize },
}

/// Why one block did not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    NotFound,
    Ambiguous { matches: usize },
}

/// A block that did not apply, for the result and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedBlock {
    pub number: usize,
    pub failure: Failure,
    /// The block's first SEARCH line, to name it.
    pub first_line: String,
}

impl std::fmt::Display for FailedBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.failure {
            Failure::NotFound => write!(
                f,
                "block {}: search block not found (starting `{}`); copy the lines exactly as they are in the file, whitespace included",
                self.number, self.first_line
            ),
            Failure::Ambiguous { matches } => write!(
                f,
                "block {}: search block is ambiguous ({matches} matches found, starting `{}`); include more surrounding lines so it matches once",
                self.number, self.first_line
            ),
        }
    }
}

/// The blocks applied to a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub text: String,
    /// Numbers of the blocks that applied.
    pub applied: Vec<usize>,
    pub failed: Vec<FailedBlock>,
}

impl Applied {
    /// Some blocks applied and some did not.
    pub fn partial(&self) -> bool {
        !self.applied.is_empty() && !self.failed.is_empty()
    }
}

const SEARCH: &str = "<<<<<<< SEARCH";
const DIVIDER: &str = "=======";
const REPLACE: &str = ">>>>>>> REPLACE";

/// Reads the blocks of `diff`. Text outside blocks (a model's prose, a
/// code fence) is ignored; inside a block the markers must come in order.
pub fn parse(diff: &str) -> Result<Vec<Block>, ParseError> {
    enum At {
        Outside,
        Search(Vec<String>),
        Replace(Vec<String>, Vec<String>),
    }
    let mut blocks = Vec::new();
    let mut at = At::Outside;
    for (i, raw) in diff.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let marker = line.trim_end();
        let number = blocks.len() + 1;
        at = match at {
            At::Outside => {
                if marker == SEARCH {
                    At::Search(Vec::new())
                } else if marker == DIVIDER || marker == REPLACE {
                    return Err(ParseError::Unexpected {
                        block: number,
                        line: i + 1,
                        found: marker.to_owned(),
                        expected: "`<<<<<<< SEARCH`",
                    });
                } else {
                    At::Outside
                }
            }
            At::Search(mut search) => {
                if marker == DIVIDER {
                    At::Replace(search, Vec::new())
                } else if marker == SEARCH || marker == REPLACE {
                    return Err(ParseError::Unexpected {
                        block: number,
                        line: i + 1,
                        found: marker.to_owned(),
                        expected: "`=======`",
                    });
                } else {
                    search.push(line.to_owned());
                    At::Search(search)
                }
            }
            At::Replace(search, mut replace) => {
                if marker == REPLACE {
                    if search.iter().all(|l| l.is_empty()) {
                        return Err(ParseError::EmptySearch { block: number });
                    }
                    blocks.push(Block {
                        number,
                        search: search.join("\n"),
                        replace: replace.join("\n"),
                    });
                    At::Outside
                } else if marker == SEARCH || marker == DIVIDER {
                    return Err(ParseError::Unexpected {
                        block: number,
                        line: i + 1,
                        found: marker.to_owned(),
                        expected: "`>>>>>>> REPLACE`",
                    });
                } else {
                    replace.push(line.to_owned());
                    At::Replace(search, replace)
                }
            }
        };
    }
    match at {
        At::Outside if blocks.is_empty() => Err(ParseError::NoBlocks),
        At::Outside if blocks.len() > MAX_BLOCKS => Err(ParseError::TooMany {
            count: blocks.len(),
        }),
        At::Outside => Ok(blocks),
        At::Search(_) => Err(ParseError::Unfinished {
            block: blocks.len() + 1,
            expected: "`=======`",
        }),
        At::Replace(..) => Err(ParseError::Unfinished {
            block: blocks.len() + 1,
            expected: "`>>>>>>> REPLACE`",
        }),
    }
}

/// Where `needle` stands in `text` as whole lines (at a line start, ending
/// at a line end): the first such place and how many there are,
/// overlapping ones included.
///
/// Knuth–Morris–Pratt, so the time is linear in both: a search block
/// compared again at each of its places (a block of a million `a`s over a
/// file of sixteen million) took hours.
fn places(text: &str, needle: &str) -> (Option<usize>, usize) {
    let (t, n) = (text.as_bytes(), needle.as_bytes());
    let whole_lines = |at: usize| {
        let end = at + n.len();
        (at == 0 || t[at - 1] == b'\n')
            && (end == t.len() || t[end] == b'\n' || t[end..].starts_with(b"\r\n"))
    };
    let mut first = None;
    let mut count = 0;
    let mut found = |at: usize| {
        if whole_lines(at) {
            first.get_or_insert(at);
            count += 1;
        }
    };
    if n.is_empty() {
        // Empty lines (a place after a line break is a character boundary).
        (0..t.len().max(1)).for_each(&mut found);
        return (first, count);
    }
    // For each prefix of the needle, the longest proper prefix that is also
    // its suffix. A byte match of UTF-8 text starts at a character
    // boundary: the needle's first byte is never a continuation byte.
    let mut border = vec![0usize; n.len()];
    let mut k = 0usize;
    for i in 1..n.len() {
        while k > 0 && n[i] != n[k] {
            k = border[k - 1];
        }
        if n[i] == n[k] {
            k += 1;
        }
        border[i] = k;
    }
    let mut k = 0usize;
    for (i, &b) in t.iter().enumerate() {
        while k > 0 && b != n[k] {
            k = border[k - 1];
        }
        if b == n[k] {
            k += 1;
        }
        if k == n.len() {
            found(i + 1 - n.len());
            k = border[k - 1];
        }
    }
    (first, count)
}

/// Applies `blocks` to `text` in order.
pub fn apply(text: &str, blocks: &[Block]) -> Applied {
    let crlf = text.contains("\r\n");
    let mut out = text.to_owned();
    let mut applied = Vec::new();
    let mut failed = Vec::new();
    for b in blocks {
        let (search, replace) = if crlf {
            (
                b.search.replace("\r\n", "\n").replace('\n', "\r\n"),
                b.replace.replace("\r\n", "\n").replace('\n', "\r\n"),
            )
        } else {
            (b.search.clone(), b.replace.clone())
        };
        match places(&out, &search) {
            (Some(at), 1) => {
                out.replace_range(at..at + search.len(), &replace);
                applied.push(b.number);
            }
            (_, n) => failed.push(FailedBlock {
                number: b.number,
                failure: if n == 0 {
                    Failure::NotFound
                } else {
                    Failure::Ambiguous { matches: n }
                },
                first_line: b.search.lines().next().unwrap_or("").trim().to_owned(),
            }),
        }
    }
    Applied {
        text: out,
        applied,
        failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(search: &str, replace: &str) -> String {
        format!("<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n")
    }

    fn run(text: &str, diff: &str) -> Applied {
        apply(text, &parse(diff).unwrap())
    }

    #[test]
    fn one_block_replaces_the_one_place_it_matches() {
        let r = run("a\nb\nc\n", &block("b", "B1\nB2"));
        assert_eq!(r.text, "a\nB1\nB2\nc\n");
        assert_eq!(r.applied, vec![1]);
        assert!(r.failed.is_empty() && !r.partial());
    }

    #[test]
    fn blocks_apply_in_order_each_to_the_previous_result() {
        let diff = format!("{}{}", block("a", "x"), block("x\nb", "y"));
        let r = run("a\nb\n", &diff);
        assert_eq!(r.text, "y\n");
        assert_eq!(r.applied, vec![1, 2]);
    }

    #[test]
    fn no_match_and_several_matches_fail_naming_the_block() {
        let diff = format!(
            "{}{}{}",
            block("nowhere", "x"),
            block("dup", "x"),
            block("keep", "kept")
        );
        let r = run("dup\nkeep\ndup\n", &diff);
        assert_eq!(r.text, "dup\nkept\ndup\n");
        assert!(r.partial());
        assert_eq!(r.applied, vec![3]);
        assert_eq!(r.failed[0].failure, Failure::NotFound);
        assert_eq!(r.failed[1].failure, Failure::Ambiguous { matches: 2 });
        let msg = r.failed[1].to_string();
        assert!(
            msg.contains("block 2") && msg.contains("2 matches") && msg.contains("`dup`"),
            "{msg}"
        );
        assert!(r.failed[0]
            .to_string()
            .contains("block 1: search block not found"));
    }

    #[test]
    fn matches_are_whole_lines_and_whitespace_exact() {
        // "b" inside "ab" is not a match; nor is " b" for "b".
        let r = run("ab\n b\n", &block("b", "x"));
        assert_eq!(r.failed[0].failure, Failure::NotFound);
        let r = run("ab\n b\n", &block(" b", "x"));
        assert_eq!(r.text, "ab\nx\n");
    }

    #[test]
    fn overlapping_places_count_as_several() {
        let r = run("a\na\na\n", &block("a\na", "x"));
        assert_eq!(r.failed[0].failure, Failure::Ambiguous { matches: 2 });
    }

    #[test]
    fn a_crlf_file_is_matched_and_edited_in_crlf() {
        let r = run("one\r\ntwo\r\nthree\r\n", &block("two\nthree", "2\n3"));
        assert_eq!(r.text, "one\r\n2\r\n3\r\n");
    }

    #[test]
    fn the_last_line_without_a_newline_matches() {
        let r = run("a\nlast", &block("last", "end"));
        assert_eq!(r.text, "a\nend");
    }

    #[test]
    fn an_empty_replace_deletes_the_lines() {
        let r = run("a\nb\nc\n", "<<<<<<< SEARCH\nb\n=======\n>>>>>>> REPLACE\n");
        assert_eq!(r.text, "a\n\nc\n");
    }

    #[test]
    fn prose_and_fences_around_blocks_are_ignored() {
        let diff = format!("Here is the change:\n```\n{}```\n", block("b", "c"));
        assert_eq!(parse(&diff).unwrap().len(), 1);
    }

    #[test]
    fn malformed_diffs_say_what_is_wrong_and_where() {
        assert_eq!(parse("just text"), Err(ParseError::NoBlocks));
        assert_eq!(
            parse("<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n"),
            Err(ParseError::Unexpected {
                block: 1,
                line: 3,
                found: ">>>>>>> REPLACE".into(),
                expected: "`=======`"
            })
        );
        assert_eq!(
            parse("<<<<<<< SEARCH\na\n=======\nb\n"),
            Err(ParseError::Unfinished {
                block: 1,
                expected: "`>>>>>>> REPLACE`"
            })
        );
        assert_eq!(
            parse("<<<<<<< SEARCH\n=======\nb\n>>>>>>> REPLACE"),
            Err(ParseError::EmptySearch { block: 1 })
        );
        let e = parse("=======\n").unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn markers_with_crlf_or_trailing_spaces_are_markers() {
        let diff = "<<<<<<< SEARCH  \r\nb\r\n=======\r\nc\r\n>>>>>>> REPLACE\r\n";
        let blocks = parse(diff).unwrap();
        assert_eq!(blocks[0].search, "b");
        assert_eq!(blocks[0].replace, "c");
    }

    /// A search block of a million lines over a file of eight million
    /// (every line the same): compared again at each of its places, it took
    /// hours; found in one pass it takes well under a second. Run on a
    /// thread with a generous bound so the old behaviour fails, not hangs.
    #[test]
    fn regression_a_huge_block_over_a_repetitive_file_is_found_in_one_pass() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let text = "a\n".repeat(8 << 20);
            let search = "a\n".repeat(1 << 20);
            let blocks = [Block {
                number: 1,
                search: search.trim_end().to_owned(),
                replace: "b".to_owned(),
            }];
            let _ = tx.send(apply(&text, &blocks).failed);
        });
        let failed = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the search ended");
        let matches = (8 << 20) - (1 << 20) + 1;
        assert_eq!(failed[0].failure, Failure::Ambiguous { matches });
    }

    #[test]
    fn overlapping_and_line_bound_places_are_counted() {
        assert_eq!(places("x\nx\nx\n", "x\nx"), (Some(0), 2));
        assert_eq!(places("ax\nx\n", "x"), (Some(3), 1));
        assert_eq!(places("x\r\ny", "x"), (Some(0), 1));
        assert_eq!(places("é\né", "é"), (Some(0), 2));
        assert_eq!(places("abc", "abcd"), (None, 0));
        assert_eq!(places("\n\nx", ""), (Some(0), 2));
    }

    #[test]
    fn more_blocks_than_allowed_are_refused_before_any_search() {
        let many = block("a", "b").repeat(MAX_BLOCKS + 1);
        assert_eq!(
            parse(&many),
            Err(ParseError::TooMany {
                count: MAX_BLOCKS + 1
            })
        );
        assert_eq!(
            parse(&block("a", "b").repeat(MAX_BLOCKS)).unwrap().len(),
            MAX_BLOCKS
        );
    }
}
