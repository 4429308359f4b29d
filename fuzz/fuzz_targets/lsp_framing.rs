//! LSP framing (`ccbridge_lsp::framing::FrameReader`, which reads the
//! sidecar's editor and ccbridge's language servers) and the oversized-body
//! sniffer (`sniff`) on arbitrary bytes.
//!
//! The input is the editor's whole stdin. It is read three ways: with the
//! production limits, with small limits (so the oversized-body path, its
//! sniffing and its skipping are reached by small inputs), and with the
//! same small limits through a reader that hands out a few bytes at a time.
//! Checked:
//! - reading ends: every frame or error consumes input (recoverable errors
//!   continue, as the sidecar's read loop does);
//! - bodies respect the limit, oversized frames are over it;
//! - the frames and errors do not depend on how the input is chunked;
//! - `sniff` agrees with the incremental `Sniffer` fed byte by byte, and
//!   with `Message::parse` where both have an answer.

#![no_main]

use ccbridge_lsp::framing::{Frame, FrameReader, FramingError};
use ccbridge_lsp::sniff::{sniff, Sniffed, Sniffer};
use ccbridge_protocol::jsonrpc::Message;
use libfuzzer_sys::fuzz_target;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// What one `read_frame` call gave.
#[derive(Debug, PartialEq)]
enum Event {
    Body(Vec<u8>),
    TooLarge(u64, Sniffed),
    Recoverable(String),
    Fatal(String),
    End,
}

/// An in-memory input that hands out at most `chunk` bytes per read.
struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.chunk.min(self.data.len()).min(buf.remaining());
        let (head, rest) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
}

/// Reads frames until the end or a fatal error, as the sidecar does.
fn read_all<R: AsyncRead + Unpin>(
    mut reader: FrameReader<R>,
    len: usize,
    max_body: u64,
) -> Vec<Event> {
    RUNTIME.with(|rt| {
        rt.block_on(async {
            let mut events = Vec::new();
            loop {
                // Each frame or error consumes at least one byte.
                assert!(events.len() <= len + 2, "the reader makes no progress");
                match reader.read_frame().await {
                    Ok(None) => {
                        events.push(Event::End);
                        break;
                    }
                    Ok(Some(Frame::Body(b))) => {
                        assert!(b.len() as u64 <= max_body, "a body over the limit was kept");
                        check_body(&b);
                        events.push(Event::Body(b));
                    }
                    Ok(Some(Frame::TooLarge { length, sniffed })) => {
                        assert!(length > max_body, "a body within the limit was skipped");
                        events.push(Event::TooLarge(length, sniffed));
                    }
                    Err(e @ (FramingError::InvalidHeader(_) | FramingError::HeaderTooLong(_))) => {
                        assert!(e.is_recoverable());
                        events.push(Event::Recoverable(e.to_string()));
                    }
                    Err(e) => {
                        assert!(!e.is_recoverable());
                        events.push(Event::Fatal(e.to_string()));
                        break;
                    }
                }
            }
            events
        })
    })
}

/// `sniff` agrees with itself fed byte by byte, and with the classifier.
fn check_sniff(bytes: &[u8]) -> Sniffed {
    let whole = sniff(bytes);
    let mut s = Sniffer::new();
    for b in bytes {
        s.feed(std::slice::from_ref(b));
    }
    assert_eq!(s.finish(), whole, "sniffing depends on chunking");
    whole
}

fn check_body(body: &[u8]) {
    let sniffed = check_sniff(body);
    let Ok(text) = std::str::from_utf8(body) else {
        return;
    };
    match Message::parse(text) {
        Ok(Message::Request(r)) => {
            if let Some(id) = &sniffed.id {
                assert_eq!(id, &r.id, "sniffed another id than the request's");
            }
        }
        Ok(Message::Notification(_)) => {
            assert!(sniffed.id.is_none(), "sniffed an id in a notification");
        }
        Ok(Message::Response(resp)) => {
            assert!(!sniffed.has_method, "sniffed a method in a response");
            if let Some(id) = &sniffed.id {
                assert_eq!(
                    Some(id),
                    resp.id.as_ref(),
                    "sniffed another id than the response's"
                );
            }
        }
        Err(_) => {}
    }
}

fuzz_target!(|data: &[u8]| {
    check_sniff(data);

    read_all(
        FrameReader::new(data),
        data.len(),
        ccbridge_lsp::framing::MAX_BODY_BYTES,
    );

    // Small limits taken from the input's first bytes, so the fuzzer finds
    // its way to the edges.
    let max_header = 16 + usize::from(data.first().copied().unwrap_or(0));
    let max_body = u64::from(data.get(1).copied().unwrap_or(0) % 64);
    let chunk = 1 + usize::from(data.get(2).copied().unwrap_or(0) % 8);
    let small = read_all(
        FrameReader::with_limits(data, max_header, max_body),
        data.len(),
        max_body,
    );
    let chunked = read_all(
        FrameReader::with_limits(Chunked { data, chunk }, max_header, max_body),
        data.len(),
        max_body,
    );
    assert_eq!(small, chunked, "frames depend on how the input arrives");
});
