//! `apply_diff`'s SEARCH/REPLACE engine (`parse`, then `apply`) on an
//! arbitrary diff over an arbitrary file.
//!
//! Input: the file's text, a NUL byte, the diff (both UTF-8; other inputs
//! are skipped). Beyond "never panics" and ending within the fuzzer's
//! timeout (a block was once compared again at each of its places):
//! every block is either applied or failed, once, in order; with nothing
//! applied the text is unchanged; a block whose replacement equals its
//! search leaves the text as it was; a lone block that applied left its
//! replacement in the text.

#![no_main]

use ccbridge_tools::apply_diff::{apply, parse, MAX_BLOCKS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(cut) = data.iter().position(|&b| b == 0) else {
        return;
    };
    let (Ok(text), Ok(diff)) = (
        std::str::from_utf8(&data[..cut]),
        std::str::from_utf8(&data[cut + 1..]),
    ) else {
        return;
    };
    let Ok(blocks) = parse(diff) else {
        return;
    };
    assert!(!blocks.is_empty() && blocks.len() <= MAX_BLOCKS);
    let numbers: Vec<usize> = blocks.iter().map(|b| b.number).collect();
    assert_eq!(numbers, (1..=blocks.len()).collect::<Vec<_>>());
    let out = apply(text, &blocks);
    let mut seen: Vec<usize> = out
        .applied
        .iter()
        .copied()
        .chain(out.failed.iter().map(|f| f.number))
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, numbers, "each block applied or failed, once");
    assert!(out.applied.windows(2).all(|w| w[0] < w[1]));
    if out.applied.is_empty() {
        assert_eq!(out.text, text, "nothing applied, yet the text changed");
    }
    if blocks.iter().all(|b| b.search == b.replace) {
        assert_eq!(
            out.text, text,
            "replacing lines by themselves changed the text"
        );
    }
    if let ([b], [1]) = (&blocks[..], &out.applied[..]) {
        let replaced = if text.contains("\r\n") {
            b.replace.replace("\r\n", "\n").replace('\n', "\r\n")
        } else {
            b.replace.clone()
        };
        assert!(
            out.text.contains(&replaced),
            "the replacement is not in the text"
        );
    }
});
