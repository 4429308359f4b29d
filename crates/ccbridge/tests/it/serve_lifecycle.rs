//! The sidecar's lock file over the process's whole life, through the real
//! binary: written at start (before the editor says anything), pointing at
//! the parent process, and removed on every way out — stdin closing,
//! `shutdown`, SIGINT, SIGTERM, SIGHUP.

use ccbridge_protocol::lockfile::LockFile;
use ccbridge_testkit::{lock_files, poll_until, Confined};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How often the tests look again while waiting for a condition.
const POLL: Duration = Duration::from_millis(10);

const BIN: &str = env!("CARGO_BIN_EXE_ccbridge");

struct Sidecar {
    child: Child,
    cfg: tempfile::TempDir,
    _ws: tempfile::TempDir,
}

impl Sidecar {
    fn start(extra: &[&str]) -> Sidecar {
        let cfg = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let child = Command::new(BIN)
            .args([
                "serve",
                "--stdio",
                "--ide-name",
                "LifecycleTest",
                "--workspace",
            ])
            .arg(ws.path())
            .args(extra)
            .confined_to(cfg.path())
            .env("CCBRIDGE_LOG", "debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Sidecar {
            child,
            cfg,
            _ws: ws,
        }
    }

    fn ide_dir(&self) -> PathBuf {
        self.cfg.path().join("ide")
    }

    fn wait_for_lock(&self) -> PathBuf {
        poll_until(Duration::from_secs(10), POLL, || {
            lock_files(&self.ide_dir()).into_iter().next()
        })
        .expect("the lock file appears at start")
    }

    fn signal(&self, sig: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, sig).unwrap();
    }

    /// Waits for exit; returns (success, stdout bytes, stderr text).
    fn finish(mut self) -> (bool, Vec<u8>, String, tempfile::TempDir) {
        let status = poll_until(Duration::from_secs(10), POLL, || {
            self.child.try_wait().unwrap()
        })
        .expect("ccbridge exits");
        let mut out = Vec::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status.success(), out, err, self.cfg)
    }
}

fn frame(json: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{json}", json.len()).into_bytes()
}

#[test]
fn lock_file_is_written_at_start_with_the_parent_pid() {
    let s = Sidecar::start(&[]);
    let path = s.wait_for_lock();
    let lock = LockFile::parse(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        lock.pid,
        Some(std::process::id()),
        "the pid is the spawning editor's"
    );
    assert_eq!(lock.ide_name, "LifecycleTest");
    assert_eq!(lock.transport, "ws");
    assert_eq!(lock.auth_token.as_ref().map(String::len), Some(64));
    let port = LockFile::port_from_file_name(path.file_name().unwrap().to_str().unwrap()).unwrap();
    assert!(
        port >= 10000,
        "OS-assigned ports are in the ephemeral range: {port}"
    );
    drop(s.child.stdin);
}

/// Security items 42 and 43 on the real process: the token is in no argv or
/// environment, and the port listens on 127.0.0.1 only.
#[test]
fn token_stays_out_of_argv_and_env_and_the_port_is_loopback_only() {
    let s = Sidecar::start(&[]);
    let path = s.wait_for_lock();
    let lock = LockFile::parse(&std::fs::read(&path).unwrap()).unwrap();
    let token = lock.auth_token.unwrap();
    let pid = s.child.id();
    for f in ["cmdline", "environ"] {
        let bytes = std::fs::read(format!("/proc/{pid}/{f}")).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&token),
            "the token is in /proc/{pid}/{f}"
        );
    }
    let port = LockFile::port_from_file_name(path.file_name().unwrap().to_str().unwrap()).unwrap();
    let want = format!(":{port:04X}");
    let listeners: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| t.lines().skip(1).map(str::to_owned).collect::<Vec<_>>())
        .filter(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // local_address ends with our port; state 0A = LISTEN
            cols.len() > 3 && cols[1].ends_with(&want) && cols[3] == "0A"
        })
        .collect();
    assert_eq!(
        listeners.len(),
        1,
        "exactly one listener on {port}: {listeners:?}"
    );
    assert!(
        listeners[0]
            .split_whitespace()
            .nth(1)
            .unwrap()
            .starts_with("0100007F:"),
        "bound to 127.0.0.1, never 0.0.0.0: {listeners:?}"
    );
    drop(s.child.stdin);
}

#[test]
fn explicit_pid_wins() {
    let s = Sidecar::start(&["--pid", "1"]);
    let lock = LockFile::parse(&std::fs::read(s.wait_for_lock()).unwrap()).unwrap();
    assert_eq!(lock.pid, Some(1));
}

#[test]
fn stdin_closing_removes_the_lock_file() {
    let mut s = Sidecar::start(&[]);
    let path = s.wait_for_lock();
    drop(s.child.stdin.take());
    let (ok, out, err, _cfg) = s.finish();
    assert!(ok, "{err}");
    assert!(!path.exists());
    assert!(
        out.is_empty(),
        "nothing but frames on stdout, and no frame was asked for"
    );
}

#[test]
fn shutdown_request_removes_the_lock_file_and_answers_first() {
    let mut s = Sidecar::start(&[]);
    let path = s.wait_for_lock();
    let mut stdin = s.child.stdin.take().unwrap();
    stdin
        .write_all(&frame(r#"{"jsonrpc":"2.0","id":7,"method":"shutdown"}"#))
        .unwrap();
    let (ok, out, err, _cfg) = s.finish();
    drop(stdin);
    assert!(ok, "{err}");
    assert!(!path.exists());
    let out = String::from_utf8(out).unwrap();
    assert!(out.starts_with("Content-Length: "), "{out}");
    assert!(
        out.contains(r#""id":7"#) && out.contains(r#""result":null"#),
        "{out}"
    );
}

fn signal_removes_lock(sig: rustix::process::Signal) {
    let s = Sidecar::start(&[]);
    let path = s.wait_for_lock();
    s.signal(sig);
    let (ok, _out, err, _cfg) = s.finish();
    assert!(ok, "exits cleanly on {sig:?}: {err}");
    assert!(!path.exists(), "lock file removed on {sig:?}");
}

#[test]
fn sigint_removes_the_lock_file() {
    signal_removes_lock(rustix::process::Signal::INT);
}

#[test]
fn sigterm_removes_the_lock_file() {
    signal_removes_lock(rustix::process::Signal::TERM);
}

#[test]
fn sighup_removes_the_lock_file() {
    signal_removes_lock(rustix::process::Signal::HUP);
}

/// An editor that quits closes the sidecar's stderr with its stdin. The
/// next log line failed to write; tracing-subscriber reported that with
/// `eprintln!`, which panics when stderr is closed: the sidecar ended in a
/// panic (exit 101), on its way out, wherever a line was logged.
#[test]
fn regression_a_closed_stderr_is_no_panic_on_the_way_out() {
    let mut s = Sidecar::start(&[]);
    let path = s.wait_for_lock();
    drop(s.child.stderr.take());
    drop(s.child.stdin.take());
    let status = poll_until(Duration::from_secs(10), POLL, || {
        s.child.try_wait().unwrap()
    })
    .expect("ccbridge exits");
    assert!(status.success(), "{status:?}");
    assert!(!path.exists(), "the lock file is removed");
    let left = |dir: &str| std::fs::read_dir(s.cfg.path().join(dir)).map_or(0, |d| d.count());
    assert_eq!(
        left(".qwen/ide") + left("gemini/ide"),
        0,
        "discovery files left"
    );
}

#[test]
fn stale_locks_are_swept_at_start_and_live_ones_kept() {
    let cfg = tempfile::tempdir().unwrap();
    let ide = cfg.path().join("ide");
    std::fs::create_dir_all(&ide).unwrap();
    let dead_pid = {
        let mut c = Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    };
    let dead = ide.join("11111.lock");
    let live = ide.join("22222.lock");
    std::fs::write(
        &dead,
        LockFile::new(dead_pid, vec![], "Old".into(), "t".into()).to_json(),
    )
    .unwrap();
    std::fs::write(
        &live,
        LockFile::new(std::process::id(), vec![], "Live".into(), "t".into()).to_json(),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--stdio", "--lock-dir"])
        .arg(&ide)
        .confined_to(cfg.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ours = poll_until(Duration::from_secs(10), POLL, || {
        lock_files(&ide)
            .into_iter()
            .find(|p| p != &dead && p != &live)
    })
    .expect("our lock file appears");
    poll_until(Duration::from_secs(10), POLL, || {
        (!dead.exists()).then_some(())
    })
    .expect("the dead editor's lock is swept, after ours is written");
    assert!(live.exists(), "a live editor's lock is never touched");
    drop(child.stdin.take());
    poll_until(Duration::from_secs(10), POLL, || child.try_wait().unwrap()).expect("exits");
    assert!(!ours.exists());
    assert!(live.exists());
}

/// Issue 11, defect 4: ccbridge killed with SIGKILL while its editor lives
/// on left a lock (pid = the editor) that neither the next server's sweep
/// nor `ccbridge clean` would remove ("process N is running"), so Claude
/// saw two servers for the folder.
#[test]
fn regression_lock_orphaned_by_sigkill_is_cleaned() {
    let s = Sidecar::start(&[]);
    let orphan = s.wait_for_lock();
    s.signal(rustix::process::Signal::KILL);
    let (_ok, _out, _err, cfg) = s.finish();
    assert!(orphan.exists(), "SIGKILL leaves the lock behind");
    let lock = LockFile::parse(&std::fs::read(&orphan).unwrap()).unwrap();
    assert_eq!(lock.pid, Some(std::process::id()), "the editor still runs");

    let out = Command::new(BIN)
        .args(["clean", "--dry-run"])
        .confined_to(cfg.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("would remove") && text.contains("server process"),
        "clean sees the orphan: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(orphan.exists(), "--dry-run removes nothing");

    // The next server started for the same editor sweeps it.
    let mut next = Command::new(BIN)
        .args(["serve", "--stdio", "--lock-dir"])
        .arg(cfg.path().join("ide"))
        .confined_to(cfg.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    poll_until(Duration::from_secs(10), POLL, || {
        (!orphan.exists()).then_some(())
    })
    .expect("the restarted server sweeps the orphaned lock");
    drop(next.stdin.take());
    poll_until(Duration::from_secs(10), POLL, || next.try_wait().unwrap()).expect("exits");
}

/// Issue 11, defect 6: every refused upgrade wrote a line at the default
/// level (1.6 MB of log in 5 s from one local process). Now the first is
/// logged and the rest summarised.
#[test]
fn regression_refused_upgrades_are_summarised_not_logged_one_by_one() {
    let cfg = tempfile::tempdir().unwrap();
    let ide = cfg.path().join("ide");
    let mut child = Command::new(BIN)
        .args(["serve", "--stdio", "--lock-dir"])
        .arg(&ide)
        .confined_to(cfg.path())
        .env_remove("CCBRIDGE_LOG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lock = poll_until(Duration::from_secs(10), POLL, || {
        lock_files(&ide).into_iter().next()
    })
    .expect("lock file");
    let port = LockFile::port_from_file_name(lock.file_name().unwrap().to_str().unwrap()).unwrap();
    let refused = 300;
    for i in 0..refused {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // Mostly a port scanner's POSTs (405); a few wrong tokens (401),
        // fewer than the throttle lets through without delay.
        let req = if i % 50 == 0 {
            format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Claude-Code-Ide-Authorization: wrong\r\n\r\n")
        } else {
            format!("POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\n\r\n")
        };
        s.write_all(req.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        assert!(answer.starts_with(b"HTTP/1.1 4"), "request {i} is refused");
    }
    drop(child.stdin.take());
    poll_until(Duration::from_secs(10), POLL, || child.try_wait().unwrap()).expect("exits");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("refused")).collect();
    assert!(
        lines.len() <= 2,
        "{} refusals made {} log lines:\n{}",
        refused,
        lines.len(),
        lines.join("\n")
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("{} more refused upgrades", refused - 1))),
        "the summary counts them: {err}"
    );
}

/// `--log-traffic` (issue 11, addition 14): what the editor sent and what
/// Claude was sent, in order, one JSON line each, the token redacted.
#[test]
fn log_traffic_records_both_sides_without_the_token() {
    use std::os::unix::fs::PermissionsExt;
    let traffic = tempfile::tempdir().unwrap();
    let file = traffic.path().join("traffic.jsonl");
    let mut s = Sidecar::start(&["--log-traffic", file.to_str().unwrap()]);
    let lock_path = s.wait_for_lock();
    let lock = LockFile::parse(&std::fs::read(&lock_path).unwrap()).unwrap();
    let token = lock.auth_token.unwrap();
    let port =
        LockFile::port_from_file_name(lock_path.file_name().unwrap().to_str().unwrap()).unwrap();
    let mut stdin = s.child.stdin.take().unwrap();
    stdin
        .write_all(&frame(
            r#"{"jsonrpc":"2.0","method":"selectionChanged","params":{"filePath":"/w/a.py","text":"x","selection":{"start":{"line":1,"character":0},"end":{"line":1,"character":1}}}}"#,
        ))
        .unwrap();
    // Claude connects (and sends the token in a message, which a careless
    // log would keep).
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message as Ws;
        let req = ccbridge_client::ws_client::handshake_request(port, Some(&token), true).unwrap();
        let (mut ws, _) = tokio_tungstenite::connect_async(req).await.unwrap();
        for m in [
            serde_json::json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"claude-code","version":"2.1.328"}}}),
            serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
            serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                "params":{"name":"getWorkspaceFolders","arguments":{"echo": token}}}),
        ] {
            ws.send(Ws::text(m.to_string())).await.unwrap();
        }
        // Until the replayed selection arrives.
        let end = tokio::time::Instant::now() + Duration::from_secs(10);
        while let Ok(Some(Ok(m))) = tokio::time::timeout_at(end, ws.next()).await {
            if m.to_text().unwrap_or("").contains("selection_changed") {
                break;
            }
        }
    });
    let lines = poll_until(Duration::from_secs(10), POLL, || {
        let text = std::fs::read_to_string(&file).ok()?;
        text.contains("selection_changed").then_some(text)
    })
    .expect("Claude's selection_changed is logged");
    drop(stdin);
    let _ = s.finish();
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert!(!lines.contains(&token), "the token is redacted");
    let entries: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let find = |peer: &str, dir: &str, method: &str| {
        entries
            .iter()
            .position(|e| e["peer"] == peer && e["dir"] == dir && e["msg"]["method"] == method)
    };
    let editor_in = find("editor", "in", "selectionChanged").expect("editor in");
    let claude_in = find("claude", "in", "initialize").expect("claude in");
    let claude_out = find("claude", "out", "selection_changed").expect("claude out");
    assert!(editor_in < claude_out && claude_in < claude_out);
    assert!(entries.iter().any(|e| e["peer"] == "editor"
        && e["dir"] == "out"
        && e["msg"]["method"] == "clientConnected"));
    assert!(entries[claude_in]["ts"].as_str().unwrap().ends_with('Z'));
}
