//! `ccbridge serve`: the IDE server, for an editor plugin (`--stdio`, the
//! sidecar) or with the browser UI as the editor (standalone).
//!
//! Builds the engine [`Config`] from flags, routes logs to stderr (with
//! `--stdio`, stdout belongs to the protocol), and runs until the editor
//! closes stdin or sends `shutdown` (sidecar), or a SIGINT/SIGTERM/SIGHUP
//! arrives. Every one of those ends removes the lock file before the
//! process exits.

use crate::output::outln;
use anyhow::{bail, Context};
use ccbridge_server::{AgentKind, Config};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
#[command(after_help = "\
Logging: to stderr (or --log-file), never to stdout, which carries protocol \
frames only. The level comes from CCBRIDGE_LOG (else RUST_LOG), default \
`info`: e.g. CCBRIDGE_LOG=debug, or per crate, \
CCBRIDGE_LOG=info,ccbridge_server=trace. --log-traffic FILE also writes every \
message exchanged with Claude Code and with the editor to FILE, one JSON line \
each ({ts, peer: claude|editor, conn, dir: in|out, msg}), the auth token \
redacted: the first thing to look at when Claude does not see what the editor \
sends.")]
pub struct Args {
    /// Speak the editor protocol (JSON-RPC, LSP framing) on stdin/stdout,
    /// for an editor plugin. Without it, the browser UI is the editor.
    #[arg(long)]
    stdio: bool,
    #[command(flatten)]
    pub ui: UiArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// The browser UI's options (standalone mode).
#[derive(clap::Args)]
pub struct UiArgs {
    /// Also open the browser UI in the default browser.
    #[arg(long)]
    pub open: bool,
    /// Serve the browser UI on this port instead of an OS-assigned one.
    #[arg(long, value_name = "PORT")]
    pub ui_port: Option<u16>,
    /// Start even when another ccbridge with the same name already serves
    /// the same folders (Claude Code's `/ide` then lists two identical
    /// entries).
    #[arg(long)]
    pub allow_duplicate: bool,
    /// Start no language servers: Claude's getDiagnostics has only what an
    /// editor reports (by default, pyright/basedpyright, ruff,
    /// typescript-language-server, clangd and rust-analyzer are started
    /// when installed, once a file of theirs is viewed, proposed or
    /// changed; with --stdio, for the files the editor reports nothing
    /// for, as its `initialize.diagnostics` says).
    #[arg(long)]
    pub no_language_servers: bool,
    /// Look for language servers' programs in this directory before PATH;
    /// repeatable.
    #[arg(
        long = "language-server-dir",
        value_name = "DIR",
        conflicts_with = "no_language_servers"
    )]
    pub language_server_dirs: Vec<PathBuf>,
}

impl UiArgs {
    /// The language servers' options, unless they are off.
    fn language_servers(&self) -> Option<ccbridge_lsp::Options> {
        (!self.no_language_servers).then(|| ccbridge_lsp::Options {
            search_dirs: self
                .language_server_dirs
                .iter()
                .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone()))
                .collect(),
            ..Default::default()
        })
    }
}

/// What every mode of the IDE server takes.
#[derive(clap::Args)]
pub struct ServerArgs {
    /// A workspace folder; repeat for several. Defaults to the current directory.
    #[arg(long = "workspace", value_name = "DIR")]
    pub(crate) workspaces: Vec<PathBuf>,
    /// The name Claude Code shows for this editor.
    #[arg(long, default_value = "ccbridge")]
    pub(crate) ide_name: String,
    /// The editor's pid for the lock file. Defaults to ccbridge's parent
    /// process with --stdio (the editor that spawned it), else ccbridge's own.
    #[arg(long)]
    pub(crate) pid: Option<u32>,
    /// Listen on this port (10000-65535) instead of an OS-assigned one.
    #[arg(long, value_parser = clap::value_parser!(u16).range(10000..))]
    pub(crate) port: Option<u16>,
    /// Also accept this Host name (WSL, containers); repeatable.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub(crate) allow_hosts: Vec<String>,
    /// Serve several Claude Code sessions at once instead of "newest wins".
    #[arg(long)]
    pub(crate) multi_client: bool,
    /// Quiet time before a selection is sent to Claude, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub(crate) selection_debounce_ms: u64,
    /// Lock-file directory. Defaults to $CLAUDE_CONFIG_DIR/ide or ~/.claude/ide.
    #[arg(long, value_name = "DIR")]
    pub(crate) lock_dir: Option<PathBuf>,
    /// Write logs to this file instead of stderr.
    #[arg(long, value_name = "PATH")]
    pub(crate) log_file: Option<PathBuf>,
    /// Write every message to and from Claude Code and the editor to this
    /// file as JSON lines (created 0600, appended to).
    #[arg(long, value_name = "FILE")]
    pub(crate) log_traffic: Option<PathBuf>,
    /// Do not serve the workspace tools over MCP (otherwise served at
    /// http://127.0.0.1:<port>/mcp: in `initialize` with --stdio, in the
    /// page and the banner without).
    #[arg(long)]
    pub(crate) no_tools: bool,
    /// Serve the workspace tools on this port (an OS-assigned one if taken).
    #[arg(long, value_name = "PORT", conflicts_with = "no_tools")]
    pub(crate) tools_port: Option<u16>,
    /// When the workspace tools ask you: `write-only` (writes are reviewed
    /// as diffs and commands approved; reads are not asked about),
    /// `always` (every call), `never` (nothing; writes still land
    /// atomically). The editor's `initialize`, or the page, may change it.
    #[arg(
        long,
        value_name = "MODE",
        default_value = "write-only",
        conflicts_with = "no_tools"
    )]
    pub(crate) approval_mode: ccbridge_sidecar::messages::ApprovalMode,
    /// Register the workspace tools with Claude Code while ccbridge runs:
    /// an entry in `.claude.json` (`$CLAUDE_CONFIG_DIR` honoured) for the
    /// first workspace folder, removed again on exit. Start `claude`
    /// afterwards: it reads the file when it starts.
    #[arg(long, conflicts_with = "no_tools")]
    pub(crate) register_tools: bool,
    /// Which agents may find this editor, comma-separated: `claude` (its
    /// lock file), `gemini` (Gemini CLI), `qwen` (Qwen Code), both through a
    /// companion server and discovery file each, `codex` (Codex CLI's
    /// `/ide`, through its IPC socket).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "claude,gemini,qwen,codex",
        value_parser = parse_agent
    )]
    pub(crate) agents: Vec<AgentKind>,
    /// Do not watch the workspace for the session review (the page's
    /// Changes view, the editor protocol's `changes`: every file changed
    /// while ccbridge runs, with keep/revert per hunk).
    #[arg(long)]
    pub(crate) no_changes: bool,
}

fn parse_agent(s: &str) -> Result<AgentKind, String> {
    AgentKind::from_id(s.trim()).ok_or_else(|| {
        let known: Vec<&str> = AgentKind::ALL.iter().map(|a| a.id()).collect();
        format!("unknown agent {s:?}; known: {}", known.join(", "))
    })
}

impl ServerArgs {
    /// Whether Claude Code is offered the IDE (`--agents`).
    pub(crate) fn claude(&self) -> bool {
        self.agents.contains(&AgentKind::Claude)
    }

    /// The companion servers `--agents` asks for; `None`: neither Gemini
    /// CLI nor Qwen Code.
    pub(crate) fn companion(&self) -> Option<ccbridge_companion::launch::Options> {
        let mut agents: Vec<ccbridge_companion::CompanionAgent> = Vec::new();
        for a in self
            .agents
            .iter()
            .filter_map(|&k| ccbridge_companion::CompanionAgent::of(k))
        {
            if !agents.contains(&a) {
                agents.push(a);
            }
        }
        (!agents.is_empty()).then_some(ccbridge_companion::launch::Options { agents })
    }

    /// Whether Codex CLI is served (`--agents`).
    pub(crate) fn codex(&self) -> bool {
        self.agents.contains(&AgentKind::Codex)
    }

    /// The workspace tools server these flags ask for; `None`: `--no-tools`.
    pub(crate) fn tools(&self) -> Option<ccbridge_mcp::launch::Options> {
        (!self.no_tools).then_some(ccbridge_mcp::launch::Options {
            port: self.tools_port,
            approval: self.approval_mode,
            register: self.register_tools,
            wait_for_folders: false,
        })
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.stdio && (args.ui.open || args.ui.ui_port.is_some()) {
        bail!("--open and --ui-port are for the browser UI, which --stdio does not serve");
    }
    // rmcp logs every message it receives at INFO, payloads included.
    init_logging(args.server.log_file.as_deref(), "info,rmcp=warn")?;
    let shutdown = termination_signal();
    if !args.stdio {
        let standalone = start_standalone(&args.server, &args.ui, std::process::id()).await?;
        // The server serves without its banner (`ccbridge link` prints a
        // link again); a closed stdout is no reason to stop it.
        if let Err(e) = outln!("{}", banner(&standalone, &args.server)) {
            tracing::warn!("{e}");
        }
        if args.ui.open {
            open_in_browser(standalone.url());
        }
        standalone.run(shutdown).await?;
        return Ok(ExitCode::SUCCESS);
    }
    // The editor that spawned us; the CLI checks this pid is alive.
    let parent = rustix::process::getppid()
        .and_then(|p| u32::try_from(p.as_raw_nonzero().get()).ok())
        .unwrap_or_else(std::process::id);
    let config = config_from(&args.server, parent)?;
    let mut options = services(&args.server, &args.ui);
    // The editor may name a project after starting in the home folder.
    if let Some(t) = &mut options.tools {
        t.wait_for_folders = true;
    }
    let reason = ccbridge_sidecar::run_with(
        config,
        options,
        tokio::io::stdin(),
        protocol_output()?,
        shutdown,
    )
    .await?;
    tracing::info!(?reason, "exiting");
    Ok(ExitCode::SUCCESS)
}

/// stdout for protocol frames, as a file of its own rather than through
/// `std::io::Stdout`: std's line buffer is flushed when the process exits,
/// and a flush into a pipe the editor no longer reads would block that exit
/// forever. Frames are written whole by one task, so no buffer is needed.
fn protocol_output() -> anyhow::Result<tokio::fs::File> {
    use std::os::fd::AsFd;
    let fd = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot use stdout for the editor protocol")?;
    Ok(tokio::fs::File::from_std(std::fs::File::from(fd)))
}

/// Starts the engine with the browser UI (standalone mode). `pid` is the
/// lock file's process when `--pid` is not given: ccbridge itself.
pub async fn start_standalone(
    server: &ServerArgs,
    ui: &UiArgs,
    pid: u32,
) -> anyhow::Result<ccbridge_webui::Standalone> {
    let config = config_from(server, pid)?;
    if server.claude() && !ui.allow_duplicate {
        if let Some(why) = already_served(&config.ide_name, &config.workspace_folders).await {
            anyhow::bail!("{why}");
        }
    }
    let options = services(server, ui);
    Ok(ccbridge_webui::Standalone::start_at(config, options, ui.ui_port).await?)
}

/// What runs beside the engine, as the flags say: the same for both modes.
fn services(server: &ServerArgs, ui: &UiArgs) -> ccbridge_services::Options {
    ccbridge_services::Options {
        tools: server.tools(),
        claude: server.claude(),
        companion: server.companion(),
        codex: server.codex(),
        changes: !server.no_changes,
        language_servers: ui.language_servers(),
    }
}

/// Why not to start a second ccbridge: another one, alive and answering,
/// advertises the same IDE name for the same folders (Claude Code's `/ide`
/// would list two identical entries, and a user would not know which page
/// their reviews go to). Says how to reach the first.
async fn already_served(ide_name: &str, folders: &[String]) -> Option<String> {
    use ccbridge_client::discovery::{self, Env};
    let env = Env::from_process();
    let scan = discovery::scan_env(&env);
    let mut want: Vec<&String> = folders.iter().collect();
    want.sort();
    let same: Vec<_> = scan
        .entries
        .iter()
        .filter(|e| {
            let Some(l) = e.lock() else { return false };
            let mut have: Vec<&String> = l.workspace_folders.iter().collect();
            have.sort();
            l.ide_name == ide_name
                && have == want
                && (e.pid_alive == Some(true) || e.server_alive == Some(true))
        })
        .collect();
    let answering = discovery::ports_answering(same.iter().filter_map(|e| e.port)).await;
    let first = same
        .into_iter()
        .find(|e| e.port.is_some_and(|p| answering.get(&p) == Some(&true)))?;
    let l = first.lock()?;
    let pid = l
        .server_process
        .map(|p| p.pid)
        .or(l.pid)
        .map_or_else(String::new, |p| format!(" (pid {p})"));
    let page = l.page.as_ref().map_or_else(String::new, |p| {
        format!(
            "; its review page is {}: `ccbridge link` in that folder prints a sign-in link",
            crate::display::line(&p.url)
        )
    });
    Some(format!(
        "another {ide_name}{pid} already serves {} on port {}{page}. \
         Claude Code would list both as the same IDE. Use that one, or pass --allow-duplicate \
         (or another --ide-name) to start a second.",
        folders.join(", "),
        first.port.unwrap_or(0),
    ))
}

/// What `ccbridge serve` prints for its user.
fn banner(s: &ccbridge_webui::Standalone, server: &ServerArgs) -> String {
    let folders = s.engine().workspace_folders().join(", ");
    let lock = s
        .engine()
        .lock_path()
        .map(|p| format!(" ({})", p.display()))
        .unwrap_or_default();
    let tools = match s.tools() {
        Ok(e) => format!(
            "\n  Workspace tools (MCP, reviewed in the page): {url}\n  \
             register them with Claude Code: {how}\n",
            url = e.url,
            how = if server.register_tools {
                "done (--register-tools), until ccbridge stops"
            } else {
                "`ccbridge mcp-config --register` (or --register-tools)"
            },
        ),
        Err(why) => format!("\n  Workspace tools: not served, {why}.\n"),
    };
    let claude = if server.claude() {
        format!(
            "\n  Claude Code finds it by its lock file{lock}:\n  \
             in that folder, `claude --ide` connects at once (or `/ide` in a running claude;\n  \
             plain `claude` connects by itself only with its auto-connect setting on).\n  \
             Started without a permission mode, Claude runs in auto mode and writes edits\n  \
             without asking, so they are not reviewed here: start it with\n  \
             `--permission-mode default`, or run `ccbridge claude`, which makes every edit ask.\n"
        )
    } else {
        String::new()
    };
    let companions = || {
        s.agents()
            .iter()
            .filter(|a| !matches!(a.agent, AgentKind::Claude | AgentKind::Codex))
    };
    let others: Vec<&str> = companions().map(|a| a.agent.display_name()).collect();
    let mut agents = if others.is_empty() {
        String::new()
    } else {
        let commands: Vec<String> = companions()
            .map(|a| format!("`{}`", a.agent.id()))
            .collect();
        format!(
            "\n  {} find it too: start {} in that folder (IDE mode on: `/ide enable`).\n",
            others.join(" and "),
            commands.join(" or ")
        )
    };
    if s.agents().iter().any(|a| a.agent == AgentKind::Codex) {
        agents.push_str(
            "\n  Codex CLI finds it too: in a `codex` started in that folder, `/ide` adds the\n  \
             selection and open files to each prompt (context only: no diffs, no diagnostics).\n",
        );
    }
    for p in s.agent_problems() {
        agents.push_str(&format!("  {p}\n"));
    }
    format!(
        "ccbridge is the IDE for {folders}\n\
         \n  Review UI: {url}\n             (open it in your browser; the link works once: `ccbridge link` prints a new one)\n\
         {claude}{agents}\
         {tools}\
         \nLogs go to {logs}. Press Ctrl-C to stop.",
        url = s.url(),
        logs = server
            .log_file
            .as_ref()
            .map_or_else(|| "stderr".to_owned(), |p| p.display().to_string()),
    )
}

/// Opens `url` with the desktop's opener, warning (not failing) without one.
pub fn open_in_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => {}
        Err(e) => eprintln!("ccbridge: warning: cannot open a browser with {opener} ({e}); open the link above yourself"),
    }
}

fn config_from(args: &ServerArgs, default_pid: u32) -> anyhow::Result<Config> {
    let mut folders = Vec::new();
    let dirs = if args.workspaces.is_empty() {
        vec![std::env::current_dir().context("cannot read the current directory")?]
    } else {
        args.workspaces.clone()
    };
    for d in dirs {
        // The CLI compares its (resolved) cwd with these folders as strings.
        let abs = match std::fs::canonicalize(&d) {
            Ok(abs) if abs.is_dir() => abs,
            Ok(_) => bail!("the workspace {} is not a directory", d.display()),
            Err(e) => bail!("the workspace {} cannot be used: {e}", d.display()),
        };
        let Some(s) = abs.to_str() else {
            bail!("workspace path {} is not valid UTF-8", abs.display());
        };
        let trimmed = s.trim_end_matches('/');
        folders.push(if trimmed.is_empty() {
            "/".to_owned()
        } else {
            trimmed.to_owned()
        });
    }
    let mut config = Config::new(args.ide_name.clone(), folders);
    config.pid = args.pid.unwrap_or(default_pid);
    config.port = args.port;
    config.allowed_hosts = args.allow_hosts.clone();
    config.multi_client = args.multi_client;
    config.selection_debounce = Duration::from_millis(args.selection_debounce_ms);
    config.traffic_log = args.log_traffic.clone();
    config.lock_dir = match &args.lock_dir {
        Some(d) => Some(d.clone()),
        None => Some(Config::default_lock_dir().context(
            "cannot find the home directory for ~/.claude/ide; set CLAUDE_CONFIG_DIR or pass --lock-dir",
        )?),
    };
    Ok(config)
}

/// Logs to `file` or stderr, at `CCBRIDGE_LOG`'s level (else `RUST_LOG`'s,
/// else `default`).
pub(crate) fn init_logging(file: Option<&std::path::Path>, default: &str) -> anyhow::Result<()> {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("CCBRIDGE_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new(default));
    // A line that cannot be written is dropped: the editor that quit closed
    // our stderr, and reporting that on stderr (tracing-subscriber's
    // `eprintln!`) would panic on the way out.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .log_internal_errors(false);
    match file {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            builder.with_writer(std::sync::Mutex::new(f)).init();
        }
        None => builder.with_writer(std::io::stderr).init(),
    }
    Ok(())
}

/// Resolves on SIGINT, SIGTERM or SIGHUP. The handlers are installed when
/// this is called, not when the future is first polled: call it before the
/// lock file is written, so a signal that arrives while the servers start
/// is caught (its default action would leave the lock file behind).
pub fn termination_signal() -> impl std::future::Future<Output = ()> + Send {
    use tokio::signal::unix::{signal, Signal, SignalKind};
    async fn recv(s: &mut Option<Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    let watch = |k| {
        signal(k)
            .map_err(|e| tracing::warn!("cannot watch a signal: {e}"))
            .ok()
    };
    let (mut int, mut term, mut hup) = (
        watch(SignalKind::interrupt()),
        watch(SignalKind::terminate()),
        watch(SignalKind::hangup()),
    );
    async move {
        tokio::select! {
            _ = recv(&mut int) => tracing::info!("SIGINT"),
            _ = recv(&mut term) => tracing::info!("SIGTERM"),
            _ = recv(&mut hup) => tracing::info!("SIGHUP"),
        }
    }
}
