//! Runs the real Gemini CLI or Qwen Code in a sandbox, in tmux.
//!
//! Why: ccbridge's companion server is for programs we do not control, so
//! its end-to-end tests run the pinned CLIs themselves, interactively (they
//! connect to an IDE only then), fully offline:
//!
//! ```text
//!  mock_gemini / mock_openai ◀─HTTP/SSE─ gemini | qwen (in tmux) ─MCP/HTTP─▶ ccbridge companion
//!      (scripted model)                    (real CLI)                          (under test)
//! ```
//!
//! Both CLIs keep their settings under `$HOME` and show dialogs on a first
//! run (authentication, folder trust, an IDE nudge); where they look for the
//! companion's discovery file depends on `$TMPDIR` (Gemini CLI:
//! `$TMPDIR/gemini/ide/`) or `$HOME` (Qwen Code: `$HOME/.qwen/ide/`). So
//! each run gets a fresh [`Sandbox`]: a private `HOME`, `TMPDIR` and
//! workspace, with the settings found to start each CLI straight at the
//! prompt against a mock model, IDE mode on. The
//! settings are in [`AgentOptions::settings`], for a test to change before
//! [`AgentCli::start`] writes them. Two traps it handles:
//!
//! - Gemini CLI inside a container dials `host.docker.internal` instead of
//!   127.0.0.1 unless `REMOTE_CONTAINERS` is set; it is always set (outside
//!   a container it changes nothing).
//! - Qwen Code auto-approves edits (no diff opens) unless its approval mode
//!   is `default`, and its background memory agent would eat scripted tool
//!   calls: the settings set `tools.approvalMode: "default"` and turn the
//!   `memory.*` switches off.
//!
//! Qwen Code needs Node 22 (npm's `node@22`, installed beside the CLIs), and
//! both run with it first on `PATH`: the CLIs' `#!/usr/bin/env node` then
//! finds it, and Gemini CLI does not depend on the machine's Node either.
//!
//! The binaries are the pinned npm packages `@google/gemini-cli` and
//! `@qwen-code/qwen-code`, found through `CCBRIDGE_GEMINI_BIN` /
//! `CCBRIDGE_QWEN_BIN` or in [`crate::e2e_dir`]; a missing binary (or Node
//! 22) is a hard failure that says how to install it, never a skip.

use crate::sandbox::{checked_once, write_under, SandboxDir};
use crate::tmux::{StartOptions, Timeout, Tmux};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The Gemini CLI version these tests are written against.
pub const GEMINI_CLI_VERSION: &str = "0.61.0";

/// The Qwen Code version these tests are written against.
pub const QWEN_CODE_VERSION: &str = "0.24.4";

/// The input box's placeholder, shown (by both CLIs) when the prompt is
/// ready and empty.
pub const PROMPT_READY: &str = "Type your message";

/// How long after the last typed character [`AgentCli::submit`] presses
/// Enter, at least. Gemini CLI takes an Enter that comes within 30 ms of
/// a typed character (its `FAST_RETURN_TIMEOUT`, there so that a pasted
/// line break is not a submission) for Shift+Enter: a new line in the
/// input box, nothing submitted. Counted from when the screen showed the
/// text, so from after the CLI read it.
pub const ENTER_GAP: Duration = Duration::from_millis(100);

/// A made-up API key; the mocks accept anything.
pub const API_KEY: &str = "test-key";

/// The model name Qwen Code is configured with.
pub const QWEN_MODEL: &str = "mock-model";

/// Which CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    Gemini,
    Qwen,
}

impl Agent {
    /// How the CLI calls itself.
    pub fn display_name(self) -> &'static str {
        match self {
            Agent::Gemini => "Gemini CLI",
            Agent::Qwen => "Qwen Code",
        }
    }

    /// The pinned version.
    pub fn version(self) -> &'static str {
        match self {
            Agent::Gemini => GEMINI_CLI_VERSION,
            Agent::Qwen => QWEN_CODE_VERSION,
        }
    }

    /// The npm package.
    pub fn package(self) -> &'static str {
        match self {
            Agent::Gemini => "@google/gemini-cli",
            Agent::Qwen => "@qwen-code/qwen-code",
        }
    }

    fn bin_name(self) -> &'static str {
        match self {
            Agent::Gemini => "gemini",
            Agent::Qwen => "qwen",
        }
    }

    /// The variable that overrides where the binary is.
    pub fn bin_env(self) -> &'static str {
        match self {
            Agent::Gemini => "CCBRIDGE_GEMINI_BIN",
            Agent::Qwen => "CCBRIDGE_QWEN_BIN",
        }
    }

    /// The variable naming the companion's port (Gemini CLI:
    /// `GEMINI_CLI_IDE_SERVER_PORT`, a tie-break; Qwen Code:
    /// `QWEN_CODE_IDE_SERVER_PORT`, read first).
    pub fn port_env(self) -> &'static str {
        match self {
            Agent::Gemini => "GEMINI_CLI_IDE_SERVER_PORT",
            Agent::Qwen => "QWEN_CODE_IDE_SERVER_PORT",
        }
    }

    /// The variable naming the companion's workspace folders.
    pub fn workspace_env(self) -> &'static str {
        match self {
            Agent::Gemini => "GEMINI_CLI_IDE_WORKSPACE_PATH",
            Agent::Qwen => "QWEN_CODE_IDE_WORKSPACE_PATH",
        }
    }

    /// How to install the pinned CLI where the harness looks for it.
    pub fn install_hint(self) -> String {
        format!(
            "install the pinned {name}: `scripts/test` does it (from tests/e2e/package-lock.json), or\n    \
             cp tests/e2e/package.json tests/e2e/package-lock.json {dir}/ && (cd {dir} && npm ci)\n\
             or point {env} at an existing `{bin}` {version} (it runs with Node 22 from {dir})",
            name = self.display_name(),
            dir = crate::e2e_dir().display(),
            env = self.bin_env(),
            bin = self.bin_name(),
            version = self.version(),
        )
    }

    /// `$CCBRIDGE_{GEMINI,QWEN}_BIN`, else `node_modules/.bin/{gemini,qwen}`
    /// in [`crate::e2e_dir`], checked to be the pinned version.
    pub fn try_bin(self) -> Result<PathBuf, String> {
        let (path, source) = match std::env::var_os(self.bin_env()).filter(|v| !v.is_empty()) {
            Some(p) => (PathBuf::from(p), self.bin_env()),
            None => (
                crate::e2e_dir()
                    .join("node_modules/.bin")
                    .join(self.bin_name()),
                "the default location",
            ),
        };
        if !path.is_file() {
            return Err(format!(
                "{} was not found at {} ({source}); {}",
                self.display_name(),
                path.display(),
                self.install_hint()
            ));
        }
        check_version(self, &path)?;
        Ok(path)
    }

    /// Like [`Agent::try_bin`], panicking with the install instructions.
    pub fn bin(self) -> PathBuf {
        self.try_bin().unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Node 22 from the e2e packages (npm's `node@22`):
/// `node_modules/.bin/node` in [`crate::e2e_dir`], checked to be v22.
pub fn try_node22() -> Result<PathBuf, String> {
    static CHECKED: std::sync::Mutex<Option<Result<PathBuf, String>>> = std::sync::Mutex::new(None);
    let mut checked = CHECKED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = &*checked {
        return r.clone();
    }
    let link = crate::e2e_dir().join("node_modules/.bin/node");
    let hint = format!(
        "Qwen Code needs Node 22, npm's `node` package pinned in tests/e2e/package.json: \
         `scripts/test` installs it into {}",
        crate::e2e_dir().display()
    );
    let result = match std::process::Command::new(&link).arg("--version").output() {
        Ok(out) if String::from_utf8_lossy(&out.stdout).starts_with("v22.") => {
            // The real file, so its directory holds nothing but `node`.
            Ok(link.canonicalize().unwrap_or(link))
        }
        Ok(out) => Err(format!(
            "{} is {:?}, not Node 22; {hint}",
            link.display(),
            String::from_utf8_lossy(&out.stdout).trim()
        )),
        Err(e) => Err(format!("cannot run {}: {e}; {hint}", link.display())),
    };
    *checked = Some(result.clone());
    result
}

/// Like [`try_node22`], panicking with the install instructions.
pub fn node22() -> PathBuf {
    try_node22().unwrap_or_else(|e| panic!("{e}"))
}

/// `PATH` for the CLIs: Node 22's directory, then the test's own `PATH`
/// (the CLIs run `ps`, `git`, ...).
pub(crate) fn agent_path(node: &Path) -> String {
    let inherited = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    match node.parent() {
        Some(dir) => format!("{}:{inherited}", dir.display()),
        None => inherited,
    }
}

/// The scenarios encode the behaviour of one CLI version; another one is a
/// setup error, reported as such. Run once per binary and process, with
/// Node 22 and a throwaway `HOME` (Gemini CLI writes `~/.gemini` even for
/// `--version`).
fn check_version(agent: Agent, path: &Path) -> Result<(), String> {
    checked_once(path, || {
        let run = || -> Result<String, String> {
            let node = try_node22()?;
            let home = tempfile::Builder::new()
                .prefix("ccbridge-version-")
                .tempdir()
                .map_err(|e| e.to_string())?;
            let out = std::process::Command::new(path)
                .arg("--version")
                .env_clear()
                .env("PATH", agent_path(&node))
                .env("HOME", home.path())
                .env("TMPDIR", home.path())
                .output()
                .map_err(|e| format!("cannot run {} --version: {e}", path.display()))?;
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        match run() {
            Ok(v) if v.split_whitespace().next() == Some(agent.version()) => Ok(()),
            Ok(v) => Err(format!(
                "{} reports version {v:?}, the tests need {}; {}",
                path.display(),
                agent.version(),
                agent.install_hint()
            )),
            Err(e) => Err(format!("{e}; {}", agent.install_hint())),
        }
    })
}

/// A temporary `HOME`, `TMPDIR` and workspace for one CLI.
pub struct Sandbox {
    dir: SandboxDir,
    agent: Agent,
    home: PathBuf,
    tmp: PathBuf,
    workspace: PathBuf,
}

impl Sandbox {
    /// Creates the directories (the settings are written at start).
    pub fn new(agent: Agent) -> std::io::Result<Sandbox> {
        let dir = SandboxDir::new(
            &format!("ccbridge-{}-", agent.bin_name()),
            &["home", "tmp", "work"],
        )?;
        Ok(Sandbox {
            agent,
            home: dir.join("home"),
            tmp: dir.join("tmp"),
            workspace: dir.join("work"),
            dir,
        })
    }

    pub fn agent(&self) -> Agent {
        self.agent
    }

    /// The sandbox's root directory (holds the CLI's stderr logs too).
    pub fn root(&self) -> &Path {
        self.dir.root()
    }

    /// The CLI's `HOME`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The CLI's `TMPDIR` (`os.tmpdir()`).
    pub fn tmp(&self) -> &Path {
        &self.tmp
    }

    /// The directory the CLI runs in.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The user settings file: `~/.gemini/settings.json` or
    /// `~/.qwen/settings.json`.
    pub fn settings_path(&self) -> PathBuf {
        match self.agent {
            Agent::Gemini => self.home.join(".gemini/settings.json"),
            Agent::Qwen => self.home.join(".qwen/settings.json"),
        }
    }

    /// Where the CLI looks for the companion's discovery files:
    /// `$TMPDIR/gemini/ide/` (Gemini CLI) or `$HOME/.qwen/ide/` (Qwen Code).
    /// Not created here.
    pub fn discovery_dir(&self) -> PathBuf {
        match self.agent {
            Agent::Gemini => self.tmp.join("gemini/ide"),
            Agent::Qwen => self.home.join(".qwen/ide"),
        }
    }

    /// Writes `rel` under the workspace; returns its absolute path.
    pub fn write_file(&self, rel: &str, contents: &str) -> std::io::Result<PathBuf> {
        write_under(&self.workspace, rel, contents)
    }
}

/// How to start the CLI.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    pub agent: Agent,
    pub bin: PathBuf,
    /// Node 22; its directory goes first on `PATH`.
    pub node: PathBuf,
    /// The mock model's URL (`http://127.0.0.1:<port>`).
    pub model_url: String,
    /// The user settings, written to [`Sandbox::settings_path`] at start;
    /// [`AgentOptions::default_settings`] until a test changes them.
    pub settings: Value,
    /// More environment, after (and overriding) the harness's own.
    pub extra_env: Vec<(String, String)>,
    pub extra_args: Vec<String>,
    pub width: u16,
    pub height: u16,
}

impl AgentOptions {
    /// The pinned `agent` with Node 22 against the mock model at
    /// `model_url`, default settings, 160×50. Panics with the install
    /// instructions when the CLI or Node 22 is missing.
    pub fn new(agent: Agent, model_url: impl Into<String>) -> Self {
        let model_url = model_url.into();
        AgentOptions {
            agent,
            bin: agent.bin(),
            node: node22(),
            settings: Self::default_settings(agent, &model_url),
            model_url,
            extra_env: Vec::new(),
            extra_args: Vec::new(),
            width: 160,
            height: 50,
        }
    }

    /// The settings that start the CLI at the prompt: API-key authentication already
    /// chosen, folder trust off, IDE mode on with its nudge seen, no
    /// telemetry, update checks or tips; for Qwen Code also the mock as its
    /// OpenAI provider, approval mode `default`, the memory agent off and
    /// no ripgrep (npm installed it without its exec bit).
    pub fn default_settings(agent: Agent, model_url: &str) -> Value {
        match agent {
            Agent::Gemini => json!({
                "security": {"auth": {"selectedType": "gemini-api-key"},
                             "folderTrust": {"enabled": false}},
                "ide": {"enabled": true, "hasSeenNudge": true},
                "privacy": {"usageStatisticsEnabled": false},
                "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                "ui": {"theme": "Default", "hideTips": true},
            }),
            Agent::Qwen => json!({
                "modelProviders": {"openai": [{
                    "id": QWEN_MODEL, "name": QWEN_MODEL,
                    "baseUrl": format!("{model_url}/v1"), "envKey": "OPENAI_API_KEY",
                }]},
                "security": {"auth": {"selectedType": "openai"},
                             "folderTrust": {"enabled": false}},
                "model": {"name": QWEN_MODEL},
                "ide": {"enabled": true, "hasSeenNudge": true},
                "tools": {"approvalMode": "default", "useRipgrep": false},
                "memory": {"enableManagedAutoMemory": false, "enableManagedAutoDream": false,
                           "enableAutoSkill": false},
                "privacy": {"usageStatisticsEnabled": false},
                "general": {"enableAutoUpdate": false},
                "ui": {"hideTips": true, "enableFollowupSuggestions": false},
            }),
        }
    }

    /// Adds (or overrides) an environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra_env.push((key.into(), value.into()));
        self
    }

    /// Sets the agent's companion port variable ([`Agent::port_env`]).
    pub fn ide_port(self, port: u16) -> Self {
        let key = self.agent.port_env();
        self.env(key, port.to_string())
    }

    /// The environment the CLI starts with (before `extra_env`); nothing
    /// else from the test's environment reaches it.
    fn base_env(&self, sandbox: &Sandbox) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = vec![
            ("HOME".into(), sandbox.home().display().to_string()),
            ("TMPDIR".into(), sandbox.tmp().display().to_string()),
            ("PATH".into(), agent_path(&self.node)),
            ("TERM".into(), "xterm-256color".into()),
            ("LANG".into(), "C.UTF-8".into()),
        ];
        match self.agent {
            Agent::Gemini => env.extend([
                ("GEMINI_API_KEY".into(), API_KEY.into()),
                ("GOOGLE_GEMINI_BASE_URL".into(), self.model_url.clone()),
                // Inside a container the CLI dials host.docker.internal
                // for the companion unless this is set.
                ("REMOTE_CONTAINERS".into(), "1".into()),
            ]),
            Agent::Qwen => env.push(("OPENAI_API_KEY".into(), API_KEY.into())),
        }
        env
    }
}

/// A running interactive CLI in tmux.
pub struct AgentCli {
    pub tmux: Tmux,
    agent: Agent,
    pid: u32,
    stderr_log: PathBuf,
}

static SESSION_COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl AgentCli {
    /// Writes the settings and starts the CLI in the sandbox's workspace,
    /// its stderr going to `<sandbox>/<cli>-stderr-<n>.log`.
    pub fn start(sandbox: &Sandbox, opts: &AgentOptions) -> std::io::Result<AgentCli> {
        assert_eq!(
            sandbox.agent(),
            opts.agent,
            "AgentCli::start: the sandbox was made for another CLI"
        );
        let settings = sandbox.settings_path();
        if let Some(dir) = settings.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&settings, serde_json::to_string_pretty(&opts.settings)?)?;
        if opts.agent == Agent::Gemini {
            // With TERM_PROGRAM=vscode a "configure your terminal" dialog
            // would swallow the input; harmless otherwise.
            std::fs::write(
                sandbox.home().join(".gemini/state.json"),
                r#"{"terminalSetupPromptShown": true}"#,
            )?;
        }
        let n = SESSION_COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let stderr_log = sandbox
            .root()
            .join(format!("{}-stderr-{n}.log", opts.agent.bin_name()));
        let mut env = opts.base_env(sandbox);
        for (k, v) in &opts.extra_env {
            env.retain(|(key, _)| key != k);
            env.push((k.clone(), v.clone()));
        }
        // The environment is set by `env -i`, not by tmux: tmux puts its
        // own PATH (the client's) and TERM over the session's, and adds
        // TMUX, TERM_PROGRAM=tmux, ... `exec` all the way: the pane's
        // process is the CLI itself.
        let mut cmd: Vec<String> = vec![
            "/bin/sh".into(),
            "-c".into(),
            r#"log=$1; shift; exec "$@" 2>>"$log""#.into(),
            "sh".into(),
            stderr_log.display().to_string(),
            "env".into(),
            "-i".into(),
        ];
        cmd.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        cmd.push(opts.bin.display().to_string());
        cmd.extend(opts.extra_args.iter().cloned());
        let start = StartOptions {
            cmd,
            env: Vec::new(),
            cwd: sandbox.workspace().to_path_buf(),
            width: opts.width,
            height: opts.height,
        };
        let tmux = Tmux::start(&start)?;
        let pid = tmux.pane_pid()?;
        Ok(AgentCli {
            tmux,
            agent: opts.agent,
            pid,
            stderr_log,
        })
    }

    pub fn agent(&self) -> Agent {
        self.agent
    }

    /// The pane's process: the CLI (which may relaunch itself as a child).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// What the CLI wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_log).unwrap_or_default()
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        self.tmux.capture()
    }

    /// The screen including scrollback.
    pub fn transcript(&self) -> String {
        self.tmux.capture_all()
    }

    /// Waits until the empty input box ([`PROMPT_READY`]) is on the
    /// visible screen.
    pub fn wait_prompt(&self, timeout: Duration) -> Result<(), Timeout> {
        self.tmux
            .wait_for(&format!("the prompt ({PROMPT_READY:?})"), timeout, |_| {
                self.tmux.capture().contains(PROMPT_READY)
            })
            .map(drop)
    }

    /// The input box's first line: the last line of the visible screen
    /// that starts with `>` (both CLIs draw their prompt so; the echoes of
    /// earlier prompts in the history are above it). Empty when there is
    /// none (a confirmation dialog instead).
    pub fn input_line(&self) -> String {
        input_line(&self.screen()).to_string()
    }

    /// Types `text` literally and waits until the input box shows it (keep
    /// it shorter than a line of the input box, which wraps). The input box
    /// itself is looked at: the same text typed before is still on screen,
    /// in the history.
    pub fn type_text(&self, text: &str, timeout: Duration) -> Result<(), Timeout> {
        self.tmux
            .send_text(text)
            .map_err(|e| self.key_error(text, e))?;
        self.tmux
            .wait_for(&format!("{text:?} in the input box"), timeout, |_| {
                self.input_line().contains(text)
            })
            .map(drop)
    }

    /// Waits for the prompt, types `text`, waits until it is shown, then
    /// presses Enter, at least [`ENTER_GAP`] after the screen showed the
    /// text. (A line typed with `send-keys -l` reaches the CLI intact; a
    /// `?` sent as a key name at the end of a Gemini prompt was seen to get
    /// lost.)
    pub fn submit(&self, text: &str, timeout: Duration) -> Result<(), Timeout> {
        self.wait_prompt(timeout)?;
        self.type_text(text, timeout)?;
        // Not a wait for something to happen: the CLI needs this gap (see
        // ENTER_GAP), and it has read the text, which it shows.
        std::thread::sleep(ENTER_GAP);
        self.press(&["Enter"])
    }

    /// Sends key names (`Enter`, `Escape`, `BTab`, `Down`, `1`, ...).
    pub fn press(&self, keys: &[&str]) -> Result<(), Timeout> {
        self.tmux
            .send_keys(keys)
            .map_err(|e| self.key_error(&keys.join(" "), e))
    }

    /// Waits until the screen (scrollback included) contains `needle`.
    /// Match text that is unique to the step being waited for (a marker
    /// from the mock's reply): an earlier turn's text stays in the
    /// scrollback.
    pub fn wait_for_text(&self, needle: &str, timeout: Duration) -> Result<String, Timeout> {
        self.tmux.wait_for_text(needle, timeout)
    }

    /// Waits until the *visible* screen contains `needle`.
    pub fn wait_for_visible(&self, needle: &str, timeout: Duration) -> Result<String, Timeout> {
        self.tmux.wait_for(
            &format!("{needle:?} on the visible screen"),
            timeout,
            |_| self.tmux.capture().contains(needle),
        )?;
        Ok(self.screen())
    }

    /// Failure context: the screen with scrollback and the tail of the
    /// CLI's stderr.
    pub fn context(&self) -> String {
        format!(
            "{} screen:\n{}\n── {} stderr (tail) ──\n{}",
            self.agent.display_name(),
            crate::tail(&self.transcript(), 60),
            self.agent.display_name(),
            crate::tail(&self.stderr(), 40)
        )
    }

    fn key_error(&self, what: &str, e: std::io::Error) -> Timeout {
        Timeout {
            what: format!("sending {what:?}: {e}"),
            waited: Duration::ZERO,
            last_screen: self.screen(),
        }
    }
}

impl Drop for AgentCli {
    /// Ends the CLI and everything it started, and waits for them: Gemini
    /// CLI relaunches itself as a child, and that pair was seen to outlive
    /// the tmux server's SIGHUP; and both CLIs write into `HOME` while
    /// exiting, which must be over before the sandbox is removed. Nothing
    /// is ended when artifacts are kept (the tmux session stays too).
    fn drop(&mut self) {
        if !crate::keep_artifacts() {
            end_session(self.pid);
        }
    }
}

/// See [`AgentCli::input_line`].
fn input_line(screen: &str) -> &str {
    screen
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('>'))
        .map_or("", str::trim)
}

/// The live (not zombie) processes of session `sid`: the pane's process
/// is a session leader, and all the CLI starts stays in its session.
fn session_members(sid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // After `(comm)`: state ppid pgrp session ...
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            f.first().is_some_and(|s| *s != "Z") && f.get(3) == Some(&sid.to_string().as_str())
        })
        .collect()
}

/// SIGTERM to the session's processes, SIGKILL to those left after 3 s;
/// returns once none is left (or 5 s have passed).
pub(crate) fn end_session(sid: u32) {
    for (signal, wait) in [("-TERM", 3), ("-KILL", 2)] {
        let pids = session_members(sid);
        if pids.is_empty() {
            return;
        }
        let _ = std::process::Command::new("kill")
            .arg(signal)
            .args(pids.iter().map(u32::to_string))
            .stderr(std::process::Stdio::null())
            .status();
        let gone = crate::poll_until(Duration::from_secs(wait), Duration::from_millis(50), || {
            session_members(sid).is_empty().then_some(())
        });
        if gone.is_some() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::input_line;

    #[test]
    fn the_input_box_is_the_last_line_starting_with_a_prompt_sign() {
        // Qwen Code's layout: echoes in a scroll box, then the input box.
        let qwen = "  > /ide status (check 1)\n  ●︎ ✓ Connected to X\n\
                    ───\n>   /ide status (check 2)\n───\n  ➜ work · mock-model\n";
        assert_eq!(input_line(qwen), ">   /ide status (check 2)");
        // Gemini CLI's, with a completion menu under the input box.
        let gemini = " > /ide status\nℹ 🟢 Connected to X\n ───\n > /ide sta\n status   Check\n";
        assert_eq!(input_line(gemini), "> /ide sta");
        assert_eq!(input_line("│ ● 1. Allow once\n"), "");
    }
}
