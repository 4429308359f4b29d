//! The UI's HTTP server: the routes of docs/web-ui.md on `axum`, behind the
//! checks of [`crate::guard`], served by `ccbridge_http::serve` (bounded
//! request heads, connection slots a signed-in page keeps).

use crate::guard::{self, Credentials};
use crate::hub::Hub;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ccbridge_workspace::{Workspace, WorkspaceError};
use serde_json::json;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

mod changes;
mod files;
mod page;
mod reviews;
mod session;
mod state;
mod tools;

/// Largest file the viewer shows.
pub const MAX_VIEW_BYTES: u64 = 16 << 20;
/// Largest request body (a review's working text can be a whole file).
const MAX_BODY: usize = 40 << 20;
/// How often the event stream sends a keep-alive comment.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// What the handlers share.
pub struct Ui {
    pub hub: Arc<Hub>,
    pub workspace: Workspace,
    pub credentials: Credentials,
    pub port: u16,
}

/// A JSON error answer.
fn error(status: StatusCode, msg: impl std::fmt::Display) -> Response {
    (status, Json(json!({ "error": msg.to_string() }))).into_response()
}

fn workspace_error(e: WorkspaceError) -> Response {
    let status = match e {
        WorkspaceError::NotFound(_) => StatusCode::NOT_FOUND,
        WorkspaceError::Outside(_)
        | WorkspaceError::ParentComponent(_)
        | WorkspaceError::Escapes(_) => StatusCode::FORBIDDEN,
        WorkspaceError::Io { .. } | WorkspaceError::Folder { .. } => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        _ => StatusCode::BAD_REQUEST,
    };
    error(status, e)
}

/// The router with every route and check.
pub fn router(ui: Arc<Ui>) -> Router {
    let api = Router::new()
        .route("/session", post(session::session))
        .route("/link", post(session::link))
        .route("/state", get(state::state))
        .route("/events", get(state::events))
        .route("/reviews/{id}", get(reviews::review_get))
        .route("/reviews/{id}/text", post(reviews::review_text))
        .route("/reviews/{id}/hunks/{index}", post(reviews::review_hunk))
        .route("/reviews/{id}/accept", post(reviews::review_accept))
        .route("/reviews/{id}/reject", post(reviews::review_reject))
        .route("/reviews/{id}/dismiss", post(reviews::review_dismiss))
        .route("/reviews/{id}/forget", post(reviews::review_forget))
        .route("/changes", get(changes::changes))
        .route("/changes/{action}", post(changes::change_action))
        .route("/approvals/{id}", post(tools::approval))
        .route("/tools/approval-mode", post(tools::approval_mode))
        .route("/tree", get(files::tree))
        .route("/file", get(files::file))
        .route("/diagnostics", get(files::diagnostics))
        .route("/selection", post(files::selection))
        .route("/tabs", post(files::tabs))
        .route("/mention", post(files::mention))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such API") });
    Router::new()
        .route("/", get(page::index))
        .route("/assets/app.js", get(page::app_js))
        .route("/assets/app.css", get(page::app_css))
        .nest("/api", api)
        .fallback(|| async { error(StatusCode::NOT_FOUND, "not found") })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(ui.clone(), check))
        .with_state(ui)
}

/// The checks of [`crate::guard`], before any handler.
fn header_value(h: &HeaderMap, name: header::HeaderName) -> Option<String> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

async fn check(State(ui): State<Arc<Ui>>, req: Request, next: Next) -> Response {
    let h = req.headers();
    let header = |name| header_value(h, name);
    let host = header(header::HOST).unwrap_or_default();
    if !guard::host_ok(&host) {
        return harden(
            error(
                StatusCode::MISDIRECTED_REQUEST,
                "this server answers only to its loopback address",
            ),
            true,
        );
    }
    if let Some(origin) = header(header::ORIGIN) {
        if !guard::origin_ok(&origin, &host) {
            return harden(
                error(StatusCode::FORBIDDEN, "cross-origin requests are refused"),
                true,
            );
        }
    }
    let path = req.uri().path().to_owned();
    let api = path.starts_with("/api/");
    if req.method() != Method::GET && req.method() != Method::POST {
        return harden(
            error(StatusCode::METHOD_NOT_ALLOWED, "only GET and POST"),
            api,
        );
    }
    let json = header(header::CONTENT_TYPE).is_some_and(|c| guard::is_json(&c));
    if req.method() == Method::POST && !json {
        return harden(
            error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "requests must be application/json",
            ),
            api,
        );
    }
    let linker = path == "/api/link" && ui.credentials.may_make_links(h);
    if api && path != "/api/session" && !linker && !ui.credentials.authorized(h) {
        return harden(
            error(
                StatusCode::UNAUTHORIZED,
                "this page is not signed in: open the link ccbridge printed (it works once)",
            ),
            true,
        );
    }
    harden(next.run(req).await, api)
}

/// The headers every answer carries.
fn harden(mut resp: Response, api: bool) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
        );
    }
    if api {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}

/// Serves `router` on `listener` until `shutdown` resolves, with
/// `ccbridge_http::serve`'s limits: a connection that sent a signed-in
/// request keeps its slot, anonymous ones (the page's first load, or
/// anybody without the session) cannot take those slots. At shutdown open
/// connections (event streams) are closed.
pub async fn serve(ui: Arc<Ui>, listener: TcpListener, shutdown: impl Future<Output = ()>) {
    let router = router(ui.clone());
    let signed_in: ccbridge_http::SignedIn = Arc::new(move |h| ui.credentials.authorized(h));
    ccbridge_http::serve(
        listener,
        router,
        ccbridge_http::Limits::default(),
        signed_in,
        shutdown,
    )
    .await;
}
