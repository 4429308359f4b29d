//! `ccbridge serve` without `--stdio`: the engine with the page as its
//! editor, and the workspace tools server beside them (unless turned off),
//! all started together and stopped together.

use crate::frontend::BrowserFrontend;
use crate::guard::Credentials;
use crate::hub::{AgentOffer, Hub, ServerView};
use crate::server::{self, Ui};
use ccbridge_protocol::lockfile::PageLink;
use ccbridge_server::{AgentKind, Config, EngineHandle, Server, ServerError};
use ccbridge_workspace::{Workspace, WorkspaceError};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

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

/// What the standalone server serves besides the engine.
#[derive(Debug, Clone)]
pub struct Options {
    /// The page's port; `None`: OS-assigned.
    pub ui_port: Option<u16>,
    /// Also serve the workspace tools, so; `None`: not at all.
    pub tools: Option<ccbridge_mcp::launch::Options>,
    /// Offer the IDE to Claude Code (its lock file).
    pub claude: bool,
    /// The companion servers for Gemini CLI / Qwen Code; `None`: none.
    pub companion: Option<ccbridge_companion::launch::Options>,
    /// Watch the workspace for the session review (the Changes view).
    pub changes: bool,
    /// Serve Codex CLI's `/ide` (`ccbridge-codex`).
    pub codex: bool,
    /// Start the workspace's language servers for diagnostics
    /// (`ccbridge-lsp`); `None`: none (`--no-language-servers`).
    pub language_servers: Option<ccbridge_lsp::Options>,
}

impl Default for Options {
    /// Claude Code only, no workspace tools, no language servers, an
    /// OS-assigned port.
    fn default() -> Self {
        Options {
            ui_port: None,
            tools: None,
            claude: true,
            companion: None,
            changes: false,
            codex: false,
            language_servers: None,
        }
    }
}

/// A started engine and UI, not yet serving.
pub struct Standalone {
    server: Server,
    handle: EngineHandle,
    listener: TcpListener,
    ui: Arc<Ui>,
    url: String,
    /// The tools server, or why it does not run.
    tools: Result<(ccbridge_mcp::launch::Running, oneshot::Sender<()>), String>,
    companion: Option<ccbridge_companion::launch::Running>,
    codex: Option<ccbridge_codex::Running>,
    agents: Vec<AgentOffer>,
    language_servers: Option<ccbridge_lsp::LanguageServers>,
}

impl Standalone {
    /// Binds the engine (with `config`) and the UI (on `options.ui_port`,
    /// or an OS-assigned port), starts the workspace tools server when
    /// `options.tools` says so (going on without it, logged, if it cannot
    /// start), then writes the lock file, naming the tools from the start.
    pub async fn start(mut config: Config, options: Options) -> Result<Standalone, StartError> {
        if !options.claude {
            // Claude Code finds an IDE by its lock file only.
            config.lock_dir = None;
        }
        let ui_port = options.ui_port;
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
        let tools = match &options.tools {
            Some(opts) => {
                let (stop, stopped) = oneshot::channel::<()>();
                ccbridge_mcp::launch::start(
                    opts,
                    &folders,
                    &handle,
                    vec![server.token().to_owned()],
                    async move {
                        let _ = stopped.await;
                    },
                )
                .await
                .map(|running| (running, stop))
                .map_err(|e| {
                    tracing::warn!("{e}");
                    e.to_string()
                })
            }
            None => Err("turned off (--no-tools)".to_owned()),
        };
        hub.attach_tools(match &tools {
            Ok((running, _)) => Ok((running.endpoint.clone(), running.ctx.clone())),
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
            if let Ok((running, stop)) = tools {
                let _ = stop.send(());
                running.stopped().await;
            }
            return Err(StartError::Engine(e));
        }
        let companion = match &options.companion {
            Some(o) => {
                Some(ccbridge_companion::launch::start(o, &handle, std::future::pending()).await)
            }
            None => None,
        };
        let codex = options
            .codex
            .then(|| ccbridge_codex::start(Arc::new(handle.clone()), std::future::pending()));
        let agents = offers(options.claude, companion.as_ref(), codex.is_some(), &handle);
        hub.attach(
            handle.clone(),
            ServerView {
                version,
                ide_name,
                workspace_folders: handle.workspace_folders(),
                ide_port: handle.port(),
                agents: agents.clone(),
            },
        );
        // Before the session review, so its first change reaches them.
        let language_servers = options.language_servers.clone().map(|o| {
            let (servers, published) = ccbridge_lsp::LanguageServers::start(o, folders.clone());
            tokio::spawn(forward_diagnostics(published, handle.clone(), hub.clone()));
            hub.attach_language_servers(servers.clone());
            servers
        });
        if options.changes {
            // Before Claude can connect, so its first edit is seen.
            match ccbridge_changes::Changes::start(&folders) {
                Ok(c) => {
                    c.set_running_agents(ccbridge_changes::running_agents_of(&handle));
                    hub.attach_changes(c)
                }
                Err(e) => tracing::warn!("the session review cannot watch the workspace: {e}"),
            }
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
            tools,
            companion,
            codex,
            agents,
            language_servers,
        })
    }

    /// The agents that can find this IDE, with a terminal's environment.
    pub fn agents(&self) -> &[AgentOffer] {
        &self.agents
    }

    /// Why an agent asked for is not served (one line each).
    pub fn agent_problems(&self) -> &[String] {
        self.companion.as_ref().map_or(&[], |c| c.problems())
    }

    /// The workspace tools server, or why it does not run.
    pub fn tools(&self) -> Result<&ccbridge_protocol::lockfile::McpEndpoint, &str> {
        match &self.tools {
            Ok((running, _)) => Ok(&running.endpoint),
            Err(why) => Err(why),
        }
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
        if let Ok((running, stop)) = self.tools {
            let _ = stop.send(());
            running.stopped().await;
        }
        if let Some(c) = self.companion {
            c.stopped().await;
        }
        if let Some(c) = self.codex {
            c.stopped().await;
        }
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
    use ccbridge_server::EditorEvent;
    while let Some(u) = updates.recv().await {
        let event = match u {
            Update::Analyzing { path } => EditorEvent::Analyzing {
                path,
                write_pending: false,
            },
            Update::Published(p) => EditorEvent::Diagnostics {
                path: p.path,
                diagnostics: p.diagnostics,
            },
            Update::Proposed(p) => EditorEvent::ProposedDiagnostics {
                path: p.path,
                diagnostics: p.diagnostics,
            },
            Update::Unavailable { language, why } => {
                hub.language_server_unavailable(language, why);
                continue;
            }
            // Logged by the client (on serve's stderr or log file); the
            // servers run with the defaults.
            Update::BadConfig { .. } => continue,
        };
        if engine.send(event).await.is_err() {
            return;
        }
    }
}

/// Each agent offered, with the environment of a terminal that starts it
/// connected to this IDE.
fn offers(
    claude: bool,
    companion: Option<&ccbridge_companion::launch::Running>,
    codex: bool,
    engine: &EngineHandle,
) -> Vec<AgentOffer> {
    let mut out = Vec::new();
    if claude {
        out.push(AgentOffer {
            agent: AgentKind::Claude,
            env: ccbridge_protocol::lockfile::claude_env(engine.port()),
        });
    }
    let folders = engine.workspace_folders();
    for s in companion.map_or(&[][..], |c| c.served()) {
        out.push(AgentOffer {
            agent: s.agent.kind(),
            env: s.agent.env(s.port, &folders).into_iter().collect(),
        });
    }
    if codex {
        out.push(AgentOffer {
            agent: AgentKind::Codex,
            env: ccbridge_codex::Running::env().into_iter().collect(),
        });
    }
    out
}
