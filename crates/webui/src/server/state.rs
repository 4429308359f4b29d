//! The page's first snapshot and its event stream.

use super::{Ui, KEEPALIVE};
use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use serde_json::Value;
use std::sync::Arc;

pub(super) async fn state(State(ui): State<Arc<Ui>>) -> Json<Value> {
    Json(ui.hub.snapshot())
}

pub(super) async fn events(State(ui): State<Arc<Ui>>) -> Response {
    let rx = ui.hub.subscribe();
    let first = ui.hub.snapshot().to_string();
    let hub = ui.hub.clone();
    // Subscribed before the snapshot was taken: nothing falls in between.
    let updates = futures_util::stream::unfold(rx, move |mut rx| {
        let hub = hub.clone();
        async move {
            let text: Arc<str> = match tokio::time::timeout(KEEPALIVE, rx.recv()).await {
                Ok(Ok(event)) => event,
                Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {
                    hub.snapshot().to_string().into()
                }
                Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => return None,
                Err(_) => {
                    return Some((
                        Ok::<_, std::convert::Infallible>(": keep-alive\n\n".to_owned()),
                        rx,
                    ))
                }
            };
            Some((Ok(format!("data: {text}\n\n")), rx))
        }
    });
    let stream =
        futures_util::stream::once(async move { Ok(format!("data: {first}\n\n")) }).chain(updates);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}
