//! End-to-end scenarios against the **real** Gemini CLI and Qwen Code (the
//! pinned npm packages, see `ccbridge_testkit::agents`), each connected to
//! `ccbridge serve --stdio`'s companion server while a scripted editor plays
//! the other side of ccbridge:
//!
//! ```text
//!  mock model ◀─HTTP/SSE─ gemini | qwen (tmux) ─MCP/HTTP─▶ ccbridge serve --stdio ◀─stdio─ Editor
//! ```
//!
//! ccbridge runs with the CLI sandbox's `HOME` and `TMPDIR`, so its
//! discovery file lands where the CLI looks (Gemini CLI:
//! `$TMPDIR/gemini/ide/`, Qwen Code: `~/.qwen/ide/`), and `--agents` names
//! the one CLI of the test. The CLI gets the environment that `initialize`
//! tells an editor to give the terminal it runs in.
//!
//! Per CLI, one session goes through the steps a user would (one CLI start
//! instead of four): it connects (`/ide status` names the editor, and the
//! editor hears `clientConnected` with the agent); the editor's selection
//! reaches the model; an edit the model proposes opens the editor's diff,
//! which the user accepts with edits of their own (the editor's text is
//! what lands on disk, with no answer in the terminal); and one the user
//! rejects leaves the file alone; one the user answers in the CLI's own
//! terminal, with edits of theirs still in the editor's review, lands as
//! the editor's text (Gemini CLI; Qwen Code writes the model's). A second
//! test per CLI gives it a
//! discovery file with a wrong token: no connection.
//!
//! Both CLIs ask in the terminal too ("Apply this change?") while the diff
//! is open in the editor. The editor's
//! verdict answers that prompt as well: nobody presses a key, the prompt
//! goes, and the turn goes on (accepted: the file holds the editor's text
//! and the model is told it was written; rejected: the turn ends, the
//! model is not asked again).
//!
//! Needs the CLIs and Node 22: `scripts/test` installs them into
//! `~/.cache/ccbridge/e2e` (`CCBRIDGE_E2E_DIR`); without them every test
//! fails saying so. Failures print the CLI's screen and stderr, ccbridge's
//! log tail, what ccbridge sent the editor and the model requests;
//! `CCBRIDGE_E2E_KEEP=1` keeps the sandboxes and tmux servers.

use ccbridge_testkit::agents::{Agent, AgentCli, AgentOptions, Sandbox};
use ccbridge_testkit::editor::{Editor, EditorOptions, Incoming};
use ccbridge_testkit::mock_gemini::{self, Gemini};
use ccbridge_testkit::mock_model::{Api, MockModel, Reply};
use ccbridge_testkit::mock_openai::{self, OpenAi};
use ccbridge_testkit::{poll_until, tail};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const IDE_NAME: &str = "TestEditor";
/// Bound for each single step; generous because two CLIs (and other
/// builds) may share two cores.
const STEP: Duration = Duration::from_secs(45);

/// The workspace file the scenarios select in and edit.
const FILE: &str = "hello.txt";
const ORIGINAL: &str = "first line\nselect me SEL-MARK-5150\nthird line\n";
const SELECTED: &str = "SEL-MARK-5150";
/// The line the model edits, its proposal, and what the user makes of it
/// in the editor's diff view before accepting.
const OLD_LINE: &str = "select me SEL-MARK-5150";
const MODEL_LINE: &str = "edited by the model MODEL-4242";
const USER_LINE: &str = "edited by the user in the editor USER-7373";
/// What the model proposes, and what the user leaves in the editor's
/// review, in the edit answered in the terminal.
const TERM_MODEL_LINE: &str = "proposed by the model TERM-MODEL-6060";
const TERM_USER_LINE: &str = "kept from the editor's review TERM-USER-6161";
/// What the model proposes in the rejected edit.
const REJECTED_LINE: &str = "never written REJECTED-9191";
/// Both CLIs ask this in the terminal beside the IDE diff.
const TERMINAL_PROMPT: &str = "Apply this change?";

/// What differs between the two CLIs.
trait Cli: Api + Sized {
    const AGENT: Agent;
    /// The id of the agent in `--agents`, `showDiff.agent` and
    /// `clientConnected.agent`.
    const ID: &'static str;
    /// ccbridge's name for the session (`clientConnected.name`).
    const CLIENT_NAME: &'static str;
    /// The MCP client version the CLI reports.
    const CLIENT_VERSION: &'static str;

    /// The model's replies that propose replacing `old` by `new` in `path`
    /// (up to the tool call that opens the diff).
    fn edit(path: &str, old: &str, new: &str) -> Vec<Reply>;

    /// The text of the tool results in a model request, in order.
    fn tool_results(body: &Value) -> Vec<String>;

    /// Checks that the text of a model request carries the editor context
    /// (with `selected` selected in `path`); `Err` says what is missing.
    fn check_context(text: &str, path: &str, selected: &str) -> Result<(), String>;

    /// What the edit tool's result tells the model after the user accepted
    /// the diff with their own text.
    const ACCEPTED_RESULT: &'static [&'static str];
    /// What the terminal shows for the edit once the editor accepted it,
    /// and once the editor rejected it.
    const ACCEPTED_ON_SCREEN: &'static str;
    const REJECTED_ON_SCREEN: &'static str;
    /// What `/ide status` says after ccbridge refused the token.
    const REFUSED_STATUS: &'static str;
    /// Whether the CLI, answered in its own terminal, writes the text the
    /// editor gives for the review (`closeDiff`'s `content`) rather than
    /// the model's proposal.
    const WRITES_REVIEW_TEXT: bool;
}

impl Cli for Gemini {
    const AGENT: Agent = Agent::Gemini;
    const ID: &'static str = "gemini";
    const CLIENT_NAME: &'static str = "gemini-cli";
    const CLIENT_VERSION: &'static str = "0.61.0";
    const ACCEPTED_RESULT: &'static [&'static str] = &[
        "Successfully modified file",
        "The confirmation step modified the `new_string` content",
    ];
    const ACCEPTED_ON_SCREEN: &'static str = "hello.txt → Accepted";
    const REJECTED_ON_SCREEN: &'static str = "hello.txt → Rejected";
    const REFUSED_STATUS: &'static str = "Disconnected: Failed to connect to IDE companion";
    const WRITES_REVIEW_TEXT: bool = true;

    fn edit(path: &str, old: &str, new: &str) -> Vec<Reply> {
        vec![mock_gemini::replace(path, "Change the line.", old, new).with_text("Editing.")]
    }

    fn tool_results(body: &Value) -> Vec<String> {
        mock_gemini::function_responses(body)
            .iter()
            .map(|r| r["response"].to_string())
            .collect()
    }

    fn check_context(text: &str, path: &str, selected: &str) -> Result<(), String> {
        // An extra part before the prompt: a sentence, then JSON.
        let header = "Here is the user's editor context as a JSON object";
        let json_path = format!("\"path\": \"{path}\"");
        let json_sel = format!("\"selectedText\": \"{selected}\"");
        for needle in [header, "\"activeFile\"", &json_path, &json_sel] {
            if !text.contains(needle) {
                return Err(format!("no {needle:?}"));
            }
        }
        Ok(())
    }
}

impl Cli for OpenAi {
    const AGENT: Agent = Agent::Qwen;
    const ID: &'static str = "qwen";
    const CLIENT_NAME: &'static str = "qwen-code";
    const CLIENT_VERSION: &'static str = "1.0.0";
    const ACCEPTED_RESULT: &'static [&'static str] = &["hello.txt has been updated"];
    const ACCEPTED_ON_SCREEN: &'static str = "✓ Edit hello.txt";
    const REJECTED_ON_SCREEN: &'static str = "- Edit hello.txt";
    // The body of ccbridge's 401, quoted.
    const REFUSED_STATUS: &'static str = "Error POSTing to endpoint: wrong token";
    // Qwen Code ignores `closeDiff`'s answer and writes the model's text.
    const WRITES_REVIEW_TEXT: bool = false;

    fn edit(path: &str, old: &str, new: &str) -> Vec<Reply> {
        // Qwen Code edits no file it has not read in the session.
        vec![
            mock_openai::read_file(path).with_text("Reading."),
            mock_openai::edit(path, old, new).with_text("Editing."),
        ]
    }

    fn tool_results(body: &Value) -> Vec<String> {
        mock_openai::tool_results(body)
            .into_iter()
            .map(|(_, text)| text)
            .collect()
    }

    fn check_context(text: &str, path: &str, selected: &str) -> Result<(), String> {
        // A <system-reminder> before the prompt's own text.
        let path_line = format!("Path: {path}");
        for needle in [
            "<system-reminder>",
            "Here is the user's current editor context",
            "Active file:",
            &path_line,
            "Selected text:",
            selected,
        ] {
            if !text.contains(needle) {
                return Err(format!("no {needle:?}"));
            }
        }
        Ok(())
    }
}

/// One CLI connected to ccbridge through its companion server. Field order
/// is drop order: the CLI goes first, then ccbridge, then the mock model,
/// then the sandbox directory.
struct Rig<A: Cli> {
    cli: AgentCli,
    editor: Editor,
    mock: MockModel<A>,
    /// Params of the editor's `clientConnected` for the CLI's session.
    connected: Value,
    file: PathBuf,
    _sandbox: Sandbox,
}

/// ccbridge for `sandbox`'s CLI: its `HOME` and `TMPDIR` (and `QWEN_HOME`
/// under that `HOME`, in case the test's environment has another), only
/// the agent `id`.
fn spawn_editor(sandbox: &Sandbox, id: &str) -> Editor {
    let opts = EditorOptions {
        bin: PathBuf::from(env!("CARGO_BIN_EXE_ccbridge")),
        workspace: sandbox.workspace().to_path_buf(),
        ide_name: IDE_NAME.into(),
        config_dir: sandbox.home().join(".claude"),
        home: sandbox.home().to_path_buf(),
        log_file: sandbox.root().join("ccbridge.log"),
        // The wrong-token test reads ccbridge's refusals (info) in it.
        rust_log: "debug".into(),
        extra_args: vec!["--agents".into(), id.into()],
        extra_env: vec![
            ("TMPDIR".into(), sandbox.tmp().display().to_string()),
            (
                "QWEN_HOME".into(),
                sandbox.home().join(".qwen").display().to_string(),
            ),
        ],
    };
    let editor = Editor::spawn(&opts).expect("spawn ccbridge");
    // ccbridge closes its view after every verdict.
    editor.auto_reply("closeDiff", Value::Null);
    editor
}

/// `initialize` in protocol version 3 (the agents and their terminal
/// environment); checks that `A` is the one agent offered and returns its
/// environment.
fn initialize<A: Cli>(editor: &Editor, sandbox: &Sandbox) -> Vec<(String, String)> {
    let init = editor
        .request(
            "initialize",
            json!({
                "protocolVersion": 3,
                "ideName": IDE_NAME,
                "capabilities": {"diff": true, "openFile": true, "saveDocument": true,
                                 "closeTab": true, "reviewText": true},
            }),
            STEP,
        )
        .expect("initialize");
    assert_eq!(init["protocolVersion"], 3, "initialize: {init}");
    let agents = init["agents"].as_array().cloned().unwrap_or_default();
    assert_eq!(agents.len(), 1, "--agents {}: initialize: {init}", A::ID);
    let agent = &agents[0];
    assert_eq!(agent["id"], A::ID, "initialize: {init}");
    assert_eq!(agent["name"], A::AGENT.display_name(), "initialize: {init}");
    let env = agent["env"].as_object().cloned().unwrap_or_default();
    let ws = sandbox.workspace().display().to_string();
    assert_eq!(
        env.get(A::AGENT.workspace_env()).and_then(Value::as_str),
        Some(ws.as_str()),
        "initialize: {init}"
    );
    let port = env.get(A::AGENT.port_env()).and_then(Value::as_str);
    assert!(
        port.is_some_and(|p| p.parse::<u16>().is_ok()),
        "initialize: {init}"
    );
    env.into_iter()
        .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
        .collect()
}

/// The discovery file for `port` in the CLI's discovery directory, once
/// ccbridge has written it: its path and JSON.
fn discovery_file(editor: &Editor, sandbox: &Sandbox, port: u16) -> (PathBuf, Value) {
    let dir = sandbox.discovery_dir();
    let found = poll_until(STEP, Duration::from_millis(50), || {
        std::fs::read_dir(&dir).ok()?.flatten().find_map(|e| {
            let text = std::fs::read_to_string(e.path()).ok()?;
            let json: Value = serde_json::from_str(&text).ok()?;
            (json["port"] == port).then(|| (e.path(), json))
        })
    });
    found.unwrap_or_else(|| {
        panic!(
            "no discovery file for port {port} in {}\nccbridge log:\n{}",
            dir.display(),
            tail(&editor.log(), 40)
        )
    })
}

fn port_of<A: Cli>(env: &[(String, String)]) -> u16 {
    env.iter()
        .find(|(k, _)| k == A::AGENT.port_env())
        .and_then(|(_, v)| v.parse().ok())
        .expect("the port variable")
}

impl<A: Cli> Rig<A> {
    /// ccbridge for `A` only, initialized as [`IDE_NAME`], its discovery
    /// file checked; then the CLI, in the terminal environment
    /// `initialize` gave; waits for the editor's `clientConnected` and the
    /// CLI's prompt.
    fn start() -> Rig<A> {
        let sandbox = Sandbox::new(A::AGENT).expect("sandbox");
        let file = sandbox.write_file(FILE, ORIGINAL).unwrap();
        let editor = spawn_editor(&sandbox, A::ID);
        let env = initialize::<A>(&editor, &sandbox);
        let port = port_of::<A>(&env);
        let (path, advert) = discovery_file(&editor, &sandbox, port);
        assert_eq!(
            advert["ideInfo"]["displayName"],
            IDE_NAME,
            "{}: {advert}",
            path.display()
        );
        assert_eq!(
            advert["workspacePath"],
            sandbox.workspace().display().to_string(),
            "{}: {advert}",
            path.display()
        );
        let mock = MockModel::<A>::start().expect("mock model");
        let mut opts = AgentOptions::new(A::AGENT, mock.url());
        for (k, v) in env {
            opts = opts.env(k, v);
        }
        let started = Instant::now();
        let cli = AgentCli::start(&sandbox, &opts).expect("start the CLI");
        let connected = editor
            .expect_notification("clientConnected", STEP)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", cli.context()));
        eprintln!(
            "[e2e] {} clientConnected {:.2?} after the CLI started: {connected}",
            A::ID,
            started.elapsed()
        );
        cli.wait_prompt(STEP)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", cli.context()));
        Rig {
            cli,
            editor,
            mock,
            connected,
            file,
            _sandbox: sandbox,
        }
    }

    fn path(&self) -> String {
        self.file.display().to_string()
    }

    /// Failure context: the CLI's screen and stderr, ccbridge's log tail,
    /// what ccbridge sent the editor, the model requests.
    fn context(&self) -> String {
        context(&self.cli, &self.editor, &self.mock)
    }

    /// Unwraps, or fails with [`Rig::context`].
    fn ok<T, E: std::fmt::Debug>(&self, what: &str, r: Result<T, E>) -> T {
        r.unwrap_or_else(|e| panic!("{what}: {e:?}\n{}", self.context()))
    }

    /// Runs `/ide status` (again, while `until` does not hold for its
    /// output, up to [`STEP`]); returns the last output.
    fn ide_status(&self, what: &str, until: impl Fn(&str) -> bool) -> String {
        ide_status(&self.cli, what, until).unwrap_or_else(|e| panic!("{e}\n{}", self.context()))
    }

    /// The model proposes replacing `old` by `new` in the file when the
    /// prompt says `marker`, then answers `done`. Submits the prompt and
    /// waits for the editor's `showDiff`, answers it (shown), checks it
    /// names the CLI's session and the proposed text, and waits for the
    /// CLI's own prompt in the terminal. Returns the request.
    fn propose(&self, marker: &str, old: &str, new: &str, done: &str) -> Incoming {
        let path = self.path();
        let mut replies = A::edit(&path, old, new);
        replies.push(Reply::text(done));
        self.mock.on(marker, replies);
        let before = std::fs::read_to_string(&self.file).unwrap();
        self.ok(
            "submitting",
            self.cli.submit(&format!("change the line {marker}"), STEP),
        );
        let show = self.ok("showDiff", self.editor.expect_request("showDiff", STEP));
        self.ok(
            "answering showDiff",
            self.editor.respond(show.id.as_ref().unwrap(), Value::Null),
        );
        let p = &show.params;
        let expect = |field: &str, want: Value| {
            assert_eq!(p[field], want, "showDiff.{field}: {p}\n{}", self.context());
        };
        expect(
            "agent",
            json!({"id": A::ID, "name": A::AGENT.display_name()}),
        );
        expect("clientId", self.connected["id"].clone());
        expect("oldFilePath", json!(path));
        expect("newFilePath", json!(path));
        expect("isNewFile", json!(false));
        expect("originalContents", json!(before));
        expect("proposedContents", json!(before.replace(old, new)));
        // The CLI asks in the terminal too; the test answers in the editor.
        self.ok(
            "the CLI's confirmation prompt",
            self.cli.wait_for_visible(TERMINAL_PROMPT, STEP),
        );
        show
    }
}

/// See [`Rig::context`].
fn context<A: Api>(cli: &AgentCli, editor: &Editor, mock: &MockModel<A>) -> String {
    let mut out = cli.context();
    out.push_str("\n── what ccbridge sent the editor ──\n");
    for method in [
        "clientConnected",
        "clientDisconnected",
        "showDiff",
        "closeDiff",
        "invalidNotification",
    ] {
        for m in editor.seen(method) {
            let mut params = m.params.to_string();
            if params.len() > 400 {
                let mut cut = 400;
                while !params.is_char_boundary(cut) {
                    cut -= 1;
                }
                params.truncate(cut);
                params.push('…');
            }
            out.push_str(&format!("  {method} {params}\n"));
        }
    }
    out.push_str(&format!(
        "── ccbridge log (tail) ──\n{}\n── model requests ──\n",
        tail(&editor.log(), 50)
    ));
    for r in mock.requests() {
        let text: String = {
            let chars: Vec<char> = r.text.chars().collect();
            chars[chars.len().saturating_sub(800)..].iter().collect()
        };
        out.push_str(&format!(
            "--- {} {} ({:?}), last 800 chars:\n{text}\n",
            r.method, r.path, r.served
        ));
    }
    out
}

/// Whether `line` starts an `/ide status` answer, connected or not.
fn is_status_line(line: &str) -> bool {
    line.contains("Connected to ") || line.contains("Disconnected")
}

/// See [`Rig::ide_status`]. Each run is tagged (`/ide status (check 3)`:
/// both CLIs ignore what follows the subcommand), so its answer is the
/// status line after that echo, never an earlier run's (Qwen Code scrolls
/// its history in a box of its own, so counting answers on screen does
/// not work).
fn ide_status(cli: &AgentCli, what: &str, until: impl Fn(&str) -> bool) -> Result<String, String> {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let deadline = Instant::now() + STEP;
    let mut last = String::new();
    while Instant::now() < deadline {
        let cmd = format!(
            "/ide status (check {})",
            RUNS.fetch_add(1, Ordering::Relaxed) + 1
        );
        cli.submit(&cmd, STEP).map_err(|e| format!("{e:?}"))?;
        // Before Enter the command is in the input box, with no answer
        // below it; after, it is echoed and answered.
        let answer = |screen: &str| -> Option<String> {
            let lines: Vec<&str> = screen.lines().collect();
            let echo = lines.iter().rposition(|l| l.contains(&cmd))?;
            let start = echo + 1 + lines[echo + 1..].iter().position(|l| is_status_line(l))?;
            let end = lines[start..]
                .iter()
                .position(|l| l.trim_start().starts_with('─') || l.trim_start().starts_with('>'))
                .map_or(lines.len(), |n| start + n);
            Some(lines[start..end].join("\n").trim_end().to_string())
        };
        let screen = cli
            .tmux
            .wait_for(&format!("the answer to {cmd:?}"), STEP, |s| {
                answer(s).is_some()
            })
            .map_err(|e| format!("{e:?}"))?;
        last = answer(&screen).unwrap_or_default();
        if until(&last) {
            return Ok(last);
        }
    }
    Err(format!(
        "/ide status never showed {what} within {STEP:?}; last answer:\n{last}"
    ))
}

/// Steps 1–4 for one CLI, in one session.
fn connect_select_accept_reject<A: Cli>() {
    let t0 = Instant::now();
    let rig = Rig::<A>::start();
    let path = rig.path();

    // 1. Connected, and both sides say so: the editor heard of the agent's
    //    session, and the CLI names the editor.
    let c = &rig.connected;
    assert_eq!(
        c["agent"],
        json!({"id": A::ID, "name": A::AGENT.display_name()}),
        "clientConnected: {c}"
    );
    assert_eq!(c["name"], A::CLIENT_NAME, "clientConnected: {c}");
    assert_eq!(c["version"], A::CLIENT_VERSION, "clientConnected: {c}");
    let connected = format!("Connected to {IDE_NAME}");
    let status = rig.ide_status(&connected, |s| s.contains(&connected));
    eprintln!(
        "[e2e] {} step 1 ({:.1?}): {}",
        A::ID,
        t0.elapsed(),
        status.lines().next().unwrap_or_default().trim()
    );

    // 2. The editor's selection reaches the model. A selection alone (no
    //    tab list) makes the file active, so the one context push that
    //    names the file carries the selection too: once /ide status lists
    //    the file, the next prompt must carry the selected text.
    rig.ok(
        "selectionChanged",
        rig.editor.notify(
            "selectionChanged",
            json!({
                "filePath": path,
                "text": SELECTED,
                "selection": {"start": {"line": 1, "character": 10},
                              "end": {"line": 1, "character": 10 + SELECTED.len()}},
            }),
        ),
    );
    let listed = format!("{FILE} (active)");
    rig.ide_status(&listed, |s| s.contains(&listed));
    rig.mock.on("CTX-MARK", [Reply::text("CTX-DONE-1")]);
    rig.ok(
        "submitting",
        rig.cli.submit("what is selected CTX-MARK", STEP),
    );
    let turn = rig.ok(
        "the prompt's turn",
        rig.mock.wait_for_request_containing("CTX-MARK", STEP),
    );
    if let Err(missing) = A::check_context(&turn.text, &path, SELECTED) {
        panic!(
            "the model request lacks the editor context ({missing}); its text:\n{}\n{}",
            turn.text,
            rig.context()
        );
    }
    rig.ok("the reply", rig.cli.wait_for_text("CTX-DONE-1", STEP));
    eprintln!("[e2e] {} step 2 ({:.1?})", A::ID, t0.elapsed());

    // 3. An edit the model proposes opens in the editor, and the user
    //    accepts it there with changes of their own: the file holds the
    //    editor's text. Nobody answers in the terminal: the CLI takes the
    //    editor's verdict for its own prompt.
    let show = rig.propose("EDIT-MARK", OLD_LINE, MODEL_LINE, "EDIT-DONE-2");
    let diff_id = show.params["id"].clone();
    let user_text = ORIGINAL.replace(OLD_LINE, USER_LINE);
    let turns_before = rig.mock.turns().len();
    rig.ok(
        "diffResolved",
        rig.editor.notify(
            "diffResolved",
            json!({"id": diff_id, "decision": "accepted", "contents": user_text}),
        ),
    );
    let followup = rig.ok(
        "the turn with the edit's result",
        rig.mock
            .wait_for_request("the turn after the edit", STEP, |r| {
                r.last_user_text.contains("EDIT-MARK")
                    && r.reply == Some(Reply::text("EDIT-DONE-2"))
            }),
    );
    assert_eq!(
        std::fs::read_to_string(&rig.file).unwrap(),
        user_text,
        "the file should hold the editor's text\n{}",
        rig.context()
    );
    let results = A::tool_results(&followup.body);
    let result = results.last().cloned().unwrap_or_default();
    for needle in A::ACCEPTED_RESULT.iter().chain([&USER_LINE]) {
        assert!(
            result.contains(needle),
            "the edit's result should say {needle:?}: {results:#?}\n{}",
            rig.context()
        );
    }
    rig.ok(
        "the accepted edit in the terminal",
        rig.cli.wait_for_text(A::ACCEPTED_ON_SCREEN, STEP),
    );
    rig.ok("the reply", rig.cli.wait_for_text("EDIT-DONE-2", STEP));
    rig.ok("the prompt", rig.cli.wait_prompt(STEP));
    assert!(
        !rig.cli.screen().contains(TERMINAL_PROMPT),
        "the terminal's confirmation prompt is still up\n{}",
        rig.context()
    );
    rig.ok(
        "closeDiff after the verdict",
        rig.editor.wait_seen("closeDiff", STEP, |m| {
            m.params["id"] == diff_id && m.params["reason"] == "decided"
        }),
    );
    eprintln!(
        "[e2e] {} step 3 ({:.1?}), {} turns",
        A::ID,
        t0.elapsed(),
        rig.mock.turns().len() - turns_before
    );

    // Still connected, so the next edit opens a diff too (Gemini CLI
    // 0.61.0 once dropped the connection here: see the companion's
    // `service::endpoint`).
    let status = rig.ide_status("an answer", |_| true);
    assert!(
        status.contains(&connected),
        "after the accepted diff, /ide status says:\n{status}\n{}",
        rig.context()
    );

    // 4. A rejected edit leaves the file as it was, and ends the turn (the
    //    model is not asked again: its follow-up reply stays unused).
    let show = rig.propose("REJECT-MARK", USER_LINE, REJECTED_LINE, "REJECT-DONE-3");
    let diff_id = show.params["id"].clone();
    rig.ok(
        "diffResolved",
        rig.editor.notify(
            "diffResolved",
            json!({"id": diff_id, "decision": "rejected"}),
        ),
    );
    rig.ok(
        "closeDiff after the verdict",
        rig.editor.wait_seen("closeDiff", STEP, |m| {
            m.params["id"] == diff_id && m.params["reason"] == "decided"
        }),
    );
    rig.ok(
        "the rejected edit in the terminal",
        rig.cli.wait_for_text(A::REJECTED_ON_SCREEN, STEP),
    );
    rig.ok("the prompt", rig.cli.wait_prompt(STEP));
    // A later prompt is answered, so the rejected turn is over.
    rig.mock.on("AFTER-MARK", [Reply::text("AFTER-DONE-4")]);
    rig.ok(
        "submitting",
        rig.cli.submit("anything else AFTER-MARK", STEP),
    );
    rig.ok("the reply", rig.cli.wait_for_text("AFTER-DONE-4", STEP));
    assert_eq!(
        std::fs::read_to_string(&rig.file).unwrap(),
        user_text,
        "a rejected edit changed the file\n{}",
        rig.context()
    );
    assert_eq!(
        rig.mock.remaining(),
        1,
        "after the rejection the model should not be asked again (its reply stays queued)\n{}",
        rig.context()
    );
    eprintln!("[e2e] {} step 4 ({:.1?})", A::ID, t0.elapsed());

    // 5. The user answers in the CLI's terminal while the review, open in
    //    the editor, holds edits of their own: ccbridge asks the editor for
    //    the review's text (`reviewText`) and hands it to the CLI, which
    //    writes it (Gemini CLI; Qwen Code writes the model's text); the
    //    editor's view is closed as answered elsewhere.
    let show = rig.propose("TERM-MARK", USER_LINE, TERM_MODEL_LINE, "TERM-DONE-5");
    let diff_id = show.params["id"].clone();
    let in_editor = user_text.replace(USER_LINE, TERM_USER_LINE);
    let by_model = user_text.replace(USER_LINE, TERM_MODEL_LINE);
    rig.ok("allowing once in the terminal", rig.cli.press(&["Enter"]));
    let ask = rig.ok("reviewText", rig.editor.expect_request("reviewText", STEP));
    assert_eq!(ask.params, json!({"id": diff_id}), "{}", rig.context());
    rig.ok(
        "answering reviewText",
        rig.editor
            .respond(ask.id.as_ref().unwrap(), json!({"contents": in_editor})),
    );
    rig.ok(
        "closeDiff, answered in the terminal",
        rig.editor.wait_seen("closeDiff", STEP, |m| {
            m.params["id"] == diff_id && m.params["reason"] == "claudeClosed"
        }),
    );
    rig.ok("the reply", rig.cli.wait_for_text("TERM-DONE-5", STEP));
    let want = if A::WRITES_REVIEW_TEXT {
        &in_editor
    } else {
        &by_model
    };
    assert_eq!(
        &std::fs::read_to_string(&rig.file).unwrap(),
        want,
        "answered in the terminal, the file should hold {}\n{}",
        if A::WRITES_REVIEW_TEXT {
            "the editor's text"
        } else {
            "the model's text (the CLI ignores closeDiff's answer)"
        },
        rig.context()
    );
    eprintln!("[e2e] {} step 5 ({:.1?})", A::ID, t0.elapsed());
}

/// Step 5: ccbridge's discovery file with a token that is not the
/// server's. The CLI reads it, is refused, and says it is not connected;
/// ccbridge announces no session.
fn wrong_token_means_no_connection<A: Cli>() {
    let sandbox = Sandbox::new(A::AGENT).expect("sandbox");
    sandbox.write_file(FILE, ORIGINAL).unwrap();
    let editor = spawn_editor(&sandbox, A::ID);
    let env = initialize::<A>(&editor, &sandbox);
    let port = port_of::<A>(&env);
    let (path, mut advert) = discovery_file(&editor, &sandbox, port);
    let token = advert["authToken"].as_str().unwrap_or_default().to_string();
    assert!(token.len() > 8, "{}: {advert}", path.display());
    // Same length, last character changed; written in place, so the file
    // keeps its owner and mode (Gemini CLI checks the owner).
    let last = if token.ends_with('0') { "1" } else { "0" };
    advert["authToken"] = json!(format!("{}{last}", &token[..token.len() - 1]));
    std::fs::write(&path, advert.to_string()).unwrap();
    let mock = MockModel::<A>::start().expect("mock model");
    let mut opts = AgentOptions::new(A::AGENT, mock.url());
    for (k, v) in env {
        opts = opts.env(k, v);
    }
    let cli = AgentCli::start(&sandbox, &opts).expect("start the CLI");
    let fail = |what: &str| -> ! {
        panic!("{what}\n{}", context(&cli, &editor, &mock));
    };
    cli.wait_prompt(STEP)
        .unwrap_or_else(|e| fail(&format!("{e:?}")));
    // The CLI tried, and ccbridge refused it.
    let refused = poll_until(STEP, Duration::from_millis(100), || {
        editor
            .log()
            .lines()
            .any(|l| l.contains("refused a request") && l.contains("WrongToken"))
            .then_some(())
    });
    if refused.is_none() {
        fail("ccbridge never refused a request with a wrong token");
    }
    let status = ide_status(&cli, "Disconnected", |s| s.contains("Disconnected"))
        .unwrap_or_else(|e| fail(&e));
    eprintln!("[e2e] {} with a wrong token: {status}", A::ID);
    if !status.contains(A::REFUSED_STATUS) || status.contains(&format!("Connected to {IDE_NAME}")) {
        fail(&format!(
            "/ide status should say {:?}, says:\n{status}",
            A::REFUSED_STATUS
        ));
    }
    // No MCP session was started (the refusal comes before one), so the
    // editor heard of none.
    if editor.log().contains("create new session") {
        fail("ccbridge started an MCP session for a client with a wrong token");
    }
    if !editor.seen("clientConnected").is_empty() {
        fail("ccbridge announced a session of a client with a wrong token");
    }
}

#[test]
fn gemini_cli_connects_gets_the_selection_and_edits_through_the_editor() {
    connect_select_accept_reject::<Gemini>();
}

#[test]
fn qwen_code_connects_gets_the_selection_and_edits_through_the_editor() {
    connect_select_accept_reject::<OpenAi>();
}

#[test]
fn gemini_cli_with_a_wrong_token_does_not_connect() {
    wrong_token_means_no_connection::<Gemini>();
}

#[test]
fn qwen_code_with_a_wrong_token_does_not_connect() {
    wrong_token_means_no_connection::<OpenAi>();
}
