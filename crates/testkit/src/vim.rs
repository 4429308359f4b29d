//! A real Vim (9.0 or newer) in a real terminal, for the Vim plugin's tests.
//!
//! Vim runs interactively inside tmux ([`crate::tmux`]), so keys arrive as a
//! user types them (`tmux send-keys`) and the screen is what a user sees.
//! The test also needs to read Vim's state, and Vim has no RPC API without
//! `+clientserver` (and X). So the driver listens on a 127.0.0.1 TCP port
//! and a small bootstrap vimrc connects to it with `ch_open(..., {'mode':
//! 'json'})`; over that channel the test sends Vim's own channel commands
//! (`:help channel-commands`): `["call", "TestkitEval", [expr], -N]`, which
//! Vim answers with `[-N, result]`. Vim handles them whenever it waits for
//! input, as it handles any channel: no key is typed for it.
//!
//! The binary is `CCBRIDGE_VIM_BIN`, else `vim` on `PATH`; without one,
//! [`vim_bin`] panics with the instruction: no test is skipped.

use crate::tmux::{StartOptions, Timeout, Tmux};
use serde_json::{json, Value};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;

/// How long one evaluation may take before the test fails (Vim answers
/// only while it waits for input: a blocking prompt shows up as this).
const CALL: Duration = Duration::from_secs(15);

/// How often [`Vim::wait`] evaluates (more than the test vimrc's
/// 'ttimeoutlen').
pub const POLL: Duration = Duration::from_millis(40);

/// How long Vim may take to start and connect back.
const CONNECT: Duration = Duration::from_secs(20);

/// The Vim binary, or `Err` with what to do.
pub fn try_vim_bin() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("CCBRIDGE_VIM_BIN").filter(|v| !v.is_empty()) {
        let bin = PathBuf::from(bin);
        return if bin.is_file() {
            Ok(bin)
        } else {
            Err(format!("CCBRIDGE_VIM_BIN={} does not exist", bin.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("vim"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "Vim is not installed: install Vim 9.0 or newer with +channel, +job and +terminal \
             (Debian/Ubuntu: apt-get install vim-nox), or set CCBRIDGE_VIM_BIN to such a vim"
                .to_string()
        })
}

/// [`try_vim_bin`], panicking with the instruction.
pub fn vim_bin() -> PathBuf {
    try_vim_bin().unwrap_or_else(|e| panic!("{e}"))
}

/// How to start Vim.
#[derive(Clone, Debug)]
pub struct VimOptions {
    /// Sourced after the bootstrap (which only opens the test's channel).
    pub vimrc: Option<PathBuf>,
    pub cwd: PathBuf,
    /// The terminal's environment (tmux adds `PATH`, `LANG`, `TERM`; a
    /// `PATH` here replaces the inherited one).
    pub env: Vec<(String, String)>,
    /// Files to edit, as on Vim's command line.
    pub files: Vec<String>,
    pub width: u16,
    pub height: u16,
}

impl VimOptions {
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        VimOptions {
            vimrc: None,
            cwd: cwd.into(),
            env: Vec::new(),
            files: Vec::new(),
            width: 180,
            height: 45,
        }
    }

    /// Vim as ccbridge's plugin tests start it: `editors/vim/test/vimrc`
    /// (the plugin on the `runtimepath` as a manual install puts it, and
    /// what the plugin fires recorded for the tests to read).
    pub fn for_plugin(cwd: impl Into<PathBuf>) -> Self {
        let mut opts = VimOptions::new(cwd);
        opts.vimrc = Some(crate::claude::workspace_root().join("editors/vim/test/vimrc"));
        opts
    }
}

/// `s` as a Vim script string literal (single quotes, doubled inside).
pub fn vim_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `:let g:ccbridge = …`: the plugin's options (each test sets its own) as
/// one Ex command.
pub fn let_options(options: &Value) -> String {
    format!(
        "let g:ccbridge = json_decode({})",
        vim_str(&options.to_string())
    )
}

/// One running Vim in its own tmux server; dropping it quits Vim (so its
/// VimLeavePre autocommands run) and kills both.
pub struct Vim {
    pub tmux: Tmux,
    /// Vim's process (the pane's).
    pid: u32,
    stream: TcpStream,
    replies: Receiver<Value>,
    next_id: i64,
    /// Holds the bootstrap vimrc.
    _dir: tempfile::TempDir,
}

/// What the bootstrap vimrc defines: the channel to the test and the two
/// functions it calls. Errors come back as `{"err": ...}` rather than Vim's
/// bare "ERROR", with where they happened.
const BOOTSTRAP: &str = r#"set nocompatible
let g:testkit_channel = ch_open('127.0.0.1:%PORT%', {'mode': 'json', 'waittime': 10000})
function! TestkitEval(expr) abort
  try
    return {'ok': eval(a:expr)}
  catch
    return {'err': v:exception . ' (' . v:throwpoint . ')'}
  endtry
endfunction
function! TestkitEx(cmd) abort
  try
    return {'ok': execute(a:cmd)}
  catch
    return {'err': v:exception . ' (' . v:throwpoint . ')'}
  endtry
endfunction
"#;

impl Vim {
    /// Starts `vim -N -u <bootstrap> -i NONE -n` in tmux and waits until it
    /// has connected back.
    pub fn start(opts: &VimOptions) -> std::io::Result<Vim> {
        let bin = vim_bin();
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let dir = crate::temp_dir("ccbridge-vim-")?;
        let mut rc = BOOTSTRAP.replace("%PORT%", &port.to_string());
        if let Some(user) = &opts.vimrc {
            rc.push_str(&format!(
                "source {}\n",
                escape_ex(&user.display().to_string())
            ));
        }
        let rc_path = dir.path().join("bootstrap.vim");
        std::fs::write(&rc_path, rc)?;
        // tmux gives a new session the PATH of its client, whatever `-e`
        // says: a PATH of the test's goes through env(1) instead.
        let mut cmd = vec![];
        let mut env = opts.env.clone();
        if let Some(i) = env.iter().position(|(k, _)| k == "PATH") {
            let (_, path) = env.remove(i);
            cmd.extend(["env".to_string(), format!("PATH={path}")]);
        }
        cmd.extend([
            bin.display().to_string(),
            "-N".into(),
            "-u".into(),
            rc_path.display().to_string(),
            "-i".to_string(),
            "NONE".into(),
            "-n".into(),
        ]);
        cmd.extend(opts.files.iter().cloned());
        let mut start = StartOptions::new(cmd, &opts.cwd);
        start.env = env;
        start.width = opts.width;
        start.height = opts.height;
        let tmux = Tmux::start(&start)?;
        // `env` execs Vim: the pane's process is Vim.
        let pid = tmux.pane_pid()?;
        let stream = accept(&listener, &tmux)?;
        let (tx, replies) = channel();
        let reader = stream.try_clone()?;
        std::thread::spawn(move || {
            // Vim writes one JSON array per message, back to back.
            let values = serde_json::Deserializer::from_reader(reader).into_iter::<Value>();
            for v in values {
                match v {
                    Ok(v) => {
                        if tx.send(v).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        Ok(Vim {
            tmux,
            pid,
            stream,
            replies,
            next_id: 0,
            _dir: dir,
        })
    }

    /// Calls `func(args...)` in Vim; `Err` carries Vim's error or why no
    /// answer came.
    fn call(&mut self, func: &str, args: Vec<Value>) -> Result<Value, String> {
        self.next_id += 1;
        let id = -self.next_id;
        let msg = json!(["call", func, args, id]);
        let mut line = msg.to_string();
        line.push('\n');
        self.stream
            .write_all(line.as_bytes())
            .and_then(|()| self.stream.flush())
            .map_err(|e| format!("{func}: Vim is gone: {e}"))?;
        loop {
            match self.replies.recv_timeout(CALL) {
                Ok(Value::Array(a)) if a.len() == 2 && a[0] == json!(id) => {
                    return match &a[1] {
                        Value::Object(o) if o.contains_key("ok") => Ok(o["ok"].clone()),
                        Value::Object(o) if o.contains_key("err") => {
                            Err(o["err"].as_str().unwrap_or_default().to_string())
                        }
                        // Vim could not encode the result (a Funcref, a Job).
                        other => Err(format!("Vim answered {other}")),
                    };
                }
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "{func}: no answer in {CALL:?} (Vim is not waiting for input: a prompt?); \
                         screen:\n{}",
                        self.tmux.capture()
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!(
                        "{func}: Vim closed the channel (exited?); screen:\n{}",
                        self.tmux.capture()
                    ))
                }
            }
        }
    }

    /// Evaluates a (legacy script) expression; `Err` with Vim's error.
    pub fn try_eval(&mut self, expr: &str) -> Result<Value, String> {
        self.call("TestkitEval", vec![expr.into()])
    }

    /// Evaluates a (legacy script) expression; panics on error.
    pub fn eval(&mut self, expr: &str) -> Value {
        self.try_eval(expr)
            .unwrap_or_else(|e| panic!("{e}\nin the expression: {expr}"))
    }

    /// Runs an Ex command and returns what it printed (`execute()`);
    /// panics on error.
    pub fn ex(&mut self, cmd: &str) -> String {
        match self.call("TestkitEx", vec![cmd.into()]) {
            Ok(v) => v.as_str().unwrap_or_default().to_string(),
            Err(e) => panic!("{e}\nin the command: {cmd}"),
        }
    }

    /// Types `keys` in Vim's terminal: text as it is, and Vim's key
    /// notation for special keys: `<Esc>`, `<CR>`, `<BS>`, `<Tab>`,
    /// `<C-x>`, `<Up>`/`<Down>`/`<Left>`/`<Right>`, `<lt>` for `<`.
    pub fn keys(&self, keys: &str) {
        for part in split_keys(keys) {
            let r = match &part {
                Key::Text(t) => self.tmux.send_text(t),
                Key::Named(n) => self.tmux.send_keys(&[n.as_str()]),
            };
            r.unwrap_or_else(|e| panic!("typing {keys:?}: {e}"));
        }
    }

    /// Evaluates `expr` until it is truthy (not `0`, `v:false`, `''`,
    /// `v:null`, an empty list or dict) and returns it; panics after
    /// `timeout` with `what`, the last value and the screen.
    ///
    /// Polls every [`POLL`]: Vim resolves a typed `<Esc>` (is it a key
    /// code?) only after 'ttimeoutlen' without input, and a channel message
    /// counts as input, so the polls leave it quiet time.
    pub fn wait(&mut self, what: &str, expr: &str, timeout: Duration) -> Value {
        let mut last = Value::Null;
        let got = crate::poll_until(timeout, POLL, || {
            last = self.eval(expr);
            truthy(&last).then(|| last.clone())
        });
        got.unwrap_or_else(|| {
            panic!(
                "waited {timeout:?} for {what}; `{expr}` is still {last}\nscreen:\n{}",
                self.tmux.capture()
            )
        })
    }

    /// The screen as a user sees it.
    pub fn screen(&self) -> String {
        self.tmux.capture()
    }

    /// Waits until the screen shows `needle`.
    pub fn wait_for_text(&self, needle: &str, timeout: Duration) -> Result<String, Timeout> {
        self.tmux.wait_for_text(needle, timeout)
    }

    /// Vim's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Types `<Esc>:qa!<CR>` and waits (bounded) until Vim has exited;
    /// `None` if it did not.
    pub fn quit(&self) -> Option<i32> {
        self.keys("<Esc>:qa!<CR>");
        crate::poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
            self.tmux.exit_status()
        })
    }
}

impl Drop for Vim {
    /// Quits Vim with `:qa!` through the channel (Vim 9.0 was seen to hang
    /// for good in its SIGHUP handler when the terminal went away first,
    /// holding its sidecar's stdin open), waits for it a bounded time, and
    /// kills whatever is left before the tmux server goes.
    fn drop(&mut self) {
        if crate::keep_artifacts() || self.tmux.exit_status().is_some() {
            return;
        }
        let _ = self
            .stream
            .write_all(b"[\"ex\",\"qa!\"]\n")
            .and_then(|()| self.stream.flush());
        let exited = crate::poll_until(Duration::from_secs(5), Duration::from_millis(20), || {
            self.tmux.exit_status()
        });
        if exited.is_none() && self.pid != 0 {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &self.pid.to_string()])
                .status();
        }
    }
}

fn accept(listener: &TcpListener, tmux: &Tmux) -> std::io::Result<TcpStream> {
    listener.set_nonblocking(true)?;
    let got = crate::poll_until(CONNECT, Duration::from_millis(10), || {
        match listener.accept() {
            Ok((s, _)) => Some(Ok(s)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                tmux.exit_status().map(|status| {
                    Err(std::io::Error::other(format!(
                        "Vim exited (status {status}) before connecting; screen:\n{}",
                        tmux.capture()
                    )))
                })
            }
            Err(e) => Some(Err(e)),
        }
    });
    let stream = got.unwrap_or_else(|| {
        Err(std::io::Error::other(format!(
            "Vim did not connect to the test within {CONNECT:?}; screen:\n{}",
            tmux.capture()
        )))
    })?;
    stream.set_nonblocking(false)?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Vim's idea of true: what `if expr` accepts, and non-empty containers
/// (also for a Vim script value Neovim returned).
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `path` escaped for an Ex command line (`fnameescape()` for the
/// characters a temporary path may hold).
fn escape_ex(path: &str) -> String {
    let mut out = String::new();
    for c in path.chars() {
        if " \t\\|\"%#'[{$`".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[derive(Debug, PartialEq)]
enum Key {
    Text(String),
    Named(String),
}

/// Splits Vim key notation into literal text and tmux key names.
fn split_keys(keys: &str) -> Vec<Key> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut rest = keys;
    while let Some(c) = rest.chars().next() {
        if c == '<' {
            if let Some(end) = rest.find('>') {
                if let Some(name) = tmux_key(&rest[1..end]) {
                    if !text.is_empty() {
                        out.push(Key::Text(std::mem::take(&mut text)));
                    }
                    match name {
                        Ok(named) => out.push(Key::Named(named)),
                        Err(literal) => text.push_str(&literal),
                    }
                    rest = &rest[end + 1..];
                    continue;
                }
            }
        }
        text.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if !text.is_empty() {
        out.push(Key::Text(text));
    }
    out
}

/// The tmux key name for Vim's `<name>`: `Ok(name)`, or `Err(text)` for
/// notation that stands for plain text (`<lt>`); `None` if not a key.
fn tmux_key(name: &str) -> Option<Result<String, String>> {
    let lower = name.to_ascii_lowercase();
    let named = match lower.as_str() {
        "esc" => "Escape",
        "cr" | "enter" | "return" => "Enter",
        "bs" => "BSpace",
        "tab" => "Tab",
        "space" => "Space",
        "up" => "Up",
        "down" => "Down",
        "left" => "Left",
        "right" => "Right",
        "lt" => return Some(Err("<".into())),
        _ => {
            let ctrl = lower.strip_prefix("c-")?;
            if ctrl.chars().count() == 1 {
                let c = ctrl.chars().next()?;
                // tmux names: C-a .. C-z, C-\, C-], C-[ (Escape).
                return Some(Ok(format!("C-{c}")));
            }
            return None;
        }
    };
    Some(Ok(named.into()))
}

/// Writes `text` to `dir/name` and returns the path (for test vimrcs).
pub fn write_vimrc(dir: &Path, name: &str, text: &str) -> std::io::Result<PathBuf> {
    let p = dir.join(name);
    std::fs::write(&p, text)?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_notation_becomes_text_and_tmux_key_names() {
        assert_eq!(
            split_keys("gg0<C-v>jl<Esc>:w<CR><lt>x><Nope>"),
            vec![
                Key::Text("gg0".into()),
                Key::Named("C-v".into()),
                Key::Text("jl".into()),
                Key::Named("Escape".into()),
                Key::Text(":w".into()),
                Key::Named("Enter".into()),
                Key::Text("<x><Nope>".into()),
            ]
        );
    }
}
