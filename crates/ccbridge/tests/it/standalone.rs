//! `ccbridge serve` without `--stdio` and `ccbridge claude`, through the
//! real binary: the link is printed, the lock file is written at once and
//! removed on every way out, and `claude` runs connected, its exit status
//! becoming ccbridge's.

use ccbridge_protocol::lockfile::LockFile;
use ccbridge_testkit::{lock_files, poll_until, wait_lock_file};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How often the tests look again while waiting for a condition.
const POLL: Duration = Duration::from_millis(10);

const BIN: &str = env!("CARGO_BIN_EXE_ccbridge");

struct Sandbox {
    home: tempfile::TempDir,
    ws: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let home = tempfile::tempdir().unwrap();
        let ws = home.path().join("project");
        std::fs::create_dir(&ws).unwrap();
        let ws = std::fs::canonicalize(ws).unwrap();
        Sandbox { home, ws }
    }

    fn ide(&self) -> PathBuf {
        self.home.path().join("cfg/ide")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(&self.ws)
            .env("HOME", self.home.path())
            .env("TMPDIR", self.home.path())
            .env("CLAUDE_CONFIG_DIR", self.home.path().join("cfg"))
            .env_remove("CCBRIDGE_LOG");
        c
    }

    /// Starts `ccbridge serve` with `args` (and `pre_exec` before it runs);
    /// the running child, the link it printed and its lock file.
    fn serve_with_link(
        &self,
        args: &[&str],
        pre_exec: Option<fn() -> std::io::Result<()>>,
    ) -> (Child, String, PathBuf) {
        use std::io::{BufRead, BufReader};
        use std::os::unix::process::CommandExt;
        let mut all = vec!["serve"];
        all.extend_from_slice(args);
        let mut cmd = self.command(&all);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(f) = pre_exec {
            // SAFETY: the callers' functions only make async-signal-safe
            // calls (setrlimit), as between fork and exec they must.
            unsafe {
                cmd.pre_exec(f);
            }
        }
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let link = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| {
                l.split_whitespace()
                    .find(|w| w.starts_with("http://127.0.0.1:"))
                    .map(str::to_owned)
            })
            .expect("the link is printed");
        // The rest is read too: a closed pipe would end ccbridge at its
        // next line.
        std::thread::spawn(move || lines.for_each(drop));
        let lock = wait_lock_file(&self.ide(), Duration::from_secs(10)).expect("a lock file");
        (child, link, lock)
    }

    /// Gemini CLI's discovery files (`$TMPDIR/gemini/ide`).
    fn gemini_files(&self) -> Vec<PathBuf> {
        files_in(&self.home.path().join("gemini/ide"))
    }

    /// Qwen Code's (`~/.qwen/ide`).
    fn qwen_files(&self) -> Vec<PathBuf> {
        files_in(&self.home.path().join(".qwen/ide"))
    }

    /// A stand-in for Claude Code: a script that records its environment
    /// and the lock file it can see, then runs `body`.
    fn fake_claude(&self, body: &str) -> PathBuf {
        let path = self.home.path().join("fake-claude");
        let out = self.home.path().join("seen");
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\n\
                 echo \"port=$CLAUDE_CODE_SSE_PORT ide=$ENABLE_IDE_INTEGRATION args=$*\" > {out}\n\
                 ls {ide} >> {out}\n\
                 for a; do case $a in --mcp-config=*) f=${{a#--mcp-config=}}; \
                   echo \"mcp-config $f $(stat -c %a \"$f\") $(stat -c %a \"$(dirname \"$f\")\")\" >> {out}; \
                   cat \"$f\" >> {out}; echo >> {out};; \
                   --settings=*) f=${{a#--settings=}}; echo \"settings $(stat -c %a \"$f\")\" >> {out}; \
                   cat \"$f\" >> {out}; echo >> {out};; esac; done\n\
                 {body}\n",
                out = out.display(),
                ide = self.ide().display(),
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn seen(&self) -> String {
        std::fs::read_to_string(self.home.path().join("seen")).unwrap_or_default()
    }
}

/// The files in `dir`, but for the hidden temporary file an atomic write
/// renames into place a moment later (`.<name>.<random>.tmp`): listed, it
/// was gone by the time it was read (a flaky failure seen in CI).
fn files_in(dir: &std::path::Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

fn signal(child: &Child, sig: rustix::process::Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_child(child), sig).unwrap();
}

fn exits(child: &mut Child) -> std::process::ExitStatus {
    poll_until(Duration::from_secs(10), POLL, || child.try_wait().unwrap()).expect("ccbridge exits")
}

fn serve_until(sig: rustix::process::Signal) {
    let sb = Sandbox::new();
    let mut child = sb
        .command(&["serve"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = wait_lock_file(&sb.ide(), Duration::from_secs(10))
        .expect("the lock file is written at once");
    let parsed = LockFile::parse(&std::fs::read(&lock).unwrap()).unwrap();
    assert_eq!(parsed.pid, Some(child.id()), "ccbridge is the editor");
    assert_eq!(parsed.workspace_folders, vec![sb.ws.display().to_string()]);
    // The workspace tools run beside it, said in the lock file.
    let tools = parsed
        .tools
        .expect("the lock file says where the tools are");
    let tools_port = ccbridge_testkit::http::url_port(&tools.url);
    signal(&child, sig);
    assert!(exits(&mut child).success(), "{sig:?}");
    assert!(!lock.exists(), "the lock file outlived {sig:?}");
    assert!(
        !ccbridge_testkit::http::mcp_server_answers(
            tools_port,
            &tools.token,
            Duration::from_secs(5)
        ),
        "the tools server outlived {sig:?}"
    );
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let url = out
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no link printed: {out}"));
    let token = url
        .split_once("/#token=")
        .expect("the token is in the fragment")
        .1;
    assert_eq!(token.len(), 64);
    assert!(
        out.contains(&format!(
            "Workspace tools (MCP, reviewed in the page): {}",
            tools.url
        )),
        "{out}"
    );
}

/// Security checklist item 43: every socket a running `ccbridge serve`
/// listens on (the IDE port, the page, the workspace tools, the Gemini and
/// Qwen companions) is bound to loopback, never to every interface.
#[test]
fn item_43_every_listening_socket_is_on_loopback() {
    let sb = Sandbox::new();
    let (mut child, _link, _lock) = sb.serve_with_link(&[], None);
    poll_until(Duration::from_secs(10), POLL, || {
        (sb.gemini_files().len() == 1 && sb.qwen_files().len() == 1).then_some(())
    })
    .expect("a discovery file per companion");
    let listening = listening_sockets(child.id());
    assert!(
        listening.len() >= 5,
        "the IDE port, the page, the tools and two companions: {listening:?}"
    );
    for local in &listening {
        let loopback = local.starts_with("0100007F:")
            || local.starts_with("00000000000000000000000001000000:");
        assert!(
            loopback,
            "a listener off loopback: {local} in {listening:?}"
        );
    }
    signal(&child, rustix::process::Signal::TERM);
    assert!(exits(&mut child).success());
}

/// The local addresses, as `/proc/net/tcp` writes them (`0100007F:1F90`),
/// of the TCP sockets process `pid` listens on.
fn listening_sockets(pid: u32) -> Vec<String> {
    let inodes: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    ["tcp", "tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(format!("/proc/{pid}/net/{f}")).ok())
        .flat_map(|t| t.lines().skip(1).map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|row| {
            let cols: Vec<&str> = row.split_whitespace().collect();
            // 0A: LISTEN; the tenth column is the socket's inode.
            (cols.len() > 9 && cols[3] == "0A" && inodes.contains(cols[9]))
                .then(|| cols[1].to_owned())
        })
        .collect()
}

#[test]
fn serve_says_when_the_tools_are_off_and_why() {
    let sb = Sandbox::new();
    for (args, why) in [
        (&["serve", "--no-tools"][..], "turned off (--no-tools)"),
        // The home folder is too broad a workspace for them.
        (&["serve", "--workspace", "."][..], "your home folder"),
    ] {
        let mut c = sb.command(args);
        if args.len() == 3 {
            c.current_dir(sb.home.path());
        }
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lock = wait_lock_file(&sb.ide(), Duration::from_secs(10))
            .expect("the lock file is written at once");
        let parsed = LockFile::parse(&std::fs::read(&lock).unwrap()).unwrap();
        assert!(parsed.tools.is_none(), "{args:?}");
        signal(&child, rustix::process::Signal::TERM);
        assert!(exits(&mut child).success());
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(
            out.contains("Workspace tools: not served, "),
            "{args:?}: {out}"
        );
        assert!(out.contains(why), "{args:?}: {out}");
    }
}

#[test]
fn serve_prints_a_one_time_link_and_cleans_up_on_sigint() {
    serve_until(rustix::process::Signal::INT);
}

#[test]
fn serve_cleans_up_on_sigterm() {
    serve_until(rustix::process::Signal::TERM);
}

#[test]
fn serve_cleans_up_on_sighup() {
    serve_until(rustix::process::Signal::HUP);
}

/// Codex's provider can neither host nor join a router (its socket folder
/// open to everyone, which Codex refuses too): the banner said "Codex CLI
/// finds it too" and the page offered Codex while nothing served it; only
/// `ccbridge list` told why.
#[test]
fn regression_codex_not_served_is_said_in_the_banner_not_offered() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let ipc = sb.home.path().join("codex-ipc");
    std::fs::create_dir(&ipc).unwrap();
    std::fs::set_permissions(&ipc, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut child = sb
        .command(&["serve"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut banner = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        banner.push_str(&line);
        banner.push('\n');
        if line.contains("Press Ctrl-C to stop") {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(banner.contains("Codex CLI is not served"), "{banner}");
    assert!(!banner.contains("Codex CLI finds it too"), "{banner}");
}

/// Claude Code's local install (`~/.claude/local/claude`, which the shell
/// reaches through an alias) is not on PATH: `ccbridge claude` said to
/// install Claude Code again.
#[test]
fn regression_claude_is_found_in_its_local_install_off_path() {
    let sb = Sandbox::new();
    let fake = sb.fake_claude("exit 4");
    let local = sb.home.path().join(".claude/local");
    std::fs::create_dir_all(&local).unwrap();
    std::fs::rename(&fake, local.join("claude")).unwrap();
    let mut child = sb
        .command(&["claude", "--", "--permission-mode", "default"])
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status = exits(&mut child);
    assert_eq!(status.code(), Some(4), "{}", sb.seen());
    assert!(sb.seen().contains("ide=true"), "{}", sb.seen());
}

#[test]
fn claude_runs_connected_and_its_exit_status_is_ours() {
    let sb = Sandbox::new();
    let fake = sb.fake_claude("exit 3");
    let mut child = sb
        .command(&[
            "claude",
            "--claude",
            fake.to_str().unwrap(),
            "--",
            "--permission-mode",
            "default",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = exits(&mut child);
    assert_eq!(status.code(), Some(3), "Claude's status");
    let seen = sb.seen();
    let port: u16 = seen
        .split("port=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port: {seen}"));
    assert!(seen.contains("ide=true"), "{seen}");
    // The tools server comes in a private --mcp-config file (the `=`
    // form), before Claude's own arguments.
    let config = seen
        .split("mcp-config ")
        .nth(1)
        .unwrap_or_else(|| panic!("no --mcp-config: {seen}"));
    let (file, rest) = config.split_once(' ').unwrap();
    let settings_file = std::path::Path::new(file).with_file_name("settings.json");
    assert!(
        seen.contains(&format!(
            "args=--mcp-config={file} --settings={} --permission-mode default",
            settings_file.display()
        )),
        "{seen}"
    );
    // Edits ask (and so are reviewed) whatever the mode; the workspace
    // tools, which the page asks about, do not ask in the terminal too.
    let settings: serde_json::Value = serde_json::from_str(
        seen.split("settings 600\n")
            .nth(1)
            .and_then(|r| r.lines().next())
            .unwrap_or_else(|| panic!("no private settings: {seen}")),
    )
    .unwrap();
    let hook = &settings["hooks"]["PreToolUse"][0];
    assert_eq!(hook["matcher"], "Edit|MultiEdit|Write", "{settings}");
    let command = hook["hooks"][0]["command"].as_str().unwrap();
    let answer = std::process::Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&answer.stdout).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "ask",
        "{answer}"
    );
    assert_eq!(settings["permissions"]["allow"][0], "mcp__ccbridge");
    assert!(
        rest.starts_with("600 700\n"),
        "private file and folder: {seen}"
    );
    let json: serde_json::Value = serde_json::from_str(rest.lines().nth(1).unwrap())
        .unwrap_or_else(|e| panic!("{e}: {seen}"));
    let entry = &json["mcpServers"]["ccbridge"];
    assert_eq!(entry["type"], "http", "{json}");
    assert!(entry["url"].as_str().unwrap().ends_with("/mcp"), "{json}");
    assert_eq!(
        entry["headers"]["Authorization"].as_str().unwrap().len(),
        "Bearer ".len() + 64
    );
    assert!(
        seen.contains(&format!("{port}.lock")),
        "the lock file existed while Claude ran: {seen}"
    );
    assert!(
        lock_files(&sb.ide()).is_empty(),
        "removed after Claude exited"
    );
    assert!(
        !std::path::Path::new(file).exists(),
        "the --mcp-config file outlived Claude"
    );
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("/#token="),
        "the link is printed before Claude starts: {err}"
    );
    assert_eq!(
        err.matches("permission mode you chose (default)").count(),
        1,
        "the user is told once what their mode means for review: {err}"
    );
}

#[test]
fn ctrl_c_belongs_to_claude_and_ccbridge_waits_for_it() {
    let sb = Sandbox::new();
    let go = sb.home.path().join("go");
    let fake = sb.fake_claude(&format!(
        "trap '' INT\nwhile [ ! -e {} ]; do sleep 0.05; done\nexit 0",
        go.display()
    ));
    let mut child = sb
        .command(&["claude", "--claude", fake.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    poll_until(Duration::from_secs(10), POLL, || {
        (!sb.seen().is_empty()).then_some(())
    })
    .expect("Claude started");
    signal(&child, rustix::process::Signal::INT);
    // ccbridge must still be there (bounded check: it would exit at once).
    let gone = poll_until(Duration::from_millis(500), POLL, || {
        child.try_wait().unwrap()
    });
    assert!(
        gone.is_none(),
        "ccbridge stopped on Ctrl-C while Claude runs"
    );
    assert_eq!(lock_files(&sb.ide()).len(), 1);
    std::fs::write(&go, "").unwrap();
    assert!(exits(&mut child).success());
    assert!(lock_files(&sb.ide()).is_empty());
}

#[test]
fn claude_missing_is_a_clear_error() {
    let sb = Sandbox::new();
    let out = sb
        .command(&["claude"])
        .env("PATH", sb.home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`claude` is not on PATH") && err.contains("--claude"),
        "{err}"
    );
    assert!(lock_files(&sb.ide()).is_empty(), "nothing was started");
    let out = sb
        .command(&["claude", "--claude", "/no/such/claude"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
}

#[test]
fn serve_offers_the_agents_asked_for_and_removes_their_files() {
    let sb = Sandbox::new();
    // All four by default: the banner says how to start each.
    let codex_socket = sb.home.path().join(format!(
        "codex-ipc/ipc-{}.sock",
        rustix::process::getuid().as_raw()
    ));
    let mut child = sb
        .command(&["serve"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let files = poll_until(Duration::from_secs(10), POLL, || {
        let (g, q) = (sb.gemini_files(), sb.qwen_files());
        (g.len() == 1 && q.len() == 1 && !lock_files(&sb.ide()).is_empty()).then_some((g, q))
    })
    .expect("a lock file and one discovery file per agent");
    let gemini: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files.0[0]).unwrap()).unwrap();
    assert_eq!(gemini["workspacePath"], sb.ws.to_str().unwrap(), "{gemini}");
    assert_eq!(gemini["ideInfo"]["displayName"], "ccbridge", "{gemini}");
    let qwen: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&files.1[0]).unwrap()).unwrap();
    assert_eq!(qwen["ppid"], child.id(), "{qwen}");
    assert_ne!(gemini["port"], qwen["port"], "a server per agent");
    assert_ne!(gemini["authToken"], qwen["authToken"], "a token per agent");
    poll_until(Duration::from_secs(10), POLL, || {
        codex_socket.exists().then_some(())
    })
    .expect("Codex's router socket, hosted");
    signal(&child, rustix::process::Signal::TERM);
    assert!(exits(&mut child).success());
    assert!(
        sb.gemini_files().is_empty() && sb.qwen_files().is_empty(),
        "files left"
    );
    assert!(
        !codex_socket.exists(),
        "the Codex socket is removed on exit"
    );
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(out.contains("Claude Code finds it"), "{out}");
    assert!(
        out.contains("Gemini CLI and Qwen Code find it too: start `gemini` or `qwen`"),
        "{out}"
    );
    assert!(out.contains("Codex CLI finds it too"), "{out}");

    // Gemini CLI alone: no lock file for Claude Code, no Qwen file.
    let mut child = sb
        .command(&["serve", "--agents", "gemini"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    poll_until(Duration::from_secs(10), POLL, || {
        (sb.gemini_files().len() == 1).then_some(())
    })
    .expect("the Gemini file");
    assert!(
        lock_files(&sb.ide()).is_empty(),
        "no lock file without claude"
    );
    assert!(sb.qwen_files().is_empty());
    signal(&child, rustix::process::Signal::TERM);
    assert!(exits(&mut child).success());
    assert!(sb.gemini_files().is_empty());
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(!out.contains("Claude Code finds it"), "{out}");
    assert!(out.contains("Gemini CLI find it too"), "{out}");
    assert!(!out.contains("Codex CLI"), "{out}");
    assert!(!codex_socket.exists(), "no Codex socket without codex");

    // `ccbridge claude` runs Claude Code: leaving it out is a usage error.
    let out = sb
        .command(&["claude", "--agents", "qwen"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("add claude to --agents"),
        "{out:?}"
    );
    let out = sb
        .command(&["serve", "--agents", "claude,vscode"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("known: claude, gemini, qwen"),
        "{out:?}"
    );
}

/// Issue 20, items 4 and 7: with the common limit of 1,024 open files,
/// 1,100 idle sockets to the tools port made the page, the tools server
/// and the IDE port all unreachable, without any token (the tools and
/// companion ports had no connection cap and no header timeout), and 64
/// idle sockets to the page locked its user out. Now each loopback HTTP
/// server holds a bounded number of connections and keeps slots for
/// signed-in clients: the user, Claude and the tools' client still get in.
#[test]
fn idle_socket_floods_lock_nobody_out_under_a_1024_file_limit() {
    use std::io::Write;
    fn limit_files() -> std::io::Result<()> {
        let limit = rustix::process::Rlimit {
            current: Some(1024),
            maximum: Some(1024),
        };
        rustix::process::setrlimit(rustix::process::Resource::Nofile, limit)
            .map_err(std::io::Error::from)
    }
    let sb = Sandbox::new();
    let (mut child, url, lock) = sb.serve_with_link(&[], Some(limit_files));
    let base = url.split_once("/#token=").unwrap().0;
    let ui_port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    let parsed = LockFile::parse(&std::fs::read(&lock).unwrap()).unwrap();
    let ide_port = parsed_port(&lock);
    let tools = parsed.tools.clone().expect("the tools server");
    let tools_port = ccbridge_testkit::http::url_port(&tools.url);
    // The flood: far more sockets than ccbridge may open files.
    let mut flood = Vec::new();
    for port in std::iter::repeat_n(tools_port, 1100).chain(std::iter::repeat_n(ui_port, 200)) {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        // Half a request head, as a slow client sends it.
        let _ = s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1");
        flood.push(s);
    }
    let wait = Duration::from_secs(10);
    // The page's user signs in and reads the state.
    let a = sign_in(&url);
    assert_eq!(a.status, 200, "the page's user was locked out: {}", a.head);
    let session: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    let auth = format!("Bearer {}", session["session"].as_str().unwrap());
    let a = ccbridge_testkit::http::request(
        ui_port,
        "GET",
        "/api/state",
        &[
            ("Host", &format!("127.0.0.1:{ui_port}")),
            ("Authorization", &auth),
        ],
        "",
        wait,
    );
    assert_eq!(a.status, 200, "{}", a.head);
    // The tools' client opens a session.
    let sid = ccbridge_testkit::http::mcp_session(tools_port, &tools.token, wait);
    assert!(!sid.is_empty());
    // Claude connects to the IDE port.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ide_token = parsed.auth_token.clone();
    rt.block_on(async {
        let mut c =
            ccbridge_client::ws_client::IdeClient::connect(ide_port, ide_token.as_deref(), wait)
                .await
                .expect("the IDE port still accepts Claude");
        c.list_tools().await.expect("and answers it");
    });
    drop(flood);
    signal(&child, rustix::process::Signal::TERM);
    assert!(exits(&mut child).success());
    assert!(!lock.exists());
}

/// Issue 19, item 3: the printed link works once and scrolls away (Claude's
/// full screen hides it). `ccbridge link` in the workspace asks the running
/// ccbridge for a fresh one; `ccbridge list` says where the page is. The
/// lock file's link-making token makes links and does nothing else, and
/// neither command prints it.
#[test]
fn link_prints_a_fresh_one_time_link_from_another_terminal() {
    let sb = Sandbox::new();
    let (mut child, printed, lock) = sb.serve_with_link(&[], None);
    let parsed = LockFile::parse(&std::fs::read(&lock).unwrap()).unwrap();
    let page = parsed.page.clone().expect("the page is in the lock file");
    let base = printed.split('#').next().unwrap();
    assert_eq!(page.url, base);
    let ui_port: u16 = base
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let out = sb.command(&["link"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let link = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(link.starts_with(&format!("{base}#token=")), "{link}");
    assert_ne!(link, printed, "a fresh link");
    assert_eq!(sign_in(&link).status, 200, "the new link signs in");
    assert_eq!(sign_in(&link).status, 401, "once");
    assert_eq!(
        sign_in(&printed).status,
        200,
        "the printed link is still good"
    );
    // The link-making token reads nothing.
    let state = ccbridge_testkit::http::request(
        ui_port,
        "GET",
        "/api/state",
        &[
            ("Host", &format!("127.0.0.1:{ui_port}")),
            ("Authorization", &format!("Bearer {}", page.link_token)),
        ],
        "",
        Duration::from_secs(10),
    );
    assert_eq!(state.status, 401);
    // `list` says where the page is, never the token.
    let listed = sb.command(&["list"]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.contains(&format!("review page of {}", parsed_port(&lock))),
        "{listed}"
    );
    assert!(listed.contains(base), "{listed}");
    let json = sb.command(&["list", "--json"]).output().unwrap();
    let json = String::from_utf8_lossy(&json.stdout).into_owned();
    assert!(json.contains(&format!("\"page\": \"{base}\"")), "{json}");
    for text in [&listed, &json] {
        assert!(!text.contains(&page.link_token), "the token was printed");
    }
    // Elsewhere, a clear error.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = sb
        .command(&["link", "--workspace", elsewhere.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no running ccbridge serves a review page"),
        "{out:?}"
    );
    signal(&child, rustix::process::Signal::TERM);
    assert!(exits(&mut child).success());
}

/// `POST /api/session` with the token of a printed `link`, as the page does.
fn sign_in(link: &str) -> ccbridge_testkit::http::Answer {
    let (base, token) = link.split_once("/#token=").expect("a link with a token");
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    ccbridge_testkit::http::request(
        port,
        "POST",
        "/api/session",
        &[
            ("Host", &format!("127.0.0.1:{port}")),
            ("Content-Type", "application/json"),
        ],
        &format!("{{\"token\":\"{token}\"}}"),
        Duration::from_secs(10),
    )
}

fn parsed_port(lock: &std::path::Path) -> u16 {
    lock.file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .unwrap()
}

/// Issue 19: a second `ccbridge serve` in the same folder made Claude
/// Code's `/ide` list two identical entries. It now says which ccbridge
/// already serves the folder and how to reach its page, and starts only
/// with `--allow-duplicate`.
#[test]
fn a_second_serve_in_the_same_folder_points_to_the_first() {
    let sb = Sandbox::new();
    let (mut first, _, lock) = sb.serve_with_link(&["--no-tools"], None);
    let second = sb.command(&["serve", "--no-tools"]).output().unwrap();
    assert!(!second.status.success(), "{second:?}");
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains(&format!(
            "already serves {} on port {}",
            sb.ws.display(),
            parsed_port(&lock)
        )) && err.contains("ccbridge link")
            && err.contains("--allow-duplicate"),
        "{err}"
    );
    assert_eq!(lock_files(&sb.ide()).len(), 1, "no second lock file");
    // Asked for, a second one starts.
    let mut again = sb
        .command(&["serve", "--no-tools", "--allow-duplicate"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    poll_until(Duration::from_secs(10), POLL, || {
        (lock_files(&sb.ide()).len() == 2).then_some(())
    })
    .expect("a second lock file");
    for c in [&mut first, &mut again] {
        signal(c, rustix::process::Signal::TERM);
        assert!(exits(c).success());
    }
}
