//! The checks every request to an MCP server of ccbridge (the workspace
//! tools, the companions) passes before MCP sees it,
//! in this order, each answered without reading the body:
//!
//! 1. `Host` must name the loopback interface (`127.0.0.1`, `localhost`,
//!    `[::1]`, with any port; the IDE server's own rule,
//!    `ccbridge_server::handshake::host_allowed`), else 403: a page on another site that got
//!    its name resolved to 127.0.0.1 (DNS rebinding) is refused.
//! 2. A request whose `Origin` is not a loopback one (`http://localhost`,
//!    `http://127.0.0.1`, `http://[::1]`, any port; `null` included) comes
//!    from a page on another site: 403. A loopback page is let through to
//!    the token check, which it cannot pass: it has no token, and the
//!    `Authorization` header it would need makes its browser ask a CORS
//!    preflight this server never allows (the MCP spec's DNS-rebinding
//!    rule, checked by the conformance runner).
//! 3. A token in the URL's query is refused (401) whether right or wrong:
//!    URLs end up in logs and histories.
//! 4. `Authorization: Bearer <token>`, compared in constant time; anything
//!    else is 401 with `WWW-Authenticate: Bearer realm="ccbridge"`.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Request, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ccbridge_server::handshake::host_allowed;
use ccbridge_server::token::AuthToken;
use std::sync::Arc;

/// The server's bearer token, compared as the IDE port compares its own
/// (SHA-256 digests in constant time; `Debug` redacted).
#[derive(Clone, Debug)]
pub struct Token(Arc<AuthToken>);

impl Token {
    pub fn new(value: &str) -> Token {
        Token(Arc::new(AuthToken::from_value(value.to_owned())))
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    ForeignHost,
    BrowserOrigin,
    TokenInUrl,
    NoToken,
    WrongToken,
}

impl Refusal {
    fn response(self) -> Response {
        let (status, text) = match self {
            Refusal::ForeignHost => (
                StatusCode::FORBIDDEN,
                "Host must be the loopback interface\n",
            ),
            Refusal::BrowserOrigin => (
                StatusCode::FORBIDDEN,
                "requests from web pages are refused\n",
            ),
            Refusal::TokenInUrl => (
                StatusCode::UNAUTHORIZED,
                "a token in the URL is not accepted; send Authorization: Bearer <token>\n",
            ),
            Refusal::NoToken => (
                StatusCode::UNAUTHORIZED,
                "Authorization: Bearer <token> is required\n",
            ),
            Refusal::WrongToken => (StatusCode::UNAUTHORIZED, "wrong token\n"),
        };
        let mut resp = (status, text).into_response();
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"ccbridge\""),
            );
        }
        resp
    }
}

/// `http(s)://` and a loopback host (with any port), nothing after it.
fn loopback_origin(origin: &str) -> bool {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    rest.is_some_and(|host| !host.contains('/') && host_allowed(host, &[]))
}

/// Judges a request's head (pure, for tests and the fuzzer).
pub fn judge(headers: &HeaderMap, query: Option<&str>, token: &Token) -> Result<(), Refusal> {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|h| host_allowed(h, &[])) {
        return Err(Refusal::ForeignHost);
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        if !origin.to_str().is_ok_and(loopback_origin) {
            return Err(Refusal::BrowserOrigin);
        }
    }
    if let Some(q) = query {
        let names_a_token = q.split('&').any(|kv| {
            let k = kv.split('=').next().unwrap_or("").to_ascii_lowercase();
            matches!(
                k.as_str(),
                "token" | "access_token" | "auth" | "authorization" | "key"
            )
        });
        if names_a_token {
            return Err(Refusal::TokenInUrl);
        }
    }
    let given = crate::auth::bearer(headers).ok_or(Refusal::NoToken)?;
    if token.0.matches(given.as_bytes()) {
        Ok(())
    } else {
        Err(Refusal::WrongToken)
    }
}

/// Whether a request carries the right bearer token (for
/// `crate::serve`'s signed-in slots; the middleware below still
/// judges every request whole).
pub fn signed_in(token: &Token) -> crate::SignedIn {
    let token = token.clone();
    std::sync::Arc::new(move |h: &HeaderMap| judge(h, None, &token).is_ok())
}

/// Serves `app` (an MCP endpoint behind [`check`], from [`app`]) on
/// `listener` with `crate::serve`'s limits (bounded request heads; clients
/// with `token` keep their connection slots), until `shutdown` completes.
/// The tools server and the companions are served this way.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    token: &Token,
    shutdown: impl std::future::Future<Output = ()>,
) {
    crate::serve(
        listener,
        app,
        crate::Limits::default(),
        signed_in(token),
        shutdown,
    )
    .await;
}

/// An MCP `endpoint` at `/mcp` behind [`check`], for [`serve`].
pub fn app<S>(endpoint: S, token: Token) -> axum::Router
where
    S: tower_service::Service<Request<Body>, Error = std::convert::Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    axum::Router::new()
        .nest_service("/mcp", endpoint)
        .layer(axum::middleware::from_fn_with_state(token, check))
}

/// The axum middleware around the MCP service.
pub async fn check(
    axum::extract::State(token): axum::extract::State<Token>,
    req: Request<Body>,
    next: Next,
) -> Response {
    match judge(req.headers(), req.uri().query(), &token) {
        Ok(()) => next.run(req).await,
        Err(refusal) => {
            tracing::info!(?refusal, "an MCP server refused a request");
            refusal.response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    const T: &str = "0123456789abcdef0123456789abcdef";

    fn tok() -> Token {
        Token::new(T)
    }

    #[test]
    fn loopback_hosts_only() {
        let judged = |host: &str| {
            let h = headers(&[("host", host), ("authorization", "Bearer x")]);
            judge(&h, None, &tok())
        };
        for ok in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:1",
            "LOCALHOST",
            "[::1]:9",
            "[::1]",
        ] {
            assert_ne!(judged(ok), Err(Refusal::ForeignHost), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:80",
            "127.0.0.1.evil.example",
            "127.0.0.2:1",
            "[::2]:1",
            "localhost:x",
            "[::1]x",
            "localhost:",
            "",
        ] {
            assert_eq!(judged(bad), Err(Refusal::ForeignHost), "{bad}");
        }
    }

    #[test]
    fn each_check_in_its_order() {
        let good = [
            ("host", "127.0.0.1:5"),
            ("authorization", "Bearer 0123456789abcdef0123456789abcdef"),
        ];
        assert_eq!(judge(&headers(&good), None, &tok()), Ok(()));
        assert_eq!(
            judge(&headers(&[("host", "evil.example"), good[1]]), None, &tok()),
            Err(Refusal::ForeignHost)
        );
        for origin in [
            "http://evil.example",
            "null",
            "http://localhost.evil.example",
            "http://127.0.0.1:5/x",
            "file://",
        ] {
            assert_eq!(
                judge(
                    &headers(&[good[0], good[1], ("origin", origin)]),
                    None,
                    &tok()
                ),
                Err(Refusal::BrowserOrigin),
                "{origin}"
            );
        }
        for origin in [
            "http://127.0.0.1:5",
            "http://localhost:3000",
            "http://[::1]:8",
            "http://localhost",
        ] {
            assert_eq!(
                judge(
                    &headers(&[good[0], good[1], ("origin", origin)]),
                    None,
                    &tok()
                ),
                Ok(()),
                "{origin}"
            );
        }
        assert_eq!(
            judge(
                &headers(&good),
                Some("x=1&token=0123456789abcdef0123456789abcdef"),
                &tok()
            ),
            Err(Refusal::TokenInUrl)
        );
        assert_eq!(
            judge(&headers(&good[..1]), None, &tok()),
            Err(Refusal::NoToken)
        );
        assert_eq!(
            judge(
                &headers(&[good[0], ("authorization", "Basic abc")]),
                None,
                &tok()
            ),
            Err(Refusal::NoToken)
        );
        assert_eq!(
            judge(
                &headers(&[
                    good[0],
                    ("authorization", "Bearer 0123456789abcdef0123456789abcdeX")
                ]),
                None,
                &tok()
            ),
            Err(Refusal::WrongToken)
        );
        assert_eq!(
            judge(
                &headers(&[
                    good[0],
                    ("authorization", "bearer  0123456789abcdef0123456789abcdef")
                ]),
                None,
                &tok()
            ),
            Ok(())
        );
    }

    #[test]
    fn the_token_is_not_in_debug_output() {
        assert!(!format!("{:?}", Token::new(T)).contains(T));
    }

    #[test]
    fn unauthorized_answers_name_the_scheme() {
        let r = Refusal::NoToken.response();
        assert_eq!(r.status(), 401);
        assert_eq!(
            r.headers()[header::WWW_AUTHENTICATE],
            "Bearer realm=\"ccbridge\""
        );
        assert_eq!(Refusal::ForeignHost.response().status(), 403);
    }
}
