//! The workspace tools with the **real** Claude Code CLI: the tools server
//! of `ccbridge serve --stdio` is registered with `ccbridge mcp-config
//! --register`, the CLI (started afterwards, in tmux, against the scripted
//! API mock) loads it from `.claude.json`, and the model's calls of
//! `mcp__ccbridge__*` go through the scripted editor: a reviewed
//! `apply_diff` the user edits before accepting, a `write_file` of a new
//! file the user rejects, and an `execute_command` the user allows and one
//! they deny. What the model is told comes back in the mock's requests.
//!
//! Needs the CLI (see `real_client.rs`); without it every test fails with
//! the instruction to install it.

use ccbridge_testkit::claude::{claude_bin, Claude, ClaudeOptions, Sandbox};
use ccbridge_testkit::editor::{Editor, EditorOptions};
use ccbridge_testkit::mock_anthropic::MockAnthropic;
use ccbridge_testkit::mock_model::Reply;
use serde_json::{json, Value};
use std::time::Duration;

const IDE_NAME: &str = "ToolsEditor";
const STEP: Duration = Duration::from_secs(30);

#[test]
fn claude_uses_the_workspace_tools_through_the_editors_review_and_approval() {
    let sandbox = Sandbox::new().expect("sandbox");
    let app = sandbox.write_file("app.py", "x = 1\ny = 2\n").unwrap();
    let editor = Editor::spawn(&EditorOptions::for_sandbox(
        env!("CARGO_BIN_EXE_ccbridge"),
        &sandbox,
        IDE_NAME,
    ))
    .expect("spawn ccbridge");
    let init = editor
        .request(
            "initialize",
            json!({"protocolVersion": 2, "ideName": IDE_NAME,
                   "capabilities": {"diff": true, "approve": true}}),
            STEP,
        )
        .unwrap();
    assert!(init["tools"]["url"].is_string(), "{init}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ccbridge"))
        .args(["mcp-config", "--register"])
        .current_dir(sandbox.workspace())
        .env("HOME", sandbox.home())
        .env("CLAUDE_CONFIG_DIR", sandbox.config_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let new_file = sandbox.workspace().join("new.py");
    let mock = MockAnthropic::with_script(vec![
        Reply::call(
            "mcp__ccbridge__apply_diff",
            json!({"path": "app.py", "diff": "<<<<<<< SEARCH\ny = 2\n=======\ny = 3\n>>>>>>> REPLACE\n"}),
        ),
        Reply::call(
            "mcp__ccbridge__write_file",
            json!({"path": "new.py", "content": "print('new')\n"}),
        ),
        Reply::call(
            "mcp__ccbridge__execute_command",
            json!({"command": "echo E2E-RAN-$((40+2))"}),
        ),
        Reply::call(
            "mcp__ccbridge__execute_command",
            json!({"command": "touch denied.txt"}),
        ),
        Reply::text("All four done."),
    ])
    .expect("mock API");
    let claude = Claude::start(
        &sandbox,
        &ClaudeOptions::new(claude_bin(), mock.url())
            .ide_port(editor.wait_lock_file(STEP).unwrap().port),
    )
    .expect("start claude");
    let context = || claude.context(&editor.log());
    claude.wait_prompt(STEP).unwrap();
    claude
        .type_and_submit("use the ccbridge tools", STEP)
        .unwrap();

    // 1. apply_diff: reviewed; the user changes the proposal and accepts.
    let show = editor
        .expect_request("showDiff", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", context()));
    editor
        .respond(show.id.as_ref().unwrap(), Value::Null)
        .unwrap();
    assert_eq!(
        show.params["proposedContents"], "x = 1\ny = 3\n",
        "{}",
        show.params
    );
    editor
        .notify(
            "diffResolved",
            json!({"id": show.params["id"], "decision": "accepted", "contents": "x = 1\ny = 30\n"}),
        )
        .unwrap();
    let told = mock.tool_results_of(2, STEP).unwrap();
    assert!(
        told.contains("\"status\":\"accepted\""),
        "{told}\n{}",
        context()
    );
    assert!(
        told.contains("+y = 30"),
        "the model gets user_edits: {told}"
    );
    assert_eq!(std::fs::read_to_string(&app).unwrap(), "x = 1\ny = 30\n");
    editor.auto_reply("closeDiff", Value::Null);

    // 2. write_file of a new file: rejected, nothing left on disk.
    let show = editor
        .expect_request("showDiff", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", context()));
    editor
        .respond(show.id.as_ref().unwrap(), Value::Null)
        .unwrap();
    assert_eq!(show.params["isNewFile"], true);
    editor
        .notify(
            "diffResolved",
            json!({"id": show.params["id"], "decision": "rejected"}),
        )
        .unwrap();
    let told = mock.tool_results_of(3, STEP).unwrap();
    assert!(
        told.contains("\"status\":\"rejected\""),
        "{told}\n{}",
        context()
    );
    assert!(!new_file.exists());

    // 3. execute_command, allowed: the model gets the output.
    let ask = editor
        .expect_request("approve", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", context()));
    assert_eq!(ask.params["command"], "echo E2E-RAN-$((40+2))");
    editor
        .respond(ask.id.as_ref().unwrap(), json!({"approved": true}))
        .unwrap();
    let told = mock.tool_results_of(4, STEP).unwrap();
    assert!(told.contains("E2E-RAN-42"), "{told}\n{}", context());

    // 4. execute_command, denied: it does not run.
    let ask = editor
        .expect_request("approve", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", context()));
    editor
        .respond(ask.id.as_ref().unwrap(), json!({"approved": false}))
        .unwrap();
    let told = mock.tool_results_of(5, STEP).unwrap();
    assert!(
        told.contains("\"status\":\"rejected\""),
        "{told}\n{}",
        context()
    );
    assert!(!sandbox.workspace().join("denied.txt").exists());
    claude
        .tmux
        .wait_for_text("All four done.", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", context()));
}
