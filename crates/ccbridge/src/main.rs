//! `ccbridge`: a thin command line over the library crates.
//!
//! - `serve`: the IDE server with the browser UI as the editor
//!   (`ccbridge-webui`); `serve --stdio`: the editor sidecar
//!   (`ccbridge-sidecar`).
//! - `claude`: `serve` plus Claude Code in this terminal, connected to it.
//! - `list`, `call`, `clean`: discovery and a client for any running IDE
//!   server (`ccbridge-client`).
//!
//! Errors are `anyhow` here and typed in the libraries. Exit codes: 0 success,
//! 1 the operation failed, 2 bad usage (clap), 3 no IDE server found.

mod cmd;
mod display;
mod maths;
mod output;
mod panic_report;

use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ccbridge",
    version,
    about = "Claude Code's IDE integration for every editor",
    long_about = "ccbridge runs the editor side of Claude Code's IDE integration: a local \
WebSocket MCP server advertised in ~/.claude/ide/<port>.lock that the Claude Code CLI \
connects to for the editor's selection, diffs and diagnostics.\n\n\
`ccbridge serve` in a project folder makes ccbridge itself the IDE, with a review \
page in the browser; `ccbridge claude` also starts Claude Code connected to it. \
An editor plugin instead spawns `ccbridge serve --stdio` and talks JSON-RPC over \
stdio (see docs/editor-protocol.md)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the IDE server: with the browser UI as the editor, or for an
    /// editor plugin (--stdio).
    Serve(cmd::serve::Args),
    /// Run the IDE server with the browser UI, and Claude Code in this
    /// terminal, connected to it.
    Claude(cmd::claude::Args),
    /// List the IDE servers advertised in every lock-file directory the CLI scans.
    List(cmd::list::Args),
    /// Call a tool on a running IDE server (ccbridge, VS Code, claudecode.nvim, ...).
    Call(cmd::call::Args),
    /// Remove lock files whose process is gone.
    Clean(cmd::clean::Args),
    /// Print a fresh one-time link to a running ccbridge's review page.
    Link(cmd::link::Args),
    /// Print (or --register) the Claude Code MCP entry of a running
    /// ccbridge's workspace tools.
    McpConfig(cmd::mcp_config::Args),
    /// The hook `ccbridge claude` gives Claude Code to report its edits.
    #[command(hide = true)]
    HookReport(cmd::hook_report::Args),
}

fn main() -> ExitCode {
    // One redacted line per panic (see the module docs).
    panic_report::install();
    // Large messages must not leave ccbridge large (see the module docs).
    ccbridge_server::memory::tune_allocator();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ccbridge: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(a) => cmd::serve::run(a).await,
            Command::Claude(a) => cmd::claude::run(a).await,
            Command::List(a) => cmd::list::run(a).await,
            Command::Call(a) => cmd::call::run(a).await,
            Command::Clean(a) => cmd::clean::run(a).await,
            Command::McpConfig(a) => cmd::mcp_config::run(a).await,
            Command::Link(a) => cmd::link::run(a).await,
            Command::HookReport(a) => Ok(cmd::hook_report::run(a)),
        }
    });
    // A blocking stdin read may still be parked on a runtime thread; all the
    // cleanup (lock file, diffs) is done, so don't wait for it.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        // The reader of our output has gone (`| head`): it has what it wanted.
        Err(e)
            if e.downcast_ref::<output::WriteError>()
                .is_some_and(|w| w.is_broken_pipe()) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            // One line: the error with its cause once, and what to do.
            let mut msg = format!("{e:#}");
            if let Some(h) = hint(&e) {
                msg.push_str("; ");
                msg.push_str(h);
            }
            // Not `eprintln!`, which panics when stderr is closed.
            let _ = writeln!(std::io::stderr(), "ccbridge: {}", display::line(&msg));
            ExitCode::FAILURE
        }
    }
}

/// What to do about the fatal errors a user can fix.
fn hint(e: &anyhow::Error) -> Option<&'static str> {
    use ccbridge_server::{lockfile::LockError, ServerError};
    use ccbridge_sidecar::SidecarError;
    match e.downcast_ref::<SidecarError>()? {
        SidecarError::Start(ServerError::Bind { .. }) => {
            Some("choose another --port, or leave --port out for a free one")
        }
        SidecarError::Start(ServerError::PortRange(_)) => Some("ports 10000-65535 are allowed"),
        SidecarError::Start(ServerError::Lock(
            LockError::Dir { .. } | LockError::UnsafeDir(_) | LockError::Write { .. },
        )) => Some(
            "pass a directory you own with --lock-dir, or fix CLAUDE_CONFIG_DIR (Claude Code looks in $CLAUDE_CONFIG_DIR/ide or ~/.claude/ide)",
        ),
        _ => None,
    }
}
