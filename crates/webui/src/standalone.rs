//! `ccbridge serve` without `--stdio`: the engine with the page as its
//! editor, and the workspace tools server beside them (unless turned off),
//! all started together and stopped together.

use crate::frontend::BrowserFrontend;
use crate::guard::Credentials;
use crate::hub::{AgentOffer, Hub, ServerView};
use crate::server::{self, Ui};
use ccbridge_protocol::lockfile::PageLink;
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

/// What runs beside the engine and the page: the same options as the
/// editor sidecar's.
pub use ccbridge_services::Options;

/// A started engine and UI, not yet serving.
pub struct Standalone {
    server: Server,
    handle: EngineHandle,
    listener: TcpListener,
    ui: Arc<Ui>,
    url: String,
    services: ccbridge_services::Services,
    agents: Vec<AgentOffer>,
    language_servers: Option<ccbridge_lsp::LanguageServers>,
}

impl Standalone {
    /// Binds the engine (with `config`) and the UI on an OS-assigned port;
    /// see [`Standalone::start_at`].
    pub async fn start(config: Config, options: Options) -> Result<Standalone, StartError> {
        Standalone::start_at(config, options, None).await
    }

    /// Binds the engine (with `config`) and the UI (on `ui_port`, or an
    /// OS-assigned port), starts the workspace tools server when
    /// `options.tools` says so (going on without it, logged, if it cannot
    /// start), writes the lock file, naming the tools from the start, then
    /// starts the language servers and the other servers beside the engine
    /// ([`ccbridge_services`]).
    pub async fn start_at(
        mut config: Config,
        options: Options,
        ui_port: Option<u16>,
    ) -> Result<Standalone, StartError> {
        if !options.claude {
            // Claude Code finds an IDE by its lock file only.
            config.lock_dir = None;
        }
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
        let (credentials, linker) = Credentials::with_linker().ok_or(StartError::Random)?;
        let hub = Hub::new();
        let ide_name = config.ide_name.clone();
        let version = config.server_version.clone();
        let server = Server::bind(config, Arc::new(BrowserFrontend::new(hub.clone())))
            .await
            .map_err(StartError::Engine)?;
        let handle = server.handle();
        let tools =
            ccbridge_services::start_tools(&options, &folders, &handle, server.token()).await;
        hub.attach_tools(match &tools {
            Ok(running) => Ok((running.endpoint.clone(), running.ctx.clone())),
            Err(why) => Err(why.clone()),
        });
        // `ccbridge link` finds the page, and a token that only makes
        // links, in the lock file.
        let _ = handle.advertise_page(Some(PageLink {
            url: format!("http://127.0.0.1:{port}/"),
            link_token: linker,
        }));
        // Written once the tools are known, so it names them from the start.
        if let Err(e) = server.publish() {
            if let Ok(running) = tools {
                running.stopped().await;
            }
            return Err(StartError::Engine(e));
        }
        // Before the session review, so its first change reaches them.
        let language_servers = options.language_servers.clone().map(|o| {
            let (servers, published) = ccbridge_lsp::LanguageServers::start(o, folders.clone());
            tokio::spawn(forward_diagnostics(published, handle.clone(), hub.clone()));
            hub.attach_language_servers(servers.clone());
            servers
        });
        let services = ccbridge_services::Services::start(&options, &folders, &handle, tools).await;
        let workspace_folders = handle.workspace_folders();
        let agents: Vec<AgentOffer> = services
            .offers()
            .iter()
            .map(|o| AgentOffer {
                agent: o.agent,
                env: o.env(handle.port(), &workspace_folders),
            })
            .collect();
        hub.attach(
            handle.clone(),
            ServerView {
                version,
                ide_name,
                workspace_folders,
                ide_port: handle.port(),
                agents: agents.clone(),
            },
        );
        if let Some(c) = services.changes() {
            hub.attach_changes(c.clone());
        }
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
            services,
            agents,
            language_servers,
        })
    }

    /// The agents that can find this IDE, with a terminal's environment.
    pub fn agents(&self) -> &[AgentOffer] {
        &self.agents
    }

    /// Why an agent asked for is not served (one line each).
    pub fn agent_problems(&self) -> Vec<String> {
        self.services.agent_problems()
    }

    /// The workspace tools server, or why it does not run.
    pub fn tools(&self) -> Result<&ccbridge_protocol::lockfile::McpEndpoint, &str> {
        self.services.tools().map(|running| &running.endpoint)
    }

    /// The one-time link to the page.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn ui_port(&self) -> u16 {
        self.ui.port
    }

    /// What reviewers say when they reject a proposal with a note, from
    /// now on (`ccbridge claude` passes Claude's on to it).
    pub fn reviewer_notes(&self) -> tokio::sync::broadcast::Receiver<crate::ReviewerNote> {
        self.ui.hub.reviewer_notes()
    }

    pub fn engine(&self) -> &EngineHandle {
        &self.handle
    }

    /// The session review, when the workspace is watched.
    pub fn changes(&self) -> Option<&ccbridge_changes::Changes> {
        self.ui.hub.changes()
    }

    /// Serves until `shutdown` resolves; the lock file is removed, pending
    /// reviews settled and the tools server stopped (and unregistered)
    /// before this returns.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServerError> {
        let (stop_ui, ui_stopped) = tokio::sync::oneshot::channel::<()>();
        let ui = tokio::spawn(server::serve(self.ui.clone(), self.listener, async move {
            let _ = ui_stopped.await;
        }));
        let result = self.server.run(shutdown).await;
        self.services.stop().await;
        if let Some(l) = &self.language_servers {
            l.stop().await;
        }
        let _ = stop_ui.send(());
        let _ = ui.await;
        result
    }
}

/// The language servers' diagnostics, as the editor's: the same event an
/// editor's report is, so `getDiagnostics`, the page and the workspace
/// tools' `new_diagnostics` all have them. A language without a server
/// goes to the page, which says so.
async fn forward_diagnostics(
    mut updates: tokio::sync::mpsc::Receiver<ccbridge_lsp::Update>,
    engine: EngineHandle,
    hub: Arc<Hub>,
) {
    use ccbridge_lsp::Update;
    while let Some(u) = updates.recv().await {
        let event = match ccbridge_services::editor_event(u) {
            Ok(event) => event,
            Err(Update::Unavailable { language, why }) => {
                hub.language_server_unavailable(language, why);
                continue;
            }
            // Logged by the client (on serve's stderr or log file); the
            // servers run with the defaults.
            Err(_) => continue,
        };
        if engine.send(event).await.is_err() {
            return;
        }
    }
}
