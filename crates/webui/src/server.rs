//! The UI's HTTP server: the routes of docs/web-ui.md on `axum`, behind the
//! checks of [`crate::guard`], served by `ccbridge_http::serve` (bounded
//! request heads, connection slots a signed-in page keeps).

use crate::assets;
use crate::guard::{self, Credentials};
use crate::hub::{ActionError, Hub, Tabs};
use crate::reviews::Review;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ccbridge_mcp::ApprovalMode;
use ccbridge_protocol::editor::{EditorTab, Position, Range, Selection};
use ccbridge_protocol::language::language_id;
use ccbridge_protocol::notifications::AtMentioned;
use ccbridge_server::{DiffId, EditorEvent, RunId};
use ccbridge_workspace::{FileText, Workspace, WorkspaceError};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

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
        .route("/session", post(session))
        .route("/link", post(link))
        .route("/state", get(state))
        .route("/events", get(events))
        .route("/reviews/{id}", get(review_get))
        .route("/reviews/{id}/text", post(review_text))
        .route("/reviews/{id}/hunks/{index}", post(review_hunk))
        .route("/reviews/{id}/accept", post(review_accept))
        .route("/reviews/{id}/reject", post(review_reject))
        .route("/reviews/{id}/dismiss", post(review_dismiss))
        .route("/reviews/{id}/forget", post(review_forget))
        .route("/changes", get(changes))
        .route("/changes/{action}", post(change_action))
        .route("/approvals/{id}", post(approval))
        .route("/tools/approval-mode", post(approval_mode))
        .route("/tree", get(tree))
        .route("/file", get(file))
        .route("/diagnostics", get(diagnostics))
        .route("/selection", post(selection))
        .route("/tabs", post(tabs))
        .route("/mention", post(mention))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such API") });
    Router::new()
        .route("/", get(index))
        .route("/assets/app.js", get(app_js))
        .route("/assets/app.css", get(app_css))
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

/// A fresh nonce for the page's styles.
fn nonce() -> String {
    let mut b = [0u8; 16];
    let _ = getrandom::fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

async fn index() -> Response {
    let nonce = nonce();
    let csp = format!(
        "default-src 'none'; script-src 'self'; style-src 'self' 'nonce-{nonce}'; \
         img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; \
         form-action 'none'; frame-ancestors 'none'"
    );
    let mut resp = (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        assets::index_html(&nonce),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&csp) {
        resp.headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, v);
    }
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// The bundle exists in the binary only gzip-compressed (see `build.rs`);
/// every browser accepts that, and a client that does not is told so.
async fn app_js(headers: HeaderMap) -> Response {
    if !accepts_gzip(&headers) {
        return (
            StatusCode::NOT_ACCEPTABLE,
            "the page's script is sent gzip-compressed; open the page in a browser\n",
        )
            .into_response();
    }
    let mut resp = asset(
        &headers,
        "dist/app.js",
        "text/javascript; charset=utf-8",
        assets::APP_JS_GZ,
    );
    let fresh = resp.status() == StatusCode::OK;
    let h = resp.headers_mut();
    if fresh {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    resp
}

/// `Accept-Encoding` lists `gzip` (or `*`) without `q=0`.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let coding = parts.next().unwrap_or("");
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !refused
        })
}

async fn app_css(headers: HeaderMap) -> Response {
    asset(
        &headers,
        "dist/app.css",
        "text/css; charset=utf-8",
        assets::APP_CSS,
    )
}

/// A built file with its entity tag, revalidated on every use (`no-cache`):
/// a reload costs one round trip that answers 304, and the browser keeps
/// the compiled script.
fn asset(
    headers: &HeaderMap,
    path: &str,
    content_type: &'static str,
    body: &'static [u8],
) -> Response {
    let tag = assets::etag(path);
    let cached = match (&tag, headers.get(header::IF_NONE_MATCH)) {
        (Some(tag), Some(asked)) => asked
            .to_str()
            .is_ok_and(|a| a.split(',').any(|t| t.trim() == tag)),
        _ => false,
    };
    let mut resp = if cached {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, content_type)], body).into_response()
    };
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Some(tag) = tag.and_then(|t| HeaderValue::from_str(&t).ok()) {
        h.insert(header::ETAG, tag);
    }
    resp
}

// ------------------------------------------------------------ session

#[derive(Deserialize)]
struct TokenBody {
    token: String,
}

async fn session(
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

async fn link(State(ui): State<Arc<Ui>>) -> Response {
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

// ------------------------------------------------------------ state

async fn state(State(ui): State<Arc<Ui>>) -> Json<Value> {
    Json(ui.hub.snapshot())
}

async fn events(State(ui): State<Arc<Ui>>) -> Response {
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

// ------------------------------------------------------------ tools

#[derive(Deserialize)]
struct ApprovalBody {
    allow: bool,
}

async fn approval(
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
struct ApprovalModeBody {
    mode: ApprovalMode,
}

async fn approval_mode(State(ui): State<Arc<Ui>>, Json(b): Json<ApprovalModeBody>) -> Response {
    match ui.hub.set_approval_mode(b.mode) {
        Ok(tools) => Json(tools).into_response(),
        Err(e) => action_error(e),
    }
}

// ------------------------------------------------------------ reviews

fn review_answer(r: Result<Review, ActionError>) -> Response {
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

fn action_error(e: ActionError) -> Response {
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
struct TextBody {
    text: String,
    version: u64,
}

async fn review_text(
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
enum HunkDecision {
    Accept,
    Reject,
}

#[derive(Deserialize)]
struct HunkBody {
    decision: HunkDecision,
    version: u64,
}

async fn review_hunk(
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

async fn review_get(State(ui): State<Arc<Ui>>, Path(id): Path<u64>) -> Response {
    review_answer(
        ui.hub
            .review(DiffId(id))
            .ok_or(ActionError::Unknown(DiffId(id))),
    )
}

/// The reviewer dismissed a proposal the agent had closed undecided.
async fn review_forget(State(ui): State<Arc<Ui>>, Path(id): Path<u64>) -> Response {
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
struct VersionBody {
    version: u64,
}

async fn review_accept(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<u64>,
    Json(b): Json<VersionBody>,
) -> Response {
    review_answer(
        ui.hub
            .review_action(DiffId(id), |r| r.accept(b.version))
            .await,
    )
}

#[derive(Deserialize)]
struct RejectBody {
    /// Why, for the agent (passed on where its launcher allows).
    #[serde(default)]
    note: Option<String>,
}

async fn review_reject(
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

async fn review_dismiss(State(ui): State<Arc<Ui>>, Path(id): Path<u64>) -> Response {
    review_answer(
        ui.hub
            .review_action(DiffId(id), |r| {
                r.dismiss().map(|()| crate::reviews::Outcome::Pending)
            })
            .await,
    )
}

// ------------------------------------------------------------ changes

async fn changes(State(ui): State<Arc<Ui>>) -> Response {
    match ui.hub.changes() {
        Some(c) => Json(c.view()).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "the workspace is not watched (ccbridge was started with --no-changes)",
        ),
    }
}

fn change_error(e: ccbridge_changes::DecideError) -> Response {
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
        E::UnknownBefore(_) | E::NotText(_) => error(StatusCode::BAD_REQUEST, msg),
    }
}

/// A decision in the session review (`ccbridge_changes::Changes::decide`):
/// `keep`, `revert` (one hunk with `key`, else the whole file), `viewed`,
/// `keep-all`, `revert-all`, `undo`.
async fn change_action(
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

// ------------------------------------------------------------ files

#[derive(Deserialize)]
struct PathQuery {
    path: Option<String>,
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    ui: &Arc<Ui>,
    f: impl FnOnce(&Workspace) -> T + Send + 'static,
) -> Option<T> {
    let ui = ui.clone();
    tokio::task::spawn_blocking(move || f(&ui.workspace))
        .await
        .ok()
}

async fn tree(State(ui): State<Arc<Ui>>, Query(q): Query<PathQuery>) -> Response {
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

async fn file(State(ui): State<Arc<Ui>>, Query(q): Query<PathQuery>) -> Response {
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

async fn diagnostics(State(ui): State<Arc<Ui>>) -> Json<Value> {
    let (files, source) = ui.hub.diagnostics();
    Json(json!({"diagnostics": files, "diagnosticsSource": source,
                "proposedDiagnostics": ui.hub.proposed_diagnostics(),
                "unavailableServers": ui.hub.unavailable_servers()}))
}

/// Sends an editor event to the engine.
async fn to_engine(ui: &Ui, event: EditorEvent) -> Response {
    match ui.hub.engine() {
        Some(e) if e.send(event).await.is_ok() => StatusCode::NO_CONTENT.into_response(),
        _ => error(StatusCode::SERVICE_UNAVAILABLE, "ccbridge is stopping"),
    }
}

/// A workspace path made absolute, or why it is not one.
fn inside(ui: &Ui, path: &str) -> Result<String, WorkspaceError> {
    ui.workspace
        .locate(path)
        .map(|at| ui.workspace.absolute(&at).display().to_string())
}

#[derive(Deserialize)]
struct SelectionBody {
    path: Option<String>,
    #[serde(default)]
    text: String,
    selection: Option<Range>,
}

async fn selection(State(ui): State<Arc<Ui>>, Json(b): Json<SelectionBody>) -> Response {
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

async fn tabs(State(ui): State<Arc<Ui>>, Json(t): Json<Tabs>) -> Response {
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
struct MentionBody {
    path: String,
    line_start: Option<u32>,
    line_end: Option<u32>,
}

async fn mention(State(ui): State<Arc<Ui>>, Json(b): Json<MentionBody>) -> Response {
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

// ------------------------------------------------------------ serving

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
