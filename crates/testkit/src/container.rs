//! A real container on this machine, for the tests of an editor here and
//! ccbridge inside a container beside the agent (issue 25, the recipe of
//! `docs/remote.md`, "Containers"): Debian's `podman`, rootful, running a
//! container with its own pid, mount, network, IPC and UTS namespaces,
//! which the editor attaches to with `podman exec -i <name>` as its
//! command prefix, as a user's editor attaches to a dev container.
//!
//! No image is pulled (no registry is needed): the container's root is a
//! directory the helper makes (`--rootfs`), holding its own `/root` (the
//! `HOME` inside), `/tmp` (its `TMPDIR`) and `/etc`, with this machine's
//! `/usr` mounted read-only for the programs (Debian's merged `/usr`:
//! `/bin`, `/lib`... are links into it). The caller adds bind mounts (the
//! ccbridge binary, the workspace). Its network is `none`: a loopback of
//! its own and nothing else, so the IDE port a sidecar opens in it is
//! reached only from inside, which [`Container::enter_net`] lets a thread of
//! the test be (as a Claude Code in the container). What is inside is read
//! through `/proc/<its init>/root` ([`Container::inside`]), the container's
//! own view of its files, and its processes through its own `/proc`
//! ([`Container::processes`]), which numbers them in its pid namespace.
//!
//! The OCI runtime is `runc` (Debian's), not podman's default `crun`:
//! Debian's crun 1.8 refuses a host whose cgroups are a v1/v2 hybrid
//! ("cgroups in hybrid mode not supported"), and runc runs on v1, v2 and
//! hybrid hosts alike. The container's `nofile`/`nproc` limits are set no
//! higher than this process's: podman's defaults raise them, which fails
//! where the test runs without `CAP_SYS_RESOURCE`.
//!
//! Needs root, `podman` and `runc` (`scripts/test` installs them);
//! [`Container::start`] says which is missing, and fails unless the
//! container's pid, mount and network namespaces are not this process's.
//! Nothing is skipped. Dropping the [`Container`] removes it (`podman rm
//! -f`), which kills every process in it, then deletes its root directory;
//! containers of test processes killed before that are removed by the next
//! [`Container::start`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

const PODMAN: &str = "podman";
const RUNTIME: &str = "runc";

/// A running container; see the module's documentation.
pub struct Container {
    name: String,
    /// The host pid of its first process (`sleep infinity`).
    pid: u32,
    /// Holds the root directory; deleted after `podman rm` (field drop).
    _dir: tempfile::TempDir,
}

/// A bind mount into the container: `host` seen at `inside`.
pub struct Bind<'a> {
    pub host: &'a Path,
    pub inside: &'a str,
    pub read_only: bool,
}

/// Runs `podman args...`; its stdout, or `Err` naming the command and what
/// it printed.
fn podman(args: &[&str]) -> Result<String, String> {
    let out = Command::new(PODMAN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("`podman` cannot run (install Debian's podman): {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!(
            "`podman {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Removes the containers of test processes that are gone (killed before
/// their `Drop` ran): `ccbridge-test-<pid>-<n>` whose `<pid>` is not alive.
fn remove_stale() {
    let Ok(names) = podman(&["ps", "--all", "--format", "{{.Names}}"]) else {
        return;
    };
    for name in names.lines() {
        let pid = name
            .strip_prefix("ccbridge-test-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = podman(&["rm", "--force", "--time", "0", name]);
            }
        }
    }
}

/// Whether `program` is an executable on `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(d.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// This process's hard limit of `resource`, at most `cap`.
fn hard_limit(resource: rustix::process::Resource, cap: u64) -> u64 {
    rustix::process::getrlimit(resource)
        .maximum
        .map_or(cap, |m| m.min(cap))
}

/// The container's root directory: its own `/etc`, `/root` and `/tmp`, the
/// merged-`/usr` links, and empty mount points for the rest.
fn make_root(root: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for d in ["usr", "etc", "root", "tmp", "proc", "dev", "sys", "run"] {
        std::fs::create_dir_all(root.join(d))?;
    }
    for l in ["bin", "lib", "lib64", "sbin"] {
        if Path::new("/").join(l).exists() {
            std::os::unix::fs::symlink(Path::new("usr").join(l), root.join(l))?;
        }
    }
    std::fs::set_permissions(root.join("tmp"), std::fs::Permissions::from_mode(0o1777))?;
    std::fs::set_permissions(root.join("root"), std::fs::Permissions::from_mode(0o700))?;
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")?;
    std::fs::write(root.join("etc/group"), "root:x:0:\n")?;
    Ok(())
}

impl Container {
    /// Starts a container with `binds` added; `Err` says what is missing
    /// (root, podman, runc) or what failed.
    pub fn start(binds: &[Bind]) -> Result<Container, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("the container tests need root (rootful podman)".into());
        }
        for (program, package) in [(PODMAN, "podman"), (RUNTIME, "runc")] {
            if !on_path(program) {
                return Err(format!(
                    "`{program}` is missing: install Debian's {package} (scripts/test does)"
                ));
            }
        }
        if !Path::new("/usr/bin").is_dir() || !Path::new("/bin").is_symlink() {
            return Err(
                "the container's programs come from this machine's /usr, which needs a merged /usr (/bin a link to usr/bin)"
                    .into(),
            );
        }
        remove_stale();
        let dir = crate::temp_dir("ccbridge-container-").map_err(|e| format!("temp dir: {e}"))?;
        let root = dir.path().join("root");
        make_root(&root).map_err(|e| format!("the container's root {}: {e}", root.display()))?;

        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "ccbridge-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        use rustix::process::Resource;
        let nofile = hard_limit(Resource::Nofile, 65536);
        let nproc = hard_limit(Resource::Nproc, 4096);
        let mut args: Vec<String> = [
            "--runtime",
            RUNTIME,
            "run",
            "--detach",
            "--name",
            &name,
            "--network",
            "none",
            "--hostname",
            "container",
            "--ulimit",
            &format!("nofile={nofile}:{nofile}"),
            "--ulimit",
            &format!("nproc={nproc}:{nproc}"),
            "--volume",
            "/usr:/usr:ro",
        ]
        .map(String::from)
        .to_vec();
        for b in binds {
            args.push("--volume".into());
            args.push(format!(
                "{}:{}:{}",
                b.host.display(),
                b.inside,
                if b.read_only { "ro" } else { "rw" }
            ));
        }
        args.push("--rootfs".into());
        args.push(root.display().to_string());
        args.extend(["sleep", "infinity"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        podman(&args).map_err(|e| format!("cannot start a container: {e}"))?;
        // From here on, Drop removes it.
        let mut container = Container {
            name,
            pid: 0,
            _dir: dir,
        };
        let pid = podman(&["inspect", "--format", "{{.State.Pid}}", &container.name])?;
        container.pid = pid
            .parse()
            .map_err(|_| format!("podman inspect gave no pid: {pid:?}"))?;
        if container.pid == 0 {
            return Err(format!("the container {} is not running", container.name));
        }
        // What the tests rely on: its own pid, mount and network namespaces.
        for ns in ["pid", "mnt", "net"] {
            let of = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/{ns}")).ok();
            let (theirs, ours) = (of(&container.pid.to_string()), of("self"));
            if theirs.is_none() || theirs == ours {
                return Err(format!(
                    "the container {} does not have a {ns} namespace of its own ({theirs:?})",
                    container.name
                ));
            }
        }
        Ok(container)
    }

    /// The container's name (what `podman exec` takes).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `podman exec -i <name>`, ready for a command: the editor's prefix.
    /// (`-i` keeps stdin open; no `-t`, so the pipe is clean bytes.)
    pub fn exec_prefix(&self) -> Vec<String> {
        self.exec_prefix_with_env(&[])
    }

    /// [`Container::exec_prefix`] setting `env` for the command
    /// (`podman exec -i -e NAME=value... <name>`): the container's own
    /// environment otherwise, none of the caller's.
    pub fn exec_prefix_with_env(&self, env: &[(&str, &str)]) -> Vec<String> {
        let mut v: Vec<String> = vec![PODMAN.into(), "exec".into(), "-i".into()];
        for (k, val) in env {
            v.push("-e".into());
            v.push(format!("{k}={val}"));
        }
        v.push(self.name.clone());
        v
    }

    /// The host pid of the container's first process.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Where the container's `path` (absolute, as named inside) is seen
    /// from here: through `/proc/<its first process>/root`.
    pub fn inside(&self, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        Path::new(&format!("/proc/{}/root", self.pid)).join(path.strip_prefix("/").unwrap_or(path))
    }

    /// The processes running in the container, as it numbers them (its own
    /// `/proc`), each with its executable as named inside. Zombies, whose
    /// executable is gone, are not listed.
    pub fn processes(&self) -> Vec<(u32, PathBuf)> {
        let Ok(dir) = std::fs::read_dir(self.inside("/proc")) else {
            return vec![];
        };
        dir.flatten()
            .filter_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let exe = std::fs::read_link(e.path().join("exe")).ok()?;
                Some((pid, exe))
            })
            .collect()
    }

    /// The container's processes running `exe` (as named inside).
    pub fn processes_of(&self, exe: &str) -> Vec<u32> {
        self.processes()
            .into_iter()
            .filter(|(_, e)| e == Path::new(exe))
            .map(|(p, _)| p)
            .collect()
    }

    /// Moves the calling thread into the container's network namespace (its
    /// sockets are then the container's: `127.0.0.1` is its loopback).
    pub fn enter_net(&self) -> Result<(), String> {
        enter_net(self.pid)
    }
}

/// Moves the calling thread into the network namespace of the process
/// `pid` (of a container: [`Container::pid`]), for a runtime's
/// `on_thread_start` or a thread that makes a listener there.
pub fn enter_net(pid: u32) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    extern "C" {
        fn setns(fd: i32, nstype: i32) -> i32;
    }
    const CLONE_NEWNET: i32 = 0x4000_0000;
    let path = format!("/proc/{pid}/ns/net");
    let f = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    // SAFETY: a valid open descriptor of a network namespace and the
    // matching type; setns only changes this thread's namespace.
    let r = unsafe { setns(f.as_raw_fd(), CLONE_NEWNET) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "setns into {path}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        // Kills every process in it (its pid namespace goes with its first
        // process) and unmounts what podman mounted in its root.
        let _ = podman(&["rm", "--force", "--time", "0", &self.name]);
    }
}
