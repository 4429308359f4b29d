//! `open_files` (JetBrains): opens several files; answers the ones opened.

use super::{args, editor_error};
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{OpenFilesArgs, Tool};
use serde_json::json;
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, a: RawJson) -> CallToolResult {
    let a: OpenFilesArgs = match args(Tool::OpenFiles, a) {
        Ok(a) => a,
        Err(e) => return e,
    };
    match ide.editor(ide.frontend.open_files(a.file_paths)).await {
        Ok(opened) => CallToolResult::json(&json!({ "opened_files": opened })),
        Err(e) => editor_error("Failed to open files", e),
    }
}
