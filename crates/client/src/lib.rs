//! The client side of Claude Code's IDE protocol.
//!
//! Everything `ccbridge list`, `ccbridge call` and `ccbridge clean` need,
//! as a library so tests and other tools can reuse it:
//!
//! - [`discovery`]: the lock-file directories the Claude Code CLI scans, in its
//!   order, the lock files in them (newest first), pid and port liveness, and
//!   picking the server for a workspace directory or a port.
//! - [`stale`]: removing lock files whose server is gone, more cautiously
//!   than the CLI does.
//! - [`ws_client`]: an MCP client over WebSocket that connects the way the
//!   CLI does (subprotocol `mcp`, `X-Claude-Code-Ide-Authorization`) and calls
//!   tools on any IDE server (ccbridge, VS Code, claudecode.nvim, ...).

/// Lock-file discovery, in a crate of its own (`ccbridge-discovery`) so the
/// engine's start-up sweep shares it without depending on this client.
pub use ccbridge_discovery as discovery;
pub use ccbridge_discovery::stale;
pub mod ws_client;

pub use discovery::{Env, LockEntry, Scan};
pub use stale::{clean, Report};
pub use ws_client::{ClientError, IdeClient};
