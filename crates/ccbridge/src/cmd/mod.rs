//! One module per subcommand; each has `Args` (clap) and `run`.

pub mod call;
pub mod clean;
pub mod list;
pub mod serve;
