//! `read_file`: a window of a text file, line-numbered.

use super::{blocking, Context, Reply};
use ccbridge_tools::read_file;

pub async fn call(
    ctx: &Context,
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Reply {
    ctx.allow_read("read_file", format!("Read {path}")).await?;
    let ws = ctx.ws();
    blocking(move || {
        let w = read_file::read(&ws, &path, offset, limit).map_err(|e| e.to_string())?;
        let total = match w.total_lines {
            Some(n) => format!("{n} lines in the file"),
            None => format!("{} bytes in the file, not counted", w.size_bytes),
        };
        let shown = if w.first_line == 0 {
            "no lines at this offset".to_owned()
        } else {
            format!("lines {}-{}", w.first_line, w.last_line)
        };
        let more = if w.more {
            "; more follow (read on with offset)"
        } else {
            ""
        };
        Ok(format!("{}({shown} of {path}, {total}{more})\n", w.text))
    })
    .await
}
