//! The rig every companion test starts: an engine whose frontend hands
//! each diff to the test, and a Gemini companion server on it, over real
//! sockets.

use async_trait::async_trait;
use ccbridge_companion::{CompanionAgent, CompanionServer};
use ccbridge_server::{
    Capabilities, CloseReason, Config, DiffId, DiffView, EngineHandle, Frontend, FrontendError,
    Server,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

pub const WAIT: Duration = Duration::from_secs(10);
pub const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Shows diffs by handing them to the test, and keeps each one's proposal
/// with a line the "user" added (what [`EDITED`] says), for `review_text`.
struct Shows(
    mpsc::UnboundedSender<DiffView>,
    std::sync::Mutex<std::collections::HashMap<DiffId, String>>,
    mpsc::UnboundedSender<(DiffId, CloseReason)>,
);

/// What the rig's editor adds to every proposal it shows.
pub const EDITED: &str = "// edited in the editor\n";

#[async_trait]
impl Frontend for Shows {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            diff: true,
            ..Capabilities::default()
        }
    }
    async fn show_diff(&self, diff: DiffView) -> Result<(), FrontendError> {
        self.1
            .lock()
            .unwrap()
            .insert(diff.id, format!("{}{EDITED}", diff.proposed_contents));
        let _ = self.0.send(diff);
        Ok(())
    }
    async fn review_text(&self, id: DiffId) -> Option<String> {
        self.1.lock().unwrap().get(&id).cloned()
    }
    async fn close_diff(&self, id: DiffId, reason: CloseReason) -> Result<(), FrontendError> {
        self.1.lock().unwrap().remove(&id);
        let _ = self.2.send((id, reason));
        Ok(())
    }
}

pub struct Rig {
    pub port: u16,
    pub engine: EngineHandle,
    pub shown: mpsc::UnboundedReceiver<DiffView>,
    /// The views the engine closed, and why.
    pub closed: mpsc::UnboundedReceiver<(DiffId, CloseReason)>,
    pub dir: tempfile::TempDir,
    pub _stop: tokio::sync::oneshot::Sender<()>,
}

pub async fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let mut config = Config::new("CompanionTest", vec![ws.display().to_string()]);
    config.lock_dir = Some(ws.join("ide"));
    let (tx, shown) = mpsc::unbounded_channel();
    let (closes, closed) = mpsc::unbounded_channel();
    let server = Server::bind(config, Arc::new(Shows(tx, Default::default(), closes)))
        .await
        .unwrap();
    let engine = server.handle();
    let companion = CompanionServer::bind(CompanionAgent::Gemini, TOKEN, engine.clone())
        .await
        .unwrap();
    let port = companion.port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (stop_engine, engine_stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = companion
            .run(async move {
                let _ = stopped.await;
            })
            .await;
        let _ = stop_engine.send(());
    });
    tokio::spawn(server.run(async move {
        let _ = engine_stopped.await;
    }));
    Rig {
        port,
        engine,
        shown,
        closed,
        dir,
        _stop: stop,
    }
}

/// Runs blocking socket code off the runtime.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// An MCP `initialize` as both clients send it.
pub fn init() -> String {
    serde_json::json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name":"streamable-http-client","version":"0.61.0"}}})
    .to_string()
}
