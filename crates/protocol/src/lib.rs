//! Message types of the Claude Code IDE protocol, with no I/O.
//!
//! The Claude Code CLI connects to an editor-side WebSocket server and speaks
//! JSON-RPC 2.0 carrying a small subset of MCP. This crate holds every message
//! that crosses that wire, so the server engine, the `ccbridge call` client and
//! the tests share one definition:
//!
//! - [`jsonrpc`]: the envelope, ids, error codes and a total classifier that
//!   turns arbitrary bytes into a message or the exact JSON-RPC error to send.
//! - [`mcp`]: `initialize`, version negotiation, `tools/list`, `tools/call`
//!   and tool results.
//! - [`editor`]: editor state shared by the engine and its frontends
//!   (selection, open tabs, diagnostics) in the coordinates the client expects.
//! - [`tools`]: typed arguments and the exact result shapes and texts of every
//!   IDE tool (`FILE_SAVED`, `DIFF_REJECTED`, `CLOSED_<n>_DIFF_TABS`, ...).
//! - [`notifications`]: `selection_changed`, `at_mentioned`,
//!   `diagnostics_changed`, `log_event`, `ide_connected`.
//! - [`lockfile`]: the discovery file `<config>/ide/<port>.lock`.
//! - [`uri`]: `file://` URIs built and compared the way the client does.
//! - [`language`]: a file's language id, VS Code's names, from one table.
//! - [`reveal`]: text shown for a decision (a command to allow) with its
//!   invisible and bidirectional characters made visible.
//!
//! Where the community write-ups and the real client disagree, the types follow
//! what the real client (Claude Code 2.1.328) sends and accepts.

pub mod editor;
pub mod jsonrpc;
pub mod language;
pub mod lockfile;
pub mod mcp;
pub mod notifications;
pub mod reveal;
pub mod tools;
pub mod uri;
