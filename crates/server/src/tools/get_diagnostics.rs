//! `getDiagnostics`: a JSON array of `{uri, diagnostics}` in the first text
//! item. With `{uri}` it is that one file — an unknown file is that uri
//! with an empty list, which the client reads as "no problems", never an
//! error. URIs are `file://` + the raw path, as the client compares them.
//!
//! The whole-workspace answer is serialized once per change of the
//! diagnostics and then served from that cache; serializing happens outside
//! the state lock, so editor events never wait behind it.
//!
//! Claude asks right after a decision (`{uri}`, a 500 ms budget, the
//! baseline) and again after its write (`{}`, 2,000 ms), and reports as new
//! what differs. When a language server ccbridge runs is analyzing a file's
//! new text (`EditorEvent::Analyzing`), answering at once would give the
//! old diagnostics and hide what the edit broke; so the answer waits for
//! that report, within a bound under Claude's budget, never beyond it.

use super::{args, Reply};
use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{diagnostics_result, GetDiagnosticsArgs, Tool};
use std::sync::Arc;
use std::time::Duration;

/// How long a `{uri}` answer waits for a file being analyzed.
const WAIT_ONE: Duration = Duration::from_millis(400);
/// How long a whole-workspace answer waits for the files being analyzed.
const WAIT_ALL: Duration = Duration::from_millis(1600);
/// An analysis older than this is not waited for (a stuck server).
const STALE_ANALYSIS: Duration = Duration::from_secs(5);

/// Waits, at most `bound`, until no file `uri` names (`None`: none at all)
/// is being analyzed.
async fn wait_for_analysis(ide: &Arc<Ide>, uri: Option<&str>, bound: Duration) {
    let mut rev = ide.diagnostics_rev.subscribe();
    let _ = tokio::time::timeout(bound, async {
        while lock(&ide.state).analyzing(uri, STALE_ANALYSIS) {
            if rev.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
}

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, a: RawJson) -> Reply {
    let a: GetDiagnosticsArgs = match args(Tool::GetDiagnostics, a) {
        Ok(a) => a,
        Err(e) => return e.into(),
    };
    let uri = a.uri.filter(|u| !u.is_empty());
    let bound = if uri.is_some() { WAIT_ONE } else { WAIT_ALL };
    wait_for_analysis(ide, uri.as_deref(), bound).await;
    if let Some(uri) = uri {
        let file = lock(&ide.state).diagnostics_for(&uri);
        return diagnostics_result(&[file]).into();
    }
    let (files, generation) = {
        let state = lock(&ide.state);
        if let Some(json) = state.all_diagnostics_json() {
            return Reply::Serialized(json);
        }
        (
            state.all_diagnostics_with_proposals(),
            state.diagnostics_generation(),
        )
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
