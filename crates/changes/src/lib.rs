//! The session review: every file changed in the workspace while ccbridge
//! runs, each as a diff against what it held before the first change, with
//! keep and revert per hunk and per file.
//!
//! Per-edit review (`openDiff`, the workspace tools' writes) sees only the
//! edits an agent asks about. An agent in auto mode, a `claude` started
//! elsewhere, or a command the agent ran writes files without asking; a
//! person then reviews afterwards, as in a pull request. So ccbridge
//! watches the workspace folders ([`watch`]), compares each changed file
//! with its content at the session's start ([`baseline`]) and keeps the
//! list: who changed it where ccbridge can know ([`Source`]: a review it
//! held, an agent's hook report) and "changed on disk" otherwise; hunks as
//! [`ccbridge_server::hunks`] defines them, each named by its position and
//! content ([`HunkKey`]) so a decision reaches that hunk only; "viewed"
//! marks; reverts written atomically through [`ccbridge_workspace`], refused
//! when the file changed since the reviewer saw it; and undo of reverts
//! until the agent changes something again.
//!
//! [`Changes::start`] runs the watcher on a thread of its own; the handle
//! is cheap to clone and every method is quick (file contents are read
//! and written outside the lock). Each change to the list bumps a revision
//! on [`Changes::subscribe`], for a page or an editor to fetch
//! [`Changes::view`] again.

pub mod baseline;
mod view;
pub mod watch;

pub use baseline::{Before, Shape};
pub use view::{ChangesView, FileStatus, FileView, HunkView};

use baseline::Baseline;
use ccbridge_server::hunks::{self, Hunk};
use ccbridge_workspace::{Expected, Workspace, WorkspaceError, NEW_FILE_MODE};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch as signal;

/// Largest file the review reads (bigger ones are listed as too large).
pub const MAX_FILE: u64 = 16 << 20;
/// How long the watcher waits for a burst of events to end.
const SETTLE: Duration = Duration::from_millis(100);
/// Longest a change waits to be listed during a continuous burst.
const MAX_DELAY: Duration = Duration::from_secs(1);

/// Who changed a file, as far as ccbridge can tell.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Source {
    /// A change the user accepted in a review ccbridge held (`openDiff`,
    /// a workspace tool's write), by that agent.
    Reviewed { agent: String },
    /// An agent reported the edit itself (Claude Code's hook: the tool and
    /// the file), without a review by ccbridge.
    Agent { agent: String, tool: String },
    /// Seen on disk only: anyone may have made it. `agents` are the
    /// agents connected to ccbridge when it was seen (Gemini CLI and Qwen
    /// Code in their auto-edit modes report nothing else), so a person can
    /// tell "while Gemini CLI ran" from a change with no agent around.
    Disk { agents: Vec<String> },
}

impl Source {
    fn is_disk(&self) -> bool {
        matches!(self, Source::Disk { .. })
    }
}

/// A file changed without a review ccbridge held ([`Changes::unreviewed_since`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreviewed {
    pub path: String,
    /// The agent that reported the change itself, if one did.
    pub by: Option<String>,
    /// Seen on disk: the agents connected to ccbridge when it was seen.
    pub connected: Vec<String>,
}

/// Tells the review which agents are connected (their names for people).
pub type RunningAgents = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// The agents connected to `engine`, by name, for
/// [`Changes::set_running_agents`]; does not keep the engine alive.
pub fn running_agents_of(engine: &ccbridge_server::EngineHandle) -> RunningAgents {
    let clients = engine.clients_later();
    Arc::new(move || {
        clients()
            .into_iter()
            .map(|c| c.agent.display_name().to_owned())
            .collect()
    })
}

/// Why a decision in the session review could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("{0} has no change in this session's review")]
    NoChange(String),
    #[error("{path} has no hunk {key} any more (the file changed; reload the review)")]
    NoHunk { path: String, key: String },
    #[error("{0} changed since the review showed it; reload the review and decide again")]
    Stale(String),
    #[error("{0}: its content before the session is not known, so it cannot be reverted")]
    UnknownBefore(String),
    #[error("{0} is too large or not text; only the whole file can be reverted")]
    NotText(String),
    #[error("{}: changed on disk since the review read it; nothing was written", .0.path)]
    Conflict(Box<Conflict>),
    #[error("nothing to undo")]
    NothingToUndo,
    #[error("{0} was a symbolic link at the start; ccbridge restores files only (`git checkout -- {0}` restores it)")]
    WasALink(String),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
}

/// A decision as the page (`POST /api/changes/{action}`) and the editor
/// protocol (`changeAction`) send it.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    #[serde(default)]
    pub path: Option<String>,
    /// One hunk's key; absent: the whole file.
    #[serde(default)]
    pub key: Option<String>,
    /// The file's version as the reviewer saw it.
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub viewed: Option<bool>,
}

/// Why a [`Decision`] was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("{0} is missing")]
    Missing(&'static str),
    #[error("unknown action {0:?}: keep, revert, viewed, keep-all, revert-all or undo")]
    UnknownAction(String),
    #[error(transparent)]
    Change(#[from] ChangeError),
}

/// The three versions of a file a revert would have overwritten: before
/// the session, as the review showed it, and on disk now (`None`: no file).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    pub path: String,
    pub before: Option<String>,
    pub shown: Option<String>,
    pub disk: Option<String>,
}

/// The name of one hunk for a decision: where it is and what it holds.
/// Identical hunks at different places have different keys.
pub type HunkKey = String;

fn hunk_key(before: &str, after: &str, h: &Hunk) -> HunkKey {
    format!(
        "{}-{}-{:016x}",
        h.old_start,
        h.old_lines,
        hunks::fingerprint(before, after, h)
    )
}

/// A version of a file's content, as the review names it: a hash of the
/// bytes (`-` for no file).
pub fn version_of(bytes: Option<&[u8]>) -> String {
    use std::hash::{Hash, Hasher};
    let Some(b) = bytes else {
        return "-".into();
    };
    let mut s = std::collections::hash_map::DefaultHasher::new();
    b.hash(&mut s);
    format!("{:016x}", s.finish())
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One changed file.
#[derive(Debug, Clone)]
struct Entry {
    before: Before,
    /// Now (`None`: removed).
    now: Option<Arc<[u8]>>,
    /// Larger than [`MAX_FILE`]: content not read.
    too_large: bool,
    sources: BTreeSet<Source>,
    kept: BTreeSet<HunkKey>,
    viewed: bool,
    changed_at: u64,
    /// The review's revision when `now` last changed (see
    /// [`Changes::changed_since`]).
    changed_rev: u64,
    /// `now`'s [`version_of`].
    version: String,
    /// The hunks between `before` and `now` with their keys, in order:
    /// computed once per change of `now`, not per view or decision (a
    /// view of a large file diffed it again on every call).
    hunks: Arc<[(Hunk, HunkKey)]>,
}

impl Entry {
    fn new(before: Before) -> Entry {
        Entry {
            before,
            now: None,
            too_large: false,
            sources: BTreeSet::new(),
            kept: BTreeSet::new(),
            viewed: false,
            changed_at: 0,
            changed_rev: 0,
            version: version_of(None),
            hunks: Arc::from([]),
        }
    }

    /// Sets what the file holds now (`version` its [`version_of`], which
    /// the caller has already computed), and what follows from it.
    fn set_now(&mut self, now: Option<Arc<[u8]>>, version: String, too_large: bool) {
        self.now = now;
        self.too_large = too_large;
        self.version = version;
        self.hunks = match self.texts() {
            Some((before, now)) => hunks::hunks(before, now)
                .into_iter()
                .map(|h| (h, hunk_key(before, now, &h)))
                .collect(),
            None => Arc::from([]),
        };
    }

    /// The keys of its hunks, in order.
    fn keys(&self) -> impl Iterator<Item = &HunkKey> {
        self.hunks.iter().map(|(_, k)| k)
    }

    fn before_bytes(&self) -> Option<&[u8]> {
        match &self.before {
            Before::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// Both sides as text, when they are.
    fn texts(&self) -> Option<(&str, &str)> {
        if self.too_large || matches!(self.before, Before::Unknown) {
            return None;
        }
        let before = std::str::from_utf8(self.before_bytes().unwrap_or(b"")).ok()?;
        let now = std::str::from_utf8(self.now.as_deref().unwrap_or(b"")).ok()?;
        (!before.contains('\0') && !now.contains('\0')).then_some((before, now))
    }
}

/// A revert that can be undone: the file held `from` and now holds `to`.
#[derive(Debug, Clone)]
struct Undo {
    path: String,
    from: Option<Arc<[u8]>>,
    to: Option<Arc<[u8]>>,
    /// The permission bits `from` is created again with, when the revert
    /// removed the file.
    mode: u32,
}

#[derive(Debug, Default)]
struct State {
    ready: bool,
    files: BTreeMap<String, Entry>,
    undo: Vec<Undo>,
    /// What ccbridge itself last wrote to a file (a revert, an undo):
    /// seen again on disk, it is not somebody else's change.
    own: HashMap<String, String>,
    /// Writes a review accepted, expected on disk: path → (version, source).
    expected: HashMap<String, (String, Source)>,
    /// Hook reports for files whose change was not seen yet.
    reported: HashMap<String, Source>,
    watched: usize,
    limit: Option<String>,
    /// Counts the changes of files' contents (see [`Entry::changed_rev`]).
    content_rev: u64,
}

struct Shared {
    state: Mutex<State>,
    workspace: Workspace,
    baseline: Mutex<Option<Arc<Baseline>>>,
    revision: signal::Sender<u64>,
    running: Mutex<Option<RunningAgents>>,
}

/// The session review of a set of workspace folders.
#[derive(Clone)]
pub struct Changes {
    shared: Arc<Shared>,
}

impl Changes {
    /// Starts reviewing `folders`: takes the baseline and watches them, on
    /// a thread that ends when the last handle is dropped.
    pub fn start(folders: &[PathBuf]) -> Result<Changes, WorkspaceError> {
        let workspace = Workspace::open(folders)?;
        let roots: Vec<PathBuf> = workspace.folders().map(Path::to_path_buf).collect();
        let shared = Arc::new(Shared {
            state: Mutex::default(),
            workspace,
            baseline: Mutex::new(None),
            revision: signal::channel(0).0,
            running: Mutex::new(None),
        });
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("ccbridge-changes".into())
            .spawn(move || watch_loop(weak, roots))
            .map_err(|error| WorkspaceError::Io {
                path: "the session review's watcher".into(),
                error,
            })?;
        Ok(Changes { shared })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How the review learns which agents are connected, for the changes
    /// it only sees on disk ([`Source::Disk`]).
    pub fn set_running_agents(&self, running: RunningAgents) {
        *self
            .shared
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(running);
    }

    /// The agents connected now, sorted, each once: the `agents` of a
    /// change seen on disk now. Asked outside the state's lock: the answer
    /// comes from the engine's sessions.
    fn running_agents(&self) -> Vec<String> {
        let running = self
            .shared
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut agents = running.map_or_else(Vec::new, |f| f());
        agents.sort();
        agents.dedup();
        agents
    }

    /// A revision that changes with every change to the review.
    pub fn subscribe(&self) -> signal::Receiver<u64> {
        self.shared.revision.subscribe()
    }

    fn bump(&self) {
        self.shared.revision.send_modify(|r| *r += 1);
    }

    /// Whether the baseline is taken and the folders are watched.
    pub fn ready(&self) -> bool {
        self.lock().ready
    }

    /// The review as a page or an editor shows it.
    pub fn view(&self) -> ChangesView {
        let s = self.lock();
        view::build(
            &s.files,
            s.ready,
            !s.undo.is_empty(),
            s.watched,
            s.limit.clone(),
        )
    }

    /// The files whose content changed after `rev` (0: every file listed),
    /// and the revision to ask from next time: a follower (the language
    /// servers) looks at what changed, not at the whole list again.
    pub fn changed_since(&self, rev: u64) -> (u64, Vec<String>) {
        let s = self.lock();
        let paths = s
            .files
            .iter()
            .filter(|(_, e)| e.changed_rev > rev)
            .map(|(p, _)| p.clone())
            .collect();
        (s.content_rev, paths)
    }

    /// The files whose content changed after `rev` without a review
    /// ccbridge held, and the revision to ask from next time: the page's
    /// history says "Claude Code changed db.rs without a review", or "db.rs
    /// changed on disk while Gemini CLI was connected".
    pub fn unreviewed_since(&self, rev: u64) -> (u64, Vec<Unreviewed>) {
        let s = self.lock();
        let files = s
            .files
            .iter()
            .filter(|(_, e)| e.changed_rev > rev)
            .filter(|(_, e)| {
                !e.sources
                    .iter()
                    .any(|s| matches!(s, Source::Reviewed { .. }))
            })
            .map(|(p, e)| {
                let by = e.sources.iter().find_map(|s| match s {
                    Source::Agent { agent, .. } => Some(agent.clone()),
                    _ => None,
                });
                let mut connected: Vec<String> = Vec::new();
                for s in &e.sources {
                    if let Source::Disk { agents } = s {
                        for a in agents {
                            if !connected.contains(a) {
                                connected.push(a.clone());
                            }
                        }
                    }
                }
                Unreviewed {
                    path: p.clone(),
                    by,
                    connected,
                }
            })
            .collect();
        (s.content_rev, files)
    }

    /// Says that a write of `bytes` to `path` was accepted in a review by
    /// `agent`: seen on disk, the change is marked reviewed, its hunks kept.
    pub fn expect_reviewed(&self, path: &str, bytes: &[u8], agent: &str) {
        self.expect_reviewed_version(path, version_of(Some(bytes)), agent);
    }

    /// [`Self::expect_reviewed`], by the text's [`version_of`].
    pub fn expect_reviewed_version(&self, path: &str, version: String, agent: &str) {
        let source = Source::Reviewed {
            agent: agent.to_owned(),
        };
        self.lock()
            .expected
            .insert(path.to_owned(), (version, source));
    }

    /// Says that `agent` edited `path` with `tool` (Claude Code's hook).
    pub fn reported(&self, path: &str, agent: &str, tool: &str) {
        let source = Source::Agent {
            agent: agent.to_owned(),
            tool: tool.to_owned(),
        };
        let mut s = self.lock();
        match s.files.get_mut(path) {
            Some(e) => {
                e.sources.retain(|s| !s.is_disk());
                e.sources.insert(source);
            }
            None => {
                s.reported.insert(path.to_owned(), source);
            }
        }
        drop(s);
        self.bump();
    }

    /// Marks `path` viewed (or not).
    pub fn set_viewed(&self, path: &str, viewed: bool) -> Result<(), ChangeError> {
        let mut s = self.lock();
        let e = s
            .files
            .get_mut(path)
            .ok_or_else(|| ChangeError::NoChange(path.to_owned()))?;
        e.viewed = viewed;
        drop(s);
        self.bump();
        Ok(())
    }

    /// Keeps one hunk of `path` (or, with `key` None, the whole file: all
    /// its hunks, and viewed). Keeping changes no file.
    pub fn keep(&self, path: &str, key: Option<&str>, version: &str) -> Result<(), ChangeError> {
        let mut s = self.lock();
        let e = s
            .files
            .get_mut(path)
            .ok_or_else(|| ChangeError::NoChange(path.to_owned()))?;
        if e.version != version {
            return Err(ChangeError::Stale(path.to_owned()));
        }
        match key {
            Some(k) if e.keys().any(|x| x == k) => {
                e.kept.insert(k.to_owned());
            }
            Some(k) => {
                return Err(ChangeError::NoHunk {
                    path: path.to_owned(),
                    key: k.to_owned(),
                })
            }
            None => {
                let keys: Vec<HunkKey> = e.keys().cloned().collect();
                e.kept.extend(keys);
                e.viewed = true;
            }
        }
        drop(s);
        self.bump();
        Ok(())
    }

    /// Carries out `action` (`keep`, `revert`, `viewed`, `keep-all` or
    /// `keepAll`, `revert-all` or `revertAll`, `undo`) with `d`; for
    /// `revert-all`, the messages of the files that could not be reverted.
    /// Reads and writes files: call it off the async threads.
    pub fn decide(&self, action: &str, d: Decision) -> Result<Vec<String>, DecideError> {
        let need = |v: Option<String>, what| v.ok_or(DecideError::Missing(what));
        match action {
            "keep" => self.keep(
                &need(d.path, "path")?,
                d.key.as_deref(),
                &need(d.version, "version")?,
            )?,
            "revert" => self.revert(
                &need(d.path, "path")?,
                d.key.as_deref(),
                &need(d.version, "version")?,
            )?,
            "viewed" => self.set_viewed(&need(d.path, "path")?, d.viewed.unwrap_or(true))?,
            "keep-all" | "keepAll" => self.keep_all(),
            "revert-all" | "revertAll" => {
                return Ok(self.revert_all().iter().map(ToString::to_string).collect())
            }
            "undo" => self.undo()?,
            other => return Err(DecideError::UnknownAction(other.to_owned())),
        }
        Ok(Vec::new())
    }

    /// Keeps everything listed.
    pub fn keep_all(&self) {
        let mut s = self.lock();
        for e in s.files.values_mut() {
            let keys: Vec<HunkKey> = e.keys().cloned().collect();
            e.kept.extend(keys);
            e.viewed = true;
        }
        drop(s);
        self.bump();
    }

    /// Reverts one hunk of `path` (or, with `key` None, the whole file) to
    /// its content before the session, if the file still holds `version`.
    pub fn revert(&self, path: &str, key: Option<&str>, version: &str) -> Result<(), ChangeError> {
        let (now, to) = {
            let s = self.lock();
            let e = s
                .files
                .get(path)
                .ok_or_else(|| ChangeError::NoChange(path.to_owned()))?;
            if e.version != version {
                return Err(ChangeError::Stale(path.to_owned()));
            }
            let to: Option<Vec<u8>> = match key {
                None => match &e.before {
                    Before::Unknown => return Err(ChangeError::UnknownBefore(path.to_owned())),
                    Before::Absent => None,
                    Before::Bytes(b) => Some(b.clone()),
                },
                Some(k) => {
                    let (before, now) = e
                        .texts()
                        .ok_or_else(|| ChangeError::NotText(path.to_owned()))?;
                    let i = e
                        .keys()
                        .position(|x| x == k)
                        .ok_or_else(|| ChangeError::NoHunk {
                            path: path.to_owned(),
                            key: k.to_owned(),
                        })?;
                    let hs: Vec<Hunk> = e.hunks.iter().map(|(h, _)| *h).collect();
                    let keep: Vec<bool> = (0..hs.len()).map(|j| j != i).collect();
                    let text = hunks::apply(before, now, &hs, &keep);
                    // Undoing the only hunk of a created file leaves it
                    // empty, not gone: only the whole-file revert removes.
                    Some(text.into_bytes())
                }
            };
            (e.now.clone(), to)
        };
        // A file deleted since the start comes back as it was.
        let mode = match (&now, &to) {
            (None, Some(_)) => match self.shape_at_start(path) {
                Shape::File(mode) => mode,
                Shape::Link => return Err(ChangeError::WasALink(path.to_owned())),
            },
            _ => NEW_FILE_MODE,
        };
        self.write(path, now.clone(), to.map(Arc::from), mode)?;
        Ok(())
    }

    /// Reverts every file listed; the ones that could not be are named in
    /// the errors.
    pub fn revert_all(&self) -> Vec<ChangeError> {
        let files: Vec<(String, String)> = self
            .lock()
            .files
            .iter()
            .filter(|(_, e)| !matches!(e.before, Before::Unknown))
            .map(|(p, e)| (p.clone(), e.version.clone()))
            .collect();
        files
            .into_iter()
            .filter_map(|(p, v)| self.revert(&p, None, &v).err())
            .collect()
    }

    /// Undoes the last revert, if the file still holds what it wrote.
    pub fn undo(&self) -> Result<(), ChangeError> {
        let u = self.lock().undo.pop().ok_or(ChangeError::NothingToUndo)?;
        match self.write_raw(&u.path, u.to.clone(), u.from.clone(), u.mode) {
            Ok(_) => {
                // The file is back to what the agent left: listed again.
                self.refresh(&u.path, u.from, true);
                Ok(())
            }
            Err(e) => {
                self.lock().undo.push(u);
                Err(e)
            }
        }
    }

    /// Writes `to` over `path` (which holds `from`; a file created gets
    /// `mode`), records it for undo and updates the entry at once.
    fn write(
        &self,
        path: &str,
        from: Option<Arc<[u8]>>,
        to: Option<Arc<[u8]>>,
        mode: u32,
    ) -> Result<(), ChangeError> {
        let removed = self.write_raw(path, from.clone(), to.clone(), mode)?;
        self.lock().undo.push(Undo {
            path: path.to_owned(),
            from,
            to: to.clone(),
            mode: removed.unwrap_or(NEW_FILE_MODE),
        });
        self.refresh(path, to, true);
        Ok(())
    }

    /// Writes `to` over `path` (`None`: removes it); a file created gets
    /// `mode`. Returns a removed file's permission bits.
    fn write_raw(
        &self,
        path: &str,
        from: Option<Arc<[u8]>>,
        to: Option<Arc<[u8]>>,
        mode: u32,
    ) -> Result<Option<u32>, ChangeError> {
        let expected = match &from {
            Some(b) => Expected::Bytes(b),
            None => Expected::Absent,
        };
        self.lock()
            .own
            .insert(path.to_owned(), version_of(to.as_deref()));
        let ws = &self.shared.workspace;
        let result = match &to {
            Some(bytes) => ws
                .replace_creating(path, bytes, expected, mode)
                .map(|_| None),
            None => ws.remove(path, expected).map(Some),
        };
        match result {
            Ok(removed) => Ok(removed),
            Err(WorkspaceError::Changed(_)) => {
                let before = self
                    .lock()
                    .files
                    .get(path)
                    .and_then(|e| e.before_bytes().map(lossy));
                let disk = match read(ws, path) {
                    Read::Bytes(b) => Some(lossy(&b)),
                    _ => None,
                };
                Err(ChangeError::Conflict(Box::new(Conflict {
                    path: path.to_owned(),
                    before,
                    shown: from.as_deref().map(lossy),
                    disk,
                })))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Brings `path`'s entry up to date with `now` (what it holds now).
    /// `ours`: ccbridge wrote it (not an agent's change).
    fn refresh(&self, path: &str, now: Option<Arc<[u8]>>, ours: bool) {
        // Read outside the lock: it may ask git, or the engine.
        let before = (!self.lock().files.contains_key(path)).then(|| self.before_start(path));
        let mut running = self.running_agents();
        let mut s = self.lock();
        let version = version_of(now.as_deref());
        let ours = ours || s.own.get(path) == Some(&version);
        if !ours {
            // The agent (or someone) changed something: reverts before
            // this point can no longer be undone safely.
            s.undo.retain(|u| u.path != path);
        }
        let expected = s.expected.get(path).filter(|(v, _)| *v == version).cloned();
        let reported = s.reported.remove(path);
        let mut e = s
            .files
            .remove(path)
            .unwrap_or_else(|| Entry::new(before.unwrap_or_else(|| self.before_start(path))));
        let unchanged = match (&e.before, &now) {
            (Before::Absent, None) => true,
            (Before::Bytes(b), Some(n)) => b[..] == n[..],
            _ => false,
        };
        if unchanged {
            drop(s);
            self.bump();
            return;
        }
        // A new entry (`changed_rev` 0) is always a change, even to the
        // version it started with (a deleted file: no file, as before).
        let changed = e.version != version || e.too_large || e.changed_rev == 0;
        if changed {
            e.set_now(now, version, false);
            e.changed_at = now_ms();
            s.content_rev += 1;
            e.changed_rev = s.content_rev;
            if !ours {
                e.viewed = false;
            }
        }
        if let Some((_, source)) = expected {
            let keys: Vec<HunkKey> = e.keys().cloned().collect();
            e.kept.extend(keys);
            e.sources.retain(|s| !s.is_disk());
            e.sources.insert(source);
        } else if let Some(source) = reported {
            e.sources.retain(|s| !s.is_disk());
            e.sources.insert(source);
        } else if !ours && changed && e.sources.iter().all(Source::is_disk) {
            // One disk source, naming every agent seen connected at its
            // changes.
            for s in std::mem::take(&mut e.sources) {
                if let Source::Disk { agents } = s {
                    running.extend(agents);
                }
            }
            running.sort();
            running.dedup();
            e.sources.insert(Source::Disk { agents: running });
        }
        // Keys of hunks that no longer exist are forgotten.
        let keys: std::collections::HashSet<&HunkKey> = e.hunks.iter().map(|(_, k)| k).collect();
        e.kept.retain(|k| keys.contains(k));
        s.files.insert(path.to_owned(), e);
        drop(s);
        self.bump();
    }

    /// What `path` held when the session began (unknown until the
    /// baseline is taken).
    fn before_start(&self, path: &str) -> Before {
        self.baseline()
            .map_or(Before::Unknown, |b| b.before(Path::new(path)))
    }

    /// What `path`, there at the start, is created again as.
    fn shape_at_start(&self, path: &str) -> Shape {
        self.baseline()
            .map_or(Shape::File(NEW_FILE_MODE), |b| b.shape(Path::new(path)))
    }

    /// The baseline, once taken (asked outside the lock: it may run git).
    fn baseline(&self) -> Option<Arc<Baseline>> {
        self.shared
            .baseline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Records that `path` is larger than the review reads.
    fn too_large(&self, path: &str) {
        let before = self.before_start(path);
        let agents = self.running_agents();
        let mut s = self.lock();
        s.content_rev += 1;
        let rev = s.content_rev;
        let e = s.files.entry(path.to_owned()).or_insert_with(|| {
            let mut e = Entry::new(before);
            e.sources.insert(Source::Disk { agents });
            e.changed_at = now_ms();
            e
        });
        e.set_now(None, version_of(None), true);
        e.changed_rev = rev;
        drop(s);
        self.bump();
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(256 << 10)]).into_owned()
}

/// What a file holds now, as the review reads it.
enum Read {
    Bytes(Vec<u8>),
    /// No file there.
    Gone,
    /// Larger than [`MAX_FILE`].
    TooLarge,
    /// Not a regular file, or unreadable: not part of the review.
    Skip,
}

fn read(ws: &Workspace, path: &str) -> Read {
    use std::io::Read as _;
    match ws.open_file(path) {
        Ok(f) if f.size > MAX_FILE => Read::TooLarge,
        Ok(f) => {
            let mut b = Vec::with_capacity(f.size as usize);
            match f.file.take(MAX_FILE + 1).read_to_end(&mut b) {
                Ok(n) if n as u64 <= MAX_FILE => Read::Bytes(b),
                Ok(_) => Read::TooLarge,
                Err(_) => Read::Skip,
            }
        }
        Err(WorkspaceError::NotFound(_)) => Read::Gone,
        Err(_) => Read::Skip,
    }
}

fn watch_loop(shared: Weak<Shared>, roots: Vec<PathBuf>) {
    // Git's part of the baseline and the watcher's walk each take about
    // as long on a large tree: side by side, not one after the other.
    let git = {
        let roots = roots.clone();
        std::thread::Builder::new()
            .name("ccbridge-baseline".into())
            .spawn(move || Baseline::of_git(&roots))
    };
    let (mut watcher, files) = match watch::Watcher::start(&roots) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("the session review cannot watch the workspace: {e}");
            if let Some(sh) = shared.upgrade() {
                let mut s = sh.state.lock().unwrap_or_else(|p| p.into_inner());
                s.ready = true;
                s.limit = Some(format!("cannot watch the workspace: {e}"));
            }
            return;
        }
    };
    let baseline = match git.map(|t| t.join()) {
        Ok(Ok((mut b, plain))) => {
            b.copy_files(&plain, &files);
            b
        }
        // No thread (or it panicked): taken here instead.
        _ => Baseline::take(&roots, &files),
    };
    let baseline = Arc::new(baseline);
    drop(files);
    {
        let Some(sh) = shared.upgrade() else { return };
        *sh.baseline.lock().unwrap_or_else(|p| p.into_inner()) = Some(baseline);
        let mut s = sh.state.lock().unwrap_or_else(|p| p.into_inner());
        s.ready = true;
        s.watched = watcher.watched();
        s.limit = watcher.limit().map(str::to_owned);
        drop(s);
        sh.revision.send_modify(|r| *r += 1);
    }
    let mut pending: BTreeSet<PathBuf> = BTreeSet::new();
    let mut first: Option<Instant> = None;
    loop {
        let heard = match watcher.wait(if pending.is_empty() {
            Duration::from_millis(500)
        } else {
            SETTLE
        }) {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!("the session review stopped watching: {e}");
                return;
            }
        };
        let Some(sh) = shared.upgrade() else { return };
        let quiet = heard.files.is_empty();
        if heard.overflow {
            tracing::warn!("the session review missed file events (too many at once)");
            let mut s = sh.state.lock().unwrap_or_else(|p| p.into_inner());
            s.limit.get_or_insert_with(|| {
                "some file events were lost (too many at once); changes may be missing".into()
            });
        }
        if !heard.files.is_empty() {
            first.get_or_insert_with(Instant::now);
            pending.extend(heard.files);
        }
        let due = first.is_some_and(|t| t.elapsed() >= MAX_DELAY);
        if !pending.is_empty() && (quiet || due) {
            let changes = Changes { shared: sh };
            for p in std::mem::take(&mut pending) {
                let Some(path) = p.to_str() else { continue };
                match read(&changes.shared.workspace, path) {
                    Read::Bytes(b) => changes.refresh(path, Some(Arc::from(b)), false),
                    Read::Gone => changes.refresh(path, None, false),
                    Read::TooLarge => changes.too_large(path),
                    Read::Skip => {}
                }
            }
            {
                let mut s = changes.lock();
                s.watched = watcher.watched();
                if s.limit.is_none() {
                    s.limit = watcher.limit().map(str::to_owned);
                }
            }
            first = None;
        }
    }
}

#[cfg(test)]
mod tests;
