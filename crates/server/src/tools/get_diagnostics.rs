//! `getDiagnostics`: a JSON array of `{uri, diagnostics}` in the first text
//! item. With `{uri}` it is that one file — an unknown file is that uri
//! with an empty list, which the client reads as "no problems", never an
//! error. URIs are `file://` + the raw path, as the client compares them.

use super::args;
use crate::connection::Conn;
use crate::engine::lock;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{diagnostics_result, GetDiagnosticsArgs, Tool};
use serde_json::Value;
use std::sync::Arc;

pub(crate) async fn call(conn: &Arc<Conn>, a: Value) -> CallToolResult {
    let a: GetDiagnosticsArgs = match args(Tool::GetDiagnostics, a) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let state = lock(&conn.shared.state);
    match a.uri.filter(|u| !u.is_empty()) {
        Some(uri) => diagnostics_result(&[state.diagnostics_for(&uri)]),
        None => diagnostics_result(&state.all_diagnostics()),
    }
}
