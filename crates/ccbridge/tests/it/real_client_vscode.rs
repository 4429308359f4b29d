//! The real-client suite with **VS Code** as the editor: code-server (a real
//! workbench) with the ccbridge extension (`editors/vscode`) installed, its
//! page driven by Chromium; the **real** Claude Code CLI (pinned, in tmux)
//! connected to the sidecar the extension spawned; a scripted Messages API
//! mock playing the model. A person reviews in VS Code's diff editor: edits
//! the proposal and accepts it, or rejects the next one.
//!
//! Needs what `scripts/vscode-test` installs and builds (code-server, Node
//! 24, the `.vsix`; `scripts/test` runs it before `cargo test`), Chromium and
//! playwright-core, and the CLI. Without them the test fails with the
//! instruction; it is never skipped.

use ccbridge_testkit::browser::Browser;
use ccbridge_testkit::claude::{claude_bin, Claude, ClaudeOptions, Sandbox};
use ccbridge_testkit::mock_anthropic::MockAnthropic;
use ccbridge_testkit::vscode::{CodeServer, CodeServerOptions};
use ccbridge_testkit::HELLO_PY;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bound for each single step (the workbench, a CLI and the TypeScript-free
/// workspace share two cores with other suites).
const STEP: Duration = Duration::from_secs(60);
const PAGE: &str = "vscode";

const OLD: &str = "    print(message)";
const NEW: &str = "    print(message.upper())";

/// Field order is drop order: the CLI first, then the browser and
/// code-server (whose extension host stops the sidecar), the sandbox last.
struct Rig {
    claude: Claude,
    browser: Browser,
    _code_server: CodeServer,
    mock: MockAnthropic,
    hello: PathBuf,
    shots: PathBuf,
    _sandbox: Sandbox,
}

fn rig() -> Rig {
    let claude_bin = claude_bin();
    let sandbox = Sandbox::new().expect("sandbox");
    let hello = sandbox.write_file("hello.py", HELLO_PY).unwrap();
    let mock = MockAnthropic::start().expect("mock API");
    let code_server = CodeServer::start(&CodeServerOptions {
        claude_config_dir: Some(sandbox.config_dir()),
        ..CodeServerOptions::new(
            sandbox.root(),
            sandbox.home(),
            sandbox.workspace(),
            Path::new(env!("CARGO_BIN_EXE_ccbridge")),
        )
    });
    let mut browser = Browser::launch();
    browser.new_page(PAGE, "light");
    browser.goto(PAGE, &code_server.url());
    browser.must(
        "waitFor",
        json!({"page": PAGE, "selector": ".monaco-workbench", "timeout": STEP.as_millis() as u64}),
    );
    // The extension starts the sidecar, which writes its lock file where
    // this sandbox's Claude looks.
    let lock = ccbridge_testkit::wait_lock_file(&sandbox.lock_dir(), STEP).unwrap_or_else(|| {
        panic!(
            "no lock file in {} within {STEP:?}; code-server:\n{}",
            sandbox.lock_dir().display(),
            code_server.log()
        )
    });
    let port: u16 = lock
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .expect("the lock file is <port>.lock");
    // As "Start Claude Code" starts it: no permission mode (auto mode), the
    // port, and the review `--settings` of `initialize.agents` (that the
    // command passes them is checked by the extension's own tests).
    let settings = ccbridge_protocol::lockfile::claude_settings(true, &[]);
    let opts = ClaudeOptions::new(claude_bin, mock.url())
        .ide_port(port)
        .in_editor_terminal(&json!({"agents": [{"id": "claude", "env": {},
            "args": ["--settings", settings.to_string()]}]}));
    let claude = Claude::start(&sandbox, &opts).expect("start claude");
    let shots = std::env::var_os("CCBRIDGE_VSCODE_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| sandbox.root().to_path_buf());
    let rig = Rig {
        claude,
        browser,
        _code_server: code_server,
        mock,
        hello,
        shots,
        _sandbox: sandbox,
    };
    rig.claude.wait_prompt(STEP).unwrap();
    rig.claude
        .wait_ide_connected("code-server", STEP)
        .unwrap_or_else(|e| panic!("{e}\n{}", rig.claude.context("")));
    rig
}

impl Rig {
    fn on_disk(&self) -> String {
        std::fs::read_to_string(&self.hello).unwrap()
    }

    fn screenshot(&mut self, name: &str) {
        let _ = std::fs::create_dir_all(&self.shots);
        let path = self.shots.join(format!("real-client-{name}.png"));
        let _ = self
            .browser
            .run("screenshot", json!({"page": PAGE, "path": path}));
    }

    /// The model proposes `old` → `new` in hello.py; waits for VS Code's
    /// review tab, labelled with Claude.
    fn propose(&mut self, old: &str, new: &str) {
        let path = self.hello.display().to_string();
        self.claude
            .request_edit(&self.mock, &path, old, new, STEP)
            .unwrap_or_else(|e| panic!("{e:?}\n{}", self.claude.context("")));
        self.browser.must(
            "waitFor",
            json!({"page": PAGE, "selector": r#".tabs-container .tab:has-text("Claude Code: hello.py")"#,
                   "timeout": STEP.as_millis() as u64}),
        );
    }

    fn title_action(&mut self, label: &str) {
        self.browser.click(
            PAGE,
            &format!(r#".editor-actions [aria-label="{label}"] >> nth=0"#),
        );
    }
}

#[test]
fn an_edit_accepted_after_editing_the_proposal_is_written_as_edited_and_a_rejection_leaves_the_file(
) {
    let mut rig = rig();

    // Accepted with the person's own line typed into the proposal.
    rig.propose(OLD, NEW);
    rig.screenshot("1-review");
    rig.browser.click(
        PAGE,
        ".monaco-diff-editor .editor.modified .view-lines:not(.line-delete)",
    );
    rig.browser.press(PAGE, "Control+Home");
    rig.browser.press(PAGE, "End");
    rig.browser.type_text(PAGE, "  # reviewed in VS Code");
    rig.screenshot("2-edited");
    rig.title_action("Accept the proposal");
    let edited = HELLO_PY.replace(OLD, NEW).replacen(
        "def greet(name):",
        "def greet(name):  # reviewed in VS Code",
        1,
    );
    let result = rig
        .mock
        .tool_results_of(2, STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.claude.context("")));
    assert!(
        result.contains("The user modified your proposed changes"),
        "tool_result: {result}\n{}",
        rig.claude.context("")
    );
    rig.claude
        .tmux
        .wait_for_text("Edit finished.", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.claude.context("")));
    assert_eq!(rig.on_disk(), edited);
    rig.browser.wait_gone(
        PAGE,
        r#".tabs-container .tab:has-text("Claude Code: hello.py")"#,
    );

    // The next one rejected from the editor title: the file stays.
    rig.claude.wait_prompt(STEP).unwrap();
    rig.propose("    return message", "    return None");
    rig.title_action("Reject the proposal");
    rig.claude
        .wait_rejected("hello.py", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", rig.claude.context("")));
    assert_eq!(rig.on_disk(), edited, "{}", rig.claude.context(""));
    rig.screenshot("3-rejected");
}
