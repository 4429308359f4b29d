//! `get_all_opened_file_paths` (JetBrains): open files, one path per line.

use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, _args: RawJson) -> CallToolResult {
    let state = lock(&ide.state);
    let paths: Vec<&str> = state.tabs.iter().map(|t| t.path.as_str()).collect();
    CallToolResult::text(paths.join("\n"))
}
