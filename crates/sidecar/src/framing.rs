//! LSP base-protocol framing (`Content-Length: N\r\n\r\n<N bytes>`) over any
//! `AsyncRead` / `AsyncWrite`.
//!
//! Every editor ships a client for this framing, which is why the stdio
//! protocol uses it. The editor is trusted more than the network, but a
//! plugin bug must not take the sidecar down, so the reader is total:
//!
//! - The header section is bounded ([`MAX_HEADER_BYTES`]); header names are
//!   case-insensitive; `Content-Type` and unknown headers are ignored; lines
//!   may end in `\r\n` or a bare `\n`.
//! - A missing or invalid `Content-Length` is a *recoverable* error: the
//!   caller answers `-32700`, and the next [`FrameReader::read_frame`] first
//!   resynchronises by skipping to the next `Content-Length` header. If the
//!   stream ends while skipping, that is a clean end.
//! - A body over [`MAX_BODY_BYTES`] is read and discarded in chunks, never
//!   buffered, and reported as [`Frame::TooLarge`] with whatever
//!   [`crate::sniff`] learned about it, so the caller can answer with an id.
//! - End of input between frames is a clean end (`Ok(None)`); inside a frame
//!   it is [`FramingError::UnexpectedEof`].
//!
//! Writing goes through one task that owns the output ([`spawn_writer`]):
//! frames are queued whole, so they can never interleave and a cancelled
//! caller can never leave half a frame behind. Each frame is written as one
//! buffer (header and body together) and flushed. The queue is unbounded on
//! purpose: the reader must never block on the editor reading our output,
//! or an editor that writes a large message while we write one would
//! deadlock with us (both pipes full). What we queue is bounded in practice
//! by what the editor and the engine ask for.

use crate::sniff::{Sniffed, Sniffer};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// Largest header section accepted, blank lines included.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
/// Largest body accepted; larger ones are skipped and answered with an error.
pub const MAX_BODY_BYTES: u64 = 64 << 20;
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
    Io(#[from] std::io::Error),
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
        }
    }

    /// The next frame; `Ok(None)` at a clean end of input.
    pub async fn read_frame(&mut self) -> Result<Option<Frame>, FramingError> {
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
            return self.discard(length).await.map(Some);
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

    /// Reads and drops `length` bytes, watching them with a [`Sniffer`].
    async fn discard(&mut self, length: u64) -> Result<Frame, FramingError> {
        let mut left = length;
        let mut sniffer = Sniffer::new();
        while left > 0 {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                return Err(FramingError::UnexpectedEof);
            }
            let take = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            sniffer.feed(&buf[..take]);
            self.input.consume(take);
            left -= take as u64;
        }
        Ok(Frame::TooLarge {
            length,
            sniffed: sniffer.finish(),
        })
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
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(bad)
}

/// Builds one frame: header and body in one buffer.
pub fn encode_frame(body: &[u8]) -> Vec<u8> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    let mut out = Vec::with_capacity(header.len() + body.len());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(body);
    out
}

/// The writer task is gone (the output failed or was closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the output is closed")]
pub struct OutputClosed;

enum WriterCmd {
    Frame(Vec<u8>),
    Close(oneshot::Sender<()>),
}

/// A cheap, cloneable handle that queues frames for the writer task.
#[derive(Clone)]
pub struct FrameSink {
    tx: mpsc::UnboundedSender<WriterCmd>,
}

impl FrameSink {
    /// Queues one frame with `body`. Never blocks; frames are written in
    /// the order they were queued.
    pub fn send(&self, body: impl Into<Vec<u8>>) -> Result<(), OutputClosed> {
        self.tx
            .send(WriterCmd::Frame(encode_frame(&body.into())))
            .map_err(|_| OutputClosed)
    }

    /// Writes everything queued so far, shuts the output down and stops the
    /// writer; later sends fail. Returns once done (or the writer is gone).
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
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(write_loop(output, rx));
    (FrameSink { tx }, task)
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut output: W,
    mut rx: mpsc::UnboundedReceiver<WriterCmd>,
) -> std::io::Result<()> {
    while let Some(cmd) = rx.recv().await {
        match cmd {
            WriterCmd::Frame(frame) => {
                if let Err(e) = write_one(&mut output, &frame).await {
                    tracing::warn!(error = %e, "writing to the editor failed; output closed");
                    return Err(e);
                }
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

async fn write_one<W: AsyncWrite + Unpin>(output: &mut W, frame: &[u8]) -> std::io::Result<()> {
    output.write_all(frame).await?;
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
            if seed % 3 == 0 {
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
        assert_eq!(sink.send("late"), Err(OutputClosed));
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
        assert_eq!(sink.send("{}"), Err(OutputClosed));
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
        assert_eq!(log, ["write 23", "flush", "write 24", "flush"]);
        let mut w = Vec::new();
        w.write_all(&encode_frame(b"{}")).await.unwrap();
        assert_eq!(w, b"Content-Length: 2\r\n\r\n{}");
    }
}
