//! `search_files`: a regular expression over the files under a directory.

use super::{blocking, Context, Reply};
use ccbridge_tools::search_files;

pub async fn call(ctx: &Context, path: String, regex: String, glob: Option<String>) -> Reply {
    ctx.allow_read("search_files", format!("Search {path} for /{regex}/"))
        .await?;
    let ws = ctx.ws();
    blocking(move || {
        search_files::search(
            &ws,
            &path,
            &regex,
            glob.as_deref(),
            search_files::DEFAULT_MAX_RESULTS,
        )
        .map(|f| f.render())
        .map_err(|e| e.to_string())
    })
    .await
}
