//! The session review: its list and the keep/revert actions.

use super::{error, workspace_error, Ui};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;

pub(super) async fn changes(State(ui): State<Arc<Ui>>) -> Response {
    match ui.hub.changes() {
        Some(c) => Json(c.view()).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "the workspace is not watched (ccbridge was started with --no-changes)",
        ),
    }
}

pub(super) fn change_error(e: ccbridge_changes::DecideError) -> Response {
    use ccbridge_changes::{ChangeError as E, DecideError as D};
    let msg = e.to_string();
    let D::Change(e) = e else {
        return match e {
            D::UnknownAction(_) => error(StatusCode::NOT_FOUND, msg),
            _ => error(StatusCode::BAD_REQUEST, msg),
        };
    };
    match e {
        E::Conflict(c) => (
            StatusCode::CONFLICT,
            Json(json!({ "error": msg, "conflict": c })),
        )
            .into_response(),
        E::Stale(_) => (
            StatusCode::CONFLICT,
            Json(json!({ "error": msg, "stale": true })),
        )
            .into_response(),
        E::NoChange(_) | E::NoHunk { .. } | E::NothingToUndo => error(StatusCode::NOT_FOUND, msg),
        E::Workspace(w) => workspace_error(w),
        E::UnknownBefore(_) | E::NotText(_) | E::WasALink(_) => error(StatusCode::BAD_REQUEST, msg),
    }
}

/// A decision in the session review (`ccbridge_changes::Changes::decide`):
/// `keep`, `revert` (one hunk with `key`, else the whole file), `viewed`,
/// `keep-all`, `revert-all`, `undo`.
pub(super) async fn change_action(
    State(ui): State<Arc<Ui>>,
    Path(action): Path<String>,
    Json(d): Json<ccbridge_changes::Decision>,
) -> Response {
    let Some(changes) = ui.hub.changes().cloned() else {
        return error(StatusCode::NOT_FOUND, "the workspace is not watched");
    };
    match tokio::task::spawn_blocking(move || changes.decide(&action, d)).await {
        Ok(Ok(failed)) => Json(json!({ "failed": failed })).into_response(),
        Ok(Err(e)) => change_error(e),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "the decision failed"),
    }
}
