//! `read_file`: a window of a text file, each line numbered
//! (`  12 | text`), read through the workspace's confined open.
//!
//! The file is streamed with a fixed buffer, never held whole: reading
//! stops at the window's last line, except that a file up to
//! [`COUNT_TO_END_BELOW`] is counted to its end so the answer can say how
//! many lines it has (`total_lines`). A window near the start of a 100 MB
//! file reads a few kilobytes; `bytes_read` says how much was read.
//! A file whose first 8 KiB hold a NUL byte is binary and refused; a line
//! longer than [`MAX_LINE_BYTES`] is cut, saying how much was left out.
//! Of a line only its first bytes are kept, and one that goes on past
//! [`MAX_LINE_SCAN`] without a break (a text header over gigabytes with
//! none) ends the reading there: memory stays at one buffer and the head of
//! a line whatever the file holds.

use ccbridge_workspace::{OpenFile, Workspace, WorkspaceError};
use std::io::{BufRead, BufReader, Read};

/// Lines returned when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 2000;
/// Files up to this size are read to the end to count their lines.
pub const COUNT_TO_END_BELOW: u64 = 16 << 20;
/// Longer lines are cut (minified code would otherwise fill a context).
pub const MAX_LINE_BYTES: usize = 2000;
/// How far one line is read looking for its end; the window stops at a
/// line longer than this.
pub const MAX_LINE_SCAN: usize = 1 << 20;
/// How much of the start decides "binary".
const SNIFF_BYTES: usize = 8192;

/// A window of lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// `N | line` per line, each ending in `\n`.
    pub text: String,
    /// 1-based number of the first line shown (0 when none is).
    pub first_line: usize,
    /// Number of the last line shown (0 when none is).
    pub last_line: usize,
    /// How many lines the file has, when it was counted.
    pub total_lines: Option<usize>,
    /// Lines exist after the window.
    pub more: bool,
    /// The file's size in bytes.
    pub size_bytes: u64,
    /// How much of it was read.
    pub bytes_read: u64,
}

/// Why the window could not be read. Messages name the path as asked.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error("{0} is a binary file (it holds NUL bytes); read_file shows text files only")]
    Binary(String),
    #[error("{path} is not UTF-8 text (line {line} is not valid UTF-8): a binary file or another encoding; read_file shows UTF-8 text only")]
    NotUtf8 { path: String, line: usize },
    #[error("line {line} of {path} goes on past {} MiB without a line break, and read_file reads no further (search_files finds text past it)", MAX_LINE_SCAN >> 20)]
    LineTooLong { path: String, line: usize },
    #[error("offset must be 1 or more (lines are numbered from 1)")]
    BadOffset,
    #[error("limit must be 1 or more")]
    BadLimit,
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let got = self.inner.read(buf)?;
        self.n += got as u64;
        Ok(got)
    }
}

/// Lines `offset..offset + limit` (1-based) of `path`.
pub fn read(
    ws: &Workspace,
    path: &str,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<Window, ReadError> {
    let first = offset.unwrap_or(1);
    if first == 0 {
        return Err(ReadError::BadOffset);
    }
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 {
        return Err(ReadError::BadLimit);
    }
    let last = first.saturating_add(limit - 1);
    let OpenFile { file, size, asked } = ws.open_file(path)?;
    let io = |error| ReadError::Io {
        path: asked.clone(),
        error,
    };
    let mut r = BufReader::with_capacity(64 << 10, Counting { inner: file, n: 0 });
    let head = r.fill_buf().map_err(io)?;
    if head[..head.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(ReadError::Binary(asked));
    }

    let mut lines: Vec<(usize, String)> = Vec::new();
    // The head of each line: what is shown of it, and the bytes of a
    // character cut at MAX_LINE_BYTES.
    let mut head = Vec::with_capacity(MAX_LINE_BYTES + 4);
    let mut number = 0usize;
    let mut stopped = false;
    loop {
        head.clear();
        let line = read_line(&mut r, &mut head, MAX_LINE_BYTES + 4).map_err(io)?;
        if line.len == 0 {
            break;
        }
        number += 1;
        if number < first {
            if !line.ended {
                return Err(ReadError::LineTooLong {
                    path: asked,
                    line: number,
                });
            }
            continue;
        }
        // Shown lossily, a line would lie about the file (and a write of
        // what the model saw would corrupt it). Of a cut line the head is
        // checked, its last character possibly cut short.
        if let Err(e) = std::str::from_utf8(&head) {
            if head.len() == line.len || e.error_len().is_some() {
                return Err(ReadError::NotUtf8 {
                    path: asked,
                    line: number,
                });
            }
        }
        lines.push((number, shown_line(&head, &line)));
        if !line.ended {
            stopped = true;
            break;
        }
        if number == last {
            break;
        }
    }
    let window_ended = number == last;
    let mut more = false;
    let mut total = Some(number);
    if stopped {
        more = true;
        total = None;
    } else if window_ended {
        if size <= COUNT_TO_END_BELOW {
            let after = count_lines(&mut r).map_err(io)?;
            more = after > 0;
            total = Some(number + after);
        } else {
            more = !r.fill_buf().map_err(io)?.is_empty();
            total = if more { None } else { Some(number) };
        }
    }
    let first_line = lines.first().map_or(0, |l| l.0);
    let last_line = lines.last().map_or(0, |l| l.0);
    let width = last_line.to_string().len();
    let text = lines
        .iter()
        .map(|(n, l)| format!("{n:>width$} | {l}\n"))
        .collect();
    Ok(Window {
        text,
        first_line,
        last_line,
        total_lines: total,
        more,
        size_bytes: size,
        bytes_read: r.get_ref().n,
    })
}

/// The lines left in `r` (a last line without a newline counts).
fn count_lines<R: BufRead>(r: &mut R) -> std::io::Result<usize> {
    let mut lines = 0;
    let mut open_line = false;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(lines + usize::from(open_line));
        }
        lines += buf.iter().filter(|&&b| b == b'\n').count();
        open_line = buf.last() != Some(&b'\n');
        let n = buf.len();
        r.consume(n);
    }
}

/// One line as [`read_line`] read it.
struct Line {
    /// Bytes read, its break included.
    len: usize,
    /// Its length without the break (`\n` or `\r\n`).
    content: usize,
    /// It ended (a break or the end of the file) within [`MAX_LINE_SCAN`].
    ended: bool,
}

/// Reads one line from `r`, keeping its first `keep` bytes in `head`
/// (the rest is only counted), and no further than [`MAX_LINE_SCAN`].
fn read_line<R: BufRead>(r: &mut R, head: &mut Vec<u8>, keep: usize) -> std::io::Result<Line> {
    let mut len = 0;
    let mut before_break = None;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(Line {
                len,
                content: len,
                ended: true,
            });
        }
        let found = buf.iter().position(|&b| b == b'\n');
        let n = found.map_or(buf.len(), |i| i + 1);
        let room = keep.saturating_sub(head.len());
        head.extend_from_slice(&buf[..n.min(room)]);
        if let Some(i) = found {
            let cr = if i > 0 {
                buf[i - 1]
            } else {
                before_break.unwrap_or(0)
            } == b'\r';
            r.consume(n);
            len += n;
            return Ok(Line {
                len,
                content: len - 1 - usize::from(cr),
                ended: true,
            });
        }
        before_break = buf.last().copied();
        r.consume(n);
        len += n;
        if len >= MAX_LINE_SCAN {
            return Ok(Line {
                len,
                content: len,
                ended: false,
            });
        }
    }
}

/// A line as shown: without its line break, cut if very long.
fn shown_line(head: &[u8], line: &Line) -> String {
    let (text, _) = crate::shown::line(head, MAX_LINE_BYTES);
    if line.content <= MAX_LINE_BYTES {
        text
    } else if line.ended {
        let cut = line.content - MAX_LINE_BYTES;
        format!("{text} … ({cut} more bytes on this line)")
    } else {
        format!(
            "{text} … (the line goes on past {} MiB; read_file stops here)",
            MAX_LINE_SCAN >> 20
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn ws_with(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in files {
            std::fs::write(dir.path().join(name), body).unwrap();
        }
        let ws = Workspace::open(&[PathBuf::from(dir.path())]).unwrap();
        (dir, ws)
    }

    #[test]
    fn a_window_is_numbered_and_says_what_is_around_it() {
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let (_d, ws) = ws_with(&[("f.txt", body.as_bytes())]);
        let w = read(&ws, "f.txt", Some(9), Some(5)).unwrap();
        assert_eq!(w.text, " 9 | line 9\n10 | line 10\n");
        assert_eq!((w.first_line, w.last_line), (9, 10));
        assert_eq!(w.total_lines, Some(10));
        assert!(!w.more);
        let w = read(&ws, "f.txt", None, Some(2)).unwrap();
        assert_eq!(w.text, "1 | line 1\n2 | line 2\n");
        assert_eq!(w.total_lines, Some(10));
        assert!(w.more);
    }

    #[test]
    fn past_the_end_is_empty_and_says_how_long_the_file_is() {
        let (_d, ws) = ws_with(&[("f.txt", b"a\nb")]);
        let w = read(&ws, "f.txt", Some(5), None).unwrap();
        assert_eq!(w.text, "");
        assert_eq!((w.first_line, w.last_line, w.total_lines), (0, 0, Some(2)));
    }

    #[test]
    fn crlf_and_a_last_line_without_newline() {
        let (_d, ws) = ws_with(&[("f.txt", b"one\r\ntwo")]);
        let w = read(&ws, "f.txt", None, None).unwrap();
        assert_eq!(w.text, "1 | one\n2 | two\n");
        assert_eq!(w.total_lines, Some(2));
    }

    #[test]
    fn binary_files_are_refused_by_name() {
        let (_d, ws) = ws_with(&[("b.bin", b"\x7fELF\x00\x01")]);
        let e = read(&ws, "b.bin", None, None).unwrap_err().to_string();
        assert!(e.contains("b.bin is a binary file"), "{e}");
    }

    #[test]
    fn very_long_lines_are_cut_with_a_count() {
        let long = "é".repeat(MAX_LINE_BYTES); // 2 bytes each
        let (_d, ws) = ws_with(&[("m.js", long.as_bytes())]);
        let w = read(&ws, "m.js", None, None).unwrap();
        assert!(
            w.text.contains(&format!("({} more bytes", MAX_LINE_BYTES)),
            "{}",
            &w.text[w.text.len() - 60..]
        );
        assert!(!w.text.contains('\u{FFFD}'));
    }

    #[test]
    fn a_long_crlf_line_counts_what_is_cut_without_its_break() {
        let body = format!("{}\r\nnext\r\n", "a".repeat(MAX_LINE_BYTES + 7));
        let (_d, ws) = ws_with(&[("w.txt", body.as_bytes())]);
        let w = read(&ws, "w.txt", None, None).unwrap();
        assert!(
            w.text.contains("… (7 more bytes on this line)\n"),
            "{}",
            &w.text[w.text.len() - 60..]
        );
        assert!(w.text.ends_with("2 | next\n"), "{}", w.text);
        assert_eq!(w.total_lines, Some(2));
    }

    /// A text head, then gigabytes with no line break: every byte of the
    /// line was gathered in memory to find its end (a sparse 10 GB file with
    /// a text head would take 10 GB). The head is kept, the rest only counted,
    /// and the reading stops a megabyte into the line.
    #[test]
    fn regression_a_line_with_no_break_for_megabytes_is_not_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.txt");
        std::fs::write(&path, "first\n").unwrap();
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut &f, &b"y".repeat(MAX_LINE_SCAN * 3)).unwrap();
        drop(f);
        let ws = Workspace::open(&[PathBuf::from(dir.path())]).unwrap();
        let w = read(&ws, "huge.txt", None, None).unwrap();
        assert_eq!((w.first_line, w.last_line), (1, 2));
        assert!(
            w.text
                .ends_with("(the line goes on past 1 MiB; read_file stops here)\n"),
            "{}",
            &w.text[w.text.len() - 80..]
        );
        assert!(w.more);
        assert_eq!(w.total_lines, None);
        let read_at_most = (MAX_LINE_SCAN + (128 << 10)) as u64;
        assert!(w.bytes_read <= read_at_most, "read {} bytes", w.bytes_read);
        let e = read(&ws, "huge.txt", Some(3), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2 of huge.txt goes on past 1 MiB"), "{e}");
    }

    #[test]
    fn a_window_at_the_start_of_a_big_file_reads_only_a_little() {
        let dir = tempfile::tempdir().unwrap();
        let line = "x".repeat(99) + "\n";
        let mut f = std::fs::File::create(dir.path().join("big.log")).unwrap();
        for _ in 0..(COUNT_TO_END_BELOW / 100 + 1000) {
            std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
        }
        drop(f);
        let ws = Workspace::open(&[PathBuf::from(dir.path())]).unwrap();
        let w = read(&ws, "big.log", Some(10), Some(10)).unwrap();
        assert_eq!(w.last_line, 19);
        assert!(w.more);
        assert_eq!(w.total_lines, None, "not counted past the window");
        assert!(w.bytes_read <= 128 << 10, "read {} bytes", w.bytes_read);
    }

    #[test]
    fn a_link_out_of_the_workspace_is_refused_without_saying_where_it_leads() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"s3cret\n").unwrap();
        let (d, ws) = ws_with(&[]);
        std::os::unix::fs::symlink(outside.path().join("secret"), d.path().join("link")).unwrap();
        let e = read(&ws, "link", None, None).unwrap_err().to_string();
        assert!(
            !e.contains("s3cret") && !e.contains(&*outside.path().to_string_lossy()),
            "{e}"
        );
    }

    #[test]
    fn paths_outside_and_odd_arguments_are_errors() {
        let (_d, ws) = ws_with(&[("f.txt", b"a\n")]);
        assert!(matches!(
            read(&ws, "../f.txt", None, None),
            Err(ReadError::Workspace(_))
        ));
        assert!(matches!(
            read(&ws, "f.txt", Some(0), None),
            Err(ReadError::BadOffset)
        ));
        assert!(matches!(
            read(&ws, "f.txt", None, Some(0)),
            Err(ReadError::BadLimit)
        ));
    }
}
