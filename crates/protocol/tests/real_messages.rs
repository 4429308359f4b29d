//! Round trips of the messages the real client (Claude Code 2.1.328) sends
//! and expects, as captured from it.

use ccbridge_protocol::editor::{Position, Range, Selection};
use ccbridge_protocol::jsonrpc::{Message, RequestId, Response};
use ccbridge_protocol::lockfile::LockFile;
use ccbridge_protocol::mcp::{negotiate_version, CallToolParams, CallToolResult, InitializeParams};
use ccbridge_protocol::notifications::{AtMentioned, IdeConnected, SelectionChanged};
use ccbridge_protocol::tools::{self, GetDiagnosticsArgs, OpenDiffArgs, Tool};
use serde_json::{json, Value};

fn request(text: &str) -> ccbridge_protocol::jsonrpc::Request {
    match Message::parse(text).expect("parses") {
        Message::Request(r) => r,
        other => panic!("not a request: {other:?}"),
    }
}

#[test]
fn initialize_from_the_live_capture() {
    let r = request(
        r#"{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"clientInfo":{"name":"claude-code","title":"Claude Code","version":"2.1.328","description":"Anthropic's agentic coding tool","websiteUrl":"https://claude.com/claude-code"}},"jsonrpc":"2.0","id":0}"#,
    );
    assert_eq!(r.id, RequestId::Number(0));
    let p: InitializeParams = r.params().unwrap();
    assert_eq!(p.client_info.unwrap().version, "2.1.328");
    assert_eq!(
        negotiate_version(p.protocol_version.as_deref()),
        "2025-11-25"
    );
}

#[test]
fn ide_connected_carries_the_cli_pid() {
    let m = Message::parse(r#"{"method":"ide_connected","params":{"pid":20798},"jsonrpc":"2.0"}"#)
        .unwrap();
    let Message::Notification(n) = m else {
        panic!()
    };
    assert_eq!(n.params::<IdeConnected>().unwrap().pid, Some(20798));
}

#[test]
fn close_all_diff_tabs_at_each_prompt() {
    let r = request(
        r#"{"method":"tools/call","params":{"name":"closeAllDiffTabs","arguments":{},"_meta":{"progressToken":2}},"jsonrpc":"2.0","id":2}"#,
    );
    let p: CallToolParams = r.params().unwrap();
    assert_eq!(Tool::from_name(&p.name), Some(Tool::CloseAllDiffTabs));
    let answer = Response::ok(
        r.id,
        CallToolResult::text(tools::closed_diff_tabs(0)).to_value(),
    );
    assert_eq!(
        Message::parse(&answer.to_json()).unwrap(),
        Message::Response(answer.clone())
    );
    assert_eq!(
        answer.to_value()["result"]["content"][0]["text"],
        "CLOSED_0_DIFF_TABS"
    );
}

#[test]
fn get_diagnostics_model_call_and_baseline_call() {
    let r = request(
        r#"{"method":"tools/call","params":{"name":"getDiagnostics","arguments":{},"_meta":{"claudecode/toolUseId":"toolu_01","progressToken":3}},"jsonrpc":"2.0","id":3}"#,
    );
    let p: CallToolParams = r.params().unwrap();
    let a: GetDiagnosticsArgs = p.arguments.unwrap().parse().unwrap();
    assert_eq!(a.uri, None);
    let r = request(
        r#"{"method":"tools/call","params":{"name":"getDiagnostics","arguments":{"uri":"file:///tmp/w/hello.py"}},"jsonrpc":"2.0","id":9}"#,
    );
    let p: CallToolParams = r.params().unwrap();
    let a: GetDiagnosticsArgs = p.arguments.unwrap().parse().unwrap();
    assert_eq!(a.uri.as_deref(), Some("file:///tmp/w/hello.py"));
}

#[test]
fn open_diff_and_its_answers() {
    let r = request(
        r#"{"method":"tools/call","params":{"name":"openDiff","arguments":{"old_file_path":"/tmp/w/hello.py","new_file_path":"/tmp/w/hello.py","new_file_contents":"print(2)\n","tab_name":"✻ [Claude Code] hello.py (65ade6) ⧉"}},"jsonrpc":"2.0","id":5}"#,
    );
    let p: CallToolParams = r.params().unwrap();
    let a: OpenDiffArgs = p.arguments.unwrap().parse().unwrap();
    assert_eq!(a.new_file_contents, "print(2)\n");
    // The client needs [0] == FILE_SAVED and [1] a string.
    let saved = tools::file_saved("print(3)\n").to_value();
    assert_eq!(saved["content"][0]["text"], "FILE_SAVED");
    assert_eq!(saved["content"][1]["text"], "print(3)\n");
    assert!(saved.get("structuredContent").is_none());
    let rejected = tools::diff_rejected(&a.tab_name).to_value();
    assert_eq!(rejected["content"][0]["text"], "DIFF_REJECTED");
    let close = request(
        r#"{"method":"tools/call","params":{"name":"close_tab","arguments":{"tab_name":"✻ [Claude Code] hello.py (65ade6) ⧉"}},"jsonrpc":"2.0","id":6}"#,
    );
    let p: CallToolParams = close.params().unwrap();
    assert_eq!(p.arguments.unwrap().to_value()["tab_name"], a.tab_name);
}

#[test]
fn selection_changed_three_lines_selected() {
    // 0-based lines 1-3 with end.character > 0: the prompt shows "3 lines selected".
    let s = Selection {
        file_path: "/tmp/w/hello.py".into(),
        text: "b\nc\nd".into(),
        range: Range::new(Position::new(1, 0), Position::new(3, 1)),
    };
    let v = Message::from(SelectionChanged::from(&s).into_notification()).to_value();
    let sel = &v["params"]["selection"];
    let line_count = sel["end"]["line"].as_u64().unwrap() - sel["start"]["line"].as_u64().unwrap()
        + 1
        - u64::from(sel["end"]["character"] == 0);
    assert_eq!(line_count, 3);
    assert_eq!(v["params"]["filePath"], "/tmp/w/hello.py");
}

#[test]
fn at_mentioned_lines_one_to_three() {
    let v: Value = Message::from(
        AtMentioned {
            file_path: "/tmp/w/hello.py".into(),
            line_start: Some(1),
            line_end: Some(3),
        }
        .into_notification(),
    )
    .to_value();
    assert_eq!(
        v,
        json!({"jsonrpc":"2.0","method":"at_mentioned","params":{"filePath":"/tmp/w/hello.py","lineStart":1,"lineEnd":3}})
    );
}

#[test]
fn lock_file_fields_the_client_reads() {
    let l = LockFile::new(4242, vec!["/tmp/w".into()], "RefIDE".into(), "t".repeat(64));
    let v: Value = serde_json::from_str(&l.to_json()).unwrap();
    assert_eq!(v["transport"], "ws", "anything else selects SSE");
    assert_eq!(v["runningInWindows"], false);
    assert!(v["workspaceFolders"].is_array());
}
