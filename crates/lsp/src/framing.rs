//! LSP base-protocol framing (`Content-Length: N\r\n\r\n<N bytes>`) over any
//! `AsyncRead` / `AsyncWrite`.
//!
//! ccbridge reads and writes it on two links: with the editor that runs
//! `ccbridge serve --stdio` (every editor ships a client for this framing,
//! which is why the stdio protocol uses it) and with the language servers
//! it starts itself (this crate's client). Neither peer is ccbridge's own
//! code: a plugin bug must not take the sidecar down, and what a language
//! server prints is treated as hostile. So the reader is total:
//!
//! - The header section is bounded ([`MAX_HEADER_BYTES`]); header names are
//!   case-insensitive; `Content-Type` and unknown headers are ignored; lines
//!   may end in `\r\n` or a bare `\n`.
//! - A missing or invalid `Content-Length` is a *recoverable* error: the
//!   caller answers `-32700`, and the next [`FrameReader::read_frame`] first
//!   resynchronises by skipping to the next `Content-Length` header. If the
//!   stream ends while skipping, that is a clean end. A length over
//!   [`MAX_SKIP_BYTES`] is such an invalid header: no editor sends a body
//!   that large, and skipping it would silently swallow all later input.
//! - A body over [`MAX_BODY_BYTES`] is never buffered. It is reported as
//!   [`Frame::TooLarge`] as soon as [`crate::sniff`] has seen enough of it to
//!   say what it is (its top-level `id` and `method`, or `id` and
//!   `result`/`error`, usually in the first few bytes), so the caller can
//!   answer at once with the right id; the rest is discarded in chunks at the
//!   start of the next `read_frame`.
//! - End of input between frames is a clean end (`Ok(None)`); inside a frame
//!   it is [`FramingError::UnexpectedEof`].
//!
//! Writing goes through one task that owns the output ([`spawn_writer`]):
//! frames are queued whole, so they can never interleave and a cancelled
//! caller can never leave half a frame behind. Each frame is written
//! (header, then body, never copied into one buffer) and flushed. Queuing never blocks: the
//! reader must never wait for the editor to read our output, or an editor
//! that writes a large message while we write one would deadlock with us
//! (both pipes full). Instead the queue is bounded in bytes
//! ([`MAX_QUEUED_BYTES`]): an editor that stops reading makes further sends
//! fail at once with [`SendError::Full`] rather than grow ccbridge without
//! bound; a request whose caller gave up is dropped from the queue
//! ([`Cancel`]) instead of reaching the editor late; and closing never
//! waits on a stalled pipe for more than [`CLOSE_LIMIT`].

use crate::sniff::{Sniffed, Sniffer};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// Largest header section accepted, blank lines included.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
/// Largest body accepted; larger ones are skipped and answered with an error.
pub const MAX_BODY_BYTES: u64 = 64 << 20;
/// Largest `Content-Length` ccbridge will skip a body for; a larger one is
/// an invalid header (no editor sends a gigabyte in one message).
pub const MAX_SKIP_BYTES: u64 = 1 << 30;
/// Bytes the writer may hold for the editor beyond the frame being written.
/// A frame that does not fit behind what is queued is refused; a frame
/// alone in the queue is always taken, so one large `showDiff` still goes.
pub const MAX_QUEUED_BYTES: usize = 16 << 20;
/// How long closing the output waits for queued frames to be written.
pub const CLOSE_LIMIT: Duration = Duration::from_millis(500);
/// Read-buffer size; also the chunk size in which oversized bodies are discarded.
const BUFFER_BYTES: usize = 64 * 1024;
const CONTENT_LENGTH: &[u8] = b"content-length";

/// One frame read from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete body (not yet checked to be UTF-8 or JSON).
    Body(Vec<u8>),
    /// A body over the limit, read and thrown away.
    TooLarge { length: u64, sniffed: Sniffed },
}

#[derive(Debug, thiserror::Error)]
pub enum FramingError {
    /// Recoverable: answer `-32700`, then call `read_frame` again.
    #[error("invalid frame header: {0}")]
    InvalidHeader(String),
    /// Recoverable: answer `-32700`, then call `read_frame` again.
    #[error("frame header section is longer than {0} bytes")]
    HeaderTooLong(usize),
    /// Fatal: the input ended inside a header section or a body.
    #[error("the input ended in the middle of a frame")]
    UnexpectedEof,
    /// Fatal.
    #[error("reading the input: {0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for FramingError {
    fn from(e: std::io::Error) -> Self {
        FramingError::Io(e)
    }
}

impl FramingError {
    /// Whether reading can go on after this error.
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self,
            FramingError::InvalidHeader(_) | FramingError::HeaderTooLong(_)
        )
    }
}

/// Reads frames. Not cancel-safe: dropping a `read_frame` future mid-frame
/// loses the stream position, so only do that when giving up on the input.
pub struct FrameReader<R> {
    input: BufReader<R>,
    max_header: usize,
    max_body: u64,
    /// The last header section was unusable; skip to the next one first.
    resync: bool,
    /// Bytes of an oversized body still to be discarded.
    skip: u64,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(input: R) -> Self {
        Self::with_limits(input, MAX_HEADER_BYTES, MAX_BODY_BYTES)
    }

    /// Like [`FrameReader::new`] with other limits (tests).
    pub fn with_limits(input: R, max_header: usize, max_body: u64) -> Self {
        FrameReader {
            input: BufReader::with_capacity(BUFFER_BYTES, input),
            max_header: max_header.max(CONTENT_LENGTH.len() + 4),
            max_body,
            resync: false,
            skip: 0,
        }
    }

    /// The next frame; `Ok(None)` at a clean end of input.
    pub async fn read_frame(&mut self) -> Result<Option<Frame>, FramingError> {
        let skip = std::mem::take(&mut self.skip);
        if skip > 0 {
            self.discard(skip).await?;
        }
        let mut seed = Vec::new();
        if std::mem::take(&mut self.resync) {
            if !self.skip_to_content_length().await? {
                return Ok(None);
            }
            seed.extend_from_slice(b"Content-Length");
        }
        let length = match self.read_header(seed).await {
            Ok(Some(n)) => n,
            Ok(None) => return Ok(None),
            Err(e) => {
                self.resync = e.is_recoverable();
                return Err(e);
            }
        };
        if length > self.max_body {
            return self.oversized(length).await.map(Some);
        }
        // Grow with what arrives instead of trusting the header up front.
        let mut body = Vec::with_capacity(length.min(BUFFER_BYTES as u64) as usize);
        (&mut self.input)
            .take(length)
            .read_to_end(&mut body)
            .await?;
        if (body.len() as u64) < length {
            return Err(FramingError::UnexpectedEof);
        }
        Ok(Some(Frame::Body(body)))
    }

    /// Reads a header section and returns its `Content-Length`, or `None`
    /// at a clean end of input. `seed` is the start of the first line when
    /// resynchronising.
    async fn read_header(&mut self, seed: Vec<u8>) -> Result<Option<u64>, FramingError> {
        let mut used = seed.len();
        let mut line = seed;
        let mut length: Option<u64> = None;
        let mut saw_header = !line.is_empty();
        loop {
            let budget = self.max_header.saturating_sub(used);
            if budget == 0 {
                return Err(FramingError::HeaderTooLong(self.max_header));
            }
            // `take` bounds the line: read_until stops at '\n', at the end of
            // the input, or when the budget is spent.
            let n = (&mut self.input)
                .take(budget as u64)
                .read_until(b'\n', &mut line)
                .await?;
            used += n;
            if line.last() != Some(&b'\n') {
                if n == 0 {
                    return if saw_header || !line.is_empty() {
                        Err(FramingError::UnexpectedEof)
                    } else {
                        Ok(None)
                    };
                }
                // Budget spent (caught above) or end of input (caught next).
                continue;
            }
            let text = trim_line_end(&line);
            if text.is_empty() {
                if !saw_header {
                    // Blank lines between frames are tolerated.
                    line.clear();
                    continue;
                }
                return match length {
                    Some(n) => Ok(Some(n)),
                    None => Err(FramingError::InvalidHeader(
                        "no Content-Length header".into(),
                    )),
                };
            }
            saw_header = true;
            let (name, value) = split_header(text)?;
            if name.eq_ignore_ascii_case(CONTENT_LENGTH) {
                let n = parse_length(value)?;
                if length.is_some_and(|prev| prev != n) {
                    return Err(FramingError::InvalidHeader(
                        "conflicting Content-Length headers".into(),
                    ));
                }
                length = Some(n);
            }
            line.clear();
        }
    }

    /// Skips input up to the next `Content-Length` (any case) and consumes
    /// it. Returns `false` when the input ends first.
    async fn skip_to_content_length(&mut self) -> Result<bool, FramingError> {
        let mut matched = 0usize;
        loop {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                return Ok(false);
            }
            let mut consumed = 0;
            let mut found = false;
            for &b in buf {
                consumed += 1;
                let b = b.to_ascii_lowercase();
                if b == CONTENT_LENGTH[matched] {
                    matched += 1;
                } else {
                    // 'c' occurs only at the start of the pattern.
                    matched = usize::from(b == CONTENT_LENGTH[0]);
                }
                if matched == CONTENT_LENGTH.len() {
                    found = true;
                    break;
                }
            }
            self.input.consume(consumed);
            if found {
                return Ok(true);
            }
        }
    }

    /// Reads an oversized body only until [`Sniffer`] can tell what it is,
    /// and leaves the rest to be discarded by the next `read_frame`.
    async fn oversized(&mut self, length: u64) -> Result<Frame, FramingError> {
        let mut left = length;
        let mut sniffer = Sniffer::new();
        while left > 0 && !sniffer.decided() {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                return Err(FramingError::UnexpectedEof);
            }
            let take = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            sniffer.feed(&buf[..take]);
            self.input.consume(take);
            left -= take as u64;
        }
        self.skip = left;
        Ok(Frame::TooLarge {
            length,
            sniffed: sniffer.finish(),
        })
    }

    /// Reads and drops `length` bytes without buffering them.
    async fn discard(&mut self, length: u64) -> Result<(), FramingError> {
        let mut left = length;
        while left > 0 {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                return Err(FramingError::UnexpectedEof);
            }
            let take = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            self.input.consume(take);
            left -= take as u64;
        }
        Ok(())
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `Name: value`, where the name is an HTTP token.
fn split_header(line: &[u8]) -> Result<(&[u8], &[u8]), FramingError> {
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or_else(|| FramingError::InvalidHeader("a header line has no ':'".into()))?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    let token = |b: &u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b);
    if name.is_empty() || !name.iter().all(token) {
        return Err(FramingError::InvalidHeader(
            "a header name is not a token".into(),
        ));
    }
    Ok((name, value))
}

fn parse_length(value: &[u8]) -> Result<u64, FramingError> {
    let v = value.trim_ascii();
    let bad = || FramingError::InvalidHeader("Content-Length is not a decimal number".into());
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let n = std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(bad)?;
    if n > MAX_SKIP_BYTES {
        return Err(FramingError::InvalidHeader(format!(
            "Content-Length {n} is larger than any message ccbridge accepts or skips ({MAX_SKIP_BYTES} bytes)"
        )));
    }
    Ok(n)
}

/// Builds one frame: header and body in one buffer.
pub fn encode_frame(body: &[u8]) -> Vec<u8> {
    let header = header(body.len());
    let mut out = Vec::with_capacity(header.len() + body.len());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(body);
    out
}

/// Why a frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The writer task is gone (the output failed or was closed).
    #[error("the output is closed")]
    Closed,
    /// The editor is not reading: this many bytes wait to be written.
    #[error("the editor is not reading its input ({queued} bytes are waiting for it)")]
    Full { queued: usize },
}

/// Withdraws a queued frame: once cancelled, the writer drops it instead of
/// writing it (a frame already being written is finished, whole).
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

struct Queued {
    body: Vec<u8>,
    cancel: Option<Cancel>,
}

fn header(body_len: usize) -> String {
    format!("Content-Length: {body_len}\r\n\r\n")
}

enum WriterCmd {
    Frame(Queued),
    Close(oneshot::Sender<()>),
}

/// Sees every body queued for the output (the traffic log).
pub type Tap = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// A cheap, cloneable handle that queues frames for the writer task.
#[derive(Clone)]
pub struct FrameSink {
    tx: mpsc::UnboundedSender<WriterCmd>,
    /// Bytes queued and not yet written (the frame being written included).
    queued: Arc<AtomicUsize>,
    limit: usize,
    tap: Arc<std::sync::OnceLock<Tap>>,
}

impl FrameSink {
    /// Queues one frame with `body`. Never blocks; frames are written in
    /// the order they were queued.
    pub fn send(&self, body: impl Into<Vec<u8>>) -> Result<(), SendError> {
        self.enqueue(body.into(), None)
    }

    /// Like [`FrameSink::send`], for a frame that may be withdrawn while it
    /// waits (a request whose caller may give up).
    pub fn send_cancellable(&self, body: impl Into<Vec<u8>>) -> Result<Cancel, SendError> {
        let cancel = Cancel::default();
        self.enqueue(body.into(), Some(cancel.clone()))?;
        Ok(cancel)
    }

    /// Installs `tap`, which then sees every body queued (once; later calls
    /// are ignored).
    pub fn set_tap(&self, tap: Tap) {
        let _ = self.tap.set(tap);
    }

    fn enqueue(&self, body: Vec<u8>, cancel: Option<Cancel>) -> Result<(), SendError> {
        if let Some(tap) = self.tap.get() {
            tap(&body);
        }
        let len = body.len();
        let mut queued = self.queued.load(Ordering::Acquire);
        loop {
            if queued > 0 && queued.saturating_add(len) > self.limit {
                return Err(SendError::Full { queued });
            }
            match self.queued.compare_exchange_weak(
                queued,
                queued + len,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => queued = now,
            }
        }
        self.tx
            .send(WriterCmd::Frame(Queued { body, cancel }))
            .map_err(|_| {
                self.queued.fetch_sub(len, Ordering::AcqRel);
                SendError::Closed
            })
    }

    /// Bytes waiting to be written.
    pub fn queued_bytes(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// Writes everything queued so far, shuts the output down and stops the
    /// writer; later sends fail. Returns once done (or the writer is gone).
    /// Waits as long as the output takes: see [`close_output`] for the
    /// bounded form.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(WriterCmd::Close(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// Completes when the writer task has stopped (closed, or the output failed).
    pub async fn closed(&self) {
        self.tx.closed().await
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Starts the task that owns `output`. It ends on [`FrameSink::close`],
/// when every sink is dropped, or at the first write error (returned by the
/// join handle).
pub fn spawn_writer<W>(output: W) -> (FrameSink, tokio::task::JoinHandle<std::io::Result<()>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    spawn_writer_with_limit(output, MAX_QUEUED_BYTES)
}

/// [`spawn_writer`] with another queue limit (tests).
pub fn spawn_writer_with_limit<W>(
    output: W,
    limit: usize,
) -> (FrameSink, tokio::task::JoinHandle<std::io::Result<()>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let task = tokio::spawn(write_loop(output, rx, queued.clone()));
    let tap = Arc::default();
    (
        FrameSink {
            tx,
            queued,
            limit,
            tap,
        },
        task,
    )
}

/// Closes the output: flushes what is queued within [`CLOSE_LIMIT`], then
/// stops the writer whatever state the output is in, so that a pipe nobody
/// reads can never keep ccbridge from exiting.
pub async fn close_output(
    sink: &FrameSink,
    mut writer: tokio::task::JoinHandle<std::io::Result<()>>,
) -> std::io::Result<()> {
    let flushed = tokio::time::timeout(CLOSE_LIMIT, async {
        sink.close().await;
        (&mut writer).await
    })
    .await;
    match flushed {
        Ok(Ok(result)) => result,
        Ok(Err(join)) => Err(std::io::Error::other(join.to_string())),
        Err(_) => {
            let left = sink.queued_bytes();
            tracing::warn!(
                queued = left,
                "the editor is not reading its input; {left} bytes were not delivered"
            );
            // An aborted task is dropped at its next await point; the write
            // it was waiting on (possibly on a blocking thread) is abandoned.
            writer.abort();
            let _ = writer.await;
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the editor stopped reading",
            ))
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut output: W,
    mut rx: mpsc::UnboundedReceiver<WriterCmd>,
    queued: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    let mut withdrawn = 0u64;
    while let Some(cmd) = rx.recv().await {
        match cmd {
            WriterCmd::Frame(Queued { body, cancel }) => {
                let len = body.len();
                if cancel.as_ref().is_some_and(Cancel::is_cancelled) {
                    withdrawn += 1;
                    tracing::trace!(withdrawn, "dropped a request its caller gave up on");
                } else if let Err(e) = write_one(&mut output, &body).await {
                    tracing::warn!(error = %e, "writing to the editor failed; output closed");
                    return Err(e);
                }
                queued.fetch_sub(len, Ordering::AcqRel);
            }
            WriterCmd::Close(done) => {
                rx.close();
                let result = output.shutdown().await;
                let _ = done.send(());
                return result;
            }
        }
    }
    output.flush().await
}

async fn write_one<W: AsyncWrite + Unpin>(output: &mut W, body: &[u8]) -> std::io::Result<()> {
    output.write_all(header(body.len()).as_bytes()).await?;
    output.write_all(body).await?;
    output.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbridge_protocol::jsonrpc::RequestId;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::{AsyncWriteExt, ReadBuf};

    /// Hands out at most one byte per read.
    struct ByteAtATime<R>(R);

    impl<R: AsyncRead + Unpin> AsyncRead for ByteAtATime<R> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let mut one = [0u8; 1];
            let mut small = ReadBuf::new(&mut one);
            match Pin::new(&mut self.0).poll_read(cx, &mut small) {
                Poll::Ready(Ok(())) => {
                    buf.put_slice(small.filled());
                    Poll::Ready(Ok(()))
                }
                other => other,
            }
        }
    }

    /// Reads frames until a clean end; recoverable errors are recorded as
    /// `Err(description)` and reading goes on; a fatal error ends the list.
    async fn collect<R: AsyncRead + Unpin>(mut r: FrameReader<R>) -> Vec<Result<Frame, String>> {
        let mut out = Vec::new();
        loop {
            match r.read_frame().await {
                Ok(Some(f)) => out.push(Ok(f)),
                Ok(None) => return out,
                Err(e) if e.is_recoverable() => out.push(Err(e.to_string())),
                Err(e) => {
                    out.push(Err(format!("fatal: {e}")));
                    return out;
                }
            }
        }
    }

    async fn read_all(input: &[u8], max_body: u64) -> Vec<Result<Frame, String>> {
        let whole = collect(FrameReader::with_limits(input, 256, max_body)).await;
        let bytewise = collect(FrameReader::with_limits(ByteAtATime(input), 256, max_body)).await;
        assert_eq!(whole, bytewise, "byte-at-a-time reading disagrees");
        whole
    }

    fn body(s: &str) -> Result<Frame, String> {
        Ok(Frame::Body(s.as_bytes().to_vec()))
    }

    #[tokio::test]
    async fn reads_consecutive_frames_and_ends_cleanly() {
        let mut input = encode_frame(br#"{"a":1}"#);
        input.extend(encode_frame(b""));
        input.extend(encode_frame("{\"é\":\"ü\"}".as_bytes()));
        let frames = read_all(&input, 1024).await;
        assert_eq!(
            frames,
            vec![body(r#"{"a":1}"#), body(""), body("{\"é\":\"ü\"}")]
        );
        assert_eq!(read_all(b"", 1024).await, vec![]);
    }

    #[tokio::test]
    async fn header_names_are_case_insensitive_and_other_headers_ignored() {
        let input = b"content-TYPE: application/vscode-jsonrpc; charset=utf-8\r\n\
CONTENT-LENGTH:   2 \r\nX-Whatever: 1\r\n\r\n{}\
Content-Length: 2\n\n[]\r\n\r\nContent-Length: 1\r\n\r\n7";
        let frames = read_all(input, 1024).await;
        assert_eq!(frames, vec![body("{}"), body("[]"), body("7")]);
    }

    #[tokio::test]
    async fn missing_or_invalid_length_is_recoverable_and_resyncs() {
        let mut input = b"Content-Type: x\r\n\r\n{\"lost\":1}".to_vec();
        input.extend(encode_frame(b"{\"ok\":1}"));
        input.extend(b"Content-Length: -3\r\n\r\n{}");
        input.extend(encode_frame(b"{\"ok\":2}"));
        input.extend(b"Content-Length: 99999999999999999999999\r\n\r\n");
        input.extend(encode_frame(b"{\"ok\":3}"));
        input.extend(b"Content-Length: +4\r\n\r\n{}{}");
        input.extend(encode_frame(b"{\"ok\":4}"));
        input.extend(b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}");
        input.extend(encode_frame(b"{\"ok\":5}"));
        input.extend(b"{\"jsonrpc\":\"2.0\",\"method\":\"unframed\"}\n");
        input.extend(encode_frame(b"{\"ok\":6}"));
        let frames = read_all(&input, 1024).await;
        let oks: Vec<_> = frames.iter().filter(|f| f.is_ok()).cloned().collect();
        let errs = frames.iter().filter(|f| f.is_err()).count();
        assert_eq!(
            oks,
            (1..=6)
                .map(|i| body(&format!("{{\"ok\":{i}}}")))
                .collect::<Vec<_>>()
        );
        assert_eq!(errs, 6, "{frames:?}");
    }

    #[tokio::test]
    async fn garbage_without_a_next_header_ends_cleanly() {
        let frames = read_all(b"hello world\r\n\r\nmore garbage without headers", 1024).await;
        assert_eq!(frames.len(), 1);
        assert!(frames[0].as_ref().is_err_and(|e| !e.starts_with("fatal")));
    }

    #[tokio::test]
    async fn overlong_header_section_is_recoverable() {
        let mut input = format!("X-Junk: {}\r\n", "a".repeat(1000)).into_bytes();
        input.extend(encode_frame(b"{}"));
        let frames = read_all(&input, 1024).await;
        assert!(
            matches!(&frames[0], Err(e) if e.contains("longer than")),
            "{frames:?}"
        );
        assert_eq!(frames[1..], [body("{}")]);
        // A line that never ends is bounded too.
        let endless = vec![b'x'; 10_000];
        let frames = read_all(&endless, 1024).await;
        assert_eq!(frames.len(), 1);
        assert!(frames[0].is_err());
    }

    #[tokio::test]
    async fn eof_inside_a_frame_is_fatal() {
        for input in [
            &b"Content-Length: 10\r\n\r\n{}"[..],
            b"Content-Length: 10\r\n",
            b"Content-Length: 10",
            b"Content-Le",
        ] {
            let frames = read_all(input, 1024).await;
            assert!(
                matches!(frames.last(), Some(Err(e)) if e.starts_with("fatal")),
                "{input:?}: {frames:?}"
            );
        }
    }

    #[tokio::test]
    async fn oversized_bodies_are_skipped_with_their_id() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"status","params":{{"pad":"{}"}},"id":41}}"#,
            "x".repeat(3000)
        );
        let mut input = encode_frame(big.as_bytes());
        input.extend(encode_frame(b"{}"));
        let frames = read_all(&input, 1000).await;
        assert_eq!(
            frames,
            vec![
                Ok(Frame::TooLarge {
                    length: big.len() as u64,
                    sniffed: Sniffed {
                        id: Some(RequestId::Number(41)),
                        has_method: true
                    }
                }),
                body("{}")
            ]
        );
    }

    #[tokio::test]
    async fn the_real_limit_skips_without_buffering() {
        // A 64 MiB + 1 body generated on the fly, followed by a good frame.
        let length = MAX_BODY_BYTES + 1;
        let head = format!("Content-Length: {length}\r\n\r\n{{\"id\":\"big\",\"pad\":\"");
        let pad = length - (head.len() as u64 - head.find('{').unwrap_or(0) as u64) - 2;
        let input = head
            .as_bytes()
            .chain(tokio::io::repeat(b'p').take(pad))
            .chain(&b"\"}"[..])
            .chain(std::io::Cursor::new(encode_frame(b"{}")));
        let mut r = FrameReader::new(input);
        let first = r.read_frame().await.unwrap();
        assert_eq!(
            first,
            Some(Frame::TooLarge {
                length,
                sniffed: Sniffed {
                    id: Some(RequestId::String("big".into())),
                    has_method: false
                }
            })
        );
        assert!(r.input.buffer().len() <= BUFFER_BYTES);
        assert_eq!(
            r.read_frame().await.unwrap(),
            Some(Frame::Body(b"{}".to_vec()))
        );
        assert_eq!(r.read_frame().await.unwrap(), None);
    }

    /// Issue 11, defect 5: a valid but enormous `Content-Length` used to
    /// make the reader wait for that many bytes, silently eating every
    /// later frame. Over `MAX_SKIP_BYTES` it is now a bad header.
    #[tokio::test]
    async fn regression_huge_content_length_is_a_bad_header_not_a_black_hole() {
        for huge in ["1000000000000", "18446744073709551615", "1073741825"] {
            let mut input = format!("Content-Length: {huge}\r\n\r\n").into_bytes();
            input.extend(encode_frame(b"{\"after\":1}"));
            input.extend(encode_frame(b"{\"after\":2}"));
            let frames = read_all(&input, 1024).await;
            assert!(
                matches!(&frames[0], Err(e) if e.contains("larger than any message")),
                "{huge}: {frames:?}"
            );
            assert_eq!(
                frames[1..],
                [body("{\"after\":1}"), body("{\"after\":2}")],
                "{huge}"
            );
        }
    }

    /// Issue 11, defect 5: an oversized request is reported as soon as its
    /// id and method have been read, before the rest of its body arrives.
    #[tokio::test]
    async fn regression_oversized_request_is_reported_before_its_body_arrives() {
        let (mut editor, ours) = tokio::io::duplex(1 << 16);
        let mut reader = FrameReader::with_limits(ours, 256, 1000);
        let length = 5000u64;
        let start = br#"{"jsonrpc":"2.0","id":12,"method":"status","params":{"pad":""#;
        editor
            .write_all(format!("Content-Length: {length}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        editor.write_all(start).await.unwrap();
        let first = tokio::time::timeout(std::time::Duration::from_secs(5), reader.read_frame())
            .await
            .expect("answered before the body is complete")
            .unwrap();
        assert_eq!(
            first,
            Some(Frame::TooLarge {
                length,
                sniffed: Sniffed {
                    id: Some(RequestId::Number(12)),
                    has_method: true
                }
            })
        );
        // The rest of the body, then a normal frame.
        let rest = length as usize - start.len() - 3;
        editor.write_all(&vec![b'x'; rest]).await.unwrap();
        editor.write_all(b"\"}}").await.unwrap();
        editor.write_all(&encode_frame(b"{}")).await.unwrap();
        drop(editor);
        assert_eq!(
            reader.read_frame().await.unwrap(),
            Some(Frame::Body(b"{}".to_vec()))
        );
        assert_eq!(reader.read_frame().await.unwrap(), None);
    }

    /// Issue 11, defect 1: an editor that stops reading can no longer make
    /// the queue grow without bound; what its caller gave up on is never
    /// delivered late; closing does not wait on the stalled pipe.
    #[tokio::test]
    async fn regression_stalled_editor_bounded_queue_and_withdrawn_requests() {
        let (ours, editor) = tokio::io::duplex(1024);
        let (sink, task) = spawn_writer_with_limit(ours, 10_000);
        let body = |i: usize| format!("{{\"n\":{i},\"pad\":\"{}\"}}", "p".repeat(900));
        let mut accepted = Vec::new();
        let mut refused = 0;
        for i in 0..100 {
            match sink.send_cancellable(body(i)) {
                Ok(c) => accepted.push((i, c)),
                Err(SendError::Full { queued }) => {
                    assert!(queued <= 10_000 + 1024, "{queued}");
                    refused += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(refused > 80, "most sends are refused: {refused}");
        assert!(sink.queued_bytes() <= 10_000 + 1024);
        // Every request but the last accepted one is given up on.
        let (keep, _) = *accepted.last().unwrap();
        for (_, c) in &accepted[..accepted.len() - 1] {
            c.cancel();
        }
        sink.send("{\"after\":true}").unwrap_or(());
        let mut reader = FrameReader::new(editor);
        let mut seen = Vec::new();
        loop {
            let f = tokio::time::timeout(std::time::Duration::from_secs(5), reader.read_frame())
                .await
                .expect("frames keep coming")
                .unwrap();
            let Some(Frame::Body(b)) = f else { panic!() };
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            if v.get("after").is_some() {
                break;
            }
            seen.push(v["n"].as_u64().unwrap() as usize);
        }
        // The frame that was being written when the pipe filled may still
        // arrive (it is never cut); nothing else that was withdrawn does.
        assert!(seen.contains(&keep), "{seen:?}");
        assert!(
            seen.len() <= 3,
            "withdrawn requests were delivered: {seen:?}"
        );
        assert_eq!(sink.queued_bytes(), 0);
        drop(task);
    }

    #[tokio::test]
    async fn close_output_gives_up_on_a_pipe_nobody_reads() {
        let (ours, _editor) = tokio::io::duplex(64);
        let (sink, task) = spawn_writer(ours);
        sink.send("x".repeat(10_000)).unwrap();
        let r = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            close_output(&sink, task),
        )
        .await
        .expect("closing returns although nobody reads");
        assert!(r.is_err());
        assert!(matches!(sink.send("{}"), Err(SendError::Closed)));
    }

    #[tokio::test]
    async fn hostile_bytes_never_panic() {
        // Deterministic pseudo-random soup mixed with header fragments.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let pieces: [&[u8]; 8] = [
            b"Content-Length: ",
            b"\r\n",
            b"\n",
            b"\r\n\r\n",
            b"9",
            b"content-length:1\r\n\r\n",
            b":",
            b"\xff\x00",
        ];
        let mut input = Vec::new();
        for _ in 0..4000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let p = pieces[(seed % 8) as usize];
            if seed.is_multiple_of(3) {
                input.push((seed >> 24) as u8);
            } else {
                input.extend_from_slice(p);
            }
        }
        let _ = read_all(&input, 64).await;
    }

    #[tokio::test]
    async fn frames_over_a_duplex_pipe_round_trip() {
        let (a, b) = tokio::io::duplex(64);
        let (sink, task) = spawn_writer(a);
        let bodies: Vec<String> = (0..50).map(|i| format!("{{\"n\":{i}}}")).collect();
        let writer = {
            let sink = sink.clone();
            let bodies = bodies.clone();
            tokio::spawn(async move {
                for b in bodies {
                    sink.send(b).unwrap();
                }
            })
        };
        let mut reader = FrameReader::new(b);
        for want in &bodies {
            let got = reader.read_frame().await.unwrap();
            assert_eq!(got, Some(Frame::Body(want.as_bytes().to_vec())));
        }
        writer.await.unwrap();
        sink.close().await;
        assert_eq!(reader.read_frame().await.unwrap(), None);
        task.await.unwrap().unwrap();
        assert_eq!(sink.send("late"), Err(SendError::Closed));
    }

    #[tokio::test]
    async fn concurrent_senders_never_interleave() {
        let (a, b) = tokio::io::duplex(16);
        let (sink, _task) = spawn_writer(a);
        let mut tasks = Vec::new();
        for t in 0..8 {
            let sink = sink.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..25 {
                    let pad = "z".repeat(100 * t + i);
                    sink.send(format!("{{\"t\":{t},\"i\":{i},\"p\":\"{pad}\"}}"))
                        .unwrap();
                    tokio::task::yield_now().await;
                }
            }));
        }
        let mut reader = FrameReader::new(b);
        let mut next = [0usize; 8];
        for _ in 0..200 {
            let Some(Frame::Body(b)) = reader.read_frame().await.unwrap() else {
                panic!("expected a frame")
            };
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            let t = v["t"].as_u64().unwrap() as usize;
            assert_eq!(
                v["i"].as_u64().unwrap() as usize,
                next[t],
                "per-sender order"
            );
            next[t] += 1;
        }
        for t in tasks {
            t.await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_failed_output_closes_the_sink() {
        let (a, b) = tokio::io::duplex(16);
        drop(b);
        let (sink, task) = spawn_writer(a);
        sink.send("{}").unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(5), sink.closed())
            .await
            .expect("sink reports the closed output");
        assert!(task.await.unwrap().is_err());
        assert!(sink.is_closed());
        assert_eq!(sink.send("{}"), Err(SendError::Closed));
    }

    #[tokio::test]
    async fn writer_flushes_each_frame() {
        // A writer that records flush points: every frame is followed by one.
        #[derive(Default)]
        struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<String>>>);
        impl AsyncWrite for Recorder {
            fn poll_write(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<std::io::Result<usize>> {
                if let Ok(mut log) = self.0.lock() {
                    log.push(format!("write {}", buf.len()));
                }
                Poll::Ready(Ok(buf.len()))
            }
            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
                if let Ok(mut log) = self.0.lock() {
                    log.push("flush".into());
                }
                Poll::Ready(Ok(()))
            }
            fn poll_shutdown(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
            ) -> Poll<std::io::Result<()>> {
                Poll::Ready(Ok(()))
            }
        }
        let rec = Recorder::default();
        let log = rec.0.clone();
        let (sink, task) = spawn_writer(rec);
        sink.send("{}").unwrap();
        sink.send("[1]").unwrap();
        sink.close().await;
        task.await.unwrap().unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(
            log,
            ["write 21", "write 2", "flush", "write 21", "write 3", "flush"]
        );
        let mut w = Vec::new();
        w.write_all(&encode_frame(b"{}")).await.unwrap();
        assert_eq!(w, b"Content-Length: 2\r\n\r\n{}");
    }
}
