//! `closeAllDiffTabs`: sent by the client at the start of every turn. Closes
//! only the diff views this connection opened through ccbridge — never the
//! user's own diffs — and settles their pending `openDiff` calls.

use crate::connection::Conn;
use crate::engine::lock;
use crate::frontend::CloseReason;
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::closed_diff_tabs;
use std::sync::Arc;

pub(crate) async fn call(conn: &Arc<Conn>, _args: RawJson) -> CallToolResult {
    let ids = lock(&conn.shared.diffs).close_all(Some(conn.id), CloseReason::NewPrompt);
    let n = ids.len();
    conn.shared.close_views(ids);
    CallToolResult::text(closed_diff_tabs(n))
}
