//! The MCP lifecycle as the real client drives it: `initialize` →
//! `notifications/initialized` → `ide_connected {pid}` → `tools/list`, and
//! the JSON-RPC errors around it.

use crate::support::*;
use ccbridge_server::{Capabilities, DiffDecision, EditorEvent};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;

const ALL_TOOLS_BUT_EXECUTE: [&str; 14] = [
    "openFile",
    "openDiff",
    "getCurrentSelection",
    "getLatestSelection",
    "getOpenEditors",
    "getWorkspaceFolders",
    "getDiagnostics",
    "checkDocumentDirty",
    "saveDocument",
    "close_tab",
    "closeAllDiffTabs",
    "open_files",
    "get_all_opened_file_paths",
    "reformat_file",
];

fn names(tools: &[Value]) -> BTreeSet<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().expect("tool name").to_owned())
        .collect()
}

#[tokio::test]
async fn the_real_clients_opening_sequence() {
    let s = TestServer::start().await;
    let mut c = s.connect().await;
    let init = c.initialize("2025-11-25").await;
    assert_eq!(init["id"], 0);
    let r = &init["result"];
    assert_eq!(r["protocolVersion"], "2025-11-25", "{init}");
    let caps: Vec<&String> = r["capabilities"]
        .as_object()
        .expect("capabilities")
        .keys()
        .collect();
    assert_eq!(caps, vec!["tools"], "only the tools capability: {init}");
    assert_eq!(r["serverInfo"]["name"], "ccbridge");
    assert!(r["serverInfo"]["version"].is_string());
    assert!(
        r.get("instructions").is_none(),
        "instructions reach the model: {init}"
    );

    c.notify("notifications/initialized", json!({})).await;
    c.notify("ide_connected", json!({"pid": CLI_PID})).await;
    let list = c.request("tools/list", json!({})).await;
    assert_eq!(list["id"], 1);
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    let expected: BTreeSet<String> = ALL_TOOLS_BUT_EXECUTE
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names(&tools), expected);
    for t in &tools {
        let d = t["description"].as_str().unwrap_or("");
        assert!(!d.is_empty() && d.len() <= 4096, "description of {t}");
        assert_eq!(t["inputSchema"]["type"], "object", "inputSchema of {t}");
        assert!(t.get("outputSchema").is_none(), "{t}");
    }

    // Notifications are handled in order before the later request, so the
    // session is registered with the CLI's pid by now.
    let clients = s.handle.clients();
    assert_eq!(clients.len(), 1, "{clients:?}");
    assert_eq!(clients[0].name, "claude-code");
    assert_eq!(clients[0].version, "2.1.328");
    assert_eq!(clients[0].pid, Some(CLI_PID));
    assert_eq!(
        s.frontend
            .count(|c| matches!(c, Call::ClientConnected(i) if i.name == "claude-code")),
        1
    );
}

#[tokio::test]
async fn protocol_version_negotiation() {
    let s = TestServer::start().await;
    for (asked, answered) in [
        (Some("2025-11-25"), "2025-11-25"),
        (Some("2025-06-18"), "2025-06-18"),
        (Some("2025-03-26"), "2025-03-26"),
        (Some("2024-11-05"), "2024-11-05"),
        (Some("2026-07-28"), "2025-11-25"),
        (Some("1999-01-01"), "2025-11-25"),
        (Some("garbage"), "2025-11-25"),
        (None, "2025-11-25"),
    ] {
        let mut c = s.connect().await;
        let mut params = real_initialize_params("x");
        match asked {
            Some(v) => params["protocolVersion"] = json!(v),
            None => {
                params.as_object_mut().unwrap().remove("protocolVersion");
            }
        }
        let r = c.request("initialize", params).await;
        assert_eq!(
            r["result"]["protocolVersion"], answered,
            "asked {asked:?}: {r}"
        );
    }
}

#[tokio::test]
async fn ping_answers_an_empty_object_before_and_after_initialize() {
    let s = TestServer::start().await;
    let mut c = s.connect().await;
    let r = c.request("ping", json!({})).await;
    assert_eq!(r["result"], json!({}), "{r}");
    // Without params at all, as the MCP SDKs send it.
    c.send_raw(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
        .await;
    let r = c.expect("the ping answer", |m| m["id"] == "p").await;
    assert_eq!(r["result"], json!({}), "{r}");
    c.handshake().await;
    let r = c.request("ping", json!({})).await;
    assert_eq!(r["result"], json!({}), "{r}");
}

#[tokio::test]
async fn execute_code_is_listed_only_with_the_capability() {
    // Without it: not listed, and calling it is an unknown tool.
    let s = TestServer::start().await;
    let mut c = s.connect().await;
    let tools = c.handshake().await;
    assert!(!names(&tools).contains("executeCode"));
    let r = c
        .request(
            "tools/call",
            json!({"name":"executeCode","arguments":{"code":"1+1"}}),
        )
        .await;
    assert_eq!(error_code(&r), -32602, "{r}");
    assert_eq!(
        s.frontend.count(|c| matches!(c, Call::ConfirmExecute(_))),
        0
    );

    // With it: listed, with a description and a schema requiring `code`.
    let s = TestServer::start_with(FakeFrontend::with_caps(Capabilities::all()), |_| {}).await;
    let mut c = s.connect().await;
    let tools = c.handshake().await;
    let exec = tools
        .iter()
        .find(|t| t["name"] == "executeCode")
        .expect("executeCode listed");
    assert!(!exec["description"].as_str().unwrap().is_empty());
    assert_eq!(exec["inputSchema"]["required"], json!(["code"]));
    assert_eq!(names(&tools).len(), 15);
}

#[tokio::test]
async fn unknown_methods_are_32601() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    for m in [
        "no/such/method",
        "resources/list",
        "prompts/list",
        "completion/complete",
    ] {
        let r = c.request(m, json!({})).await;
        assert_eq!(error_code(&r), -32601, "{m}: {r}");
        assert_eq!(r["error"]["data"], m, "{r}");
    }
    // An unknown notification gets no answer at all, and breaks nothing.
    c.notify("no/such/notification", json!({})).await;
    let r = c.request("ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    assert!(c
        .collect(|m| m.get("id").is_none(), Duration::ZERO)
        .await
        .is_empty());
}

#[tokio::test]
async fn requests_before_initialize_are_32002_except_ping() {
    let s = TestServer::start().await;
    let mut c = s.connect().await;
    // Notifications before initialize are ignored, not answered.
    c.notify("ide_connected", json!({"pid": 1})).await;
    for (m, p) in [
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name":"getDiagnostics","arguments":{}}),
        ),
        ("no/such/method", json!({})),
    ] {
        let r = c.request(m, p).await;
        assert_eq!(error_code(&r), -32002, "{m}: {r}");
    }
    let r = c.request("ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    assert!(
        s.handle.clients().is_empty(),
        "not a session before initialize"
    );
    // Initialize still works afterwards.
    let r = c.initialize("2025-11-25").await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    let r = c.request("tools/list", json!({})).await;
    assert!(r["result"]["tools"].is_array(), "{r}");
}

#[tokio::test]
async fn a_second_initialize_is_an_error_and_the_session_survives() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let r = c.initialize("2025-11-25").await;
    assert_eq!(error_code(&r), -32600, "{r}");
    assert!(r.get("result").is_none());
    let r = c.request("ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    assert_eq!(s.handle.clients().len(), 1);
    assert!(c.closed().is_none());
}

#[tokio::test]
async fn malformed_json_is_32700_with_null_id_and_the_connection_stays_up() {
    let s = TestServer::start().await;
    let mut c = s.connect().await;
    for garbage in [
        "{not json",
        "",
        "\u{0}\u{1}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,",
        "nul",
    ] {
        c.send_raw(garbage).await;
        let r = c
            .expect("a parse error", |m| m.get("error").is_some())
            .await;
        assert_eq!(error_code(&r), -32700, "{garbage:?}: {r}");
        assert!(r["id"].is_null(), "{r}");
        assert_eq!(r["jsonrpc"], "2.0");
        let p = c.request("ping", json!({})).await;
        assert_eq!(p["result"], json!({}), "after {garbage:?}");
    }
    c.handshake().await;
    c.send_raw("]]]").await;
    let r = c
        .expect("a parse error", |m| m.get("error").is_some())
        .await;
    assert_eq!(error_code(&r), -32700);
    assert!(c.closed().is_none());
}

#[tokio::test]
async fn unknown_tool_and_bad_call_params_are_32602() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let r = c
        .request(
            "tools/call",
            json!({"name":"readFile","arguments":{"path":"/etc/passwd"}}),
        )
        .await;
    assert_eq!(error_code(&r), -32602, "{r}");
    for params in [
        json!({"arguments":{}}),
        json!({"name": 5}),
        json!(["getDiagnostics"]),
    ] {
        let r = c.request("tools/call", params.clone()).await;
        assert_eq!(error_code(&r), -32602, "{params}: {r}");
    }
    // A struct must not be read from an array by position.
    let mut fresh = s.connect().await;
    let r = fresh.request("initialize", json!(["2025-11-25"])).await;
    assert_eq!(error_code(&r), -32602, "{r}");
}

/// No answer anywhere carries `structuredContent`: the client could replace
/// the content with it and then fail to read FILE_SAVED or diagnostics.
#[tokio::test]
async fn no_structured_content_anywhere() {
    let fe = FakeFrontend::with_caps(Capabilities::all());
    fe.script(|a| a.confirm_execute = Ok(true));
    let s = TestServer::start_with(fe, |_| {}).await;
    let mut c = s.connect().await;
    let init = c.initialize("2025-11-25").await;
    assert!(!init.to_string().contains("structuredContent"));
    let tools = rest_of_handshake(&mut c).await;
    assert!(!Value::Array(tools.clone())
        .to_string()
        .contains("outputSchema"));

    let diff_id = c
        .start_tool(
            "openDiff",
            json!({"old_file_path":"/nonexistent/a.py","new_file_path":"/nonexistent/a.py",
                   "new_file_contents":"x\n","tab_name":"t1"}),
        )
        .await;
    let view = s.frontend.wait_show_diff("t1").await;
    s.send(EditorEvent::DiffResolved {
        id: view.id,
        decision: DiffDecision::Accepted { contents: None },
    })
    .await;
    let diff = c.response(diff_id).await;
    assert_eq!(texts(&diff["result"]), vec!["FILE_SAVED", "x\n"]);

    let calls = [
        ("getCurrentSelection", json!({})),
        ("getLatestSelection", json!({})),
        ("getOpenEditors", json!({})),
        ("getWorkspaceFolders", json!({})),
        ("getDiagnostics", json!({})),
        ("getDiagnostics", json!({"uri":"file:///x"})),
        ("checkDocumentDirty", json!({"filePath":"/x"})),
        ("saveDocument", json!({"filePath":"/x"})),
        ("close_tab", json!({"tab_name":"t1"})),
        ("closeAllDiffTabs", json!({})),
        ("openFile", json!({"filePath":"/x"})),
        ("openFile", json!({"filePath":"/x","makeFrontmost":false})),
        ("open_files", json!({"file_paths":["/x"]})),
        ("get_all_opened_file_paths", json!({})),
        ("reformat_file", json!({"file_path":"/x"})),
        ("executeCode", json!({"code":"1"})),
        ("openFile", json!({})),
    ];
    let listed = names(&tools);
    let called: BTreeSet<String> = calls.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        listed,
        called
            .union(&["openDiff".to_string()].into())
            .cloned()
            .collect()
    );
    for (name, args) in calls {
        let r = c.call_tool(name, args).await;
        assert!(r["content"].is_array(), "{name}: {r}");
        assert!(r.get("structuredContent").is_none(), "{name}: {r}");
    }
}

/// The rest of the real client's opening after `initialize`.
async fn rest_of_handshake(c: &mut WsClient) -> Vec<Value> {
    c.notify("notifications/initialized", json!({})).await;
    c.notify("ide_connected", json!({"pid": CLI_PID})).await;
    let list = c.request("tools/list", json!({})).await;
    list["result"]["tools"].as_array().expect("tools").clone()
}

/// Regression (found by the Autobahn cases, docs/websocket-conformance.md):
/// when Claude closed the connection, the server dropped the socket without
/// sending the close frame tungstenite had queued in answer, so every close
/// Claude started ended unclean (a reset instead of the closing handshake).
#[tokio::test]
async fn a_close_from_claude_is_answered_with_a_close_frame() {
    let mut server = TestServer::start().await;
    let mut c = server.connect().await;
    c.handshake().await;
    c.start_close(1000).await;
    assert_eq!(
        c.wait_closed(WAIT).await,
        Closed::Frame(1000, "done".into())
    );
    server.stop().await.unwrap();
}
