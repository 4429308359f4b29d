//! Security issue 20, item 9: MCP sessions had no cap (5,000 `initialize`
//! requests added 272 MB, and idle sessions lived 30 minutes). These
//! attack a tools server on a real socket: many more sessions than
//! `MAX_SESSIONS`, sessions kept busy by a call in flight or an open GET
//! stream, and the memory 5,000 sessions take.

use crate::support;

use crate::support::{next_id, start, until, Rig, INIT, TOKEN, WAIT};
use ccbridge_mcp::service::MAX_SESSIONS;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Opens a session (initialize + initialized); its id.
async fn open(rig: &Rig) -> String {
    let a = rig.post("/mcp", &[], INIT).await;
    assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
    let sid = a.header("mcp-session-id").expect("a session id");
    let a = rig
        .post(
            "/mcp",
            &headers(&sid),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
    assert_eq!(a.status, 202, "{}", a.head);
    sid
}

fn headers(sid: &str) -> Vec<(&str, &str)> {
    vec![
        ("Mcp-Session-Id", sid),
        ("MCP-Protocol-Version", "2025-11-25"),
    ]
}

/// The status a `ping` in session `sid` gets: 200 while it lives, 404 once
/// it is closed.
async fn ping(rig: &Rig, sid: &str) -> u16 {
    let body = json!({"jsonrpc":"2.0","id":next_id(),"method":"ping"}).to_string();
    rig.post("/mcp", &headers(sid), &body).await.status
}

/// Opens session `sid`'s GET event stream and keeps it open (until dropped).
async fn get_stream(rig: &Rig, sid: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", rig.port)).await.unwrap();
    let req = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Accept: text/event-stream\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n",
        rig.port
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(WAIT, s.read(&mut buf))
            .await
            .expect("the GET stream answers")
            .unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&head));
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    s
}

/// Opening far more sessions than the cap closes the least recently used
/// idle ones first, never one with a call in flight or its GET stream
/// open; the count stays at the cap and a new client still gets in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_mcp_sessions_had_no_cap_now_the_oldest_idle_one_closes_for_a_new_one() {
    let mut rig = start().await;
    // A: a write waiting for the user's review (a request in flight).
    let a = open(&rig).await;
    let body = support::call(
        "write_file",
        json!({"path": "new.txt", "content": "from a\n"}),
    );
    let call = rig.post_later("/mcp", &headers(&a), &body);
    let (_proposal, verdict) = rig.next_review().await;
    // B: its GET stream open.
    let b = open(&rig).await;
    let stream = get_stream(&rig, &b).await;
    // C: idle, and now the oldest idle one.
    let c = open(&rig).await;

    let mut flood = Vec::new();
    for _ in 0..MAX_SESSIONS {
        flood.push(open(&rig).await);
    }
    // 3 + MAX_SESSIONS opened, MAX_SESSIONS kept: C and the first two of
    // the flood went, A and B stayed.
    assert_eq!(
        ping(&rig, &c).await,
        404,
        "the oldest idle session is closed"
    );
    assert_eq!(ping(&rig, &flood[0]).await, 404);
    assert_eq!(ping(&rig, &flood[1]).await, 404);
    for sid in &flood[2..] {
        assert_eq!(ping(&rig, sid).await, 200, "a newer session was closed");
    }
    assert_eq!(
        ping(&rig, &b).await,
        200,
        "a session with its stream open stays"
    );
    assert_eq!(
        ping(&rig, &a).await,
        200,
        "a session with a call in flight stays"
    );
    verdict
        .send(Ok(ccbridge_server::Verdict::Accepted {
            contents: "from a\n".into(),
        }))
        .unwrap();
    let answer = call.await.unwrap();
    assert_eq!(answer.status, 200, "{}", answer.body);
    let (text, is_error) = support::outcome(answer);
    assert!(!is_error, "the call in flight finished: {text}");

    // A fresh client still works (and pushes out the next idle one).
    let fresh = open(&rig).await;
    let body = support::call("read_file", json!({"path": "hello.py"}));
    let (text, is_error) = support::outcome(rig.post("/mcp", &headers(&fresh), &body).await);
    assert!(!is_error && text.contains("print('hi')"), "{text}");
    assert_eq!(ping(&rig, &flood[2]).await, 404);
    drop(stream);
    rig.stop().await;
}

/// When every session is busy (here: all with their GET stream open) a
/// new `initialize` is refused with a clear error, and accepted again
/// once one of them is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_session_is_busy_a_new_one_is_refused_until_one_is_free() {
    let rig = start().await;
    let mut streams = Vec::new();
    for _ in 0..MAX_SESSIONS {
        let sid = open(&rig).await;
        streams.push(get_stream(&rig, &sid).await);
    }
    let a = rig.post("/mcp", &[], INIT).await;
    assert_eq!(a.status, 500, "{}\n{}", a.head, a.body);
    assert!(a.body.contains("too many MCP sessions"), "{}", a.body);
    assert!(a.header("mcp-session-id").is_none());
    drop(streams.pop());
    let mut status = 0;
    let freed = until(Duration::from_secs(40), || {
        let rig_port = rig.port;
        status = tokio::task::block_in_place(|| {
            let auth = format!("Bearer {TOKEN}");
            let host = format!("127.0.0.1:{rig_port}");
            ccbridge_testkit::http::request(
                rig_port,
                "POST",
                "/mcp",
                &[
                    ("Host", &host),
                    ("Authorization", &auth),
                    ("Accept", "application/json, text/event-stream"),
                    ("Content-Type", "application/json"),
                ],
                INIT,
                Duration::from_secs(10),
            )
            .status
        });
        status == 200
    })
    .await;
    assert!(freed, "a closed stream frees its session: {status}");
    drop(streams);
    rig.stop().await;
}

/// The process's resident memory, from `/proc/self/status`.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number of kB");
    kb * 1024
}

/// 5,000 `initialize` requests (nobody ever closing a session) leave the
/// server's memory about where it was: before the cap they added 272 MB.
/// The memory measured is the process's: the test runs alone in a process
/// of its own, so no other test's allocations count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_sessions_do_not_grow_memory_without_bound() {
    if !ccbridge_testkit::alone::rerun(
        module_path!(),
        "five_thousand_sessions_do_not_grow_memory_without_bound",
        &[],
    ) {
        return;
    }
    let rig = start().await;
    let init = |n: usize| {
        let port = rig.port;
        async move {
            let tasks: Vec<_> = (0..4)
                .map(|_| {
                    tokio::task::spawn_blocking(move || {
                        let auth = format!("Bearer {TOKEN}");
                        let host = format!("127.0.0.1:{port}");
                        for _ in 0..n / 4 {
                            let a = ccbridge_testkit::http::request(
                                port,
                                "POST",
                                "/mcp",
                                &[
                                    ("Host", &host),
                                    ("Authorization", &auth),
                                    ("Accept", "application/json, text/event-stream"),
                                    ("Content-Type", "application/json"),
                                ],
                                INIT,
                                Duration::from_secs(30),
                            );
                            assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        }
    };
    // Warm up: the cap's worth, so what is measured is what goes beyond.
    init(2 * MAX_SESSIONS).await;
    let before = rss_bytes();
    init(5000).await;
    let grown = rss_bytes().saturating_sub(before);
    assert!(
        grown < 64 << 20,
        "5,000 sessions grew the resident memory by {} MB",
        grown >> 20
    );
    rig.stop().await;
}
