//! The companion server over real sockets, played by a client that does
//! what Gemini CLI and Qwen Code do (`docs/agents.md`):
//! initialize, open the event stream with GET, list the tools, then
//! `openDiff`/`closeDiff`. The engine behind it has a frontend that shows
//! diffs; the test decides them as the user would.

use crate::support;

use crate::support::{blocking, rig, Rig, TOKEN, WAIT};
use ccbridge_protocol::editor::{EditorTab, Position, Range, Selection};
use ccbridge_server::{AgentKind, DiffDecision, DiffView, EditorEvent};
use ccbridge_testkit::http::mcp_post;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A client session: its id, and its event stream read line by line.
struct Client {
    port: u16,
    session: String,
    events: BufReader<TcpStream>,
}

impl Client {
    /// initialize, initialized, the GET event stream, tools/list.
    fn connect(port: u16) -> Client {
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"streamable-http-client","version":"0.61.0"}}});
        let a = mcp_post(port, TOKEN, None, &init.to_string(), WAIT);
        assert_eq!(a.status, 200, "{}\n{}", a.head, a.body);
        a.assert_every_event_is_json();
        let session = a.header("mcp-session-id").expect("a session");
        let a = mcp_post(
            port,
            TOKEN,
            Some(&session),
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string(),
            WAIT,
        );
        assert_eq!(a.status, 202, "{}", a.head);
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        write!(
            s,
            "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Accept: text/event-stream\r\nMcp-Session-Id: {session}\r\n\
             MCP-Protocol-Version: 2025-06-18\r\n\r\n"
        )
        .unwrap();
        let mut c = Client {
            port,
            session,
            events: BufReader::new(s),
        };
        let tools = c.request(2, "tools/list", json!({}));
        let names: Vec<&str> = tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["openDiff", "closeDiff"]);
        c
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
        let a = mcp_post(
            self.port,
            TOKEN,
            Some(&self.session),
            &body.to_string(),
            WAIT,
        );
        a.assert_every_event_is_json();
        a.message()
    }

    fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        self.request(id, "tools/call", json!({"name": tool, "arguments": args}))
    }

    /// The next notification named `method` on the event stream.
    fn next(&mut self, method: &str) -> Value {
        self.next_of(&[method]).1
    }

    /// The next notification named one of `methods`: its name and params.
    fn next_of(&mut self, methods: &[&str]) -> (String, Value) {
        let deadline = Instant::now() + WAIT;
        let mut line = String::new();
        while Instant::now() < deadline {
            line.clear();
            if self.events.read_line(&mut line).unwrap_or(0) == 0 {
                panic!("the event stream ended while waiting for {methods:?}");
            }
            // regression: a priming event (`retry:` and an empty `data:`)
            // broke Gemini CLI's connection after its first openDiff.
            assert!(!line.starts_with("retry:"), "a priming event: {line:?}");
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                let v = serde_json::from_str::<Value>(data.trim())
                    .unwrap_or_else(|e| panic!("an event that is not JSON ({e}): {line:?}"));
                if let Some(m) = methods.iter().find(|m| v["method"] == **m) {
                    return (m.to_string(), v["params"].clone());
                }
            }
        }
        panic!("none of {methods:?} within {WAIT:?}");
    }
}

async fn decide(rig: &mut Rig, decision: DiffDecision) -> DiffView {
    let view = tokio::time::timeout(WAIT, rig.shown.recv())
        .await
        .expect("the diff is shown")
        .unwrap();
    rig.engine
        .apply(EditorEvent::DiffResolved {
            id: view.id,
            decision,
        })
        .await
        .unwrap();
    view
}

#[tokio::test(flavor = "multi_thread")]
async fn a_diff_is_answered_at_once_and_its_verdict_arrives_as_a_notification() {
    let mut rig = rig().await;
    let file = rig.dir.path().join("hello.txt");
    std::fs::write(&file, "hello\n").unwrap();
    let path = std::fs::canonicalize(&file).unwrap().display().to_string();
    let port = rig.port;
    let client = blocking(move || Client::connect(port)).await;

    // Accepted with the user's edit: the client gets the final text.
    let (c, p) = (client, path.clone());
    let (mut client, answer) = blocking(move || {
        let mut c = c;
        let a = c.call(
            3,
            "openDiff",
            json!({"filePath": p, "newContent": "hello world\n"}),
        );
        (c, a)
    })
    .await;
    assert_eq!(answer["result"]["content"], json!([]), "{answer}");
    assert_ne!(answer["result"]["isError"], true);
    let view = decide(
        &mut rig,
        DiffDecision::Accepted {
            contents: Some("hello edited world\n".into()),
        },
    )
    .await;
    assert_eq!(view.proposed_contents, "hello world\n");
    assert_eq!(view.original_contents.as_deref(), Some("hello\n"));
    assert_eq!(
        view.agent,
        Some(AgentKind::Gemini),
        "the frontend is told which agent proposes it"
    );
    assert!(view.client_id.is_some(), "and which session");
    let got = blocking(move || {
        let n = client.next("ide/diffAccepted");
        (client, n)
    })
    .await;
    client = got.0;
    assert_eq!(
        got.1,
        json!({"filePath": path, "content": "hello edited world\n"})
    );

    // Rejected: the client is told, nothing else.
    let p = path.clone();
    let (mut client, _) = blocking(move || {
        let a = client.call(4, "openDiff", json!({"filePath": p, "newContent": "bye\n"}));
        (client, a)
    })
    .await;
    decide(&mut rig, DiffDecision::Rejected).await;
    let got = blocking(move || client.next("ide/diffRejected")).await;
    assert_eq!(got, json!({"filePath": path}));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "hello\n",
        "the client writes, not the companion"
    );
}

/// Two files of the same name in two folders, proposed in one session: both
/// reviews were titled "README.md ⟷ proposed (1)", so the second took over
/// the first and Gemini CLI was told the user had rejected the first.
#[tokio::test(flavor = "multi_thread")]
async fn regression_two_files_of_the_same_name_are_reviewed_each_on_its_own() {
    let mut rig = rig().await;
    let mut paths = Vec::new();
    for folder in ["a", "b"] {
        let dir = rig.dir.path().join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("README.md"), "hello\n").unwrap();
        let path = std::fs::canonicalize(dir.join("README.md")).unwrap();
        paths.push(path.display().to_string());
    }
    let port = rig.port;
    let (a, b) = (paths[0].clone(), paths[1].clone());
    let mut client = blocking(move || {
        let mut c = Client::connect(port);
        c.call(3, "openDiff", json!({"filePath": a, "newContent": "a\n"}));
        c.call(4, "openDiff", json!({"filePath": b, "newContent": "b\n"}));
        c
    })
    .await;
    let first = decide(&mut rig, DiffDecision::Accepted { contents: None }).await;
    assert_eq!(first.new_file_path, paths[0]);
    let got = blocking(move || client.next_of(&["ide/diffAccepted", "ide/diffRejected"])).await;
    assert_eq!(
        got,
        (
            "ide/diffAccepted".to_string(),
            json!({"filePath": paths[0], "content": "a\n"})
        )
    );
}

/// The agent closed or killed while its diff is open (it sends no DELETE):
/// the session lived on for the ten idle minutes every session gets, its
/// review stayed open in the editor and the agent listed as connected, and
/// accepting sent the verdict to nobody. Once the GET stream is gone for
/// `ORPHANED`, the session ends and its review closes.
#[tokio::test(flavor = "multi_thread")]
async fn regression_an_agent_gone_without_a_word_takes_its_open_diff_with_it() {
    let mut rig = rig().await;
    let file = rig.dir.path().join("gone.txt");
    std::fs::write(&file, "hello\n").unwrap();
    let path = std::fs::canonicalize(&file).unwrap().display().to_string();
    let port = rig.port;
    let client = blocking(move || {
        let mut c = Client::connect(port);
        c.call(
            3,
            "openDiff",
            json!({"filePath": path, "newContent": "bye\n"}),
        );
        c
    })
    .await;
    let view = tokio::time::timeout(WAIT, rig.shown.recv())
        .await
        .expect("the diff is shown")
        .unwrap();
    assert_eq!(rig.engine.clients().len(), 1);
    let gone = std::time::Instant::now();
    drop(client); // its sockets close: the GET stream with them
    let limit = ccbridge_companion::service::ORPHANED * 2;
    let (id, reason) = tokio::time::timeout(limit, rig.closed.recv())
        .await
        .expect("the review of an agent gone closes")
        .unwrap();
    assert_eq!(id, view.id, "{reason:?}");
    assert!(
        gone.elapsed() >= ccbridge_companion::service::ORPHANED / 2,
        "closed before the agent had time to reconnect: {:?}",
        gone.elapsed()
    );
    ccbridge_testkit::poll_until(WAIT, Duration::from_millis(20), || {
        rig.engine.clients().is_empty().then_some(())
    })
    .expect("the agent is no longer listed as connected");
}

#[tokio::test(flavor = "multi_thread")]
async fn close_diff_answers_with_the_users_text_and_the_editor_context_is_pushed() {
    let rig = rig().await;
    let file = rig.dir.path().join("a.rs");
    std::fs::write(&file, "fn main() {}\n").unwrap();
    let path = std::fs::canonicalize(&file).unwrap().display().to_string();
    let port = rig.port;
    let mut client = blocking(move || Client::connect(port)).await;
    let first = blocking(move || {
        let n = client.next("ide/contextUpdate");
        (client, n)
    })
    .await;
    client = first.0;
    assert_eq!(
        first.1["workspaceState"]["openFiles"],
        json!([]),
        "{}",
        first.1
    );

    rig.engine
        .send(EditorEvent::OpenEditors(vec![EditorTab {
            path: path.clone(),
            is_active: true,
            is_dirty: false,
            language_id: None,
            label: None,
            is_untitled: false,
        }]))
        .await
        .unwrap();
    rig.engine
        .send(EditorEvent::Selection(Some(Selection {
            file_path: path.clone(),
            text: "main".into(),
            range: Range::new(Position::new(0, 3), Position::new(0, 7)),
        })))
        .await
        .unwrap();
    let p = path.clone();
    let (client, update) = blocking(move || {
        // Debounced: the tab and the selection may come as one update.
        loop {
            let n = client.next("ide/contextUpdate");
            if n["workspaceState"]["openFiles"][0]["selectedText"] == "main" {
                return (client, n);
            }
        }
    })
    .await;
    let f = &update["workspaceState"]["openFiles"][0];
    assert_eq!(f["path"], p.as_str());
    assert_eq!(f["isActive"], true);
    assert_eq!(f["cursor"], json!({"line": 1, "character": 8}));

    // The user answered in the terminal: the client closes the diff, and
    // takes the text the user left in the review (Gemini CLI writes a
    // non-null `content`), so edits made in the editor are not lost.
    let p = path.clone();
    let mut client = blocking(move || {
        let mut c = client;
        c.call(
            5,
            "openDiff",
            json!({"filePath": p, "newContent": "fn main() { }\n"}),
        );
        c
    })
    .await;
    let mut rig = rig;
    tokio::time::timeout(WAIT, rig.shown.recv())
        .await
        .expect("shown")
        .expect("shown");
    let p = path.clone();
    let (mut client, answer) = blocking(move || {
        let a = client.call(
            6,
            "closeDiff",
            json!({"filePath": p, "suppressNotification": true}),
        );
        (client, a)
    })
    .await;
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"content": format!("fn main() {{ }}\n{}", support::EDITED)})
    );
    // Closed: a second closeDiff has no review to take text from.
    let p = path.clone();
    let again = blocking(move || {
        client.call(
            7,
            "closeDiff",
            json!({"filePath": p, "suppressNotification": true}),
        )
    })
    .await;
    let text = again["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"content": null})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_token_or_a_foreign_origin_gets_nowhere() {
    let rig = rig().await;
    let port = rig.port;
    blocking(move || {
        let init = support::init();
        let wrong = "f".repeat(64);
        let a = mcp_post(port, &wrong, None, &init, WAIT);
        assert_eq!(a.status, 401, "{}", a.head);
        let host = format!("127.0.0.1:{port}");
        let auth = format!("Bearer {TOKEN}");
        let a = ccbridge_testkit::http::post(
            port,
            "/mcp",
            &[
                ("Host", host.as_str()),
                ("Authorization", auth.as_str()),
                ("Origin", "http://evil.example"),
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
            ],
            &init,
            WAIT,
        );
        assert_eq!(a.status, 403, "{}", a.head);
        let a = ccbridge_testkit::http::post(
            port,
            "/mcp",
            &[
                ("Host", "evil.example"),
                ("Authorization", auth.as_str()),
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
            ],
            &init,
            WAIT,
        );
        assert_eq!(a.status, 403, "{}", a.head);
    })
    .await;
}
