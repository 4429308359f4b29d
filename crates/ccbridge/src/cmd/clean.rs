//! `ccbridge clean`: remove lock files whose IDE server is gone, the
//! Gemini CLI / Qwen Code discovery files of companions that are gone, and
//! Codex CLI's IDE sockets nobody listens on.
//!
//! Stale lock files make Claude Code offer or try servers that no longer
//! exist. The rule (see `ccbridge_client::stale`) is conservative: a file is
//! removed only when its process is not known to run and its port does not
//! answer, so a live server's lock file is never touched.

use crate::output::outln;
use ccbridge_client::discovery::Env;
use ccbridge_client::stale;
use serde_json::json;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(after_help = "\
A lock file is removed only when its process is not running (EPERM counts as \
running) and its port does not accept connections; unreadable or unparseable \
files are removed only when their port does not answer. It scans the same \
directories as `ccbridge list`, Gemini CLI's and Qwen Code's discovery files \
included (same rule: the IDE process named in the file is gone and the port \
does not answer; never another user's file, nor one that is not a regular file), and Codex CLI's IDE sockets that refuse connections (only this user's sockets, never a link, in a folder only this user can write to).

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
    let mut companions = clean_companions(args.dry_run).await;
    companions.extend(clean_codex(args.dry_run).await);

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
        let (mut removed, mut failed) = (removed, failed);
        for c in &companions {
            let entry = json!({"agent": c.agent, "path": c.path, "port": c.port,
                               "reason": "gone", "message": c.message});
            match &c.error {
                None => removed.push(entry),
                Some(e) => {
                    let mut entry = entry;
                    entry["error"] = e.clone().into();
                    failed.push(entry);
                }
            }
        }
        let out =
            json!({"dryRun": report.dry_run, "removed": removed, "kept": kept, "failed": failed});
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        let verb = if args.dry_run {
            "would remove"
        } else {
            "removed"
        };
        use crate::display::{line, path};
        for o in &report.removed {
            outln!("{verb} {}: {}", path(&o.path), line(&o.reason.to_string()))?;
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
        for c in &companions {
            match &c.error {
                None => outln!("{verb} {}: {} ({})", path(&c.path), c.agent, c.message)?,
                Some(e) => eprintln!("ccbridge: cannot remove {}: {}", path(&c.path), line(e)),
            }
        }
        if report.removed.is_empty() && report.failed.is_empty() && companions.is_empty() {
            let dirs: Vec<String> = scan.dirs.iter().map(|d| path(d)).collect();
            eprintln!(
                "no stale lock files ({} checked in {})",
                scan.entries.len(),
                dirs.join(", ")
            );
        }
    }
    Ok(
        if report.failed.is_empty() && companions.iter().all(|c| c.error.is_none()) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        },
    )
}

const GONE: &str = "its IDE process is gone and its port does not answer";

/// A stale discovery file of Gemini CLI or Qwen Code, removed (or not).
struct CompanionStale {
    agent: &'static str,
    path: std::path::PathBuf,
    port: Option<u16>,
    message: &'static str,
    error: Option<String>,
}

/// Removes (unless `dry_run`) the agents' discovery files whose companion
/// is gone: Gemini CLI never removes them, and Qwen Code only while it
/// scans.
async fn clean_companions(dry_run: bool) -> Vec<CompanionStale> {
    use ccbridge_companion::{discovery, CompanionAgent};
    let found = discovery::scan(&CompanionAgent::ALL);
    let answering =
        ccbridge_client::discovery::ports_answering(found.iter().filter_map(|f| f.port)).await;
    found
        .into_iter()
        .filter(|f| {
            let answers = f.port.and_then(|p| answering.get(&p).copied());
            f.is_stale(answers.unwrap_or(false))
        })
        .map(|f| CompanionStale {
            agent: f.agent.display_name(),
            message: GONE,
            error: if dry_run {
                None
            } else {
                std::fs::remove_file(&f.path).err().map(|e| e.to_string())
            },
            path: f.path,
            port: f.port,
        })
        .collect()
}

/// Removes (unless `dry_run`) Codex CLI's IDE sockets that nobody listens
/// on (a ccbridge or IDE that hosted the router and was killed): Codex
/// tries them first and falls through to the next only after a refusal.
async fn clean_codex(dry_run: bool) -> Vec<CompanionStale> {
    use ccbridge_codex::socket::{self, Probe};
    let mut out = Vec::new();
    for path in socket::client_paths() {
        if let Ok(Probe::Stale) = socket::probe(&path).await {
            out.push(CompanionStale {
                agent: "Codex CLI",
                error: if dry_run {
                    None
                } else {
                    socket::remove_stale(&path).err().map(|e| e.to_string())
                },
                path,
                port: None,
                message: "nobody listens on this IDE socket",
            });
        }
    }
    out
}
