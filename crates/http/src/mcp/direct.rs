//! A stateless `tools/call` answered without rmcp's per-request service.
//!
//! A client of the 2026-07-28 revision sends each request on its own, with
//! no session: its protocol version, capabilities and identity ride in the
//! request's `_meta`, and the `Mcp-Method` and `Mcp-Name` headers repeat
//! what the body says. rmcp serves such a request by making a service for
//! it, handing the message over a one-shot transport to a task it spawns
//! and taking the answer back, which cost a tool call about twice a bare
//! HTTP handler's whole round trip (docs/benchmarks.md, "Workspace
//! tools").
//!
//! [`Direct`] answers the common case itself: a well-formed call of a
//! known tool whose headers agree with its body, answered with plain JSON
//! exactly as rmcp would answer it. Everything else (a session's request,
//! another method, an unknown tool, a header that disagrees with the body
//! or is Base64-encoded, incomplete `_meta`, a chunked or oversized body)
//! goes to rmcp unchanged, with the body handed back as read: every
//! refusal and every protocol error stays rmcp's, written once.
//!
//! Dropping the answer's future (the client went away) drops the tool's
//! future, which is how a tool call is cancelled here: a review's view
//! closes, a command's process group is killed.

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ClientRequest, GetMeta, JsonObject, JsonRpcResponse,
    JsonRpcVersion2_0, ProtocolVersion, ServerJsonRpcMessage, ServerResult,
};
use std::convert::Infallible;
use std::task::{Context, Poll};
use tokio_util::sync::CancellationToken;

/// The revision whose stateless calls [`Direct`] answers.
const REVISION: &str = "2026-07-28";

/// The tools a [`Direct`] can call.
pub trait DirectTools: Clone + Send + Sync + 'static {
    /// The call of the tool `name` with `arguments` (an empty object when
    /// the request has none), or `None` when no tool has that name.
    fn call(&self, name: &str, arguments: JsonObject)
        -> Option<BoxFuture<'static, CallToolResult>>;
}

/// `inner` (rmcp's Streamable HTTP service) with stateless `tools/call`
/// requests answered by `tools` before it.
#[derive(Clone)]
pub struct Direct<S, T> {
    inner: S,
    tools: T,
    max_body: usize,
    stop: CancellationToken,
}

impl<S, T> Direct<S, T> {
    /// Bodies over `max_body` go to `inner` (which refuses them);
    /// cancelling `stop` ends the calls in flight, as it ends rmcp's.
    pub fn new(inner: S, tools: T, max_body: usize, stop: CancellationToken) -> Self {
        Direct {
            inner,
            tools,
            max_body,
            stop,
        }
    }
}

/// The one value of header `name`, when it has exactly one and it is text.
fn single<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()
}

/// Whether media type `value` (parameters after `;` ignored) is `mime`.
fn media_type_is(value: &str, mime: &str) -> bool {
    let essence = value.split(';').next().unwrap_or("");
    essence.trim().eq_ignore_ascii_case(mime)
}

/// Whether a request's head is that of a stateless `tools/call` this
/// module may answer (the body is checked once read).
fn stateless_call_head(req: &Request<Body>, max_body: usize) -> bool {
    let h = req.headers();
    let accepts = |mime: &str| {
        h.get_all(header::ACCEPT).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|m| media_type_is(m, mime)))
        })
    };
    req.method() == Method::POST
        && !h.contains_key("mcp-session-id")
        && single(h, "mcp-protocol-version") == Some(REVISION)
        && single(h, "mcp-method") == Some("tools/call")
        && single(h, header::CONTENT_TYPE.as_str())
            .is_some_and(|v| media_type_is(v, "application/json"))
        && accepts("application/json")
        && accepts("text/event-stream")
        && single(h, header::CONTENT_LENGTH.as_str())
            .and_then(|v| v.parse::<usize>().ok())
            .is_some_and(|n| n <= max_body)
}

/// A call this module answers: its id, tool and arguments.
struct StatelessCall {
    id: rmcp::model::RequestId,
    name: String,
    arguments: JsonObject,
}

/// The call in `body`, when it is a complete 2026-07-28 `tools/call`
/// whose `Mcp-Name` header names its tool in plain text.
fn stateless_call(headers: &HeaderMap, body: &[u8]) -> Option<StatelessCall> {
    let ClientJsonRpcMessage::Request(request) = serde_json::from_slice(body).ok()? else {
        return None;
    };
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return None;
    };
    let meta = request.request.get_meta();
    let revision = ProtocolVersion::V_2026_07_28;
    if meta.protocol_version().as_ref() != Some(&revision)
        || !meta.missing_required_keys(&revision).is_empty()
        || single(headers, "mcp-name") != Some(&*call.params.name)
    {
        return None;
    }
    let ClientRequest::CallToolRequest(call) = request.request else {
        return None;
    };
    Some(StatelessCall {
        id: request.id,
        name: call.params.name.into_owned(),
        arguments: call.params.arguments.unwrap_or_default(),
    })
}

/// The answer rmcp gives a completed stateless call: the JSON-RPC
/// response as plain JSON, with the 2026-07-28 revision's cache hints.
fn answer(id: rmcp::model::RequestId, result: CallToolResult) -> Response {
    let mut result = ServerResult::CallToolResult(result);
    result.fill_missing_cache_hints();
    let message = ServerJsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc: JsonRpcVersion2_0,
        id,
        result,
    });
    match serde_json::to_vec(&message) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the answer could not be written: {e}\n"),
        )
            .into_response(),
    }
}

impl<S, T> tower_service::Service<Request<Body>> for Direct<S, T>
where
    S: tower_service::Service<Request<Body>, Error = Infallible> + Clone + Send + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
    T: DirectTools,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        if !stateless_call_head(&req, self.max_body) {
            let passed_on = self.inner.call(req);
            return Box::pin(async move { Ok(passed_on.await?.into_response()) });
        }
        // The inner service is called later, if at all: take the one that
        // is ready and leave a clone in its place (tower's rule).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let (tools, max_body, stop) = (self.tools.clone(), self.max_body, self.stop.clone());
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let Ok(bytes) = axum::body::to_bytes(body, max_body).await else {
                // The client broke off its own request: no one reads this.
                return Ok((
                    StatusCode::BAD_REQUEST,
                    "the request body was not received\n",
                )
                    .into_response());
            };
            let call = stateless_call(&parts.headers, &bytes)
                .and_then(|c| Some((tools.call(&c.name, c.arguments)?, c.id)));
            let Some((result, id)) = call else {
                let req = Request::from_parts(parts, Body::from(bytes));
                return Ok(inner.call(req).await?.into_response());
            };
            tokio::select! {
                result = result => Ok(answer(id, result)),
                () = stop.cancelled() => Ok((
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server is shutting down\n",
                )
                    .into_response()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    /// One tool, `echo`, answering its arguments as text.
    #[derive(Clone)]
    struct Echo;

    impl DirectTools for Echo {
        fn call(
            &self,
            name: &str,
            arguments: JsonObject,
        ) -> Option<BoxFuture<'static, CallToolResult>> {
            (name == "echo").then(|| {
                let text = serde_json::Value::Object(arguments).to_string();
                Box::pin(async move { CallToolResult::success(vec![ContentBlock::text(text)]) })
                    as BoxFuture<'static, CallToolResult>
            })
        }
    }

    /// The inner service: answers 418 with the body it was given.
    fn teapot() -> impl tower_service::Service<
        Request<Body>,
        Response = Response,
        Error = Infallible,
        Future = impl Send,
    > + Clone
           + Send {
        tower::service_fn(|req: Request<Body>| async move {
            let body = axum::body::to_bytes(req.into_body(), usize::MAX)
                .await
                .unwrap();
            Ok::<_, Infallible>((StatusCode::IM_A_TEAPOT, body).into_response())
        })
    }

    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}"#;

    fn body(name: &str, meta: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{name}","arguments":{{"a":1}},"_meta":{meta}}}}}"#
        )
    }

    fn request(headers: &[(&str, &str)], body: &str) -> Request<Body> {
        let mut b = Request::post("/mcp");
        let defaults = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ];
        for (k, v) in defaults {
            if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(k)) {
                b = b.header(k, v);
            }
        }
        for (k, v) in headers.iter().filter(|(_, v)| !v.is_empty()) {
            b = b.header(*k, *v);
        }
        b.header("content-length", body.len())
            .body(Body::from(body.to_owned()))
            .unwrap()
    }

    async fn send(req: Request<Body>) -> (StatusCode, String) {
        let mut direct = Direct::new(teapot(), Echo, 1 << 20, CancellationToken::new());
        let resp = tower_service::Service::call(&mut direct, req)
            .await
            .unwrap();
        let status = resp.status();
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_complete_stateless_call_is_answered_here() {
        let (status, text) = send(request(&[], &body("echo", META))).await;
        assert_eq!(status, StatusCode::OK, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["result"]["content"][0]["text"], r#"{"a":1}"#);
        assert_eq!(v["result"]["isError"], false);
    }

    #[tokio::test]
    async fn everything_else_reaches_rmcp_with_its_body_intact() {
        let complete = body("echo", META);
        let cases: Vec<(&str, Request<Body>, String)> = vec![
            (
                "a session's request",
                request(&[("mcp-session-id", "s")], &complete),
                complete.clone(),
            ),
            (
                "an older revision",
                request(&[("mcp-protocol-version", "2025-11-25")], &complete),
                complete.clone(),
            ),
            (
                "another method header",
                request(&[("mcp-method", "tools/list")], &complete),
                complete.clone(),
            ),
            (
                "a name header that disagrees",
                request(&[("mcp-name", "other")], &complete),
                complete.clone(),
            ),
            (
                "a Base64 name header",
                request(&[("mcp-name", "=?base64?ZWNobw==?=")], &complete),
                complete.clone(),
            ),
            (
                "no name header",
                request(&[("mcp-name", "")], &complete),
                complete.clone(),
            ),
            (
                "an unknown tool",
                request(&[("mcp-name", "nope")], &body("nope", META)),
                body("nope", META),
            ),
            (
                "no client capabilities",
                request(
                    &[],
                    &body(
                        "echo",
                        r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
                    ),
                ),
                body(
                    "echo",
                    r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
                ),
            ),
            (
                "no _meta",
                request(&[], &body("echo", "{}")),
                body("echo", "{}"),
            ),
            (
                "not JSON",
                request(&[], "{\"jsonrpc\":"),
                "{\"jsonrpc\":".to_owned(),
            ),
            (
                "a JSON-RPC notification",
                request(&[], r#"{"jsonrpc":"2.0","method":"tools/call"}"#),
                r#"{"jsonrpc":"2.0","method":"tools/call"}"#.to_owned(),
            ),
            (
                "no event stream accepted",
                request(&[("accept", "application/json")], &complete),
                complete.clone(),
            ),
            (
                "another content type",
                request(&[("content-type", "text/plain")], &complete),
                complete.clone(),
            ),
        ];
        for (what, req, sent) in cases {
            let (status, text) = send(req).await;
            assert_eq!(status, StatusCode::IM_A_TEAPOT, "{what}: answered here");
            assert_eq!(text, sent, "{what}: the body rmcp got");
        }
    }

    #[tokio::test]
    async fn an_oversized_or_chunked_body_is_not_read_here() {
        let complete = body("echo", META);
        let mut req = request(&[], &complete);
        req.headers_mut().remove("content-length");
        assert_eq!(send(req).await.0, StatusCode::IM_A_TEAPOT, "chunked");
        let mut direct = Direct::new(teapot(), Echo, 16, CancellationToken::new());
        let resp = tower_service::Service::call(&mut direct, request(&[], &complete))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::IM_A_TEAPOT, "over the limit");
    }

    #[tokio::test]
    async fn stopping_ends_a_call_in_flight() {
        #[derive(Clone)]
        struct Never;
        impl DirectTools for Never {
            fn call(&self, _: &str, _: JsonObject) -> Option<BoxFuture<'static, CallToolResult>> {
                Some(Box::pin(std::future::pending()))
            }
        }
        let stop = CancellationToken::new();
        let mut direct = Direct::new(teapot(), Never, 1 << 20, stop.clone());
        let answer = tower_service::Service::call(&mut direct, request(&[], &body("echo", META)));
        stop.cancel();
        assert_eq!(
            answer.await.unwrap().status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }
}
