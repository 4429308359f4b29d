//! End-to-end scenarios against the **real** Claude Code CLI (pinned
//! `@anthropic-ai/claude-code`, see `ccbridge_testkit::claude`).
//!
//! Each test builds its own world: a sandboxed `HOME`/`CLAUDE_CONFIG_DIR`, a
//! scripted Messages API mock, `ccbridge serve --stdio` driven by a scripted
//! editor, and the CLI running interactively in its own tmux server. Nothing
//! is shared, so tests run in parallel (keep it to `--test-threads=2` on a
//! 2-core machine: every CLI start costs one to two seconds of CPU).
//!
//! Needs the CLI: `CCBRIDGE_CLAUDE_BIN`, or
//! `scripts/test`, which installs it into `~/.cache/ccbridge/e2e` (see
//! `ccbridge_testkit::e2e_dir`).
//! Without it every test here fails with that instruction; none is skipped.
//!
//! On failure the messages include the last screen, what ccbridge sent the
//! editor, ccbridge's log tail and the mock's requests. `CCBRIDGE_E2E_KEEP=1`
//! keeps the sandboxes (logs, the CLI's debug log) and leaves the tmux
//! servers running for inspection.

use ccbridge_testkit::claude::{claude_bin, Claude, ClaudeOptions, Sandbox};
use ccbridge_testkit::editor::{Editor, EditorOptions, LockFile};
use ccbridge_testkit::mock_anthropic::{request_text, tool_results, MockAnthropic};
use ccbridge_testkit::mock_model::Reply;
use ccbridge_testkit::poll_until;
use ccbridge_testkit::HELLO_PY;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const IDE_NAME: &str = "TestEditor";
/// Bound for each single step; generous because two CLIs may be starting on
/// two cores at once.
const STEP: Duration = Duration::from_secs(30);

/// Everything one scenario runs against. Field order is drop order: the CLI
/// goes first, then ccbridge, then the mock, then the sandbox directory.
struct Rig {
    claude: Claude,
    editor: Editor,
    mock: MockAnthropic,
    lock: LockFile,
    /// Params of the editor's `clientConnected`.
    connected: Value,
    connected_at: Instant,
    hello: PathBuf,
    sandbox: Sandbox,
}

fn ccbridge_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ccbridge"))
}

/// Starts ccbridge (initialized as [`IDE_NAME`]) in a fresh sandbox with
/// `hello.py`, then the CLI pointed at it, and waits until the editor sees
/// `clientConnected` and the CLI shows its prompt.
fn rig(turns: Vec<Reply>) -> Rig {
    let claude_bin = claude_bin();
    let sandbox = Sandbox::new().expect("sandbox");
    let hello = sandbox.write_file("hello.py", HELLO_PY).unwrap();
    let editor = Editor::spawn(&EditorOptions::for_sandbox(
        ccbridge_bin(),
        &sandbox,
        IDE_NAME,
    ))
    .expect("spawn ccbridge");
    // Version 3, whose `initialize` result says how to start each agent.
    let init = editor
        .request(
            "initialize",
            json!({"protocolVersion": 3, "ideName": IDE_NAME,
                   "capabilities": {"diff": true, "openFile": true, "saveDocument": true,
                                    "closeTab": true}}),
            STEP,
        )
        .expect("initialize");
    let lock = editor.wait_lock_file(STEP).expect("lock file");
    assert_eq!(
        init["port"].as_u64(),
        Some(u64::from(lock.port)),
        "initialize result {init} vs lock file {}",
        lock.path.display()
    );
    assert_eq!(lock.json["ideName"], IDE_NAME, "lock file: {}", lock.json);
    let mock = MockAnthropic::with_script(turns).expect("mock API");
    let started = Instant::now();
    let claude = Claude::start(
        &sandbox,
        // As the editor's terminal starts it: no permission mode (auto mode),
        // with the environment and arguments `initialize` offered.
        &ClaudeOptions::new(claude_bin, mock.url()).in_editor_terminal(&init),
    )
    .expect("start claude");
    let connected = editor
        .expect_notification("clientConnected", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\nCLI screen:\n{}", claude.screen()));
    let connected_at = Instant::now();
    eprintln!(
        "[e2e] clientConnected {:.2?} after the CLI started: {connected}",
        connected_at - started
    );
    claude.wait_prompt(STEP).unwrap();
    Rig {
        claude,
        editor,
        mock,
        lock,
        connected,
        connected_at,
        hello,
        sandbox,
    }
}

impl Rig {
    /// Waits until the CLI itself says it is connected to the editor:
    /// `/status` shows `Connected to <ideName>`.
    ///
    /// `clientConnected` only means ccbridge answered `initialize`. The CLI
    /// decides whether a turn may use the IDE (closeAllDiffTabs, openDiff)
    /// from its own connection state, which under load was seen to lag the
    /// handshake by more than a second: a prompt submitted in that window ran
    /// without the IDE (terminal-only permission prompt, no openDiff), and a
    /// selection sent in it never showed. Tests that are not about that
    /// window wait for the CLI to say it is connected, as a user would.
    fn wait_ide_ready(&self) {
        self.claude
            .wait_ide_connected(IDE_NAME, STEP)
            .unwrap_or_else(|e| panic!("{e}\n{}", self.context()));
        eprintln!(
            "[e2e] CLI shows the IDE connected {:.2?} after clientConnected",
            self.connected_at.elapsed()
        );
    }

    fn hello_path(&self) -> String {
        self.hello.display().to_string()
    }

    /// Failure context: the CLI's screen and the tails of both logs.
    fn context(&self) -> String {
        self.claude.context(&self.editor.log())
    }
}

/// Selection of 0-based lines 1–3 of hello.py, as an editor reports it.
fn hello_selection(path: &str) -> (Value, String) {
    let lines: Vec<&str> = HELLO_PY.lines().collect();
    let text = lines[1..=3].join("\n");
    let params = json!({
        "filePath": path,
        "text": text,
        "selection": {
            "start": {"line": 1, "character": 0},
            "end": {"line": 3, "character": lines[3].len()},
        },
    });
    (params, text)
}

// 1 ─────────────────────────────────────────────────────────────────────────

#[test]
fn cli_connects_and_status_shows_the_editor() {
    let rig = rig(vec![]);
    assert_eq!(
        rig.connected["name"], "claude-code",
        "clientConnected: {}",
        rig.connected
    );
    // The assertion of this scenario: /status says `Connected to <ideName>`.
    rig.wait_ide_ready();
    // `ide_connected {pid}` reaches the editor as the client's pid, which is
    // the CLI itself (the tmux pane's process). It may come a moment after
    // clientConnected, so ask `status` until it is known.
    let pid = poll_until(STEP, Duration::from_millis(100), || {
        let status = rig.editor.request("status", json!({}), STEP).ok()?;
        let clients = status["clients"].as_array()?.clone();
        assert_eq!(clients.len(), 1, "status: {status}");
        clients[0]["pid"].as_u64()
    });
    assert_eq!(
        pid,
        Some(u64::from(rig.claude.pid())),
        "the editor's status should report the CLI's pid"
    );
}

// 2 ─────────────────────────────────────────────────────────────────────────

#[test]
fn selection_reaches_prompt_box_transcript_and_model() {
    let rig = rig(vec![Reply::text("I see your selection.")]);
    rig.wait_ide_ready();
    let (params, text) = hello_selection(&rig.hello_path());
    rig.editor.notify("selectionChanged", params).unwrap();
    rig.claude
        .wait_prompt_line("[⧉ 3 lines selected] in the prompt box", STEP, |l| {
            l.contains("⧉ 3 lines selected")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    rig.claude.type_and_submit("explain this", STEP).unwrap();
    rig.claude
        .tmux
        .wait_for_text(
            &format!("Selected 3 lines from hello.py in {IDE_NAME}"),
            STEP,
        )
        .unwrap();
    let expected = format!(
        "The user selected the lines 2 to 4 from {}:\n{text}",
        rig.hello_path()
    );
    let req = rig
        .mock
        .wait_for_request_containing(&expected, STEP)
        .unwrap();
    assert!(request_text(&req.body).contains("explain this"));
    rig.claude
        .tmux
        .wait_for_text("I see your selection.", STEP)
        .unwrap();
}

// 2b: an editor does not know when the CLI is ready. It sends its selection
// as soon as it hears `clientConnected`; ccbridge must hold it until the CLI
// listens (the CLI drops notifications that arrive too early).

#[test]
fn selection_sent_at_connect_is_not_lost() {
    let rig = rig(vec![]);
    let (params, _) = hello_selection(&rig.hello_path());
    let sent_after = rig.connected_at.elapsed();
    rig.editor
        .notify("selectionChanged", params.clone())
        .unwrap();
    let shown =
        rig.claude
            .wait_prompt_line("[⧉ 3 lines selected] in the prompt box", STEP / 3, |l| {
                l.contains("⧉ 3 lines selected")
            });
    if let Err(e) = shown {
        // Tell an engine bug from a CLI that was not listening yet: once the
        // CLI shows the IDE as connected, does the same notification work?
        rig.wait_ide_ready();
        let resend = rig.editor.notify("selectionChanged", params).map(|_| {
            rig.claude
                .wait_prompt_line("selection after re-send", STEP / 3, |l| {
                    l.contains("⧉ 3 lines selected")
                })
                .is_ok()
        });
        panic!(
            "a selection sent {sent_after:.0?} after clientConnected never reached the prompt box \
             (re-sent once the CLI showed the IDE connected: {}).\n{e:?}\n{}",
            match resend {
                Ok(true) => "then it appeared, so the first copy was dropped by a CLI that was not yet listening",
                Ok(false) => "it did not appear either",
                Err(_) => "could not re-send",
            },
            rig.context()
        );
    }
}

// 3 ─────────────────────────────────────────────────────────────────────────

#[test]
fn at_mention_inserts_file_and_range_into_prompt() {
    let rig = rig(vec![]);
    rig.wait_ide_ready();
    rig.editor
        .notify(
            "atMentioned",
            json!({"filePath": rig.hello_path(), "lineStart": 1, "lineEnd": 3}),
        )
        .unwrap();
    let line = rig
        .claude
        .wait_prompt_line("@hello.py#L2-4 in the prompt", STEP, |l| {
            l.contains("@hello.py#L2-4")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert!(line.starts_with("@hello.py#L2-4"), "prompt line: {line:?}");
}

// 4 ─────────────────────────────────────────────────────────────────────────

#[test]
fn model_get_diagnostics_returns_editor_diagnostics() {
    let rig = rig(vec![
        Reply::call("mcp__ide__getDiagnostics", json!({})).with_text("Checking diagnostics."),
        Reply::text("Diagnostics reviewed."),
    ]);
    let message = "E2E-DIAG-4242 undefined name 'mesage'";
    rig.editor
        .notify(
            "diagnosticsChanged",
            json!({
                "path": rig.hello_path(),
                "diagnostics": [{
                    "message": message,
                    "severity": "Error",
                    "source": "pyflakes",
                    "code": "F821",
                    "range": {"start": {"line": 2, "character": 10},
                              "end": {"line": 2, "character": 17}},
                }],
            }),
        )
        .unwrap();
    rig.wait_ide_ready();
    rig.claude.type_and_submit("any problems?", STEP).unwrap();
    let reqs = rig.mock.wait_for_turn_count(2, STEP).unwrap();
    let tool_id = reqs[0].call_id.clone().unwrap();
    let results = tool_results(&reqs[1].body);
    let (_, text) = results
        .iter()
        .find(|(id, _)| *id == tool_id)
        .unwrap_or_else(|| {
            panic!(
                "no tool_result for {tool_id}: {results:?}\n{}",
                rig.context()
            )
        });
    assert!(
        text.contains(message),
        "tool_result should carry the editor's diagnostic: {text}\n{}",
        rig.context()
    );
    let uri = format!("file://{}", rig.hello_path());
    assert!(text.contains(&uri), "tool_result should name {uri}: {text}");
    rig.claude
        .tmux
        .wait_for_text("Diagnostics reviewed.", STEP)
        .unwrap();
}

// 5–7: the diff flow ────────────────────────────────────────────────────────

const OLD: &str = "    print(message)";
const NEW: &str = "    print(message.upper())";

/// Starts a turn whose model proposes an Edit of hello.py; returns the
/// editor's `showDiff` request (already acknowledged with `null`) after the
/// CLI shows its permission prompt.
fn propose_edit(rig: &Rig) -> ccbridge_testkit::editor::Incoming {
    rig.wait_ide_ready();
    rig.claude.type_and_submit("make it shout", STEP).unwrap();
    let show = rig
        .editor
        .expect_request("showDiff", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    rig.editor
        .respond(show.id.as_ref().unwrap(), Value::Null)
        .unwrap();
    let p = &show.params;
    assert_eq!(p["oldFilePath"], rig.hello_path(), "showDiff: {p}");
    assert_eq!(p["newFilePath"], rig.hello_path(), "showDiff: {p}");
    assert_eq!(p["originalContents"], HELLO_PY, "showDiff: {p}");
    assert_eq!(
        p["proposedContents"],
        HELLO_PY.replace(OLD, NEW),
        "showDiff: {p}"
    );
    rig.claude
        .tmux
        .wait_for_text(&format!("Opened changes in {IDE_NAME}"), STEP)
        .unwrap();
    rig.claude
        .tmux
        .wait_for_text("Do you want to make this edit to hello.py?", STEP)
        .unwrap();
    show
}

/// A rig whose model proposes an Edit of hello.py (`OLD` → `NEW`), then ends
/// its turn. The script is pushed once the sandbox path is known.
fn rig_with_edit() -> Rig {
    let rig = rig(vec![]);
    rig.mock
        .push(Reply::edit(&rig.hello_path(), OLD, NEW).with_text("Editing."));
    rig.mock.push(Reply::text("Edit finished."));
    rig
}

#[test]
fn edit_accepted_in_editor_with_user_changes_is_written() {
    let rig = rig_with_edit();
    let show = propose_edit(&rig);
    let diff_id = show.params["id"].clone();
    let user_text = HELLO_PY.replace(OLD, "    print(message.upper(), flush=True)");
    rig.editor
        .notify(
            "diffResolved",
            json!({"id": diff_id, "decision": "accepted", "contents": user_text}),
        )
        .unwrap();
    // The CLI closes its tab after any verdict; ccbridge tells the editor.
    let close = rig
        .editor
        .expect_request("closeDiff", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert_eq!(close.params["id"], diff_id);
    rig.editor
        .respond(close.id.as_ref().unwrap(), Value::Null)
        .unwrap();
    let reqs = rig.mock.wait_for_turn_count(2, STEP).unwrap();
    let results = tool_results(&reqs[1].body);
    assert!(
        results
            .iter()
            .any(|(_, t)| t.contains("has been updated successfully")
                && t.contains("The user modified your proposed changes")),
        "tool_result: {results:?}"
    );
    assert_eq!(std::fs::read_to_string(&rig.hello).unwrap(), user_text);
    rig.claude
        .tmux
        .wait_for_text("Edit finished.", STEP)
        .unwrap();
    // Exactly one closeDiff per diff, even though the CLI sends close_tab twice.
    rig.claude.wait_prompt(STEP).unwrap();
    assert_eq!(rig.editor.seen("closeDiff").len(), 1, "{}", rig.context());
}

#[test]
fn edit_rejected_in_editor_leaves_file_unchanged() {
    let rig = rig_with_edit();
    rig.editor.auto_reply("closeDiff", Value::Null);
    let show = propose_edit(&rig);
    rig.editor
        .notify(
            "diffResolved",
            json!({"id": show.params["id"], "decision": "rejected"}),
        )
        .unwrap();
    rig.claude
        .wait_rejected("hello.py", STEP)
        .unwrap_or_else(|e| {
            panic!(
                "{e:?}
{}",
                rig.context()
            )
        });
    assert_eq!(std::fs::read_to_string(&rig.hello).unwrap(), HELLO_PY);
    // The turn ends with the rejection: the model is not asked again.
    assert_eq!(rig.mock.turns().len(), 1, "{}", rig.context());
    rig.editor
        .wait_seen("closeDiff", STEP, |m| m.params["id"] == show.params["id"])
        .unwrap();
}

#[test]
fn answering_in_terminal_first_closes_the_editor_diff() {
    let rig = rig_with_edit();
    let show = propose_edit(&rig);
    rig.claude.answer_permission("1", STEP).unwrap();
    let close = rig
        .editor
        .expect_request("closeDiff", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert_eq!(close.params["id"], show.params["id"]);
    rig.editor
        .respond(close.id.as_ref().unwrap(), Value::Null)
        .unwrap();
    rig.claude
        .tmux
        .wait_for_text("Edit finished.", STEP)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&rig.hello).unwrap(),
        HELLO_PY.replace(OLD, NEW)
    );
    rig.claude.wait_prompt(STEP).unwrap();
    assert_eq!(rig.editor.seen("closeDiff").len(), 1, "{}", rig.context());
}

// 7b: the user closes the terminal while a diff is open in the editor. The
// diff must not stay open there, and the editor learns the session is gone.

#[test]
fn closing_the_terminal_closes_the_open_diff() {
    let rig = rig_with_edit();
    rig.editor.auto_reply("closeDiff", Value::Null);
    let show = propose_edit(&rig);
    let client_id = rig.connected["id"].clone();
    rig.claude.tmux.kill_pane().unwrap();
    rig.editor
        .wait_seen("closeDiff", STEP, |m| m.params["id"] == show.params["id"])
        .unwrap();
    rig.editor
        .wait_seen("clientDisconnected", STEP, |m| m.params["id"] == client_id)
        .unwrap();
    assert_eq!(rig.editor.seen("closeDiff").len(), 1);
    assert_eq!(std::fs::read_to_string(&rig.hello).unwrap(), HELLO_PY);
    let status = rig.editor.request("status", json!({}), STEP).unwrap();
    assert_eq!(status["clients"], json!([]), "status: {status}");
}

// 8 ─────────────────────────────────────────────────────────────────────────
//
// The CLI sends `closeAllDiffTabs` at every prompt that reaches the model. With
// the real CLI no diff of ours is still open at that point (it always sends
// close_tab after a verdict), so the editor sees nothing; what is observable is
// that the CLI made the call at each prompt and ccbridge answered it without
// error: the CLI's debug log records the call and its success, ccbridge's log
// the answer.

#[test]
fn close_all_diff_tabs_is_answered_at_each_prompt() {
    let rig = rig(vec![
        Reply::text("first answer"),
        Reply::text("second answer"),
    ]);
    rig.wait_ide_ready();
    let count = |needle: &str| rig.claude.debug_log().matches(needle).count();
    let answered = || {
        rig.editor
            .log()
            .lines()
            .filter(|l| l.contains("tools/call answered") && l.contains("closeAllDiffTabs"))
            .count()
    };
    let calls = "Calling MCP tool: closeAllDiffTabs";
    let ok = "Tool 'closeAllDiffTabs' completed successfully";
    for (i, (prompt, answer)) in [("one", "first answer"), ("two", "second answer")]
        .into_iter()
        .enumerate()
    {
        rig.claude.type_and_submit(prompt, STEP).unwrap();
        rig.claude.tmux.wait_for_text(answer, STEP).unwrap();
        let done = poll_until(STEP, Duration::from_millis(50), || {
            (count(calls) > i && count(ok) > i && answered() > i).then_some(())
        });
        assert!(
            done.is_some(),
            "prompt {prompt:?}: expected {} closeAllDiffTabs call(s) answered successfully, \
             the CLI log has {} call(s), {} success(es), ccbridge answered {}\n{}",
            i + 1,
            count(calls),
            count(ok),
            answered(),
            rig.context()
        );
    }
    // A local command does not reach the model and sends nothing.
    rig.claude.ide_status(STEP).unwrap();
    assert_eq!(count(calls), 2, "{}", rig.context());
    assert_eq!(answered(), 2, "{}", rig.context());
    assert!(rig.editor.seen("closeDiff").is_empty(), "{}", rig.context());
}

// 9 ─────────────────────────────────────────────────────────────────────────

#[test]
fn second_cli_session_evicts_the_first() {
    let rig = rig(vec![]);
    rig.wait_ide_ready();
    let first_id = rig.connected["id"].clone();
    let second = Claude::start(
        &rig.sandbox,
        &ClaudeOptions::new(claude_bin(), rig.mock.url()).ide_port(rig.lock.port),
    )
    .unwrap();
    let connected2 = rig
        .editor
        .expect_notification("clientConnected", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\nsecond CLI:\n{}", second.screen()));
    assert_ne!(connected2["id"], first_id);
    rig.claude
        .tmux
        .wait_for_text(
            &format!("{IDE_NAME} switched to another Claude Code session"),
            STEP,
        )
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    let line = rig.claude.ide_status(STEP).unwrap();
    assert!(
        line.contains(&format!("Not connected to {IDE_NAME}")),
        "first CLI /status: {line:?}"
    );
    second.wait_prompt(STEP).unwrap();
    second
        .wait_ide_connected(IDE_NAME, STEP)
        .unwrap_or_else(|e| panic!("second CLI: {e}"));
    // The editor learns that the first session is gone.
    rig.editor
        .wait_seen("clientDisconnected", STEP, |m| m.params["id"] == first_id)
        .unwrap();
    let status = rig.editor.request("status", json!({}), STEP).unwrap();
    let clients = status["clients"].as_array().cloned().unwrap_or_default();
    assert_eq!(clients.len(), 1, "status: {status}");
    assert_eq!(clients[0]["id"], connected2["id"], "status: {status}");
    assert_eq!(
        clients[0]["pid"].as_u64(),
        Some(u64::from(second.pid())),
        "status: {status}"
    );
}

// 10 ────────────────────────────────────────────────────────────────────────

#[test]
fn wrong_token_means_no_connection() {
    let claude_bin = claude_bin();
    let sandbox = Sandbox::new().unwrap();
    let editor = Editor::spawn(&EditorOptions::for_sandbox(
        ccbridge_bin(),
        &sandbox,
        IDE_NAME,
    ))
    .unwrap();
    editor.initialize(IDE_NAME, STEP).unwrap();
    let lock = editor.wait_lock_file(STEP).unwrap();
    // A second sandbox whose only lock file names ccbridge's port but carries
    // a wrong token.
    let other = Sandbox::new().unwrap();
    let mut forged = lock.json.clone();
    let token = lock.auth_token.clone();
    assert!(
        !token.is_empty(),
        "lock file has no authToken: {}",
        lock.json
    );
    forged["authToken"] = json!(format!("{}x", &token[..token.len() - 1]));
    forged["workspaceFolders"] = json!([other.workspace().display().to_string()]);
    std::fs::create_dir_all(other.lock_dir()).unwrap();
    std::fs::write(
        other.lock_dir().join(format!("{}.lock", lock.port)),
        forged.to_string(),
    )
    .unwrap();
    let mock = MockAnthropic::start().unwrap();
    let claude = Claude::start(
        &other,
        &ClaudeOptions::new(claude_bin, mock.url()).ide_port(lock.port),
    )
    .unwrap();
    claude.wait_prompt(STEP).unwrap();
    // The CLI makes exactly one attempt; wait until it has been refused.
    let refused = poll_until(STEP, Duration::from_millis(100), || {
        let log = claude.debug_log();
        (log.contains("Connection failed") || log.contains("Expected 101 status code"))
            .then_some(())
    });
    assert!(
        refused.is_some(),
        "the CLI never logged a failed IDE connection; debug log tail:\n{}",
        ccbridge_testkit::tail(&claude.debug_log(), 40)
    );
    let line = claude.ide_status(STEP).unwrap();
    assert!(
        line.contains(&format!("Not connected to {IDE_NAME}")),
        "/status IDE line: {line:?}"
    );
    assert!(
        editor.seen("clientConnected").is_empty(),
        "ccbridge accepted a client with a wrong token: {:?}",
        editor.seen("clientConnected")
    );
    let status = editor.request("status", json!({}), STEP).unwrap();
    assert_eq!(status["clients"], json!([]), "status: {status}");
}
