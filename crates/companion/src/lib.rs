//! The IDE companion server Gemini CLI and Qwen Code connect to:
//! MCP over Streamable HTTP at `http://127.0.0.1:<port>/mcp`, behind the
//! same checks as the workspace tools server (`ccbridge_http::mcp::guard`:
//! loopback `Host`, no foreign `Origin`, `Authorization: Bearer` in
//! constant time), advertised in each agent's discovery file.
//!
//! It is a third transport over the same engine: diffs go through the
//! engine's review (`EngineHandle::review`, the frontend's diff view, per
//! hunk where it offers that), the context it pushes is the editor state
//! the Claude Code server keeps. So every editor integration, and the
//! browser UI, serve these agents with no change on the editor's side.
//!
//! - [`discovery`]: the agents' discovery files (where, what, cleanup);
//! - [`context`]: the editor state as `ide/contextUpdate`;
//! - [`service`]: the MCP side (`openDiff`, `closeDiff`, notifications);
//! - [`launch`]: one server per agent beside a running engine, advertised
//!   while it runs, as both `ccbridge serve` modes start them.
//!
//! Each agent gets a server (port and token) of its own: both clients
//! introduce themselves as the same MCP SDK (`streamable-http-client`), so
//! the server a session reached is what says which agent it is, and so
//! which agent the frontend names for its diffs.

pub mod context;
pub mod discovery;
pub mod launch;
pub mod service;

pub use discovery::{Advert, CompanionAgent};

use ccbridge_server::EngineHandle;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A bound companion server, not yet serving.
pub struct CompanionServer {
    agent: CompanionAgent,
    listener: TcpListener,
    token: ccbridge_http::mcp::guard::Token,
    engine: EngineHandle,
}

impl CompanionServer {
    /// Binds 127.0.0.1 on an OS-assigned port (`agent` finds it through its
    /// discovery file), for clients presenting `token`.
    pub async fn bind(
        agent: CompanionAgent,
        token: &str,
        engine: EngineHandle,
    ) -> std::io::Result<CompanionServer> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        Ok(CompanionServer {
            agent,
            listener,
            token: ccbridge_http::mcp::guard::Token::new(token),
            engine,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// Serves until `shutdown` completes, then ends every session (their
    /// diffs still open are withdrawn).
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let stop = CancellationToken::new();
        let app = ccbridge_http::mcp::guard::app(
            endpoint(self.agent, self.engine, stop.clone()),
            self.token.clone(),
        );
        ccbridge_http::mcp::guard::serve(self.listener, app, &self.token, async move {
            shutdown.await;
            stop.cancel();
        })
        .await;
        Ok(())
    }
}

/// The MCP endpoint [`CompanionServer::run`] serves for `agent` over
/// `engine`, without its listener and guard: for serving it on a
/// connection of one's own (the `companion_http` fuzz target serves it in
/// memory, behind `ccbridge_http::mcp::guard::app`). Cancelling `stop` ends
/// its sessions, withdrawing their open diffs.
#[doc(hidden)]
pub fn endpoint(
    agent: CompanionAgent,
    engine: EngineHandle,
    stop: CancellationToken,
) -> StreamableHttpService<service::Companion, ccbridge_http::mcp::CappedSessions> {
    service::endpoint(Arc::new(service::Shared {
        agent,
        engine,
        stop,
        sessions: Default::default(),
        pending: Default::default(),
    }))
}
