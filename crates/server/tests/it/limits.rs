//! Hostile input and resource exhaustion: security checklist items 17 and
//! 19–24. Every case is answered (or closed) quickly and cleanly, and the
//! server keeps serving a good client afterwards.

use crate::support::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn json_rpc_shape_errors_are_32600_and_the_connection_stays_up() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let cases: [(&str, serde_json::Value); 12] = [
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            json!(null),
        ),
        (r#"{"id":1,"method":"ping"}"#, json!(1)),
        (r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#, json!(2)),
        (r#"{"jsonrpc":2.0,"id":3,"method":"ping"}"#, json!(3)),
        (r#"{"jsonrpc":"2.0","id":4,"method":7}"#, json!(4)),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":5}"#,
            json!(5),
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"ping","params":"x"}"#,
            json!(6),
        ),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, json!(null)),
        ("[]", json!(null)),
        (r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#, json!(null)),
        ("42", json!(null)),
        ("null", json!(null)),
    ];
    for (text, id) in cases {
        c.send_raw(text).await;
        let r = c.expect("an error", |m| m.get("error").is_some()).await;
        assert!(r.is_object(), "a batch must not get a batch answer: {r}");
        assert_eq!(error_code(&r), -32600, "{text}: {r}");
        assert_eq!(r["id"], id, "{text}: {r}");
        let p = c.request("ping", json!({})).await;
        assert_eq!(p["result"], json!({}), "after {text}");
    }
    // The batch's inner request was never run.
    assert!(c.collect(|m| m["id"] == 7, Duration::ZERO).await.is_empty());
}

/// Writes `bytes` under the WebSocket connection of `c` and returns how the
/// server closed it.
async fn raw_then_closed(c: &mut WsClient, bytes: &[u8]) -> Closed {
    c.tcp().write_all(bytes).await.expect("write");
    c.wait_closed(WAIT).await
}

#[tokio::test]
async fn a_frame_over_16_mib_is_closed_with_1009() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    // A 17 MiB text frame: refused on its header, before the payload.
    let mut bytes = frame_header(0x1, true, 17 << 20);
    bytes.extend(vec![b'a'; 1024]);
    let t0 = Instant::now();
    let closed = raw_then_closed(&mut c, &bytes).await;
    assert_eq!(closed, Closed::Frame(1009, "message too big".into()));
    assert!(t0.elapsed() < Duration::from_secs(2));
    s.assert_serving().await;
}

#[tokio::test]
async fn a_17_mib_message_in_fragments_is_closed_with_1009() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let chunk = vec![b'a'; 1 << 20];
    let mut sent = 0;
    for i in 0..17 {
        let opcode = if i == 0 { 0x1 } else { 0x0 };
        let frame = client_frame(opcode, i == 16, &chunk);
        if c.tcp().write_all(&frame).await.is_err() {
            break; // closed before the last fragment: also fine
        }
        sent += 1;
    }
    assert!(
        sent >= 16,
        "the server refused before the message was too big"
    );
    let closed = c.wait_closed(WAIT).await;
    assert_eq!(closed.code(), Some(1009), "{closed:?}");
    s.assert_serving().await;
}

#[tokio::test]
async fn a_frame_header_claiming_2_pow_63_bytes_is_closed_without_allocating() {
    let s = TestServer::start().await;
    // Both the largest legal length and one with the reserved top bit set.
    for len in [(1u64 << 63) - 1, 1u64 << 63, u64::MAX] {
        let mut c = s.client().await;
        let t0 = Instant::now();
        let closed = raw_then_closed(&mut c, &frame_header(0x2, true, len)).await;
        // Allocating that much would have aborted this very process.
        assert!(
            matches!(closed.code(), Some(1009 | 1002)),
            "length {len}: {closed:?}"
        );
        assert!(t0.elapsed() < Duration::from_secs(2), "length {len}");
    }
    s.assert_serving().await;
}

#[tokio::test]
async fn nesting_bombs_are_parse_errors_and_fast() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    for bomb in [
        "[".repeat(100_000),
        "{\"a\":".repeat(10_000),
        format!("{}1{}", "[".repeat(5000), "]".repeat(5000)),
    ] {
        let t0 = Instant::now();
        c.send_raw(&bomb).await;
        let r = c
            .expect("the parse error", |m| m.get("error").is_some())
            .await;
        assert_eq!(error_code(&r), -32700, "{r}");
        assert!(r["id"].is_null());
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }
    let p = c.request("ping", json!({})).await;
    assert_eq!(p["result"], json!({}));
}

#[tokio::test]
async fn huge_strings_numbers_and_key_counts_inside_the_limit_are_handled() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    // A 10 MB string.
    let t0 = Instant::now();
    let r = c
        .request("ping", json!({"pad": "x".repeat(10_000_000)}))
        .await;
    assert_eq!(
        r["result"],
        json!({}),
        "{}",
        &r.to_string()[..200.min(r.to_string().len())]
    );
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // A 1 MB uri is echoed back as an unknown file.
    let uri = format!("file:///w/{}", "d".repeat(1_000_000));
    let r = c.call_tool("getDiagnostics", json!({"uri": uri})).await;
    assert_eq!(first_json(&r)[0]["uri"], uri.as_str());

    // A number out of range: a clean error or answer, never a hang.
    c.send_raw(r#"{"jsonrpc":"2.0","id":"n","method":"ping","params":{"n":1e400}}"#)
        .await;
    let r = c
        .expect("an answer", |m| m["id"] == "n" || m.get("error").is_some())
        .await;
    assert!(r.get("result").is_some() || r.get("error").is_some(), "{r}");
    // Many keys.
    let mut obj = serde_json::Map::new();
    for i in 0..50_000 {
        obj.insert(format!("k{i}"), json!(i));
    }
    let t0 = Instant::now();
    let r = c.request("ping", serde_json::Value::Object(obj)).await;
    assert_eq!(r["result"], json!({}));
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}

#[tokio::test]
async fn a_slowloris_request_is_cut_off_by_the_handshake_timeout() {
    let timeout = Duration::from_secs(1);
    let s = TestServer::start_with(FakeFrontend::new(), |c| c.handshake_timeout = timeout).await;
    let req = upgrade_request(
        "/",
        Some(&format!("127.0.0.1:{}", s.port)),
        &[(AUTH_HEADER, &s.token)],
    );
    let sock = TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
    let (mut rd, mut wr) = sock.into_split();
    let t0 = Instant::now();
    let writer = tokio::spawn(async move {
        for b in req {
            if wr.write_all(&[b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let mut buf = [0u8; 1024];
    let n = bounded(
        "the server to hang up",
        Duration::from_secs(4),
        rd.read(&mut buf),
    )
    .await
    .unwrap_or(0);
    let after = t0.elapsed();
    assert_eq!(n, 0, "{:?}", String::from_utf8_lossy(&buf[..n]));
    assert!(
        after >= timeout - Duration::from_millis(50),
        "cut off too early: {after:?}"
    );
    assert!(after < timeout * 3, "cut off late: {after:?}");
    writer.abort();
    s.assert_serving().await;
}

#[tokio::test]
async fn two_hundred_half_open_connections_do_not_lock_out_a_good_client() {
    let s = TestServer::start().await; // handshake timeout: 5 s
    let host = format!("127.0.0.1:{}", s.port);
    let mut idle = Vec::new();
    for i in 0..200 {
        let mut sock = TcpStream::connect(("127.0.0.1", s.port)).await.unwrap();
        // Half a request, never finished (no final CRLF for half of them).
        let partial = if i % 2 == 0 {
            format!("GET / HTTP/1.1\r\nHost: {host}\r\n")
        } else {
            "GET / HTTP/1.1\r\nHo".to_owned()
        };
        let _ = sock.write_all(partial.as_bytes()).await;
        idle.push(sock);
    }
    // Well before any handshake timeout, a good client gets through.
    let t0 = Instant::now();
    let mut c = bounded("the good client", Duration::from_secs(3), s.connect()).await;
    let tools = c.handshake().await;
    assert!(!tools.is_empty());
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    drop(idle);
}

/// Checklist item 23 with the token: a hundred clients that hold it, each
/// sending WebSocket pings and JSON-RPC pings as fast as it can. Every
/// ping is answered, and a client connecting in the middle of it gets in
/// and is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_signed_in_clients_pinging_at_once_are_answered_and_lock_nobody_out() {
    const CLIENTS: usize = 100;
    const PINGS: usize = 100;
    // Liveness, not speed: a loaded machine gets time.
    const LIMIT: Duration = Duration::from_secs(30);
    let s = TestServer::start().await;
    let mut floods = Vec::new();
    for _ in 0..CLIENTS {
        let (mut tx, mut rx) = s.connect().await.into_inner().split();
        floods.push(tokio::spawn(async move {
            let send = async {
                for i in 0..PINGS {
                    tx.send(Message::Ping(vec![i as u8].into())).await?;
                    let ping = json!({"jsonrpc": "2.0", "id": i, "method": "ping"});
                    tx.send(Message::text(ping.to_string())).await?;
                }
                Ok::<_, tokio_tungstenite::tungstenite::Error>(tx)
            };
            let answers = async {
                let (mut pongs, mut results) = (0, 0);
                while pongs < PINGS || results < PINGS {
                    match rx.next().await {
                        Some(Ok(Message::Pong(_))) => pongs += 1,
                        Some(Ok(Message::Text(t))) => {
                            let m: serde_json::Value = serde_json::from_str(&t).unwrap();
                            assert_eq!(m["result"], json!({}), "{m}");
                            results += 1;
                        }
                        Some(Ok(_)) => {}
                        other => panic!("a pinging client's connection ended: {other:?}"),
                    }
                }
                (pongs, results)
            };
            let (sent, answered) = tokio::join!(send, answers);
            let _tx = sent.expect("the pings are sent");
            answered
        }));
    }
    let mut c = bounded("a client joining the pings", LIMIT, s.client()).await;
    let d = bounded(
        "a tool call among the pings",
        LIMIT,
        c.call_tool("getDiagnostics", json!({})),
    )
    .await;
    assert_eq!(first_json(&d), json!([]));
    for flood in floods {
        let answered = bounded("a pinging client's answers", LIMIT, flood).await;
        assert_eq!(answered.unwrap(), (PINGS, PINGS));
    }
}

#[tokio::test]
async fn header_abuse_is_refused_and_the_server_stays_up() {
    let s = TestServer::start().await;
    let host = format!("127.0.0.1:{}", s.port);
    let token = s.token.clone();
    let auth = (AUTH_HEADER, token.as_str());

    let names: Vec<String> = (0..200).map(|i| format!("X-H{i}")).collect();
    let mut many: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "v")).collect();
    many.push(auth);
    let r = raw_exchange(s.port, &upgrade_request("/", Some(&host), &many)).await;
    assert_eq!(r.status, 431, "200 headers: {}", r.head);
    assert!(r.closed);

    let long = "a".repeat(64 * 1024);
    let r = raw_exchange(
        s.port,
        &upgrade_request("/", Some(&host), &[auth, ("X-Long", &long)]),
    )
    .await;
    assert_eq!(r.status, 431, "64 KiB header line: {}", r.head);
    assert!(r.closed);

    // Invalid UTF-8 in each header the server reads.
    let bad = |name: &str, value: &[u8]| {
        let mut req = b"GET / HTTP/1.1\r\n".to_vec();
        let mut put = |k: &str, v: &[u8]| {
            req.extend_from_slice(k.as_bytes());
            req.extend_from_slice(b": ");
            req.extend_from_slice(v);
            req.extend_from_slice(b"\r\n");
        };
        for (k, v) in [
            ("Host", host.as_bytes()),
            (AUTH_HEADER, token.as_bytes()),
            ("Upgrade", b"websocket".as_slice()),
            ("Connection", b"Upgrade".as_slice()),
            ("Sec-WebSocket-Version", b"13".as_slice()),
            ("Sec-WebSocket-Key", KEY.as_bytes()),
        ] {
            put(
                k,
                if k.eq_ignore_ascii_case(name) {
                    value
                } else {
                    v
                },
            );
        }
        req.extend_from_slice(b"\r\n");
        req
    };
    for (name, value, status) in [
        ("Host", b"127.0.0.1\xff\xfe".as_slice(), None),
        (AUTH_HEADER, b"\xff\xfe\xfd".as_slice(), Some(401)),
        (
            "Sec-WebSocket-Key",
            b"\xc3\x28AAAAAAAAAAAAAAAAAAAA==".as_slice(),
            Some(400),
        ),
        ("Upgrade", b"websocket\xff".as_slice(), None),
        ("Host", b"127.0.0.1\x01".as_slice(), Some(400)),
    ] {
        let r = raw_exchange(s.port, &bad(name, value)).await;
        assert!(
            (400..500).contains(&r.status),
            "{name} {value:?}: {}",
            r.head
        );
        if let Some(st) = status {
            assert_eq!(r.status, st, "{name} {value:?}: {}", r.head);
        }
        assert!(r.closed, "{name}");
    }

    // A 10k-character subprotocol list: answered at once, never echoed.
    let protos = "x,".repeat(5000);
    let t0 = Instant::now();
    let r = raw_exchange(
        s.port,
        &upgrade_request(
            "/",
            Some(&host),
            &[auth, ("Sec-WebSocket-Protocol", &protos)],
        ),
    )
    .await;
    assert!(t0.elapsed() < Duration::from_secs(1));
    assert!(r.header("sec-websocket-protocol").is_none(), "{}", r.head);

    assert!(s.is_running());
    s.assert_serving().await;
}

/// A client that stops reading (a suspended CLI) while answers pile up is
/// dropped once a write has waited two keepalive intervals; it does not pin
/// its connection task, and a new client is served.
#[tokio::test]
async fn a_client_that_stops_reading_is_dropped() {
    let s = TestServer::start_with(FakeFrontend::new(), |c| {
        c.keepalive_interval = Duration::from_millis(300);
        c.multi_client = true;
    })
    .await;
    // Big answers: 2,000 diagnostics of 200 bytes each (~0.5 MB per answer).
    for f in 0..20 {
        let diagnostics = (0..100)
            .map(|i| ccbridge_protocol::editor::Diagnostic {
                message: format!("{f}-{i} {}", "x".repeat(200)),
                severity: ccbridge_protocol::editor::Severity::Warning,
                range: Default::default(),
                source: None,
                code: None,
            })
            .collect();
        s.handle
            .send(ccbridge_server::EditorEvent::Diagnostics {
                path: format!("/w/f{f}.rs"),
                diagnostics,
            })
            .await
            .unwrap();
    }
    let mut c = s.client().await;
    assert_eq!(s.handle.clients().len(), 1);
    // Ask for many answers and never read them: the socket buffers fill up
    // and the server's write blocks.
    let request = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"getDiagnostics","arguments":{}}}"#;
    let frame = client_frame(1, true, request.as_bytes());
    let mut burst = Vec::new();
    for _ in 0..200 {
        burst.extend_from_slice(&frame);
    }
    let _ = bounded(
        "sending the burst",
        Duration::from_secs(10),
        c.tcp().write_all(&burst),
    )
    .await;
    let h = s.handle.clone();
    eventually(
        "the stalled client to be dropped",
        Duration::from_secs(10),
        || h.clients().is_empty(),
    )
    .await;
    let mut fresh = s.client().await;
    let pong = fresh.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
}
