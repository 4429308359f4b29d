//! What the binary prints when what it reads is hostile or a start fails
//! (issue 11, defects 7 and 12): nothing from a lock file or a server
//! reaches the terminal unescaped, no token is shown, and a fatal error is
//! one line that names its cause once and says what to do.

use ccbridge_protocol::lockfile::LockFile;
use ccbridge_testkit::Confined;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use tokio_tungstenite::tungstenite::Message as Ws;

const BIN: &str = env!("CARGO_BIN_EXE_ccbridge");
const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

fn ccbridge(args: &[&str], home: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(home)
        .confined_to(home)
        .env("CLAUDE_CONFIG_DIR", home.join("cfg"))
        .env_remove("CLAUDE_CODE_SSE_PORT")
        .env_remove("CCBRIDGE_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn assert_no_terminal_controls(bytes: &[u8], what: &str) {
    assert!(
        !bytes.iter().any(|b| *b == ESC || *b == BEL),
        "{what} lets terminal control characters through:\n{}",
        String::from_utf8_lossy(bytes)
    );
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text
            .chars()
            .any(|c| ('\u{80}'..'\u{a0}').contains(&c) || c == '\u{202e}'),
        "{what}: C1 or bidi controls:\n{text}"
    );
}

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn regression_list_escapes_planted_locks_and_never_shows_a_token() {
    let home = tempfile::tempdir().unwrap();
    let ide = home.path().join("cfg/ide");
    std::fs::create_dir_all(&ide).unwrap();
    let mut evil = LockFile::new(
        std::process::id(),
        vec!["/w\u{1b}[2J".into(), "/x\u{202e}cod.exe".into()],
        "\u{1b}]0;pwned\u{7}\u{9b}31mIDE".into(),
        "tok".into(),
    );
    evil.transport = "ws\u{1b}[5m".into();
    std::fs::write(ide.join(format!("{}.lock", closed_port())), evil.to_json()).unwrap();
    let secret = "f00dfeedf00dfeedf00dfeedf00dfeed";
    std::fs::write(
        ide.join(format!("{}.lock", closed_port())),
        format!(r#"{{"pid":1,"workspaceFolders":["/w"],"authToken":"{secret}"#),
    )
    .unwrap();
    std::fs::write(
        ide.join(format!("{}\u{1b}]0;name\u{7}.lock", closed_port())),
        "/legacy/folder\n\u{1b}[31m/red\n",
    )
    .unwrap();

    let out = ccbridge(&["list"], home.path());
    assert!(out.status.success());
    let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
    assert_no_terminal_controls(&all, "ccbridge list");
    let text = String::from_utf8_lossy(&all);
    assert!(!text.contains(secret), "a truncated lock's token: {text}");
    assert!(
        text.contains("\\u{1b}]0;pwned\\u{7}"),
        "shown, escaped: {text}"
    );
    assert!(text.contains("broken or truncated"), "{text}");

    let out = ccbridge(&["clean", "--dry-run"], home.path());
    let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
    assert_no_terminal_controls(&all, "ccbridge clean");
    assert!(!String::from_utf8_lossy(&all).contains(secret));
}

/// Accepts the upgrade, echoing the `mcp` subprotocol as IDE servers do.
#[allow(clippy::result_large_err)] // the signature is tungstenite's
fn echo_mcp(
    _: &tokio_tungstenite::tungstenite::handshake::server::Request,
    mut resp: tokio_tungstenite::tungstenite::handshake::server::Response,
) -> Result<
    tokio_tungstenite::tungstenite::handshake::server::Response,
    tokio_tungstenite::tungstenite::handshake::server::ErrorResponse,
> {
    resp.headers_mut()
        .insert("sec-websocket-protocol", "mcp".parse().unwrap());
    Ok(resp)
}

/// An IDE server that answers with terminal escapes everywhere.
async fn hostile_server() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, echo_mcp).await else {
                    return;
                };
                while let Some(Ok(Ws::Text(t))) = ws.next().await {
                    let m: Value = serde_json::from_str(t.as_str()).unwrap();
                    let Some(id) = m.get("id").cloned() else {
                        continue;
                    };
                    let result = match m["method"].as_str() {
                        Some("initialize") => json!({"protocolVersion": "2025-11-25",
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "evil\u{1b}[2J", "version": "1"}}),
                        Some("tools/list") => json!({"tools": [{
                            "name": "getDiagnostics\u{1b}]0;x\u{7}",
                            "description": "reads \u{1b}[2Jdiagnostics",
                            "inputSchema": {"type": "object",
                                "properties": {"uri": {}, "\u{1b}[5mevil": {}}}}]}),
                        Some("tools/call") if m["params"]["name"] == "fail" => {
                            let e = json!({"jsonrpc": "2.0", "id": id,
                                "error": {"code": 1, "message": "no \u{1b}]0;pwned\u{7} way"}});
                            let _ = ws.send(Ws::text(e.to_string())).await;
                            continue;
                        }
                        _ => json!({"content": [{"type": "text",
                            "text": "line one\n\u{1b}[2Jline two\u{202e}"}]}),
                    };
                    let r = json!({"jsonrpc": "2.0", "id": id, "result": result});
                    if ws.send(Ws::text(r.to_string())).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_call_escapes_what_a_hostile_server_says() {
    let port = hostile_server().await;
    let home = tempfile::tempdir().unwrap();
    let ide = home.path().join("cfg/ide");
    std::fs::create_dir_all(&ide).unwrap();
    std::fs::write(
        ide.join(format!("{port}.lock")),
        LockFile::new(
            std::process::id(),
            vec![home.path().display().to_string()],
            "Evil".into(),
            "t".into(),
        )
        .to_json(),
    )
    .unwrap();
    let home_path = home.path().to_owned();
    let run = move |args: Vec<String>| {
        let home = home_path.clone();
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            ccbridge(&args, &home)
        })
    };
    let p = port.to_string();
    let list = run(vec![
        "call".into(),
        "--port".into(),
        p.clone(),
        "--list".into(),
    ])
    .await
    .unwrap();
    assert!(list.status.success(), "{list:?}");
    assert_no_terminal_controls(&list.stdout, "call --list");
    let shown = String::from_utf8_lossy(&list.stdout);
    assert!(
        shown.contains("(\\u{1b}[5mevil?, uri?)"),
        "--list shows the arguments: {shown}"
    );
    let call = run(vec!["call".into(), "--port".into(), p.clone(), "x".into()])
        .await
        .unwrap();
    assert_no_terminal_controls(&call.stdout, "call's result");
    assert!(
        String::from_utf8_lossy(&call.stdout).contains("line one\n"),
        "line breaks are kept in a result"
    );
    let fail = run(vec!["call".into(), "--port".into(), p, "fail".into()])
        .await
        .unwrap();
    assert!(!fail.status.success());
    assert_no_terminal_controls(&fail.stderr, "call's error");
    let err = String::from_utf8_lossy(&fail.stderr);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

/// The one line a failed `serve` prints: its cause once, and what to do.
fn serve_error(extra: &[&str], home: &Path) -> String {
    let out = Command::new(BIN)
        .args(["serve", "--stdio"])
        .args(extra)
        .current_dir(home)
        .confined_to(home)
        .env("CLAUDE_CONFIG_DIR", home.join("cfg"))
        .env_remove("CCBRIDGE_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "{extra:?} should fail");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line for {extra:?}:\n{err}");
    lines[0].to_owned()
}

#[test]
fn regression_fatal_errors_say_their_cause_once_and_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let e = serve_error(&["--port", &port.to_string()], home.path());
    assert_eq!(e.matches("Address already in use").count(), 1, "{e}");
    assert!(
        e.contains(&format!("127.0.0.1:{port}")),
        "names the port: {e}"
    );
    assert!(e.contains("--port"), "says what to do: {e}");

    let not_a_dir = home.path().join("file");
    std::fs::write(&not_a_dir, "").unwrap();
    let e = serve_error(
        &["--lock-dir", not_a_dir.join("ide").to_str().unwrap()],
        home.path(),
    );
    assert_eq!(e.matches("Not a directory").count(), 1, "{e}");
    assert!(e.contains("--lock-dir"), "{e}");

    let e = serve_error(&["--workspace", "/no/such/folder"], home.path());
    assert!(e.contains("/no/such/folder"), "{e}");
    assert_eq!(e.matches("No such file or directory").count(), 1, "{e}");
}

/// `ccbridge list --json | head -0` and `ccbridge list --json > /dev/full`:
/// `println!` panicked ("failed printing to stdout", a backtrace's worth of
/// report with `RUST_BACKTRACE` set). A reader that has gone ends ccbridge
/// quietly with success, as it does `cat`; a full disk is one line and
/// status 1.
#[test]
fn regression_output_into_a_closed_pipe_or_a_full_disk_is_no_panic() {
    let home = tempfile::tempdir().unwrap();
    let run = |stdout: Stdio| {
        Command::new(BIN)
            .args(["list", "--json"])
            .current_dir(home.path())
            .confined_to(home.path())
            .env("CLAUDE_CONFIG_DIR", home.path().join("cfg"))
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    };

    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let gone = run(writer.into());
    let stderr = String::from_utf8_lossy(&gone.stderr);
    assert!(gone.status.success(), "{:?}: {stderr}", gone.status);
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "{stderr}"
    );

    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let full = run(full.into());
    let stderr = String::from_utf8_lossy(&full.stderr);
    assert_eq!(full.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "ccbridge: cannot write to standard output: No space left on device (os error 28)"
    );
}
