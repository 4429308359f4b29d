//! `getLatestSelection`: the most recent selection, even if its editor is no
//! longer active.

use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{failure, selection_result};
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, _args: RawJson) -> CallToolResult {
    match &lock(&ide.state).latest {
        Some(s) => selection_result(s),
        None => failure("No selection available"),
    }
}
