//! MCP over Streamable HTTP as both of ccbridge's MCP servers serve it
//! (the workspace tools and the Gemini CLI / Qwen Code companions): the
//! checks in front of it ([`guard`]), a cap on sessions ([`sessions`]),
//! rmcp's transport set up the same way ([`http_service`]) and a stateless
//! tool call answered before it ([`direct`]). Each server
//! brings only its handler.

pub mod direct;
pub mod guard;
pub mod sessions;

pub use direct::{Direct, DirectTools};
pub use guard::{serve, Token};
pub use sessions::{CappedSessions, MAX_SESSIONS, SESSION_IDLE};

use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;
use std::sync::Arc;

/// Streamable HTTP as every ccbridge MCP server serves it (this one and the
/// Gemini/Qwen companion): a handler from `factory` per session, kept in
/// `sessions` (`CappedSessions::default()`: at most [`MAX_SESSIONS`]
/// sessions; creating one more closes the least recently used idle one;
/// when all are busy the `initialize` is refused), sessions
/// closed after [`SESSION_IDLE`] idle (no request in flight, no stream
/// open), loopback `Host` only (the guard in front checks it first), `Origin` left to the guard (loopback pages pass,
/// on any port, which rmcp's exact-match list cannot say), bodies up to
/// `max_body`; cancelling `stop` ends every session.
///
/// No event stream starts with a priming event (SEP-1699: an event id, a
/// `retry`, an empty `data:`), in answers nor on the GET stream: the MCP
/// SDK in Gemini CLI 0.61.0 (and Qwen Code's MCP client) parses every
/// event's data as JSON, and its IDE client took the parse error for a
/// lost connection, so after the first `openDiff` no diff opened again
/// (found by `real_agents.rs`); the `retry` also made it re-open every
/// finished stream. Nothing here needs resuming a stream: client and
/// server are on one host.
pub fn http_service<S: ServerHandler + Send + 'static>(
    factory: impl Fn() -> Result<S, std::io::Error> + Send + Sync + 'static,
    sessions: CappedSessions,
    max_body: usize,
    stop: tokio_util::sync::CancellationToken,
) -> StreamableHttpService<S, CappedSessions> {
    // `CappedSessions` sends no priming event on a POST's answer stream either.
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(["127.0.0.1", "localhost", "::1"])
        .disable_allowed_origins()
        .with_max_request_body_bytes(max_body)
        .with_cancellation_token(stop)
        // `initialize`'s answer and the GET stream.
        .with_sse_retry(None)
        // A request on the stateless path (clients of the 2026-07-28
        // revision, which has no sessions) is answered with plain JSON when
        // the handler's first message is its answer: no event stream to
        // open, frame and close. Sessions of older clients keep the event
        // stream their revision defines.
        .with_json_response(true);
    StreamableHttpService::new(factory, Arc::new(sessions), config)
}
