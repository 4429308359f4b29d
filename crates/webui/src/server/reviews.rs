//! A review's decisions: per hunk, per file, the edited text, and a
//! closed card dismissed or forgotten.

use super::{error, Ui};
use crate::hub::ActionError;
use crate::reviews::Review;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use ccbridge_server::DiffId;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

pub(super) fn review_answer(r: Result<Review, ActionError>) -> Response {
    match r {
        Ok(review) => Json(review).into_response(),
        Err(ActionError::Review { error: e, review }) => {
            let status = match e {
                crate::reviews::ReviewError::Stale { .. } => StatusCode::CONFLICT,
                _ => StatusCode::BAD_REQUEST,
            };
            (
                status,
                Json(json!({ "error": e.to_string(), "review": review })),
            )
                .into_response()
        }
        Err(e) => action_error(e),
    }
}

pub(super) fn action_error(e: ActionError) -> Response {
    let status = match e {
        ActionError::Review { .. } => StatusCode::BAD_REQUEST,
        ActionError::Unknown(_) | ActionError::NoApproval(_) | ActionError::NoTools => {
            StatusCode::NOT_FOUND
        }
        ActionError::Stopped => StatusCode::SERVICE_UNAVAILABLE,
    };
    error(status, e)
}

#[derive(Deserialize)]
pub(super) struct TextBody {
    text: String,
    version: u64,
}

pub(super) async fn review_text(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<u64>,
    Json(b): Json<TextBody>,
) -> Response {
    review_answer(
        ui.hub
            .review_action(DiffId(id), |r| {
                r.set_text(b.text, b.version)
                    .map(|()| crate::reviews::Outcome::Pending)
            })
            .await,
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum HunkDecision {
    Accept,
    Reject,
}

#[derive(Deserialize)]
pub(super) struct HunkBody {
    decision: HunkDecision,
    version: u64,
}

pub(super) async fn review_hunk(
    State(ui): State<Arc<Ui>>,
    Path((id, index)): Path<(u64, usize)>,
    Json(b): Json<HunkBody>,
) -> Response {
    let accept = matches!(b.decision, HunkDecision::Accept);
    match ui
        .hub
        .decide_hunk(DiffId(id), index, accept, b.version)
        .await
    {
        Ok(decided) => Json(decided).into_response(),
        Err(e) => review_answer(Err(e)),
    }
}

pub(super) async fn review_get(State(ui): State<Arc<Ui>>, Path(id): Path<u64>) -> Response {
    review_answer(
        ui.hub
            .review(DiffId(id))
            .ok_or(ActionError::Unknown(DiffId(id))),
    )
}

/// The reviewer dismissed a proposal the agent had closed undecided.
pub(super) async fn review_forget(State(ui): State<Arc<Ui>>, Path(id): Path<u64>) -> Response {
    if ui.hub.forget_closed(DiffId(id)) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        error(
            StatusCode::NOT_FOUND,
            format!("no closed proposal {id} is kept"),
        )
    }
}

#[derive(Deserialize)]
pub(super) struct AcceptBody {
    version: u64,
    /// The page's right side, when it holds edits not sent yet: set and
    /// accepted in one step. Without it, a keystroke made while the last
    /// edit was being saved was dropped from what was accepted.
    #[serde(default)]
    text: Option<String>,
}

pub(super) async fn review_accept(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<u64>,
    Json(b): Json<AcceptBody>,
) -> Response {
    review_answer(
        ui.hub
            .review_action(DiffId(id), |r| {
                let mut seen = b.version;
                if let Some(text) = b.text {
                    r.set_text(text, seen)?;
                    seen = r.version;
                }
                r.accept(seen)
            })
            .await,
    )
}

#[derive(Deserialize)]
pub(super) struct RejectBody {
    /// Why, for the agent (passed on where its launcher allows).
    #[serde(default)]
    note: Option<String>,
}

pub(super) async fn review_reject(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<u64>,
    Json(b): Json<RejectBody>,
) -> Response {
    let answer = ui.hub.review_action(DiffId(id), |r| r.reject()).await;
    if let (Ok(review), Some(note)) = (&answer, &b.note) {
        ui.hub.note(review, note);
    }
    review_answer(answer)
}

pub(super) async fn review_dismiss(State(ui): State<Arc<Ui>>, Path(id): Path<u64>) -> Response {
    review_answer(
        ui.hub
            .review_action(DiffId(id), |r| {
                r.dismiss().map(|()| crate::reviews::Outcome::Pending)
            })
            .await,
    )
}
