//! `reformat_file` (JetBrains): runs the editor's formatter on a file.

use super::{args, editor_error};
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{ReformatFileArgs, Tool};
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, a: RawJson) -> CallToolResult {
    let a: ReformatFileArgs = match args(Tool::ReformatFile, a) {
        Ok(a) => a,
        Err(e) => return e,
    };
    match ide
        .editor(ide.frontend.reformat_file(a.file_path.clone()))
        .await
    {
        Ok(()) => CallToolResult::text("OK"),
        Err(e) => editor_error(&format!("Failed to reformat {}", a.file_path), e),
    }
}
