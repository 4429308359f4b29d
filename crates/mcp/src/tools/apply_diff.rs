//! `apply_diff`: SEARCH/REPLACE blocks applied in order to an existing
//! file, the result reviewed by the user (see `change.rs`). Blocks that do
//! not match exactly once are reported by number; when some applied, the
//! change goes ahead with `partial` and `failed_blocks`.

use super::change::{self, Change};
use super::Context;
use ccbridge_tools::apply_diff;
use serde_json::{json, Map};

pub async fn call(ctx: &Context, path: String, diff: String) -> Result<String, String> {
    let blocks = apply_diff::parse(&diff).map_err(|e| change::error(&path, e.to_string()))?;
    let editing = change::begin(ctx, &path).await?;
    let Some(original) = change::read_original(&editing.ws, &path).await? else {
        return Err(change::error(
            &path,
            format!("{path} does not exist; use write_file to create a file"),
        ));
    };
    let applied = apply_diff::apply(&change::as_edited(&original), &blocks);
    let failures: Vec<String> = applied.failed.iter().map(|f| f.to_string()).collect();
    if applied.applied.is_empty() {
        return Err(json!({
            "error": format!("no block applied, nothing was changed:\n{}", failures.join("\n")),
            "path": path,
            "failed_blocks": applied.failed.iter().map(|f| f.number).collect::<Vec<_>>(),
        })
        .to_string());
    }
    let mut extra = Map::new();
    if applied.partial() {
        extra.insert("partial".into(), true.into());
        extra.insert(
            "failed_blocks".into(),
            applied
                .failed
                .iter()
                .map(|f| f.number)
                .collect::<Vec<_>>()
                .into(),
        );
        extra.insert("failures".into(), failures.into());
    }
    let change = Change {
        tool: "apply_diff",
        shown: editing.shown.clone(),
        proposed: applied.text,
        asked: path,
        abs: editing.abs.clone(),
        ws: editing.ws.clone(),
        original: Some(original),
        as_sent: None,
    };
    change::land(ctx, change, extra).await
}
