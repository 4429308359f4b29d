//! `--log-traffic FILE`: every message exchanged with Claude Code and with
//! the editor, one JSON line each.
//!
//! This is what a plugin author needs to answer "Claude doesn't see my
//! selection": the editor's `selectionChanged` going in, and the
//! `selection_changed` (or its absence) going out to Claude, in order, with
//! times. Each line is
//!
//! ```json
//! {"ts":"2026-11-23T06:10:43.875951Z","peer":"claude","conn":3,"dir":"in","msg":{...}}
//! ```
//!
//! `peer` is `claude` (the WebSocket, `conn` its connection id) or `editor`
//! (the stdio protocol, `conn` 0); `dir` is `in` or `out` as seen from
//! ccbridge; `msg` is the message itself, or `raw` (a string) for input that
//! is not JSON. The auth token is replaced by `<redacted>` wherever it
//! appears. The file is created 0600 (messages carry file contents) and
//! appended to.
//!
//! Logging never slows or blocks a connection: lines go through a bounded
//! queue to a writer thread, and when that queue is full (a slow disk) lines
//! are dropped and counted, and the count is written when there is room.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::time::SystemTime;

/// Lines queued for the writer thread before new ones are dropped.
const QUEUE: usize = 4096;

/// Which side of ccbridge a message was exchanged with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    Claude,
    Editor,
}

/// Which way it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    In,
    Out,
}

/// An open traffic log. Cheap to share.
pub struct TrafficLog {
    tx: SyncSender<String>,
    token: String,
    dropped: AtomicU64,
}

impl std::fmt::Debug for TrafficLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrafficLog").finish_non_exhaustive()
    }
}

impl TrafficLog {
    /// Opens (creates, 0600) `path` for appending and starts its writer.
    /// `token` is redacted from every line.
    pub fn open(path: &Path, token: &str) -> std::io::Result<TrafficLog> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        let (tx, rx) = sync_channel::<String>(QUEUE);
        std::thread::Builder::new()
            .name("ccbridge-traffic".into())
            .spawn(move || write_lines(file, rx))?;
        Ok(TrafficLog {
            tx,
            token: token.to_owned(),
            dropped: AtomicU64::new(0),
        })
    }

    /// Records one message.
    pub fn record(&self, peer: Peer, conn: u64, dir: Direction, text: &str) {
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let note = format!(
                r#"{{"ts":"{}","note":"{dropped} messages were not logged (the log could not keep up)"}}"#,
                timestamp(SystemTime::now())
            );
            if self.tx.try_send(note).is_err() {
                self.dropped.fetch_add(dropped, Ordering::Relaxed);
            }
        }
        let line = self.line(peer, conn, dir, text, SystemTime::now());
        match self.tx.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    fn line(&self, peer: Peer, conn: u64, dir: Direction, text: &str, at: SystemTime) -> String {
        let redacted;
        let text = if !self.token.is_empty() && text.contains(&self.token) {
            redacted = text.replace(&self.token, "<redacted>");
            redacted.as_str()
        } else {
            text
        };
        let peer = match peer {
            Peer::Claude => "claude",
            Peer::Editor => "editor",
        };
        let dir = match dir {
            Direction::In => "in",
            Direction::Out => "out",
        };
        let ts = timestamp(at);
        // A JSON message is embedded as it is; anything else as a string.
        let body = if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
            format!(r#""msg":{}"#, text.trim())
        } else {
            format!(
                r#""raw":{}"#,
                serde_json::to_string(text).unwrap_or_default()
            )
        };
        format!(r#"{{"ts":"{ts}","peer":"{peer}","conn":{conn},"dir":"{dir}",{body}}}"#)
    }
}

fn write_lines(file: File, rx: std::sync::mpsc::Receiver<String>) {
    let mut out = BufWriter::new(file);
    while let Ok(line) = rx.recv() {
        let mut ok = writeln!(out, "{line}").is_ok();
        // Write what has queued up, then flush once.
        while let Ok(line) = rx.try_recv() {
            ok &= writeln!(out, "{line}").is_ok();
        }
        if !ok || out.flush().is_err() {
            tracing::warn!("cannot write the traffic log; it stops here");
            return;
        }
    }
}

/// `2026-11-23T06:10:43.875951Z`.
pub fn timestamp(at: SystemTime) -> String {
    let d = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_micros()
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_micros(1_763_878_243_875_951);
        assert_eq!(timestamp(t), "2025-11-23T06:10:43.875951Z");
        assert_eq!(
            timestamp(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00.000000Z"
        );
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(leap), "2000-02-29T00:00:00.000000Z");
    }

    #[test]
    fn lines_embed_json_redact_the_token_and_keep_garbage_as_strings() {
        let dir = tempfile::tempdir().unwrap();
        let log = TrafficLog::open(&dir.path().join("t.jsonl"), "s3cr3t").unwrap();
        let at = SystemTime::UNIX_EPOCH;
        let l = log.line(Peer::Claude, 3, Direction::In, r#"{"a":"s3cr3t"}"#, at);
        assert_eq!(
            l,
            r#"{"ts":"1970-01-01T00:00:00.000000Z","peer":"claude","conn":3,"dir":"in","msg":{"a":"<redacted>"}}"#
        );
        let l = log.line(Peer::Editor, 0, Direction::Out, "not \"json", at);
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["raw"], "not \"json");
        assert_eq!(v["peer"], "editor");
    }
}
