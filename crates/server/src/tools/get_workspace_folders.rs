//! `getWorkspaceFolders`: the folders the editor has open.

use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::workspace_folders_result;
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, _args: RawJson) -> CallToolResult {
    workspace_folders_result(&lock(&ide.state).workspace_folders)
}
