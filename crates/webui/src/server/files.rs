//! The workspace as the viewer reads it (tree, file), the diagnostics, and
//! what the viewer tells Claude (selection, tabs, mentions).

use super::{error, workspace_error, Ui, MAX_VIEW_BYTES};
use crate::hub::Tabs;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use ccbridge_protocol::editor::{EditorTab, Position, Range, Selection};
use ccbridge_protocol::language::language_id;
use ccbridge_protocol::notifications::AtMentioned;
use ccbridge_server::EditorEvent;
use ccbridge_workspace::{FileText, Workspace, WorkspaceError};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

#[derive(Deserialize)]
pub(super) struct PathQuery {
    path: Option<String>,
}

/// Runs blocking file work off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    ui: &Arc<Ui>,
    f: impl FnOnce(&Workspace) -> T + Send + 'static,
) -> Option<T> {
    let ui = ui.clone();
    tokio::task::spawn_blocking(move || f(&ui.workspace))
        .await
        .ok()
}

pub(super) async fn tree(State(ui): State<Arc<Ui>>, Query(q): Query<PathQuery>) -> Response {
    let Some(path) = q.path else {
        let entries: Vec<Value> = ui
            .workspace
            .folders()
            .map(|f| {
                let name = f.file_name().map_or_else(
                    || f.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                );
                json!({"name": name, "kind": "dir", "path": f.display().to_string()})
            })
            .collect();
        return Json(json!({"path": null, "entries": entries, "truncated": false})).into_response();
    };
    let listed = blocking(&ui, move |w| {
        let at = w.locate(&path)?;
        let dir = w.absolute(&at);
        w.list_dir(&path).map(|l| (dir, l))
    })
    .await;
    match listed {
        Some(Ok((dir, listing))) => {
            let entries: Vec<Value> = listing
                .entries
                .iter()
                .map(|e| {
                    json!({"name": e.name, "kind": e.kind,
                           "path": dir.join(&e.name).display().to_string()})
                })
                .collect();
            Json(
                json!({"path": dir.display().to_string(), "entries": entries,
                        "truncated": listing.truncated}),
            )
            .into_response()
        }
        Some(Err(e)) => workspace_error(e),
        None => error(StatusCode::INTERNAL_SERVER_ERROR, "listing failed"),
    }
}

pub(super) async fn file(State(ui): State<Arc<Ui>>, Query(q): Query<PathQuery>) -> Response {
    let Some(path) = q.path else {
        return error(StatusCode::BAD_REQUEST, "?path= is required");
    };
    let asked = path.clone();
    let read = blocking(&ui, move |w| {
        let at = w.locate(&path)?;
        let abs = w.absolute(&at);
        w.read_text(&path, MAX_VIEW_BYTES).map(|t| (abs, t))
    })
    .await;
    match read {
        Some(Ok((abs, FileText::Text { text }))) => {
            let p = abs.display().to_string();
            ui.hub.involve(&p);
            Json(json!({"path": p, "kind": "text", "text": text, "language": language_id(&p)}))
                .into_response()
        }
        Some(Ok((abs, FileText::Binary { size }))) => {
            Json(json!({"path": abs.display().to_string(), "kind": "binary", "size": size}))
                .into_response()
        }
        Some(Err(e)) => workspace_error(e),
        None => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{asked}: reading failed"),
        ),
    }
}

pub(super) async fn diagnostics(State(ui): State<Arc<Ui>>) -> Json<Value> {
    let (files, source) = ui.hub.diagnostics();
    Json(json!({"diagnostics": files, "diagnosticsSource": source,
                "proposedDiagnostics": ui.hub.proposed_diagnostics(),
                "unavailableServers": ui.hub.unavailable_servers()}))
}

/// Sends an editor event to the engine.
pub(super) async fn to_engine(ui: &Ui, event: EditorEvent) -> Response {
    match ui.hub.engine() {
        Some(e) if e.send(event).await.is_ok() => StatusCode::NO_CONTENT.into_response(),
        _ => error(StatusCode::SERVICE_UNAVAILABLE, "ccbridge is stopping"),
    }
}

/// A workspace path made absolute, or why it is not one.
pub(super) fn inside(ui: &Ui, path: &str) -> Result<String, WorkspaceError> {
    ui.workspace
        .locate(path)
        .map(|at| ui.workspace.absolute(&at).display().to_string())
}

#[derive(Deserialize)]
pub(super) struct SelectionBody {
    path: Option<String>,
    #[serde(default)]
    text: String,
    selection: Option<Range>,
}

pub(super) async fn selection(State(ui): State<Arc<Ui>>, Json(b): Json<SelectionBody>) -> Response {
    let Some(path) = b.path else {
        return to_engine(&ui, EditorEvent::Selection(None)).await;
    };
    let file_path = match inside(&ui, &path) {
        Ok(p) => p,
        Err(e) => return workspace_error(e),
    };
    let mut range = b
        .selection
        .unwrap_or_else(|| Range::new(Position::new(0, 0), Position::new(0, 0)));
    if range.end < range.start {
        std::mem::swap(&mut range.start, &mut range.end);
    }
    let sel = Selection {
        file_path,
        text: b.text,
        range,
    };
    to_engine(&ui, EditorEvent::Selection(Some(sel))).await
}

pub(super) async fn tabs(State(ui): State<Arc<Ui>>, Json(t): Json<Tabs>) -> Response {
    let mut open = Vec::with_capacity(t.open.len());
    for p in &t.open {
        match inside(&ui, p) {
            Ok(p) => open.push(p),
            Err(e) => return workspace_error(e),
        }
    }
    let active = match t.active.as_deref().map(|p| inside(&ui, p)).transpose() {
        Ok(a) => a,
        Err(e) => return workspace_error(e),
    };
    let editor_tabs = open
        .iter()
        .map(|p| EditorTab {
            path: p.clone(),
            is_active: active.as_deref() == Some(p.as_str()),
            is_dirty: false,
            language_id: Some(language_id(p).to_owned()),
            label: None,
            is_untitled: false,
        })
        .collect();
    ui.hub.set_tabs(Tabs { open, active });
    to_engine(&ui, EditorEvent::OpenEditors(editor_tabs)).await
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MentionBody {
    path: String,
    line_start: Option<u32>,
    line_end: Option<u32>,
}

pub(super) async fn mention(State(ui): State<Arc<Ui>>, Json(b): Json<MentionBody>) -> Response {
    let file_path = match inside(&ui, &b.path) {
        Ok(p) => p,
        Err(e) => return workspace_error(e),
    };
    let (mut line_start, mut line_end) = (b.line_start, b.line_end);
    if let (Some(a), Some(z)) = (line_start, line_end) {
        if z < a {
            (line_start, line_end) = (Some(z), Some(a));
        }
    }
    to_engine(
        &ui,
        EditorEvent::AtMention(AtMentioned {
            file_path,
            line_start,
            line_end,
        }),
    )
    .await
}
