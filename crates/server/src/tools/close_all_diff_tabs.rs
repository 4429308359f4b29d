//! `closeAllDiffTabs`: sent by the client at the start of every turn. Closes
//! only the diff views this connection opened through ccbridge — never the
//! user's own diffs — and settles their pending `openDiff` calls.

use crate::frontend::CloseReason;
use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::closed_diff_tabs;
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, caller: Caller, _args: RawJson) -> CallToolResult {
    let ids = lock(&ide.diffs).close_all(Some(caller.conn), CloseReason::NewPrompt);
    let n = ids.len();
    ide.close_views(ids);
    CallToolResult::text(closed_diff_tabs(n))
}
