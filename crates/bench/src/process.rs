//! Servers as child processes: `ccbridge serve --stdio` and `floor-server`,
//! spawned the same way (stdin a kept-open pipe, `CLAUDE_CONFIG_DIR` a fresh
//! temporary directory), their lock files, and their resident memory.

use anyhow::{bail, Context};
use ccbridge_protocol::lockfile::LockFile;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which server a child process is.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl ServerCommand {
    /// `ccbridge serve --stdio`, serving several clients at once.
    pub fn ccbridge(binary: &Path) -> Self {
        ServerCommand {
            program: binary.to_owned(),
            args: [
                "serve",
                "--stdio",
                "--multi-client",
                "--ide-name",
                "ccbridge-bench",
            ]
            .map(String::from)
            .to_vec(),
        }
    }

    pub fn floor(binary: &Path) -> Self {
        ServerCommand {
            program: binary.to_owned(),
            args: Vec::new(),
        }
    }
}

/// A running server process; its stdin is closed and it is reaped on drop.
pub struct ServerProcess {
    child: Child,
    /// Taken immediately before the process was spawned.
    pub spawned_at: Instant,
    /// `CLAUDE_CONFIG_DIR`; the lock file appears in `ide/` inside it.
    config_dir: tempfile::TempDir,
}

impl ServerProcess {
    /// Spawns `cmd` with a fresh `CLAUDE_CONFIG_DIR` (also its workspace and
    /// cwd). Returns as soon as the process exists.
    pub fn spawn(cmd: &ServerCommand) -> anyhow::Result<ServerProcess> {
        let config_dir = tempfile::Builder::new()
            .prefix("ccbridge-bench-")
            .tempdir()?;
        let mut command = Command::new(&cmd.program);
        command
            .args(&cmd.args)
            .arg("--workspace")
            .arg(config_dir.path())
            .current_dir(config_dir.path())
            .env("CLAUDE_CONFIG_DIR", config_dir.path())
            .env_remove("CCBRIDGE_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let spawned_at = Instant::now();
        let child = command
            .spawn()
            .with_context(|| format!("cannot run {}", cmd.program.display()))?;
        Ok(ServerProcess {
            child,
            spawned_at,
            config_dir,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn lock_dir(&self) -> PathBuf {
        self.config_dir.path().join("ide")
    }

    /// The lock file's path once it exists (`None` yet, else an error if the
    /// process died).
    pub fn lock_file(&mut self) -> anyhow::Result<Option<PathBuf>> {
        if let Some(p) = find_lock(&self.lock_dir()) {
            return Ok(Some(p));
        }
        if let Some(status) = self.child.try_wait()? {
            bail!("the server exited before writing its lock file: {status}");
        }
        Ok(None)
    }

    /// Polls for the lock file every `interval`, up to `timeout`.
    pub fn wait_for_lock(
        &mut self,
        interval: Duration,
        timeout: Duration,
    ) -> anyhow::Result<PathBuf> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(p) = self.lock_file()? {
                return Ok(p);
            }
            if Instant::now() >= deadline {
                bail!(
                    "no lock file in {} after {timeout:?}",
                    self.lock_dir().display()
                );
            }
            std::thread::sleep(interval);
        }
    }

    /// The port and token the lock file advertises (it is written atomically
    /// by ccbridge; the floor's is tiny, but a partial read is retried).
    pub fn endpoint(&mut self) -> anyhow::Result<(u16, String)> {
        let path = self.wait_for_lock(Duration::from_millis(1), Duration::from_secs(10))?;
        let port: u16 = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("lock file name {}", path.display()))?;
        for _ in 0..100 {
            if let Ok(lock) = std::fs::read_to_string(&path)
                .map_err(anyhow::Error::from)
                .and_then(|s| Ok(serde_json::from_str::<LockFile>(&s)?))
            {
                let token = lock.auth_token.context("no authToken in the lock file")?;
                return Ok((port, token));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        bail!("unreadable lock file {}", path.display())
    }

    /// `VmRSS` from `/proc/<pid>/status`, in KiB.
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        rss_kib(self.pid())
    }

    /// `RssAnon` from `/proc/<pid>/status`, in KiB: the resident memory
    /// that is the process's own (heap, stacks, written pages), without the
    /// file pages of its binary and libraries.
    pub fn rss_anon_kib(&self) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        status_field_kib(&status, "RssAnon").context("no RssAnon in /proc/<pid>/status")
    }

    /// Closes stdin (the editor went away) and waits, bounded, for the
    /// process to exit; kills it if it does not.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> anyhow::Result<()> {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        bail!(
            "{} did not exit within 5 s of its stdin closing",
            self.pid()
        )
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.stop_inner();
        }
    }
}

/// A `*.lock` file (not a hidden temp file) in `dir`.
pub fn find_lock(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let name = e.file_name();
        let name = name.to_str()?;
        (name.ends_with(".lock") && !name.starts_with('.')).then(|| e.path())
    })
}

/// `VmRSS` of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status_field_kib(&status, "VmRSS").context("no VmRSS in /proc/<pid>/status")
}

/// A `Name:   1234 kB` field of `/proc/<pid>/status`.
pub fn status_field_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// `--ccbridge`, else `ccbridge` beside this binary when this is a release
/// (or `profiling`) build directory, else `<workspace>/target/release/ccbridge`.
pub fn find_ccbridge(explicit: Option<PathBuf>, exe_dir: &Path) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.is_file() {
            bail!("--ccbridge {}: no such file", p.display());
        }
        return Ok(p);
    }
    let beside = exe_dir.join("ccbridge");
    if (exe_dir.ends_with("release") || exe_dir.ends_with("profiling")) && beside.is_file() {
        return Ok(beside);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/ccbridge");
    if workspace.is_file() {
        return Ok(workspace.canonicalize().unwrap_or(workspace));
    }
    bail!(
        "no release ccbridge binary found (looked for {} and {}): run `cargo build --release -p ccbridge` or pass --ccbridge",
        beside.display(),
        workspace.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vmrss() {
        let s = "Name:\tx\nVmHWM:\t    5000 kB\nVmRSS:\t    4321 kB\n";
        assert_eq!(status_field_kib(s, "VmRSS"), Some(4321));
        assert_eq!(status_field_kib(s, "VmSwap"), None);
    }
}
