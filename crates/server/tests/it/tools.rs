//! Every IDE tool against the fake editor, with the editor's state fed in
//! through `EditorEvent`s. `openDiff` has its own file.

use crate::support::*;
use ccbridge_protocol::editor::{Diagnostic, EditorTab, Position, Range, Selection, Severity};
use ccbridge_protocol::mcp::Content;
use ccbridge_server::{Capabilities, EditorEvent, FrontendError};
use serde_json::{json, Value};

fn sel(path: &str, text: &str, start: (u32, u32), end: (u32, u32)) -> Selection {
    Selection {
        file_path: path.into(),
        text: text.into(),
        range: Range::new(Position::new(start.0, start.1), Position::new(end.0, end.1)),
    }
}

fn tab(path: &str, active: bool, dirty: bool) -> EditorTab {
    EditorTab {
        path: path.into(),
        is_active: active,
        is_dirty: dirty,
        language_id: None,
        label: None,
        is_untitled: false,
    }
}

#[tokio::test]
async fn selection_tools() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let r = c.call_tool("getCurrentSelection", json!({})).await;
    assert!(!is_error(&r));
    assert_eq!(
        first_json(&r),
        json!({"success":false,"message":"No active editor found"})
    );
    let r = c.call_tool("getLatestSelection", json!({})).await;
    assert_eq!(
        first_json(&r),
        json!({"success":false,"message":"No selection available"})
    );

    s.send(EditorEvent::Selection(Some(sel(
        "/w/hello.py",
        "a\nb\nc",
        (1, 0),
        (3, 1),
    ))))
    .await;
    s.sync(&mut c).await;
    let expected = json!({
        "success": true, "text": "a\nb\nc", "filePath": "/w/hello.py",
        "fileUrl": "file:///w/hello.py",
        "selection": {"start":{"line":1,"character":0},"end":{"line":3,"character":1},"isEmpty":false}
    });
    let r = c.call_tool("getCurrentSelection", json!({})).await;
    assert_eq!(first_json(&r), expected);
    let r = c.call_tool("getLatestSelection", json!({})).await;
    assert_eq!(first_json(&r), expected);

    // The editor loses focus: no current selection, the latest survives.
    s.send(EditorEvent::Selection(None)).await;
    s.sync(&mut c).await;
    let r = c.call_tool("getCurrentSelection", json!({})).await;
    assert_eq!(
        first_json(&r),
        json!({"success":false,"message":"No active editor found"})
    );
    let r = c.call_tool("getLatestSelection", json!({})).await;
    assert_eq!(first_json(&r), expected);

    // A bare cursor is a selection with empty text.
    s.send(EditorEvent::Selection(Some(sel(
        "/w/a.rs",
        "",
        (4, 2),
        (4, 2),
    ))))
    .await;
    s.sync(&mut c).await;
    let r = first_json(&c.call_tool("getCurrentSelection", json!({})).await);
    assert_eq!(r["text"], "");
    assert_eq!(r["selection"]["isEmpty"], true);
    assert_eq!(r["selection"]["start"], json!({"line":4,"character":2}));
}

#[tokio::test]
async fn open_editors_and_all_opened_file_paths() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let r = c.call_tool("getOpenEditors", json!({})).await;
    assert_eq!(first_json(&r), json!({"tabs": []}));
    let r = c.call_tool("get_all_opened_file_paths", json!({})).await;
    assert_eq!(texts(&r), vec![""]);

    let mut b = tab("/w/src/b.ts", false, true);
    b.label = Some("b.ts (edited)".into());
    b.language_id = Some("typescriptreact".into());
    s.send(EditorEvent::OpenEditors(vec![
        tab("/w/a.rs", true, false),
        b,
    ]))
    .await;
    s.sync(&mut c).await;
    let r = c.call_tool("getOpenEditors", json!({})).await;
    assert_eq!(
        first_json(&r),
        json!({"tabs":[
            {"uri":"file:///w/a.rs","isActive":true,"label":"a.rs","languageId":"rust","isDirty":false},
            {"uri":"file:///w/src/b.ts","isActive":false,"label":"b.ts (edited)","languageId":"typescriptreact","isDirty":true}
        ]})
    );
    let r = c.call_tool("get_all_opened_file_paths", json!({})).await;
    assert_eq!(texts(&r), vec!["/w/a.rs\n/w/src/b.ts"]);
}

#[tokio::test]
async fn workspace_folders() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let r = c.call_tool("getWorkspaceFolders", json!({})).await;
    assert_eq!(
        first_json(&r),
        json!({"success":true,"folders":[{"name":"test-workspace","uri":"file:///work/test-workspace",
               "path":"/work/test-workspace"}],"rootPath":"/work/test-workspace"})
    );
    s.send(EditorEvent::Workspace {
        folders: Some(vec!["/home/u/a b".into(), "/home/u/c".into()]),
        ide_name: None,
        pid: None,
    })
    .await;
    s.sync(&mut c).await;
    let r = first_json(&c.call_tool("getWorkspaceFolders", json!({})).await);
    assert_eq!(
        r["folders"][0],
        json!({"name":"a b","uri":"file:///home/u/a b","path":"/home/u/a b"})
    );
    assert_eq!(r["folders"][1]["path"], "/home/u/c");
    assert_eq!(r["rootPath"], "/home/u/a b");
}

#[tokio::test]
async fn diagnostics() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let r = c.call_tool("getDiagnostics", json!({})).await;
    assert_eq!(first_json(&r), json!([]));

    // As an editor plugin would send them: numeric code, LSP severity.
    let ts: Diagnostic = serde_json::from_value(json!({
        "message":"Cannot find name 'x'.","severity":1,"source":"tsc","code":2304,
        "range":{"start":{"line":0,"character":4},"end":{"line":0,"character":5}}
    }))
    .unwrap();
    let py = Diagnostic {
        message: "unused import".into(),
        severity: Severity::Warning,
        range: Range::new(Position::new(2, 0), Position::new(2, 9)),
        source: None,
        code: None,
    };
    s.send(EditorEvent::Diagnostics {
        path: "/w/my file.ts".into(),
        diagnostics: vec![ts],
    })
    .await;
    s.send(EditorEvent::Diagnostics {
        path: "/w/z.py".into(),
        diagnostics: vec![py],
    })
    .await;
    s.sync(&mut c).await;

    let ts_entry = json!({"uri":"file:///w/my file.ts","diagnostics":[{
        "message":"Cannot find name 'x'.","severity":"Error","source":"tsc","code":"2304",
        "range":{"start":{"line":0,"character":4},"end":{"line":0,"character":5}}}]});
    let py_entry = json!({"uri":"file:///w/z.py","diagnostics":[{
        "message":"unused import","severity":"Warning",
        "range":{"start":{"line":2,"character":0},"end":{"line":2,"character":9}}}]});

    let r = c.call_tool("getDiagnostics", json!({})).await;
    assert!(!is_error(&r));
    assert_eq!(r["content"][0]["type"], "text");
    assert_eq!(first_json(&r), json!([ts_entry.clone(), py_entry.clone()]));
    assert!(!texts(&r)[0].contains("%20"), "uris are raw: {r}");

    // The client's baseline call: `file://` + the raw path.
    let one = c
        .call_tool("getDiagnostics", json!({"uri":"file:///w/my file.ts"}))
        .await;
    assert_eq!(first_json(&one), json!([ts_entry]));
    let other = c
        .call_tool("getDiagnostics", json!({"uri":"file:///w/z.py"}))
        .await;
    assert_eq!(first_json(&other), json!([py_entry]));
    // A percent-encoded uri from another client finds the file too.
    let enc = first_json(
        &c.call_tool("getDiagnostics", json!({"uri":"file:///w/my%20file.ts"}))
            .await,
    );
    assert_eq!(enc[0]["diagnostics"].as_array().unwrap().len(), 1, "{enc}");
    // An unknown file is that uri with no diagnostics, never an error.
    let unknown = c
        .call_tool("getDiagnostics", json!({"uri":"file:///w/clean.rs"}))
        .await;
    assert!(!is_error(&unknown));
    assert_eq!(
        first_json(&unknown),
        json!([{"uri":"file:///w/clean.rs","diagnostics":[]}])
    );

    // An empty list clears one file; ClearDiagnostics clears all.
    s.send(EditorEvent::Diagnostics {
        path: "/w/z.py".into(),
        diagnostics: vec![],
    })
    .await;
    s.sync(&mut c).await;
    let r = first_json(&c.call_tool("getDiagnostics", json!({})).await);
    assert_eq!(r.as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r[0]["uri"], "file:///w/my file.ts");
    s.send(EditorEvent::ClearDiagnostics).await;
    s.sync(&mut c).await;
    let r = c.call_tool("getDiagnostics", json!({})).await;
    assert_eq!(first_json(&r), json!([]));
}

#[tokio::test]
async fn check_document_dirty_and_save_document() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    for tool in ["checkDocumentDirty", "saveDocument"] {
        let r = c.call_tool(tool, json!({"filePath":"/w/a.rs"})).await;
        assert!(!is_error(&r), "{r}");
        assert_eq!(
            first_json(&r),
            json!({"success":false,"message":"Document not open: /w/a.rs"}),
            "{tool}"
        );
    }
    assert_eq!(s.frontend.count(|c| matches!(c, Call::SaveDocument(_))), 0);

    let mut untitled = tab("/w/Untitled-1", false, true);
    untitled.is_untitled = true;
    s.send(EditorEvent::OpenEditors(vec![
        tab("/w/a.rs", true, true),
        untitled,
    ]))
    .await;
    s.sync(&mut c).await;
    let r = c
        .call_tool("checkDocumentDirty", json!({"filePath":"/w/a.rs"}))
        .await;
    assert_eq!(
        first_json(&r),
        json!({"success":true,"filePath":"/w/a.rs","isDirty":true,"isUntitled":false})
    );
    let r = c
        .call_tool("checkDocumentDirty", json!({"filePath":"/w/Untitled-1"}))
        .await;
    assert_eq!(first_json(&r)["isUntitled"], true);

    let r = c
        .call_tool("saveDocument", json!({"filePath":"/w/a.rs"}))
        .await;
    assert_eq!(
        first_json(&r),
        json!({"success":true,"filePath":"/w/a.rs","saved":true,"message":"Document saved successfully"})
    );
    assert_eq!(
        s.frontend
            .count(|c| *c == Call::SaveDocument("/w/a.rs".into())),
        1
    );
    let r = c
        .call_tool("checkDocumentDirty", json!({"filePath":"/w/a.rs"}))
        .await;
    assert_eq!(
        first_json(&r)["isDirty"],
        false,
        "saving clears the dirty flag"
    );

    // The editor reports a change again, then fails to save.
    s.send(EditorEvent::Dirty {
        path: "/w/a.rs".into(),
        is_dirty: true,
    })
    .await;
    s.sync(&mut c).await;
    let r = c
        .call_tool("checkDocumentDirty", json!({"filePath":"/w/a.rs"}))
        .await;
    assert_eq!(first_json(&r)["isDirty"], true);
    s.frontend
        .script(|a| a.save_document = Err(FrontendError::Failed("disk full".into())));
    let r = first_json(
        &c.call_tool("saveDocument", json!({"filePath":"/w/a.rs"}))
            .await,
    );
    assert_eq!(r["success"], false, "{r}");
    assert!(r["message"].as_str().unwrap().contains("disk full"), "{r}");
}

#[tokio::test]
async fn open_file_answers_text_when_frontmost_and_json_otherwise() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let r = c
        .call_tool(
            "openFile",
            json!({"filePath":"/w/a.rs","startLine":2,"endLine":4}),
        )
        .await;
    assert!(!is_error(&r));
    assert_eq!(texts(&r), vec!["Opened file: /w/a.rs"]);
    let args = s
        .frontend
        .wait_for("openFile", |calls| {
            calls.iter().find_map(|c| match c {
                Call::OpenFile(a) => Some(a.clone()),
                _ => None,
            })
        })
        .await;
    assert_eq!(args.file_path, "/w/a.rs");
    assert!(args.make_frontmost);
    assert_eq!((args.start_line, args.end_line), (Some(2), Some(4)));

    let r = c
        .call_tool(
            "openFile",
            json!({"filePath":"/w/b.py","makeFrontmost":false,"startText":"def","endText":"return"}),
        )
        .await;
    assert_eq!(
        first_json(&r),
        json!({"success":true,"filePath":"/w/b.py","languageId":"python","lineCount":3})
    );

    s.frontend
        .script(|a| a.open_file = Some(Err(FrontendError::Failed("no such file".into()))));
    let r = c
        .call_tool("openFile", json!({"filePath":"/w/missing"}))
        .await;
    assert!(is_error(&r), "{r}");
    assert!(texts(&r)[0].contains("no such file"), "{r}");
}

#[tokio::test]
async fn open_files_and_reformat_file() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let r = c
        .call_tool("open_files", json!({"file_paths":["/w/a.rs","/w/b.rs"]}))
        .await;
    assert_eq!(
        first_json(&r),
        json!({"opened_files":["/w/a.rs","/w/b.rs"]})
    );
    assert!(s
        .frontend
        .calls()
        .contains(&Call::OpenFiles(vec!["/w/a.rs".into(), "/w/b.rs".into()])));

    let r = c
        .call_tool("reformat_file", json!({"file_path":"/w/a.rs"}))
        .await;
    assert!(!is_error(&r));
    assert_eq!(texts(&r), vec!["OK"]);
    assert!(s
        .frontend
        .calls()
        .contains(&Call::ReformatFile("/w/a.rs".into())));

    s.frontend
        .script(|a| a.reformat_file = Err(FrontendError::Unsupported("reformat_file")));
    let r = c
        .call_tool("reformat_file", json!({"file_path":"/w/a.rs"}))
        .await;
    assert!(is_error(&r), "{r}");
    s.frontend
        .script(|a| a.open_files = Some(Err(FrontendError::Disconnected)));
    let r = c
        .call_tool("open_files", json!({"file_paths":["/w/a.rs"]}))
        .await;
    assert!(is_error(&r), "{r}");
}

#[tokio::test]
async fn close_tab_for_a_non_diff_tab_goes_to_the_editor() {
    let s = TestServer::start().await;
    let mut c = s.client().await;
    let r = c
        .call_tool("close_tab", json!({"tab_name":"/w/a.rs"}))
        .await;
    assert_eq!(texts(&r), vec!["TAB_CLOSED"]);
    assert!(s
        .frontend
        .calls()
        .contains(&Call::CloseTab("/w/a.rs".into())));

    // An editor without the capability is not asked.
    let fe = FakeFrontend::with_caps(Capabilities {
        close_tab: false,
        ..Capabilities::all()
    });
    let s = TestServer::start_with(fe, |_| {}).await;
    let mut c = s.client().await;
    let r = c
        .call_tool("close_tab", json!({"tab_name":"/w/a.rs"}))
        .await;
    assert_eq!(texts(&r), vec!["TAB_CLOSED"]);
    assert_eq!(s.frontend.count(|c| matches!(c, Call::CloseTab(_))), 0);
}

#[tokio::test]
async fn execute_code_runs_only_after_confirmation() {
    let s = TestServer::start_with(FakeFrontend::with_caps(Capabilities::all()), |_| {}).await;
    let mut c = s.client().await;

    // Declined: an error result, and nothing runs.
    let r = c
        .call_tool("executeCode", json!({"code":"import os"}))
        .await;
    assert!(is_error(&r), "{r}");
    assert_eq!(
        s.frontend
            .calls()
            .iter()
            .filter(|c| matches!(c, Call::ConfirmExecute(_) | Call::ExecuteCode(_)))
            .cloned()
            .collect::<Vec<_>>(),
        vec![Call::ConfirmExecute("import os".into())]
    );

    // The confirmation itself failing is an error too, and nothing runs.
    s.frontend
        .script(|a| a.confirm_execute = Err(FrontendError::Disconnected));
    let r = c.call_tool("executeCode", json!({"code":"2"})).await;
    assert!(is_error(&r), "{r}");
    assert_eq!(s.frontend.count(|c| matches!(c, Call::ExecuteCode(_))), 0);

    // Confirmed: the kernel's output is the result.
    s.frontend.script(|a| {
        a.confirm_execute = Ok(true);
        a.execute_code = Ok(vec![
            Content::text("4"),
            Content::Image {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
            },
        ]);
    });
    let r = c.call_tool("executeCode", json!({"code":"2+2"})).await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(
        r["content"],
        json!([{"type":"text","text":"4"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}])
    );
    let order: Vec<Call> = s
        .frontend
        .calls()
        .into_iter()
        .filter(|c| matches!(c, Call::ConfirmExecute(x) | Call::ExecuteCode(x) if x == "2+2"))
        .collect();
    assert_eq!(
        order,
        vec![
            Call::ConfirmExecute("2+2".into()),
            Call::ExecuteCode("2+2".into())
        ]
    );

    // A failing kernel is an error result.
    s.frontend
        .script(|a| a.execute_code = Err(FrontendError::Failed("kernel died".into())));
    let r = c.call_tool("executeCode", json!({"code":"1/0"})).await;
    assert!(is_error(&r), "{r}");
    assert!(texts(&r)[0].contains("kernel died"));
}

#[tokio::test]
async fn bad_arguments_are_is_error_results_and_reach_no_editor() {
    let s = TestServer::start_with(FakeFrontend::with_caps(Capabilities::all()), |_| {}).await;
    let mut c = s.client().await;
    let connected = s.frontend.calls().len();
    let cases: Vec<(&str, Value)> = vec![
        ("openFile", json!({})),
        ("openFile", json!({"filePath": 5})),
        ("openFile", json!(["/w/a.rs"])),
        ("openFile", json!({"filePath":"/w/a.rs","startLine":"two"})),
        ("openDiff", json!({})),
        (
            "openDiff",
            json!({"old_file_path":"/a","new_file_path":"/a","tab_name":"t"}),
        ),
        ("openDiff", json!(["/a", "/a", "x", "t"])),
        ("checkDocumentDirty", json!({})),
        ("saveDocument", json!({"filePath": null})),
        ("close_tab", json!({})),
        ("close_tab", json!("t")),
        ("open_files", json!({"file_paths":"/w/a.rs"})),
        ("reformat_file", json!({})),
        ("executeCode", json!({"code": ["1"]})),
        ("getDiagnostics", json!({"uri": 5})),
    ];
    for (tool, args) in cases {
        let r = c.call_tool(tool, args.clone()).await;
        assert!(is_error(&r), "{tool} {args}: {r}");
        let t = &texts(&r)[0];
        assert!(t.contains("Invalid arguments"), "{tool} {args}: {t}");
    }
    assert_eq!(
        s.frontend.calls().len(),
        connected,
        "bad arguments reached the editor: {:?}",
        &s.frontend.calls()[connected..]
    );
    // The connection is fine afterwards.
    let r = c.call_tool("getDiagnostics", json!({})).await;
    assert!(!is_error(&r));
}
