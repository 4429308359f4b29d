//! The workspace tools server (`ccbridge-mcp`) beside the sidecar: started
//! once the engine runs, over the workspace folders ccbridge was started
//! with, with a token of its own; stopped when the sidecar stops. The tools
//! reach the editor through the engine (reviews, approvals, command output,
//! diagnostics); the editor's `initialize` may change their workspace and
//! approval mode. If the server cannot start, the sidecar goes on without
//! it (logged): the IDE integration does not depend on it.

use crate::messages::{ApprovalMode, ToolsEndpoint};
use ccbridge_mcp::tools::Context;
use ccbridge_mcp::{Settings, ToolsServer};
use ccbridge_server::token::AuthToken;
use ccbridge_server::EngineHandle;
use ccbridge_workspace::Workspace;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// A running tools server.
pub(crate) struct Running {
    pub endpoint: ToolsEndpoint,
    pub ctx: Arc<Context>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    /// Waits for the server to finish after its shutdown fired.
    pub async fn stopped(self) {
        match self.task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("the tools server ended with an error: {e}"),
            Err(e) => tracing::warn!("the tools server task failed: {e}"),
        }
    }
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
        let ws = Workspace::open(folders).map_err(|e| e.to_string())?;
        let server = ToolsServer::bind(
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
            let endpoint = ToolsEndpoint {
                url: server.url(),
                token: token.expose().to_owned(),
                approval_mode: approval,
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
