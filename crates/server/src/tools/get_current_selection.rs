//! `getCurrentSelection`: the selection (or cursor) in the active editor.

use crate::connection::Conn;
use crate::engine::lock;
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{failure, selection_result};
use std::sync::Arc;

pub(crate) async fn call(conn: &Arc<Conn>, _args: RawJson) -> CallToolResult {
    match &lock(&conn.shared.state).current {
        Some(s) => selection_result(s),
        None => failure("No active editor found"),
    }
}
