//! Drives a program in a real terminal: a tmux session on a private socket.
//!
//! Why: the Claude Code CLI only connects to an IDE in interactive mode
//! (`claude -p` never does), and its interactive UI needs a TTY. tmux gives a
//! real pseudo-terminal of fixed size, `send-keys` to type, and `capture-pane`
//! to read the screen as plain text, which is exactly what a user sees. Each
//! session gets its own server (`tmux -L <unique>`) so tests run in parallel
//! without seeing each other, and the server is killed on drop.
//!
//! The tmux server is started with a cleared environment: the pane sees only
//! the variables given to [`Tmux::start`] (plus `PATH`, `LANG` and tmux's own
//! `TERM`), so nothing from the developer's shell (a real `ANTHROPIC_API_KEY`,
//! `CLAUDECODE`, ...) leaks into the program under test. Panes stay around
//! after their program exits (`remain-on-exit`) so a crash leaves its last
//! screen readable.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often `wait_for` re-captures the pane.
pub const POLL_INTERVAL: Duration = Duration::from_millis(75);

const TMUX: &str = "tmux";
const SESSION: &str = "main";

/// What to run and how.
#[derive(Clone, Debug)]
pub struct StartOptions {
    /// Program and arguments (executed directly, not through a shell).
    pub cmd: Vec<String>,
    /// The pane's environment (on top of `PATH`, `LANG` and `TERM`).
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub width: u16,
    pub height: u16,
}

impl StartOptions {
    /// `cmd` in `cwd`, 200×50, no extra environment.
    pub fn new(cmd: Vec<String>, cwd: impl Into<PathBuf>) -> Self {
        StartOptions {
            cmd,
            env: Vec::new(),
            cwd: cwd.into(),
            width: 200,
            height: 50,
        }
    }
}

/// A condition on the screen did not hold in time.
pub struct Timeout {
    pub what: String,
    pub waited: Duration,
    /// The last captured screen (with scrollback), for the failure message.
    pub last_screen: String,
}

impl std::fmt::Debug for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "timed out after {:.1?} waiting for {}; last screen:\n{}\n{}\n{}",
            self.waited,
            self.what,
            "─".repeat(80),
            self.last_screen.trim_end(),
            "─".repeat(80)
        )
    }
}

impl std::fmt::Display for Timeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

impl std::error::Error for Timeout {}

/// One tmux server with one session and one pane; killed on drop.
pub struct Tmux {
    socket: String,
    /// The server's socket file, removed on drop (tmux leaves it behind).
    socket_path: Option<PathBuf>,
}

fn unique_socket() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "ccbridge-e2e-{}-{}-{nanos:x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

impl Tmux {
    /// Starts a new tmux server and runs `opts.cmd` in its only pane.
    pub fn start(opts: &StartOptions) -> std::io::Result<Tmux> {
        assert!(!opts.cmd.is_empty(), "Tmux::start: empty command");
        let mut tmux = Tmux {
            socket: unique_socket(),
            socket_path: None,
        };
        let mut args: Vec<String> = vec![
            // Global options first, so the new window already has them; the
            // sequence starts the server because new-session needs one.
            "set-option".into(),
            "-g".into(),
            "remain-on-exit".into(),
            "on".into(),
            ";".into(),
            "set-option".into(),
            "-g".into(),
            "history-limit".into(),
            "20000".into(),
            ";".into(),
            // The CLI asks for focus events and nags in the footer without them.
            "set-option".into(),
            "-g".into(),
            "focus-events".into(),
            "on".into(),
            ";".into(),
            "new-session".into(),
            "-d".into(),
            "-s".into(),
            SESSION.into(),
            "-x".into(),
            opts.width.to_string(),
            "-y".into(),
            opts.height.to_string(),
            "-c".into(),
            opts.cwd.display().to_string(),
        ];
        for (k, v) in &opts.env {
            args.push("-e".into());
            args.push(format!("{k}={v}"));
        }
        args.push("--".into());
        args.extend(opts.cmd.iter().cloned());
        let out = tmux.run(&args).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                std::io::Error::new(
                    e.kind(),
                    "tmux is not installed (or not on PATH); the real-client tests need it: \
                     apt-get install tmux",
                )
            } else {
                e
            }
        })?;
        if !out.status.success() {
            return Err(std::io::Error::other(format!(
                "tmux new-session failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        tmux.socket_path = tmux
            .display("#{socket_path}")
            .ok()
            .map(|p| PathBuf::from(p.trim()));
        // Fixed size even though no client is attached.
        tmux.run(["set-option", "-t", SESSION, "window-size", "manual"])?;
        Ok(tmux)
    }

    /// The `-L` socket name (attach with `tmux -L <name> attach` to watch).
    pub fn socket(&self) -> &str {
        &self.socket
    }

    fn command(&self) -> Command {
        let mut c = Command::new(TMUX);
        c.env_clear()
            .env(
                "PATH",
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
            )
            .env("LANG", "C.UTF-8")
            .env("LC_ALL", "C.UTF-8")
            .arg("-u")
            .arg("-f")
            .arg("/dev/null")
            .arg("-L")
            .arg(&self.socket);
        c
    }

    fn run<I, S>(&self, args: I) -> std::io::Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command().args(args).output()
    }

    fn run_ok<I, S>(&self, args: I) -> std::io::Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = self.run(args)?;
        if !out.status.success() {
            return Err(std::io::Error::other(format!(
                "tmux failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Sends key names (`Enter`, `Escape`, `C-c`, `Down`, ...).
    pub fn send_keys(&self, keys: &[&str]) -> std::io::Result<()> {
        let mut args = vec!["send-keys", "-t", SESSION];
        args.extend_from_slice(keys);
        self.run_ok(args).map(drop)
    }

    /// Types `text` literally (no key-name interpretation).
    pub fn send_text(&self, text: &str) -> std::io::Result<()> {
        self.run_ok(["send-keys", "-t", SESSION, "-l", "--", text])
            .map(drop)
    }

    /// Closes the pane as a user closing the terminal would: its program
    /// gets SIGHUP.
    pub fn kill_pane(&self) -> std::io::Result<()> {
        self.run_ok(["kill-pane", "-t", SESSION]).map(drop)
    }

    /// The visible pane as plain text.
    pub fn capture(&self) -> String {
        self.run_ok(["capture-pane", "-p", "-t", SESSION])
            .unwrap_or_else(|e| format!("<capture failed: {e}>"))
    }

    /// The pane including its scrollback history.
    pub fn capture_all(&self) -> String {
        self.run_ok(["capture-pane", "-p", "-S", "-", "-t", SESSION])
            .unwrap_or_else(|e| format!("<capture failed: {e}>"))
    }

    /// The pane's process id (the program started in it).
    pub fn pane_pid(&self) -> std::io::Result<u32> {
        let s = self.display("#{pane_pid}")?;
        s.trim()
            .parse()
            .map_err(|e| std::io::Error::other(format!("bad pane_pid {s:?}: {e}")))
    }

    /// `Some(exit status)` once the pane's program has exited: its exit
    /// code, or 128 + the signal that ended it, when tmux knows them; -1 when
    /// the program is gone but tmux does not say how (tmux 3.3 names no
    /// signal, and was seen to leave an exited pane program unreaped, a
    /// zombie, for good). A test that needs the exact status of a program
    /// runs it under `sh -c '…; echo "exit $?"'` and reads the screen.
    pub fn exit_status(&self) -> Option<i32> {
        let s = self
            .display("#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}")
            .ok()?;
        let f: Vec<&str> = s.trim().split(':').collect();
        if f.first() != Some(&"1") {
            return None;
        }
        let field = |i: usize| f.get(i).and_then(|v| v.parse::<i32>().ok());
        match (field(1), field(2)) {
            (Some(code), _) => Some(code),
            (None, Some(signal)) => Some(128 + signal),
            (None, None) => Some(-1),
        }
    }

    fn display(&self, format: &str) -> std::io::Result<String> {
        self.run_ok(["display-message", "-p", "-t", SESSION, format])
    }

    /// Polls the screen (visible part plus scrollback) until `pred` holds.
    /// Fails early, with the last screen, if the program exits.
    pub fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String, Timeout> {
        let start = Instant::now();
        let mut last = String::new();
        let found = crate::poll_until(timeout, POLL_INTERVAL, || {
            last = self.capture_all();
            if pred(&last) {
                return Some(Ok(last.clone()));
            }
            if let Some(status) = self.exit_status() {
                // What it printed last may have come after the capture.
                last = self.capture_all();
                if pred(&last) {
                    return Some(Ok(last.clone()));
                }
                return Some(Err(format!(
                    "{what} (the program exited with status {status})"
                )));
            }
            None
        });
        match found {
            Some(Ok(screen)) => Ok(screen),
            Some(Err(what)) => Err(Timeout {
                what,
                waited: start.elapsed(),
                last_screen: last,
            }),
            None => Err(Timeout {
                what: what.to_string(),
                waited: start.elapsed(),
                last_screen: last,
            }),
        }
    }

    /// Waits until the screen contains `needle`.
    pub fn wait_for_text(&self, needle: &str, timeout: Duration) -> Result<String, Timeout> {
        self.wait_for(&format!("{needle:?} on screen"), timeout, |s| {
            s.contains(needle)
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        if crate::keep_artifacts() {
            eprintln!(
                "[testkit] tmux session left running: tmux -L {} attach",
                self.socket
            );
            return;
        }
        let _ = self.run(["kill-server"]);
        if let Some(p) = &self.socket_path {
            let _ = std::fs::remove_file(p);
        }
    }
}
