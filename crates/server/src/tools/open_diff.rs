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
        lock(&ide.diffs).close(id, CloseReason::AgentClosed);
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
/// One that cannot be shown (too large, not text, not a regular file) is
/// shown without a left side.
async fn read_original(path: &str) -> (Option<String>, bool) {
    match crate::original::read(path).await {
        crate::original::Original::Text(t) => (Some(t), false),
        crate::original::Original::Missing => (None, true),
        crate::original::Original::Unreadable(why) => {
            tracing::debug!("openDiff without the original: {why}");
            (None, false)
        }
    }
}
