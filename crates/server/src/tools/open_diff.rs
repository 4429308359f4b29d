//! `openDiff`: shows the proposed file in the editor and waits for the user.
//!
//! Accept → `FILE_SAVED` + the final text (with the user's own edits; the
//! client writes the file, ccbridge never does). Reject, or the view closed
//! by `close_tab`/`closeAllDiffTabs`/a replacement/a disconnect →
//! `DIFF_REJECTED` + tab name. An editor that cannot show the diff gets an
//! `isError` result, and the client falls back to its terminal prompt.

use super::{args, editor_error};
use crate::diffs::Settled;
use crate::frontend::{AgentKind, CloseReason, DiffDecision, DiffView};
use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{diff_rejected, file_saved, OpenDiffArgs, Tool};
use std::sync::Arc;

/// Files larger than this are shown as new files rather than read.
const MAX_ORIGINAL: u64 = 16 << 20;

pub(crate) async fn call(ide: &Arc<Ide>, caller: Caller, a: RawJson) -> CallToolResult {
    let a: OpenDiffArgs = match args(Tool::OpenDiff, a) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let (original, is_new_file) = read_original(&a.old_file_path).await;
    let (id, decision, replaced) = lock(&ide.diffs).open(&a.tab_name, caller.conn);
    if let Some(old) = replaced {
        ide.close_views(vec![old]);
    }
    let view = DiffView {
        id,
        client_id: Some(caller.client),
        agent: Some(AgentKind::Claude),
        tab_name: a.tab_name.clone(),
        old_file_path: a.old_file_path,
        new_file_path: a.new_file_path,
        original_contents: original,
        is_new_file,
        proposed_contents: a.new_file_contents.clone(),
    };
    if let Err(e) = ide.editor(ide.frontend.show_diff(view)).await {
        // Never shown: only the registry forgets it (no view to close).
        lock(&ide.diffs).close(id, CloseReason::ClaudeClosed);
        return editor_error("The editor could not show the diff", e);
    }
    match decision.await {
        Ok(Settled::Decided(DiffDecision::Accepted { contents })) => {
            file_saved(contents.unwrap_or(a.new_file_contents))
        }
        Ok(Settled::Decided(DiffDecision::Rejected | DiffDecision::Dismissed))
        | Ok(Settled::Closed)
        | Err(_) => diff_rejected(a.tab_name),
    }
}

/// The file's text, and whether it does not exist at all (a new file).
async fn read_original(path: &str) -> (Option<String>, bool) {
    let meta = match tokio::fs::metadata(path).await {
        Ok(m) => m,
        Err(e) => return (None, e.kind() == std::io::ErrorKind::NotFound),
    };
    if !meta.is_file() || meta.len() > MAX_ORIGINAL {
        return (None, false);
    }
    let text = match tokio::fs::read(path).await {
        Ok(bytes) => String::from_utf8(bytes).ok(),
        Err(_) => None,
    };
    (text, false)
}
