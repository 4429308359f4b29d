//! `getOpenEditors`: the open tabs, in the VS Code extension's shape.

use crate::connection::Conn;
use crate::engine::lock;
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::open_editors_result;
use std::sync::Arc;

pub(crate) async fn call(conn: &Arc<Conn>, _args: RawJson) -> CallToolResult {
    open_editors_result(&lock(&conn.shared.state).tabs)
}
