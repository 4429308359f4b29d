//! The client against real language servers: pyright and
//! typescript-language-server (pinned in tests/e2e), ruff (pinned, from
//! PyPI, in the test command's cache), clangd (Debian's).
//! With pyright: a type error is published for an involved file and
//! cleared when the file is fixed on disk; a server that is killed is
//! restarted and the file's diagnostics come back; stopping kills the
//! server; a proposal is checked as its own document. With pyright and
//! ruff together: both report on one Python file, each fix clears only
//! its own server's diagnostics, and either works without the other. With
//! the others: a type error arrives with its 0-based place and a string
//! code.

use ccbridge_lsp::{LanguageServers, Options, Published, Update};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(60);

/// The next update `pick` takes, within [`WAIT`].
async fn next<T>(
    rx: &mut mpsc::Receiver<Update>,
    what: &str,
    mut pick: impl FnMut(Update) -> Option<T>,
) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(u)) => {
                if let Some(t) = pick(u) {
                    return t;
                }
            }
            Ok(None) => panic!("the language servers stopped while waiting for {what}"),
            Err(_) => panic!("no {what} within {WAIT:?}"),
        }
    }
}

/// The next publication for `path` that satisfies `ok`, within [`WAIT`].
async fn until(
    rx: &mut mpsc::Receiver<Update>,
    path: &Path,
    what: &str,
    ok: impl Fn(&Published) -> bool,
) -> Published {
    let path = path.to_string_lossy();
    next(rx, what, |u| match u {
        Update::Published(p) if p.path == path && ok(&p) => Some(p),
        _ => None,
    })
    .await
}

/// The first diagnostic of `p`, checked to be an error starting at
/// `line`:`character` (0-based).
fn assert_error_at(
    p: &Published,
    line: u32,
    character: u32,
) -> &ccbridge_protocol::editor::Diagnostic {
    let d = &p.diagnostics[0];
    assert_eq!(
        d.severity,
        ccbridge_protocol::editor::Severity::Error,
        "{d:?}"
    );
    assert_eq!(
        (d.range.start.line, d.range.start.character),
        (line, character),
        "{d:?}"
    );
    d
}

fn alive(pid: u32) -> bool {
    // A zombie counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_reports_fixes_restarts_and_stops() {
    let bin = ccbridge_testkit::pyright_bin_dir();
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let file = ws.join("bad.py");
    std::fs::write(&file, "x: int = \"not an int\"\n").unwrap();
    // Only pyright: a ruff on PATH would be a second server.
    let options = Options {
        search_dirs: vec![bin],
        search_path: false,
        backoff: Duration::from_millis(100),
        ..Options::default()
    };
    let (lsp, mut rx) = LanguageServers::start(options, vec![ws.clone()]);
    lsp.involve(&file);
    let p = until(&mut rx, &file, "the type error", |p| {
        !p.diagnostics.is_empty()
    })
    .await;
    let d = assert_error_at(&p, 0, 9);
    assert!(d.message.contains("int"), "{d:?}");
    assert!(d.code.is_some(), "pyright names its rule: {d:?}");

    // Fixed on disk, involved again: didChange, and the error goes.
    std::fs::write(&file, "x: int = 1\n").unwrap();
    lsp.involve(&file);
    until(&mut rx, &file, "the fix", |p| p.diagnostics.is_empty()).await;

    // Broken again, then the server killed: its file is cleared, then
    // reopened in the restarted server, whose error comes back.
    std::fs::write(&file, "y: str = 5\n").unwrap();
    lsp.involve(&file);
    until(&mut rx, &file, "the new error", |p| {
        !p.diagnostics.is_empty()
    })
    .await;
    let pids = lsp.pids().await;
    assert_eq!(pids.len(), 1, "{pids:?}");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pids[0] as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    until(&mut rx, &file, "the clearing after the crash", |p| {
        p.diagnostics.is_empty()
    })
    .await;
    until(&mut rx, &file, "the error from the restarted server", |p| {
        p.diagnostics.iter().any(|d| d.message.contains("str"))
    })
    .await;
    let restarted = lsp.pids().await;
    assert_eq!(restarted.len(), 1);
    assert_ne!(restarted, pids);

    lsp.stop().await;
    assert!(!alive(restarted[0]), "the server outlived stop()");
}

#[tokio::test]
async fn files_outside_the_workspace_or_of_no_language_start_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(ws.join("notes.md"), "# hi\n").unwrap();
    let (lsp, _rx) = LanguageServers::start(
        Options {
            search_dirs: vec![ccbridge_testkit::pyright_bin_dir()],
            ..Options::default()
        },
        vec![ws.join("sub")],
    );
    lsp.involve(ws.join("notes.md"));
    lsp.involve("/etc/passwd.py");
    assert!(lsp.pids().await.is_empty());
    lsp.stop().await;
}

/// The next [`Update::Proposed`] for `path` that satisfies `ok`, within
/// [`WAIT`]; a publication naming the shadow document as a file of its own
/// fails the test.
async fn until_proposed(
    rx: &mut mpsc::Receiver<Update>,
    path: &Path,
    what: &str,
    ok: impl Fn(&Published) -> bool,
) -> Published {
    let want = path.to_string_lossy();
    next(rx, what, |u| match u {
        Update::Proposed(p) if p.path == want && ok(&p) => Some(p),
        Update::Published(p) => {
            assert!(
                !p.path.contains("ccbridge-proposed"),
                "the shadow document leaked as a file: {p:?}"
            );
            None
        }
        _ => None,
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposal_is_checked_as_its_own_document_beside_the_file() {
    let bin = ccbridge_testkit::pyright_bin_dir();
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    // The proposal imports a sibling module: it resolves from the same
    // folder, as the file's own imports would.
    std::fs::write(
        ws.join("helper.py"),
        "def twice(n: int) -> int:\n    return 2 * n\n",
    )
    .unwrap();
    let file = ws.join("app.py");
    std::fs::write(&file, "from helper import twice\nx: int = twice(1)\n").unwrap();
    let options = Options {
        search_dirs: vec![bin],
        ..Options::default()
    };
    let (lsp, mut rx) = LanguageServers::start(options, vec![ws.clone()]);
    lsp.involve(&file);
    lsp.propose(
        &file,
        Some("from helper import twice\nx: int = twice(1)\ny: str = twice(2)\n".into()),
    );
    let p = until_proposed(&mut rx, &file, "the proposal's type error", |p| {
        !p.diagnostics.is_empty()
    })
    .await;
    assert_eq!(p.diagnostics.len(), 1, "{:?}", p.diagnostics);
    let d = &p.diagnostics[0];
    assert_eq!(
        (d.range.start.line, d.range.start.character),
        (2, 9),
        "{d:?}"
    );
    assert!(
        !ws.join(".app.ccbridge-proposed.py").exists(),
        "never on disk"
    );

    // Gone: cleared, and the file's own diagnostics were never touched.
    lsp.propose(&file, None);
    until_proposed(&mut rx, &file, "the clearing", |p| p.diagnostics.is_empty()).await;
    lsp.stop().await;
}

/// The first publication for a file of `name` (in a fresh workspace holding
/// `text`) with a diagnostic, from the server found in `search_dirs` (then
/// on `PATH`).
async fn first_error(name: &str, text: &str, search_dirs: Vec<std::path::PathBuf>) -> Published {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let file = ws.join(name);
    std::fs::write(&file, text).unwrap();
    let options = Options {
        search_dirs,
        ..Options::default()
    };
    let (lsp, mut rx) = LanguageServers::start(options, vec![ws.clone()]);
    lsp.involve(&file);
    let p = until(&mut rx, &file, "the type error", |p| {
        !p.diagnostics.is_empty()
    })
    .await;
    lsp.stop().await;
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_language_server_reports_a_type_error() {
    let bin = ccbridge_testkit::e2e_bin_dir("typescript-language-server");
    let p = first_error("bad.ts", "export const x: number = \"text\";\n", vec![bin]).await;
    let d = assert_error_at(&p, 0, 13);
    // TypeScript's numeric code, as the string Claude keeps.
    assert_eq!(d.code.as_deref(), Some("2322"), "{d:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clangd_reports_a_type_error() {
    assert!(
        std::process::Command::new("clangd")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "clangd is not installed: scripts/test installs Debian's clangd"
    );
    let p = first_error("bad.cpp", "int f() { return \"text\"; }\n", Vec::new()).await;
    let d = &p.diagnostics[0];
    assert_eq!(
        d.severity,
        ccbridge_protocol::editor::Severity::Error,
        "{d:?}"
    );
    assert_eq!(d.range.start.line, 0, "{d:?}");
    assert!(d.message.contains("int"), "{d:?}");
}

#[tokio::test]
async fn a_language_without_its_server_installed_is_said_to_have_none() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let file = ws.join("a.py");
    std::fs::write(&file, "x = 1\n").unwrap();
    let empty = ws.join("bin");
    std::fs::create_dir(&empty).unwrap();
    let options = Options {
        search_dirs: vec![empty.clone()],
        search_path: false,
        ..Options::default()
    };
    let (lsp, mut rx) = LanguageServers::start(options, vec![ws.clone()]);
    lsp.involve(&file);
    let got = next(&mut rx, "word of the missing server", |u| match u {
        Update::Unavailable { language, why } => Some((language, why)),
        _ => None,
    })
    .await;
    assert_eq!(got.0, "Python");
    assert!(got.1.contains("pyright-langserver"), "{}", got.1);
    assert!(got.1.contains(&empty.display().to_string()), "{}", got.1);
    assert!(!got.1.contains("PATH"), "PATH was not searched: {}", got.1);
    lsp.stop().await;
}

/// `p`'s diagnostics from `source` ("Pyright", "Ruff").
fn from<'a>(p: &'a Published, source: &str) -> Vec<&'a ccbridge_protocol::editor::Diagnostic> {
    p.diagnostics
        .iter()
        .filter(|d| d.source.as_deref() == Some(source))
        .collect()
}

/// A Pyright error (pyright also reports hints, such as an unused name).
fn pyright_errors(p: &Published) -> Vec<&ccbridge_protocol::editor::Diagnostic> {
    from(p, "Pyright")
        .into_iter()
        .filter(|d| d.severity == ccbridge_protocol::editor::Severity::Error)
        .collect()
}

fn ruff_codes(p: &Published) -> Vec<&str> {
    from(p, "Ruff")
        .iter()
        .filter_map(|d| d.code.as_deref())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_and_ruff_both_report_and_each_fix_clears_only_its_own() {
    let (_dir, file, lsp, mut rx) = python_workspace(None).await;
    let p = until(&mut rx, &file, "both servers' diagnostics", |p| {
        !pyright_errors(p).is_empty() && !ruff_codes(p).is_empty()
    })
    .await;
    // (ruff's other default rules say nothing about this file.)
    assert_eq!(ruff_codes(&p), ["F401"], "{:?}", p.diagnostics);
    let unused = from(&p, "Ruff")[0];
    assert_eq!(
        (unused.range.start.line, unused.range.start.character),
        (0, 7),
        "{unused:?}"
    );
    let e = pyright_errors(&p);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!((e[0].range.start.line, e[0].range.start.character), (2, 9));
    assert_eq!(lsp.pids().await.len(), 2, "one process per server");

    // The type error fixed: pyright's goes, ruff's stays. The first
    // publication after the change is already the whole answer: the one
    // of the faster server waits for the other's.
    std::fs::write(&file, "import os\n\nx: int = 1\n").unwrap();
    lsp.involve(&file);
    let p = until(&mut rx, &file, "the type fix", |_| true).await;
    assert!(pyright_errors(&p).is_empty(), "{:?}", p.diagnostics);
    assert_eq!(ruff_codes(&p), ["F401"], "{:?}", p.diagnostics);

    // The import removed and a new type error: ruff's goes, pyright's
    // new one is there.
    std::fs::write(&file, "y: str = 5\n").unwrap();
    lsp.involve(&file);
    let p = until(&mut rx, &file, "the lint fix", |_| true).await;
    assert!(ruff_codes(&p).is_empty(), "{:?}", p.diagnostics);
    let e = pyright_errors(&p);
    assert_eq!(e.len(), 1, "{:?}", p.diagnostics);
    assert_eq!((e[0].range.start.line, e[0].range.start.character), (0, 9));
    lsp.stop().await;
}

/// Involves a Python file with both a type error and an unused import in a
/// workspace whose only Python server is in `bin`: the other is said to be
/// missing (under `missing`), and the one there still reports (`ok`).
async fn only_one_python_server(
    bin: std::path::PathBuf,
    missing: &str,
    ok: impl Fn(&Published) -> bool,
) {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let file = ws.join("one.py");
    std::fs::write(&file, "import os\n\nx: int = \"not an int\"\n").unwrap();
    let options = Options {
        search_dirs: vec![bin.clone()],
        search_path: false,
        ..Options::default()
    };
    let (lsp, mut rx) = LanguageServers::start(options, vec![ws.clone()]);
    lsp.involve(&file);
    let mut told = None;
    let p = next(&mut rx, "the present server's diagnostics", |u| match u {
        Update::Unavailable { language, why } => {
            told = Some((language, why));
            None
        }
        Update::Published(p) if p.path == file.to_string_lossy() && ok(&p) => Some(p),
        _ => None,
    })
    .await;
    let (language, why) = told.expect("the missing server is reported before any diagnostics");
    assert_eq!(language, missing, "{why}");
    assert!(why.contains(&bin.display().to_string()), "{why}");
    // A second checker is named itself: the files still get the other's.
    let said = if missing == "Python (Ruff)" {
        "Ruff is not installed"
    } else {
        "no Python language server is installed"
    };
    assert!(why.starts_with(said), "{why}");
    assert!(!p.diagnostics.is_empty());
    assert_eq!(lsp.pids().await.len(), 1);
    lsp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_without_ruff_still_reports_and_ruff_is_said_missing() {
    only_one_python_server(ccbridge_testkit::pyright_bin_dir(), "Python (Ruff)", |p| {
        !pyright_errors(p).is_empty() && ruff_codes(p).is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruff_without_pyright_still_reports_and_pyright_is_said_missing() {
    only_one_python_server(ccbridge_testkit::ruff_bin_dir(), "Python", |p| {
        ruff_codes(p).contains(&"F401") && from(p, "Pyright").is_empty()
    })
    .await;
}

/// A workspace (with `config` as its `.ccbridge/lsp.toml`, if given) and
/// a Python file with a type error and an unused import, both Python
/// servers installed, the file involved.
async fn python_workspace(
    config: Option<&str>,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    LanguageServers,
    mpsc::Receiver<Update>,
) {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    if let Some(config) = config {
        std::fs::create_dir(ws.join(".ccbridge")).unwrap();
        std::fs::write(ws.join(".ccbridge/lsp.toml"), config).unwrap();
    }
    let file = ws.join("both.py");
    std::fs::write(&file, "import os\n\nx: int = \"not an int\"\n").unwrap();
    let options = Options {
        search_dirs: vec![
            ccbridge_testkit::pyright_bin_dir(),
            ccbridge_testkit::ruff_bin_dir(),
        ],
        search_path: false,
        ..Options::default()
    };
    let (lsp, rx) = LanguageServers::start(options, vec![ws.clone()]);
    lsp.involve(&file);
    (dir, file, lsp, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_config_turns_ruff_off_and_sets_pyright_up() {
    let (_dir, file, lsp, mut rx) = python_workspace(Some(
        "[servers.ruff]\nenabled = false\n\n\
         [servers.pyright.settings.python.analysis.diagnosticSeverityOverrides]\n\
         reportAssignmentType = \"warning\"\n",
    ))
    .await;
    let p = next(&mut rx, "pyright's diagnostics", |u| match u {
        Update::Unavailable { language, why } => {
            panic!("a server turned off is not missing: {language}: {why}")
        }
        Update::BadConfig { why } => panic!("{why}"),
        Update::Published(p)
            if p.path == file.to_string_lossy() && !from(&p, "Pyright").is_empty() =>
        {
            Some(p)
        }
        _ => None,
    })
    .await;
    assert!(ruff_codes(&p).is_empty(), "{:?}", p.diagnostics);
    // The workspace's settings reached pyright (workspace/configuration):
    // the type error is a warning there.
    let d = from(&p, "Pyright")
        .into_iter()
        .find(|d| d.code.as_deref() == Some("reportAssignmentType"))
        .unwrap_or_else(|| panic!("{:?}", p.diagnostics));
    assert_eq!(
        d.severity,
        ccbridge_protocol::editor::Severity::Warning,
        "{d:?}"
    );
    assert_eq!(lsp.pids().await.len(), 1, "ruff was not started");
    lsp.stop().await;
}

/// `initialization_options` reach the server as `initializationOptions`:
/// ruff's own settings there ignore F401 (an unused import), so only the
/// other finding (F841, an unused variable) stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialization_options_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(ws.join(".ccbridge")).unwrap();
    std::fs::write(
        ws.join(".ccbridge/lsp.toml"),
        "[servers.pyright]\nenabled = false\n\n\
         [servers.ruff.initialization_options.settings.lint]\nignore = [\"F401\"]\n",
    )
    .unwrap();
    let file = ws.join("lint.py");
    std::fs::write(&file, "import os\n\n\ndef f():\n    y = 1\n").unwrap();
    let options = Options {
        search_dirs: vec![ccbridge_testkit::ruff_bin_dir()],
        search_path: false,
        ..Options::default()
    };
    let (lsp, mut rx) = LanguageServers::start(options, vec![ws.clone()]);
    lsp.involve(&file);
    let p = until(&mut rx, &file, "ruff's F841", |p| {
        ruff_codes(p).contains(&"F841")
    })
    .await;
    assert!(
        !ruff_codes(&p).contains(&"F401"),
        "F401 is ignored: {:?}",
        p.diagnostics
    );
    lsp.stop().await;
}

/// Editing `.ccbridge/lsp.toml` takes effect without restarting ccbridge:
/// the folder's servers start over with the new setup once a file of the
/// folder is involved again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_workspace_config_is_read_again_without_a_restart() {
    let (dir, file, lsp, mut rx) = python_workspace(Some(
        "[servers.ruff]\nenabled = false\n\n\
         [servers.pyright.settings.python.analysis.diagnosticSeverityOverrides]\n\
         reportAssignmentType = \"warning\"\n",
    ))
    .await;
    let severity = |p: &Published| {
        from(p, "Pyright")
            .into_iter()
            .find(|d| d.code.as_deref() == Some("reportAssignmentType"))
            .map(|d| d.severity)
    };
    until(&mut rx, &file, "pyright's warning, ruff off", |p| {
        severity(p) == Some(ccbridge_protocol::editor::Severity::Warning)
            && ruff_codes(p).is_empty()
    })
    .await;
    assert_eq!(lsp.pids().await.len(), 1, "ruff is off");
    // The defaults again: ruff on, the type error an error.
    let config = std::fs::canonicalize(dir.path())
        .unwrap()
        .join(".ccbridge/lsp.toml");
    std::fs::write(&config, "# nothing set\n").unwrap();
    lsp.involve(&file);
    until(&mut rx, &file, "both servers with the new setup", |p| {
        severity(p) == Some(ccbridge_protocol::editor::Severity::Error)
            && ruff_codes(p).contains(&"F401")
    })
    .await;
    assert_eq!(lsp.pids().await.len(), 2);
    lsp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_workspace_config_is_reported_with_its_line_and_the_defaults_apply() {
    let (dir, file, lsp, mut rx) = python_workspace(Some(
        "[servers.ruff]\nenabled = false\nargs = [\"server\"\n",
    ))
    .await;
    let why = next(&mut rx, "word of the bad file", |u| match u {
        Update::BadConfig { why } => Some(why),
        _ => None,
    })
    .await;
    let name = std::fs::canonicalize(dir.path())
        .unwrap()
        .join(".ccbridge/lsp.toml");
    assert!(why.starts_with(&format!("{}:3: ", name.display())), "{why}");
    // Both servers run, as without the file.
    until(&mut rx, &file, "both servers' diagnostics", |p| {
        !pyright_errors(p).is_empty() && ruff_codes(p).contains(&"F401")
    })
    .await;
    assert_eq!(lsp.pids().await.len(), 2);
    lsp.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_config_names_a_server_program_outside_the_search() {
    // ruff is not in the directories searched (only pyright's is): the
    // file names it, relative to the workspace folder, with its arguments.
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::os::unix::fs::symlink(ccbridge_testkit::ruff_bin_dir(), ws.join("venv-bin")).unwrap();
    std::fs::create_dir(ws.join(".ccbridge")).unwrap();
    std::fs::write(
        ws.join(".ccbridge/lsp.toml"),
        "[servers.ruff]\ncommand = \"venv-bin/ruff\"\nargs = [\"server\"]\n",
    )
    .unwrap();
    let file = ws.join("named.py");
    std::fs::write(&file, "import os\n\nx: int = \"not an int\"\n").unwrap();
    let options = Options {
        search_dirs: vec![ccbridge_testkit::pyright_bin_dir()],
        search_path: false,
        ..Options::default()
    };
    let (lsp, mut rx) = LanguageServers::start(options, vec![ws.clone()]);
    lsp.involve(&file);
    next(&mut rx, "both servers' diagnostics", |u| match u {
        Update::Unavailable { language, why } => panic!("{language}: {why}"),
        Update::BadConfig { why } => panic!("{why}"),
        Update::Published(p)
            if p.path == file.to_string_lossy()
                && !pyright_errors(&p).is_empty()
                && ruff_codes(&p).contains(&"F401") =>
        {
            Some(())
        }
        _ => None,
    })
    .await;
    assert_eq!(lsp.pids().await.len(), 2);
    lsp.stop().await;
}
