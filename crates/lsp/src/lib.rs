//! `ccbridge-lsp`: the workspace's language servers, started by ccbridge
//! itself, so that a face without an editor (the browser page of
//! `ccbridge serve`) still has diagnostics for Claude's `getDiagnostics`,
//! the page's Diagnostics view and the workspace tools' `new_diagnostics`.
//!
//! The client is ccbridge's own, small on purpose: LSP framing
//! ([`framing`], with [`sniff`] for the id of a message too large to keep;
//! the sidecar speaks the same framing to its editor and uses them too),
//! the handful of messages it sends and reads ([`message`],
//! whose doc says why not `lsp-types`), and one task, [`LanguageServers`],
//! that owns every server process. A caller only *involves* a file
//! ([`LanguageServers::involve`], never blocking: a bounded queue, dropped
//! with a log when full); the task opens it in the server for its
//! extension ([`servers`]), started on first use for the workspace folder
//! that holds the file, sends the file's whole text again when it changed
//! on disk, and hands every `textDocument/publishDiagnostics` on through a
//! bounded channel ([`Published`]).
//!
//! A file may be served by several servers (Python: (based)pyright for
//! types, ruff for lints). Each server's publication replaces only that
//! server's own entries for the file, and what is handed on is the merged
//! list, every diagnostic keeping its `source` ("Pyright", "Ruff"). While
//! one of a file's servers still owes diagnostics for its latest text, the
//! others' are held back: the owner treats a publication as the file's
//! fresh diagnostics (`getDiagnostics` stops waiting on it), so a fast
//! linter must not answer for a type checker still at work.
//!
//! Each workspace folder may set its servers up in `.ccbridge/lsp.toml`
//! ([`config`]): turn one off, choose its command and arguments, give it
//! `initializationOptions` and the settings answered to its
//! `workspace/configuration` requests. A file that cannot be used is
//! reported ([`Update::BadConfig`], and logged) and the defaults apply. A
//! changed file is read again: the folder's servers start over with it.
//!
//! Servers run in their own process group and are killed with it when
//! ccbridge stops ([`LanguageServers::stop`]) or drops them (kill on drop);
//! they are also given ccbridge's pid (`processId`), which LSP servers watch
//! to exit when their client dies without a word. A server that exits is
//! restarted after a back-off that doubles, at most
//! [`Options::max_restarts`] times, and its files opened again; meanwhile
//! their diagnostics are cleared rather than left stale. A server that is
//! stuck (its input queue full) is killed and so restarted.

pub mod config;
pub mod framing;
pub mod message;
pub mod servers;
pub mod sniff;

use ccbridge_discovery::{read_small_file, Follow};
use ccbridge_protocol::editor::Diagnostic;
use framing::{encode_frame, Frame, FrameReader};
use message::Incoming;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

/// How ccbridge finds and keeps its language servers.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directories searched for the servers' programs before `PATH`.
    pub search_dirs: Vec<PathBuf>,
    /// Whether `PATH` is searched after `search_dirs` (the default); off,
    /// only `search_dirs` are, for a setup that must not pick up whatever
    /// is installed.
    pub search_path: bool,
    /// How often a server that exits is started again.
    pub max_restarts: u32,
    /// The wait before the first restart; it doubles with each.
    pub backoff: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            search_dirs: Vec::new(),
            search_path: true,
            max_restarts: 5,
            backoff: Duration::from_millis(500),
        }
    }
}

/// A server's diagnostics for one file (an empty list clears them).
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub path: String,
    pub diagnostics: Vec<Diagnostic>,
}

/// What the language servers tell their owner, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// A file's new text went to its server (or waits for it to start):
    /// its fresh diagnostics follow. The owner tells the engine, whose
    /// `getDiagnostics` then waits for them within Claude's budget.
    Analyzing { path: String },
    /// A server's diagnostics for one file.
    Published(Published),
    /// A server's diagnostics for the text proposed for a file under
    /// review ([`LanguageServers::propose`]); `path` is the file's own
    /// path. An empty list once the proposal is gone.
    Proposed(Published),
    /// Files of `language` get no diagnostics: `why` says what to do (its
    /// server is not installed, or it kept exiting and was given up on).
    Unavailable { language: String, why: String },
    /// A workspace folder's configuration file ([`config::FILE`]) cannot be
    /// used: `why` names the file and line. Its servers run with the
    /// defaults.
    BadConfig { why: String },
}

impl Update {
    /// The file this update is about; `None` for one about a language or
    /// a configuration.
    pub fn path(&self) -> Option<&str> {
        match self {
            Update::Analyzing { path } => Some(path),
            Update::Published(p) | Update::Proposed(p) => Some(&p.path),
            Update::Unavailable { .. } | Update::BadConfig { .. } => None,
        }
    }
}

/// Files larger than this are not opened in a server.
pub const MAX_FILE: u64 = 8 << 20;
const COMMANDS: usize = 1024;
const EVENTS: usize = 256;
const PUBLISHED: usize = 256;
/// Messages waiting to be written to one server.
const WRITES: usize = 256;

enum Command {
    Involve(PathBuf),
    Propose(PathBuf, Option<String>),
    Pids(tokio::sync::oneshot::Sender<Vec<u32>>),
    Stop,
}

/// The language servers of some workspace folders. Cheap to clone; every
/// clone talks to the same task.
#[derive(Clone)]
pub struct LanguageServers {
    commands: mpsc::Sender<Command>,
    stopped: watch::Receiver<bool>,
}

impl LanguageServers {
    /// Starts the task (no server yet: each starts when a file of its
    /// language is first involved). Needs a Tokio runtime.
    pub fn start(
        options: Options,
        folders: Vec<PathBuf>,
    ) -> (LanguageServers, mpsc::Receiver<Update>) {
        let (commands, commands_rx) = mpsc::channel(COMMANDS);
        let (published, published_rx) = mpsc::channel(PUBLISHED);
        let (events, events_rx) = mpsc::channel(EVENTS);
        let (stopped_tx, stopped) = watch::channel(false);
        let mut folders: Vec<PathBuf> = folders
            .into_iter()
            .map(|f| PathBuf::from(ccbridge_protocol::uri::normalize(&f.to_string_lossy())))
            .collect();
        // Longest first: a file belongs to the innermost folder.
        folders.sort_by_key(|f| std::cmp::Reverse(f.as_os_str().len()));
        let actor = Actor {
            options,
            folders,
            servers: HashMap::new(),
            docs: BTreeMap::new(),
            diagnostics: HashMap::new(),
            proposals: HashMap::new(),
            events,
            published,
            configs: HashMap::new(),
        };
        tokio::spawn(actor.run(commands_rx, events_rx, stopped_tx));
        (LanguageServers { commands, stopped }, published_rx)
    }

    /// `path` is involved (viewed, proposed, changed): open it in its
    /// server, or send its new text if it changed. Never waits.
    pub fn involve(&self, path: impl Into<PathBuf>) {
        let path = path.into();
        match self.commands.try_send(Command::Involve(path)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(Command::Involve(p))) => {
                tracing::warn!("language servers: busy, {} not checked now", p.display())
            }
            Err(_) => {}
        }
    }

    /// `text` is proposed for `path` (a review is open): the server checks
    /// it as a document of its own beside the file (a hidden sibling that
    /// is never written to disk, so imports resolve as for the file), and
    /// its diagnostics come as [`Update::Proposed`] for `path`. `None`: the
    /// proposal is gone (decided, closed). Never waits.
    pub fn propose(&self, path: impl Into<PathBuf>, text: Option<String>) {
        if let Err(mpsc::error::TrySendError::Full(_)) =
            self.commands.try_send(Command::Propose(path.into(), text))
        {
            tracing::warn!("language servers: busy, a proposal not checked");
        }
    }

    /// The process ids of the servers running now.
    pub async fn pids(&self) -> Vec<u32> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.commands.send(Command::Pids(tx)).await.is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }

    /// Kills every server (and its process group) and waits until they are
    /// gone (at most about a second each).
    pub async fn stop(&self) {
        let _ = self.commands.send(Command::Stop).await;
        let mut stopped = self.stopped.clone();
        let _ = stopped.wait_for(|s| *s).await;
    }
}

/// One server: a kind of [`servers::SERVERS`] in one workspace folder.
type Key = (usize, PathBuf);

enum Event {
    Message { key: Key, gen: u64, msg: Incoming },
    Exited { key: Key, gen: u64 },
    Restart { key: Key },
}

struct Server {
    gen: u64,
    process: Option<Process>,
    ready: bool,
    restarts: u32,
    /// Not installed, given up on, or turned off: never started again.
    unavailable: bool,
    /// Its folder's setup for it (the default when none).
    config: config::ServerConfig,
}

struct Process {
    child: tokio::process::Child,
    pgid: Option<rustix::process::Pid>,
    writes: mpsc::Sender<Vec<u8>>,
}

impl Process {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A file as opened in one of its servers.
struct Doc {
    key: Key,
    /// `Some` while open in the current process of its server.
    version: Option<i32>,
    hash: u64,
    /// Its latest text has not been answered with diagnostics yet.
    owed: bool,
}

struct Actor {
    options: Options,
    folders: Vec<PathBuf>,
    servers: HashMap<Key, Server>,
    /// By path and index in [`servers::SERVERS`].
    docs: BTreeMap<(PathBuf, usize), Doc>,
    /// Each server's latest diagnostics per file (by index in
    /// [`servers::SERVERS`]), merged when handed on; empty lists are not
    /// kept.
    diagnostics: HashMap<PathBuf, BTreeMap<usize, Vec<Diagnostic>>>,
    /// Proposals under review, by their shadow document's path: the file
    /// proposed for, and the text (kept here, since it is not on disk).
    proposals: HashMap<PathBuf, (PathBuf, String)>,
    events: mpsc::Sender<Event>,
    published: mpsc::Sender<Update>,
    /// Each workspace folder's configuration, read when its first server
    /// starts, with the file's stamp then (read again once it changes).
    configs: HashMap<PathBuf, (config::Config, config::Stamp)>,
}

impl Actor {
    /// `key`'s server's setup in its folder, the folder's file read on
    /// first need; a bad file is reported once and the defaults used.
    fn config_of(&mut self, key: &Key) -> config::ServerConfig {
        let root = &key.1;
        if !self.configs.contains_key(root) {
            let stamp = config::stamp(root);
            let loaded = match config::Config::load(root) {
                Ok(c) => c.unwrap_or_default(),
                Err(e) => {
                    let why = format!("{e}; the language servers there run with the defaults");
                    tracing::warn!("{why}");
                    let _ = self.published.try_send(Update::BadConfig { why });
                    config::Config::default()
                }
            };
            self.configs.insert(root.clone(), (loaded, stamp));
        }
        self.configs[root].0.server(servers::SERVERS[key.0].name)
    }

    /// `key`'s server process is gone: its diagnostics are cleared rather
    /// than left stale, and it owes nothing until its files are opened
    /// again in the next process (or, `forget`, never: given up on).
    async fn process_gone(&mut self, key: &Key, forget: bool) {
        let stale: Vec<PathBuf> = self
            .docs
            .iter_mut()
            .filter(|(_, d)| d.key == *key)
            .map(|((p, _), d)| {
                d.version = None;
                d.owed = false;
                p.clone()
            })
            .collect();
        if forget {
            self.docs.retain(|_, d| d.key != *key);
        }
        for p in stale {
            self.published_by(&p, key.0, Vec::new()).await;
        }
    }

    /// When `root`'s configuration file changed since it was read, its
    /// servers stop, their diagnostics are cleared, and they start again
    /// with the new setup (their files opened again once ready): editing
    /// `.ccbridge/lsp.toml` needs no restart of ccbridge. Checked when a
    /// file of the folder is involved (one `stat`).
    async fn reload_if_changed(&mut self, root: &Path) {
        match self.configs.get(root) {
            Some((_, read)) if *read != config::stamp(root) => {}
            _ => return,
        }
        tracing::info!(
            "{} changed: the language servers there start again with it",
            root.join(config::FILE).display()
        );
        self.configs.remove(root);
        let keys: Vec<Key> = self
            .servers
            .keys()
            .filter(|k| k.1 == root)
            .cloned()
            .collect();
        for key in keys {
            let config = self.config_of(&key);
            let Some(s) = self.servers.get_mut(&key) else {
                continue;
            };
            if let Some(mut p) = s.process.take() {
                p.kill();
            }
            s.ready = false;
            s.restarts = 0;
            s.unavailable = false;
            s.config = config;
            self.process_gone(&key, false).await;
            // A new generation: the old process's exit is not this one's.
            self.launch(&key);
        }
    }

    async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut events: mpsc::Receiver<Event>,
        stopped: watch::Sender<bool>,
    ) {
        loop {
            tokio::select! {
                c = commands.recv() => match c {
                    Some(Command::Involve(p)) => self.involve(p).await,
                    Some(Command::Propose(p, text)) => self.propose(p, text).await,
                    Some(Command::Pids(tx)) => {
                        let pids = self.servers.values()
                            .filter_map(|s| s.process.as_ref()?.child.id())
                            .collect();
                        let _ = tx.send(pids);
                    }
                    Some(Command::Stop) | None => break,
                },
                Some(e) = events.recv() => self.event(e).await,
            }
        }
        for s in self.servers.values_mut() {
            if let Some(mut p) = s.process.take() {
                p.kill();
                let _ = tokio::time::timeout(Duration::from_secs(1), p.child.wait()).await;
            }
        }
        let _ = stopped.send(true);
    }

    fn folder_of(&self, path: &Path) -> Option<PathBuf> {
        self.folders.iter().find(|f| path.starts_with(f)).cloned()
    }

    async fn propose(&mut self, path: PathBuf, text: Option<String>) {
        let path = PathBuf::from(ccbridge_protocol::uri::normalize(&path.to_string_lossy()));
        let Some(shadow) = shadow_path(&path) else {
            return;
        };
        match text {
            Some(text) if text.len() as u64 <= MAX_FILE => {
                self.proposals.insert(shadow.clone(), (path, text));
                self.involve(shadow).await;
            }
            _ => {
                // Gone (or too large): closed in its server and cleared,
                // while still known as a proposal (so cleared as one).
                if self.proposals.contains_key(&shadow) {
                    self.close(&shadow).await;
                    self.proposals.remove(&shadow);
                }
            }
        }
    }

    async fn involve(&mut self, path: PathBuf) {
        let path = PathBuf::from(ccbridge_protocol::uri::normalize(&path.to_string_lossy()));
        let Some(root) = self.folder_of(&path) else {
            return;
        };
        let specs = servers::specs_for(&path);
        if specs.is_empty() {
            return;
        }
        self.reload_if_changed(&root).await;
        let text = match self.proposals.get(&path) {
            Some((_, text)) => Some(text.clone()),
            None => read(&path).await,
        };
        let Some(text) = text else {
            // Gone (or no longer text).
            self.close(&path).await;
            return;
        };
        let hash = hash(&text);
        let mut changed = false;
        for spec in specs {
            changed |= self.involve_in(&path, (spec, root.clone()), &text, hash);
        }
        if changed {
            self.analyzing(&path);
        }
    }

    /// Opens `path` in `key`'s server (started if need be), or sends it
    /// its new text; true when the server now owes fresh diagnostics.
    fn involve_in(&mut self, path: &Path, key: Key, text: &str, hash: u64) -> bool {
        if !self.servers.contains_key(&key) {
            let config = self.config_of(&key);
            self.servers.insert(
                key.clone(),
                Server {
                    gen: 0,
                    process: None,
                    ready: false,
                    restarts: 0,
                    unavailable: false,
                    config,
                },
            );
            self.launch(&key);
        }
        let Some(server) = self.servers.get(&key) else {
            return false;
        };
        if server.unavailable {
            return false;
        }
        let ready = server.ready;
        let doc = self.docs.entry((path.to_owned(), key.0)).or_insert(Doc {
            key: key.clone(),
            version: None,
            hash,
            owed: false,
        });
        if !ready {
            let changed = doc.hash != hash || doc.version.is_none();
            doc.hash = hash;
            doc.owed |= changed;
            return changed; // opened once the server is ready
        }
        let uri = message::file_uri(&path.to_string_lossy());
        let frame = match doc.version {
            None => {
                doc.version = Some(1);
                doc.hash = hash;
                open(&uri, path, text)
            }
            Some(v) if doc.hash != hash => {
                doc.version = Some(v + 1);
                doc.hash = hash;
                message::notification(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": v + 1},
                           "contentChanges": [{"text": text}]}),
                )
            }
            Some(_) => return false,
        };
        doc.owed = true;
        self.write(&key, frame);
        true
    }

    /// Starts `key`'s server process (a new generation); marks it
    /// unavailable when its program is not installed or cannot start.
    fn launch(&mut self, key: &Key) {
        let spec = &servers::SERVERS[key.0];
        let Some(server) = self.servers.get_mut(key) else {
            return;
        };
        if !server.config.enabled() {
            tracing::info!(
                "the {} language server is turned off in {}",
                spec.name,
                key.1.join(config::FILE).display()
            );
            server.unavailable = true;
            return;
        }
        let command = server.config.command.clone();
        let program = match &command {
            // A path: that file, relative to the workspace folder.
            Some(c) if c.contains('/') => Some(key.1.join(c)).filter(|p| servers::executable(p)),
            Some(c) => servers::find(
                &[c.as_str()],
                &self.options.search_dirs,
                self.options.search_path,
            ),
            None => servers::locate(spec, &self.options.search_dirs, self.options.search_path),
        };
        let Some(program) = program else {
            let file = key.1.join(config::FILE);
            let searched = || {
                self.options
                    .search_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .chain(self.options.search_path.then(|| "PATH".to_owned()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            // A second checker of a language ("Python (Ruff)") is named
            // itself: Python files still get the first one's diagnostics.
            let missing = match spec.language.split_once(" (") {
                Some((_, checker)) => format!("{} is not installed", checker.trim_end_matches(')')),
                None => format!("no {} language server is installed", spec.language),
            };
            let why = match &command {
                Some(c) if c.contains('/') => format!(
                    "{missing} ({} is not an executable file; set in {})",
                    key.1.join(c).display(),
                    file.display()
                ),
                Some(c) => format!(
                    "{missing} (looked for {c}, set in {}, in {})",
                    file.display(),
                    searched()
                ),
                None => format!(
                    "{missing} (looked for {} in {})",
                    spec.commands.join(", "),
                    searched()
                ),
            };
            tracing::warn!("{why}: no diagnostics for those files");
            server.unavailable = true;
            self.unavailable(spec.language, why);
            return;
        };
        server.gen += 1;
        server.ready = false;
        let args: Vec<String> = match &server.config.args {
            Some(a) => a.clone(),
            None => spec.args.iter().map(|a| (*a).to_owned()).collect(),
        };
        let init_options = server.config.initialization_options();
        match spawn(&program, &args, &key.1) {
            Ok((process, stdout, stderr)) => {
                tracing::info!(
                    "language server {} started for {} (pid {:?})",
                    program.display(),
                    key.1.display(),
                    process.child.id()
                );
                tokio::spawn(read_messages(
                    stdout,
                    key.clone(),
                    server.gen,
                    self.events.clone(),
                ));
                tokio::spawn(log_stderr(stderr, spec.language));
                server.process = Some(process);
                let root = key.1.to_string_lossy().into_owned();
                let init =
                    message::request(0, "initialize", initialize_params(&root, init_options));
                self.write(key, init);
            }
            Err(e) => {
                let why = format!("{} cannot start: {e}", program.display());
                tracing::warn!("{why}");
                server.unavailable = true;
                self.unavailable(spec.language, why);
            }
        }
    }

    /// Queues `frame` for `key`'s server; a server whose queue is full is
    /// stuck and killed (then restarted).
    fn write(&mut self, key: &Key, frame: Vec<u8>) {
        let Some(p) = self.servers.get_mut(key).and_then(|s| s.process.as_mut()) else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(_)) = p.writes.try_send(frame) {
            tracing::warn!("a language server stopped reading: killed");
            p.kill();
        }
    }

    /// Closes `path`'s document in its server, if it has one, and clears
    /// what it had.
    async fn close(&mut self, path: &Path) {
        let specs: Vec<usize> = self.docs_of(path).map(|((_, spec), _)| *spec).collect();
        if specs.is_empty() {
            return;
        }
        for spec in specs {
            let Some(doc) = self.docs.remove(&(path.to_owned(), spec)) else {
                continue;
            };
            if doc.version.is_some() {
                let uri = message::file_uri(&path.to_string_lossy());
                let close = message::notification(
                    "textDocument/didClose",
                    json!({"textDocument": {"uri": uri}}),
                );
                self.write(&doc.key, close);
            }
        }
        self.diagnostics.remove(path);
        self.publish(path, Vec::new()).await;
    }

    /// `spec`'s server's diagnostics for `path`: they replace its earlier
    /// ones, and the file's merged list is handed on unless another of its
    /// servers still owes diagnostics for the latest text (then that
    /// server's publication hands on the whole).
    async fn published_by(&mut self, path: &Path, spec: usize, diagnostics: Vec<Diagnostic>) {
        if let Some(doc) = self.docs.get_mut(&(path.to_owned(), spec)) {
            doc.owed = false;
        }
        let entry = self.diagnostics.entry(path.to_owned()).or_default();
        if diagnostics.is_empty() {
            entry.remove(&spec);
        } else {
            entry.insert(spec, diagnostics);
        }
        if entry.is_empty() {
            self.diagnostics.remove(path);
        }
        self.hand_on(path).await;
    }

    /// `path`'s documents, one per server it is opened in.
    fn docs_of(
        &self,
        path: &Path,
    ) -> std::collections::btree_map::Range<'_, (PathBuf, usize), Doc> {
        self.docs
            .range((path.to_owned(), 0)..=(path.to_owned(), usize::MAX))
    }

    /// Hands on `path`'s merged diagnostics, unless one of its servers
    /// still owes its own.
    async fn hand_on(&mut self, path: &Path) {
        let owed = self.docs_of(path).any(|(_, d)| d.owed);
        if owed {
            return;
        }
        let merged = self
            .diagnostics
            .get(path)
            .map(|by| by.values().flatten().cloned().collect())
            .unwrap_or_default();
        self.publish(path, merged).await;
    }

    async fn publish(&self, path: &Path, diagnostics: Vec<Diagnostic>) {
        let update = match self.proposals.get(path) {
            Some((of, _)) => Update::Proposed(Published {
                path: of.to_string_lossy().into_owned(),
                diagnostics,
            }),
            None => Update::Published(Published {
                path: path.to_string_lossy().into_owned(),
                diagnostics,
            }),
        };
        let _ = self.published.send(update).await;
    }

    /// Tells the owner that files of `language` get no diagnostics, and why
    /// (never waits: a full channel only loses the note, not the log).
    fn unavailable(&self, language: &str, why: String) {
        let _ = self.published.try_send(Update::Unavailable {
            language: language.to_owned(),
            why,
        });
    }

    /// Tells the owner that `path`'s fresh diagnostics are coming. Never
    /// waits: with the channel full, the owner simply does not wait for
    /// this file's report.
    fn analyzing(&self, path: &Path) {
        if self.proposals.contains_key(path) {
            return; // a proposal's check is not waited for
        }
        let _ = self.published.try_send(Update::Analyzing {
            path: path.to_string_lossy().into_owned(),
        });
    }

    async fn event(&mut self, e: Event) {
        match e {
            Event::Message { key, gen, msg } => {
                if self.servers.get(&key).is_none_or(|s| s.gen != gen) {
                    return;
                }
                self.message(key, msg).await
            }
            Event::Exited { key, gen } => {
                let Some(s) = self.servers.get_mut(&key) else {
                    return;
                };
                if s.gen != gen {
                    return;
                }
                s.process = None;
                s.ready = false;
                s.restarts += 1;
                let spec = &servers::SERVERS[key.0];
                let retry = s.restarts <= self.options.max_restarts;
                if retry {
                    let wait = self.options.backoff * 2u32.saturating_pow(s.restarts - 1);
                    tracing::warn!(
                        "the {} language server exited; restarting in {wait:?} ({} of {})",
                        spec.language,
                        s.restarts,
                        self.options.max_restarts
                    );
                    let events = self.events.clone();
                    let key = key.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(wait).await;
                        let _ = events.send(Event::Restart { key }).await;
                    });
                } else {
                    let why = format!(
                        "the {} language server exited {} times and was given up on",
                        spec.language, s.restarts
                    );
                    tracing::warn!("{why}");
                    s.unavailable = true;
                    self.unavailable(spec.language, why);
                }
                self.process_gone(&key, !retry).await;
            }
            Event::Restart { key } => {
                if self
                    .servers
                    .get(&key)
                    .is_some_and(|s| s.process.is_none() && !s.unavailable)
                {
                    self.launch(&key);
                }
            }
        }
    }

    async fn message(&mut self, key: Key, msg: Incoming) {
        match msg {
            Incoming::Response { id, error } if id == json!(0) => {
                if let Some(e) = error {
                    tracing::warn!("a language server refused initialize: {e}");
                    if let Some(p) = self.servers.get_mut(&key).and_then(|s| s.process.as_mut()) {
                        p.kill();
                    }
                    return;
                }
                if let Some(s) = self.servers.get_mut(&key) {
                    s.ready = true;
                }
                self.write(&key, message::notification("initialized", json!({})));
                let waiting: Vec<PathBuf> = self
                    .docs
                    .iter()
                    .filter(|(_, d)| d.key == key && d.version.is_none())
                    .map(|((p, _), _)| p.clone())
                    .collect();
                for p in waiting {
                    self.involve(p).await;
                }
            }
            Incoming::Response { .. } => {}
            Incoming::Request { id, method, params } => {
                let root = key.1.to_string_lossy().into_owned();
                let settings = self.servers.get(&key).map(|s| &s.config);
                let frame = message::answer(&id, &method, &params, folders(&root), settings);
                self.write(&key, frame);
            }
            Incoming::Notification { method, params } => match method.as_str() {
                "textDocument/publishDiagnostics" => {
                    if let Some((path, diagnostics)) = message::published(&params) {
                        self.published_by(Path::new(&path), key.0, diagnostics)
                            .await;
                    }
                }
                "window/logMessage" | "window/showMessage" => {
                    let m = params.get("message").and_then(Value::as_str).unwrap_or("");
                    tracing::debug!(
                        "language server: {}",
                        ccbridge_protocol::editor::cap_chars(m, 500)
                    );
                }
                _ => {}
            },
        }
    }
}

/// Where the text proposed for `path` is checked: a hidden sibling with
/// the same extension (`/w/app.py` → `/w/.app.ccbridge-proposed.py`), so
/// the server picks the same language and resolves imports from the same
/// folder. It only ever exists in the server's memory.
pub fn shadow_path(path: &Path) -> Option<PathBuf> {
    let stem = path.file_stem()?.to_str()?;
    let name = match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => format!(".{stem}.ccbridge-proposed.{ext}"),
        None => format!(".{stem}.ccbridge-proposed"),
    };
    Some(path.with_file_name(name))
}

fn hash(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// A regular file's text, when it is UTF-8 and at most [`MAX_FILE`] bytes.
/// Opened without blocking and judged by the open file itself, so a FIFO or
/// device (or a larger file) put in its place after a look at the path is
/// never waited on or read whole.
async fn read(path: &Path) -> Option<String> {
    let path = path.to_owned();
    let read = move || {
        let bytes = read_small_file(&path, MAX_FILE, Follow::Yes).ok()?;
        String::from_utf8(bytes).ok()
    };
    tokio::task::spawn_blocking(read).await.ok().flatten()
}

fn open(uri: &str, path: &Path, text: &str) -> Vec<u8> {
    let language = ccbridge_protocol::language::language_id(&path.to_string_lossy());
    message::notification(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}),
    )
}

fn folders(root: &str) -> Value {
    let name = Path::new(root)
        .file_name()
        .map_or(root.into(), |n| n.to_string_lossy());
    json!([{"uri": message::file_uri(root), "name": name}])
}

fn initialize_params(root: &str, options: Option<Value>) -> Value {
    let mut params = json!({
        "processId": std::process::id(),
        "clientInfo": {"name": "ccbridge", "version": env!("CARGO_PKG_VERSION")},
        "rootPath": root,
        "rootUri": message::file_uri(root),
        "workspaceFolders": folders(root),
        "capabilities": {
            "textDocument": {
                "synchronization": {"dynamicRegistration": false, "didSave": false},
                "publishDiagnostics": {"relatedInformation": false, "versionSupport": true},
            },
            "workspace": {"workspaceFolders": true, "configuration": true},
            "window": {"workDoneProgress": false},
        },
    });
    if let Some(o) = options {
        params["initializationOptions"] = o;
    }
    params
}

type Spawned = (
    Process,
    tokio::process::ChildStdout,
    tokio::process::ChildStderr,
);

fn spawn(program: &Path, args: &[String], root: &Path) -> std::io::Result<Spawned> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    // A server installed beside its runtime (node_modules/.bin/node) runs
    // on that one.
    if let Some(dir) = program.parent() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::iter::once(dir.to_owned()).chain(std::env::split_paths(&path));
        if let Ok(joined) = std::env::join_paths(dirs) {
            cmd.env("PATH", joined);
        }
    }
    let mut child = cmd.spawn()?;
    let missing = || std::io::Error::other("a pipe of the child is missing");
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stderr = child.stderr.take().ok_or_else(missing)?;
    let pgid = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let (writes, rx) = mpsc::channel(WRITES);
    tokio::spawn(write_messages(stdin, rx));
    Ok((
        Process {
            child,
            pgid,
            writes,
        },
        stdout,
        stderr,
    ))
}

async fn write_messages(mut stdin: tokio::process::ChildStdin, mut rx: mpsc::Receiver<Vec<u8>>) {
    while let Some(body) = rx.recv().await {
        if stdin.write_all(&encode_frame(&body)).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
    }
}

async fn read_messages(
    stdout: impl tokio::io::AsyncRead + Unpin,
    key: Key,
    gen: u64,
    events: mpsc::Sender<Event>,
) {
    let mut frames = FrameReader::new(stdout);
    loop {
        let msg = match frames.read_frame().await {
            Ok(Some(Frame::Body(body))) => Incoming::parse(&body),
            Ok(Some(Frame::TooLarge { length, .. })) => {
                tracing::debug!("language server output: a message of {length} bytes, skipped");
                None
            }
            Err(e) if e.is_recoverable() => {
                tracing::debug!("language server output: {e}");
                None
            }
            Ok(None) | Err(_) => break,
        };
        if let Some(msg) = msg {
            let ev = Event::Message {
                key: key.clone(),
                gen,
                msg,
            };
            if events.send(ev).await.is_err() {
                return;
            }
        }
    }
    let _ = events.send(Event::Exited { key, gen }).await;
}

async fn log_stderr(mut stderr: tokio::process::ChildStderr, language: &'static str) {
    // Chunks, not lines: a server that never ends a line costs nothing.
    let mut buf = vec![0u8; 4096];
    while let Ok(n @ 1..) = stderr.read(&mut buf).await {
        let text = String::from_utf8_lossy(&buf[..n]);
        tracing::debug!("{language} language server: {}", text.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a language server prints that is not a message (a log line on
    /// stdout, a bad header, a body that is not JSON-RPC) costs only
    /// itself: the messages after it still arrive, and the end of its
    /// output is its exit.
    #[tokio::test]
    async fn a_language_servers_garbage_costs_only_itself() {
        let note = message::notification(
            "textDocument/publishDiagnostics",
            json!({"uri": "file:///w/a.py", "diagnostics": []}),
        );
        let mut out = b"Starting the server...\n".to_vec();
        out.extend_from_slice(b"Content-Length: nope\r\n\r\n{}");
        out.extend_from_slice(&encode_frame(&note));
        out.extend_from_slice(b"Content-Length: 2\r\n\r\n[]");
        out.extend_from_slice(&encode_frame(&note));
        let (tx, mut rx) = mpsc::channel(8);
        read_messages(&out[..], (0, PathBuf::from("/w")), 7, tx).await;
        let mut seen = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            seen.push(match ev {
                Event::Message {
                    gen: 7,
                    msg: Incoming::Notification { method, .. },
                    ..
                } => method,
                Event::Exited { gen: 7, .. } => "exited".to_owned(),
                _ => "something else".to_owned(),
            });
        }
        assert_eq!(
            seen,
            [
                "textDocument/publishDiagnostics",
                "textDocument/publishDiagnostics",
                "exited"
            ]
        );
    }

    /// A file given to the language servers is read only when it is a
    /// regular file of at most MAX_FILE bytes: a FIFO (which a blocking
    /// open would wait on forever, with no writer) is passed over at once.
    #[tokio::test]
    async fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("a.py");
        std::fs::write(&text, "x = 1\n").unwrap();
        assert_eq!(read(&text).await.as_deref(), Some("x = 1\n"));
        let fifo = dir.path().join("b.py");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        let fifo_read = tokio::time::timeout(std::time::Duration::from_secs(10), read(&fifo));
        assert_eq!(fifo_read.await.expect("a FIFO was waited on"), None);
        let big = dir.path().join("c.py");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_FILE + 1)
            .unwrap();
        assert_eq!(read(&big).await, None);
    }
}
