//! What one message may cost (issue 11, defect 8), measured on the real
//! binary: its peak resident memory (`VmHWM`) while it handles a large
//! message, and its resident memory (`VmRSS`) once the burst is over.
//!
//! Before the fix a 15 MiB WebSocket message with 1.3 million keys grew
//! ccbridge by 185 MiB (everything was parsed into a `serde_json::Value`
//! first), 16 of them by 578 MiB that was never given back, and a 60 MB
//! `selectionChanged` from the editor peaked at 590 MB. Now a message costs
//! a small multiple of its size (the bound asserted is 4×) and memory goes
//! back to the OS when the burst is over.
//!
//! These are allocation counts, not timings: the same on a busy machine.

use ccbridge_protocol::lockfile::LockFile;
use ccbridge_testkit::{lock_files, poll_until, Confined};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message as Ws;

/// How often the tests look again while waiting for a condition.
const POLL: Duration = Duration::from_millis(20);

const BIN: &str = env!("CARGO_BIN_EXE_ccbridge");
const MIB: u64 = 1 << 20;

struct Proc {
    child: Child,
    _cfg: tempfile::TempDir,
    _ws: tempfile::TempDir,
    port: u16,
    token: String,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

fn rss(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:") * 1024
}

fn peak(pid: u32) -> u64 {
    status_kib(pid, "VmHWM:") * 1024
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    f.extend_from_slice(body);
    f
}

impl Proc {
    fn start() -> Proc {
        let cfg = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let child = Command::new(BIN)
            .args(["serve", "--stdio", "--multi-client", "--workspace"])
            .arg(ws.path())
            .confined_to(cfg.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lock = poll_until(Duration::from_secs(10), POLL, || {
            lock_files(&cfg.path().join("ide")).into_iter().next()
        })
        .expect("the lock file appears");
        let token = LockFile::parse(&std::fs::read(&lock).unwrap())
            .unwrap()
            .auth_token
            .unwrap();
        let port =
            LockFile::port_from_file_name(lock.file_name().unwrap().to_str().unwrap()).unwrap();
        Proc {
            child,
            _cfg: cfg,
            _ws: ws,
            port,
            token,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A Claude-like client, initialized.
    async fn client(
        &self,
    ) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>
    {
        let req = ccbridge_client::ws_client::handshake_request(self.port, Some(&self.token), true)
            .unwrap();
        let config = WebSocketConfig::default().max_message_size(Some(64 << 20));
        let (mut ws, _) = tokio_tungstenite::connect_async_with_config(req, Some(config), false)
            .await
            .unwrap();
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"claude-code","version":"2.1.328"}}});
        ws.send(Ws::text(init.to_string())).await.unwrap();
        answer(&mut ws, 0).await;
        ws
    }

    /// Waits (bounded) until memory is back within `slack` of `baseline`.
    fn assert_memory_returned(&self, baseline: u64, slack: u64, what: &str) {
        let settled = poll_until(Duration::from_secs(10), POLL, || {
            (rss(self.pid()) <= baseline + slack).then_some(())
        });
        assert!(
            settled.is_some(),
            "{what}: memory was not given back: RSS {} MiB, baseline {} MiB",
            rss(self.pid()) / MIB,
            baseline / MIB
        );
    }
}

async fn answer<S>(ws: &mut tokio_tungstenite::WebSocketStream<S>, id: i64) -> Value
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        let m = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("an answer in time")
            .expect("open")
            .expect("no error");
        if let Ws::Text(t) = m {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }
}

/// A `tools/call` of about `size` bytes whose arguments hold a million or
/// so keys the tool never reads.
fn key_bomb(id: i64, size: usize) -> String {
    let mut args = String::with_capacity(size + 64);
    args.push('{');
    let mut i = 0u64;
    while args.len() < size {
        use std::fmt::Write as _;
        let _ = write!(args, "\"k{i}\":0,");
        i += 1;
    }
    args.push_str("\"end\":0}");
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"getWorkspaceFolders","arguments":{args}}}}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_key_bomb_costs_a_small_multiple_of_its_size() {
    let p = Proc::start();
    let mut c = p.client().await;
    let size = 15 * MIB as usize;
    let msg = key_bomb(1, size);
    assert!(msg.matches("\"k").count() > 1_000_000);
    let baseline = rss(p.pid());
    let before = peak(p.pid());
    c.send(Ws::text(msg)).await.unwrap();
    let r = answer(&mut c, 1).await;
    assert!(r["result"]["content"].is_array(), "{r}");
    let grew = peak(p.pid()).saturating_sub(before.max(baseline));
    assert!(
        grew < 4 * size as u64,
        "a {} MiB message raised the peak by {} MiB (bound: 4x)",
        size as u64 / MIB,
        grew / MIB
    );
    p.assert_memory_returned(baseline, 16 * MIB, "one key bomb");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_burst_of_large_messages_gives_its_memory_back() {
    let p = Proc::start();
    let size = 15 * MIB as usize;
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(p.client().await);
    }
    let baseline = rss(p.pid());
    let msg = key_bomb(7, size);
    let sends = clients.into_iter().map(|mut c| {
        let msg = msg.clone();
        tokio::spawn(async move {
            c.send(Ws::text(msg)).await.unwrap();
            answer(&mut c, 7).await;
            c
        })
    });
    let clients: Vec<_> = futures_util::future::join_all(sends).await;
    let clients: Vec<_> = clients.into_iter().map(Result::unwrap).collect();
    // While a connection stays open, tungstenite keeps the read buffer its
    // largest frame needed (up to the 16 MiB message limit) for reuse:
    // allow about one and a half of it per connection.
    let frame_buffers = clients.len() as u64 * 24 * MIB;
    p.assert_memory_returned(
        baseline,
        frame_buffers + 32 * MIB,
        "8 key bombs at once, connections open",
    );
    for mut c in clients {
        c.close(None).await.unwrap();
    }

    p.assert_memory_returned(
        baseline,
        16 * MIB,
        "8 key bombs at once, connections closed",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_huge_selection_from_the_editor_costs_a_small_multiple() {
    let mut p = Proc::start();
    let size = 60_000_000usize;
    let text = "x".repeat(size);
    let note = json!({"jsonrpc":"2.0","method":"selectionChanged","params":{
        "filePath":"/w/big.txt","text":text,
        "selection":{"start":{"line":0,"character":0},"end":{"line":0,"character":5}}}});
    let bytes = frame(note.to_string().as_bytes());
    drop(text);
    drop(note);
    let baseline = rss(p.pid());
    let before = peak(p.pid());
    let stdin = p.child.stdin.as_mut().unwrap();
    stdin.write_all(&bytes).unwrap();
    // Ask Claude's way until the engine has the selection (bounded).
    let mut c = p.client().await;
    let mut latest = Value::Null;
    for id in 2..200 {
        c.send(Ws::text(
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                   "params":{"name":"getLatestSelection","arguments":{}}})
            .to_string(),
        ))
        .await
        .unwrap();
        let sel = answer(&mut c, id).await;
        let text = sel["result"]["content"][0]["text"].as_str().unwrap();
        latest = serde_json::from_str(text).unwrap();
        if latest["filePath"] == "/w/big.txt" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(latest["filePath"], "/w/big.txt", "the selection arrives");
    let kept = latest["text"].as_str().unwrap().len() as u64;
    assert!(
        (MIB - 8..=MIB).contains(&kept),
        "the selection text is capped at 1 MiB: {kept}"
    );
    let grew = peak(p.pid()).saturating_sub(before.max(baseline));
    assert!(
        grew < 4 * size as u64,
        "a {} MB selection raised the peak by {} MiB (bound: 4x)",
        size / 1_000_000,
        grew / MIB
    );
    p.assert_memory_returned(baseline, 16 * MIB, "a 60 MB selection");
}
