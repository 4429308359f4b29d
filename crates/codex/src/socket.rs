//! Where Codex CLI looks for its IDE context provider, and the checks both
//! ends make before trusting the socket there.
//!
//! Codex CLI (0.171.0, `codex-rs/tui/src/ide_context/ipc.rs`) connects to
//! the first of these that accepts a connection:
//!
//! 1. `$CODEX_HOME/ipc/ipc.sock` (`CODEX_HOME` must exist when set;
//!    `~/.codex` otherwise): where the Codex desktop app hosts its router;
//! 2. `<temp dir>/codex-ipc/ipc-<uid>.sock`, the older location, where the
//!    temp dir is Rust's `std::env::temp_dir()` (`$TMPDIR`, else `/tmp`);
//!    for uid 0, `codex-ipc/ipc.sock` and then `codex-ipc/ipc-0.sock`.
//!
//! It refuses a socket whose folder is not a directory of the user or is
//! group/other-writable, a socket file that is not the user's, and a peer
//! whose `SO_PEERCRED` uid is not the user's. ccbridge holds itself to the
//! same rules from the other side ([`check_dir`], [`probe`]), because the
//! temp dir is shared: a folder or socket planted by someone else must
//! never be used, joined or removed, and a symlink is never followed.

use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::net::UnixStream;

/// How long connecting to an existing router may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a socket path cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("cannot create the IPC folder {}: {error}", dir.display())]
    CreateDir { dir: PathBuf, error: io::Error },
    #[error("the IPC folder {} {why}; refusing it", dir.display())]
    UnsafeDir { dir: PathBuf, why: &'static str },
    #[error("{} {why}; leaving it alone", path.display())]
    UnsafeSocket { path: PathBuf, why: String },
    #[error("cannot use {}: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },
}

/// The user's uid as Codex CLI names its socket with (the real uid).
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Codex's home: `$CODEX_HOME` when set and non-empty (`None` if it does
/// not exist, as Codex then finds no home), else `~/.codex`.
pub fn codex_home() -> Option<PathBuf> {
    match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(h) => {
            let h = PathBuf::from(h);
            h.is_dir().then_some(h)
        }
        None => std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(".codex")),
    }
}

/// `$CODEX_HOME/ipc/ipc.sock`.
pub fn primary_path() -> Option<PathBuf> {
    codex_home().map(|h| h.join("ipc").join("ipc.sock"))
}

/// `<temp dir>/codex-ipc/ipc-<uid>.sock`: the one ccbridge hosts there.
pub fn legacy_path() -> PathBuf {
    std::env::temp_dir()
        .join("codex-ipc")
        .join(format!("ipc-{}.sock", uid()))
}

/// Every path Codex CLI tries, in its order.
pub fn client_paths() -> Vec<PathBuf> {
    let dir = std::env::temp_dir().join("codex-ipc");
    let mut paths: Vec<PathBuf> = primary_path().into_iter().collect();
    if uid() == 0 {
        paths.push(dir.join("ipc.sock"));
    }
    paths.push(dir.join(format!("ipc-{}.sock", uid())));
    paths
}

/// The paths a hosting ccbridge listens on: the primary one when Codex's
/// home exists (it is not created for a user who never ran Codex), and the
/// older one in the temp dir, which every Codex CLI since 0.129.0 tries.
pub fn host_paths() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = primary_path()
        .filter(|p| p.parent().and_then(Path::parent).is_some_and(Path::is_dir))
        .into_iter()
        .collect();
    paths.push(legacy_path());
    paths
}

/// Checks (creating it 0700 when `create` and it is missing) that `dir` is
/// a real directory of this user that nobody else can write to. Its parent
/// must exist.
pub fn check_dir(dir: &Path, create: bool) -> Result<(), SocketError> {
    if create {
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                return Err(SocketError::CreateDir {
                    dir: dir.to_owned(),
                    error,
                })
            }
        }
    }
    let unsafe_dir = |why| SocketError::UnsafeDir {
        dir: dir.to_owned(),
        why,
    };
    let meta = std::fs::symlink_metadata(dir).map_err(|error| SocketError::Io {
        path: dir.to_owned(),
        error,
    })?;
    if meta.file_type().is_symlink() {
        return Err(unsafe_dir("is a symbolic link"));
    }
    if !meta.is_dir() {
        return Err(unsafe_dir("is not a directory"));
    }
    if meta.uid() != uid() {
        return Err(unsafe_dir("belongs to another user"));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(unsafe_dir("is writable by other users"));
    }
    Ok(())
}

/// What is at a socket path.
#[derive(Debug)]
pub enum Probe {
    /// Nothing.
    Absent,
    /// A router of this user answers: the connection, peer checked.
    Live(UnixStream),
    /// A socket of this user nobody listens on (its host died).
    Stale,
}

/// Looks at `path` the way Codex CLI does before connecting: its folder
/// must pass [`check_dir`], the file must be a socket of this user (never
/// followed if it is a link), the peer must be this user. Errors say why
/// the path is unusable; nothing is removed here.
pub async fn probe(path: &Path) -> Result<Probe, SocketError> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Probe::Absent),
        _ => check_dir(dir, false)?,
    }
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Probe::Absent),
        Err(error) => {
            return Err(SocketError::Io {
                path: path.to_owned(),
                error,
            })
        }
    };
    let unsafe_socket = |why: &str| SocketError::UnsafeSocket {
        path: path.to_owned(),
        why: why.to_owned(),
    };
    if meta.file_type().is_symlink() {
        return Err(unsafe_socket("is a symbolic link"));
    }
    if !meta.file_type().is_socket() {
        return Err(unsafe_socket("is not a socket"));
    }
    if meta.uid() != uid() {
        return Err(unsafe_socket("belongs to another user"));
    }
    match tokio::time::timeout(CONNECT_TIMEOUT, UnixStream::connect(path)).await {
        Ok(Ok(stream)) => {
            check_peer(&stream).map_err(|why| unsafe_socket(&why))?;
            Ok(Probe::Live(stream))
        }
        Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(Probe::Stale),
        Ok(Err(error)) => Err(SocketError::Io {
            path: path.to_owned(),
            error,
        }),
        Err(_) => Err(unsafe_socket("does not accept connections in time")),
    }
}

/// Whether the process at the other end of `stream` is this user's.
pub fn check_peer(stream: &UnixStream) -> Result<(), String> {
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == uid() => Ok(()),
        Ok(cred) => Err(format!("is held by uid {}, not this user", cred.uid())),
        Err(e) => Err(format!("has a peer whose credentials cannot be read: {e}")),
    }
}

/// Removes the stale socket at `path`, if it is still one (a socket of
/// this user, not a link).
pub fn remove_stale(path: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_socket() && meta.uid() == uid() {
        std::fs::remove_file(path)?;
    }
    Ok(())
}

/// What `ccbridge list` and `clean` see at one of Codex's socket paths.
#[derive(Debug)]
pub struct Found {
    pub path: PathBuf,
    pub state: State,
}

/// The state of a socket path that exists.
#[derive(Debug)]
pub enum State {
    /// A router answers; whether it has a provider for the folder asked
    /// about (`Ok(handledByClientId)`, or the router's error).
    Live(Result<String, String>),
    /// A socket of this user nobody listens on.
    Stale,
    /// Not usable (and left alone): why.
    Unsafe(String),
}

/// Every path of [`client_paths`] that holds something, each router asked
/// whether it has an answer for `root` (what Codex started there would get).
pub async fn scan(root: &Path) -> Vec<Found> {
    let mut out = Vec::new();
    for path in client_paths() {
        let state = match probe(&path).await {
            Ok(Probe::Absent) => continue,
            Ok(Probe::Stale) => State::Stale,
            Ok(Probe::Live(stream)) => State::Live(ask(stream, root).await),
            Err(e) => State::Unsafe(e.to_string()),
        };
        out.push(Found { path, state });
    }
    out
}

/// Asks the router at the other end of `stream` for `root`'s context, as
/// Codex CLI does; who answered, or the error.
pub async fn ask(mut stream: UnixStream, root: &Path) -> Result<String, String> {
    use crate::frame::{read_frame, write_frame, MAX_FRAME};
    let rid = crate::provider::new_id("list");
    let request = serde_json::json!({
        "type": "request", "requestId": rid, "sourceClientId": "ccbridge-list",
        "version": 0, "method": "ide-context",
        "params": {"workspaceRoot": root.to_string_lossy()},
    });
    write_frame(&mut stream, &request)
        .await
        .map_err(|e| e.to_string())?;
    let answer = tokio::time::timeout(Duration::from_secs(6), async {
        loop {
            let v = read_frame(&mut stream, MAX_FRAME)
                .await
                .map_err(|e| e.to_string())?;
            if v["type"] == "response" && v["requestId"] == rid.as_str() {
                return Ok::<_, String>(v);
            }
        }
    })
    .await
    .map_err(|_| "no answer within 6 s".to_string())??;
    match answer["resultType"].as_str() {
        Some("success") => Ok(answer["handledByClientId"]
            .as_str()
            .unwrap_or("?")
            .to_owned()),
        _ => Err(answer["error"]
            .as_str()
            .unwrap_or("an invalid answer")
            .to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_created_folder_is_private_and_a_shared_or_linked_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("codex-ipc");
        check_dir(&dir, true).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_dir(&dir, true).unwrap_err().to_string();
        assert!(e.contains("writable by other users"), "{e}");

        let link = tmp.path().join("link");
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = check_dir(&link, true).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
    }

    #[test]
    fn the_legacy_path_is_under_the_temp_dir_with_the_uid() {
        let p = legacy_path();
        assert!(p.starts_with(std::env::temp_dir().join("codex-ipc")));
        assert_eq!(
            p.file_name().unwrap().to_str().unwrap(),
            format!("ipc-{}.sock", uid())
        );
        assert!(client_paths().contains(&p));
    }
}
