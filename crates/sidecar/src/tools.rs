//! The workspace tools server (`ccbridge-mcp`) beside the sidecar: started
//! once the engine runs, over the workspace folders ccbridge was started
//! with, with a token of its own; stopped when the sidecar stops. The tools
//! reach the editor through the engine (reviews, approvals, command output,
//! diagnostics); the editor's `initialize` may change their workspace and
//! approval mode. If the server cannot start, the sidecar goes on without
//! it (logged): the IDE integration does not depend on it.

use crate::messages::ApprovalMode;
use ccbridge_mcp::registration;
use ccbridge_mcp::tools::Context;
use ccbridge_mcp::Settings;
use ccbridge_protocol::lockfile::McpEndpoint;
use ccbridge_server::token::AuthToken;
use ccbridge_server::EngineHandle;
use ccbridge_workspace::Workspace;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// A running tools server.
pub(crate) struct Running {
    pub endpoint: McpEndpoint,
    pub ctx: Arc<Context>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// Puts the endpoint in the lock file (for `ccbridge mcp-config`) and,
    /// if asked, registers it in Claude's `.claude.json` for the first
    /// workspace folder.
    pub fn advertise(&self, engine: &EngineHandle, register: bool, folders: &[PathBuf]) {
        if let Err(e) = engine.advertise_tools(Some(self.endpoint.clone())) {
            tracing::warn!("the lock file does not say where the tools are: {e}");
        }
        if !register {
            return;
        }
        let (Some(path), Some(folder)) = (registration::config_path(), folders.first()) else {
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

    /// Waits for the server to finish after its shutdown fired, then
    /// removes any registration of it from Claude's `.claude.json` (made by
    /// `--register-tools` or `ccbridge mcp-config --register`): its token
    /// dies with it.
    pub async fn stopped(self) {
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
pub(crate) fn open_workspace(folders: &[PathBuf]) -> Result<Workspace, String> {
    let ws = Workspace::open(folders).map_err(|e| e.to_string())?;
    if let Some(f) = ws.too_broad() {
        return Err(format!(
            "the workspace folder {} is the whole file system or your home folder; the workspace tools serve a project folder only (start the editor in one)",
            f.display()
        ));
    }
    Ok(ws)
}

/// Starts the tools server on `port` (`None`: OS-assigned), serving until
/// `shutdown` completes; `None` if it could not start. `secrets` (the IDE
/// server's token) never reach a command's environment.
pub(crate) async fn start(
    port: Option<u16>,
    folders: &[PathBuf],
    approval: ApprovalMode,
    engine: EngineHandle,
    secrets: Vec<String>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Option<Running> {
    let settings = Settings {
        approval,
        secrets,
        ..Settings::default()
    };
    let attempt = async {
        let token = AuthToken::generate().map_err(|e| e.to_string())?;
        let ws = open_workspace(folders)?;
        let server = ccbridge_mcp::ToolsServer::bind(
            port,
            token.expose(),
            Arc::new(ws),
            Arc::new(engine),
            settings,
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok::<_, String>((server, token))
    };
    match attempt.await {
        Ok((server, token)) => {
            let endpoint = McpEndpoint {
                url: server.url(),
                token: token.expose().to_owned(),
            };
            tracing::info!(url = %endpoint.url, %approval, "workspace tools served");
            let ctx = server.context();
            let task = tokio::spawn(server.run(shutdown));
            Some(Running {
                endpoint,
                ctx,
                task,
            })
        }
        Err(e) => {
            tracing::warn!("the workspace tools server could not start: {e}");
            None
        }
    }
}
