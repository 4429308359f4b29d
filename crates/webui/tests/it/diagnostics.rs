//! Diagnostics in standalone mode from a real language server (pyright,
//! pinned in tests/e2e): Claude's `getDiagnostics` has a Python type error
//! once the file is involved (its `openDiff` arrives), with the right
//! 0-based range and a string code, and no longer has it after the file is
//! fixed on disk (the session review sees the write, the server gets the
//! new text).

use ccbridge_client::ws_client::IdeClient;
use ccbridge_server::Config;
use ccbridge_webui::{Options, Standalone};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(10);
/// pyright's first analysis (starting Node, loading typeshed) on a busy
/// 2-core machine.
const ANALYSIS: Duration = Duration::from_secs(60);

/// `getDiagnostics` as Claude calls it, the raw answer parsed: every file's
/// URI and diagnostics as sent.
async fn diagnostics(c: &mut IdeClient, args: Value) -> Vec<Value> {
    let raw = c
        .call_tool_raw("getDiagnostics", args, Some(WAIT))
        .await
        .unwrap();
    let text = raw["content"][0]["text"]
        .as_str()
        .unwrap_or("[]")
        .to_owned();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {raw}"))
}

async fn until(
    c: &mut IdeClient,
    args: Value,
    what: &str,
    ok: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + ANALYSIS;
    loop {
        let got = diagnostics(c, args.clone()).await;
        if ok(&got) {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "no {what} within {ANALYSIS:?}; last: {got:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `ccbridge serve`'s runtime on `ws` with pyright, running until dropped
/// through [`Served::stop`].
struct Served {
    port: u16,
    token: String,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<Result<(), ccbridge_server::ServerError>>,
    _cfg: tempfile::TempDir,
}

async fn serve(ws: &std::path::Path) -> Served {
    let bin = ccbridge_testkit::pyright_bin_dir();
    let cfg = tempfile::tempdir().unwrap();
    let mut config = Config::new("LspTest", vec![ws.display().to_string()]);
    config.lock_dir = Some(cfg.path().join("ide"));
    config.notify_delay = Duration::from_millis(10);
    config.multi_client = true;
    let options = Options {
        changes: true,
        language_servers: Some(ccbridge_lsp::Options {
            search_dirs: vec![bin],
            ..Default::default()
        }),
        ..Options::default()
    };
    let s = Standalone::start(config, options).await.unwrap();
    let port = s.engine().port();
    let lock = std::fs::read(s.engine().lock_path().unwrap()).unwrap();
    let token = ccbridge_protocol::lockfile::LockFile::parse(&lock)
        .unwrap()
        .auth_token
        .unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(s.run(async move {
        let _ = stopped.await;
    }));
    Served {
        port,
        token,
        stop,
        run,
        _cfg: cfg,
    }
}

impl Served {
    async fn claude(&self) -> IdeClient {
        IdeClient::connect_as(self.port, Some(&self.token), WAIT, "claude-code")
            .await
            .unwrap()
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(WAIT, self.run)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_type_error_reaches_get_diagnostics_and_a_fix_clears_it() {
    let ws_dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(ws_dir.path()).unwrap();
    let file = ws.join("app.py");
    std::fs::write(&file, "def f() -> int:\n    return \"text\"\n").unwrap();
    let served = serve(&ws).await;

    let mut claude = served.claude().await;
    let uri = format!("file://{}", file.display());
    // Nothing involved the file yet: no server runs, nothing is known.
    let before = diagnostics(&mut claude, json!({"uri": uri})).await;
    assert!(
        before.iter().all(|f| f["diagnostics"] == json!([])),
        "{before:#?}"
    );

    // Claude proposes an edit to it: the baseline is being computed while
    // the review is open.
    let mut proposer = served.claude().await;
    let args = json!({"old_file_path": file, "new_file_path": file,
        "new_file_contents": "def f() -> int:\n    return 1\n", "tab_name": "lsp-tab"});
    let diff = tokio::spawn(async move {
        let r = proposer.call_tool_raw("openDiff", args, None).await;
        (proposer, r)
    });
    let got = until(&mut claude, json!({"uri": uri}), "the type error", |f| {
        f.iter()
            .any(|f| f["diagnostics"].as_array().is_some_and(|d| !d.is_empty()))
    })
    .await;
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0]["uri"], uri);
    let d = &got[0]["diagnostics"][0];
    assert_eq!(d["severity"], "Error", "{d}");
    // `return "text"`: the string on line 1 (0-based), columns 11 to 17.
    assert_eq!(
        d["range"],
        json!({"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 17}}),
        "{d}"
    );
    assert!(
        d["code"].is_string(),
        "code must be a string on the wire: {d}"
    );
    assert!(d["message"].as_str().unwrap().contains("int"), "{d}");
    // The whole-workspace form has it too.
    let all = diagnostics(&mut claude, json!({})).await;
    assert!(all.iter().any(|f| f["uri"] == uri), "{all:#?}");

    // The proposal is withdrawn; the user fixes the file by hand.
    claude
        .call_tool("close_tab", json!({"tab_name": "lsp-tab"}), Some(WAIT))
        .await
        .unwrap();
    let (_proposer, answer) = tokio::time::timeout(WAIT, diff).await.unwrap().unwrap();
    answer.unwrap();
    std::fs::write(&file, "def f() -> int:\n    return 2\n").unwrap();
    until(&mut claude, json!({}), "the error to go", |f| {
        !f.iter()
            .any(|f| f["uri"] == uri && f["diagnostics"].as_array().is_some_and(|d| !d.is_empty()))
    })
    .await;

    served.stop().await;
}

/// While a review is open, its proposed text is checked as its own
/// document: Claude's whole-workspace answer carries its errors as
/// `_claude_fs_right:<path>` (the right side of the diff), the file's own
/// entry stays as the file is, and the entry goes with the review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proposals_errors_are_the_right_side_of_its_diff_while_it_is_open() {
    let ws_dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(ws_dir.path()).unwrap();
    let file = ws.join("app.py");
    std::fs::write(&file, "def f() -> int:\n    return 1\n").unwrap();
    let served = serve(&ws).await;
    let mut claude = served.claude().await;
    let mut proposer = served.claude().await;
    let args = json!({"old_file_path": file, "new_file_path": file,
        "new_file_contents": "def f() -> int:\n    return 1\n\n\nx: str = f()\n",
        "tab_name": "right-tab"});
    let diff = tokio::spawn(async move {
        let r = proposer.call_tool_raw("openDiff", args, None).await;
        (proposer, r)
    });
    let right = format!("_claude_fs_right:{}", file.display());
    let got = until(&mut claude, json!({}), "the proposal's error", |f| {
        f.iter().any(|f| f["uri"] == right)
    })
    .await;
    let entry = got.iter().find(|f| f["uri"] == right).unwrap();
    let d = &entry["diagnostics"][0];
    assert_eq!(d["severity"], "Error", "{d}");
    assert_eq!(
        d["range"]["start"],
        json!({"line": 4, "character": 9}),
        "{d}"
    );
    let uri = format!("file://{}", file.display());
    let own = diagnostics(&mut claude, json!({"uri": uri})).await;
    assert_eq!(
        own[0]["diagnostics"],
        json!([]),
        "the file itself is fine: {own:#?}"
    );
    assert!(
        !ws.join(".app.ccbridge-proposed.py").exists(),
        "the proposal is never written"
    );

    claude
        .call_tool("close_tab", json!({"tab_name": "right-tab"}), Some(WAIT))
        .await
        .unwrap();
    let (_proposer, answer) = tokio::time::timeout(WAIT, diff).await.unwrap().unwrap();
    answer.unwrap();
    until(&mut claude, json!({}), "the right side to go", |f| {
        f.iter().all(|f| f["uri"] != right)
    })
    .await;
    served.stop().await;
}
