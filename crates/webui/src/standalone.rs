//! `ccbridge serve` without `--stdio`: the engine with the page as its
//! editor, both started together and stopped together.

use crate::frontend::BrowserFrontend;
use crate::guard::Credentials;
use crate::hub::{Hub, ServerView};
use crate::server::{self, Ui};
use ccbridge_server::{Config, EngineHandle, Server, ServerError};
use ccbridge_workspace::{Workspace, WorkspaceError};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Why the standalone server could not start. Messages include their cause.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Engine(ServerError),
    #[error("{0}")]
    Workspace(WorkspaceError),
    #[error("cannot listen for the browser UI on {addr}: {error}")]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
    #[error("the OS random number generator failed")]
    Random,
}

/// A started engine and UI, not yet serving.
pub struct Standalone {
    server: Server,
    handle: EngineHandle,
    listener: TcpListener,
    ui: Arc<Ui>,
    url: String,
}

impl Standalone {
    /// Binds the engine (with `config`) and the UI (on `ui_port`, or an
    /// OS-assigned port), and writes the lock file at once.
    pub async fn start(config: Config, ui_port: Option<u16>) -> Result<Standalone, StartError> {
        let folders: Vec<PathBuf> = config.workspace_folders.iter().map(PathBuf::from).collect();
        let workspace = Workspace::open(&folders).map_err(StartError::Workspace)?;
        let addr = SocketAddr::from(([127, 0, 0, 1], ui_port.unwrap_or(0)));
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|error| StartError::Bind { addr, error })?;
        let port = listener
            .local_addr()
            .map_err(|error| StartError::Bind { addr, error })?
            .port();
        let hub = Hub::new();
        let ide_name = config.ide_name.clone();
        let version = config.server_version.clone();
        let server = Server::bind(config, Arc::new(BrowserFrontend::new(hub.clone())))
            .await
            .map_err(StartError::Engine)?;
        server.publish().map_err(StartError::Engine)?;
        let handle = server.handle();
        hub.attach(
            handle.clone(),
            ServerView {
                version,
                ide_name,
                workspace_folders: handle.workspace_folders(),
                ide_port: handle.port(),
            },
        );
        let credentials = Credentials::new(port);
        let token = credentials.new_link().ok_or(StartError::Random)?;
        let url = format!("http://127.0.0.1:{port}/#token={token}");
        let ui = Arc::new(Ui {
            hub,
            workspace,
            credentials,
            port,
        });
        Ok(Standalone {
            server,
            handle,
            listener,
            ui,
            url,
        })
    }

    /// The one-time link to the page.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn ui_port(&self) -> u16 {
        self.ui.port
    }

    pub fn engine(&self) -> &EngineHandle {
        &self.handle
    }

    /// Serves until `shutdown` resolves; the lock file is removed and
    /// pending reviews settled before this returns.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServerError> {
        let (stop_ui, ui_stopped) = tokio::sync::oneshot::channel::<()>();
        let router = server::router(self.ui.clone());
        let ui = tokio::spawn(server::serve(self.listener, router, async move {
            let _ = ui_stopped.await;
        }));
        let result = self.server.run(shutdown).await;
        let _ = stop_ui.send(());
        let _ = ui.await;
        result
    }
}
