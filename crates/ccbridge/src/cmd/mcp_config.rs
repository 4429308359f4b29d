//! `ccbridge mcp-config`: how to register a running ccbridge's workspace
//! tools with Claude Code (or any MCP client).
//!
//! Finds the newest running ccbridge whose workspace contains the folder
//! (the current directory unless `--workspace`), from the lock files where
//! Claude Code looks (ccbridge records its tools server there), and prints
//! the `mcpServers` entry and the `claude mcp add` command. With
//! `--register` it upserts the entry into Claude's `.claude.json` itself;
//! that ccbridge removes it when it exits (its token dies with it).
//!
//! The port and token change with every start. For a registration that
//! outlives one run, start ccbridge with `--register-tools` (it registers
//! itself at every start and unregisters on exit), or fix the port with
//! `--tools-port` and run `ccbridge mcp-config --register` after each start.

use crate::output::outln;
use anyhow::Context;
use ccbridge_client::discovery::{self, Env};
use ccbridge_mcp::registration::{self, Registered, SERVER_NAME};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The workspace folder whose ccbridge to register (default: the
    /// current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Print only the JSON (`{"mcpServers": {"ccbridge": ...}}`).
    #[arg(long)]
    json: bool,
    /// Write the entry into Claude Code's `.claude.json` (for the workspace's
    /// project; `$CLAUDE_CONFIG_DIR` honoured). Removed when that ccbridge exits.
    #[arg(long)]
    register: bool,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = super::workspace_dir(args.workspace)?;
    let env = Env::from_process();
    let scan = super::scan_lock_files(&env);
    let found = discovery::matching_workspace(&scan.entries, &dir, env.wsl_distro.as_deref())
        .into_iter()
        .find_map(|e| {
            let l = e.lock()?;
            let t = l.tools.as_ref()?;
            Some((l.workspace_folders.first().cloned(), t.clone()))
        });
    let Some((folder, tools)) = found else {
        return Ok(super::not_found(format_args!(
            "no running ccbridge serves the workspace tools for {} (start one with `ccbridge serve --stdio`, or from your editor's plugin)",
            crate::display::path(&dir)
        )));
    };
    let entry = json!({ "mcpServers": { SERVER_NAME: registration::entry(&tools) } });
    let json = serde_json::to_string_pretty(&entry)?;
    // Printed first, but a reader gone does not stop the registration.
    let printed = if args.json {
        outln!("{json}")
    } else {
        outln!("{}\n", registration::command(&tools)).and_then(|()| outln!("{json}"))
    };
    if args.register {
        let path = registration::config_path().context(
            "cannot find Claude Code's .claude.json: neither CLAUDE_CONFIG_DIR nor HOME is set",
        )?;
        let project = folder.unwrap_or_else(|| dir.display().to_string());
        let outcome = registration::register(&path, &project, &tools)?;
        let what = match outcome {
            Registered::Added => "registered",
            Registered::Replaced => "registered (an older ccbridge entry was replaced)",
            Registered::Unchanged => "already registered",
        };
        eprintln!(
            "ccbridge: {what} in {} for {}; start claude there to use the tools",
            crate::display::path(&path),
            crate::display::line(&project)
        );
    }
    printed?;
    Ok(ExitCode::SUCCESS)
}
