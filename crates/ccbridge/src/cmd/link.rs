//! `ccbridge link`: a fresh one-time sign-in link to a running ccbridge's
//! review page, from any terminal.
//!
//! The link `ccbridge serve` and `ccbridge claude` print works once and
//! scrolls away (Claude's full-screen terminal hides it until Claude
//! exits; `--open` needs a desktop browser, not an SSH session). So the
//! page is recorded in the lock file with a token that can do one thing,
//! make a new link (`POST /api/link`); this command finds the newest
//! running ccbridge whose workspace contains the folder (the current
//! directory unless `--workspace`) and asks it. The lock file is private
//! to the user (0600 in a 0700 folder), as is the IDE token beside it.

use crate::output::outln;
use anyhow::{bail, Context};
use ccbridge_client::discovery::{self, Env};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// The workspace folder whose ccbridge to ask (default: the current
    /// directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Open the link in the desktop's browser too.
    #[arg(long)]
    open: bool,
}

/// How long the page may take to answer.
const ANSWER: Duration = Duration::from_secs(5);
/// The largest answer read.
const MAX_ANSWER: u64 = 64 << 10;

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = super::workspace_dir(args.workspace)?;
    let env = Env::from_process();
    let scan = super::scan_lock_files(&env);
    let page = discovery::matching_workspace(&scan.entries, &dir, env.wsl_distro.as_deref())
        .into_iter()
        .find_map(|e| Some((e.port?, e.lock()?.page.clone()?)));
    let Some((ide_port, page)) = page else {
        return Ok(super::not_found(format_args!(
            "no running ccbridge serves a review page for {} (start one with `ccbridge serve` or `ccbridge claude`)",
            crate::display::path(&dir)
        )));
    };
    let port = page_port(&page.url)
        .with_context(|| format!("the lock file of port {ide_port} names no usable page"))?;
    let token = page.link_token.clone();
    let url = tokio::task::spawn_blocking(move || ask_for_link(port, &token))
        .await
        .context("asking for a link")??;
    outln!("{url}")?;
    eprintln!("ccbridge: the link works once, in the first browser that opens it");
    if args.open {
        super::serve::open_in_browser(&url);
    }
    Ok(ExitCode::SUCCESS)
}

/// The port of `http://127.0.0.1:<port>/`.
fn page_port(url: &str) -> Option<u16> {
    url.strip_prefix("http://127.0.0.1:")?
        .trim_end_matches('/')
        .parse()
        .ok()
}

/// `POST /api/link` with the link-making token; the new link.
fn ask_for_link(port: u16, token: &str) -> anyhow::Result<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))
        .with_context(|| format!("the page on port {port} does not answer"))?;
    s.set_read_timeout(Some(ANSWER))?;
    s.set_write_timeout(Some(ANSWER))?;
    let body = "{}";
    write!(
        s,
        "POST /api/link HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut raw = Vec::new();
    s.take(MAX_ANSWER)
        .read_to_end(&mut raw)
        .with_context(|| format!("the page on port {port} did not answer"))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        bail!(
            "the page on port {port} refused to make a link ({})",
            crate::display::line(head.lines().next().unwrap_or(""))
        );
    }
    let v: serde_json::Value =
        serde_json::from_str(body.trim()).context("the page's answer is not the JSON expected")?;
    match v["url"].as_str() {
        Some(u) if u.starts_with("http://127.0.0.1:") => Ok(u.to_owned()),
        _ => bail!("the page's answer has no link"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn page_ports() {
        assert_eq!(super::page_port("http://127.0.0.1:4242/"), Some(4242));
        assert_eq!(super::page_port("http://evil.example:4242/"), None);
        assert_eq!(super::page_port("http://127.0.0.1:x/"), None);
    }
}
