//! A command's process group dies with the ccbridge that started it, even
//! one killed with `kill -9`, and what an
//! earlier, killed ccbridge left behind is swept at the next start.
//!
//! # The watcher
//!
//! Every command's group is led by a watcher: a `/bin/sh` running
//! `read r; kill -s KILL 0`, its stdin one end of a socket pair whose other
//! end only ccbridge holds (close-on-exec, so no other child keeps it). The
//! command's shell joins the watcher's group. However ccbridge ends —
//! returning, panicking, `kill -9`, the OOM killer — the kernel closes its
//! end, `read` sees the end of input, and the watcher kills its own group:
//! the command, its children and their children, started in the background
//! or not, whatever thread of ccbridge spawned them. When the command's
//! shell exits normally, what is left in the group was started in the
//! background on purpose and is left alone: ccbridge kills the watcher
//! alone (`release`), and nothing watches the group any more. The watcher
//! ignores `SIGHUP`, `SIGINT`, `SIGQUIT` and `SIGTERM`, so a command's
//! `kill 0` does not disarm it.
//!
//! Why not `PR_SET_PDEATHSIG` in the child: it fires when the *thread* that
//! forked the child exits, not the process, and tokio spawns from worker
//! threads or from blocking-pool threads that exit after idling (which
//! would kill a running command early); a library embedded in another
//! program cannot promise a thread that lives as long as the process. And
//! it signals the one child only: `sleep 1000 & sleep 1000` would leave
//! both sleeps running. A subreaper does not help either: it is ccbridge
//! itself, and it is ccbridge that died. The watcher needs neither a
//! long-lived thread nor re-executing ccbridge's own binary (the library
//! may be embedded by another one): a plain `sh` and the kernel closing a
//! dead process's descriptors. And since ccbridge reaps the watcher only
//! after it has finished with the group, the group's id (the watcher's
//! pid) cannot be reused meanwhile: killing the group on timeout or
//! cancellation never reaches someone else's processes.
//!
//! # The sweep (Linux)
//!
//! What the watcher cannot reach: processes that left the group (`setsid`,
//! a daemon's double fork), and a group whose watcher was stopped or killed
//! by the command itself. So every process of a run carries, in its
//! environment (inherited by its descendants), [`MARKER`] naming the run:
//! the owning ccbridge (its pid, the start time of that pid from
//! `/proc/<pid>/stat`, and the boot id, so a reused pid or a reboot never
//! passes for it) and the run's number. Nothing secret: the command's
//! environment is otherwise scrubbed of ccbridge's variables. And while a
//! command runs, an empty file `<owner>/<run>` exists under
//! `$XDG_STATE_HOME/ccbridge/runs` (default `~/.local/state`, mode 0700),
//! removed when the run ends, however it ends, as long as ccbridge lives
//! (with the owner's folder once empty: a ccbridge that was not killed
//! leaves nothing there).
//!
//! [`sweep_leftovers`], called when the tools server starts (off the async
//! threads), looks for owners in that folder that no longer run; only if
//! one of them left a run file does it scan `/proc` for processes of the
//! same user whose environment names one of those runs, and kill them
//! (through a pidfd opened before the environment is read, so a pid
//! reused in between is never hit). Then the dead owners' folders go. A
//! command's background processes from a run that ended normally have no
//! run file any more and are left alone, as they are while ccbridge runs;
//! so is everything without the marker, or naming a live owner. The scan
//! is bounded (a few passes, for processes forked while it ran) and reads
//! each environment up to a cap. A process that cleared its environment
//! (`env -i`) and left the group is out of reach.
//!
//! # Other systems
//!
//! The watcher is plain POSIX (`sh`, `read`, `kill 0`) and works on every
//! Unix. The marker, the run files and the sweep read `/proc` and are
//! Linux-only; elsewhere [`sweep_leftovers`] does nothing and a process
//! that left the group outlives a killed ccbridge.

use std::io;
use std::os::fd::OwnedFd;
use std::process::Stdio;

/// The environment variable naming a command's run, `<owner>/<run>` (Linux).
pub const MARKER: &str = "CCBRIDGE_RUN";

/// The watcher: waits for ccbridge's end of the socket to close, then
/// kills its own group.
const WATCHER: &str = "trap '' HUP INT QUIT TERM; read r; kill -s KILL 0";

/// A command's process group, led by its watcher. Dropping it kills the
/// whole group, unless [`Watched::release`]d first.
pub(crate) struct Watched {
    /// The group's leader; its pid is the group's id. Unreaped until this
    /// is dropped, which keeps the id from being reused.
    watcher: tokio::process::Child,
    pgid: rustix::process::Pid,
    /// ccbridge's end of the socket pair: closed, the group dies.
    _alive: OwnedFd,
    /// The group was killed, or released: nothing more to do.
    done: bool,
    #[cfg(target_os = "linux")]
    run: Option<linux::RunFile>,
    marker: Option<String>,
}

impl Watched {
    /// Starts the watcher of a new group (before the command, so there is
    /// no moment when the command runs unwatched).
    pub(crate) fn start() -> io::Result<Watched> {
        #[cfg(target_os = "linux")]
        let (marker, run) = linux::new_run();
        #[cfg(not(target_os = "linux"))]
        let marker: Option<String> = None;
        let (alive, watched_end) = std::os::unix::net::UnixStream::pair()?;
        let mut cmd = tokio::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(WATCHER)
            .env_clear()
            .stdin(Stdio::from(OwnedFd::from(watched_end)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        if let Some(m) = &marker {
            cmd.env(MARKER, m);
        }
        let watcher = cmd.spawn()?;
        // Our copy of the watcher's end goes with the command.
        drop(cmd);
        let pgid = watcher
            .id()
            .and_then(|id| rustix::process::Pid::from_raw(id as i32))
            .ok_or_else(|| io::Error::other("the command's watcher exited at once"))?;
        Ok(Watched {
            watcher,
            pgid,
            _alive: OwnedFd::from(alive),
            done: false,
            #[cfg(target_os = "linux")]
            run,
            marker,
        })
    }

    /// The group the command joins.
    pub(crate) fn pgid(&self) -> i32 {
        self.pgid.as_raw_nonzero().get()
    }

    /// The value of [`MARKER`] for the command's environment (Linux).
    pub(crate) fn marker(&self) -> Option<&str> {
        self.marker.as_deref()
    }

    /// Kills every process of the group (timeout, cancellation).
    pub(crate) fn kill(&mut self) {
        if !self.done {
            self.done = true;
            let _ = rustix::process::kill_process_group(self.pgid, rustix::process::Signal::KILL);
        }
    }

    /// The command's shell has exited: what is left in the group was
    /// started in the background on purpose and is left alone from now on,
    /// even when ccbridge dies. The watcher alone is stopped.
    pub(crate) fn release(mut self) {
        #[cfg(target_os = "linux")]
        drop(self.run.take());
        if !self.done {
            self.done = true;
            let _ = self.watcher.start_kill();
        }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        // Before the fields go: the run file, and the watcher (to be
        // reaped), which keeps the group's id ours until then.
        self.kill();
    }
}

/// What a sweep found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Earlier ccbridge processes, no longer running, whose runs were
    /// looked for.
    pub dead_owners: usize,
    /// Processes killed.
    pub killed: usize,
}

/// Kills what the commands of earlier, killed ccbridge processes left
/// running (see the module doc). Blocking (it reads `/proc`): call it off
/// the async threads. Does nothing but on Linux, or without a state folder
/// (no `HOME` nor `XDG_STATE_HOME`).
pub fn sweep_leftovers() -> io::Result<Swept> {
    #[cfg(target_os = "linux")]
    if let Some(runs) = linux::Runs::from_env() {
        return runs.sweep();
    }
    Ok(Swept::default())
}

#[cfg(target_os = "linux")]
pub use linux::{Owner, RunFile, Runs};

#[cfg(target_os = "linux")]
mod linux {
    use super::{Swept, MARKER};
    use rustix::process::{Pid, PidfdFlags, Signal};
    use std::collections::{HashMap, HashSet};
    use std::fs;
    use std::io::{self, Read};
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    /// How much of a process's environment is read.
    const ENVIRON_CAP: u64 = 4 << 20;
    /// Scans of `/proc` at most (a leftover may fork while one runs).
    const PASSES: usize = 4;

    /// A ccbridge process, told apart from any later one with its pid.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct Owner {
        pub pid: i32,
        /// Field 22 of `/proc/<pid>/stat` (clock ticks after boot).
        pub start_time: u64,
        /// `/proc/sys/kernel/random/boot_id`.
        pub boot_id: String,
    }

    impl Owner {
        /// The process `pid` as it runs now.
        pub fn of(pid: i32) -> io::Result<Owner> {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
            // The command name, in parentheses, may hold anything; the
            // fields after its last `)` start at field 3.
            let after = stat
                .rfind(')')
                .map(|i| &stat[i + 1..])
                .ok_or_else(|| io::Error::other("unreadable /proc stat"))?;
            let start_time = after
                .split_whitespace()
                .nth(19)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| io::Error::other("unreadable /proc stat"))?;
            Ok(Owner {
                pid,
                start_time,
                boot_id: boot_id()?.to_owned(),
            })
        }

        /// This process (`None` when `/proc` cannot tell).
        pub fn current() -> Option<&'static Owner> {
            static ME: OnceLock<Option<Owner>> = OnceLock::new();
            ME.get_or_init(|| Owner::of(std::process::id() as i32).ok())
                .as_ref()
        }

        /// Whether this process still runs (not a later one with its pid).
        pub fn is_running(&self) -> bool {
            Owner::of(self.pid).is_ok_and(|now| now == *self)
        }

        /// [`MARKER`]'s value for run `run` of this owner.
        pub fn marker(&self, run: u64) -> String {
            format!("{self}/{run}")
        }
    }

    impl std::fmt::Display for Owner {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}.{}.{}", self.pid, self.start_time, self.boot_id)
        }
    }

    impl std::str::FromStr for Owner {
        type Err = ();
        fn from_str(s: &str) -> Result<Owner, ()> {
            let mut parts = s.splitn(3, '.');
            let pid = parts.next().and_then(|p| p.parse().ok()).ok_or(())?;
            let start_time = parts.next().and_then(|p| p.parse().ok()).ok_or(())?;
            let boot_id = parts.next().filter(|b| !b.is_empty()).ok_or(())?;
            if boot_id.contains('/') {
                return Err(());
            }
            Ok(Owner {
                pid,
                start_time,
                boot_id: boot_id.to_owned(),
            })
        }
    }

    fn boot_id() -> io::Result<&'static str> {
        static BOOT: OnceLock<Option<String>> = OnceLock::new();
        BOOT.get_or_init(|| {
            fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
        })
        .as_deref()
        .ok_or_else(|| io::Error::other("no boot id"))
    }

    /// A marker's owner and run.
    fn parse_marker(value: &str) -> Option<(&str, u64)> {
        let (owner, run) = value.rsplit_once('/')?;
        Some((owner, run.parse().ok()?))
    }

    /// The folder of run files: `<owner>/<run>`, one per command running.
    #[derive(Debug, Clone)]
    pub struct Runs {
        root: PathBuf,
    }

    /// A run's file, removed when dropped.
    #[derive(Debug)]
    pub struct RunFile(PathBuf);

    impl RunFile {
        /// Leaves the file in place, as a killed ccbridge does.
        pub fn keep(self) {
            std::mem::forget(self);
        }
    }

    impl Drop for RunFile {
        fn drop(&mut self) {
            let _ = fs::remove_file(&self.0);
            // The owner's folder too, once empty (a run starting meanwhile
            // makes it again: `register`).
            if let Some(dir) = self.0.parent() {
                let _ = fs::remove_dir(dir);
            }
        }
    }

    impl Runs {
        pub fn at(root: impl Into<PathBuf>) -> Runs {
            Runs { root: root.into() }
        }

        /// `$XDG_STATE_HOME/ccbridge/runs`, or `~/.local/state/...`.
        pub fn from_env() -> Option<Runs> {
            let absolute = |k: &str| {
                std::env::var_os(k)
                    .map(PathBuf::from)
                    .filter(|p| p.is_absolute())
            };
            let state = absolute("XDG_STATE_HOME")
                .or_else(|| absolute("HOME").map(|h| h.join(".local").join("state")))?;
            Some(Runs::at(state.join("ccbridge").join("runs")))
        }

        pub fn root(&self) -> &Path {
            &self.root
        }

        /// Records that `owner`'s run `run` is under way.
        pub fn register(&self, owner: &Owner, run: u64) -> io::Result<RunFile> {
            let dir = self.root.join(owner.to_string());
            let path = dir.join(run.to_string());
            let mut tries = 0;
            loop {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&dir)?;
                match fs::File::create(&path) {
                    Ok(_) => return Ok(RunFile(path)),
                    // The folder went with the last run of this owner
                    // between the two steps.
                    Err(e) if e.kind() == io::ErrorKind::NotFound && tries < 3 => tries += 1,
                    Err(e) => return Err(e),
                }
            }
        }

        /// Kills the processes of runs whose owner no longer runs; removes
        /// those owners' folders.
        pub fn sweep(&self) -> io::Result<Swept> {
            let entries = match fs::read_dir(&self.root) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Swept::default()),
                Err(e) => return Err(e),
            };
            let me = Owner::current();
            let mut dead: HashMap<String, (PathBuf, HashSet<u64>)> = HashMap::new();
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                let Ok(owner) = name.parse::<Owner>() else {
                    continue;
                };
                if Some(&owner) == me || owner.is_running() {
                    continue;
                }
                let runs = fs::read_dir(entry.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter_map(|f| f.file_name().to_str()?.parse().ok())
                    .collect();
                dead.insert(name.to_owned(), (entry.path(), runs));
            }
            let mut swept = Swept {
                dead_owners: dead.len(),
                killed: 0,
            };
            if dead.values().any(|(_, runs)| !runs.is_empty()) {
                let doomed = |owner: &str, run: u64| {
                    dead.get(owner).is_some_and(|(_, runs)| runs.contains(&run))
                };
                // A process killed stays in `/proc` until it has exited:
                // each is signalled, and counted, once.
                let mut signalled = HashSet::new();
                for _ in 0..PASSES {
                    let killed = kill_marked(&doomed, &mut signalled);
                    swept.killed += killed;
                    if killed == 0 {
                        break;
                    }
                }
            }
            for (dir, _) in dead.values() {
                let _ = fs::remove_dir_all(dir);
            }
            Ok(swept)
        }
    }

    /// A new run of this process: its marker and its run file (either
    /// `None` when `/proc` or the state folder cannot be used; the command
    /// still runs, watched, and only the sweep will not know of it).
    pub(super) fn new_run() -> (Option<String>, Option<RunFile>) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let Some(owner) = Owner::current() else {
            return (None, None);
        };
        let run = NEXT.fetch_add(1, Ordering::Relaxed);
        let file = Runs::from_env().and_then(|r| r.register(owner, run).ok());
        (Some(owner.marker(run)), file)
    }

    /// One scan of `/proc`: kills this user's processes whose marker
    /// `doomed` names, but those in `signalled` (pid and start time), where
    /// it adds them. Returns how many.
    fn kill_marked(
        doomed: &dyn Fn(&str, u64) -> bool,
        signalled: &mut HashSet<(i32, u64)>,
    ) -> usize {
        let uid = rustix::process::geteuid().as_raw();
        let me = std::process::id();
        let Ok(procs) = fs::read_dir("/proc") else {
            return 0;
        };
        let mut killed = 0;
        for entry in procs.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me || !entry.metadata().is_ok_and(|m| m.uid() == uid) {
                continue;
            }
            let Some(p) = Pid::from_raw(pid as i32) else {
                continue;
            };
            // Opened first: if the process ends and its pid is reused
            // before the signal, the signal fails instead of hitting the
            // newcomer. (Kernels before 5.3 have no pidfd: by pid then.)
            let pidfd = match rustix::process::pidfd_open(p, PidfdFlags::empty()) {
                Ok(fd) => Some(fd),
                Err(rustix::io::Errno::SRCH) => continue,
                Err(_) => None,
            };
            let Some(marker) = marker_of(pid) else {
                continue;
            };
            let Some((owner, run)) = parse_marker(&marker) else {
                continue;
            };
            if !doomed(owner, run) {
                continue;
            }
            let Ok(now) = Owner::of(p.as_raw_nonzero().get()) else {
                continue;
            };
            if !signalled.insert((now.pid, now.start_time)) {
                continue;
            }
            let sent = match &pidfd {
                Some(fd) => rustix::process::pidfd_send_signal(fd, Signal::KILL),
                None => rustix::process::kill_process(p, Signal::KILL),
            };
            if sent.is_ok() {
                killed += 1;
            }
        }
        killed
    }

    /// The [`MARKER`] value in a process's environment.
    fn marker_of(pid: u32) -> Option<String> {
        let mut environ = Vec::new();
        fs::File::open(format!("/proc/{pid}/environ"))
            .ok()?
            .take(ENVIRON_CAP)
            .read_to_end(&mut environ)
            .ok()?;
        let prefix = format!("{MARKER}=");
        environ
            .split(|b| *b == 0)
            .find_map(|kv| kv.strip_prefix(prefix.as_bytes()))
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(str::to_owned)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn an_owner_reads_back_and_a_reused_pid_is_not_it() {
            let me = Owner::current().unwrap().clone();
            assert_eq!(me.to_string().parse::<Owner>(), Ok(me.clone()));
            assert!(me.is_running());
            let reused = Owner {
                start_time: me.start_time + 1,
                ..me.clone()
            };
            assert!(!reused.is_running());
            let other_boot = Owner {
                boot_id: "x".into(),
                ..me.clone()
            };
            assert!(!other_boot.is_running());
            assert_eq!(parse_marker(&me.marker(7)), Some((&*me.to_string(), 7)));
            for bad in ["", "1.2", "a.2.b", "1.2.", "1.2.b/c"] {
                assert!(bad.parse::<Owner>().is_err(), "{bad}");
            }
        }
    }
}
