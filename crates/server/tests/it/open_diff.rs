//! The whole life of an `openDiff`: every way it can end is answered
//! exactly once, on the connection that asked, and every view is closed
//! exactly once.

use crate::support::*;
use ccbridge_server::{CloseReason, DiffDecision, DiffId, DiffView, EditorEvent, FrontendError};
use serde_json::{json, Value};
use std::time::Duration;

/// A short window for "this does not happen".
const QUIET: Duration = Duration::from_millis(150);

fn diff_args(path: &str, contents: &str, tab: &str) -> Value {
    json!({"old_file_path":path,"new_file_path":path,"new_file_contents":contents,"tab_name":tab})
}

fn tab(name: &str) -> String {
    format!("✻ [Claude Code] {name} (65ade6) ⧉")
}

/// Starts an `openDiff` and waits until the editor shows it.
async fn open(
    s: &TestServer,
    c: &mut WsClient,
    path: &str,
    contents: &str,
    tab: &str,
) -> (i64, DiffView) {
    let id = c
        .start_tool("openDiff", diff_args(path, contents, tab))
        .await;
    let view = s.frontend.wait_show_diff(tab).await;
    (id, view)
}

async fn decide(s: &TestServer, id: DiffId, decision: DiffDecision) {
    s.send(EditorEvent::DiffResolved { id, decision }).await;
}

fn result_texts(resp: &Value) -> Vec<String> {
    assert!(resp.get("error").is_none(), "{resp}");
    assert!(!is_error(&resp["result"]), "{resp}");
    texts(&resp["result"])
}

#[tokio::test]
async fn accept_with_user_edits_answers_file_saved_with_those_contents() {
    let s = TestServer::start().await;
    let path = s.dir.path().join("hello.py");
    std::fs::write(&path, "print(0)\n").unwrap();
    let path = path.to_str().unwrap().to_owned();
    let mut c = s.client().await;
    let t = tab("hello.py");
    let (id, view) = open(&s, &mut c, &path, "print(1)\n", &t).await;
    assert_eq!(view.tab_name, t);
    assert_eq!(view.old_file_path, path);
    assert_eq!(view.new_file_path, path);
    assert_eq!(view.original_contents.as_deref(), Some("print(0)\n"));
    assert_eq!(view.proposed_contents, "print(1)\n");

    decide(
        &s,
        view.id,
        DiffDecision::Accepted {
            contents: Some("print(2)  # mine\n".into()),
        },
    )
    .await;
    let r = c.response(id).await;
    assert_eq!(result_texts(&r), vec!["FILE_SAVED", "print(2)  # mine\n"]);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "print(0)\n",
        "the engine never writes the file; the client does"
    );

    // The client then closes the tab, twice.
    for _ in 0..2 {
        let r = c.call_tool("close_tab", json!({"tab_name": t})).await;
        assert_eq!(texts(&r), vec!["TAB_CLOSED"]);
    }
    s.frontend.wait_close_diff(view.id).await;
    assert_eq!(s.frontend.close_diff_count(view.id), 1);
    assert_eq!(s.frontend.count(|c| matches!(c, Call::CloseTab(_))), 0);
}

#[tokio::test]
async fn accept_without_contents_answers_the_proposal_and_new_files_have_no_original() {
    let s = TestServer::start().await;
    let path = s.dir.path().join("brand_new.py");
    let path = path.to_str().unwrap().to_owned();
    let mut c = s.client().await;
    let t = tab("brand_new.py");
    let (id, view) = open(&s, &mut c, &path, "x\ny\n", &t).await;
    assert_eq!(view.original_contents, None);
    decide(&s, view.id, DiffDecision::Accepted { contents: None }).await;
    assert_eq!(
        result_texts(&c.response(id).await),
        vec!["FILE_SAVED", "x\ny\n"]
    );
    assert!(!std::path::Path::new(&path).exists());
}

#[tokio::test]
async fn reject_answers_diff_rejected_and_the_view_stays_until_close_tab() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let t = tab("a.py");
    let (id, view) = open(&s, &mut c, "/nonexistent/a.py", "new\n", &t).await;
    decide(&s, view.id, DiffDecision::Rejected).await;
    assert_eq!(
        result_texts(&c.response(id).await),
        vec!["DIFF_REJECTED".to_string(), t.clone()]
    );
    assert_eq!(s.frontend.close_diff_count(view.id), 0);
    let r = c.call_tool("close_tab", json!({"tab_name": t})).await;
    assert_eq!(texts(&r), vec!["TAB_CLOSED"]);
    s.frontend.wait_close_diff(view.id).await;
    assert_eq!(s.frontend.close_reason(view.id), Some(CloseReason::Decided));
}

#[tokio::test]
async fn close_tab_twice_while_pending_settles_once_and_closes_once() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let t = tab("a.py");
    let (id, view) = open(&s, &mut c, "/nonexistent/a.py", "new\n", &t).await;
    // The user answered in the terminal: two close_tab, back to back.
    let c1 = c.start_tool("close_tab", json!({"tab_name": t})).await;
    let c2 = c.start_tool("close_tab", json!({"tab_name": t})).await;
    assert_eq!(result_texts(&c.response(c1).await), vec!["TAB_CLOSED"]);
    assert_eq!(result_texts(&c.response(c2).await), vec!["TAB_CLOSED"]);
    assert_eq!(
        result_texts(&c.response(id).await),
        vec!["DIFF_REJECTED".to_string(), t.clone()]
    );
    s.frontend.wait_close_diff(view.id).await;
    assert_eq!(
        s.frontend.close_reason(view.id),
        Some(CloseReason::AgentClosed)
    );
    // Nothing else follows: no second close, no file-tab close.
    c.assert_none("more answers", |m| m.get("id").is_some(), QUIET)
        .await;
    assert_eq!(s.frontend.close_diff_count(view.id), 1);
    assert_eq!(s.frontend.count(|c| matches!(c, Call::CloseTab(_))), 0);
}

#[tokio::test]
async fn a_verdict_after_close_tab_is_ignored() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let t = tab("a.py");
    let (id, view) = open(&s, &mut c, "/nonexistent/a.py", "new\n", &t).await;
    let r = c.call_tool("close_tab", json!({"tab_name": t})).await;
    assert_eq!(texts(&r), vec!["TAB_CLOSED"]);
    assert_eq!(result_texts(&c.response(id).await)[0], "DIFF_REJECTED");
    decide(
        &s,
        view.id,
        DiffDecision::Accepted {
            contents: Some("late".into()),
        },
    )
    .await;
    c.assert_none("a second answer", |m| m["id"] == json!(id), QUIET)
        .await;
    let p = c.request("ping", json!({})).await;
    assert_eq!(p["result"], json!({}));
    assert_eq!(s.frontend.close_diff_count(view.id), 1);
}

#[tokio::test]
async fn close_all_diff_tabs_settles_and_closes_only_this_connections_diffs() {
    let s = TestServer::start_with(FakeFrontend::new(), |c| c.multi_client = true).await;
    let mut a = s.client().await;
    let mut b = s.client().await;
    assert_eq!(s.handle.clients().len(), 2);
    let r = a.call_tool("closeAllDiffTabs", json!({})).await;
    assert_eq!(texts(&r), vec!["CLOSED_0_DIFF_TABS"]);

    let (a1, va1) = open(&s, &mut a, "/nonexistent/1", "1", &tab("1")).await;
    let (a2, va2) = open(&s, &mut a, "/nonexistent/2", "2", &tab("2")).await;
    let (b1, vb1) = open(&s, &mut b, "/nonexistent/3", "3", &tab("3")).await;

    let r = a.call_tool("closeAllDiffTabs", json!({})).await;
    assert_eq!(texts(&r), vec!["CLOSED_2_DIFF_TABS"]);
    assert_eq!(result_texts(&a.response(a1).await)[0], "DIFF_REJECTED");
    assert_eq!(result_texts(&a.response(a2).await)[0], "DIFF_REJECTED");
    s.frontend.wait_close_diff(va1.id).await;
    s.frontend.wait_close_diff(va2.id).await;
    assert_eq!(
        s.frontend.close_reason(va1.id),
        Some(CloseReason::NewPrompt)
    );
    assert_eq!(
        s.frontend.close_diff_count(vb1.id),
        0,
        "B's diff was left alone"
    );
    b.assert_none("an answer to B's diff", |m| m["id"] == json!(b1), QUIET)
        .await;

    // B's diff is still pending and decidable.
    decide(
        &s,
        vb1.id,
        DiffDecision::Accepted {
            contents: Some("B!".into()),
        },
    )
    .await;
    assert_eq!(
        result_texts(&b.response(b1).await),
        vec!["FILE_SAVED", "B!"]
    );
    a.assert_none(
        "B's answer on A",
        |m| m["result"]["content"][1]["text"] == "B!",
        Duration::ZERO,
    )
    .await;
    assert_eq!(s.frontend.close_diff_count(va1.id), 1);
    assert_eq!(s.frontend.close_diff_count(va2.id), 1);
}

#[tokio::test]
async fn each_diff_is_answered_on_the_connection_that_asked() {
    let s = TestServer::start_with(FakeFrontend::new(), |c| c.multi_client = true).await;
    let mut a = s.client().await;
    let mut b = s.client().await;
    // Both use the same request id for their openDiff.
    let (ia, va) = open(&s, &mut a, "/nonexistent/a", "a", &tab("a")).await;
    let (ib, vb) = open(&s, &mut b, "/nonexistent/b", "b", &tab("b")).await;
    assert_eq!(ia, ib);
    decide(
        &s,
        vb.id,
        DiffDecision::Accepted {
            contents: Some("from B".into()),
        },
    )
    .await;
    decide(
        &s,
        va.id,
        DiffDecision::Accepted {
            contents: Some("from A".into()),
        },
    )
    .await;
    assert_eq!(
        result_texts(&a.response(ia).await),
        vec!["FILE_SAVED", "from A"]
    );
    assert_eq!(
        result_texts(&b.response(ib).await),
        vec!["FILE_SAVED", "from B"]
    );
    a.assert_none("a second answer", |m| m["id"] == json!(ia), QUIET)
        .await;
    b.assert_none("a second answer", |m| m["id"] == json!(ib), Duration::ZERO)
        .await;
}

#[tokio::test]
async fn the_same_tab_name_twice_settles_and_closes_the_first() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let t = tab("a.py");
    let (first, v1) = open(&s, &mut c, "/nonexistent/a.py", "one", &t).await;
    let second = c
        .start_tool("openDiff", diff_args("/nonexistent/a.py", "two", &t))
        .await;
    let v2 = s
        .frontend
        .wait_for("the second show_diff", |calls| {
            calls.iter().find_map(|c| match c {
                Call::ShowDiff(v) if v.tab_name == t && v.id != v1.id => Some(v.clone()),
                _ => None,
            })
        })
        .await;
    assert_eq!(v2.proposed_contents, "two");
    assert_eq!(
        result_texts(&c.response(first).await),
        vec!["DIFF_REJECTED".to_string(), t.clone()]
    );
    s.frontend.wait_close_diff(v1.id).await;
    assert_eq!(s.frontend.close_reason(v1.id), Some(CloseReason::Replaced));
    assert_eq!(s.frontend.close_diff_count(v2.id), 0);
    decide(&s, v2.id, DiffDecision::Accepted { contents: None }).await;
    assert_eq!(
        result_texts(&c.response(second).await),
        vec!["FILE_SAVED", "two"]
    );
}

#[tokio::test]
async fn a_disconnecting_client_has_its_pending_views_closed() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let (_, view) = open(&s, &mut c, "/nonexistent/a.py", "x", &tab("a.py")).await;
    c.close().await;
    s.frontend.wait_close_diff(view.id).await;
    s.frontend
        .wait_for("client_disconnected", |calls| {
            calls
                .iter()
                .any(|c| matches!(c, Call::ClientDisconnected(_)))
                .then_some(())
        })
        .await;
    assert_eq!(s.frontend.close_diff_count(view.id), 1);
    // A late verdict for the closed view changes nothing.
    decide(&s, view.id, DiffDecision::Rejected).await;
    s.assert_serving().await;
}

#[tokio::test]
async fn a_pending_diff_does_not_delay_other_requests_on_the_same_connection() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let (id, view) = open(&s, &mut c, "/nonexistent/a.py", "x", &tab("a.py")).await;
    let started = tokio::time::Instant::now();
    let d = c
        .call_tool("getDiagnostics", json!({"uri":"file:///nonexistent/a.py"}))
        .await;
    assert_eq!(
        first_json(&d),
        json!([{"uri":"file:///nonexistent/a.py","diagnostics":[]}])
    );
    let p = c.request("ping", json!({})).await;
    assert_eq!(p["result"], json!({}));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The diff is still waiting for the user.
    assert!(c.response_within(id, Duration::ZERO).await.is_none());
    decide(&s, view.id, DiffDecision::Rejected).await;
    assert_eq!(result_texts(&c.response(id).await)[0], "DIFF_REJECTED");
}

#[tokio::test]
async fn shutdown_settles_pending_diffs_and_removes_the_lock_file() {
    let mut s = TestServer::start().await;
    let lock = s.handle.lock_path().expect("lock path");
    assert!(lock.exists());
    let mut c = s.client().await;
    let t = tab("a.py");
    let (id, view) = open(&s, &mut c, "/nonexistent/a.py", "x", &t).await;
    s.stop().await.expect("run returns Ok");
    s.frontend.wait_close_diff(view.id).await;
    assert_eq!(s.frontend.close_diff_count(view.id), 1);
    assert!(!lock.exists(), "lock file left behind");
    // The waiting call was answered before the connection closed.
    let closed = c.wait_closed(WAIT).await;
    assert_eq!(closed.code(), Some(1001), "{closed:?}");
    let r = c.response_within(id, Duration::ZERO).await;
    let r = r.expect("the pending openDiff was answered before the close");
    assert_eq!(result_texts(&r), vec!["DIFF_REJECTED".to_string(), t]);
}

#[tokio::test]
async fn an_editor_that_cannot_show_the_diff_gives_an_error_result() {
    let s = TestServer::start().await;
    s.frontend
        .script(|a| a.show_diff = Err(FrontendError::Failed("no diff viewer".into())));
    let mut c = s.client().await;
    let r = c
        .call_tool(
            "openDiff",
            diff_args("/nonexistent/a.py", "x", &tab("a.py")),
        )
        .await;
    assert!(is_error(&r), "{r}");
    assert!(texts(&r)[0].contains("no diff viewer"), "{r}");

    // The failed view is forgotten: a retry with the same name works.
    s.frontend.script(|a| a.show_diff = Ok(()));
    let t = tab("a.py");
    let id = c
        .start_tool("openDiff", diff_args("/nonexistent/a.py", "y", &t))
        .await;
    let v = s
        .frontend
        .wait_for("the retried show_diff", |calls| {
            calls.iter().find_map(|c| match c {
                Call::ShowDiff(v) if v.proposed_contents == "y" => Some(v.clone()),
                _ => None,
            })
        })
        .await;
    decide(&s, v.id, DiffDecision::Accepted { contents: None }).await;
    assert_eq!(result_texts(&c.response(id).await), vec!["FILE_SAVED", "y"]);
}

/// Checklist item 17, a duplicate id: a client reusing the id of an
/// `openDiff` still waiting for the user. Two answers with one id could
/// not be told apart, so the reusing request is refused at once (-32600,
/// naming the id) and nothing more is shown; the first is answered when
/// the user decides, and the id is free again once it is.
#[tokio::test]
async fn an_id_reused_while_its_diff_waits_is_refused_and_the_first_answered() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let call = |tab: &str| {
        json!({"jsonrpc":"2.0","id":42,"method":"tools/call",
               "params":{"name":"openDiff","arguments":diff_args("/nonexistent/a.py", "x", tab)}})
    };
    c.send_json(&call(&tab("a.py"))).await;
    let view = s.frontend.wait_show_diff(&tab("a.py")).await;
    c.send_json(&call(&tab("b.py"))).await;
    let refused = c.response(42).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let why = refused["error"]["message"].as_str().unwrap();
    assert!(why.contains("request id 42 is in use"), "{why}");
    let shown = |call: &Call| matches!(call, Call::ShowDiff(_));
    assert_eq!(s.frontend.count(shown), 1, "{:?}", s.frontend.calls());
    decide(&s, view.id, DiffDecision::Rejected).await;
    assert_eq!(result_texts(&c.response(42).await)[0], "DIFF_REJECTED");
    c.send_json(&call(&tab("c.py"))).await;
    let view = s.frontend.wait_show_diff(&tab("c.py")).await;
    decide(&s, view.id, DiffDecision::Rejected).await;
    assert_eq!(result_texts(&c.response(42).await)[0], "DIFF_REJECTED");
}
