//! Editor here, agent there (issue 25): a real headless Neovim with the
//! plugin (and, in one test each, a real Vim and a real Emacs with their
//! plugins) on this side; on the other, a "host" that is a network namespace
//! running Debian's sshd (`ccbridge_testkit::remote`), where the sidecar
//! runs through the plugin's `cmd = { "ssh", "-T", ..., "root@<host>" }`
//! with its own binary, `HOME`, `CLAUDE_CONFIG_DIR` (lock directory) and
//! workspace. The two sides name the workspace differently
//! (`<tmp>/local` here, `<tmp>/remote` there) and hold different texts in
//! it, so a path or an original taken from the wrong side shows.
//!
//! This test plays Claude Code on the remote host: its runtime's threads
//! live in the namespace, where the sidecar's IDE port is (that port is
//! on the namespace's own loopback, out of reach from this side).
//!
//! Needs root (network namespaces), openssh-server, Neovim, and Vim 9,
//! Emacs 28+ and tmux for their tests (`scripts/test` installs them);
//! without them every test fails saying so.

use crate::claude_side::{assert_saved, connect, selection_with, start_open_diff, verdict};
use crate::remote_editors::{emacs_flow, vim_flow, Attach, Far};
use ccbridge_testkit::claude::{claude_bin, Claude, ClaudeOptions, Sandbox};
use ccbridge_testkit::mock_anthropic::MockAnthropic;
use ccbridge_testkit::nvim::Nvim;
use ccbridge_testkit::poll_until;
use ccbridge_testkit::remote::{processes_of, Host};
use ccbridge_testkit::HELLO_PY as REMOTE_TEXT;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const STEP: Duration = Duration::from_secs(15);

/// What the local copy of hello.py holds: not what the remote one does.
const LOCAL_TEXT: &str = "def greet(name):\n    print(\"local copy \" + name)\n";

/// Both sides and the Neovim between them. Field order is drop order.
struct Sides {
    nvim: Option<Nvim>,
    host: Host,
    local: PathBuf,
    remote: PathBuf,
    remote_exe: PathBuf,
    lock_dir: PathBuf,
    _dir: tempfile::TempDir,
}

fn plugin_dir() -> PathBuf {
    ccbridge_testkit::claude::workspace_root().join("editors/nvim")
}

/// The two sides' folders: `local`, `remote` (the workspace as each names
/// it, with different texts in hello.py) and the remote side's own
/// ccbridge, `HOME` and `CLAUDE_CONFIG_DIR`.
struct Folders {
    base: PathBuf,
    local: PathBuf,
    remote: PathBuf,
    /// The remote ccbridge as the remote shell starts it: a wrapper that
    /// sets the remote side's HOME and CLAUDE_CONFIG_DIR.
    wrapper: PathBuf,
    /// The binary the wrapper runs (a copy: its processes are told apart).
    remote_exe: PathBuf,
    lock_dir: PathBuf,
    dir: tempfile::TempDir,
}

fn folders() -> Folders {
    folders_for(None)
}

/// [`folders`], with the remote side's workspace, `HOME` and
/// `CLAUDE_CONFIG_DIR` those of `claude`'s sandbox when the real Claude
/// Code runs there.
fn folders_for(claude: Option<&Sandbox>) -> Folders {
    let dir = ccbridge_testkit::temp_dir("ccbridge-remote-").unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (local, mut remote, there) = (
        base.join("local"),
        base.join("remote"),
        base.join("remote-side"),
    );
    let (mut home, mut config) = (there.join("home"), there.join("claude"));
    if let Some(sb) = claude {
        remote = std::fs::canonicalize(sb.workspace()).unwrap();
        home = sb.home().to_path_buf();
        config = sb.config_dir().to_path_buf();
    }
    for d in [&local, &remote, &there.join("bin"), &there.join("home")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(local.join("hello.py"), LOCAL_TEXT).unwrap();
    std::fs::write(remote.join("hello.py"), REMOTE_TEXT).unwrap();
    let remote_exe = there.join("bin/ccbridge-real");
    std::fs::copy(env!("CARGO_BIN_EXE_ccbridge"), &remote_exe).unwrap();
    let wrapper = there.join("bin/ccbridge");
    ccbridge_testkit::remote::write_remote_ccbridge(&wrapper, &remote_exe, &home, &config).unwrap();
    Folders {
        base,
        local,
        remote,
        wrapper,
        remote_exe,
        lock_dir: config.join("ide"),
        dir,
    }
}

fn second_host() -> Host {
    Host::start().unwrap_or_else(|e| panic!("no second host for the SSH tests: {e}"))
}

fn start() -> Sides {
    start_with(second_host(), folders())
}

/// Neovim here with the plugin's sidecar on `host` through `ssh -T`.
fn start_with(host: Host, folders: Folders) -> Sides {
    let Folders {
        base,
        local,
        remote,
        wrapper,
        remote_exe,
        lock_dir,
        dir,
    } = folders;
    let home = base.join("local-home");
    std::fs::create_dir_all(&home).unwrap();
    let mut nvim = Nvim::start(
        &plugin_dir().join("test/init.lua"),
        &local,
        &[
            ("HOME", home.to_str().unwrap()),
            ("XDG_STATE_HOME", home.to_str().unwrap()),
        ],
    )
    .expect("start nvim");
    ccbridge_testkit::remote::setup_nvim_plugin_over_ssh(
        &mut nvim,
        &host,
        &wrapper,
        (&local, &remote),
    );
    let mut sides = Sides {
        nvim: Some(nvim),
        host,
        local,
        remote,
        remote_exe,
        lock_dir,
        _dir: dir,
    };
    let sshd_log = sides.host.sshd_log();
    let nvim = sides.nvim();
    let running = poll_until(STEP, Duration::from_millis(20), || {
        (nvim.eval("require('ccbridge').state.status") == "running").then_some(())
    });
    if running.is_none() {
        let notes = nvim.eval("test.notes");
        panic!("the sidecar did not answer over ssh; notes: {notes}\nsshd: {sshd_log}");
    }
    sides
}

impl Sides {
    fn nvim(&mut self) -> &mut Nvim {
        self.nvim.as_mut().expect("Neovim runs")
    }

    fn init(&mut self) -> Value {
        self.nvim().eval("require('ccbridge').state.init")
    }

    /// The lock file, read on the remote side (where Claude reads it).
    fn lock(&mut self) -> (PathBuf, Value) {
        let path = self.init()["lockFile"].as_str().unwrap().to_owned();
        let (path, _, lock) = remote_lock(&self.lock_dir, &path);
        (path, lock)
    }

    fn assert_remote_side_ended(&self, what: &str) {
        assert_remote_side_ended(&self.lock_dir, &self.remote_exe, what);
    }
}

/// Waits until the remote side's lock directory is empty and no remote
/// ccbridge (`remote_exe`) runs any more.
fn assert_remote_side_ended(lock_dir: &Path, remote_exe: &Path, what: &str) {
    let ended = poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
        (ccbridge_testkit::lock_files(lock_dir).is_empty() && processes_of(remote_exe).is_empty())
            .then_some(())
    });
    assert!(
        ended.is_some(),
        "{what}: after 10 s, lock files {:?}, remote ccbridge processes {:?}",
        ccbridge_testkit::lock_files(lock_dir),
        processes_of(remote_exe)
    );
}

/// The lock file's path and contents, read on the remote side, where
/// Claude reads it; `path` as the sidecar reported it.
fn remote_lock(lock_dir: &Path, path: &str) -> (PathBuf, u16, Value) {
    let path = PathBuf::from(path);
    assert!(
        path.starts_with(lock_dir),
        "{} is not in the remote side's lock directory",
        path.display()
    );
    let lock = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let port = path
        .file_stem()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .unwrap();
    (path, port, lock)
}

/// Checks the lock file `path` on the remote side (the remote workspace; a
/// live pid of the remote side, the SSH session, never the editor's
/// `editor_pid`, which means nothing there) and connects a scripted Claude
/// to it from the remote host.
fn remote_claude(
    rt: &tokio::runtime::Runtime,
    f: &Folders,
    path: &str,
    editor_pid: u32,
) -> ccbridge_client::ws_client::IdeClient {
    let (_, port, lock) = remote_lock(&f.lock_dir, path);
    assert_eq!(
        lock["workspaceFolders"],
        serde_json::json!([f.remote.display().to_string()])
    );
    let pid = lock["pid"].as_u64().expect("a pid") as u32;
    assert_ne!(pid, editor_pid);
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "lock pid {pid} is not alive"
    );
    let token = lock["authToken"].as_str().unwrap().to_owned();
    rt.block_on(rt.spawn(async move { connect(port, &token).await }))
        .unwrap()
}

/// A runtime whose threads are on the remote host (its network namespace),
/// as Claude Code is. The test's own thread, which drives Neovim, stays
/// here: only tasks spawned on the runtime reach the remote loopback.
fn remote_runtime(host: &Host) -> tokio::runtime::Runtime {
    let ns = host.netns().to_owned();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || {
            ccbridge_testkit::remote::enter(&ns).expect("a runtime thread on the remote host")
        })
        .build()
        .unwrap()
}

#[test]
fn over_ssh_selection_and_review_use_remote_paths_and_quitting_removes_the_lock() {
    let mut s = start();
    let rt = remote_runtime(&s.host);
    let (lock_path, lock) = s.lock();
    let port: u16 = lock_path
        .file_stem()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .unwrap();
    let remote_ws = s.remote.display().to_string();
    assert_eq!(lock["workspaceFolders"], serde_json::json!([remote_ws]));
    // The lock's pid is a live process of the remote side (the SSH
    // session), not Neovim's pid, which means nothing there.
    let pid = lock["pid"].as_u64().expect("a pid") as u32;
    assert_ne!(pid, s.nvim().pid());
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "lock pid {pid} is not alive"
    );
    let token = lock["authToken"].as_str().unwrap().to_owned();
    let mut claude = rt
        .block_on(rt.spawn(async move { connect(port, &token).await }))
        .unwrap();
    s.nvim().wait(
        "CCBridgeConnected",
        "#test.events_named('CCBridgeConnected') > 0",
        STEP,
    );

    // A selection in the local buffer reaches Claude with the remote path.
    let local_file = s.local.join("hello.py").display().to_string();
    let remote_file = s.remote.join("hello.py").display().to_string();
    s.nvim().command(&format!("edit {local_file}"));
    s.nvim().input("gg/local<CR>ve");
    let sel = rt.block_on(selection_with(&mut claude, "local"));
    assert_eq!(sel["filePath"], remote_file.as_str(), "{sel}");
    assert_eq!(sel["text"], "local");

    // Claude's openDiff of the remote file: the review opens on the local
    // path, with the original as the remote side has it.
    let proposed = REMOTE_TEXT.replace("hello ", "hi ");
    let task = {
        let _in_runtime = rt.enter();
        start_open_diff(claude, remote_file.clone(), &proposed)
    };
    s.nvim().wait(
        "the review to open",
        "#test.events_named('CCBridgeDiffOpened') > 0 and vim.b.ccbridge_review",
        STEP,
    );
    let opened = s
        .nvim()
        .eval("test.events_named('CCBridgeDiffOpened')[1].data");
    assert_eq!(opened["path"], local_file.as_str(), "{opened}");
    let original = s.nvim().eval(
        "(function() for _, b in ipairs(vim.api.nvim_list_bufs()) do
           if vim.api.nvim_buf_get_name(b):find('/original/', 1, true) then
             return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n') .. '\\n'
           end end end)()",
    );
    assert_eq!(original, REMOTE_TEXT, "the original is the remote file's");
    s.nvim().input("<Esc>:w<CR>");
    let (_claude, text) = rt.block_on(verdict(task));
    assert_saved(&text, &proposed);

    // Quitting Neovim ends the remote sidecar, which removes its lock.
    let status = s.nvim.take().unwrap().quit();
    assert!(status.is_some(), "Neovim did not exit");
    s.assert_remote_side_ended("after :qa!");
}

#[test]
fn a_dropped_ssh_connection_ends_the_remote_sidecar_and_its_lock() {
    let mut s = start();
    let rt = remote_runtime(&s.host);
    let (lock_path, lock) = s.lock();
    let port: u16 = lock_path
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let token = lock["authToken"].as_str().unwrap().to_owned();
    let mut claude = rt
        .block_on(rt.spawn(async move { connect(port, &token).await }))
        .unwrap();
    assert_eq!(processes_of(&s.remote_exe).len(), 1, "one remote sidecar");
    // The sidecar's process here is ssh: kill it outright, as a dropped
    // network does.
    let ssh = s.nvim().eval("require('ccbridge').state.conn:pid()");
    let ssh = ssh.as_u64().unwrap() as u32;
    let comm = std::fs::read_to_string(format!("/proc/{ssh}/comm")).unwrap();
    assert_eq!(comm.trim(), "ssh");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &ssh.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    s.assert_remote_side_ended("after the ssh client was killed");
    // Claude's connection to the gone sidecar is closed.
    let call = rt.block_on(claude.call_tool("getDiagnostics", serde_json::json!({}), Some(STEP)));
    assert!(call.is_err(), "the gone sidecar answered: {call:?}");
    // The plugin saw its sidecar go.
    s.nvim().wait(
        "the plugin to see the sidecar exit",
        "require('ccbridge').state.status == 'stopped'",
        STEP,
    );
}

/// `ccbridge serve` on the remote host, its page reached from here through
/// `ssh -L <local port>:127.0.0.1:<ui port>`: the page and its API answer
/// with the forwarded port in `Host` and `Origin`; a rebound name does not.
/// In real Chromium here, through the forward: the printed link signs in,
/// a remote Claude's proposal shows and is accepted there, and Claude gets
/// the verdict; a fresh link from `ccbridge link` on the remote host works
/// through the forward too.
#[test]
fn the_page_of_a_remote_ccbridge_serve_answers_through_ssh_forwarding() {
    use std::io::BufRead;
    let host = second_host();
    let f = folders();
    let ui_port = 47011;
    // As a person runs it: an interactive session (a terminal, -tt).
    let mut prefix = host.ssh_prefix();
    prefix[1] = "-tt".into();
    let mut serve = std::process::Command::new("ssh")
        .args(&prefix[1..])
        .arg(format!(
            "{} serve --ui-port {ui_port} --workspace {}",
            f.wrapper.display(),
            f.remote.display()
        ))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = serve.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Some((_, token)) = line.split_once("#token=") {
                let _ = tx.send(token.trim().to_owned());
            }
        }
    });
    let token = rx
        .recv_timeout(STEP)
        .expect("the remote serve prints its link");
    // A local port for the forward, other than the page's.
    let local_port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    assert_ne!(local_port, ui_port);
    let mut forward = std::process::Command::new("ssh")
        .args(["-N", "-o", "ExitOnForwardFailure=yes", "-L"])
        .arg(format!("{local_port}:127.0.0.1:{ui_port}"))
        .args(host.ssh_prefix().into_iter().skip(1))
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let fwd = format!("127.0.0.1:{local_port}");
    let origin = format!("http://{fwd}");
    let page = poll_until(STEP, Duration::from_millis(50), || {
        std::net::TcpStream::connect(("127.0.0.1", local_port)).ok()?;
        let a =
            ccbridge_testkit::http::request(local_port, "GET", "/", &[("Host", &fwd)], "", STEP);
        (a.status != 0).then_some(a)
    })
    .expect("the forward to carry a request");
    assert_eq!(page.status, 200, "{}", page.head);

    // Chromium, on this side, opens the printed link with the forwarded
    // port (the token after `#` stays).
    let mut browser = ccbridge_testkit::browser::Browser::launch();
    browser.new_page("ui", "light");
    browser.goto("ui", &format!("{origin}/#token={token}"));
    browser.wait_for("ui", "[data-connection]");
    // A Claude on the remote host proposes an edit of the remote file.
    let rt = remote_runtime(&host);
    let lock = poll_until(STEP, Duration::from_millis(50), || {
        ccbridge_testkit::lock_files(&f.lock_dir).into_iter().next()
    })
    .expect("the remote serve's lock file");
    let (_, ide_port, lock) = remote_lock(&f.lock_dir, lock.to_str().unwrap());
    let ide_token = lock["authToken"].as_str().unwrap().to_owned();
    let claude = rt
        .block_on(rt.spawn(async move { connect(ide_port, &ide_token).await }))
        .unwrap();
    let remote_file = f.remote.join("hello.py").display().to_string();
    let proposed = REMOTE_TEXT.replace("hello ", "hi ");
    let task = {
        let _in_runtime = rt.enter();
        start_open_diff(claude, remote_file, &proposed)
    };
    browser.click(
        "ui",
        "[data-review][data-status=pending] [data-action=accept-file]",
    );
    let (_claude, text) = rt.block_on(verdict(task));
    assert_saved(&text, &proposed);
    drop(browser);

    // A fresh link, made on the remote host, works through the forward.
    let link = std::process::Command::new("ssh")
        .args(host.ssh_prefix().into_iter().skip(1))
        .arg(format!(
            "cd {} && {} link",
            f.remote.display(),
            f.wrapper.display()
        ))
        .output()
        .unwrap();
    let link = String::from_utf8_lossy(&link.stdout).into_owned();
    let token = link
        .split_once("#token=")
        .map(|(_, t)| t.trim().to_owned())
        .unwrap_or_else(|| panic!("ccbridge link printed no link: {link:?}"));
    let body = serde_json::json!({ "token": token }).to_string();
    let signed = ccbridge_testkit::http::post(
        local_port,
        "/api/session",
        &[
            ("Host", &fwd),
            ("Origin", &origin),
            ("Content-Type", "application/json"),
        ],
        &body,
        STEP,
    );
    assert_eq!(signed.status, 200, "{}", signed.body);
    let session: Value = serde_json::from_str(&signed.body).unwrap();
    let auth = format!("Bearer {}", session["session"].as_str().unwrap());
    let state = ccbridge_testkit::http::request(
        local_port,
        "GET",
        "/api/state",
        &[
            ("Host", &fwd),
            ("Origin", &origin),
            ("Authorization", &auth),
        ],
        "",
        STEP,
    );
    assert_eq!(state.status, 200, "{}", state.body);
    let rebound = format!("evil.example:{local_port}");
    let refused = ccbridge_testkit::http::request(
        local_port,
        "GET",
        "/api/state",
        &[("Host", &rebound), ("Authorization", &auth)],
        "",
        STEP,
    );
    assert_eq!(refused.status, 421, "{}", refused.head);
    let _ = forward.kill();
    let _ = forward.wait();
    // A dropped connection hangs up the session's terminal: serve stops.
    let _ = serve.kill();
    let _ = serve.wait();
    let ended = poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
        processes_of(&f.remote_exe).is_empty().then_some(())
    });
    assert!(ended.is_some(), "the remote serve outlived its SSH session");
}

/// The SSH side of the flows `remote_editors` runs: the second host, where
/// the remote ccbridge runs with its own lock directory.
struct OverSsh {
    host: Host,
    f: Folders,
}

impl OverSsh {
    fn start() -> OverSsh {
        OverSsh {
            host: second_host(),
            f: folders(),
        }
    }

    /// The editor here starts the sidecar with the ssh prefix and maps the
    /// workspace's two names; the local file holds another text than the
    /// remote one.
    fn attach(&self) -> Attach {
        let home = self.f.base.join("local-home");
        std::fs::create_dir_all(&home).unwrap();
        Attach {
            bin: self.f.wrapper.display().to_string(),
            prefix: self.host.ssh_prefix(),
            local: self.f.local.clone(),
            far: self.f.remote.display().to_string(),
            args: vec![],
            ide_name: None,
            home,
            far_text: REMOTE_TEXT,
            word: "local",
            how: "over ssh",
        }
    }
}

impl Far for OverSsh {
    fn runtime(&self) -> tokio::runtime::Runtime {
        remote_runtime(&self.host)
    }

    fn claude(
        &self,
        rt: &tokio::runtime::Runtime,
        lock_file: &str,
        editor_pid: u32,
    ) -> ccbridge_client::ws_client::IdeClient {
        remote_claude(rt, &self.f, lock_file, editor_pid)
    }

    fn diagnose(&self) -> String {
        format!("sshd: {}", self.host.sshd_log())
    }

    fn assert_ended(&self, what: &str) {
        assert_remote_side_ended(&self.f.lock_dir, &self.f.remote_exe, what);
    }
}

/// The same over the same second host with Vim: `g:ccbridge.cmd` the ssh
/// prefix, `path_map` the two names of the workspace. A selection reaches
/// the remote Claude with the remote path; Claude's `openDiff` opens a
/// review of the local file whose original is the remote text, and `:w`
/// in it accepts; quitting Vim ends the remote side.
#[test]
fn vim_over_ssh_selection_and_review_use_remote_paths_and_quitting_removes_the_lock() {
    let far = OverSsh::start();
    vim_flow(&far.attach(), &far);
}

/// The same with Emacs: `ccbridge-command-prefix` the ssh prefix,
/// `ccbridge-path-map` the two names of the workspace. A region reaches the
/// remote Claude with the remote path; Claude's `openDiff` opens a review
/// of the local file whose original is the remote text, and `C-c C-c`
/// accepts; quitting Emacs ends the remote side.
#[test]
fn emacs_over_ssh_selection_and_review_use_remote_paths_and_quitting_removes_the_lock() {
    let far = OverSsh::start();
    emacs_flow(&far.attach(), &far);
}

/// The whole of it with the real Claude Code (pinned) on the remote host,
/// in its network namespace, started as the plugin's terminal starts it (no
/// permission mode: auto mode, with the `--settings` of `initialize.agents`),
/// its model a mock on that host's loopback. Neovim here reaches the
/// sidecar only through `ssh -T`. A selection in the local buffer reaches
/// Claude's prompt; Claude's Edit of the remote file opens a review in
/// Neovim of the local path, `:w` accepts it, and the edit lands on the
/// remote file only.
#[test]
fn the_real_claude_code_on_the_remote_host_has_its_edit_reviewed_in_local_neovim() {
    let claude_bin = claude_bin();
    let sandbox = Sandbox::new().expect("sandbox");
    let host = second_host();
    let f = folders_for(Some(&sandbox));
    let remote_file = f.remote.join("hello.py");
    let local_file = f.local.join("hello.py");
    let mut s = start_with(host, f);
    // The model, on the remote host: a listener made by a thread that
    // entered its network namespace stays there. Made after the host, so
    // it is dropped before it.
    let mock = OnRemoteHost::new(s.host.netns(), || MockAnthropic::start().expect("mock API"));
    let init = s.init();
    let launcher: Vec<String> = ["ip", "netns", "exec", s.host.netns()]
        .map(String::from)
        .into_iter()
        .chain([claude_bin.display().to_string()])
        .collect();
    let claude = Claude::start(
        &sandbox,
        &ClaudeOptions::new(&claude_bin, mock.url())
            .launcher(launcher)
            .in_editor_terminal(&init),
    )
    .expect("start claude on the remote host");
    let (old, new) = real_claude_edit_reviewed_in_local_neovim(
        &claude,
        &mock,
        s.nvim(),
        &local_file,
        &remote_file.display().to_string(),
    );
    assert_eq!(
        std::fs::read_to_string(&remote_file).unwrap(),
        REMOTE_TEXT.replace(old, new)
    );
    assert_eq!(std::fs::read_to_string(&local_file).unwrap(), LOCAL_TEXT);
    drop(claude);
    assert!(
        s.nvim.take().unwrap().quit().is_some(),
        "Neovim did not exit"
    );
    s.assert_remote_side_ended("after Neovim quit");
}

/// What both far-side tests (an SSH host here, a container in
/// `remote_container`) check with the real Claude Code over there, once
/// started: it takes the editor's lock file (the plugin hears
/// `CCBridgeConnected`), a selection in the local buffer reaches its prompt,
/// and its Edit of `far_file` (its own name for `local_file`) opens a
/// review in Neovim that `:w` accepts. The edit's old and new text.
pub(crate) fn real_claude_edit_reviewed_in_local_neovim(
    claude: &Claude,
    mock: &MockAnthropic,
    nvim: &mut Nvim,
    local_file: &Path,
    far_file: &str,
) -> (&'static str, &'static str) {
    claude
        .wait_prompt(STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", claude.screen()));
    nvim.wait(
        "CCBridgeConnected (Claude over there took the lock file)",
        "#test.events_named('CCBridgeConnected') > 0",
        STEP,
    );
    nvim.command(&format!("edit {}", local_file.display()));
    nvim.input("ggVj");
    claude
        .wait_prompt_line("[⧉ 2 lines selected] in the prompt box", STEP, |l| {
            l.contains("⧉ 2 lines selected")
        })
        .unwrap_or_else(|e| panic!("{e:?}\n{}", claude.screen()));
    nvim.input("<Esc>");
    let old = "    print(message)";
    let new = "    print(message.upper())";
    claude
        .request_edit(mock, far_file, old, new, STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", claude.screen()));
    nvim.wait(
        "the review in Neovim",
        "vim.b.ccbridge_review and vim.bo.buftype == 'acwrite'",
        STEP,
    );
    nvim.input(":w<CR>");
    claude
        .tmux
        .wait_for_text("Edit finished.", STEP)
        .unwrap_or_else(|e| panic!("{e:?}\n{}", claude.screen()));
    (old, new)
}

/// A value made, and dropped, by a thread on the remote host: a listener's
/// `Drop` wakes its accept loop by connecting to it, which only works from
/// the namespace the listener is in.
struct OnRemoteHost<T: Send + 'static> {
    value: Option<T>,
    netns: String,
}

impl<T: Send + 'static> OnRemoteHost<T> {
    fn new(netns: &str, make: impl FnOnce() -> T + Send + 'static) -> Self {
        let ns = netns.to_owned();
        let value = std::thread::spawn(move || {
            ccbridge_testkit::remote::enter(&ns).expect("the remote host");
            make()
        })
        .join()
        .unwrap();
        OnRemoteHost {
            value: Some(value),
            netns: netns.to_owned(),
        }
    }
}

impl<T: Send + 'static> std::ops::Deref for OnRemoteHost<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_ref().unwrap()
    }
}

impl<T: Send + 'static> Drop for OnRemoteHost<T> {
    fn drop(&mut self) {
        let (value, ns) = (self.value.take(), self.netns.clone());
        let _ = std::thread::spawn(move || {
            if ccbridge_testkit::remote::enter(&ns).is_ok() {
                drop(value);
            }
        })
        .join();
    }
}
