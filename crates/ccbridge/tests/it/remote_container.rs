//! Editor here, agent and ccbridge in a container (issue 25, the recipe of
//! `docs/remote.md`, "Containers"): a real headless Neovim with the plugin
//! (and, in one test each, a real Vim and a real Emacs with theirs) on this
//! side; a real container (rootful podman, its own pid, mount and
//! network namespaces, `ccbridge_testkit::container`) on the other, with
//! ccbridge bind-mounted at `/opt/ccbridge/ccbridge` and the workspace at
//! `/workspace`. The plugin starts the sidecar through
//! `cmd = { "podman", "exec", "-i", <container> }`, as a user's editor
//! attaches to a dev container, with `path_map` mapping the local folder to
//! `/workspace`.
//!
//! The container's `HOME` is `/root` and its `TMPDIR` `/tmp`, both its own:
//! what the sidecar writes there is read through the container's root
//! (`/proc/<its init>/root/...`), its processes through its own `/proc`.
//! The tests play the agents in the container: a test's runtime threads
//! (and the thread that opens a Gemini CLI session) live in the
//! container's network namespace, where the sidecar's ports are (its
//! loopback is not ours). One test runs the real Claude Code (pinned) in
//! the container instead, through `podman exec -it`, its model a mock on
//! the container's loopback.
//!
//! Needs root, podman and runc, Neovim, Vim 9, Emacs 28+, tmux and the
//! pinned Claude Code (`scripts/test` installs them); without them the
//! tests that use them fail saying so.

use crate::claude_side::{assert_saved, connect, selection_with, start_open_diff, verdict};
use crate::remote_editors::{emacs_flow, vim_flow, Attach, Far};
use ccbridge_testkit::claude::{claude_bin, Claude, ClaudeOptions, Sandbox};
use ccbridge_testkit::container::{Bind, Container};
use ccbridge_testkit::mock_anthropic::MockAnthropic;
use ccbridge_testkit::nvim::Nvim;
use ccbridge_testkit::poll_until;
use ccbridge_testkit::HELLO_PY;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const STEP: Duration = Duration::from_secs(15);

/// ccbridge, as named inside the container.
const BIN: &str = "/opt/ccbridge/ccbridge";
/// The IDE name each editor is given: a space, parentheses and a quote,
/// which must reach the lock file intact.
const IDE_NAME: &str = "Editor (it's here)";
/// The sidecar's `--log-file` (inside), a word of its command line with a
/// space, parentheses and a quote: `podman exec` runs no shell, so the
/// editor must pass it as it is. (The IDE name also travels in
/// `initialize`; this word only on the command line.)
const LOG_FILE: &str = "/tmp/ccbridge (it's).log";
/// The workspace, as named inside the container (a bind mount of the
/// local folder).
const WORKSPACE: &str = "/workspace";

/// The container and the Neovim attached to it. Field order is drop order.
struct Sides {
    nvim: Option<Nvim>,
    container: Container,
    /// The workspace as this side names it.
    local: PathBuf,
    /// Neovim's `HOME` (this side's).
    home: PathBuf,
    /// The sidecar's `HOME` and lock directory, named inside.
    home_inside: String,
    lock_dir_inside: String,
    _dir: tempfile::TempDir,
}

fn plugin_dir() -> PathBuf {
    ccbridge_testkit::claude::workspace_root().join("editors/nvim")
}

/// This side's folders: the workspace (`proj`, holding hello.py) and
/// Neovim's `HOME`.
struct Here {
    local: PathBuf,
    home: PathBuf,
    dir: tempfile::TempDir,
}

fn here() -> Here {
    let dir = ccbridge_testkit::temp_dir("ccbridge-container-test-").unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (local, home) = (base.join("proj"), base.join("home"));
    std::fs::create_dir_all(&local).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(local.join("hello.py"), HELLO_PY).unwrap();
    Here { local, home, dir }
}

/// ccbridge's binary, read-only at [`BIN`].
fn ccbridge_bind() -> Bind<'static> {
    Bind {
        host: Path::new(env!("CARGO_BIN_EXE_ccbridge")),
        inside: BIN,
        read_only: true,
    }
}

/// A container with ccbridge and `h`'s workspace mounted (at
/// [`WORKSPACE`]).
fn workspace_container(h: &Here) -> Container {
    Container::start(&[
        ccbridge_bind(),
        Bind {
            host: &h.local,
            inside: WORKSPACE,
            read_only: false,
        },
    ])
    .unwrap_or_else(|e| panic!("no container for the container tests: {e}"))
}

/// A container with ccbridge and the workspace mounted (at [`WORKSPACE`]),
/// and Neovim here with the plugin's sidecar started in it through
/// `prefix` (`None`: the container's `podman exec -i`).
fn start_with_prefix(prefix: Option<Vec<String>>) -> Sides {
    let h = here();
    let container = workspace_container(&h);
    let prefix = prefix.unwrap_or_else(|| container.exec_prefix());
    attach(
        container,
        h,
        WORKSPACE,
        prefix,
        "/root",
        "/root/.claude/ide",
    )
}

/// Neovim here, with the plugin's sidecar started in `container` through
/// `prefix`, the local folder mapped to `workspace` (named inside); the
/// sidecar's `HOME` and lock directory there are `home_inside` and
/// `lock_dir_inside`.
fn attach(
    container: Container,
    h: Here,
    workspace: &str,
    prefix: Vec<String>,
    home_inside: &str,
    lock_dir_inside: &str,
) -> Sides {
    let mut nvim = Nvim::start(
        &plugin_dir().join("test/init.lua"),
        &h.local,
        &[
            ("HOME", h.home.to_str().unwrap()),
            ("XDG_STATE_HOME", h.home.to_str().unwrap()),
        ],
    )
    .expect("start nvim");
    let prefix: Vec<Value> = prefix.into_iter().map(Value::from).collect();
    nvim.lua(
        r#"local bin, prefix, l, r, name, log = ...
        require("ccbridge").setup({
          bin = bin,
          cmd = prefix,
          path_map = { { ["local"] = l, remote = r } },
          ide_name = name,
          args = { "--selection-debounce-ms", "0", "--log-file", log },
          selection = { debounce_ms = 0 },
        })"#,
        vec![
            BIN.into(),
            Value::Array(prefix),
            h.local.to_str().unwrap().into(),
            workspace.into(),
            IDE_NAME.into(),
            LOG_FILE.into(),
        ],
    );
    let mut sides = Sides {
        nvim: Some(nvim),
        container,
        local: h.local,
        home: h.home,
        home_inside: home_inside.into(),
        lock_dir_inside: lock_dir_inside.into(),
        _dir: h.dir,
    };
    let nvim = sides.nvim();
    let running = poll_until(STEP, Duration::from_millis(20), || {
        (nvim.eval("require('ccbridge').state.status") == "running").then_some(())
    });
    if running.is_none() {
        let notes = nvim.eval("test.notes");
        panic!("the sidecar did not answer through podman exec; notes: {notes}");
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

    /// Waits until the sidecar left nothing in the container.
    fn assert_nothing_left_inside(&self, what: &str) {
        assert_nothing_left_in(
            &self.container,
            &self.home_inside,
            &self.lock_dir_inside,
            what,
        );
    }
}

/// The files in the container's `dir` (named inside).
fn files_inside(container: &Container, dir: &str) -> Vec<PathBuf> {
    std::fs::read_dir(container.inside(dir))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// What a sidecar whose `HOME` and lock directory are `home_inside` and
/// `lock_dir_inside` left in the container: its files (lock files, Gemini
/// CLI's and Qwen Code's discovery files, the Codex socket it hosts) and
/// its processes.
fn left_in(
    container: &Container,
    home_inside: &str,
    lock_dir_inside: &str,
) -> (Vec<PathBuf>, Vec<u32>) {
    let dirs = [
        lock_dir_inside.to_owned(),
        "/tmp/gemini/ide".into(),
        format!("{home_inside}/.qwen/ide"),
        "/tmp/codex-ipc".into(),
    ];
    let files = dirs
        .iter()
        .flat_map(|d| files_inside(container, d))
        .collect();
    (files, container.processes_of(BIN))
}

/// The pid of the container's only ccbridge, once there is one (bounded).
/// Waited for: a child the sidecar is starting (git for the session
/// review's baseline) runs ccbridge's executable until it has exec'd, and a
/// read of the container's `/proc` at that moment sees two.
fn only_ccbridge(container: &Container) -> Option<u32> {
    poll_until(STEP, Duration::from_millis(10), || {
        match container.processes_of(BIN).as_slice() {
            [only] => Some(*only),
            _ => None,
        }
    })
}

/// Waits until the sidecar ([`left_in`]) left nothing in the container.
fn assert_nothing_left_in(
    container: &Container,
    home_inside: &str,
    lock_dir_inside: &str,
    what: &str,
) {
    let left = || left_in(container, home_inside, lock_dir_inside);
    let ended = poll_until(Duration::from_secs(10), Duration::from_millis(20), || {
        let (files, procs) = left();
        (files.is_empty() && procs.is_empty()).then_some(())
    });
    assert!(
        ended.is_some(),
        "{what}, left in the container after 10 s (files, ccbridge pids): {:?}",
        left()
    );
}

/// A JSON file of the container's, by its name inside.
fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} (in the container): {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}: {text}", path.display()))
}

/// The port an agent's terminal environment names (`initialize.agents`).
fn agent_port(init: &Value, agent: &str, var: &str) -> u16 {
    init["agents"]
        .as_array()
        .and_then(|l| l.iter().find(|a| a["id"] == agent))
        .and_then(|a| a["env"][var].as_str())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{agent} is not offered in initialize: {init}"))
}

/// A runtime whose threads are in the container's network namespace, as
/// Claude Code in the container is. The test's own thread, which drives
/// Neovim, stays here.
fn runtime_inside(container: &Container) -> tokio::runtime::Runtime {
    let pid = container.pid();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || {
            ccbridge_testkit::container::enter_net(pid)
                .expect("a runtime thread in the container's network")
        })
        .build()
        .unwrap()
}

/// The sidecar got its `--log-file` word intact: [`LOG_FILE`] is in the
/// container, under that very name.
fn assert_log_file_inside(container: &Container) {
    let log = container.inside(LOG_FILE);
    assert!(
        log.is_file(),
        "no {LOG_FILE} in the container (the words after podman exec were changed?); /tmp there: {:?}",
        files_inside(container, "/tmp")
    );
}

/// Checks the lock file `path` (as the sidecar named it) in the
/// container's `~/.claude/ide`, for [`WORKSPACE`] and [`IDE_NAME`], its
/// pid the container's
/// one ccbridge and not the editor's `editor_pid`; then connects a
/// scripted Claude to it from inside the container.
fn claude_inside(
    rt: &tokio::runtime::Runtime,
    container: &Container,
    path: &str,
    editor_pid: u32,
) -> ccbridge_client::ws_client::IdeClient {
    assert!(
        path.starts_with("/root/.claude/ide/"),
        "the lock file {path} is not in the container's ~/.claude/ide"
    );
    let lock = read_json(&container.inside(path));
    assert_eq!(lock["workspaceFolders"], serde_json::json!([WORKSPACE]));
    assert_eq!(lock["ideName"], IDE_NAME, "{lock}");
    assert_log_file_inside(container);
    let pid = lock["pid"].as_u64().expect("a pid") as u32;
    assert_ne!(pid, editor_pid, "the lock holds the editor's pid");
    assert_eq!(
        only_ccbridge(container),
        Some(pid),
        "the lock's pid {pid} is not the container's only ccbridge; its processes: {:?}",
        container.processes()
    );
    let port: u16 = Path::new(path)
        .file_stem()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .unwrap();
    let token = lock["authToken"].as_str().unwrap().to_owned();
    rt.block_on(rt.spawn(async move { connect(port, &token).await }))
        .unwrap()
}

/// The whole recipe: the lock file, Gemini CLI's and Qwen Code's discovery
/// files and the Codex socket are in the container (its `HOME` and
/// `TMPDIR`), the lock's pid a live process of the container's pid
/// namespace; a Claude in the container connects with the lock, gets a
/// selection made in local Neovim with the container's path, and its
/// `openDiff` of `/workspace/hello.py` is reviewed in Neovim on the local
/// path and accepted; a Gemini CLI session opens from inside with its
/// file's token. Quitting Neovim removes every file inside and leaves no
/// ccbridge running in the container.
#[test]
fn neovim_attached_through_podman_exec_serves_the_agents_in_the_container() {
    let mut s = start_with_prefix(None);
    let rt = runtime_inside(&s.container);
    let init = s.init();

    // The lock file is in the container's HOME, for its workspace.
    let lock_path = init["lockFile"].as_str().expect("a lock file").to_owned();
    assert!(
        lock_path.starts_with("/root/.claude/ide/"),
        "the lock file {lock_path} is not in the container's ~/.claude/ide"
    );
    let lock = read_json(&s.container.inside(&lock_path));
    assert_eq!(lock["workspaceFolders"], serde_json::json!([WORKSPACE]));
    assert_eq!(lock["ideName"], IDE_NAME, "{lock}");
    assert_log_file_inside(&s.container);
    assert!(
        ccbridge_testkit::lock_files(&s.home.join(".claude/ide")).is_empty(),
        "a lock file on the editor's side"
    );
    let port: u16 = Path::new(&lock_path)
        .file_stem()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .unwrap();
    // Its pid is a live process in the container's pid namespace: the
    // sidecar itself (what `podman exec` starts has its parent outside the
    // container, so the sidecar records its own pid), not Neovim's.
    let pid = lock["pid"].as_u64().expect("a pid") as u32;
    assert_ne!(pid, s.nvim().pid(), "the lock holds Neovim's pid");
    assert_eq!(
        only_ccbridge(&s.container),
        Some(pid),
        "the lock's pid {pid} is not the container's only ccbridge; its processes: {:?}",
        s.container.processes()
    );

    // Gemini CLI's discovery file in the container's TMPDIR, Qwen Code's
    // in its HOME, for the same workspace and the same live pid.
    let gemini_port = agent_port(&init, "gemini", "GEMINI_CLI_IDE_SERVER_PORT");
    let qwen_port = agent_port(&init, "qwen", "QWEN_CODE_IDE_SERVER_PORT");
    let gemini_file = s.container.inside(format!(
        "/tmp/gemini/ide/gemini-ide-server-{pid}-{gemini_port}.json"
    ));
    let gemini = read_json(&gemini_file);
    assert_eq!(gemini["workspacePath"], WORKSPACE, "{gemini}");
    let qwen = read_json(
        &s.container
            .inside(format!("/root/.qwen/ide/{qwen_port}.lock")),
    );
    assert_eq!(qwen["workspacePath"], WORKSPACE, "{qwen}");
    assert_eq!(qwen["ppid"], pid, "{qwen}");
    // Codex CLI's socket, hosted in the container's TMPDIR (for root,
    // `ipc-0.sock`).
    let codex_socket = s.container.inside("/tmp/codex-ipc/ipc-0.sock");
    poll_until(STEP, Duration::from_millis(20), || {
        codex_socket.exists().then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "no Codex socket {} in the container",
            codex_socket.display()
        )
    });
    // Gemini CLI in the container opens a session with its file's token.
    let token = gemini["authToken"].as_str().unwrap().to_owned();
    let pid1 = s.container.pid();
    std::thread::spawn(move || {
        ccbridge_testkit::container::enter_net(pid1).expect("the container's network");
        ccbridge_testkit::http::mcp_session(gemini_port, &token, STEP)
    })
    .join()
    .expect("a Gemini CLI session from inside the container");

    // Claude in the container connects with the lock file's port and token.
    let token = lock["authToken"].as_str().unwrap().to_owned();
    let mut claude = rt
        .block_on(rt.spawn(async move { connect(port, &token).await }))
        .unwrap();
    s.nvim().wait(
        "CCBridgeConnected",
        "#test.events_named('CCBridgeConnected') > 0",
        STEP,
    );

    // A selection in the local buffer reaches Claude with the container's
    // path.
    let local_file = s.local.join("hello.py").display().to_string();
    let inside_file = format!("{WORKSPACE}/hello.py");
    s.nvim().command(&format!("edit {local_file}"));
    s.nvim().input("gg/hello<CR>ve");
    let sel = rt.block_on(selection_with(&mut claude, "hello"));
    assert_eq!(sel["filePath"], inside_file.as_str(), "{sel}");

    // Claude's openDiff of the container's file opens the review on the
    // local path; `:w` accepts it and Claude gets the verdict.
    let proposed = HELLO_PY.replace("hello ", "hi ");
    assert_ne!(proposed, HELLO_PY);
    let task = {
        let _in_runtime = rt.enter();
        start_open_diff(claude, inside_file.clone(), &proposed)
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
    s.nvim().input("<Esc>:w<CR>");
    let (_claude, text) = rt.block_on(verdict(task));
    assert_saved(&text, &proposed);

    // Quitting Neovim ends `podman exec`; the sidecar removes its lock and
    // discovery files inside and exits.
    let status = s.nvim.take().unwrap().quit();
    assert!(status.is_some(), "Neovim did not exit");
    s.assert_nothing_left_inside("after Neovim quit");
    assert!(
        gemini_file.parent().unwrap().is_dir(),
        "the container's TMPDIR went away, so the check above proves nothing"
    );
}

/// A dropped attachment: `podman exec` killed outright (the editor crashed,
/// the terminal went away). The sidecar's input closes in the container;
/// it removes its lock and discovery files there and exits, and the plugin
/// sees it stop.
#[test]
fn a_killed_podman_exec_ends_the_sidecar_in_the_container() {
    let mut s = start_with_prefix(None);
    let init = s.init();
    let lock_path = init["lockFile"].as_str().expect("a lock file").to_owned();
    assert!(
        s.container.inside(&lock_path).is_file(),
        "no lock file {lock_path} in the container"
    );
    assert!(
        only_ccbridge(&s.container).is_some(),
        "one ccbridge in the container: {:?}",
        s.container.processes()
    );
    // The sidecar's process here is podman's client.
    let podman = s.nvim().eval("require('ccbridge').state.conn:pid()");
    let podman = podman.as_u64().unwrap() as u32;
    let comm = std::fs::read_to_string(format!("/proc/{podman}/comm")).unwrap();
    assert_eq!(comm.trim(), "podman");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &podman.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    s.assert_nothing_left_inside("after podman exec was killed");
    s.nvim().wait(
        "the plugin to see the sidecar exit",
        "require('ccbridge').state.status == 'stopped'",
        STEP,
    );
}

/// The whole of it with the real Claude Code (pinned) in the container,
/// started there as a person starts it in the container's shell (`podman
/// exec -it`), with the environment and arguments the plugin's terminal
/// gives it (auto mode, the `--settings` of `initialize.agents`), its model
/// a mock on the container's loopback. The sidecar is started by Neovim
/// here through `podman exec -i -e HOME=… -e CLAUDE_CONFIG_DIR=…`, the
/// recipe's way to meet Claude's configuration directory; the local folder
/// is bind-mounted at Claude's workspace (another name). Claude accepts the
/// lock file (its pid check runs in the container's pid namespace); a
/// selection in the local buffer reaches its prompt; its Edit of the file
/// is reviewed in Neovim, accepted with `:w`, and lands in the container's
/// file, which is the local one through the mount.
#[test]
fn the_real_claude_code_in_the_container_has_its_edit_reviewed_in_local_neovim() {
    let claude_exe = std::fs::canonicalize(claude_bin()).unwrap();
    // The CLI's package (its binary and what lies beside it), read-only
    // at the same path inside.
    let package = claude_exe.parent().and_then(Path::parent).unwrap();
    let sandbox = Sandbox::new().expect("sandbox");
    let ws = std::fs::canonicalize(sandbox.workspace()).unwrap();
    let ws_inside = ws.to_str().unwrap();
    let home_inside = sandbox.home().to_str().unwrap();
    let config_inside = sandbox.config_dir().to_str().unwrap();
    let h = here();
    // Claude's terminal: this one's folder and environment (podman exec
    // passes none of it by itself), the container's own TMPDIR.
    let launcher = h.dir.path().join("claude-in-container");
    let container = Container::start(&[
        ccbridge_bind(),
        Bind {
            host: sandbox.root(),
            inside: sandbox.root().to_str().unwrap(),
            read_only: false,
        },
        Bind {
            host: &h.local,
            inside: ws_inside,
            read_only: false,
        },
        Bind {
            host: package,
            inside: package.to_str().unwrap(),
            read_only: true,
        },
    ])
    .unwrap_or_else(|e| panic!("no container for the container tests: {e}"));
    std::fs::write(
        &launcher,
        format!(
            "#!/bin/bash\n\
             opts=()\n\
             while IFS= read -r -d '' kv; do\n\
             \x20 name=${{kv%%=*}}\n\
             \x20 [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ && $name != TMPDIR ]] && opts+=(-e \"$name\")\n\
             done < <(env -0)\n\
             exec podman exec -i -t -w \"$(pwd -P)\" \"${{opts[@]}}\" {name} \"$@\"\n",
            name = container.name()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let prefix = container
        .exec_prefix_with_env(&[("HOME", home_inside), ("CLAUDE_CONFIG_DIR", config_inside)]);
    let local_file = h.local.join("hello.py");
    let mut s = attach(
        container,
        h,
        ws_inside,
        prefix,
        home_inside,
        &format!("{config_inside}/ide"),
    );
    // The model, on the container's loopback. Made after the container,
    // so it is dropped before it.
    let mock = InContainer::new(s.container.pid(), || {
        MockAnthropic::start().expect("mock API")
    });
    let init = s.init();
    let claude = Claude::start(
        &sandbox,
        &ClaudeOptions::new(&claude_exe, mock.url())
            .launcher(vec![
                launcher.display().to_string(),
                claude_exe.display().to_string(),
            ])
            .in_editor_terminal(&init),
    )
    .expect("start claude in the container");
    let inside_file = format!("{ws_inside}/hello.py");
    let (old, new) = crate::remote_ssh::real_claude_edit_reviewed_in_local_neovim(
        &claude,
        &mock,
        s.nvim(),
        &local_file,
        &inside_file,
    );
    // In the container's file, the local one through the mount; this
    // side's folder of that name is empty.
    assert_eq!(
        std::fs::read_to_string(&local_file).unwrap(),
        HELLO_PY.replace(old, new)
    );
    assert!(
        !Path::new(&inside_file).exists(),
        "{inside_file} exists on this side: Claude did not run in the container"
    );
    drop(claude);
    assert!(
        s.nvim.take().unwrap().quit().is_some(),
        "Neovim did not exit"
    );
    s.assert_nothing_left_inside("after Neovim quit");
}

/// A value made, and dropped, by a thread in the container's network
/// namespace: a listener there (a mock model for a Claude inside) is on
/// the container's loopback, and its `Drop` wakes its accept loop by
/// connecting to it, which works only from there.
struct InContainer<T: Send + 'static> {
    value: Option<T>,
    pid: u32,
}

impl<T: Send + 'static> InContainer<T> {
    fn new(pid: u32, make: impl FnOnce() -> T + Send + 'static) -> Self {
        let value = std::thread::spawn(move || {
            ccbridge_testkit::container::enter_net(pid).expect("the container's network");
            make()
        })
        .join()
        .unwrap();
        InContainer {
            value: Some(value),
            pid,
        }
    }
}

impl<T: Send + 'static> std::ops::Deref for InContainer<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_ref().expect("made")
    }
}

impl<T: Send + 'static> Drop for InContainer<T> {
    fn drop(&mut self) {
        let (value, pid) = (self.value.take(), self.pid);
        let _ = std::thread::spawn(move || {
            if ccbridge_testkit::container::enter_net(pid).is_ok() {
                drop(value);
            }
        })
        .join();
    }
}

/// The container side of the flows `remote_editors` runs: a workspace
/// container with ccbridge bind-mounted at [`BIN`], entered with `podman
/// exec -i`.
struct Podman {
    container: Container,
    h: Here,
}

impl Podman {
    fn start() -> Podman {
        let h = here();
        Podman {
            container: workspace_container(&h),
            h,
        }
    }

    /// The editor here starts the sidecar with the container's `podman exec
    /// -i` and maps the local folder to [`WORKSPACE`] (the same files,
    /// bind-mounted).
    fn attach(&self) -> Attach {
        Attach {
            bin: BIN.into(),
            prefix: self.container.exec_prefix(),
            local: self.h.local.clone(),
            far: WORKSPACE.into(),
            args: vec!["--log-file".into(), LOG_FILE.into()],
            ide_name: Some(IDE_NAME),
            home: self.h.home.clone(),
            far_text: HELLO_PY,
            word: "hello",
            how: "through podman exec",
        }
    }
}

impl Far for Podman {
    fn runtime(&self) -> tokio::runtime::Runtime {
        runtime_inside(&self.container)
    }

    fn claude(
        &self,
        rt: &tokio::runtime::Runtime,
        lock_file: &str,
        editor_pid: u32,
    ) -> ccbridge_client::ws_client::IdeClient {
        claude_inside(rt, &self.container, lock_file, editor_pid)
    }

    fn assert_ended(&self, what: &str) {
        assert_nothing_left_in(&self.container, "/root", "/root/.claude/ide", what);
    }
}

/// The same recipe with Vim: `cmd` the container's `podman exec -i` (the
/// plugin's automatic quoting must leave its words alone: no shell runs
/// them), `path_map` the local folder to [`WORKSPACE`]. The lock file is in
/// the container with the container's ccbridge as its pid; a selection
/// reaches a Claude in the container with the container's path; its
/// `openDiff` opens a review of the local file, `:w` accepts; quitting Vim
/// leaves nothing in the container.
#[test]
fn vim_attached_through_podman_exec_serves_claude_in_the_container() {
    let far = Podman::start();
    vim_flow(&far.attach(), &far);
}

/// The same with Emacs: `ccbridge-command-prefix` the container's `podman
/// exec -i`, `ccbridge-path-map` the local folder to [`WORKSPACE`]. A
/// region reaches a Claude in the container with the container's path;
/// its `openDiff` opens a review of the local file, `C-c C-c` accepts;
/// quitting Emacs leaves nothing in the container.
#[test]
fn emacs_attached_through_podman_exec_serves_claude_in_the_container() {
    let far = Podman::start();
    emacs_flow(&far.attach(), &far);
}
