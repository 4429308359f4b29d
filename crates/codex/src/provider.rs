//! The provider side: what ccbridge answers, and how it serves through a
//! router someone else hosts (the Codex desktop app, its VS Code extension,
//! another ccbridge).
//!
//! The router asks every client it knows whether it can handle a request
//! (`client-discovery-request {requestId, request}` →
//! `client-discovery-response {requestId, response: {canHandle}}`), then
//! forwards the request itself to one that said yes and hands its
//! `response` back to the asker. ccbridge says yes only to `ide-context`
//! (version 0) for a `workspaceRoot` inside its own workspace folders, so
//! two ccbridges on different folders (or ccbridge and VS Code) share one
//! router and each answers for its own projects. A request it is sent
//! anyway gets the error Codex's own client gives (`no-handler-for-request`).
//!
//! Joining: `initialize` with `clientType` `ccbridge` (the router assigns
//! the `clientId`), then frames until the router closes. Reads are capped
//! ([`crate::frame::MAX_FRAME`]); a larger frame (a router may broadcast
//! big state to all its clients) is skipped unread up to Codex's own limit,
//! and beyond it the connection is dropped. Broadcasts are ignored.

use crate::context::{ide_context, serves};
use crate::frame::{self, FrameError};
use ccbridge_server::{EditorContext, EngineHandle};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;

/// How long a router may take to answer `initialize`.
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the answers come from: the engine, or a fixed state in tests.
pub trait ContextSource: Send + Sync + 'static {
    /// The workspace folders this IDE serves.
    fn folders(&self) -> Vec<String>;
    /// What the editor shows now.
    fn context(&self) -> EditorContext;
}

impl ContextSource for EngineHandle {
    fn folders(&self) -> Vec<String> {
        self.workspace_folders()
    }
    fn context(&self) -> EditorContext {
        self.editor_context()
    }
}

/// A fresh request id, unique in this process.
pub(crate) fn new_id(what: &str) -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    format!(
        "ccbridge-{what}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

pub(crate) fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Whether ccbridge answers `request`: `ide-context`, version 0, for a
/// root inside one of `source`'s folders.
pub fn handles(source: &dyn ContextSource, request: &Value) -> bool {
    str_of(request, "method") == Some("ide-context")
        && request.get("version").and_then(Value::as_u64).unwrap_or(0) == 0
        && request
            .get("params")
            .and_then(|p| str_of(p, "workspaceRoot"))
            .is_some_and(|root| serves(&source.folders(), root))
}

/// An error `response` to `request`.
pub fn error_response(request: &Value, error: &str) -> Value {
    json!({
        "type": "response",
        "requestId": request.get("requestId").cloned().unwrap_or(Value::Null),
        "method": request.get("method").cloned().unwrap_or(Value::Null),
        "resultType": "error",
        "error": error,
    })
}

/// The `response` to a request routed to ccbridge (`client_id`: who
/// handled it, as the router names it).
pub fn answer(source: &dyn ContextSource, request: &Value, client_id: &str) -> Value {
    if !handles(source, request) {
        return error_response(request, "no-handler-for-request");
    }
    let root = request["params"]["workspaceRoot"].as_str().unwrap_or("/");
    json!({
        "type": "response",
        "requestId": request.get("requestId").cloned().unwrap_or(Value::Null),
        "method": "ide-context",
        "handledByClientId": client_id,
        "resultType": "success",
        "result": {"ideContext": ide_context(&source.context(), root, &source.folders())},
    })
}

/// Why a joined router connection ended.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    #[error("the router did not answer initialize: {0}")]
    Initialize(String),
    #[error("the router closed the connection")]
    Closed,
    #[error("the router sent {0}; leaving it")]
    Bad(FrameError),
    #[error("cannot write to the router: {0}")]
    Write(std::io::Error),
}

/// Serves `source` as a provider through the router at the other end of
/// `stream` (peer already checked) until it closes or `stop` fires
/// (`Ok(())`).
pub async fn join(
    stream: UnixStream,
    source: &dyn ContextSource,
    stop: &CancellationToken,
) -> Result<(), JoinError> {
    let (mut rd, mut wr) = stream.into_split();
    let init_id = new_id("init");
    let init = json!({
        "type": "request",
        "requestId": init_id,
        "sourceClientId": "initializing-client",
        "version": 0,
        "method": "initialize",
        "params": {"clientType": "ccbridge"},
    });
    frame::write_frame(&mut wr, &init)
        .await
        .map_err(JoinError::Write)?;
    let client_id = tokio::time::timeout(INITIALIZE_TIMEOUT, async {
        loop {
            let v = next(&mut rd).await?;
            if str_of(&v, "type") == Some("response") && str_of(&v, "requestId") == Some(&init_id) {
                return match v["result"]["clientId"].as_str() {
                    Some(id) if str_of(&v, "resultType") == Some("success") => Ok(id.to_owned()),
                    _ => Err(JoinError::Initialize(format!("it answered {v}"))),
                };
            }
        }
    })
    .await
    .map_err(|_| JoinError::Initialize(format!("no answer within {INITIALIZE_TIMEOUT:?}")))??;
    tracing::info!(
        client_id,
        "joined the Codex IPC router as an IDE context provider"
    );
    loop {
        let v = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            v = next(&mut rd) => v?,
        };
        let reply = match str_of(&v, "type") {
            Some("client-discovery-request") => {
                let request = v.get("request").cloned().unwrap_or(Value::Null);
                json!({
                    "type": "client-discovery-response",
                    "requestId": v.get("requestId").cloned().unwrap_or(Value::Null),
                    "response": {"canHandle": handles(source, &request)},
                })
            }
            Some("request") => answer(source, &v, &client_id),
            _ => continue,
        };
        frame::write_frame(&mut wr, &reply)
            .await
            .map_err(JoinError::Write)?;
    }
}

/// The next frame from the router, skipping (unread) frames over
/// [`frame::MAX_FRAME`] but within Codex's own limit.
async fn next<R: tokio::io::AsyncRead + Unpin>(rd: &mut R) -> Result<Value, JoinError> {
    loop {
        match frame::read_frame(rd, frame::MAX_FRAME).await {
            Ok(v) => return Ok(v),
            Err(FrameError::Closed) => return Err(JoinError::Closed),
            Err(FrameError::TooLarge { len, .. }) if len <= frame::CLIENT_MAX_FRAME => {
                tracing::debug!(len, "skipping a large frame from the Codex IPC router");
                frame::skip(rd, len).await.map_err(JoinError::Bad)?;
            }
            Err(FrameError::NotJson(why)) => {
                tracing::debug!("ignoring a frame that is not JSON from the Codex router: {why}");
            }
            Err(e) => return Err(JoinError::Bad(e)),
        }
    }
}
