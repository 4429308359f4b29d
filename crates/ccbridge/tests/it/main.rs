//! The `ccbridge` binary's integration tests (the real binary, real
//! editors, the real agent CLIs) as one test binary, a module per former
//! test file: the crate's tree is linked once, not once per file. One
//! module, or one test by its full name:
//!
//! ```text
//! cargo test -p ccbridge --test it -- browser_cswsh::
//! cargo test -p ccbridge --test it -- --exact browser_cswsh::<test>
//! ```
//!
//! The tests of every module run side by side in this one process: what a
//! test looks for among processes and files is its own, and a test that
//! needs the process to itself (its environment, umask or memory) runs
//! again alone in a process of its own (`ccbridge_testkit::alone`).

// Shared by the modules below.
mod claude_side;
mod real_client_rig;
mod remote_editors;

mod browser_cswsh;
mod cli_client;
mod cli_output;
mod command_leftovers;
mod editor_scenarios;
mod emacs_package;
mod memory_bounds;
mod nvim_plugin;
mod real_agents;
mod real_client;
mod real_client_browser;
mod real_client_emacs;
mod real_client_node;
mod real_client_nvim;
mod real_client_tools;
mod real_client_vim;
mod real_client_vscode;
mod real_codex;
mod remote_container;
mod remote_ssh;
mod serve_lifecycle;
mod stalled_editor;
mod standalone;
mod tools_server;
mod vim_plugin;
mod vim_scenarios;
