//! The workspace tools Claude calls through ccbridge's MCP server (issue 9),
//! one file per tool, each free of any transport: arguments in, a result or
//! an error written for a model to read out. Every path goes through
//! [`ccbridge_workspace::Workspace`], so nothing outside the workspace
//! folders is read or written.
//!
//! Landed so far: the SEARCH/REPLACE engine of `apply_diff` and the windowed
//! reader of `read_file`. The MCP server, the reviewed writes and the other
//! tools come next.

pub mod apply_diff;
pub mod read_file;
pub mod search_files;
