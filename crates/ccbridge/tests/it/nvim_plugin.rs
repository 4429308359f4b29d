//! The Neovim plugin (`editors/nvim`) in a real headless Neovim, driven
//! with real key input (`nvim_input`), against the real sidecar it spawns,
//! with this test playing Claude over a real WebSocket (a `claude-code`
//! session of `IdeClient`). What Claude sees is checked at Claude's end:
//! `selection_changed`, `at_mentioned`, tool results.
//!
//! Needs Neovim: `scripts/test` installs it (see `ccbridge_testkit::nvim`);
//! without it every test fails with that instruction.

use crate::claude_side::{assert_saved, next_note, poll_tool, start_open_diff, verdict};
use crate::editor_scenarios::{tools_of, EditorUnderTest, TWO_HUNKS};
use crate::vim_scenarios::VimUnderTest;
use ccbridge_client::ws_client::IdeClient;
use ccbridge_testkit::nvim::Nvim;
use ccbridge_testkit::poll_until;
use ccbridge_testkit::vim::truthy;
use ccbridge_testkit::HELLO_PY as HELLO;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const STEP: Duration = Duration::from_secs(10);

/// Neovim with the plugin set up in a fresh workspace, its sidecar
/// running. Field order is drop order.
pub(crate) struct Rig {
    nvim: Nvim,
    ws: PathBuf,
    lock_dir: PathBuf,
    _dir: tempfile::TempDir,
}

fn plugin_dir() -> PathBuf {
    ccbridge_testkit::claude::workspace_root().join("editors/nvim")
}

/// `extra` is a Lua table merged over the test defaults (sidecar and
/// plugin debounce 0, a private lock directory).
fn rig(extra: &str) -> Rig {
    rig_with_env(extra, &[])
}

/// [`rig`], with `env` in Neovim's environment too.
fn rig_with_env(extra: &str, env: &[(&str, &str)]) -> Rig {
    let dir = ccbridge_testkit::temp_dir("ccbridge-nvim-").unwrap();
    let ws = dir.path().join("ws");
    let lock_dir = dir.path().join("ide");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("hello.py"), HELLO).unwrap();
    let nvim = plugin_nvim(&ws, &lock_dir, &dir.path().join("home"), extra, env);
    Rig {
        nvim,
        ws,
        lock_dir,
        _dir: dir,
    }
}

/// A Neovim in `ws` with the plugin set up (`extra` over the test
/// defaults) and its sidecar answering.
fn plugin_nvim(ws: &Path, lock_dir: &Path, home: &Path, extra: &str, env: &[(&str, &str)]) -> Nvim {
    std::fs::create_dir_all(home).unwrap();
    let home = home.to_str().unwrap();
    let mut all = vec![("HOME", home), ("TMPDIR", home), ("XDG_STATE_HOME", home)];
    all.extend_from_slice(env);
    let mut nvim = Nvim::start(&plugin_dir().join("test/init.lua"), ws, &all).expect("start nvim");
    nvim.lua(
        r#"local bin, lock_dir, extra = ...
        local opts = vim.tbl_deep_extend("force", {
          bin = bin,
          args = { "--lock-dir", lock_dir, "--selection-debounce-ms", "0" },
          selection = { debounce_ms = 0 },
        }, loadstring("return " .. extra)())
        require("ccbridge").setup(opts)"#,
        vec![
            env!("CARGO_BIN_EXE_ccbridge").into(),
            lock_dir.to_str().unwrap().into(),
            if extra.is_empty() { "{}" } else { extra }.into(),
        ],
    );
    nvim.wait(
        "the sidecar to answer initialize",
        "require('ccbridge').state.status == 'running'",
        STEP,
    );
    nvim
}

impl Rig {
    fn path(&self, rel: &str) -> String {
        self.ws.join(rel).display().to_string()
    }

    fn edit(&mut self, rel: &str) {
        let p = self.path(rel);
        self.nvim.command(&format!("edit {p}"));
    }

    fn buffer_text(&mut self, path: &str) -> String {
        self.nvim
            .lua(
                "local b = require('ccbridge.editors').buffer_for(...)
                 return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n')",
                vec![path.into()],
            )
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Windows per tab page, as `{tab: [buffer names]}`.
    fn layout(&mut self) -> Value {
        self.nvim.eval(
            "vim.tbl_map(function(t) return vim.tbl_map(function(w)
               return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(w)) end,
               vim.api.nvim_tabpage_list_wins(t)) end, vim.api.nvim_list_tabpages())",
        )
    }
}

/// The Neovim face of the shared scenarios (`editor_scenarios`): the
/// plugin's commands and Neovim's own keys.
impl EditorUnderTest for Rig {
    const IDE: &'static str = "Neovim";

    fn start() -> Rig {
        let mut rig = rig("");
        rig.edit("hello.py");
        rig
    }

    fn start_with_path(dir: &Path) -> Rig {
        let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
        let mut rig = rig_with_env("", &[("PATH", &path)]);
        rig.edit("hello.py");
        rig
    }

    fn run_claude_command(&mut self) {
        self.nvim.input(":CCBridgeClaude<CR>");
    }

    fn wait_claude_terminal(&mut self, needle: &str) -> String {
        let text = self.nvim.wait(
            &format!("Claude's terminal to show {needle:?}"),
            &format!(
                "(function() local b = require('ccbridge.terminal').buffer(); if not b then return nil end
                   local all = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false))
                   return all:find({needle:?}, 1, true) and all or nil end)()"
            ),
            STEP,
        );
        text.as_str().unwrap().to_owned()
    }

    fn back_to_the_file(&mut self) {
        self.nvim.input("<C-\\><C-n><C-w>p");
    }

    fn in_claude_terminal(&mut self) -> bool {
        let here = "vim.api.nvim_get_current_buf() == require('ccbridge.terminal').buffer()";
        self.nvim.eval(here) == Value::Bool(true)
    }

    fn terminal_count(&mut self) -> usize {
        let n = self.nvim.eval(
            "#vim.tbl_filter(function(b) return vim.bo[b].buftype == 'terminal' end, vim.api.nvim_list_bufs())",
        );
        n.as_u64().unwrap() as usize
    }

    fn workspace(&self) -> &Path {
        &self.ws
    }

    fn lock_dir(&self) -> &Path {
        &self.lock_dir
    }

    fn init(&mut self) -> Value {
        self.nvim.eval("require('ccbridge').state.init")
    }

    fn wait_claude_connected(&mut self) {
        self.nvim.wait(
            "CCBridgeConnected",
            "#test.events_named('CCBridgeConnected') > 0",
            STEP,
        );
    }

    fn home(&self) -> PathBuf {
        self._dir.path().join("home")
    }

    fn visit(&mut self, rel: &str) {
        self.edit(rel);
    }

    fn indicator(&mut self) -> String {
        let line = self.nvim.eval("require('ccbridge').statusline()");
        line.as_str().unwrap().to_owned()
    }

    fn status(&mut self) -> String {
        let status = self.nvim.eval("require('ccbridge').state.status");
        status.as_str().unwrap_or_default().to_owned()
    }

    fn status_report(&mut self) -> String {
        // What :CCBridgeStatus prints.
        let lines = self
            .nvim
            .eval("table.concat(require('ccbridge.status').lines(), '\\n')");
        lines.as_str().unwrap().to_owned()
    }

    fn wait_file_at(&mut self, rel: &str, line: u64) {
        let path = self.path(rel);
        self.nvim.wait(
            &format!("{rel} at line {line}"),
            &format!(
                "vim.api.nvim_buf_get_name(0) == {path:?} and vim.api.nvim_win_get_cursor(0)[1] == {line}"
            ),
            STEP,
        );
    }

    fn type_line_at_top(&mut self, line: &str) {
        self.nvim.input(&format!("ggO{line}<Esc>"));
    }

    fn save(&mut self) {
        self.nvim.input(":w<CR>");
    }

    fn wait_following_disk(&mut self) {
        self.nvim.wait(
            "the directory watched",
            "next(vim.tbl_keys(require('ccbridge.reload')._watched())) ~= nil",
            STEP,
        );
    }

    fn buffer_text(&mut self, rel: &str) -> String {
        let path = self.path(rel);
        Rig::buffer_text(self, &path)
    }

    fn wait_told(&mut self, needle: &str) -> Vec<String> {
        let told = format!(
            "vim.tbl_map(function(n) return n.msg end, \
             vim.tbl_filter(function(n) return n.msg:find({needle:?}, 1, true) end, test.notes))"
        );
        let told = self.nvim.wait(
            &format!("the notice {needle:?}"),
            &format!("#{told} > 0 and {told}"),
            STEP,
        );
        let told = told.as_array().unwrap().iter();
        told.map(|m| m.as_str().unwrap().to_owned()).collect()
    }

    const BIN_OPTION: &'static str = "set `bin`";

    fn send_lines(&mut self, first: usize, last: usize) {
        self.nvim
            .input(&format!("{first}GV{last}G:CCBridgeSend<CR>"));
    }

    fn send_file(&mut self) {
        self.nvim.input("<Esc>:CCBridgeSend<CR>");
    }

    fn stop_and_set_program(&mut self, bin: &str, extra: &[&str]) {
        self.stop();
        self.nvim.lua(
            "local bin, extra = ...
             local o = require('ccbridge.config').options
             o.bin = bin
             vim.list_extend(o.args, extra)",
            vec![bin.into(), json!(extra)],
        );
    }

    fn start_command(&mut self) {
        self.nvim.command("CCBridgeStart");
    }

    const PATH_MAP_FIRST: &'static str = "`path_map[1]`";

    fn set_remote(&mut self, prefix: Value, path_map: Value) {
        self.configure(json!({"cmd": prefix, "cmd_quote": true, "path_map": path_map}));
    }

    fn wait_errors(&mut self, needle: &str) -> String {
        let errors = "table.concat(vim.tbl_map(function(n) return n.msg end, \
             vim.tbl_filter(function(n) return n.level == vim.log.levels.ERROR end, test.notes)), '\\n')";
        let errors = self.nvim.wait(
            &format!("an error saying {needle:?}"),
            &format!("({errors}):find({needle:?}, 1, true) and {errors}"),
            STEP,
        );
        errors.as_str().unwrap().to_owned()
    }

    fn append_to_proposal(&mut self, line: &str) {
        self.nvim.lua(
            "local r = require('ccbridge.diff').pending()[1]
             vim.api.nvim_buf_set_lines(r.prop, -1, -1, false, { ... })",
            vec![line.into()],
        );
    }

    /// Approvals go through `vim.ui.select`, as a picker plugin would
    /// take them: the stub keeps what it was asked and the answer.
    fn tools(&mut self) -> (u16, String) {
        self.nvim.lua(
            "vim.ui.select = function(items, opts, cb) test.asked = { items = items, prompt = opts.prompt }; test.answer = cb end",
            vec![],
        );
        tools_of(&self.init())
    }

    fn wait_approval(&mut self) -> String {
        self.nvim
            .wait("the approval prompt", "test.asked ~= nil", STEP);
        assert_eq!(self.nvim.eval("test.asked.items"), json!(["Allow", "Deny"]));
        let prompt = self.nvim.eval("test.asked.prompt");
        prompt.as_str().unwrap().to_owned()
    }

    fn answer_approval(&mut self, allow: bool) {
        let answer = if allow { "Allow" } else { "Deny" };
        self.nvim.lua(
            "local cb = test.answer; test.asked = nil; test.answer = nil; cb(...)",
            vec![answer.into()],
        );
    }

    fn wait_command_output(&mut self, needle: &str) -> String {
        let view = "(function() for _, b in ipairs(vim.api.nvim_list_bufs()) do \
               if vim.api.nvim_buf_get_name(b):find('ccbridge://command/', 1, true) then \
                 return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n') end end \
               return '' end)()";
        let shown = self.nvim.wait(
            &format!("{needle:?} in the output view"),
            &format!("{view}:find({needle:?}, 1, true) and {view}"),
            STEP,
        );
        shown.as_str().unwrap().to_owned()
    }

    fn only_window(&mut self) {
        self.nvim.command("only");
    }

    fn wait_review(&mut self) {
        self.nvim.wait(
            "the review to open",
            "#test.events_named('CCBridgeDiffOpened') > 0 and vim.b.ccbridge_review",
            STEP,
        );
    }

    fn review_file(&mut self) -> String {
        let path = self.nvim.eval("require('ccbridge.diff').pending()[1].path");
        path.as_str().unwrap().to_owned()
    }

    fn wait_review_closed(&mut self) {
        self.nvim.wait(
            "the review's tab to close",
            "#test.events_named('CCBridgeDiffClosed') > 0 and #vim.api.nvim_list_tabpages() == 1",
            STEP,
        );
    }

    fn accept_review(&mut self) {
        self.nvim.input(":w<CR>");
    }

    fn accept_review_anyway(&mut self) {
        self.nvim.input(":w!<CR>");
    }

    fn close_review(&mut self) {
        self.nvim.input(":q<CR>");
    }

    fn to_first_hunk(&mut self) {
        self.nvim.input("gg");
    }

    fn decide_hunk(&mut self, accept: bool) {
        let before = self.review_texts();
        let command = if accept { "Accept" } else { "Reject" };
        self.nvim.input(&format!(":CCBridge{command}Hunk<CR>"));
        let decided = poll_until(STEP, Duration::from_millis(10), || {
            (self.review_texts() != before).then_some(())
        });
        assert!(decided.is_some(), ":CCBridge{command}Hunk changed nothing");
    }

    fn to_last_line(&mut self) {
        self.nvim.input("G");
    }

    fn hunk_command(&mut self, accept: bool) {
        let command = if accept { "Accept" } else { "Reject" };
        self.nvim.input(&format!(":CCBridge{command}Hunk<CR>"));
    }

    fn after_last_hunk(&mut self) {}

    fn wait_review_shows(&mut self, needle: &str) -> String {
        let shown = "(function()
               local out = {}
               for _, w in ipairs(vim.api.nvim_list_wins()) do
                 local b = vim.api.nvim_win_get_buf(w)
                 if vim.api.nvim_buf_get_name(b):find('^ccbridge://') then
                   out[#out + 1] = vim.wo[w].winbar
                   for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, -1, 0, -1, { details = true })) do
                     for _, line in ipairs(m[4].virt_lines or {}) do
                       for _, chunk in ipairs(line) do
                         out[#out + 1] = chunk[1]
                       end
                     end
                   end
                 end
               end
               return table.concat(out, '\\n')
             end)()";
        crate::editor_scenarios::wait_shown(needle, || {
            self.nvim
                .eval(shown)
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
    }

    fn second(&mut self) -> (Box<dyn std::any::Any>, PathBuf) {
        let home = self._dir.path().join("home2");
        let mut second = plugin_nvim(&self.ws, &self.lock_dir, &home, "", &[]);
        let lock = second.eval("require('ccbridge').state.init.lockFile");
        let lock = PathBuf::from(lock.as_str().unwrap());
        (Box::new(second), lock)
    }

    fn quit(self) -> (bool, tempfile::TempDir) {
        let Rig { nvim, _dir, .. } = self;
        (nvim.quit().is_some(), _dir)
    }
}

/// The Neovim face of the scenarios of the two Vims (`vim_scenarios`):
/// Vim script through `vim.fn.eval`, the events the test init records.
impl VimUnderTest for Rig {
    fn start_with(options: Value) -> Rig {
        let mut rig = rig(&format!("vim.json.decode([==[{options}]==])"));
        rig.edit("hello.py");
        rig
    }

    fn keys(&mut self, keys: &str) {
        self.nvim.input(keys);
    }

    fn ex(&mut self, command: &str) {
        self.nvim.command(command);
    }

    fn eval(&mut self, expr: &str) -> Value {
        self.nvim.lua("return vim.fn.eval(...)", vec![expr.into()])
    }

    fn wait(&mut self, what: &str, expr: &str) -> Value {
        let mut last = Value::Null;
        let got = poll_until(STEP, Duration::from_millis(10), || {
            last = VimUnderTest::eval(self, expr);
            truthy(&last).then(|| last.clone())
        });
        got.unwrap_or_else(|| panic!("waited {STEP:?} for {what}; `{expr}` is still {last}"))
    }

    fn events(&mut self, name: &str) -> Vec<Value> {
        let json = self.nvim.lua(
            "return vim.json.encode(vim.tbl_map(function(e) return e.data or vim.NIL end, test.events_named(...)))",
            vec![name.into()],
        );
        match serde_json::from_str(json.as_str().unwrap()).unwrap() {
            Value::Array(events) => events,
            _ => Vec::new(), // `{}`: no event (an empty Lua table)
        }
    }

    fn layout(&mut self) -> Value {
        Rig::layout(self)
    }

    fn terminal_here(&mut self) {
        self.nvim.command("terminal");
        self.nvim.input("i");
    }

    fn review_bar(&mut self) -> String {
        let bar = self.nvim.eval("vim.wo.winbar");
        bar.as_str().unwrap().to_owned()
    }

    fn help() -> (PathBuf, &'static [&'static str]) {
        (plugin_dir().join("doc/ccbridge.txt"), &["ccbridge-setup"])
    }

    fn set_option(&mut self, path: &[&str], value: Value) {
        self.nvim.lua(
            "local path, value = ...
             local o = require('ccbridge.config').options
             for i = 1, #path - 1 do o = o[path[i]] end
             o[path[#path]] = value",
            vec![json!(path), value],
        );
    }

    fn configure(&mut self, options: Value) {
        self.nvim.lua(
            "local opts = ...
             local now = require('ccbridge.config').options
             opts.bin, opts.args = now.bin, now.args
             require('ccbridge').setup(opts)",
            vec![options],
        );
    }

    fn option(&mut self, path: &[&str]) -> Value {
        self.nvim.lua(
            "local o = require('ccbridge.config').options
             for _, key in ipairs(...) do o = o[key] end
             return o",
            vec![json!(path)],
        )
    }

    fn claude_terminal(&mut self) -> Option<u64> {
        self.nvim
            .eval("require('ccbridge.terminal').buffer()")
            .as_u64()
    }

    fn terminal_finished(&mut self, buf: u64) -> bool {
        let finished = format!(
            "(function() local job = vim.b[{buf}].terminal_job_id
               return job ~= nil and vim.fn.jobwait({{ job }}, 0)[1] ~= -1 end)()"
        );
        self.nvim.eval(&finished) == Value::Bool(true)
    }
}

impl Rig {
    /// `:checkhealth ccbridge`'s report.
    fn checkhealth(&mut self) -> String {
        self.nvim.command("checkhealth ccbridge");
        let report = self
            .nvim
            .eval("table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')");
        report.as_str().unwrap().to_owned()
    }

    /// `:CCBridgeStop`, once the sidecar has stopped.
    fn stop(&mut self) {
        self.nvim.command("CCBridgeStop");
        self.nvim.wait(
            "the sidecar to stop",
            "require('ccbridge').state.status == 'stopped'",
            STEP,
        );
    }

    /// The review's original and proposed text, as its two buffers hold
    /// them ("" for a buffer not there).
    fn review_texts(&mut self) -> Value {
        self.nvim.eval(
            "vim.tbl_map(function(kind)
               for _, b in ipairs(vim.api.nvim_list_bufs()) do
                 if vim.api.nvim_buf_get_name(b):find('^ccbridge://%d+/' .. kind .. '/') then
                   return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n')
                     .. (vim.bo[b].eol and '\\n' or '')
                 end
               end
               return ''
             end, { 'original', 'proposed' })",
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkhealth_reports_the_binary_protocol_lock_file_and_sessions() {
    let mut rig = rig("");
    let lock_path = rig.init()["lockFile"].as_str().unwrap().to_owned();
    assert!(Path::new(&lock_path).exists());
    let _claude = rig.claude().await;
    let report = rig.checkhealth();
    for needle in [
        env!("CARGO_BIN_EXE_ccbridge"),
        "version: ccbridge ",
        "editor protocol 3",
        &format!("lock file: {lock_path}"),
        "Claude Code session 1: claude-code",
    ] {
        assert!(report.contains(needle), "no {needle:?} in\n{report}");
    }
    assert!(!report.contains("ERROR"), "{report}");
    // `:CCBridgeStop` ends the sidecar, which removes its lock file.
    rig.stop();
    assert!(!Path::new(&lock_path).exists(), "lock file left behind");
    assert_eq!(rig.nvim.eval("require('ccbridge').statusline()"), "");
    let report = rig.checkhealth();
    assert!(report.contains("the sidecar is not running"), "{report}");
}

/// `:checkhealth` names a ccbridge that is not there (the notice and
/// `:CCBridgeStatus`: `vim_scenarios::nvim::a_missing_binary_is_reported_once_with_what_to_do`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkhealth_names_a_missing_binary() {
    let mut rig = rig("");
    rig.stop();
    rig.nvim.lua(
        "require('ccbridge').setup({ bin = '/nonexistent/ccbridge' })",
        vec![],
    );
    let report = rig.checkhealth();
    assert!(
        report.contains("`/nonexistent/ccbridge` not found"),
        "{report}"
    );
}

/// A `cmd` or `path_map` that stops the sidecar from starting
/// (`editor_scenarios::nvim::a_bad_remote_setting_is_an_error_before_anything_runs`)
/// is named by `:checkhealth` too, before anything is started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkhealth_names_a_bad_remote_setting() {
    let mut rig = rig("");
    rig.stop();
    rig.configure(json!({"cmd": "ssh devbox", "path_map": [["relative", "/srv"]]}));
    let report = rig.checkhealth();
    for what in [
        "the sidecar does not start: `cmd` must be a list of strings",
        "`path_map[1]` must be",
    ] {
        assert!(report.contains(what), "no {what:?} in {report}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vim_diagnostic_reaches_claude_with_utf16_columns() {
    let mut rig = rig("");
    std::fs::write(rig.ws.join("other.txt"), "ö x\n").unwrap();
    rig.edit("other.txt");
    let mut c = rig.claude().await;
    let other = rig.path("other.txt");

    // vim.diagnostic → getDiagnostics, columns in UTF-16 ("ö" is 2 bytes, 1 unit).
    rig.nvim.lua(
        "local path = ...
         local b = require('ccbridge.editors').buffer_for(path)
         local ns = vim.api.nvim_create_namespace('test')
         vim.diagnostic.set(ns, b, {{ lnum = 0, col = 3, end_col = 4, severity = 1,
           message = 'bad x', source = 'lint', code = 'E1' }})",
        vec![other.clone().into()],
    );
    let uri = format!("file://{other}");
    let diags = poll_tool(&mut c, "getDiagnostics", json!({"uri": uri}), |v| {
        v.as_array().is_some_and(|a| {
            a.iter()
                .any(|f| f["diagnostics"].as_array().is_some_and(|d| !d.is_empty()))
        })
    })
    .await;
    let d = &diags[0]["diagnostics"][0];
    assert_eq!(d["message"], "bad x");
    assert_eq!(d["range"]["start"]["character"], 2, "{d}");
    assert_eq!(d["range"]["end"]["character"], 3, "{d}");
    assert_eq!(d["source"], "lint");
    // Cleared in Neovim, cleared for Claude.
    rig.nvim.lua("vim.diagnostic.reset()", vec![]);
    poll_tool(&mut c, "getDiagnostics", json!({"uri": uri}), |v| {
        v.as_array().is_some_and(|a| {
            a.iter()
                .all(|f| f["diagnostics"].as_array().is_some_and(|d| d.is_empty()))
        })
    })
    .await;
}

/// Starts Claude's `openDiff` of `hello.py` → `proposed` and waits until
/// Neovim shows the review. The call's task returns the tool's text.
async fn open_diff(
    rig: &mut Rig,
    c: IdeClient,
    proposed: &str,
) -> tokio::task::JoinHandle<(IdeClient, String)> {
    let path = rig.path("hello.py");
    let task = start_open_diff(c, path, proposed);
    rig.nvim.wait(
        "the review to open",
        "#test.events_named('CCBridgeDiffOpened') > 0 and vim.b.ccbridge_review",
        STEP,
    );
    task
}

/// A rig editing hello.py, Claude connected, and Claude's proposal of
/// `proposed` open for review.
async fn review(
    extra: &str,
    proposed: &str,
) -> (Rig, tokio::task::JoinHandle<(IdeClient, String)>) {
    let mut rig = rig(extra);
    rig.edit("hello.py");
    let c = rig.claude().await;
    let task = open_diff(&mut rig, c, proposed).await;
    (rig, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inline_layout_shows_removed_lines_and_decides_hunk_by_hunk() {
    let (mut rig, task) = review("{ diff = { layout = 'inline' } }", TWO_HUNKS).await;
    // Inline: one window, the removed line shown as a virtual line.
    let virt = rig.nvim.eval(
        "#vim.api.nvim_buf_get_extmarks(0, -1, 0, -1, { details = true, type = 'virt_lines' })",
    );
    assert_eq!(virt, 2, "one virtual line block per hunk");
    rig.nvim.input("gg:CCBridgeRejectHunk<CR>");
    rig.nvim.wait(
        "one hunk left",
        "#vim.api.nvim_buf_get_extmarks(0, -1, 0, -1, { type = 'virt_lines' }) == 1",
        STEP,
    );
    rig.nvim.input(":CCBridgeAcceptHunk<CR>");
    let (_c, text) = verdict(task).await;
    let expected = HELLO.replace("greet(\"world\")", "greet(\"everyone\")");
    assert_saved(&text, &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsaved_changes_made_during_the_review_also_hold_the_accept() {
    let mut rig = rig("");
    rig.edit("hello.py");
    let hello_buf = rig.nvim.eval("vim.api.nvim_get_current_buf()");
    let c = rig.claude().await;
    let task = open_diff(&mut rig, c, &HELLO.replace("hello ", "hi ")).await;
    // The user's own buffer changes while the review is open.
    rig.nvim.lua(
        "vim.api.nvim_buf_set_lines(..., 0, 0, false, { '# new' })",
        vec![hello_buf],
    );
    rig.nvim.input(":w<CR>");
    rig.nvim.wait(
        "the refusal",
        "test.noted('accept anyway with :w!') ~= nil",
        STEP,
    );
    assert!(!task.is_finished(), "accepted over unsaved changes");
    rig.nvim.input(":CCBridgeReject<CR>");
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("DIFF_REJECTED"), "{text}");
}

/// The reload itself is the shared scenario
/// `editor_scenarios::nvim::buffers_reload_when_claude_writes_and_unsaved_ones_get_one_notice`;
/// here, that it leaves the user's `'autoread'` as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_leaves_no_buffer_local_autoread_behind() {
    let mut rig = <Rig as EditorUnderTest>::start();
    let _c = rig.claude().await;
    rig.wait_following_disk();
    let path = rig.path("hello.py");
    std::fs::write(rig.ws.join("hello.py"), "print('rewritten')\n").unwrap();
    rig.nvim.wait(
        "hello.py reloaded",
        &format!(
            "vim.api.nvim_buf_get_lines(require('ccbridge.editors').buffer_for({path:?}), 0, -1, false)[1] == \"print('rewritten')\""
        ),
        STEP,
    );
    // -1: no buffer-local value.
    let local = rig.nvim.lua(
        "return vim.fn.getbufvar(require('ccbridge.editors').buffer_for(...), '&l:autoread')",
        vec![path.into()],
    );
    assert_eq!(local, -1);
}

/// The selected lines and the file:
/// `editor_scenarios::nvim::send_mentions_the_selected_lines_or_the_file`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_mentions_explorer_entries() {
    let mut rig = rig("");
    std::fs::create_dir_all(rig.ws.join("src")).unwrap();
    std::fs::write(rig.ws.join("src/lib.rs"), "fn main() {}\n").unwrap();
    rig.edit("hello.py");
    let mut c = rig.claude().await;

    // netrw (shipped with Neovim): the entry under the cursor.
    rig.nvim.lua("vim.g.netrw_liststyle = 0", vec![]);
    rig.nvim.command(&format!("Explore {}", rig.ws.display()));
    rig.nvim.wait("netrw", "vim.bo.filetype == 'netrw'", STEP);
    rig.nvim.command("call search('^src/')");
    rig.nvim.input(":CCBridgeSend<CR>");
    let m = next_note(&mut c, "at_mentioned").await;
    assert_eq!(m["filePath"], rig.path("src"));

    // oil.nvim, neo-tree and nvim-tree through their public APIs (stand-ins
    // in editors/nvim/test/stubs answer as the real plugins do).
    for (ft, entry) in [
        ("oil", "src/lib.rs"),
        ("neo-tree", "src"),
        ("NvimTree", "hello.py"),
    ] {
        let target = rig.path(entry);
        rig.nvim.lua(
            "local ft, target = ...
             vim.g.test_explorer_entry = target
             vim.cmd('enew')
             vim.bo.buftype = 'nofile'
             vim.bo.filetype = ft",
            vec![ft.into(), target.clone().into()],
        );
        rig.nvim.input(":CCBridgeSend<CR>");
        let m = next_note(&mut c, "at_mentioned").await;
        assert_eq!(m["filePath"], target, "{ft}");
    }
}

/// What `:CCBridgeClaude` is given goes to claude after the sidecar's
/// settings (the rest of the command: `editor_scenarios::nvim::the_claude_command_runs_claude_connected_in_a_terminal`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccbridge_claude_passes_its_arguments_after_the_sidecars_settings() {
    let mut rig = rig(
        r#"{ terminal = { cmd = { "sh", "-c", 'echo "args=$*"; exec sleep 60', "claude" } } }"#,
    );
    rig.nvim.input(":CCBridgeClaude --resume x<CR>");
    let line = rig.nvim.wait(
        "the terminal's output",
        "(function() local b = require('ccbridge.terminal').buffer(); if not b then return nil end
           local all = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false))
           return all:find('--resume x', 1, true) and all or nil end)()",
        STEP,
    );
    let line = line.as_str().unwrap();
    let settings = line.find("args=--settings {").expect("the settings first");
    assert!(settings < line.find("--resume x").unwrap(), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connected_and_disconnected_events_carry_the_session() {
    // The indicator and :CCBridgeStatus: editor_scenarios::nvim::the_status_follows_claudes_session.
    let mut rig = rig("");
    rig.edit("hello.py");
    let c = rig.claude().await;
    let connected = rig
        .nvim
        .eval("test.events_named('CCBridgeConnected')[1].data");
    assert_eq!(connected["name"], "claude-code");
    assert_eq!(connected["pid"], std::process::id());
    c.close().await.unwrap();
    let gone = rig.nvim.wait(
        "CCBridgeDisconnected",
        "#test.events_named('CCBridgeDisconnected') > 0 and test.events_named('CCBridgeDisconnected')[1].data",
        STEP,
    );
    assert_eq!(gone["name"], "claude-code", "{gone}");
}

/// Neovim before 0.12 blanked what scrolled off a terminal view before
/// its first refresh (neovim/neovim#37573): the header and first lines of
/// a quick command with more lines than the view were lost. Found by the
/// shared bidi scenario, whose command prints more lines than the view has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_commands_first_lines_stay_in_the_output_view() {
    let mut rig = <Rig as EditorUnderTest>::start();
    let (port, token) = rig.tools();
    let run = std::thread::spawn(move || {
        ccbridge_testkit::http::mcp_call(
            port,
            &token,
            "execute_command",
            json!({"command": "seq 1 40"}),
            Duration::from_secs(30),
        )
    });
    rig.wait_approval();
    rig.answer_approval(true);
    run.join().unwrap();
    let view = rig.wait_command_output("[exit 0]");
    let lines: Vec<&str> = view.lines().collect();
    assert_eq!(lines.first(), Some(&"$ seq 1 40"), "{view}");
    let numbers: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.parse::<u32>().is_ok())
        .collect();
    assert_eq!(
        numbers,
        (1..=40).map(|n| n.to_string()).collect::<Vec<_>>(),
        "{view}"
    );
}

/// Issue 19, the session review in Neovim: a change written on disk
/// without a review (an agent in auto mode) is listed by `:CCBridgeChanges`
/// in the quickfix list, one entry per hunk; `:CCBridgeChangeRevert` on
/// the second of two identical hunks reverts that one only, and the list
/// follows (`changesChanged`).
#[test]
fn the_session_review_lists_hunks_in_quickfix_and_reverts_the_one_under_the_cursor() {
    let mut rig = rig("{}");
    // The baseline is taken when the sidecar starts: wait for it.
    rig.nvim.wait(
        "the session review to be ready",
        "(function() require('ccbridge').request('changes', vim.empty_dict(), function(_, r) _G.cc_ready = r and r.ready end) return _G.cc_ready end)()",
        STEP,
    );
    let edited = HELLO
        .replace("def greet(name):\n", "def greet(name):\n    log()\n")
        .replace("    print(message)\n", "    print(message)\n    log()\n");
    std::fs::write(rig.ws.join("hello.py"), &edited).unwrap();
    rig.nvim.command("CCBridgeChanges");
    let items = rig.nvim.wait(
        "two quickfix entries",
        "(function() local l = vim.fn.getqflist({ title = 0, items = 0 }) return l.title == 'ccbridge: changes' and #l.items == 2 and vim.tbl_map(function(i) return { lnum = i.lnum, text = i.text } end, l.items) end)()",
        STEP,
    );
    assert_eq!(items[0]["lnum"], 2, "{items}");
    assert_eq!(items[1]["lnum"], 5, "{items}");
    assert!(
        items[1]["text"].as_str().unwrap().contains("not reviewed"),
        "{items}"
    );
    // The second `log()` line, in the file itself.
    rig.edit("hello.py");
    rig.nvim.command("5");
    rig.nvim.command("CCBridgeChangeRevert");
    let expected = HELLO.replace("def greet(name):\n", "def greet(name):\n    log()\n");
    poll_until(STEP, Duration::from_millis(10), || {
        (std::fs::read_to_string(rig.ws.join("hello.py")).unwrap() == expected).then_some(())
    })
    .expect("only the second hunk is reverted");
    rig.nvim.wait(
        "the quickfix list to follow",
        "#vim.fn.getqflist() == 1 and vim.fn.getqflist()[1].lnum == 2",
        STEP,
    );
    // The buffer reloaded the file.
    rig.nvim.wait(
        "the buffer to reload",
        "#vim.api.nvim_buf_get_lines(0, 0, -1, false) == 8",
        STEP,
    );
    // With a line inserted above and not written, the cursor on `def
    // greet` (the buffer's line 2) is on the disk's line 2, the remaining
    // hunk's: the revert reached that hunk. Refused, nothing reverted.
    rig.nvim.command("call append(0, 'unsaved')");
    rig.nvim.command("2");
    rig.nvim.command("CCBridgeChangeRevert");
    rig.wait_told("hello.py has unsaved changes: write or undo them first");
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("hello.py")).unwrap(),
        expected
    );
}

/// Issue 19: an edit accepted in Neovim's review is "reviewed" in the
/// session review once Claude writes it, unlike one written without asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_accepted_in_the_review_is_listed_as_reviewed() {
    let proposed = HELLO.replace("hello ", "hi ");
    let (mut rig, task) = review("", &proposed).await;
    rig.nvim.input(":w<CR>");
    let (_c, text) = verdict(task).await;
    assert!(text.starts_with("FILE_SAVED"), "{text}");
    // Claude writes what was accepted, as the CLI does after FILE_SAVED.
    std::fs::write(rig.ws.join("hello.py"), &proposed).unwrap();
    rig.nvim.command("CCBridgeChanges");
    let text = rig.nvim.wait(
        "the reviewed change in the quickfix list",
        "(function() local l = vim.fn.getqflist({ title = 0, items = 0 }) return l.title == 'ccbridge: changes' and #l.items == 1 and l.items[1].text end)()",
        STEP,
    );
    let text = text.as_str().unwrap();
    assert!(
        text.contains("(kept), reviewed") && !text.contains("not reviewed"),
        "{text}"
    );
}
