//! Harness for end-to-end tests against the **real** Claude Code CLI.
//!
//! ccbridge exists to be driven by a program we do not control: the Claude Code
//! CLI. Unit tests against our own reading of its protocol can only confirm
//! that reading, so the tests in `crates/ccbridge/tests/it/real_client.rs` run the
//! pinned CLI itself, interactively, fully offline:
//!
//! ```text
//!  mock_anthropic ◀─HTTP/SSE─ claude (in tmux) ─WebSocket─▶ ccbridge serve --stdio ◀─stdio─ editor
//!       (scripted model)        (real CLI)                     (under test)          (scripted editor)
//! ```
//!
//! - [`mock_anthropic`]: scripted Messages API, records what the model was sent
//!   (a format of the [`mock_model`] every agent's model API shares);
//! - [`tmux`]: runs the CLI in a real terminal, types into it and reads the screen;
//! - [`claude`]: a sandboxed `HOME`/`CLAUDE_CONFIG_DIR` so no first-run screen appears;
//! - [`editor`]: a scripted editor speaking the stdio editor protocol to ccbridge;
//! - [`nvim`]: a real headless Neovim, driven through its msgpack-RPC API;
//!   [`vim`] and [`emacs`]: a real Vim and Emacs in tmux, typed into, their
//!   state read over a channel (Vim) or `emacsclient` (Emacs);
//! - [`vscode`]: a real VS Code (code-server) with the extension installed,
//!   its page driven by Chromium ([`browser`]);
//! - [`agents`], [`mock_gemini`], [`mock_openai`]: the same for Gemini CLI
//!   and Qwen Code (their sandboxes, and their model APIs in the
//!   [`mock_model`] formats), for the IDE companion server;
//! - [`sandbox`], [`stub_http`]: what the CLIs' sandboxes and the model
//!   mocks share;
//! - [`alone`]: a test that needs its process to itself (its environment,
//!   umask or memory) run again in a process of its own.
//!
//! Everything waits on conditions with bounded timeouts ([`poll_until`],
//! [`wait_on`]); nothing
//! sleeps for a fixed time hoping something happened.

pub mod agents;
pub mod alone;
pub mod browser;
pub mod claude;
pub mod codex;
pub mod container;
pub mod editor;
pub mod emacs;
pub mod http;
pub mod mock_anthropic;
pub mod mock_gemini;
pub mod mock_model;
pub mod mock_openai;
pub mod mock_responses;
pub mod mutations;
pub mod nvim;
pub mod remote;
pub mod sandbox;
pub mod serve;
pub mod stub_http;
pub mod tmux;
pub mod vim;
pub mod vscode;

/// The `hello.py` the end-to-end scenarios select in and edit.
pub const HELLO_PY: &str = "def greet(name):\n    message = \"hello \" + name\n    print(message)\n    return message\n\n\ngreet(\"world\")\n";

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Waits on `changed` until `check` (run at once and after every
/// notification) returns `Some`, or `timeout` has passed; then returns the
/// guard, for the caller's error message.
pub fn wait_on<'a, T, R>(
    lock: &'a Mutex<T>,
    changed: &Condvar,
    timeout: Duration,
    mut check: impl FnMut(&mut T) -> Option<R>,
) -> Result<R, MutexGuard<'a, T>> {
    let deadline = Instant::now() + timeout;
    let mut guard = lock.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some(v) = check(&mut guard) {
            return Ok(v);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(guard);
        }
        guard = changed
            .wait_timeout(guard, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}

/// Polls `f` every `interval` until it returns `Some`, or `timeout` has passed
/// (then one last try). Returns `None` on timeout.
pub fn poll_until<T>(
    timeout: Duration,
    interval: Duration,
    mut f: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(interval.min(deadline - now));
    }
}

/// The environment that keeps in `dir` what a ccbridge a test spawns writes
/// outside its workspace: its lock file (`CLAUDE_CONFIG_DIR`), Qwen Code's
/// and Gemini CLI's discovery files (`QWEN_HOME`, `TMPDIR`), the Codex
/// socket (`CODEX_HOME`, `TMPDIR`) and anything under `HOME`. A test that
/// kills ccbridge then leaves nothing in the user's own folders.
pub fn confined_env(dir: &std::path::Path) -> Vec<(String, String)> {
    let at = |sub: &str| dir.join(sub).display().to_string();
    vec![
        ("HOME".into(), dir.display().to_string()),
        ("TMPDIR".into(), dir.display().to_string()),
        ("CLAUDE_CONFIG_DIR".into(), dir.display().to_string()),
        ("QWEN_HOME".into(), at(".qwen")),
        ("CODEX_HOME".into(), at(".codex")),
    ]
}

/// [`confined_env`] on a [`std::process::Command`].
pub trait Confined {
    /// Keeps what the spawned ccbridge writes outside its workspace in `dir`.
    fn confined_to(&mut self, dir: &std::path::Path) -> &mut Self;
}

impl Confined for std::process::Command {
    fn confined_to(&mut self, dir: &std::path::Path) -> &mut Self {
        self.envs(confined_env(dir))
    }
}

/// The first lock file in `dir`, once there is one (looked for every 10 ms
/// until `timeout`): the one a ccbridge just started writes.
pub fn wait_lock_file(dir: &std::path::Path, timeout: Duration) -> Option<std::path::PathBuf> {
    poll_until(timeout, Duration::from_millis(10), || {
        lock_files(dir).into_iter().next()
    })
}

/// The `*.lock` files in `dir` (an IDE lock directory), in directory order;
/// none when `dir` cannot be read.
pub fn lock_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "lock"))
                .collect()
        })
        .unwrap_or_default()
}

/// Where the test command installed the npm packages the tests run (the
/// pinned Claude Code CLI, playwright-core): `CCBRIDGE_E2E_DIR`, else `e2e/`
/// in the test command's cache (`$CCBRIDGE_CACHE`, else
/// `$XDG_CACHE_HOME/ccbridge` or `~/.cache/ccbridge`, as `scripts/test`
/// chooses it), so `cargo test` after one `scripts/test` finds them.
pub fn e2e_dir() -> std::path::PathBuf {
    match std::env::var_os("CCBRIDGE_E2E_DIR").filter(|v| !v.is_empty()) {
        Some(d) => d.into(),
        None => cache_dir().join("e2e"),
    }
}

/// The test command's cache: `$CCBRIDGE_CACHE`, else
/// `$XDG_CACHE_HOME/ccbridge` or `~/.cache/ccbridge`.
pub fn cache_dir() -> std::path::PathBuf {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let cache = set("CCBRIDGE_CACHE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            set("XDG_CACHE_HOME")
                .map(std::path::PathBuf::from)
                .or_else(|| set("HOME").map(|h| std::path::Path::new(&h).join(".cache")))
                .map(|c| c.join("ccbridge"))
        });
    cache.unwrap_or_else(|| claude::workspace_root().join(".cache"))
}

/// Keep sandboxes, logs and the tmux socket after the test when
/// `CCBRIDGE_E2E_KEEP=1` (their paths are printed), for post-mortems.
pub fn keep_artifacts() -> bool {
    std::env::var_os("CCBRIDGE_E2E_KEEP").is_some_and(|v| v != "0" && !v.is_empty())
}

/// Creates a temporary directory, kept (and announced on stderr) when
/// [`keep_artifacts`] is set.
pub fn temp_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    let mut dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
    if keep_artifacts() {
        dir.disable_cleanup(true);
        eprintln!("[testkit] keeping {}", dir.path().display());
    }
    Ok(dir)
}

/// Last `n` lines of `text`, for failure messages.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The directory holding `pyright-langserver` of the pinned e2e packages
/// (`node_modules/.bin` in [`e2e_dir`]), for the language-server tests.
/// Panics with how to install it when it is missing.
pub fn pyright_bin_dir() -> std::path::PathBuf {
    e2e_bin_dir("pyright-langserver")
}

/// The directory holding `ruff` (the second Python language server, `ruff
/// server`): the venv the test command installs it into from PyPI, pinned,
/// in [`cache_dir`]. Panics with how to install it when it is missing.
pub fn ruff_bin_dir() -> std::path::PathBuf {
    let venv = cache_dir().join("ruff-venv");
    let dir = venv.join("bin");
    assert!(
        dir.join("ruff").is_file(),
        "ruff is missing from {}: run scripts/test, which installs the pinned PyPI package \
         ruff there (`python3 -m venv {venv} && {venv}/bin/pip install ruff==<the pin in \
         scripts/test>`)",
        dir.display(),
        venv = venv.display()
    );
    dir
}

/// The directory of the pinned test programs' commands, checked to hold
/// `program` (a language server the tests start: `pyright-langserver`,
/// `typescript-language-server`); a missing one fails with how to install it.
pub fn e2e_bin_dir(program: &str) -> std::path::PathBuf {
    let dir = e2e_dir().join("node_modules/.bin");
    assert!(
        dir.join(program).is_file(),
        "{program} is missing from {}: run scripts/test, which installs the pinned \
         test programs (tests/e2e/package.json), or `npm ci` in a copy of tests/e2e and point \
         CCBRIDGE_E2E_DIR at it",
        dir.display()
    );
    dir
}
