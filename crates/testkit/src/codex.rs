//! Runs the real Codex CLI (npm `@openai/codex`, pinned) in a sandbox, in
//! tmux, against [`crate::mock_responses`].
//!
//! Why: ccbridge's Codex provider serves a program we do not control, whose
//! IDE context (`/ide`) is fetched from a per-user socket only while a
//! prompt is sent to the model; its end-to-end test runs the pinned CLI
//! interactively and fully offline:
//!
//! ```text
//!  mock_responses ◀─HTTP/SSE─ codex (in tmux) ─IPC socket─▶ ccbridge (hosting or joined)
//! ```
//!
//! Codex keeps everything under `CODEX_HOME` (here `<sandbox>/home/.codex`)
//! and looks for its IDE socket there and under `TMPDIR`, so each run gets
//! a fresh [`CodexSandbox`]: a private `HOME`, `TMPDIR`, `CODEX_HOME` and
//! workspace, and a `config.toml` that starts straight at the prompt: the
//! mock as a custom model provider (`wire_api = "responses"`), the
//! workspace trusted, no update check. The CLI runs with `--no-daemon`:
//! 0.171.0 otherwise starts a shared background app server that outlives
//! the terminal.
//!
//! The binary is `node_modules/.bin/codex` in [`crate::e2e_dir`] (a Node
//! launcher for the native binary, run with Node 22 first on `PATH`), or
//! `CCBRIDGE_CODEX_BIN`; a missing or other version is a hard failure that
//! says how to install it, never a skip.

use crate::agents::{agent_path, end_session, try_node22};
use crate::sandbox::{checked_once, write_under, SandboxDir};
use crate::tmux::{StartOptions, Timeout, Tmux};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The Codex CLI version these tests are written against.
pub const CODEX_VERSION: &str = "0.171.0";

/// The input box's placeholder when the prompt is ready and empty.
pub const PROMPT_READY: &str = "Ask Codex to do anything";

/// The model name in the config.
pub const MODEL: &str = "mock-model";

const BIN_ENV: &str = "CCBRIDGE_CODEX_BIN";

fn install_hint() -> String {
    format!(
        "install the pinned Codex CLI: `scripts/test` does it (from tests/e2e/package-lock.json), or\n    \
         cp tests/e2e/package.json tests/e2e/package-lock.json {dir}/ && (cd {dir} && npm ci)\n\
         or point {BIN_ENV} at an existing `codex` {CODEX_VERSION}",
        dir = crate::e2e_dir().display(),
    )
}

/// `$CCBRIDGE_CODEX_BIN`, else `node_modules/.bin/codex` in
/// [`crate::e2e_dir`], checked to be [`CODEX_VERSION`].
pub fn try_bin() -> Result<PathBuf, String> {
    let path = match std::env::var_os(BIN_ENV).filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => crate::e2e_dir().join("node_modules/.bin/codex"),
    };
    if !path.is_file() {
        return Err(format!(
            "Codex CLI was not found at {}; {}",
            path.display(),
            install_hint()
        ));
    }
    let node = try_node22()?;
    checked_once(&path, || {
        let home = tempfile::Builder::new()
            .prefix("ccbridge-version-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let out = std::process::Command::new(&path)
            .arg("--version")
            .env_clear()
            .env("PATH", agent_path(&node))
            .env("HOME", home.path())
            .env("CODEX_HOME", home.path())
            .env("TMPDIR", home.path())
            .output()
            .map_err(|e| {
                format!(
                    "cannot run {} --version: {e}; {}",
                    path.display(),
                    install_hint()
                )
            })?;
        let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if v.split_whitespace().nth(1) == Some(CODEX_VERSION) {
            Ok(())
        } else {
            Err(format!(
                "{} reports version {v:?}, the tests need {CODEX_VERSION}; {}",
                path.display(),
                install_hint()
            ))
        }
    })?;
    Ok(path)
}

/// A temporary `HOME` (with `CODEX_HOME` in it), `TMPDIR` and workspace.
pub struct CodexSandbox {
    dir: SandboxDir,
}

impl CodexSandbox {
    pub fn new() -> std::io::Result<CodexSandbox> {
        let dir = SandboxDir::new("ccbridge-codex-", &["home/.codex", "tmp", "work"])?;
        Ok(CodexSandbox { dir })
    }

    /// The sandbox's root directory (logs go there).
    pub fn root(&self) -> &Path {
        self.dir.root()
    }

    pub fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    /// `CODEX_HOME`.
    pub fn codex_home(&self) -> PathBuf {
        self.dir.join("home/.codex")
    }

    /// `TMPDIR`.
    pub fn tmp(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// The directory the CLI runs in.
    pub fn workspace(&self) -> PathBuf {
        self.dir.join("work")
    }

    /// The environment that puts ccbridge (or Codex) on this sandbox's
    /// sockets: `HOME`, `TMPDIR`, `CODEX_HOME`.
    pub fn socket_env(&self) -> Vec<(String, String)> {
        vec![
            ("HOME".into(), self.home().display().to_string()),
            ("TMPDIR".into(), self.tmp().display().to_string()),
            ("CODEX_HOME".into(), self.codex_home().display().to_string()),
        ]
    }

    /// Writes `rel` under the workspace; returns its absolute path.
    pub fn write_file(&self, rel: &str, contents: &str) -> std::io::Result<PathBuf> {
        write_under(&self.workspace(), rel, contents)
    }

    /// The `config.toml`: the mock at `model_url` as the model provider,
    /// the workspace trusted, no update check.
    pub fn config(&self, model_url: &str) -> String {
        format!(
            "model = \"{MODEL}\"\n\
             model_provider = \"mock\"\n\
             check_for_update_on_startup = false\n\
             \n\
             [model_providers.mock]\n\
             name = \"Mock\"\n\
             base_url = \"{model_url}/v1\"\n\
             wire_api = \"responses\"\n\
             env_key = \"OPENAI_API_KEY\"\n\
             \n\
             [projects.\"{ws}\"]\n\
             trust_level = \"trusted\"\n",
            ws = self.workspace().display(),
        )
    }
}

/// A running interactive Codex CLI in tmux.
pub struct CodexCli {
    pub tmux: Tmux,
    pid: u32,
    stderr_log: PathBuf,
}

impl CodexCli {
    /// Writes the config and starts `bin` (from [`try_bin`]) in the
    /// workspace, in `sandbox`'s environment plus `extra_env`.
    pub fn start(
        sandbox: &CodexSandbox,
        bin: &Path,
        model_url: &str,
        extra_env: &[(String, String)],
    ) -> std::io::Result<CodexCli> {
        let node = try_node22().map_err(std::io::Error::other)?;
        std::fs::write(
            sandbox.codex_home().join("config.toml"),
            sandbox.config(model_url),
        )?;
        let stderr_log = sandbox.root().join("codex-stderr.log");
        let mut env = sandbox.socket_env();
        env.extend([
            ("PATH".into(), agent_path(&node)),
            ("TERM".into(), "xterm-256color".into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("OPENAI_API_KEY".into(), "test-key".into()),
        ]);
        for (k, v) in extra_env {
            env.retain(|(key, _)| key != k);
            env.push((k.clone(), v.clone()));
        }
        // As in `agents`: the environment set by `env -i`, not tmux.
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
        cmd.push(bin.display().to_string());
        cmd.push("--no-daemon".into());
        let tmux = Tmux::start(&StartOptions {
            cmd,
            env: Vec::new(),
            cwd: sandbox.workspace(),
            width: 160,
            height: 50,
        })?;
        let pid = tmux.pane_pid()?;
        Ok(CodexCli {
            tmux,
            pid,
            stderr_log,
        })
    }

    /// The screen including scrollback.
    pub fn transcript(&self) -> String {
        self.tmux.capture_all()
    }

    /// Waits until the empty input box is on the visible screen.
    pub fn wait_prompt(&self, timeout: Duration) -> Result<(), Timeout> {
        self.tmux
            .wait_for(&format!("the prompt ({PROMPT_READY:?})"), timeout, |_| {
                self.tmux.capture().contains(PROMPT_READY)
            })
            .map(drop)
    }

    /// Waits for the prompt, types `text` (literally), waits until the
    /// input box shows it, then presses Enter.
    pub fn submit(&self, text: &str, timeout: Duration) -> Result<(), Timeout> {
        self.wait_prompt(timeout)?;
        let err = |e: std::io::Error| Timeout {
            what: format!("typing {text:?}: {e}"),
            waited: Duration::ZERO,
            last_screen: self.tmux.capture(),
        };
        self.tmux.send_text(text).map_err(err)?;
        self.tmux
            .wait_for(&format!("{text:?} in the input box"), timeout, |_| {
                self.tmux
                    .capture()
                    .lines()
                    .rev()
                    .find(|l| l.trim_start().starts_with('›'))
                    .is_some_and(|l| l.contains(text))
            })?;
        self.tmux.send_keys(&["Enter"]).map_err(err)
    }

    /// Waits until the screen (scrollback included) contains `needle`.
    pub fn wait_for_text(&self, needle: &str, timeout: Duration) -> Result<String, Timeout> {
        self.tmux.wait_for_text(needle, timeout)
    }

    /// The screen and stderr, for failure messages.
    pub fn context(&self) -> String {
        format!(
            "Codex CLI screen:\n{}\n── Codex CLI stderr (tail) ──\n{}",
            crate::tail(&self.transcript(), 60),
            crate::tail(
                &std::fs::read_to_string(&self.stderr_log).unwrap_or_default(),
                40
            )
        )
    }
}

impl Drop for CodexCli {
    /// Ends the CLI and whatever it started (unless artifacts are kept).
    fn drop(&mut self) {
        if !crate::keep_artifacts() {
            end_session(self.pid);
        }
    }
}
