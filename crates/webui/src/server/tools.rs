//! The workspace tools' questions: an approval answered, the approval mode
//! changed.

use super::reviews::action_error;
use super::Ui;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use ccbridge_mcp::ApprovalMode;
use ccbridge_server::RunId;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize)]
pub(super) struct ApprovalBody {
    allow: bool,
}

pub(super) async fn approval(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<u64>,
    Json(b): Json<ApprovalBody>,
) -> Response {
    match ui.hub.answer_approval(RunId(id), b.allow) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => action_error(e),
    }
}

#[derive(Deserialize)]
pub(super) struct ApprovalModeBody {
    mode: ApprovalMode,
}

pub(super) async fn approval_mode(
    State(ui): State<Arc<Ui>>,
    Json(b): Json<ApprovalModeBody>,
) -> Response {
    match ui.hub.set_approval_mode(b.mode) {
        Ok(tools) => Json(tools).into_response(),
        Err(e) => action_error(e),
    }
}
