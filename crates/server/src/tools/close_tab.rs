//! `close_tab`: the client sends it twice after every diff decision, and
//! when the user answered in the terminal first. For a ccbridge diff it
//! settles a still-pending call and closes the view, once, answering at
//! once without waiting for the editor to close it; for any other name it
//! asks the editor to close that tab. Always `TAB_CLOSED`.

use super::args;
use crate::ide::lock;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::mcp::CallToolResult;
use ccbridge_protocol::tools::{CloseTabArgs, Tool, TAB_CLOSED};
use std::sync::Arc;

pub(crate) async fn call(ide: &Arc<Ide>, _caller: Caller, a: RawJson) -> CallToolResult {
    let a: CloseTabArgs = match args(Tool::CloseTab, a) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let (diff, recent) = {
        let mut diffs = lock(&ide.diffs);
        let d = diffs.close_tab(&a.tab_name);
        (d, diffs.was_recently_closed(&a.tab_name))
    };
    if let Some(closed) = diff {
        ide.close_views(vec![closed]);
    } else if !recent && ide.frontend.capabilities().close_tab {
        if let Err(e) = ide.editor(ide.frontend.close_tab(a.tab_name)).await {
            tracing::debug!("close_tab: {e}");
        }
    }
    CallToolResult::text(TAB_CLOSED)
}
