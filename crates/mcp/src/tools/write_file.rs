//! `write_file`: a whole file, created or replaced, after the user reviewed
//! it (see `change.rs`).

use super::change::{self, Change};
use super::Context;
use serde_json::Map;

pub async fn call(ctx: &Context, path: String, content: String) -> Result<String, String> {
    let editing = change::begin(ctx, &path).await?;
    let original = change::read_original(&editing.ws, &path).await?;
    let change = Change {
        tool: "write_file",
        shown: editing.shown.clone(),
        proposed: change::as_edited(&content),
        as_sent: original.is_none().then_some(content),
        asked: path,
        abs: editing.abs.clone(),
        ws: editing.ws.clone(),
        original,
    };
    change::land(ctx, change, Map::new()).await
}
