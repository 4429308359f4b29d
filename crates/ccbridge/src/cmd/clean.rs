//! `ccbridge clean`: remove lock files whose IDE server is gone.
//!
//! Stale lock files make Claude Code offer or try servers that no longer
//! exist. The rule (see `ccbridge_client::stale`) is conservative: a file is
//! removed only when its process is not known to run and its port does not
//! answer, so a live server's lock file is never touched.

use ccbridge_client::discovery::Env;
use ccbridge_client::stale;
use serde_json::json;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(after_help = "\
A lock file is removed only when its process is not running (EPERM counts as \
running) and its port does not accept connections; unreadable or unparseable \
files are removed only when their port does not answer. It scans the same \
directories as `ccbridge list`.

Exit status: 0, or 1 if a stale file could not be removed.")]
pub struct Args {
    /// Only report what would be removed.
    #[arg(long)]
    dry_run: bool,
    /// Print the report as JSON ({dryRun, removed, kept, failed}).
    #[arg(long)]
    json: bool,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let env = Env::from_process();
    let scan = super::scan_lock_files(&env);
    let report = stale::clean_entries(&scan.entries, args.dry_run).await;

    if args.json {
        let removed: Vec<_> = report
            .removed
            .iter()
            .map(|o| json!({"path": o.path, "port": o.port, "reason": o.reason, "message": o.reason.to_string()}))
            .collect();
        let kept: Vec<_> = report
            .kept
            .iter()
            .map(|o| json!({"path": o.path, "port": o.port, "reason": o.reason, "message": o.reason.to_string()}))
            .collect();
        let failed: Vec<_> = report
            .failed
            .iter()
            .map(|f| json!({"path": f.path, "port": f.port, "reason": f.reason, "message": f.reason.to_string(), "error": f.error}))
            .collect();
        let out =
            json!({"dryRun": report.dry_run, "removed": removed, "kept": kept, "failed": failed});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let verb = if args.dry_run {
            "would remove"
        } else {
            "removed"
        };
        use crate::display::{line, path};
        for o in &report.removed {
            println!("{verb} {}: {}", path(&o.path), line(&o.reason.to_string()));
        }
        for f in &report.failed {
            eprintln!(
                "ccbridge: cannot remove {} ({}): {}",
                path(&f.path),
                line(&f.reason.to_string()),
                line(&f.error)
            );
        }
        for o in &report.kept {
            eprintln!("kept {}: {}", path(&o.path), line(&o.reason.to_string()));
        }
        if report.removed.is_empty() && report.failed.is_empty() {
            let dirs: Vec<String> = scan.dirs.iter().map(|d| path(d)).collect();
            eprintln!(
                "no stale lock files ({} checked in {})",
                scan.entries.len(),
                dirs.join(", ")
            );
        }
    }
    Ok(if report.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
