//! A real Emacs (`emacs -nw -Q`) in a tmux pane: keys go in as a user types
//! them (`tmux send-keys`), state comes out through `emacsclient --eval`
//! on a private server socket, as JSON.
//!
//! Why a terminal Emacs in tmux: the package under test reacts to commands
//! (`post-command-hook`, the region, key bindings such as `C-c C-c` in a
//! review buffer), which only real keyboard input exercises; a batch Emacs
//! runs no command loop. The pane is a real terminal of fixed size, and
//! `emacsclient` reaches the same Emacs without typing into it.
//!
//! The binary is `CCBRIDGE_EMACS_BIN`, else `emacs` on `PATH` (Debian's
//! `emacs-nox`, which `scripts/test` installs); it must be Emacs 28 or
//! newer. Without one, [`emacs_bin`] panics with the instruction: no test
//! is skipped.

use crate::tmux::{StartOptions, Tmux};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long one `emacsclient` call may take.
const CALL_SECS: u64 = 15;
/// How long Emacs may take to start and open its server.
const START: Duration = Duration::from_secs(30);

const INSTALL_HINT: &str = "run scripts/test (it installs Debian's emacs-nox), or \
     `apt-get install emacs-nox`, or set CCBRIDGE_EMACS_BIN to an Emacs 28+ binary";

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The Emacs binary (28 or newer), or `Err` with what to do.
pub fn try_emacs_bin() -> Result<PathBuf, String> {
    let bin = match std::env::var_os("CCBRIDGE_EMACS_BIN").filter(|v| !v.is_empty()) {
        Some(b) => {
            let b = PathBuf::from(b);
            if !b.is_file() {
                return Err(format!("CCBRIDGE_EMACS_BIN={} does not exist", b.display()));
            }
            b
        }
        None => on_path("emacs").ok_or_else(|| {
            format!("Emacs is not installed (no `emacs` on PATH): {INSTALL_HINT}")
        })?,
    };
    let out = Command::new(&bin).arg("--version").output().map_err(|e| {
        format!(
            "cannot run {} --version: {e}; {INSTALL_HINT}",
            bin.display()
        )
    })?;
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    let major: Option<u32> = first
        .strip_prefix("GNU Emacs ")
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse().ok());
    match major {
        Some(m) if m >= 28 => Ok(bin),
        _ => Err(format!(
            "{} is {first:?}; the tests need Emacs 28 or newer: {INSTALL_HINT}",
            bin.display()
        )),
    }
}

/// [`try_emacs_bin`], panicking with the instruction.
pub fn emacs_bin() -> PathBuf {
    try_emacs_bin().unwrap_or_else(|e| panic!("{e}"))
}

/// `emacsclient` beside `emacs`, else on `PATH`.
pub fn emacsclient_bin(emacs: &Path) -> PathBuf {
    let beside = emacs.with_file_name("emacsclient");
    if beside.is_file() {
        return beside;
    }
    on_path("emacsclient").unwrap_or_else(|| {
        panic!(
            "no emacsclient beside {} nor on PATH: {INSTALL_HINT}",
            emacs.display()
        )
    })
}

/// Where Debian installs the Emacs package `name` (`elpa-<name>`):
/// `/usr/share/emacs/site-lisp/elpa/<name>-<version>`, or `Err` with the
/// package to install.
pub fn system_elpa_package(name: &str) -> Result<PathBuf, String> {
    let root = Path::new("/usr/share/emacs/site-lisp/elpa");
    std::fs::read_dir(root)
        .ok()
        .and_then(|d| {
            d.flatten().map(|e| e.path()).find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix(name))
                    .is_some_and(|rest| {
                        rest.strip_prefix('-')
                            .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
                    })
            })
        })
        .ok_or_else(|| {
            format!(
                "the Emacs package {name} is not installed in {}: run scripts/test, \
                 or `apt-get install elpa-{name}`",
                root.display()
            )
        })
}

/// Every package directory of Debian's system ELPA (for `-L`): a package
/// found with [`system_elpa_package`] needs its dependencies beside it.
pub fn system_elpa_load_path() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/share/emacs/site-lisp/elpa")
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// How to start Emacs.
#[derive(Clone, Debug)]
pub struct EmacsOptions {
    /// Loaded with `-l` after `-Q`.
    pub init: PathBuf,
    /// Emacs's working directory (its first `default-directory`).
    pub cwd: PathBuf,
    /// The environment (on top of `PATH`, `LANG` and tmux's `TERM`);
    /// give `HOME`.
    pub env: Vec<(String, String)>,
    /// Directories put on the `load-path` with `-L`.
    pub load_path: Vec<PathBuf>,
    pub width: u16,
    pub height: u16,
}

impl EmacsOptions {
    pub fn new(init: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        EmacsOptions {
            init: init.into(),
            cwd: cwd.into(),
            env: Vec::new(),
            load_path: Vec::new(),
            width: 200,
            height: 50,
        }
    }

    /// Emacs as ccbridge's package tests start it: `editors/emacs/test/init.el`
    /// (quiet file handling, the tests' diagnostics sources) loading the
    /// package byte-compiled, as a package manager installs it
    /// ([`compiled_package`]).
    pub fn for_package(cwd: impl Into<PathBuf>) -> Self {
        let mut opts = EmacsOptions::new(package_source().join("test/init.el"), cwd);
        opts.load_path.push(compiled_package());
        opts
    }
}

/// `editors/emacs`: the package's sources and its tests' Lisp.
pub fn package_source() -> PathBuf {
    crate::claude::workspace_root().join("editors/emacs")
}

/// A directory holding `ccbridge.el` and the `ccbridge.elc` Emacs compiled
/// from it: package.el, straight and use-package all byte-compile what they
/// install, so what users run is the compiled package, where a macro used
/// before its definition or a function missing at compile time shows.
/// Made once per version of the source (and Emacs binary), in the temporary
/// directory, and shared by test processes. Panics with Emacs's output when
/// the package does not compile (its warnings are
/// `the_package_byte_compiles_without_a_warning`'s concern).
pub fn compiled_package() -> PathBuf {
    static DIR: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    DIR.get_or_init(compile_package)
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn compile_package() -> Result<PathBuf, String> {
    use std::hash::{Hash, Hasher};
    let source = std::fs::read(package_source().join("ccbridge.el"))
        .map_err(|e| format!("reading the package: {e}"))?;
    let bin = emacs_bin();
    let mut key = std::collections::hash_map::DefaultHasher::new();
    (&source, &bin).hash(&mut key);
    let dir = std::env::temp_dir().join(format!("ccbridge-elc-{:016x}", key.finish()));
    if dir.join("ccbridge.elc").is_file() {
        return Ok(dir);
    }
    // Compiled aside, then renamed into place whole: a test process that
    // finds the directory finds it complete.
    let work = tempfile::Builder::new()
        .prefix("ccbridge-elc-tmp-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let el = work.path().join("ccbridge.el");
    std::fs::write(&el, &source).map_err(|e| e.to_string())?;
    let out = Command::new(&bin)
        .args(["-Q", "--batch", "-L"])
        .arg(work.path())
        .args(["-f", "batch-byte-compile"])
        .arg(&el)
        .output()
        .map_err(|e| format!("cannot run Emacs: {e}"))?;
    if !out.status.success() || !work.path().join("ccbridge.elc").is_file() {
        return Err(format!(
            "byte-compiling the package failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // Another process may have put its copy there first: either is whole.
    let kept = work.keep();
    if std::fs::rename(&kept, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&kept);
    }
    if dir.join("ccbridge.elc").is_file() {
        Ok(dir)
    } else {
        Err(format!("{} has no ccbridge.elc", dir.display()))
    }
}

/// The driver's own Lisp, loaded after the test's init: the JSON bridge
/// for `emacsclient` and the server on a private socket. `server-start`
/// comes last, so a server that answers means both files are loaded.
const HELPER: &str = r#";;; testkit.el --- ccbridge-testkit's Emacs driver  -*- lexical-binding: t; -*-
(require 'json)
(require 'server)

(defun testkit--ascii (string)
  "STRING with every non-ASCII character as a JSON \\u escape."
  (replace-regexp-in-string
   "[^[:ascii:]]"
   (lambda (c)
     (let ((ch (aref c 0)))
       (if (> ch #xFFFF)
           (let ((v (- ch #x10000)))
             (format "\\u%04x\\u%04x" (+ #xD800 (ash v -10)) (+ #xDC00 (logand v #x3FF))))
         (format "\\u%04x" ch))))
   string t t))

(defun testkit-eval (fn)
  "FN's value as ASCII JSON: {\"ok\": VALUE} or {\"err\": MESSAGE}.
FN runs in the selected window's buffer, as \\[eval-expression] would."
  (testkit--ascii
   (json-encode
    (condition-case err
        (list (cons 'ok (with-current-buffer (window-buffer (selected-window))
                          (funcall fn))))
      (error (list (cons 'err (error-message-string err))))))))

(setq server-socket-dir (getenv "TESTKIT_SERVER_DIR")
      server-name "testkit")
(server-start)
"#;

/// `s` as an Emacs Lisp string literal (backslashes and quotes escaped).
pub fn lisp_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// One Emacs in its own tmux server; killed (and its sidecars with it) on
/// drop.
pub struct Emacs {
    tmux: Option<Tmux>,
    client: PathBuf,
    socket: PathBuf,
    pid: u32,
    _dir: tempfile::TempDir,
}

impl Emacs {
    /// Starts `emacs -nw -Q -L … -l <init>` in tmux and waits (bounded)
    /// until its server answers.
    pub fn start(opts: &EmacsOptions) -> std::io::Result<Emacs> {
        let bin = emacs_bin();
        let client = emacsclient_bin(&bin);
        // A short path: the server socket's name must fit in sun_path.
        let dir = tempfile::Builder::new().prefix("ccb-emacs-").tempdir()?;
        let helper = dir.path().join("testkit.el");
        std::fs::write(&helper, HELPER)?;
        // Emacs creates the socket directory itself, mode 0700, and
        // refuses one with other permissions.
        let server_dir = dir.path().join("srv");
        // The environment through env(1): tmux keeps its own PATH for a
        // new pane whatever `new-session -e` says. env execs Emacs, so the
        // pane's process is Emacs.
        let mut cmd = vec!["env".to_owned()];
        cmd.extend(opts.env.iter().map(|(k, v)| format!("{k}={v}")));
        cmd.push(format!("TESTKIT_SERVER_DIR={}", server_dir.display()));
        cmd.extend([bin.display().to_string(), "-nw".into(), "-Q".into()]);
        for d in &opts.load_path {
            cmd.push("-L".into());
            cmd.push(d.display().to_string());
        }
        cmd.extend([
            "-l".into(),
            opts.init.display().to_string(),
            "-l".into(),
            helper.display().to_string(),
        ]);
        let tmux = Tmux::start(&StartOptions {
            cmd,
            env: Vec::new(),
            cwd: opts.cwd.clone(),
            width: opts.width,
            height: opts.height,
        })?;
        let pid = tmux.pane_pid()?;
        let mut emacs = Emacs {
            tmux: Some(tmux),
            client,
            socket: server_dir.join("testkit"),
            pid,
            _dir: dir,
        };
        let mut last = String::new();
        let up = crate::poll_until(START, Duration::from_millis(50), || {
            if let Some(status) = emacs.tmux().exit_status() {
                last = format!("Emacs exited with status {status}");
                return Some(false);
            }
            match emacs.try_json("t") {
                Ok(_) => Some(true),
                Err(e) => {
                    last = e;
                    None
                }
            }
        });
        if up != Some(true) {
            let screen = emacs.screen();
            emacs.tmux = None;
            return Err(std::io::Error::other(format!(
                "Emacs did not start its server within {START:?}: {last}\nscreen:\n{screen}"
            )));
        }
        Ok(emacs)
    }

    fn tmux(&self) -> &Tmux {
        self.tmux.as_ref().expect("Emacs is running")
    }

    /// Emacs's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The terminal's screen, for failure messages.
    pub fn screen(&self) -> String {
        self.tmux.as_ref().map(Tmux::capture).unwrap_or_default()
    }

    /// Evaluates `lisp` in the selected window's buffer (as `M-:` does)
    /// and returns its value as JSON (`json-encode`:
    /// nil is null, t is true, plists and alists are objects, other lists
    /// arrays, symbols strings), or `Err` with Emacs's error message.
    pub fn try_json(&self, lisp: &str) -> Result<Value, String> {
        let out = self.client(
            &format!("(testkit-eval (lambda () {lisp}))"),
            Duration::from_secs(CALL_SECS),
        )?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(format!(
                "emacsclient failed ({}): {}{}",
                out.status,
                stdout.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        // The value is a Lisp string printed by `prin1`: quoted, with `\"`
        // and `\\` escaped (the JSON inside is ASCII without control
        // characters, so nothing else is).
        let printed = stdout.trim();
        let inner = printed
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .ok_or_else(|| format!("not a printed string: {printed:?}"))?;
        let mut json = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                if let Some(n) = chars.next() {
                    json.push(n);
                }
            } else {
                json.push(c);
            }
        }
        let v: Value =
            serde_json::from_str(&json).map_err(|e| format!("bad JSON {json:?}: {e}"))?;
        match (v.get("ok"), v.get("err")) {
            (_, Some(err)) => Err(err.as_str().unwrap_or_default().to_owned()),
            (Some(ok), _) => Ok(ok.clone()),
            _ => Ok(Value::Null),
        }
    }

    /// [`Emacs::try_json`], panicking with the error and the screen.
    pub fn json(&self, lisp: &str) -> Value {
        self.try_json(lisp)
            .unwrap_or_else(|e| panic!("Emacs: {e}\nin Lisp:\n{lisp}\nscreen:\n{}", self.screen()))
    }

    /// Evaluates `lisp` for its effect.
    pub fn eval(&self, lisp: &str) {
        self.json(&format!("(progn {lisp} nil)"));
    }

    /// A string value.
    pub fn string(&self, lisp: &str) -> String {
        match self.json(lisp) {
            Value::String(s) => s,
            other => panic!("`{lisp}` is not a string: {other}"),
        }
    }

    /// Types keys in Emacs's notation, separated by spaces, as `kbd`
    /// reads them: `C-c C-c`, `M-x`, `RET`, `SPC`, `TAB`, `ESC`, `DEL`,
    /// `<up>`, `C-SPC`, single characters (`^`, `u`).
    pub fn keys(&self, keys: &str) {
        let tmux_keys: Vec<String> = keys.split_whitespace().map(tmux_key).collect();
        let refs: Vec<&str> = tmux_keys.iter().map(String::as_str).collect();
        self.tmux()
            .send_keys(&refs)
            .unwrap_or_else(|e| panic!("send-keys {keys:?}: {e}"));
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        self.tmux()
            .send_text(text)
            .unwrap_or_else(|e| panic!("typing {text:?}: {e}"));
    }

    /// Evaluates `lisp` until it is neither nil nor false, and returns
    /// that value; panics after `timeout` with `what`, the last value and
    /// the screen.
    pub fn wait(&self, what: &str, lisp: &str, timeout: Duration) -> Value {
        let mut last = Value::Null;
        let got = crate::poll_until(timeout, Duration::from_millis(20), || {
            last = self.json(lisp);
            (!last.is_null() && last != Value::Bool(false)).then(|| last.clone())
        });
        got.unwrap_or_else(|| {
            panic!(
                "waited {timeout:?} for {what}; `{lisp}` is still {last}\nscreen:\n{}",
                self.screen()
            )
        })
    }

    /// Whether Emacs's process still runs.
    pub fn alive(&self) -> bool {
        self.tmux
            .as_ref()
            .is_some_and(|t| t.exit_status().is_none())
            && Path::new(&format!("/proc/{}", self.pid)).exists()
    }

    /// Ends Emacs with `(kill-emacs)` (its `kill-emacs-hook` runs) and
    /// waits, bounded, until it has exited; true if it has.
    pub fn quit(mut self) -> bool {
        let exited = self.kill_emacs();
        self.tmux = None;
        exited
    }

    /// Runs `emacsclient --eval lisp`, killed after `timeout` (Emacs 28's
    /// emacsclient has no timeout of its own).
    fn client(&self, lisp: &str, timeout: Duration) -> Result<std::process::Output, String> {
        use std::io::Read;
        let mut child = Command::new(&self.client)
            .arg("-s")
            .arg(&self.socket)
            .arg("--eval")
            .arg(lisp)
            .env("LANG", "C.UTF-8")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run emacsclient: {e}"))?;
        // Read while it runs: a large answer must not fill the pipe.
        let mut stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let out_reader = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = stdout.read_to_end(&mut b);
            b
        });
        let err_reader = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = stderr.read_to_end(&mut b);
            b
        });
        let status = crate::poll_until(timeout, Duration::from_millis(2), || {
            child.try_wait().ok().flatten()
        });
        let Some(status) = status else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "emacsclient got no answer within {timeout:?} (a blocking prompt?)"
            ));
        };
        Ok(std::process::Output {
            status,
            stdout: out_reader.join().unwrap_or_default(),
            stderr: err_reader.join().unwrap_or_default(),
        })
    }

    /// Closes Emacs's terminal, as closing a terminal window does (Emacs
    /// gets SIGHUP and loses its tty), and waits, bounded, until the
    /// process is gone; true if it is.
    pub fn hang_up(mut self) -> bool {
        let pid = self.pid;
        if let Some(t) = &self.tmux {
            let _ = t.kill_pane();
        }
        let gone = crate::poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok();
            let alive = status.is_some_and(|s| !s.contains("State:\tZ"));
            (!alive).then_some(())
        })
        .is_some();
        if !gone {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        self.tmux = None;
        gone
    }

    fn kill_emacs(&self) -> bool {
        if self.tmux.is_none() {
            return true;
        }
        // The connection closes as Emacs exits: the answer may not come.
        let _ = self.client("(run-at-time 0 nil #'kill-emacs)", Duration::from_secs(5));
        crate::poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
            self.tmux().exit_status().map(|_| ())
        })
        .is_some()
    }
}

impl Drop for Emacs {
    fn drop(&mut self) {
        if self.tmux.is_none() || crate::keep_artifacts() {
            return;
        }
        if !self.kill_emacs() {
            let _ = Command::new("kill")
                .args(["-KILL", &self.pid.to_string()])
                .status();
        }
        // Dropping the tmux server ends whatever is left in the pane.
        self.tmux = None;
    }
}

/// One key in Emacs's notation as tmux names it.
fn tmux_key(key: &str) -> String {
    let named = match key {
        "RET" => Some("Enter"),
        "SPC" => Some("Space"),
        "TAB" => Some("Tab"),
        "ESC" => Some("Escape"),
        "DEL" => Some("BSpace"),
        "C-SPC" => Some("C-Space"),
        "<up>" => Some("Up"),
        "<down>" => Some("Down"),
        "<left>" => Some("Left"),
        "<right>" => Some("Right"),
        "<home>" => Some("Home"),
        "<end>" => Some("End"),
        _ => None,
    };
    if let Some(n) = named {
        return n.to_owned();
    }
    if let Some(rest) = key.strip_prefix("M-") {
        return format!("M-{}", tmux_key(rest));
    }
    key.to_owned()
}

#[cfg(test)]
mod tests {
    use super::tmux_key;

    #[test]
    fn emacs_key_names_become_tmux_key_names() {
        assert_eq!(tmux_key("RET"), "Enter");
        assert_eq!(tmux_key("C-c"), "C-c");
        assert_eq!(tmux_key("M-<"), "M-<");
        assert_eq!(tmux_key("M-RET"), "M-Enter");
        assert_eq!(tmux_key("C-SPC"), "C-Space");
        assert_eq!(tmux_key("^"), "^");
    }
}
