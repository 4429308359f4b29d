//! What every editor face does alike, written once: each scenario is a
//! generic function over [`EditorUnderTest`], and `in_faces!` runs it in
//! Neovim, Vim and Emacs (`editor_scenarios::nvim::<scenario>`, `::vim::`,
//! `::emacs::`).
//!
//! A face is its driver (the `EditorUnderTest` impl beside its own tests, in
//! `nvim_plugin.rs`, `vim_plugin.rs`, `emacs_package.rs`): how that editor
//! is started, and which keys a user presses there to close a review or
//! decide a hunk. What the scenario checks is what Claude gets back, what is
//! on disk and which lock files exist, so a new face gets these scenarios by
//! writing a driver, and its own file keeps only what is its own (its diff
//! layouts, its help, its options).

use crate::claude_side::{
    assert_saved, connect, next_note, open_file_at_text, poll_tool, start_open_diff, verdict,
    GeminiSide, Step, KEPT_LINE,
};
use ccbridge_client::ws_client::IdeClient;
use ccbridge_testkit::poll_until;
use ccbridge_testkit::HELLO_PY as HELLO;
use serde_json::{json, Value};
use std::any::Any;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const STEP: Duration = Duration::from_secs(15);

/// `HELLO` with two hunks: the message on line 2, the call on the last line.
pub(crate) const TWO_HUNKS: &str = "def greet(name):\n    message = \"hi \" + name\n    print(message)\n    return message\n\n\ngreet(\"everyone\")\n";

/// One editor face, driven as its user drives it.
pub(crate) trait EditorUnderTest: Sized {
    /// The face's name in `/ide` before the folder: "Neovim (ws)".
    const IDE: &'static str;

    /// A fresh workspace holding `hello.py` (`HELLO_PY`), the editor
    /// visiting it, the plugin started and its sidecar answering.
    fn start() -> Self;

    fn workspace(&self) -> &Path;

    fn lock_dir(&self) -> &Path;

    /// The name Claude's `/ide` shows: the face's, then the folder's.
    fn ide_name(&self) -> String {
        let folder = self.workspace().file_name().unwrap().to_string_lossy();
        format!("{} ({folder})", Self::IDE)
    }

    /// The sidecar's answer to the editor's `initialize` (its port, lock
    /// file, workspace tools, agents), as the editor keeps it.
    fn init(&mut self) -> Value;

    /// Waits until the editor knows a Claude session connected.
    fn wait_claude_connected(&mut self);

    /// This editor's lock file, as its sidecar reported it.
    fn lock_file(&mut self) -> PathBuf {
        PathBuf::from(self.init()["lockFile"].as_str().unwrap())
    }

    /// The lock file's contents.
    fn lock(&mut self) -> Value {
        let text = std::fs::read_to_string(self.lock_file()).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// This test as a Claude session: connected, tools listed, pid
    /// reported, and the editor told.
    #[allow(async_fn_in_trait)]
    async fn claude(&mut self) -> IdeClient {
        let port = self.init()["port"].as_u64().unwrap() as u16;
        let token = self.lock()["authToken"].as_str().unwrap().to_owned();
        let c = connect(port, &token).await;
        self.wait_claude_connected();
        c
    }

    /// The editor's `HOME`, also its `TMPDIR`: where its sidecar writes
    /// Qwen Code's and Gemini CLI's discovery files.
    fn home(&self) -> PathBuf;

    /// Visits `rel` in the workspace, as the user opens a file.
    fn visit(&mut self, rel: &str);

    /// The face's connection indicator as the user sees it (status line,
    /// mode line): "Claude ○" or "Claude ●" in the face's spelling.
    fn indicator(&mut self) -> String;

    /// The sidecar's state as the face keeps it: "running", "starting",
    /// "stopped".
    fn status(&mut self) -> String;

    /// The face's status report, opened as its user opens it.
    fn status_report(&mut self) -> String;

    /// As [`Self::start`], with `dir` first on the editor's `PATH` (where
    /// the programs its terminals run are found).
    fn start_with_path(dir: &Path) -> Self;

    /// Runs the face's command for Claude's terminal (`:CCBridgeClaude`,
    /// `M-x ccbridge-claude`) from where the user is.
    fn run_claude_command(&mut self);

    /// The text of Claude's terminal, its lines joined as they are, once it
    /// contains `needle`.
    fn wait_claude_terminal(&mut self, needle: &str) -> String;

    /// Goes from Claude's terminal back to the file's window.
    fn back_to_the_file(&mut self);

    /// Whether the user is in Claude's terminal.
    fn in_claude_terminal(&mut self) -> bool;

    /// How many terminals the editor has open.
    fn terminal_count(&mut self) -> usize;

    /// Selects lines `first` to `last` (from 1) of the file being edited
    /// and sends them with the face's send command (`:CCBridgeSend`,
    /// `M-x ccbridge-send`).
    fn send_lines(&mut self, first: usize, last: usize);

    /// Leaves the selection and sends the file with the send command.
    fn send_file(&mut self);

    /// Waits until the current window shows `rel` with the cursor on
    /// `line` (from 1).
    fn wait_file_at(&mut self, rel: &str, line: u64);

    /// Types `line` as a new first line of the file being edited.
    fn type_line_at_top(&mut self, line: &str);

    /// Saves the file being edited, with the editor's key for it.
    fn save(&mut self);

    /// Waits until the editor follows changes on disk (some faces start
    /// to once Claude is connected).
    fn wait_following_disk(&mut self);

    /// The text of `rel`'s buffer, its lines joined by newlines.
    fn buffer_text(&mut self, rel: &str) -> String;

    /// Each thing the editor told its user that contains `needle`, once it
    /// has told one.
    fn wait_told(&mut self, needle: &str) -> Vec<String>;

    /// The option naming ccbridge's program, as the face's notices name
    /// it ("set `bin`").
    const BIN_OPTION: &'static str;

    /// Stops the sidecar and waits until it has stopped, then makes `bin`
    /// ccbridge's program, with `extra` after the test's arguments.
    fn stop_and_set_program(&mut self, bin: &str, extra: &[&str]);

    /// Starts the sidecar with the face's command (`:CCBridgeStart`,
    /// `M-x ccbridge-start`).
    fn start_command(&mut self);

    /// Sets the face's options for a sidecar elsewhere, as its user does:
    /// the command prefix (`prefix`: a list of words, or whatever a user
    /// might write instead), its words after the prefix quoted for a shell
    /// (as `ssh` needs), and the path map (`path_map`: `[local, remote]`
    /// pairs).
    fn set_remote(&mut self, prefix: Value, path_map: Value);

    /// How the face's notice names the path map's first entry.
    const PATH_MAP_FIRST: &'static str;

    /// Every error the editor showed its user so far (Neovim's and Vim's
    /// error notices, Emacs's `*Warnings*`), as one text, once one
    /// contains `needle`.
    fn wait_errors(&mut self, needle: &str) -> String;

    /// The port Gemini CLI is told (its terminal's environment).
    fn gemini_port(&mut self) -> u16 {
        GeminiSide::port_of(&self.init())
    }

    /// Adds `line` at the end of the review's proposed text, unsaved.
    fn append_to_proposal(&mut self, line: &str);

    /// The workspace tools' port and token, as the sidecar reported them
    /// to the editor; the editor made ready to be asked.
    fn tools(&mut self) -> (u16, String) {
        tools_of(&self.init())
    }

    /// Waits until the editor asks its user to approve a command; the text
    /// it shows.
    fn wait_approval(&mut self) -> String;

    /// Answers the approval shown, as its user does.
    fn answer_approval(&mut self, allow: bool);

    /// The view of the commands' output, once it contains `needle`.
    fn wait_command_output(&mut self, needle: &str) -> String;

    /// Leaves one window, on the file being edited.
    fn only_window(&mut self);

    /// Waits until the editor shows the review Claude opened.
    fn wait_review(&mut self);

    /// The file the open review is for, as the editor names it.
    fn review_file(&mut self) -> String;

    /// Waits until the review's windows or buffers are gone.
    fn wait_review_closed(&mut self);

    /// Accepts the review as it stands, with the face's key for it.
    fn accept_review(&mut self);

    /// Accepts the review although the file's buffer has unsaved changes,
    /// as the face's refusal says to.
    fn accept_review_anyway(&mut self);

    /// Closes the review's window or buffer, as a user gets rid of it.
    fn close_review(&mut self);

    /// Puts the cursor before the first hunk.
    fn to_first_hunk(&mut self);

    /// Accepts (or rejects) the hunk at the cursor, or the next one, and
    /// waits until it is decided.
    fn decide_hunk(&mut self, accept: bool);

    /// Puts the cursor on the proposal's last line.
    fn to_last_line(&mut self);

    /// Gives the face's command to accept (or reject) the hunk at the
    /// cursor, without waiting for anything.
    fn hunk_command(&mut self, accept: bool);

    /// What the user does once no hunk is left: nothing where the last
    /// hunk's decision ends the review (Neovim, Vim), a save where the
    /// review stays for a last look (Emacs).
    fn after_last_hunk(&mut self);

    /// Waits until the review shows `needle` beside its lines (virtual
    /// text, a status or header line) and returns what it shows there.
    fn wait_review_shows(&mut self, needle: &str) -> String;

    /// A second editor of this kind in the same workspace and lock
    /// directory (another `HOME`), its sidecar started: it, kept alive by
    /// the first value, and its lock file.
    fn second(&mut self) -> (Box<dyn Any>, PathBuf);

    /// Quits the editor as its user does: whether it exited, and the
    /// rig's directory (the lock directory is in it), kept for a look.
    fn quit(self) -> (bool, tempfile::TempDir);
}

/// The editor visiting `rel` (written with `text`), Claude connected and
/// its proposal of `proposed` open for review. The task returns the
/// tool's text.
async fn review<E: EditorUnderTest>(
    rel: &str,
    text: &str,
    proposed: &str,
) -> (E, tokio::task::JoinHandle<(IdeClient, String)>) {
    let mut e = E::start();
    let path = e.workspace().join(rel);
    std::fs::write(&path, text).unwrap();
    let c = e.claude().await;
    let task = start_open_diff(c, path.display().to_string(), proposed);
    e.wait_review();
    (e, task)
}

/// The files open in the editor, which one is active, and whether one has
/// unsaved changes: what Claude's `getOpenEditors` and `checkDocumentDirty`
/// answer.
pub(crate) async fn open_files_and_unsaved_changes_reach_claude<E: EditorUnderTest>() {
    let mut e = E::start();
    std::fs::write(e.workspace().join("other.txt"), "ö x\n").unwrap();
    e.visit("other.txt");
    e.visit("hello.py");
    let mut c = e.claude().await;
    let hello = e.workspace().join("hello.py").display().to_string();

    let editors = poll_tool(&mut c, "getOpenEditors", json!({}), |v| {
        v["tabs"].as_array().is_some_and(|t| t.len() == 2)
    })
    .await;
    let tabs = editors["tabs"].as_array().unwrap();
    let active: Vec<&Value> = tabs.iter().filter(|t| t["isActive"] == true).collect();
    assert_eq!(active.len(), 1, "{editors}");
    assert!(active[0]["uri"].as_str().unwrap().ends_with("hello.py"));

    // Typing makes the buffer dirty; Claude's checkDocumentDirty says so.
    e.type_line_at_top("import os");
    let dirty = poll_tool(
        &mut c,
        "checkDocumentDirty",
        json!({"filePath": hello}),
        |v| v["isDirty"] == true,
    )
    .await;
    assert_eq!(dirty["success"], true);
    // Saved: clean again, and on disk.
    e.save();
    poll_tool(
        &mut c,
        "checkDocumentDirty",
        json!({"filePath": hello}),
        |v| v["isDirty"] == false,
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(&hello).unwrap(),
        format!("import os\n{HELLO}")
    );
}

/// Claude writes the file the editor shows (the way editors and Claude
/// write: a new file renamed over the old one): the buffer follows. With
/// unsaved changes it is left alone and the user is told, once.
pub(crate) async fn buffers_reload_when_claude_writes_and_unsaved_ones_get_one_notice<
    E: EditorUnderTest,
>() {
    let mut e = E::start();
    let _c = e.claude().await;
    e.wait_following_disk();
    let hello = e.workspace().join("hello.py");
    let write_as_claude = |text: &str| {
        let tmp = hello.with_extension("tmp-claude");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &hello).unwrap();
    };
    let new = HELLO.replace("hello ", "hey ");
    write_as_claude(&new);
    let shown = poll_until(STEP, Duration::from_millis(10), || {
        (e.buffer_text("hello.py") == new.trim_end()).then_some(())
    });
    assert!(
        shown.is_some(),
        "never reloaded: {:?}",
        e.buffer_text("hello.py")
    );

    e.type_line_at_top("# mine");
    let mine = format!("# mine\n{}", new.trim_end());
    let typed = poll_until(STEP, Duration::from_millis(10), || {
        (e.buffer_text("hello.py") == mine).then_some(())
    });
    assert!(typed.is_some(), "{:?}", e.buffer_text("hello.py"));
    write_as_claude(HELLO);
    let told = e.wait_told("hello.py changed on disk but has unsaved changes");
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(e.buffer_text("hello.py"), mine);
}

/// A proposal for a file whose buffer has unsaved changes: the user is
/// warned when it opens, a plain accept is refused (writing the file would
/// lose nothing of the buffer's, but the buffer would no longer be what is
/// on disk) until the user insists, and the buffer keeps the user's edit.
pub(crate) async fn a_proposal_for_a_buffer_with_unsaved_changes_warns_before_accepting<
    E: EditorUnderTest,
>() {
    let mut e = E::start();
    e.type_line_at_top("# mine");
    let typed = poll_until(STEP, Duration::from_millis(10), || {
        e.buffer_text("hello.py")
            .starts_with("# mine\n")
            .then_some(())
    });
    assert!(typed.is_some(), "{:?}", e.buffer_text("hello.py"));
    let c = e.claude().await;
    let path = e.workspace().join("hello.py").display().to_string();
    let task = start_open_diff(c, path, &HELLO.replace("hello ", "hi "));
    e.wait_review();
    e.wait_told("which has unsaved changes here");
    e.accept_review();
    e.wait_told("accept anyway with");
    assert!(!task.is_finished(), "accepted despite the unsaved buffer");
    e.accept_review_anyway();
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("FILE_SAVED"), "{text}");
    // The user's buffer kept its edit.
    assert!(e.buffer_text("hello.py").starts_with("# mine\n"));
}

pub(crate) async fn closing_the_review_rejects_it<E: EditorUnderTest>() {
    let (mut e, task) = review::<E>("hello.py", HELLO, &HELLO.replace("hello ", "hi ")).await;
    e.close_review();
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("DIFF_REJECTED"), "{text}");
    e.wait_review_closed();
    assert_eq!(
        std::fs::read_to_string(e.workspace().join("hello.py")).unwrap(),
        HELLO
    );
}

pub(crate) async fn hunk_decisions_write_only_the_accepted_hunk<E: EditorUnderTest>() {
    let (mut e, task) = review::<E>("hello.py", HELLO, TWO_HUNKS).await;
    e.to_first_hunk();
    e.decide_hunk(false);
    e.decide_hunk(true);
    e.after_last_hunk();
    let (_c, text) = verdict(task).await;
    assert_saved(
        &text,
        &HELLO.replace("greet(\"world\")", "greet(\"everyone\")"),
    );
}

pub(crate) async fn rejecting_every_hunk_is_a_rejection<E: EditorUnderTest>() {
    let (mut e, task) = review::<E>("hello.py", HELLO, TWO_HUNKS).await;
    e.to_first_hunk();
    e.decide_hunk(false);
    e.decide_hunk(false);
    e.after_last_hunk();
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("DIFF_REJECTED"), "{text}");
    assert_eq!(
        std::fs::read_to_string(e.workspace().join("hello.py")).unwrap(),
        HELLO
    );
}

/// Issue 19: a decision applies to the hunk it was made on, never to
/// another that looks the same. The same line replaced the same way
/// three times: reject the first, accept the second, reject the third.
pub(crate) async fn identical_hunks_are_decided_each_at_its_place<E: EditorUnderTest>() {
    let original = "x = 1\nprint(x)\nx = 1\nprint(x)\nx = 1\n";
    let (mut e, task) =
        review::<E>("repeat.py", original, &original.replace("x = 1", "x = 2")).await;
    e.to_first_hunk();
    e.decide_hunk(false);
    e.decide_hunk(true);
    e.decide_hunk(false);
    e.after_last_hunk();
    let (_c, text) = verdict(task).await;
    assert_saved(&text, "x = 1\nprint(x)\nx = 2\nprint(x)\nx = 1\n");
}

/// A hunk command decides the hunk at the cursor or the next one below it,
/// never one above: with the cursor below the only hunk, accepting accepted
/// that hunk (and with it the whole review). Now it says so and decides
/// nothing; the hunk is then rejected where it is.
pub(crate) async fn a_hunk_command_below_every_hunk_decides_nothing<E: EditorUnderTest>() {
    let original = "a\nb\nc\nd\ne\nf\n";
    let (mut e, task) = review::<E>("letters.txt", original, &original.replace('a', "A")).await;
    e.to_last_line();
    e.hunk_command(true);
    e.wait_told("no undecided hunk at or below");
    e.to_first_hunk();
    e.decide_hunk(false);
    e.after_last_hunk();
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("DIFF_REJECTED"), "{text}");
}

/// A file whose lines end both ways (part of it edited on Windows): Neovim
/// could not open its review (a buffer line may not hold a line break),
/// Vim showed two lines as one, Emacs gave every line CRLF. Accepted as
/// proposed, it is saved byte for byte.
pub(crate) async fn a_mixed_line_end_file_is_reviewed_and_saved_byte_for_byte<
    E: EditorUnderTest,
>() {
    let original = "one\r\ntwo\nthree\r\nfour\n";
    let proposed = "one\r\nTWO\nthree\r\nfour\n";
    let (mut e, task) = review::<E>("mixed.txt", original, proposed).await;
    e.accept_review();
    let (_c, text) = verdict(task).await;
    assert_saved(&text, proposed);
}

/// A heading underlined with seven `=` and a literal conflict block: Emacs
/// read its review buffer's conflicts by their text, so accepting added a
/// stray `=======` line and a hunk beside the block deleted four of its
/// lines. Every face saves such a file exactly as proposed.
pub(crate) async fn lines_that_look_like_conflict_markers_are_saved_as_they_are<
    E: EditorUnderTest,
>() {
    let block = "<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n";
    let original = format!("Install\n=======\n\nRun it.\n\n{block}end\n");
    let proposed = format!("Installation\n============\n\nRun it.\n\n{block}END\n");
    let (mut e, task) = review::<E>("README.rst", &original, &proposed).await;
    e.accept_review();
    let (_c, text) = verdict(task).await;
    assert_saved(&text, &proposed);
}

/// An empty new file (`__init__.py`, `.gitkeep`) proposed and accepted was
/// answered as rejected: the proposal equals the empty original the faces
/// show for a new file, and that equality meant "rejected".
pub(crate) async fn accepting_an_empty_new_file_saves_it<E: EditorUnderTest>() {
    let mut e = E::start();
    let path = e.workspace().join("__init__.py");
    let c = e.claude().await;
    let task = start_open_diff(c, path.display().to_string(), "");
    e.wait_review();
    e.accept_review();
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("FILE_SAVED"), "{text}");
}

/// A proposal that only adds the missing final line break showed no line of
/// difference in Neovim and Vim (their diff compares lines), Emacs showed
/// two equal lines in conflict, and a hunk command in Neovim or Vim then
/// decided the whole review. The change is shown, and it is a hunk of its
/// own at the last line: rejecting the other hunk keeps it.
pub(crate) async fn a_change_to_the_final_line_break_is_shown_and_decided_on_its_own<
    E: EditorUnderTest,
>() {
    let (mut e, task) = review::<E>("notes.txt", "a\nb\nc", "A\nb\nc\n").await;
    e.wait_review_shows("line break at the end");
    e.to_first_hunk();
    e.decide_hunk(false);
    e.decide_hunk(true);
    e.after_last_hunk();
    let (_c, text) = verdict(task).await;
    assert_saved(&text, "a\nb\nc\n");
}

/// The indicator shows whether Claude is connected, and the status report
/// says where ccbridge is (port, lock file, workspace), who is connected
/// and where its workspace tools are.
pub(crate) async fn the_status_follows_claudes_session<E: EditorUnderTest>() {
    let mut e = E::start();
    e.visit("hello.py");
    let init = e.init();
    let port = init["port"].as_u64().unwrap();
    let lock = init["lockFile"].as_str().unwrap().to_owned();
    let tools = init["tools"]["url"].as_str().unwrap().to_owned();
    let shows =
        |indicator: String, mark: char| indicator.contains("Claude") && indicator.contains(mark);
    assert!(shows(e.indicator(), '○'), "{:?}", e.indicator());
    let c = e.claude().await;
    assert!(shows(e.indicator(), '●'), "{:?}", e.indicator());
    let report = e.status_report();
    for needle in [
        format!("port {port}, lock file {lock}"),
        format!("workspace: {}", e.workspace().display()),
        "session 1: claude-code".to_owned(),
        format!("workspace tools (MCP): {tools}, asking before writes and commands"),
    ] {
        assert!(report.contains(&needle), "no {needle:?} in\n{report}");
    }
    c.close().await.unwrap();
    poll_until(STEP, Duration::from_millis(20), || {
        shows(e.indicator(), '○').then_some(())
    })
    .unwrap_or_else(|| panic!("still {:?} after Claude left", e.indicator()));
}

pub(crate) async fn quitting_the_editor_removes_the_lock_file<E: EditorUnderTest>() {
    let mut e = E::start();
    let lock = e.lock_file();
    assert!(lock.exists(), "{} was never written", lock.display());
    let lock_dir = e.lock_dir().to_owned();
    let (exited, _dir) = e.quit();
    assert!(exited, "the editor did not exit");
    let gone = poll_until(STEP, Duration::from_millis(10), || {
        ccbridge_testkit::lock_files(&lock_dir)
            .is_empty()
            .then_some(())
    });
    assert!(gone.is_some(), "{} outlived the editor", lock.display());
}

/// claudecode.nvim #237/#247: every instance had the same name in `/ide`.
pub(crate) async fn a_second_editor_in_the_same_folder_gets_a_distinct_name<E: EditorUnderTest>() {
    let mut first = E::start();
    let name = first.ide_name();
    let ide_name = |lock: &Path| -> Option<Value> {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(lock).ok()?).ok()?;
        Some(v["ideName"].clone())
    };
    let first_lock = first.lock_file();
    assert_eq!(ide_name(&first_lock), Some(Value::from(name.clone())));
    let (_second, lock) = first.second();
    let want = format!("{name} [2]");
    let named = poll_until(STEP, Duration::from_millis(10), || {
        (ide_name(&lock)? == want.as_str()).then_some(())
    });
    assert!(named.is_some(), "{} never named {want:?}", lock.display());
    assert_eq!(ide_name(&first_lock), Some(Value::from(name)));
}

/// Issue 19: Gemini CLI applies the `content` of its `closeDiff` answer
/// when the user answers in its terminal: the review's text, with what the
/// user changed in the editor, not Gemini's own proposal.
pub(crate) async fn answered_in_gemini_clis_terminal_the_cli_gets_the_reviews_edited_text<
    E: EditorUnderTest,
>() {
    let mut e = E::start();
    let gemini = GeminiSide::connect(e.gemini_port(), &e.home());
    let path = e.workspace().join("hello.py").display().to_string();
    gemini.answered_in_terminal(&path, HELLO, |step| match step {
        Step::Edit => {
            e.wait_review();
            e.append_to_proposal(KEPT_LINE);
        }
        Step::Closed => e.wait_review_closed(),
    });
}

/// The workspace tools' port and token in an `initialize` answer.
/// The face's command for Claude runs the `claude` on the editor's PATH in
/// a terminal, connected to this editor's sidecar (its port, IDE mode on,
/// loopback kept away from proxies) and with the sidecar's settings first,
/// so every edit asks and is reviewed here, even in the auto mode Claude
/// starts in. Asked again, it brings back the same terminal, not a second.
pub(crate) async fn the_claude_command_runs_claude_connected_in_a_terminal<E: EditorUnderTest>() {
    let bin = tempfile::tempdir().unwrap();
    let claude = bin.path().join("claude");
    std::fs::write(
        &claude,
        "#!/bin/sh\necho \"port=$CLAUDE_CODE_SSE_PORT ide=$ENABLE_IDE_INTEGRATION np=$no_proxy args=$*\"\nexec sleep 60\n",
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut e = E::start_with_path(bin.path());
    let port = e.init()["port"].as_u64().unwrap();
    e.run_claude_command();
    // The hook's matcher, near the end of the settings: all was printed.
    let out = e.wait_claude_terminal("MultiEdit|Write");
    assert!(out.contains(&format!("port={port} ide=true")), "{out}");
    assert!(out.contains("args=--settings {"), "{out}");
    assert!(out.contains("permissionDecision"), "{out}");
    assert!(out.contains("127.0.0.1"), "no_proxy: {out}");
    e.back_to_the_file();
    e.run_claude_command();
    let back = poll_until(STEP, Duration::from_millis(10), || {
        e.in_claude_terminal().then_some(())
    });
    assert!(back.is_some(), "Claude's terminal was not brought back");
    assert_eq!(e.terminal_count(), 1, "a second terminal");
}

/// The workspace tools, asked to write over `hello.py` while the editor
/// holds unsaved changes of it, refuse, and the file stays as it was.
pub(crate) fn assert_the_tools_see_hellos_unsaved_changes<E: EditorUnderTest>(e: &mut E) {
    let (port, token) = tools_of(&e.init());
    let r = ccbridge_testkit::http::mcp_call(
        port,
        &token,
        "write_file",
        json!({"path": "hello.py", "content": "overwritten\n"}),
        STEP,
    );
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("unsaved changes"), "{r}");
    assert_eq!(
        std::fs::read_to_string(e.workspace().join("hello.py")).unwrap(),
        HELLO
    );
}

/// Waits until `shown()` (what a review shows beside its lines) contains
/// `needle`; returns it.
pub(crate) fn wait_shown(needle: &str, mut shown: impl FnMut() -> String) -> String {
    let mut last = String::new();
    let found = poll_until(STEP, Duration::from_millis(10), || {
        last = shown();
        last.contains(needle).then_some(())
    });
    assert!(
        found.is_some(),
        "the review does not show {needle:?}: {last}"
    );
    last
}

pub(crate) fn tools_of(init: &Value) -> (u16, String) {
    let tools = &init["tools"];
    let url = tools["url"]
        .as_str()
        .unwrap_or_else(|| panic!("no tools in {init}"));
    let port = ccbridge_testkit::http::url_port(url);
    (port, tools["token"].as_str().unwrap().to_owned())
}

/// A caller of the workspace tools at `port`, one call per thread (it
/// waits for the editor's user).
fn tools_caller(
    port: u16,
    token: String,
) -> impl Fn(&str, Value) -> std::thread::JoinHandle<Value> {
    move |name: &str, args: Value| {
        let (name, token) = (name.to_owned(), token.clone());
        std::thread::spawn(move || {
            ccbridge_testkit::http::mcp_call(port, &token, &name, args, Duration::from_secs(60))
                ["result"]
                .clone()
        })
    }
}

/// The text of a tool's answer, parsed.
fn tool_json(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {result}"))
}

/// The workspace tools in the editor: a command runs once its user allows
/// it, its output (colours rendered, no escapes) in a view of its own; a
/// denied one does not run; a write is reviewed like Claude's edits, and
/// what the user changed in the review is what is written, and reported.
pub(crate) async fn workspace_tools_ask_the_user_and_show_the_commands_output<
    E: EditorUnderTest,
>() {
    let mut e = E::start();
    let (port, token) = e.tools();
    let call = tools_caller(port, token);
    let run = call(
        "execute_command",
        json!({"command": "printf 'plain \\033[31mred\\033[0m\\n'"}),
    );
    let asked = e.wait_approval();
    assert!(asked.contains("printf 'plain"), "{asked}");
    e.answer_approval(true);
    let r = tool_json(&run.join().unwrap());
    assert_eq!(r["exit_code"], 0, "{r}");
    assert_eq!(r["output"], "plain red\n");
    let shown = e.wait_command_output("[exit 0]");
    assert!(shown.contains("plain red"), "{shown}");
    assert!(!shown.contains('\u{1b}'), "escapes left in: {shown:?}");

    // Denied: not run.
    let run = call("execute_command", json!({"command": "touch ran"}));
    e.wait_approval();
    e.answer_approval(false);
    let result = run.join().unwrap();
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"rejected\""),
        "{result}"
    );
    assert!(!e.workspace().join("ran").exists());

    // write_file: reviewed; the user's line is written and reported.
    e.only_window();
    e.visit("hello.py");
    let proposed = HELLO.replace("hello ", "hi ");
    let write = call(
        "write_file",
        json!({"path": "hello.py", "content": proposed}),
    );
    e.wait_review();
    e.append_to_proposal("greet(\"you\")");
    e.accept_review();
    let r = tool_json(&write.join().unwrap());
    assert_eq!(r["status"], "accepted", "{r}");
    assert!(
        r["user_edits"]
            .as_str()
            .unwrap()
            .contains("+greet(\"you\")"),
        "{r}"
    );
    let expected = format!("{proposed}greet(\"you\")\n");
    assert_eq!(
        std::fs::read_to_string(e.workspace().join("hello.py")).unwrap(),
        expected
    );
    e.wait_review_closed();
    let follows = poll_until(STEP, Duration::from_millis(10), || {
        (e.buffer_text("hello.py") == expected.trim_end()).then_some(())
    });
    assert!(follows.is_some(), "{:?}", e.buffer_text("hello.py"));
}

/// Security issue 20, item 3: a right-to-left isolate drew `; touch X; :`
/// after the `#`, as if commented out. The approval shows the sidecar's
/// rendering (markers, a warning, every line), never the raw characters;
/// so does the run's output view; and what was shown is what runs.
pub(crate) async fn a_command_hiding_text_with_bidi_characters_is_shown_with_markers<
    E: EditorUnderTest,
>() {
    let mut e = E::start();
    let (port, token) = e.tools();
    let run = tools_caller(port, token)(
        "execute_command",
        json!({"command": "echo safe \u{2067}; touch X; : #\u{2069}\necho second line\r"}),
    );
    let asked = e.wait_approval();
    assert!(
        asked.contains("3 hidden or look-alike characters"),
        "{asked:?}"
    );
    assert!(
        asked.contains("echo safe \u{27E8}U+2067\u{27E9}; touch X; : #\u{27E8}U+2069\u{27E9}"),
        "{asked:?}"
    );
    assert!(
        asked.contains("echo second line\u{27E8}U+000D\u{27E9}"),
        "{asked:?}"
    );
    assert!(
        !asked.contains(['\u{2067}', '\u{2069}', '\r']),
        "raw characters in the approval: {asked:?}"
    );
    e.answer_approval(true);
    run.join().unwrap();
    assert!(
        e.workspace().join("X").exists(),
        "what was shown is what ran"
    );
    let view = e.wait_command_output("$ echo");
    let view = &view[view.find("$ echo").unwrap()..];
    assert!(
        view.starts_with("$ echo safe \u{27E8}U+2067\u{27E9}; touch X"),
        "{view:?}"
    );
    // The header (the command's output is the command's own business).
    let header = &view[..view.find("second line").unwrap()];
    assert!(!header.contains(['\u{2067}', '\u{2069}']), "{view:?}");
}

/// `@`-mentions for Claude's prompt: the selected lines (from 0 on the
/// wire, as VS Code sends them), or with no selection the file. One sent
/// before Claude connects says so and reaches Claude when it connects.
pub(crate) async fn send_mentions_the_selected_lines_or_the_file<E: EditorUnderTest>() {
    let mut e = E::start();
    let hello = e.workspace().join("hello.py").display().to_string();
    e.send_lines(2, 3);
    e.wait_told("@hello.py:2-3 (sent when Claude connects)");
    let mut c = e.claude().await;
    let m = next_note(&mut c, "at_mentioned").await;
    assert_eq!(m["filePath"], hello);
    assert_eq!(
        (m["lineStart"].as_u64(), m["lineEnd"].as_u64()),
        (Some(1), Some(2))
    );
    e.send_file();
    let m = next_note(&mut c, "at_mentioned").await;
    assert_eq!(m["filePath"], hello);
    assert!(m.get("lineStart").is_none_or(Value::is_null), "{m}");
    let told = e.wait_told("@hello.py");
    assert!(told.iter().any(|t| t.ends_with("@hello.py")), "{told:?}");
}

/// A ccbridge of another editor protocol version (here one that speaks
/// only version 1, refusing `initialize` as an older ccbridge does): the
/// user is told which version each side speaks and how to get the ccbridge
/// that goes with the plugin, once (a second start does not tell again),
/// and nothing runs.
pub(crate) async fn a_ccbridge_of_another_protocol_version_is_reported_once_with_what_to_do<
    E: EditorUnderTest,
>() {
    let mut e = E::start();
    let scratch = tempfile::tempdir().unwrap();
    let old = scratch.path().join("old-ccbridge");
    let runs = scratch.path().join("runs");
    // It answers the first request (initialize, id 1) once it has come.
    std::fs::write(
        &old,
        format!(
            "#!/bin/sh\necho run >> '{}'\nread -r _\n\
             body='{{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{{\"code\":-32602,\
             \"message\":\"unsupported editor protocol version\",\"data\":{{\"supported\":[1]}}}}}}'\n\
             printf 'Content-Length: %s\\r\\n\\r\\n%s' \"${{#body}}\" \"$body\"\nexec cat >/dev/null\n",
            runs.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
    let old = old.display().to_string();
    e.stop_and_set_program(&old, &[]);
    let start = |e: &mut E, n: usize| {
        e.start_command();
        let ran = poll_until(STEP, Duration::from_millis(10), || {
            let runs = std::fs::read_to_string(&runs).unwrap_or_default();
            (runs.lines().count() == n && e.status() == "stopped").then_some(())
        });
        assert!(ran.is_some(), "start {n} did not end: {}", e.status());
    };
    start(&mut e, 1);
    let errors = e.wait_errors("speaks 1");
    let version = ccbridge_sidecar::messages::PROTOCOL_VERSION.to_string();
    for what in [&old, &version, "cargo install --path crates/ccbridge"] {
        assert!(errors.contains(what), "no {what:?} in {errors}");
    }
    start(&mut e, 2);
    let errors = e.wait_errors("speaks 1");
    assert_eq!(errors.matches("speaks 1").count(), 1, "{errors}");
    assert!(!errors.contains("exited"), "{errors}");
}

/// Settings for a sidecar elsewhere that cannot be right (a path map entry
/// with a relative path, a prefix that is not a list of words): the user is
/// told what is wrong and nothing runs, neither the prefix (it would start
/// a sidecar with paths crossing under the wrong names) nor a local sidecar
/// in its place.
pub(crate) async fn a_bad_remote_setting_is_an_error_before_anything_runs<E: EditorUnderTest>() {
    let mut e = E::start();
    let scratch = tempfile::tempdir().unwrap();
    let mark = scratch.path().join("prefix-ran");
    let prefix = ssh_like_prefix(&mark);
    e.stop_and_set_program(env!("CARGO_BIN_EXE_ccbridge"), &[]);
    e.set_remote(prefix, json!([["relative", "/srv"]]));
    e.start_command();
    let errors = e.wait_errors("not started");
    for what in [E::PATH_MAP_FIRST, "must be"] {
        assert!(errors.contains(what), "no {what:?} in {errors}");
    }
    assert_eq!(e.status(), "stopped");
    e.set_remote(json!("ssh devbox"), json!([["/a", "/b"]]));
    e.start_command();
    e.wait_errors("must be a list of strings");
    assert_eq!(e.status(), "stopped");
    assert!(!mark.exists(), "the prefix ran");
    let locks = ccbridge_testkit::lock_files(e.lock_dir());
    assert!(locks.is_empty(), "a sidecar started: {locks:?}");
}

/// A stand-in for `ssh -T host`: a real prefix process that leaves a mark
/// at `mark` and, as ssh does, joins the words after it into one command
/// line for a shell (so they arrive intact only if the face quoted them).
fn ssh_like_prefix(mark: &Path) -> Value {
    json!(["sh", "-c", ssh_like_script(mark), "ssh-like"])
}

/// The script of [`ssh_like_prefix`]'s shell.
fn ssh_like_script(mark: &Path) -> String {
    format!("touch '{}'; eval \"exec $*\"", mark.display())
}

/// A sidecar started through a prefix where the files go by other names,
/// as over `ssh` to a host that has the project elsewhere. The prefix is
/// [`ssh_like_prefix`] run in a mount namespace of its own (`unshare`),
/// where the workspace is also mounted at `remote`: a folder that is
/// empty everywhere but on the sidecar's side. The path map renames every
/// path that crosses, both ways; the IDE name (spaces, parentheses) comes
/// through the shell after the prefix whole.
pub(crate) async fn through_a_prefix_paths_cross_under_the_sidecars_names<E: EditorUnderTest>() {
    through_a_prefix::<E>(false).await
}

/// As above, with the path map naming the workspace through a symlink, as
/// a user whose project is reached through one writes it: the files the
/// editor names by the real folder (Neovim names every buffer so) still
/// cross under the sidecar's names.
pub(crate) async fn a_path_map_naming_the_workspace_through_a_symlink_still_applies<
    E: EditorUnderTest,
>() {
    through_a_prefix::<E>(true).await
}

/// The two scenarios above; with `link`, the path map's local side is a
/// symlink to the workspace.
async fn through_a_prefix<E: EditorUnderTest>(link: bool) {
    let mut e = E::start();
    let ws = e.workspace().to_owned();
    let name = e.lock()["ideName"].clone();
    let scratch = tempfile::tempdir().unwrap();
    let mark = scratch.path().join("prefix-ran");
    let remote = scratch.path().join("remote");
    std::fs::create_dir(&remote).unwrap();
    let mount = format!("mount --bind '{}' '{}'", ws.display(), remote.display());
    let prefix = json!([
        "unshare",
        "--user",
        "--map-root-user",
        "--mount",
        "sh",
        "-c",
        format!("{mount} && {}", ssh_like_script(&mark)),
        "ssh-like"
    ]);
    let local = if link {
        let l = scratch.path().join("link");
        std::os::unix::fs::symlink(&ws, &l).unwrap();
        l
    } else {
        ws.clone()
    };
    e.stop_and_set_program(env!("CARGO_BIN_EXE_ccbridge"), &[]);
    e.set_remote(prefix, json!([[local, remote]]));
    e.start_command();
    let running = poll_until(STEP, Duration::from_millis(10), || {
        (e.status() == "running").then_some(())
    });
    assert!(running.is_some(), "not running: {}", e.status());
    assert!(mark.exists(), "the prefix did not run");
    let lock = e.lock();
    assert_eq!(lock["workspaceFolders"], json!([remote]));
    assert_eq!(lock["ideName"], name);

    // Lines of the editor's file reach Claude under the sidecar's name.
    let mut c = e.claude().await;
    let remote_hello = remote.join("hello.py").display().to_string();
    e.send_lines(2, 3);
    let m = next_note(&mut c, "at_mentioned").await;
    assert_eq!(m["filePath"], remote_hello);

    // openFile by the sidecar's name shows the editor's file, at the text
    // the sidecar found there (through a link: under the name the editor
    // gives it, the link's or the real one).
    std::fs::write(ws.join("other.txt"), "one\ntwo\n").unwrap();
    let remote_other = remote.join("other.txt").display().to_string();
    open_file_at_text(&mut c, &remote_other, "two").await;
    if !link {
        e.wait_file_at("other.txt", 2);
    }

    // A review of the sidecar's file (the original as the sidecar read it)
    // opens for the editor's.
    let proposed = HELLO.replace("hello ", "hi ");
    let task = start_open_diff(c, remote_hello, &proposed);
    e.wait_review();
    let file = std::fs::canonicalize(e.review_file()).unwrap();
    assert_eq!(file, ws.join("hello.py"));
    e.accept_review();
    let (_c, text) = verdict(task).await;
    assert_saved(&text, &proposed);
}

/// Claude opens a file at a line (`openFile`): the editor shows it with the
/// cursor there; the changes its user then makes are reported unsaved
/// (`checkDocumentDirty`), and `saveDocument` writes them.
pub(crate) async fn claude_opens_a_file_at_a_line_and_saves_it<E: EditorUnderTest>() {
    let mut e = E::start();
    std::fs::write(e.workspace().join("b.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    let b = e.workspace().join("b.txt").display().to_string();
    let mut c = e.claude().await;
    let r = c
        .call_tool(
            "openFile",
            json!({"filePath": b, "preview": false, "startLine": 3, "endLine": 3,
                   "selectToEndOfLine": false, "makeFrontmost": true}),
            Some(STEP),
        )
        .await
        .unwrap();
    assert!(!r.is_error, "{r:?}");
    e.wait_file_at("b.txt", 3);
    e.type_line_at_top("first");
    let dirty = json!({"filePath": b});
    poll_tool(&mut c, "checkDocumentDirty", dirty.clone(), |v| {
        v["isDirty"] == true
    })
    .await;
    let r = c
        .call_tool("saveDocument", json!({"filePath": b}), Some(STEP))
        .await
        .unwrap();
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(&b).unwrap(),
        "first\none\ntwo\nthree\nfour\n"
    );
    poll_tool(&mut c, "checkDocumentDirty", dirty, |v| {
        v["isDirty"] == false
    })
    .await;
}

/// A ccbridge that is not there: the user is told once, not at every
/// start, with the path, how to install it and the option to set; the
/// status says why nothing runs.
pub(crate) async fn a_missing_binary_is_reported_once_with_what_to_do<E: EditorUnderTest>() {
    let missing = "/nonexistent/ccbridge";
    let mut e = E::start();
    e.stop_and_set_program(missing, &[]);
    e.start_command();
    e.start_command();
    let errors = e.wait_errors("not found");
    assert_eq!(errors.matches("not found").count(), 1, "{errors}");
    for what in [missing, "install ccbridge", E::BIN_OPTION] {
        assert!(errors.contains(what), "no {what:?} in {errors}");
    }
    let status = e.status_report();
    assert!(status.contains(missing), "{status}");
    assert!(status.contains("not found"), "{status}");
}

/// A sidecar that exits before it answers (an option this ccbridge does
/// not know, a folder it cannot watch): the user is told once that it
/// exited, with what it printed, and not that it may be of another version
/// (it never answered); the status says so too.
pub(crate) async fn a_sidecar_exiting_at_start_up_is_reported_with_what_it_said<
    E: EditorUnderTest,
>() {
    let mut e = E::start();
    e.stop_and_set_program(env!("CARGO_BIN_EXE_ccbridge"), &["--no-such-option"]);
    e.start_command();
    let errors = e.wait_errors("exited");
    assert_eq!(errors.matches("exited").count(), 1, "{errors}");
    assert!(
        errors.contains("unexpected argument '--no-such-option'"),
        "what the sidecar printed is not shown: {errors}"
    );
    assert!(!errors.contains("another version"), "{errors}");
    let status = e.status_report();
    assert!(status.contains("exited"), "{status}");
}

/// Each scenario of the list once per face, as `<face>::<scenario>`:
/// `in_faces!([nvim: crate::nvim_plugin::Rig, ...], [scenario, ...])`.
macro_rules! in_faces {
    ([$($face:ident: $rig:ty),* $(,)?], $scenarios:tt) => {
        $( in_faces!(@face $face, $rig, $scenarios); )*
    };
    (@face $face:ident, $rig:ty, [$($scenario:ident),* $(,)?]) => {
        mod $face {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario::<$rig>().await
                }
            )*
        }
    };
}
pub(crate) use in_faces;

in_faces!(
    [
        nvim: crate::nvim_plugin::Rig,
        vim: crate::vim_plugin::Rig,
        emacs: crate::emacs_package::Rig,
    ],
    [
        open_files_and_unsaved_changes_reach_claude,
        buffers_reload_when_claude_writes_and_unsaved_ones_get_one_notice,
        a_proposal_for_a_buffer_with_unsaved_changes_warns_before_accepting,
        closing_the_review_rejects_it,
        hunk_decisions_write_only_the_accepted_hunk,
        rejecting_every_hunk_is_a_rejection,
        identical_hunks_are_decided_each_at_its_place,
        a_hunk_command_below_every_hunk_decides_nothing,
        accepting_an_empty_new_file_saves_it,
        a_change_to_the_final_line_break_is_shown_and_decided_on_its_own,
        a_mixed_line_end_file_is_reviewed_and_saved_byte_for_byte,
        lines_that_look_like_conflict_markers_are_saved_as_they_are,
        the_status_follows_claudes_session,
        quitting_the_editor_removes_the_lock_file,
        a_second_editor_in_the_same_folder_gets_a_distinct_name,
        answered_in_gemini_clis_terminal_the_cli_gets_the_reviews_edited_text,
        workspace_tools_ask_the_user_and_show_the_commands_output,
        a_command_hiding_text_with_bidi_characters_is_shown_with_markers,
        the_claude_command_runs_claude_connected_in_a_terminal,
        send_mentions_the_selected_lines_or_the_file,
        a_ccbridge_of_another_protocol_version_is_reported_once_with_what_to_do,
        a_bad_remote_setting_is_an_error_before_anything_runs,
        claude_opens_a_file_at_a_line_and_saves_it,
        a_missing_binary_is_reported_once_with_what_to_do,
        a_sidecar_exiting_at_start_up_is_reported_with_what_it_said,
        through_a_prefix_paths_cross_under_the_sidecars_names,
        a_path_map_naming_the_workspace_through_a_symlink_still_applies,
    ]
);
