//! The review page in a real browser (Debian Chromium, playwright-core)
//! against the real server, with a WebSocket client playing Claude Code:
//! every decision the page can make reaches Claude exactly, the selection
//! and "Send to Claude" arrive with the right 0-based positions, and a page
//! on another origin can neither read nor change anything.
//!
//! Screenshots of the main views (both layouts, light and dark) are written
//! to `<target>/tmp/ui-screenshots/` for a person to look at; they are test
//! output, not committed.

use ccbridge_client::ws_client::IdeClient;
use ccbridge_protocol::editor::{Diagnostic, Position, Range, Severity};
use ccbridge_protocol::lockfile::McpEndpoint;
use ccbridge_server::{Config, EditorEvent, EngineHandle};
use ccbridge_testkit::browser::Browser;
use ccbridge_webui::Standalone;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::runtime::Runtime;

const WAIT: Duration = Duration::from_secs(20);
const PAGE: &str = "ui";
/// A second tab of the same browser (signed in through the first).
const OTHER: &str = "other";

struct Rig {
    rt: Runtime,
    ui_port: u16,
    ide_port: u16,
    ide_token: String,
    engine: EngineHandle,
    ws: PathBuf,
    tools: Option<McpEndpoint>,
    browser: Browser,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// The reviews [`Rig::review_id`] has handed out: a proposal is always a
    /// new review, and the card of the one before may still be marked
    /// pending while the page waits for its answer.
    seen: std::collections::HashSet<String>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn shots() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

impl Rig {
    /// A server for a fresh workspace and a browser signed in to its page.
    fn start(color_scheme: &str) -> Rig {
        Rig::start_with(color_scheme, None)
    }

    /// [`Rig::start`], with the workspace tools server when `tools` says.
    fn start_with(color_scheme: &str, tools: Option<ccbridge_mcp::launch::Options>) -> Rig {
        Rig::start_full(color_scheme, tools, &[], false)
    }

    /// [`Rig::start_with`], with `files` in the workspace before the server
    /// starts, and the session review on when `changes` says.
    fn start_full(
        color_scheme: &str,
        tools: Option<ccbridge_mcp::launch::Options>,
        files: &[(&str, &str)],
        changes: bool,
    ) -> Rig {
        let options = ccbridge_webui::Options {
            tools,
            changes,
            ..Default::default()
        };
        Rig::start_with_options(color_scheme, files, options)
    }

    /// The page on `files` with these options of `ccbridge serve`.
    fn start_with_options(
        color_scheme: &str,
        files: &[(&str, &str)],
        options: ccbridge_webui::Options,
    ) -> Rig {
        let rt = Runtime::new().unwrap();
        let ws_dir = tempfile::tempdir().unwrap();
        let cfg = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws_dir.path()).unwrap();
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/a.py"), "one\ntwo\nthree\n😀é\n").unwrap();
        for (name, text) in files {
            std::fs::write(ws.join(name), text).unwrap();
        }
        let mut config = Config::new("BrowserTest", vec![ws.display().to_string()]);
        config.lock_dir = Some(cfg.path().join("ide"));
        config.notify_delay = Duration::from_millis(10);
        config.selection_debounce = Duration::ZERO;
        config.multi_client = true;
        let s = rt.block_on(Standalone::start(config, options)).unwrap();
        let tools = s.tools().ok().cloned();
        let url = s.url().to_owned();
        let ui_port = s.ui_port();
        let engine = s.engine().clone();
        let ide_port = engine.port();
        let lock = std::fs::read(engine.lock_path().unwrap()).unwrap();
        let ide_token = ccbridge_protocol::lockfile::LockFile::parse(&lock)
            .unwrap()
            .auth_token
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        rt.spawn(s.run(async move {
            let _ = stopped.await;
        }));
        let mut browser = Browser::launch();
        browser.new_page(PAGE, color_scheme);
        browser.goto(PAGE, &url);
        browser.wait_for(PAGE, "[data-connection]");
        Rig {
            rt,
            ui_port,
            ide_port,
            ide_token,
            engine,
            ws,
            tools,
            browser,
            stop: Some(stop),
            seen: Default::default(),
            _dirs: (ws_dir, cfg),
        }
    }

    /// A client playing Claude (it receives notifications once ready).
    fn claude(&self) -> IdeClient {
        self.rt.block_on(async {
            let mut c =
                IdeClient::connect_as(self.ide_port, Some(&self.ide_token), WAIT, "claude-code")
                    .await
                    .unwrap();
            c.list_tools().await.unwrap();
            c
        })
    }

    /// Claude proposes `contents` for `path`; the handle ends with the
    /// `openDiff` result.
    fn propose(&self, path: &Path, contents: &str, tab: &str) -> tokio::task::JoinHandle<Value> {
        let args = json!({"old_file_path": path, "new_file_path": path,
            "new_file_contents": contents, "tab_name": tab});
        let (port, token) = (self.ide_port, self.ide_token.clone());
        self.rt.spawn(async move {
            let mut c = IdeClient::connect(port, Some(&token), WAIT).await.unwrap();
            c.call_tool_raw("openDiff", args, None).await.unwrap()
        })
    }

    fn outcome(&self, call: tokio::task::JoinHandle<Value>) -> Vec<String> {
        let v = self
            .rt
            .block_on(async { tokio::time::timeout(WAIT, call).await })
            .expect("Claude gets its answer")
            .unwrap();
        v["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["text"].as_str().unwrap().to_owned())
            .collect()
    }

    fn close_tab(&self, tab: &str) {
        let (port, token) = (self.ide_port, self.ide_token.clone());
        let tab = tab.to_owned();
        self.rt.block_on(async move {
            let mut c = IdeClient::connect(port, Some(&token), WAIT).await.unwrap();
            c.call_tool("close_tab", json!({"tab_name": tab}), Some(WAIT))
                .await
                .unwrap();
        });
    }

    /// The id of the pending review card for `path`, once the page shows
    /// it. Pending only: the card of an earlier, decided review of the same
    /// file may still be on the page until Claude's close reaches it (a
    /// fresh-clone run once picked that card, which then left).
    fn review_id(&mut self, path: &Path) -> String {
        let find = r#"([path, seen]) => { for (const el of document.querySelectorAll('[data-review][data-status=pending]')) {
            if (!seen.includes(el.dataset.review) && el.textContent.includes(path.split('/').pop())) return el.dataset.review; }
            return null; }"#;
        let seen: Vec<&String> = self.seen.iter().collect();
        let id = self
            .browser
            .wait_until(PAGE, find, json!([path.display().to_string(), seen]))
            .as_str()
            .unwrap()
            .to_owned();
        self.seen.insert(id.clone());
        id
    }

    /// Calls `tool` on the workspace tools server in a thread of its own;
    /// the handle ends with the JSON-RPC answer.
    fn mcp_call(&self, tool: &str, args: Value) -> std::thread::JoinHandle<Value> {
        let e = self.tools.clone().expect("the rig serves the tools");
        let port = ccbridge_testkit::http::url_port(&e.url);
        let tool = tool.to_owned();
        std::thread::spawn(move || {
            use ccbridge_testkit::http::{mcp_post, mcp_session};
            let session = mcp_session(port, &e.token, WAIT);
            let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                "params":{"name": tool, "arguments": args}});
            // A call waits for the user: the test's waits bound it.
            let patient = Duration::from_secs(120);
            mcp_post(port, &e.token, Some(&session), &call.to_string(), patient).message()
        })
    }

    fn card(id: &str, rest: &str) -> String {
        format!("[data-review=\"{id}\"] {rest}")
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.ws.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn shot(&mut self, name: &str) {
        self.shot_of(PAGE, name);
    }

    fn shot_of(&mut self, page: &str, name: &str) {
        let p = shots().join(format!("{name}.png"));
        self.browser.screenshot(page, &p);
        eprintln!("[ui] screenshot {}", p.display());
    }

    /// Console errors, less the ones a test provoked on purpose.
    fn assert_quiet_console(&mut self) {
        self.assert_quiet_console_but(&[]);
    }

    /// [`Self::assert_quiet_console`], also letting through the errors
    /// containing one of `provoked` (e.g. the refused requests of a test
    /// that refuses them: the browser logs each when it fails, which may be
    /// after the page has shown what it makes of it).
    fn assert_quiet_console_but(&mut self, provoked: &[&str]) {
        let errors: Vec<String> = self
            .browser
            .console_errors()
            .into_iter()
            .filter(|e| !e.contains("409") && !e.contains("401"))
            .filter(|e| !provoked.iter().any(|p| e.contains(p)))
            .collect();
        assert!(errors.is_empty(), "console errors: {errors:?}");
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

const SEVEN: &str = "a\nb\nc\nd\ne\nf\ng\n";
const SEVEN_PROPOSED: &str = "A\nb\nc\nD\ne\nf\nG\n";

#[test]
fn accept_reject_edit_and_per_hunk_reach_claude_exactly() {
    let mut rig = Rig::start("light");

    // Accept the whole file.
    let f = rig.write("whole.txt", "x\ny\n");
    let call = rig.propose(&f, "x\nY\n", "t-whole");
    let id = rig.review_id(&f);
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=accept-file]"));
    assert_eq!(rig.outcome(call), vec!["FILE_SAVED", "x\nY\n"]);
    rig.close_tab("t-whole");
    rig.browser
        .wait_gone(PAGE, &format!("[data-review=\"{id}\"]"));
    // With nothing left, the view says how the last review ended.
    let last = rig.browser.text(PAGE, "[data-last-review]");
    assert!(
        last.contains("whole.txt: you accepted it (Claude Code has your decision)"),
        "{last}"
    );

    // Reject it.
    let call = rig.propose(&f, "nope\n", "t-reject");
    let id = rig.review_id(&f);
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=reject-file]"));
    assert_eq!(rig.outcome(call)[0], "DIFF_REJECTED");
    rig.close_tab("t-reject");
    rig.browser
        .wait_gone(PAGE, &format!("[data-review=\"{id}\"]"));

    // Edit the proposed side, then accept: the edit is what Claude gets.
    let f = rig.write("edit.py", "one\ntwo\nthree\n");
    let call = rig.propose(&f, "one\nTWO\nthree\n", "t-edit");
    let id = rig.review_id(&f);
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-side=proposed] .cm-line:has-text(\"TWO\")"),
    );
    rig.browser.press(PAGE, "End");
    rig.browser.type_text(PAGE, " edited");
    rig.browser.press(PAGE, "Escape");
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=accept-file]"));
    assert_eq!(
        rig.outcome(call),
        vec!["FILE_SAVED", "one\nTWO edited\nthree\n"]
    );
    rig.close_tab("t-edit");

    // Per hunk: accept 1 and 3, reject 2.
    let f = rig.write("seven.txt", SEVEN);
    let call = rig.propose(&f, SEVEN_PROPOSED, "t-hunks");
    let id = rig.review_id(&f);
    // The card appears first; its editors, and with them the hunk markers,
    // are mounted in a later animation frame: wait for the last, then count.
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"2\"]"));
    assert_eq!(rig.browser.count(PAGE, &Rig::card(&id, "[data-hunk]")), 3);
    rig.shot("review-split-light");
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-hunk=\"0\"] [data-action=accept-hunk]"),
    );
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"0\"][data-accepted]"));
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-hunk=\"1\"] [data-action=reject-hunk]"),
    );
    // The rejected hunk is reverted: two are left, the first accepted.
    rig.browser.wait_until(
        PAGE,
        "(sel) => document.querySelectorAll(sel).length === 2",
        json!(Rig::card(&id, "[data-hunk]")),
    );
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-hunk=\"1\"] [data-action=accept-hunk]"),
    );
    assert_eq!(
        rig.outcome(call),
        vec!["FILE_SAVED", "A\nb\nc\nd\ne\nf\nG\n"]
    );
    rig.close_tab("t-hunks");

    // The page's one layout switch (no second one per card).
    let call = rig.propose(&f, SEVEN_PROPOSED, "t-closed");
    let id = rig.review_id(&f);
    assert_eq!(rig.browser.count(PAGE, "[data-action=toggle-layout]"), 0);
    rig.browser.click(PAGE, "button[data-layout=unified]");
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, ".editor-box[data-layout=unified]"));
    rig.shot("review-unified-light");
    rig.browser
        .must("colorScheme", json!({"page": PAGE, "colorScheme": "dark"}));
    rig.shot("review-unified-dark");
    rig.browser.press(PAGE, "l");
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, ".editor-box[data-layout=split]"));
    assert_eq!(
        rig.browser
            .attribute(PAGE, "button[data-layout=split]", "aria-pressed")
            .as_deref(),
        Some("true")
    );
    rig.shot("review-split-dark");
    rig.browser
        .must("colorScheme", json!({"page": PAGE, "colorScheme": "light"}));

    // Issue 19: a review Claude closes itself (answered in its terminal,
    // cancelled) used to vanish with the reviewer's edit in it. It stays,
    // read-only, saying so, its text (the edit included) to copy, until
    // dismissed.
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-side=proposed] .cm-line:has-text(\"D\")"),
    );
    rig.browser.press(PAGE, "End");
    rig.browser.type_text(PAGE, " kept");
    rig.browser.press(PAGE, "Escape");
    rig.browser.wait_until(
        PAGE,
        "(sel) => document.querySelector(sel)?.textContent === 'Saved'",
        json!(Rig::card(&id, ".save-state")),
    );
    rig.close_tab("t-closed");
    assert_eq!(rig.outcome(call)[0], "DIFF_REJECTED");
    let closed = format!("[data-review=\"{id}\"][data-status=closed]");
    rig.browser.wait_for(PAGE, &closed);
    let note = rig.browser.text(PAGE, "[data-note]");
    assert!(
        note.contains("seven.txt") && note.contains("closed by Claude"),
        "{note}"
    );
    let why = rig.browser.text(PAGE, &format!("{closed} [data-closed]"));
    assert!(
        why.contains("closed by Claude Code") && why.contains("did not write it"),
        "{why}"
    );
    assert_eq!(
        rig.browser
            .attribute(
                PAGE,
                &format!("{closed} [data-side=proposed] .cm-content"),
                "contenteditable"
            )
            .as_deref(),
        Some("false"),
        "a closed proposal is read-only"
    );
    let decide_buttons = rig.browser.eval(
        PAGE,
        "(sel) => [...document.querySelectorAll(sel)].filter((b) => !b.hidden && !b.disabled).map((b) => b.dataset.action)",
        json!(format!(
            "{closed} .card-toolbar button:not([data-action=toggle-collapse]), {closed} .hunk-marker button"
        )),
    );
    assert_eq!(decide_buttons, json!([]), "nothing is left to decide");
    rig.shot("review-closed-by-claude-light");
    rig.browser
        .click(PAGE, &format!("{closed} [data-action=copy-proposed]"));
    let copied = rig.browser.wait_until(
        PAGE,
        "() => navigator.clipboard.readText().then((t) => t || null)",
        json!(null),
    );
    assert_eq!(copied, json!("A\nb\nc\nD kept\ne\nf\nG\n"));
    rig.browser
        .click(PAGE, &format!("{closed} [data-action=forget]"));
    rig.browser
        .wait_gone(PAGE, &format!("[data-review=\"{id}\"]"));
    rig.assert_quiet_console();
}

/// Issue 19, item 2: what the page shows survives a reload. A proposal the
/// agent closed undecided stays (read-only, its text to copy) and the
/// history keeps "changed without a review"; both lived only in the page,
/// so a reload lost them. A dismissed one does not come back.
/// A proposal that only adds the missing final line break showed the last
/// line highlighted on both sides with nothing different in it. The
/// proposal now says so after its last line, and the change stays a hunk
/// of its own: rejecting the other one keeps it. And rejecting the one hunk
/// of a new file answered FILE_SAVED and wrote an empty file.
#[test]
fn regression_a_final_line_break_change_is_named_and_a_rejected_new_file_is_not_created() {
    let mut rig = Rig::start("light");
    let f = rig.write("notes.txt", "a\nb\nc");
    let call = rig.propose(&f, "A\nb\nc\n", "t-eol");
    let id = rig.review_id(&f);
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"1\"]"));
    let note = Rig::card(&id, "[data-side=proposed] .cm-final-break");
    rig.browser.wait_for(PAGE, &note);
    let text = rig.browser.text(PAGE, &note);
    assert!(text.contains("adds a line break at the end"), "{text}");
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-hunk=\"0\"] [data-action=reject-hunk]"),
    );
    rig.browser.wait_until(
        PAGE,
        "(sel) => document.querySelectorAll(sel).length === 1",
        json!(Rig::card(&id, "[data-hunk]")),
    );
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-hunk=\"0\"] [data-action=accept-hunk]"),
    );
    assert_eq!(rig.outcome(call), vec!["FILE_SAVED", "a\nb\nc\n"]);
    rig.close_tab("t-eol");

    let new = rig.ws.join("new.py");
    let call = rig.propose(&new, "print('hi')\n", "t-new");
    let id = rig.review_id(&new);
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-hunk=\"0\"] [data-action=reject-hunk]"),
    );
    assert_eq!(rig.outcome(call)[0], "DIFF_REJECTED");
    assert!(!new.exists(), "a rejected new file was created");
}

/// In a file whose line endings are mixed, a CRLF line keeps its CR as
/// text; End put the cursor after it, and what was typed there landed
/// between the CR and the line feed (`a\rx\n`), a line the file never had.
#[test]
fn regression_typing_at_the_end_of_a_crlf_line_of_a_mixed_file_goes_before_its_cr() {
    let mut rig = Rig::start("light");
    let f = rig.write("mixed.txt", "a\r\nb\n");
    let call = rig.propose(&f, "a\r\nB\n", "t-mixed");
    let id = rig.review_id(&f);
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-side=proposed] .cm-line >> nth=0"),
    );
    rig.browser.press(PAGE, "End");
    rig.browser.type_text(PAGE, "x");
    rig.browser.press(PAGE, "Escape");
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=accept-file]"));
    assert_eq!(rig.outcome(call), vec!["FILE_SAVED", "ax\r\nB\n"]);
}

/// A proposal converting a CRLF file to LF showed every line changed with
/// nothing different in any of them.
#[test]
fn regression_a_change_of_the_line_endings_is_named() {
    let mut rig = Rig::start("light");
    let f = rig.write("crlf.txt", "a\r\nb\r\n");
    let call = rig.propose(&f, "a\nb\n", "t-endings");
    let id = rig.review_id(&f);
    let note = Rig::card(&id, "[data-side=proposed] .cm-final-break");
    rig.browser.wait_for(PAGE, &note);
    let text = rig.browser.text(PAGE, &note);
    assert!(text.contains("line endings: CRLF → LF"), "{text}");
    rig.shot("review-line-endings");
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=reject-file]"));
    assert_eq!(rig.outcome(call)[0], "DIFF_REJECTED");
}

/// In a CRLF file, lines pasted from elsewhere (LF) stayed one line holding
/// bare line feeds (CodeMirror splits inserted text on the document's
/// separator only), and were saved so, a CRLF file with LF inside.
#[test]
fn regression_lines_pasted_into_a_crlf_proposal_are_lines_with_its_line_breaks() {
    let mut rig = Rig::start("light");
    let f = rig.write("win.txt", "a\r\nb\r\n");
    let call = rig.propose(&f, "a\r\nB\r\n", "t-paste");
    let id = rig.review_id(&f);
    let lines = Rig::card(&id, "[data-side=proposed] .cm-line");
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-side=proposed] .cm-line:has-text(\"B\")"),
    );
    rig.browser.press(PAGE, "End");
    rig.browser.eval(
        PAGE,
        "(sel) => { const dt = new DataTransfer(); dt.setData('text/plain', '\\np1\\np2');
           document.querySelector(sel).dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true})); }",
        json!(Rig::card(&id, "[data-side=proposed] .cm-content")),
    );
    // a, B, p1, p2 and the empty line after the last break.
    rig.browser.wait_until(
        PAGE,
        "(sel) => document.querySelectorAll(sel).length === 5",
        json!(lines),
    );
    rig.browser.press(PAGE, "Escape");
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=accept-file]"));
    assert_eq!(
        rig.outcome(call),
        vec!["FILE_SAVED", "a\r\nB\r\np1\r\np2\r\n"]
    );
}

#[test]
fn closed_proposals_and_the_history_survive_a_reload_and_a_dismissal_is_remembered() {
    let mut rig = Rig::start_full("light", None, &[("db.rs", "fn main() {}\n")], true);
    let _claude = rig.claude();
    let one = rig.write("one.txt", SEVEN);
    let two = rig.write("two.txt", SEVEN);
    let mut ids = Vec::new();
    for (f, tab) in [(&one, "t-one"), (&two, "t-two")] {
        let call = rig.propose(f, SEVEN_PROPOSED, tab);
        let id = rig.review_id(f);
        rig.close_tab(tab);
        assert_eq!(rig.outcome(call)[0], "DIFF_REJECTED");
        rig.browser
            .wait_for(PAGE, &format!("[data-review=\"{id}\"][data-status=closed]"));
        ids.push(id);
    }
    // The agent writes a file without a review.
    rig.write("db.rs", "fn main() { println!(\"hi\"); }\n");
    let history = "[data-view=activity] [data-history]";
    let unreviewed = "db.rs changed on disk while Claude Code was connected, without a review";
    let says = |rig: &mut Rig, text: &str| {
        rig.browser.wait_until(
            PAGE,
            "([sel, text]) => document.querySelector(sel)?.textContent.includes(text)",
            json!([history, text]),
        );
    };
    says(&mut rig, unreviewed);

    let home = format!("http://127.0.0.1:{}/", rig.ui_port);
    rig.browser.goto(PAGE, &home);
    for id in &ids {
        let closed = format!("[data-review=\"{id}\"][data-status=closed]");
        rig.browser.wait_for(PAGE, &closed);
        let why = rig.browser.text(PAGE, &format!("{closed} [data-closed]"));
        assert!(
            why.contains("closed by Claude Code") && why.contains("did not write it"),
            "{why}"
        );
        rig.browser.wait_for(
            PAGE,
            &format!("{closed} [data-side=proposed] .cm-content[contenteditable=false]"),
        );
    }
    let closed_one = format!("[data-review=\"{}\"]", ids[0]);
    rig.browser
        .click(PAGE, &format!("{closed_one} [data-action=copy-proposed]"));
    let copied = rig.browser.wait_until(
        PAGE,
        "() => navigator.clipboard.readText().then((t) => t || null)",
        json!(null),
    );
    assert_eq!(copied, json!(SEVEN_PROPOSED));
    rig.browser.click(PAGE, "[data-tab=activity]");
    says(&mut rig, unreviewed);
    says(&mut rig, "proposed 3 changes to one.txt");
    rig.shot("reload-closed-and-history-light");

    // Dismissed, then reloaded: the other card is back, that one is not.
    rig.browser.click(PAGE, "[data-tab=reviews]");
    rig.browser
        .click(PAGE, &format!("{closed_one} [data-action=forget]"));
    rig.browser.wait_gone(PAGE, &closed_one);
    rig.browser.goto(PAGE, &home);
    rig.browser.wait_for(
        PAGE,
        &format!("[data-review=\"{}\"][data-status=closed]", ids[1]),
    );
    assert_eq!(
        rig.browser.count(PAGE, &closed_one),
        0,
        "a dismissed proposal came back after a reload"
    );
    rig.assert_quiet_console();
}

/// Issue 19: the Activity view reads as a history a person understands
/// ("You accepted 2 of 3 changes in seven.txt", "… ran `echo …`: exit 0"),
/// files changed without a review among it; the raw protocol log (every
/// tool call) is behind a toggle.
#[test]
fn activity_is_a_history_with_the_protocol_log_behind_a_toggle() {
    let mut rig = Rig::start_full(
        "light",
        Some(Default::default()),
        &[("db.rs", "fn main() {}\n")],
        true,
    );
    let _claude = rig.claude();
    // Per hunk: accept 1 and 3, reject 2.
    let f = rig.write("seven.txt", SEVEN);
    let call = rig.propose(&f, SEVEN_PROPOSED, "t-history");
    let id = rig.review_id(&f);
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"2\"]"));
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-hunk=\"0\"] [data-action=accept-hunk]"),
    );
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"0\"][data-accepted]"));
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-hunk=\"1\"] [data-action=reject-hunk]"),
    );
    rig.browser.wait_until(
        PAGE,
        "(sel) => document.querySelectorAll(sel).length === 2",
        json!(Rig::card(&id, "[data-hunk]")),
    );
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-hunk=\"1\"] [data-action=accept-hunk]"),
    );
    assert_eq!(rig.outcome(call)[0], "FILE_SAVED");
    rig.close_tab("t-history");
    // A command the reviewer allows, run by the workspace tools.
    let run = rig.mcp_call("execute_command", json!({"command": "echo history"}));
    rig.browser.click(PAGE, "[data-tab=tools]");
    rig.browser
        .click(PAGE, "[data-approval] [data-action=allow]");
    joined(run);
    // A file the agent changes without a review.
    rig.write("db.rs", "fn main() { println!(\"hi\"); }\n");
    rig.browser.click(PAGE, "[data-tab=activity]");
    let history = "[data-view=activity] [data-history]";
    let says = |rig: &mut Rig, text: &str| {
        rig.browser.wait_until(
            PAGE,
            "([sel, text]) => document.querySelector(sel)?.textContent.includes(text)",
            json!([history, text]),
        );
    };
    says(&mut rig, "Claude Code connected");
    says(&mut rig, "proposed 3 changes to seven.txt");
    says(&mut rig, "You accepted 2 of 3 changes in seven.txt");
    says(&mut rig, "You allowed: Run `echo history`");
    says(&mut rig, "ran echo history: exit 0");
    says(
        &mut rig,
        "db.rs changed on disk while Claude Code was connected, without a review",
    );
    let shown = rig.browser.text(PAGE, history);
    assert!(
        !shown.contains("openDiff"),
        "tool calls are in the log only: {shown}"
    );
    rig.shot("activity-history-light");
    // The protocol log, behind the toggle: every tool call.
    assert_eq!(
        rig.browser.eval(
            PAGE,
            "() => document.querySelector('[data-protocol-log]').hidden",
            Value::Null
        ),
        json!(true)
    );
    rig.browser
        .click(PAGE, "[data-view=activity] [data-action=toggle-log]");
    rig.browser
        .wait_for(PAGE, "[data-protocol-log] [data-kind=tool]");
    let log = rig.browser.text(PAGE, "[data-protocol-log]");
    assert!(
        log.contains("openDiff") && log.contains("close_tab"),
        "{log}"
    );
    assert_eq!(
        rig.browser.eval(
            PAGE,
            "(sel) => document.querySelector(sel).hidden",
            json!(history)
        ),
        json!(true)
    );
    rig.shot("activity-log-light");
    rig.assert_quiet_console();
}

/// Issue 19: at 200% zoom (a window of 640×400 CSS pixels) the page's
/// header and toolbars took most of the window. Now they take at most a
/// quarter; a wrapped line keeps its indentation; the one layout switch
/// says what is shown (unified: no room for two sides); `n`/`p` move
/// between reviews with no card holding the keyboard focus.
#[test]
fn at_200_percent_zoom_the_code_keeps_three_quarters_of_the_window() {
    const ZOOM: &str = "zoom";
    let mut rig = Rig::start("light");
    let long = format!(
        "def f():\n    if ready:\n        return {}\n",
        vec!["value"; 40].join(" + ")
    );
    let f = rig.write("wrap.py", "def f():\n    pass\n");
    let _wrap = rig.propose(&f, &long, "t-wrap");
    let first = rig.review_id(&f);
    let g = rig.write("g.txt", SEVEN);
    let _seven = rig.propose(&g, SEVEN_PROPOSED, "t-g");
    let second = rig.review_id(&g);
    rig.browser.must(
        "newPage",
        json!({"page": ZOOM, "colorScheme": "light", "width": 640, "height": 400}),
    );
    rig.browser
        .goto(ZOOM, &format!("http://127.0.0.1:{}/", rig.ui_port));
    rig.browser
        .wait_for(ZOOM, &Rig::card(&second, "[data-hunk=\"2\"]"));
    rig.browser
        .wait_for(ZOOM, &Rig::card(&first, "[data-side=proposed] .cm-line"));
    let measure = r#"() => {
        const h = (el) => (el && el.getClientRects().length ? el.getBoundingClientRect().height : 0);
        const card = document.querySelector('[data-review].is-focused') || document.querySelector('[data-review]');
        const top = document.querySelector('.topbar');
        const status = document.querySelector('.statusbar');
        const parts = {
          header: h(top),
          // Counted once: the connection status may be a row of the header.
          status: top.contains(status) ? 0 : h(status),
          viewToolbar: h(document.querySelector('[data-view=reviews] .view-toolbar')),
          cardHeader: h(card.querySelector('.card-header')),
          cardToolbar: h(card.querySelector('.card-toolbar')),
        };
        const total = Object.values(parts).reduce((a, b) => a + b, 0);
        return { parts, total, window: innerHeight, wide: innerWidth };
    }"#;
    let m = rig.browser.eval(ZOOM, measure, Value::Null);
    eprintln!("[ui] at 640x400: {m}");
    rig.shot_of(ZOOM, "zoom-200-reviews-light");
    let total = m["total"].as_f64().unwrap();
    let window = m["window"].as_f64().unwrap();
    assert_eq!(window, 400.0, "{m}");
    assert!(
        total <= window / 4.0,
        "the header and toolbars take {total} of {window} px: {m}"
    );
    // One layout switch, saying what is shown.
    assert_eq!(
        rig.browser
            .attribute(ZOOM, "button[data-layout=unified]", "aria-pressed")
            .as_deref(),
        Some("true")
    );
    assert_eq!(
        rig.browser.eval(
            ZOOM,
            "() => document.querySelector('button[data-layout=split]').disabled",
            Value::Null
        ),
        json!(true)
    );
    assert_eq!(rig.browser.count(ZOOM, "[data-action=toggle-layout]"), 0);
    assert_eq!(rig.browser.count(ZOOM, ".editor-box[data-layout=split]"), 0);
    // The wrapped `return` line: its continuation starts under `return`,
    // not at the left edge.
    let wrap = rig.browser.eval(
        ZOOM,
        r#"(id) => {
          const line = [...document.querySelectorAll(`[data-review="${id}"] [data-side=proposed] .cm-line`)]
            .find((l) => l.textContent.includes('return value'));
          if (!line) return null;
          const all = document.createRange();
          all.selectNodeContents(line);
          const rects = [...all.getClientRects()].filter((r) => r.width > 0);
          const top = Math.min(...rects.map((r) => r.top));
          const later = rects.filter((r) => r.top > top + 4);
          const walk = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
          let text = null;
          for (let n = walk.nextNode(); n; n = walk.nextNode()) {
            const i = n.data.indexOf('return');
            if (i >= 0) {
              const r = document.createRange();
              r.setStart(n, i);
              r.setEnd(n, i + 1);
              text = r.getBoundingClientRect().left;
              break;
            }
          }
          return { rows: new Set(rects.map((r) => Math.round(r.top))).size, text,
                   wrapped: later.length ? Math.min(...later.map((r) => r.left)) : null,
                   edge: line.getBoundingClientRect().left };
        }"#,
        json!(first),
    );
    eprintln!("[ui] the wrapped line: {wrap}");
    assert!(
        wrap["rows"].as_u64().unwrap() >= 2,
        "the line did not wrap: {wrap}"
    );
    let text = wrap["text"].as_f64().unwrap();
    let wrapped = wrap["wrapped"].as_f64().unwrap();
    assert!(
        wrapped >= text - 1.0,
        "the continuation starts at {wrapped}, left of the line's text at {text}: {wrap}"
    );
    // `n`/`p` with the keyboard focus on no card.
    let focused =
        "() => document.querySelector('[data-review].is-focused')?.dataset.review ?? null";
    rig.browser
        .eval(ZOOM, "() => document.activeElement?.blur()", Value::Null);
    let start = rig.browser.eval(ZOOM, focused, Value::Null);
    let (there, back) = if start == json!(second) {
        ("n", "p")
    } else {
        ("p", "n")
    };
    let other = if start == json!(second) {
        &first
    } else {
        &second
    };
    rig.browser.press(ZOOM, there);
    assert_eq!(rig.browser.eval(ZOOM, focused, Value::Null), json!(other));
    assert_eq!(
        rig.browser.eval(
            ZOOM,
            "() => document.activeElement?.closest('[data-review]')?.dataset.review ?? null",
            Value::Null
        ),
        json!(other),
        "the card moved to has the keyboard"
    );
    // From another view and back, the focus on a tab: still.
    rig.browser.press(ZOOM, "4");
    rig.browser.click(ZOOM, "[data-tab=reviews]");
    rig.browser.press(ZOOM, back);
    assert_eq!(rig.browser.eval(ZOOM, focused, Value::Null), start);
    rig.browser.press(ZOOM, "4");
    rig.shot_of(ZOOM, "zoom-200-activity-light");
    rig.assert_quiet_console();
}

/// Issue 19, item 1, in the page: with seven identical hunks (a
/// `replace_all`), Accept on hunk 2 marked hunks 3 and 5 too, the page
/// skipped past them, and three changes landed. Now the click marks hunk 2
/// alone, and rejecting the rest writes that one change.
#[test]
fn accept_on_one_of_identical_hunks_marks_and_writes_that_hunk_only() {
    let mut rig = Rig::start("light");
    let original: String = (0..7)
        .map(|i| format!("fn f{i}() {{\n    let g = m.lock().unwrap();\n}}\n"))
        .collect();
    let proposed = original.replace(".lock().unwrap()", ".lock().expect(\"poisoned\")");
    let f = rig.write("db.rs", &original);
    let call = rig.propose(&f, &proposed, "t-same");
    let id = rig.review_id(&f);
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"6\"]"));
    // A second tab follows each decision from its event alone (the hunk
    // decided, not the whole review): it must show the same hunks.
    rig.browser.new_page(OTHER, "light");
    rig.browser
        .goto(OTHER, &format!("http://127.0.0.1:{}/", rig.ui_port));
    rig.browser
        .wait_for(OTHER, &Rig::card(&id, "[data-hunk=\"6\"]"));
    let proposed_side = Rig::card(&id, "[data-side=proposed] .cm-content");
    let same_in_other_tab = |rig: &mut Rig| {
        let want = rig.browser.text(PAGE, &proposed_side);
        rig.browser.wait_until(
            OTHER,
            "([sel, want]) => document.querySelector(sel)?.textContent === want",
            json!([proposed_side, want]),
        );
    };
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-hunk=\"1\"] [data-action=accept-hunk]"),
    );
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"1\"][data-accepted]"));
    assert_eq!(
        rig.browser
            .count(PAGE, &Rig::card(&id, "[data-hunk][data-accepted]")),
        1,
        "one click accepted more than one hunk"
    );
    rig.browser
        .wait_for(OTHER, &Rig::card(&id, "[data-hunk=\"1\"][data-accepted]"));
    assert_eq!(
        rig.browser
            .count(OTHER, &Rig::card(&id, "[data-hunk][data-accepted]")),
        1,
        "the other tab marked more than one hunk"
    );
    same_in_other_tab(&mut rig);
    // Reject the others, always the first hunk not accepted.
    // (The last decision finishes the review: Claude's answer says it.)
    for left in (1..7).rev() {
        rig.browser.click(
            PAGE,
            &Rig::card(
                &id,
                "[data-hunk]:not([data-accepted]) [data-action=reject-hunk]",
            ),
        );
        if left == 1 {
            break;
        }
        rig.browser.wait_until(
            PAGE,
            "([sel, n]) => document.querySelectorAll(sel).length === n",
            json!([Rig::card(&id, "[data-hunk]"), left]),
        );
        same_in_other_tab(&mut rig);
    }
    let out = rig.outcome(call);
    assert_eq!(out[0], "FILE_SAVED");
    assert_eq!(out[1].matches("expect").count(), 1, "{}", out[1]);
    assert!(
        out[1].contains("fn f1() {\n    let g = m.lock().expect"),
        "{}",
        out[1]
    );
    rig.assert_quiet_console();
}

/// Issue 19, the session review: an agent that writes without asking (auto
/// mode, a `claude` started elsewhere) is noticed, its change listed in
/// Changes against the file's content before the session, and a decision
/// reaches the one hunk pointed at, however many look the same: revert
/// hunk 3 of 7 identical ones, keep hunk 1, undo the revert, mark viewed,
/// revert the file after a confirmation.
#[test]
fn the_changes_view_lists_an_unreviewed_edit_and_reverts_one_of_identical_hunks() {
    let original: String = (0..7)
        .map(|i| format!("fn f{i}() {{\n    let g = m.lock().unwrap();\n}}\n"))
        .collect();
    let mut rig = Rig::start_full("light", None, &[("db.rs", &original)], true);
    let edited = original.replace(".lock().unwrap()", ".lock().expect(\"poisoned\")");
    // The agent writes the file itself, without any review.
    rig.write("db.rs", &edited);
    let note = rig.browser.wait_until(
        PAGE,
        "() => { const n = document.querySelector('[data-note]'); return n && !n.hidden && n.textContent.includes('without a review') ? n.textContent : null; }",
        json!(null),
    );
    assert!(note.as_str().unwrap().contains("db.rs"), "{note}");
    rig.browser.click(PAGE, "[data-tab=changes]");
    let file = "[data-change-file$='/db.rs']";
    rig.browser
        .wait_for(PAGE, &format!("{file} [data-hunk=\"6\"]"));
    assert_eq!(
        rig.browser.text(PAGE, &format!("{file} [data-source]")),
        "changed on disk while ccbridge ran"
    );
    rig.shot("changes-light");
    rig.browser.click(
        PAGE,
        &format!("{file} [data-hunk=\"2\"] [data-action=revert-hunk]"),
    );
    let hunks_are = |rig: &mut Rig, n: u64| {
        rig.browser.wait_until(
            PAGE,
            "([sel, n]) => document.querySelectorAll(sel).length === n",
            json!([format!("{file} [data-hunk]"), n]),
        );
    };
    hunks_are(&mut rig, 6);
    let now = std::fs::read_to_string(rig.ws.join("db.rs")).unwrap();
    assert_eq!(now.matches(".lock().unwrap()").count(), 1, "{now}");
    assert!(
        now.contains("fn f2() {\n    let g = m.lock().unwrap();"),
        "{now}"
    );
    rig.browser.click(
        PAGE,
        &format!("{file} [data-hunk=\"0\"] [data-action=keep-hunk]"),
    );
    rig.browser
        .wait_for(PAGE, &format!("{file} [data-hunk=\"0\"][data-kept=true]"));
    assert_eq!(
        rig.browser
            .count(PAGE, &format!("{file} [data-hunk][data-kept=true]")),
        1,
        "keeping one hunk kept more"
    );
    rig.browser.click(PAGE, "[data-action=undo-revert]");
    hunks_are(&mut rig, 7);
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("db.rs")).unwrap(),
        edited
    );
    assert_eq!(
        rig.browser.text(PAGE, "[data-changes-progress]"),
        "0 of 1 file reviewed"
    );
    rig.browser
        .click(PAGE, &format!("{file} [data-action=viewed]"));
    rig.browser.wait_until(
        PAGE,
        "() => document.querySelector('[data-changes-progress]').textContent === '1 of 1 file reviewed'",
        json!(null),
    );
    rig.browser
        .click(PAGE, &format!("{file} [data-action=revert-file]"));
    rig.browser
        .click(PAGE, "[data-changes-dialog] [data-action=confirm]");
    rig.browser.wait_gone(PAGE, file);
    assert_eq!(
        std::fs::read_to_string(rig.ws.join("db.rs")).unwrap(),
        original
    );
    rig.assert_quiet_console();
}

/// Issue 19: one stray `A` or `R` decided every hunk of a file. A
/// whole-file decision by key now asks first: Escape leaves the review as
/// it was, Enter decides.
#[test]
fn a_whole_file_decision_by_key_asks_first() {
    let mut rig = Rig::start("light");
    let f = rig.write("keys.txt", SEVEN);
    let call = rig.propose(&f, SEVEN_PROPOSED, "t-confirm");
    let id = rig.review_id(&f);
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"2\"]"));
    rig.browser.press(PAGE, "j");
    rig.browser.press(PAGE, "R");
    rig.browser.wait_for(PAGE, "dialog[data-confirm][open]");
    assert!(rig
        .browser
        .text(PAGE, "dialog[data-confirm]")
        .contains("Reject all of keys.txt?"),);
    rig.browser.press(PAGE, "Escape");
    rig.browser.wait_gone(PAGE, "dialog[data-confirm][open]");
    assert_eq!(
        rig.browser
            .attribute(PAGE, &format!("[data-review=\"{id}\"]"), "data-status")
            .as_deref(),
        Some("pending"),
        "Escape decided the file"
    );
    rig.browser.press(PAGE, "A");
    rig.browser.wait_for(PAGE, "dialog[data-confirm][open]");
    assert!(rig
        .browser
        .text(PAGE, "dialog[data-confirm]")
        .contains("3 undecided hunks"));
    rig.browser.press(PAGE, "Enter");
    assert_eq!(rig.outcome(call), vec!["FILE_SAVED", SEVEN_PROPOSED]);
    rig.assert_quiet_console();
}

#[test]
fn keyboard_only_review() {
    let mut rig = Rig::start("light");
    let f = rig.write("keys.txt", SEVEN);
    let call = rig.propose(&f, SEVEN_PROPOSED, "t-keys");
    let id = rig.review_id(&f);
    let current =
        r#"(sel) => { const m = document.querySelector(sel); return m ? m.dataset.hunk : null; }"#;
    let sel = Rig::card(&id, "[data-hunk][data-current]");
    // Moves the current hunk with j/k to `want`, by keys only.
    let go = |rig: &mut Rig, want: &str| {
        for _ in 0..10 {
            if rig.browser.eval(PAGE, current, json!(sel)) == json!(want) {
                return;
            }
            rig.browser.press(PAGE, "j");
        }
        panic!("j never reached hunk {want}");
    };
    go(&mut rig, "0");
    rig.browser.press(PAGE, "a");
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"0\"][data-accepted]"));
    go(&mut rig, "1");
    rig.browser.press(PAGE, "r");
    rig.browser.wait_until(
        PAGE,
        "(sel) => document.querySelectorAll(sel).length === 2",
        json!(Rig::card(&id, "[data-hunk]")),
    );
    go(&mut rig, "1");
    rig.browser.press(PAGE, "a");
    assert_eq!(
        rig.outcome(call),
        vec!["FILE_SAVED", "A\nb\nc\nd\ne\nf\nG\n"]
    );
    rig.assert_quiet_console();
}

/// How many hunks the server's review `id` has, asked from the page.
const SERVER_HUNKS: &str = r#"(id) => fetch(`/api/reviews/${id}`, {
    headers: { Authorization: `Bearer ${localStorage.getItem('ccbridge.session')}` } })
    .then((r) => r.json()).then((r) => r.hunks.length)"#;

/// Accept file waited for the hunk decisions shown ahead of their answers,
/// then accepted whatever the server had, even when one of them had not
/// reached it: a hunk the reviewer had just rejected was written.
#[test]
fn regression_accept_file_after_a_lost_hunk_decision_accepts_nothing() {
    let mut rig = Rig::start("light");
    let f = rig.write("lost.txt", SEVEN);
    let call = rig.propose(&f, SEVEN_PROPOSED, "t-lost");
    let id = rig.review_id(&f);
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"0\"][data-current]"));
    // The decision fails while Accept file waits for it.
    let decisions = "**/api/reviews/*/hunks/**";
    rig.browser.must(
        "failRequestsLate",
        json!({"page": PAGE, "pattern": decisions, "ms": 2000}),
    );
    rig.browser.press(PAGE, "r");
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=accept-file]"));
    rig.browser.wait_until(
        PAGE,
        "() => [...document.querySelectorAll('[data-note]')].some((n) => n.textContent.includes('was not accepted'))",
        json!(null),
    );
    rig.browser
        .must("passRequests", json!({"page": PAGE, "pattern": decisions}));
    // The server still waits, its three hunks undecided; nothing written.
    assert_eq!(rig.browser.eval(PAGE, SERVER_HUNKS, json!(id)), json!(3));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), SEVEN);
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=reject-file]"));
    assert_eq!(rig.outcome(call)[0], "DIFF_REJECTED");
}

/// An edit the server refuses for what it is (413 Payload Too Large, as
/// axum answers a body over the page's 40 MiB) was sent again every 16 s
/// for ever, the page saying "Not saved yet — retrying".
#[test]
fn regression_an_edit_refused_for_its_size_is_said_so_not_retried_for_ever() {
    let mut rig = Rig::start("light");
    let f = rig.write("big.txt", "one\ntwo\n");
    let call = rig.propose(&f, "one\nTWO\n", "t-big");
    let id = rig.review_id(&f);
    rig.browser.must(
        "answerRequests",
        json!({"page": PAGE, "pattern": "**/api/reviews/*/text", "status": 413,
               "body": "length limit exceeded"}),
    );
    rig.browser.click(
        PAGE,
        &Rig::card(&id, "[data-side=proposed] .cm-line:has-text(\"TWO\")"),
    );
    rig.browser.press(PAGE, "End");
    rig.browser.type_text(PAGE, "!");
    rig.browser.wait_until(
        PAGE,
        "() => [...document.querySelectorAll('[data-note]')].some((n) => n.textContent.includes('larger than ccbridge takes'))",
        json!(null),
    );
    let state = rig.browser.text(PAGE, &Rig::card(&id, ".save-state"));
    assert!(!state.contains("retrying"), "{state}");
    rig.browser.must(
        "passRequests",
        json!({"page": PAGE, "pattern": "**/api/reviews/*/text"}),
    );
    rig.browser.press(PAGE, "Escape");
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=reject-file]"));
    assert_eq!(rig.outcome(call)[0], "DIFF_REJECTED");
}

/// A per-hunk decision is shown before its answer (`decideHunk`); when the
/// server never gets it, the card takes it back and says so, and the next
/// try decides that same hunk.
#[test]
fn a_hunk_decision_the_server_never_gets_is_taken_back() {
    let mut rig = Rig::start("light");
    let f = rig.write("unreachable.txt", SEVEN);
    let call = rig.propose(&f, SEVEN_PROPOSED, "t-unreachable");
    let id = rig.review_id(&f);
    let markers = Rig::card(&id, ".hunk-marker:not(.mirror)");
    let count_is = r#"([sel, n]) => document.querySelectorAll(sel).length === n"#;
    rig.browser
        .wait_for(PAGE, &Rig::card(&id, "[data-hunk=\"0\"][data-current]"));
    // Every request about reviews: the fetch of the whole review too.
    let decisions = "**/api/reviews/**";
    rig.browser
        .must("failRequests", json!({"page": PAGE, "pattern": decisions}));
    rig.browser.press(PAGE, "r");
    let state = r#"(sel) => ({ note: document.querySelector('[data-note]')?.textContent ?? null,
        markers: document.querySelectorAll(sel).length, active: document.activeElement?.className ?? null })"#;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let now = rig.browser.eval(PAGE, state, json!(markers));
        if now["note"]
            .as_str()
            .is_some_and(|n| n.contains("could not be reached"))
        {
            break;
        }
        if std::time::Instant::now() >= deadline {
            // Whether the decision reached the server after all (a request
            // the route let through) or is still out: 3 hunks or 2.
            rig.browser
                .must("passRequests", json!({"page": PAGE, "pattern": decisions}));
            let hunks = rig.browser.eval(PAGE, SERVER_HUNKS, json!(id));
            panic!(
                "the page never said the decision was not made: {now}; the server has {hunks} hunks; console: {:?}",
                rig.browser.console_errors()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // All three hunks again, the first one's proposed line back.
    rig.browser.wait_until(PAGE, count_is, json!([markers, 3]));
    // The browser logs the refused request; nothing else may be logged.
    for e in rig.browser.console_errors() {
        assert!(e.contains("ERR_CONNECTION_REFUSED"), "console error: {e}");
    }
    let lines = r#"(sel) => [...document.querySelectorAll(sel)].map((l) => l.textContent)"#;
    let proposed = rig.browser.eval(
        PAGE,
        lines,
        json!(Rig::card(&id, "[data-side=proposed] .cm-line")),
    );
    assert_eq!(proposed[0], json!("A"), "the proposed side: {proposed}");
    // What the server has: three hunks still.
    rig.browser
        .must("passRequests", json!({"page": PAGE, "pattern": decisions}));
    assert_eq!(rig.browser.eval(PAGE, SERVER_HUNKS, json!(id)), json!(3));
    // Three decisions in a row, each key pressed without waiting for the
    // one before to be answered: they reach the server in order.
    rig.browser.press(PAGE, "r");
    rig.browser.press(PAGE, "a");
    rig.browser.press(PAGE, "a");
    assert_eq!(
        rig.outcome(call),
        vec!["FILE_SAVED", "a\nb\nc\nD\ne\nf\nG\n"]
    );
    // The refused fetch of the whole review (`resync`, after the card took
    // the decision back) may be logged only now.
    rig.assert_quiet_console_but(&["ERR_CONNECTION_REFUSED"]);
}

#[test]
fn viewer_selection_and_send_to_claude_carry_zero_based_utf16_positions() {
    let mut rig = Rig::start("light");
    let mut claude = rig.claude();
    let ws = rig.ws.display().to_string();
    let a_py = rig.ws.join("src/a.py").display().to_string();
    rig.browser.click(PAGE, "[data-tab=files]");
    let entry = |p: &str| format!("[data-tree-path=\"{p}\"]");
    // The root opens by itself; its listing may still be on the way.
    if rig
        .browser
        .count(PAGE, &format!("{}[aria-expanded=false]", entry(&ws)))
        == 1
    {
        rig.browser.click(PAGE, &entry(&ws));
    }
    rig.browser.click(PAGE, &entry(&format!("{ws}/src")));
    rig.browser.click(PAGE, &entry(&a_py));
    rig.browser.wait_for(PAGE, "[data-viewer] .cm-content");
    let next_selection = |claude: &mut IdeClient, rt: &Runtime| -> Value {
        rt.block_on(async {
            loop {
                let n = claude
                    .next_notification(WAIT)
                    .await
                    .unwrap()
                    .expect("a notification");
                if n.method == "selection_changed" {
                    return n.params_value().unwrap();
                }
            }
        })
    };
    // Opening a file reports the cursor only.
    let opened = next_selection(&mut claude, &rig.rt);
    assert_eq!(opened["filePath"], a_py);
    assert_eq!(opened["text"], "");
    // Lines 2-3 (0-based 1-2) selected with the keyboard.
    rig.browser
        .click(PAGE, "[data-viewer] .cm-line:has-text(\"two\")");
    rig.browser.press(PAGE, "Home");
    rig.browser.press(PAGE, "Shift+ArrowDown");
    rig.browser.press(PAGE, "Shift+End");
    let sel = loop {
        let s = next_selection(&mut claude, &rig.rt);
        if s["text"] == "two\nthree" {
            break s;
        }
    };
    assert_eq!(
        sel["selection"]["start"],
        json!({"line": 1, "character": 0})
    );
    assert_eq!(sel["selection"]["end"], json!({"line": 2, "character": 5}));
    rig.shot("files-light");
    // "Send to Claude": an @-mention of those lines.
    rig.browser.click(PAGE, "[data-action=send-to-claude]");
    let mention = rig.rt.block_on(async {
        loop {
            let n = claude
                .next_notification(WAIT)
                .await
                .unwrap()
                .expect("a mention");
            if n.method == "at_mentioned" {
                return n.params_value().unwrap();
            }
        }
    });
    assert_eq!(
        mention,
        json!({"filePath": a_py, "lineStart": 1, "lineEnd": 2})
    );
    // Characters are UTF-16 code units: 😀 is two, é one.
    rig.browser
        .click(PAGE, "[data-viewer] .cm-line:has-text(\"é\")");
    rig.browser.press(PAGE, "Home");
    rig.browser.press(PAGE, "Shift+End");
    let sel = loop {
        let s = next_selection(&mut claude, &rig.rt);
        if s["text"] == "😀é" {
            break s;
        }
    };
    assert_eq!(sel["selection"]["end"], json!({"line": 3, "character": 3}));
    // The open file is Claude's open editor.
    let editors = rig.rt.block_on(async {
        claude
            .call_tool("getOpenEditors", json!({}), Some(WAIT))
            .await
            .unwrap()
    });
    let listed: Value = serde_json::from_str(editors.first_text().unwrap()).unwrap();
    assert_eq!(
        listed["tabs"][0]["uri"],
        format!("file://{a_py}"),
        "{listed}"
    );
    rig.assert_quiet_console();
}

#[test]
fn diagnostics_and_activity_show_what_happened() {
    let mut rig = Rig::start("dark");
    rig.browser.click(PAGE, "[data-tab=diagnostics]");
    let empty = rig.browser.text(PAGE, "[data-view=diagnostics]");
    assert!(empty.contains("Nothing reports diagnostics"), "{empty}");
    let a_py = rig.ws.join("src/a.py").display().to_string();
    let d = Diagnostic {
        message: "name 'x' is not defined".into(),
        severity: Severity::Error,
        range: Range::new(Position::new(1, 0), Position::new(1, 3)),
        source: Some("pyflakes".into()),
        code: None,
    };
    rig.rt
        .block_on(rig.engine.send(EditorEvent::Diagnostics {
            path: a_py,
            diagnostics: vec![d],
        }))
        .unwrap();
    rig.browser.wait_until(
        PAGE,
        "() => document.querySelector('[data-view=diagnostics]').textContent.includes(\"name 'x' is not defined\")",
        Value::Null,
    );
    rig.shot("diagnostics-dark");
    // A session connects and calls a tool: the status and the log say so.
    let mut claude = rig.claude();
    rig.browser
        .wait_for(PAGE, "[data-connection] [data-session]");
    rig.rt.block_on(async {
        claude
            .call_tool("getWorkspaceFolders", json!({}), Some(WAIT))
            .await
            .unwrap()
    });
    rig.browser.click(PAGE, "[data-tab=activity]");
    rig.browser.wait_until(
        PAGE,
        "() => document.querySelector('[data-view=activity]').textContent.includes('getWorkspaceFolders')",
        Value::Null,
    );
    rig.shot("activity-dark");
    rig.browser
        .must("colorScheme", json!({"page": PAGE, "colorScheme": "light"}));
    rig.shot("activity-light");
    rig.assert_quiet_console();
}

/// The text of an MCP tool result.
fn result_text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
        .to_owned()
}

/// Waits (bounded) for a thread's result.
fn joined<T: Send + 'static>(h: std::thread::JoinHandle<T>) -> T {
    let deadline = std::time::Instant::now() + WAIT;
    while !h.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "the call did not end in time"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    h.join().unwrap()
}

#[test]
fn workspace_tools_ask_in_the_page_show_output_live_and_writes_are_reviewed() {
    let mut rig = Rig::start_with("light", Some(Default::default()));
    // The server box: where the tools are and how to register them.
    rig.browser.click(PAGE, "[data-tab=tools]");
    let url = rig.tools.clone().unwrap().url;
    assert_eq!(rig.browser.text(PAGE, "[data-tools-url]"), url);
    let add = rig.browser.eval(
        PAGE,
        "() => document.querySelector('[data-add-command]').value",
        Value::Null,
    );
    assert!(add.as_str().unwrap().contains(&url), "{add}");
    assert_eq!(
        rig.browser
            .attribute(PAGE, "[data-mode=write-only]", "aria-pressed")
            .as_deref(),
        Some("true")
    );

    // A command asks first; the page shows exactly what and where.
    rig.browser.click(PAGE, "[data-tab=reviews]");
    let run = rig.mcp_call(
        "execute_command",
        json!({"command": "printf 'E2E-%s\\n' $((6*7)); printf '\\033[31mred\\033[0m\\n'"}),
    );
    rig.browser.wait_until(
        PAGE,
        "() => document.querySelector('[data-tab=tools] .tab-badge')?.textContent === '1'",
        Value::Null,
    );
    rig.browser.click(PAGE, "[data-tab=tools]");
    rig.browser
        .wait_for(PAGE, "[data-approval] [data-approval-command]");
    let shown = rig
        .browser
        .text(PAGE, "[data-approval] [data-approval-command]");
    assert_eq!(
        shown,
        "printf 'E2E-%s\\n' $((6*7)); printf '\\033[31mred\\033[0m\\n'"
    );
    assert!(rig
        .browser
        .text(PAGE, "[data-approval]")
        .contains(&rig.ws.display().to_string()));
    rig.shot("tools-approval-light");
    rig.browser
        .click(PAGE, "[data-approval] [data-action=allow]");
    // The output shows live, escapes removed; the caller gets it too.
    rig.browser.wait_until(
        PAGE,
        "() => document.querySelector('[data-run] [data-run-status]')?.dataset.runStatus === 'ok'",
        Value::Null,
    );
    assert_eq!(
        rig.browser.text(PAGE, "[data-run] [data-run-output]"),
        "E2E-42\nred\n"
    );
    let answer = joined(run);
    let result: Value = serde_json::from_str(&result_text(&answer)).unwrap();
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["output"], "E2E-42\nred\n", "{result}");
    assert_eq!(rig.browser.count(PAGE, "[data-approval]"), 0);
    rig.shot("tools-run-light");

    // Denied in the page: nothing runs.
    let run = rig.mcp_call("execute_command", json!({"command": "touch denied.txt"}));
    rig.browser
        .wait_for(PAGE, "[data-approval] [data-action=deny]");
    rig.browser
        .click(PAGE, "[data-approval] [data-action=deny]");
    let answer = joined(run);
    assert!(
        result_text(&answer).contains("\"status\":\"rejected\""),
        "{answer}"
    );
    assert!(!rig.ws.join("denied.txt").exists());
    // The activity entry reaches the page on its event stream, which may
    // come after the MCP answer (regression: read at once, it was not
    // there yet in a fresh-clone run).
    rig.browser.wait_until(
        PAGE,
        "(needle) => document.querySelector('[data-view=activity]')?.textContent.includes(needle)",
        json!("execute_command denied"),
    );
    let log = rig.browser.text(PAGE, "[data-view=activity]");
    assert!(log.contains("execute_command denied"), "{log}");

    // A write is a review in Reviews; accepted with an edit, written so.
    let write = rig.mcp_call(
        "write_file",
        json!({"path": "src/new.py", "content": "print('new')\n"}),
    );
    let new = rig.ws.join("src/new.py");
    rig.browser.click(PAGE, "[data-tab=reviews]");
    let id = rig.review_id(&new);
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=accept-file]"));
    let answer = joined(write);
    assert!(result_text(&answer).contains("accepted"), "{answer}");
    assert_eq!(std::fs::read_to_string(&new).unwrap(), "print('new')\n");
    rig.assert_quiet_console();
}

/// Security issue 20, item 3: a right-to-left isolate drew `; touch X; :`
/// after the `#`, as if commented out, and "Run it" ran it. The page shows
/// the server's rendering: the isolates as markers, a warning, and nothing
/// of the raw characters anywhere in the approval.
#[test]
fn a_command_hiding_text_with_bidi_characters_is_shown_with_markers_and_a_warning() {
    let mut rig = Rig::start_with("light", Some(Default::default()));
    rig.browser.click(PAGE, "[data-tab=tools]");
    let hostile = "echo safe \u{2067}; touch X; : #\u{2069}";
    let run = rig.mcp_call("execute_command", json!({ "command": hostile }));
    rig.browser
        .wait_for(PAGE, "[data-approval] [data-approval-command]");
    let marked = "echo safe \u{27E8}U+2067\u{27E9}; touch X; : #\u{27E8}U+2069\u{27E9}";
    assert_eq!(
        rig.browser
            .text(PAGE, "[data-approval] [data-approval-command]"),
        marked
    );
    let warning = rig
        .browser
        .text(PAGE, "[data-approval] [data-approval-warning]");
    assert!(
        warning.contains("2 hidden") && warning.contains("RIGHT-TO-LEFT ISOLATE"),
        "{warning}"
    );
    let card = rig.browser.eval(
        PAGE,
        "() => { const a = document.querySelector('[data-approval]'); return a.textContent + a.getAttribute('aria-label'); }",
        Value::Null,
    );
    let card = card.as_str().unwrap();
    assert!(card.contains(marked), "{card}");
    assert!(
        !card.contains(['\u{2067}', '\u{2069}']),
        "raw bidi characters in the approval: {card:?}"
    );
    rig.shot("tools-approval-hidden-light");
    // What was shown is what runs.
    rig.browser
        .click(PAGE, "[data-approval] [data-action=allow]");
    let answer = joined(run);
    assert!(result_text(&answer).contains("\"exit_code\":0"), "{answer}");
    assert!(rig.ws.join("X").exists());
    assert_eq!(rig.browser.text(PAGE, "[data-run] .run-command"), marked);
    rig.assert_quiet_console();
}

/// The attacker's page, served from `evil.example:<its port>`.
const ATTACK: &str = r#"<!doctype html><meta charset="utf-8"><body><script>
const ui = __UI__, reviewId = __REVIEW__, runId = __RUN__, results = {};
const settle = (k, p) => p.then((v) => { results[k] = v; }, (e) => { results[k] = 'blocked: ' + e; });
const base = `http://127.0.0.1:${ui}`;
const tries = [
  settle('readState', fetch(`${base}/api/state`, { credentials: 'include' }).then((r) => r.text())),
  settle('readFile', fetch(`${base}/api/file?path=src/a.py`, { credentials: 'include' }).then((r) => r.text())),
  settle('jsonAccept', fetch(`${base}/api/reviews/${reviewId}/accept`, { method: 'POST', credentials: 'include',
    headers: { 'content-type': 'application/json' }, body: '{"version":1}' }).then((r) => r.status)),
  settle('simpleSelection', fetch(`${base}/api/selection`, { method: 'POST', mode: 'no-cors', credentials: 'include',
    headers: { 'content-type': 'text/plain' },
    body: JSON.stringify({ path: 'src/a.py', text: 'EVIL', selection: { start: { line: 0, character: 0 }, end: { line: 0, character: 3 } } }) })
    .then((r) => 'opaque:' + r.type)),
  settle('simpleAccept', fetch(`${base}/api/reviews/${reviewId}/accept`, { method: 'POST', mode: 'no-cors', credentials: 'include',
    headers: { 'content-type': 'text/plain' }, body: '{"version":1}' }).then((r) => 'opaque:' + r.type)),
  settle('jsonApprove', fetch(`${base}/api/approvals/${runId}`, { method: 'POST', credentials: 'include',
    headers: { 'content-type': 'application/json' }, body: '{"allow":true}' }).then((r) => r.status)),
  settle('simpleApprove', fetch(`${base}/api/approvals/${runId}`, { method: 'POST', mode: 'no-cors', credentials: 'include',
    headers: { 'content-type': 'text/plain' }, body: '{"allow":true}' }).then((r) => 'opaque:' + r.type)),
  settle('simpleNeverAsk', fetch(`${base}/api/tools/approval-mode`, { method: 'POST', mode: 'no-cors', credentials: 'include',
    headers: { 'content-type': 'text/plain' }, body: '{"mode":"never"}' }).then((r) => 'opaque:' + r.type)),
  settle('events', new Promise((ok, no) => { const s = new EventSource(`${base}/api/events`, { withCredentials: true });
    s.onmessage = (m) => { ok('read: ' + m.data.slice(0, 40)); s.close(); }; s.onerror = () => { no('error'); s.close(); }; })),
];
// A classic form post (text/plain) into a hidden frame.
const f = document.createElement('form'); f.method = 'POST'; f.enctype = 'text/plain';
f.action = `${base}/api/reviews/${reviewId}/accept`; f.target = 'sink';
const i = document.createElement('input'); i.name = '{"version":1,"x":"'; i.value = '"}'; f.appendChild(i);
const frame = document.createElement('iframe'); frame.name = 'sink'; document.body.append(frame, f); f.submit();
const g = document.createElement('form'); g.method = 'POST'; g.enctype = 'text/plain';
g.action = `${base}/api/approvals/${runId}`; g.target = 'sink2';
const j = document.createElement('input'); j.name = '{"allow":true,"x":"'; j.value = '"}'; g.appendChild(j);
const frame2 = document.createElement('iframe'); frame2.name = 'sink2'; document.body.append(frame2, g); g.submit();
Promise.all(tries).then(() => { const d = document.createElement('pre'); d.id = 'done';
  d.textContent = JSON.stringify(results); document.body.appendChild(d); });
</script>"#;

/// Serves `page` to every request until the process ends.
fn serve_page(page: String) -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    port
}

#[test]
fn another_origin_cannot_read_decide_approve_or_select_and_rebinding_is_refused() {
    let mut rig = Rig::start_with("light", Some(Default::default()));
    let mut claude = rig.claude();
    let f = rig.write("victim.txt", "safe\n");
    let call = rig.propose(&f, "pwned\n", "t-victim");
    let id = rig.review_id(&f);
    // A command waits for the user's yes.
    let engine = rig.engine.clone();
    let run = engine.next_run();
    let asked = rig.rt.spawn(async move {
        engine
            .approve(ccbridge_server::Approval::command(
                run,
                "rm -rf build".into(),
                "/".into(),
            ))
            .await
    });
    rig.browser.wait_until(
        PAGE,
        "(id) => document.querySelector(`[data-approval=\"${id}\"]`) !== null",
        json!(run.0),
    );
    let page = ATTACK
        .replace("__UI__", &rig.ui_port.to_string())
        .replace("__REVIEW__", &id)
        .replace("__RUN__", &run.0.to_string());
    let evil = serve_page(page);
    rig.browser.new_page("evil", "light");
    rig.browser
        .goto("evil", &format!("http://evil.example:{evil}/attack.html"));
    rig.browser.wait_for("evil", "#done");
    let results: Value = serde_json::from_str(&rig.browser.text("evil", "#done")).unwrap();
    for k in [
        "readState",
        "readFile",
        "jsonAccept",
        "jsonApprove",
        "events",
    ] {
        let r = results[k].as_str().unwrap_or("");
        assert!(
            r.starts_with("blocked"),
            "{k}: the attacker got {r:?} ({results})"
        );
    }
    // The opaque requests went out; they must have changed nothing.
    let still = rig.rt.block_on(async {
        tokio::time::timeout(Duration::from_millis(500), async {
            loop {
                let n = claude.next_notification(WAIT).await.unwrap();
                if let Some(n) = n {
                    if n.method == "selection_changed"
                        && n.params_value().unwrap()["text"] == "EVIL"
                    {
                        return n;
                    }
                }
            }
        })
        .await
    });
    assert!(still.is_err(), "the attacker's selection reached Claude");
    assert!(!call.is_finished(), "the attacker's accept reached Claude");
    assert!(!asked.is_finished(), "the attacker answered the approval");
    assert_eq!(rig.browser.count(PAGE, "[data-approval]"), 1);
    let state_mode = rig
        .browser
        .attribute(PAGE, "[data-mode=write-only]", "aria-pressed");
    assert_eq!(
        state_mode.as_deref(),
        Some("true"),
        "the attacker changed the approval mode"
    );
    assert_eq!(
        rig.browser
            .attribute(PAGE, &format!("[data-review=\"{id}\"]"), "data-status")
            .as_deref(),
        Some("pending")
    );
    // DNS rebinding: the right address under the attacker's name.
    rig.browser.new_page("rebound", "light");
    for path in ["/", "/api/state", "/assets/app.js"] {
        let status = rig.browser.must(
            "goto",
            json!({"page": "rebound", "url": format!("http://evil.example:{}{path}", rig.ui_port)}),
        );
        assert_eq!(status, json!(421), "{path}");
        let body = rig.browser.text("rebound", "body");
        assert!(
            !body.contains("reviews") && !body.contains("safe"),
            "{body}"
        );
    }
    // The user still decides.
    rig.browser.click(PAGE, "[data-tab=tools]");
    rig.browser
        .click(PAGE, "[data-approval] [data-action=deny]");
    let allowed = rig
        .rt
        .block_on(async { tokio::time::timeout(WAIT, asked).await })
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(!allowed);
    rig.browser.click(PAGE, "[data-tab=reviews]");
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=reject-file]"));
    assert_eq!(rig.outcome(call)[0], "DIFF_REJECTED");
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "safe\n");
}

/// A server on another loopback port (any local user can run one) that
/// records the head of every request the browser sends it, and answers
/// `page` with `__PORT__` replaced by its own port.
fn record_requests(page: &'static str) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let n = s.read(&mut buf).unwrap_or(0);
            log.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&buf[..n]).into_owned());
            let body = page.replace("__PORT__", &port.to_string());
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

/// Issue 20, item 1: the page's session was a cookie, and cookies are not
/// kept apart by port (`SameSite=Strict` counts every port of 127.0.0.1
/// as one site), so once signed in, the browser sent it to any other
/// loopback server it visited, directly or through an `<img>` after a
/// bounce through another site; replayed, it read the state (with the
/// tools token) and approved commands. Now nothing another port receives
/// signs anything in.
#[test]
fn the_pages_session_never_reaches_another_loopback_port() {
    let mut rig = Rig::start("light");
    rig.browser.wait_until(
        PAGE,
        "() => localStorage.getItem('ccbridge.session') !== null",
        json!(null),
    );
    let session = rig.browser.eval(
        PAGE,
        "() => localStorage.getItem('ccbridge.session')",
        json!(null),
    );
    let session = session.as_str().unwrap().to_owned();
    let (evil, seen) = record_requests(
        r#"<!doctype html><p id=done>hi</p><img src="http://127.0.0.1:__PORT__/pixel.png">"#,
    );
    // Directly, then through another site that embeds an image from it.
    rig.browser.new_page("evil", "light");
    rig.browser
        .goto("evil", &format!("http://127.0.0.1:{evil}/direct"));
    rig.browser.wait_for("evil", "#done");
    rig.browser
        .goto("evil", &format!("http://evil.example:{evil}/bounce"));
    rig.browser.wait_for("evil", "#done");
    // The page on the other port cannot read the page's storage either.
    let stolen = rig.browser.eval(
        "evil",
        "() => { try { return localStorage.getItem('ccbridge.session'); } catch (e) { return null; } }",
        json!(null),
    );
    assert_eq!(stolen, Value::Null, "another origin read the session");
    let heads = rig.rt.block_on(async {
        tokio::time::timeout(WAIT, async {
            loop {
                let heads = seen.lock().unwrap().clone();
                if heads.iter().filter(|h| h.contains("/pixel.png")).count() >= 2 {
                    return heads;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the browser loaded the attacker's pages and images")
    });
    for head in &heads {
        assert!(
            !head.contains(&session),
            "another loopback port received the session: {head}"
        );
        // Replay every credential-like header it got against the page's API.
        let replay: Vec<&str> = head
            .lines()
            .filter(|l| {
                let l = l.to_ascii_lowercase();
                l.starts_with("cookie:") || l.starts_with("authorization:")
            })
            .collect();
        let status = rig.rt.block_on(replay_state(rig.ui_port, &replay));
        assert_eq!(status, 401, "replaying {replay:?} read the state");
    }
    // The page itself is still signed in and live.
    let own = rig.rt.block_on(replay_state(
        rig.ui_port,
        &[&format!("Authorization: Bearer {session}")],
    ));
    assert_eq!(own, 200);
    rig.assert_quiet_console();
}

/// `GET /api/state` with `extra` header lines; the answer's status.
async fn replay_state(port: u16, extra: &[&str]) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let mut req = format!("GET /api/state HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    for l in extra {
        req.push_str(l);
        req.push_str("\r\n");
    }
    req.push_str("Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(WAIT, s.read_to_end(&mut raw))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&raw)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// With a real language server (pyright), a proposal's card says what its
/// text would introduce before anyone accepts it, and the Diagnostics view
/// says which language has no server.
#[test]
fn a_review_card_says_the_errors_its_proposal_introduces() {
    let options = ccbridge_webui::Options {
        language_servers: Some(ccbridge_lsp::Options {
            search_dirs: vec![ccbridge_testkit::pyright_bin_dir()],
            search_path: false,
            ..Default::default()
        }),
        ..Default::default()
    };
    let text = "def f() -> int:\n    return 1\n";
    let mut rig = Rig::start_with_options(
        "light",
        &[("app.py", text), ("b.c", "int x = 1;\n")],
        options,
    );
    let f = rig.ws.join("app.py");
    let call = rig.propose(&f, &format!("{text}\n\nx: str = f()\n"), "t-lsp");
    let id = rig.review_id(&f);
    // pyright's first analysis on a busy machine: up to a minute.
    rig.browser.must(
        "waitFor",
        json!({"page": PAGE, "selector": Rig::card(&id, "[data-proposal-problems][data-errors=\"1\"]"),
               "timeout": 60_000}),
    );
    let badge = rig
        .browser
        .text(PAGE, &Rig::card(&id, "[data-proposal-problems]"));
    assert_eq!(badge, "introduces 1 error");
    rig.shot("review-problems-light");
    rig.browser
        .click(PAGE, &Rig::card(&id, "[data-action=reject-file]"));
    assert_eq!(rig.outcome(call)[0], "DIFF_REJECTED");

    // A C file involved, with no C server to be found (PATH not searched).
    let c = rig.ws.join("b.c");
    let _call = rig.propose(&c, "int x = 2;\n", "t-c");
    rig.browser.click(PAGE, "[data-tab=diagnostics]");
    rig.browser
        .wait_for(PAGE, "[data-unavailable-server=\"C/C++\"]");
    let why = rig
        .browser
        .text(PAGE, "[data-unavailable-server=\"C/C++\"]");
    assert!(why.contains("clangd"), "{why}");
    // Ruff, a second checker of Python, is not found either: said as such,
    // since the Python files above do get pyright's diagnostics.
    let ruff = rig
        .browser
        .text(PAGE, "[data-unavailable-server=\"Python (Ruff)\"]");
    assert!(
        ruff.starts_with("Python files get no Ruff diagnostics: Ruff is not installed"),
        "{ruff}"
    );
}
