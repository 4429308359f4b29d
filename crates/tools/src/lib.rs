//! The workspace tools Claude calls through ccbridge's MCP server (issue 9),
//! one file per tool, each free of any transport: arguments in, a result or
//! an error written for a model to read out. Every path goes through
//! [`ccbridge_workspace::Workspace`], so nothing outside the workspace
//! folders is read or written.
//!
//! Landed so far: `read_file`, `list_files` and `search_files`, and the
//! SEARCH/REPLACE engine of `apply_diff`. The MCP server, the reviewed
//! writes (`write_file`, `apply_diff`'s review), `execute_command` and
//! `get_diagnostics` come next.

pub mod apply_diff;
pub mod list_files;
pub mod read_file;
pub mod search_files;
