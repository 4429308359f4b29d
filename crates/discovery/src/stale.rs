//! Removing lock files whose IDE server is gone.
//!
//! A stale lock file makes Claude Code offer, or try to connect to, a server
//! that no longer exists. The CLI removes them itself only at the start of an
//! auto-connect search, and it treats EPERM as dead, so it
//! may delete the live lock of another user's IDE. `ccbridge clean` is more
//! careful, with one rule for every file:
//!
//! **a lock file is removed only when its process is not known to run and
//! its port does not answer.**
//!
//! - a recorded server process (`serverProcess`, written by ccbridge) decides
//!   first: running → kept; gone (or its pid reused) → removed unless the
//!   port answers, even while the editor's `pid` lives on (ccbridge killed
//!   with SIGKILL under a running editor);
//! - pid alive (EPERM included) → kept, whatever the port does;
//! - pid gone (ESRCH) → removed, unless the port answers (the server may run
//!   in another pid namespace, e.g. a container sharing `~/.claude`);
//! - an IDE on Windows (`runningInWindows`, seen from WSL) → kept: its pid
//!   is a Windows one, and under WSL 2's default networking its port does
//!   not answer on this side's loopback even while it serves, so nothing
//!   here can tell it is gone (removing it took the live lock of a running
//!   VS Code from Claude Code on Windows); its IDE removes it;
//! - no pid, or an unreadable or unparseable file → removed only if the
//!   port does not answer;
//! - a file that changed between the scan and the removal is kept.

use crate::{ports_answering, scan, LockEntry};
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;
use std::time::SystemTime;

/// Why a lock file is stale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum StaleReason {
    /// The process that served it is gone and its port does not answer.
    ServerGone { pid: u32 },
    /// Its process is gone and its port does not answer.
    PidDead { pid: u32 },
    /// It names no process we can check and its port does not answer.
    NoPid,
    /// It cannot be read or parsed and its port does not answer.
    Unreadable { error: String },
}

/// Why a lock file is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum KeepReason {
    /// The process serving it runs.
    ServerAlive { pid: u32 },
    /// Its process runs (possibly as another user).
    PidAlive { pid: u32 },
    /// Its port accepts connections.
    PortAnswers,
    /// It was modified or removed while we were checking it.
    ChangedSinceScan,
    /// An IDE on Windows wrote it, which nothing here can check.
    Windows,
}

/// The decision for one lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Remove(StaleReason),
    Keep(KeepReason),
}

/// One lock file and what happened to it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome<R> {
    pub path: PathBuf,
    pub port: Option<u16>,
    pub reason: R,
}

/// A lock file judged stale that could not be removed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub path: PathBuf,
    pub port: Option<u16>,
    pub reason: StaleReason,
    pub error: String,
}

/// What [`clean`] did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub dry_run: bool,
    /// Removed, or with `dry_run` would have been removed.
    pub removed: Vec<Outcome<StaleReason>>,
    pub kept: Vec<Outcome<KeepReason>>,
    pub failed: Vec<Failure>,
}

impl fmt::Display for StaleReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StaleReason::ServerGone { pid } => write!(
                f,
                "its server process {pid} is gone and its port does not answer"
            ),
            StaleReason::PidDead { pid } => {
                write!(f, "process {pid} is gone and its port does not answer")
            }
            StaleReason::NoPid => write!(
                f,
                "it names no process that can be checked and its port does not answer"
            ),
            StaleReason::Unreadable { error } => {
                write!(f, "it is unusable ({error}) and its port does not answer")
            }
        }
    }
}

impl fmt::Display for KeepReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeepReason::ServerAlive { pid } => write!(f, "its server process {pid} is running"),
            KeepReason::PidAlive { pid } => write!(f, "process {pid} is running"),
            KeepReason::PortAnswers => write!(f, "its port answers"),
            KeepReason::ChangedSinceScan => write!(f, "it changed while being checked"),
            KeepReason::Windows => write!(
                f,
                "an IDE on Windows wrote it, which cannot be checked from here (the IDE removes it)"
            ),
        }
    }
}

/// Decides one entry, given whether its port answers (ignored when the pid
/// is alive).
pub fn judge(entry: &LockEntry, port_answers: bool) -> Verdict {
    if entry.lock().is_some_and(|l| l.running_in_windows) {
        return Verdict::Keep(KeepReason::Windows);
    }
    let server = entry.lock().and_then(|l| l.server_process);
    match (entry.server_alive, server) {
        (Some(true), Some(s)) => return Verdict::Keep(KeepReason::ServerAlive { pid: s.pid }),
        (Some(false), Some(_)) if port_answers => return Verdict::Keep(KeepReason::PortAnswers),
        (Some(false), Some(s)) => return Verdict::Remove(StaleReason::ServerGone { pid: s.pid }),
        _ => {}
    }
    if let (Some(true), Some(pid)) = (entry.pid_alive, entry.pid()) {
        return Verdict::Keep(KeepReason::PidAlive { pid });
    }
    if port_answers {
        return Verdict::Keep(KeepReason::PortAnswers);
    }
    Verdict::Remove(match (&entry.lock, entry.pid_alive, entry.pid()) {
        (Err(e), _, _) => StaleReason::Unreadable {
            error: e.to_string(),
        },
        (Ok(_), Some(false), Some(pid)) => StaleReason::PidDead { pid },
        _ => StaleReason::NoPid,
    })
}

/// Scans `dirs` and removes the stale lock files (see the module docs).
/// With `dry_run`, only reports what would be removed.
pub async fn clean(dirs: &[PathBuf], dry_run: bool) -> Report {
    clean_entries(&scan(dirs).entries, dry_run).await
}

/// [`clean`] over entries already scanned.
pub async fn clean_entries(entries: &[LockEntry], dry_run: bool) -> Report {
    let to_probe = entries
        .iter()
        .filter(|e| e.server_alive != Some(true))
        .filter(|e| e.server_alive == Some(false) || e.pid_alive != Some(true))
        .filter_map(|e| e.port);
    let answering = ports_answering(to_probe).await;
    let mut report = Report {
        dry_run,
        ..Report::default()
    };
    for entry in entries {
        let answers = entry
            .port
            .and_then(|p| answering.get(&p).copied())
            .unwrap_or(false);
        let (path, port) = (entry.path.clone(), entry.port);
        match judge(entry, answers) {
            Verdict::Keep(reason) => report.kept.push(Outcome { path, port, reason }),
            Verdict::Remove(_) if changed_since(entry) => report.kept.push(Outcome {
                path,
                port,
                reason: KeepReason::ChangedSinceScan,
            }),
            Verdict::Remove(reason) if dry_run => {
                report.removed.push(Outcome { path, port, reason })
            }
            Verdict::Remove(reason) => match std::fs::remove_file(&path) {
                Ok(()) => report.removed.push(Outcome { path, port, reason }),
                Err(e) => report.failed.push(Failure {
                    path,
                    port,
                    reason,
                    error: e.to_string(),
                }),
            },
        }
    }
    report
}

fn changed_since(entry: &LockEntry) -> bool {
    let now: Option<SystemTime> = std::fs::metadata(&entry.path)
        .ok()
        .map(|m| m.modified().unwrap_or(SystemTime::UNIX_EPOCH));
    now != Some(entry.mtime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbridge_protocol::lockfile::LockFile;
    use std::fs;
    use std::path::Path;
    use std::time::Duration;

    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    fn closed_port() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }

    fn write_lock(dir: &Path, port: u16, pid: Option<u32>) -> PathBuf {
        let mut l = LockFile::new(0, vec!["/w".into()], "Test".into(), "tok".into());
        l.pid = pid;
        let p = dir.join(format!("{port}.lock"));
        fs::write(&p, l.to_json()).unwrap();
        p
    }

    /// From WSL, a Windows IDE's lock (Windows pid, its port unreachable on
    /// this side's loopback under WSL 2's default networking) was judged
    /// stale and removed while the IDE served it.
    #[tokio::test]
    async fn regression_a_windows_ides_lock_is_kept_whatever_its_port_does() {
        let t = tempfile::tempdir().unwrap();
        let mut l = LockFile::new(0, vec!["C:\\w".into()], "VS Code".into(), "tok".into());
        l.pid = Some(dead_pid());
        l.running_in_windows = true;
        let p = t.path().join(format!("{}.lock", closed_port()));
        fs::write(&p, l.to_json()).unwrap();
        let report = clean(&[t.path().to_path_buf()], false).await;
        assert!(p.exists(), "{report:?}");
        assert_eq!(report.kept[0].reason, KeepReason::Windows);
    }

    #[tokio::test]
    async fn removes_only_what_is_stale() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let open = listener.local_addr().unwrap().port();
        let me = std::process::id();
        let dead = dead_pid();

        let dead_closed = write_lock(d, closed_port(), Some(dead));
        let live_closed = write_lock(d, closed_port(), Some(me));
        let no_pid_closed = write_lock(d, closed_port(), None);
        let garbage_closed = d.join(format!("{}.lock", closed_port()));
        fs::write(&garbage_closed, [0xff, 0x00]).unwrap();
        let garbage_named = d.join("junk.lock");
        fs::write(&garbage_named, r#"{"pid":[]}"#).unwrap();

        let report = clean(&[d.to_path_buf()], false).await;
        assert!(report.failed.is_empty(), "{:?}", report.failed);
        assert!(!dead_closed.exists());
        assert!(live_closed.exists());
        assert!(!no_pid_closed.exists());
        assert!(!garbage_closed.exists());
        assert!(!garbage_named.exists());
        assert_eq!(report.removed.len(), 4);
        assert_eq!(report.kept.len(), 1);
        assert_eq!(
            report.kept[0].reason,
            KeepReason::PidAlive { pid: me },
            "{report:?}"
        );
        let reason_of = |p: &Path| {
            report
                .removed
                .iter()
                .find(|o| o.path == p)
                .map(|o| o.reason.clone())
        };
        assert_eq!(
            reason_of(&dead_closed),
            Some(StaleReason::PidDead { pid: dead })
        );
        assert_eq!(reason_of(&no_pid_closed), Some(StaleReason::NoPid));
        assert!(matches!(
            reason_of(&garbage_closed),
            Some(StaleReason::Unreadable { .. })
        ));

        // Files whose port answers are kept even when the pid is gone or the file is garbage.
        let dead_open = write_lock(d, open, Some(dead));
        let report = clean(&[d.to_path_buf()], false).await;
        assert!(dead_open.exists());
        assert!(report.removed.is_empty(), "{report:?}");
        fs::write(&dead_open, [0xff]).unwrap();
        let report = clean(&[d.to_path_buf()], false).await;
        assert!(dead_open.exists());
        assert!(report
            .kept
            .iter()
            .any(|o| o.path == dead_open && o.reason == KeepReason::PortAnswers));
        drop(listener);
    }

    fn write_served_lock(
        dir: &Path,
        port: u16,
        pid: u32,
        server: ccbridge_protocol::lockfile::ServerProcess,
    ) -> PathBuf {
        let mut l = LockFile::new(pid, vec!["/w".into()], "Test".into(), "tok".into());
        l.server_process = Some(server);
        let p = dir.join(format!("{port}.lock"));
        fs::write(&p, l.to_json()).unwrap();
        p
    }

    /// Issue 11, defect 4: ccbridge killed with SIGKILL leaves a lock whose
    /// `pid` (the editor) lives on. Its recorded server process shows it
    /// stale; a live server process keeps a lock whose editor pid is gone.
    #[tokio::test]
    async fn regression_server_process_decides_before_the_editor_pid() {
        use ccbridge_protocol::lockfile::ServerProcess;
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let me = std::process::id();
        let gone = ServerProcess {
            pid: dead_pid(),
            start_time: None,
        };
        let orphaned = write_served_lock(d, closed_port(), me, gone);
        let reused = write_served_lock(
            d,
            closed_port(),
            me,
            ServerProcess {
                pid: me,
                start_time: crate::process_start_time(me).map(|t| t + 1),
            },
        );
        let served = write_served_lock(d, closed_port(), dead_pid(), crate::this_server_process());
        let report = clean(&[d.to_path_buf()], false).await;
        assert!(!orphaned.exists(), "{report:?}");
        assert!(!reused.exists(), "a reused server pid is not the server");
        assert!(served.exists(), "{report:?}");
        assert!(report
            .removed
            .iter()
            .any(|o| o.path == orphaned && o.reason == StaleReason::ServerGone { pid: gone.pid }));
        assert_eq!(
            report.kept[0].reason,
            KeepReason::ServerAlive { pid: me },
            "{report:?}"
        );
        // A gone server whose port answers (another namespace) is kept.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let open = listener.local_addr().unwrap().port();
        let answering = write_served_lock(d, open, me, gone);
        let report = clean(&[d.to_path_buf()], false).await;
        assert!(answering.exists(), "{report:?}");
    }

    #[tokio::test]
    async fn dry_run_removes_nothing() {
        let t = tempfile::tempdir().unwrap();
        let p = write_lock(t.path(), closed_port(), Some(dead_pid()));
        let report = clean(&[t.path().to_path_buf()], true).await;
        assert!(report.dry_run);
        assert_eq!(report.removed.len(), 1);
        assert!(p.exists());
    }

    #[tokio::test]
    async fn a_file_rewritten_after_the_scan_is_kept() {
        let t = tempfile::tempdir().unwrap();
        let p = write_lock(t.path(), closed_port(), Some(dead_pid()));
        let old = SystemTime::now() - Duration::from_secs(60);
        fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let entries = scan(&[t.path().to_path_buf()]).entries;
        fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(SystemTime::now())
            .unwrap();
        let report = clean_entries(&entries, false).await;
        assert!(p.exists());
        assert_eq!(report.kept[0].reason, KeepReason::ChangedSinceScan);
    }

    #[tokio::test]
    async fn unremovable_stale_entries_are_reported() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join(format!("{}.lock", closed_port()));
        fs::create_dir(&d).unwrap();
        let report = clean(&[t.path().to_path_buf()], false).await;
        assert_eq!(report.failed.len(), 1, "{report:?}");
        assert!(d.exists());
    }
}
