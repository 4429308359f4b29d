//! `ccbridge serve --stdio` serves the workspace tools over MCP beside the
//! IDE server: the editor learns the URL and token from `initialize`, a
//! client with the token gets the tools, one without is refused, and the
//! server stops with the sidecar. `--no-tools` turns it off; a version-1
//! editor is not told about it.

use ccbridge_testkit::claude::Sandbox;
use ccbridge_testkit::editor::{Editor, EditorOptions};
use ccbridge_testkit::http::{post, Answer};
use serde_json::{json, Value};
use std::time::Duration;

const STEP: Duration = Duration::from_secs(10);

fn editor(sandbox: &Sandbox, extra: &[&str]) -> Editor {
    let mut opts = EditorOptions::for_sandbox(env!("CARGO_BIN_EXE_ccbridge"), sandbox, "ToolsTest");
    opts.extra_args = extra.iter().map(|s| s.to_string()).collect();
    Editor::spawn(&opts).expect("spawn ccbridge")
}

fn port_of(url: &str) -> u16 {
    url.trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap_or_else(|_| panic!("not a tools URL: {url}"))
}

fn mcp(port: u16, token: &str, session: Option<&str>, body: Value) -> Answer {
    let auth = format!("Bearer {token}");
    let host = format!("127.0.0.1:{port}");
    let mut h = vec![
        ("Host", host.as_str()),
        ("Authorization", auth.as_str()),
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
    ];
    if let Some(s) = session {
        h.push(("Mcp-Session-Id", s));
        h.push(("MCP-Protocol-Version", "2025-11-25"));
    }
    post(port, "/mcp", &h, &body.to_string(), STEP)
}

#[test]
fn the_sidecar_serves_the_workspace_tools_and_says_where_in_initialize() {
    let sandbox = Sandbox::new().unwrap();
    sandbox.write_file("notes.txt", "alpha\nbeta\n").unwrap();
    let mut ed = editor(&sandbox, &[]);
    let init = ed
        .request(
            "initialize",
            json!({"protocolVersion": 2, "ideName": "ToolsTest"}),
            STEP,
        )
        .unwrap();
    let url = init["tools"]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("no tools in {init}"))
        .to_owned();
    let token = init["tools"]["token"].as_str().unwrap().to_owned();
    assert_eq!(token.len(), 64, "{token}");
    let port = port_of(&url);

    let a = mcp(
        port,
        &token,
        None,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
    );
    assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
    let session = a.header("mcp-session-id").expect("a session");
    let r = mcp(
        port,
        &token,
        Some(&session),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"read_file","arguments":{"path":"notes.txt"}}}),
    )
    .message();
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("1 | alpha\n2 | beta\n"), "{r}");

    // The IDE server's token is not the tools server's.
    let lock = ed.wait_lock_file(STEP).unwrap();
    assert_ne!(lock.auth_token, token);
    let a = mcp(
        port,
        &lock.auth_token,
        None,
        json!({"jsonrpc":"2.0","id":1,"method":"ping"}),
    );
    assert_eq!(a.status, 401, "{}", a.head);

    // The tools server stops with the sidecar.
    ed.close(STEP).unwrap();
    let gone = ccbridge_testkit::poll_until(STEP, Duration::from_millis(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port))
            .is_err()
            .then_some(())
    });
    assert!(gone.is_some(), "the tools server outlived the sidecar");
}

#[test]
fn no_tools_turns_it_off_and_a_version_1_editor_is_not_told() {
    let sandbox = Sandbox::new().unwrap();
    let ed = editor(&sandbox, &["--no-tools"]);
    let init = ed.initialize("ToolsTest", STEP).unwrap();
    assert!(init.get("tools").is_none(), "{init}");

    let ed = editor(&sandbox, &[]);
    let v1 = ed
        .request(
            "initialize",
            json!({"protocolVersion": 1, "ideName": "ToolsTest"}),
            STEP,
        )
        .unwrap();
    assert!(v1.get("tools").is_none(), "{v1}");
    let v2 = ed
        .request("initialize", json!({"protocolVersion": 2}), STEP)
        .unwrap();
    assert!(v2["tools"]["url"].is_string(), "{v2}");
}
