//! `execute_command`'s process handling, once the user has allowed the run:
//! the command runs in `sh -c` in its own process group, entered into its
//! working directory through a descriptor opened beneath the workspace
//! (`fchdir`, so a symlink swapped in after the check cannot send it
//! elsewhere), with stdin closed and ccbridge's tokens and ports removed
//! from its environment.
//!
//! Its output (stdout and stderr interleaved, as a terminal shows them) is
//! passed on as it arrives, for the frontend to show live, and kept for the
//! result with bounded memory: the first and the last half of the cap, the
//! middle counted but dropped. On timeout, or when the caller drops the
//! future (the client cancelled the call), the whole process group is
//! killed, not only the shell; and when ccbridge dies, even by `kill -9`,
//! the group's watcher kills it (`command_group`, which also sweeps what an
//! earlier, killed ccbridge left). After the shell exits, output still
//! arriving from background children is read for a short while, then left
//! to them.

use crate::command_group::{self, Watched};
use crate::command_output;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How long a command may run unless the call says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest time limit a call may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// The output kept for the result (head and tail).
pub const DEFAULT_MAX_OUTPUT: usize = 64 << 10;
/// How long output from background children is read after the shell exits.
const DRAIN: Duration = Duration::from_secs(2);

/// A command the user allowed.
pub struct Run {
    pub command: String,
    /// The working directory, opened beneath the workspace.
    pub cwd: OwnedFd,
    pub timeout: Duration,
    /// The output kept for the result, in bytes.
    pub max_output: usize,
    /// Values no environment variable of the child may contain (tokens,
    /// ports), besides the `CCBRIDGE_*` and `CLAUDE_CODE_SSE_PORT` variables,
    /// which are always removed.
    pub secrets: Vec<String>,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// `None` when a signal ended the shell.
    pub exit_code: Option<i32>,
    /// The output with terminal escapes removed, capped.
    pub output: String,
    pub timed_out: bool,
    /// Bytes of output left out of `output`.
    pub left_out: u64,
}

/// The environment of the child: ccbridge's own variables and anything
/// holding one of `secrets` removed.
pub fn scrubbed_env(secrets: &[String]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, v)| {
            let key = k.to_string_lossy();
            if key.starts_with("CCBRIDGE_") || key == "CLAUDE_CODE_SSE_PORT" {
                return false;
            }
            let value = v.to_string_lossy();
            !secrets
                .iter()
                .any(|s| !s.is_empty() && value.contains(s.as_str()))
        })
        .collect()
}

/// The first and last bytes of a stream, with how many were dropped.
struct HeadTail {
    half: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: u64,
}

impl HeadTail {
    fn new(max: usize) -> HeadTail {
        HeadTail {
            half: max / 2,
            head: Vec::new(),
            tail: VecDeque::new(),
            dropped: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        let room = self.half.saturating_sub(self.head.len());
        let (h, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(h);
        bytes = rest;
        self.tail.extend(bytes);
        if self.tail.len() > self.half {
            let over = self.tail.len() - self.half;
            self.tail.drain(..over);
            self.dropped += over as u64;
        }
    }

    /// The kept output as text, escapes removed. Nothing dropped: one text
    /// (a character or a line across the head/tail seam stays whole).
    /// Otherwise head and tail, cut where characters meet, around a note of
    /// how many bytes were left out.
    fn text(self) -> (String, u64) {
        let mut head = self.head;
        let mut tail: Vec<u8> = self.tail.into();
        if self.dropped == 0 {
            head.append(&mut tail);
            return (command_output::clean(&String::from_utf8_lossy(&head)), 0);
        }
        let cut_end = unfinished_end(&head);
        head.truncate(head.len() - cut_end);
        let cut_start = tail
            .iter()
            .take(3)
            .take_while(|b| **b & 0xC0 == 0x80)
            .count();
        tail.drain(..cut_start);
        let left_out = self.dropped + (cut_end + cut_start) as u64;
        let head = command_output::clean(&String::from_utf8_lossy(&head));
        let tail = command_output::clean(&String::from_utf8_lossy(&tail));
        (
            format!("{head}\n… [{left_out} bytes of output left out] …\n{tail}"),
            left_out,
        )
    }
}

/// How many bytes at the end of `b` begin a UTF-8 character they do not
/// finish (0 when `b` ends on a boundary).
fn unfinished_end(b: &[u8]) -> usize {
    for back in 1..=b.len().min(4) {
        let lead = b[b.len() - back];
        if lead & 0xC0 != 0x80 {
            let len = match lead {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => 1,
            };
            return if len > back { back } else { 0 };
        }
    }
    0
}

/// Splits a byte stream into UTF-8 text without cutting a character: the
/// bytes of one cut at a chunk's end wait for the next chunk.
#[derive(Default)]
struct Utf8Chunks {
    carry: Vec<u8>,
}

impl Utf8Chunks {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.carry.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.carry) {
            Ok(_) => self.carry.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.carry.len(),
        };
        let rest = self.carry.split_off(valid);
        let text = String::from_utf8_lossy(&self.carry).into_owned();
        self.carry = rest;
        text
    }

    fn finish(&mut self) -> String {
        String::from_utf8_lossy(&std::mem::take(&mut self.carry)).into_owned()
    }
}

/// Runs the command, passing output to `on_output` as it arrives. Dropping
/// the future kills the process group.
pub async fn run(run: Run, mut on_output: impl FnMut(String)) -> std::io::Result<Finished> {
    // Started first, and dropped last: it kills the group on timeout, on
    // cancellation, and when ccbridge dies.
    let mut group = Watched::start()?;
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&run.command)
        .env_clear()
        .envs(scrubbed_env(&run.secrets))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(group.pgid())
        .kill_on_drop(true);
    if let Some(marker) = group.marker() {
        cmd.env(command_group::MARKER, marker);
    }
    let dir = run.cwd.as_raw_fd();
    // SAFETY: between fork and exec only `fchdir`, which is
    // async-signal-safe, runs; `dir` stays open (owned by `run`) until the
    // child has been spawned.
    unsafe {
        cmd.pre_exec(move || {
            let fd = std::os::fd::BorrowedFd::borrow_raw(dir);
            rustix::process::fchdir(fd).map_err(std::io::Error::from)
        });
    }
    let mut child = cmd.spawn()?;
    drop(run.cwd);
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut kept = HeadTail::new(run.max_output);
    let mut text = Utf8Chunks::default();
    let (mut out_buf, mut err_buf) = (vec![0u8; 16 << 10], vec![0u8; 16 << 10]);
    let deadline = tokio::time::sleep(run.timeout);
    tokio::pin!(deadline);
    let mut status = None;
    let mut timed_out = false;
    let mut drain_until: Option<tokio::time::Instant> = None;
    loop {
        if stdout.is_none() && stderr.is_none() && status.is_some() {
            break;
        }
        let drain = async {
            match drain_until {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            n = read_some(&mut stdout, &mut out_buf) => {
                match n {
                    Some(n) => { kept.push(&out_buf[..n]); on_output(text.push(&out_buf[..n])); }
                    None => stdout = None,
                }
            }
            n = read_some(&mut stderr, &mut err_buf) => {
                match n {
                    Some(n) => { kept.push(&err_buf[..n]); on_output(text.push(&err_buf[..n])); }
                    None => stderr = None,
                }
            }
            s = child.wait(), if status.is_none() => {
                status = Some(s?);
                drain_until = Some(tokio::time::Instant::now() + DRAIN);
            }
            _ = &mut deadline, if status.is_none() => {
                timed_out = true;
                group.kill();
                status = Some(child.wait().await?);
                drain_until = Some(tokio::time::Instant::now() + DRAIN);
            }
            _ = drain => break,
        }
    }
    // The shell has exited: what is left in the group was started in the
    // background on purpose and is left alone.
    group.release();
    let rest = text.finish();
    if !rest.is_empty() {
        on_output(rest);
    }
    let (output, left_out) = kept.text();
    Ok(Finished {
        exit_code: status.and_then(|s| s.code()),
        output,
        timed_out,
        left_out,
    })
}

/// Reads what is there; `None` at the end (or with no pipe at all, which
/// never resolves so `select!` ignores it).
async fn read_some(
    pipe: &mut Option<impl tokio::io::AsyncRead + Unpin>,
    buf: &mut [u8],
) -> Option<usize> {
    match pipe {
        Some(p) => match p.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_are_kept_within_the_cap() {
        let mut h = HeadTail::new(10);
        h.push(b"abc");
        h.push(b"defghijklmnop");
        let (text, dropped) = h.text();
        assert_eq!(dropped, 6);
        assert!(text.starts_with("abcde\n"), "{text}");
        assert!(text.ends_with("\nlmnop"), "{text}");
    }

    #[test]
    fn the_cap_keeps_head_and_tail_and_never_cuts_a_character() {
        let mut h = HeadTail::new(200);
        h.push(format!("{}{}{}", "H".repeat(100), "m".repeat(1000), "T".repeat(100)).as_bytes());
        let (c, dropped) = h.text();
        assert!(
            c.starts_with(&"H".repeat(100)) && c.ends_with(&"T".repeat(100)),
            "{c}"
        );
        assert!(c.contains("[1000 bytes of output left out]"), "{c}");
        assert_eq!(dropped, 1000);
        let mut h = HeadTail::new(200);
        h.push(b"short");
        assert_eq!(h.text(), ("short".to_owned(), 0));
        // Never cuts inside a character, at the cap or at the seam.
        let mut h = HeadTail::new(101);
        h.push("é".repeat(300).as_bytes());
        let (c, _) = h.text();
        assert!(c.contains("bytes of output left out"));
        assert!(!c.contains('\u{FFFD}'), "{c}");
        // 6 bytes, the seam (at 3) inside the `€`.
        let mut h = HeadTail::new(6);
        h.push("a€é".as_bytes());
        assert_eq!(
            h.text(),
            ("a€é".to_owned(), 0),
            "kept whole across the seam"
        );
    }

    #[test]
    fn characters_cut_between_chunks_are_joined() {
        let mut c = Utf8Chunks::default();
        let e = "é".as_bytes();
        assert_eq!(c.push(&[b'a', e[0]]), "a");
        assert_eq!(c.push(&[e[1], b'b']), "éb");
        assert_eq!(c.push(&[0xff]), "\u{fffd}");
        assert_eq!(c.finish(), "");
    }
}
