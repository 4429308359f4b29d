//! `search_files`: a regular expression over the files under a directory.

use super::{blocking, Context, Reply};
use ccbridge_tools::search_files::{self, Until};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub async fn call(ctx: &Context, path: String, regex: String, glob: Option<String>) -> Reply {
    ctx.allow_read("search_files", format!("Search {path} for /{regex}/"))
        .await?;
    let ws = ctx.ws();
    let until = Until::after(search_files::TIME_LIMIT);
    // Dropped with this call's future when the client cancels it: the
    // walk, on a blocking thread, then stops at its next file.
    let _abandon = Abandon(until.abandoned.clone());
    blocking(move || {
        search_files::search_until(
            &ws,
            &path,
            &regex,
            glob.as_deref(),
            search_files::DEFAULT_MAX_RESULTS,
            &until,
        )
        .map(|f| f.render())
        .map_err(|e| e.to_string())
    })
    .await
}

/// Sets its flag when dropped.
struct Abandon(Arc<AtomicBool>);

impl Drop for Abandon {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
