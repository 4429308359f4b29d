//! `getWorkspaceFolders`: the folders the editor has open.

use crate::connection::Conn;
use crate::engine::lock;
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::workspace_folders_result;
use std::sync::Arc;

pub(crate) async fn call(conn: &Arc<Conn>, _args: RawJson) -> CallToolResult {
    workspace_folders_result(&lock(&conn.shared.state).workspace_folders)
}
