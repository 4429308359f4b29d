//! `openFile`: asks the editor to open (and optionally select in) a file.
//! With `makeFrontmost` the answer is plain text, otherwise JSON details,
//! as the VS Code extension answers.

use super::{args, editor_error};
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{language_id_for, OpenFileArgs, Tool};
use serde_json::json;
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, a: RawJson) -> CallToolResult {
    let a: OpenFileArgs = match args(Tool::OpenFile, a) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let frontmost = a.make_frontmost;
    match ide.editor(ide.frontend.open_file(a.clone())).await {
        Ok(opened) if frontmost => {
            CallToolResult::text(format!("Opened file: {}", opened.file_path))
        }
        Ok(opened) => CallToolResult::json(&json!({
            "success": true,
            "filePath": opened.file_path,
            "languageId": opened.language_id.unwrap_or_else(|| language_id_for(&a.file_path).into()),
            "lineCount": opened.line_count,
        })),
        Err(e) => editor_error(&format!("Failed to open {}", a.file_path), e),
    }
}
