//! The real-client suite with **a Node editor**: the `@ccbridge/client`
//! package (`editors/node`), driven as an Electron main process would use
//! it, by `editors/node/test/fixtures/scripted-editor.mjs` (JSON lines: the
//! test's commands in, the bridge's events out); the **real** Claude Code
//! CLI (pinned, in tmux) connected to the sidecar the package spawned; a
//! scripted Messages API mock playing the model.
//!
//! Needs Node.js, the CLI, and the package's `dist/` (built by
//! `editors/node/test.sh`, which `scripts/test` runs before `cargo test`).
//! Without them every test fails with the instruction; none is skipped.

use ccbridge_testkit::claude::{claude_bin, Claude, ClaudeOptions, Sandbox};
use ccbridge_testkit::mock_anthropic::MockAnthropic;
use ccbridge_testkit::HELLO_PY;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

const IDE_NAME: &str = "NodeUnderTest";
/// Bound for each single step (two CLIs may start at once on two cores).
const STEP: Duration = Duration::from_secs(30);

fn package_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../editors/node")
}

/// The Node editor: its stdin for commands, its events as they come.
struct NodeEditor {
    child: Child,
    stdin: ChildStdin,
    events: Receiver<Value>,
    seen: Vec<Value>,
    seq: u64,
}

impl NodeEditor {
    fn start(sandbox: &Sandbox, log: &Path) -> NodeEditor {
        let script = package_dir().join("test/fixtures/scripted-editor.mjs");
        let dist = package_dir().join("dist/esm/index.js");
        assert!(
            dist.is_file(),
            "{} is missing: build the Node client first with \
             CCBRIDGE_BIN=$PWD/target/debug/ccbridge editors/node/test.sh (scripts/test does)",
            dist.display()
        );
        let mut child = Command::new("node")
            .arg(&script)
            .args(["--workspace", sandbox.workspace().to_str().unwrap()])
            .args(["--ide-name", IDE_NAME])
            .args(["--log-file", log.to_str().unwrap()])
            .args(["--", "--selection-debounce-ms", "0"])
            .env("CCBRIDGE_BIN", env!("CARGO_BIN_EXE_ccbridge"))
            .env("HOME", sandbox.home())
            .env("TMPDIR", sandbox.home())
            .env("CLAUDE_CONFIG_DIR", sandbox.config_dir())
            .current_dir(sandbox.workspace())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run node (Node.js 20 or newer on PATH): {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, events) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
            }
        });
        NodeEditor {
            child,
            stdin,
            events,
            seen: Vec::new(),
            seq: 0,
        }
    }

    /// The next event named `name` (earlier others are kept in `seen`).
    fn wait(&mut self, name: &str) -> Value {
        let end = Instant::now() + STEP;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(e) if e["event"] == name => return e,
                Ok(e) => self.seen.push(e),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no {name} event within {STEP:?}; saw {:?}", self.seen)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the Node editor exited; saw {:?}", self.seen)
                }
            }
        }
    }

    /// Sends `cmd` and waits until the bridge handed it to ccbridge.
    fn send(&mut self, mut cmd: Value) {
        self.seq += 1;
        cmd["seq"] = self.seq.into();
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let ack = self.wait("ack");
            if ack["seq"] == self.seq {
                return;
            }
        }
    }
}

impl Drop for NodeEditor {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"cmd": "stop"}));
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Field order is drop order: the CLI first, then the editor (which stops
/// its sidecar), the sandbox last.
struct Rig {
    claude: Claude,
    editor: NodeEditor,
    mock: MockAnthropic,
    hello: PathBuf,
    log: PathBuf,
    _sandbox: Sandbox,
}

fn rig() -> Rig {
    let claude_bin = claude_bin();
    let sandbox = Sandbox::new().expect("sandbox");
    let hello = sandbox.write_file("hello.py", HELLO_PY).unwrap();
    let mock = MockAnthropic::start().expect("mock API");
    let log = sandbox.root().join("ccbridge.log");
    let mut editor = NodeEditor::start(&sandbox, &log);
    let ready = editor.wait("ready");
    // As the editor's terminal starts it: no permission mode (auto mode),
    // with the environment and arguments the client offers for `claude`.
    let opts = ClaudeOptions::new(claude_bin, mock.url()).in_editor_terminal(&ready);
    let claude = Claude::start(&sandbox, &opts).expect("start claude");
    let mut rig = Rig {
        claude,
        editor,
        mock,
        hello,
        log,
        _sandbox: sandbox,
    };
    let connected = rig.editor.wait("clientConnected");
    assert_eq!(connected["agent"]["id"], "claude", "{connected}");
    rig.claude.wait_prompt(STEP).unwrap();
    rig.claude
        .wait_ide_connected(IDE_NAME, STEP)
        .unwrap_or_else(|e| panic!("{e}\n{}", rig.context()));
    rig
}

impl Rig {
    fn context(&self) -> String {
        self.claude
            .context(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }

    fn on_disk(&self) -> String {
        std::fs::read_to_string(&self.hello).unwrap()
    }

    /// The model proposes `old` → `new` in hello.py and ends its turn with
    /// "Edit finished."; returns the `showDiff` the Node handler got.
    fn propose(&mut self, old: &str, new: &str) -> Value {
        let path = self.hello.display().to_string();
        self.claude
            .request_edit(&self.mock, &path, old, new, STEP)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", self.context()));
        let shown = self.editor.wait("showDiff");
        assert_eq!(shown["diff"]["newFilePath"], path.as_str(), "{shown}");
        assert_eq!(shown["diff"]["agent"]["name"], "Claude Code", "{shown}");
        shown["diff"].clone()
    }
}

const OLD: &str = "    print(message)";
const NEW: &str = "    print(message.upper())";

#[test]
fn the_handler_accepts_its_own_edit_then_rejects_the_next_and_a_selection_reaches_the_prompt() {
    let mut rig = rig();

    // A selection reported by the Node editor shows in Claude's prompt box.
    let path = rig.hello.display().to_string();
    rig.editor.send(json!({"cmd": "select", "filePath": path,
        "text": "    message = \"hello \" + name\n    print(message)",
        "selection": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 18}}}));
    rig.claude
        .wait_prompt_line("[⧉ 2 lines selected] in the prompt box", STEP, |l| {
            l.contains("⧉ 2 lines selected")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));

    // Accepted with the editor's own change on top of Claude's.
    let diff = rig.propose(OLD, NEW);
    let proposed = diff["proposedContents"].as_str().unwrap().to_owned();
    assert_eq!(proposed, HELLO_PY.replace(OLD, NEW));
    let edited = proposed.replace(NEW, "    print(message.upper())  # shout");
    rig.editor.send(json!({"cmd": "resolve", "id": diff["id"],
        "decision": "accepted", "contents": edited}));
    let result = rig
        .mock
        .tool_results_of(2, STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert!(
        result.contains("The user modified your proposed changes"),
        "tool_result: {result}\n{}",
        rig.context()
    );
    rig.claude
        .tmux
        .wait_for_text("Edit finished.", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.context()));
    assert_eq!(rig.on_disk(), edited);

    // The next one rejected: the file stays as it is.
    rig.claude.wait_prompt(STEP).unwrap();
    let diff = rig.propose("    return message", "    return None");
    rig.editor
        .send(json!({"cmd": "resolve", "id": diff["id"], "decision": "rejected"}));
    rig.claude
        .wait_rejected("hello.py", STEP)
        .unwrap_or_else(|e| {
            panic!(
                "{e:?}
{}",
                rig.context()
            )
        });
    assert_eq!(rig.on_disk(), edited, "{}", rig.context());
}
