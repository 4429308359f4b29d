//! The tools server beside a running IDE engine, as both `ccbridge serve`
//! modes run it (the sidecar, and the browser UI): started once the engine
//! runs, over the workspace folders ccbridge was started with, with a token
//! of its own; advertised in the engine's lock file (and, if asked, in
//! Claude's `.claude.json`); stopped, and unregistered, with the engine.
//! The tools reach the user through the engine's frontend (reviews,
//! approvals, command output, diagnostics).
//!
//! If the server cannot start, the caller goes on without it (logged): the
//! IDE integration does not depend on it. Starting it also sweeps what the
//! commands of an earlier, killed ccbridge left running
//! (`ccbridge_tools::command_group`).

use crate::registration;
use crate::tools::Context;
use crate::{ApprovalMode, Settings};
use ccbridge_protocol::lockfile::McpEndpoint;
use ccbridge_server::token::AuthToken;
use ccbridge_server::EngineHandle;
use ccbridge_workspace::Workspace;
use std::path::PathBuf;
use std::sync::Arc;

/// How to run the tools server beside an engine.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Its port; `None` (or a taken port): an OS-assigned one.
    pub port: Option<u16>,
    /// When the tools ask the user (the editor may change it later).
    pub approval: ApprovalMode,
    /// Also register it with Claude Code (`.claude.json`, the first
    /// workspace folder's project) while it runs.
    pub register: bool,
    /// Folders refused as too broad (`/`, the home folder): serve no folder
    /// at all until the editor names one (the sidecar, whose editor may move
    /// to a project after starting in the home folder, as one launched from
    /// a desktop does), instead of not starting.
    pub wait_for_folders: bool,
}

/// A running tools server.
pub struct Running {
    pub endpoint: McpEndpoint,
    pub ctx: Arc<Context>,
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// Puts the endpoint in the lock file (for `ccbridge mcp-config`) and,
    /// if asked, registers it in Claude's `.claude.json` for the first
    /// workspace folder.
    fn advertise(&self, engine: &EngineHandle, register: bool, folders: &[PathBuf]) {
        if let Err(e) = engine.advertise_tools(Some(self.endpoint.clone())) {
            tracing::warn!("the lock file does not say where the tools are: {e}");
        }
        if !register {
            return;
        }
        let Some(folder) = folders.first() else {
            tracing::warn!("the tools are not registered with Claude Code: they serve no folder");
            return;
        };
        let Some(path) = registration::config_path() else {
            tracing::warn!(
                "cannot register the tools with Claude Code: no HOME nor CLAUDE_CONFIG_DIR"
            );
            return;
        };
        match registration::register(&path, &folder.display().to_string(), &self.endpoint) {
            Ok(r) => {
                tracing::info!(file = %path.display(), outcome = ?r, "tools registered with Claude Code")
            }
            Err(e) => tracing::warn!("cannot register the tools with Claude Code: {e}"),
        }
    }

    /// Stops the server, waits for it to finish, and removes any registration of it from Claude's
    /// `.claude.json` (made by `--register-tools` or `ccbridge mcp-config
    /// --register`): its token dies with it. The same contract as the
    /// companions' and Codex's `stopped`.
    pub async fn stopped(self) {
        self.stop.cancel();
        if let Some(path) = registration::config_path() {
            match registration::unregister(&path, &self.endpoint) {
                Ok(true) => tracing::info!(file = %path.display(), "tools registration removed"),
                Ok(false) => {}
                Err(e) => tracing::warn!("cannot remove the tools registration: {e}"),
            }
        }
        match self.task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("the tools server ended with an error: {e}"),
            Err(e) => tracing::warn!("the tools server task failed: {e}"),
        }
    }
}

/// The workspace the tools may serve: not one whose folder is `/` or the
/// user's home (security checklist item 36).
pub fn open_workspace(folders: &[PathBuf]) -> Result<Workspace, String> {
    let ws = Workspace::open(folders).map_err(|e| e.to_string())?;
    match too_broad(&ws) {
        Some(why) => Err(why),
        None => Ok(ws),
    }
}

/// Why `ws` is refused to the tools, if it is too broad.
fn too_broad(ws: &Workspace) -> Option<String> {
    ws.too_broad().map(|f| {
        format!(
            "the workspace folder {} is the whole file system or your home folder; the workspace tools serve a project folder only (start the editor in one)",
            f.display()
        )
    })
}

/// Why the tools server did not start (the caller goes on without it).
#[derive(Debug, thiserror::Error)]
#[error("the workspace tools server could not start: {0}")]
pub struct LaunchError(String);

/// Starts the tools server for `engine`'s `folders` as `options` say,
/// serving until [`Running::stopped`], and advertises it. `secrets` (the
/// IDE server's token) never reach a command's environment.
pub async fn start(
    options: &Options,
    folders: &[PathBuf],
    engine: &EngineHandle,
    secrets: Vec<String>,
) -> Result<Running, LaunchError> {
    // What the commands of an earlier, killed ccbridge left running (Linux).
    tokio::task::spawn_blocking(|| match ccbridge_tools::command_group::sweep_leftovers() {
        Ok(s) if s.killed > 0 => tracing::info!(
            killed = s.killed,
            dead_owners = s.dead_owners,
            "swept processes left running by the commands of an earlier ccbridge"
        ),
        Ok(s) => tracing::debug!(
            dead_owners = s.dead_owners,
            "no processes left running by the commands of an earlier ccbridge"
        ),
        Err(e) => tracing::warn!("cannot look for processes left by an earlier ccbridge: {e}"),
    });
    let approval = options.approval;
    let settings = Settings {
        approval,
        secrets,
        ..Settings::default()
    };
    let token = AuthToken::generate().map_err(|e| LaunchError(e.to_string()))?;
    let ws = Workspace::open(folders).map_err(|e| LaunchError(e.to_string()))?;
    let (ws, folders) = match too_broad(&ws) {
        None => (ws, folders),
        Some(why) if options.wait_for_folders => {
            tracing::warn!("{why}; until the editor names a project folder they serve none");
            let none = Workspace::open(&[]).map_err(|e| LaunchError(e.to_string()))?;
            (none, &[][..])
        }
        Some(why) => return Err(LaunchError(why)),
    };
    let server = crate::ToolsServer::bind(
        options.port,
        token.expose(),
        Arc::new(ws),
        Arc::new(engine.clone()),
        settings,
    )
    .await
    .map_err(|e| LaunchError(format!("cannot listen on 127.0.0.1: {e}")))?;
    let endpoint = McpEndpoint {
        url: server.url(),
        token: token.expose().to_owned(),
    };
    tracing::info!(url = %endpoint.url, %approval, "workspace tools served");
    let ctx = server.context();
    let stop = tokio_util::sync::CancellationToken::new();
    let stopping = stop.clone();
    let task = tokio::spawn(server.run(async move { stopping.cancelled().await }));
    let running = Running {
        endpoint,
        ctx,
        stop,
        task,
    };
    running.advertise(engine, options.register, folders);
    Ok(running)
}
