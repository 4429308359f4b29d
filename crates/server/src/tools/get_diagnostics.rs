//! `getDiagnostics`: a JSON array of `{uri, diagnostics}` in the first text
//! item. With `{uri}` it is that one file — an unknown file is that uri
//! with an empty list, which the client reads as "no problems", never an
//! error. URIs are `file://` + the raw path, as the client compares them.
//!
//! The whole-workspace answer is serialized once per change of the
//! diagnostics and then served from that cache; serializing happens outside
//! the state lock, so editor events never wait behind it.

use super::{args, Reply};
use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{diagnostics_result, GetDiagnosticsArgs, Tool};
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, a: RawJson) -> Reply {
    let a: GetDiagnosticsArgs = match args(Tool::GetDiagnostics, a) {
        Ok(a) => a,
        Err(e) => return e.into(),
    };
    if let Some(uri) = a.uri.filter(|u| !u.is_empty()) {
        let file = lock(&ide.state).diagnostics_for(&uri);
        return diagnostics_result(&[file]).into();
    }
    let (files, generation) = {
        let state = lock(&ide.state);
        if let Some(json) = state.all_diagnostics_json() {
            return Reply::Serialized(json);
        }
        (state.all_diagnostics(), state.diagnostics_generation())
    };
    let json: Arc<str> = match serde_json::to_string(&diagnostics_result(&files)) {
        Ok(j) => j.into(),
        Err(e) => {
            return CallToolResult::error(format!("cannot serialize diagnostics: {e}")).into()
        }
    };
    lock(&ide.state).cache_all_diagnostics_json(generation, json.clone());
    Reply::Serialized(json)
}
