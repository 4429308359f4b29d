//! `ccbridge_companion::launch` beside a real engine: each agent's
//! discovery file says what the lock file says, follows it when the editor
//! changes its workspace or name (before the change is acknowledged), and
//! is gone once the servers stop.
//!
//! The agents' folders are named by this process's `TMPDIR` and
//! `QWEN_HOME`, which the test's process shares with every other test of
//! the binary (a `TMPDIR` changed meanwhile would move their temporary
//! folders too): the test runs again in a process of its own with both
//! pointing at a temporary folder (`ccbridge_testkit::alone`).

use ccbridge_companion::launch::{self, Options};
use ccbridge_companion::CompanionAgent;
use ccbridge_server::{Config, EditorEvent, NoEditor, Server};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_files_follow_the_lock_file_and_go_with_the_servers() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let qwen_home = root.join("qwen");
    if !ccbridge_testkit::alone::rerun(
        module_path!(),
        "discovery_files_follow_the_lock_file_and_go_with_the_servers",
        &[
            ("TMPDIR", root.as_os_str()),
            ("QWEN_HOME", qwen_home.as_os_str()),
        ],
    ) {
        return;
    }
    // In the process of its own: the parent's folder.
    let root = std::env::temp_dir();
    let (a, b) = (root.join("a"), root.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();

    let mut config = Config::new("First", vec![a.display().to_string()]);
    config.lock_dir = Some(root.join("ide"));
    config.pid = 4242;
    let server = Server::bind(config, Arc::new(NoEditor)).await.unwrap();
    server.publish().unwrap();
    let engine = server.handle();
    let (stop_engine, engine_stopped) = tokio::sync::oneshot::channel::<()>();
    let engine_task = tokio::spawn(server.run(async move {
        let _ = engine_stopped.await;
    }));

    let running = launch::start(&Options::default(), &engine).await;
    assert!(running.problems().is_empty(), "{:?}", running.problems());
    let served = running.served().to_vec();
    assert_eq!(
        served.iter().map(|s| s.agent).collect::<Vec<_>>(),
        vec![CompanionAgent::Gemini, CompanionAgent::Qwen]
    );
    let gemini = &served[0];
    let qwen = &served[1];
    assert_eq!(
        gemini.file,
        root.join(format!(
            "gemini/ide/gemini-ide-server-4242-{}.json",
            gemini.port
        ))
    );
    assert_eq!(qwen.file, root.join(format!("qwen/ide/{}.lock", qwen.port)));
    let g = read(&gemini.file);
    assert_eq!(g["port"], gemini.port);
    assert_eq!(g["workspacePath"], a.to_str().unwrap());
    assert_eq!(g["ideInfo"]["displayName"], "First");
    assert_eq!(read(&qwen.file)["ppid"], 4242);
    use std::os::unix::fs::PermissionsExt;
    for f in [&gemini.file, &qwen.file] {
        let mode = std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", f.display());
        let dir_mode = std::fs::metadata(f.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700, "{}", f.display());
    }
    let env = running
        .env(CompanionAgent::Qwen, &[a.display().to_string()])
        .unwrap();
    assert!(env.contains(&("QWEN_CODE_IDE_SERVER_PORT".into(), qwen.port.to_string())));

    // The editor moves to other folders and renames itself: once that is
    // applied, both files say so.
    engine
        .apply(EditorEvent::Workspace {
            folders: Some(vec![a.display().to_string(), b.display().to_string()]),
            ide_name: Some("Second".into()),
            pid: Some(4343),
        })
        .await
        .unwrap();
    let joined = format!("{}:{}", a.display(), b.display());
    // Gemini CLI finds its file by the pid in the name: a new name, the old
    // file gone (it kept the first pid's name, and Gemini CLI in VS Code,
    // which names its main process, found nothing).
    let renamed = root.join(format!(
        "gemini/ide/gemini-ide-server-4343-{}.json",
        gemini.port
    ));
    assert!(!gemini.file.exists(), "the old name is left");
    let g = read(&renamed);
    assert_eq!(g["workspacePath"], joined.as_str());
    assert_eq!(g["ideInfo"]["displayName"], "Second");
    let q = read(&qwen.file);
    assert_eq!(q["workspacePath"], joined.as_str());
    assert_eq!(q["ppid"], 4343);
    assert_eq!(q["ideName"], "Second");

    // Qwen Code's folder gone (a cleaner emptied it): the change is
    // still acknowledged (it was refused with -32603, although Claude's
    // lock file was rewritten) and Gemini CLI's file follows it.
    std::fs::remove_dir_all(qwen.file.parent().unwrap()).unwrap();
    engine
        .apply(EditorEvent::Workspace {
            folders: None,
            ide_name: Some("Third".into()),
            pid: None,
        })
        .await
        .expect("a companion's file does not fail the change");
    assert_eq!(read(&renamed)["ideInfo"]["displayName"], "Third");

    running.stopped().await;
    assert!(
        !renamed.exists() && !qwen.file.exists(),
        "files left behind"
    );
    let tokens = [&g, &q].map(|file| file["authToken"].as_str().unwrap().to_owned());
    for (s, token) in served.iter().zip(&tokens) {
        assert!(
            !ccbridge_testkit::http::mcp_server_answers(s.port, token, Duration::from_secs(5)),
            "{:?} still answers",
            s.agent
        );
    }
    // The lock file no longer drags the removed files along.
    engine
        .apply(EditorEvent::Workspace {
            folders: None,
            ide_name: Some("Third".into()),
            pid: None,
        })
        .await
        .unwrap();
    let _ = stop_engine.send(());
    engine_task.await.unwrap().unwrap();
}

/// A ccbridge killed (SIGKILL, out of memory) left its Gemini CLI file, named
/// with its editor's pid, which still runs; the editor's next ccbridge wrote
/// a second one, and Gemini CLI, finding two files of its editor, could pick
/// the dead port. The next start removes this editor's files whose port
/// nothing listens on, and leaves any other's.
#[tokio::test(flavor = "multi_thread")]
async fn regression_a_killed_ccbridges_file_of_the_same_editor_is_swept_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    if !ccbridge_testkit::alone::rerun(
        module_path!(),
        "regression_a_killed_ccbridges_file_of_the_same_editor_is_swept_at_start",
        &[
            ("TMPDIR", root.as_os_str()),
            ("QWEN_HOME", root.join("qwen").as_os_str()),
        ],
    ) {
        return;
    }
    let root = std::env::temp_dir();
    let gemini = root.join("gemini/ide");
    std::fs::create_dir_all(&gemini).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&gemini, std::fs::Permissions::from_mode(0o700)).unwrap();
    // A port nothing listens on (bound, then let go), and one that answers.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let live = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let live_port = live.local_addr().unwrap().port();
    // This test's process runs: its pid stands for the editor.
    let editor = std::process::id();
    let other = editor + 1;
    let stale = gemini.join(format!("gemini-ide-server-{editor}-{dead}.json"));
    let answering = gemini.join(format!("gemini-ide-server-{editor}-{live_port}.json"));
    let others = gemini.join(format!("gemini-ide-server-{other}-{dead}.json"));
    for f in [&stale, &answering, &others] {
        std::fs::write(f, "{}").unwrap();
    }
    let alive = |pid: u32| std::path::Path::new("/proc").join(pid.to_string()).exists();

    let mut config = Config::new("Editor", vec![root.display().to_string()]);
    config.lock_dir = Some(root.join("ide"));
    config.pid = editor;
    let server = Server::bind(config, Arc::new(NoEditor)).await.unwrap();
    let engine = server.handle();
    let running = launch::start(&Options::default(), &engine).await;
    assert!(
        !stale.exists(),
        "the dead port's file of this editor is left"
    );
    assert!(answering.exists(), "a file whose port answers was removed");
    assert_eq!(
        others.exists(),
        alive(other),
        "another editor's file: kept while its process runs, swept once gone"
    );
    running.stopped().await;
}
