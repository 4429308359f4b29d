//! The WebSocket client against tiny in-test servers on real sockets.

// tungstenite's handshake callback type fixes the large `Err` variant.
#![allow(clippy::result_large_err)]

use ccbridge_client::ws_client::{ClientError, IdeClient};
use ccbridge_protocol::jsonrpc::{ErrorObject, Message, Response};
use ccbridge_protocol::mcp::Content;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::handshake::server::{
    ErrorResponse, Request, Response as HsResponse,
};
use tokio_tungstenite::tungstenite::http::{HeaderMap, HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const CONNECT: Duration = Duration::from_secs(5);

/// Every test is bounded, so a bug cannot hang the suite.
async fn bounded<F: Future<Output = ()>>(f: F) {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("test timed out");
}

#[derive(Clone, Copy)]
enum Upgrade {
    /// Check the token like a real server, echo `mcp`.
    Normal,
    /// Refuse with this status whatever the request.
    Refuse(u16),
    /// Accept without echoing the subprotocol.
    NoSubprotocol,
}

#[derive(Default)]
struct Seen {
    headers: Vec<HeaderMap>,
    messages: Vec<Value>,
}

struct Server {
    port: u16,
    seen: Arc<Mutex<Seen>>,
}

impl Server {
    fn headers(&self) -> Vec<HeaderMap> {
        self.seen.lock().unwrap().headers.clone()
    }
    fn messages(&self) -> Vec<Value> {
        self.seen.lock().unwrap().messages.clone()
    }
}

async fn start(upgrade: Upgrade) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen2 = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let seen = seen2.clone();
            tokio::spawn(async move {
                if let Some(ws) = handshake(tcp, upgrade, &seen).await {
                    session(ws, &seen).await;
                }
            });
        }
    });
    Server { port, seen }
}

async fn handshake(
    tcp: TcpStream,
    upgrade: Upgrade,
    seen: &Arc<Mutex<Seen>>,
) -> Option<WebSocketStream<TcpStream>> {
    let seen = seen.clone();
    let callback =
        move |req: &Request, mut resp: HsResponse| -> Result<HsResponse, ErrorResponse> {
            seen.lock().unwrap().headers.push(req.headers().clone());
            let refuse = |status: u16| {
                let mut e = ErrorResponse::new(Some("refused".into()));
                *e.status_mut() = StatusCode::from_u16(status).unwrap();
                Err(e)
            };
            match upgrade {
                Upgrade::Refuse(status) => return refuse(status),
                Upgrade::NoSubprotocol => return Ok(resp),
                Upgrade::Normal => {}
            }
            let h = req.headers();
            let token_ok = h
                .get("x-claude-code-ide-authorization")
                .is_some_and(|v| v.as_bytes() == TOKEN.as_bytes());
            if !token_ok || h.get("origin").is_some() {
                return refuse(401);
            }
            let offers_mcp = h
                .get("sec-websocket-protocol")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.split(',').any(|p| p.trim() == "mcp"));
            if offers_mcp {
                resp.headers_mut()
                    .insert("sec-websocket-protocol", HeaderValue::from_static("mcp"));
            }
            Ok(resp)
        };
    tokio_tungstenite::accept_hdr_async(tcp, callback)
        .await
        .ok()
}

async fn send(ws: &mut WebSocketStream<TcpStream>, v: Value) {
    let _ = ws.send(WsMessage::text(v.to_string())).await;
}

fn text_result(t: &str, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": t}], "isError": is_error})
}

/// Answers like an IDE server; tool names select misbehaviour.
async fn session(mut ws: WebSocketStream<TcpStream>, seen: &Arc<Mutex<Seen>>) {
    while let Some(Ok(frame)) = ws.next().await {
        let WsMessage::Text(text) = frame else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else {
            continue;
        };
        seen.lock().unwrap().messages.push(v.clone());
        let Ok(Message::Request(req)) = Message::parse(text.as_str()) else {
            continue;
        };
        let id = serde_json::to_value(&req.id).unwrap();
        let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        let params = req.params_value().unwrap_or(json!({}));
        match req.method.as_str() {
            "initialize" => {
                send(
                    &mut ws,
                    reply(json!({
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {"listChanged": false}},
                        "serverInfo": {"name": "mini", "version": "9.9"},
                    })),
                )
                .await
            }
            "tools/list" => {
                let page = if params.get("cursor").is_some() {
                    json!({"tools": [{"name": "second"}, {"description": "no name"}]})
                } else {
                    json!({"tools": [{"name": "echo", "description": "echoes",
                                      "inputSchema": {"type": "object"}}],
                           "nextCursor": "p2"})
                };
                send(&mut ws, reply(page)).await
            }
            "tools/call" => {
                let name = params["name"].as_str().unwrap_or("").to_owned();
                let args = params["arguments"].clone();
                match name.as_str() {
                    "echo" => send(&mut ws, reply(text_result(&args.to_string(), false))).await,
                    "two" => {
                        send(
                            &mut ws,
                            reply(json!({"content": [
                            {"type": "text", "text": "first"},
                            {"type": "text", "text": "second"}]})),
                        )
                        .await
                    }
                    "fail" => send(&mut ws, reply(text_result("it broke", true))).await,
                    "rpcerror" => {
                        let e = Response::error(
                            Some(req.id.clone()),
                            ErrorObject::invalid_params("no such file"),
                        );
                        send(&mut ws, e.to_value()).await
                    }
                    "nullid" => {
                        send(
                            &mut ws,
                            json!({"jsonrpc": "2.0", "id": null,
                            "error": {"code": -32700, "message": "Parse error"}}),
                        )
                        .await
                    }
                    "never" => {}
                    "close" => {
                        let _ = ws
                            .close(Some(CloseFrame {
                                code: CloseCode::from(4001),
                                reason: "Another Claude Code session connected to this IDE".into(),
                            }))
                            .await;
                    }
                    "drop" => return,
                    "noisy" => {
                        let _ = ws.send(WsMessage::binary(vec![0xffu8, 0x00])).await;
                        let _ = ws.send(WsMessage::text("this is not json")).await;
                        send(&mut ws, json!([1, 2])).await;
                        send(&mut ws, json!({"jsonrpc": "2.0", "id": 999, "result": {}})).await;
                        let _ = ws.send(WsMessage::Ping(vec![1u8, 2].into())).await;
                        send(
                            &mut ws,
                            json!({"jsonrpc": "2.0", "method": "selection_changed",
                                             "params": {"text": "hi"}}),
                        )
                        .await;
                        send(
                            &mut ws,
                            json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}),
                        )
                        .await;
                        send(
                            &mut ws,
                            json!({"jsonrpc": "2.0", "id": "srv-2",
                                             "method": "sampling/createMessage"}),
                        )
                        .await;
                        // Our answer arrives only after the client answered both requests.
                        let mut answered = 0;
                        while answered < 2 {
                            let t = match ws.next().await {
                                Some(Ok(WsMessage::Text(t))) => t,
                                Some(Ok(_)) => continue, // our ping's pong
                                _ => return,
                            };
                            if let Ok(v) = serde_json::from_str::<Value>(t.as_str()) {
                                seen.lock().unwrap().messages.push(v);
                                answered += 1;
                            }
                        }
                        send(&mut ws, reply(text_result("done", false))).await
                    }
                    "notify" => {
                        send(&mut ws, reply(text_result("ok", false))).await;
                        send(
                            &mut ws,
                            json!({"jsonrpc": "2.0", "method": "log_event",
                                             "params": {"n": 1}}),
                        )
                        .await;
                    }
                    _ => send(&mut ws, reply(text_result("unknown tool", true))).await,
                }
            }
            _ => {
                let e = Response::error(
                    Some(req.id.clone()),
                    ErrorObject::method_not_found(&req.method),
                );
                send(&mut ws, e.to_value()).await
            }
        }
    }
}

#[tokio::test]
async fn handshake_matches_the_cli_and_tools_work() {
    bounded(async {
        let server = start(Upgrade::Normal).await;
        let mut c = IdeClient::connect(server.port, Some(TOKEN), CONNECT)
            .await
            .unwrap();
        assert_eq!(c.protocol_version(), "2025-11-25");
        assert!(c.claude_accepts_version());
        assert_eq!(c.server_info(), (Some("mini"), Some("9.9")));

        let tools = c.list_tools().await.unwrap();
        let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["echo", "second"]);
        assert_eq!(tools[0].description, "echoes");

        let r = c
            .call_tool("echo", json!({"filePath": "/tmp/x"}), Some(CONNECT))
            .await
            .unwrap();
        assert!(!r.is_error);
        assert_eq!(r.first_text(), Some(r#"{"filePath":"/tmp/x"}"#));
        let r = c.call_tool("two", json!({}), None).await.unwrap();
        assert_eq!(
            r.content,
            vec![Content::text("first"), Content::text("second")]
        );
        let r = c.call_tool("fail", json!({}), None).await.unwrap();
        assert!(r.is_error);
        assert_eq!(r.first_text(), Some("it broke"));
        let raw = c.call_tool_raw("fail", json!({}), None).await.unwrap();
        assert_eq!(raw["isError"], true);
        c.close().await.unwrap();

        let h = &server.headers()[0];
        assert_eq!(h["sec-websocket-protocol"], "mcp");
        assert_eq!(h["x-claude-code-ide-authorization"], TOKEN);
        assert!(h.get("origin").is_none());

        let msgs = server.messages();
        let methods: Vec<_> = msgs
            .iter()
            .map(|m| m["method"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            &methods[..4],
            &[
                "initialize",
                "notifications/initialized",
                "tools/list",
                "tools/list"
            ]
        );
        let init = &msgs[0];
        assert_eq!(init["id"], 0);
        assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
        assert_eq!(init["params"]["clientInfo"]["name"], "ccbridge-call");
        assert!(msgs[1].get("id").is_none(), "initialized is a notification");
        let ids: Vec<_> = msgs.iter().filter_map(|m| m["id"].as_i64()).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 4, 5, 6], "increasing integer ids");
        assert!(
            !msgs.iter().any(|m| m["method"] == "ide_connected"),
            "a debugging client must not pose as a Claude session"
        );
    })
    .await
}

#[tokio::test]
async fn wrong_or_missing_token_is_a_typed_refusal() {
    bounded(async {
        let server = start(Upgrade::Normal).await;
        let err = IdeClient::connect(server.port, Some("wrong"), CONNECT)
            .await
            .unwrap_err();
        assert!(
            matches!(err, ClientError::Refused { status: 401 }),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "the server refused the token (HTTP 401)");
        assert!(!format!("{err:?}").contains("wrong"));
        let err = IdeClient::connect(server.port, None, CONNECT)
            .await
            .unwrap_err();
        assert!(
            matches!(err, ClientError::TokenRequired { status: 401 }),
            "{err:?}"
        );
    })
    .await
}

#[tokio::test]
async fn http_401_403_and_other_statuses() {
    bounded(async {
        for (status, want) in [(401, "HTTP 401"), (403, "HTTP 403")] {
            let server = start(Upgrade::Refuse(status)).await;
            let err = IdeClient::connect(server.port, Some(TOKEN), CONNECT)
                .await
                .unwrap_err();
            assert!(matches!(err, ClientError::Refused { .. }), "{err:?}");
            assert!(err.to_string().contains(want), "{err}");
        }
        let server = start(Upgrade::Refuse(400)).await;
        let err = IdeClient::connect(server.port, Some(TOKEN), CONNECT)
            .await
            .unwrap_err();
        assert!(
            matches!(err, ClientError::UpgradeRejected { status: 400 }),
            "{err:?}"
        );
    })
    .await
}

#[tokio::test]
async fn a_server_that_does_not_echo_mcp_still_works() {
    bounded(async {
        let server = start(Upgrade::NoSubprotocol).await;
        let mut c = IdeClient::connect(server.port, Some(TOKEN), CONNECT)
            .await
            .unwrap();
        let r = c.call_tool("echo", json!({}), None).await.unwrap();
        assert_eq!(r.first_text(), Some("{}"));
        let headers = server.headers();
        assert_eq!(headers.len(), 2, "retried once");
        assert!(headers[1].get("sec-websocket-protocol").is_none());
    })
    .await
}

#[tokio::test]
async fn unexpected_frames_neither_hang_nor_fail_a_call() {
    bounded(async {
        let server = start(Upgrade::Normal).await;
        let mut c = IdeClient::connect(server.port, Some(TOKEN), CONNECT)
            .await
            .unwrap();
        let r = c
            .call_tool("noisy", json!({}), Some(CONNECT))
            .await
            .unwrap();
        assert_eq!(r.first_text(), Some("done"));
        let notes = c.take_notifications();
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].method, "selection_changed");
        assert!(c.take_notifications().is_empty());
        let msgs = server.messages();
        let answer = |id: &str| msgs.iter().find(|m| m["id"] == id).cloned();
        assert_eq!(
            answer("srv-1").map(|m| m["result"].clone()),
            Some(json!({}))
        );
        assert_eq!(
            answer("srv-2").map(|m| m["error"]["code"].clone()),
            Some(json!(-32601))
        );
        // The session is still usable.
        let r = c.call_tool("echo", json!({"a": 1}), None).await.unwrap();
        assert_eq!(r.first_text(), Some(r#"{"a":1}"#));
    })
    .await
}

#[tokio::test]
async fn notifications_after_a_call_can_be_awaited() {
    bounded(async {
        let server = start(Upgrade::Normal).await;
        let mut c = IdeClient::connect(server.port, Some(TOKEN), CONNECT)
            .await
            .unwrap();
        c.call_tool("notify", json!({}), None).await.unwrap();
        let n = c
            .next_notification(Duration::from_secs(5))
            .await
            .unwrap()
            .expect("a notification");
        assert_eq!(n.method, "log_event");
        let none = c
            .next_notification(Duration::from_millis(50))
            .await
            .unwrap();
        assert!(none.is_none());
    })
    .await
}

#[tokio::test]
async fn rpc_errors_timeouts_and_closes_are_reported() {
    bounded(async {
        let server = start(Upgrade::Normal).await;
        let mut c = IdeClient::connect(server.port, Some(TOKEN), CONNECT)
            .await
            .unwrap();

        let err = c.call_tool("rpcerror", json!({}), None).await.unwrap_err();
        match &err {
            ClientError::Rpc { method, error } => {
                assert_eq!(method, "tools/call");
                assert_eq!(error.code, -32602);
            }
            other => panic!("{other:?}"),
        }
        let err = c.call_tool("nullid", json!({}), None).await.unwrap_err();
        assert!(matches!(err, ClientError::Rpc { ref error, .. } if error.code == -32700));

        let err = c
            .call_tool("never", json!({}), Some(Duration::from_millis(100)))
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::Timeout { .. }), "{err:?}");
        // The server was told, and the session still works.
        let r = c.call_tool("echo", json!({}), None).await.unwrap();
        assert_eq!(r.first_text(), Some("{}"));
        assert!(server
            .messages()
            .iter()
            .any(|m| m["method"] == "notifications/cancelled"));

        let err = c.call_tool("close", json!({}), None).await.unwrap_err();
        match err {
            ClientError::Closed { code, reason } => {
                assert_eq!(code, Some(4001));
                assert!(reason.starts_with("Another Claude Code session"));
            }
            other => panic!("{other:?}"),
        }

        let mut c = IdeClient::connect(server.port, Some(TOKEN), CONNECT)
            .await
            .unwrap();
        let err = c.call_tool("drop", json!({}), None).await.unwrap_err();
        assert!(matches!(err, ClientError::Closed { .. }), "{err:?}");
    })
    .await
}

#[tokio::test]
async fn connecting_is_bounded() {
    bounded(async {
        // Accepts TCP and then says nothing.
        let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = silent.local_addr().unwrap().port();
        let hold = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((tcp, _)) = silent.accept().await {
                held.push(tcp);
            }
        });
        let err = IdeClient::connect(port, Some(TOKEN), Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::Timeout { .. }), "{err:?}");
        hold.abort();

        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = IdeClient::connect(closed, Some(TOKEN), CONNECT)
            .await
            .unwrap_err();
        assert!(matches!(err, ClientError::Connect { .. }), "{err:?}");
    })
    .await
}
