//! Runs the real Claude Code CLI in a sandbox, in tmux.
//!
//! Why: the CLI keeps state in `$CLAUDE_CONFIG_DIR` (and `$HOME`), shows
//! first-run screens (onboarding, API-key approval, folder trust) and looks for
//! IDE lock files there. A fresh temporary `HOME` + `CLAUDE_CONFIG_DIR` with a
//! pre-written `.claude.json` makes every run start straight at the prompt,
//! isolated from the developer's own setup and from other tests, and is where
//! ccbridge's lock file must land for the CLI to find it.
//!
//! The CLI binary is the pinned npm package `@anthropic-ai/claude-code`,
//! found through `CCBRIDGE_CLAUDE_BIN` or in [`crate::e2e_dir`]; a missing
//! binary is a hard failure that says how to install it, never a skip.

use crate::mock_anthropic::MockAnthropic;
use crate::mock_model::Reply;
use crate::sandbox::{checked_once, write_under, SandboxDir};
use crate::tmux::{StartOptions, Timeout, Tmux};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The CLI version these tests are written against.
pub const CLAUDE_CODE_VERSION: &str = "2.1.332";

/// A made-up API key; the mock accepts anything. Its last 20 characters are
/// pre-approved in `.claude.json`.
pub const API_KEY: &str = "sk-ant-api03-ccbridge-e2e-0000-offline-test-key-AAAA";

/// The prompt line of the input box: `❯` then U+00A0 (not a plain space, which
/// is what the permission menu's `❯ 1. Yes` uses).
pub const PROMPT_MARK: &str = "❯\u{a0}";

/// On screen while a panel (`/status`, `/mcp`) is open over the prompt.
const PANEL_OPEN: &str = "Esc to close";

/// How to install the pinned CLI where the harness looks for it.
pub fn install_hint() -> String {
    format!(
        "install the pinned Claude Code CLI: `scripts/test` does it, or\n    npm install --prefix {} @anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}\n\
         or point CCBRIDGE_CLAUDE_BIN at an existing `claude` {CLAUDE_CODE_VERSION} binary",
        crate::e2e_dir().display()
    )
}

/// The cargo workspace root of the checkout under test: the first folder
/// holding `Cargo.lock` above the package whose tests run (`cargo test`
/// gives them `CARGO_MANIFEST_DIR`). Found at run time, not compiled in:
/// CI reuses a test binary built in an earlier clone when nothing it is
/// built from changed (`.ci/mtimes`), and that clone is gone.
pub fn workspace_root() -> PathBuf {
    let start = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let found = start
        .ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .map(Path::to_path_buf);
    let p = found.unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    p.canonicalize().unwrap_or(p)
}

/// `CCBRIDGE_CLAUDE_BIN`, else `node_modules/.bin/claude` in [`crate::e2e_dir`].
pub fn try_claude_bin() -> Result<PathBuf, String> {
    let (path, source) = match std::env::var_os("CCBRIDGE_CLAUDE_BIN").filter(|v| !v.is_empty()) {
        Some(p) => (PathBuf::from(p), "CCBRIDGE_CLAUDE_BIN"),
        None => (
            crate::e2e_dir().join("node_modules/.bin/claude"),
            "the default location",
        ),
    };
    if path.is_file() {
        check_version(&path)?;
        Ok(path)
    } else {
        Err(format!(
            "the Claude Code CLI was not found at {} ({source}); {}",
            path.display(),
            install_hint()
        ))
    }
}

/// The scenarios encode the behaviour of one CLI version; another one is a
/// setup error, reported as such rather than as confusing scenario failures.
/// Checked once per binary path and process.
fn check_version(path: &Path) -> Result<(), String> {
    checked_once(path, || {
        match std::process::Command::new(path).arg("--version").output() {
            Ok(out) => {
                let v = String::from_utf8_lossy(&out.stdout);
                if v.split_whitespace().next() == Some(CLAUDE_CODE_VERSION) {
                    Ok(())
                } else {
                    Err(format!(
                        "{} reports version {:?}, the tests need {CLAUDE_CODE_VERSION}; {}",
                        path.display(),
                        v.trim(),
                        install_hint()
                    ))
                }
            }
            Err(e) => Err(format!(
                "cannot run {} --version: {e}; {}",
                path.display(),
                install_hint()
            )),
        }
    })
}

/// Like [`try_claude_bin`], panicking with the install instructions.
pub fn claude_bin() -> PathBuf {
    try_claude_bin().unwrap_or_else(|e| panic!("{e}"))
}

/// A temporary `HOME`, `CLAUDE_CONFIG_DIR` and workspace directory.
pub struct Sandbox {
    dir: SandboxDir,
    home: PathBuf,
    config_dir: PathBuf,
    workspace: PathBuf,
}

impl Sandbox {
    /// Creates the directories and writes `.claude.json` (onboarding done,
    /// workspace trusted, [`API_KEY`] approved) and `settings.json`
    /// (`mcp__ide__getDiagnostics` allowed).
    pub fn new() -> std::io::Result<Sandbox> {
        let dir = SandboxDir::new("ccbridge-e2e-", &["home", "config", "work"])?;
        let sandbox = Sandbox {
            home: dir.join("home"),
            config_dir: dir.join("config"),
            workspace: dir.join("work"),
            dir,
        };
        sandbox.write_config()?;
        Ok(sandbox)
    }

    fn write_config(&self) -> std::io::Result<()> {
        let key_suffix = &API_KEY[API_KEY.len() - 20..];
        let claude_json = json!({
            "hasCompletedOnboarding": true,
            "lastOnboardingVersion": CLAUDE_CODE_VERSION,
            "projects": {
                self.workspace.display().to_string(): {
                    "hasTrustDialogAccepted": true,
                    "allowedTools": [],
                }
            },
            "customApiKeyResponses": {"approved": [key_suffix], "rejected": []},
        });
        std::fs::write(
            self.config_dir.join(".claude.json"),
            serde_json::to_string_pretty(&claude_json)?,
        )?;
        // The IDE's diagnostics and ccbridge's workspace tools are allowed,
        // as a user would once: the terminal asks no permission for them,
        // so the editor's review and approval are the only questions.
        let settings =
            json!({"permissions": {"allow": ["mcp__ide__getDiagnostics", "mcp__ccbridge"]}});
        std::fs::write(
            self.config_dir.join("settings.json"),
            serde_json::to_string_pretty(&settings)?,
        )
    }

    /// The sandbox's root directory (holds logs too).
    pub fn root(&self) -> &Path {
        self.dir.root()
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    /// `CLAUDE_CONFIG_DIR`.
    pub fn config_dir(&self) -> &Path {
        &self.config_dir
    }

    /// `$CLAUDE_CONFIG_DIR/ide`, where the CLI looks for lock files.
    pub fn lock_dir(&self) -> PathBuf {
        self.config_dir.join("ide")
    }

    /// The trusted project directory the CLI runs in.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Writes `rel` under the workspace; returns its absolute path.
    pub fn write_file(&self, rel: &str, contents: &str) -> std::io::Result<PathBuf> {
        write_under(&self.workspace, rel, contents)
    }
}

/// How to start the CLI.
#[derive(Clone, Debug)]
pub struct ClaudeOptions {
    pub bin: PathBuf,
    /// `ANTHROPIC_BASE_URL` (the mock's URL).
    pub api_url: String,
    /// `CLAUDE_CODE_SSE_PORT`: the IDE port to connect to at once.
    pub ide_port: Option<u16>,
    pub extra_env: Vec<(String, String)>,
    pub extra_args: Vec<String>,
    /// Runs the CLI through a launcher: the command line is `launcher`
    /// followed by the CLI's arguments, so the launcher names the CLI itself
    /// (`ccbridge claude --claude <bin> --`). Empty: the CLI runs directly.
    pub launcher: Vec<String>,
    /// `--permission-mode` given to the CLI. `None` (the default) starts it
    /// as users do, without one: since 2.1.328 that is auto mode, where
    /// edits are written without asking unless something makes them ask
    /// (the `--settings` an editor's terminal passes, see
    /// [`ClaudeOptions::in_editor_terminal`]).
    pub permission_mode: Option<String>,
    pub width: u16,
    pub height: u16,
}

impl ClaudeOptions {
    pub fn new(bin: impl Into<PathBuf>, api_url: impl Into<String>) -> Self {
        ClaudeOptions {
            bin: bin.into(),
            api_url: api_url.into(),
            ide_port: None,
            extra_env: Vec::new(),
            extra_args: Vec::new(),
            launcher: Vec::new(),
            permission_mode: None,
            width: 200,
            height: 50,
        }
    }

    pub fn ide_port(mut self, port: u16) -> Self {
        self.ide_port = Some(port);
        self
    }

    /// See [`ClaudeOptions::launcher`].
    pub fn launcher(mut self, launcher: Vec<String>) -> Self {
        self.launcher = launcher;
        self
    }

    /// Starts the CLI with `--permission-mode <mode>`, as a user who chose
    /// one does (the default is none, as users start it).
    pub fn permission_mode(mut self, mode: &str) -> Self {
        self.permission_mode = Some(mode.into());
        self
    }

    /// Starts the CLI as an editor's terminal does (`:CCBridgeClaude`, VS
    /// Code's "Start Claude Code"): with the environment and the arguments
    /// the sidecar's `initialize` result offers for `claude` in `agents`
    /// (the IDE's port, and the `--settings` whose hook makes every edit
    /// ask, so edits reach the editor's review in auto mode too). `init` is
    /// that result; panics when it offers no `claude`, which is the bug.
    pub fn in_editor_terminal(mut self, init: &serde_json::Value) -> Self {
        let claude = init["agents"]
            .as_array()
            .and_then(|a| a.iter().find(|a| a["id"] == "claude"))
            .unwrap_or_else(|| panic!("initialize offers no `claude` agent: {init}"));
        for (k, v) in claude["env"].as_object().into_iter().flatten() {
            let v = v.as_str().expect("agent env values are strings");
            self.extra_env.push((k.clone(), v.into()));
        }
        let args = claude["args"].as_array().into_iter().flatten();
        let args: Vec<String> = args
            .map(|a| a.as_str().expect("agent args are strings").into())
            .collect();
        // Before the user's own arguments, as the plugins pass them.
        self.extra_args.splice(0..0, args);
        self
    }
}

/// A running interactive `claude` in tmux (in the permission mode users
/// get unless [`ClaudeOptions::permission_mode`] names one).
pub struct Claude {
    pub tmux: Tmux,
    pid: u32,
    debug_log: PathBuf,
}

static SESSION_COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Claude {
    /// Starts the CLI in the sandbox's workspace. The CLI's debug log goes to
    /// `<sandbox>/claude-debug-<n>.log` (see [`Claude::debug_log`]).
    pub fn start(sandbox: &Sandbox, opts: &ClaudeOptions) -> std::io::Result<Claude> {
        let n = SESSION_COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let debug_log = sandbox.root().join(format!("claude-debug-{n}.log"));
        let mut env: Vec<(String, String)> = vec![
            ("HOME".into(), sandbox.home().display().to_string()),
            (
                "CLAUDE_CONFIG_DIR".into(),
                sandbox.config_dir().display().to_string(),
            ),
            ("ANTHROPIC_BASE_URL".into(), opts.api_url.clone()),
            ("ANTHROPIC_API_KEY".into(), API_KEY.into()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                "1".into(),
            ),
            ("DISABLE_AUTOUPDATER".into(), "1".into()),
            ("CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL".into(), "1".into()),
            // Otherwise every start runs `git clone` of the plugin
            // marketplace (twice, failing offline): CPU the tests need.
            (
                "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL".into(),
                "1".into(),
            ),
        ];
        if let Some(port) = opts.ide_port {
            env.push(("CLAUDE_CODE_SSE_PORT".into(), port.to_string()));
        }
        env.extend(opts.extra_env.iter().cloned());
        let mut cmd = if opts.launcher.is_empty() {
            vec![opts.bin.display().to_string()]
        } else {
            opts.launcher.clone()
        };
        if let Some(mode) = &opts.permission_mode {
            cmd.extend(["--permission-mode".into(), mode.clone()]);
        }
        cmd.extend(["--debug-file".into(), debug_log.display().to_string()]);
        cmd.extend(opts.extra_args.iter().cloned());
        let start = StartOptions {
            cmd,
            env,
            cwd: sandbox.workspace().to_path_buf(),
            width: opts.width,
            height: opts.height,
        };
        let tmux = Tmux::start(&start)?;
        let pid = tmux.pane_pid()?;
        Ok(Claude {
            tmux,
            pid,
            debug_log,
        })
    }

    /// The pane's process: the CLI (which reports it in `ide_connected`), or its
    /// launcher when there is one.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The CLI's debug log so far (empty if not written yet).
    pub fn debug_log(&self) -> String {
        std::fs::read_to_string(&self.debug_log).unwrap_or_default()
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        self.tmux.capture()
    }

    /// The screen including scrollback.
    pub fn transcript(&self) -> String {
        self.tmux.capture_all()
    }

    /// Waits until the CLI says the user rejected its update to `file_name`
    /// (a base name) and shows its input box again: a rejection ends the turn.
    pub fn wait_rejected(&self, file_name: &str, timeout: Duration) -> Result<(), Timeout> {
        self.tmux
            .wait_for_text(&format!("Rejected update to {file_name}"), timeout)?;
        self.wait_prompt(timeout).map(drop)
    }

    /// Waits until the input box is shown on the visible screen.
    pub fn wait_prompt(&self, timeout: Duration) -> Result<String, Timeout> {
        self.tmux
            .wait_for("the input prompt (❯ + NBSP)", timeout, |_| {
                self.tmux
                    .capture()
                    .lines()
                    .any(|l| l.trim_start().starts_with(PROMPT_MARK))
            })
    }

    /// The text after the prompt mark on the prompt line, if shown.
    pub fn prompt_line(&self) -> Option<String> {
        self.tmux.capture().lines().find_map(|l| {
            l.trim_start()
                .strip_prefix(PROMPT_MARK)
                .map(|rest| rest.trim_end().to_string())
        })
    }

    /// Waits until the prompt line satisfies `pred` (given the text after the mark).
    pub fn wait_prompt_line(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String, Timeout> {
        self.tmux.wait_for(what, timeout, |_| {
            self.prompt_line().is_some_and(|l| pred(&l))
        })?;
        Ok(self.prompt_line().unwrap_or_default())
    }

    /// Types `text` into the prompt and waits until the prompt line shows it.
    ///
    /// The CLI was seen to drop the first key typed right after `/status`
    /// closed (an Escape still pending in its input parser turns `c` into
    /// Alt-c): what did not arrive whole is erased and typed again, at most
    /// three times.
    pub fn type_text(&self, text: &str, timeout: Duration) -> Result<(), Timeout> {
        let start = std::time::Instant::now();
        let attempt = timeout.min(Duration::from_secs(5));
        let mut last = None;
        for _ in 0..3 {
            // A panel still up (`/status` reopened by keys that arrived
            // late under load: seen in CI) takes every key typed: close it
            // first, so the text reaches the prompt.
            if self.tmux.capture().contains(PANEL_OPEN) {
                self.close_panel(timeout)?;
            }
            self.tmux.send_text(text).map_err(|e| Timeout {
                what: format!("typing {text:?}: {e}"),
                waited: start.elapsed(),
                last_screen: self.screen(),
            })?;
            match self.wait_prompt_line(&format!("{text:?} in the prompt"), attempt, |l| {
                l.contains(text)
            }) {
                Ok(_) => return Ok(()),
                Err(e) => last = Some(e),
            }
            let partial = self.prompt_line().unwrap_or_default();
            for _ in 0..partial.chars().count() {
                self.press(&["BSpace"])?;
            }
            if !partial.is_empty() {
                self.wait_prompt_line("the prompt emptied", timeout, |l| !l.contains(&partial))?;
            }
        }
        Err(last.expect("three attempts"))
    }

    /// Scripts the model to propose `old` → `new` in `path` with the Edit
    /// tool, then to end its turn with "Edit finished.", and submits a
    /// prompt that starts that turn.
    pub fn request_edit(
        &self,
        mock: &MockAnthropic,
        path: &str,
        old: &str,
        new: &str,
        timeout: Duration,
    ) -> Result<(), Timeout> {
        mock.push(Reply::edit(path, old, new).with_text("Editing."));
        mock.push(Reply::text("Edit finished."));
        self.type_and_submit("change it", timeout)
    }

    /// Types `text`, waits until it is shown, then presses Enter.
    pub fn type_and_submit(&self, text: &str, timeout: Duration) -> Result<(), Timeout> {
        self.type_text(text, timeout)?;
        self.press(&["Enter"])
    }

    /// Sends key names to the terminal.
    pub fn press(&self, keys: &[&str]) -> Result<(), Timeout> {
        self.tmux.send_keys(keys).map_err(|e| Timeout {
            what: format!("sending keys {keys:?}: {e}"),
            waited: Duration::ZERO,
            last_screen: self.screen(),
        })
    }

    /// Answers the permission dialog on screen with `key` (`"1"` = Yes,
    /// `"3"` = No) and waits until the dialog is gone.
    ///
    /// The CLI ignores keys that arrive within a short grace period after a
    /// dialog is drawn (so a keystroke meant for the prompt cannot answer
    /// it), and a test sees the dialog at once. So the key is re-sent, at
    /// most every 700 ms, until the dialog closes; once it has closed nothing
    /// more is sent.
    pub fn answer_permission(&self, key: &str, timeout: Duration) -> Result<(), Timeout> {
        const DIALOG: &str = "Esc to cancel";
        let open = || self.tmux.capture().contains(DIALOG);
        let start = std::time::Instant::now();
        self.tmux
            .wait_for("a permission dialog", timeout, |_| open())?;
        while start.elapsed() < timeout {
            self.press(&[key])?;
            let closed = crate::poll_until(
                Duration::from_millis(700),
                crate::tmux::POLL_INTERVAL,
                || (!open()).then_some(()),
            );
            if closed.is_some() {
                return Ok(());
            }
        }
        Err(Timeout {
            what: format!("the permission dialog to close after pressing {key:?}"),
            waited: start.elapsed(),
            last_screen: self.transcript(),
        })
    }

    /// Runs `/status` until its IDE line reads `Connected to <ide_name>`:
    /// the CLI then uses the IDE for the next turn. (It decides from its own
    /// connection state, which under load was seen to lag the handshake by
    /// more than a second; a prompt in that window runs without the IDE.)
    pub fn wait_ide_connected(&self, ide_name: &str, timeout: Duration) -> Result<(), String> {
        let start = std::time::Instant::now();
        let mut last = String::new();
        while start.elapsed() < timeout {
            last = self.ide_status(timeout).map_err(|e| format!("{e:?}"))?;
            if last.contains(&format!("Connected to {ide_name}")) && !last.contains("Not connected")
            {
                return Ok(());
            }
        }
        Err(format!(
            "the CLI never showed `Connected to {ide_name}` in /status within {timeout:?}; \
             last IDE line {last:?}"
        ))
    }

    /// Failure context: the CLI's screen, the tail of ccbridge's log
    /// `ccbridge_log` (its text) and of the CLI's debug log.
    pub fn context(&self, ccbridge_log: &str) -> String {
        format!(
            "CLI screen:\n{}\n── ccbridge log (tail) ──\n{}\n── CLI debug log (tail) ──\n{}",
            self.screen(),
            crate::tail(ccbridge_log, 40),
            crate::tail(&self.debug_log(), 40)
        )
    }

    /// Runs `/status`, returns its `IDE:` line, and closes the panel.
    pub fn ide_status(&self, timeout: Duration) -> Result<String, Timeout> {
        self.wait_prompt(timeout)?;
        self.type_text("/status", timeout)?;
        self.press(&["Enter"])?;
        let screen = self
            .tmux
            .wait_for("the /status panel's IDE line", timeout, |_| {
                self.tmux.capture().lines().any(|l| l.contains("IDE:"))
            })?;
        let _ = screen;
        let line = self
            .tmux
            .capture()
            .lines()
            .find(|l| l.contains("IDE:"))
            .map(|l| l.trim().to_string())
            .unwrap_or_default();
        self.close_panel(timeout)?;
        self.wait_prompt(timeout)?;
        Ok(line)
    }

    /// Closes an open panel (`/status`) with Escape, pressing it again when
    /// the panel is still up a second later: a key sent while the panel was
    /// still being drawn was seen to be lost, and text typed next then went
    /// nowhere (regression: `edit_rejected_in_the_page_is_not_written`).
    fn close_panel(&self, timeout: Duration) -> Result<(), Timeout> {
        let open = |s: &str| s.contains(PANEL_OPEN);
        let start = std::time::Instant::now();
        loop {
            self.press(&["Escape"])?;
            // The visible screen: the scrollback keeps old panels.
            let closed = self
                .tmux
                .wait_for("the panel to close", Duration::from_secs(1), |_| {
                    !open(&self.tmux.capture())
                });
            match closed {
                Ok(_) => return Ok(()),
                Err(e) if start.elapsed() >= timeout => return Err(e),
                Err(_) => {}
            }
        }
    }
}
