//! One module per subcommand; each has `Args` (clap) and `run`.

pub mod call;
pub mod claude;
pub mod clean;
pub mod hook_report;
pub mod link;
pub mod list;
pub mod mcp_config;
pub mod serve;

/// The exit status of a command that found no IDE server for its workspace
/// (`main.rs`'s exit codes).
pub(crate) const EXIT_NOT_FOUND: u8 = 3;

/// Says that nothing serves what the command needs (and where to look),
/// with [`EXIT_NOT_FOUND`].
pub(crate) fn not_found(msg: impl std::fmt::Display) -> std::process::ExitCode {
    eprintln!("ccbridge: {msg}");
    eprintln!("hint: run `ccbridge list` to see the IDE servers and their workspaces");
    std::process::ExitCode::from(EXIT_NOT_FOUND)
}

/// Scans every lock-file directory the CLI would, printing unreadable
/// directories and files as warnings on stderr.
pub(crate) fn scan_lock_files(
    env: &ccbridge_client::discovery::Env,
) -> ccbridge_client::discovery::Scan {
    let scan = ccbridge_client::discovery::scan_env(env);
    for e in &scan.errors {
        eprintln!(
            "ccbridge: warning: {}",
            crate::display::line(&e.to_string())
        );
    }
    scan
}

/// The workspace folder a command is about: `--workspace DIR`, else the
/// current directory; canonical, as lock files record folders.
pub(crate) fn workspace_dir(
    asked: Option<std::path::PathBuf>,
) -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context;
    let dir = match asked {
        Some(d) => d,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    std::fs::canonicalize(&dir)
        .with_context(|| format!("cannot use {}", crate::display::path(&dir)))
}
