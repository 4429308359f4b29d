//! The dispatch loop against a fake engine, over in-memory pipes.

use super::*;
use ccbridge_lsp::framing::encode_frame;
use ccbridge_protocol::editor::{Position, Range, Selection};
use ccbridge_server::{
    Capabilities, ClientId, DiffDecision, DiffId, DiffView, Frontend, FrontendError,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

const LIMIT: Duration = Duration::from_secs(10);

struct FakeEngine {
    events: mpsc::UnboundedSender<EditorEvent>,
    gone: AtomicBool,
    /// Lock-file rewrites fail (a full disk).
    lock_fails: AtomicBool,
}

#[async_trait]
impl Engine for FakeEngine {
    async fn send(&self, event: EditorEvent) -> Result<(), EngineGone> {
        if self.gone.load(Ordering::SeqCst) {
            return Err(EngineGone);
        }
        // Yield so that a loop that did not await in order would reorder.
        tokio::task::yield_now().await;
        self.events.send(event).map_err(|_| EngineGone)
    }
    async fn apply(&self, event: EditorEvent) -> Result<(), ApplyError> {
        let outcome = match &event {
            EditorEvent::Workspace { .. } if self.lock_fails.load(Ordering::SeqCst) => Err(
                ApplyError::Lock(ccbridge_server::lockfile::LockError::Write {
                    path: "/tmp/ide/43210.lock".into(),
                    error: std::io::Error::from_raw_os_error(28),
                }),
            ),
            // The fake knows only diffs 1 to 9.
            EditorEvent::DiffResolved { id, .. } if id.0 >= 10 => Err(ApplyError::DiffNotOpen(*id)),
            _ => Ok(()),
        };
        self.send(event).await?;
        outcome
    }
    fn port(&self) -> u16 {
        43210
    }
    fn lock_path(&self) -> Option<PathBuf> {
        Some(PathBuf::from("/tmp/ide/43210.lock"))
    }
    fn workspace_folders(&self) -> Vec<String> {
        vec!["/w".into()]
    }
    fn traffic_log(&self) -> Option<Arc<ccbridge_server::traffic::TrafficLog>> {
        None
    }
    fn clients(&self) -> Vec<ClientInfo> {
        vec![ClientInfo {
            id: ClientId(1),
            name: "claude-code".into(),
            version: "2.1.328".into(),
            pid: Some(77),
            agent: Default::default(),
        }]
    }
}

/// The fake editor's side of a running session.
struct Editor {
    input: DuplexStream,
    output: FrameReader<DuplexStream>,
    events: mpsc::UnboundedReceiver<EditorEvent>,
    engine: Arc<FakeEngine>,
    frontend: Arc<StdioFrontend>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<ExitReason, SidecarError>>,
}

fn start() -> Editor {
    start_with_limit(MAX_BODY_BYTES)
}

fn start_with_limit(max_body: u64) -> Editor {
    let (editor_in, session_in) = tokio::io::duplex(1 << 16);
    let (session_out, editor_out) = tokio::io::duplex(1 << 16);
    let (sink, _writer) = spawn_writer(session_out);
    let frontend = Arc::new(StdioFrontend::new(sink.clone(), LIMIT));
    let (tx, events) = mpsc::unbounded_channel();
    let engine = Arc::new(FakeEngine {
        events: tx,
        gone: AtomicBool::new(false),
        lock_fails: AtomicBool::new(false),
    });
    let session = Session::new(
        engine.clone(),
        frontend.clone(),
        sink,
        ServerInfo {
            name: "ccbridge".into(),
            version: "9.9.9".into(),
        },
    );
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut reader = FrameReader::with_limits(session_in, 8 * 1024, max_body);
        let stop = async move {
            let _ = stopped.await;
            ExitReason::Stopped
        };
        session.serve(&mut reader, stop).await
    });
    Editor {
        input: editor_in,
        output: FrameReader::new(editor_out),
        events,
        engine,
        frontend,
        stop: Some(stop),
        task,
    }
}

impl Editor {
    async fn raw(&mut self, bytes: &[u8]) {
        self.input.write_all(bytes).await.expect("session reads");
    }

    async fn send(&mut self, v: Value) {
        self.raw(&encode_frame(v.to_string().as_bytes())).await;
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let r = self.recv().await;
        assert_eq!(r["id"], id, "answer to {method}: {r}");
        r
    }

    async fn recv(&mut self) -> Value {
        let frame = tokio::time::timeout(LIMIT, self.output.read_frame())
            .await
            .expect("a frame in time")
            .expect("well-framed output")
            .expect("output open");
        let Frame::Body(b) = frame else {
            panic!("oversized output")
        };
        serde_json::from_slice(&b).expect("JSON output")
    }

    async fn event(&mut self) -> EditorEvent {
        tokio::time::timeout(LIMIT, self.events.recv())
            .await
            .expect("an event in time")
            .expect("engine channel open")
    }

    fn no_event(&mut self) {
        assert!(self.events.try_recv().is_err(), "no event expected");
    }

    async fn end(self) -> Result<ExitReason, SidecarError> {
        tokio::time::timeout(LIMIT, self.task)
            .await
            .expect("session ends in time")
            .expect("session task")
    }
}

fn range(l: u32) -> Value {
    json!({"start": {"line": l, "character": 0}, "end": {"line": l, "character": 3}})
}

#[tokio::test]
async fn initialize_answers_and_updates_the_workspace() {
    let mut ed = start();
    let r = ed
        .call(
            1,
            "initialize",
            json!({"protocolVersion": 1, "ideName": "Neovim", "workspaceFolders": ["/w"],
                   "pid": 4242,
                   "capabilities": {"diff": true, "openFile": true, "executeCode": true}}),
        )
        .await;
    assert_eq!(
        r["result"],
        json!({"protocolVersion": 1, "serverInfo": {"name": "ccbridge", "version": "9.9.9"},
               "port": 43210, "lockFile": "/tmp/ide/43210.lock",
               "env": {"CLAUDE_CODE_SSE_PORT": "43210", "ENABLE_IDE_INTEGRATION": "true"}}),
        "a version-1 editor is answered in version 1"
    );
    assert_eq!(
        ed.event().await,
        EditorEvent::Workspace {
            folders: Some(vec!["/w".into()]),
            ide_name: Some("Neovim".into()),
            pid: Some(4242)
        }
    );
    let caps = ed.frontend.capabilities();
    assert!(caps.diff && caps.open_file && caps.execute_code && !caps.close_tab);

    // Without workspace fields there is no lock-file rewrite; without a
    // version the newest is spoken.
    let r = ed.call(2, "initialize", json!({})).await;
    assert_eq!(r["result"]["protocolVersion"], 3);
    // Claude's args make every edit ask (so it is reviewed in the editor)
    // even in the auto mode a `claude` starts in.
    let args = &r["result"]["agents"][0]["args"];
    assert_eq!(args[0], "--settings", "{args}");
    let settings: Value = serde_json::from_str(args[1].as_str().unwrap()).unwrap();
    assert_eq!(
        settings,
        ccbridge_protocol::lockfile::claude_settings(true, &[])
    );
    assert_eq!(
        r["result"]["agents"],
        json!([{"id": "claude", "name": "Claude Code",
                "env": {"CLAUDE_CODE_SSE_PORT": "43210", "ENABLE_IDE_INTEGRATION": "true"},
                "args": args}]),
        "version 3 lists the agents offered"
    );
    let r = ed
        .call(3, "initialize", json!({"protocolVersion": 2}))
        .await;
    assert!(r["result"].get("agents").is_none(), "{r}");
    ed.no_event();
}

#[tokio::test]
async fn initialize_rejects_bad_versions_and_params() {
    let mut ed = start();
    let r = ed
        .call(1, "initialize", json!({"protocolVersion": 4}))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"], json!({"supported": [1, 2, 3]}));
    let r = ed.call(2, "initialize", json!({"pid": "me"})).await;
    assert_eq!(r["error"]["code"], -32602);
    let r = ed
        .call(
            3,
            "initialize",
            json!({"workspaceFolders": ["relative/dir"]}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    ed.no_event();
    assert_eq!(
        ed.frontend.capabilities(),
        crate::frontend::default_capabilities()
    );
}

#[tokio::test]
async fn status_unknown_requests_and_shutdown() {
    let mut ed = start();
    let r = ed.call(5, "status", Value::Null).await;
    assert_eq!(
        r["result"],
        json!({"port": 43210, "lockFile": "/tmp/ide/43210.lock",
               "clients": [{"id": 1, "name": "claude-code", "version": "2.1.328", "pid": 77,
                            "agent": {"id": "claude", "name": "Claude Code"}}]})
    );
    let r = ed.call(6, "textDocument/hover", json!({})).await;
    assert_eq!(r["error"]["code"], -32601);
    assert_eq!(r["error"]["data"], "textDocument/hover");
    let r = ed.call(7, "shutdown", Value::Null).await;
    assert_eq!(r, json!({"jsonrpc": "2.0", "id": 7, "result": null}));
    assert_eq!(ed.end().await.unwrap(), ExitReason::ShutdownRequested);
}

#[tokio::test]
async fn notifications_become_events_in_arrival_order() {
    let mut ed = start();
    for l in 0..50 {
        ed.notify(
            "selectionChanged",
            json!({"filePath": "/w/a.rs", "text": "abc", "selection": range(l)}),
        )
        .await;
    }
    ed.notify("selectionChanged", json!({"filePath": null}))
        .await;
    for l in 0..50 {
        assert_eq!(
            ed.event().await,
            EditorEvent::Selection(Some(Selection {
                file_path: "/w/a.rs".into(),
                text: "abc".into(),
                range: Range::new(Position::new(l, 0), Position::new(l, 3)),
            }))
        );
    }
    assert_eq!(ed.event().await, EditorEvent::Selection(None));
}

#[tokio::test]
async fn every_notification_of_the_document() {
    let mut ed = start();
    ed.notify(
        "openEditorsChanged",
        json!({"tabs": [{"path": "/w/a.rs", "isActive": true, "isDirty": false}]}),
    )
    .await;
    ed.notify(
        "diagnosticsChanged",
        json!({"uri": "file:///w/a%20b.rs", "diagnostics": [
            {"message": "m", "severity": "Error", "range": range(1)}]}),
    )
    .await;
    ed.notify("diagnosticsCleared", Value::Null).await;
    ed.notify(
        "documentDirtyChanged",
        json!({"path": "/w/a.rs", "isDirty": true}),
    )
    .await;
    ed.notify(
        "atMentioned",
        json!({"filePath": "/w/a.rs", "lineStart": 2, "lineEnd": 4}),
    )
    .await;
    ed.notify("workspaceChanged", json!({"ideName": "Helix"}))
        .await;
    ed.notify(
        "diffResolved",
        json!({"id": 4, "decision": "accepted", "contents": "final\n"}),
    )
    .await;
    ed.notify("diffResolved", json!({"id": 5, "decision": "rejected"}))
        .await;

    let EditorEvent::OpenEditors(tabs) = ed.event().await else {
        panic!("tabs")
    };
    assert_eq!(tabs[0].path, "/w/a.rs");
    let EditorEvent::Diagnostics { path, diagnostics } = ed.event().await else {
        panic!("diagnostics")
    };
    assert_eq!((path.as_str(), diagnostics.len()), ("/w/a b.rs", 1));
    assert_eq!(ed.event().await, EditorEvent::ClearDiagnostics);
    assert_eq!(
        ed.event().await,
        EditorEvent::Dirty {
            path: "/w/a.rs".into(),
            is_dirty: true
        }
    );
    let EditorEvent::AtMention(m) = ed.event().await else {
        panic!("at-mention")
    };
    assert_eq!((m.line_start, m.line_end), (Some(2), Some(4)));
    assert_eq!(
        ed.event().await,
        EditorEvent::Workspace {
            folders: None,
            ide_name: Some("Helix".into()),
            pid: None
        }
    );
    assert_eq!(
        ed.event().await,
        EditorEvent::DiffResolved {
            id: DiffId(4),
            decision: DiffDecision::Accepted {
                contents: Some("final\n".into())
            }
        }
    );
    assert_eq!(
        ed.event().await,
        EditorEvent::DiffResolved {
            id: DiffId(5),
            decision: DiffDecision::Rejected
        }
    );
}

/// Issue 11, defect 11: a notification ccbridge cannot use is no longer
/// dropped in silence: the editor hears what was wrong (`invalidNotification`,
/// protocol 2), once, and is never *answered* (notifications have no answer).
#[tokio::test]
async fn regression_bad_notifications_are_reported_to_the_editor() {
    let mut ed = start();
    let bad = [
        (
            "selectionChanged",
            json!({"filePath": "/w/a", "selection": 3}),
        ),
        ("diffResolved", json!({"id": "x", "decision": "accepted"})),
        ("diagnosticsChanged", json!({"diagnostics": []})),
        ("workspaceChanged", json!({"workspaceFolders": ["rel"]})),
        ("atMentioned", json!({"filePath": "relative.py"})),
        ("selectionChange", json!({})),
    ];
    for (method, params) in &bad {
        ed.notify(method, params.clone()).await;
    }
    ed.notify("$/cancelRequest", json!({"id": 1})).await;
    ed.notify(
        "documentDirtyChanged",
        json!({"path": "/w/b", "isDirty": false}),
    )
    .await;
    for (method, _) in &bad {
        let n = ed.recv().await;
        assert_eq!(n["method"], "invalidNotification", "{n}");
        assert!(n.get("id").is_none(), "a notification, not an answer: {n}");
        assert_eq!(n["params"]["method"], *method, "{n}");
        assert_eq!(n["params"]["partial"], false, "{n}");
        assert!(!n["params"]["message"].as_str().unwrap().is_empty());
    }
    // Only the good one reaches the engine.
    assert_eq!(
        ed.event().await,
        EditorEvent::Dirty {
            path: "/w/b".into(),
            is_dirty: false
        }
    );
    ed.no_event();
    // `$/cancelRequest` was not reported: the next frame answers this.
    let r = ed.call(9, "status", json!({})).await;
    assert!(r["result"].is_object());
}

#[tokio::test]
async fn partly_bad_notifications_apply_the_rest_and_say_so() {
    let mut ed = start();
    ed.notify(
        "diagnosticsChanged",
        json!({"path": "/w/a.py", "diagnostics": [
            {"message": "m", "severity": "Error", "range": range(1)},
            {"message": "m", "severity": 5, "range": range(2)}]}),
    )
    .await;
    let EditorEvent::Diagnostics { diagnostics, .. } = ed.event().await else {
        panic!("diagnostics")
    };
    assert_eq!(diagnostics.len(), 1);
    let n = ed.recv().await;
    assert_eq!(n["params"]["partial"], true, "{n}");
    assert!(
        n["params"]["message"]
            .as_str()
            .unwrap()
            .contains("diagnostics[1]: unknown severity"),
        "{n}"
    );
}

#[tokio::test]
async fn version_1_editors_are_not_sent_what_they_do_not_know() {
    let mut ed = start();
    ed.call(1, "initialize", json!({"protocolVersion": 1}))
        .await;
    ed.notify(
        "selectionChanged",
        json!({"filePath": "rel", "selection": range(1)}),
    )
    .await;
    ed.no_event();
    let r = ed.call(2, "status", json!({})).await;
    assert!(r["result"].is_object(), "no invalidNotification came first");
}

/// Issue 11, defect 10: `initialize` answered before the lock file was
/// rewritten, and reported success when the rewrite failed.
#[tokio::test]
async fn regression_initialize_reports_a_failed_lock_rewrite() {
    let mut ed = start();
    ed.engine.lock_fails.store(true, Ordering::SeqCst);
    let r = ed
        .call(1, "initialize", json!({"workspaceFolders": ["/w2"]}))
        .await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("/tmp/ide/43210.lock"), "{msg}");
    ed.engine.lock_fails.store(false, Ordering::SeqCst);
    let _ = ed.event().await;
    ed.notify("workspaceChanged", json!({"ideName": "x"})).await;
    let _ = ed.event().await;
    ed.engine.lock_fails.store(true, Ordering::SeqCst);
    ed.notify("workspaceChanged", json!({"ideName": "y"})).await;
    let _ = ed.event().await;
    let n = ed.recv().await;
    assert_eq!(n["method"], "invalidNotification");
    assert_eq!(n["params"]["method"], "workspaceChanged");
    assert_eq!(n["params"]["partial"], true, "applied in memory: {n}");
}

#[tokio::test]
async fn verdicts_for_closed_diffs_are_reported_and_dismissals_pass_through() {
    let mut ed = start();
    ed.notify("diffResolved", json!({"id": 3, "decision": "dismissed"}))
        .await;
    assert_eq!(
        ed.event().await,
        EditorEvent::DiffResolved {
            id: DiffId(3),
            decision: DiffDecision::Dismissed
        }
    );
    ed.notify("diffResolved", json!({"id": 12, "decision": "rejected"}))
        .await;
    let _ = ed.event().await;
    let n = ed.recv().await;
    assert_eq!(n["method"], "invalidNotification");
    assert!(
        n["params"]["message"]
            .as_str()
            .unwrap()
            .contains("diff-12 is not open"),
        "{n}"
    );
}

#[tokio::test]
async fn garbage_gets_parse_errors_and_the_stream_goes_on() {
    let mut ed = start();
    ed.raw(&encode_frame(b"{not json")).await;
    let r = ed.recv().await;
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    ed.raw(&encode_frame(b"\xff\xfe")).await;
    assert_eq!(ed.recv().await["error"]["code"], -32700);
    ed.raw(b"Content-Type: x\r\n\r\n{\"lost\":true}").await;
    assert_eq!(ed.recv().await["error"]["code"], -32700);
    ed.raw(&encode_frame(br#"{"id":3,"method":"status"}"#))
        .await;
    let r = ed.recv().await;
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!(3), json!(-32600))
    );
    ed.raw(&encode_frame(b"[]")).await;
    assert_eq!(ed.recv().await["error"]["code"], -32600);
    let r = ed.call(4, "status", json!({})).await;
    assert!(r["result"].is_object());
}

#[tokio::test]
async fn oversized_frames_are_answered_with_their_id() {
    let mut ed = start_with_limit(100);
    let pad = "x".repeat(200);
    ed.send(json!({"jsonrpc": "2.0", "id": 12, "method": "status", "params": {"pad": pad}}))
        .await;
    let r = ed.recv().await;
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!(12), json!(-32600))
    );
    ed.notify(
        "diffResolved",
        json!({"id": 1, "decision": "accepted", "contents": pad}),
    )
    .await;
    let r = ed.recv().await;
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    ed.no_event();
    let r = ed.call(13, "status", json!({})).await;
    assert!(r["result"].is_object());
}

#[tokio::test]
async fn answers_reach_the_frontend_and_are_never_answered() {
    let mut ed = start_with_limit(300);
    ed.frontend.set_capabilities(Capabilities::all());
    let fe = ed.frontend.clone();
    let diff = DiffView {
        id: DiffId(1),
        client_id: None,
        tab_name: "t".into(),
        old_file_path: "/w/a".into(),
        new_file_path: "/w/a".into(),
        original_contents: None,
        is_new_file: false,
        proposed_contents: "x".into(),
        agent: None,
    };
    // A good answer.
    let shown = tokio::spawn({
        let fe = fe.clone();
        async move { fe.show_diff(diff).await }
    });
    let req = ed.recv().await;
    assert_eq!(req["method"], "showDiff");
    ed.send(json!({"jsonrpc": "2.0", "id": req["id"], "result": null}))
        .await;
    assert_eq!(shown.await.unwrap(), Ok(()));

    // A malformed answer fails the request; the editor is not answered.
    let save = tokio::spawn({
        let fe = fe.clone();
        async move { fe.save_document("/w/a".into()).await }
    });
    let req = ed.recv().await;
    ed.send(json!({"jsonrpc": "2.0", "id": req["id"], "error": {"oops": 1}}))
        .await;
    assert!(
        matches!(save.await.unwrap(), Err(FrontendError::Failed(m)) if m.contains("malformed"))
    );

    // An oversized answer fails the request too.
    let run = tokio::spawn({
        let fe = fe.clone();
        async move { fe.execute_code("1".into()).await }
    });
    let req = ed.recv().await;
    let big = "y".repeat(400);
    ed.send(json!({"jsonrpc": "2.0", "id": req["id"],
                   "result": {"content": [{"type": "text", "text": big}]}}))
        .await;
    assert!(
        matches!(run.await.unwrap(), Err(FrontendError::Failed(m)) if m.contains("size limit"))
    );

    // An error about something we sent, without an id, is only logged.
    ed.send(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "?"}}))
        .await;
    // Late and unknown answers are dropped.
    ed.send(json!({"jsonrpc": "2.0", "id": 999, "result": null}))
        .await;
    ed.send(json!({"jsonrpc": "2.0", "id": "x", "error": {"code": 1, "message": "m"}}))
        .await;
    // Nothing was written back: the next frame answers this request.
    let r = ed.call(50, "status", json!({})).await;
    assert!(r["result"].is_object());
    assert_eq!(fe.pending_requests(), 0);
}

#[tokio::test]
async fn end_of_input_between_frames_is_a_clean_end() {
    let mut ed = start();
    ed.notify("diagnosticsCleared", json!({})).await;
    assert_eq!(ed.event().await, EditorEvent::ClearDiagnostics);
    let Editor { input, task, .. } = ed;
    drop(input);
    let r = tokio::time::timeout(LIMIT, task).await.unwrap().unwrap();
    assert_eq!(r.unwrap(), ExitReason::InputClosed);
}

#[tokio::test]
async fn end_of_input_inside_a_frame_is_an_error() {
    let mut ed = start();
    ed.raw(b"Content-Length: 50\r\n\r\n{\"jsonrpc\"").await;
    let Editor { input, task, .. } = ed;
    drop(input);
    let r = tokio::time::timeout(LIMIT, task).await.unwrap().unwrap();
    assert!(matches!(r, Err(SidecarError::Input(_))), "{r:?}");
}

#[tokio::test]
async fn the_stop_future_ends_the_session_even_while_idle() {
    let mut ed = start();
    if let Some(stop) = ed.stop.take() {
        let _ = stop.send(());
    }
    assert_eq!(ed.end().await.unwrap(), ExitReason::Stopped);
}

#[tokio::test]
async fn a_stopped_engine_ends_the_session() {
    let mut ed = start();
    ed.engine.gone.store(true, Ordering::SeqCst);
    ed.notify("diagnosticsCleared", json!({})).await;
    assert_eq!(ed.end().await.unwrap(), ExitReason::EngineStopped);
}

#[tokio::test]
async fn a_dead_output_ends_the_session() {
    let ed = start();
    let Editor {
        output,
        task,
        frontend,
        input: _input,
        ..
    } = ed;
    drop(output);
    // The writer notices on its next write.
    frontend.client_disconnected(ClientId(1));
    let r = tokio::time::timeout(LIMIT, task).await.unwrap().unwrap();
    assert_eq!(r.unwrap(), ExitReason::OutputClosed);
}

#[test]
fn run_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (a, _b) = tokio::io::duplex(8);
    let (c, _d) = tokio::io::duplex(8);
    let fut = run(Config::new("x", vec![]), a, c, std::future::pending());
    assert_send(&fut);
}
