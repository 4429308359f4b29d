//! LSP's base protocol: `Content-Length: N\r\n\r\n` and N bytes of JSON.
//!
//! A language server is a program ccbridge did not write, so what it prints
//! is treated as hostile: the decoder is total (any bytes give messages or
//! errors, never a panic), a header section is read up to 8 KiB and a body
//! up to [`MAX_BODY`]; a body over the limit is skipped without being
//! buffered, and a bad header section is dropped so that the next one is
//! read (resynchronising on the blank line that ends a header).
//!
//! It is a push decoder over a byte buffer rather than an `AsyncRead`
//! adapter so that it can be tested with arbitrary chunkings of arbitrary
//! bytes, without I/O.

/// The longest header section read (LSP sends one or two short headers).
pub const MAX_HEADER: usize = 8 * 1024;
/// The largest message body kept; larger ones are skipped.
pub const MAX_BODY: usize = 64 << 20;

/// What was wrong with the bytes where a message should have been. The
/// decoder goes on after each of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a header section longer than {MAX_HEADER} bytes")]
    HeaderTooLong,
    #[error("a header section without a valid Content-Length: {0:?}")]
    BadHeader(String),
    #[error("a message of {0} bytes, over the limit of {MAX_BODY}: skipped")]
    TooLarge(usize),
}

/// Splits a byte stream into message bodies.
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    /// Bytes of an oversized body still to be dropped as they arrive.
    skip: usize,
    max_body: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(MAX_BODY)
    }
}

impl Decoder {
    /// A decoder that keeps bodies of at most `max_body` bytes.
    pub fn new(max_body: usize) -> Decoder {
        Decoder {
            buf: Vec::new(),
            skip: 0,
            max_body,
        }
    }

    /// Adds bytes read from the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.skip > 0 {
            let n = self.skip.min(bytes.len());
            self.skip -= n;
            bytes = &bytes[n..];
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete message body, an error about what stood in its
    /// place, or `None` until more bytes are pushed.
    pub fn next_frame(&mut self) -> Option<Result<Vec<u8>, FrameError>> {
        if self.skip > 0 {
            return None;
        }
        let window = &self.buf[..self.buf.len().min(MAX_HEADER + 4)];
        let Some(end) = find(window, b"\r\n\r\n") else {
            if self.buf.len() > MAX_HEADER {
                // Keep a possible start of the terminator.
                let keep = self.buf.len() - 3;
                self.buf.drain(..keep);
                return Some(Err(FrameError::HeaderTooLong));
            }
            return None;
        };
        let length = match content_length(&self.buf[..end]) {
            Ok(n) => n,
            Err(e) => {
                self.buf.drain(..end + 4);
                return Some(Err(e));
            }
        };
        if length > self.max_body {
            self.buf.drain(..end + 4);
            let n = length.min(self.buf.len());
            self.buf.drain(..n);
            self.skip = length - n;
            return Some(Err(FrameError::TooLarge(length)));
        }
        let total = end.checked_add(4)?.checked_add(length)?;
        if self.buf.len() < total {
            return None;
        }
        let body = self.buf[end + 4..total].to_vec();
        self.buf.drain(..total);
        Some(Ok(body))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The one `Content-Length` of a header section (other headers, such as
/// `Content-Type`, are ignored; two different lengths are an error).
fn content_length(header: &[u8]) -> Result<usize, FrameError> {
    let bad = || {
        FrameError::BadHeader(
            String::from_utf8_lossy(&header[..header.len().min(200)]).into_owned(),
        )
    };
    let text = std::str::from_utf8(header).map_err(|_| bad())?;
    let mut length = None;
    for line in text.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad());
        };
        if !name.trim().eq_ignore_ascii_case("content-length") {
            continue;
        }
        let value = value.trim();
        if value.is_empty() || value.len() > 19 || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let n: usize = value.parse().map_err(|_| bad())?;
        if length.is_some_and(|l| l != n) {
            return Err(bad());
        }
        length = Some(n);
    }
    length.ok_or_else(bad)
}

/// One message framed for the wire.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(d: &mut Decoder) -> Vec<Result<Vec<u8>, FrameError>> {
        std::iter::from_fn(|| d.next_frame()).collect()
    }

    #[test]
    fn messages_come_whole_in_any_chunking() {
        let mut wire = encode(br#"{"a":1}"#);
        wire.extend(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 2\r\n\r\n{}");
        wire.extend(encode("é".as_bytes()));
        for chunk in 1..wire.len() {
            let mut d = Decoder::default();
            let mut got = Vec::new();
            for c in wire.chunks(chunk) {
                d.push(c);
                got.extend(all(&mut d));
            }
            assert_eq!(
                got,
                vec![
                    Ok(br#"{"a":1}"#.to_vec()),
                    Ok(b"{}".to_vec()),
                    Ok("é".as_bytes().to_vec())
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn bad_headers_are_reported_and_the_next_message_still_read() {
        for bad in [
            &b"Content-Length: -1\r\n\r\n"[..],
            b"Content-Length: 99999999999999999999999\r\n\r\n",
            b"Content-Length: 1e3\r\n\r\n",
            b"Content-Length: \r\n\r\n",
            b"garbage\r\n\r\n",
            b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n",
            b"Content-Type: x\r\n\r\n",
            b"\xff\xfe: 2\r\n\r\n",
            b"\r\n\r\n",
        ] {
            let mut d = Decoder::default();
            d.push(bad);
            d.push(&encode(b"{}"));
            let got = all(&mut d);
            assert!(
                matches!(got[0], Err(FrameError::BadHeader(_))),
                "{bad:?}: {got:?}"
            );
            assert_eq!(got[1..], [Ok(b"{}".to_vec())], "{bad:?}");
        }
    }

    #[test]
    fn an_endless_header_is_cut_and_memory_stays_bounded() {
        let mut d = Decoder::default();
        let mut errors = 0;
        for _ in 0..100 {
            d.push(&[b'x'; 4096]);
            errors += all(&mut d).len();
            assert!(d.buf.len() <= MAX_HEADER + 4096);
        }
        assert!(errors > 0);
        d.push(b"\r\n\r\n");
        d.push(&encode(b"[]"));
        let got = all(&mut d);
        assert_eq!(got.last(), Some(&Ok(b"[]".to_vec())), "{got:?}");
    }

    #[test]
    fn an_oversized_body_is_skipped_unbuffered() {
        let mut d = Decoder::new(10);
        d.push(b"Content-Length: 100\r\n\r\n0123");
        assert_eq!(all(&mut d), [Err(FrameError::TooLarge(100))]);
        for _ in 0..24 {
            d.push(b"abcd");
            assert!(all(&mut d).is_empty());
            assert!(d.buf.is_empty());
        }
        d.push(&encode(b"1"));
        assert_eq!(all(&mut d), [Ok(b"1".to_vec())]);
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A small deterministic generator: every byte value, separators
        // and digits in abundance, any chunking.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = b"\r\n:Content-Length 0123456789{}\xff";
        for _ in 0..2000 {
            let mut d = Decoder::new(64);
            let len = (next() % 300) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| match next() % 3 {
                    0 => next() as u8,
                    _ => alphabet[(next() % alphabet.len() as u64) as usize],
                })
                .collect();
            for c in bytes.chunks(1 + (next() % 17) as usize) {
                d.push(c);
                for body in all(&mut d).into_iter().flatten() {
                    assert!(body.len() <= 64);
                }
            }
        }
    }
}
