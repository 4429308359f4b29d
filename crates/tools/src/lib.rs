//! The workspace tools Claude calls through ccbridge's MCP server (issue 9),
//! one file per tool, each free of any transport: arguments in, a result or
//! an error written for a model to read out. Every path goes through
//! [`ccbridge_workspace::Workspace`], so nothing outside the workspace
//! folders is read or written.
//!
//! Landed so far: `read_file`, `list_files`, `search_files`, the formatting
//! of `get_diagnostics`, the SEARCH/REPLACE engine of `apply_diff`, the text
//! handling of `write_file` (the atomic write itself is
//! `Workspace::write_atomic`), the per-file edit locks, and the cleaning and
//! capping of `execute_command`'s output. The MCP server, the reviews of
//! writes and running commands come next.

pub mod apply_diff;
pub mod command_output;
pub mod file_locks;
pub mod get_diagnostics;
pub mod list_files;
pub mod read_file;
pub mod search_files;
mod shown;
pub mod write_file;
