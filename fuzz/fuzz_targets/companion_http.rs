//! The companion server Gemini CLI and Qwen Code connect to,
//! coverage-guided: the input is the bytes a client sends on one
//! connection, served as the real server serves each
//! (`ccbridge_http::serve_stream`: hyper with the head timeout and the
//! `Host` rule, the guard, the session cap, rmcp, `openDiff`/`closeDiff`
//! and the context it pushes), in memory on a paused clock, over a real
//! engine whose editor rejects every diff it is shown.
//!
//! Beyond "no panic": the companion never writes a file (an accepted diff
//! is the agent's to write), so the workspace stays as it was; and once the
//! connection and its endpoint are stopped, no session of it is left in
//! the engine (its open diffs withdrawn with it).
//!
//! A session's calls need its `Mcp-Session-Id`, a random one: before the
//! input, a session is opened on a connection of its own (the `initialize`
//! both agents send), and every `{{SESSION}}` in the input becomes its id
//! (every `{{WS}}` the workspace's folder), so the seeds reach `openDiff`
//! and `closeDiff` of its files.
//!
//! Each input gets a fresh endpoint; the workspace and the engine are made
//! once per process.

#![no_main]

mod common;

use async_trait::async_trait;
use ccbridge_companion::CompanionAgent;
use ccbridge_server::{
    Capabilities, CloseReason, Config, DiffDecision, DiffId, DiffView, EditorEvent, EngineHandle,
    Frontend, FrontendError, Server,
};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The token the seed corpus carries (`fuzz/make-corpus`).
const TOKEN: &str = "fuzz0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab";
/// How long a connection may take, on the paused clock (it advances
/// whenever nothing is left to do, so this costs no real time). Under the
/// 15 s of rmcp's first keep-alive on an event stream: `sse-stream` re-arms
/// it from the real clock, which the paused one has run ahead of, so past
/// the first ping a stream would send pings without end.
const CONNECTION: Duration = Duration::from_secs(10);
/// Where the input names the session opened for it, and the workspace.
const SESSION: &[u8] = b"{{SESSION}}";
const WS: &[u8] = b"{{WS}}";
/// The `initialize` Gemini CLI and Qwen Code send (their MCP SDK's).
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"streamable-http-client","version":"0.61.0"}}}"#;

/// An editor that shows every diff and rejects it at once.
struct Rejecting {
    engine: OnceLock<EngineHandle>,
}

#[async_trait]
impl Frontend for Rejecting {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            diff: true,
            ..Capabilities::default()
        }
    }
    async fn show_diff(&self, diff: DiffView) -> Result<(), FrontendError> {
        // The verdict is an event, sent off the engine's call.
        if let Some(engine) = self.engine.get().cloned() {
            tokio::spawn(async move {
                let _ = engine
                    .send(EditorEvent::DiffResolved {
                        id: diff.id,
                        decision: DiffDecision::Rejected,
                    })
                    .await;
            });
        }
        Ok(())
    }
    async fn close_diff(&self, _: DiffId, _: CloseReason) -> Result<(), FrontendError> {
        Ok(())
    }
}

/// The workspace and the engine serving it, made once per process.
struct Sandbox {
    engine: EngineHandle,
    ws: PathBuf,
}

/// A folder of this process's own under `$TMPDIR/ccbridge-fuzz-companion`
/// and an engine on it (its lock file in there too, never in
/// `~/.claude/ide`).
fn sandbox(rt: &tokio::runtime::Runtime) -> Sandbox {
    let root = common::own_folder("ccbridge-fuzz-companion");
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).expect("workspace");
    std::fs::write(ws.join("hello.py"), "def greet(name):\n    print(name)\n").expect("file");
    let mut config = Config::new("fuzz", vec![ws.display().to_string()]);
    config.lock_dir = Some(root.join("ide"));
    let engine = rt.block_on(async {
        let editor = Arc::new(Rejecting {
            engine: OnceLock::new(),
        });
        let server = Server::bind(config, editor.clone()).await.expect("engine");
        let engine = server.handle();
        let _ = editor.engine.set(engine.clone());
        tokio::spawn(server.run(std::future::pending()));
        engine
    });
    Sandbox { engine, ws }
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = common::paused_runtime();
    static SANDBOX: Sandbox = RUNTIME.with(sandbox);
}

/// An HTTP request to the endpoint, with the token.
fn post(body: &str, session: Option<&str>) -> Vec<u8> {
    let session = session.map_or(String::new(), |s| format!("Mcp-Session-Id: {s}\r\n"));
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:5000\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {session}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Where `mark` first occurs in `bytes`.
fn find(bytes: &[u8], mark: &[u8]) -> Option<usize> {
    bytes.windows(mark.len()).position(|w| w == mark)
}

/// `input` with every `mark` replaced by `with`, and each
/// `Content-Length: N` whose body (the N bytes after its head) holds marks
/// grown or shrunk by as much as they did, so a seed's request keeps its
/// whole body.
fn replaced(input: &[u8], mark: &[u8], with: &[u8]) -> Vec<u8> {
    const LENGTH: &[u8] = b"Content-Length: ";
    let mut out = Vec::with_capacity(input.len());
    let mut rest = input;
    loop {
        // Up to the next length header's number (or the end), marks replaced.
        let header = find(rest, LENGTH);
        let upto = header.map_or(rest.len(), |at| at + LENGTH.len());
        let mut piece = &rest[..upto];
        while let Some(at) = find(piece, mark) {
            out.extend_from_slice(&piece[..at]);
            out.extend_from_slice(with);
            piece = &piece[at + mark.len()..];
        }
        out.extend_from_slice(piece);
        rest = &rest[upto..];
        if header.is_none() {
            return out;
        }
        // The number, then the rest of the head, then the body it counts.
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let number = std::str::from_utf8(&rest[..digits]).ok();
        let Some(n) = number.and_then(|d| d.parse::<usize>().ok()) else {
            continue;
        };
        let Some(body) = find(&rest[digits..], b"\r\n\r\n").map(|at| digits + at + 4) else {
            continue;
        };
        let counted = &rest[body..(body + n).min(rest.len())];
        let marks = counted.windows(mark.len()).filter(|w| *w == mark).count();
        let length = (n + marks * with.len()).saturating_sub(marks * mark.len());
        out.extend_from_slice(length.to_string().as_bytes());
        rest = &rest[digits..];
    }
}

/// Serves `input` on one connection, after a session was opened for it;
/// whether a session is still in the engine once the connections and the
/// endpoint were stopped.
async fn serve(engine: EngineHandle, ws: &Path, input: &[u8]) -> bool {
    let stop = tokio_util::sync::CancellationToken::new();
    let token = ccbridge_http::mcp::Token::new(TOKEN);
    let signed_in = ccbridge_http::mcp::guard::signed_in(&token);
    let app = ccbridge_http::mcp::guard::app(
        ccbridge_companion::endpoint(CompanionAgent::Gemini, engine.clone(), stop.child_token()),
        token,
    );
    let head = common::exchange(
        app.clone(),
        signed_in.clone(),
        &post(INITIALIZE, None),
        true,
        CONNECTION,
    )
    .await;
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let session = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id:"))
        .map(|s| s.trim().to_owned())
        .expect("initialize opens a session");
    let input = replaced(input, SESSION, session.as_bytes());
    let input = replaced(&input, WS, ws.as_os_str().as_encoded_bytes());
    common::exchange(app, signed_in, &input, false, CONNECTION).await;
    stop.cancel();
    // The sessions' tasks end on the cancellation: a bounded wait on the
    // paused clock (free) for the last one to be dropped.
    for _ in 0..100 {
        if engine.clients().is_empty() {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    true
}

fuzz_target!(|input: &[u8]| {
    let (engine, ws) = SANDBOX.with(|s| (s.engine.clone(), s.ws.clone()));
    let before = common::listing(&ws);
    let left = RUNTIME.with(|rt| rt.block_on(serve(engine.clone(), &ws, input)));
    assert!(
        !left,
        "a session outlived its endpoint: {:?}",
        engine.clients()
    );
    assert_eq!(
        common::listing(&ws),
        before,
        "the companion changed the workspace"
    );
});
