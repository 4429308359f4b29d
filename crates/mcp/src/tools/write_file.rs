//! `write_file`: a whole file, created or replaced, after the user reviewed
//! it (see `change.rs`).

use super::change::{self, Change};
use super::Context;
use serde_json::Map;

pub async fn call(ctx: &Context, path: String, content: String) -> Result<String, String> {
    let ws = ctx.ws();
    let at = ws
        .locate(&path)
        .map_err(|e| change::error(&path, e.to_string()))?;
    let abs = ws.absolute(&at);
    let _edit = ctx
        .locks
        .lock(&abs, ctx.settings.lock_wait)
        .await
        .map_err(|e| change::error(&path, e.to_string()))?;
    change::check_not_dirty(ctx, &path, &abs)?;
    let original = change::read_original(&ws, &path).await?;
    let change = Change {
        tool: "write_file",
        shown: at.rel.display().to_string(),
        proposed: change::as_edited(&content),
        asked: path,
        abs,
        ws,
        original,
    };
    change::land(ctx, change, Map::new()).await
}
