//! Engine settings, with the defaults a user gets without flags.

use std::path::PathBuf;
use std::time::Duration;

/// Everything the engine can be told. Build with [`Config::new`] and adjust
/// the public fields. It holds no secret (the engine generates the token),
/// so its `Debug` output is safe to log.
#[derive(Clone, Debug)]
pub struct Config {
    /// Shown by the CLI (`/ide`, `/status`, "Opened changes in <ideName>").
    pub ide_name: String,
    /// Absolute paths; the CLI auto-connects when its cwd is inside one.
    pub workspace_folders: Vec<String>,
    /// The editor's pid, written to the lock file.
    pub pid: u32,
    /// Where the lock file goes. [`Config::new`] sets the directory Claude
    /// Code reads ([`Config::default_lock_dir`]), so an embedding editor is
    /// found as the docs say; `None` writes no lock file (tests, benchmarks,
    /// an engine reached only by its port).
    pub lock_dir: Option<PathBuf>,
    /// A fixed port in 10000–65535, or `None` for an OS-assigned one.
    pub port: Option<u16>,
    /// Host names accepted in `Host` besides loopback (WSL, containers).
    pub allowed_hosts: Vec<String>,
    /// Serve several CLI sessions at once instead of "newest wins".
    pub multi_client: bool,
    /// Quiet time before a selection is sent to the client.
    pub selection_debounce: Duration,
    /// WebSocket ping period; a client silent for two periods is dropped.
    pub keepalive_interval: Duration,
    /// Time allowed for the HTTP upgrade request.
    pub handshake_timeout: Duration,
    /// Largest message accepted from a client; larger ones close with 1009.
    pub max_message_size: usize,
    /// Wait after the client's `tools/list` before sending it anything: the
    /// client drops notifications that arrive within ~100 ms of it, later
    /// under load (claudecode.nvim waits 600 ms too).
    pub notify_delay: Duration,
    /// At-mentions kept while no client is connected: how many, how long.
    pub at_mention_queue_len: usize,
    pub at_mention_max_age: Duration,
    /// Time an editor gets to answer a non-interactive request.
    pub frontend_timeout: Duration,
    /// Write every message exchanged with Claude and the editor to this
    /// file, one JSON line each (see `traffic`).
    pub traffic_log: Option<PathBuf>,
    /// Reported as `serverInfo`.
    pub server_name: String,
    pub server_version: String,
}

impl Config {
    pub fn new(ide_name: impl Into<String>, workspace_folders: Vec<String>) -> Self {
        Config {
            ide_name: ide_name.into(),
            workspace_folders,
            pid: std::process::id(),
            lock_dir: Config::default_lock_dir(),
            port: None,
            allowed_hosts: Vec::new(),
            multi_client: false,
            selection_debounce: Duration::from_millis(100),
            keepalive_interval: Duration::from_secs(30),
            handshake_timeout: Duration::from_secs(5),
            max_message_size: 16 << 20,
            notify_delay: Duration::from_millis(600),
            at_mention_queue_len: 32,
            at_mention_max_age: Duration::from_secs(120),
            frontend_timeout: Duration::from_secs(30),
            traffic_log: None,
            server_name: "ccbridge".into(),
            server_version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    /// `$CLAUDE_CONFIG_DIR/ide`, else `~/.claude/ide`: where the client looks first.
    pub fn default_lock_dir() -> Option<PathBuf> {
        if let Some(d) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(d).join("ide"));
        }
        std::env::home_dir().map(|h| h.join(".claude").join("ide"))
    }
}
