//! `list_files`: a directory's entries, directories ending in `/`.

use super::{blocking, Context, Reply};
use ccbridge_tools::list_files;

pub async fn call(ctx: &Context, path: String, recursive: bool) -> Reply {
    ctx.allow_read("list_files", format!("List {path}")).await?;
    let ws = ctx.ws();
    blocking(move || {
        list_files::list(&ws, &path, recursive, list_files::DEFAULT_MAX_ENTRIES)
            .map(|l| l.render())
            .map_err(|e| e.to_string())
    })
    .await
}
