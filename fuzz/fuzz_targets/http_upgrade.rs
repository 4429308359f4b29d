//! The WebSocket upgrade request: `handshake::evaluate` on what `httparse`
//! makes of arbitrary bytes, and `handshake::perform` reading the same
//! bytes from an in-memory stream.
//!
//! The pure judgement and the async reader must agree: `perform` answers
//! exactly the status that parsing the first 16 KiB and `evaluate` predict
//! (101 with the right `Sec-WebSocket-Accept` and the bytes after the
//! request handed back, or the rejection's status), or reports the input
//! closed (`Closed`) or stalled (`Timeout`, on a paused clock) when the
//! request is incomplete.

#![no_main]

use ccbridge_server::handshake::{self, HandshakeError, Policy, Verdict, MAX_REQUEST_BYTES};
use ccbridge_server::token::AuthToken;
use libfuzzer_sys::fuzz_target;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// The token the seed corpus carries in `X-Claude-Code-Ide-Authorization`.
const TOKEN: &str = "fuzz0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab";
/// handshake.rs's limit on the number of headers.
const MAX_HEADERS: usize = 64;

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
}

/// What `perform` must do with the input.
#[derive(Debug, PartialEq)]
enum Expected {
    Upgrade {
        key: String,
        head_len: usize,
    },
    Status(u16),
    /// The request is incomplete and fits the limit: wait for more.
    Incomplete,
}

fn expected(data: &[u8], policy: &Policy<'_>) -> Expected {
    let prefix = &data[..data.len().min(MAX_REQUEST_BYTES)];
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(prefix) {
        Ok(httparse::Status::Complete(head_len)) => match handshake::evaluate(&req, policy) {
            Verdict::Accept { key, .. } => Expected::Upgrade { key, head_len },
            Verdict::Reject(r) => Expected::Status(r.status),
        },
        Ok(httparse::Status::Partial) if prefix.len() < MAX_REQUEST_BYTES => Expected::Incomplete,
        Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
            Expected::Status(431)
        }
        Err(_) => Expected::Status(400),
    }
}

/// Runs `perform` with `data` as the client's bytes; the client closes its
/// side after them when `eof`. Returns the outcome and the bytes answered.
fn perform(
    data: &[u8],
    policy: &Policy<'_>,
    eof: bool,
) -> (Result<handshake::Upgraded, HandshakeError>, Vec<u8>) {
    RUNTIME.with(|rt| {
        rt.block_on(async {
            // Room for the input and for any answer (a few hundred bytes): the
            // client reads only after `perform` returns.
            let (mut client, mut server) = tokio::io::duplex(data.len() + 4096);
            client.write_all(data).await.expect("fits the pipe");
            if eof {
                client.shutdown().await.expect("shutdown");
            }
            let outcome = handshake::perform(&mut server, policy, Duration::from_secs(5)).await;
            drop(server);
            let mut answer = Vec::new();
            client.read_to_end(&mut answer).await.expect("read answer");
            (outcome, answer)
        })
    })
}

fn check(data: &[u8], policy: &Policy<'_>, want: &Expected, eof: bool) {
    let (outcome, answer) = perform(data, policy, eof);
    let answer = String::from_utf8(answer).expect("answers are text");
    match (want, outcome) {
        (Expected::Upgrade { key, head_len }, Ok(up)) => {
            assert!(answer.starts_with("HTTP/1.1 101 "), "{answer:?}");
            let accept = format!(
                "Sec-WebSocket-Accept: {}\r\n",
                derive_accept_key(key.as_bytes())
            );
            assert!(answer.contains(&accept), "{answer:?}");
            assert!(answer.ends_with("\r\n\r\n"), "{answer:?}");
            assert!(
                data[*head_len..].starts_with(&up.leftover),
                "the bytes after the request are not handed back as sent"
            );
        }
        (Expected::Status(status), Err(HandshakeError::Rejected(r))) => {
            assert_eq!(*status, r.status);
            assert!(
                answer.starts_with(&format!("HTTP/1.1 {status} ")),
                "{answer:?}"
            );
            assert!(!answer.contains(TOKEN), "the token is echoed");
        }
        (Expected::Incomplete, Err(HandshakeError::Closed)) if eof => {
            assert!(answer.is_empty(), "{answer:?}");
        }
        (Expected::Incomplete, Err(HandshakeError::Timeout)) if !eof => {
            assert!(answer.is_empty(), "{answer:?}");
        }
        (want, outcome) => panic!("expected {want:?}, perform gave {outcome:?} and {answer:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let token = AuthToken::from_value(TOKEN.to_owned());
    let allowed_hosts = vec!["devbox".to_owned(), "host.docker.internal".to_owned()];
    let policy = Policy {
        token: &token,
        allowed_hosts: &allowed_hosts,
    };

    // `evaluate` is pure and total: whatever httparse filled in, also from
    // a partial or failed parse.
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let _ = req.parse(data);
    if let Verdict::Accept { key, protocol } = handshake::evaluate(&req, &policy) {
        assert_eq!(key.len(), 24);
        assert!(matches!(protocol, None | Some("mcp")));
    }

    let want = expected(data, &policy);
    check(data, &policy, &want, true);
    check(data, &policy, &want, false);
});
