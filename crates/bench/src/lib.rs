//! Benchmarks of ccbridge against *the floor*: a minimal MCP stub answering
//! on bare tokio-tungstenite with pre-serialized responses, driven by the
//! same client code.
//!
//! Everything runs side by side in one run of the `ccbridge-bench` binary:
//!
//! - [`suite::connect`]: connect + `initialize` + `tools/list`;
//! - [`suite::round_trip`]: `tools/call getDiagnostics` with 1,000 cached
//!   diagnostics, at 1 and 16 concurrent connections;
//! - [`suite::selection`]: editor event → client `selection_changed`;
//! - [`suite::rss`]: resident memory of `ccbridge serve --stdio` and of the
//!   `floor-server` binary, idle and with 16 clients;
//! - [`suite::startup`]: spawn until the lock file exists.
//!
//! Modules: [`fixture`] (the data both servers serve), [`floor`] (the stub),
//! [`inproc`] (an in-process ccbridge engine), [`client`] (the one client),
//! [`process`] (child servers, lock files, `/proc`), [`stats`]
//! (percentiles), [`report`] (Markdown and JSON).
//!
//! [`ui`] and the `ui-bench` binary measure the browser UI (`ccbridge
//! serve`, in a real Chromium) beside the sidecar path instead of the floor.
//!
//! Nothing here asserts on timings: figures are reported, targets are
//! pass/fail columns. See docs/benchmarks.md.

pub mod client;
pub mod fixture;
pub mod floor;
pub mod inproc;
pub mod process;
pub mod report;
pub mod stats;
pub mod suite;
pub mod ui;
