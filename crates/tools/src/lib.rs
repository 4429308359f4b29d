//! The workspace tools Claude calls through ccbridge's MCP server,
//! one file per tool, each free of any transport: arguments in, a result or
//! an error written for a model to read out. Every path goes through
//! [`ccbridge_workspace::Workspace`], so nothing outside the workspace
//! folders is read or written.
//!
//! Here: `read_file`, `list_files`, `search_files`, the formatting of
//! `get_diagnostics`, the SEARCH/REPLACE engine of `apply_diff`, the text
//! handling of `write_file` (the atomic write itself is
//! `Workspace::write_atomic`), the per-file edit locks, and running a
//! command (`execute_command`, with the cleaning and capping of its output
//! in `command_output`, and its process group dying with ccbridge in
//! `command_group`). The reviews and approvals around them are the
//! MCP server's (`ccbridge-mcp`), which asks the editor.

pub mod apply_diff;
pub mod command_group;
pub mod command_output;
pub mod execute_command;
pub mod file_locks;
pub mod get_diagnostics;
pub mod list_files;
pub mod read_file;
pub mod search_files;
mod shown;
pub mod write_file;
