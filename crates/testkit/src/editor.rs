//! A scripted editor: spawns `ccbridge serve --stdio` and speaks the editor
//! protocol (docs/editor-protocol.md) to it.
//!
//! Why: in production an editor plugin (Neovim, Emacs, ...) sits on the other
//! side of ccbridge. The end-to-end tests need that side to be deterministic
//! and inspectable: send exactly the notifications a scenario calls for, see
//! every request ccbridge makes (`showDiff`, `closeDiff`, ...), and answer them
//! when the scenario says so. It frames JSON-RPC with LSP `Content-Length`
//! headers, like a real editor's LSP client would.
//!
//! A reader thread parses frames from ccbridge's stdout: responses complete
//! pending [`Editor::request`] calls, and every incoming request or
//! notification is appended to a history (for "was X ever sent?" checks) and,
//! unless auto-answered (see [`Editor::auto_reply`]), to a queue the test takes
//! from with [`Editor::expect_request`]. ccbridge's stderr goes to a log file
//! whose tail is part of every failure message.

use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How to start ccbridge.
#[derive(Clone, Debug)]
pub struct EditorOptions {
    /// The ccbridge binary (`env!("CARGO_BIN_EXE_ccbridge")` in its tests).
    pub bin: PathBuf,
    pub workspace: PathBuf,
    pub ide_name: String,
    /// `CLAUDE_CONFIG_DIR` for ccbridge, so its lock file lands in
    /// `<config_dir>/ide/` where the sandboxed CLI looks.
    pub config_dir: PathBuf,
    /// Where ccbridge's files outside the workspace go ([`crate::confined_env`]:
    /// `HOME`, `TMPDIR`, Qwen Code's and Codex's homes; the sandbox's), so
    /// nothing touches the real ones.
    pub home: PathBuf,
    /// ccbridge's stderr goes here.
    pub log_file: PathBuf,
    /// `RUST_LOG` for ccbridge.
    pub rust_log: String,
    pub extra_args: Vec<String>,
    /// Variables added to ccbridge's environment.
    pub extra_env: Vec<(String, String)>,
}

impl EditorOptions {
    /// Options for running ccbridge next to a [`crate::claude::Sandbox`].
    pub fn for_sandbox(
        bin: impl Into<PathBuf>,
        sandbox: &crate::claude::Sandbox,
        ide_name: &str,
    ) -> Self {
        EditorOptions {
            bin: bin.into(),
            workspace: sandbox.workspace().to_path_buf(),
            ide_name: ide_name.to_string(),
            config_dir: sandbox.config_dir().to_path_buf(),
            home: sandbox.home().to_path_buf(),
            log_file: sandbox.root().join("ccbridge.log"),
            rust_log: std::env::var("CCBRIDGE_E2E_RUST_LOG").unwrap_or_else(|_| "debug".into()),
            extra_args: Vec::new(),
            extra_env: Vec::new(),
        }
    }
}

/// A message ccbridge sent the editor.
#[derive(Clone, Debug)]
pub struct Incoming {
    /// `Some` for a request (must be answered), `None` for a notification.
    pub id: Option<Value>,
    pub method: String,
    pub params: Value,
    /// When it arrived.
    pub at: Instant,
}

/// The lock file ccbridge wrote.
#[derive(Clone, Debug)]
pub struct LockFile {
    pub path: PathBuf,
    pub port: u16,
    pub auth_token: String,
    pub json: Value,
}

/// Something the test waited for did not happen, or ccbridge failed.
pub struct EditorError {
    pub what: String,
    /// Everything ccbridge sent so far (method and params, in order).
    pub seen: Vec<String>,
    /// The tail of ccbridge's log.
    pub log_tail: String,
}

impl std::fmt::Debug for EditorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", self.what)?;
        writeln!(f, "messages ccbridge sent to the editor so far:")?;
        for s in &self.seen {
            writeln!(f, "  {s}")?;
        }
        write!(f, "ccbridge log (tail):\n{}", self.log_tail)
    }
}

impl std::fmt::Display for EditorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

impl std::error::Error for EditorError {}

#[derive(Default)]
struct State {
    /// Responses to our requests, by id.
    responses: HashMap<u64, Value>,
    /// Unanswered incoming requests and notifications not yet taken.
    queue: Vec<Incoming>,
    /// Everything received, in order.
    history: Vec<Incoming>,
    /// Methods answered automatically with the given result.
    auto: HashMap<String, Value>,
    /// Set when stdout closed.
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

/// A running `ccbridge serve --stdio` with the editor side scripted by a test.
pub struct Editor {
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    shared: Arc<Shared>,
    next_id: Mutex<u64>,
    log_file: PathBuf,
    lock_dir: PathBuf,
}

fn write_frame(w: &mut impl Write, v: &Value) -> io::Result<()> {
    let body = v.to_string();
    write!(w, "Content-Length: {}\r\n\r\n", body.len())?;
    w.write_all(body.as_bytes())?;
    w.flush()
}

fn read_frame(r: &mut impl BufRead) -> io::Result<Option<Value>> {
    let mut len: Option<usize> = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if len.is_some() {
                break;
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok();
            }
        } else {
            return Err(io::Error::other(format!(
                "ccbridge wrote a non-header line on stdout: {line:?}"
            )));
        }
    }
    let mut buf = vec![0; len.unwrap_or(0)];
    r.read_exact(&mut buf)?;
    serde_json::from_slice(&buf)
        .map(Some)
        .map_err(|e| io::Error::other(format!("bad JSON frame from ccbridge: {e}")))
}

fn summarize(m: &Incoming) -> String {
    let kind = if m.id.is_some() { "request" } else { "notify" };
    let mut params = m.params.to_string();
    if params.len() > 300 {
        let mut cut = 300;
        while !params.is_char_boundary(cut) {
            cut -= 1;
        }
        params.truncate(cut);
        params.push('…');
    }
    format!("{kind} {} {params}", m.method)
}

impl Editor {
    /// Spawns `ccbridge serve --stdio --workspace DIR --ide-name NAME`.
    pub fn spawn(opts: &EditorOptions) -> io::Result<Editor> {
        let log = std::fs::File::create(&opts.log_file)?;
        let mut cmd = Command::new(&opts.bin);
        cmd.arg("serve")
            .arg("--stdio")
            .arg("--workspace")
            .arg(&opts.workspace)
            .arg("--ide-name")
            .arg(&opts.ide_name)
            .args(&opts.extra_args)
            .envs(crate::confined_env(&opts.home))
            .env("CLAUDE_CONFIG_DIR", &opts.config_dir)
            .env("RUST_LOG", &opts.rust_log)
            .env_remove("CLAUDE_CODE_SSE_PORT")
            .envs(opts.extra_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log));
        let mut child = cmd
            .spawn()
            .map_err(|e| io::Error::other(format!("cannot spawn {}: {e}", opts.bin.display())))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let stdin = Arc::new(Mutex::new(Some(stdin)));
        let reader_shared = shared.clone();
        let reader_stdin = stdin.clone();
        std::thread::Builder::new()
            .name("editor-reader".into())
            .spawn(move || reader_loop(stdout, reader_shared, reader_stdin))?;
        Ok(Editor {
            child,
            stdin,
            shared,
            next_id: Mutex::new(1),
            log_file: opts.log_file.clone(),
            lock_dir: opts.config_dir.join("ide"),
        })
    }

    /// ccbridge's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_file).unwrap_or_default()
    }

    /// Path of ccbridge's log file.
    pub fn log_path(&self) -> &Path {
        &self.log_file
    }

    /// ccbridge's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn error(&self, what: impl Into<String>) -> EditorError {
        let seen = self
            .shared
            .state
            .lock()
            .unwrap()
            .history
            .iter()
            .map(summarize)
            .collect();
        EditorError {
            what: what.into(),
            seen,
            log_tail: crate::tail(&self.log(), 60),
        }
    }

    fn send(&self, v: &Value) -> Result<(), EditorError> {
        // Never hold the stdin lock while taking the state lock (the reader
        // thread takes them in the other order).
        let result = match self.stdin.lock().unwrap().as_mut() {
            Some(stdin) => write_frame(stdin, v).map_err(|e| format!("writing to ccbridge: {e}")),
            None => Err("ccbridge's stdin is closed".to_string()),
        };
        result.map_err(|e| self.error(e))
    }

    /// Sends a request and waits for its response; `Ok(result)` or
    /// `Err` describing the error response.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, EditorError> {
        let id = {
            let mut n = self.next_id.lock().unwrap();
            *n += 1;
            *n
        };
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let answer = crate::wait_on(&self.shared.state, &self.shared.changed, timeout, |st| {
            if let Some(resp) = st.responses.remove(&id) {
                return Some(Some(resp));
            }
            st.closed.then_some(None)
        });
        match answer {
            Ok(Some(resp)) => match resp.get("error") {
                Some(err) => Err(self.error(format!("{method} failed: {err}"))),
                None => Ok(resp.get("result").cloned().unwrap_or(Value::Null)),
            },
            Ok(None) => Err(self.error(format!(
                "ccbridge closed its stdout before answering {method}"
            ))),
            Err(guard) => {
                drop(guard);
                Err(self.error(format!("no answer to {method} within {timeout:?}")))
            }
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) -> Result<(), EditorError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// `initialize` with protocol version 1, the given ideName and full
    /// diff/openFile capabilities; returns the result.
    pub fn initialize(&self, ide_name: &str, timeout: Duration) -> Result<Value, EditorError> {
        self.request(
            "initialize",
            json!({
                "protocolVersion": 1,
                "ideName": ide_name,
                "capabilities": {"diff": true, "openFile": true, "saveDocument": true,
                                 "closeTab": true, "reformat": false, "executeCode": false},
            }),
            timeout,
        )
    }

    /// Answers an incoming request with `result`.
    pub fn respond(&self, id: &Value, result: Value) -> Result<(), EditorError> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }

    /// Answers an incoming request with an error.
    pub fn respond_error(&self, id: &Value, code: i64, message: &str) -> Result<(), EditorError> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
    }

    /// From now on, answer requests named `method` at once with `result`
    /// (they still appear in the history, not in the queue).
    pub fn auto_reply(&self, method: &str, result: Value) {
        self.shared
            .state
            .lock()
            .unwrap()
            .auto
            .insert(method.to_string(), result);
    }

    /// Takes the first queued message (request or notification) named
    /// `method` that satisfies `pred`, waiting up to `timeout`.
    pub fn expect(
        &self,
        method: &str,
        timeout: Duration,
        pred: impl Fn(&Incoming) -> bool,
    ) -> Result<Incoming, EditorError> {
        let found = crate::wait_on(&self.shared.state, &self.shared.changed, timeout, |st| {
            if let Some(i) = st.queue.iter().position(|m| m.method == method && pred(m)) {
                return Some(Ok(st.queue.remove(i)));
            }
            st.closed
                .then_some(Err("ccbridge closed its stdout".to_string()))
        });
        match found {
            Ok(Ok(m)) => Ok(m),
            Ok(Err(why)) => Err(self.error(format!("expected {method} from ccbridge: {why}"))),
            Err(guard) => {
                drop(guard);
                Err(self.error(format!(
                    "expected {method} from ccbridge: nothing within {timeout:?}"
                )))
            }
        }
    }

    /// Waits for an incoming request named `method` (to be answered with
    /// [`Editor::respond`]).
    pub fn expect_request(&self, method: &str, timeout: Duration) -> Result<Incoming, EditorError> {
        self.expect(method, timeout, |m| m.id.is_some())
    }

    /// Waits for a notification named `method`; returns its params.
    pub fn expect_notification(
        &self,
        method: &str,
        timeout: Duration,
    ) -> Result<Value, EditorError> {
        self.expect(method, timeout, |m| m.id.is_none())
            .map(|m| m.params)
    }

    /// Waits until the history (everything received, taken or not) holds a
    /// message named `method` satisfying `pred`.
    pub fn wait_seen(
        &self,
        method: &str,
        timeout: Duration,
        pred: impl Fn(&Incoming) -> bool,
    ) -> Result<Incoming, EditorError> {
        let found = crate::wait_on(&self.shared.state, &self.shared.changed, timeout, |st| {
            let seen = st.history.iter().find(|m| m.method == method && pred(m));
            match seen {
                Some(m) => Some(Some(m.clone())),
                None => st.closed.then_some(None),
            }
        });
        // The guard (if any) must go before `self.error` locks the state.
        let found = found.unwrap_or(None);
        found.ok_or_else(|| {
            self.error(format!(
                "expected ccbridge to send {method} within {timeout:?}"
            ))
        })
    }

    /// Everything received so far named `method`.
    pub fn seen(&self, method: &str) -> Vec<Incoming> {
        self.shared
            .state
            .lock()
            .unwrap()
            .history
            .iter()
            .filter(|m| m.method == method)
            .cloned()
            .collect()
    }

    /// Waits for ccbridge's lock file in `<config_dir>/ide/` and parses it.
    pub fn wait_lock_file(&self, timeout: Duration) -> Result<LockFile, EditorError> {
        let found = crate::poll_until(timeout, Duration::from_millis(50), || {
            let entries = std::fs::read_dir(&self.lock_dir).ok()?;
            for e in entries.flatten() {
                let path = e.path();
                let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                let Some(port) = name.strip_suffix(".lock").and_then(|p| p.parse().ok()) else {
                    continue;
                };
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let Ok(json) = serde_json::from_str::<Value>(&text) else {
                    continue; // being written
                };
                let auth_token = json
                    .get("authToken")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                return Some(LockFile {
                    path,
                    port,
                    auth_token,
                    json,
                });
            }
            None
        });
        found.ok_or_else(|| {
            self.error(format!(
                "no lock file appeared in {} within {timeout:?}",
                self.lock_dir.display()
            ))
        })
    }

    /// Closes ccbridge's stdin (the editor "quits") and waits up to `timeout`
    /// for it to exit; returns its exit code.
    pub fn close(&mut self, timeout: Duration) -> Result<Option<i32>, EditorError> {
        self.stdin.lock().unwrap().take();
        let child = &mut self.child;
        let status = crate::poll_until(timeout, Duration::from_millis(50), || {
            child.try_wait().ok().flatten()
        });
        match status {
            Some(s) => Ok(s.code()),
            None => Err(self.error(format!(
                "ccbridge did not exit within {timeout:?} after stdin closed"
            ))),
        }
    }
}

impl Drop for Editor {
    fn drop(&mut self) {
        self.stdin.lock().unwrap().take();
        let child = &mut self.child;
        let exited = crate::poll_until(Duration::from_secs(3), Duration::from_millis(50), || {
            child.try_wait().ok().flatten()
        });
        if exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn reader_loop(
    stdout: std::process::ChildStdout,
    shared: Arc<Shared>,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
) {
    let mut r = BufReader::new(stdout);
    loop {
        let msg = match read_frame(&mut r) {
            Ok(Some(v)) => v,
            Ok(None) => break,
            Err(e) => {
                let mut st = shared.state.lock().unwrap();
                st.history.push(Incoming {
                    id: None,
                    method: "<protocol error>".into(),
                    params: Value::String(e.to_string()),
                    at: Instant::now(),
                });
                break;
            }
        };
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        let id = msg.get("id").cloned().filter(|v| !v.is_null());
        let mut st = shared.state.lock().unwrap();
        match method {
            None => {
                if let Some(n) = id.as_ref().and_then(Value::as_u64) {
                    st.responses.insert(n, msg);
                }
            }
            Some(method) => {
                let incoming = Incoming {
                    id: id.clone(),
                    method: method.clone(),
                    params: msg.get("params").cloned().unwrap_or(Value::Null),
                    at: Instant::now(),
                };
                st.history.push(incoming.clone());
                let auto = id.as_ref().and(st.auto.get(&method).cloned());
                match (auto, id) {
                    (Some(result), Some(id)) => {
                        if let Some(w) = stdin.lock().unwrap().as_mut() {
                            let _ = write_frame(
                                w,
                                &json!({"jsonrpc": "2.0", "id": id, "result": result}),
                            );
                        }
                    }
                    _ => st.queue.push(incoming),
                }
            }
        }
        drop(st);
        shared.changed.notify_all();
    }
    shared.state.lock().unwrap().closed = true;
    shared.changed.notify_all();
}
