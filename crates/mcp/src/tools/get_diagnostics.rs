//! `get_diagnostics`: the editor's problems, one per line.

use super::{Context, Reply};
use ccbridge_protocol::editor::Severity;
use ccbridge_tools::get_diagnostics;

pub async fn call(ctx: &Context, path: Option<String>, severity: Option<String>) -> Reply {
    let min = match severity.as_deref() {
        None => Severity::Warning,
        Some(s) => Severity::parse(s)
            .ok_or_else(|| format!("unknown severity {s:?}: use error, warning, info or hint"))?,
    };
    let under = match path.as_deref() {
        None => None,
        Some(p) => {
            let at = ctx.ws().locate(p).map_err(|e| e.to_string())?;
            Some(ctx.ws().absolute(&at).display().to_string())
        }
    };
    let what = path.as_deref().unwrap_or("the workspace");
    ctx.allow_read("get_diagnostics", format!("Read the problems of {what}"))
        .await?;
    Ok(get_diagnostics::format(
        &ctx.editor.diagnostics(),
        min,
        under.as_deref(),
        &base(ctx),
    ))
}

/// The first workspace folder: paths beneath it are shown relative to it.
pub(crate) fn base(ctx: &Context) -> String {
    ctx.ws()
        .folders()
        .next()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}
