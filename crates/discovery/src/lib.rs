//! Finding IDE servers the way the Claude Code CLI does.
//!
//! An IDE server advertises itself with `<dir>/<port>.lock`. To list, call or
//! clean servers we must look in exactly the directories the CLI scans, in
//! its order, read the files as it does and match workspaces as it does
//! (all observed with Claude Code 2.1.328); otherwise `ccbridge list` would
//! show a different picture from what Claude Code sees.
//!
//! Every function takes the environment as a value ([`Env`]) so tests can
//! describe any machine without touching the process environment;
//! [`Env::from_process`] reads the real one.
//!
//! Differences from the CLI, all deliberate:
//! - paths are not NFC-normalized (no Unicode tables in this crate);
//! - under WSL without `USERPROFILE` the CLI asks `powershell.exe` for it; we
//!   rely on the `/mnt/c/Users/*` scan instead of spawning a Windows process;
//! - lock files are read with a size cap and never block on a FIFO.

pub mod stale;

pub use stale::{clean, Report};

use ccbridge_protocol::lockfile::{LockFile, LockFileError};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::net::Ipv4Addr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Where Windows user profiles appear inside WSL.
pub const WINDOWS_USERS_DIR: &str = "/mnt/c/Users";

/// Entries of [`WINDOWS_USERS_DIR`] the CLI skips.
const SKIPPED_WINDOWS_USERS: [&str; 4] = ["Public", "Default", "Default User", "All Users"];

/// Lock files larger than this are reported as invalid instead of being read.
pub const MAX_LOCK_FILE_BYTES: u64 = 1 << 20;

/// How long a port gets to accept a TCP connection (the CLI's own value).
pub const PORT_PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// The parts of the environment discovery depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    /// `CLAUDE_CONFIG_DIR`; an empty value counts as unset.
    pub claude_config_dir: Option<PathBuf>,
    /// The home directory (`HOME`).
    pub home: Option<PathBuf>,
    /// Whether we run under WSL.
    pub wsl: bool,
    /// `WSL_DISTRO_NAME`, used to match `\\wsl$\<distro>\...` folders.
    pub wsl_distro: Option<String>,
    /// `USERPROFILE` as WSL passes it through (a Windows path).
    pub userprofile: Option<String>,
    /// Where Windows user profiles live; [`WINDOWS_USERS_DIR`] except in tests.
    pub windows_users_dir: PathBuf,
}

impl Env {
    /// Reads the real process environment (and `/proc/version` for WSL).
    pub fn from_process() -> Env {
        let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let wsl_distro = std::env::var("WSL_DISTRO_NAME")
            .ok()
            .filter(|v| !v.is_empty());
        let proc_version = std::fs::read_to_string("/proc/version").ok();
        Env {
            claude_config_dir: nonempty("CLAUDE_CONFIG_DIR").map(PathBuf::from),
            home: nonempty("HOME").map(PathBuf::from),
            wsl: is_wsl(wsl_distro.as_deref(), proc_version.as_deref()),
            wsl_distro,
            userprofile: std::env::var("USERPROFILE")
                .ok()
                .filter(|v| !v.trim().is_empty()),
            windows_users_dir: PathBuf::from(WINDOWS_USERS_DIR),
        }
    }

    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub fn config_dir(&self) -> Option<PathBuf> {
        self.claude_config_dir
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".claude")))
    }
}

/// WSL detection: `WSL_DISTRO_NAME` is set, or `/proc/version` mentions Microsoft.
pub fn is_wsl(wsl_distro_name: Option<&str>, proc_version: Option<&str>) -> bool {
    wsl_distro_name.is_some_and(|d| !d.is_empty())
        || proc_version.is_some_and(|v| v.to_ascii_lowercase().contains("microsoft"))
}

/// Converts a Windows drive path as the CLI does: `X:\a\b` → `/mnt/x/a/b`.
/// Returns `None` for anything that does not start with a drive letter.
pub fn windows_to_wsl_path(path: &str) -> Option<PathBuf> {
    let path = path.trim();
    let mut chars = path.chars();
    let drive = chars.next().filter(char::is_ascii_alphabetic)?;
    if chars.next() != Some(':') {
        return None;
    }
    let rest = chars.as_str().replace('\\', "/");
    let rest = rest.trim_matches('/');
    let drive = drive.to_ascii_lowercase();
    Some(PathBuf::from(if rest.is_empty() {
        format!("/mnt/{drive}")
    } else {
        format!("/mnt/{drive}/{rest}")
    }))
}

/// The lock-file directories the CLI scans, in its order, de-duplicated by
/// realpath (the first spelling of a directory is kept).
pub fn lock_dirs(env: &Env) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let home_claude = env.home.as_ref().map(|h| h.join(".claude"));
    if let Some(config) = &env.claude_config_dir {
        dirs.push(config.join("ide"));
    }
    if let Some(home_claude) = &home_claude {
        dirs.push(home_claude.join("ide"));
    }
    if env.wsl {
        if let Some(profile) = env.userprofile.as_deref().and_then(windows_to_wsl_path) {
            dirs.push(profile.join(".claude").join("ide"));
        }
        dirs.extend(
            windows_user_profiles(&env.windows_users_dir)
                .into_iter()
                .map(|p| p.join(".claude").join("ide")),
        );
    }
    dedup_by_realpath(dirs)
}

/// Directories (or symlinks) under the Windows users directory, minus the
/// system profiles, sorted by name. Errors yield an empty list.
fn windows_user_profiles(users_dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(users_dir) else {
        return Vec::new();
    };
    let mut names: Vec<_> = read
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink()))
        .map(|e| e.file_name())
        .filter(|n| !SKIPPED_WINDOWS_USERS.iter().any(|s| n == *s))
        .collect();
    names.sort();
    names.into_iter().map(|n| users_dir.join(n)).collect()
}

fn dedup_by_realpath(dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut seen = HashSet::new();
    dirs.into_iter()
        .filter(|d| {
            let key = std::fs::canonicalize(d).unwrap_or_else(|_| resolve(&cwd, d));
            seen.insert(key)
        })
        .collect()
}

/// Lexical `path.resolve(base, p)`: absolute, without `.`, `..` or doubled
/// or trailing separators. Symlinks are not followed.
pub fn resolve(base: &Path, p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Why a lock file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LockReadError {
    #[error("not a regular file")]
    NotAFile,
    #[error("larger than {MAX_LOCK_FILE_BYTES} bytes")]
    TooLarge,
    #[error("cannot read it: {0}")]
    Io(std::io::Error),
    #[error(transparent)]
    Invalid(#[from] LockFileError),
}

/// One `*.lock` file found in a scanned directory.
#[derive(Debug)]
pub struct LockEntry {
    pub path: PathBuf,
    /// The port, from the file name (the contents never set it).
    pub port: Option<u16>,
    pub lock: Result<LockFile, LockReadError>,
    pub mtime: SystemTime,
    /// Whether the lock's pid runs: `Some(true)` also when it belongs to
    /// another user (EPERM). `None` when there is no usable pid, or when the
    /// lock says the server runs in Windows (its pid means nothing here).
    pub pid_alive: Option<bool>,
    /// Whether the process recorded as serving the port
    /// ([`LockFile::server_process`]) still runs: `Some(false)` when it is
    /// gone or its pid now belongs to a process started later. `None` when
    /// the lock records none (other IDE servers) or it cannot be checked.
    pub server_alive: Option<bool>,
}

impl LockEntry {
    pub fn lock(&self) -> Option<&LockFile> {
        self.lock.as_ref().ok()
    }

    pub fn pid(&self) -> Option<u32> {
        self.lock().and_then(|l| l.pid)
    }

    /// Parsed, WebSocket transport, and neither its editor nor its server
    /// process known to be gone.
    pub fn is_usable(&self) -> bool {
        self.lock().is_some_and(|l| l.transport == "ws")
            && self.pid_alive != Some(false)
            && self.server_alive != Some(false)
    }
}

/// A directory that exists but could not be listed.
#[derive(Debug, thiserror::Error)]
#[error("cannot list {}: {error}", path.display())]
pub struct ScanError {
    pub path: PathBuf,
    pub error: std::io::Error,
}

/// The result of scanning lock-file directories.
#[derive(Debug)]
pub struct Scan {
    /// The directories scanned, in order.
    pub dirs: Vec<PathBuf>,
    /// Every lock file, newest first.
    pub entries: Vec<LockEntry>,
    /// Directories that exist but could not be read (missing ones are not errors).
    pub errors: Vec<ScanError>,
}

/// Scans the directories the CLI would scan in this environment.
pub fn scan_env(env: &Env) -> Scan {
    scan(&lock_dirs(env))
}

/// Lists `*.lock` in each directory, drops files that fail to `stat`,
/// sorts everything by mtime, newest first, and reads each file.
pub fn scan(dirs: &[PathBuf]) -> Scan {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for dir in dirs {
        let read = match std::fs::read_dir(dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => {
                errors.push(ScanError {
                    path: dir.clone(),
                    error,
                });
                continue;
            }
        };
        let mut names: Vec<_> = read
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .filter(|n| n.to_string_lossy().ends_with(".lock"))
            .collect();
        names.sort();
        for name in names {
            let path = dir.join(&name);
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let lock = read_lock(&path);
            let (pid_alive, server_alive) = match &lock {
                Ok(l) if !l.running_in_windows => (
                    l.pid.and_then(pid_alive),
                    l.server_process.as_ref().and_then(server_alive),
                ),
                _ => (None, None),
            };
            entries.push(LockEntry {
                port: LockFile::port_from_file_name(&name.to_string_lossy()),
                lock,
                mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                pid_alive,
                server_alive,
                path,
            });
        }
    }
    entries.sort_by_key(|e| std::cmp::Reverse(e.mtime));
    Scan {
        dirs: dirs.to_vec(),
        entries,
        errors,
    }
}

/// Reads and parses one lock file. Opens non-blocking so a FIFO cannot hang
/// us, checks the opened file is a regular one, and caps the size. A
/// symbolic link is followed, as Claude Code follows it.
pub fn read_lock(path: &Path) -> Result<LockFile, LockReadError> {
    let bytes = read_small_file(path, MAX_LOCK_FILE_BYTES, Follow::Yes).map_err(|e| match e {
        SmallFileError::NotAFile => LockReadError::NotAFile,
        SmallFileError::TooLarge(_) => LockReadError::TooLarge,
        SmallFileError::Io(e) => LockReadError::Io(e),
    })?;
    Ok(LockFile::parse(&bytes)?)
}

/// Whether [`read_small_file`] follows a symbolic link at the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    Yes,
    /// `O_NOFOLLOW`: a link is refused (`ELOOP`), whatever it points to.
    No,
}

/// Why [`read_small_file`] read nothing.
#[derive(Debug, thiserror::Error)]
pub enum SmallFileError {
    #[error("not a regular file")]
    NotAFile,
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    #[error("cannot read it: {0}")]
    Io(std::io::Error),
}

/// Reads a small file someone else may have planted (in a shared folder
/// like `/tmp`) without ever blocking or reading much: opened
/// `O_NONBLOCK` (a FIFO without a writer opens at once instead of waiting
/// for one), `O_NOCTTY` (a terminal never becomes ours) and `O_CLOEXEC`,
/// the opened file `fstat`ed and refused unless
/// it is a regular file (so a FIFO, a device or a socket is never read),
/// and at most `max` bytes read (a huge or sparse file is refused, not
/// read whole).
pub fn read_small_file(path: &Path, max: u64, follow: Follow) -> Result<Vec<u8>, SmallFileError> {
    let mut flags =
        rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC;
    if follow == Follow::No {
        flags |= rustix::fs::OFlags::NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => {
                SmallFileError::NotAFile
            }
            _ => SmallFileError::Io(e),
        })?;
    let meta = file.metadata().map_err(SmallFileError::Io)?;
    if !meta.is_file() {
        return Err(SmallFileError::NotAFile);
    }
    if meta.len() > max {
        return Err(SmallFileError::TooLarge(max));
    }
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(SmallFileError::Io)?;
    if bytes.len() as u64 > max {
        return Err(SmallFileError::TooLarge(max));
    }
    Ok(bytes)
}

/// `kill(pid, 0)`: `Some(true)` if the process exists (EPERM included: it
/// exists but belongs to someone else), `Some(false)` on ESRCH, `None` for a
/// pid that cannot name one process (0, or above `i32::MAX`) or other errors.
pub fn pid_alive(pid: u32) -> Option<bool> {
    let raw = i32::try_from(pid).ok()?;
    let pid = rustix::process::Pid::from_raw(raw)?;
    match rustix::process::test_kill_process(pid) {
        Ok(()) => Some(true),
        Err(e) if e == rustix::io::Errno::PERM => Some(true),
        Err(e) if e == rustix::io::Errno::SRCH => Some(false),
        Err(_) => None,
    }
}

/// When process `pid` started, in clock ticks after boot (field 22 of
/// `/proc/<pid>/stat`), or `None` where that cannot be read.
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold anything,
    // spaces and parentheses included: count fields after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// This process as a lock file records it.
pub fn this_server_process() -> ccbridge_protocol::lockfile::ServerProcess {
    let pid = std::process::id();
    ccbridge_protocol::lockfile::ServerProcess {
        pid,
        start_time: process_start_time(pid),
    }
}

/// Whether the recorded server process still runs: `Some(false)` when its
/// pid is gone, or is now a process that started at another time (the pid
/// was reused); `None` when that cannot be told.
pub fn server_alive(p: &ccbridge_protocol::lockfile::ServerProcess) -> Option<bool> {
    match pid_alive(p.pid)? {
        false => Some(false),
        true => match (p.start_time, process_start_time(p.pid)) {
            (Some(recorded), Some(now)) => Some(recorded == now),
            _ => Some(true),
        },
    }
}

/// Whether something accepts TCP connections on `127.0.0.1:port` within
/// [`PORT_PROBE_TIMEOUT`].
pub async fn port_answers(port: u16) -> bool {
    matches!(
        tokio::time::timeout(
            PORT_PROBE_TIMEOUT,
            tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)),
        )
        .await,
        Ok(Ok(_))
    )
}

/// [`port_answers`] for many ports at once (concurrently, so the whole call
/// takes at most about [`PORT_PROBE_TIMEOUT`]).
pub async fn ports_answering(ports: impl IntoIterator<Item = u16>) -> HashMap<u16, bool> {
    let mut set = tokio::task::JoinSet::new();
    let unique: HashSet<u16> = ports.into_iter().collect();
    for port in unique {
        set.spawn(async move { (port, port_answers(port).await) });
    }
    let mut out = HashMap::new();
    while let Some(res) = set.join_next().await {
        if let Ok((port, answers)) = res {
            out.insert(port, answers);
        }
    }
    out
}

/// Splits `\\wsl$\<distro>\rest` or `\\wsl.localhost\<distro>\rest`.
fn wsl_unc(folder: &str) -> Option<(&str, &str)> {
    let lower = folder.to_ascii_lowercase();
    let prefix = [r"\\wsl$\", r"\\wsl.localhost\"]
        .into_iter()
        .find(|p| lower.starts_with(p))?;
    let rest = folder.get(prefix.len()..)?;
    Some(rest.split_once('\\').unwrap_or((rest, "")))
}

/// The folder spellings to try for one workspace folder: the raw folder,
/// then, for a Windows IDE seen from WSL, its Linux form (as `wslpath -u`
/// would give, with the CLI's fallbacks). Empty when the folder belongs to
/// another WSL distro.
fn folder_candidates(folder: &str, lock: &LockFile, wsl_distro: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Some(distro) = wsl_distro.filter(|_| lock.running_in_windows) else {
        out.push(PathBuf::from(folder));
        return out;
    };
    if let Some((d, rest)) = wsl_unc(folder) {
        if d != distro {
            return out;
        }
        out.push(PathBuf::from(folder));
        out.push(PathBuf::from(format!("/{}", rest.replace('\\', "/"))));
        return out;
    }
    out.push(PathBuf::from(folder));
    match windows_to_wsl_path(folder) {
        Some(p) => out.push(p),
        None => out.push(PathBuf::from(folder.replace('\\', "/"))),
    }
    out
}

/// The CLI's `contains-cwd` verdict: some non-empty workspace folder,
/// resolved, equals `dir` or is a prefix of it followed by `/`. Comparison
/// is a case-sensitive string test with no realpath, like the CLI's.
/// Relative folders are resolved against `dir`.
pub fn workspace_contains(lock: &LockFile, dir: &Path, wsl_distro: Option<&str>) -> bool {
    let base = resolve(Path::new("/"), dir);
    let cwd = base.to_string_lossy();
    lock.workspace_folders
        .iter()
        .filter(|f| !f.is_empty())
        .flat_map(|f| folder_candidates(f, lock, wsl_distro))
        .any(|folder| {
            let folder = resolve(&base, &folder);
            let folder = folder.to_string_lossy();
            *cwd == *folder || cwd.starts_with(&format!("{folder}/"))
        })
}

/// Usable entries (see [`LockEntry::is_usable`]) whose workspace contains
/// `dir`, newest first.
pub fn matching_workspace<'a>(
    entries: &'a [LockEntry],
    dir: &Path,
    wsl_distro: Option<&str>,
) -> Vec<&'a LockEntry> {
    entries
        .iter()
        .filter(|e| e.is_usable())
        .filter(|e| {
            e.lock()
                .is_some_and(|l| workspace_contains(l, dir, wsl_distro))
        })
        .collect()
}

/// The newest usable entry whose workspace contains `dir`.
pub fn pick_for_workspace<'a>(
    entries: &'a [LockEntry],
    dir: &Path,
    wsl_distro: Option<&str>,
) -> Option<&'a LockEntry> {
    matching_workspace(entries, dir, wsl_distro)
        .into_iter()
        .next()
}

/// The newest usable entry for `port`, else the newest entry of any kind for
/// it (so the caller can say why it cannot be used).
pub fn pick_for_port(entries: &[LockEntry], port: u16) -> Option<&LockEntry> {
    let mut with_port = entries.iter().filter(|e| e.port == Some(port));
    let first = with_port.clone().next();
    with_port.find(|e| e.is_usable()).or(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::Duration;

    fn env(config: Option<&Path>, home: Option<&Path>) -> Env {
        Env {
            claude_config_dir: config.map(Path::to_path_buf),
            home: home.map(Path::to_path_buf),
            wsl: false,
            wsl_distro: None,
            userprofile: None,
            windows_users_dir: PathBuf::from("/nonexistent-for-tests"),
        }
    }

    fn lock_json(pid: Option<u32>, folders: &[&str]) -> String {
        let mut l = LockFile::new(
            0,
            folders.iter().map(|s| s.to_string()).collect(),
            "Test".into(),
            "tok".into(),
        );
        l.pid = pid;
        l.to_json()
    }

    fn write_at(path: &Path, contents: &str, secs_ago: u64) {
        fs::write(path, contents).unwrap();
        let f = fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
            .unwrap();
    }

    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn dirs_without_config_dir() {
        let e = env(None, Some(Path::new("/h")));
        assert_eq!(lock_dirs(&e), vec![PathBuf::from("/h/.claude/ide")]);
        assert_eq!(e.config_dir(), Some(PathBuf::from("/h/.claude")));
        assert!(lock_dirs(&env(None, None)).is_empty());
    }

    #[test]
    fn dirs_with_config_dir_add_home_after_it() {
        let e = env(Some(Path::new("/cfg")), Some(Path::new("/h")));
        assert_eq!(
            lock_dirs(&e),
            vec![PathBuf::from("/cfg/ide"), PathBuf::from("/h/.claude/ide")]
        );
    }

    #[test]
    fn dirs_are_deduplicated_by_realpath() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        fs::create_dir_all(home.join(".claude/ide")).unwrap();
        let link = t.path().join("cfg");
        std::os::unix::fs::symlink(home.join(".claude"), &link).unwrap();
        let dirs = lock_dirs(&env(Some(&link), Some(&home)));
        assert_eq!(dirs, vec![link.join("ide")]);
        // Same spelling, directory missing: lexical fallback still dedups.
        let e = env(Some(Path::new("/x/../h/.claude")), Some(Path::new("/h")));
        assert_eq!(lock_dirs(&e), vec![PathBuf::from("/x/../h/.claude/ide")]);
    }

    #[test]
    fn wsl_path_conversion() {
        assert_eq!(
            windows_to_wsl_path(r"C:\Users\me"),
            Some(PathBuf::from("/mnt/c/Users/me"))
        );
        assert_eq!(
            windows_to_wsl_path(r"d:\a\b\"),
            Some(PathBuf::from("/mnt/d/a/b"))
        );
        assert_eq!(
            windows_to_wsl_path("E:/x/y"),
            Some(PathBuf::from("/mnt/e/x/y"))
        );
        assert_eq!(windows_to_wsl_path(r"C:\"), Some(PathBuf::from("/mnt/c")));
        assert_eq!(windows_to_wsl_path(r"\\server\share"), None);
        assert_eq!(windows_to_wsl_path("/home/me"), None);
        assert_eq!(windows_to_wsl_path(""), None);
        assert_eq!(windows_to_wsl_path("é:"), None);
    }

    #[test]
    fn wsl_detection() {
        assert!(is_wsl(Some("Ubuntu"), None));
        assert!(!is_wsl(Some(""), None));
        assert!(is_wsl(
            None,
            Some("Linux version 5.15.167.4-microsoft-standard-WSL2")
        ));
        assert!(is_wsl(None, Some("Linux version 4.4.0-19041-Microsoft")));
        assert!(!is_wsl(None, Some("Linux version 6.1.0-18-amd64")));
        assert!(!is_wsl(None, None));
    }

    #[test]
    fn wsl_dirs_only_under_wsl() {
        let t = tempfile::tempdir().unwrap();
        let users = t.path().join("Users");
        for d in [
            "Public",
            "Default",
            "Default User",
            "All Users",
            "bob",
            "alice",
        ] {
            fs::create_dir_all(users.join(d)).unwrap();
        }
        fs::write(users.join("desktop.ini"), "").unwrap();
        std::os::unix::fs::symlink(users.join("alice"), users.join("carol")).unwrap();
        let mut e = env(None, Some(Path::new("/h")));
        e.userprofile = Some(r"C:\Users\me".into());
        e.windows_users_dir = users.clone();
        assert_eq!(lock_dirs(&e), vec![PathBuf::from("/h/.claude/ide")]);
        e.wsl = true;
        assert_eq!(
            lock_dirs(&e),
            vec![
                PathBuf::from("/h/.claude/ide"),
                PathBuf::from("/mnt/c/Users/me/.claude/ide"),
                users.join("alice/.claude/ide"),
                users.join("bob/.claude/ide"),
                users.join("carol/.claude/ide"),
            ]
        );
    }

    #[test]
    fn scan_sorts_all_dirs_by_mtime_newest_first() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        write_at(&a.join("1001.lock"), &lock_json(None, &["/w"]), 300);
        write_at(&b.join("1002.lock"), &lock_json(None, &["/w"]), 100);
        write_at(&a.join("1003.lock"), &lock_json(None, &["/w"]), 200);
        write_at(&a.join("1004.json"), "{}", 0);
        std::os::unix::fs::symlink(t.path().join("nowhere"), a.join("1005.lock")).unwrap();
        let missing = t.path().join("missing");
        let s = scan(&[a.clone(), missing, b.clone()]);
        let ports: Vec<_> = s.entries.iter().map(|e| e.port).collect();
        assert_eq!(ports, vec![Some(1002), Some(1003), Some(1001)]);
        assert!(s.errors.is_empty());
        assert_eq!(s.entries[0].path, b.join("1002.lock"));
        assert_eq!(s.dirs.len(), 3);
    }

    #[test]
    fn scan_reports_bad_files_without_failing() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        fs::write(d.join("abc.lock"), lock_json(None, &["/w"])).unwrap();
        fs::write(d.join("2001.lock"), [0xff, 0xfe]).unwrap();
        fs::write(d.join("2002.lock"), r#"{"pid":"nope"}"#).unwrap();
        fs::create_dir(d.join("2003.lock")).unwrap();
        fs::write(
            d.join("2004.lock"),
            vec![b' '; MAX_LOCK_FILE_BYTES as usize + 1],
        )
        .unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            d.join("2005.lock"),
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        fs::write(d.join("2006.lock"), "/old/style\n/folders\n").unwrap();
        let s = scan(&[d.to_path_buf()]);
        let by_name = |n: &str| {
            s.entries
                .iter()
                .find(|e| e.path == d.join(n))
                .unwrap_or_else(|| panic!("{n} missing"))
        };
        assert_eq!(by_name("abc.lock").port, None);
        assert!(by_name("abc.lock").lock.is_ok());
        assert!(matches!(
            by_name("2001.lock").lock,
            Err(LockReadError::Invalid(LockFileError::NotUtf8))
        ));
        assert!(matches!(
            by_name("2002.lock").lock,
            Err(LockReadError::Invalid(LockFileError::Shape { .. }))
        ));
        assert!(matches!(
            by_name("2003.lock").lock,
            Err(LockReadError::NotAFile)
        ));
        assert!(matches!(
            by_name("2004.lock").lock,
            Err(LockReadError::TooLarge)
        ));
        assert!(matches!(
            by_name("2005.lock").lock,
            Err(LockReadError::NotAFile)
        ));
        let old = by_name("2006.lock");
        assert_eq!(old.port, Some(2006));
        assert_eq!(
            old.lock().map(|l| l.workspace_folders.clone()),
            Some(vec!["/old/style".to_string(), "/folders".to_string()])
        );
        assert!(!old.is_usable(), "no ws transport");
    }

    #[test]
    fn scan_checks_pids() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let me = std::process::id();
        fs::write(d.join("3001.lock"), lock_json(Some(me), &["/w"])).unwrap();
        fs::write(d.join("3002.lock"), lock_json(Some(dead_pid()), &["/w"])).unwrap();
        fs::write(d.join("3003.lock"), lock_json(None, &["/w"])).unwrap();
        let mut win = LockFile::new(me, vec![], "VS Code".into(), "t".into());
        win.running_in_windows = true;
        fs::write(d.join("3004.lock"), win.to_json()).unwrap();
        let s = scan(&[d.to_path_buf()]);
        let alive = |port: u16| {
            s.entries
                .iter()
                .find(|e| e.port == Some(port))
                .and_then(|e| e.pid_alive)
        };
        assert_eq!(alive(3001), Some(true));
        assert_eq!(alive(3002), Some(false));
        assert_eq!(alive(3003), None);
        assert_eq!(alive(3004), None);
    }

    #[test]
    fn pid_liveness() {
        assert_eq!(pid_alive(std::process::id()), Some(true));
        assert_eq!(pid_alive(dead_pid()), Some(false));
        // pid 1 exists everywhere; unprivileged we get EPERM, which counts as alive.
        assert_eq!(pid_alive(1), Some(true));
        assert_eq!(pid_alive(0), None);
        assert_eq!(pid_alive(u32::MAX), None);
    }

    fn lock_with(folders: &[&str]) -> LockFile {
        LockFile::new(
            1,
            folders.iter().map(|s| s.to_string()).collect(),
            "T".into(),
            "t".into(),
        )
    }

    #[test]
    fn contains_cwd_matching() {
        let l = lock_with(&["/ws"]);
        let m = |l: &LockFile, d: &str| workspace_contains(l, Path::new(d), None);
        assert!(m(&l, "/ws"));
        assert!(m(&l, "/ws/"));
        assert!(m(&l, "/ws/a/b"));
        assert!(!m(&l, "/ws_secret"));
        assert!(!m(&l, "/w"));
        assert!(!m(&l, "/"));
        assert!(!m(&l, "/WS"), "case-sensitive");
        assert!(m(&lock_with(&["/ws/"]), "/ws/a"));
        assert!(m(&lock_with(&["/x/../ws/./"]), "/ws/a"));
        assert!(m(&lock_with(&["", "/other", "/ws"]), "/ws/a"));
        assert!(!m(&lock_with(&[""]), "/ws"));
        assert!(!m(&lock_with(&[]), "/ws"));
        // The root folder only matches itself (the CLI tests against "//").
        assert!(m(&lock_with(&["/"]), "/"));
        assert!(!m(&lock_with(&["/"]), "/ws"));
        // Relative folders are resolved against the directory.
        assert!(m(&lock_with(&["."]), "/ws/a"));
    }

    #[test]
    fn windows_folders_from_wsl() {
        let mut l = lock_with(&[
            r"C:\proj",
            r"\\wsl$\Ubuntu\home\u\p",
            r"\\wsl.localhost\Debian\srv",
        ]);
        l.running_in_windows = true;
        let m = |l: &LockFile, d: &str, distro| workspace_contains(l, Path::new(d), distro);
        assert!(m(&l, "/mnt/c/proj/src", Some("Ubuntu")));
        assert!(m(&l, "/home/u/p", Some("Ubuntu")));
        assert!(!m(&l, "/srv", Some("Ubuntu")), "another distro's folder");
        assert!(m(&l, "/srv/x", Some("Debian")));
        assert!(!m(&l, "/mnt/c/proj", None), "only under WSL");
        l.running_in_windows = false;
        assert!(
            !m(&l, "/mnt/c/proj", Some("Ubuntu")),
            "only for Windows IDEs"
        );
    }

    #[test]
    fn picking_prefers_newest_usable() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let me = std::process::id();
        write_at(&d.join("4001.lock"), &lock_json(Some(me), &["/ws"]), 300);
        write_at(
            &d.join("4002.lock"),
            &lock_json(Some(me), &["/ws/sub"]),
            200,
        );
        write_at(
            &d.join("4003.lock"),
            &lock_json(Some(dead_pid()), &["/ws"]),
            100,
        );
        write_at(&d.join("4004.lock"), "/ws\n", 50);
        write_at(
            &d.join("4005.lock"),
            &lock_json(Some(me), &["/elsewhere"]),
            0,
        );
        let s = scan(&[d.to_path_buf()]);
        let ports = |v: Vec<&LockEntry>| v.iter().map(|e| e.port).collect::<Vec<_>>();
        assert_eq!(
            ports(matching_workspace(&s.entries, Path::new("/ws/sub/x"), None)),
            vec![Some(4002), Some(4001)]
        );
        assert_eq!(
            pick_for_workspace(&s.entries, Path::new("/ws"), None).map(|e| e.port),
            Some(Some(4001))
        );
        assert!(pick_for_workspace(&s.entries, Path::new("/nope"), None).is_none());
        assert_eq!(
            pick_for_port(&s.entries, 4005).map(|e| e.port),
            Some(Some(4005))
        );
        // A dead one is still returned for its port, so the caller can explain.
        assert_eq!(
            pick_for_port(&s.entries, 4003).map(|e| e.pid_alive),
            Some(Some(false))
        );
        assert!(pick_for_port(&s.entries, 4999).is_none());
    }

    #[test]
    fn resolve_is_lexical() {
        let r = |b: &str, p: &str| resolve(Path::new(b), Path::new(p));
        assert_eq!(r("/a", "b/../c/"), PathBuf::from("/a/c"));
        assert_eq!(r("/a", "/x//y/."), PathBuf::from("/x/y"));
        assert_eq!(r("/", "../../.."), PathBuf::from("/"));
    }

    #[tokio::test]
    async fn port_probe() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let open = l.local_addr().unwrap().port();
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        assert!(port_answers(open).await);
        assert!(!port_answers(closed).await);
        let m = ports_answering([open, closed, open]).await;
        assert_eq!(m.len(), 2);
        assert_eq!(m.get(&open), Some(&true));
        assert_eq!(m.get(&closed), Some(&false));
    }
}
