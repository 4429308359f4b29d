//! `saveDocument`: asks the editor to save an open document.

use super::args;
use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{document_not_open, failure, saved_result, FilePathArgs, Tool};
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, a: RawJson) -> CallToolResult {
    let a: FilePathArgs = match args(Tool::SaveDocument, a) {
        Ok(a) => a,
        Err(e) => return e,
    };
    if lock(&ide.state).dirty(&a.file_path).is_none() {
        return document_not_open(&a.file_path);
    }
    match ide
        .editor(ide.frontend.save_document(a.file_path.clone()))
        .await
    {
        Ok(()) => {
            lock(&ide.state).set_dirty(&a.file_path, false);
            saved_result(&a.file_path)
        }
        Err(e) => failure(format!("Failed to save {}: {e}", a.file_path)),
    }
}
