//! The workspace tools server (`ccbridge-mcp`) beside the sidecar: started
//! once the engine runs, over the workspace folders ccbridge was started
//! with, with a token of its own; stopped when the sidecar stops. It reads
//! the editor's diagnostics from the engine. If it cannot start, the sidecar
//! goes on without it (logged): the IDE integration does not depend on it.

use crate::messages::ToolsEndpoint;
use ccbridge_mcp::{DiagnosticsSource, ToolsServer};
use ccbridge_protocol::editor::FileDiagnostics;
use ccbridge_server::token::AuthToken;
use ccbridge_server::EngineHandle;
use ccbridge_workspace::Workspace;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// The engine's diagnostics, for `get_diagnostics`.
struct EngineDiagnostics(EngineHandle);

impl DiagnosticsSource for EngineDiagnostics {
    fn diagnostics(&self) -> Vec<FileDiagnostics> {
        self.0.diagnostics()
    }
}

/// A running tools server.
pub(crate) struct Running {
    pub endpoint: ToolsEndpoint,
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
/// `shutdown` completes; `None` if it could not start.
pub(crate) async fn start(
    port: Option<u16>,
    folders: &[PathBuf],
    engine: EngineHandle,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Option<Running> {
    let attempt = async {
        let token = AuthToken::generate().map_err(|e| e.to_string())?;
        let ws = Workspace::open(folders).map_err(|e| e.to_string())?;
        let server = ToolsServer::bind(
            port,
            token.expose(),
            Arc::new(ws),
            Arc::new(EngineDiagnostics(engine)),
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
            };
            tracing::info!(url = %endpoint.url, "workspace tools served");
            let task = tokio::spawn(server.run(shutdown));
            Some(Running { endpoint, task })
        }
        Err(e) => {
            tracing::warn!("the workspace tools server could not start: {e}");
            None
        }
    }
}
