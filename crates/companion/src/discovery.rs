//! Where Gemini CLI and Qwen Code look for an IDE, and what they expect to
//! find there (observed with the real clients; `docs/agents.md`):
//!
//! - Gemini CLI reads `<os tmpdir>/gemini/ide/gemini-ide-server-<pid>-<port>.json`
//!   (`TMPDIR` moves it) holding `port`, `workspacePath` (folders joined
//!   with `:`), `authToken` and `ideInfo {name, displayName}`; the
//!   `ideInfo` is what makes it accept the IDE from any terminal. It
//!   checks the file's owner, deletes nothing.
//! - Qwen Code reads `~/.qwen/ide/<port>.lock` (`$QWEN_HOME/ide/`) holding
//!   the same plus `ppid` (a live process: it deletes locks whose `ppid`
//!   is dead) and `ideName`; it requires `ideInfo` too, although its spec
//!   does not name it.
//!
//! Both files hold the token, so they get the lock file's guarantees
//! ([`PrivateFile`]: private directory, atomic 0600 write that follows no
//! planted symlink, removed when dropped). Gemini files left by a ccbridge
//! (or any companion) whose process died are swept at start, since Gemini
//! never removes them.
//!
//! Gemini's folder is shared (`/tmp/gemini/ide` unless `TMPDIR` moves it):
//! anybody can plant a file named like a discovery file there, a FIFO that
//! would block whoever opens it, a link to `/dev/zero`, a huge sparse file.
//! So a file is only read when it is a regular file of this user, opened
//! without following links nor blocking and read capped
//! ([`ccbridge_discovery::read_small_file`]); another user's files
//! are left out, anything else that is not a regular file is listed as
//! skipped, and nothing of either kind is ever removed.

use ccbridge_discovery::{pid_alive, read_small_file, Follow, SmallFileError};
use ccbridge_server::lockfile::{LockError, PrivateFile};
use ccbridge_server::AgentKind;
use serde_json::json;
use std::path::{Path, PathBuf};

/// One of the agents the companion server serves: those that find their
/// IDE through a discovery file and speak MCP over HTTP to it (Gemini CLI,
/// Qwen Code). A subset of ccbridge's agents ([`AgentKind`]), as its own
/// type so that only these reach the companion's discovery files and
/// environment variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompanionAgent {
    Gemini,
    Qwen,
}

impl CompanionAgent {
    pub const ALL: [CompanionAgent; 2] = [CompanionAgent::Gemini, CompanionAgent::Qwen];

    /// The same agent among all of ccbridge's ([`AgentKind`]).
    pub fn kind(self) -> AgentKind {
        match self {
            CompanionAgent::Gemini => AgentKind::Gemini,
            CompanionAgent::Qwen => AgentKind::Qwen,
        }
    }

    /// The agent of `kind`, if it finds its IDE through a discovery file.
    pub fn of(kind: AgentKind) -> Option<CompanionAgent> {
        Self::ALL.into_iter().find(|a| a.kind() == kind)
    }

    /// The name `--agents` takes.
    pub fn name(self) -> &'static str {
        self.kind().id()
    }

    /// What a person calls it.
    pub fn display_name(self) -> &'static str {
        self.kind().display_name()
    }

    /// The session's name the frontend is told (both clients call
    /// themselves `streamable-http-client`, which says nothing).
    pub fn client_name(self) -> &'static str {
        match self {
            CompanionAgent::Gemini => "gemini-cli",
            CompanionAgent::Qwen => "qwen-code",
        }
    }

    /// The environment of a terminal the agent is started in, so it picks
    /// this IDE (among several) at once.
    pub fn env(self, port: u16, folders: &[String]) -> Vec<(String, String)> {
        let (port_var, ws_var) = match self {
            CompanionAgent::Gemini => (
                "GEMINI_CLI_IDE_SERVER_PORT",
                "GEMINI_CLI_IDE_WORKSPACE_PATH",
            ),
            CompanionAgent::Qwen => ("QWEN_CODE_IDE_SERVER_PORT", "QWEN_CODE_IDE_WORKSPACE_PATH"),
        };
        vec![
            (port_var.to_owned(), port.to_string()),
            (ws_var.to_owned(), folders.join(":")),
        ]
    }
}

/// What the discovery files say.
#[derive(Debug, Clone)]
pub struct Advert {
    pub port: u16,
    pub folders: Vec<String>,
    pub token: String,
    /// The editor's process (Qwen deletes the file once it is gone).
    pub pid: u32,
    /// The editor's name as the agents show it ("Connected to <this>").
    pub ide_name: String,
}

impl Advert {
    fn ide_info(&self) -> serde_json::Value {
        json!({"name": ide_id(&self.ide_name), "displayName": self.ide_name})
    }

    /// The file's JSON for `agent`.
    pub fn to_json(&self, agent: CompanionAgent) -> String {
        let mut v = json!({
            "port": self.port,
            "workspacePath": self.folders.join(":"),
            "authToken": self.token,
            "ideInfo": self.ide_info(),
        });
        if agent == CompanionAgent::Qwen {
            v["ppid"] = self.pid.into();
            v["ideName"] = self.ide_name.clone().into();
        }
        v.to_string()
    }
}

/// A machine name for the IDE: lowercase letters, digits and `-`.
fn ide_id(name: &str) -> String {
    let id: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let id = id.trim_matches('-');
    if id.is_empty() {
        "ccbridge".to_owned()
    } else {
        id.to_owned()
    }
}

/// Gemini CLI's discovery directory: `<os tmpdir>/gemini/ide`.
pub fn gemini_dir() -> PathBuf {
    node_tmpdir(|k| std::env::var_os(k))
        .join("gemini")
        .join("ide")
}

/// The folder Node's `os.tmpdir()` names (Gemini CLI runs on Node), from
/// the environment `var` reads: the first of `TMPDIR`, `TMP`, `TEMP` that
/// is set and not empty, else `/tmp`. Rust's
/// `temp_dir()` reads `TMPDIR` only, and takes an empty one as it is: with
/// `TMP` set and no `TMPDIR`, Gemini CLI looked elsewhere than ccbridge
/// wrote, and with `TMPDIR=` the file (and its token) went into the
/// current folder, usually the project.
pub fn node_tmpdir(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    ["TMPDIR", "TMP", "TEMP"]
        .into_iter()
        .find_map(|k| var(k).filter(|v| !v.is_empty()))
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// Qwen Code's: `$QWEN_HOME/ide`, else `~/.qwen/ide`.
pub fn qwen_dir() -> Option<PathBuf> {
    let nonempty = |k| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(q) = nonempty("QWEN_HOME") {
        return Some(PathBuf::from(q).join("ide"));
    }
    nonempty("HOME").map(|h| PathBuf::from(h).join(".qwen").join("ide"))
}

/// Where `agent` looks for the IDE at `port` of process `pid`.
pub fn file_for(agent: CompanionAgent, pid: u32, port: u16) -> Option<PathBuf> {
    match agent {
        CompanionAgent::Gemini => {
            Some(gemini_dir().join(format!("gemini-ide-server-{pid}-{port}.json")))
        }
        CompanionAgent::Qwen => qwen_dir().map(|d| d.join(format!("{port}.lock"))),
    }
}

/// Why a discovery file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("no home folder for Qwen Code's ~/.qwen/ide (set HOME or QWEN_HOME)")]
    NoHome,
    #[error("{0}")]
    Write(#[from] LockError),
}

/// Writes `advert` where `agent` looks for it; the file is removed when
/// the returned [`PrivateFile`] is dropped.
pub fn publish(agent: CompanionAgent, advert: &Advert) -> Result<PrivateFile, DiscoveryError> {
    let path = file_for(agent, advert.pid, advert.port).ok_or(DiscoveryError::NoHome)?;
    let (dir, name) = (
        path.parent().unwrap_or(Path::new("/")),
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default(),
    );
    Ok(PrivateFile::create(
        dir,
        name,
        advert.to_json(agent).as_bytes(),
    )?)
}

/// Removes Gemini discovery files whose process is gone (Gemini never
/// does), and those of `editor` (the pid this ccbridge advertises) whose
/// port does not answer: an earlier ccbridge of the same editor that was
/// killed left them, and Gemini CLI, finding two files of its editor,
/// could pick the dead port. Returns how many. Only files named as Gemini
/// expects, owned by this user, are considered.
pub fn sweep_gemini(dir: &Path, editor: Option<u32>) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let me = rustix::process::geteuid().as_raw();
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(gemini_pid) else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !meta.is_file() || meta.uid() != me {
            continue;
        }
        // Only a process known to be gone, or a port of this editor's
        // nothing listens on: an unknown one keeps its file.
        let ours_dead = Some(pid) == editor
            && name
                .to_str()
                .and_then(gemini_port)
                .is_some_and(|port| !port_answers(port));
        if pid_alive(pid) != Some(false) && !ours_dead {
            continue;
        }
        if std::fs::remove_file(e.path()).is_ok() {
            tracing::info!(file = %e.path().display(), "removed a stale Gemini CLI discovery file");
            removed += 1;
        }
    }
    removed
}

/// The port in `gemini-ide-server-<pid>-<port>.json`.
fn gemini_port(name: &str) -> Option<u16> {
    gemini_pid(name)?;
    name.strip_suffix(".json")?.rsplit('-').next()?.parse().ok()
}

/// Whether something accepts a connection on loopback `port` (refused at
/// once when nothing listens).
fn port_answers(port: u16) -> bool {
    let addr = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
    std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(500)).is_ok()
}

/// The pid in `gemini-ide-server-<pid>-<port>.json`.
pub fn gemini_pid(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("gemini-ide-server-")?
        .strip_suffix(".json")?;
    let (pid, port) = rest.split_once('-')?;
    port.parse::<u16>().ok()?;
    pid.parse().ok()
}

/// A discovery file found where an agent looks (for `ccbridge list` and
/// `ccbridge clean`); any companion's, not only ccbridge's.
#[derive(Debug, Clone)]
pub struct Found {
    pub agent: CompanionAgent,
    pub path: PathBuf,
    /// From the file's name.
    pub port: Option<u16>,
    /// The IDE's process: in the name (Gemini CLI) or `ppid` (Qwen Code).
    pub pid: Option<u32>,
    pub folders: Vec<String>,
    pub ide_name: Option<String>,
    /// Why the file could not be read, if it could not.
    pub error: Option<String>,
    /// Not a regular file (a FIFO, a link, a device...): left alone, never
    /// opened and never removed; [`Found::error`] says what it is.
    pub skipped: bool,
}

impl Found {
    /// Whether the IDE's process runs (`None`: unknown, or no pid).
    pub fn pid_alive(&self) -> Option<bool> {
        self.pid.and_then(pid_alive)
    }

    /// Stale by `ccbridge clean`'s rule: its process is not known to run
    /// and its port does not answer.
    pub fn is_stale(&self, port_answers: bool) -> bool {
        !self.skipped && !port_answers && self.pid_alive() != Some(true)
    }
}

/// Port and (Gemini CLI) pid from a discovery file's name.
type NameParser = fn(&str) -> Option<(u16, Option<u32>)>;

/// Every discovery file of `agents` in the directories they look in (for
/// this process's `TMPDIR`, `HOME` and `QWEN_HOME`), by agent, then name.
/// Another user's files are left out (the agents ignore them too); files
/// that are not regular files are [`Found::skipped`], never opened.
pub fn scan(agents: &[CompanionAgent]) -> Vec<Found> {
    let mut out = Vec::new();
    for &agent in agents {
        let (dir, parse): (Option<PathBuf>, NameParser) = match agent {
            CompanionAgent::Gemini => (Some(gemini_dir()), |n| {
                Some((gemini_port(n)?, Some(gemini_pid(n)?)))
            }),
            CompanionAgent::Qwen => (qwen_dir(), |n| {
                let port = n.strip_suffix(".lock")?.parse().ok()?;
                Some((port, None))
            }),
        };
        let Some(entries) = dir.and_then(|d| std::fs::read_dir(d).ok()) else {
            continue;
        };
        let mut found: Vec<Found> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let (port, pid) = parse(&name)?;
                read_found(agent, e.path(), port, pid)
            })
            .collect();
        found.sort_by(|a, b| a.path.cmp(&b.path));
        out.extend(found);
    }
    out
}

/// The most of a discovery file that is read; a larger one is refused.
pub const MAX_FILE_BYTES: u64 = 64 << 10;

/// Reads one file, if it is this user's: `lstat` first (which never
/// blocks), then [`read_small_file`] without following a link, so a file
/// swapped for a FIFO in between is still refused, not waited on.
fn read_found(agent: CompanionAgent, path: PathBuf, port: u16, pid: Option<u32>) -> Option<Found> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return None;
    }
    let mut found = Found {
        agent,
        path,
        port: Some(port),
        pid,
        folders: Vec::new(),
        ide_name: None,
        error: None,
        skipped: false,
    };
    let bytes = if meta.is_file() {
        read_small_file(&found.path, MAX_FILE_BYTES, Follow::No)
    } else {
        Err(SmallFileError::NotAFile)
    };
    if let Err(SmallFileError::NotAFile) = bytes {
        found.skipped = true;
        found.error = Some(match not_regular(meta.file_type()) {
            Some(what) => format!("{what}, not a regular file"),
            None => "not a regular file".to_owned(),
        });
        return Some(found);
    }
    let v: serde_json::Value = match bytes
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => {
            found.error = Some(e);
            return Some(found);
        }
    };
    if let Some(ws) = v.get("workspacePath").and_then(|w| w.as_str()) {
        found.folders = ws
            .split(':')
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect();
    }
    found.ide_name = v
        .pointer("/ideInfo/displayName")
        .or_else(|| v.get("ideName"))
        .and_then(|n| n.as_str())
        .map(str::to_owned);
    if agent == CompanionAgent::Qwen {
        found.pid = v
            .get("ppid")
            .and_then(|p| p.as_u64())
            .and_then(|p| u32::try_from(p).ok());
    }
    Some(found)
}

/// What a file that is not a regular one is, in words.
fn not_regular(t: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    Some(if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn regression_gemini_clis_folder_is_node_os_tmpdir() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        assert_eq!(node_tmpdir(env(&[("TMPDIR", "/t")])), PathBuf::from("/t"));
        // TMPDIR unset or empty: Node goes on to TMP, TEMP, then /tmp
        // (Rust's temp_dir() gave TMPDIR's "" or /tmp).
        assert_eq!(node_tmpdir(env(&[("TMP", "/u")])), PathBuf::from("/u"));
        assert_eq!(
            node_tmpdir(env(&[("TMPDIR", ""), ("TEMP", "/v")])),
            PathBuf::from("/v")
        );
        assert_eq!(node_tmpdir(env(&[("TMPDIR", "")])), PathBuf::from("/tmp"));
        assert_eq!(
            node_tmpdir(env(&[("TMPDIR", "/w/")])).join("gemini"),
            PathBuf::from("/w/gemini")
        );
    }

    use super::*;

    fn advert() -> Advert {
        Advert {
            port: 41234,
            folders: vec!["/w/a".into(), "/w/b".into()],
            token: "t0k".into(),
            pid: 77,
            ide_name: "Neovim (ccbridge)".into(),
        }
    }

    #[test]
    fn gemini_gets_ide_info_and_qwen_also_ppid_and_ide_name() {
        let g: serde_json::Value =
            serde_json::from_str(&advert().to_json(CompanionAgent::Gemini)).unwrap();
        assert_eq!(g["port"], 41234);
        assert_eq!(g["workspacePath"], "/w/a:/w/b");
        assert_eq!(g["authToken"], "t0k");
        assert_eq!(g["ideInfo"]["name"], "neovim--ccbridge");
        assert_eq!(g["ideInfo"]["displayName"], "Neovim (ccbridge)");
        assert!(g.get("ppid").is_none());
        let q: serde_json::Value =
            serde_json::from_str(&advert().to_json(CompanionAgent::Qwen)).unwrap();
        assert_eq!(q["ppid"], 77);
        assert_eq!(q["ideName"], "Neovim (ccbridge)");
        assert_eq!(q["ideInfo"], g["ideInfo"]);
    }

    #[test]
    fn gemini_file_names_carry_the_pid() {
        assert_eq!(gemini_pid("gemini-ide-server-123-45678.json"), Some(123));
        assert_eq!(gemini_pid("gemini-ide-server-123.json"), None);
        assert_eq!(gemini_pid("gemini-ide-server-x-1.json"), None);
        assert_eq!(gemini_pid("other-123-45678.json"), None);
    }

    #[test]
    fn a_stale_gemini_file_is_swept_and_a_live_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir
            .path()
            .join(format!("gemini-ide-server-{}-1.json", std::process::id()));
        // A pid far above any pid_max.
        let dead = dir.path().join("gemini-ide-server-2147483600-2.json");
        let other = dir.path().join("notes.json");
        for f in [&live, &dead, &other] {
            std::fs::write(f, "{}").unwrap();
        }
        assert_eq!(sweep_gemini(dir.path(), None), 1);
        assert!(live.exists() && other.exists() && !dead.exists());
    }

    /// Another local user's attack: files planted in Gemini's shared folder
    /// under a discovery file's name (a FIFO, a link to `/dev/zero`, a huge
    /// sparse file) neither block the start-up sweep nor `scan`, and only
    /// a regular file of this user is ever removed.
    #[test]
    fn the_sweep_and_scan_do_not_block_on_a_fifo_planted_in_the_gemini_folder() {
        let dir = tempfile::tempdir().unwrap();
        let named = |port: u16| {
            dir.path()
                .join(format!("gemini-ide-server-2147483600-{port}.json"))
        };
        let (fifo, link, sparse) = (named(1), named(2), named(3));
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(8 << 30)
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let read = dir.path().to_owned();
        std::thread::spawn(move || {
            let found: Vec<Found> = std::fs::read_dir(&read)
                .unwrap()
                .flatten()
                .filter_map(|e| read_found(CompanionAgent::Gemini, e.path(), 1, None))
                .collect();
            let swept = sweep_gemini(&read, None);
            let _ = tx.send((found, swept));
        });
        let (found, swept) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the sweep and the scan finish (they blocked on the FIFO?)");
        let of = |p: &Path| found.iter().find(|f| f.path == p).unwrap();
        assert!(of(&fifo).skipped && of(&link).skipped, "{found:?}");
        assert!(of(&fifo).error.as_deref().unwrap().contains("a FIFO"));
        assert!(!of(&sparse).skipped, "{found:?}");
        assert!(of(&sparse)
            .error
            .as_deref()
            .unwrap()
            .contains("larger than"));
        assert_eq!(swept, 1, "only the sparse regular file goes");
        assert!(std::fs::symlink_metadata(&fifo).is_ok());
        assert!(std::fs::symlink_metadata(&link).is_ok());
        assert!(!sparse.exists());
    }
}
