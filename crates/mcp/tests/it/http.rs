//! The tools server over real sockets: every refusal before MCP sees a
//! request, then an MCP session (initialize, tools/list, tools/call) as a
//! client drives it, then a clean shutdown.

use crate::support::{start, INIT, TOKEN};
use ccbridge_mcp::{Settings, ToolsServer};
use ccbridge_workspace::Workspace;
use serde_json::{json, Value};
use std::sync::Arc;

/// What a request is, the headers that make it so, the status it gets.
type Case = (&'static str, &'static [(&'static str, &'static str)], u16);

#[tokio::test]
async fn requests_are_refused_before_mcp_sees_them() {
    let rig = start().await;
    let cases: [Case; 7] = [
        ("no token", &[("Authorization", "")], 401),
        ("wrong token", &[("Authorization", "Bearer nope")], 401),
        (
            "basic auth",
            &[("Authorization", "Basic dXNlcjpwYXNz")],
            401,
        ),
        (
            "foreign Host (DNS rebinding)",
            &[("Host", "evil.example")],
            403,
        ),
        (
            "a page on another site",
            &[("Origin", "http://evil.example:3000")],
            403,
        ),
        (
            "foreign Host without a token",
            &[("Host", "evil.example"), ("Authorization", "")],
            403,
        ),
        ("null Origin", &[("Origin", "null")], 403),
    ];
    for (what, headers, want) in cases {
        let a = rig.post("/mcp", headers, INIT).await;
        assert_eq!(a.status, want, "{what}: {}", a.head);
        assert!(a.header("mcp-session-id").is_none(), "{what} got a session");
        if want == 401 {
            assert_eq!(
                a.header("www-authenticate").as_deref(),
                Some("Bearer realm=\"ccbridge\""),
                "{what}"
            );
        }
    }
    // The right token in the URL is refused too.
    let a = rig
        .post(
            &format!("/mcp?token={TOKEN}"),
            &[("Authorization", "")],
            INIT,
        )
        .await;
    assert_eq!(a.status, 401, "{}", a.head);
    // A body over 4 MiB.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#,
        "a".repeat(5 << 20)
    );
    let a = rig.post("/mcp", &[], &big).await;
    assert_eq!(a.status, 413, "{}", a.head);
    rig.stop().await;
}

#[tokio::test]
async fn a_session_lists_and_calls_the_tools() {
    let rig = start().await;
    let init = rig.post("/mcp", &[], INIT).await;
    assert_eq!(init.status, 200, "{}\n{}", init.head, init.body);
    // regression: an SSE priming event (empty data) broke Gemini CLI's MCP client.
    init.assert_every_event_is_json();
    let session = init.header("mcp-session-id").expect("a session id");
    let result = &init.message()["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(result["serverInfo"]["name"], "ccbridge-tools");
    let s = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let a = rig
        .post(
            "/mcp",
            &s,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
    assert_eq!(a.status, 202, "{}", a.head);

    let list = rig
        .post(
            "/mcp",
            &s,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        )
        .await;
    list.assert_every_event_is_json();
    let list = list.message();
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for want in ["read_file", "list_files", "search_files", "get_diagnostics"] {
        assert!(names.contains(&want), "{names:?}");
    }
    let read = tools.iter().find(|t| t["name"] == "read_file").unwrap();
    assert!(
        read["description"].as_str().unwrap().contains("line"),
        "{read}"
    );
    assert_eq!(read["inputSchema"]["required"], json!(["path"]), "{read}");
    assert!(
        read["inputSchema"]["properties"]["offset"]["description"].is_string(),
        "{read}"
    );

    let call = |name: &str, args: Value| {
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name": name, "arguments": args}}).to_string()
    };
    let r = rig
        .post("/mcp", &s, &call("read_file", json!({"path": "hello.py"})))
        .await
        .message();
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("1 | print('hi')\n2 | print('bye')\n"),
        "{text}"
    );
    assert!(text.contains("2 lines in the file"), "{text}");
    assert_ne!(r["result"]["isError"], true);

    let r = rig
        .post(
            "/mcp",
            &s,
            &call("read_file", json!({"path": "../../etc/passwd"})),
        )
        .await
        .message();
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(!r.to_string().contains("root:"), "{r}");

    let r = rig
        .post(
            "/mcp",
            &s,
            &call("search_files", json!({"path": ".", "regex": "bye"})),
        )
        .await
        .message();
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("hello.py\n1-print('hi')\n2:print('bye')"),
        "{text}"
    );

    let r = rig
        .post("/mcp", &s, &call("list_files", json!({"path": "."})))
        .await
        .message();
    assert_eq!(r["result"]["content"][0]["text"], "hello.py\n");

    let r = rig
        .post("/mcp", &s, &call("get_diagnostics", json!({})))
        .await
        .message();
    assert_eq!(r["result"]["content"][0]["text"], "No diagnostics.\n");

    let r = rig
        .post(
            "/mcp",
            &s,
            &call("get_diagnostics", json!({"severity": "catastrophic"})),
        )
        .await
        .message();
    assert_eq!(r["result"]["isError"], true, "{r}");

    // A session id the server never gave.
    let a = rig
        .post(
            "/mcp",
            &[("Mcp-Session-Id", "made-up")],
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#,
        )
        .await;
    assert_eq!(a.status, 404, "{}", a.head);
    rig.stop().await;
}

#[tokio::test]
async fn a_taken_port_falls_back_to_an_os_assigned_one() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::open(&[dir.path().to_path_buf()]).unwrap());
    let rig = start().await;
    let server = ToolsServer::bind(
        Some(port),
        TOKEN,
        ws,
        rig.editor.clone(),
        Settings::default(),
    )
    .await
    .unwrap();
    assert_ne!(server.port(), port);
    assert_ne!(server.port(), 0);
}
