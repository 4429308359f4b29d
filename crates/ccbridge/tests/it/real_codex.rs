//! End-to-end against the **real** Codex CLI (the pinned npm package, see
//! `ccbridge_testkit::codex`): `/ide` in Codex fetches the editor's context
//! from `ccbridge serve --stdio`'s Codex provider while a scripted editor
//! plays the other side of ccbridge:
//!
//! ```text
//!  mock Responses API ◀─HTTP/SSE─ codex (tmux) ─IPC socket─▶ ccbridge serve --stdio ◀─stdio─ Editor
//! ```
//!
//! ccbridge runs with the sandbox's `HOME`, `TMPDIR` and `CODEX_HOME`, so
//! the router socket it hosts is where Codex looks; Codex gets the terminal
//! environment `initialize` offers for it. One session goes through what a
//! user does: `/ide` (Codex says it is connected), a selection made in the
//! editor, a prompt: the model's request starts with the editor context,
//! the selected text included. Then a second ccbridge on another folder
//! joins the router and does not answer for the first folder; when the
//! first ccbridge goes, the second hosts the router, still answers nothing
//! for that folder, and Codex says the context was skipped.
//!
//! Needs the pinned Codex CLI and Node 22: `scripts/test` installs them
//! into `~/.cache/ccbridge/e2e` (`CCBRIDGE_E2E_DIR`); without them the test
//! fails saying so. Failures print Codex's screen and stderr, ccbridge's
//! log and the model requests; `CCBRIDGE_E2E_KEEP=1` keeps the sandbox and
//! tmux server.

use ccbridge_testkit::codex::{self, CodexCli, CodexSandbox};
use ccbridge_testkit::editor::{Editor, EditorOptions};
use ccbridge_testkit::mock_model::Reply;
use ccbridge_testkit::mock_responses::MockResponses;
use ccbridge_testkit::serve::ServeProcess;
use ccbridge_testkit::{poll_until, tail};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const IDE_NAME: &str = "TestEditor";
/// Bound for each single step (other builds may share the two cores).
const STEP: Duration = Duration::from_secs(45);

const FILE: &str = "hello.txt";
const ORIGINAL: &str = "first line\nselect me SEL-MARK-5150\nthird line\n";
const SELECTED: &str = "SEL-MARK-5150";
/// What the second ccbridge's editor selects in its own folder.
const OTHER_SELECTED: &str = "OTHER-SEL-6262";

fn spawn_editor(sandbox: &CodexSandbox, workspace: &Path, log: &str) -> Editor {
    let mut extra_env = sandbox.socket_env();
    extra_env.retain(|(k, _)| k != "HOME");
    let opts = EditorOptions {
        bin: PathBuf::from(env!("CARGO_BIN_EXE_ccbridge")),
        workspace: workspace.to_path_buf(),
        ide_name: IDE_NAME.into(),
        config_dir: sandbox.home().join(".claude"),
        home: sandbox.home(),
        log_file: sandbox.root().join(log),
        rust_log: "debug".into(),
        extra_args: vec!["--agents".into(), "codex".into(), "--no-tools".into()],
        extra_env,
    };
    Editor::spawn(&opts).expect("spawn ccbridge")
}

/// `initialize` in version 3: Codex is the one agent offered; its
/// terminal environment.
fn initialize(editor: &Editor, sandbox: &CodexSandbox) -> Vec<(String, String)> {
    let init = editor
        .request(
            "initialize",
            json!({"protocolVersion": 3, "ideName": IDE_NAME, "capabilities": {}}),
            STEP,
        )
        .expect("initialize");
    let agents = init["agents"].as_array().cloned().unwrap_or_default();
    assert_eq!(agents.len(), 1, "--agents codex: initialize: {init}");
    assert_eq!(agents[0]["id"], "codex", "initialize: {init}");
    assert_eq!(agents[0]["name"], "Codex CLI", "initialize: {init}");
    let env = agents[0]["env"].as_object().cloned().unwrap_or_default();
    for (k, v) in sandbox.socket_env().iter().filter(|(k, _)| k != "HOME") {
        assert_eq!(
            env.get(k).and_then(Value::as_str),
            Some(v.as_str()),
            "{k}: {init}"
        );
    }
    env.into_iter()
        .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
        .collect()
}

fn select(editor: &Editor, path: &Path, text: &str, line: u32, col: u32) {
    editor
        .notify(
            "selectionChanged",
            json!({
                "filePath": path,
                "text": text,
                "selection": {"start": {"line": line, "character": col},
                              "end": {"line": line, "character": col + text.len() as u32}},
            }),
        )
        .expect("selectionChanged");
}

fn wait_log(editor: &Editor, needle: &str) {
    poll_until(STEP, Duration::from_millis(50), || {
        editor.log().contains(needle).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "ccbridge never logged {needle:?}:\n{}",
            tail(&editor.log(), 40)
        )
    });
}

#[test]
fn codex_ide_gets_the_editors_selection_and_another_folders_ccbridge_does_not_answer_for_it() {
    let bin = codex::try_bin().unwrap_or_else(|e| panic!("{e}"));
    let sandbox = CodexSandbox::new().expect("sandbox");
    let file = sandbox.write_file(FILE, ORIGINAL).unwrap();
    let mock = MockResponses::start().expect("mock model");

    let mut first = spawn_editor(&sandbox, &sandbox.workspace(), "ccbridge-1.log");
    let env = initialize(&first, &sandbox);
    wait_log(&first, "hosting the Codex IPC router");
    assert!(
        sandbox.codex_home().join("ipc/ipc.sock").exists(),
        "hosted where Codex looks first:\n{}",
        tail(&first.log(), 20)
    );
    select(&first, &file, SELECTED, 1, 10);

    let cli = CodexCli::start(&sandbox, &bin, &mock.url(), &env).expect("start codex");
    let fail = |what: &str, e: &dyn std::fmt::Debug, logs: &[&Editor]| -> ! {
        let logs: Vec<String> = logs.iter().map(|e| tail(&e.log(), 30)).collect();
        panic!(
            "{what}: {e:?}\n{}\n── ccbridge logs ──\n{}",
            cli.context(),
            logs.join("\n──\n")
        )
    };
    cli.submit("/ide", STEP)
        .unwrap_or_else(|e| fail("/ide", &e, &[&first]));
    cli.wait_for_text("IDE context is on", STEP)
        .unwrap_or_else(|e| fail("/ide answer", &e, &[&first]));

    mock.on("CTX-MARK-1", [Reply::text("CTX-DONE-1")]);
    cli.submit("explain CTX-MARK-1", STEP)
        .unwrap_or_else(|e| fail("prompt 1", &e, &[&first]));
    let turn = mock
        .wait_for_request("the prompt with IDE context", STEP, |r| {
            r.last_user_text.contains("CTX-MARK-1")
        })
        .unwrap_or_else(|e| fail("model request 1", &e, &[&first]));
    let prompt = &turn.last_user_text;
    for needle in [
        "# Context from my IDE setup:",
        &format!("## Active file: {FILE}"),
        &format!("## Active selection of the file:\n{SELECTED}"),
        "## My request for Codex:\nexplain CTX-MARK-1",
    ] {
        assert!(
            prompt.contains(needle),
            "no {needle:?} in the prompt:\n{prompt}"
        );
    }
    cli.wait_for_text("CTX-DONE-1", STEP)
        .unwrap_or_else(|e| fail("reply 1", &e, &[&first]));

    // A second ccbridge, on another folder: it joins the router and is
    // asked, but the first folder is not its to answer for.
    let other = sandbox.root().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let other_file = other.join("other.txt");
    std::fs::write(&other_file, format!("x {OTHER_SELECTED}\n")).unwrap();
    let mut second = spawn_editor(&sandbox, &other, "ccbridge-2.log");
    initialize(&second, &sandbox);
    wait_log(&second, "joined the Codex IPC router");
    select(&second, &other_file, OTHER_SELECTED, 0, 2);
    select(&first, &file, "select me", 1, 0);

    mock.on("CTX-MARK-2", [Reply::text("CTX-DONE-2")]);
    cli.submit("again CTX-MARK-2", STEP)
        .unwrap_or_else(|e| fail("prompt 2", &e, &[&first, &second]));
    let turn = mock
        .wait_for_request("the second prompt", STEP, |r| {
            r.last_user_text.contains("CTX-MARK-2")
        })
        .unwrap_or_else(|e| fail("model request 2", &e, &[&first, &second]));
    let prompt = &turn.last_user_text;
    assert!(
        prompt.contains("## Active selection of the file:\nselect me"),
        "the first ccbridge answers for its folder:\n{prompt}"
    );
    assert!(!prompt.contains(OTHER_SELECTED), "{prompt}");
    cli.wait_for_text("CTX-DONE-2", STEP)
        .unwrap_or_else(|e| fail("reply 2", &e, &[&first, &second]));

    // The first goes: the second hosts the router, and answers nothing for
    // a folder that is not its own.
    first.close(STEP).expect("the first ccbridge exits");
    wait_log(&second, "hosting the Codex IPC router");
    mock.on("CTX-MARK-3", [Reply::text("CTX-DONE-3")]);
    cli.submit("last CTX-MARK-3", STEP)
        .unwrap_or_else(|e| fail("prompt 3", &e, &[&second]));
    let turn = mock
        .wait_for_request("the third prompt", STEP, |r| {
            r.last_user_text.contains("CTX-MARK-3")
        })
        .unwrap_or_else(|e| fail("model request 3", &e, &[&second]));
    assert!(
        !turn.last_user_text.contains("# Context from my IDE setup:"),
        "nobody serves the folder any more: {}",
        turn.last_user_text
    );
    cli.wait_for_text("IDE context was skipped for this message", STEP)
        .unwrap_or_else(|e| fail("the skip notice", &e, &[&second]));
    drop(cli);
    second.close(STEP).expect("the second ccbridge exits");
    assert!(
        !sandbox.codex_home().join("ipc/ipc.sock").exists(),
        "the hosted socket is removed on exit"
    );
}

/// Issue 24 with a real face: the selection made with the keyboard in the
/// page's file viewer (real Chromium) reaches Codex's model request
/// through `/ide`.
#[test]
fn codex_ide_gets_a_selection_made_in_the_page() {
    use ccbridge_testkit::browser::Browser;
    const PAGE: &str = "page";
    let bin = codex::try_bin().unwrap_or_else(|e| panic!("{e}"));
    let sandbox = CodexSandbox::new().expect("sandbox");
    let file = sandbox.write_file(FILE, ORIGINAL).unwrap();
    let mock = MockResponses::start().expect("mock model");
    let log_file = sandbox.root().join("serve.log");
    let workspace = sandbox.workspace();
    let args = [
        "--agents".as_ref(),
        "codex".as_ref(),
        "--no-tools".as_ref(),
        "--no-changes".as_ref(),
        "--no-language-servers".as_ref(),
        "--workspace".as_ref(),
        workspace.as_os_str(),
        "--log-file".as_ref(),
        log_file.as_os_str(),
    ];
    let ccbridge = Path::new(env!("CARGO_BIN_EXE_ccbridge"));
    let serve = ServeProcess::start(ccbridge, &args, &sandbox.socket_env(), sandbox.root(), STEP);
    let mut browser = Browser::launch();
    browser.new_page(PAGE, "light");
    browser.goto(PAGE, &serve.url);
    browser.wait_for(PAGE, "[data-connection]");
    browser.click(PAGE, "[data-tab=files]");
    let entry = format!("[data-tree-path=\"{}\"]", file.display());
    browser.click(PAGE, &entry);
    browser.wait_for(PAGE, "[data-viewer] .cm-content");
    browser.click(PAGE, "[data-viewer] .cm-line:has-text(\"SEL-MARK\")");
    browser.press(PAGE, "Home");
    browser.press(PAGE, "Shift+End");
    // The page names the selection once the keys have made it (and it has
    // gone to the server): only then does Codex start.
    browser.wait_for(PAGE, ".selection-info:has-text(\"Line 2 selected\")");

    let env: Vec<(String, String)> = sandbox
        .socket_env()
        .into_iter()
        .filter(|(k, _)| k != "HOME")
        .collect();
    let cli = CodexCli::start(&sandbox, &bin, &mock.url(), &env).expect("start codex");
    let log = || std::fs::read_to_string(&log_file).unwrap_or_default();
    let fail = |what: &str, e: &dyn std::fmt::Debug| -> ! {
        panic!(
            "{what}: {e:?}\n{}\n── ccbridge log ──\n{}",
            cli.context(),
            tail(&log(), 30)
        )
    };
    cli.submit("/ide", STEP)
        .unwrap_or_else(|e| fail("/ide", &e));
    cli.wait_for_text("IDE context is on", STEP)
        .unwrap_or_else(|e| fail("/ide answer", &e));
    mock.on("PAGE-MARK", [Reply::text("PAGE-DONE")]);
    cli.submit("explain PAGE-MARK", STEP)
        .unwrap_or_else(|e| fail("prompt", &e));
    let turn = mock
        .wait_for_request("the prompt with the page's selection", STEP, |r| {
            r.last_user_text.contains("PAGE-MARK")
        })
        .unwrap_or_else(|e| fail("model request", &e));
    let want = format!(
        "## Active selection of the file:\n{}",
        ORIGINAL.lines().nth(1).unwrap()
    );
    assert!(
        turn.last_user_text.contains(&want),
        "no {want:?} in the prompt:\n{}",
        turn.last_user_text
    );
    drop(cli);
    drop(serve);
}
