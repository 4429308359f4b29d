//! Server → client notifications: `selection_changed` (debounced, deduped,
//! replayed to each newly ready client) and `at_mentioned` (immediate, or
//! queued while no client is ready), and the quiet period the client needs
//! after its `tools/list`.

use crate::support::*;
use ccbridge_protocol::editor::{Position, Range, Selection};
use ccbridge_protocol::notifications::AtMentioned;
use ccbridge_server::EditorEvent;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::time::Instant;

fn sel(path: &str, text: &str, start: (u32, u32), end: (u32, u32)) -> EditorEvent {
    EditorEvent::Selection(Some(Selection {
        file_path: path.into(),
        text: text.into(),
        range: Range::new(Position::new(start.0, start.1), Position::new(end.0, end.1)),
    }))
}

fn mention(path: &str, lines: Option<(u32, u32)>) -> EditorEvent {
    EditorEvent::AtMention(AtMentioned {
        file_path: path.into(),
        line_start: lines.map(|l| l.0),
        line_end: lines.map(|l| l.1),
    })
}

fn is_selection(m: &Value) -> bool {
    is_notification("selection_changed")(m)
}

fn is_mention(m: &Value) -> bool {
    is_notification("at_mentioned")(m)
}

/// at_mentioned for one path, ignoring the readiness probes.
fn mention_of(path: &'static str) -> impl Fn(&Value) -> bool {
    move |m| is_mention(m) && m["params"]["filePath"] == path
}

#[tokio::test]
async fn selection_changed_is_0_based_and_a_cursor_has_empty_text() {
    let s = TestServer::start().await;
    let mut c = s.ready_client().await;
    s.send(sel("/w/hello.py", "a\nb\nc", (1, 0), (3, 1))).await;
    let n = c.expect("selection_changed", is_selection).await;
    assert_eq!(
        n,
        json!({"jsonrpc":"2.0","method":"selection_changed","params":{
            "text":"a\nb\nc","filePath":"/w/hello.py","fileUrl":"file:///w/hello.py",
            "selection":{"start":{"line":1,"character":0},"end":{"line":3,"character":1},"isEmpty":false}}})
    );
    s.send(sel("/w/a.rs", "", (4, 2), (4, 2))).await;
    let n = c.expect("the cursor", is_selection).await;
    assert_eq!(n["params"]["text"], "");
    assert_eq!(n["params"]["filePath"], "/w/a.rs");
    assert_eq!(
        n["params"]["selection"],
        json!({"start":{"line":4,"character":2},"end":{"line":4,"character":2},"isEmpty":true})
    );
}

#[tokio::test]
async fn a_burst_of_20_selections_is_debounced_to_the_last_one() {
    let debounce = Duration::from_millis(100);
    let s = TestServer::start_with(FakeFrontend::new(), |c| c.selection_debounce = debounce).await;
    let mut c = s.ready_client().await;
    for i in 0..20 {
        s.send(sel("/w/b.rs", "y", (i, 0), (i, 2))).await;
    }
    c.expect("the last selection", |m| {
        is_selection(m) && m["params"]["selection"]["start"]["line"] == 19
    })
    .await;
    // Everything else the burst produced, before and (for a while) after
    // the last: normally nothing (trailing debounce); a scheduler hiccup
    // mid-burst may add one or two, never anything like 20.
    let got = c.collect(is_selection, debounce * 4).await;
    assert!(
        got.len() <= 2,
        "{} more notifications for a burst of 20: {got:#?}",
        got.len()
    );
}

#[tokio::test]
async fn an_identical_selection_is_not_sent_again() {
    let debounce = Duration::from_millis(30);
    let s = TestServer::start_with(FakeFrontend::new(), |c| c.selection_debounce = debounce).await;
    let mut c = s.ready_client().await;
    s.send(sel("/w/a.rs", "abc", (0, 0), (0, 3))).await;
    c.expect("the first selection", is_selection).await;
    s.send(sel("/w/a.rs", "abc", (0, 0), (0, 3))).await;
    c.assert_none("a repeated selection", is_selection, debounce * 6)
        .await;
    // A different one is sent, and then the first one again is new.
    s.send(sel("/w/a.rs", "ab", (0, 0), (0, 2))).await;
    let n = c.expect("the changed selection", is_selection).await;
    assert_eq!(n["params"]["text"], "ab");
    s.send(sel("/w/a.rs", "abc", (0, 0), (0, 3))).await;
    let n = c.expect("the original again", is_selection).await;
    assert_eq!(n["params"]["text"], "abc");
}

#[tokio::test]
async fn nothing_is_sent_before_tools_list_plus_notify_delay() {
    let delay = Duration::from_millis(300);
    let s = TestServer::start_with(FakeFrontend::new(), |c| c.notify_delay = delay).await;
    let mut c = s.connect().await;
    let init = c.initialize("2025-11-25").await;
    assert!(init.get("result").is_some());
    c.notify("notifications/initialized", json!({})).await;
    c.notify("ide_connected", json!({"pid": CLI_PID})).await;
    s.send(sel("/w/a.rs", "early", (0, 0), (0, 5))).await;
    s.send(mention("/w/early.rs", Some((1, 2)))).await;
    // Initialized but no tools/list yet: silence (well within the fallback).
    c.assert_none(
        "a notification before tools/list",
        |m| m.get("id").is_none(),
        Duration::from_millis(250),
    )
    .await;

    let t0 = Instant::now();
    let list = c.request("tools/list", json!({})).await;
    assert!(list["result"]["tools"].is_array());
    let first = c.expect("the replay", |m| m.get("id").is_none()).await;
    let waited = t0.elapsed();
    assert!(
        waited >= delay,
        "a notification came {waited:?} after tools/list"
    );
    assert!(waited < delay + Duration::from_secs(2), "{waited:?}");
    // The latest selection first, then the queued mention.
    assert_eq!(first["method"], "selection_changed", "{first}");
    assert_eq!(first["params"]["text"], "early");
    let m = c
        .expect("the queued mention", mention_of("/w/early.rs"))
        .await;
    assert_eq!(
        m["params"],
        json!({"filePath":"/w/early.rs","lineStart":1,"lineEnd":2})
    );
}

#[tokio::test]
async fn a_client_that_never_lists_tools_still_gets_its_context() {
    let s = TestServer::start().await; // notify_delay 50 ms; fallback +1.5 s
    s.send(sel("/w/a.rs", "ctx", (0, 0), (0, 3))).await;
    let mut c = s.connect().await;
    let t0 = Instant::now();
    c.initialize("2025-11-25").await;
    c.notify("notifications/initialized", json!({})).await;
    let n = c.expect("the fallback replay", is_selection).await;
    assert_eq!(n["params"]["text"], "ctx");
    assert!(
        t0.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
}

#[tokio::test]
async fn the_latest_selection_is_replayed_after_ide_connected_and_tools_list() {
    let s = TestServer::start().await;
    s.send(sel("/w/hello.py", "print(1)", (2, 0), (2, 8))).await;
    // The editor then loses focus: the latest selection is still replayed.
    s.send(EditorEvent::Selection(None)).await;
    let mut c = s.client().await;
    let n = c.expect("the replay", is_selection).await;
    assert_eq!(n["params"]["text"], "print(1)");
    assert_eq!(
        n["params"]["selection"]["start"],
        json!({"line":2,"character":0})
    );
    c.assert_none("a second replay", is_selection, Duration::from_millis(150))
        .await;
}

#[tokio::test]
async fn at_mentioned_reaches_a_ready_client_at_once() {
    // A long selection debounce shows mentions are not debounced.
    let s = TestServer::start_with(FakeFrontend::new(), |c| {
        c.selection_debounce = Duration::from_secs(3)
    })
    .await;
    let mut c = s.ready_client().await;
    let t0 = Instant::now();
    s.send(mention("/w/hello.py", Some((1, 3)))).await;
    let n = c.expect("at_mentioned", mention_of("/w/hello.py")).await;
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    assert_eq!(
        n,
        json!({"jsonrpc":"2.0","method":"at_mentioned","params":{"filePath":"/w/hello.py","lineStart":1,"lineEnd":3}})
    );
    s.send(mention("/w/whole.rs", None)).await;
    let n = c
        .expect("a whole-file mention", mention_of("/w/whole.rs"))
        .await;
    assert_eq!(n["params"], json!({"filePath":"/w/whole.rs"}));
}

#[tokio::test]
async fn mentions_without_a_client_are_queued_bounded_and_delivered_once() {
    let s = TestServer::start_with(FakeFrontend::new(), |c| c.at_mention_queue_len = 3).await;
    for p in ["/q/0", "/q/1", "/q/2", "/q/3", "/q/4"] {
        s.send(mention(p, None)).await;
    }
    let mut c = s.client().await;
    let first = c.expect("the queued mentions", is_mention).await;
    let mut got = vec![first];
    got.extend(c.collect(is_mention, Duration::from_millis(200)).await);
    let paths: Vec<&str> = got
        .iter()
        .map(|m| m["params"]["filePath"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        vec!["/q/2", "/q/3", "/q/4"],
        "oldest dropped, order kept"
    );

    // A reconnecting client does not get them again.
    c.close().await;
    let mut c2 = s.client().await;
    s.wait_ready(&mut c2).await;
    let again = c2
        .collect(
            |m| is_mention(m) && m["params"]["filePath"].as_str().unwrap().starts_with("/q/"),
            Duration::ZERO,
        )
        .await;
    assert!(again.is_empty(), "{again:#?}");
}

#[tokio::test]
async fn a_reconnecting_client_gets_the_replay_again() {
    let s = TestServer::start().await;
    let mut c = s.ready_client().await;
    s.send(sel("/w/a.rs", "keep me", (5, 0), (6, 0))).await;
    let n = c.expect("the live selection", is_selection).await;
    assert_eq!(n["params"]["text"], "keep me");
    c.close().await;

    let mut c2 = s.client().await;
    let n = c2.expect("the replay on reconnect", is_selection).await;
    assert_eq!(n["params"]["text"], "keep me");
    assert_eq!(
        n["params"]["selection"]["end"],
        json!({"line":6,"character":0})
    );
}
