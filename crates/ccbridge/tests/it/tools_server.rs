//! `ccbridge serve --stdio` serves the workspace tools over MCP beside the
//! IDE server: the editor learns the URL and token from `initialize`, a
//! client with the token gets the tools, one without is refused, and the
//! server stops with the sidecar. `--no-tools` turns it off; a version-1
//! editor is not told about it.

use ccbridge_testkit::claude::Sandbox;
use ccbridge_testkit::editor::{Editor, EditorOptions};
use ccbridge_testkit::http::{mcp_post, mcp_session, url_port, Answer};
use serde_json::{json, Value};
use std::time::Duration;

const STEP: Duration = Duration::from_secs(10);

fn editor(sandbox: &Sandbox, extra: &[&str]) -> Editor {
    let mut opts = EditorOptions::for_sandbox(env!("CARGO_BIN_EXE_ccbridge"), sandbox, "ToolsTest");
    opts.extra_args = extra.iter().map(|s| s.to_string()).collect();
    Editor::spawn(&opts).expect("spawn ccbridge")
}

fn mcp(port: u16, token: &str, session: Option<&str>, body: Value) -> Answer {
    mcp_post(port, token, session, &body.to_string(), STEP)
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
    let port = url_port(&url);

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

/// Opens an MCP session; returns its id.
fn session(port: u16, token: &str) -> String {
    mcp_session(port, token, STEP)
}

/// The tools server `initialize` announced, with a session opened on it:
/// (port, token, session id).
fn tools_session(init: &Value) -> (u16, String, String) {
    let port = url_port(init["tools"]["url"].as_str().unwrap());
    let token = init["tools"]["token"].as_str().unwrap().to_owned();
    let s = session(port, &token);
    (port, token, s)
}

/// Starts a tool call on a thread of its own (it waits for the editor);
/// the handle yields the result's text and whether it is an error.
fn call_later(
    port: u16,
    token: &str,
    session: &str,
    id: u64,
    name: &str,
    args: Value,
) -> std::thread::JoinHandle<(String, bool)> {
    let (token, session, name) = (token.to_owned(), session.to_owned(), name.to_owned());
    std::thread::spawn(move || {
        let r = mcp(
            port,
            &token,
            Some(&session),
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name": name,"arguments": args}}),
        )
        .message();
        let text = r["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_owned();
        (text, r["result"]["isError"] == true)
    })
}

#[test]
fn writes_are_reviewed_and_commands_approved_by_the_editor_through_the_sidecar() {
    let sandbox = Sandbox::new().unwrap();
    sandbox.write_file("app.py", "a = 1\nb = 2\n").unwrap();
    let mut opts =
        EditorOptions::for_sandbox(env!("CARGO_BIN_EXE_ccbridge"), &sandbox, "ToolsTest");
    opts.extra_env = vec![
        ("CCBRIDGE_PROBE".into(), "leak".into()),
        ("CLAUDE_CODE_SSE_PORT".into(), "45678".into()),
    ];
    let mut ed = Editor::spawn(&opts).expect("spawn ccbridge");
    let init = ed
        .request(
            "initialize",
            json!({"protocolVersion": 2, "ideName": "ToolsTest",
                   "capabilities": {"diff": true, "approve": true},
                   "approvalMode": "write-only"}),
            STEP,
        )
        .unwrap();
    assert_eq!(init["tools"]["approvalMode"], "write-only", "{init}");
    let (port, token, s) = tools_session(&init);

    // apply_diff → a showDiff request; the user edits and accepts.
    let call = call_later(
        port,
        &token,
        &s,
        2,
        "apply_diff",
        json!({"path": "app.py", "diff": "<<<<<<< SEARCH\nb = 2\n=======\nb = 3\n>>>>>>> REPLACE\n"}),
    );
    let show = ed.expect_request("showDiff", STEP).unwrap();
    let view = &show.params;
    assert_eq!(view["originalContents"], "a = 1\nb = 2\n", "{view}");
    assert_eq!(view["proposedContents"], "a = 1\nb = 3\n", "{view}");
    assert!(view["clientId"].is_null(), "{view}");
    ed.respond(show.id.as_ref().unwrap(), json!(null)).unwrap();
    ed.notify(
        "diffResolved",
        json!({"id": view["id"], "decision": "accepted", "contents": "a = 1\nb = 4\n"}),
    )
    .unwrap();
    let (text, is_error) = call.join().unwrap();
    assert!(!is_error, "{text}");
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["status"], "accepted");
    assert!(r["user_edits"].as_str().unwrap().contains("+b = 4"), "{r}");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("app.py")).unwrap(),
        "a = 1\nb = 4\n"
    );
    // The view is closed once decided.
    let closed = ed.expect_request("closeDiff", STEP).unwrap();
    assert_eq!(closed.params["id"], view["id"]);
    ed.respond(closed.id.as_ref().unwrap(), json!(null))
        .unwrap();

    // execute_command → an `approve` request, then the output as
    // `commandEvent`s; ccbridge's variables do not reach the command.
    let call = call_later(
        port,
        &token,
        &s,
        3,
        "execute_command",
        json!({"command": "echo hi; env"}),
    );
    let ask = ed.expect_request("approve", STEP).unwrap();
    assert_eq!(ask.params["tool"], "execute_command");
    assert_eq!(ask.params["command"], "echo hi; env");
    assert_eq!(ask.params["commandShown"], "echo hi; env");
    assert_eq!(ask.params["hiddenCharacters"], json!([]));
    ed.respond(ask.id.as_ref().unwrap(), json!({"approved": true}))
        .unwrap();
    let (text, is_error) = call.join().unwrap();
    assert!(!is_error, "{text}");
    let r: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["exit_code"], 0);
    let out = r["output"].as_str().unwrap();
    assert!(out.starts_with("hi\n"), "{out}");
    let lock = ed.wait_lock_file(STEP).unwrap();
    for secret in [
        "CCBRIDGE_PROBE",
        "CLAUDE_CODE_SSE_PORT",
        token.as_str(),
        lock.auth_token.as_str(),
    ] {
        assert!(!out.contains(secret), "{secret} reached the command");
    }
    let started = ed.expect_notification("commandEvent", STEP).unwrap();
    assert_eq!(started["event"], "started", "{started}");
    assert_eq!(started["id"], ask.params["id"]);
    assert_eq!(started["commandShown"], "echo hi; env");
    let exited = ed
        .expect("commandEvent", STEP, |m| m.params["event"] == "exited")
        .unwrap();
    assert_eq!(exited.params["exitCode"], 0, "{}", exited.params);

    // A denied command does not run.
    let call = call_later(
        port,
        &token,
        &s,
        4,
        "execute_command",
        json!({"command": "touch ran"}),
    );
    let ask = ed.expect_request("approve", STEP).unwrap();
    ed.respond(ask.id.as_ref().unwrap(), json!({"approved": false}))
        .unwrap();
    let (text, _) = call.join().unwrap();
    assert!(text.contains("\"rejected\""), "{text}");
    assert!(!sandbox.workspace().join("ran").exists());
    ed.close(STEP).unwrap();
}

#[test]
fn an_editor_without_the_approve_capability_gets_no_command_run() {
    let sandbox = Sandbox::new().unwrap();
    let ed = editor(&sandbox, &[]);
    let init = ed
        .request("initialize", json!({"protocolVersion": 2}), STEP)
        .unwrap();
    let (port, token, s) = tools_session(&init);
    let (text, is_error) = call_later(
        port,
        &token,
        &s,
        2,
        "execute_command",
        json!({"command": "touch ran"}),
    )
    .join()
    .unwrap();
    assert!(is_error, "{text}");
    assert!(text.contains("not run"), "{text}");
    assert!(!sandbox.workspace().join("ran").exists());
    assert!(ed.seen("approve").is_empty());
}

#[test]
fn a_review_whose_call_is_cancelled_closes_its_view_and_writes_nothing() {
    let sandbox = Sandbox::new().unwrap();
    let ed = editor(&sandbox, &[]);
    let init = ed
        .request(
            "initialize",
            json!({"protocolVersion": 2, "capabilities": {"diff": true}}),
            STEP,
        )
        .unwrap();
    let (port, token, s) = tools_session(&init);
    let call = call_later(
        port,
        &token,
        &s,
        7,
        "write_file",
        json!({"path": "new.txt", "content": "x\n"}),
    );
    let show = ed.expect_request("showDiff", STEP).unwrap();
    ed.respond(show.id.as_ref().unwrap(), json!(null)).unwrap();
    let a = mcp(
        port,
        &token,
        Some(&s),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": 7}}),
    );
    assert_eq!(a.status, 202, "{}", a.head);
    let closed = ed.expect_request("closeDiff", STEP).unwrap();
    assert_eq!(closed.params["id"], show.params["id"]);
    assert_eq!(closed.params["reason"], "claudeClosed");
    // A late verdict changes nothing.
    ed.notify(
        "diffResolved",
        json!({"id": show.params["id"], "decision": "accepted"}),
    )
    .unwrap();
    drop(call);
    ed.request("status", json!({}), STEP).unwrap();
    assert!(!sandbox.workspace().join("new.txt").exists());
}

fn claude_json(sandbox: &Sandbox) -> Value {
    let text = std::fs::read_to_string(sandbox.config_dir().join(".claude.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn registered(sandbox: &Sandbox) -> Value {
    let ws = sandbox.workspace().canonicalize().unwrap();
    claude_json(sandbox)["projects"][ws.display().to_string()]["mcpServers"]["ccbridge"].clone()
}

#[test]
fn mcp_config_prints_and_registers_the_running_servers_entry_which_goes_on_exit() {
    let sandbox = Sandbox::new().unwrap();
    let mut ed = editor(&sandbox, &[]);
    let init = ed
        .request("initialize", json!({"protocolVersion": 2}), STEP)
        .unwrap();
    let url = init["tools"]["url"].as_str().unwrap().to_owned();
    let token = init["tools"]["token"].as_str().unwrap().to_owned();
    let before = claude_json(&sandbox);
    let mcp_config = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ccbridge"))
            .arg("mcp-config")
            .args(args)
            .current_dir(sandbox.workspace())
            .env("HOME", sandbox.home())
            .env("CLAUDE_CONFIG_DIR", sandbox.config_dir())
            .output()
            .unwrap()
    };
    let out = mcp_config(&["--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = json!({"type": "http", "url": url, "headers": {"Authorization": format!("Bearer {token}")}});
    assert_eq!(printed["mcpServers"]["ccbridge"], want);
    let out = mcp_config(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!(
            "claude mcp add --transport http ccbridge {url} --header \"Authorization: Bearer {token}\"\n"
        )),
        "{text}"
    );
    assert_eq!(claude_json(&sandbox), before, "printing writes nothing");

    let out = mcp_config(&["--register"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(registered(&sandbox), want);
    assert_eq!(
        claude_json(&sandbox)["hasCompletedOnboarding"],
        before["hasCompletedOnboarding"],
        "the rest of the file is kept"
    );
    // Somewhere else, nothing runs.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = mcp_config(&["--workspace", elsewhere.path().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no running ccbridge"));

    ed.close(STEP).unwrap();
    assert!(
        registered(&sandbox).is_null(),
        "the entry went with ccbridge"
    );
}

#[test]
fn register_tools_registers_at_start_and_unregisters_on_exit() {
    let sandbox = Sandbox::new().unwrap();
    let mut ed = editor(&sandbox, &["--register-tools"]);
    let init = ed
        .request("initialize", json!({"protocolVersion": 2}), STEP)
        .unwrap();
    assert_eq!(registered(&sandbox)["url"], init["tools"]["url"]);
    ed.close(STEP).unwrap();
    assert!(registered(&sandbox).is_null());
}

/// Security checklist item 36: the home folder (or `/`) as the workspace
/// would hand the whole of it to an agent; the sidecar's tools serve no
/// folder then, until the editor names a project.
#[test]
fn item_36_a_home_folder_workspace_gets_tools_that_serve_nothing_until_a_project_is_named() {
    let sandbox = Sandbox::new().unwrap();
    std::fs::write(sandbox.home().join(".secret"), "home's own\n").unwrap();
    let mut opts =
        EditorOptions::for_sandbox(env!("CARGO_BIN_EXE_ccbridge"), &sandbox, "ToolsTest");
    opts.workspace = sandbox.home().to_path_buf();
    let ed = Editor::spawn(&opts).expect("spawn ccbridge");
    let init = ed
        .request("initialize", json!({"protocolVersion": 2}), STEP)
        .unwrap();
    assert!(
        ed.log().contains("your home folder"),
        "the log says why: {}",
        ed.log()
    );
    // Served, with no folder: nothing in the home folder is reached.
    let (port, token, s) = tools_session(&init);
    let secret = sandbox.home().join(".secret").display().to_string();
    for (id, path) in [(2, ".secret"), (3, secret.as_str())] {
        let (text, is_error) = call_later(port, &token, &s, id, "read_file", json!({"path": path}))
            .join()
            .unwrap();
        assert!(is_error && !text.contains("home's own"), "{text}");
    }
    // An editor started in the home folder that moves to a project (one
    // launched from a desktop, then opening the project): the tools serve
    // it. They never started at all before.
    sandbox.write_file("notes.txt", "project's own\n").unwrap();
    ed.request(
        "initialize",
        json!({"protocolVersion": 2, "workspaceFolders": [sandbox.workspace()]}),
        STEP,
    )
    .unwrap();
    let (text, is_error) = call_later(
        port,
        &token,
        &s,
        4,
        "read_file",
        json!({"path": "notes.txt"}),
    )
    .join()
    .unwrap();
    assert!(!is_error && text.contains("project's own"), "{text}");
    // An editor moving a running server's tools to `/` keeps the old folders.
    let ed = editor(&sandbox, &[]);
    let init = ed
        .request(
            "initialize",
            json!({"protocolVersion": 2, "workspaceFolders": ["/"]}),
            STEP,
        )
        .unwrap();
    let (port, token, s) = tools_session(&init);
    let (text, is_error) = call_later(
        port,
        &token,
        &s,
        2,
        "read_file",
        json!({"path": "/etc/hostname"}),
    )
    .join()
    .unwrap();
    assert!(is_error, "{text}");
    assert!(ed.log().contains("keep their folders"), "{}", ed.log());
}

/// Two workspace folders, each with a `README.md`, written at once (parallel
/// tool calls): both reviews were titled "✎ README.md (ccbridge
/// write_file)", so the second replaced the first, whose call answered "The
/// user rejected the change". A file of another folder than the first is
/// named by its absolute path, as the tools name it to the model.
#[test]
fn regression_same_named_files_in_two_folders_are_reviewed_side_by_side() {
    let sandbox = Sandbox::new().unwrap();
    let first = sandbox.workspace().to_owned();
    let second = sandbox.root().join("second");
    std::fs::create_dir_all(&second).unwrap();
    for dir in [&first, &second] {
        std::fs::write(dir.join("README.md"), "old\n").unwrap();
    }
    let mut ed = editor(&sandbox, &[]);
    let init = ed
        .request(
            "initialize",
            json!({"protocolVersion": 2, "ideName": "ToolsTest",
                   "workspaceFolders": [first, second],
                   "capabilities": {"diff": true}}),
            STEP,
        )
        .unwrap();
    let (port, token, s) = tools_session(&init);

    let mut calls = Vec::new();
    let mut views = Vec::new();
    for (id, dir) in [(2, &first), (3, &second)] {
        let path = dir.join("README.md").display().to_string();
        calls.push(call_later(
            port,
            &token,
            &s,
            id,
            "write_file",
            json!({"path": path, "content": format!("new {id}\n")}),
        ));
        let show = ed.expect_request("showDiff", STEP).unwrap();
        ed.respond(show.id.as_ref().unwrap(), json!(null)).unwrap();
        views.push(show.params);
    }
    assert_ne!(views[0]["tabName"], views[1]["tabName"], "{views:?}");
    assert_eq!(views[0]["tabName"], "✎ README.md (ccbridge write_file)");
    for view in &views {
        ed.notify(
            "diffResolved",
            json!({"id": view["id"], "decision": "accepted", "contents": view["proposedContents"]}),
        )
        .unwrap();
    }
    for (call, (id, dir)) in calls.into_iter().zip([(2, &first), (3, &second)]) {
        let (text, is_error) = call.join().unwrap();
        assert!(!is_error, "{text}");
        let r: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(r["status"], "accepted", "{r}");
        assert_eq!(
            std::fs::read_to_string(dir.join("README.md")).unwrap(),
            format!("new {id}\n")
        );
    }
    ed.close(STEP).unwrap();
}
