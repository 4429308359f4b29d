//! The workspace tools server's HTTP layer, coverage-guided: the input is
//! the bytes a client sends on one connection, served as the real server
//! serves each (`ccbridge_http::serve_stream`: hyper with the head timeout
//! and the `Host` rule, the guard, the session cap, the stateless path,
//! rmcp, the tools), in memory on a paused clock.
//!
//! The workspace sits beside a canary folder (and holds a symlink to it):
//! no answer may carry the canary's text, and the canary must stay as it
//! is. The editor refuses every review and every command, so nothing is
//! written or run; an input that still wrote outside would show in the
//! canary's listing.
//!
//! Each input gets a fresh endpoint (no session carries over to the next
//! one); the workspace and the editor are made once per process.

#![no_main]

mod common;

use async_trait::async_trait;
use ccbridge_mcp::{tools, Editor, Settings};
use ccbridge_protocol::editor::FileDiagnostics;
use ccbridge_server::{Approval, CommandEvent, FrontendError, Proposal, RunId, Verdict};
use ccbridge_workspace::Workspace;
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The token the seed corpus carries (`fuzz/make-corpus`).
const TOKEN: &str = "fuzz0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab";
/// The text of the file outside the workspace.
const CANARY: &str = "ccbridge-fuzz-canary-0a6c1f";
/// How long a connection may take, on the paused clock (it advances
/// whenever nothing is left to do, so this costs no real time).
const CONNECTION: Duration = Duration::from_secs(60);

/// An editor that says no to everything it is asked.
struct Refusing;

#[async_trait]
impl Editor for Refusing {
    fn diagnostics(&self) -> Vec<FileDiagnostics> {
        Vec::new()
    }
    fn diagnostics_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        tokio::sync::watch::Sender::new(0).subscribe()
    }
    fn is_dirty(&self, _: &str) -> bool {
        false
    }
    async fn review(&self, _: Proposal) -> Result<Verdict, FrontendError> {
        Ok(Verdict::Rejected)
    }
    async fn approve(&self, _: Approval) -> Result<bool, FrontendError> {
        Ok(false)
    }
    fn next_run(&self) -> RunId {
        RunId(1)
    }
    fn command_event(&self, _: CommandEvent) {}
}

/// The workspace and the canary beside it, made once per process.
struct Sandbox {
    ctx: Arc<tools::Context>,
    canary: PathBuf,
}

/// A folder of this process's own under `$TMPDIR/ccbridge-fuzz-mcp`.
fn sandbox() -> Sandbox {
    let root = common::own_folder("ccbridge-fuzz-mcp");
    let ws = root.join("ws");
    let canary = root.join("canary");
    std::fs::create_dir_all(ws.join("src")).expect("workspace");
    std::fs::create_dir_all(&canary).expect("canary folder");
    std::fs::write(ws.join("hello.py"), "def greet(name):\n    print(name)\n").expect("file");
    std::fs::write(ws.join("src/a.txt"), "one\ntwo\n").expect("file");
    std::fs::write(canary.join("secret.txt"), CANARY).expect("canary");
    std::os::unix::fs::symlink(&canary, ws.join("out")).expect("symlink");
    let workspace = Workspace::open(&[ws]).expect("open the workspace");
    let mut settings = Settings::default();
    settings.secrets.push(TOKEN.to_owned());
    let ctx = Arc::new(tools::Context::new(
        Arc::new(workspace),
        Arc::new(Refusing),
        settings,
    ));
    Sandbox { ctx, canary }
}

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = common::paused_runtime();
    static SANDBOX: Sandbox = sandbox();
}

/// What the server answers to `input` on one connection.
async fn answer(ctx: Arc<tools::Context>, input: &[u8]) -> Vec<u8> {
    let stop = tokio_util::sync::CancellationToken::new();
    let token = ccbridge_http::mcp::Token::new(TOKEN);
    let signed_in = ccbridge_http::mcp::guard::signed_in(&token);
    let app = ccbridge_http::mcp::guard::app(
        ccbridge_mcp::service::endpoint(ctx, stop.child_token()),
        token,
    );
    // The server closes the connection once its head timeout passes with
    // no further request.
    let out = common::exchange(app, signed_in, input, false, CONNECTION).await;
    stop.cancel();
    out
}

fuzz_target!(|input: &[u8]| {
    let (ctx, canary) = SANDBOX.with(|s| (s.ctx.clone(), s.canary.clone()));
    let before = common::listing(&canary);
    let out = RUNTIME.with(|rt| rt.block_on(answer(ctx, input)));
    let text = String::from_utf8_lossy(&out);
    assert!(
        !text.contains(CANARY),
        "an answer carries the canary's text: {text}"
    );
    assert_eq!(
        common::listing(&canary),
        before,
        "the folder outside the workspace changed"
    );
});
