//! The discovery lock file and the token's secrecy at the engine level:
//! security checklist items 39–43.

use crate::support::*;
use ccbridge_protocol::lockfile::LockFile;
use ccbridge_server::token::AuthToken;
use ccbridge_server::{EditorEvent, Server, ServerError};
use serde_json::{json, Value};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o777
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[tokio::test]
async fn the_lock_file_is_private_whatever_the_umask() {
    // The umask is the process's: alone in a process of its own, no other
    // test creates files meanwhile.
    if !ccbridge_testkit::alone::rerun(
        module_path!(),
        "the_lock_file_is_private_whatever_the_umask",
        &[],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cfg").join("ide");
    let mut config = test_config(Some(dir.clone()));
    config.pid = 4321;
    // umask 000: a careless create would give 0777/0666.
    let old = rustix::process::umask(rustix::fs::Mode::empty());
    let (port, token, handle, _stop, _join) = start_server(config, FakeFrontend::new()).await;
    rustix::process::umask(old);

    let path = handle.lock_path().expect("lock path");
    assert_eq!(path, dir.join(format!("{port}.lock")));
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert!(meta.file_type().is_file(), "a regular file, not a link");
    assert_eq!(meta.uid(), rustix::process::geteuid().as_raw());
    assert_eq!(mode(&path), 0o600, "lock file mode");
    assert_eq!(mode(&dir), 0o700, "lock dir mode");

    let me = std::process::id();
    let started = ccbridge_discovery::process_start_time(me).expect("/proc");
    assert_eq!(
        read_json(&path),
        json!({"pid":4321,"workspaceFolders":["/work/test-workspace"],"ideName":"TestIDE",
               "transport":"ws","authToken":token,"runningInWindows":false,
               "serverProcess":{"pid":me,"startTime":started}})
    );
    // Nothing else (no temp files) next to it.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec![format!("{port}.lock")]);
}

#[tokio::test]
async fn a_workspace_event_rewrites_the_lock_in_place() {
    let mut s = TestServer::start().await;
    let path = s.handle.lock_path().unwrap();
    let before = read_json(&path);
    s.send(EditorEvent::Workspace {
        folders: Some(vec!["/a".into(), "/b c".into()]),
        ide_name: Some("Renamed IDE".into()),
        pid: Some(777),
    })
    .await;
    eventually("the lock file to be rewritten", WAIT, || {
        read_json(&path)["ideName"] == "Renamed IDE"
    })
    .await;
    let after = read_json(&path);
    assert_eq!(after["workspaceFolders"], json!(["/a", "/b c"]));
    assert_eq!(after["pid"], 777);
    assert_eq!(after["authToken"], before["authToken"], "same token");
    assert_eq!(after["authToken"], s.token.as_str());
    assert_eq!(after["transport"], "ws");
    assert_eq!(s.handle.lock_path().unwrap(), path, "same port, same file");
    assert_eq!(mode(&path), 0o600);
    let names = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
    assert_eq!(names, 1, "temp files left behind");
    // And the engine still answers on the port the file is named after.
    s.assert_serving().await;

    // Removed when `run` returns.
    s.stop().await.expect("run returns Ok");
    assert!(!path.exists(), "lock file left behind");
}

#[tokio::test]
async fn stale_locks_are_swept_by_cleans_rule_and_live_ones_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ide");
    std::fs::create_dir(&dir).unwrap();
    let lock =
        |pid: u32| LockFile::new(pid, vec!["/w".into()], "Other".into(), "tok".into()).to_json();
    let closed_port = || {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dead = dir.join(format!("{}.lock", closed_port()));
    let live = dir.join(format!("{}.lock", closed_port()));
    let legacy = dir.join(format!("{}.lock", closed_port()));
    std::fs::write(&dead, lock(dead_pid())).unwrap();
    std::fs::write(&live, lock(std::process::id())).unwrap();
    std::fs::write(&legacy, "/some/folder\n").unwrap();

    let (port, _token, handle, stop, join) =
        start_server(test_config(Some(dir.clone())), FakeFrontend::new()).await;
    eventually("the sweep to remove the dead locks", WAIT, || {
        !dead.exists() && !legacy.exists()
    })
    .await;
    assert_eq!(
        std::fs::read_to_string(&live).unwrap(),
        lock(std::process::id())
    );
    assert!(dir.join(format!("{port}.lock")).exists());
    drop(handle);
    let _ = stop.send(());
    bounded("run to return", WAIT, join).await.unwrap().unwrap();
    assert!(live.exists(), "shutdown removes only its own lock");
    assert!(!dir.join(format!("{port}.lock")).exists());
}

/// Issue 11, defect 3: the start-up sweep removed any lock whose `pid` was
/// dead, though its server still answered (`--pid <dead pid>`, or an
/// editor in another pid namespace sharing `~/.claude`).
#[tokio::test]
async fn regression_sweep_keeps_a_live_servers_lock_whose_pid_is_dead() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ide");
    // A first server that says its editor is a process that is gone.
    let mut first = test_config(Some(dir.clone()));
    first.pid = dead_pid();
    let (p1, _t1, h1, stop1, join1) = start_server(first, FakeFrontend::new()).await;
    let lock1 = h1.lock_path().unwrap();
    // Its record of its own process would keep it; test the port rule too.
    let mut without_record = LockFile::parse(&std::fs::read(&lock1).unwrap()).unwrap();
    without_record.server_process = None;
    std::fs::write(&lock1, without_record.to_json()).unwrap();

    let (p2, _t2, h2, stop2, join2) =
        start_server(test_config(Some(dir.clone())), FakeFrontend::new()).await;
    // The second server's sweep has had time to run once its own probe of
    // a closed port would have failed (500 ms): wait on a canary.
    let canary = dir.join(format!("{}.lock", {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }));
    std::fs::write(
        &canary,
        LockFile::new(dead_pid(), vec![], "x".into(), "t".into()).to_json(),
    )
    .unwrap();
    let (_p3, _t3, h3, stop3, join3) =
        start_server(test_config(Some(dir.clone())), FakeFrontend::new()).await;
    eventually("the third server's sweep", WAIT, || !canary.exists()).await;
    assert!(
        lock1.exists(),
        "the live server on {p1} lost its lock to {p2}"
    );
    for (h, stop, join) in [(h1, stop1, join1), (h2, stop2, join2), (h3, stop3, join3)] {
        drop(h);
        let _ = stop.send(());
        bounded("run to return", WAIT, join).await.unwrap().unwrap();
    }
}

/// Issue 11, defect 2: the sweep read any `*.lock` whole. A sparse 4 GiB
/// file took start-up 53 s and 8 GiB of memory; a FIFO could block it.
#[tokio::test]
async fn regression_hostile_lock_files_never_delay_start_up() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ide");
    std::fs::create_dir(&dir).unwrap();
    let sparse = dir.join("x.lock");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    let fifo = dir.join("12345.lock");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let (port, _token, handle, stop, join) = bounded(
        "start-up next to a 4 GiB lock file and a FIFO",
        WAIT,
        start_server(test_config(Some(dir.clone())), FakeFrontend::new()),
    )
    .await;
    eventually("the sweep to remove the junk", WAIT, || {
        !sparse.exists() && !fifo.exists()
    })
    .await;
    assert!(dir.join(format!("{port}.lock")).exists());
    drop(handle);
    let _ = stop.send(());
    bounded("run to return", WAIT, join).await.unwrap().unwrap();
}

/// LISTEN sockets on `port` from `/proc/net/tcp{,6}`: (local address hex, v6).
fn listeners(port: u16) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for (file, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 4 || f[3] != "0A" {
                continue;
            }
            let Some((addr, p)) = f[1].split_once(':') else {
                continue;
            };
            if u16::from_str_radix(p, 16).ok() == Some(port) {
                out.push((addr.to_owned(), v6));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_listener_is_127_0_0_1_only() {
    let s = TestServer::start().await;
    let l = listeners(s.port);
    assert_eq!(
        l,
        vec![("0100007F".to_owned(), false)],
        "listening sockets on the port"
    );

    // A listener on another address is refused; so is a low fixed port.
    let any = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    match Server::with_listener(any, test_config(None), FakeFrontend::new()) {
        Err(ServerError::NotLoopback(a)) => assert!(a.ip().is_unspecified()),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a 0.0.0.0 listener was accepted"),
    }
    let mut c = test_config(None);
    c.port = Some(80);
    assert!(matches!(
        Server::bind(c, FakeFrontend::new()).await,
        Err(ServerError::PortRange(80))
    ));
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Everything runs on this test's thread (current-thread runtime), where
/// the capturing subscriber is the default. Alone in a process of its own:
/// tracing caches per process whether a log site is enabled, and a site
/// first hit on another test's thread while the subscriber is being
/// installed can stay cached as disabled.
#[tokio::test(flavor = "current_thread")]
async fn the_token_never_appears_in_trace_logs_or_debug_output() {
    if !ccbridge_testkit::alone::rerun(
        module_path!(),
        "the_token_never_appears_in_trace_logs_or_debug_output",
        &[],
    ) {
        return;
    }
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let mut s = TestServer::start().await;
    let token = s.token.clone();
    let host = format!("127.0.0.1:{}", s.port);

    // A normal session with a diff and a few tools.
    let mut c = s.client().await;
    let id = c
        .start_tool(
            "openDiff",
            json!({"old_file_path":"/nonexistent/a","new_file_path":"/nonexistent/a",
                   "new_file_contents":"x","tab_name":"t"}),
        )
        .await;
    let v = s.frontend.wait_show_diff("t").await;
    s.send(EditorEvent::DiffResolved {
        id: v.id,
        decision: ccbridge_server::DiffDecision::Rejected,
    })
    .await;
    c.response(id).await;
    c.call_tool("getDiagnostics", json!({})).await;
    c.send_raw("{garbage").await;
    c.expect("the parse error", |m| m.get("error").is_some())
        .await;
    s.send(EditorEvent::Workspace {
        folders: None,
        ide_name: Some("Logged".into()),
        pid: None,
    })
    .await;
    // Refusals whose requests carry the token somewhere.
    let query = format!("/?token={token}");
    let cookie = format!("t={token}");
    let bearer = format!("Bearer {token}");
    let longer = format!("{token}x");
    for req in [
        upgrade_request("/", Some(&host), &[(AUTH_HEADER, &longer)]),
        upgrade_request(&query, Some(&host), &[]),
        upgrade_request(
            "/",
            Some(&host),
            &[("Cookie", &cookie), ("Authorization", &bearer)],
        ),
        upgrade_request(
            "/",
            Some(&host),
            &[(AUTH_HEADER, &token), ("Origin", "http://evil.example")],
        ),
        upgrade_request("/", Some("evil.example"), &[(AUTH_HEADER, &token)]),
    ] {
        let r = raw_exchange(s.port, &req).await;
        assert!((400..500).contains(&r.status), "{}", r.head);
    }
    c.close().await;
    s.frontend
        .wait_for("the disconnect", |calls| {
            calls
                .iter()
                .any(|c| matches!(c, Call::ClientDisconnected(_)))
                .then_some(())
        })
        .await;
    let lock_path = s.handle.lock_path().unwrap();
    let lock = LockFile::parse(&std::fs::read(&lock_path).unwrap()).unwrap();
    assert_eq!(lock.auth_token.as_deref(), Some(token.as_str()));
    s.stop().await.unwrap();

    let text = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    for expected in [
        "listening",
        "Claude Code session connected",
        "upgrade refused",
    ] {
        assert!(
            text.contains(expected),
            "the capture missed {expected:?}:\n{text}"
        );
    }
    assert!(!text.contains(&token), "the token is in the logs:\n{text}");

    // Debug output of everything that holds or is near the token.
    let config = test_config(Some(lock_path.parent().unwrap().to_owned()));
    for (what, dbg) in [
        ("Config", format!("{config:?}")),
        (
            "AuthToken",
            format!("{:?}", AuthToken::from_value(token.clone())),
        ),
        ("LockFile", format!("{lock:?}")),
        ("LockFile (pretty)", format!("{lock:#?}")),
        ("clients", format!("{:?}", s.handle.clients())),
    ] {
        assert!(!dbg.contains(&token), "{what} Debug leaks the token: {dbg}");
    }
    assert!(
        format!("{config:?}").contains("TestIDE"),
        "Config Debug is real"
    );
}
