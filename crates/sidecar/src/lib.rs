//! `ccbridge serve --stdio`: the Claude Code IDE server, driven by an editor
//! plugin over stdin/stdout.
//!
//! An editor that cannot (or should not) host a WebSocket server itself
//! spawns ccbridge and speaks JSON-RPC 2.0 with LSP framing to it, as
//! docs/editor-protocol.md describes. ccbridge runs the engine
//! (`ccbridge-server`), which the Claude Code CLI connects to; the editor
//! reports its state as notifications and answers a few requests (show a
//! diff, open a file, ...).
//!
//! - `ccbridge_lsp::framing`: Content-Length frames, total on hostile
//!   input, and the single writer task that owns stdout (the same LSP base
//!   protocol ccbridge speaks to language servers, so it lives there).
//! - [`messages`]: every method and its params/result types.
//! - [`pending`]: our requests awaiting the editor's answers.
//! - [`frontend`]: [`StdioFrontend`], the engine's `Frontend` over the wire.
//! - [`diagnostics`]: ccbridge's language servers for editors without
//!   their own, and which source wins.
//! - [`session`]: [`run`], the read loop that ties it together.
//!
//! stdout carries frames only; logging goes through `tracing`, which the
//! binary routes to stderr.

pub mod diagnostics;
pub mod error;
pub mod frontend;
pub mod messages;
pub mod pending;
pub mod session;

pub use error::SidecarError;
pub use frontend::StdioFrontend;
pub use messages::PROTOCOL_VERSION;
pub use session::{run, run_with, ExitReason, Options};
