//! The IDE-side Claude Code server engine.
//!
//! An editor (through a [`Frontend`]) and any number of Claude Code CLI
//! sessions (through WebSocket connections) meet here:
//!
//! ```text
//!  editor ──EditorEvent──▶ engine state ──selection_changed / at_mentioned──▶ CLI
//!  editor ◀──Frontend calls (show_diff, open_file, …)── tools ◀──tools/call── CLI
//! ```
//!
//! Usage: build a [`Config`], [`Server::bind`] it with a frontend, take an
//! [`EngineHandle`] for editor events, then [`Server::run`] until shutdown.
//! The lock file is written when `run` starts (where Claude Code looks, by
//! default) and removed when it returns. `examples/embed.rs` is a whole
//! editor in a hundred lines; [`NoEditor`] is the frontend of an engine run
//! without one.
//!
//! Layout: `handshake` (HTTP upgrade and auth), `connection` (one socket's
//! loop), `peer` (the session it serves, as the router sees it),
//! `router` (JSON-RPC methods), `tools/` (one file per IDE tool), `ide`
//! (what the tools use, beneath any transport: editor state, diffs, the
//! frontend), `state` (editor state), `diffs` (diff views), `sessions`
//! (connected clients and queued notifications), `keepalive`, `lockfile`,
//! `token`, `shared` (what the server's parts share), `engine` (the server
//! and the editor-event loop), `review` (diff reviews and approvals asked
//! for by other transports, such as the workspace tools server).

pub mod config;
mod connection;
mod diffs;
mod engine;
pub mod frontend;
pub mod handshake;
pub mod hunks;
mod ide;
pub mod keepalive;
pub mod lockfile;
pub mod memory;
pub mod original;
mod peer;
pub mod refusals;
mod review;
mod router;
mod sessions;
mod shared;
pub mod socket;
mod state;
pub mod token;
mod tools;
pub mod traffic;

pub use config::Config;
pub use engine::{ApplyError, EngineGone, EngineHandle, Server, ServerError};
pub use frontend::{
    Activity, AgentKind, Approval, Capabilities, ClientId, ClientInfo, CloseReason, CommandEvent,
    DiffDecision, DiffId, DiffView, EditorEvent, Frontend, FrontendError, HiddenCharacter,
    NoEditor, OpenedFile, RunId,
};
pub use review::{AgentSession, EditorContext, Proposal, Verdict};
pub use sessions::{AUXILIARY_CLIENT, SUPERSEDED_CODE, SUPERSEDED_REASON};
