//! What the real-client suites with a real editor (`real_client_nvim.rs`,
//! `real_client_vim.rs`, `real_client_emacs.rs`, `real_client_node.rs`,
//! `real_client_browser.rs`) share: a fresh sandbox with `hello.py`, the
//! scripted model, the pinned Claude Code CLI started as users start it,
//! and the steps every such test takes with them (wait until the CLI says
//! it is connected, have the model propose an Edit, read what Claude was
//! told). The editor each drives, and how it shows a review, is theirs.
//!
//! A rig is built in two steps, because the editor starts between them:
//! [`Bench::new`] makes the sandbox and the model, the face starts its
//! editor in it, and [`Bench::start_claude`] (or [`Bench::with_claude`])
//! gives the [`RealClient`] that holds all three.

use ccbridge_testkit::claude::{claude_bin, Claude, ClaudeOptions, Sandbox};
use ccbridge_testkit::mock_anthropic::MockAnthropic;
use ccbridge_testkit::HELLO_PY;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

/// Bound for each single step (two CLIs may start at once on two cores).
pub const STEP: Duration = Duration::from_secs(30);

/// The Edit the suites propose first: one changed line of `hello.py`.
pub const OLD: &str = "    print(message)";
pub const NEW: &str = "    print(message.upper())";

/// How the CLI finds the editor.
#[derive(Clone, Copy, PartialEq)]
pub enum Finds {
    /// `CLAUDE_CODE_SSE_PORT` and the rest of what the editor's
    /// `initialize` result offers for `claude`, as the editor's own command
    /// (`:CCBridgeClaude`, `ccbridge-claude`, a terminal) starts it.
    ByPort,
    /// Started elsewhere (a tmux pane, another terminal) with `--ide`: it
    /// scans the lock files for the one whose workspace holds its folder.
    ByLockFile,
}

/// An editor under a real client: what it adds to a failure message.
pub trait Shown {
    /// The editor's screen, or nothing for an editor without one.
    fn screen(&self) -> Option<String> {
        None
    }
}

/// The sandbox and the model, before the editor and the CLI start.
pub struct Bench {
    pub ide_name: &'static str,
    claude_bin: PathBuf,
    pub mock: MockAnthropic,
    pub hello: PathBuf,
    /// ccbridge's log file (the editor passes it to ccbridge).
    pub log: PathBuf,
    pub sandbox: Sandbox,
}

impl Bench {
    /// A fresh sandbox with `hello.py` and an empty script. Fails first,
    /// with the instruction, when the pinned CLI is missing.
    pub fn new(ide_name: &'static str) -> Bench {
        let claude_bin = claude_bin();
        let sandbox = Sandbox::new().expect("sandbox");
        let hello = sandbox.write_file("hello.py", HELLO_PY).unwrap();
        let mock = MockAnthropic::start().expect("mock API");
        let log = sandbox.root().join("ccbridge.log");
        Bench {
            ide_name,
            claude_bin,
            mock,
            hello,
            log,
            sandbox,
        }
    }

    /// The CLI's options as users start it: no permission mode (auto mode,
    /// where Claude would edit without asking if ccbridge did not make
    /// edits ask).
    pub fn claude_options(&self) -> ClaudeOptions {
        ClaudeOptions::new(self.claude_bin.clone(), self.mock.url())
    }

    /// [`Bench::claude_options`] for a CLI that finds the editor as `finds`
    /// says; `init` is the editor's `initialize` result, for
    /// [`Finds::ByPort`].
    pub fn options(&self, finds: Finds, init: &Value) -> ClaudeOptions {
        let mut opts = self.claude_options();
        match finds {
            Finds::ByPort => opts.in_editor_terminal(init),
            Finds::ByLockFile => {
                opts.extra_args.push("--ide".into());
                opts
            }
        }
    }

    /// Starts the CLI found as `finds` says, beside `editor`.
    pub fn start_claude<E: Shown>(self, editor: E, finds: Finds, init: &Value) -> RealClient<E> {
        let opts = self.options(finds, init);
        self.with_claude(editor, &opts)
    }

    /// Starts the CLI with `opts`, beside `editor`.
    pub fn with_claude<E: Shown>(self, editor: E, opts: &ClaudeOptions) -> RealClient<E> {
        let claude = Claude::start(&self.sandbox, opts).expect("start claude");
        RealClient {
            claude,
            editor,
            bench: self,
        }
    }
}

/// The CLI, the editor and the sandbox. Field order is drop order: the CLI
/// first, then the editor (which stops its ccbridge), the sandbox last.
pub struct RealClient<E> {
    pub claude: Claude,
    pub editor: E,
    pub bench: Bench,
}

impl<E: Shown> RealClient<E> {
    /// Waits until the CLI shows its prompt and `/status` reads `Connected
    /// to <ideName>`: the CLI will use the IDE for the next turn.
    pub fn wait_connected(&self) {
        self.claude.wait_prompt(STEP).unwrap();
        self.claude
            .wait_ide_connected(self.bench.ide_name, STEP)
            .unwrap_or_else(|e| panic!("{e}\n{}", self.context()));
    }

    /// For failure messages: the CLI's screen, ccbridge's log and the
    /// editor's screen.
    pub fn context(&self) -> String {
        let log = std::fs::read_to_string(&self.bench.log).unwrap_or_default();
        let mut out = self.claude.context(&log);
        if let Some(screen) = self.editor.screen() {
            out.push_str(&format!("\n── {} ──\n{screen}", self.bench.ide_name));
        }
        out
    }

    pub fn hello_path(&self) -> String {
        self.bench.hello.display().to_string()
    }

    pub fn on_disk(&self) -> String {
        std::fs::read_to_string(&self.bench.hello).unwrap()
    }

    pub fn mock(&self) -> &MockAnthropic {
        &self.bench.mock
    }

    /// The model proposes `old` → `new` in hello.py, then ends its turn
    /// with "Edit finished."; returns once the CLI says the diff is open in
    /// the editor.
    pub fn propose_edit(&self, old: &str, new: &str) {
        self.claude
            .request_edit(&self.bench.mock, &self.hello_path(), old, new, STEP)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", self.context()));
        self.wait_screen(&format!("Opened changes in {}", self.bench.ide_name));
    }

    /// Waits until the CLI's screen shows `text`.
    pub fn wait_screen(&self, text: &str) {
        self.claude
            .tmux
            .wait_for_text(text, STEP)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", self.context()));
    }

    /// Waits until the CLI says the user rejected its edit of `file`.
    pub fn wait_rejected(&self, file: &str) {
        self.claude
            .wait_rejected(file, STEP)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", self.context()));
    }

    /// The tool results the `n`-th request to the model carried: what
    /// Claude was told its tool (the Edit of the turn before) did.
    pub fn tool_result(&self, n: usize) -> String {
        self.bench
            .mock
            .tool_results_of(n, STEP)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", self.context()))
    }
}
