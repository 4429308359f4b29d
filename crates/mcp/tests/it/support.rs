//! A tools server on a real socket over a temporary workspace, driven by
//! real HTTP requests, with a scripted editor standing in for the user:
//! each review or approval it is asked for reaches the test, which answers.

use async_trait::async_trait;
use ccbridge_mcp::{Editor, Settings, ToolsServer};
use ccbridge_protocol::editor::FileDiagnostics;
use ccbridge_server::{Approval, CommandEvent, FrontendError, Proposal, RunId, Verdict};
use ccbridge_testkit::http::{self, Answer};
use ccbridge_workspace::Workspace;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

pub const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
pub const WAIT: Duration = Duration::from_secs(10);

/// Something the editor was asked, with the way to answer it.
pub enum Asked {
    Review(Proposal, oneshot::Sender<Result<Verdict, FrontendError>>),
    Approve(Approval, oneshot::Sender<Result<bool, FrontendError>>),
}

/// The editor, scripted by the test.
pub struct ScriptedEditor {
    asked: mpsc::UnboundedSender<Asked>,
    pub diagnostics: Mutex<Vec<FileDiagnostics>>,
    pub changes: watch::Sender<u64>,
    pub dirty: Mutex<Vec<String>>,
    pub events: Mutex<Vec<CommandEvent>>,
    runs: AtomicU64,
}

impl ScriptedEditor {
    /// Sets the diagnostics, as the editor reporting them would.
    pub fn report(&self, files: Value) {
        *self.diagnostics.lock().unwrap() = serde_json::from_value(files).unwrap();
        self.changes.send_modify(|n| *n += 1);
    }

    pub fn events(&self) -> Vec<CommandEvent> {
        self.events.lock().unwrap().clone()
    }
}

#[async_trait]
impl Editor for ScriptedEditor {
    fn diagnostics(&self) -> Vec<FileDiagnostics> {
        self.diagnostics.lock().unwrap().clone()
    }
    fn diagnostics_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
    fn is_dirty(&self, path: &str) -> bool {
        self.dirty.lock().unwrap().iter().any(|p| p == path)
    }
    async fn review(&self, proposal: Proposal) -> Result<Verdict, FrontendError> {
        let (tx, rx) = oneshot::channel();
        self.asked.send(Asked::Review(proposal, tx)).unwrap();
        rx.await.unwrap_or(Err(FrontendError::Disconnected))
    }
    async fn approve(&self, approval: Approval) -> Result<bool, FrontendError> {
        let (tx, rx) = oneshot::channel();
        self.asked.send(Asked::Approve(approval, tx)).unwrap();
        rx.await.unwrap_or(Err(FrontendError::Disconnected))
    }
    fn next_run(&self) -> RunId {
        RunId(self.runs.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn command_event(&self, event: CommandEvent) {
        self.events.lock().unwrap().push(event);
    }
}

pub struct Rig {
    pub port: u16,
    pub editor: Arc<ScriptedEditor>,
    pub asked: mpsc::UnboundedReceiver<Asked>,
    pub ctx: Arc<ccbridge_mcp::tools::Context>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    pub dir: tempfile::TempDir,
    session: Option<String>,
}

pub fn settings() -> Settings {
    Settings {
        diagnostics_delay: Duration::ZERO,
        ..Settings::default()
    }
}

pub async fn start() -> Rig {
    start_with(settings()).await
}

pub async fn start_with(settings: Settings) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.py"), "print('hi')\nprint('bye')\n").unwrap();
    let ws = Arc::new(Workspace::open(&[dir.path().to_path_buf()]).unwrap());
    let (tx, asked) = mpsc::unbounded_channel();
    let editor = Arc::new(ScriptedEditor {
        asked: tx,
        diagnostics: Mutex::new(Vec::new()),
        changes: watch::Sender::new(0),
        dirty: Mutex::new(Vec::new()),
        events: Mutex::new(Vec::new()),
        runs: AtomicU64::new(0),
    });
    let server = ToolsServer::bind(None, TOKEN, ws, editor.clone(), settings)
        .await
        .unwrap();
    let port = server.port();
    assert_eq!(server.url(), format!("http://127.0.0.1:{port}/mcp"));
    let ctx = server.context();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    Rig {
        port,
        editor,
        asked,
        ctx,
        stop: Some(stop),
        task,
        dir,
        session: None,
    }
}

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;

/// A `tools/call` request body, with an id of its own (concurrent
/// requests of one session must not share one).
pub fn call(name: &str, args: Value) -> String {
    call_with_id(next_id(), name, args)
}

pub fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(100);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

pub fn call_with_id(id: u64, name: &str, args: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name": name, "arguments": args}})
        .to_string()
}

impl Rig {
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// One request on its own connection; `headers` replace the defaults
    /// of the same name (Host, Authorization, Accept, Content-Type), an
    /// empty value drops the header.
    pub fn post_later(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> tokio::task::JoinHandle<Answer> {
        self.request_later("POST", path, headers, body)
    }

    /// [`Self::post_later`] with another method.
    pub fn request_later(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> tokio::task::JoinHandle<Answer> {
        let host = format!("127.0.0.1:{}", self.port);
        let auth = format!("Bearer {TOKEN}");
        let defaults = [
            ("Host", host.as_str()),
            ("Authorization", auth.as_str()),
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
        ];
        let mut all: Vec<(String, String)> = defaults
            .iter()
            .filter(|(k, _)| !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(k)))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        all.extend(
            headers
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let (port, path, body) = (self.port, path.to_owned(), body.to_owned());
        let method = method.to_owned();
        tokio::task::spawn_blocking(move || {
            let refs: Vec<(&str, &str)> =
                all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            http::request(port, &method, &path, &refs, &body, Duration::from_secs(30))
        })
    }

    pub async fn post(&self, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        self.post_later(path, headers, body).await.unwrap()
    }

    pub async fn send(&self, method: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        self.request_later(method, "/mcp", headers, body)
            .await
            .unwrap()
    }

    /// The session's id, once open.
    pub fn session_id(&self) -> &str {
        self.session.as_deref().expect("open_session first")
    }

    /// Opens an MCP session (initialize + initialized).
    pub async fn open_session(&mut self) {
        let init = self.post("/mcp", &[], INIT).await;
        assert_eq!(init.status, 200, "{}\n{}", init.head, init.body);
        let session = init.header("mcp-session-id").expect("a session id");
        self.session = Some(session);
        let a = self
            .post(
                "/mcp",
                &self.session_headers(),
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            )
            .await;
        assert_eq!(a.status, 202, "{}", a.head);
    }

    fn session_headers(&self) -> Vec<(&str, &str)> {
        vec![
            (
                "Mcp-Session-Id",
                self.session.as_deref().expect("open_session first"),
            ),
            ("MCP-Protocol-Version", "2025-11-25"),
        ]
    }

    /// Starts a tool call in the session; its answer comes once awaited.
    pub fn call_later(&self, name: &str, args: Value) -> tokio::task::JoinHandle<Answer> {
        self.post_later("/mcp", &self.session_headers(), &call(name, args))
    }

    /// Starts a tool call with a given request id.
    pub fn call_later_with_id(
        &self,
        id: u64,
        name: &str,
        args: Value,
    ) -> tokio::task::JoinHandle<Answer> {
        self.post_later(
            "/mcp",
            &self.session_headers(),
            &call_with_id(id, name, args),
        )
    }

    /// Sends a notification in the session.
    pub async fn notify(&self, body: Value) -> Answer {
        self.post("/mcp", &self.session_headers(), &body.to_string())
            .await
    }

    /// A tool call's result: `(text, isError)`.
    pub async fn call(&self, name: &str, args: Value) -> (String, bool) {
        outcome(self.call_later(name, args).await.unwrap())
    }

    /// The next thing the editor is asked.
    pub async fn next_asked(&mut self) -> Asked {
        tokio::time::timeout(WAIT, self.asked.recv())
            .await
            .expect("the editor is asked something")
            .expect("the server is running")
    }

    pub async fn next_review(
        &mut self,
    ) -> (Proposal, oneshot::Sender<Result<Verdict, FrontendError>>) {
        match self.next_asked().await {
            Asked::Review(p, tx) => (p, tx),
            Asked::Approve(a, _) => panic!("expected a review, got an approval: {a:?}"),
        }
    }

    pub async fn next_approval(
        &mut self,
    ) -> (Approval, oneshot::Sender<Result<bool, FrontendError>>) {
        match self.next_asked().await {
            Asked::Approve(a, tx) => (a, tx),
            Asked::Review(p, _) => panic!("expected an approval, got a review: {p:?}"),
        }
    }

    /// Nothing was asked of the editor.
    pub fn nothing_asked(&mut self) -> bool {
        self.asked.try_recv().is_err()
    }

    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("the server stops")
            .unwrap()
            .unwrap();
    }
}

/// A tool call answer's `(text, isError)`.
pub fn outcome(a: Answer) -> (String, bool) {
    let m = a.message();
    let r = &m["result"];
    let text = r["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{m}"))
        .to_owned();
    (text, r["isError"] == true)
}

/// A JSON tool result's fields.
pub fn fields(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Waits (polling, bounded) until `f` holds; returns whether it did.
pub async fn until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
