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

use crate::real_client_rig::{Bench, Finds, RealClient, Shown, NEW, OLD, STEP};
use ccbridge_testkit::claude::Sandbox;
use ccbridge_testkit::HELLO_PY;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

const IDE_NAME: &str = "NodeUnderTest";

fn package_dir() -> PathBuf {
    ccbridge_testkit::claude::workspace_root().join("editors/node")
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
type Rig = RealClient<NodeEditor>;

/// Its events are in the failure messages already.
impl Shown for NodeEditor {}

fn rig() -> Rig {
    let bench = Bench::new(IDE_NAME);
    let mut editor = NodeEditor::start(&bench.sandbox, &bench.log);
    let ready = editor.wait("ready");
    // As the editor's terminal starts it, with the environment and
    // arguments the client offers for `claude`.
    let mut rig = bench.start_claude(editor, Finds::ByPort, &ready);
    let connected = rig.editor.wait("clientConnected");
    assert_eq!(connected["agent"]["id"], "claude", "{connected}");
    rig.wait_connected();
    rig
}

impl RealClient<NodeEditor> {
    /// The model proposes `old` → `new` in hello.py and ends its turn with
    /// "Edit finished."; returns the `showDiff` the Node handler got.
    fn propose(&mut self, old: &str, new: &str) -> Value {
        self.claude
            .request_edit(self.mock(), &self.hello_path(), old, new, STEP)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", self.context()));
        let shown = self.editor.wait("showDiff");
        assert_eq!(
            shown["diff"]["newFilePath"],
            self.hello_path().as_str(),
            "{shown}"
        );
        assert_eq!(shown["diff"]["agent"]["name"], "Claude Code", "{shown}");
        shown["diff"].clone()
    }
}

#[test]
fn the_handler_accepts_its_own_edit_then_rejects_the_next_and_a_selection_reaches_the_prompt() {
    let mut rig = rig();

    // A selection reported by the Node editor shows in Claude's prompt box.
    let path = rig.hello_path();
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
    let result = rig.tool_result(2);
    assert!(
        result.contains("The user modified your proposed changes"),
        "tool_result: {result}\n{}",
        rig.context()
    );
    rig.wait_screen("Edit finished.");
    assert_eq!(rig.on_disk(), edited);

    // The next one rejected: the file stays as it is.
    rig.claude.wait_prompt(STEP).unwrap();
    let diff = rig.propose("    return message", "    return None");
    rig.editor
        .send(json!({"cmd": "resolve", "id": diff["id"], "decision": "rejected"}));
    rig.wait_rejected("hello.py");
    assert_eq!(rig.on_disk(), edited, "{}", rig.context());
}
