//! JSON-RPC dispatch for the IDE connection: a table from method name to
//! handler, with exact error semantics.
//!
//! | input | answer |
//! |---|---|
//! | not JSON | `-32700`, id null, connection stays up |
//! | JSON but not a request/notification | `-32600` |
//! | unknown request method | `-32601` with the method in `data` |
//! | request (other than `initialize`/`ping`) before `initialize` | `-32002` |
//! | bad `initialize`/`tools/call` params, unknown tool | `-32602` |
//! | bad tool arguments | an `isError` tool result |
//! | unknown notification, responses | ignored |

use crate::frontend::{Activity, AgentKind, ClientInfo};
use crate::ide::lock;
use crate::peer::Conn;
use crate::tools;
use ccbridge_protocol::jsonrpc::{
    code, ErrorObject, Message, Notification, RawJson, Request, Response,
};
use ccbridge_protocol::mcp::{self, CallToolParams, Implementation, InitializeParams};
use ccbridge_protocol::notifications as n;
use ccbridge_protocol::tools::Tool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How long a client that never lists tools waits for its context replay.
const READY_FALLBACK: Duration = Duration::from_millis(1500);

/// Handles one incoming message; returns the response to write at once,
/// if any (answers that take time are queued on the connection later).
pub(crate) async fn handle(conn: &Arc<Conn>, text: &str) -> Option<String> {
    match Message::parse(text) {
        Err(rejected) => {
            tracing::debug!(conn = conn.id, "unparseable message");
            Some(rejected.response.to_json())
        }
        Ok(Message::Request(r)) => request(conn, r).await,
        Ok(Message::Notification(nf)) => {
            notification(conn, nf);
            None
        }
        Ok(Message::Response(_)) => None,
    }
}

/// Answers a request with the serialized response; `None` when a tool's
/// task will answer later.
async fn request(conn: &Arc<Conn>, r: Request) -> Option<String> {
    let initialized = conn.initialized.load(Ordering::SeqCst);
    let id = r.id.clone();
    let outcome = match r.method.as_str() {
        "ping" => Ok(RawJson::empty_object()),
        "initialize" if initialized => Err(ErrorObject::new(
            code::INVALID_REQUEST,
            "initialize may only be sent once",
        )),
        "initialize" => return Some(initialize(conn, r)),
        _ if !initialized => Err(ErrorObject::new(
            code::SERVER_NOT_INITIALIZED,
            "Server not initialized: send initialize first",
        )),
        "tools/list" => {
            conn.ready_after(conn.shared.config.notify_delay);
            let list = tools::list_json(&conn.shared.ide);
            return Some(Response::ok_json_with_raw_result(&id, &list));
        }
        "tools/call" => return call(conn, r).await,
        other => Err(ErrorObject::method_not_found(other)),
    };
    Some(
        Response {
            id: Some(id),
            outcome,
        }
        .to_json(),
    )
}

/// Answers `initialize` and registers the session (which may evict an
/// older one).
fn initialize(conn: &Arc<Conn>, r: Request) -> String {
    let params: InitializeParams = match r.params() {
        Ok(p) => p,
        Err(e) => return Response::error(Some(r.id), e).to_json(),
    };
    let version = mcp::negotiate_version(params.protocol_version.as_deref());
    let cfg = &conn.shared.config;
    let server = Implementation {
        name: cfg.server_name.clone(),
        version: cfg.server_version.clone(),
        title: None,
    };
    let client = params.client_info.unwrap_or_default();
    let resp = Response::ok(r.id, mcp::initialize_result(version, &server)).to_json();
    conn.initialized(ClientInfo {
        id: conn.client_id(),
        name: client.name,
        version: client.version,
        pid: None,
        agent: AgentKind::Claude,
    });
    // A client that never sends tools/list still gets its context.
    conn.ready_after(cfg.notify_delay + READY_FALLBACK);
    resp
}

async fn call(conn: &Arc<Conn>, r: Request) -> Option<String> {
    let params: CallToolParams = match r.params() {
        Ok(p) => p,
        Err(e) => return Some(Response::error(Some(r.id), e).to_json()),
    };
    let Some(tool) = tools::find(&conn.shared.ide, &params.name) else {
        let e = ErrorObject::invalid_params(format!("Unknown tool: {}", params.name));
        return Some(Response::error(Some(r.id), e).to_json());
    };
    let args = params.arguments.unwrap_or_else(RawJson::empty_object);
    if tools::answers_at_once(tool) {
        return Some(run_tool(conn, tool, args).await.into_response(&r.id));
    }
    // Tools that wait for the editor or the user run in their own task, so
    // a pending openDiff never delays anything else on this connection.
    if !conn.take_id(&r.id) {
        let e = ErrorObject::invalid_request(format!(
            "request id {} is in use by a call not answered yet; an id may not be reused",
            r.id
        ));
        return Some(Response::error(Some(r.id), e).to_json());
    }
    let conn = conn.clone();
    let shared = conn.shared.clone();
    shared.calls_in_flight.fetch_add(1, Ordering::SeqCst);
    tokio::spawn(async move {
        let reply = run_tool(&conn, tool, args).await;
        // Free before the client can read the answer and reuse the id.
        conn.free_id(&r.id);
        conn.send(reply.into_response(&r.id)).await;
        shared.calls_in_flight.fetch_sub(1, Ordering::SeqCst);
        shared.calls_done.notify_waiters();
    });
    None
}

async fn run_tool(conn: &Arc<Conn>, tool: Tool, args: RawJson) -> tools::Reply {
    let started = std::time::Instant::now();
    let reply = tools::call(tool, &conn.shared.ide, conn.caller(), args).await;
    let elapsed = started.elapsed();
    tracing::debug!(
        conn = conn.id,
        tool = tool.name(),
        is_error = reply.is_error(),
        elapsed_us = elapsed.as_micros() as u64,
        "tools/call answered"
    );
    conn.shared.ide.frontend.activity(Activity::ToolCall {
        client: conn.client_id(),
        tool: tool.name().to_owned(),
        is_error: reply.is_error(),
        summary: reply.summary(),
        elapsed_ms: elapsed.as_millis() as u64,
    });
    reply
}

fn notification(conn: &Arc<Conn>, nf: Notification) {
    match nf.method.as_str() {
        n::IDE_CONNECTED => {
            let pid = nf.params::<n::IdeConnected>().ok().and_then(|p| p.pid);
            tracing::debug!(conn = conn.id, ?pid, "ide_connected");
            let announce = {
                let mut sessions = lock(&conn.shared.sessions);
                sessions.set_pid(conn.id, pid);
                sessions.announce(conn.id)
            };
            if let Some(info) = announce {
                conn.shared.ide.frontend.client_connected(&info);
            }
        }
        n::LOG_EVENT => {
            if let Ok(e) = nf.params::<n::LogEvent>() {
                tracing::debug!(conn = conn.id, event = %e.event_name, "log_event");
            }
        }
        n::INITIALIZED | n::CANCELLED | "notifications/roots/list_changed" => {}
        other => tracing::debug!(conn = conn.id, method = other, "ignored notification"),
    }
}
