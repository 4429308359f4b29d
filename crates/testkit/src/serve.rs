//! `ccbridge serve` as a child process, started as a user starts it in a
//! terminal: the page's one-time link is read from what it prints. Dropped,
//! it is stopped with SIGTERM and waited for, so it removes its lock file
//! (and whatever it hosts) as on a real exit.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

pub struct ServeProcess {
    child: std::process::Child,
    /// The page's one-time link (`http://127.0.0.1:<port>/#token=…`).
    pub url: String,
}

impl ServeProcess {
    /// Runs `bin serve <args>` with `env` added, its output in `dir`
    /// (`serve.out`, `serve.err`), and waits up to `timeout` for the link.
    pub fn start<A: AsRef<OsStr>>(
        bin: &Path,
        args: &[A],
        env: &[(String, String)],
        dir: &Path,
        timeout: Duration,
    ) -> ServeProcess {
        let out = dir.join("serve.out");
        let child = std::process::Command::new(bin)
            .arg("serve")
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(&out).expect("serve.out"))
            .stderr(std::fs::File::create(dir.join("serve.err")).expect("serve.err"))
            .spawn()
            .expect("start ccbridge serve");
        let mut serve = ServeProcess {
            child,
            url: String::new(),
        };
        let url = crate::poll_until(timeout, Duration::from_millis(50), || {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            text.split_whitespace()
                .find(|w| w.starts_with("http://127.0.0.1:") && w.contains("/#token="))
                .map(str::to_owned)
        });
        serve.url = url.unwrap_or_else(|| {
            panic!(
                "ccbridge serve printed no link within {timeout:?}:\n{}\n{}",
                std::fs::read_to_string(&out).unwrap_or_default(),
                std::fs::read_to_string(dir.join("serve.err")).unwrap_or_default()
            )
        });
        serve
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let _ = self.child.wait();
    }
}
