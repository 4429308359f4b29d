//! Benchmarks of the browser UI (`ccbridge serve`), each beside the same
//! path through the sidecar (`ccbridge serve --stdio`), the least any face
//! of ccbridge can take: how long until a diff Claude proposes is drawn in
//! the page (against: until an editor plugin has the `showDiff` frame), how
//! long a page load with a 20,000-line review takes to become interactive,
//! how long a selection made in the page takes to reach Claude, and what the
//! server holds in memory with the page open.
//!
//! The page is the real one, in Debian's Chromium (headless, driven through
//! `ccbridge_testkit::browser`), with timing probes (`probe.js`) installed
//! before its own scripts. Page-side times are epoch milliseconds from
//! `performance.timeOrigin + performance.now()`, compared with this
//! process's `SystemTime` on the same machine: both read the same clock.

use crate::client::{is_notification, Client, WAIT};
use crate::process::rss_kib;
use anyhow::{bail, Context};
use ccbridge_testkit::editor::{Editor, EditorOptions};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The page-side probes (see the file).
pub const PROBE: &str = include_str!("probe.js");

/// Now, in microseconds since the epoch.
pub fn epoch_us() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1e6
}

/// From `start_us` to `end_us` (epoch µs); clocks read a hair apart never
/// make it negative.
pub fn between(start_us: f64, end_us: f64) -> Duration {
    Duration::from_secs_f64(((end_us - start_us) / 1e6).max(0.0))
}

/// From `start_us` (epoch µs) to a page-side time (epoch milliseconds).
pub fn since(start_us: f64, page_ms: &Value) -> anyhow::Result<Duration> {
    let end_ms = page_ms
        .as_f64()
        .with_context(|| format!("the page answered {page_ms} instead of a time"))?;
    Ok(between(start_us, end_ms * 1e3))
}

/// The files of the benchmark workspace.
pub struct Fixture {
    pub small: (String, String),
    pub big: (String, String),
    /// Lines of the file the selection benchmark selects in (all distinct).
    pub viewed: Vec<String>,
    /// A proposal of many one-line hunks, all alike (see [`hunk_file`]),
    /// for per-hunk decisions: 2,000 hunks, and 20 for the baseline.
    pub many_hunks: (String, String),
    pub few_hunks: (String, String),
}

/// A file of `5 * hunks` lines and a proposal changing every fifth line
/// the same way (`.lock().unwrap()` to `.lock().expect(…)`, as a
/// `replace_all` does): `hunks` one-line hunks that differ only in where
/// they are.
pub fn hunk_file(hunks: usize) -> (String, String) {
    let old: String = (0..hunks * 5)
        .map(|i| {
            if i % 5 == 2 {
                "    let guard = state.lock().unwrap();\n".to_owned()
            } else {
                format!("    step_{i}(&mut context);\n")
            }
        })
        .collect();
    let new = old.replace(".lock().unwrap()", ".lock().expect(\"state poisoned\")");
    (old, new)
}

impl Fixture {
    pub fn new(big_lines: usize) -> Fixture {
        let small_old: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let small_new = small_old
            .replace("line 3\n", "line three\n")
            .replace("line 15\n", "line fifteen\nand one more\n");
        let big_old: String = (0..big_lines)
            .map(|i| format!("    value_{i} = compute({i}, \"{}\")\n", i * 7 % 13))
            .collect();
        // Ten changed lines every 100: 2,000 changed lines in 200 hunks of
        // a 20,000-line file.
        let big_new: String = big_old
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if (50..60).contains(&(i % 100)) {
                    format!("{l}  # reviewed\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let viewed = (0..40)
            .map(|i| format!("def function_{i}(argument): return argument * {i}"))
            .collect();
        Fixture {
            small: (small_old, small_new),
            big: (big_old, big_new),
            viewed,
            many_hunks: hunk_file(2_000),
            few_hunks: hunk_file(20),
        }
    }

    /// Writes `small.txt`, `big.py`, `viewed.py`, `many_hunks.rs` and
    /// `few_hunks.rs` into `dir`.
    fn write(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::write(dir.join("small.txt"), &self.small.0)?;
        std::fs::write(dir.join("big.py"), &self.big.0)?;
        std::fs::write(dir.join("viewed.py"), self.viewed.join("\n") + "\n")?;
        std::fs::write(dir.join("many_hunks.rs"), &self.many_hunks.0)?;
        std::fs::write(dir.join("few_hunks.rs"), &self.few_hunks.0)
    }
}

/// A fresh directory tree for one server: `config/` (`CLAUDE_CONFIG_DIR`),
/// `home/` and `work/` (the workspace, with the fixture's files).
struct Dirs {
    _root: tempfile::TempDir,
    config: PathBuf,
    home: PathBuf,
    work: PathBuf,
}

impl Dirs {
    fn new(fixture: &Fixture) -> anyhow::Result<Dirs> {
        Dirs::with(|work| Ok(fixture.write(work)?))
    }

    /// The tree, `fill` writing the workspace's files.
    fn with(fill: impl FnOnce(&Path) -> anyhow::Result<()>) -> anyhow::Result<Dirs> {
        let root = tempfile::Builder::new()
            .prefix("ccbridge-ui-bench-")
            .tempdir()?;
        let base = root.path().canonicalize()?;
        let (config, home, work) = (base.join("config"), base.join("home"), base.join("work"));
        for d in [&config, &home, &work] {
            std::fs::create_dir_all(d)?;
        }
        fill(&work)?;
        Ok(Dirs {
            _root: root,
            config,
            home,
            work,
        })
    }
}

/// The port and token of the one lock file in `config/ide`.
fn endpoint(config: &Path) -> anyhow::Result<(u16, String)> {
    let path = crate::process::find_lock(&config.join("ide"))
        .with_context(|| format!("no lock file in {}", config.join("ide").display()))?;
    let lock = ccbridge_protocol::lockfile::LockFile::parse(&std::fs::read(&path)?)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let port = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("lock file name {}", path.display()))?;
    Ok((port, lock.auth_token.context("no authToken")?))
}

/// `ccbridge serve` (the browser UI) as a process.
pub struct UiServer {
    child: Child,
    dirs: Dirs,
    /// The printed one-time link.
    pub link: String,
    pub port: u16,
    pub token: String,
}

impl UiServer {
    /// Starts `serve --multi-client --selection-debounce-ms 0` in a
    /// workspace with the fixture's files and reads the link it prints.
    pub fn spawn(bin: &Path, fixture: &Fixture) -> anyhow::Result<UiServer> {
        UiServer::start(bin, Dirs::new(fixture)?, &[])
    }

    /// As [`UiServer::spawn`], in a workspace `fill` writes, with `args`
    /// after the usual ones (`--no-language-servers`, say).
    pub fn spawn_with(
        bin: &Path,
        fill: impl FnOnce(&Path) -> anyhow::Result<()>,
        args: &[std::ffi::OsString],
    ) -> anyhow::Result<UiServer> {
        UiServer::start(bin, Dirs::with(fill)?, args)
    }

    fn start(bin: &Path, dirs: Dirs, args: &[std::ffi::OsString]) -> anyhow::Result<UiServer> {
        let mut child = Command::new(bin)
            .args(["serve", "--multi-client", "--selection-debounce-ms", "0"])
            .args(["--ide-name", "ccbridge-ui-bench"])
            .args(args)
            .arg("--workspace")
            .arg(&dirs.work)
            .current_dir(&dirs.work)
            .env("CLAUDE_CONFIG_DIR", &dirs.config)
            .env("HOME", &dirs.home)
            .env_remove("CCBRIDGE_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot run {}", bin.display()))?;
        let stdout = child.stdout.take().context("stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let link = line
                    .split_whitespace()
                    .find(|w| w.starts_with("http://") && w.contains("/#token="));
                if let Some(link) = link {
                    let _ = tx.send(link.to_owned());
                }
            }
        });
        let link = rx
            .recv_timeout(WAIT)
            .context("`ccbridge serve` printed no link")?;
        let (port, token) = endpoint(&dirs.config)?;
        Ok(UiServer {
            child,
            dirs,
            link,
            port,
            token,
        })
    }

    /// The page's address without the (used) token.
    pub fn base_url(&self) -> &str {
        self.link
            .split_once('#')
            .map_or(&self.link, |(base, _)| base)
    }

    pub fn workspace(&self) -> &Path {
        &self.dirs.work
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        rss_kib(self.child.id())
    }

    /// SIGTERM, then waits (bounded) for a clean exit.
    pub fn stop(mut self) -> anyhow::Result<()> {
        match terminate(&mut self.child, Duration::from_secs(5))? {
            Some(status) if !status.success() => bail!("`ccbridge serve` exited with {status}"),
            Some(_) => Ok(()),
            None => bail!("`ccbridge serve` did not exit within 5 s of SIGTERM"),
        }
    }
}

/// Sends `child` SIGTERM (as a user stops ccbridge) and waits up to
/// `within` for it to exit; its status, or `None` while it still runs.
fn terminate(
    child: &mut Child,
    within: Duration,
) -> anyhow::Result<Option<std::process::ExitStatus>> {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM)?;
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(None)
}

/// Not stopped by [`UiServer::stop`] (a failed run): SIGTERM first, so
/// ccbridge stops what it started (its language servers), then SIGKILL.
impl Drop for UiServer {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_some() {
            return;
        }
        if let Ok(Some(_)) = terminate(&mut self.child, Duration::from_secs(10)) {
            return;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ccbridge serve --stdio` with a scripted editor that shows every diff at
/// once (the baseline).
pub struct Sidecar {
    pub editor: Editor,
    _dirs: Dirs,
    pub port: u16,
    pub token: String,
    pub workspace: PathBuf,
}

impl Sidecar {
    pub fn spawn(bin: &Path, fixture: &Fixture) -> anyhow::Result<Sidecar> {
        let dirs = Dirs::new(fixture)?;
        let opts = EditorOptions {
            bin: bin.to_owned(),
            workspace: dirs.work.clone(),
            ide_name: "ccbridge-ui-bench".into(),
            config_dir: dirs.config.clone(),
            home: dirs.home.clone(),
            log_file: dirs.home.join("ccbridge.log"),
            rust_log: "warn".into(),
            extra_args: ["--multi-client", "--selection-debounce-ms", "0"]
                .map(String::from)
                .to_vec(),
            extra_env: Vec::new(),
        };
        let editor = Editor::spawn(&opts)?;
        editor
            .initialize("ccbridge-ui-bench", WAIT)
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        editor.auto_reply("showDiff", Value::Null);
        editor.auto_reply("closeDiff", Value::Null);
        let lock = editor
            .wait_lock_file(WAIT)
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        Ok(Sidecar {
            editor,
            workspace: dirs.work.clone(),
            _dirs: dirs,
            port: lock.port,
            token: lock.auth_token,
        })
    }

    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        rss_kib(self.editor.pid())
    }

    /// When the editor had the `showDiff` for `tab`.
    pub fn shown_at(&self, tab: &str) -> anyhow::Result<Instant> {
        self.editor
            .wait_seen("showDiff", WAIT, |m| m.params["tabName"] == tab)
            .map(|m| m.at)
            .map_err(|e| anyhow::anyhow!("{e:?}"))
    }

    /// The editor reports a selection of line `n` of `lines` in `path`.
    /// Selects the first `k` whole lines of `path` (from the start of the
    /// file to the start of line `k`), as `first_lines` has them.
    pub fn select_first_lines(
        &self,
        path: &Path,
        lines: &[String],
        k: usize,
    ) -> anyhow::Result<()> {
        let params = json!({
            "filePath": path,
            "text": first_lines(lines, k),
            "selection": {"start": {"line": 0, "character": 0},
                          "end": {"line": k, "character": 0}},
        });
        self.editor
            .notify("selectionChanged", params)
            .map_err(|e| anyhow::anyhow!("{e:?}"))
    }
}

/// The text of the first `k` lines of a file of `lines`, each with its
/// newline: what a selection from the start to the start of line `k` holds.
pub fn first_lines(lines: &[String], k: usize) -> String {
    lines[..k].iter().map(|l| format!("{l}\n")).collect()
}

/// Claude's side of the diff benchmarks: one session proposes, another
/// closes the tab (as the CLI does after a verdict), which answers the
/// first's `openDiff`.
pub struct Proposer {
    opener: Client,
    closer: Client,
}

impl Proposer {
    pub async fn connect(port: u16, token: &str) -> anyhow::Result<Proposer> {
        Ok(Proposer {
            opener: Client::session(port, token).await?,
            closer: Client::session(port, token).await?,
        })
    }

    /// Sends `openDiff` and returns without waiting for its answer.
    pub async fn open(&mut self, path: &Path, contents: &str, tab: &str) -> anyhow::Result<u64> {
        let id = self.opener.id();
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "openDiff", "arguments": {
                "old_file_path": path, "new_file_path": path,
                "new_file_contents": contents, "tab_name": tab}}});
        self.opener.notify(&request.to_string()).await?;
        Ok(id)
    }

    /// Closes `tab` and waits for the `openDiff` it answers.
    pub async fn close(&mut self, tab: &str) -> anyhow::Result<()> {
        let id = self.closer.id();
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "close_tab", "arguments": {"tab_name": tab}}});
        self.closer.request(request.to_string()).await?;
        loop {
            let frame = self.opener.next_text().await?;
            if !is_notification(frame.as_str()) {
                if !frame.as_str().contains("DIFF_REJECTED") {
                    bail!("openDiff ended with {}", crate::fixture::truncate(&frame));
                }
                return Ok(());
            }
        }
    }
}

/// A Claude session that only listens: every `selection_changed` it gets,
/// with its text and when it arrived (epoch µs), on a channel.
pub async fn selection_listener(
    port: u16,
    token: &str,
) -> anyhow::Result<tokio::sync::mpsc::UnboundedReceiver<(String, f64)>> {
    let mut client = Client::session(port, token).await?;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok(frame) = client.next_text().await else {
                return;
            };
            let at = epoch_us();
            if !frame.as_str().contains("\"selection_changed\"") {
                continue;
            }
            let text = serde_json::from_str::<Value>(frame.as_str())
                .ok()
                .and_then(|v| v["params"]["text"].as_str().map(str::to_owned))
                .unwrap_or_default();
            if tx.send((text, at)).is_err() {
                return;
            }
        }
    });
    Ok(rx)
}

/// Waits for a `selection_changed` carrying `text`; returns its arrival.
pub async fn selection_arrival(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<(String, f64)>,
    text: &str,
) -> anyhow::Result<f64> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let got = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .with_context(|| format!("no selection_changed with {text:?} within {WAIT:?}"))?;
        match got {
            Some((t, at)) if t == text => return Ok(at),
            Some(_) => continue,
            None => bail!("the listening session was closed"),
        }
    }
}
