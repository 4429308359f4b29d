//! Tool calls of a 2026-07-28 client, which has no session: each request
//! carries its revision in `_meta` and repeats its method and tool in the
//! `Mcp-Method` and `Mcp-Name` headers. The tools server answers a
//! complete one itself (`ccbridge_http::mcp::direct`) and leaves the rest to
//! rmcp; either way the client must get the same answer.

use crate::support::*;
use ccbridge_testkit::http::Answer;
use serde_json::{json, Value};
use std::io::{Read, Write};

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"test","version":"1"}}"#;

fn stateless_body(id: u64, name: &str, args: &Value) -> String {
    let meta: Value = serde_json::from_str(META).unwrap();
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":name,"arguments":args,"_meta":meta}})
    .to_string()
}

/// `name` in an `Mcp-Name` header as SEP-2243 encodes a value that is not
/// plain ASCII; rmcp decodes it, the direct path leaves such requests to it.
fn base64_name(name: &str) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in name.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    format!("=?base64?{out}?=")
}

impl Rig {
    /// A `tools/call` of `name` as a 2026-07-28 client sends it
    /// (`ccbridge_testkit::http::mcp_post_stateless`), its `Mcp-Name`
    /// header `name_header`.
    async fn stateless(&self, name: &str, name_header: &str, args: Value) -> Answer {
        let body = stateless_body(next_id(), name, &args);
        let (port, name_header) = (self.port, name_header.to_owned());
        tokio::task::spawn_blocking(move || {
            ccbridge_testkit::http::mcp_post_stateless(
                port,
                TOKEN,
                ("tools/call", Some(&name_header)),
                &body,
                WAIT,
            )
        })
        .await
        .unwrap()
    }
}

/// The answer with its id left out (each request has its own).
fn without_id(a: &Answer) -> Value {
    let mut v: Value = serde_json::from_str(&a.body).unwrap_or_else(|e| panic!("{e}: {}", a.body));
    v.as_object_mut().unwrap().remove("id");
    v
}

#[tokio::test]
async fn a_stateless_call_is_answered_with_plain_json() {
    let rig = start().await;
    let file = rig.path("hello.py");
    rig.editor.report(
        json!([{"uri": format!("file://{}", file.display()), "diagnostics": [
        {"message": "undefined name", "severity": "Error",
         "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 5}}}]}]),
    );
    let a = rig
        .stateless("get_diagnostics", "get_diagnostics", json!({}))
        .await;
    assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
    assert_eq!(
        a.header("content-type").as_deref(),
        Some("application/json")
    );
    let m: Value = serde_json::from_str(&a.body).unwrap();
    let text = m["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("hello.py:2 — undefined name"), "{text}");
    assert_eq!(m["result"]["isError"], false);
    rig.stop().await;
}

#[tokio::test]
async fn a_stateless_call_is_answered_as_rmcp_answers_it() {
    let rig = start().await;
    std::fs::write(rig.path("notes.txt"), "one\ntwo\n").unwrap();
    let calls = [
        ("read_file", json!({"path": "hello.py"})),
        ("read_file", json!({"path": "notes.txt", "offset": 2})),
        ("read_file", json!({"path": "../outside"})),
        ("read_file", json!({})),
        ("read_file", json!({"path": 3})),
        ("list_files", json!({"path": "."})),
        ("search_files", json!({"path": ".", "regex": "bye"})),
        ("get_diagnostics", json!({"severity": "nonsense"})),
        ("get_diagnostics", json!({})),
    ];
    for (name, args) in calls {
        let direct = rig.stateless(name, name, args.clone()).await;
        let by_rmcp = rig.stateless(name, &base64_name(name), args.clone()).await;
        let what = format!("{name} {args}");
        assert_eq!(direct.status, 200, "{what}: {}", direct.body);
        assert_eq!(direct.status, by_rmcp.status, "{what}");
        assert_eq!(
            direct.header("content-type"),
            by_rmcp.header("content-type"),
            "{what}"
        );
        assert_eq!(without_id(&direct), without_id(&by_rmcp), "{what}");
    }
    rig.stop().await;
}

#[tokio::test]
async fn refusals_of_stateless_calls_stay_rmcps() {
    let rig = start().await;
    let unknown = rig
        .stateless("no_such_tool", "no_such_tool", json!({}))
        .await;
    let m: Value = serde_json::from_str(&unknown.body).unwrap();
    assert_eq!(m["error"]["message"], "tool not found", "{}", unknown.body);

    let mismatch = rig
        .stateless("read_file", "list_files", json!({"path": "."}))
        .await;
    assert_eq!(mismatch.status, 400, "{}", mismatch.body);
    assert!(
        mismatch.body.contains("does not match"),
        "{}",
        mismatch.body
    );

    // A token is still required: the guard is in front of both paths.
    let body = stateless_body(1, "read_file", &json!({"path": "hello.py"}));
    let no_token = rig
        .post(
            "/mcp",
            &[
                ("Authorization", ""),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "read_file"),
            ],
            &body,
        )
        .await;
    assert_eq!(no_token.status, 401);
    rig.stop().await;
}

/// A client that sends a stateless `write_file` and goes away while the
/// user reviews it: the review closes and the file stays as it was.
#[tokio::test]
async fn a_stateless_write_whose_client_leaves_closes_its_review() {
    let mut rig = start().await;
    let body = stateless_body(
        5,
        "write_file",
        &json!({"path": "hello.py", "content": "new\n"}),
    );
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", rig.port)).unwrap();
    write!(
        sock,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: write_file\r\n\
         Content-Length: {}\r\n\r\n{body}",
        rig.port,
        body.len()
    )
    .unwrap();
    let (proposal, mut answer) = rig.next_review().await;
    assert!(proposal.proposed.contains("new"), "{proposal:?}");
    sock.shutdown(std::net::Shutdown::Both).unwrap();
    let mut rest = Vec::new();
    let _ = sock.read_to_end(&mut rest);
    drop(sock);
    tokio::time::timeout(WAIT, answer.closed())
        .await
        .expect("the review closes when its client leaves");
    assert_eq!(
        std::fs::read_to_string(rig.path("hello.py")).unwrap(),
        "print('hi')\nprint('bye')\n"
    );
    rig.stop().await;
}
