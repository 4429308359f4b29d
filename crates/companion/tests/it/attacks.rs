//! Items 9–13 (the HTTP transport) of the security checklist,
//! `docs/security.md`, against the companion server Gemini CLI and Qwen Code
//! connect to, over a real socket; named after their item. The canary for
//! a request that must not get through is an `openDiff`: had it run, the
//! frontend would have been asked to show a diff.

use crate::support::{blocking, init, rig, Rig, TOKEN, WAIT};
use ccbridge_testkit::http::{mcp_post, request, Answer};
use serde_json::json;
use std::time::Duration;

/// `method /mcp` with `headers` only (plus what every test needs unless
/// overridden: a loopback Host, the JSON and SSE Accept, JSON content).
async fn send(rig: &Rig, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let port = rig.port;
    let host = format!("127.0.0.1:{port}");
    let mut all: Vec<(String, String)> = vec![
        ("Host".into(), host),
        (
            "Accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("Content-Type".into(), "application/json".into()),
    ];
    for (k, v) in headers {
        all.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        all.push((k.to_string(), v.to_string()));
    }
    let (method, path, body) = (method.to_owned(), path.to_owned(), body.to_owned());
    blocking(move || {
        let refs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        request(port, &method, &path, &refs, &body, WAIT)
    })
    .await
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

/// Opens a session with the right token; its id.
async fn session(rig: &Rig) -> String {
    let port = rig.port;
    let a = blocking(move || mcp_post(port, TOKEN, None, &init(), WAIT)).await;
    assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
    a.header("mcp-session-id").expect("a session id")
}

/// Nothing reached the frontend within a short grace time.
async fn no_diff_shown(rig: &mut Rig) {
    let shown = tokio::time::timeout(Duration::from_millis(300), rig.shown.recv()).await;
    assert!(shown.is_err(), "a diff was shown: {shown:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn item_09_every_request_needs_the_bearer_token_in_the_header() {
    let rig = rig().await;
    let lower = format!("bearer {TOKEN}");
    let a = send(&rig, "POST", "/mcp", &[("Authorization", &lower)], &init()).await;
    assert_eq!(a.status, 200, "the scheme is case-insensitive: {}", a.head);
    let doubled = format!("Bearer {TOKEN}x");
    let basic = format!("Basic {TOKEN}");
    let spaced = format!("Bearer  {TOKEN}x");
    for auth in [
        "",
        "Bearer",
        "Bearer ",
        "Bearer nope",
        &basic,
        &doubled,
        &spaced,
    ] {
        let headers: Vec<(&str, &str)> = if auth.is_empty() {
            vec![]
        } else {
            vec![("Authorization", auth)]
        };
        let a = send(&rig, "POST", "/mcp", &headers, &init()).await;
        assert_eq!(a.status, 401, "{auth:?}: {}", a.head);
        let challenge = a.header("www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer"), "{auth:?}: {}", a.head);
    }
    for q in ["access_token", "token", "auth"] {
        let a = send(&rig, "POST", &format!("/mcp?{q}={TOKEN}"), &[], &init()).await;
        assert_eq!(a.status, 401, "?{q}=: {}", a.head);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn item_10_a_browser_origin_is_refused_on_every_method() {
    let mut rig = rig().await;
    let sid = session(&rig).await;
    let auth = bearer();
    for origin in [
        "http://evil.example",
        "null",
        "http://localhost.evil.example",
        "http://127.0.0.1.evil.example",
    ] {
        for method in ["POST", "GET", "DELETE"] {
            let a = send(
                &rig,
                method,
                "/mcp",
                &[
                    ("Authorization", &auth),
                    ("Origin", origin),
                    ("Mcp-Session-Id", &sid),
                ],
                &init(),
            )
            .await;
            assert_eq!(a.status, 403, "{method} from {origin}: {}", a.head);
        }
    }
    // A loopback page passes the Origin check, and still needs the token.
    let local = format!("http://localhost:{}", rig.port);
    let a = send(
        &rig,
        "POST",
        "/mcp",
        &[("Authorization", &auth), ("Origin", &local)],
        &init(),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.head);
    let a = send(&rig, "POST", "/mcp", &[("Origin", &local)], &init()).await;
    assert_eq!(a.status, 401, "{}", a.head);
    no_diff_shown(&mut rig).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn item_11_a_foreign_host_is_refused_even_with_the_token() {
    let rig = rig().await;
    let auth = bearer();
    for host in [
        format!("evil.example:{}", rig.port),
        "evil.example".into(),
        format!("127.0.0.1.evil.example:{}", rig.port),
        format!("localhost@evil.example:{}", rig.port),
    ] {
        let a = send(
            &rig,
            "POST",
            "/mcp",
            &[("Authorization", &auth), ("Host", &host)],
            &init(),
        )
        .await;
        assert_eq!(a.status, 403, "Host {host}: {}", a.head);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn item_12_a_simple_request_cannot_open_a_diff() {
    let mut rig = rig().await;
    let sid = session(&rig).await;
    let auth = bearer();
    let file = rig.dir.path().join("csrf.txt");
    let body = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{
        "name":"openDiff","arguments":{"filePath": file, "newContent": "pwned\n"}}})
    .to_string();
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let a = send(
            &rig,
            "POST",
            "/mcp",
            &[
                ("Authorization", &auth),
                ("Content-Type", ct),
                ("Mcp-Session-Id", &sid),
                ("MCP-Protocol-Version", "2025-06-18"),
            ],
            &body,
        )
        .await;
        assert!(a.status == 415 || a.status == 400, "{ct}: {}", a.head);
    }
    no_diff_shown(&mut rig).await;
    assert!(!file.exists());
    // The same call as JSON does reach the frontend: the canary works.
    let a = send(
        &rig,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Mcp-Session-Id", &sid),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        &body,
    )
    .await;
    assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
    let shown = tokio::time::timeout(WAIT, rig.shown.recv()).await;
    assert!(matches!(shown, Ok(Some(_))), "{shown:?}");
}

/// A request that cannot take the answer (a POST without both JSON and
/// the event stream in its `Accept`, a GET without the event stream) is
/// refused with 406, and nothing is shown.
#[tokio::test(flavor = "multi_thread")]
async fn item_14_a_request_that_cannot_take_the_answer_is_refused() {
    let mut rig = rig().await;
    let auth = bearer();
    for accept in ["text/html", "application/json", "text/event-stream"] {
        let a = send(
            &rig,
            "POST",
            "/mcp",
            &[("Authorization", &auth), ("Accept", accept)],
            &init(),
        )
        .await;
        assert_eq!(a.status, 406, "POST, Accept {accept}: {}", a.head);
    }
    let sid = session(&rig).await;
    for accept in ["application/json", "text/html"] {
        let a = send(
            &rig,
            "GET",
            "/mcp",
            &[
                ("Authorization", &auth),
                ("Accept", accept),
                ("Mcp-Session-Id", &sid),
            ],
            "",
        )
        .await;
        assert_eq!(a.status, 406, "GET, Accept {accept}: {}", a.head);
    }
    no_diff_shown(&mut rig).await;
}

/// A body past the cap (32 MiB: an `openDiff` carries a whole file) is
/// refused with 413 before it is parsed; nothing is shown. (One byte past
/// it: the server has read all of it when it answers, so the answer is not
/// lost to a connection reset under a body still being sent.)
#[tokio::test(flavor = "multi_thread")]
async fn item_19_a_body_over_the_cap_is_refused() {
    let mut rig = rig().await;
    let sid = session(&rig).await;
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "openDiff", "arguments": {"filePath": "/tmp/a.txt", "newContent": ""}}})
    .to_string();
    let pad = ccbridge_companion::service::MAX_BODY_BYTES + 1 - call.len();
    let body = call.replace(
        "\"newContent\":\"\"",
        &format!("\"newContent\":\"{}\"", "x".repeat(pad)),
    );
    assert_eq!(body.len(), ccbridge_companion::service::MAX_BODY_BYTES + 1);
    let auth = bearer();
    let a = send(
        &rig,
        "POST",
        "/mcp",
        &[("Authorization", &auth), ("Mcp-Session-Id", &sid)],
        &body,
    )
    .await;
    assert_eq!(a.status, 413, "{}", a.head);
    no_diff_shown(&mut rig).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn item_13_no_cors_headers_and_no_preflight() {
    let rig = rig().await;
    let auth = bearer();
    let a = send(&rig, "POST", "/mcp", &[("Authorization", &auth)], &init()).await;
    assert_eq!(a.status, 200, "{}", a.head);
    assert!(
        a.header("access-control-allow-origin").is_none(),
        "{}",
        a.head
    );
    let a = send(
        &rig,
        "OPTIONS",
        "/mcp",
        &[
            ("Origin", "http://evil.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        "",
    )
    .await;
    assert!(
        a.status == 403 || a.status == 405 || a.status == 401,
        "{}",
        a.head
    );
    for h in [
        "access-control-allow-origin",
        "access-control-allow-methods",
        "access-control-allow-headers",
    ] {
        assert!(a.header(h).is_none(), "{h}: {}", a.head);
    }
}

/// `tools/call` of `name` in session `sid`; the answer's body.
async fn call(rig: &Rig, sid: &str, name: &str, arguments: serde_json::Value) -> String {
    static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(100);
    let id = IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
        "name": name, "arguments": arguments}})
    .to_string();
    let auth = bearer();
    let a = send(
        rig,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Mcp-Session-Id", sid),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        &body,
    )
    .await;
    assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
    a.body
}

fn fifo(path: &std::path::Path) {
    use rustix::fs::{FileType, Mode, CWD};
    rustix::fs::mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
}

async fn futures_join3<A, B, C>(
    a: impl std::future::Future<Output = A>,
    b: impl std::future::Future<Output = B>,
    c: impl std::future::Future<Output = C>,
) -> (A, B, C) {
    tokio::join!(a, b, c)
}

/// Issue 20, item 2: `openDiff` of a FIFO read it with a blocking call on
/// the runtime's workers (two on the machines ccbridge runs on), so the
/// page, the tools server and the IDE port stopped answering. Now it is
/// answered at once, not shown (the agent's own prompt decides), and
/// everything else keeps answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue20_an_open_diff_of_a_fifo_does_not_freeze_ccbridge() {
    let mut rig = rig().await;
    let sid = session(&rig).await;
    let pipe = rig.dir.path().join("pipe");
    fifo(&pipe);
    // More calls than workers, at once.
    let args = json!({"filePath": pipe, "newContent": "x\n"});
    let answers = tokio::time::timeout(
        WAIT * 2,
        futures_join3(
            call(&rig, &sid, "openDiff", args.clone()),
            call(&rig, &sid, "openDiff", args.clone()),
            call(&rig, &sid, "openDiff", args),
        ),
    )
    .await
    .expect("openDiff of a FIFO never answered");
    for a in [answers.0, answers.1, answers.2] {
        assert_not_an_error(&a);
    }
    // The server still opens sessions.
    let _ = tokio::time::timeout(WAIT, session(&rig))
        .await
        .expect("the server stopped answering");
    no_diff_shown(&mut rig).await;
}

/// Issue 20, item 8: `openDiff` read any file whole (`/dev/zero` to 2.1 GB)
/// and kept any number of proposals. Now the file and the proposal are
/// capped at 16 MiB each, and an agent's server holds at most 16
/// proposals waiting for review (and 64 MiB of their text). What is over a
/// cap is not shown, and is no error either: Gemini CLI failed the edit on
/// one even when the user allowed it in the terminal, which decides it.
#[tokio::test(flavor = "multi_thread")]
async fn issue20_open_diff_is_bounded_in_size_and_count() {
    let mut rig = rig().await;
    let sid = session(&rig).await;
    let answer = call(
        &rig,
        &sid,
        "openDiff",
        json!({"filePath": "/dev/zero", "newContent": "x\n"}),
    )
    .await;
    assert_not_an_error(&answer);
    let sparse = rig.dir.path().join("sparse");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(256 << 20)
        .unwrap();
    let answer = call(
        &rig,
        &sid,
        "openDiff",
        json!({"filePath": sparse, "newContent": "x\n"}),
    )
    .await;
    assert_not_an_error(&answer);
    let big = "a".repeat(17 << 20);
    let answer = call(
        &rig,
        &sid,
        "openDiff",
        json!({"filePath": rig.dir.path().join("new.txt"), "newContent": big}),
    )
    .await;
    assert_not_an_error(&answer);
    no_diff_shown(&mut rig).await;
    // Sixteen proposals wait; the seventeenth is refused, not kept.
    for i in 0..16 {
        let answer = call(
            &rig,
            &sid,
            "openDiff",
            json!({"filePath": rig.dir.path().join(format!("f{i}.txt")), "newContent": "x\n"}),
        )
        .await;
        assert!(!answer.contains("\"isError\":true"), "{i}: {answer}");
        tokio::time::timeout(WAIT, rig.shown.recv())
            .await
            .expect("shown")
            .expect("shown");
    }
    let extra = rig.dir.path().join("f16.txt");
    let answer = call(
        &rig,
        &sid,
        "openDiff",
        json!({"filePath": extra, "newContent": "x\n"}),
    )
    .await;
    assert_not_an_error(&answer);
    no_diff_shown(&mut rig).await;
    // Withdrawing one makes room again.
    call(
        &rig,
        &sid,
        "closeDiff",
        json!({"filePath": rig.dir.path().join("f0.txt")}),
    )
    .await;
    let shown = tokio::time::timeout(WAIT, async {
        loop {
            let a = call(
                &rig,
                &sid,
                "openDiff",
                json!({"filePath": extra, "newContent": "x\n"}),
            )
            .await;
            assert_not_an_error(&a);
            let shown = tokio::time::timeout(Duration::from_millis(100), rig.shown.recv()).await;
            if let Ok(Some(view)) = shown {
                return view;
            }
        }
    })
    .await
    .expect("room after a proposal was withdrawn");
    assert_eq!(shown.new_file_path, extra.display().to_string());
}

/// `openDiff`'s answer succeeded: an error fails Gemini CLI's edit even
/// when the user allows it in its terminal (`docs/agents.md`).
fn assert_not_an_error(answer: &str) {
    assert!(
        answer.contains("\"result\"") && !answer.contains("\"isError\":true"),
        "{answer}"
    );
}

/// Security issue 20, item 9 (the companion serves its sessions as the
/// tools server does): more `initialize` requests than
/// `ccbridge_http::mcp::MAX_SESSIONS` close the oldest idle session,
/// not one whose GET stream (where Gemini CLI gets its notifications) is
/// open, and a new client still gets in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_mcp_sessions_had_no_cap_now_the_oldest_idle_one_closes_for_a_new_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rig = rig().await;
    let ping = |sid: String| {
        let auth = bearer();
        let rig = &rig;
        async move {
            let body = json!({"jsonrpc":"2.0","id":7,"method":"ping"}).to_string();
            let headers = [
                ("Authorization", auth.as_str()),
                ("Mcp-Session-Id", sid.as_str()),
                ("MCP-Protocol-Version", "2025-06-18"),
            ];
            send(rig, "POST", "/mcp", &headers, &body).await.status
        }
    };
    let connected = session(&rig).await;
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", rig.port))
        .await
        .unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Accept: text/event-stream\r\nMcp-Session-Id: {connected}\r\n\
         MCP-Protocol-Version: 2025-06-18\r\n\r\n",
        rig.port
    );
    stream.write_all(get.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    tokio::time::timeout(WAIT, stream.read_exact(&mut head))
        .await
        .expect("the GET stream answers")
        .unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "{}", String::from_utf8_lossy(&head));

    let mut flood = Vec::new();
    for _ in 0..=ccbridge_http::mcp::MAX_SESSIONS {
        flood.push(session(&rig).await);
    }
    // One connected + MAX_SESSIONS + 1: the two oldest idle ones went.
    assert_eq!(
        ping(flood[0].clone()).await,
        404,
        "the oldest idle one went"
    );
    assert_eq!(ping(flood[1].clone()).await, 404);
    assert_eq!(ping(flood[2].clone()).await, 200);
    assert_eq!(ping(flood.last().unwrap().clone()).await, 200);
    assert_eq!(ping(connected).await, 200, "a connected client stays");
    drop(stream);
}

/// Checklist item 25 over HTTP (`ccbridge_testkit::mutations`): 2,000
/// mutations of the requests Gemini CLI and Qwen Code send. Each is
/// answered or closed within 10 s, a share of them still served, and the
/// server still shows a well-formed `openDiff` afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn item_25_mutated_requests_are_answered_and_the_server_still_serves() {
    use ccbridge_testkit::mutations::{self, Ended, Request};
    let mut rig = rig().await;
    let sid = session(&rig).await;
    let port = rig.port;
    let file = rig.dir.path().join("proposed.txt");
    let extra = format!("Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-06-18\r\n");
    let call = |id: u32, name: &str, arguments: serde_json::Value| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        Request::post(port, TOKEN, "/mcp", &extra, &body)
    };
    let requests = vec![
        call(
            7,
            "openDiff",
            json!({"filePath": file, "newContent": "new\n"}),
        ),
        call(8, "closeDiff", json!({"filePath": file})),
        Request::post(
            port,
            TOKEN,
            "/mcp",
            &extra,
            &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}),
        ),
        Request::post(
            port,
            TOKEN,
            "/mcp",
            &extra,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ),
        Request::post(
            port,
            TOKEN,
            "/mcp",
            "",
            &serde_json::from_str(&init()).unwrap(),
        ),
    ];
    let ended = blocking(move || {
        mutations::attack(&mutations::Attack {
            port,
            requests: &requests,
            aims: &[],
            secret: b"",
            count: 2000,
            seed: 0xc0_4a1e,
        })
    })
    .await;
    let served = ended.get(&Ended::Status(200)).copied().unwrap_or(0);
    assert!(
        served >= 100,
        "only {served} of 2,000 were served: {ended:?}"
    );
    while rig.shown.try_recv().is_ok() {}
    let sid = session(&rig).await;
    let after = rig.dir.path().join("after.txt");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "openDiff", "arguments": {"filePath": after, "newContent": "x\n"}}})
    .to_string();
    let a = send(
        &rig,
        "POST",
        "/mcp",
        &[
            ("Authorization", &bearer()),
            ("Mcp-Session-Id", &sid),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        &body,
    )
    .await;
    assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
    let shown = tokio::time::timeout(WAIT, async {
        loop {
            match rig.shown.recv().await {
                Some(d) if d.new_file_path == after.display().to_string() => return d,
                Some(_) => {}
                None => panic!("the engine stopped"),
            }
        }
    })
    .await;
    assert!(shown.is_ok(), "the openDiff after the attack was not shown");
}
