//! The sidecar with the real engine: a fake editor on in-memory pipes, a
//! real WebSocket client playing the Claude Code CLI, a lock file in a
//! temporary directory.

use ccbridge_lsp::framing::{encode_frame, Frame, FrameReader};
use ccbridge_protocol::lockfile::LockFile;
use ccbridge_server::Config;
use ccbridge_sidecar::{run, run_with, ExitReason, SidecarError};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message as Ws;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

const LIMIT: Duration = Duration::from_secs(15);

struct Editor {
    input: Option<DuplexStream>,
    output: FrameReader<DuplexStream>,
    stop: Option<oneshot::Sender<()>>,
    sidecar: JoinHandle<Result<ExitReason, SidecarError>>,
    lock_dir: tempfile::TempDir,
    workspace: tempfile::TempDir,
}

fn start() -> Editor {
    start_with(ccbridge_sidecar::Options::default())
}

fn start_with(options: ccbridge_sidecar::Options) -> Editor {
    let lock_dir = tempfile::tempdir().expect("tempdir");
    let workspace = tempfile::tempdir().expect("tempdir");
    let mut config = Config::new(
        "ccbridge-test",
        vec![workspace.path().to_string_lossy().into_owned()],
    );
    config.lock_dir = Some(lock_dir.path().join("ide"));
    config.notify_delay = Duration::from_millis(10);
    let (editor_in, sidecar_in) = tokio::io::duplex(1 << 16);
    let (sidecar_out, editor_out) = tokio::io::duplex(1 << 16);
    let (stop, stopped) = oneshot::channel::<()>();
    let sidecar = tokio::spawn(run_with(
        config,
        options,
        sidecar_in,
        sidecar_out,
        async move {
            let _ = stopped.await;
        },
    ));
    Editor {
        input: Some(editor_in),
        output: FrameReader::new(editor_out),
        stop: Some(stop),
        sidecar,
        lock_dir,
        workspace,
    }
}

impl Editor {
    async fn send(&mut self, v: Value) {
        let input = self.input.as_mut().expect("input open");
        input
            .write_all(&encode_frame(v.to_string().as_bytes()))
            .await
            .expect("sidecar reads its input");
    }

    /// The next frame from the sidecar; `None` once its output is closed.
    async fn recv(&mut self) -> Option<Value> {
        let frame = tokio::time::timeout(LIMIT, self.output.read_frame())
            .await
            .expect("a frame in time")
            .expect("the sidecar writes only well-formed frames")?;
        let Frame::Body(body) = frame else {
            panic!("oversized frame from the sidecar")
        };
        let v: Value = serde_json::from_slice(&body).expect("the sidecar writes JSON");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        Some(v)
    }

    /// Skips notifications (`clientConnected`, ...) up to the next request
    /// or response.
    async fn recv_non_notification(&mut self) -> Value {
        loop {
            let v = self.recv().await.expect("output open");
            if v.get("id").is_some() {
                return v;
            }
        }
    }

    async fn initialize(&mut self) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1, "ideName": "Fake Editor",
            "capabilities": {"diff": true}}}),
        )
        .await;
        let r = self.recv_non_notification().await;
        assert_eq!(r["id"], 1, "{r}");
        r["result"].clone()
    }

    fn lock_files(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.lock_dir.path().join("ide")) {
            Ok(dir) => dir.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(_) => Vec::new(),
        }
    }

    fn close_input(&mut self) {
        self.input = None;
    }

    /// Waits for the sidecar to end; returns its result, its output and
    /// the lock directory (kept alive for inspection).
    async fn finish(
        self,
    ) -> (
        Result<ExitReason, SidecarError>,
        FrameReader<DuplexStream>,
        tempfile::TempDir,
    ) {
        let Editor {
            sidecar,
            output,
            lock_dir,
            ..
        } = self;
        let r = tokio::time::timeout(LIMIT, sidecar)
            .await
            .expect("the sidecar stops in time")
            .expect("the sidecar task does not panic");
        (r, output, lock_dir)
    }
}

type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Connects like the CLI: token header, subprotocol `mcp`, MCP handshake.
async fn connect(port: u16, lock_file: &Path) -> Client {
    let lock = LockFile::parse(&std::fs::read(lock_file).expect("lock file readable"))
        .expect("lock file parses");
    let token = lock.auth_token.expect("lock file has a token");
    let mut req = format!("ws://127.0.0.1:{port}")
        .into_client_request()
        .expect("request");
    let headers = req.headers_mut();
    headers.insert(
        "X-Claude-Code-Ide-Authorization",
        token.parse().expect("header value"),
    );
    headers.insert(
        "Sec-WebSocket-Protocol",
        "mcp".parse().expect("header value"),
    );
    let (mut ws, _) = tokio::time::timeout(LIMIT, tokio_tungstenite::connect_async(req))
        .await
        .expect("handshake in time")
        .expect("handshake accepted");
    ws_send(
        &mut ws,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "claude-code", "version": "2.1.328"}}}),
    )
    .await;
    let r = ws_response(&mut ws, 0).await;
    assert!(r["result"]["capabilities"]["tools"].is_object(), "{r}");
    ws_send(
        &mut ws,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    ws
}

async fn ws_send(ws: &mut Client, v: Value) {
    ws.send(Ws::text(v.to_string())).await.expect("ws send");
}

/// Waits for the response with `id`, skipping notifications.
async fn ws_response(ws: &mut Client, id: i64) -> Value {
    ws_response_or_close(ws, id)
        .await
        .expect("the connection stays open until the answer")
}

/// Waits for the response with `id`; `None` if the server closes first.
async fn ws_response_or_close(ws: &mut Client, id: i64) -> Option<Value> {
    loop {
        let msg = tokio::time::timeout(LIMIT, ws.next())
            .await
            .expect("a message or the end in time");
        match msg {
            Some(Ok(Ws::Text(t))) => {
                let v: Value = serde_json::from_str(t.as_str()).expect("JSON from the server");
                if v["id"] == id {
                    return Some(v);
                }
            }
            Some(Ok(Ws::Close(_))) | Some(Err(_)) | None => return None,
            Some(Ok(_)) => {}
        }
    }
}

fn open_diff(id: i64, path: &str, contents: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "openDiff", "arguments": {
            "old_file_path": path, "new_file_path": path,
            "new_file_contents": contents, "tab_name": "✻ [Claude Code] a.txt ⧉"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_diff_reaches_claude_and_eof_removes_the_lock_file() {
    let mut ed = start();
    let init = ed.initialize().await;
    let port = u16::try_from(init["port"].as_u64().expect("port")).expect("u16");
    let lock_path = PathBuf::from(init["lockFile"].as_str().expect("lockFile"));
    assert_eq!(
        lock_path,
        ed.lock_dir.path().join("ide").join(format!("{port}.lock"))
    );
    assert_eq!(init["env"]["CLAUDE_CODE_SSE_PORT"], port.to_string());
    let lock = LockFile::parse(&std::fs::read(&lock_path).expect("lock file")).expect("parses");
    assert_eq!(
        lock.workspace_folders,
        vec![ed.workspace.path().to_string_lossy().into_owned()]
    );

    let file = ed.workspace.path().join("a.txt");
    std::fs::write(&file, "old\n").expect("write");
    let file = file.to_string_lossy().into_owned();

    let mut ws = connect(port, &lock_path).await;
    ws_send(&mut ws, open_diff(1, &file, "proposed\n")).await;

    // The editor is asked to show the diff, acknowledges, then accepts
    // with its own edits.
    let req = ed.recv_non_notification().await;
    assert_eq!(req["method"], "showDiff", "{req}");
    let p = &req["params"];
    assert_eq!(p["oldFilePath"], file.as_str());
    assert_eq!(p["originalContents"], "old\n");
    assert_eq!(p["proposedContents"], "proposed\n");
    assert_eq!(p["tabName"], "✻ [Claude Code] a.txt ⧉");
    let diff_id = p["id"].clone();
    ed.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": null}))
        .await;
    ed.send(
        json!({"jsonrpc": "2.0", "method": "diffResolved", "params": {
        "id": diff_id, "decision": "accepted", "contents": "proposed\nplus mine\n"}}),
    )
    .await;

    let r = ws_response(&mut ws, 1).await;
    assert_eq!(
        r["result"]["content"],
        json!([{"type": "text", "text": "FILE_SAVED"},
               {"type": "text", "text": "proposed\nplus mine\n"}]),
        "{r}"
    );

    // End of input: a clean end, the lock file is gone, and everything
    // the sidecar wrote was a well-formed frame up to a clean close.
    ed.close_input();
    let (result, mut output, lock_dir) = ed.finish().await;
    assert_eq!(result.expect("clean end"), ExitReason::InputClosed);
    assert!(!lock_path.exists(), "lock file removed");
    let left = std::fs::read_dir(lock_dir.path().join("ide")).expect("lock dir");
    assert_eq!(left.count(), 0, "nothing left in the lock directory");
    loop {
        match tokio::time::timeout(LIMIT, output.read_frame()).await {
            Ok(Ok(Some(Frame::Body(b)))) => {
                let v: Value = serde_json::from_slice(&b).expect("JSON frame");
                assert_eq!(v["jsonrpc"], "2.0");
            }
            Ok(Ok(None)) => break,
            other => panic!("unexpected output: {other:?}"),
        }
    }
}

/// Issue 21, item 3: the editors showed hunks from diffs of their own;
/// `showDiff` now carries the engine's, the ones the browser UI shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_diff_carries_the_engines_hunks_for_a_multi_hunk_proposal() {
    let mut ed = start();
    let init = ed.initialize().await;
    let port = u16::try_from(init["port"].as_u64().expect("port")).expect("u16");
    let lock_path = PathBuf::from(init["lockFile"].as_str().expect("lockFile"));
    let file = ed.workspace.path().join("a.txt");
    // The same line replaced the same way three times, a line added and
    // one removed; no final newline.
    std::fs::write(&file, "x = 1\na\nx = 1\nb\nx = 1\ngone\nend").expect("write");
    let file = file.to_string_lossy().into_owned();
    let mut ws = connect(port, &lock_path).await;
    ws_send(
        &mut ws,
        open_diff(1, &file, "new\nx = 2\na\nx = 2\nb\nx = 2\nend"),
    )
    .await;
    let req = ed.recv_non_notification().await;
    assert_eq!(req["method"], "showDiff", "{req}");
    assert_eq!(
        req["params"]["hunks"],
        json!([
            {"oldStart": 0, "oldLines": 1, "newStart": 0, "newLines": 2},
            {"oldStart": 2, "oldLines": 1, "newStart": 3, "newLines": 1},
            {"oldStart": 4, "oldLines": 2, "newStart": 5, "newLines": 1},
        ]),
        "{req}"
    );
    ed.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": null}))
        .await;
    ed.close_input();
    assert_eq!(ed.finish().await.0.expect("clean"), ExitReason::InputClosed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_file_exists_before_the_editor_says_anything() {
    let mut ed = start();
    // No message sent yet: status is the first, and the lock file must
    // already be there (the CLI may connect at once).
    ed.send(json!({"jsonrpc": "2.0", "id": 1, "method": "status"}))
        .await;
    let r = ed.recv_non_notification().await;
    let lock = r["result"]["lockFile"].as_str().expect("lock file path");
    assert!(Path::new(lock).exists());
    assert_eq!(ed.lock_files(), vec![PathBuf::from(lock)]);
    assert_eq!(r["result"]["clients"], json!([]));
    ed.close_input();
    assert_eq!(ed.finish().await.0.expect("clean"), ExitReason::InputClosed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_answers_then_settles_open_diffs_and_removes_the_lock_file() {
    let mut ed = start();
    let init = ed.initialize().await;
    let port = u16::try_from(init["port"].as_u64().expect("port")).expect("u16");
    let lock_path = PathBuf::from(init["lockFile"].as_str().expect("lockFile"));
    let mut ws = connect(port, &lock_path).await;

    // A connected client is announced to the editor.
    let announced = loop {
        let v = ed.recv().await.expect("output open");
        if v["method"] == "clientConnected" {
            break v;
        }
    };
    assert_eq!(announced["params"]["name"], "claude-code");

    let file = ed.workspace.path().join("new.txt");
    let file = file.to_string_lossy().into_owned();
    ws_send(&mut ws, open_diff(7, &file, "hello\n")).await;
    let req = ed.recv_non_notification().await;
    assert_eq!(req["method"], "showDiff");
    assert_eq!(req["params"]["originalContents"], Value::Null, "new file");
    assert_eq!(
        req["params"]["hunks"],
        json!([{"oldStart": 0, "oldLines": 0, "newStart": 0, "newLines": 1}]),
        "a new file is one hunk of every line"
    );
    ed.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": null}))
        .await;

    // The user never decides; the editor shuts ccbridge down.
    ed.send(json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null}))
        .await;
    let r = ed.recv_non_notification().await;
    assert_eq!(r, json!({"jsonrpc": "2.0", "id": 2, "result": null}));

    // Claude does not hang on the open diff: the engine settles diffs
    // before it closes connections, so the call is answered DIFF_REJECTED.
    let r = ws_response_or_close(&mut ws, 7)
        .await
        .expect("the pending openDiff is answered before the connection closes");
    assert_eq!(r["result"]["content"][0]["text"], "DIFF_REJECTED", "{r}");

    let (result, mut output, _) = ed.finish().await;
    assert_eq!(result.expect("clean"), ExitReason::ShutdownRequested);
    assert!(!lock_path.exists());
    // Once it answered `shutdown`, ccbridge sends the editor nothing more
    // (docs/editor-protocol.md): Claude's connection closing on the way out
    // was announced as `clientDisconnected`.
    match tokio::time::timeout(LIMIT, output.read_frame()).await {
        Ok(Ok(None)) => {}
        Ok(Ok(Some(Frame::Body(b)))) => {
            panic!("sent after shutdown: {}", String::from_utf8_lossy(&b))
        }
        other => panic!("unexpected output: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shutdown_future_stops_the_sidecar() {
    let mut ed = start();
    let init = ed.initialize().await;
    let lock_path = PathBuf::from(init["lockFile"].as_str().expect("lockFile"));
    assert!(lock_path.exists());
    if let Some(stop) = ed.stop.take() {
        let _ = stop.send(());
    }
    let (result, _, _) = ed.finish().await;
    assert_eq!(result.expect("clean"), ExitReason::Stopped);
    assert!(!lock_path.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_input_stream_still_cleans_up() {
    let mut ed = start();
    let init = ed.initialize().await;
    let lock_path = PathBuf::from(init["lockFile"].as_str().expect("lockFile"));
    if let Some(input) = ed.input.as_mut() {
        input
            .write_all(b"Content-Length: 100\r\n\r\n{\"half")
            .await
            .expect("write");
    }
    ed.close_input();
    let (result, _, _) = ed.finish().await;
    assert!(matches!(result, Err(SidecarError::Input(_))), "{result:?}");
    assert!(!lock_path.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_lock_directory_fails_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "x").expect("write");
    let mut config = Config::new("x", vec![]);
    config.lock_dir = Some(not_a_dir);
    let (_editor_in, sidecar_in) = tokio::io::duplex(64);
    let (sidecar_out, mut editor_out) = tokio::io::duplex(64);
    let r = tokio::time::timeout(
        LIMIT,
        run(config, sidecar_in, sidecar_out, std::future::pending()),
    )
    .await
    .expect("fails in time");
    assert!(matches!(r, Err(SidecarError::Start(_))), "{r:?}");
    // Nothing but a clean close on the output.
    let mut rest = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut editor_out, &mut rest)
        .await
        .expect("read");
    assert!(rest.is_empty());
}

/// Claude's `getDiagnostics` with `args`, asked again (ids from `next_id`)
/// until `done` holds for the answer's list; panics with the last one.
async fn diagnostics_until(
    ws: &mut Client,
    next_id: &mut i64,
    args: Value,
    what: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        *next_id += 1;
        ws_send(
            ws,
            json!({"jsonrpc": "2.0", "id": *next_id, "method": "tools/call",
                "params": {"name": "getDiagnostics", "arguments": args}}),
        )
        .await;
        let r = ws_response(ws, *next_id).await;
        let text = r["result"]["content"][0]["text"].as_str().unwrap_or("[]");
        let list: Vec<Value> = serde_json::from_str(text).unwrap_or_default();
        if done(&list) {
            return list;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: getDiagnostics still answers {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The messages of the entry for `uri` in a `getDiagnostics` answer.
fn messages_for(list: &[Value], uri: &str) -> Vec<String> {
    list.iter()
        .filter(|e| e["uri"] == uri)
        .flat_map(|e| e["diagnostics"].as_array().cloned().unwrap_or_default())
        .map(|d| d["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Issue 23: an editor that reports no diagnostics of its own (Vim without
/// a linter, a thin script) gets ccbridge's language servers: a proposal's
/// type error as `_claude_fs_right:`, the written file's after the accept.
/// Once the editor reports on the file, its report is the file's, alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_without_diagnostics_gets_the_language_servers_until_it_reports_a_file() {
    let mut ed = start_with(ccbridge_sidecar::Options {
        changes: true,
        language_servers: Some(ccbridge_lsp::Options {
            search_dirs: vec![ccbridge_testkit::pyright_bin_dir()],
            search_path: false,
            ..Default::default()
        }),
        ..Default::default()
    });
    let file = ed.workspace.path().join("app.py");
    std::fs::write(&file, "x: int = 1\n").expect("write");
    let path = file.to_string_lossy().into_owned();
    let uri = format!("file://{path}");
    let init = ed.initialize().await;
    let port = u16::try_from(init["port"].as_u64().expect("port")).expect("u16");
    let lock_path = PathBuf::from(init["lockFile"].as_str().expect("lockFile"));
    let mut ws = connect(port, &lock_path).await;
    let mut id = 100;

    let bad = "x: int = \"not an int\"\n";
    ws_send(&mut ws, open_diff(1, &path, bad)).await;
    let req = ed.recv_non_notification().await;
    assert_eq!(req["method"], "showDiff", "{req}");
    let diff_id = req["params"]["id"].clone();
    ed.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": null}))
        .await;
    let right = format!("_claude_fs_right:{path}");
    let list = diagnostics_until(&mut ws, &mut id, json!({}), "the proposal's error", |l| {
        !messages_for(l, &right).is_empty()
    })
    .await;
    assert!(
        messages_for(&list, &right)[0].contains("int"),
        "pyright's type error on the proposed side: {list:?}"
    );
    assert!(
        messages_for(&list, &uri).is_empty(),
        "the file itself is clean: {list:?}"
    );

    // Accepted; Claude writes the file, the session review sees it and the
    // server checks the new text.
    ed.send(
        json!({"jsonrpc": "2.0", "method": "diffResolved", "params": {
        "id": diff_id, "decision": "accepted"}}),
    )
    .await;
    let r = ws_response(&mut ws, 1).await;
    assert_eq!(r["result"]["content"][0]["text"], "FILE_SAVED", "{r}");
    std::fs::write(&file, bad).expect("Claude writes");
    // Asked once, at once, as Claude does after its write: the answer
    // waits for the server's report on the new text (write_pending).
    id += 1;
    ws_send(
        &mut ws,
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "getDiagnostics", "arguments": {}}}),
    )
    .await;
    let r = ws_response(&mut ws, id).await;
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or("[]");
    let list: Vec<Value> = serde_json::from_str(text).unwrap_or_default();
    assert!(
        messages_for(&list, &uri).iter().any(|m| m.contains("int")),
        "the written file's error in the first answer: {list:?}"
    );

    // The editor reports on the file: from now on that is the file's.
    ed.send(
        json!({"jsonrpc": "2.0", "method": "diagnosticsChanged", "params": {
        "path": path, "diagnostics": [{"message": "from the editor", "severity": "Warning",
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}}]}}),
    )
    .await;
    diagnostics_until(
        &mut ws,
        &mut id,
        json!({"uri": uri}),
        "the editor's report alone",
        |l| messages_for(l, &uri) == ["from the editor"],
    )
    .await;
    ed.close_input();
    let (result, _, _) = ed.finish().await;
    assert_eq!(result.expect("clean end"), ExitReason::InputClosed);
}

/// `initialize` sent again to change one thing (the documented way) reset
/// what it left out: the diagnostics source went back to `auto` and the
/// session review's `changesChanged` stopped. What is left out keeps its
/// value, as the capabilities and the approval mode did already.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_initialize_keeps_what_it_leaves_out() {
    let options = ccbridge_sidecar::Options {
        // ccbridge's own diagnostics, without any server to find.
        language_servers: Some(ccbridge_lsp::Options {
            search_dirs: Vec::new(),
            search_path: false,
            ..ccbridge_lsp::Options::default()
        }),
        ..ccbridge_sidecar::Options::default()
    };
    let mut ed = start_with(options);
    ed.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": 3, "diagnostics": "ccbridge"}}),
    )
    .await;
    let r = ed.recv_non_notification().await;
    assert_eq!(r["result"]["diagnostics"], "ccbridge", "{r}");
    ed.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": 3, "ideName": "Renamed"}}),
    )
    .await;
    let r = ed.recv_non_notification().await;
    assert_eq!(r["id"], 2, "{r}");
    assert_eq!(r["result"]["diagnostics"], "ccbridge", "{r}");
    ed.close_input();
    assert_eq!(ed.finish().await.0.expect("clean"), ExitReason::InputClosed);
}
