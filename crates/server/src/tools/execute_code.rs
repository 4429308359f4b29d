//! `executeCode`: runs code in the editor's kernel or REPL — only after the
//! user said yes. Listed only when the editor declares it can run code. The
//! engine asks for the confirmation itself, so no frontend can forget to.

use super::{args, editor_error};
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{ExecuteCodeArgs, Tool};
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, a: RawJson) -> CallToolResult {
    let a: ExecuteCodeArgs = match args(Tool::ExecuteCode, a) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let frontend = &ide.frontend;
    // No timeout on the question: the user may take their time.
    match frontend.confirm_execute(a.code.clone()).await {
        Ok(true) => {}
        Ok(false) => return CallToolResult::error("The user declined to run the code."),
        Err(e) => return editor_error("Could not ask the user to confirm", e),
    }
    match frontend.execute_code(a.code).await {
        Ok(content) => CallToolResult {
            content,
            is_error: false,
        },
        Err(e) => editor_error("Execution failed", e),
    }
}
