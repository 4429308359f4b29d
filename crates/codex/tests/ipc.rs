//! The Codex provider over real Unix sockets: the frames Codex CLI sends
//! (read from its source, `docs/agents.md`), the router ccbridge hosts and
//! the one it joins, and what a hostile or broken peer can do to them.

use ccbridge_codex::frame::{encode, read_frame, MAX_FRAME};
use ccbridge_codex::{start_at, ContextSource, Locations, Role, Running};
use ccbridge_protocol::editor::{EditorTab, Position, Range, Selection};
use ccbridge_server::EditorContext;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

const WAIT: Duration = Duration::from_secs(10);

/// A fixed editor: one folder, a selection in it.
struct Editor {
    folder: String,
    ctx: Mutex<EditorContext>,
}

impl ContextSource for Editor {
    fn folders(&self) -> Vec<String> {
        vec![self.folder.clone()]
    }
    fn context(&self) -> EditorContext {
        self.ctx.lock().unwrap().clone()
    }
}

fn editor(folder: &Path, selected: &str) -> Arc<Editor> {
    let file = folder.join("src/lib.rs").to_string_lossy().into_owned();
    Arc::new(Editor {
        folder: folder.to_string_lossy().into_owned(),
        ctx: Mutex::new(EditorContext {
            selection: Some(Selection {
                file_path: file.clone(),
                text: selected.into(),
                range: Range::new(Position::new(2, 0), Position::new(2, 4)),
            }),
            tabs: vec![EditorTab {
                path: file,
                is_active: true,
                is_dirty: false,
                language_id: None,
                label: None,
                is_untitled: false,
            }],
        }),
    })
}

struct Place {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    sock: PathBuf,
}

fn place() -> Place {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("codex-ipc");
    let sock = dir.join("ipc-test.sock");
    Place {
        dir,
        sock,
        _tmp: tmp,
    }
}

fn at(p: &Place) -> Locations {
    Locations {
        client: vec![p.sock.clone()],
        host: vec![p.sock.clone()],
    }
}

fn run(p: &Place, e: Arc<Editor>) -> Running {
    start_at(at(p), e)
}

async fn role(r: &Running, pred: impl Fn(&Role) -> bool) -> Role {
    let now = r.role();
    r.wait_role(WAIT, pred)
        .await
        .unwrap_or_else(|| panic!("the role did not come; it is {:?} (was {now:?})", r.role()))
}

fn hosting(r: &Role) -> bool {
    matches!(r, Role::Hosting(_))
}

fn joined(r: &Role) -> bool {
    matches!(r, Role::Joined(_))
}

async fn send(s: &mut UnixStream, v: &Value) {
    s.write_all(&encode(v)).await.unwrap();
}

/// Reads until the response to `rid`, answering discovery like Codex CLI.
async fn response(s: &mut UnixStream, rid: &str) -> Value {
    tokio::time::timeout(WAIT, async {
        loop {
            let v = read_frame(s, MAX_FRAME).await.expect("a frame");
            match v["type"].as_str() {
                Some("response") if v["requestId"] == rid => return v,
                Some("client-discovery-request") => {
                    send(
                        s,
                        &json!({"type": "client-discovery-response", "requestId": v["requestId"], "response": {"canHandle": false}}),
                    )
                    .await
                }
                _ => {}
            }
        }
    })
    .await
    .expect("no response in time")
}

/// What Codex CLI 0.171.0 does on each prompt: a fresh connection, one
/// `ide-context` request, no `initialize`.
async fn ask(sock: &Path, root: &Path) -> Value {
    let mut s = UnixStream::connect(sock).await.unwrap();
    send(
        &mut s,
        &json!({"type": "request", "requestId": "r1", "sourceClientId": "codex-tui", "version": 0,
                "method": "ide-context", "params": {"workspaceRoot": root}}),
    )
    .await;
    response(&mut s, "r1").await
}

#[tokio::test]
async fn a_hosted_router_answers_codex_with_the_selection_and_an_old_cli_that_initializes_too() {
    let p = place();
    let ws = tempfile::tempdir().unwrap();
    let r = run(&p, editor(ws.path(), "SELECTED"));
    role(&r, hosting).await;
    let mode = std::fs::metadata(&p.dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "the folder is private");

    let v = ask(&p.sock, &ws.path().join("sub")).await;
    assert_eq!(v["resultType"], "success", "{v}");
    let f = &v["result"]["ideContext"]["activeFile"];
    assert_eq!(f["activeSelectionContent"], "SELECTED");
    assert_eq!(f["path"], "src/lib.rs");
    assert_eq!(f["selection"]["start"], json!({"line": 2, "character": 0}));

    // Codex up to 0.15x initialized first, as "desktop".
    let mut s = UnixStream::connect(&p.sock).await.unwrap();
    send(
        &mut s,
        &json!({"type": "request", "requestId": "i", "sourceClientId": "initializing-client", "version": 0,
                "method": "initialize", "params": {"clientType": "desktop"}}),
    )
    .await;
    let init = response(&mut s, "i").await;
    let id = init["result"]["clientId"]
        .as_str()
        .expect("a clientId")
        .to_owned();
    send(
        &mut s,
        &json!({"type": "request", "requestId": "c", "sourceClientId": id, "version": 0,
                "method": "ide-context", "params": {"workspaceRoot": ws.path()}}),
    )
    .await;
    let v = response(&mut s, "c").await;
    assert_eq!(
        v["result"]["ideContext"]["activeFile"]["activeSelectionContent"],
        "SELECTED"
    );

    // A root nobody serves.
    let v = ask(&p.sock, Path::new("/nowhere")).await;
    assert_eq!(v["resultType"], "error");
    assert_eq!(v["error"], "no-client-found");

    r.stopped().await;
    assert!(!p.sock.exists(), "the hosted socket is removed on exit");
}

#[tokio::test]
async fn two_instances_on_different_folders_share_one_router_and_each_answers_for_its_own() {
    let p = place();
    let (wa, wb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = run(&p, editor(wa.path(), "FROM-A"));
    role(&a, hosting).await;
    let b = run(&p, editor(wb.path(), "FROM-B"));
    assert_eq!(role(&b, joined).await, Role::Joined(p.sock.clone()));

    let v = ask(&p.sock, wb.path()).await;
    assert_eq!(
        v["result"]["ideContext"]["activeFile"]["activeSelectionContent"], "FROM-B",
        "{v}"
    );
    assert!(
        v["handledByClientId"].as_str().unwrap().contains("client"),
        "{v}"
    );
    let v = ask(&p.sock, wa.path()).await;
    assert_eq!(
        v["result"]["ideContext"]["activeFile"]["activeSelectionContent"],
        "FROM-A"
    );

    // The host goes: the other takes over the same path and still answers.
    a.stopped().await;
    role(&b, hosting).await;
    let v = ask(&p.sock, wb.path()).await;
    assert_eq!(
        v["result"]["ideContext"]["activeFile"]["activeSelectionContent"],
        "FROM-B"
    );
    let v = ask(&p.sock, wa.path()).await;
    assert_eq!(v["error"], "no-client-found", "A is gone: {v}");
    b.stopped().await;
}

#[tokio::test]
async fn a_stale_socket_left_by_a_dead_host_is_replaced() {
    let p = place();
    std::fs::create_dir(&p.dir).unwrap();
    std::fs::set_permissions(&p.dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&p.sock).unwrap());
    assert!(p.sock.exists());
    let ws = tempfile::tempdir().unwrap();
    let r = run(&p, editor(ws.path(), "X"));
    role(&r, hosting).await;
    assert_eq!(ask(&p.sock, ws.path()).await["resultType"], "success");
    r.stopped().await;
}

#[tokio::test]
async fn a_group_or_world_writable_folder_is_refused_and_nothing_is_bound_there() {
    let p = place();
    std::fs::create_dir(&p.dir).unwrap();
    std::fs::set_permissions(&p.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let r = run(&p, editor(ws.path(), "X"));
    let Role::Unavailable(why) = role(&r, |r| matches!(r, Role::Unavailable(_))).await else {
        unreachable!()
    };
    // Once: probing the path and binding it meet the same folder.
    assert_eq!(why.matches("writable by other users").count(), 1, "{why}");
    assert!(!p.sock.exists());
    r.stopped().await;
}

#[tokio::test]
async fn a_planted_symlink_is_neither_followed_nor_removed() {
    let p = place();
    std::fs::create_dir(&p.dir).unwrap();
    std::fs::set_permissions(&p.dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // A link to a router elsewhere (the attacker's), and a link to a file.
    let elsewhere = p.dir.parent().unwrap().join("evil.sock");
    let _evil = std::os::unix::net::UnixListener::bind(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &p.sock).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let r = run(&p, editor(ws.path(), "X"));
    let Role::Unavailable(why) = role(&r, |r| matches!(r, Role::Unavailable(_))).await else {
        unreachable!()
    };
    assert!(why.contains("symbolic link"), "{why}");
    assert!(std::fs::symlink_metadata(&p.sock)
        .unwrap()
        .file_type()
        .is_symlink());
    r.stopped().await;
}

#[tokio::test]
async fn an_oversize_frame_closes_that_peer_only_and_garbage_does_not_stop_the_router() {
    let p = place();
    let ws = tempfile::tempdir().unwrap();
    let r = run(&p, editor(ws.path(), "X"));
    role(&r, hosting).await;

    let mut big = UnixStream::connect(&p.sock).await.unwrap();
    big.write_all(&((MAX_FRAME + 1) as u32).to_le_bytes())
        .await
        .unwrap();
    let mut buf = [0u8; 1];
    let n = tokio::time::timeout(WAIT, big.read(&mut buf))
        .await
        .expect("closed in time");
    assert!(matches!(n, Ok(0) | Err(_)), "the peer is closed: {n:?}");

    for bytes in [
        &b"\x05\x00\x00\x00{{{{{"[..],
        &b"\x02\x00\x00\x00[]"[..],
        &[0xff; 3][..],
    ] {
        let mut bad = UnixStream::connect(&p.sock).await.unwrap();
        bad.write_all(bytes).await.unwrap();
        drop(bad);
    }
    // A request without a method or an id, an unknown frame type.
    let mut odd = UnixStream::connect(&p.sock).await.unwrap();
    send(&mut odd, &json!({"type": "request"})).await;
    send(&mut odd, &json!({"type": "whatever", "requestId": "w"})).await;
    assert_eq!(
        response(&mut odd, "w").await["error"],
        "no-handler-for-request"
    );

    assert_eq!(ask(&p.sock, ws.path()).await["resultType"], "success");
    r.stopped().await;
}

#[tokio::test]
async fn a_silent_provider_or_connection_does_not_block_anyone() {
    let p = place();
    let ws = tempfile::tempdir().unwrap();
    let r = run(&p, editor(ws.path(), "X"));
    role(&r, hosting).await;

    // A connection that says nothing, and a client that initializes and
    // then never reads nor answers discovery.
    let _mute = UnixStream::connect(&p.sock).await.unwrap();
    let mut silent = UnixStream::connect(&p.sock).await.unwrap();
    send(
        &mut silent,
        &json!({"type": "request", "requestId": "i", "version": 0, "method": "initialize", "params": {"clientType": "x"}}),
    )
    .await;
    response(&mut silent, "i").await;

    let t = Instant::now();
    assert_eq!(ask(&p.sock, ws.path()).await["resultType"], "success");
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "ccbridge's own root is answered at once"
    );

    // Another root: the silent client is asked and does not answer; the
    // asker hears "no-client-found" once discovery times out, not never.
    let t = Instant::now();
    for _ in 0..3 {
        assert_eq!(
            ask(&p.sock, Path::new("/elsewhere")).await["error"],
            "no-client-found"
        );
    }
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    r.stopped().await;
}

#[tokio::test]
async fn a_joined_provider_answers_discovery_only_for_its_own_folder() {
    // A router of someone else (a test stand-in for the desktop app).
    let p = place();
    std::fs::create_dir(&p.dir).unwrap();
    std::fs::set_permissions(&p.dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let listener = tokio::net::UnixListener::bind(&p.sock).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let r = run(&p, editor(ws.path(), "JOINED"));
    let (mut s, _) = tokio::time::timeout(WAIT, listener.accept())
        .await
        .unwrap()
        .unwrap();
    let init = read_frame(&mut s, MAX_FRAME).await.unwrap();
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["version"], 0);
    send(
        &mut s,
        &json!({"type": "response", "requestId": init["requestId"], "resultType": "success", "method": "initialize", "result": {"clientId": "c-7"}}),
    )
    .await;
    role(&r, joined).await;

    // Broadcasts are ignored, big ones skipped unread.
    send(
        &mut s,
        &json!({"type": "broadcast", "method": "client-status-changed", "params": {}}),
    )
    .await;
    send(
        &mut s,
        &json!({"type": "broadcast", "pad": "x".repeat(MAX_FRAME + 10)}),
    )
    .await;

    for (root, expected) in [
        (ws.path().to_path_buf(), true),
        (PathBuf::from("/other"), false),
    ] {
        let request = json!({"type": "request", "requestId": "q", "version": 0, "method": "ide-context", "params": {"workspaceRoot": root}});
        send(
            &mut s,
            &json!({"type": "client-discovery-request", "requestId": "d", "request": request}),
        )
        .await;
        let d = read_frame(&mut s, MAX_FRAME).await.unwrap();
        assert_eq!(d["type"], "client-discovery-response");
        assert_eq!(d["requestId"], "d");
        assert_eq!(d["response"]["canHandle"], expected, "{root:?}");
    }
    let request = json!({"type": "request", "requestId": "q", "version": 0, "method": "ide-context", "params": {"workspaceRoot": ws.path()}});
    send(&mut s, &request).await;
    let v = read_frame(&mut s, MAX_FRAME).await.unwrap();
    assert_eq!(v["requestId"], "q");
    assert_eq!(v["handledByClientId"], "c-7");
    assert_eq!(
        v["result"]["ideContext"]["activeFile"]["activeSelectionContent"],
        "JOINED"
    );

    // The router goes away: the provider hosts on the same path itself.
    drop(s);
    drop(listener);
    std::fs::remove_file(&p.sock).unwrap();
    role(&r, hosting).await;
    assert_eq!(ask(&p.sock, ws.path()).await["resultType"], "success");
    r.stopped().await;
}

#[tokio::test]
async fn stopping_does_not_wait_for_a_router_that_never_answers_initialize() {
    let p = place();
    std::fs::create_dir(&p.dir).unwrap();
    std::fs::set_permissions(&p.dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let listener = tokio::net::UnixListener::bind(&p.sock).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let r = run(&p, editor(ws.path(), "X"));
    // Accepted, read, never answered.
    let (mut s, _) = tokio::time::timeout(WAIT, listener.accept())
        .await
        .unwrap()
        .unwrap();
    read_frame(&mut s, MAX_FRAME).await.unwrap();
    let t = Instant::now();
    r.stopped().await;
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(p.sock.exists(), "someone else's socket is left alone");
}
