//! The page itself: its HTML (a fresh style nonce in a strict policy each
//! time), the script bundle (gzip-compressed in the binary) and the styles,
//! each with an entity tag.

use crate::assets;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// A fresh nonce for the page's styles.
pub(super) fn nonce() -> String {
    let mut b = [0u8; 16];
    let _ = getrandom::fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(super) async fn index() -> Response {
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
pub(super) async fn app_js(headers: HeaderMap) -> Response {
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
pub(super) fn accepts_gzip(headers: &HeaderMap) -> bool {
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

pub(super) async fn app_css(headers: HeaderMap) -> Response {
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
pub(super) fn asset(
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
