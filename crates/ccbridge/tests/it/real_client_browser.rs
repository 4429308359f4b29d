//! The README's main command end to end: `ccbridge claude` running the
//! **real** Claude Code CLI (pinned, in tmux), the review page open in a
//! real browser (Debian Chromium, playwright-core), and a scripted Messages
//! API mock playing the model. What a user does in the page is what Claude
//! does: an edited proposal is written as edited, a rejected one is not
//! written, a hunk-by-hunk decision writes exactly the accepted hunks, a
//! selection in the page's viewer shows in Claude's prompt box, and the
//! workspace tools `ccbridge claude` hands Claude ask in the page before a
//! command runs or a file changes.
//!
//! Claude runs as users start it, with no permission mode: auto mode,
//! where without `ccbridge claude`'s hook every edit would be written
//! without asking and none of these reviews would open (issue 19, item 2).
//!
//! Needs the CLI and the browser (see `real_client.rs` and
//! `ccbridge_testkit::browser`); the README's test command installs both.
//! Without them every test fails with the instruction; none is skipped.

use crate::real_client_rig::{Bench, RealClient, Shown, NEW, OLD, STEP};
use ccbridge_testkit::browser::Browser;
use ccbridge_testkit::claude::{claude_bin, Claude, ClaudeOptions, Sandbox};
use ccbridge_testkit::mock_anthropic::MockAnthropic;
use ccbridge_testkit::mock_model::Reply;
use ccbridge_testkit::serve::ServeProcess;
use ccbridge_testkit::HELLO_PY;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const IDE_NAME: &str = "BrowserReview";
const PAGE: &str = "review";
/// What the launcher prints, with ccbridge's exit status, when it ends.
const EXITED: &str = "ccbridge exited with status";

type Rig = RealClient<Browser>;

/// What the page logs is checked by the tests themselves.
impl Shown for Browser {}

/// `ccbridge claude` in a fresh sandbox with `hello.py`, the CLI showing
/// the IDE connected, and the page signed in through the printed link.
fn rig() -> Rig {
    rig_with(&[])
}

/// [`rig`], with `extra` options for `ccbridge claude`.
fn rig_with(extra: &[&str]) -> Rig {
    let bench = Bench::new(IDE_NAME);
    let browser = Browser::launch();
    // Under sh, which prints ccbridge's exit status: tmux does not always
    // know it (see `Tmux::exit_status`).
    let opts = bench.claude_options();
    let launcher: Vec<String> = [
        "sh".to_owned(),
        "-c".into(),
        format!("\"$0\" \"$@\"; echo \"{EXITED} $?\""),
        env!("CARGO_BIN_EXE_ccbridge").to_owned(),
        "claude".into(),
        "--ide-name".into(),
        IDE_NAME.into(),
        "--selection-debounce-ms".into(),
        "0".into(),
        "--log-file".into(),
        bench.log.display().to_string(),
        "--claude".into(),
        opts.bin.display().to_string(),
    ]
    .into_iter()
    .chain(extra.iter().map(|a| a.to_string()))
    .chain(["--".to_owned()])
    .collect();
    let mut rig = bench.with_claude(browser, &opts.launcher(launcher));
    let screen = rig
        .claude
        .tmux
        .wait_for("the review link", STEP, |s| s.contains("#token="))
        .unwrap_or_else(|e| panic!("ccbridge printed no link: {e:?}"));
    let link = screen
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:") && w.contains("/#token="))
        .unwrap_or_else(|| panic!("no link in:\n{screen}"))
        .to_owned();
    rig.editor.new_page(PAGE, "light");
    rig.editor.goto(PAGE, &link);
    rig.wait_connected();
    rig
}

impl RealClient<Browser> {
    /// The model proposes `old` → `new` in hello.py, then ends its turn
    /// with "Edit finished.". Returns the id of the page's review card once
    /// the CLI says the diff is open in the editor.
    fn propose(&mut self, old: &str, new: &str) -> String {
        self.propose_edit(old, new);
        let find = r#"() => { const el = document.querySelector('[data-review][data-status=pending]');
            return el ? el.dataset.review : null; }"#;
        let id = self
            .editor
            .wait_until(PAGE, find, json!(null))
            .as_str()
            .unwrap()
            .to_owned();
        let proposed = self.editor.text(PAGE, &card(&id, "[data-side=proposed]"));
        assert!(
            proposed.contains(new.lines().last().unwrap().trim()),
            "the page shows the proposal: {proposed}"
        );
        id
    }

    /// Claude was told the user modified its proposal, finished the Edit,
    /// and the file on disk is `expected`.
    fn assert_written_as_modified(&self, expected: &str) {
        let result = self.tool_result(2);
        assert!(
            result.contains("The user modified your proposed changes"),
            "tool_result: {result}\n{}",
            self.context()
        );
        self.wait_screen("Edit finished.");
        assert_eq!(self.on_disk(), expected);
    }

    /// The card leaves the page once Claude closes its tab, and the page
    /// logged nothing unexpected.
    fn assert_closed_quietly(&mut self, id: &str) {
        self.editor
            .wait_gone(PAGE, &format!("[data-review=\"{id}\"]"));
        let errors = self.editor.console_errors();
        assert!(errors.is_empty(), "console errors: {errors:?}");
    }
}

fn card(id: &str, rest: &str) -> String {
    format!("[data-review=\"{id}\"] {rest}")
}

fn lock_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn edit_changed_in_the_page_then_accepted_is_written_as_changed() {
    let mut rig = rig();
    let id = rig.propose(OLD, NEW);
    rig.editor.click(
        PAGE,
        &card(&id, "[data-side=proposed] .cm-line:has-text(\"upper\")"),
    );
    rig.editor.press(PAGE, "End");
    rig.editor.type_text(PAGE, "  # shout");
    rig.editor.press(PAGE, "Escape");
    rig.editor
        .click(PAGE, &card(&id, "[data-action=accept-file]"));
    rig.assert_written_as_modified(&HELLO_PY.replace(OLD, "    print(message.upper())  # shout"));
    rig.assert_closed_quietly(&id);
}

/// Issue 19: a reviewer can tell the agent why. A rejection with a note in
/// the page reaches the model with the user's next prompt (through the
/// `UserPromptSubmit` hook `ccbridge claude` gives Claude), once.
#[test]
fn a_rejection_with_a_note_puts_the_note_in_claudes_next_request() {
    let mut rig = rig();
    let id = rig.propose(OLD, NEW);
    rig.editor
        .click(PAGE, &card(&id, "[data-action=reject-note]"));
    rig.editor
        .wait_for(PAGE, "dialog[data-reject-note][open] textarea");
    rig.editor
        .type_text(PAGE, "NOTE-42: keep print, log with logging.info");
    rig.editor.click(
        PAGE,
        "dialog[data-reject-note] [data-action=reject-with-note]",
    );
    rig.wait_rejected("hello.py");
    assert_eq!(rig.on_disk(), HELLO_PY);
    // The next prompt carries the note to the model.
    rig.claude.type_and_submit("what now?", STEP).unwrap();
    let asked = rig
        .mock()
        .wait_for_request_containing("NOTE-42: keep print, log with logging.info", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert!(
        ccbridge_testkit::mock_anthropic::request_text(&asked.body).contains("hello.py"),
        "the note says which file"
    );
    // Given once: the prompt after that does not repeat it.
    rig.mock().push(Reply::text("Noted again."));
    rig.claude.wait_prompt(STEP).unwrap();
    rig.claude.type_and_submit("and now?", STEP).unwrap();
    let last = rig
        .mock()
        .wait_for_request_containing("and now?", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    let text = ccbridge_testkit::mock_anthropic::request_text(&last.body);
    assert!(text.matches("NOTE-42").count() <= 1, "given twice: {text}");
}

#[test]
fn edit_rejected_in_the_page_is_not_written() {
    let mut rig = rig();
    // Claude's full screen hides the printed link; its status line says
    // where the page is (issue 19, item 3).
    rig.wait_screen("ccbridge review page: http://127.0.0.1:");
    let id = rig.propose(OLD, NEW);
    rig.editor
        .click(PAGE, &card(&id, "[data-action=reject-file]"));
    rig.wait_rejected("hello.py");
    assert_eq!(rig.on_disk(), HELLO_PY);
    // The turn ends with the rejection: the model is not asked again.
    assert_eq!(rig.mock().turns().len(), 1, "{}", rig.context());
    rig.assert_closed_quietly(&id);
}

#[test]
fn hunk_by_hunk_decision_writes_only_the_accepted_hunk() {
    let mut rig = rig();
    // One Edit, two separate changes: line 1 and line 3.
    let old = "def greet(name):\n    message = \"hello \" + name\n    print(message)";
    let new =
        "def greet(name, end=\"!\"):\n    message = \"hello \" + name\n    print(message + end)";
    let id = rig.propose(old, new);
    // The card appears first; its editors, and with them the hunk markers,
    // are mounted in a later animation frame: wait for the last, then count.
    rig.editor.wait_for(PAGE, &card(&id, "[data-hunk=\"1\"]"));
    assert_eq!(rig.editor.count(PAGE, &card(&id, "[data-hunk]")), 2);
    rig.editor.click(
        PAGE,
        &card(&id, "[data-hunk=\"0\"] [data-action=accept-hunk]"),
    );
    rig.editor
        .wait_for(PAGE, &card(&id, "[data-hunk=\"0\"][data-accepted]"));
    // Rejecting the last undecided hunk finishes the review: accepted, with
    // the second change reverted.
    rig.editor.click(
        PAGE,
        &card(&id, "[data-hunk=\"1\"] [data-action=reject-hunk]"),
    );
    rig.assert_written_as_modified(
        &HELLO_PY.replace("def greet(name):", "def greet(name, end=\"!\"):"),
    );
    rig.assert_closed_quietly(&id);
}

#[test]
fn page_selection_and_send_to_claude_reach_the_prompt_then_exit_cleans_up() {
    let mut rig = rig();
    let ws = rig.bench.sandbox.workspace().display().to_string();
    let entry = |p: &str| format!("[data-tree-path=\"{p}\"]");
    rig.editor.click(PAGE, "[data-tab=files]");
    rig.editor.wait_for(PAGE, &entry(&ws));
    // The root opens by itself; its listing may still be on the way.
    if rig
        .editor
        .count(PAGE, &format!("{}[aria-expanded=false]", entry(&ws)))
        == 1
    {
        rig.editor.click(PAGE, &entry(&ws));
    }
    rig.editor.click(PAGE, &entry(&rig.hello_path()));
    rig.editor
        .click(PAGE, "[data-viewer] .cm-line:has-text(\"message =\")");
    rig.editor.press(PAGE, "Home");
    rig.editor.press(PAGE, "Shift+ArrowDown");
    rig.editor.press(PAGE, "Shift+End");
    rig.claude
        .wait_prompt_line("[⧉ 2 lines selected] in the prompt box", STEP, |l| {
            l.contains("⧉ 2 lines selected")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    rig.editor.click(PAGE, "[data-action=send-to-claude]");
    let line = rig
        .claude
        .wait_prompt_line("@hello.py#L2-3 in the prompt", STEP, |l| {
            l.contains("@hello.py#L2-3")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert_eq!(
        line.matches("@hello.py").count(),
        1,
        "one mention, once: {line:?}"
    );
    let errors = rig.editor.console_errors();
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // Leaving Claude ends ccbridge with Claude's status, the lock file gone.
    let lock_dir = rig.bench.sandbox.lock_dir();
    assert_eq!(lock_files(&lock_dir), 1, "{}", lock_dir.display());
    rig.claude.press(&["C-u"]).unwrap();
    rig.claude.type_and_submit("/exit", STEP).unwrap();
    let done = format!("{EXITED} 0");
    rig.claude
        .tmux
        .wait_for(&done, STEP, |s| s.lines().any(|l| l.trim() == done))
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert_eq!(lock_files(&lock_dir), 0, "the lock file outlived ccbridge");
}

#[test]
fn workspace_tools_ask_in_the_page_and_claude_gets_what_the_user_allowed() {
    let mut rig = rig();
    rig.mock().push(Reply::call(
        "mcp__ccbridge__execute_command",
        json!({"command": "echo PAGE-RAN-$((40+2))"}),
    ));
    rig.mock().push(Reply::call(
        "mcp__ccbridge__apply_diff",
        json!({"path": "hello.py", "diff": format!("<<<<<<< SEARCH\n{OLD}\n=======\n{NEW}\n>>>>>>> REPLACE\n")}),
    ));
    rig.mock().push(Reply::text("Tools done."));
    rig.claude.type_and_submit("use the tools", STEP).unwrap();

    // The command waits for the page's user, shown exactly.
    rig.editor.click(PAGE, "[data-tab=tools]");
    rig.editor
        .wait_for(PAGE, "[data-approval] [data-approval-command]");
    assert_eq!(
        rig.editor
            .text(PAGE, "[data-approval] [data-approval-command]"),
        "echo PAGE-RAN-$((40+2))"
    );
    rig.editor
        .click(PAGE, "[data-approval] [data-action=allow]");
    let told = rig
        .mock()
        .tool_results_of(2, STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert!(told.contains("PAGE-RAN-42"), "{told}");
    assert!(rig
        .editor
        .text(PAGE, "[data-run] [data-run-output]")
        .contains("PAGE-RAN-42"));

    // The edit is a review in Reviews; accepted there, it lands.
    rig.editor.click(PAGE, "[data-tab=reviews]");
    let find = r#"() => { const el = document.querySelector('[data-review][data-status=pending]');
        return el ? el.dataset.review : null; }"#;
    let id = rig
        .editor
        .wait_until(PAGE, find, json!(null))
        .as_str()
        .unwrap()
        .to_owned();
    rig.editor
        .click(PAGE, &card(&id, "[data-action=accept-file]"));
    let told = rig
        .mock()
        .tool_results_of(3, STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert!(told.contains("\"status\":\"accepted\""), "{told}");
    assert_eq!(rig.on_disk(), HELLO_PY.replace(OLD, NEW));
    rig.wait_screen("Tools done.");
    let errors = rig.editor.console_errors();
    assert!(errors.is_empty(), "console errors: {errors:?}");
}

/// One Edit with two separate changes (line 1 and line 3 of hello.py).
const TWO_OLD: &str = "def greet(name):\n    message = \"hello \" + name\n    print(message)";
const TWO_NEW: &str =
    "def greet(name, end=\"!\"):\n    message = \"hello \" + name\n    print(message + end)";

/// The page's Changes view: waits until `file` is listed with `source`
/// and `hunks` hunks, reverts hunk 0, and waits for one hunk less.
fn revert_first_hunk_in_changes(browser: &mut Browser, file: &str, source: &str, hunks: u64) {
    browser.click(PAGE, "[data-tab=changes]");
    browser.wait_until(
        PAGE,
        "([file, source, n]) => { const f = document.querySelector(`[data-change-file$='/${file}']`);
            return !!f && f.querySelector('[data-source]').textContent === source
                && f.querySelectorAll('[data-hunk]').length === n; }",
        json!([file, source, hunks]),
    );
    let sel = format!("[data-change-file$='/{file}']");
    browser.click(
        PAGE,
        &format!("{sel} [data-hunk=\"0\"] [data-action=revert-hunk]"),
    );
    browser.wait_until(
        PAGE,
        "([sel, n]) => document.querySelectorAll(sel).length === n",
        json!([format!("{sel} [data-hunk]"), hunks - 1]),
    );
}

/// Issue 19, the session review under `ccbridge claude`: with
/// `--no-edit-review`, Claude in auto mode writes its Edit without asking;
/// the Changes view lists it, named by Claude's own report (the
/// `PostToolUse` hook), and one of its two hunks is reverted.
#[test]
fn an_edit_made_without_review_is_listed_with_claudes_report_and_one_hunk_reverted() {
    let mut rig = rig_with(&["--no-edit-review"]);
    rig.mock()
        .push(Reply::edit(&rig.hello_path(), TWO_OLD, TWO_NEW).with_text("Editing."));
    rig.mock().push(Reply::text("Edit finished."));
    rig.claude.type_and_submit("change it", STEP).unwrap();
    rig.wait_screen("Edit finished.");
    assert_eq!(rig.on_disk(), HELLO_PY.replace(TWO_OLD, TWO_NEW));
    revert_first_hunk_in_changes(
        &mut rig.editor,
        "hello.py",
        "Claude Code (Edit), not reviewed",
        2,
    );
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    rig.editor
        .screenshot(PAGE, &shots.join("changes-after-claude-edit.png"));
    assert_eq!(
        rig.on_disk(),
        HELLO_PY.replace("    print(message)", "    print(message + end)")
    );
}

/// `ccbridge serve` for the sandbox's workspace and lock files, and the
/// IDE port of the lock file it wrote.
fn serve(sandbox: &Sandbox) -> (ServeProcess, u16) {
    let lock_dir = sandbox.lock_dir();
    let args = [
        "--no-tools".as_ref(),
        "--agents".as_ref(),
        "claude".as_ref(),
        "--ide-name".as_ref(),
        IDE_NAME.as_ref(),
        "--workspace".as_ref(),
        sandbox.workspace().as_os_str(),
        "--lock-dir".as_ref(),
        lock_dir.as_os_str(),
    ];
    let bin = Path::new(env!("CARGO_BIN_EXE_ccbridge"));
    let serve = ServeProcess::start(bin, &args, &[], sandbox.root(), STEP);
    let port = ccbridge_testkit::poll_until(STEP, Duration::from_millis(50), || {
        let lock = std::fs::read_dir(&lock_dir).ok()?.next()?.ok()?;
        lock.file_name()
            .to_str()?
            .strip_suffix(".lock")?
            .parse()
            .ok()
    })
    .expect("ccbridge serve writes its lock file");
    (serve, port)
}

/// Issue 19: a `claude` started by hand (not by ccbridge), as users start
/// it, is in auto mode and writes its Edit without asking the IDE. The
/// page says a file changed without a review, the Changes view lists it
/// ("changed on disk": nothing reported it), and one hunk is reverted.
#[test]
fn an_edit_by_a_claude_started_elsewhere_in_auto_mode_is_noticed_and_one_hunk_reverted() {
    let claude_bin = claude_bin();
    let mut browser = Browser::launch();
    let sandbox = Sandbox::new().expect("sandbox");
    let hello = sandbox.write_file("hello.py", HELLO_PY).unwrap();
    let mock = MockAnthropic::start().expect("mock API");
    let (serve, ide_port) = serve(&sandbox);
    browser.new_page(PAGE, "light");
    browser.goto(PAGE, &serve.url);
    browser.wait_for(PAGE, "[data-connection]");
    let claude = Claude::start(
        &sandbox,
        &ClaudeOptions::new(claude_bin, mock.url()).ide_port(ide_port),
    )
    .expect("start claude");
    claude.wait_prompt(STEP).unwrap();
    claude
        .wait_ide_connected(IDE_NAME, STEP)
        .unwrap_or_else(|e| panic!("{e}"));
    mock.push(Reply::edit(&hello.display().to_string(), TWO_OLD, TWO_NEW).with_text("Editing."));
    mock.push(Reply::text("Edit finished."));
    claude.type_and_submit("change it", STEP).unwrap();
    claude
        .tmux
        .wait_for_text("Edit finished.", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", claude.context("")));
    assert_eq!(
        std::fs::read_to_string(&hello).unwrap(),
        HELLO_PY.replace(TWO_OLD, TWO_NEW),
        "auto mode writes at once"
    );
    // No review was opened for it; the page says so on its own.
    assert_eq!(browser.count(PAGE, "[data-review]"), 0);
    browser.wait_until(
        PAGE,
        "() => { const n = document.querySelector('[data-note]');
            return !!n && !n.hidden && n.textContent.includes('hello.py changed on disk while Claude Code was connected, without a review'); }",
        json!(null),
    );
    revert_first_hunk_in_changes(
        &mut browser,
        "hello.py",
        "changed on disk while Claude Code was connected",
        2,
    );
    assert_eq!(
        std::fs::read_to_string(&hello).unwrap(),
        HELLO_PY.replace("    print(message)", "    print(message + end)")
    );
    drop(claude);
    drop(serve);
    assert_eq!(
        lock_files(&sandbox.lock_dir()),
        0,
        "the lock file is removed"
    );
}

/// Issue 23: Claude checks its own edit through the IDE. With a language
/// server ccbridge runs (the pinned pyright), an Edit accepted in the page
/// that breaks the file reaches the model's next request as
/// `<new-diagnostics>`: the baseline Claude takes before writing is the
/// old state, and the whole-workspace answer after the write waits for the
/// server's report on the new text (`EditorEvent::Analyzing`).
#[test]
fn an_accepted_edit_that_breaks_the_file_reaches_the_model_as_new_diagnostics() {
    let dir = ccbridge_testkit::pyright_bin_dir();
    let dir = dir.display().to_string();
    let mut rig = rig_with(&["--language-server-dir", &dir]);
    // Warm the server first (its first analysis takes seconds): a file
    // with an error, created in the workspace, shows in Diagnostics.
    rig.bench
        .sandbox
        .write_file("warm.py", "print(not_defined_warm)\n")
        .unwrap();
    rig.editor.click(PAGE, "[data-tab=diagnostics]");
    rig.editor.wait_until(
        PAGE,
        "() => document.querySelector('[data-view=diagnostics]').textContent.includes('not_defined_warm')",
        json!(null),
    );
    let id = rig.propose("    return message", "    return undefined_name_xyz");
    rig.editor.click(PAGE, "[data-tab=reviews]");
    rig.editor
        .click(PAGE, &card(&id, "[data-action=accept-file]"));
    let asked = rig
        .mock()
        .wait_for_request_containing("new-diagnostics", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    let text = ccbridge_testkit::mock_anthropic::request_text(&asked.body);
    assert!(
        text.contains("undefined_name_xyz") && text.contains("hello.py"),
        "the new diagnostic names the file and the error: {text}"
    );
    assert!(
        !text.contains("not_defined_warm"),
        "only what the edit introduced is new: {text}"
    );
}
