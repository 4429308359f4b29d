//! The Vim plugin (`editors/vim`) in a real Vim 9 running in a real
//! terminal (tmux), typed into with real keys, against the real sidecar it
//! spawns, with this test playing Claude over a real WebSocket (a
//! `claude-code` session of `IdeClient`). What Claude sees is checked at
//! Claude's end: `selection_changed`, `at_mentioned`, tool results.
//!
//! Needs Vim 9.0+ (`vim` on PATH or `CCBRIDGE_VIM_BIN`) and tmux; without
//! them every test fails with the instruction (see `ccbridge_testkit::vim`).

use crate::claude_side::{assert_saved, next_note, poll_tool, start_open_diff, verdict};
use crate::editor_scenarios::{EditorUnderTest, TWO_HUNKS};
use crate::vim_scenarios::VimUnderTest;
use ccbridge_client::ws_client::IdeClient;
use ccbridge_testkit::poll_until;
use ccbridge_testkit::vim::{let_options, vim_str, Vim, VimOptions};
use ccbridge_testkit::HELLO_PY as HELLO;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const STEP: Duration = Duration::from_secs(10);

/// Vim with the plugin started in a fresh workspace. Field order is drop
/// order: Vim (and with it the sidecar) before the directory.
pub(crate) struct Rig {
    vim: Vim,
    ws: PathBuf,
    lock_dir: PathBuf,
    dir: tempfile::TempDir,
}

fn plugin_dir() -> PathBuf {
    ccbridge_testkit::claude::workspace_root().join("editors/vim")
}

/// `a` with `b` merged over it, objects key by key.
fn merge(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (a, b) => *a = b.clone(),
    }
}

/// The test defaults (sidecar and plugin debounce 0, a private lock
/// directory) with `extra` merged over them.
fn options(lock_dir: &Path, extra: &Value) -> Value {
    let mut o = json!({
        "bin": env!("CARGO_BIN_EXE_ccbridge"),
        "args": ["--lock-dir", lock_dir, "--selection-debounce-ms", "0"],
        "selection": {"debounce_ms": 0},
    });
    merge(&mut o, extra);
    o
}

/// A Vim in `ws` with the test vimrc and `env`, not yet started.
fn start_vim(ws: &Path, home: &Path, env: &[(&str, String)]) -> Vim {
    std::fs::create_dir_all(home).unwrap();
    let mut opts = VimOptions::for_plugin(ws);
    opts.env.push(("HOME".into(), home.display().to_string()));
    opts.env.push(("TMPDIR".into(), home.display().to_string()));
    for (k, v) in env {
        opts.env.push((k.to_string(), v.clone()));
    }
    Vim::start(&opts).expect("start vim")
}

fn rig(extra: Value) -> Rig {
    rig_with_env(extra, &[])
}

fn rig_with_env(extra: Value, env: &[(&str, String)]) -> Rig {
    let dir = ccbridge_testkit::temp_dir("ccbridge-vim-").unwrap();
    let ws = dir.path().join("ws");
    let lock_dir = dir.path().join("ide");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("hello.py"), HELLO).unwrap();
    let mut vim = start_vim(&ws, &dir.path().join("home"), env);
    vim.ex(&let_options(&options(&lock_dir, &extra)));
    vim.ex("CCBridgeStart");
    vim.wait(
        "the sidecar to answer initialize",
        "ccbridge#Status() ==# 'running'",
        STEP,
    );
    Rig {
        vim,
        ws,
        lock_dir,
        dir,
    }
}

impl Rig {
    fn path(&self, rel: &str) -> String {
        self.ws.join(rel).display().to_string()
    }

    fn edit(&mut self, rel: &str) {
        let p = self.path(rel);
        self.vim.ex(&format!("edit {p}"));
    }

    fn buffer_text(&mut self, path: &str) -> String {
        self.vim
            .eval(&format!("TestBufferText({})", vim_str(path)))
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Windows per tab page, as `[[buffer names]]`.
    fn layout(&mut self) -> Value {
        self.vim.eval("TestLayout()")
    }

    /// Lines of `:messages` containing `needle`.
    fn noted(&mut self, needle: &str) -> Vec<String> {
        let v = self.vim.eval(&format!("TestNoted({})", vim_str(needle)));
        v.as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_owned())
            .collect()
    }

    fn wait_noted(&mut self, what: &str, needle: &str) -> String {
        let v = self
            .vim
            .wait(what, &format!("TestNoted({})", vim_str(needle)), STEP);
        v[0].as_str().unwrap().to_owned()
    }
}

impl Rig {
    /// Types `:let g:test_sync = N<CR>` and waits until Vim ran it: every
    /// key typed before has been handled.
    fn sync(&mut self) {
        let n = self.vim.eval("get(g:, 'test_sync', 0)").as_i64().unwrap() + 1;
        self.vim.keys(&format!(":let g:test_sync = {n}<CR>"));
        self.vim.wait(
            "the keys typed so far to be handled",
            &format!("get(g:, 'test_sync', 0) == {n}"),
            STEP,
        );
    }
}

/// The diagnostics Claude's getDiagnostics gives for `path` once `ok`
/// holds for them.
async fn diagnostics_of(
    c: &mut IdeClient,
    path: &str,
    ok: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let uri = format!("file://{path}");
    let v = poll_tool(c, "getDiagnostics", json!({"uri": uri}), |v| {
        let all: Vec<Value> = v
            .as_array()
            .map(|files| {
                files
                    .iter()
                    .flat_map(|f| f["diagnostics"].as_array().cloned().unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default();
        ok(&all)
    })
    .await;
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["diagnostics"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// The Vim face of the shared scenarios (`editor_scenarios`): the
/// plugin's commands and Vim's own keys, typed into its terminal.
impl EditorUnderTest for Rig {
    const IDE: &'static str = "Vim";

    fn start() -> Rig {
        let mut rig = rig(json!({}));
        rig.edit("hello.py");
        rig
    }

    fn start_with_path(dir: &Path) -> Rig {
        let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
        let mut rig = rig_with_env(json!({}), &[("PATH", path)]);
        rig.edit("hello.py");
        rig
    }

    fn run_claude_command(&mut self) {
        self.vim.keys(":CCBridgeClaude<CR>");
    }

    fn wait_claude_terminal(&mut self, needle: &str) -> String {
        // Lines joined as they are: a long one wraps at the terminal's width.
        let text = "join(getbufline(ccbridge#terminal#Buffer('claude'), 1, '$'), '')";
        let v = self.vim.wait(
            &format!("Claude's terminal to show {needle:?}"),
            &format!(
                "ccbridge#terminal#Buffer('claude') && stridx({text}, {n}) >= 0 ? {text} : ''",
                n = vim_str(needle)
            ),
            STEP,
        );
        v.as_str().unwrap().to_owned()
    }

    fn back_to_the_file(&mut self) {
        self.vim.keys("<C-w>p");
        self.vim.wait("back in hello.py", "&buftype ==# ''", STEP);
    }

    fn in_claude_terminal(&mut self) -> bool {
        self.vim
            .eval("bufnr() == ccbridge#terminal#Buffer('claude')")
            == 1
    }

    fn terminal_count(&mut self) -> usize {
        self.vim.eval("len(term_list())").as_u64().unwrap() as usize
    }

    fn workspace(&self) -> &Path {
        &self.ws
    }

    fn lock_dir(&self) -> &Path {
        &self.lock_dir
    }

    fn init(&mut self) -> Value {
        self.vim.eval("ccbridge#Init()")
    }

    fn wait_claude_connected(&mut self) {
        self.vim.wait(
            "CCBridgeConnected",
            "len(TestEvents('CCBridgeConnected')) > 0",
            STEP,
        );
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn visit(&mut self, rel: &str) {
        self.edit(rel);
    }

    fn indicator(&mut self) -> String {
        let line = self.vim.eval("ccbridge#Statusline()");
        line.as_str().unwrap().to_owned()
    }

    fn status(&mut self) -> String {
        let status = self.vim.eval("ccbridge#Status()");
        status.as_str().unwrap().to_owned()
    }

    fn status_report(&mut self) -> String {
        self.vim.ex("CCBridgeStatus")
    }

    /// Back in Normal mode once it returns: what comes next (a review
    /// opening) does not find Vim in Insert mode.
    fn wait_file_at(&mut self, rel: &str, line: u64) {
        let path = self.path(rel);
        self.vim.wait(
            &format!("{rel} at line {line}"),
            &format!(
                "expand('%:p') ==# {} && line('.') == {line}",
                vim_str(&path)
            ),
            STEP,
        );
    }

    fn type_line_at_top(&mut self, line: &str) {
        self.vim.keys(&format!("ggO{line}<Esc>"));
        self.sync();
    }

    fn save(&mut self) {
        self.vim.keys(":w<CR>");
    }

    fn wait_following_disk(&mut self) {
        self.vim
            .wait("the reload check", "ccbridge#reload#Running()", STEP);
    }

    fn buffer_text(&mut self, rel: &str) -> String {
        let path = self.path(rel);
        Rig::buffer_text(self, &path)
    }

    fn wait_told(&mut self, needle: &str) -> Vec<String> {
        self.vim.wait(
            &format!("the notice {needle:?}"),
            &format!("TestNoted({})", vim_str(needle)),
            STEP,
        );
        self.noted(needle)
    }

    const BIN_OPTION: &'static str = "set g:ccbridge.bin";

    fn send_lines(&mut self, first: usize, last: usize) {
        // Visual mode's `:` gives the range.
        self.vim.keys(&format!("{first}GV{last}G:CCBridgeSend<CR>"));
    }

    fn send_file(&mut self) {
        self.vim.keys(":CCBridgeSend<CR>");
    }

    fn stop_and_set_program(&mut self, bin: &str, extra: &[&str]) {
        self.vim.keys(":CCBridgeStop<CR>");
        self.vim.wait(
            "the sidecar to stop",
            "ccbridge#Status() == 'stopped'",
            STEP,
        );
        let mut o = self.vim.eval("g:ccbridge");
        o["bin"] = bin.into();
        let args = o["args"].as_array_mut().unwrap();
        args.extend(extra.iter().map(|a| json!(a)));
        self.vim.ex(&let_options(&o));
    }

    fn start_command(&mut self) {
        self.vim.keys(":CCBridgeStart<CR>");
        self.sync();
    }

    const PATH_MAP_FIRST: &'static str = "`path_map[1]`";

    fn set_remote(&mut self, prefix: Value, path_map: Value) {
        let mut o = self.vim.eval("g:ccbridge");
        o["cmd"] = prefix;
        o["cmd_quote"] = true.into();
        o["path_map"] = path_map;
        self.vim.ex(&let_options(&o));
    }

    /// `:messages` whole: Vim keeps no level there (an error line is
    /// only highlighted).
    fn wait_errors(&mut self, needle: &str) -> String {
        self.wait_told(needle);
        let messages = self.vim.eval("execute('messages')");
        messages.as_str().unwrap().to_owned()
    }

    fn append_to_proposal(&mut self, line: &str) {
        self.vim.ex(&format!(
            "call appendbufline(ccbridge#review#Pending()[0].prop, '$', {})",
            vim_str(line)
        ));
    }

    /// The popup's text, once it is on the screen.
    fn wait_approval(&mut self) -> String {
        self.vim
            .wait("the approval dialog", "ccbridge#tools#Pending() > 0", STEP);
        self.vim.wait_for_text("wants to run", STEP).unwrap();
        let text = self.vim.eval("ccbridge#tools#PendingText()[0]");
        text.as_str().unwrap().to_owned()
    }

    fn answer_approval(&mut self, allow: bool) {
        self.vim.keys(if allow { "y" } else { "n" });
        self.vim
            .wait("the dialog to close", "ccbridge#tools#Pending() == 0", STEP);
    }

    fn wait_command_output(&mut self, needle: &str) -> String {
        let view = "join(map(filter(range(1, bufnr('$')), \
              {_, b -> bufexists(b) && bufname(b) =~# '^ccbridge://command/'}), \
              {_, b -> join(getbufline(b, 1, '$'), \"\\n\")}), \"\\n\")";
        let shown = self.vim.wait(
            &format!("{needle:?} in the output view"),
            &format!("stridx({view}, {}) >= 0 ? {view} : ''", vim_str(needle)),
            STEP,
        );
        shown.as_str().unwrap().to_owned()
    }

    fn only_window(&mut self) {
        self.vim.keys(":only<CR>");
        self.sync();
    }

    fn wait_review(&mut self) {
        self.vim.wait(
            "the review to open",
            "len(TestEvents('CCBridgeDiffOpened')) > 0 && get(b:, 'ccbridge_review', 0)",
            STEP,
        );
    }

    fn review_file(&mut self) -> String {
        let path = self.vim.eval("ccbridge#review#Pending()[0].path");
        path.as_str().unwrap().to_owned()
    }

    fn wait_review_closed(&mut self) {
        self.vim.wait(
            "the review's tab to close",
            "len(TestEvents('CCBridgeDiffClosed')) > 0 && tabpagenr('$') == 1 && winnr('$') == 1",
            STEP,
        );
    }

    fn accept_review(&mut self) {
        self.vim.keys(":w<CR>");
    }

    fn accept_review_anyway(&mut self) {
        self.vim.keys(":w!<CR>");
    }

    fn close_review(&mut self) {
        self.vim.keys(":q<CR>");
    }

    fn to_first_hunk(&mut self) {
        self.vim.keys("gg");
    }

    fn decide_hunk(&mut self, accept: bool) {
        const TEXTS: &str = "map(['original', 'proposed'], \
            {_, k -> join(getbufline(bufnr('ccbridge://*/' .. k .. '/*'), 1, '$'), \"\\n\") \
            .. getbufvar(bufnr('ccbridge://*/' .. k .. '/*'), '&eol')})";
        let before = self.vim.eval(TEXTS);
        let command = if accept { "Accept" } else { "Reject" };
        self.vim.keys(&format!(":CCBridge{command}Hunk<CR>"));
        let decided = poll_until(STEP, Duration::from_millis(10), || {
            (self.vim.eval(TEXTS) != before).then_some(())
        });
        assert!(
            decided.is_some(),
            ":CCBridge{command}Hunk changed nothing in {before} (cursor: {})\n{}",
            self.vim
                .eval("[line('.'), bufname(), diff_hlID(5, 1), diff_filler(6), &diff, v:errmsg]"),
            self.vim.screen()
        );
    }

    fn to_last_line(&mut self) {
        self.vim.keys("G");
    }

    fn hunk_command(&mut self, accept: bool) {
        let command = if accept { "Accept" } else { "Reject" };
        self.vim.keys(&format!(":CCBridge{command}Hunk<CR>"));
    }

    fn after_last_hunk(&mut self) {}

    fn wait_review_shows(&mut self, needle: &str) -> String {
        let shown = "join(map(filter(getwininfo(), {_, w -> bufname(w.bufnr) =~# '^ccbridge://'}), \
            {_, w -> getwinvar(w.winid, '&statusline') .. ' ' \
            .. join(map(prop_list(1, #{bufnr: w.bufnr, end_lnum: -1}), {_, p -> get(p, 'text', '')}))}), \"\\n\")";
        crate::editor_scenarios::wait_shown(needle, || {
            self.vim
                .eval(shown)
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
    }

    fn second(&mut self) -> (Box<dyn std::any::Any>, PathBuf) {
        let mut second = start_vim(&self.ws, &self.dir.path().join("home2"), &[]);
        second.ex(&let_options(&options(&self.lock_dir, &json!({}))));
        second.ex("CCBridgeStart");
        let lock = second.wait(
            "the second sidecar",
            "ccbridge#Status() ==# 'running' ? ccbridge#Init().lockFile : ''",
            STEP,
        );
        let lock = PathBuf::from(lock.as_str().unwrap());
        (Box::new(second), lock)
    }

    fn quit(self) -> (bool, tempfile::TempDir) {
        (self.vim.quit().is_some(), self.dir)
    }
}

/// The Vim face of the scenarios of the two Vims (`vim_scenarios`).
impl VimUnderTest for Rig {
    fn start_with(options: Value) -> Rig {
        let mut rig = rig(options);
        rig.edit("hello.py");
        rig
    }

    fn keys(&mut self, keys: &str) {
        self.vim.keys(keys);
    }

    fn ex(&mut self, command: &str) {
        self.vim.ex(command);
    }

    fn eval(&mut self, expr: &str) -> Value {
        self.vim.eval(expr)
    }

    fn wait(&mut self, what: &str, expr: &str) -> Value {
        self.vim.wait(what, expr, STEP)
    }

    fn events(&mut self, name: &str) -> Vec<Value> {
        let events = self.vim.eval(&format!("TestEvents({})", vim_str(name)));
        let events = events.as_array().unwrap();
        events.iter().map(|e| e["data"].clone()).collect()
    }

    fn layout(&mut self) -> Value {
        Rig::layout(self)
    }

    fn terminal_here(&mut self) {
        self.vim.keys(":terminal ++curwin<CR>");
    }

    fn review_bar(&mut self) -> String {
        let bar = self.vim.eval("&l:statusline");
        bar.as_str().unwrap().to_owned()
    }

    fn help() -> (PathBuf, &'static [&'static str]) {
        let topics = &[
            "ccbridge",
            "ccbridge-changes",
            "ccbridge-options",
            "g:ccbridge",
        ];
        (plugin_dir().join("doc/ccbridge.txt"), topics)
    }

    fn set_option(&mut self, path: &[&str], value: Value) {
        let mut o = self.vim.eval("g:ccbridge");
        let (last, parents) = path.split_last().unwrap();
        let mut at = &mut o;
        for key in parents {
            at = at
                .as_object_mut()
                .unwrap()
                .entry(key.to_string())
                .or_insert_with(|| json!({}));
        }
        at[*last] = value;
        self.vim.ex(&let_options(&o));
    }

    fn configure(&mut self, options: Value) {
        let now = self.vim.eval("g:ccbridge");
        let mut o = json!({"bin": now["bin"], "args": now["args"]});
        merge(&mut o, &options);
        self.vim.ex(&let_options(&o));
    }

    fn option(&mut self, path: &[&str]) -> Value {
        let mut o = self.vim.eval("ccbridge#Options()");
        for key in path {
            o = o[*key].take();
        }
        o
    }

    fn claude_terminal(&mut self) -> Option<u64> {
        let buf = self.vim.eval("ccbridge#terminal#Buffer()").as_u64()?;
        (buf != 0).then_some(buf)
    }

    fn terminal_finished(&mut self, buf: u64) -> bool {
        let status = self.vim.eval(&format!("term_getstatus({buf})"));
        status.as_str().unwrap_or_default().contains("finished")
    }
}

/// Starts Claude's `openDiff` of `hello.py` → `proposed` and waits until
/// Vim shows the review. The call's task returns the tool's text.
async fn open_diff(
    rig: &mut Rig,
    c: IdeClient,
    proposed: &str,
) -> tokio::task::JoinHandle<(IdeClient, String)> {
    let path = rig.path("hello.py");
    let task = start_open_diff(c, path, proposed);
    rig.vim.wait(
        "the review to open",
        "len(TestEvents('CCBridgeDiffOpened')) > 0 && get(b:, 'ccbridge_review', 0)",
        STEP,
    );
    task
}

/// A rig editing hello.py, Claude connected, and Claude's proposal of
/// `proposed` open for review.
async fn review(
    extra: Value,
    proposed: &str,
) -> (Rig, tokio::task::JoinHandle<(IdeClient, String)>) {
    let mut rig = rig(extra);
    rig.edit("hello.py");
    let c = rig.claude().await;
    let task = open_diff(&mut rig, c, proposed).await;
    (rig, task)
}

/// Vim has no pop-up to say a review opened in another tab: a notice
/// names who proposes what, and the proposal's statusline says it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_opening_is_noticed_with_the_agent_and_the_file() {
    let (mut rig, task) = review(json!({}), &HELLO.replace("hello ", "hi ")).await;
    rig.wait_noted("the notice", "Claude Code proposes a change to hello.py");
    let status_line = rig.vim.eval("&l:statusline");
    assert!(
        status_line
            .as_str()
            .unwrap()
            .contains("Claude Code proposes"),
        "{status_line}"
    );
    rig.vim.keys(":CCBridgeReject<CR>");
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("DIFF_REJECTED"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_statusline_follow_the_sidecar_and_the_sessions() {
    // What every face shows alike: editor_scenarios::vim::the_status_follows_claudes_session.
    let mut rig = rig(json!({}));
    rig.edit("hello.py");
    let lock_path = rig.init()["lockFile"].as_str().unwrap().to_owned();
    assert!(Path::new(&lock_path).exists());
    let c = rig.claude().await;
    let connected = rig.vim.eval("TestEvents('CCBridgeConnected')[0].data");
    assert_eq!(connected["name"], "claude-code");
    assert_eq!(connected["pid"], std::process::id());

    // Typed, as a user does: the lines appear on the screen.
    rig.vim.keys(":CCBridgeStatus<CR>");
    rig.vim
        .wait_for_text("Claude session 1: claude-code", STEP)
        .unwrap();
    rig.vim.keys("<CR>");
    let status = rig.vim.ex("CCBridgeStatus");
    for needle in [
        &format!(
            "editor protocol {}",
            rig.vim.eval("ccbridge#ProtocolVersion()")
        ),
        &format!("binary: {}", env!("CARGO_BIN_EXE_ccbridge")),
    ] {
        assert!(status.contains(needle), "no {needle:?} in\n{status}");
    }

    c.close().await.unwrap();
    rig.vim.wait(
        "CCBridgeDisconnected",
        "len(TestEvents('CCBridgeDisconnected')) > 0",
        STEP,
    );
    assert_eq!(rig.vim.eval("ccbridge#Statusline()"), "Claude ○");

    // Connected again, the reload check runs (a repeating timer); it goes
    // with the sidecar.
    let _c = rig.claude().await;
    rig.vim
        .wait("the reload check", "ccbridge#reload#Running()", STEP);
    // :CCBridgeStop ends the sidecar, which removes its lock file.
    rig.vim.keys(":CCBridgeStop<CR>");
    rig.vim.wait(
        "the sidecar to stop",
        "ccbridge#Status() ==# 'stopped'",
        STEP,
    );
    assert!(!Path::new(&lock_path).exists(), "lock file left behind");
    assert_eq!(rig.vim.eval("ccbridge#Statusline()"), "");
    assert_eq!(rig.vim.eval("len(TestEvents('CCBridgeDisconnected'))"), 2);
    let status = rig.vim.ex("CCBridgeStatus");
    assert!(
        status.contains("stopped (:CCBridgeStart starts it)"),
        "{status}"
    );
    // Stopped, the plugin leaves nothing running behind.
    assert_eq!(
        rig.vim
            .eval("exists('#ccbridge_context#CursorMoved') + exists('#ccbridge#VimLeavePre')"),
        0
    );
    assert_eq!(
        rig.vim
            .eval("len(filter(job_info(), {_, j -> job_status(j) ==# 'run'}))"),
        0
    );
    assert_eq!(
        rig.vim
            .eval("len(filter(timer_info(), {_, t -> t.repeat < 0}))"),
        0,
        "a repeating timer is left"
    );
    // Stopping on purpose shows no error.
    assert!(rig.noted("exited").is_empty(), "{:?}", rig.noted("exited"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_runs_before_the_plugin_is_started_and_auto_start_starts_it_with_vim() {
    let dir = ccbridge_testkit::temp_dir("ccbridge-vim-").unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let mut vim = start_vim(&ws, &dir.path().join("home"), &[]);
    // The plugin/ file only defined commands.
    assert_eq!(vim.eval("exists(':CCBridgeStart')"), 2);
    assert_eq!(vim.eval("exists(':CCBridgeClaude')"), 2);
    assert_eq!(
        vim.eval("exists('#ccbridge') + exists('#ccbridge_context')"),
        0
    );
    assert_eq!(vim.eval("len(job_info())"), 0);
    let scripts = vim.ex("scriptnames");
    assert!(!scripts.contains("autoload/ccbridge"), "{scripts}");
    drop(vim);

    // auto_start in the vimrc: the sidecar starts once Vim has.
    let lock_dir = dir.path().join("ide");
    let rc = dir.path().join("vimrc");
    let mut o = options(&lock_dir, &json!({"auto_start": true}));
    o["auto_start"] = json!(true);
    std::fs::write(
        &rc,
        format!(
            "{}\nsource {}\n",
            let_options(&o),
            plugin_dir().join("test/vimrc").display()
        ),
    )
    .unwrap();
    let mut opts = VimOptions::new(&ws);
    opts.vimrc = Some(rc);
    opts.env
        .push(("HOME".into(), dir.path().join("home").display().to_string()));
    let mut vim = Vim::start(&opts).unwrap();
    vim.wait(
        "the sidecar started by auto_start",
        "ccbridge#Status() ==# 'running'",
        STEP,
    );
    assert_eq!(ccbridge_testkit::lock_files(&lock_dir).len(), 1);
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Issue 23: a Vim with no linter reports no diagnostics; ccbridge's
/// language servers (pyright, found on the PATH Vim gives the sidecar) give
/// Claude the file's type error, with LSP's 0-based range. Once Vim reports
/// on the file (a compiler's quickfix list), its report is the file's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vim_without_a_linter_gives_claude_the_language_servers_diagnostics() {
    let path = format!(
        "{}:{}",
        ccbridge_testkit::pyright_bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut rig = rig_with_env(json!({}), &[("PATH", path)]);
    std::fs::write(rig.ws.join("typed.py"), "ok = 1\nx: int = \"not an int\"\n").unwrap();
    rig.edit("typed.py");
    let mut c = rig.claude().await;
    let typed = rig.path("typed.py");
    let diags = diagnostics_of(&mut c, &typed, |d| !d.is_empty()).await;
    assert!(
        diags
            .iter()
            .any(|d| d["message"].as_str().unwrap_or("").contains("int")
                && d["range"]["start"]["line"] == 1),
        "pyright's type error on line 1 (0-based): {diags:?}"
    );
    rig.vim.ex(r"set errorformat=%f:%l:%c:\ %trror:\ %m");
    rig.vim
        .keys(":cexpr ['typed.py:1:1: error: from the compiler']<CR>");
    let diags = diagnostics_of(&mut c, &typed, |d| {
        d.len() == 1 && d[0]["message"] == "from the compiler"
    })
    .await;
    assert_eq!(diags[0]["range"]["start"]["line"], 0, "{diags:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quickfix_and_location_lists_reach_claude_as_diagnostics() {
    let mut rig = rig(json!({}));
    std::fs::write(rig.ws.join("other.txt"), "ö x\n").unwrap();
    rig.edit("other.txt");
    rig.edit("hello.py");
    let mut c = rig.claude().await;
    let hello = rig.path("hello.py");
    let other = rig.path("other.txt");

    // The quickfix list as a compiler fills it (typed entries), columns
    // in UTF-16 ("ö" is 2 bytes, 1 unit); a grep hit (untyped) is no
    // diagnostic.
    rig.vim
        .ex(r"set errorformat=%f:%l:%c:\ %trror:\ %m,%f:%l:%c:\ %tarning:\ %m,%f:%l:%m");
    rig.vim.keys(
        ":cexpr ['other.txt:1:4: error: bad x', 'hello.py:3:5: warning: unused', 'hello.py:4:just a grep hit']<CR>",
    );
    let diags = diagnostics_of(&mut c, &other, |d| !d.is_empty()).await;
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0]["message"], "bad x");
    assert_eq!(diags[0]["range"]["start"]["line"], 0, "{diags:?}");
    assert_eq!(diags[0]["range"]["start"]["character"], 2, "{diags:?}");
    // The location list of hello.py's window adds to the quickfix list.
    rig.vim
        .keys(":lexpr ['hello.py:1:1: error: from the location list']<CR>");
    let diags = diagnostics_of(&mut c, &hello, |d| d.len() == 2).await;
    let messages: Vec<&str> = diags
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert!(messages.contains(&"unused"), "{messages:?}");
    assert!(messages.contains(&"from the location list"), "{messages:?}");
    assert!(
        !messages.iter().any(|m| m.contains("grep hit")),
        "{messages:?}"
    );

    // Emptied in Vim, cleared for Claude.
    rig.vim.keys(":cexpr []<CR>:lexpr []<CR>");
    diagnostics_of(&mut c, &other, |d| d.is_empty()).await;
    diagnostics_of(&mut c, &hello, |d| d.is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_from_ale_and_vim_lsp_reach_claude() {
    let mut rig = rig(json!({}));
    std::fs::write(rig.ws.join("other.txt"), "ö x\n").unwrap();
    rig.edit("other.txt");
    rig.edit("hello.py");
    let mut c = rig.claude().await;
    let hello = rig.path("hello.py");
    let other = rig.path("other.txt");
    // The plugins' flags, and their state through the stand-ins in
    // editors/vim/test/stubs (ALE's loclist items, vim-lsp's
    // publishDiagnostics by server).
    rig.vim
        .ex("let g:loaded_ale_dont_use_this_in_other_plugins_please = 1 | let g:lsp_loaded = 1");
    rig.vim.ex(&format!(
        "let g:test_ale = {{string(bufnr({})): [{{'lnum': 1, 'col': 4, 'end_col': 4, 'type': 'W', \
         'text': 'ale says', 'code': 'W1', 'linter_name': 'flake8'}}]}}",
        vim_str(&other)
    ));
    rig.vim.keys(":doautocmd User ALELintPost<CR>");
    let diags = diagnostics_of(&mut c, &other, |d| !d.is_empty()).await;
    assert_eq!(diags[0]["message"], "ale says");
    assert_eq!(diags[0]["source"], "flake8");
    assert_eq!(diags[0]["code"], "W1");
    // ALE's end column is inclusive; "ö" is one unit.
    assert_eq!(diags[0]["range"]["start"]["character"], 2, "{diags:?}");
    assert_eq!(diags[0]["range"]["end"]["character"], 3, "{diags:?}");

    rig.vim.ex(&format!(
        "let g:test_lsp = {{'file://{hello}': {{'pylsp': {{'method': 'textDocument/publishDiagnostics', \
         'params': {{'uri': 'file://{hello}', 'diagnostics': [{{'message': 'lsp says', 'severity': 1, \
         'code': 'E2', 'range': {{'start': {{'line': 1, 'character': 4}}, 'end': {{'line': 1, 'character': 11}}}}}}]}}}}}}}}"
    ));
    rig.vim.keys(":doautocmd User lsp_diagnostics_updated<CR>");
    let diags = diagnostics_of(&mut c, &hello, |d| !d.is_empty()).await;
    assert_eq!(diags[0]["message"], "lsp says");
    assert_eq!(diags[0]["source"], "pylsp");
    assert_eq!(diags[0]["range"]["end"]["character"], 11, "{diags:?}");

    // ALE's list emptied: cleared for Claude.
    rig.vim.ex("let g:test_ale = {}");
    rig.vim.keys(":doautocmd User ALELintPost<CR>");
    diagnostics_of(&mut c, &other, |d| d.is_empty()).await;
}

/// The selected lines and the file:
/// `editor_scenarios::vim::send_mentions_the_selected_lines_or_the_file`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_mentions_a_path_and_a_netrw_entry() {
    let mut rig = rig(json!({}));
    std::fs::create_dir_all(rig.ws.join("src")).unwrap();
    std::fs::write(rig.ws.join("src/lib.rs"), "fn main() {}\n").unwrap();
    rig.edit("hello.py");
    let mut c = rig.claude().await;

    rig.vim.keys(":CCBridgeSend src/lib.rs<CR>");
    let m = next_note(&mut c, "at_mentioned").await;
    assert_eq!(m["filePath"], rig.path("src/lib.rs"));

    // netrw (shipped with Vim): the entry under the cursor.
    rig.vim
        .ex("let g:netrw_liststyle = 0 | let g:netrw_banner = 0");
    rig.vim.keys(":Explore<CR>");
    rig.vim.wait("netrw", "&filetype ==# 'netrw'", STEP);
    rig.vim.keys("/^src<CR>:CCBridgeSend<CR>");
    let m = next_note(&mut c, "at_mentioned").await;
    assert_eq!(m["filePath"], rig.path("src"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dp_and_do_decide_hunk_by_hunk_and_w_writes_the_result() {
    let (mut rig, task) = review(json!({}), TWO_HUNKS).await;
    // The first hunk accepted into the original (it leaves the diff), the
    // next one rejected.
    rig.vim.keys("gg]cdp");
    rig.vim.wait(
        "the original to take the first hunk",
        "get(getbufline(bufnr('ccbridge://*/original/*'), 2), 0, '') =~# 'hi '",
        STEP,
    );
    rig.vim.keys("]cdo:w<CR>");
    let (_c, text) = verdict(task).await;
    assert_saved(&text, &HELLO.replace("hello ", "hi "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffers_reload_when_claude_writes_and_unsaved_ones_get_a_notice() {
    let mut rig = rig(json!({"reload_interval_ms": 100}));
    std::fs::write(rig.ws.join("other.txt"), "one\n").unwrap();
    rig.edit("other.txt");
    rig.edit("hello.py");
    assert_eq!(
        rig.vim.eval("ccbridge#reload#Running()"),
        false,
        "checking before Claude connected"
    );
    let c = rig.claude().await;
    rig.vim
        .wait("the reload check", "ccbridge#reload#Running()", STEP);
    // Written the way editors and Claude write: a new file renamed over.
    let hello = rig.ws.join("hello.py");
    let tmp = rig.ws.join(".hello.py.tmp");
    std::fs::write(&tmp, "print('rewritten')\n").unwrap();
    std::fs::rename(&tmp, &hello).unwrap();
    let path = rig.path("hello.py");
    rig.vim.wait(
        "hello.py reloaded",
        &format!(
            "TestBufferText({}) ==# \"print('rewritten')\"",
            vim_str(&path)
        ),
        STEP,
    );
    // Undo goes back to the text before the reload (undo history kept).
    rig.vim.keys("u");
    rig.vim.wait(
        "the reload undone",
        &format!("TestBufferText({}) =~# '^def greet'", vim_str(&path)),
        STEP,
    );
    rig.vim.ex("edit!");

    // An unsaved buffer is not reloaded; the user is told once per change.
    rig.vim
        .keys(&format!(":buffer {}<CR>", rig.path("other.txt")));
    rig.vim.keys("Amine<Esc>");
    rig.sync();
    std::fs::write(rig.ws.join("other.txt"), "theirs\n").unwrap();
    let notice = "other.txt changed on disk but has unsaved changes here";
    rig.wait_noted("the notice", notice);
    let other = rig.path("other.txt");
    assert_eq!(rig.buffer_text(&other), "onemine");
    std::fs::write(rig.ws.join("other.txt"), "theirs, longer\n").unwrap();
    rig.vim.wait(
        "a notice for the second change",
        &format!("len(TestNoted({})) == 2", vim_str(notice)),
        STEP,
    );
    assert_eq!(rig.buffer_text(&other), "onemine");
    // Vim's own prompts and 'autoread' are left as they were.
    assert_eq!(rig.vim.eval("&autoread"), 0);
    assert_eq!(rig.vim.eval("exists('#FileChangedShell')"), 0);

    // Claude gone: nothing is checked any more.
    c.close().await.unwrap();
    rig.vim
        .wait("the check to stop", "!ccbridge#reload#Running()", STEP);
}

/// Issue 19, the session review in Vim: a change written on disk without a
/// review (an agent in auto mode) is listed by `:CCBridgeChanges` in the
/// quickfix list, one entry per hunk. `:CCBridgeChangeRevert` on the
/// quickfix entry of the second of two identical insertions reverts that one
/// only; the list follows (`changesChanged`) and the file's buffer reloads.
/// `:CCBridgeChangeKeep` in the file, on the first, keeps it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_review_lists_hunks_in_quickfix_and_reverts_the_one_picked() {
    let mut rig = rig(json!({}));
    // The baseline is taken when the sidecar starts: wait for it.
    rig.vim.wait(
        "the session review to be ready",
        "get(TestChanges(), 'ready', 0)",
        STEP,
    );
    let edited = HELLO
        .replace("def greet(name):\n", "def greet(name):\n    log()\n")
        .replace("    print(message)\n", "    print(message)\n    log()\n");
    std::fs::write(rig.ws.join("hello.py"), &edited).unwrap();
    rig.edit("hello.py");
    let path = rig.path("hello.py");
    rig.vim.keys(":CCBridgeChanges<CR>");
    let items = rig.vim.wait(
        "two quickfix entries",
        "len(TestChangesList()) == 2 ? TestChangesList() : 0",
        STEP,
    );
    assert_eq!(items[0][0], 2, "{items}");
    assert_eq!(items[1][0], 5, "{items}");
    assert_eq!(items[1][2], path.as_str(), "{items}");
    assert!(
        items[1][1].as_str().unwrap().contains("not reviewed"),
        "{items}"
    );
    // The quickfix window has the cursor: its second entry.
    rig.vim
        .wait("the quickfix window", "&buftype ==# 'quickfix'", STEP);
    rig.vim.keys("2G:CCBridgeChangeRevert<CR>");
    let expected = HELLO.replace("def greet(name):\n", "def greet(name):\n    log()\n");
    poll_until(STEP, Duration::from_millis(10), || {
        (std::fs::read_to_string(rig.ws.join("hello.py")).unwrap() == expected).then_some(())
    })
    .expect("only the second hunk is reverted");
    let items = rig.vim.wait(
        "the quickfix list to follow",
        "len(TestChangesList()) == 1 ? TestChangesList() : 0",
        STEP,
    );
    assert_eq!(items[0][0], 2, "{items}");
    rig.vim.wait(
        "the buffer to reload",
        &format!(
            "TestBufferText({}) ==# {}",
            vim_str(&path),
            vim_str(expected.trim_end())
        ),
        STEP,
    );
    rig.wait_noted("the revert told", "reverted the hunk in");
    // The first, under the cursor in the file: kept, nothing written.
    rig.vim.keys("<C-w>p:2<CR>:CCBridgeChangeKeep<CR>");
    let items = rig.vim.wait(
        "the entry to say kept",
        "get(get(TestChangesList(), 0, []), 1, '') =~# '(kept)' ? TestChangesList() : 0",
        STEP,
    );
    assert_eq!(items.as_array().unwrap().len(), 1, "{items}");
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("hello.py")).unwrap(),
        expected
    );
    // With unsaved changes the cursor's line may not be the file's: refused.
    rig.vim.keys("2GAx<Esc>:CCBridgeChangeRevert<CR>");
    rig.wait_noted("the unsaved refusal", "hello.py has unsaved changes");
    rig.vim.keys(":edit!<CR>");
    rig.vim.wait("the buffer unmodified", "!&modified", STEP);
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("hello.py")).unwrap(),
        expected
    );
    // Nothing under the cursor: said so, nothing decided.
    rig.vim.keys(":1<CR>:CCBridgeChangeRevert<CR>");
    rig.wait_noted("the refusal", "no changed hunk here");
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("hello.py")).unwrap(),
        expected
    );
    // A list made before the file changed again (it was not the current
    // list, so it did not follow): its revert is refused, nothing is
    // written, and the list is brought up to date.
    rig.vim
        .ex("call setqflist([], ' ', {'title': 'something else'})");
    let newer = format!("{expected}log()\n");
    std::fs::write(rig.ws.join("hello.py"), &newer).unwrap();
    rig.vim.wait(
        "the sidecar to see the newer version",
        "len(get(get(get(TestChanges(), 'files', []), 0, {}), 'hunks', [])) == 2",
        STEP,
    );
    rig.vim
        .keys(":colder<CR>:copen<CR>1G:CCBridgeChangeRevert<CR>");
    rig.wait_noted("the stale refusal", "changed since the list was made");
    rig.vim
        .wait("the list to follow", "len(TestChangesList()) == 2", STEP);
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("hello.py")).unwrap(),
        newer
    );
}

/// A directory with fake `claude` and `gemini` programs that print their
/// environment and arguments, then wait.
fn fake_agents(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["claude", "gemini"] {
        let p = bin.join(name);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\necho \"{name} port=$CLAUDE_CODE_SSE_PORT ide=$ENABLE_IDE_INTEGRATION np=$no_proxy\"\nfor a; do echo \"arg: $a\"; done\nenv | sort | sed 's/^/env: /'\nexec sleep 60\n"
            ),
        )
        .unwrap();
        make_executable(&p);
    }
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The text of agent `agent`'s terminal, once it contains `needle`.
fn terminal_text(rig: &mut Rig, agent: &str, needle: &str) -> String {
    let v = rig.vim.wait(
        &format!("{agent}'s terminal to show {needle:?}"),
        &format!(
            "ccbridge#terminal#Buffer({a}) && stridx(join(getbufline(ccbridge#terminal#Buffer({a}), 1, '$'), \"\\n\"), {n}) >= 0 \
             ? join(getbufline(ccbridge#terminal#Buffer({a}), 1, '$'), \"\\n\") : ''",
            a = vim_str(agent),
            n = vim_str(needle)
        ),
        STEP,
    );
    v.as_str().unwrap().to_owned()
}

/// `:CCBridgeClaude`'s arguments go to claude after the sidecar's settings,
/// in Terminal-Job mode, with the environment the sidecar gives; the first
/// argument picks another agent the sidecar offers (what every face's
/// command does: `editor_scenarios::vim::the_claude_command_runs_claude_connected_in_a_terminal`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccbridge_claude_passes_its_arguments_and_runs_the_sidecars_other_agents() {
    let dir = ccbridge_testkit::temp_dir("ccbridge-vim-bin-").unwrap();
    let path = fake_agents(dir.path());
    let lock_dir = dir.path().join("ide");
    let extra = json!({"args": ["--lock-dir", lock_dir, "--selection-debounce-ms", "0",
                                "--agents", "claude,gemini"]});
    let mut rig = rig_with_env(extra, &[("PATH", path)]);
    rig.edit("hello.py");
    let init = rig.init();
    rig.vim.keys(":CCBridgeClaude --resume x<CR>");
    let text = terminal_text(&mut rig, "claude", "arg: --resume\narg: x");
    let settings = text.find("arg: --settings").expect("--settings");
    assert!(settings < text.find("arg: --resume").unwrap(), "{text}");
    for (k, v) in init["env"].as_object().unwrap() {
        assert!(
            text.contains(&format!("env: {k}={}", v.as_str().unwrap())),
            "{k} missing in {text}"
        );
    }
    assert_eq!(rig.vim.eval("mode()"), "t", "in Terminal-Job mode");

    // The first argument completes to the agents.
    assert_eq!(
        rig.vim
            .eval("ccbridge#terminal#Complete('g', 'CCBridgeClaude g', 16)"),
        json!(["gemini"])
    );
    // Another agent the sidecar offers (the `agents` of its initialize
    // answer): its own program, with the environment given for it.
    let gemini = init["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["id"] == "gemini"))
        .cloned()
        .unwrap_or_else(|| panic!("gemini not offered: {init}"));
    rig.vim.keys("<C-w>p");
    rig.vim.wait("back in hello.py", "&buftype ==# ''", STEP);
    rig.vim.keys(":CCBridgeClaude gemini<CR>");
    let text = terminal_text(&mut rig, "gemini", "gemini port=");
    let env = gemini["env"].as_object().unwrap();
    assert!(!env.is_empty(), "{gemini}");
    for (k, v) in env {
        assert!(
            text.contains(&format!("env: {k}={}", v.as_str().unwrap())),
            "{k} missing in {text}"
        );
    }
    assert!(!text.contains("CLAUDE_CODE_SSE_PORT"), "{text}");
    assert_eq!(rig.vim.eval("len(term_list())"), 2);
    // One it does not offer: a clear error, nothing started.
    rig.vim.keys("<C-w>p");
    rig.vim.wait("back in hello.py", "&buftype ==# ''", STEP);
    rig.vim.keys(":CCBridgeClaude qwen<CR>");
    let told = rig.wait_noted("the refusal", "the sidecar does not offer qwen");
    assert!(told.contains("it offers: claude, gemini"), "{told}");
    assert_eq!(rig.vim.eval("len(term_list())"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cd_moves_the_workspace_and_the_name_in_the_lock_file() {
    let mut rig = rig(json!({}));
    std::fs::create_dir_all(rig.ws.join("sub")).unwrap();
    let sub = rig.path("sub");
    rig.vim.keys(":cd sub<CR>");
    let lock = rig.init()["lockFile"].as_str().unwrap().to_owned();
    let found = poll_until(STEP, Duration::from_millis(20), || {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&lock).ok()?).ok()?;
        (v["workspaceFolders"] == json!([sub]) && v["ideName"] == "Vim (sub)").then_some(v)
    });
    assert!(
        found.is_some(),
        "{}",
        std::fs::read_to_string(&lock).unwrap()
    );
}

/// A file opened by an absolute path through a symbolic link to the
/// workspace (`vim ~/link/hello.py`): Vim names its buffer by the link, the
/// sidecar and the workspace tools by the real path, so the tools did not
/// see Vim's unsaved changes and asked to write over them.
#[test]
fn a_file_opened_through_a_symlink_is_known_by_its_real_path() {
    let mut rig = rig(json!({}));
    let link = rig.dir.path().join("link");
    std::os::unix::fs::symlink(&rig.ws, &link).unwrap();
    rig.vim
        .ex(&format!("edit {}", link.join("hello.py").display()));
    rig.type_line_at_top("# unsaved");
    crate::editor_scenarios::assert_the_tools_see_hellos_unsaved_changes(&mut rig);
}
