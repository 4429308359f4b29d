//! `checkDocumentDirty`: whether an open document has unsaved changes.

use super::args;
use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{dirty_result, document_not_open, FilePathArgs, Tool};
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, a: RawJson) -> CallToolResult {
    let a: FilePathArgs = match args(Tool::CheckDocumentDirty, a) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let state = lock(&ide.state);
    let untitled = state.tab(&a.file_path).is_some_and(|t| t.is_untitled);
    match state.dirty(&a.file_path) {
        Some(d) => dirty_result(&a.file_path, d, untitled),
        None => document_not_open(&a.file_path),
    }
}
