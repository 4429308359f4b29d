//! The real-client suite with **Vim as the editor**: a real Vim 9 in tmux
//! running the plugin (`editors/vim`), which spawns `ccbridge serve
//! --stdio`; the **real** Claude Code CLI (pinned, in another tmux)
//! connected to it; a scripted Messages API mock playing the model. Keys go
//! into Vim's terminal as a user types them, and what Claude does is read
//! from its screen, from what it tells the model, and from the files on
//! disk.
//!
//! Needs the CLI, Vim 9 and tmux; without them every test fails with the
//! instruction, none is skipped.

use crate::real_client_rig::{Bench, Finds, RealClient, Shown, NEW, OLD, STEP};
use ccbridge_testkit::vim::{let_options, vim_str, Vim, VimOptions};
use ccbridge_testkit::HELLO_PY;
use serde_json::json;
use std::time::Duration;

const IDE_NAME: &str = "VimUnderTest";

type Rig = RealClient<Vim>;

impl Shown for Vim {
    fn screen(&self) -> Option<String> {
        Some(Vim::screen(self))
    }
}

/// Vim with the plugin editing `hello.py` in a fresh sandbox, and the CLI
/// started with the port the plugin got, showing the IDE connected.
fn rig() -> Rig {
    rig_where(Finds::ByPort)
}

fn rig_where(finds: Finds) -> Rig {
    let bench = Bench::new(IDE_NAME);
    let mut opts = VimOptions::for_plugin(bench.sandbox.workspace());
    opts.env
        .push(("HOME".into(), bench.sandbox.home().display().to_string()));
    let mut vim = Vim::start(&opts).expect("start vim");
    let options = json!({
        "bin": env!("CARGO_BIN_EXE_ccbridge"),
        "ide_name": IDE_NAME,
        "log_file": bench.log,
        "args": ["--lock-dir", bench.sandbox.lock_dir(), "--selection-debounce-ms", "0"],
        "selection": {"debounce_ms": 0},
    });
    vim.ex(&let_options(&options));
    vim.ex("CCBridgeStart");
    let init = vim.wait(
        "the sidecar's initialize result",
        "ccbridge#Status() ==# 'running' ? ccbridge#Init() : 0",
        STEP,
    );
    vim.ex(&format!("edit {}", bench.hello.display()));
    let mut rig = bench.start_claude(vim, finds, &init);
    rig.editor.wait(
        "CCBridgeConnected",
        "len(TestEvents('CCBridgeConnected')) > 0",
        STEP,
    );
    rig.wait_connected();
    rig
}

impl RealClient<Vim> {
    /// The model proposes `old` → `new` in hello.py, then ends its turn
    /// with "Edit finished."; returns once Vim shows the review (the cursor
    /// in the proposal).
    fn propose(&mut self, old: &str, new: &str) {
        self.propose_edit(old, new);
        self.editor.wait(
            "the review in Vim",
            "get(b:, 'ccbridge_review', 0) && &buftype ==# 'acwrite'",
            STEP,
        );
    }

    /// Vim's buffer of hello.py shows `expected` (it reloaded).
    fn assert_buffer_shows(&mut self, expected: &str) {
        let want = expected.strip_suffix('\n').unwrap_or(expected);
        let expr = format!(
            "TestBufferText({}) ==# {}",
            vim_str(&self.hello_path()),
            vim_str(want)
        );
        self.editor.wait("the buffer to show the file", &expr, STEP);
    }

    /// The review's tab is gone and the cursor is back in hello.py.
    fn assert_review_closed(&mut self, closed: usize) {
        self.editor.wait(
            "the review to close",
            &format!("len(TestEvents('CCBridgeDiffClosed')) == {closed} && tabpagenr('$') == 1"),
            STEP,
        );
        assert_eq!(
            self.editor.eval("expand('%:p')"),
            self.hello_path().as_str()
        );
    }
}

/// The scenario: an Edit the user changes in the proposal and
/// accepts with `:w` is written as edited; a second Edit, rejected with
/// `:CCBridgeReject`, leaves the file as it was.
#[test]
fn an_edited_proposal_written_with_w_lands_as_edited_and_a_rejected_one_changes_nothing() {
    let mut rig = rig();
    rig.propose(OLD, NEW);
    // In the proposal: on the changed line, append a comment, then :w.
    rig.editor.keys("/upper<CR>A  # shout<Esc>:w<CR>");
    let result = rig.tool_result(2);
    assert!(
        result.contains("The user modified your proposed changes"),
        "tool_result: {result}\n{}",
        rig.context()
    );
    rig.wait_screen("Edit finished.");
    let edited = HELLO_PY.replace(OLD, "    print(message.upper())  # shout");
    assert_eq!(rig.on_disk(), edited);
    rig.assert_buffer_shows(&edited);
    rig.assert_review_closed(1);
    rig.claude.wait_prompt(STEP).unwrap();

    // The second Edit: rejected from the proposal.
    rig.propose("    return message", "    return None");
    rig.editor.keys(":CCBridgeReject<CR>");
    rig.wait_rejected("hello.py");
    assert_eq!(rig.on_disk(), edited);
    rig.assert_review_closed(2);
    // A rejection ends Claude's turn: the model was not asked again.
    assert_eq!(rig.mock().turns().len(), 3, "{}", rig.context());
}

#[test]
fn closing_the_proposal_window_rejects_and_the_file_stays() {
    let mut rig = rig();
    rig.propose(OLD, NEW);
    rig.editor.keys(":q<CR>");
    rig.wait_rejected("hello.py");
    assert_eq!(rig.on_disk(), HELLO_PY);
    assert_eq!(rig.mock().turns().len(), 1, "{}", rig.context());
    rig.assert_review_closed(1);
}

#[test]
fn do_on_the_second_of_two_hunks_writes_only_the_first() {
    let mut rig = rig();
    // One Edit, two separate changes: line 1 and line 3.
    let old = "def greet(name):\n    message = \"hello \" + name\n    print(message)";
    let new =
        "def greet(name, end=\"!\"):\n    message = \"hello \" + name\n    print(message + end)";
    rig.propose(old, new);
    // `]c` twice from the top: the second hunk; `do` takes the original back.
    rig.editor.keys("gg]c]cdo:w<CR>");
    let result = rig.tool_result(2);
    assert!(
        result.contains("The user modified your proposed changes"),
        "tool_result: {result}\n{}",
        rig.context()
    );
    rig.wait_screen("Edit finished.");
    let expected = HELLO_PY.replace("def greet(name):", "def greet(name, end=\"!\"):");
    assert_eq!(rig.on_disk(), expected);
    rig.assert_buffer_shows(&expected);
    rig.assert_review_closed(1);
}

#[test]
fn claude_started_elsewhere_finds_vim_by_its_lock_file_and_sees_selection_and_send() {
    let rig = rig_where(Finds::ByLockFile);
    // A linewise Visual selection, made with real keys.
    rig.editor.keys("2GVj");
    rig.claude
        .wait_prompt_line("[⧉ 2 lines selected] in the prompt box", STEP, |l| {
            l.contains("⧉ 2 lines selected")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    rig.editor.keys(":CCBridgeSend<CR>");
    let line = rig
        .claude
        .wait_prompt_line("@hello.py#L2-3 in the prompt", STEP, |l| {
            l.contains("@hello.py#L2-3")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert_eq!(line.matches("@hello.py").count(), 1, "{line:?}");
    // Quitting Vim stops the sidecar, which removes its lock file.
    let lock_dir = rig.bench.sandbox.lock_dir();
    assert_eq!(ccbridge_testkit::lock_files(&lock_dir).len(), 1);
    assert!(rig.editor.quit().is_some(), "Vim did not exit");
    let gone = ccbridge_testkit::poll_until(STEP, Duration::from_millis(20), || {
        ccbridge_testkit::lock_files(&lock_dir)
            .is_empty()
            .then_some(())
    });
    assert!(gone.is_some(), "the lock file outlived Vim");
}
