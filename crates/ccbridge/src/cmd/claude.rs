//! `ccbridge claude [OPTIONS] [-- CLAUDE ARGS...]`: the browser-UI IDE
//! server and Claude Code in one command.
//!
//! Starts the same server as `ccbridge serve` (its options), prints the
//! review UI's link, then runs `claude` in this terminal with
//! `CLAUDE_CODE_SSE_PORT` and `ENABLE_IDE_INTEGRATION=true`, so it connects
//! at once, and with the workspace tools server in an `--mcp-config` file
//! (private, removed on exit; not on the command line, where other users
//! could read its token), so its `mcp__ccbridge__*` tools are there without
//! registering anything. Claude owns the terminal from then on: Ctrl-C is Claude's
//! (ccbridge ignores SIGINT while Claude runs), SIGTERM and SIGHUP are
//! passed on to it. When Claude exits, the server stops, the lock file is
//! removed, and ccbridge exits with Claude's status (128 + the signal when
//! a signal ended it).

use super::serve::{self, ServerArgs, UiArgs};
use anyhow::Context;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Claude Code could not be found (the shell's "command not found").
const EXIT_NO_CLAUDE: u8 = 127;

#[derive(clap::Args)]
#[command(after_help = "\
Example: ccbridge claude --open -- --permission-mode default

Claude Code is looked up on PATH as `claude` unless --claude gives its path. \
Everything after `--` is passed to it. The exit status is Claude's.")]
pub struct Args {
    /// The Claude Code executable. Default: `claude` on PATH.
    #[arg(long, value_name = "PATH")]
    claude: Option<PathBuf>,
    #[command(flatten)]
    ui: UiArgs,
    #[command(flatten)]
    server: ServerArgs,
    /// Arguments for Claude Code (after `--`).
    #[arg(last = true, value_name = "CLAUDE ARGS")]
    claude_args: Vec<OsString>,
}

/// A private folder holding `mcp.json`, Claude's `--mcp-config` for the
/// tools server at `endpoint` (the folder is removed when dropped).
fn mcp_config_file(
    endpoint: &ccbridge_protocol::lockfile::McpEndpoint,
) -> anyhow::Result<(tempfile::TempDir, PathBuf)> {
    use ccbridge_mcp::registration::{entry, SERVER_NAME};
    // 0700 (tempfile's default follows the umask), random name: only this
    // user can read the token inside.
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("ccbridge-mcp-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .context("cannot create a private folder for Claude's --mcp-config")?;
    let file = dir.path().join("mcp.json");
    let config = serde_json::json!({ "mcpServers": { SERVER_NAME: entry(endpoint) } });
    ccbridge_server::lockfile::replace_file(&file, config.to_string().as_bytes(), 0o600)
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok((dir, file))
}

/// `name` on PATH, as the shell would find it.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        (None, None) => ExitCode::FAILURE,
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.server.claude() {
        anyhow::bail!(
            "--agents leaves out claude, but `ccbridge claude` runs Claude Code; add claude to --agents (or use `ccbridge serve`)"
        );
    }
    let claude = match &args.claude {
        Some(p) if Path::new(p).is_file() => p.clone(),
        Some(p) => {
            eprintln!(
                "ccbridge: --claude {}: no such file; pass the path of the `claude` executable",
                crate::display::path(p)
            );
            return Ok(ExitCode::from(EXIT_NO_CLAUDE));
        }
        None => match on_path("claude") {
            Some(p) => p,
            None => {
                eprintln!(
                    "ccbridge: `claude` is not on PATH: install Claude Code \
                     (npm install -g @anthropic-ai/claude-code) or pass --claude PATH"
                );
                return Ok(ExitCode::from(EXIT_NO_CLAUDE));
            }
        },
    };
    // Logs must not write over Claude's screen: without --log-file only
    // errors reach the terminal (unless CCBRIDGE_LOG says otherwise).
    let quiet = if args.server.log_file.is_none() {
        "error"
    } else {
        "info"
    };
    serve::init_logging(args.server.log_file.as_deref(), quiet)?;
    // Ctrl-C belongs to Claude (it reaches the whole foreground group);
    // SIGTERM and SIGHUP are passed on to it. Watched from before the lock
    // file exists: one that arrives while the servers start reaches Claude
    // once it runs, instead of killing ccbridge with its lock file left.
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut term = signal(SignalKind::terminate()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    let standalone = serve::start_standalone(&args.server, &args.ui, std::process::id()).await?;
    let port = standalone.engine().port();
    eprintln!(
        "ccbridge: review Claude's edits at {}\n          (the link works once; Claude Code connects on port {port})",
        standalone.url()
    );
    if args.ui.open {
        serve::open_in_browser(standalone.url());
    }

    let mcp_config = match standalone.tools() {
        Ok(endpoint) => Some(mcp_config_file(endpoint)?),
        Err(_) => None,
    };
    let mut command = tokio::process::Command::new(&claude);
    if let Some((_dir, file)) = &mcp_config {
        // The `=` form: `--mcp-config` takes several values, and would
        // swallow a prompt given after `--` as one more file.
        let mut arg = OsString::from("--mcp-config=");
        arg.push(file);
        command.arg(arg);
    }
    let mut child = command
        .args(&args.claude_args)
        .envs(ccbridge_protocol::lockfile::claude_env(port))
        .spawn()
        .with_context(|| format!("cannot start {}", claude.display()))?;
    let child_pid = child.id();

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(standalone.run(async move {
        let _ = stopped.await;
    }));
    async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    let forward = |sig: rustix::process::Signal| {
        if let Some(pid) = child_pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, sig);
        }
    };
    let status = loop {
        tokio::select! {
            s = child.wait() => break s.context("waiting for Claude Code")?,
            () = recv(&mut int) => {}
            () = recv(&mut term) => forward(rustix::process::Signal::TERM),
            () = recv(&mut hup) => forward(rustix::process::Signal::HUP),
        }
    };
    let _ = stop.send(());
    server.await.context("the IDE server task")??;
    Ok(exit_code(status))
}
