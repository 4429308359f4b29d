//! The real-client suite with **Neovim as the editor**: a real headless
//! Neovim running the plugin (`editors/nvim`), which spawns `ccbridge serve
//! --stdio`; the **real** Claude Code CLI (pinned, in tmux) connected to it;
//! a scripted Messages API mock playing the model. Keys go into Neovim as a
//! user types them (`nvim_input`), and what Claude does is read from its
//! screen, from what it tells the model, and from the files on disk.
//!
//! Needs the CLI and Neovim; the README's test command installs both.
//! Without them every test fails with the instruction; none is skipped.

use crate::real_client_rig::{Bench, Finds, RealClient, Shown, NEW, OLD, STEP};
use ccbridge_testkit::nvim::Nvim;
use ccbridge_testkit::HELLO_PY;
use std::time::Duration;

const IDE_NAME: &str = "NeovimUnderTest";

type Rig = RealClient<Nvim>;

/// Headless: its screen is not drawn.
impl Shown for Nvim {}

/// Neovim with the plugin editing `hello.py` in a fresh sandbox, and the
/// CLI started with the port the plugin got, showing the IDE connected.
fn rig() -> Rig {
    rig_where(Finds::ByPort)
}

fn rig_where(finds: Finds) -> Rig {
    let bench = Bench::new(IDE_NAME);
    let init = ccbridge_testkit::claude::workspace_root().join("editors/nvim/test/init.lua");
    let mut nvim = Nvim::start(
        &init,
        bench.sandbox.workspace(),
        &[("HOME", bench.sandbox.home().to_str().unwrap())],
    )
    .expect("start nvim");
    nvim.lua(
        r#"local bin, name, log, lock_dir = ...
        require("ccbridge").setup({
          bin = bin, ide_name = name, log_file = log,
          args = { "--lock-dir", lock_dir, "--selection-debounce-ms", "0" },
          selection = { debounce_ms = 0 },
        })"#,
        vec![
            env!("CARGO_BIN_EXE_ccbridge").into(),
            IDE_NAME.into(),
            bench.log.to_str().unwrap().into(),
            bench.sandbox.lock_dir().to_str().unwrap().into(),
        ],
    );
    let init = nvim.wait(
        "the sidecar's initialize result",
        "require('ccbridge').state.status == 'running' and require('ccbridge').state.init",
        STEP,
    );
    nvim.command(&format!("edit {}", bench.hello.display()));
    let mut rig = bench.start_claude(nvim, finds, &init);
    rig.editor.wait(
        "CCBridgeConnected",
        "#test.events_named('CCBridgeConnected') > 0",
        STEP,
    );
    rig.wait_connected();
    rig
}

impl RealClient<Nvim> {
    /// The model proposes `old` → `new` in hello.py, then ends its turn
    /// with "Edit finished."; returns once Neovim shows the review (the
    /// cursor in the proposal).
    fn propose(&mut self, old: &str, new: &str) {
        self.propose_edit(old, new);
        self.editor.wait(
            "the review in Neovim",
            "vim.b.ccbridge_review and vim.bo.buftype == 'acwrite'",
            STEP,
        );
    }

    /// Claude was told the user modified its proposal, finished, wrote
    /// `expected`, and Neovim's buffer of the file shows it (reloaded).
    fn assert_written_as_modified(&mut self, expected: &str) {
        let result = self.tool_result(2);
        assert!(
            result.contains("The user modified your proposed changes"),
            "tool_result: {result}\n{}",
            self.context()
        );
        self.wait_screen("Edit finished.");
        assert_eq!(self.on_disk(), expected);
        self.assert_buffer_shows(expected);
    }

    fn assert_buffer_shows(&mut self, expected: &str) {
        let want = expected.strip_suffix('\n').unwrap_or(expected).to_owned();
        let expr = format!(
            "table.concat(vim.api.nvim_buf_get_lines(require('ccbridge.editors').buffer_for({:?}), 0, -1, false), '\\n') == {want:?}",
            self.hello_path()
        );
        self.editor.wait("the buffer to show the file", &expr, STEP);
    }

    /// The review's tab is gone and the cursor is back in hello.py.
    fn assert_review_closed(&mut self) {
        self.editor.wait(
            "the review to close",
            "#test.events_named('CCBridgeDiffClosed') > 0 and #vim.api.nvim_list_tabpages() == 1",
            STEP,
        );
        assert_eq!(
            self.editor.eval("vim.api.nvim_buf_get_name(0)"),
            self.hello_path().as_str()
        );
    }
}

#[test]
fn proposal_edited_then_written_with_w_is_written_as_edited_and_the_buffer_reloads() {
    let mut rig = rig();
    rig.propose(OLD, NEW);
    // In the proposal: on the changed line, append a comment, then :w.
    rig.editor.input("/upper<CR>A  # shout<Esc>:w<CR>");
    rig.assert_written_as_modified(&HELLO_PY.replace(OLD, "    print(message.upper())  # shout"));
    rig.assert_review_closed();
}

#[test]
fn closing_the_proposal_window_rejects_and_the_file_stays() {
    let mut rig = rig();
    rig.propose(OLD, NEW);
    rig.editor.input(":q<CR>");
    rig.wait_rejected("hello.py");
    assert_eq!(rig.on_disk(), HELLO_PY);
    assert_eq!(rig.mock().turns().len(), 1, "{}", rig.context());
    rig.assert_review_closed();
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
    rig.editor.input("gg]c]cdo:w<CR>");
    rig.assert_written_as_modified(
        &HELLO_PY.replace("def greet(name):", "def greet(name, end=\"!\"):"),
    );
    rig.assert_review_closed();
}

#[test]
fn claude_started_elsewhere_finds_neovim_by_its_lock_file_and_sees_selection_and_send() {
    let mut rig = rig_where(Finds::ByLockFile);
    rig.editor.input("2GVj");
    rig.claude
        .wait_prompt_line("[⧉ 2 lines selected] in the prompt box", STEP, |l| {
            l.contains("⧉ 2 lines selected")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    rig.editor.input(":CCBridgeSend<CR>");
    let line = rig
        .claude
        .wait_prompt_line("@hello.py#L2-3 in the prompt", STEP, |l| {
            l.contains("@hello.py#L2-3")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert_eq!(line.matches("@hello.py").count(), 1, "{line:?}");
    // Quitting Neovim stops the sidecar, which removes its lock file.
    let lock_dir = rig.bench.sandbox.lock_dir();
    assert_eq!(ccbridge_testkit::lock_files(&lock_dir).len(), 1);
    assert!(rig.editor.quit().is_some(), "Neovim did not exit");
    let gone = ccbridge_testkit::poll_until(STEP, Duration::from_millis(20), || {
        ccbridge_testkit::lock_files(&lock_dir)
            .is_empty()
            .then_some(())
    });
    assert!(gone.is_some(), "the lock file outlived Neovim");
}
