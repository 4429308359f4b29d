//! The JSON-RPC classifier (`Message::parse`) and the engine behind it: one
//! WebSocket connection served by a real engine (`Server::with_listener`,
//! `EngineHandle::serve_websocket`) over an in-memory pipe, with a fake
//! editor, and a tokio-tungstenite client on the other end.
//!
//! Input layout: the first byte is a set of flags, the rest is split on NUL
//! bytes (which no JSON text contains) into messages, each sent as one
//! frame. Flags:
//!
//! | bit | meaning |
//! |---|---|
//! | 0 | send a valid `initialize` first (so the post-initialize paths are reached) |
//! | 1 | then `notifications/initialized`, `ide_connected` and `tools/list` |
//! | 2 | send the messages as binary frames (non-UTF-8 ones always are) |
//! | 3–4 | editor errors: 0–1 none, 2 `Failed`, 3 `Timeout` |
//! | 5 | the editor has no capabilities (no diff, no openFile, ...) |
//! | 6 | the editor reports a selection, tabs, diagnostics and an at-mention first |
//! | 7 | the user says yes to `executeCode` |
//!
//! The fake editor decides a diff by its tab name's first letter: `a`
//! accept, `e` accept with an edit, `r` reject, `d` dismiss; anything else
//! stays open until Claude or the disconnect closes it.
//!
//! Checked: nothing panics; each message's classification round-trips
//! (`to_json` parses back to the same message) and every rejection's answer
//! is itself a valid error response; every frame the engine sends is a text
//! frame holding a JSON-RPC 2.0 object; no request id is answered more often
//! than it was sent; the connection's task ends once the client has gone.
//!
//! The runtime's clock is paused (tokio's test-util): waiting until the
//! socket is quiet, the ready delay and the selection debounce take no real
//! time, and an input runs the same way every time.

#![no_main]

use async_trait::async_trait;
use ccbridge_protocol::editor::{Diagnostic, EditorTab, Position, Range, Selection, Severity};
use ccbridge_protocol::jsonrpc::{Message, RequestId};
use ccbridge_protocol::mcp::Content;
use ccbridge_protocol::notifications::AtMentioned;
use ccbridge_protocol::tools::OpenFileArgs;
use ccbridge_server::{
    Capabilities, CloseReason, Config, DiffDecision, DiffId, DiffView, EditorEvent, EngineHandle,
    Frontend, FrontendError, OpenedFile, Server,
};
use futures_util::{SinkExt, StreamExt};
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Bytes, Message as Frame};
use tokio_tungstenite::WebSocketStream;

/// Messages sent per input, at most.
const MAX_MESSAGES: usize = 64;
/// Frames read back per input, at most.
const MAX_ANSWERS: usize = 1024;
/// The socket counts as quiet after this long without a frame (virtual
/// time: longer than the ready fallback, so the context replay is read).
const QUIET: Duration = Duration::from_secs(3);
/// Reading stops after this long in any case (virtual time).
const READ_LIMIT: Duration = Duration::from_secs(20);
const WORKSPACE: &str = "/tmp/ccbridge-fuzz";

const INITIALIZE: &str = r#"{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"claude-code","version":"2.1.328"}},"jsonrpc":"2.0","id":0}"#;
const INITIALIZED: &str = r#"{"method":"notifications/initialized","jsonrpc":"2.0"}"#;
const IDE_CONNECTED: &str = r#"{"method":"ide_connected","params":{"pid":424242},"jsonrpc":"2.0"}"#;
const TOOLS_LIST: &str = r#"{"method":"tools/list","jsonrpc":"2.0","id":1}"#;

/// An editor that answers at once, as the input's flags say.
struct FakeEditor {
    caps: Capabilities,
    error: Option<FrontendError>,
    run_code: bool,
    /// For deciding diffs; taken out at the end of the input, which breaks
    /// the cycle engine → frontend → engine.
    engine: Mutex<Option<EngineHandle>>,
}

impl FakeEditor {
    fn answer(&self) -> Result<(), FrontendError> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn engine(&self) -> Option<EngineHandle> {
        self.engine.lock().unwrap().clone()
    }
}

#[async_trait]
impl Frontend for FakeEditor {
    fn capabilities(&self) -> Capabilities {
        self.caps.clone()
    }

    async fn show_diff(&self, diff: DiffView) -> Result<(), FrontendError> {
        self.answer()?;
        let decision = match diff.tab_name.bytes().next() {
            Some(b'a') => DiffDecision::Accepted { contents: None },
            Some(b'e') => DiffDecision::Accepted {
                contents: Some(format!("{}\n// edited", diff.proposed_contents)),
            },
            Some(b'r') => DiffDecision::Rejected,
            Some(b'd') => DiffDecision::Dismissed,
            _ => return Ok(()),
        };
        if let Some(engine) = self.engine() {
            // The engine may be gone when the input is over; that is fine.
            let _ = engine
                .send(EditorEvent::DiffResolved {
                    id: diff.id,
                    decision,
                })
                .await;
        }
        Ok(())
    }

    async fn close_diff(&self, _id: DiffId, _reason: CloseReason) -> Result<(), FrontendError> {
        self.answer()
    }

    async fn open_file(&self, args: OpenFileArgs) -> Result<OpenedFile, FrontendError> {
        self.answer()?;
        Ok(OpenedFile {
            file_path: args.file_path,
            language_id: Some("rust".into()),
            line_count: Some(3),
        })
    }

    async fn open_files(&self, paths: Vec<String>) -> Result<Vec<String>, FrontendError> {
        self.answer()?;
        Ok(paths.into_iter().step_by(2).collect())
    }

    async fn close_tab(&self, tab_name: String) -> Result<bool, FrontendError> {
        self.answer()?;
        Ok(tab_name.starts_with('t'))
    }

    async fn save_document(&self, _path: String) -> Result<(), FrontendError> {
        self.answer()
    }

    async fn reformat_file(&self, _path: String) -> Result<(), FrontendError> {
        self.answer()
    }

    async fn confirm_execute(&self, _code: String) -> Result<bool, FrontendError> {
        self.answer()?;
        Ok(self.run_code)
    }

    async fn execute_code(&self, code: String) -> Result<Vec<Content>, FrontendError> {
        self.answer()?;
        Ok(vec![Content::text(code), Content::text("done")])
    }
}

/// Classifies one message and checks the classification round-trips.
/// Returns the id an answer will carry: a request's, or a rejected one's.
fn classify(text: &str) -> Option<RequestId> {
    match Message::parse(text) {
        Ok(m) => {
            let again = Message::parse(&m.to_json()).expect("to_json of a message parses");
            assert_eq!(again, m, "a message changes through to_json");
            match m {
                Message::Request(r) => Some(r.id),
                _ => None,
            }
        }
        // A rejected message is answered with an error that carries its id
        // when one could be read (`{"id":1,"method":"ping"}` without
        // `jsonrpc`): that answer is expected too.
        Err(rejected) => {
            let answer = rejected.response.to_json();
            match Message::parse(&answer) {
                Ok(Message::Response(r)) => {
                    assert!(r.outcome.is_err());
                    r.id
                }
                other => panic!("a rejection's answer {answer:?} reads as {other:?}"),
            }
        }
    }
}

/// Selection, tabs, diagnostics and an at-mention, as an editor reports them.
fn editor_events() -> Vec<EditorEvent> {
    let file = format!("{WORKSPACE}/src/main.rs");
    let range = Range::new(Position::new(1, 0), Position::new(2, 4));
    vec![
        EditorEvent::OpenEditors(vec![EditorTab {
            path: file.clone(),
            is_active: true,
            is_dirty: true,
            language_id: Some("rust".into()),
            label: None,
            is_untitled: false,
        }]),
        EditorEvent::Selection(Some(Selection {
            file_path: file.clone(),
            text: "fn main() {\n    ".into(),
            range,
        })),
        EditorEvent::Diagnostics {
            path: file.clone(),
            diagnostics: vec![Diagnostic {
                message: "unused variable".into(),
                severity: Severity::Warning,
                range,
                source: Some("rustc".into()),
                code: Some("unused_variables".into()),
            }],
        },
        EditorEvent::Dirty {
            path: file.clone(),
            is_dirty: true,
        },
        EditorEvent::AtMention(AtMentioned {
            file_path: file,
            line_start: Some(1),
            line_end: Some(2),
        }),
    ]
}

/// Checks one frame from the engine; returns the id it answers, if any.
fn check_answer(text: &str) -> Option<RequestId> {
    let value: serde_json::Value = serde_json::from_str(text).expect("the engine sent JSON");
    assert_eq!(value["jsonrpc"], "2.0", "{text}");
    match Message::parse(text) {
        Ok(Message::Response(r)) => r.id,
        Ok(Message::Notification(_)) => None,
        other => panic!("the engine sent {text:?}, which reads as {other:?}"),
    }
}

async fn run(flags: u8, messages: Vec<Frame>, mut sent: HashMap<RequestId, usize>) {
    let editor = Arc::new(FakeEditor {
        caps: if flags & 0x20 != 0 {
            Capabilities::default()
        } else {
            Capabilities::all()
        },
        error: match (flags >> 3) & 3 {
            2 => Some(FrontendError::Failed("the fuzzing editor says no".into())),
            3 => Some(FrontendError::Timeout),
            _ => None,
        },
        run_code: flags & 0x80 != 0,
        engine: Mutex::new(None),
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let mut config = Config::new("Fuzz", vec![WORKSPACE.into()]);
    config.lock_dir = None;
    config.notify_delay = Duration::from_millis(10);
    let server = Server::with_listener(listener, config, editor.clone()).expect("server");
    let engine = server.handle();
    *editor.engine.lock().unwrap() = Some(engine.clone());
    if flags & 0x40 != 0 {
        for event in editor_events() {
            engine.apply(event).await.expect("event applied");
        }
    }

    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let server_ws =
        WebSocketStream::from_raw_socket(server_io, Role::Server, Some(engine.websocket_config()))
            .await;
    let serving = tokio::spawn({
        let engine = engine.clone();
        async move { engine.serve_websocket(server_ws).await }
    });
    let client_config = WebSocketConfig::default()
        .max_message_size(Some(64 << 20))
        .max_frame_size(Some(64 << 20));
    let client =
        WebSocketStream::from_raw_socket(client_io, Role::Client, Some(client_config)).await;
    let (mut sink, mut stream) = client.split();
    let mut sending = tokio::spawn(async move {
        for m in messages {
            if sink.send(m).await.is_err() {
                break;
            }
        }
        sink
    });

    let deadline = Instant::now() + READ_LIMIT;
    let mut answers = 0;
    while answers < MAX_ANSWERS && Instant::now() < deadline {
        match tokio::time::timeout(QUIET, stream.next()).await {
            Err(_) if sending.is_finished() => break,
            Err(_) => {}
            Ok(None) | Ok(Some(Err(_))) | Ok(Some(Ok(Frame::Close(_)))) => break,
            Ok(Some(Ok(Frame::Text(t)))) => {
                answers += 1;
                if let Some(id) = check_answer(t.as_str()) {
                    let left = sent.get_mut(&id).unwrap_or_else(|| {
                        panic!("the engine answered {id}, which was never asked")
                    });
                    assert!(*left > 0, "the engine answered {id} more often than asked");
                    *left -= 1;
                }
            }
            Ok(Some(Ok(Frame::Binary(_)))) => panic!("the engine sent a binary frame"),
            Ok(Some(Ok(_))) => {}
        }
    }

    // The client goes away; the engine must notice and end the connection.
    match tokio::time::timeout(Duration::from_secs(10), &mut sending).await {
        Ok(sink) => drop(sink.expect("sender").reunite(stream)),
        Err(_) => {
            // Stuck writing to an engine that no longer reads.
            sending.abort();
            drop(stream);
        }
    }
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the connection's task ends after the client left")
        .expect("the connection's task does not panic");
    editor.engine.lock().unwrap().take();
    drop(engine);
    drop(server);
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let binary = flags & 0x04 != 0;
    let mut texts: Vec<&[u8]> = Vec::new();
    if flags & 0x01 != 0 {
        texts.push(INITIALIZE.as_bytes());
        if flags & 0x02 != 0 {
            texts.extend([INITIALIZED, IDE_CONNECTED, TOOLS_LIST].map(str::as_bytes));
        }
    }
    texts.extend(rest.split(|b| *b == 0).take(MAX_MESSAGES));

    let mut sent: HashMap<RequestId, usize> = HashMap::new();
    let messages = texts
        .into_iter()
        .map(|bytes| match std::str::from_utf8(bytes) {
            Ok(text) => {
                if let Some(id) = classify(text) {
                    *sent.entry(id).or_default() += 1;
                }
                if binary {
                    Frame::Binary(Bytes::copy_from_slice(bytes))
                } else {
                    Frame::text(text)
                }
            }
            Err(_) => Frame::Binary(Bytes::copy_from_slice(bytes)),
        })
        .collect();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(run(flags, messages, sent));
});
