//! `ccbridge list`, `call` and `clean` through the real binary, against a
//! real `ccbridge serve --stdio` — the way a user inspects an IDE server.

use ccbridge_protocol::lockfile::LockFile;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ccbridge");

/// A sandbox (`HOME` and `CLAUDE_CONFIG_DIR`) with a running sidecar.
struct Rig {
    home: tempfile::TempDir,
    ws: PathBuf,
    server: Child,
    port: u16,
}

impl Rig {
    fn start() -> Rig {
        let home = tempfile::tempdir().unwrap();
        let ws = home.path().join("project");
        std::fs::create_dir(&ws).unwrap();
        let ws = std::fs::canonicalize(ws).unwrap();
        let server = Command::new(BIN)
            .args(["serve", "--stdio", "--ide-name", "CliTest", "--workspace"])
            .arg(&ws)
            .env("HOME", home.path())
            .env("TMPDIR", home.path())
            .env("CLAUDE_CONFIG_DIR", home.path().join("cfg"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let ide = home.path().join("cfg/ide");
        let end = Instant::now() + Duration::from_secs(10);
        let port = loop {
            let found = std::fs::read_dir(&ide).ok().and_then(|d| {
                d.flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_str()
                            .and_then(LockFile::port_from_file_name)
                    })
                    .next()
            });
            if let Some(p) = found {
                break p;
            }
            assert!(Instant::now() < end, "no lock file");
            std::thread::sleep(Duration::from_millis(10));
        };
        Rig {
            home,
            ws,
            server,
            port,
        }
    }

    fn ide_dir(&self) -> PathBuf {
        self.home.path().join("cfg/ide")
    }

    fn ccbridge(&self, args: &[&str], cwd: &Path) -> Output {
        Command::new(BIN)
            .args(args)
            .current_dir(cwd)
            .env("HOME", self.home.path())
            .env("TMPDIR", self.home.path())
            .env("CLAUDE_CONFIG_DIR", self.home.path().join("cfg"))
            .env_remove("CLAUDE_CODE_SSE_PORT")
            .output()
            .unwrap()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        drop(self.server.stdin.take());
        let _ = self.server.wait();
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn list_shows_the_running_server_without_its_token() {
    let rig = Rig::start();
    let out = rig.ccbridge(&["list", "--json"], &rig.ws);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let entry = v
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["port"] == rig.port)
        .unwrap_or_else(|| panic!("port {} not listed: {v}", rig.port));
    assert_eq!(entry["ideName"], "CliTest", "{entry}");
    assert_eq!(
        entry["workspaceFolders"][0],
        rig.ws.to_str().unwrap(),
        "{entry}"
    );
    assert_eq!(entry["pidAlive"], true, "{entry}");
    assert_eq!(entry["portAnswers"], true, "{entry}");
    assert_eq!(
        entry["containsCwd"], true,
        "listed from inside the workspace: {entry}"
    );
    assert_eq!(entry["hasAuthToken"], true, "{entry}");
    let text = serde_json::to_string(&v).unwrap();
    let token =
        LockFile::parse(&std::fs::read(rig.ide_dir().join(format!("{}.lock", rig.port))).unwrap())
            .unwrap()
            .auth_token
            .unwrap();
    assert!(!text.contains(&token), "list must never print the token");
    let table = rig.ccbridge(&["list"], &rig.ws);
    assert!(stdout(&table).contains("CliTest"), "{table:?}");
    assert!(!stdout(&table).contains(&token));
}

#[test]
fn call_by_workspace_and_by_port() {
    let rig = Rig::start();
    let inside = rig.ws.join("src");
    std::fs::create_dir(&inside).unwrap();
    let out = rig.ccbridge(&["call", "getWorkspaceFolders"], &inside);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["rootPath"], rig.ws.to_str().unwrap(), "{v}");

    let port = rig.port.to_string();
    let out = rig.ccbridge(
        &["call", "--port", &port, "getDiagnostics"],
        rig.home.path(),
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout(&out).trim(), "[]");

    let uri = format!(r#"{{"uri":"file://{}/a.rs"}}"#, rig.ws.display());
    let out = rig.ccbridge(
        &["call", "--port", &port, "--raw", "getDiagnostics", &uri],
        rig.home.path(),
    );
    assert!(out.status.success(), "{out:?}");
    let raw: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        raw["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("/a.rs"),
        "{raw}"
    );

    let list = rig.ccbridge(&["call", "--port", &port, "--list"], rig.home.path());
    assert!(stdout(&list).contains("openDiff"), "{list:?}");
    assert!(
        !stdout(&list).contains("executeCode"),
        "not offered without the capability"
    );
}

#[test]
fn call_exit_codes() {
    let rig = Rig::start();
    let port = rig.port.to_string();
    let elsewhere = tempfile::tempdir().unwrap();
    let none = rig.ccbridge(&["call", "getDiagnostics"], elsewhere.path());
    assert_eq!(
        none.status.code(),
        Some(3),
        "no server for this directory: {none:?}"
    );
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("ccbridge list"),
        "{none:?}"
    );
    // Regression: `call --workspace` named through a symbolic link matched
    // nothing (it was resolved as written; lock files hold real paths).
    let link = elsewhere.path().join("link");
    std::os::unix::fs::symlink(&rig.ws, &link).unwrap();
    let through = rig.ccbridge(
        &[
            "call",
            "--workspace",
            link.to_str().unwrap(),
            "getWorkspaceFolders",
        ],
        elsewhere.path(),
    );
    assert_eq!(through.status.code(), Some(0), "{through:?}");
    // Regression: `link` and `mcp-config` exited 1 where nothing serves
    // the folder, which main.rs says is 3, as `call` does.
    for args in [&["link"][..], &["mcp-config"][..]] {
        let none = rig.ccbridge(args, elsewhere.path());
        assert_eq!(none.status.code(), Some(3), "{args:?}: {none:?}");
        assert!(
            String::from_utf8_lossy(&none.stderr).contains("no running ccbridge serves"),
            "{none:?}"
        );
    }
    let bad_json = rig.ccbridge(
        &["call", "--port", &port, "getDiagnostics", "{nope"],
        rig.home.path(),
    );
    assert_eq!(bad_json.status.code(), Some(2), "{bad_json:?}");
    let tool_error = rig.ccbridge(
        &["call", "--port", &port, "checkDocumentDirty", "{}"],
        rig.home.path(),
    );
    assert_eq!(
        tool_error.status.code(),
        Some(1),
        "isError result: {tool_error:?}"
    );
    assert!(!String::from_utf8_lossy(&tool_error.stderr).is_empty());
}

#[test]
fn clean_removes_stale_locks_and_keeps_live_ones() {
    let rig = Rig::start();
    let dead_pid = {
        let mut c = Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    };
    // A port nothing listens on: bind one and drop it.
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let stale = rig.ide_dir().join(format!("{free}.lock"));
    std::fs::write(
        &stale,
        LockFile::new(dead_pid, vec![], "Gone".into(), "t".into()).to_json(),
    )
    .unwrap();
    let live = rig.ide_dir().join(format!("{}.lock", rig.port));

    let dry = rig.ccbridge(&["clean", "--dry-run"], rig.home.path());
    assert!(dry.status.success(), "{dry:?}");
    assert!(stale.exists(), "--dry-run removes nothing");
    let out = rig.ccbridge(&["clean", "--json"], rig.home.path());
    assert!(out.status.success(), "{out:?}");
    assert!(!stale.exists(), "{out:?}");
    assert!(live.exists(), "a live server's lock is kept");
}

/// A pid that is not running any more.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// A port nothing listens on.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The rig's live discovery files: (agent, port, path) from `list --json`.
fn listed_agents(rig: &Rig) -> Vec<serde_json::Value> {
    let out = rig.ccbridge(&["list", "--json"], &rig.ws);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["agent"] != "claude" && e["agent"] != "codex")
        .cloned()
        .collect()
}

/// `ccbridge list --json`'s Codex socket entries.
fn listed_codex(rig: &Rig, cwd: &Path) -> Vec<serde_json::Value> {
    let out = rig.ccbridge(&["list", "--json"], cwd);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["agent"] == "codex")
        .cloned()
        .collect()
}

#[test]
fn list_and_clean_cover_codexs_sockets() {
    let rig = Rig::start();
    let socket = rig.home.path().join(format!(
        "codex-ipc/ipc-{}.sock",
        rustix::process::getuid().as_raw()
    ));
    let end = Instant::now() + Duration::from_secs(10);
    let live = loop {
        let live = listed_codex(&rig, &rig.ws);
        if live.iter().any(|e| e["answersCwd"] == true) {
            break live;
        }
        assert!(Instant::now() < end, "Codex's socket not listed: {live:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0]["socket"], socket.to_str().unwrap());
    assert_eq!(live[0]["state"], "live");
    // Outside the workspace, the router has nobody to answer.
    let outside = listed_codex(&rig, rig.home.path());
    assert_eq!(outside[0]["answersCwd"], false, "{outside:?}");
    assert_eq!(outside[0]["error"], "no-client-found", "{outside:?}");
    let table = stdout(&rig.ccbridge(&["list"], &rig.ws));
    assert!(
        table.contains("CODEX SOCKET") && table.contains("yes ("),
        "{table}"
    );
    let clean = rig.ccbridge(&["clean", "--json"], rig.home.path());
    assert!(socket.exists(), "a live socket is kept: {clean:?}");

    // The sidecar goes, and so does its socket; one left by a killed host
    // is listed as stale and cleaned.
    let mut rig = rig;
    drop(rig.server.stdin.take());
    let _ = rig.server.wait();
    assert!(!socket.exists(), "the hosted socket is removed on exit");
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let stale = listed_codex(&rig, rig.home.path());
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert_eq!(stale[0]["state"], "stale", "{stale:?}");
    let dry = rig.ccbridge(&["clean", "--dry-run"], rig.home.path());
    assert!(stdout(&dry).contains("Codex CLI"), "{dry:?}");
    assert!(socket.exists(), "--dry-run removes nothing");
    let out = rig.ccbridge(&["clean", "--json"], rig.home.path());
    assert!(out.status.success(), "{out:?}");
    assert!(!socket.exists(), "{out:?}");
    drop(rig);
}

#[test]
fn list_and_clean_cover_the_gemini_and_qwen_discovery_files() {
    let rig = Rig::start();
    let gemini_dir = rig.home.path().join("gemini/ide");
    let qwen_dir = rig.home.path().join(".qwen/ide");
    // The sidecar writes its companion files right after its lock file.
    let end = Instant::now() + Duration::from_secs(10);
    let live = loop {
        let live = listed_agents(&rig);
        if live.len() == 2 {
            break live;
        }
        assert!(Instant::now() < end, "companion files not listed: {live:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    for agent in ["gemini", "qwen"] {
        let e = live
            .iter()
            .find(|e| e["agent"] == agent)
            .unwrap_or_else(|| panic!("no {agent} entry: {live:?}"));
        assert_eq!(e["ideName"], "CliTest", "{e}");
        assert_eq!(e["workspaceFolders"][0], rig.ws.to_str().unwrap(), "{e}");
        assert_eq!(e["portAnswers"], true, "{e}");
        assert_eq!(e["pidAlive"], true, "{e}");
        assert_eq!(e["containsCwd"], true, "{e}");
        let file = std::fs::read_to_string(e["lockFile"].as_str().unwrap()).unwrap();
        let token: serde_json::Value = serde_json::from_str(&file).unwrap();
        let token = token["authToken"].as_str().unwrap().to_owned();
        let listed = rig.ccbridge(&["list"], &rig.ws);
        assert!(
            !stdout(&listed).contains(&token),
            "list never shows a token"
        );
        assert!(stdout(&listed).contains("DISCOVERY FILE"), "{listed:?}");
    }

    // Left behind by companions that died.
    let (dead, port) = (dead_pid(), free_port());
    let stale_gemini = gemini_dir.join(format!("gemini-ide-server-{dead}-{port}.json"));
    std::fs::write(
        &stale_gemini,
        format!(r#"{{"port":{port},"workspacePath":"/gone","authToken":"t"}}"#),
    )
    .unwrap();
    let port = free_port();
    let stale_qwen = qwen_dir.join(format!("{port}.lock"));
    std::fs::write(
        &stale_qwen,
        format!(r#"{{"port":{port},"workspacePath":"/gone","authToken":"t","ppid":{dead}}}"#),
    )
    .unwrap();
    let dry = rig.ccbridge(&["clean", "--dry-run"], rig.home.path());
    assert!(dry.status.success(), "{dry:?}");
    assert!(
        stale_gemini.exists() && stale_qwen.exists(),
        "--dry-run removes nothing"
    );
    let out = rig.ccbridge(&["clean", "--json"], rig.home.path());
    assert!(out.status.success(), "{out:?}");
    assert!(!stale_gemini.exists(), "{out:?}");
    assert!(!stale_qwen.exists(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let agents: Vec<&str> = report["removed"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["agent"].as_str())
        .collect();
    assert!(
        agents.contains(&"Gemini CLI") && agents.contains(&"Qwen Code"),
        "{report}"
    );
    for e in &live {
        assert!(
            Path::new(e["lockFile"].as_str().unwrap()).exists(),
            "a live companion's file is kept: {e}"
        );
    }

    // And they go when the sidecar does.
    let files: Vec<PathBuf> = live
        .iter()
        .map(|e| PathBuf::from(e["lockFile"].as_str().unwrap()))
        .collect();
    drop(rig);
    for f in files {
        assert!(!f.exists(), "{} left behind", f.display());
    }
}

/// Runs ccbridge in `home` (its `HOME` and `TMPDIR`) and waits for it at
/// most `limit`: a command that blocks (on a FIFO, say) is killed and the
/// test fails, instead of hanging.
fn ccbridge_bounded(home: &Path, args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("TMPDIR", home)
        .env("CLAUDE_CONFIG_DIR", home.join("cfg"))
        .env_remove("CLAUDE_CODE_SSE_PORT")
        .env_remove("QWEN_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= end {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("ccbridge {args:?} still ran after {limit:?} (blocked?): {out:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Security issue 20, item 10: `ccbridge list` and `clean` opened every
/// file named like a Gemini discovery file in Gemini's shared folder
/// (`/tmp/gemini/ide`) with a blocking open, so a FIFO planted there by
/// anybody hung them for good. Now nothing there that is not a regular
/// file is opened (it is listed as skipped and never removed), a huge
/// file is not read whole, and another user's files are left alone.
#[test]
fn list_and_clean_do_not_hang_on_a_fifo_planted_in_the_shared_gemini_folder() {
    use std::os::unix::fs::MetadataExt;
    let home = tempfile::tempdir().unwrap();
    let gemini = home.path().join("gemini/ide");
    let qwen = home.path().join(".qwen/ide");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::create_dir_all(&qwen).unwrap();
    let dead = dead_pid();
    let named = |port: u16| gemini.join(format!("gemini-ide-server-{dead}-{port}.json"));
    let fifo = named(free_port());
    let link = named(free_port());
    let sparse = named(free_port());
    let stale = named(free_port());
    let qwen_fifo = qwen.join(format!("{}.lock", free_port()));
    for f in [&fifo, &qwen_fifo] {
        rustix::fs::mkfifoat(rustix::fs::CWD, f, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
    }
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    std::fs::write(
        &stale,
        r#"{"port":1,"workspacePath":"/gone","authToken":"t"}"#,
    )
    .unwrap();
    // Another user's file, where we can make one (as root).
    let foreign = named(free_port());
    let as_root = rustix::process::geteuid().is_root();
    if as_root {
        std::fs::write(
            &foreign,
            r#"{"port":1,"workspacePath":"/theirs","authToken":"t"}"#,
        )
        .unwrap();
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        assert_eq!(std::fs::metadata(&foreign).unwrap().uid(), 65534);
    }
    let limit = Duration::from_secs(20);
    let path_of = |e: &serde_json::Value| PathBuf::from(e["lockFile"].as_str().unwrap_or(""));

    let out = ccbridge_bounded(home.path(), &["list", "--json"], limit);
    assert!(out.status.success(), "{out:?}");
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let entry = |p: &Path| listed.iter().find(|e| path_of(e) == p).cloned();
    for (p, what) in [
        (&fifo, "a FIFO"),
        (&qwen_fifo, "a FIFO"),
        (&link, "a symbolic link"),
    ] {
        let e = entry(p).unwrap_or_else(|| panic!("{} not listed: {listed:?}", p.display()));
        assert_eq!(e["skipped"], true, "{e}");
        assert!(e["error"].as_str().unwrap().contains(what), "{e}");
    }
    let e = entry(&sparse).expect("the huge file is listed");
    assert_eq!(e["skipped"], false, "{e}");
    assert!(e["error"].as_str().unwrap().contains("larger than"), "{e}");
    let e = entry(&stale).expect("the stale file is listed");
    assert_eq!(e["error"], serde_json::Value::Null, "{e}");
    assert!(entry(&foreign).is_none(), "another user's file is left out");

    let out = ccbridge_bounded(home.path(), &["list"], limit);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout(&out).contains("(skipped: a FIFO"), "{out:?}");

    let out = ccbridge_bounded(home.path(), &["clean", "--json"], limit);
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let removed: Vec<PathBuf> = report["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| PathBuf::from(r["path"].as_str().unwrap_or("")))
        .collect();
    for p in [&fifo, &qwen_fifo, &link] {
        assert!(
            std::fs::symlink_metadata(p).is_ok(),
            "{} was removed: {report}",
            p.display()
        );
        assert!(!removed.contains(p), "{report}");
    }
    assert!(
        !stale.exists() && !sparse.exists(),
        "stale files go: {report}"
    );
    if as_root {
        assert!(foreign.exists(), "another user's file is never removed");
    }
}
