//! The IDE context provider OpenAI's Codex CLI asks with `/ide`.
//!
//! Codex CLI has no MCP server for editors: with IDE context on (`/ide`),
//! each prompt it sends starts with a fetch of the editor's active file,
//! selection and open tabs over a per-user IPC socket, a router shared by
//! every provider of the user (the Codex desktop app and its VS Code
//! extension host it; `docs/agents.md` has the protocol). ccbridge serves
//! that context from the same engine as Claude Code's IDE server, so every
//! face of ccbridge (the page, the editors on the sidecar) is also Codex's
//! IDE, for context only: Codex asks for no diffs and no diagnostics.
//!
//! - [`socket`]: where Codex looks and the ownership checks of both ends;
//! - [`frame`]: the length-prefixed JSON frames, read capped;
//! - [`context`]: the editor state as `ideContext`;
//! - [`provider`]: what ccbridge answers, and serving through someone
//!   else's router;
//! - [`router`]: the router ccbridge hosts when nobody else does;
//! - [`launch`]: joining or hosting, and taking over when a host goes.

pub mod context;
pub mod frame;
pub mod launch;
pub mod provider;
pub mod router;
pub mod socket;

pub use launch::{start, start_at, Locations, Role, Running};
pub use provider::ContextSource;
