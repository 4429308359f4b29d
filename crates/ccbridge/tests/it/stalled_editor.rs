//! An editor that keeps ccbridge's stdout open but stops reading it
//! (issue 11, defect 1), through the real binary and a real WebSocket
//! client playing Claude Code.
//!
//! Before the fix every `openFile` Claude asked for was queued for the
//! editor forever: memory grew with every call, Claude's calls only ever
//! timed out, and once 64 KiB were queued the writer sat in a pipe write
//! that kept ccbridge from exiting on stdin EOF, SIGTERM or SIGINT. Now the
//! queue is bounded, further calls fail at once with a clear error, and
//! every way out finishes promptly, lock file removed.

use ccbridge_protocol::lockfile::LockFile;
use ccbridge_testkit::{poll_until, Confined};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message as Ws;

/// How often the tests look again while waiting for a condition.
const POLL: Duration = Duration::from_millis(10);

const BIN: &str = env!("CARGO_BIN_EXE_ccbridge");
/// How long ccbridge may take to exit once told to; before the fix it never did.
const EXIT_LIMIT: Duration = Duration::from_secs(5);

struct Stalled {
    child: Child,
    cfg: tempfile::TempDir,
    _ws: tempfile::TempDir,
    lock: PathBuf,
    port: u16,
    token: String,
}

fn frame(v: &Value) -> Vec<u8> {
    let body = v.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

impl Stalled {
    /// Starts ccbridge with an editor that declares `openFile`, then never
    /// reads stdout again.
    fn start() -> Stalled {
        let cfg = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(cfg.path().join("stderr.log")).unwrap();
        let mut child = Command::new(BIN)
            .args(["serve", "--stdio", "--workspace"])
            .arg(ws.path())
            .confined_to(cfg.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1, "capabilities": {"diff": true, "openFile": true}}});
        child
            .stdin
            .as_mut()
            .unwrap()
            .write_all(&frame(&init))
            .unwrap();
        let lock =
            ccbridge_testkit::wait_lock_file(&cfg.path().join("ide"), Duration::from_secs(10))
                .expect("the lock file appears");
        let parsed = LockFile::parse(&std::fs::read(&lock).unwrap()).unwrap();
        let port =
            LockFile::port_from_file_name(lock.file_name().unwrap().to_str().unwrap()).unwrap();
        Stalled {
            child,
            cfg,
            _ws: ws,
            lock,
            port,
            token: parsed.auth_token.unwrap(),
        }
    }

    /// Plays Claude: `calls` pipelined `openFile` calls with a long path.
    /// Returns how many answers said the editor is not reading, once
    /// `want` of them arrived (or all answers that came within a bound).
    async fn flood(&self, calls: usize, want: usize) -> usize {
        let req = ccbridge_client::ws_client::handshake_request(self.port, Some(&self.token), true)
            .unwrap();
        let (ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
        let (mut tx, mut rx) = ws.split();
        // Answers are read while calls are sent: a client that does not
        // read would stall ccbridge's writes to it.
        let reader = tokio::spawn(async move {
            let mut not_reading = 0;
            let end = tokio::time::Instant::now() + Duration::from_secs(60);
            while not_reading < want {
                let Ok(Some(Ok(Ws::Text(t)))) = tokio::time::timeout_at(end, rx.next()).await
                else {
                    break;
                };
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                let text = v["result"]["content"][0]["text"].as_str().unwrap_or("");
                if v["result"]["isError"] == true && text.contains("the editor is not reading") {
                    not_reading += 1;
                }
            }
            (not_reading, rx)
        });
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"claude-code","version":"2.1.328"}}});
        tx.send(Ws::text(init.to_string())).await.unwrap();
        let path = format!("/w/{}", "p".repeat(32 * 1024));
        for id in 1..=calls {
            let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                "params":{"name":"openFile","arguments":{"filePath": path}}});
            tx.send(Ws::text(call.to_string())).await.unwrap();
        }
        let (not_reading, _rx) = reader.await.unwrap();
        not_reading
    }

    fn signal(&self, sig: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, sig).unwrap();
    }

    /// Waits (bounded) for exit and checks the lock file is gone.
    fn assert_exits_cleanly(mut self, how: &str) {
        let status = poll_until(EXIT_LIMIT, POLL, || self.child.try_wait().unwrap());
        if status.is_none() {
            let _ = self.child.kill();
            let log = std::fs::read_to_string(self.cfg.path().join("stderr.log")).unwrap();
            panic!("ccbridge did not exit after {how} with a stalled editor\n{log}");
        }
        assert!(
            !self.lock.exists(),
            "the lock file outlived ccbridge ({how})"
        );
    }
}

async fn stall_then(how: &str, end: impl FnOnce(&mut Stalled)) {
    let mut s = Stalled::start();
    // 1,200 calls of 32 KiB each is 38 MiB for the editor: far over the
    // queue's bound, so most calls must fail at once.
    let not_reading = s.flood(1200, 600).await;
    assert!(
        not_reading >= 600,
        "calls beyond the bound fail at once with a clear error ({not_reading} did)"
    );
    let rss = rss_kib(s.child.id());
    assert!(
        rss < 200 * 1024,
        "memory stays bounded toward a stalled editor: {rss} KiB"
    );
    end(&mut s);
    s.assert_exits_cleanly(how);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_stalled_editor_sigterm_still_exits() {
    stall_then("SIGTERM", |s| s.signal(rustix::process::Signal::TERM)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_stalled_editor_sigint_still_exits() {
    stall_then("SIGINT", |s| s.signal(rustix::process::Signal::INT)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_stalled_editor_stdin_eof_still_exits() {
    stall_then("stdin EOF", |s| drop(s.child.stdin.take())).await;
}
