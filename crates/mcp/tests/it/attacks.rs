//! Items 9–16 (the HTTP transport) and 26–38 (the workspace tools) of the
//! security checklist, `docs/security.md`, each attacking a running tools
//! server over a real socket. Tests are named after their item.
//!
//! Writes run in the `never` approval mode: nobody reviews them, so an
//! escape would really land. Every "outside" target is a canary beside the
//! workspace, checked untouched afterwards.
//!
//! A deliberate difference from the checklist: item 37 runs a shell
//! command line (the user approves that exact line, as in a terminal)
//! rather than an argv array.

use crate::support;

use crate::support::{settings, start_with, Rig, INIT, TOKEN};
use ccbridge_mcp::{ApprovalMode, Settings};
use ccbridge_testkit::mutations::{self, Ended, Request};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// A rig whose writes land unreviewed, with a canary folder beside it.
async fn rig() -> (Rig, tempfile::TempDir) {
    let rig = start_with(Settings {
        approval: ApprovalMode::Never,
        ..settings()
    })
    .await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("passwd"), "root:x:0:0\n").unwrap();
    (rig, outside)
}

fn canary_intact(outside: &Path) {
    assert_eq!(
        std::fs::read_to_string(outside.join("passwd")).unwrap(),
        "root:x:0:0\n",
        "the canary outside the workspace changed"
    );
    let names: Vec<_> = std::fs::read_dir(outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "files appeared outside: {names:?}");
}

/// A tool call that must fail without revealing `outside`.
async fn refused(rig: &Rig, name: &str, args: Value, outside: &Path) -> String {
    let (text, is_error) = rig.call(name, args.clone()).await;
    assert!(is_error, "{name} {args} was not refused: {text}");
    assert!(!text.contains("root:x"), "{name} {args} leaked: {text}");
    // The path as asked may be echoed; a path it resolved to may not.
    let out = outside.display().to_string();
    if !args.to_string().contains(&out) {
        assert!(!text.contains(&out), "{name} {args} named {out}: {text}");
    }
    text
}

#[tokio::test]
async fn item_09_every_request_needs_the_bearer_token_in_the_header() {
    let (rig, _o) = rig().await;
    let lower = format!("bearer {TOKEN}");
    let a = rig.post("/mcp", &[("Authorization", &lower)], INIT).await;
    assert_eq!(a.status, 200, "the scheme is case-insensitive: {}", a.head);
    let longer = format!("Bearer {TOKEN}x");
    let basic = format!("Basic {TOKEN}");
    for auth in [
        "",
        "Bearer",
        "Bearer ",
        "Bearer nope",
        TOKEN,
        &basic,
        &longer,
    ] {
        let a = rig.post("/mcp", &[("Authorization", auth)], INIT).await;
        assert_eq!(a.status, 401, "{auth:?}: {}", a.head);
        assert!(a.header("www-authenticate").unwrap().starts_with("Bearer"));
    }
    for q in ["access_token", "token", "auth"] {
        let a = rig
            .post(&format!("/mcp?{q}={TOKEN}"), &[("Authorization", "")], INIT)
            .await;
        assert_eq!(a.status, 401, "?{q}=: {}", a.head);
    }
    rig.stop().await;
}

#[tokio::test]
async fn item_10_a_browser_origin_is_refused_on_every_method() {
    let (mut rig, _o) = rig().await;
    rig.open_session().await;
    let sid = rig.session_id().to_owned();
    for origin in [
        "http://evil.example",
        "null",
        "http://localhost.evil.example",
        "http://127.0.0.1.evil.example",
    ] {
        for method in ["POST", "GET", "DELETE"] {
            let a = rig
                .send(
                    method,
                    &[("Origin", origin), ("Mcp-Session-Id", &sid)],
                    INIT,
                )
                .await;
            assert_eq!(a.status, 403, "{method} from {origin}: {}", a.head);
        }
    }
    // A loopback page passes the Origin check (and still needs the token).
    let local = format!("http://localhost:{}", rig.port);
    let a = rig.post("/mcp", &[("Origin", &local)], INIT).await;
    assert_eq!(a.status, 200, "{}", a.head);
    let a = rig
        .post("/mcp", &[("Origin", &local), ("Authorization", "")], INIT)
        .await;
    assert_eq!(a.status, 401, "{}", a.head);
    rig.stop().await;
}

#[tokio::test]
async fn item_11_a_foreign_host_is_refused_even_with_the_token() {
    let (rig, _o) = rig().await;
    for host in [
        format!("evil.example:{}", rig.port),
        "evil.example".into(),
        format!("127.0.0.1.evil.example:{}", rig.port),
        format!("localhost@evil.example:{}", rig.port),
    ] {
        let a = rig.post("/mcp", &[("Host", &host)], INIT).await;
        assert_eq!(a.status, 403, "Host {host}: {}", a.head);
    }
    rig.stop().await;
}

#[tokio::test]
async fn item_12_a_simple_request_cannot_call_a_tool() {
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    let sid = rig.session_id().to_owned();
    let body = support::call("write_file", json!({"path": "csrf.txt", "content": "x"}));
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let a = rig
            .post(
                "/mcp",
                &[
                    ("Content-Type", ct),
                    ("Mcp-Session-Id", &sid),
                    ("MCP-Protocol-Version", "2025-11-25"),
                ],
                &body,
            )
            .await;
        assert!(a.status == 415 || a.status == 400, "{ct}: {}", a.head);
    }
    assert!(!rig.path("csrf.txt").exists(), "the canary call ran");
    canary_intact(outside.path());
    rig.stop().await;
}

#[tokio::test]
async fn item_13_no_cors_headers_and_no_preflight() {
    let (rig, _o) = rig().await;
    let a = rig.post("/mcp", &[], INIT).await;
    assert_eq!(a.status, 200);
    assert!(
        a.header("access-control-allow-origin").is_none(),
        "{}",
        a.head
    );
    let a = rig
        .send(
            "OPTIONS",
            &[
                ("Origin", "http://evil.example"),
                ("Access-Control-Request-Method", "POST"),
            ],
            "",
        )
        .await;
    assert!(a.status == 403 || a.status == 405, "{}", a.head);
    assert!(
        a.header("access-control-allow-origin").is_none(),
        "{}",
        a.head
    );
    assert!(
        a.header("access-control-allow-methods").is_none(),
        "{}",
        a.head
    );
    rig.stop().await;
}

#[tokio::test]
async fn item_14_a_post_that_cannot_take_the_answer_is_refused() {
    let (rig, _o) = rig().await;
    for accept in ["text/html", "application/json", "text/event-stream"] {
        let a = rig.post("/mcp", &[("Accept", accept)], INIT).await;
        assert_eq!(a.status, 406, "Accept {accept}: {}", a.head);
    }
    rig.stop().await;
}

/// A GET (the session's event stream) that cannot take an event stream.
#[tokio::test]
async fn item_14_a_get_that_cannot_take_an_event_stream_is_refused() {
    let (mut rig, _o) = rig().await;
    rig.open_session().await;
    let sid = rig.session_id().to_owned();
    for accept in ["application/json", "text/html", ""] {
        let a = rig
            .request_later(
                "GET",
                "/mcp",
                &[
                    ("Mcp-Session-Id", &sid),
                    ("Accept", accept),
                    ("Content-Type", ""),
                ],
                "",
            )
            .await
            .unwrap();
        assert_eq!(a.status, 406, "Accept {accept:?}: {}", a.head);
    }
    rig.stop().await;
}

/// A request without `MCP-Protocol-Version` after `initialize` (clients of
/// the 2025-03-26 revision send none) is served, at the version the
/// session negotiated.
#[tokio::test]
async fn item_15_a_request_without_the_version_header_is_served() {
    let (mut rig, _o) = rig().await;
    rig.open_session().await;
    let sid = rig.session_id().to_owned();
    let a = rig
        .post(
            "/mcp",
            &[("Mcp-Session-Id", &sid)],
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
        )
        .await;
    assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
    assert!(a.body.contains("\"read_file\""), "{}", a.body);
    rig.stop().await;
}

/// Request smuggling: a body framed both by `Transfer-Encoding: chunked`
/// and a `Content-Length` that disagrees is read by the former alone (as
/// RFC 9112 allows: here an empty body, refused), the connection is closed
/// after the answer, and what follows on it is never taken as a second
/// request.
#[tokio::test]
async fn item_24_a_request_framed_by_both_lengths_is_refused() {
    use std::io::{Read, Write};
    let (rig, outside) = rig().await;
    let smuggled = support::call(
        "write_file",
        json!({"path": "smuggled.txt", "content": "x\n"}),
    );
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {len}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        port = rig.port,
        len = 5,
    );
    let second = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Content-Length: {len}\r\n\r\n{smuggled}",
        port = rig.port,
        len = smuggled.len(),
    );
    let port = rig.port;
    let answer = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(format!("{head}{second}").as_bytes()).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("\r\nconnection: close\r\n"),
        "{answer}"
    );
    assert_eq!(
        answer.matches("HTTP/1.1 ").count(),
        1,
        "a second answer: {answer}"
    );
    assert!(!rig.path("smuggled.txt").exists());
    canary_intact(outside.path());
    rig.stop().await;
}

/// Malformed JSON-RPC over HTTP: broken JSON, a nesting bomb, the wrong
/// version, a batch (gone since the 2025-06-18 revision): each refused
/// with a 4xx at once, nothing run, and the session goes on serving.
#[tokio::test]
async fn items_17_18_20_malformed_messages_over_http_are_refused() {
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    let sid = rig.session_id().to_owned();
    let write = support::call("write_file", json!({"path": "ran.txt", "content": "x\n"}));
    let bodies = [
        "{".to_owned(),
        "[".repeat(100_000),
        "{\"a\":".repeat(10_000),
        write.replace("\"2.0\"", "\"1.0\""),
        format!("[{write}]"),
        format!("[{write},{write}]"),
        "[]".to_owned(),
    ];
    for body in &bodies {
        let a = tokio::time::timeout(
            Duration::from_secs(10),
            rig.post("/mcp", &[("Mcp-Session-Id", &sid)], body),
        )
        .await
        .expect("answered at once");
        let shown = &body[..body.len().min(40)];
        assert!(
            (400..500).contains(&a.status),
            "{shown}: {}\n{}",
            a.head,
            a.body
        );
    }
    assert!(
        !rig.path("ran.txt").exists(),
        "a malformed message ran a tool"
    );
    let (text, is_error) = rig.call("list_files", json!({"path": "."})).await;
    assert!(!is_error, "the session stopped serving: {text}");
    canary_intact(outside.path());
    rig.stop().await;
}

/// Item 17, a duplicate id: a client reusing the id of a call still
/// waiting for the user. MCP forbids it, and rmcp routes an answer by its
/// id: the reusing request took the first one's answer and the first POST
/// waited for ever. The reusing request is refused at once (-32600, naming
/// the id), the first is answered when the user answers, and the id is
/// free again once it is.
#[tokio::test]
async fn item_17_an_id_reused_while_its_call_waits_is_refused_and_the_first_answered() {
    let mut rig = support::start().await;
    rig.open_session().await;
    std::fs::write(rig.path("a.txt"), "alpha\n").unwrap();
    let id = support::next_id();
    let command = rig.call_later_with_id(id, "execute_command", json!({"command": "echo first"}));
    let (_, approve) = rig.next_approval().await;
    let again = tokio::time::timeout(
        Duration::from_secs(10),
        rig.call_later_with_id(id, "read_file", json!({"path": "a.txt"})),
    )
    .await
    .expect("the reusing request is answered at once")
    .unwrap();
    let m = again.message();
    assert_eq!(m["id"], id, "{m}");
    assert_eq!(m["error"]["code"], -32600, "{m}");
    let why = m["error"]["message"].as_str().unwrap();
    assert!(why.contains(&format!("request id {id} is in use")), "{why}");
    approve.send(Ok(true)).unwrap();
    let command = tokio::time::timeout(Duration::from_secs(10), command)
        .await
        .expect("the first call is answered once approved")
        .unwrap();
    assert_eq!(command.message()["id"], id, "{}", command.body);
    let (text, is_error) = support::outcome(command);
    assert!(!is_error && text.contains("first"), "{text}");
    let read = rig.call_later_with_id(id, "read_file", json!({"path": "a.txt"}));
    let (text, is_error) = support::outcome(read.await.unwrap());
    assert!(!is_error && text.contains("alpha"), "{text}");
    rig.stop().await;
}

#[tokio::test]
async fn item_15_an_unknown_protocol_version_header_is_refused() {
    let (mut rig, _o) = rig().await;
    rig.open_session().await;
    let sid = rig.session_id().to_owned();
    for v in ["1999-01-01", "garbage", "2025-11-25\u{0}"] {
        let a = rig
            .post(
                "/mcp",
                &[("Mcp-Session-Id", &sid), ("MCP-Protocol-Version", v)],
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
            )
            .await;
        assert_eq!(a.status, 400, "{v:?}: {}", a.head);
    }
    rig.stop().await;
}

#[tokio::test]
async fn item_16_sessions_are_random_scoped_and_end() {
    let (mut rig, _o) = rig().await;
    rig.open_session().await;
    let sid = rig.session_id().to_owned();
    assert!(sid.len() >= 22, "at least 128 bits: {sid}");
    assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{sid}");
    let list = r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#;
    let a = rig.post("/mcp", &[], list).await;
    assert_eq!(a.status, 400, "no session id: {}", a.head);
    let a = rig.post("/mcp", &[("Mcp-Session-Id", "nope")], list).await;
    assert_eq!(a.status, 404, "unknown id: {}", a.head);
    let a = rig
        .post(
            "/mcp",
            &[("Mcp-Session-Id", &sid), ("Authorization", "")],
            list,
        )
        .await;
    assert_eq!(a.status, 401, "a session id is no credential: {}", a.head);
    let a = rig.send("DELETE", &[("Mcp-Session-Id", &sid)], "").await;
    assert!((200..300).contains(&a.status), "{}", a.head);
    let a = rig.post("/mcp", &[("Mcp-Session-Id", &sid)], list).await;
    assert_eq!(a.status, 404, "a deleted session: {}", a.head);
    rig.stop().await;
}

#[tokio::test]
async fn item_26_paths_outside_the_workspace_are_refused_without_echoing_them() {
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    let out = outside.path().join("passwd").display().to_string();
    let escaping = [
        "../../etc/passwd",
        "a/../../x",
        "/etc/passwd",
        "hello.py\u{0}.txt",
        "",
        out.as_str(),
    ];
    for p in escaping {
        refused(&rig, "read_file", json!({"path": p}), outside.path()).await;
        refused(
            &rig,
            "write_file",
            json!({"path": p, "content": "pwned"}),
            outside.path(),
        )
        .await;
    }
    // Refused, or taken literally (no `~` expansion, no URL decoding) as
    // names inside the workspace.
    for (p, lands) in [
        ("~/.ssh/id_rsa", "~/.ssh/id_rsa"),
        ("file:///etc/passwd", "file:/etc/passwd"),
        ("%2e%2e/%2e%2e/etc/passwd", "%2e%2e/%2e%2e/etc/passwd"),
    ] {
        refused(&rig, "read_file", json!({"path": p}), outside.path()).await;
        let (text, is_error) = rig
            .call("write_file", json!({"path": p, "content": "confined"}))
            .await;
        if !is_error {
            assert_eq!(
                std::fs::read_to_string(rig.path(lands)).ok().as_deref(),
                Some("confined"),
                "{p}: {text}"
            );
        }
    }
    refused(&rig, "list_files", json!({"path": "../.."}), outside.path()).await;
    refused(
        &rig,
        "search_files",
        json!({"path": "/etc", "regex": "root"}),
        outside.path(),
    )
    .await;
    // `.` is the workspace itself.
    let (text, is_error) = rig.call("list_files", json!({"path": "."})).await;
    assert!(!is_error && text.contains("hello.py"), "{text}");
    canary_intact(outside.path());
    rig.stop().await;
}

#[tokio::test]
async fn item_27_a_sibling_folder_with_the_same_prefix_is_outside() {
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    let ws = rig.root().to_path_buf();
    let sibling = ws.with_file_name(format!(
        "{}-evil",
        ws.file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&sibling).unwrap();
    std::fs::write(sibling.join("x"), "root:x:sibling\n").unwrap();
    let name = sibling.file_name().unwrap().to_string_lossy().into_owned();
    for p in [
        sibling.join("x").display().to_string(),
        format!("../{name}/x"),
    ] {
        refused(&rig, "read_file", json!({"path": p}), outside.path()).await;
        refused(
            &rig,
            "write_file",
            json!({"path": p, "content": "pwned"}),
            outside.path(),
        )
        .await;
    }
    assert_eq!(
        std::fs::read_to_string(sibling.join("x")).unwrap(),
        "root:x:sibling\n"
    );
    std::fs::remove_dir_all(&sibling).unwrap();
    rig.stop().await;
}

#[tokio::test]
async fn item_28_symlinks_out_of_the_workspace_are_refused_by_every_tool() {
    use std::os::unix::fs::symlink;
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    let o = outside.path();
    symlink(o, rig.path("link")).unwrap();
    symlink(o.join("passwd"), rig.path("f")).unwrap();
    std::fs::create_dir(rig.path("d")).unwrap();
    symlink("../../..", rig.path("d/inner")).unwrap();
    symlink(o.join("missing"), rig.path("dangling")).unwrap();
    symlink("loop2", rig.path("loop1")).unwrap();
    symlink("loop1", rig.path("loop2")).unwrap();
    for p in ["link/passwd", "f", "d/inner/etc/passwd", "loop1"] {
        refused(&rig, "read_file", json!({"path": p}), o).await;
        refused(
            &rig,
            "write_file",
            json!({"path": p, "content": "pwned"}),
            o,
        )
        .await;
        refused(
            &rig,
            "apply_diff",
            json!({"path": p, "diff": "<<<<<<< SEARCH\nroot:x:0:0\n=======\npwned\n>>>>>>> REPLACE\n"}),
            o,
        )
        .await;
    }
    refused(
        &rig,
        "write_file",
        json!({"path": "dangling", "content": "pwned"}),
        o,
    )
    .await;
    refused(&rig, "list_files", json!({"path": "link"}), o).await;
    refused(
        &rig,
        "search_files",
        json!({"path": "link", "regex": "root"}),
        o,
    )
    .await;
    // Walks of the workspace do not follow links out of it.
    let (text, _) = rig
        .call("search_files", json!({"path": ".", "regex": "root:x"}))
        .await;
    assert!(!text.contains("root:x:0:0"), "{text}");
    let (text, _) = rig
        .call("list_files", json!({"path": ".", "recursive": true}))
        .await;
    assert!(!text.contains("passwd"), "{text}");
    assert!(!o.join("missing").exists());
    canary_intact(o);
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn item_29_a_folder_swapped_for_a_symlink_during_calls_never_leads_out() {
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    let dir = rig.path("dir");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("passwd"), "inside\n").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, dir, target) = (stop.clone(), dir.clone(), outside.path().to_owned());
        let real = dir.with_file_name("dir.real");
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::rename(&dir, &real);
                let _ = std::os::unix::fs::symlink(&target, &dir);
                let _ = std::fs::remove_file(&dir);
                let _ = std::fs::rename(&real, &dir);
            }
        })
    };
    let calls = async {
        for i in 0..150 {
            let (text, _) = rig.call("read_file", json!({"path": "dir/passwd"})).await;
            assert!(!text.contains("root:x"), "read outside on call {i}: {text}");
            rig.call(
                "write_file",
                json!({"path": "dir/passwd", "content": format!("written {i}\n")}),
            )
            .await;
        }
    };
    let ended = tokio::time::timeout(Duration::from_secs(120), calls).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    ended.expect("the calls under the swap race never ended");
    swapper.join().unwrap();
    canary_intact(outside.path());
    rig.stop().await;
}

#[tokio::test]
async fn item_30_a_write_replaces_a_hard_link_instead_of_writing_through_it() {
    use std::os::unix::fs::MetadataExt;
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    // A hard link needs the same file system: a canary inside the temp dir
    // beside the workspace's.
    let victim = rig.root().with_file_name(format!(
        "{}-victim",
        rig.root().file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&victim, "root:x:0:0\n").unwrap();
    std::fs::hard_link(&victim, rig.path("hl")).unwrap();
    let (text, is_error) = rig
        .call("write_file", json!({"path": "hl", "content": "new\n"}))
        .await;
    assert!(!is_error, "{text}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:x:0:0\n");
    assert_eq!(std::fs::read_to_string(rig.path("hl")).unwrap(), "new\n");
    assert_ne!(
        std::fs::metadata(&victim).unwrap().ino(),
        std::fs::metadata(rig.path("hl")).unwrap().ino()
    );
    std::fs::remove_file(&victim).unwrap();
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(rig.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| n == "hello.py" || n == "hl"),
        "{names:?}"
    );
    canary_intact(outside.path());
    rig.stop().await;
}

#[tokio::test]
async fn item_31_a_diffs_own_path_headers_lead_nowhere_and_a_huge_one_is_capped() {
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    let diff = "--- a/../../etc/passwd\n+++ /etc/passwd\n<<<<<<< SEARCH\nno such line\n=======\npwned\n>>>>>>> REPLACE\n";
    let text = refused(
        &rig,
        "apply_diff",
        json!({"path": "hello.py", "diff": diff}),
        outside.path(),
    )
    .await;
    assert!(text.contains("not found"), "{text}");
    // Markers out of order: nothing is written.
    refused(
        &rig,
        "apply_diff",
        json!({"path": "hello.py", "diff": "=======\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n"}),
        outside.path(),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(rig.path("hello.py")).unwrap(),
        "print('hi')\nprint('bye')\n"
    );
    let huge = "a".repeat(5 << 20);
    let a = rig
        .post_later(
            "/mcp",
            &[
                ("Mcp-Session-Id", rig.session_id()),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
            &support::call("apply_diff", json!({"path": "hello.py", "diff": huge})),
        )
        .await
        .unwrap();
    assert_eq!(a.status, 413, "{}", a.head);
    canary_intact(outside.path());
    rig.stop().await;
}

#[tokio::test]
async fn item_32_fifos_sockets_and_huge_sparse_files_are_refused_at_once() {
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    let fifo = rig.path("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let _sock = std::os::unix::net::UnixListener::bind(rig.path("sock")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", rig.path("zero")).unwrap();
    let sparse = std::fs::File::create(rig.path("sparse")).unwrap();
    sparse.set_len(10 << 30).unwrap();
    // The same behind 9 KB of text: not binary, and its 101st line runs
    // on for 10 GB without a break.
    let headed = rig.path("headed");
    std::fs::write(&headed, format!("{}\n", "t".repeat(89)).repeat(100)).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&headed)
        .unwrap()
        .set_len(10 << 30)
        .unwrap();
    // Bounded: a call that blocked on a special file would never end.
    let calls = async {
        for p in ["fifo", "sock", "zero"] {
            refused(&rig, "read_file", json!({"path": p}), outside.path()).await;
            refused(
                &rig,
                "write_file",
                json!({"path": p, "content": "x"}),
                outside.path(),
            )
            .await;
        }
        // 10 GiB of zeros: binary, refused without reading it all.
        refused(&rig, "read_file", json!({"path": "sparse"}), outside.path()).await;
        refused(
            &rig,
            "apply_diff",
            json!({"path": "sparse", "diff": "<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n"}),
            outside.path(),
        )
        .await;
        // Shown up to that line, the line cut; read no further.
        let (text, is_error) = rig.call("read_file", json!({"path": "headed"})).await;
        assert!(!is_error, "{text}");
        assert!(text.contains("read_file stops here"), "{text}");
        refused(
            &rig,
            "apply_diff",
            json!({"path": "headed", "diff": "<<<<<<< SEARCH\nt\n=======\nu\n>>>>>>> REPLACE\n"}),
            outside.path(),
        )
        .await;
    };
    tokio::time::timeout(Duration::from_secs(60), calls)
        .await
        .expect("a special file blocked a call");
    rig.stop().await;
}

#[tokio::test]
async fn item_33_binary_files_are_refused_and_odd_names_listed() {
    use std::os::unix::ffi::OsStrExt;
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    std::fs::write(rig.path("bin"), b"ab\0cd\n").unwrap();
    std::fs::write(rig.path("latin1"), b"caf\xe9\n").unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"odd-\xff-name");
    std::fs::write(rig.root().join(odd), "x\n").unwrap();
    for p in ["bin", "latin1"] {
        let text = refused(&rig, "read_file", json!({"path": p}), outside.path()).await;
        assert!(
            text.contains("binary") || text.contains("not UTF-8"),
            "{p}: {text}"
        );
        refused(
            &rig,
            "apply_diff",
            json!({"path": p, "diff": "<<<<<<< SEARCH\nab\n=======\nxy\n>>>>>>> REPLACE\n"}),
            outside.path(),
        )
        .await;
    }
    assert_eq!(std::fs::read(rig.path("latin1")).unwrap(), b"caf\xe9\n");
    let (text, is_error) = rig.call("list_files", json!({"path": "."})).await;
    assert!(!is_error && text.contains("odd-"), "{text}");
    rig.stop().await;
}

#[tokio::test]
async fn item_34_pathological_patterns_end_fast_or_are_refused() {
    let (mut rig, _o) = rig().await;
    rig.open_session().await;
    std::fs::write(rig.path("a.txt"), format!("{}b\n", "a".repeat(50_000))).unwrap();
    // Bounded: a backtracking engine would not end on these.
    let calls = async {
        let (text, _) = rig
            .call("search_files", json!({"path": ".", "regex": "(a+)+$"}))
            .await;
        assert!(!text.is_empty());
        let (_, is_error) = rig
            .call(
                "search_files",
                json!({"path": ".", "regex": "x".repeat(100_000) + "(", }),
            )
            .await;
        assert!(is_error, "an invalid 100 KB pattern is an error");
        let (text, is_error) = rig
            .call(
                "search_files",
                json!({"path": ".", "regex": r"\p{L}{1000}{1000}"}),
            )
            .await;
        assert!(
            is_error,
            "an over-large compiled pattern is refused: {text}"
        );
    };
    tokio::time::timeout(Duration::from_secs(60), calls)
        .await
        .expect("a pathological pattern did not end");
    rig.stop().await;
}

#[tokio::test]
async fn item_35_a_huge_deep_tree_is_listed_capped() {
    let (mut rig, _o) = rig().await;
    rig.open_session().await;
    let big = rig.path("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..20_000 {
        std::fs::write(big.join(format!("f{i:05}")), "").unwrap();
    }
    let mut deep = rig.path("deep");
    for _ in 0..200 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    let (text, is_error) = rig
        .call("list_files", json!({"path": ".", "recursive": true}))
        .await;
    assert!(!is_error, "{text}");
    assert!(
        text.lines().count() <= 502,
        "{} lines",
        text.lines().count()
    );
    assert!(
        text.contains("500"),
        "the cap is said: {}",
        text.lines().last().unwrap()
    );
    let (text, is_error) = rig.call("list_files", json!({"path": "big"})).await;
    assert!(!is_error && text.lines().count() <= 502);
    rig.stop().await;
}

#[tokio::test]
async fn item_37_a_command_is_confined_scrubbed_and_bounded() {
    // Approval, cwd confinement, the environment, the process group and
    // the time limit are attacked in `reviewed.rs`
    // (`a_command_outside_the_workspace_is_refused_before_asking`,
    // `a_command_past_its_time_limit_…`, `a_cancelled_command_…`) and
    // `tools_server.rs` (ccbridge's variables and both tokens absent from
    // `env`). Here: stdin is closed, and the output kept is bounded.
    let (mut rig, _o) = rig().await;
    rig.open_session().await;
    let (text, is_error) = rig
        .call(
            "execute_command",
            json!({"command": "cat; head -c 5000000 /dev/zero | tr '\\0' a", "timeout_secs": 60}),
        )
        .await;
    assert!(!is_error, "{text}");
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["exit_code"], 0, "cat got end-of-file at once: {r}");
    assert!(r["output"].as_str().unwrap().len() < 100_000, "capped");
    assert!(r["output_left_out_bytes"].as_u64().unwrap() > 4_000_000);
    rig.stop().await;
}

#[tokio::test]
async fn item_38_bad_arguments_are_errors_not_panics() {
    let (mut rig, _o) = rig().await;
    rig.open_session().await;
    let cases = [
        ("read_file", json!({})),
        ("read_file", json!({"path": 5})),
        ("read_file", json!({"path": "hello.py", "offset": -1})),
        ("read_file", json!({"path": "hello.py", "limit": "all"})),
        ("write_file", json!({"path": "x"})),
        ("execute_command", json!({"command": ["ls"]})),
        ("apply_diff", json!(null)),
    ];
    for (name, args) in cases {
        let a = rig.call_later(name, args.clone()).await.unwrap();
        let m = a.message();
        let is_error = m["result"]["isError"] == true || m["error"]["code"] == -32602;
        assert!(is_error, "{name} {args}: {m}");
    }
    let a = rig.call_later("no_such_tool", json!({})).await.unwrap();
    let m = a.message();
    assert!(
        m["error"]["code"] == -32602 || m["result"]["isError"] == true,
        "{m}"
    );
    // Still serving.
    let (text, is_error) = rig.call("read_file", json!({"path": "hello.py"})).await;
    assert!(!is_error, "{text}");
    rig.stop().await;
}

/// Several workspace folders at once: each is a confinement of its own.
/// A relative path means the first folder; an absolute one may name any
/// folder; nothing reaches between them by `..` or a symbolic link, nor
/// the folder around them, nor a sibling whose name extends one of theirs.
#[tokio::test]
async fn several_folders_are_each_confined_and_reached_only_by_their_own_paths() {
    let (mut rig, outside) = rig().await;
    let root = rig.path("");
    let (a, b, evil) = (root.join("a"), root.join("b"), root.join("a-evil"));
    for d in [&a, &b, &evil] {
        std::fs::create_dir(d).unwrap();
    }
    std::fs::write(a.join("x.txt"), "in a\n").unwrap();
    std::fs::write(b.join("y.txt"), "in b\n").unwrap();
    std::fs::write(evil.join("z.txt"), "sibling\n").unwrap();
    std::os::unix::fs::symlink("../b/y.txt", a.join("to-b")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("passwd"), b.join("out")).unwrap();
    rig.ctx.set_workspace(std::sync::Arc::new(
        ccbridge_workspace::Workspace::open(&[a.clone(), b.clone()]).unwrap(),
    ));
    rig.open_session().await;

    let (text, is_error) = rig.call("read_file", json!({"path": "x.txt"})).await;
    assert!(
        !is_error && text.contains("in a"),
        "relative means the first folder: {text}"
    );
    let y = b.join("y.txt").display().to_string();
    let (text, is_error) = rig.call("read_file", json!({"path": y})).await;
    assert!(!is_error && text.contains("in b"), "{text}");
    for path in [
        "../b/y.txt".to_owned(),
        "to-b".to_owned(),
        b.join("out").display().to_string(),
        root.join("hello.py").display().to_string(),
        evil.join("z.txt").display().to_string(),
    ] {
        let text = refused(&rig, "read_file", json!({ "path": path }), outside.path()).await;
        assert!(
            !text.contains("in b") && !text.contains("sibling"),
            "{path}: {text}"
        );
    }
    let (text, is_error) = rig
        .call("list_files", json!({"path": b.display().to_string()}))
        .await;
    assert!(!is_error && text.contains("y.txt"), "{text}");
    refused(
        &rig,
        "list_files",
        json!({"path": evil.display().to_string()}),
        outside.path(),
    )
    .await;
    refused(
        &rig,
        "search_files",
        json!({"regex": "sibling", "path": evil.display().to_string()}),
        outside.path(),
    )
    .await;

    // Writes: into the second folder by its absolute path, never through
    // a link out of the first or into the sibling.
    let new = b.join("new.txt").display().to_string();
    let (text, is_error) = rig
        .call("write_file", json!({"path": new, "content": "landed\n"}))
        .await;
    assert!(!is_error, "{text}");
    assert_eq!(
        std::fs::read_to_string(b.join("new.txt")).unwrap(),
        "landed\n"
    );
    refused(
        &rig,
        "write_file",
        json!({"path": "to-b", "content": "x\n"}),
        outside.path(),
    )
    .await;
    refused(
        &rig,
        "write_file",
        json!({"path": evil.join("w.txt").display().to_string(), "content": "x\n"}),
        outside.path(),
    )
    .await;
    assert_eq!(std::fs::read_to_string(b.join("y.txt")).unwrap(), "in b\n");
    assert!(!evil.join("w.txt").exists());
    canary_intact(outside.path());
    rig.stop().await;
}

/// Well-formed requests to mutate: calls in a session and stateless ones
/// (rmcp's path and `Direct`'s), a notification, an `initialize`.
fn well_formed(port: u16, session: &str) -> Vec<Request> {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"}});
    let calls = [
        (
            "read_file",
            json!({"path": "hello.py", "start_line": 1, "end_line": 2}),
        ),
        ("list_files", json!({"path": ".", "recursive": true})),
        (
            "search_files",
            json!({"path": ".", "regex": "gr(e+)t", "file_pattern": "*.py"}),
        ),
        ("write_file", json!({"path": "fz/a.txt", "content": "x\n"})),
        (
            "apply_diff",
            json!({"path": "hello.py",
            "diff": "<<<<<<< SEARCH\ndef greet\n=======\ndef greet\n>>>>>>> REPLACE"}),
        ),
        ("get_diagnostics", json!({})),
    ];
    let post = |extra: &str, body: &Value| Request::post(port, TOKEN, "/mcp", extra, body);
    let mut out = Vec::new();
    for (i, (name, args)) in calls.iter().enumerate() {
        let id = 9000 + i;
        out.push(post(
            &format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"),
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": args}}),
        ));
        out.push(post(
            &format!(
                "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
            ),
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": args, "_meta": meta}}),
        ));
    }
    out.push(post(
        &format!("Mcp-Session-Id: {session}\r\n"),
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 9000}}),
    ));
    out.push(post("", &serde_json::from_str(INIT).unwrap()));
    out
}

/// Checklist item 25 over HTTP (`ccbridge_testkit::mutations`): 3,000
/// mutations of well-formed requests, paths into the canary folder among
/// the values put in. Each is answered or closed within 10 s and none
/// with the canary's text, nothing outside the workspace changes, and the
/// server serves a good call afterwards.
#[tokio::test]
async fn item_25_mutated_requests_over_http_are_answered_and_reach_nothing_outside() {
    let (mut rig, outside) = rig().await;
    rig.open_session().await;
    let requests = well_formed(rig.port, rig.session_id());
    let port = rig.port;
    let aims = mutations::paths_to(&outside.path().join("passwd"));
    let ended = tokio::task::spawn_blocking(move || {
        mutations::attack(&mutations::Attack {
            port,
            requests: &requests,
            aims: &aims,
            secret: b"root:x:0:0",
            count: 3000,
            seed: 0x5eed_ccb1_d6e5,
        })
    })
    .await
    .unwrap();
    // The mutations reach the MCP layer, not only the HTTP parser.
    let served = ended.get(&Ended::Status(200)).copied().unwrap_or(0);
    assert!(
        served >= 300,
        "only {served} of 3,000 were served: {ended:?}"
    );
    canary_intact(outside.path());
    rig.open_session().await;
    let (text, is_error) = rig.call("read_file", json!({"path": "hello.py"})).await;
    assert!(!is_error, "the server stopped serving: {text}");
    rig.stop().await;
}
