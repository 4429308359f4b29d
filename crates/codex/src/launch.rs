//! The Codex provider beside a running IDE engine, as both `ccbridge serve`
//! modes and `ccbridge claude` start it: join the router Codex CLI will
//! reach, or host one where it looks, and keep doing so until stopped.
//!
//! Codex CLI connects to the first socket of [`socket::client_paths`] that
//! accepts a connection, so ccbridge looks there in the same order: the
//! first live router (peer checked) is joined; a stale socket (its host
//! died) at a path ccbridge hosts is removed; with no router anywhere,
//! ccbridge hosts one on every path of [`socket::host_paths`]. When the
//! router it joined goes away, it looks again after a short random pause
//! (so that several ccbridges left behind do not all host at once), and
//! one of them becomes the host. A host checks every
//! [`OWNERSHIP_CHECK`] that its socket files are still the ones it bound
//! (another host may have replaced them after a race); if not, it stops
//! hosting and joins instead. On stop, the sockets it hosts are removed
//! (only if still its own).

use crate::provider::{join, ContextSource};
use crate::router::Router;
use crate::socket::{self, Probe};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UnixListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long [`Running::stopped`] waits for the provider to finish.
pub const STOP_GRACE: Duration = Duration::from_millis(500);

/// How often a host checks that its socket files are still its own.
pub const OWNERSHIP_CHECK: Duration = Duration::from_secs(2);

/// What the provider is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Looking for a router, or between two.
    Starting,
    /// Hosting the router on these sockets.
    Hosting(Vec<PathBuf>),
    /// Serving through the router at this socket.
    Joined(PathBuf),
    /// Neither is possible (each path said why, in the log).
    Unavailable(String),
}

/// The running provider.
pub struct Running {
    stop: CancellationToken,
    task: JoinHandle<()>,
    role: watch::Receiver<Role>,
}

impl Running {
    /// What it does now.
    pub fn role(&self) -> Role {
        self.role.borrow().clone()
    }

    /// Waits until `pred` holds for its role, at most `timeout`; the role then.
    pub async fn wait_role(&self, timeout: Duration, pred: impl Fn(&Role) -> bool) -> Option<Role> {
        let mut rx = self.role.clone();
        tokio::time::timeout(timeout, async {
            loop {
                if pred(&rx.borrow_and_update()) {
                    return rx.borrow().clone();
                }
                if rx.changed().await.is_err() {
                    return rx.borrow().clone();
                }
            }
        })
        .await
        .ok()
    }

    /// The environment of a terminal Codex CLI is started in so that it
    /// looks where this provider is: the `TMPDIR` and `CODEX_HOME` ccbridge
    /// itself resolved the sockets with, when they are set.
    pub fn env() -> Vec<(String, String)> {
        ["TMPDIR", "CODEX_HOME"]
            .into_iter()
            .filter_map(|k| {
                std::env::var(k)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .map(|v| (k.to_owned(), v))
            })
            .collect()
    }

    /// Stops it: leaves the router, or stops hosting and removes the
    /// sockets. A step that does not watch for the stop (connecting to a
    /// router, waiting for its answer to `initialize`) is cut short after
    /// [`STOP_GRACE`]; the sockets it hosts are removed either way.
    pub async fn stopped(mut self) {
        self.stop.cancel();
        let result = match tokio::time::timeout(STOP_GRACE, &mut self.task).await {
            Ok(r) => r,
            Err(_) => {
                self.task.abort();
                match (&mut self.task).await {
                    Err(e) if e.is_cancelled() => Ok(()),
                    r => r,
                }
            }
        };
        if let Err(e) = result {
            tracing::warn!("the Codex provider task failed: {e}");
        }
    }
}

/// Where to look for a router and where to host one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locations {
    /// Where Codex CLI looks, in its order ([`socket::client_paths`]).
    pub client: Vec<PathBuf>,
    /// Where to host ([`socket::host_paths`]).
    pub host: Vec<PathBuf>,
}

impl Locations {
    /// Codex's own, from this process's environment.
    pub fn from_env() -> Locations {
        Locations {
            client: socket::client_paths(),
            host: socket::host_paths(),
        }
    }
}

/// Starts serving `source` to Codex CLI where it looks, until
/// [`Running::stopped`].
pub fn start(source: Arc<dyn ContextSource>) -> Running {
    start_at(Locations::from_env(), source)
}

/// [`start`] with explicit socket paths.
pub fn start_at(at: Locations, source: Arc<dyn ContextSource>) -> Running {
    let stop = CancellationToken::new();
    let (role_tx, role) = watch::channel(Role::Starting);
    let task = tokio::spawn(supervise(at, source, stop.clone(), role_tx));
    Running { stop, task, role }
}

async fn supervise(
    at: Locations,
    source: Arc<dyn ContextSource>,
    stop: CancellationToken,
    role: watch::Sender<Role>,
) {
    let hosted = at.host;
    let mut last_problem = String::new();
    while !stop.is_cancelled() {
        let mut live = None;
        let mut problems = Vec::new();
        for path in at
            .client
            .iter()
            .chain(hosted.iter().filter(|h| !at.client.contains(h)))
        {
            match socket::probe(path).await {
                Ok(Probe::Live(stream)) => {
                    live = Some((path.clone(), stream));
                    break;
                }
                Ok(Probe::Stale) if hosted.contains(path) => {
                    if let Err(e) = socket::remove_stale(path) {
                        problems.push(format!(
                            "cannot remove the stale socket {}: {e}",
                            path.display()
                        ));
                    }
                }
                Ok(_) => {}
                Err(e) => problems.push(e.to_string()),
            }
        }
        let outcome = match live {
            Some((path, stream)) => {
                role.send_replace(Role::Joined(path.clone()));
                match join(stream, source.as_ref(), &stop).await {
                    Ok(()) => Ok(()),
                    Err(e) => Err(format!("the Codex router at {} ended: {e}", path.display())),
                }
            }
            None => {
                let listeners = host(&hosted, &mut problems);
                once_each(&mut problems);
                match listeners {
                    Some(listeners) => {
                        let paths: Vec<PathBuf> =
                            listeners.iter().map(|l| l.path.clone()).collect();
                        for p in &problems {
                            tracing::warn!("Codex: {p}");
                        }
                        role.send_replace(Role::Hosting(paths));
                        serve_hosted(source.clone(), listeners, &stop).await;
                        Ok(())
                    }
                    None => Err(problems.join("; ")),
                }
            }
        };
        if stop.is_cancelled() {
            break;
        }
        match outcome {
            Err(why) if why != last_problem => {
                tracing::warn!("Codex: {why}");
                if !matches!(*role.borrow(), Role::Joined(_)) {
                    role.send_replace(Role::Unavailable(why.clone()));
                }
                last_problem = why;
            }
            _ => {}
        }
        role.send_if_modified(|r| {
            if matches!(r, Role::Joined(_) | Role::Hosting(_)) {
                *r = Role::Starting;
                true
            } else {
                false
            }
        });
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(pause()) => {}
        }
    }
}

/// 100–600 ms, different in each process.
fn pause() -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let jitter = (nanos ^ std::process::id().wrapping_mul(2_654_435_761)) % 500;
    Duration::from_millis(100 + u64::from(jitter))
}

/// A socket this process bound.
struct Bound {
    path: PathBuf,
    listener: Option<UnixListener>,
    ino: u64,
}

impl Bound {
    /// Whether the file at its path is still the socket it bound.
    fn still_ours(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.ino)
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        if self.still_ours() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Keeps the first of each reason: the paths Codex tries share a folder, and
/// one unusable folder would be reported once per path.
fn once_each(problems: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    problems.retain(|p| seen.insert(p.clone()));
}

/// Binds every path it can; `None` when none (the reasons in `problems`),
/// or when a router appeared at one of them meanwhile.
fn host(paths: &[PathBuf], problems: &mut Vec<String>) -> Option<Vec<Bound>> {
    let mut bound = Vec::new();
    for path in paths {
        match bind(path) {
            Ok(b) => bound.push(b),
            Err(e) => problems.push(e),
        }
    }
    (!bound.is_empty()).then_some(bound)
}

fn bind(path: &Path) -> Result<Bound, String> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    socket::check_dir(dir, true).map_err(|e| e.to_string())?;
    let listener = UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    let ino = std::fs::symlink_metadata(path)
        .map(|m| m.ino())
        .map_err(|e| format!("cannot look at {}: {e}", path.display()))?;
    Ok(Bound {
        path: path.to_owned(),
        listener: Some(listener),
        ino,
    })
}

/// Serves the router on `listeners` until `stop`, or until one of its
/// sockets is no longer its own.
async fn serve_hosted(
    source: Arc<dyn ContextSource>,
    listeners: Vec<Bound>,
    stop: &CancellationToken,
) {
    let router = Router::new(source);
    let serving = stop.child_token();
    let mut files = listeners;
    for b in &mut files {
        if let Some(listener) = b.listener.take() {
            tracing::info!(socket = %b.path.display(), "hosting the Codex IPC router");
            tokio::spawn(router.clone().serve(listener, serving.clone()));
        }
    }
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(OWNERSHIP_CHECK) => {}
        }
        if let Some(lost) = files.iter().find(|f| !f.still_ours()) {
            tracing::warn!(
                "Codex: the socket {} was replaced; joining whoever holds it now",
                lost.path.display()
            );
            break;
        }
    }
    serving.cancel();
    // Dropping them removes the sockets still their own.
    drop(files);
}
