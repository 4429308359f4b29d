//! How ccbridge serves HTTP on loopback.
//!
//! Three HTTP servers run beside the IDE's WebSocket server: the browser
//! UI, the workspace tools (MCP) and the Gemini CLI / Qwen Code companions.
//! All three listen on 127.0.0.1, where every local process (and, through
//! the browser, every web page) can reach them without a token. So they
//! share one serving policy, [`serve`]: nothing a client without a token
//! sends can make a server unavailable to the user, or make ccbridge run
//! out of file descriptors that the IDE port needs. The two MCP servers
//! among them also share their checks and transport ([`mcp`]).

pub mod auth;
pub mod mcp;
mod serve;

#[doc(hidden)]
pub use serve::serve_stream;
pub use serve::{serve, Limits, SignedIn};
