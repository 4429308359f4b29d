//! The workspace tools server: MCP over Streamable HTTP at
//! `http://127.0.0.1:<port>/mcp`, for Claude Code and any MCP client.
//! Loopback only; every request passes `ccbridge_http::mcp::guard` (loopback
//! `Host`, no browser `Origin`, `Authorization: Bearer <token>` compared in
//! constant time, never a token in the URL) before the MCP layer
//! ([`service`], the one module that uses `rmcp`) sees it.
//!
//! Like the other servers: bind (port 0 in tests, a configured port that
//! falls back to an OS-assigned one when taken), then `run(shutdown)`,
//! which ends every session when `shutdown` completes.
//!
//! The tools (`tools/`, one file each) reach the editor through the
//! [`Editor`] trait: writes are reviewed as diffs, commands approved and
//! their output shown, as the [`ApprovalMode`] says.

use ccbridge_http::mcp::guard;

pub mod approval;
pub mod editor;
pub mod launch;
pub mod registration;
pub mod service;
pub mod tools;

pub use approval::ApprovalMode;
pub use editor::Editor;
pub use service::WorkspaceTools;
pub use tools::Settings;

use ccbridge_workspace::Workspace;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpListener;

/// A bound tools server, not yet serving.
pub struct ToolsServer {
    listener: TcpListener,
    token: guard::Token,
    ctx: Arc<tools::Context>,
}

impl ToolsServer {
    /// Binds 127.0.0.1:`port` (0 or `None`: OS-assigned). A port that is
    /// taken falls back to an OS-assigned one, with a warning. The token is
    /// added to `settings.secrets`, which commands never see.
    pub async fn bind(
        port: Option<u16>,
        token: &str,
        workspace: Arc<Workspace>,
        editor: Arc<dyn Editor>,
        mut settings: Settings,
    ) -> std::io::Result<ToolsServer> {
        let any = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let listener = match port.filter(|p| *p != 0) {
            Some(p) => match TcpListener::bind((Ipv4Addr::LOCALHOST, p)).await {
                Ok(l) => l,
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                    tracing::warn!(
                        port = p,
                        "tools server port is taken; using an OS-assigned one"
                    );
                    TcpListener::bind(any).await?
                }
                Err(e) => return Err(e),
            },
            None => TcpListener::bind(any).await?,
        };
        let port = listener.local_addr()?.port();
        settings.secrets.push(token.to_owned());
        settings.secrets.push(format!("127.0.0.1:{port}"));
        Ok(ToolsServer {
            listener,
            token: guard::Token::new(token),
            ctx: Arc::new(tools::Context::new(workspace, editor, settings)),
        })
    }

    /// What the tools share: change the workspace or the approval mode
    /// through it while serving.
    pub fn context(&self) -> Arc<tools::Context> {
        self.ctx.clone()
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// The MCP endpoint's URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port())
    }

    /// Serves until `shutdown` completes, then ends every session.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let stop = tokio_util::sync::CancellationToken::new();
        let endpoint = service::endpoint(self.ctx, stop.child_token());
        let app = guard::app(endpoint, self.token.clone());
        guard::serve(self.listener, app, &self.token, async move {
            shutdown.await;
            stop.cancel();
        })
        .await;
        Ok(())
    }
}
