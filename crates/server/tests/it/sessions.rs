//! Several Claude Code sessions: the newest wins (close 4001 with the exact
//! reason the CLI recognises, so it does not reconnect), unless the engine
//! serves several at once.

use crate::support::*;
use ccbridge_protocol::editor::{Position, Range, Selection};
use ccbridge_server::{DiffDecision, EditorEvent};
use serde_json::json;
use std::time::Duration;

fn diff_args(path: &str, tab: &str) -> serde_json::Value {
    json!({"old_file_path":path,"new_file_path":path,"new_file_contents":"new\n","tab_name":tab})
}

#[tokio::test]
async fn the_newest_session_wins_and_the_old_one_is_closed_with_4001() {
    let s = TestServer::start().await;
    let mut a = s.ready_client().await;
    let a_id = s.handle.clients()[0].id;
    let tab = "✻ [Claude Code] a.py (aaaaaa) ⧉";
    a.start_tool("openDiff", diff_args("/nonexistent/a.py", tab))
        .await;
    let view = s.frontend.wait_show_diff(tab).await;

    // A second connection that has not initialized evicts nobody.
    let mut b = s.connect().await;
    let p = b.request("ping", json!({})).await;
    assert_eq!(p["result"], json!({}));
    let p = a.request("ping", json!({})).await;
    assert_eq!(p["result"], json!({}), "A must survive B's mere connection");
    assert_eq!(s.handle.clients().len(), 1);

    // B finishes initialize: A is told why, exactly, and closed.
    let init = b.initialize("2025-11-25").await;
    assert_eq!(
        init["result"]["protocolVersion"], "2025-11-25",
        "B got its answer"
    );
    let closed = a.wait_closed(WAIT).await;
    assert_eq!(
        closed,
        Closed::Frame(
            4001,
            "Another Claude Code session connected to this IDE".into()
        )
    );
    // A's pending diff is settled and its view closed.
    s.frontend.wait_close_diff(view.id).await;
    assert_eq!(s.frontend.close_diff_count(view.id), 1);
    s.frontend
        .wait_for("A's disconnect", |calls| {
            calls
                .contains(&Call::ClientDisconnected(a_id))
                .then_some(())
        })
        .await;

    // B is the session now, and gets the notifications.
    let clients = s.handle.clients();
    assert_eq!(clients.len(), 1, "{clients:?}");
    assert_ne!(clients[0].id, a_id);
    b.notify("notifications/initialized", json!({})).await;
    b.notify("ide_connected", json!({"pid": CLI_PID})).await;
    b.request("tools/list", json!({})).await;
    s.wait_ready(&mut b).await;
    assert!(b.closed().is_none());
}

#[tokio::test]
async fn multi_client_keeps_both_and_answers_each_on_its_own_connection() {
    let s = TestServer::start_with(FakeFrontend::new(), |c| c.multi_client = true).await;
    let mut a = s.ready_client().await;
    // (A readiness probe would go to A alone: B turns ready on its own and
    // gets the selection below live or as its replay.)
    let mut b = s.client().await;
    assert_eq!(s.handle.clients().len(), 2);
    assert!(a.closed().is_none() && b.closed().is_none());

    // Both receive the editor's notifications.
    s.send(EditorEvent::Selection(Some(Selection {
        file_path: "/w/a.rs".into(),
        text: "shared".into(),
        range: Range::new(Position::new(0, 0), Position::new(0, 6)),
    })))
    .await;
    for c in [&mut a, &mut b] {
        let n = c
            .expect("selection_changed", is_notification("selection_changed"))
            .await;
        assert_eq!(n["params"]["text"], "shared");
    }

    // Each openDiff is answered on the connection that asked.
    let ia = a
        .start_tool("openDiff", diff_args("/nonexistent/a", "tab A"))
        .await;
    let ib = b
        .start_tool("openDiff", diff_args("/nonexistent/b", "tab B"))
        .await;
    let va = s.frontend.wait_show_diff("tab A").await;
    let vb = s.frontend.wait_show_diff("tab B").await;
    s.send(EditorEvent::DiffResolved {
        id: va.id,
        decision: DiffDecision::Accepted {
            contents: Some("A's".into()),
        },
    })
    .await;
    s.send(EditorEvent::DiffResolved {
        id: vb.id,
        decision: DiffDecision::Rejected,
    })
    .await;
    let ra = a.response(ia).await;
    assert_eq!(texts(&ra["result"]), vec!["FILE_SAVED", "A's"]);
    let rb = b.response(ib).await;
    assert_eq!(texts(&rb["result"]), vec!["DIFF_REJECTED", "tab B"]);
    // Neither sees the other's answer.
    a.assert_none(
        "B's answer",
        |m| m["result"]["content"][1]["text"] == "tab B",
        Duration::from_millis(100),
    )
    .await;
    b.assert_none(
        "A's answer",
        |m| m["result"]["content"][1]["text"] == "A's",
        Duration::ZERO,
    )
    .await;
    // A third session evicts nobody either.
    let _c = s.client().await;
    assert_eq!(s.handle.clients().len(), 3);
    assert!(a.closed().is_none());
    let p = a.request("ping", json!({})).await;
    assert_eq!(p["result"], json!({}));
}
