//! The IPC wire format: a 4-byte little-endian length, then that many bytes
//! of one JSON object.
//!
//! Why capped: the socket is shared by every provider and client of the
//! user, and a length prefix is an allocation request. Codex CLI accepts
//! frames up to 256 MiB; ccbridge's answers are small, and what it reads is
//! capped by the caller ([`read_frame`]'s `max`): a router ccbridge hosts
//! closes a peer that announces more, while a provider that joined another
//! router skips such a frame unread (that router may broadcast large state
//! to every client) as long as it stays under the CLI's own limit.
//!
//! A frame's body must arrive within [`BODY_TIMEOUT`] of its header, so a
//! peer that sends a header and stalls holds nothing but its own task.

use serde_json::Value;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest frame Codex CLI itself accepts; beyond it nothing is skipped.
pub const CLIENT_MAX_FRAME: usize = 256 * 1024 * 1024;

/// What a router ccbridge hosts reads of one frame, at most: requests,
/// answers and discovery frames are a few KiB; an IDE context answer is
/// bounded by [`crate::context::MAX_SELECTION_CHARS`].
pub const MAX_FRAME: usize = 4 * 1024 * 1024;

/// How long a frame's body may take once its length has arrived.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long writing one frame may take before the peer counts as stuck.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why no frame was read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection between frames.
    #[error("the peer closed the connection")]
    Closed,
    /// The announced length is over the cap; the body is still unread.
    #[error("a frame of {len} bytes (more than the {max} allowed)")]
    TooLarge { len: usize, max: usize },
    /// The body did not arrive in time, or the connection ended inside it.
    #[error("an incomplete frame: {0}")]
    Truncated(String),
    /// The body is not one JSON object.
    #[error("a frame that is not a JSON object: {0}")]
    NotJson(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Reads one frame of at most `max` bytes. Waits for the length as long as
/// the caller lets it (wrap it in a timeout for an idle limit); the body
/// must follow within [`BODY_TIMEOUT`].
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R, max: usize) -> Result<Value, FrameError> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut len[got..]).await? {
            0 if got == 0 => return Err(FrameError::Closed),
            0 => {
                return Err(FrameError::Truncated(
                    "the connection ended in a length".into(),
                ))
            }
            n => got += n,
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    let mut body = vec![0u8; len];
    match tokio::time::timeout(BODY_TIMEOUT, r.read_exact(&mut body)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(FrameError::Truncated(e.to_string())),
        Err(_) => {
            return Err(FrameError::Truncated(format!(
                "the body of {len} bytes did not arrive within {BODY_TIMEOUT:?}"
            )))
        }
    }
    match serde_json::from_slice::<Value>(&body) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(FrameError::NotJson("not an object".into())),
        Err(e) => Err(FrameError::NotJson(e.to_string())),
    }
}

/// Reads and drops `len` bytes (a frame [`read_frame`] refused as too
/// large), within [`BODY_TIMEOUT`], without holding them.
pub async fn skip<R: AsyncRead + Unpin>(r: &mut R, len: usize) -> Result<(), FrameError> {
    let mut left = len as u64;
    let drain = async {
        let mut sink = tokio::io::sink();
        let copied = tokio::io::copy(&mut (&mut *r).take(left), &mut sink).await?;
        left -= copied;
        Ok::<_, std::io::Error>(left)
    };
    match tokio::time::timeout(BODY_TIMEOUT, drain).await {
        Ok(Ok(0)) => Ok(()),
        Ok(Ok(_)) => Err(FrameError::Truncated(
            "the connection ended in a skipped frame".into(),
        )),
        Ok(Err(e)) => Err(FrameError::Truncated(e.to_string())),
        Err(_) => Err(FrameError::Truncated(
            "a skipped frame did not arrive in time".into(),
        )),
    }
}

/// The bytes of `v` as one frame.
pub fn encode(v: &Value) -> Vec<u8> {
    let body = v.to_string();
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(body.as_bytes());
    out
}

/// Writes `v` as one frame within [`WRITE_TIMEOUT`].
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, v: &Value) -> std::io::Result<()> {
    let bytes = encode(v);
    match tokio::time::timeout(WRITE_TIMEOUT, async {
        w.write_all(&bytes).await?;
        w.flush().await
    })
    .await
    {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the peer did not read a frame in time",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_frame_goes_through_and_garbage_is_an_error_not_a_panic() {
        let (mut a, mut b) = tokio::io::duplex(1024);
        write_frame(&mut a, &json!({"type": "request", "x": "é"}))
            .await
            .unwrap();
        let v = read_frame(&mut b, MAX_FRAME).await.unwrap();
        assert_eq!(v["x"], "é");

        a.write_all(&3u32.to_le_bytes()).await.unwrap();
        a.write_all(b"[1]").await.unwrap();
        assert!(matches!(
            read_frame(&mut b, MAX_FRAME).await,
            Err(FrameError::NotJson(_))
        ));
        a.write_all(&2u32.to_le_bytes()).await.unwrap();
        a.write_all(b"\xff\xfe").await.unwrap();
        assert!(matches!(
            read_frame(&mut b, MAX_FRAME).await,
            Err(FrameError::NotJson(_))
        ));
        drop(a);
        assert!(matches!(
            read_frame(&mut b, MAX_FRAME).await,
            Err(FrameError::Closed)
        ));
    }

    #[tokio::test]
    async fn an_oversize_length_is_refused_before_anything_is_allocated_and_can_be_skipped() {
        let (mut a, mut b) = tokio::io::duplex(64 * 1024);
        let big = json!({"type": "broadcast", "pad": "x".repeat(1000)});
        write_frame(&mut a, &big).await.unwrap();
        write_frame(&mut a, &json!({"type": "request"}))
            .await
            .unwrap();
        let len = match read_frame(&mut b, 100).await {
            Err(FrameError::TooLarge { len, max: 100 }) => len,
            other => panic!("{other:?}"),
        };
        skip(&mut b, len).await.unwrap();
        assert_eq!(read_frame(&mut b, 100).await.unwrap()["type"], "request");

        a.write_all(&u32::MAX.to_le_bytes()).await.unwrap();
        assert!(matches!(
            read_frame(&mut b, MAX_FRAME).await,
            Err(FrameError::TooLarge { .. })
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_never_comes_times_out() {
        let (mut a, mut b) = tokio::io::duplex(1024);
        a.write_all(&10u32.to_le_bytes()).await.unwrap();
        a.write_all(b"{\"a\"").await.unwrap();
        assert!(matches!(
            read_frame(&mut b, MAX_FRAME).await,
            Err(FrameError::Truncated(_))
        ));
    }
}
