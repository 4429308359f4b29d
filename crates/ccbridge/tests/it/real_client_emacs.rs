//! The real-client suite with **Emacs as the editor**: a real terminal Emacs
//! (`emacs -nw -Q` in tmux) running the package (`editors/emacs`), which
//! spawns `ccbridge serve --stdio`; the **real** Claude Code CLI (pinned, in
//! its own tmux) connected to it; a scripted Messages API mock playing the
//! model. Keys go into Emacs as a user types them (`tmux send-keys`), and
//! what Claude does is read from its screen, from what it tells the model,
//! and from the files on disk.
//!
//! Needs the CLI and Emacs 28+; `scripts/test` installs both. Without them
//! every test fails with the instruction; none is skipped.

use crate::real_client_rig::{Bench, Finds, RealClient, Shown, NEW, OLD, STEP};
use ccbridge_testkit::emacs::{lisp_str, Emacs, EmacsOptions};
use ccbridge_testkit::HELLO_PY;
use std::time::Duration;

const IDE_NAME: &str = "EmacsUnderTest";

type Rig = RealClient<Emacs>;

impl Shown for Emacs {
    fn screen(&self) -> Option<String> {
        Some(Emacs::screen(self))
    }
}

/// Emacs with the package visiting `hello.py` of a fresh sandbox (a git
/// repository, so project.el finds it), and the CLI connected to it.
fn rig(finds: Finds) -> Rig {
    let bench = Bench::new(IDE_NAME);
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(bench.sandbox.workspace())
        .status()
        .expect("git");
    assert!(git.success());
    let mut opts = EmacsOptions::for_package(bench.sandbox.workspace());
    opts.env
        .push(("HOME".into(), bench.sandbox.home().display().to_string()));
    let emacs = Emacs::start(&opts).expect("start Emacs");
    emacs.eval(&format!(
        "(setq ccbridge-program {} ccbridge-ide-name {} ccbridge-log-file {} \
           ccbridge-program-args (list \"--lock-dir\" {} \"--selection-debounce-ms\" \"0\") \
           ccbridge-selection-debounce 0) \
         (find-file {}) (ccbridge-mode 1)",
        lisp_str(env!("CARGO_BIN_EXE_ccbridge")),
        lisp_str(IDE_NAME),
        lisp_str(&bench.log.display().to_string()),
        lisp_str(&bench.sandbox.lock_dir().display().to_string()),
        lisp_str(&bench.hello.display().to_string()),
    ));
    // What `ccbridge-claude` would start Claude with, in the shape of
    // `initialize`'s `agents`.
    let init = emacs.wait(
        "the sidecar's agents",
        "(let (s) (maphash (lambda (_ v) (setq s v)) ccbridge--sessions) \
           (and s (eq (ccbridge--session-status s) 'running) \
                (let ((a (assoc \"claude\" (ccbridge--offered-agents \
                                            (ccbridge--session-init s))))) \
                  (list :agents (vector (list :id \"claude\" :env (nth 2 a) \
                                              :args (vconcat (nth 3 a))))))))",
        STEP,
    );
    let rig = bench.start_claude(emacs, finds, &init);
    rig.editor.wait(
        "Emacs to see Claude connected",
        "(> (plist-get (car (ccbridge-info)) :clients) 0)",
        STEP,
    );
    rig.wait_connected();
    rig
}

impl RealClient<Emacs> {
    /// The model proposes `old` → `new` in hello.py, then ends its turn
    /// with "Edit finished."; returns once Emacs shows the review (the
    /// proposal's window selected).
    fn propose(&self, old: &str, new: &str) {
        self.propose_edit(old, new);
        self.editor.wait(
            "the review in Emacs",
            "(and (ccbridge-test-review-buffer) (bound-and-true-p smerge-mode))",
            STEP,
        );
    }

    /// Emacs's buffer of hello.py shows `expected` (reverted after Claude
    /// wrote the file).
    fn assert_buffer_shows(&self, expected: &str) {
        self.editor.wait(
            "the buffer to show the file",
            &format!(
                "(equal (ccbridge-test-file-text {}) {})",
                lisp_str(&self.hello_path()),
                lisp_str(expected)
            ),
            STEP,
        );
    }

    /// The review's buffer is gone and the selected window shows hello.py.
    fn assert_review_closed(&self) {
        self.editor.wait(
            "the review to close",
            "(and (null (plist-get (car (ccbridge-info)) :reviews)) \
                  (equal (buffer-name (window-buffer)) \"hello.py\"))",
            STEP,
        );
    }
}

#[test]
fn an_edited_proposal_accepted_with_c_c_c_c_is_written_as_edited_and_a_second_rejected_with_c_c_c_k_is_not(
) {
    let rig = rig(Finds::ByPort);
    rig.propose(OLD, NEW);
    // In the proposal: to the changed line, append a comment, accept.
    rig.editor.keys("C-s");
    rig.editor.type_text("upper");
    rig.editor.keys("RET C-e");
    rig.editor.type_text("  # shout");
    rig.editor.wait(
        "the edit in the proposal",
        "(save-excursion (goto-char (point-min)) (search-forward \"upper())  # shout\" nil t))",
        STEP,
    );
    rig.editor.keys("C-c C-c");
    let result = rig.tool_result(2);
    assert!(
        result.contains("The user modified your proposed changes"),
        "tool_result: {result}\n{}",
        rig.context()
    );
    rig.wait_screen("Edit finished.");
    let accepted = HELLO_PY.replace(OLD, "    print(message.upper())  # shout");
    assert_eq!(rig.on_disk(), accepted);
    rig.assert_buffer_shows(&accepted);
    rig.assert_review_closed();
    rig.claude.wait_prompt(STEP).unwrap();

    // A second edit, rejected: the file stays as it is.
    rig.propose("    return message", "    return message + \"!\"");
    rig.editor.keys("C-c C-k");
    rig.wait_rejected("hello.py");
    assert_eq!(rig.on_disk(), accepted);
    rig.assert_review_closed();
    rig.assert_buffer_shows(&accepted);
}

#[test]
fn claude_started_elsewhere_finds_emacs_by_its_lock_file_and_sees_the_region_and_send() {
    let rig = rig(Finds::ByLockFile);
    // Lines 2 and 3: from the start of line 2 to the start of line 4.
    rig.editor.keys("M-< C-n C-SPC C-n C-n");
    rig.claude
        .wait_prompt_line("[⧉ 2 lines selected] in the prompt box", STEP, |l| {
            l.contains("⧉ 2 lines selected")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    rig.editor.keys("M-x");
    rig.editor.type_text("ccbridge-send");
    rig.editor.keys("RET");
    let line = rig
        .claude
        .wait_prompt_line("@hello.py#L2-3 in the prompt", STEP, |l| {
            l.contains("@hello.py#L2-3")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert_eq!(line.matches("@hello.py").count(), 1, "{line:?}");
    // Quitting Emacs stops the sidecar, which removes its lock file.
    let lock_dir = rig.bench.sandbox.lock_dir();
    assert_eq!(ccbridge_testkit::lock_files(&lock_dir).len(), 1);
    assert!(rig.editor.quit(), "Emacs did not exit");
    let gone = ccbridge_testkit::poll_until(STEP, Duration::from_millis(20), || {
        ccbridge_testkit::lock_files(&lock_dir)
            .is_empty()
            .then_some(())
    });
    assert!(gone.is_some(), "the lock file outlived Emacs");
}
