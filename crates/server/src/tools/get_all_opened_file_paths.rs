//! `get_all_opened_file_paths` (JetBrains): open files, one path per line.

use crate::connection::Conn;
use crate::engine::lock;
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use std::sync::Arc;

pub(crate) async fn call(conn: &Arc<Conn>, _args: RawJson) -> CallToolResult {
    let state = lock(&conn.shared.state);
    let paths: Vec<&str> = state.tabs.iter().map(|t| t.path.as_str()).collect();
    CallToolResult::text(paths.join("\n"))
}
