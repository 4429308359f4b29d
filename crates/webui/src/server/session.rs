//! Signing in: a one-time link's token becomes a session cookie, and a
//! signed-in page makes new links (`ccbridge link` asks through the lock
//! file's link token instead).

use super::{error, Ui};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

#[derive(Deserialize)]
pub(super) struct TokenBody {
    token: String,
}

pub(super) async fn session(
    State(ui): State<Arc<Ui>>,
    axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<std::net::SocketAddr>,
    Json(body): Json<TokenBody>,
) -> Response {
    match ui.credentials.exchange(&body.token) {
        // The page keeps it in its origin's storage and sends it as
        // `Authorization: Bearer` (never a cookie: see `guard`).
        Some(session) => Json(json!({ "session": session })).into_response(),
        None => {
            let wait = ui
                .credentials
                .throttle
                .failed(peer.ip(), tokio::time::Instant::now());
            tokio::time::sleep(wait).await;
            error(
                StatusCode::UNAUTHORIZED,
                "this link is not valid (it works once): open the newest link ccbridge printed",
            )
        }
    }
}

pub(super) async fn link(State(ui): State<Arc<Ui>>) -> Response {
    match ui.credentials.new_link() {
        Some(token) => {
            Json(json!({ "url": format!("http://127.0.0.1:{}/#token={token}", ui.port) }))
                .into_response()
        }
        None => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "no randomness for a token",
        ),
    }
}
