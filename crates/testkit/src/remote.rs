//! A second "host" on this machine, for the tests of an editor here and
//! ccbridge there (issue 25): a network namespace joined to this one by a
//! veth pair, with Debian's `sshd` listening in it on its own address and
//! accepting one key made for the test.
//!
//! Whatever runs over `ssh -T -i <key> root@<address>` runs in that
//! namespace: its `127.0.0.1` is not ours, so the IDE port a sidecar opens
//! there is reached only from inside (a Claude Code on that host), which
//! [`enter`] lets a thread of the test be. The file system is shared: the
//! test gives the remote side its own folders (binary, `HOME`, lock
//! directory, workspace).
//!
//! Needs root (or `CAP_NET_ADMIN` and `CAP_SYS_ADMIN`) and
//! `/usr/sbin/sshd` (`openssh-server`, installed by `scripts/test`).
//! [`Host::start`] says which of them is missing; nothing is skipped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const SSHD: &str = "/usr/sbin/sshd";

/// How long sshd may take to accept connections.
const UP: Duration = Duration::from_secs(15);

/// One namespace with sshd running in it. Dropping it kills everything in
/// the namespace and deletes it (the veth pair goes with it).
pub struct Host {
    name: String,
    addr: String,
    key: PathBuf,
    sshd: Option<Child>,
    dir: tempfile::TempDir,
}

/// Runs `ip args...`; `Err` names the command and what it printed.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("`ip` (iproute2) cannot run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn keygen(path: &Path) -> Result<(), String> {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "ccbridge-test", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ssh-keygen cannot run (openssh-client): {e}"))?;
    out.status.success().then_some(()).ok_or_else(|| {
        format!(
            "ssh-keygen failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

impl Host {
    /// Creates the namespace, its link and sshd; `Err` says what is missing
    /// (root, `ip`, `sshd`) or what failed.
    pub fn start() -> Result<Host, String> {
        if !Path::new(SSHD).is_file() {
            return Err(format!(
                "{SSHD} is missing: install Debian's openssh-server (scripts/test does)"
            ));
        }
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        // A /30 of 10.231.0.0/16 per host, from the pid and a counter.
        let idx = (pid.wrapping_mul(8).wrapping_add(n)) % 16384;
        let (c, d) = (idx / 64, (idx % 64) * 4);
        let host_addr = format!("10.231.{c}.{}", d + 1);
        let addr = format!("10.231.{c}.{}", d + 2);
        let name = format!("ccb{pid}n{n}");
        let (outer, inner) = (format!("cbo{pid}n{n}"), format!("cbi{pid}n{n}"));
        ip(&["netns", "add", &name]).map_err(|e| {
            format!("cannot create a network namespace (needs root or CAP_NET_ADMIN+CAP_SYS_ADMIN): {e}")
        })?;
        let dir = match crate::temp_dir("ccbridge-sshd-") {
            Ok(d) => d,
            Err(e) => {
                let _ = ip(&["netns", "del", &name]);
                return Err(format!("temp dir: {e}"));
            }
        };
        // From here on, Drop cleans up.
        let mut host = Host {
            name,
            addr,
            key: dir.path().join("id_ed25519"),
            sshd: None,
            dir,
        };
        let ns = host.name.clone();
        let netns = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &ns, "ip"];
            all.extend_from_slice(args);
            ip(&all)
        };
        ip(&[
            "link", "add", &outer, "type", "veth", "peer", "name", &inner,
        ])?;
        ip(&["link", "set", &inner, "netns", &host.name])?;
        ip(&["addr", "add", &format!("{host_addr}/30"), "dev", &outer])?;
        ip(&["link", "set", &outer, "up"])?;
        netns(&["addr", "add", &format!("{}/30", host.addr), "dev", &inner])?;
        netns(&["link", "set", &inner, "up"])?;
        netns(&["link", "set", "lo", "up"])?;

        let d = host.dir.path().to_owned();
        keygen(&d.join("host_key"))?;
        keygen(&host.key)?;
        std::fs::copy(d.join("id_ed25519.pub"), d.join("authorized_keys"))
            .map_err(|e| e.to_string())?;
        // sshd's privilege separation directory.
        std::fs::create_dir_all("/run/sshd").map_err(|e| format!("/run/sshd: {e}"))?;
        let config = format!(
            "ListenAddress {addr}:22\n\
             HostKey {d}/host_key\n\
             AuthorizedKeysFile {d}/authorized_keys\n\
             PermitRootLogin prohibit-password\n\
             PasswordAuthentication no\n\
             KbdInteractiveAuthentication no\n\
             UsePAM no\n\
             StrictModes no\n\
             PidFile none\n\
             LogLevel VERBOSE\n",
            addr = host.addr,
            d = d.display()
        );
        std::fs::write(d.join("sshd_config"), config).map_err(|e| e.to_string())?;
        let log = std::fs::File::create(d.join("sshd.log")).map_err(|e| e.to_string())?;
        let sshd = Command::new("ip")
            .args(["netns", "exec", &host.name, SSHD, "-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("sshd: {e}"))?;
        host.sshd = Some(sshd);
        let target = format!("{}:22", host.addr);
        let up = crate::poll_until(UP, Duration::from_millis(20), || {
            std::net::TcpStream::connect_timeout(
                &target.parse().expect("an address"),
                Duration::from_millis(200),
            )
            .ok()
        });
        if up.is_none() {
            return Err(format!(
                "sshd did not listen on {target} within {UP:?}; its log:\n{}",
                host.sshd_log()
            ));
        }
        Ok(host)
    }

    /// The host's address (what `ssh` connects to).
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The namespace's name (`ip netns exec <name>`).
    pub fn netns(&self) -> &str {
        &self.name
    }

    /// `ssh` with the test's key and no host-key checks, ready for a
    /// command: `[ssh, -T, ..., root@<addr>]`.
    pub fn ssh_prefix(&self) -> Vec<String> {
        let mut v: Vec<String> = ["ssh", "-T", "-F", "/dev/null", "-i"]
            .map(String::from)
            .to_vec();
        v.push(self.key.display().to_string());
        for o in [
            "StrictHostKeyChecking=no",
            "UserKnownHostsFile=/dev/null",
            "BatchMode=yes",
            "IdentitiesOnly=yes",
            "LogLevel=ERROR",
            "ConnectTimeout=10",
        ] {
            v.push("-o".into());
            v.push(o.into());
        }
        v.push(format!("root@{}", self.addr));
        v
    }

    /// What sshd logged so far (for failure messages).
    pub fn sshd_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// Moves the calling thread into the host's network namespace (its
    /// sockets are then the host's: `127.0.0.1` is the host's loopback).
    pub fn enter(&self) -> Result<(), String> {
        enter(&self.name)
    }

    /// The processes running in the namespace.
    pub fn pids(&self) -> Vec<u32> {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.name])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        out.split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }
}

/// Moves the calling thread into the network namespace `name` (made with
/// `ip netns add`): for a runtime's `on_thread_start`.
pub fn enter(name: &str) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    // setns(2) from the C library std links anyway: one call, no crate.
    extern "C" {
        fn setns(fd: i32, nstype: i32) -> i32;
    }
    const CLONE_NEWNET: i32 = 0x4000_0000;
    let f = std::fs::File::open(Path::new("/var/run/netns").join(name))
        .map_err(|e| format!("netns {name}: {e}"))?;
    // SAFETY: a valid open descriptor of a network namespace and the
    // matching type; setns only changes this thread's namespace.
    let r = unsafe { setns(f.as_raw_fd(), CLONE_NEWNET) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "setns into {name}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

/// The pids of the processes whose executable is `exe` (every namespace:
/// the pid namespace is shared).
pub fn processes_of(exe: &Path) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(e.path().join("exe")).ok()?;
            (target == exe).then_some(pid)
        })
        .collect()
}

/// Writes `at`, the remote ccbridge as a login shell there starts it: a
/// script that runs `exe` with the remote side's own `HOME` and
/// `CLAUDE_CONFIG_DIR` (where its lock file goes).
pub fn write_remote_ccbridge(
    at: &Path,
    exe: &Path,
    home: &Path,
    config: &Path,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(
        at,
        format!(
            "#!/bin/sh\nHOME='{}' CLAUDE_CONFIG_DIR='{}' exec '{}' \"$@\"\n",
            home.display(),
            config.display(),
            exe.display()
        ),
    )?;
    std::fs::set_permissions(at, std::fs::Permissions::from_mode(0o755))
}

/// Sets up the Neovim plugin (`editors/nvim`) in `nvim` as docs/remote.md
/// says for SSH: its sidecar is `bin` on `host`, started through `ssh -T`
/// (`cmd`), and `path_map` gives the workspace's two names, `(local,
/// remote)`. Every debounce 0. The sidecar answers soon after (its
/// `state.status` is then `running`).
pub fn setup_nvim_plugin_over_ssh(
    nvim: &mut crate::nvim::Nvim,
    host: &Host,
    bin: &Path,
    (local, remote): (&Path, &Path),
) {
    let prefix: Vec<serde_json::Value> = host.ssh_prefix().into_iter().map(Into::into).collect();
    let path = |p: &Path| serde_json::Value::from(p.display().to_string());
    nvim.lua(
        r#"local bin, prefix, l, r = ...
        require("ccbridge").setup({
          bin = bin,
          cmd = prefix,
          path_map = { { ["local"] = l, remote = r } },
          args = { "--selection-debounce-ms", "0" },
          selection = { debounce_ms = 0 },
        })"#,
        vec![
            path(bin),
            serde_json::Value::Array(prefix),
            path(local),
            path(remote),
        ],
    );
}

impl Drop for Host {
    fn drop(&mut self) {
        for pid in self.pids() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        if let Some(sshd) = &mut self.sshd {
            let _ = sshd.kill();
            let _ = sshd.wait();
        }
        let _ = ip(&["netns", "del", &self.name]);
    }
}
