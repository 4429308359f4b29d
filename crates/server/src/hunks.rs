//! What a hunk is, decided in one place for every frontend.
//!
//! Per-hunk review (accept some of Claude's changes to a file, reject the
//! others) needs the reviewer's screen and ccbridge to agree on where each
//! change begins and ends: the browser UI draws exactly these hunks and
//! sends back decisions about them, and the final text is built here from
//! those decisions. A hunk is a maximal run of changed lines between
//! unchanged ones, computed with `similar`'s patience line diff (readable
//! anchors: lines that occur once on each side; bounded in time for
//! pathological inputs, where it falls back to coarser hunks). Its
//! histogram diff was used first, and is far slower on the many alike
//! lines of a `replace_all`: 10,000 lines with 2,000 changed alike ran out
//! of the 500 ms budget and came back as ~900 coarse hunks, where patience
//! finds the 2,000 in 8 ms (and a 20,000-line file with 200 hunks in 19 ms,
//! not 140 ms).
//!
//! Lines keep their terminators, so a file's missing final newline, `\r\n`
//! endings and a byte-order mark survive any mix of decisions unchanged.

use serde::{Deserialize, Serialize};
use similar::{Algorithm, DiffOp, TextDiff};
use std::time::Duration;

/// How long one diff may take before `similar` settles for coarser hunks.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// One changed region: lines `old_start..old_start+old_lines` of the
/// original became lines `new_start..new_start+new_lines` of the proposal.
/// Line numbers are 0-based; either side may be empty (a pure insertion or
/// deletion).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
}

/// The lines of `text` with their terminators (the last may have none).
pub fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The line diff of two texts split by [`lines`]. Not `similar`'s own
/// `diff_lines`, which also ends a line at a lone `\r`: its hunks would
/// count lines [`apply`] does not, and decisions would land on other lines.
fn diff<'a>(original: &[&'a str], proposed: &[&'a str]) -> TextDiff<'a, 'a, str> {
    TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .timeout(DIFF_TIMEOUT)
        .diff_slices(original, proposed)
}

/// The changes from `before` to `after` as a unified diff with three lines
/// of context under the two labels, with the same algorithm (and time
/// bound) as the hunks; `None` when the texts are equal. What a model is
/// told of the user's own edits to its proposal.
pub fn unified(before: &str, after: &str, labels: (&str, &str)) -> Option<String> {
    if before == after {
        return None;
    }
    // `similar`'s own line split (a lone `\r` ends a line there): this
    // diff is only read, never applied, and its printer needs that split to
    // say which line lacks its final newline.
    let d = TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before, after);
    let mut out = d.unified_diff();
    Some(out.context_radius(3).header(labels.0, labels.1).to_string())
}

/// The hunks that turn `original` into `proposed`, in order.
pub fn hunks(original: &str, proposed: &str) -> Vec<Hunk> {
    let (old, new) = (lines(original), lines(proposed));
    let d = diff(&old, &new);
    let mut out: Vec<Hunk> = Vec::new();
    for op in d.ops() {
        if let DiffOp::Equal { .. } = op {
            continue;
        }
        let (old, new) = (op.old_range(), op.new_range());
        match out.last_mut() {
            // Adjacent changes (a delete right before an insert) are one hunk.
            Some(h)
                if (h.old_start + h.old_lines) as usize == old.start
                    && (h.new_start + h.new_lines) as usize == new.start =>
            {
                h.old_lines += old.len() as u32;
                h.new_lines += new.len() as u32;
            }
            _ => out.push(Hunk {
                old_start: old.start as u32,
                old_lines: old.len() as u32,
                new_start: new.start as u32,
                new_lines: new.len() as u32,
            }),
        }
    }
    out
}

/// The text made of `original`, with each of `hunks` (as [`hunks`] returns
/// them for `original` and `proposed`) taken from `proposed` when `keep`
/// says so and left as in `original` otherwise. `keep` shorter than
/// `hunks` keeps none of the rest.
pub fn apply(original: &str, proposed: &str, hunks: &[Hunk], keep: &[bool]) -> String {
    let old = lines(original);
    let new = lines(proposed);
    let mut out = String::with_capacity(original.len().max(proposed.len()));
    let mut at = 0usize; // next line of `old` not yet copied
    for (i, h) in hunks.iter().enumerate() {
        let (os, oe) = (h.old_start as usize, (h.old_start + h.old_lines) as usize);
        let (ns, ne) = (h.new_start as usize, (h.new_start + h.new_lines) as usize);
        old.get(at..os)
            .into_iter()
            .flatten()
            .for_each(|l| out.push_str(l));
        let side = if keep.get(i).copied().unwrap_or(false) {
            new.get(ns..ne)
        } else {
            old.get(os..oe)
        };
        side.into_iter().flatten().for_each(|l| out.push_str(l));
        at = oe;
    }
    old.get(at..)
        .into_iter()
        .flatten()
        .for_each(|l| out.push_str(l));
    out
}

/// A stable name for a hunk's content (its old and new lines), so a
/// decision about it survives edits elsewhere in the file. Splits both
/// texts into lines: for every hunk of a text, [`fingerprints`] does that
/// once.
pub fn fingerprint(original: &str, proposed: &str, h: &Hunk) -> u64 {
    fingerprint_in(&lines(original), &lines(proposed), h)
}

/// [`fingerprint`] of each of `hunks`, the texts split once (a 2,000-hunk
/// proposal took ~1 s per decision when each hunk split both texts anew).
pub fn fingerprints(original: &str, proposed: &str, hunks: &[Hunk]) -> Vec<u64> {
    let (old, new) = (lines(original), lines(proposed));
    hunks
        .iter()
        .map(|h| fingerprint_in(&old, &new, h))
        .collect()
}

fn fingerprint_in(old: &[&str], new: &[&str], h: &Hunk) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut s = std::collections::hash_map::DefaultHasher::new();
    let range = |start: u32, n: u32| start as usize..(start + n) as usize;
    old.get(range(h.old_start, h.old_lines)).hash(&mut s);
    0xffu8.hash(&mut s);
    new.get(range(h.new_start, h.new_lines)).hash(&mut s);
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGINAL: &str = "a\nb\nc\nd\ne\nf\ng\nh\ni\n";
    const PROPOSED: &str = "A\nb\nc\nd\nE\nE2\nf\ng\nh\n";

    #[test]
    fn unified_diffs_say_what_changed_under_their_labels() {
        assert_eq!(unified("a\nb\n", "a\nb\n", ("x", "y")), None);
        let d = unified(
            "a\nb\nc\n",
            "a\nB\nc\n",
            ("f.py (proposed)", "f.py (as accepted)"),
        )
        .unwrap();
        assert!(
            d.starts_with("--- f.py (proposed)\n+++ f.py (as accepted)\n"),
            "{d}"
        );
        assert!(d.contains("-b\n+B\n"), "{d}");
    }

    #[test]
    fn hunks_are_runs_of_changed_lines() {
        assert_eq!(
            hunks(ORIGINAL, PROPOSED),
            vec![
                Hunk {
                    old_start: 0,
                    old_lines: 1,
                    new_start: 0,
                    new_lines: 1
                },
                Hunk {
                    old_start: 4,
                    old_lines: 1,
                    new_start: 4,
                    new_lines: 2
                },
                Hunk {
                    old_start: 8,
                    old_lines: 1,
                    new_start: 9,
                    new_lines: 0
                },
            ]
        );
        assert!(hunks(ORIGINAL, ORIGINAL).is_empty());
        assert_eq!(
            hunks("", "x\ny\n"),
            vec![Hunk {
                old_start: 0,
                old_lines: 0,
                new_start: 0,
                new_lines: 2
            }]
        );
    }

    #[test]
    fn apply_takes_exactly_the_kept_hunks() {
        let h = hunks(ORIGINAL, PROPOSED);
        assert_eq!(apply(ORIGINAL, PROPOSED, &h, &[true, true, true]), PROPOSED);
        assert_eq!(apply(ORIGINAL, PROPOSED, &h, &[]), ORIGINAL);
        assert_eq!(
            apply(ORIGINAL, PROPOSED, &h, &[true, false, true]),
            "A\nb\nc\nd\ne\nf\ng\nh\n"
        );
        assert_eq!(
            apply(ORIGINAL, PROPOSED, &h, &[false, true, false]),
            "a\nb\nc\nd\nE\nE2\nf\ng\nh\ni\n"
        );
    }

    #[test]
    fn line_endings_and_a_missing_final_newline_survive() {
        let original = "\u{feff}x\r\ny\r\nz";
        let proposed = "\u{feff}x\r\nY\r\nz";
        let h = hunks(original, proposed);
        assert_eq!(h.len(), 1);
        assert_eq!(apply(original, proposed, &h, &[true]), proposed);
        assert_eq!(apply(original, proposed, &h, &[false]), original);
        let h = hunks("a\nb", "a\nb\n");
        assert_eq!(h.len(), 1, "the final newline is a change of its own line");
        assert_eq!(apply("a\nb", "a\nb\n", &h, &[false]), "a\nb");
    }

    /// `similar` ends a line at a lone `\r` too, `lines` at `\n` only: the
    /// hunks pointed at other lines than `apply` took, so undoing the one
    /// added line of `x\ry\n` left an empty file, and in another file a
    /// kept hunk was lost. A line ends at `\n`, for both.
    #[test]
    fn regression_a_lone_carriage_return_does_not_shift_the_hunks() {
        let (o, p) = ("x\ry\n", "x\ry\nz\n");
        let h = hunks(o, p);
        assert_eq!(
            h,
            vec![Hunk {
                old_start: 1,
                old_lines: 0,
                new_start: 1,
                new_lines: 1
            }]
        );
        assert_eq!(apply(o, p, &h, &[false]), o);
        assert_eq!(apply(o, p, &h, &[true]), p);
        let (o, p) = ("a\rb\nc\nd\ne\n", "a\rb\nC\nd\nE\n");
        let h = hunks(o, p);
        assert_eq!(h.len(), 2, "{h:?}");
        assert_eq!(apply(o, p, &h, &[false, true]), "a\rb\nc\nd\nE\n");
        assert_eq!(apply(o, p, &h, &[true, false]), "a\rb\nC\nd\ne\n");
    }

    #[test]
    fn every_mix_of_decisions_is_consistent() {
        // For each subset of hunks, keeping them and then diffing again
        // gives exactly the kept hunks' new sides.
        let h = hunks(ORIGINAL, PROPOSED);
        for mask in 0..(1u32 << h.len()) {
            let keep: Vec<bool> = (0..h.len()).map(|i| mask & (1 << i) != 0).collect();
            let mixed = apply(ORIGINAL, PROPOSED, &h, &keep);
            let again = hunks(ORIGINAL, &mixed);
            assert_eq!(again.len(), keep.iter().filter(|k| **k).count(), "{keep:?}");
            assert_eq!(
                apply(ORIGINAL, &mixed, &again, &vec![true; again.len()]),
                mixed
            );
        }
    }

    #[test]
    fn fingerprints_follow_content_not_position() {
        let h = hunks(ORIGINAL, PROPOSED);
        let moved = format!("0\n{PROPOSED}");
        let shifted = hunks(&format!("0\n{ORIGINAL}"), &moved);
        assert_eq!(
            fingerprint(ORIGINAL, PROPOSED, &h[1]),
            fingerprint(&format!("0\n{ORIGINAL}"), &moved, &shifted[1])
        );
        assert_ne!(
            fingerprint(ORIGINAL, PROPOSED, &h[0]),
            fingerprint(ORIGINAL, PROPOSED, &h[1])
        );
    }
}
