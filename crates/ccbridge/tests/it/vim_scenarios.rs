//! What the two faces with Vim's keys do alike, written once: Neovim's Lua
//! plugin and Vim's Vim9 one share Visual mode, diff mode (`do`, `:w` in
//! the proposal, `:CCBridgeReject`), terminals and the plugin's commands,
//! so each scenario here is a generic function over [`VimUnderTest`] and
//! `in_faces!` runs it in each (`vim_scenarios::nvim::<scenario>`,
//! `::vim::`).
//!
//! The scenarios speak Vim script (`mode()`, `&diff`, `win_getid()`),
//! which Neovim evaluates as well; a driver adds what differs: how keys
//! are typed, how the plugin is configured (Lua's `setup()` or
//! `g:ccbridge`), how a terminal is opened and where the plugin's events
//! are recorded. What every editor face does, Emacs included, is in
//! `editor_scenarios`.

use crate::claude_side::{assert_saved, range, selection_with, start_open_diff, verdict};
use crate::editor_scenarios::{in_faces, EditorUnderTest, TWO_HUNKS};
use ccbridge_client::ws_client::IdeClient;
use ccbridge_testkit::poll_until;
use ccbridge_testkit::HELLO_PY as HELLO;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

const STEP: Duration = Duration::from_secs(10);

/// Neovim or Vim with the plugin, driven as its user drives it.
pub(crate) trait VimUnderTest: EditorUnderTest {
    /// As [`EditorUnderTest::start`], with `options` (the plugin's options
    /// as JSON: `{"diff": {"layout": "horizontal"}}`) over the test
    /// defaults.
    fn start_with(options: Value) -> Self;

    /// Types `keys` (`<CR>`, `<Esc>`, `<C-w>` notation) as the user does.
    fn keys(&mut self, keys: &str);

    /// Runs an Ex command directly, not typed.
    fn ex(&mut self, command: &str);

    /// The value of the Vim script expression `expr`.
    fn eval(&mut self, expr: &str) -> Value;

    /// Waits until the Vim script expression `expr` is truthy (not `0`,
    /// `''`, an empty list or `v:null`) and returns it.
    fn wait(&mut self, what: &str, expr: &str) -> Value;

    /// The data of each `User` event named `name` the plugin fired, oldest
    /// first.
    fn events(&mut self, name: &str) -> Vec<Value>;

    /// Windows per tab page, as `[[buffer names]]`.
    fn layout(&mut self) -> Value;

    /// Opens a terminal in the current window and enters its terminal
    /// mode, as the user would before asking Claude there.
    fn terminal_here(&mut self);

    /// The bar over the review's proposal (Neovim's winbar, Vim's
    /// statusline), which says whose proposal it is.
    fn review_bar(&mut self) -> String;

    /// The plugin's help file, and the tags for what the face configures
    /// its own way (Lua's `setup()`, `g:ccbridge`) that it must hold.
    fn help() -> (PathBuf, &'static [&'static str]);

    /// Sets the option at `path` (`["terminal", "cmd"]`) while the plugin
    /// runs, as a user changing their configuration does.
    fn set_option(&mut self, path: &[&str], value: Value);

    /// Configures the plugin as its user does (Neovim's `setup()`, Vim's
    /// `g:ccbridge`) with `options`, keeping the test's `bin` and `args`.
    fn configure(&mut self, options: Value);

    /// The option at `path` as the plugin uses it.
    fn option(&mut self, path: &[&str]) -> Value;

    /// The buffer of Claude's terminal (`:CCBridgeClaude`), if there is one.
    fn claude_terminal(&mut self) -> Option<u64>;

    /// Whether the program in the terminal buffer `buf` has exited.
    fn terminal_finished(&mut self, buf: u64) -> bool;
}

/// The full path of `rel` in the workspace.
fn path<E: VimUnderTest>(e: &E, rel: &str) -> String {
    e.workspace().join(rel).display().to_string()
}

/// The editor (with `options`) visiting hello.py, Claude connected, and
/// its proposal of `proposed` open for review. The task returns the
/// tool's text.
async fn review<E: VimUnderTest>(
    options: Value,
    proposed: &str,
) -> (E, tokio::task::JoinHandle<(IdeClient, String)>) {
    let mut e = E::start_with(options);
    let c = e.claude().await;
    let task = start_open_diff(c, path(&e, "hello.py"), proposed);
    e.wait_review();
    (e, task)
}

pub(crate) async fn visual_selections_reach_claude_with_utf16_positions<E: VimUnderTest>() {
    let mut e = E::start();
    std::fs::write(
        e.workspace().join("multi.txt"),
        "héllo wörld 😀 end\nsecond line\nthird ünïcode line\nlast\n",
    )
    .unwrap();
    e.visit("multi.txt");
    let mut c = e.claude().await;

    // Charwise, past multibyte characters.
    e.keys("gg0fwve");
    let s = selection_with(&mut c, "wörld").await;
    assert_eq!(s["filePath"], path(&e, "multi.txt"));
    assert_eq!(range(&s), [0, 6, 0, 11]);
    // Past an emoji (two UTF-16 units, four bytes): 'héllo wörld ' is 12
    // UTF-16 units, the emoji 2 more, then ' end'.
    e.keys("<Esc>0f😀v$h");
    let s = selection_with(&mut c, "😀 end").await;
    assert_eq!(range(&s), [0, 12, 0, 18]);

    // Linewise over two lines: VS Code's form ends at the next line's start.
    e.keys("<Esc>jVj");
    let s = selection_with(&mut c, "second line\nthird ünïcode line\n").await;
    assert_eq!(range(&s), [1, 0, 3, 0]);

    // Blockwise: the block's text, its corners.
    e.keys("<Esc>gg0<C-v>jl");
    let s = selection_with(&mut c, "hé\nse").await;
    assert_eq!(range(&s), [0, 0, 1, 2]);

    // Normal mode: a bare cursor, character in UTF-16.
    e.keys("<Esc>gg0fe");
    let s = selection_with(&mut c, "").await;
    assert_eq!(range(&s), [0, 15, 0, 15]);
}

pub(crate) async fn leaving_visual_mode_becomes_a_bare_cursor_after_the_hold<E: VimUnderTest>() {
    let mut e = E::start_with(json!({"selection": {"visual_hold_ms": 100}}));
    let mut c = e.claude().await;
    e.keys("2G0wviw");
    selection_with(&mut c, "message").await;
    e.keys("<Esc>");
    let s = selection_with(&mut c, "").await;
    assert_eq!(range(&s), [1, 10, 1, 10]);
}

/// claudecode.nvim #246: a selection made and left at once was never sent.
/// `V` moves no cursor and `y` leaves Visual mode at once; a jump to a
/// terminal (Claude's) then keeps it: nothing else is sent.
pub(crate) async fn a_quick_linewise_selection_is_sent_and_kept_while_in_a_terminal<
    E: VimUnderTest,
>() {
    let mut e = E::start_with(json!({"selection": {"debounce_ms": 50, "visual_hold_ms": 60000}}));
    let mut c = e.claude().await;
    e.keys("3GVy");
    let s = selection_with(&mut c, "    print(message)\n").await;
    assert_eq!(range(&s), [2, 0, 3, 0]);
    e.terminal_here();
    e.wait("the terminal", "&buftype ==# 'terminal'");
    let next = c
        .next_notification(Duration::from_millis(400))
        .await
        .unwrap();
    assert!(
        next.filter(|n| n.method == "selection_changed").is_none(),
        "the selection was replaced while in the terminal"
    );
}

pub(crate) async fn w_in_the_edited_proposal_accepts_its_text_and_restores_the_layout<
    E: VimUnderTest,
>() {
    let mut e = E::start();
    e.ex("vsplit");
    let before = e.layout();
    let before_win = e.eval("win_getid()");
    let c = e.claude().await;
    let proposed = HELLO.replace("hello ", "hi ");
    let task = start_open_diff(c, path(&e, "hello.py"), &proposed);
    e.wait_review();
    // A new tab with the original and the proposal in diff mode.
    let layout = e.layout();
    assert_eq!(layout.as_array().unwrap().len(), 2, "{layout}");
    assert_eq!(layout[1].as_array().unwrap().len(), 2, "{layout}");
    assert_eq!(e.eval("&diff"), 1);
    assert_eq!(e.eval("&buftype"), "acwrite");
    assert_eq!(
        e.eval("getwinvar(winnr('#'), '&diff')"),
        1,
        "the original is in diff mode too"
    );
    // Who proposes: the agent the sidecar names (protocol 3).
    let opened = e.events("CCBridgeDiffOpened");
    assert_eq!(opened[0]["agent"], "Claude Code", "{opened:?}");
    let bar = e.review_bar();
    assert!(bar.contains("Claude Code"), "{bar:?}");
    // Edit the proposal like a user, then :w.
    e.keys("Gogreet(\"you\")<Esc>:w<CR>");
    let (_c, text) = verdict(task).await;
    let expected = format!("{proposed}greet(\"you\")\n");
    assert_saved(&text, &expected);
    let closed = poll_until(STEP, Duration::from_millis(10), || {
        e.events("CCBridgeDiffClosed").into_iter().next()
    });
    let closed = closed.expect("no CCBridgeDiffClosed");
    assert_eq!(closed["decision"], "accepted", "{closed}");
    assert_eq!(e.layout(), before);
    assert_eq!(e.eval("win_getid()"), before_win);
    let leftover = e.eval(
        "len(filter(range(1, bufnr('$')), {_, b -> bufexists(b) && bufname(b) =~# '^ccbridge://'}))",
    );
    assert_eq!(leftover, 0, "review buffers left behind");
}

pub(crate) async fn ccbridge_reject_rejects_from_either_side<E: VimUnderTest>() {
    let (mut e, task) = review::<E>(
        json!({"diff": {"layout": "horizontal"}}),
        &HELLO.replace("hello ", "hi "),
    )
    .await;
    // The original is above the proposal.
    e.keys("<C-w>k");
    e.wait("the original", "bufname() =~# '^ccbridge://.*/original/'");
    e.keys(":CCBridgeReject<CR>");
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("DIFF_REJECTED"), "{text}");
}

pub(crate) async fn do_on_one_hunk_of_two_writes_only_the_other<E: VimUnderTest>() {
    let (mut e, task) = review::<E>(json!({}), TWO_HUNKS).await;
    // The second hunk (the last line): `do` takes the original's text back.
    e.keys("Gdo:w<CR>");
    let (_c, text) = verdict(task).await;
    assert_saved(&text, &HELLO.replace("hello ", "hi "));
}

/// claudecode.nvim #231: the diff failed when a terminal was the only window.
pub(crate) async fn a_review_from_a_lone_terminal_window_returns_to_it<E: VimUnderTest>() {
    let mut e = E::start();
    e.terminal_here();
    e.wait("terminal mode", "mode() ==# 't' && &buftype ==# 'terminal'");
    let term_win = e.eval("win_getid()");
    let c = e.claude().await;
    let task = start_open_diff(c, path(&e, "hello.py"), &HELLO.replace("hello ", "hi "));
    e.wait_review();
    // Neovim leaves Terminal mode at its next turn of the event loop once
    // the focus has moved (read at once, mode() could still say `t`).
    e.wait("typing to go to the proposal", "mode() ==# 'n' && &diff");
    e.keys(":w<CR>");
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("FILE_SAVED"), "{text}");
    e.wait(
        "focus back in the terminal, in terminal mode",
        &format!("win_getid() == {term_win} && mode() ==# 't'"),
    );
    assert_eq!(e.layout().as_array().unwrap().len(), 1);
}

/// claudecode.nvim #277: closing Claude's diffs closed other diffs too.
pub(crate) async fn claude_closing_its_diff_leaves_the_users_own_diff_windows_alone<
    E: VimUnderTest,
>() {
    let mut e = E::start_with(json!({"diff": {"open_in": "window"}}));
    std::fs::write(e.workspace().join("a.txt"), "a\nb\n").unwrap();
    std::fs::write(e.workspace().join("b.txt"), "a\nc\n").unwrap();
    e.visit("a.txt");
    e.ex(&format!("vert diffsplit {}", path(&e, "b.txt")));
    e.ex("tabnew");
    let c = e.claude().await;
    let task = start_open_diff(c, path(&e, "hello.py"), &HELLO.replace("hello ", "hi "));
    e.wait_review();
    let during = e.layout();
    assert_eq!(during[1].as_array().unwrap().len(), 3, "{during}");
    // Claude goes away mid-review: ccbridge sends `closeDiff`.
    task.abort();
    let closed = poll_until(STEP, Duration::from_millis(10), || {
        e.events("CCBridgeDiffClosed").into_iter().next()
    });
    let closed = closed.expect("the review never closed");
    assert_eq!(closed["reason"], "disconnected", "{closed}");
    let after = e.layout();
    assert_eq!(after[0].as_array().unwrap().len(), 2, "{after}");
    assert_eq!(after[1].as_array().unwrap().len(), 1, "{after}");
    let diffs = e
        .eval("len(filter(range(1, tabpagewinnr(1, '$')), {_, n -> gettabwinvar(1, n, '&diff')}))");
    assert_eq!(diffs, 2, "the user's diff windows lost diff mode");
}

pub(crate) async fn stop_then_start_at_once_restarts_the_sidecar<E: VimUnderTest>() {
    let mut e = E::start();
    let port = e.init()["port"].clone();
    e.keys(":CCBridgeStop | CCBridgeStart<CR>");
    // A port in `init` is the new sidecar's answer to `initialize` (the
    // old one's is cleared when it stops).
    let restarted = poll_until(STEP, Duration::from_millis(10), || {
        let new_port = e.init()["port"].clone();
        (new_port.is_u64() && new_port != port && e.status() == "running").then_some(())
    });
    assert!(restarted.is_some(), "no new sidecar; still {}", e.init());
    let name = e.ide_name();
    assert_eq!(e.lock()["ideName"], name);
    assert_eq!(ccbridge_testkit::lock_files(e.lock_dir()).len(), 1);
}

/// Every command the plugin defines has a tag in its help file (none is
/// left undocumented), and `:help` opens the file from the runtime path.
pub(crate) async fn every_command_has_a_help_tag<E: VimUnderTest>() {
    let mut e = E::start();
    let (file, topics) = E::help();
    let runtime = tempfile::tempdir().unwrap();
    let doc = runtime.path().join("doc");
    std::fs::create_dir_all(&doc).unwrap();
    std::fs::copy(&file, doc.join("ccbridge.txt")).unwrap();
    e.ex(&format!("helptags {}", doc.display()));
    let tags = std::fs::read_to_string(doc.join("tags")).unwrap();
    let has = |tag: &str| tags.lines().any(|l| l.starts_with(&format!("{tag}\t")));
    let commands = e.eval("getcompletion('CCBridge', 'command')");
    let commands: Vec<&str> = commands
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(commands.len() >= 8, "the plugin's commands: {commands:?}");
    for command in &commands {
        assert!(has(&format!(":{command}")), "no :{command} in\n{tags}");
    }
    for topic in ["ccbridge.txt"].iter().chain(topics) {
        assert!(has(topic), "no {topic} in\n{tags}");
    }
    e.ex(&format!("set runtimepath^={}", runtime.path().display()));
    e.ex("help ccbridge.txt");
    assert_eq!(e.eval("&buftype"), "help");
    assert_eq!(
        e.eval("expand('%:p')"),
        doc.join("ccbridge.txt").display().to_string()
    );
}

/// `:CCBridgeClaude` once Claude has exited starts a new one; a run that
/// failed (status 3) leaves its terminal, for its last words.
pub(crate) async fn ccbridge_claude_starts_claude_again_once_it_has_exited<E: VimUnderTest>() {
    let mut e = E::start_with(json!({
        "terminal": {"cmd": ["sh", "-c", "echo \"run $$\"; exit 3"]}
    }));
    e.keys(":CCBridgeClaude<CR>");
    let first = poll_until(STEP, Duration::from_millis(10), || {
        let buf = e.claude_terminal()?;
        e.terminal_finished(buf).then_some(buf)
    })
    .expect("the first run to end in Claude's terminal");
    e.keys("<C-\\><C-n><C-w>p:CCBridgeClaude<CR>");
    let second = poll_until(STEP, Duration::from_millis(10), || {
        e.claude_terminal().filter(|&buf| buf != first)
    });
    assert!(second.is_some(), "no second terminal; still {first}");
    assert_eq!(
        e.eval(&format!("bufexists({first})")),
        1,
        "the failed run's terminal was closed"
    );
}

/// With the sidecar behind a prefix (`env` here, standing for `ssh -T
/// host`), a Claude started by `:CCBridgeClaude`'s default command would
/// run on this side, where the sidecar's lock file is not: it says where
/// to start Claude instead and starts nothing. A command of the user's own
/// still runs.
pub(crate) async fn ccbridge_claude_under_a_remote_prefix_says_to_start_claude_there<
    E: VimUnderTest,
>() {
    let mut e = E::start_with(json!({"cmd": ["env"]}));
    let port = e.init()["port"].as_u64().unwrap();
    e.keys(":CCBridgeClaude<CR>");
    let told = e.wait_told("started here would not find it");
    assert!(told[0].contains("through `env`"), "{told:?}");
    assert!(
        told[0].contains(&format!("CLAUDE_CODE_SSE_PORT={port} claude")),
        "{told:?}"
    );
    assert_eq!(e.claude_terminal(), None, "a terminal was started");
    e.set_option(&["terminal", "cmd"], json!(["sh", "-c", "sleep 30"]));
    e.keys(":CCBridgeClaude<CR>");
    let own = poll_until(STEP, Duration::from_millis(10), || e.claude_terminal());
    assert!(own.is_some(), "the user's own command did not start");
}

/// Options with mistakes (a value not among the choices, a wrong type, an
/// unknown name): the user is told once, each mistake named, and the
/// defaults stand in for them; the commands after it do not tell again.
pub(crate) async fn bad_options_are_reported_once_and_replaced_by_defaults<E: VimUnderTest>() {
    let mut e = E::start();
    e.configure(json!({
        "diff": {"layout": "sideways"},
        "selection": {"debounce_ms": "fast"},
        "nope": 1,
    }));
    e.keys(":CCBridgeStatus<CR><CR>:CCBridgeStatus<CR><CR>:let g:test_after = 1<CR>");
    e.wait("the commands after it", "get(g:, 'test_after', 0)");
    let told = e.wait_told("defaults used");
    assert_eq!(told.len(), 1, "{told:?}");
    for what in [
        "`diff.layout` must be one of vertical, horizontal",
        "`selection.debounce_ms` must be a number",
        "unknown option `nope`",
    ] {
        assert!(told[0].contains(what), "no {what:?} in {told:?}");
    }
    assert_eq!(e.option(&["diff", "layout"]), "vertical");
    assert_eq!(e.option(&["selection", "debounce_ms"]), 50);
}

in_faces!(
    [nvim: crate::nvim_plugin::Rig, vim: crate::vim_plugin::Rig],
    [
        visual_selections_reach_claude_with_utf16_positions,
        leaving_visual_mode_becomes_a_bare_cursor_after_the_hold,
        a_quick_linewise_selection_is_sent_and_kept_while_in_a_terminal,
        w_in_the_edited_proposal_accepts_its_text_and_restores_the_layout,
        ccbridge_reject_rejects_from_either_side,
        do_on_one_hunk_of_two_writes_only_the_other,
        a_review_from_a_lone_terminal_window_returns_to_it,
        claude_closing_its_diff_leaves_the_users_own_diff_windows_alone,
        stop_then_start_at_once_restarts_the_sidecar,
        every_command_has_a_help_tag,
        ccbridge_claude_starts_claude_again_once_it_has_exited,
        ccbridge_claude_under_a_remote_prefix_says_to_start_claude_there,
        bad_options_are_reported_once_and_replaced_by_defaults,
    ]
);
