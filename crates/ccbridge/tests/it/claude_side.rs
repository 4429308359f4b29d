//! Claude's end of the editor-plugin tests (`nvim_plugin.rs`,
//! `vim_plugin.rs`, `emacs_package.rs`): each plays Claude Code over a real
//! WebSocket with an `IdeClient` and checks what Claude sees. What they
//! share is here; the editor each drives is theirs.

use ccbridge_client::ws_client::IdeClient;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// Bound for one wait on Claude's side.
pub const STEP: Duration = Duration::from_secs(15);

/// Connects as Claude Code does to the IDE server on `port` whose lock
/// file holds `token`: the handshake, `tools/list`, then `ide_connected`
/// with this process's pid (after which the editor hears of the session).
pub async fn connect(port: u16, token: &str) -> IdeClient {
    let mut c = IdeClient::connect_as(port, Some(token), STEP, "claude-code")
        .await
        .unwrap();
    c.list_tools().await.unwrap();
    c.notify("ide_connected", Some(json!({"pid": std::process::id()})))
        .await
        .unwrap();
    c
}

/// The next `method` notification Claude receives (others are skipped).
pub async fn next_note(c: &mut IdeClient, method: &str) -> Value {
    let deadline = tokio::time::Instant::now() + STEP;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next_notification(left).await.unwrap() {
            Some(n) if n.method == method => {
                return n.params.map(|p| p.to_value()).unwrap_or(Value::Null)
            }
            Some(_) => continue,
            None => panic!("no {method} within {STEP:?}"),
        }
    }
}

/// The `selection_changed` Claude receives next whose text is `text`.
pub async fn selection_with(c: &mut IdeClient, text: &str) -> Value {
    let deadline = tokio::time::Instant::now() + STEP;
    let mut seen = vec![];
    while tokio::time::Instant::now() < deadline {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next_notification(left).await.unwrap() {
            Some(n) if n.method == "selection_changed" => {
                let p = n.params.map(|p| p.to_value()).unwrap_or(Value::Null);
                if p["text"] == text {
                    return p;
                }
                seen.push(p);
            }
            Some(_) => {}
            None => break,
        }
    }
    panic!("no selection_changed with text {text:?}; seen: {seen:#?}");
}

/// A selection's `[start line, start character, end line, end character]`.
pub fn range(v: &Value) -> [u64; 4] {
    let s = &v["selection"]["start"];
    let e = &v["selection"]["end"];
    [
        s["line"].as_u64().unwrap(),
        s["character"].as_u64().unwrap(),
        e["line"].as_u64().unwrap(),
        e["character"].as_u64().unwrap(),
    ]
}

/// Calls `tool` until its JSON result satisfies `ok`.
pub async fn poll_tool(
    c: &mut IdeClient,
    tool: &str,
    args: Value,
    ok: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + STEP;
    let mut last = Value::Null;
    while tokio::time::Instant::now() < deadline {
        let r = c.call_tool(tool, args.clone(), Some(STEP)).await.unwrap();
        let text = r.content[0].as_text().unwrap_or_default().to_owned();
        last = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if ok(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{tool} never gave the expected result; last: {last}");
}

/// Starts Claude's `openDiff` of `path` → `proposed` (as the CLI calls
/// it, with no time limit); the task returns the client and the tool's
/// text once the user decided.
pub fn start_open_diff(
    c: IdeClient,
    path: String,
    proposed: &str,
) -> tokio::task::JoinHandle<(IdeClient, String)> {
    let proposed = proposed.to_owned();
    tokio::spawn(async move {
        let mut c = c;
        let name = path.rsplit('/').next().unwrap_or(&path).to_owned();
        let r = c
            .call_tool(
                "openDiff",
                json!({"old_file_path": path, "new_file_path": path,
                       "new_file_contents": proposed,
                       "tab_name": format!("✻ [Claude Code] {name} (1) ⧉")}),
                None,
            )
            .await
            .unwrap();
        let text = r
            .content
            .iter()
            .filter_map(|c| c.as_text())
            .collect::<Vec<_>>()
            .join("\n");
        (c, text)
    })
}

/// The review was accepted: `FILE_SAVED` with `expected` as the text.
pub fn assert_saved(text: &str, expected: &str) {
    assert!(text.starts_with("FILE_SAVED"), "{text}");
    assert!(text.ends_with(expected), "{text}");
}

/// The `openDiff` answer, once the user decided.
pub async fn verdict(task: tokio::task::JoinHandle<(IdeClient, String)>) -> (IdeClient, String) {
    tokio::time::timeout(STEP, task)
        .await
        .expect("openDiff answered")
        .unwrap()
}

/// Claude's `openFile` of `path` with the range starting at `start_text`,
/// as the CLI sends it; the call must succeed.
pub async fn open_file_at_text(c: &mut IdeClient, path: &str, start_text: &str) {
    let r = c
        .call_tool(
            "openFile",
            json!({"filePath": path, "preview": false, "startText": start_text, "endText": "",
                   "selectToEndOfLine": false, "makeFrontmost": true}),
            Some(STEP),
        )
        .await
        .unwrap();
    assert!(!r.is_error, "{r:?}");
}

/// Gemini CLI's end, for what only the other agents do: an MCP session on
/// the companion server the sidecar runs on `port`, opened with the token
/// of Gemini CLI's discovery file for that port (in `gemini/ide/` of the
/// sidecar's `TMPDIR`). Blocking calls.
pub struct GeminiSide {
    port: u16,
    token: String,
    session: String,
    next_id: std::cell::Cell<u64>,
}

impl GeminiSide {
    /// The companion's port from `initialize`'s agents (Gemini CLI's
    /// terminal environment).
    pub fn port_of(init: &Value) -> u16 {
        init["agents"]
            .as_array()
            .and_then(|l| l.iter().find(|a| a["id"] == "gemini"))
            .and_then(|a| a["env"]["GEMINI_CLI_IDE_SERVER_PORT"].as_str())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("Gemini CLI is not offered in initialize: {init}"))
    }

    pub fn connect(port: u16, temp_dir: &Path) -> GeminiSide {
        let dir = temp_dir.join("gemini").join("ide");
        let suffix = format!("-{port}.json");
        let token = ccbridge_testkit::poll_until(STEP, Duration::from_millis(20), || {
            let entry = std::fs::read_dir(&dir)
                .ok()?
                .flatten()
                .find(|e| e.file_name().to_string_lossy().ends_with(&suffix))?;
            let advert: Value = serde_json::from_slice(&std::fs::read(entry.path()).ok()?).ok()?;
            advert["authToken"].as_str().map(str::to_owned)
        })
        .unwrap_or_else(|| {
            panic!(
                "no Gemini CLI discovery file for port {port} in {}",
                dir.display()
            )
        });
        let session = ccbridge_testkit::http::mcp_session(port, &token, STEP);
        GeminiSide {
            port,
            token,
            session,
            next_id: std::cell::Cell::new(2),
        }
    }

    /// Calls `tool`; returns its result (panics on a JSON-RPC error).
    pub fn call(&self, tool: &str, args: Value) -> Value {
        let id = self.next_id.replace(self.next_id.get() + 1);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": tool, "arguments": args}});
        let answer = ccbridge_testkit::http::mcp_post(
            self.port,
            &self.token,
            Some(&self.session),
            &body.to_string(),
            STEP,
        )
        .message();
        assert!(answer["error"].is_null(), "{tool}: {answer}");
        answer["result"].clone()
    }

    /// `closeDiff` as Gemini CLI sends it when the user answered in its
    /// terminal; returns the `content` of the answer (the text the CLI
    /// writes, or null for its own proposal).
    pub fn close_diff(&self, path: &str) -> Value {
        let r = self.call(
            "closeDiff",
            json!({"filePath": path, "suppressNotification": true}),
        );
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        serde_json::from_str::<Value>(text)
            .unwrap_or_else(|e| panic!("closeDiff's answer: {e}: {r}"))["content"]
            .clone()
    }

    /// Gemini CLI proposes an edit of `path` (holding `original`), the
    /// user adds [`KEPT_LINE`] to it in the editor's review (`editor` with
    /// [`Step::Edit`]: wait for the review, then edit it, unsaved), then
    /// answers in Gemini CLI's terminal: the CLI must get the review's
    /// text, edit included; then `editor` with [`Step::Closed`] waits for
    /// the review to close.
    pub fn answered_in_terminal(&self, path: &str, original: &str, mut editor: impl FnMut(Step)) {
        let proposed = original.replace("print(message)", "print(message.upper())");
        assert_ne!(proposed, original, "the proposal changes nothing");
        self.call(
            "openDiff",
            json!({"filePath": path, "newContent": proposed}),
        );
        editor(Step::Edit);
        assert_eq!(
            self.close_diff(path),
            json!(format!("{proposed}{KEPT_LINE}\n")),
            "closeDiff's answer should be the review's text, the user's line included"
        );
        editor(Step::Closed);
    }
}

/// The line the user adds to the proposal in [`GeminiSide::answered_in_terminal`].
pub const KEPT_LINE: &str = "# kept from the review";

/// The editor's part in [`GeminiSide::answered_in_terminal`].
pub enum Step {
    Edit,
    Closed,
}
