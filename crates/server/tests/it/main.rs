//! The engine's integration tests (a real engine over real sockets, a fake
//! editor) as one test binary, a module per former test file: the crate's
//! tree is linked once, not once per file. One module, or one test by its
//! full name:
//!
//! ```text
//! cargo test -p ccbridge-server --test it -- handshake::
//! cargo test -p ccbridge-server --test it -- --exact handshake::<test>
//! ```
//!
//! The tests of every module run side by side in this one process: what a
//! test looks for among processes and files is its own, and a test that
//! needs the process to itself (its environment, umask or memory) runs
//! again alone in a process of its own (`ccbridge_testkit::alone`).

// Shared by the modules below.
mod support;

mod handshake;
mod keepalive;
mod limits;
mod lockfile;
mod mcp_lifecycle;
mod notifications;
mod open_diff;
mod sessions;
mod tools;
