//! The browser UI: a web page as ccbridge's editor (`ccbridge serve`).
//!
//! ```text
//!  Claude Code ──ws──▶ engine ──Frontend──▶ BrowserFrontend ──▶ Hub ──SSE──▶ page
//!                        ▲                                       │
//!                        └──────── EditorEvents ◀── HTTP API ◀───┘ (decisions, selection)
//! ```
//!
//! - [`hub`]: the state a page shows (reviews, sessions, activity, tabs) and
//!   the stream of changes to it;
//! - [`reviews`]: one diff under review, its working text and per-hunk
//!   decisions (the hunks themselves are `ccbridge_server::hunks`);
//! - [`runs`]: the workspace tools' approvals and command runs;
//! - [`frontend`]: [`BrowserFrontend`], the engine's `Frontend`;
//! - [`guard`]: the one-time link, the page's session and the checks on
//!   every request;
//! - [`server`]: the routes (docs/web-ui.md) and the HTTP server;
//! - [`assets`]: the page, embedded;
//! - [`standalone`]: engine and UI started and stopped together.

pub mod assets;
pub mod frontend;
pub mod guard;
pub mod hub;
pub mod reviews;
pub mod runs;
pub mod server;
pub mod standalone;

pub use frontend::BrowserFrontend;
pub use hub::{Hub, ReviewerNote};
pub use standalone::{Options, Standalone, StartError};
