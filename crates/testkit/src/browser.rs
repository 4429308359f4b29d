//! A real browser for tests: Debian's Chromium driven by playwright-core
//! through `tests/e2e/driver.mjs`, one JSON command per line.
//!
//! The scenario stays in Rust; the driver only translates commands. Every
//! command waits for its answer with a bound, and a failed command returns
//! the driver's error text (Playwright says which selector or condition
//! timed out). Pages are named, share one browser context (cookies, like
//! tabs of one browser), and report their console errors.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The longest any one command may take.
const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// The node_modules directory that holds playwright-core.
pub fn e2e_modules() -> Result<PathBuf, String> {
    let dir = crate::e2e_dir().join("node_modules");
    if dir.join("playwright-core").is_dir() {
        Ok(dir)
    } else {
        Err(format!(
            "playwright-core is missing from {}: run scripts/test, which installs it",
            dir.display()
        ))
    }
}

/// Debian's Chromium (`$CHROMIUM` overrides).
pub fn chromium() -> Result<PathBuf, String> {
    let p = PathBuf::from(std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()));
    if p.exists() {
        Ok(p)
    } else {
        Err(format!(
            "Chromium is missing at {}: run scripts/test, which installs Debian's chromium",
            p.display()
        ))
    }
}

/// A running browser.
pub struct Browser {
    child: Child,
    input: ChildStdin,
    answers: mpsc::Receiver<Value>,
    next: u64,
}

impl Browser {
    /// Starts Chromium; panics with what to install when it cannot.
    pub fn launch() -> Browser {
        let modules = e2e_modules().unwrap_or_else(|e| panic!("{e}"));
        let chromium = chromium().unwrap_or_else(|e| panic!("{e}"));
        let driver = crate::claude::workspace_root().join("tests/e2e/driver.mjs");
        let mut child = Command::new("node")
            .arg(driver)
            .env("CCBRIDGE_E2E_MODULES", modules)
            .env("CHROMIUM", chromium)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run node for the browser driver: {e}"));
        let input = child.stdin.take().expect("stdin");
        let output: ChildStdout = child.stdout.take().expect("stdout");
        let (tx, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        Browser {
            child,
            input,
            answers,
            next: 0,
        }
    }

    /// Sends one command and waits for its answer.
    pub fn run(&mut self, op: &str, mut args: Value) -> Result<Value, String> {
        self.next += 1;
        let id = self.next;
        args["id"] = json!(id);
        args["op"] = json!(op);
        writeln!(self.input, "{args}").map_err(|e| format!("the driver is gone: {e}"))?;
        let _ = self.input.flush();
        loop {
            let a = self
                .answers
                .recv_timeout(COMMAND_LIMIT)
                .map_err(|e| match e {
                    mpsc::RecvTimeoutError::Timeout => {
                        format!("the browser did not answer {op} within {COMMAND_LIMIT:?}")
                    }
                    mpsc::RecvTimeoutError::Disconnected => {
                        format!(
                            "the browser driver exited before answering {op} (its error is above)"
                        )
                    }
                })?;
            if a["id"] == id {
                return if a["ok"] == true {
                    Ok(a["value"].clone())
                } else {
                    Err(a["error"].as_str().unwrap_or("unknown error").to_owned())
                };
            }
        }
    }

    /// [`Browser::run`], panicking with the driver's error.
    pub fn must(&mut self, op: &str, args: Value) -> Value {
        self.run(op, args.clone())
            .unwrap_or_else(|e| panic!("browser {op} {args}: {e}"))
    }

    /// Opens a named page with a colour scheme (`light` or `dark`).
    pub fn new_page(&mut self, name: &str, color_scheme: &str) {
        self.must(
            "newPage",
            json!({"page": name, "colorScheme": color_scheme}),
        );
    }

    pub fn goto(&mut self, page: &str, url: &str) {
        self.must("goto", json!({"page": page, "url": url}));
    }

    /// Runs `source` (a script) in the page before the page's own scripts,
    /// on every navigation from now on.
    pub fn init_script(&mut self, page: &str, source: &str) {
        self.must("initScript", json!({"page": page, "source": source}));
    }

    pub fn wait_for(&mut self, page: &str, selector: &str) {
        self.must("waitFor", json!({"page": page, "selector": selector}));
    }

    /// Waits until `selector` matches nothing.
    pub fn wait_gone(&mut self, page: &str, selector: &str) {
        self.must(
            "waitFor",
            json!({"page": page, "selector": selector, "state": "detached"}),
        );
    }

    pub fn click(&mut self, page: &str, selector: &str) {
        self.must("click", json!({"page": page, "selector": selector}));
    }

    pub fn press(&mut self, page: &str, key: &str) {
        self.must("press", json!({"page": page, "key": key}));
    }

    pub fn type_text(&mut self, page: &str, text: &str) {
        self.must("type", json!({"page": page, "text": text}));
    }

    pub fn text(&mut self, page: &str, selector: &str) -> String {
        self.must("text", json!({"page": page, "selector": selector}))
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub fn count(&mut self, page: &str, selector: &str) -> u64 {
        self.must("count", json!({"page": page, "selector": selector}))
            .as_u64()
            .unwrap_or(0)
    }

    /// An attribute of the first element `selector` matches.
    pub fn attribute(&mut self, page: &str, selector: &str, attribute: &str) -> Option<String> {
        self.must(
            "attribute",
            json!({"page": page, "selector": selector, "attribute": attribute}),
        )
        .as_str()
        .map(str::to_owned)
    }

    /// Calls the JavaScript function `fn_src` in the page with `arg`.
    pub fn eval(&mut self, page: &str, fn_src: &str, arg: Value) -> Value {
        self.must("eval", json!({"page": page, "fn": fn_src, "arg": arg}))
    }

    /// Waits until the JavaScript function `fn_src(arg)` returns something
    /// truthy in the page; returns it.
    pub fn wait_until(&mut self, page: &str, fn_src: &str, arg: Value) -> Value {
        self.must(
            "waitForFunction",
            json!({"page": page, "fn": fn_src, "arg": arg}),
        )
    }

    pub fn screenshot(&mut self, page: &str, path: &std::path::Path) {
        self.must(
            "screenshot",
            json!({"page": page, "path": path, "fullPage": false}),
        );
    }

    /// Console errors and uncaught exceptions since the last call.
    pub fn console_errors(&mut self) -> Vec<String> {
        self.must("consoleErrors", json!({}))
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
