//! `getOpenEditors`: the open tabs, in the VS Code extension's shape.

use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::open_editors_result;
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, _args: RawJson) -> CallToolResult {
    open_editors_result(&lock(&ide.state).tabs)
}
