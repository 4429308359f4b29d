//! The HTTP upgrade over real TCP: security checklist items 1–7 (item 8,
//! the browser, is tested elsewhere). Every refusal is an HTTP answer
//! before any upgrade, the connection is closed, and the server keeps
//! serving a good client afterwards.

use crate::support::*;
use serde_json::json;

fn host(s: &TestServer) -> String {
    format!("127.0.0.1:{}", s.port)
}

/// A request that is correct in every way except what `headers` adds.
fn with_token(s: &TestServer, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut all = vec![
        (AUTH_HEADER, s.token.as_str()),
        ("Sec-WebSocket-Protocol", "mcp"),
    ];
    all.extend_from_slice(headers);
    upgrade_request("/", Some(&host(s)), &all)
}

/// Asserts a refusal: the status, no upgrade, the connection closed, and
/// no token in the answer.
fn assert_refused(r: &RawResponse, status: u16, what: &str, token: &str) {
    assert_eq!(r.status, status, "{what}: {}", r.head);
    assert!(
        r.closed,
        "{what}: the server kept the refused connection open"
    );
    assert!(
        r.header("sec-websocket-accept").is_none(),
        "{what}: {}",
        r.head
    );
    let all = String::from_utf8_lossy(&r.raw);
    assert!(!all.contains(token), "{what}: the answer leaks the token");
}

#[tokio::test]
async fn no_token_is_401_before_any_upgrade_and_nothing_is_processed() {
    let s = TestServer::start().await;
    // An initialize frame right behind the request: it must never be read.
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize",
        "params": real_initialize_params("2025-11-25")})
    .to_string();
    let mut bytes = upgrade_request("/", Some(&host(&s)), &[("Sec-WebSocket-Protocol", "mcp")]);
    bytes.extend(client_frame(0x1, true, init.as_bytes()));
    let r = raw_exchange(s.port, &bytes).await;
    assert_refused(&r, 401, "no token", &s.token);
    assert!(!String::from_utf8_lossy(&r.raw).contains("protocolVersion"));
    assert!(s.handle.clients().is_empty());
    assert!(
        !s.frontend
            .calls()
            .iter()
            .any(|c| matches!(c, Call::ClientConnected(_))),
        "{:?}",
        s.frontend.calls()
    );
    s.assert_serving().await;
}

#[tokio::test]
async fn wrong_tokens_are_401() {
    let s = TestServer::start().await;
    let t = s.token.clone();
    let mut one_changed = t.clone().into_bytes();
    let last = one_changed.len() - 1;
    one_changed[last] = if one_changed[last] == b'0' {
        b'1'
    } else {
        b'0'
    };
    let one_changed = String::from_utf8(one_changed).unwrap();
    assert!(
        t.bytes().any(|b| b.is_ascii_lowercase()),
        "the token has letters to upper-case"
    );
    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("wrong", vec![(AUTH_HEADER, "0".repeat(t.len()))]),
        ("empty", vec![(AUTH_HEADER, String::new())]),
        ("one byte changed", vec![(AUTH_HEADER, one_changed)]),
        ("token + suffix", vec![(AUTH_HEADER, format!("{t}x"))]),
        (
            "prefix of the token",
            vec![(AUTH_HEADER, t[..t.len() - 1].to_owned())],
        ),
        ("upper case", vec![(AUTH_HEADER, t.to_uppercase())]),
        (
            "duplicated header",
            vec![(AUTH_HEADER, t.clone()), (AUTH_HEADER, t.clone())],
        ),
        (
            "two values in one header",
            vec![(AUTH_HEADER, format!("{t}, {t}"))],
        ),
        (
            "wrong then right",
            vec![(AUTH_HEADER, "nope".into()), (AUTH_HEADER, t.clone())],
        ),
    ];
    for (what, headers) in cases {
        let mut h: Vec<(&str, &str)> = vec![("Sec-WebSocket-Protocol", "mcp")];
        h.extend(headers.iter().map(|(k, v)| (*k, v.as_str())));
        let r = raw_exchange(s.port, &upgrade_request("/", Some(&host(&s)), &h)).await;
        assert_refused(&r, 401, what, &t);
    }
    // The right token alone still works.
    let r = raw_exchange(s.port, &with_token(&s, &[])).await;
    assert_eq!(r.status, 101, "{}", r.head);
    s.assert_serving().await;
}

#[tokio::test]
async fn token_in_browser_settable_places_is_401() {
    let s = TestServer::start().await;
    let t = s.token.clone();
    let h = host(&s);
    let query = format!("/?token={t}");
    let query2 = format!("/?authToken={t}");
    let cookie = format!("authToken={t}");
    let bearer = format!("Bearer {t}");
    let proto_list = format!("mcp, {t}");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "?token=",
            upgrade_request(&query, Some(&h), &[("Sec-WebSocket-Protocol", "mcp")]),
        ),
        (
            "?authToken=",
            upgrade_request(&query2, Some(&h), &[("Sec-WebSocket-Protocol", "mcp")]),
        ),
        (
            "Cookie",
            upgrade_request("/", Some(&h), &[("Cookie", &cookie)]),
        ),
        (
            "Sec-WebSocket-Protocol",
            upgrade_request("/", Some(&h), &[("Sec-WebSocket-Protocol", &t)]),
        ),
        (
            "Sec-WebSocket-Protocol list",
            upgrade_request("/", Some(&h), &[("Sec-WebSocket-Protocol", &proto_list)]),
        ),
        (
            "Authorization: Bearer",
            upgrade_request("/", Some(&h), &[("Authorization", &bearer)]),
        ),
    ];
    for (what, req) in cases {
        let r = raw_exchange(s.port, &req).await;
        assert_refused(&r, 401, what, &t);
    }
    s.assert_serving().await;
}

#[tokio::test]
async fn any_origin_is_403_even_with_the_right_token() {
    let s = TestServer::start().await;
    let own = format!("http://127.0.0.1:{}", s.port);
    let local = format!("http://localhost:{}", s.port);
    for origin in [
        "http://evil.example",
        "null",
        own.as_str(),
        local.as_str(),
        "vscode-webview://x",
    ] {
        let r = raw_exchange(s.port, &with_token(&s, &[("Origin", origin)])).await;
        assert_refused(&r, 403, origin, &s.token);
    }
    // The real client sends no Origin: accepted.
    let r = raw_exchange(s.port, &with_token(&s, &[])).await;
    assert_eq!(r.status, 101, "{}", r.head);
    assert!(!r.closed);
}

#[tokio::test]
async fn host_matrix() {
    let s = TestServer::start().await;
    let p = s.port;
    let auth = [
        (AUTH_HEADER, s.token.as_str()),
        ("Sec-WebSocket-Protocol", "mcp"),
    ];
    for bad in [
        format!("evil.example:{p}"),
        "evil.example".to_owned(),
        format!("localhost6:{p}"),
        "localhost6".to_owned(),
        format!("127.0.0.1.nip.io:{p}"),
        format!("2130706433:{p}"),
        format!("0x7f.0.0.1:{p}"),
        format!("127.1:{p}"),
        format!("[::2]:{p}"),
        format!("localhost.evil.example:{p}"),
    ] {
        let r = raw_exchange(p, &upgrade_request("/", Some(&bad), &auth)).await;
        assert!((400..500).contains(&r.status), "Host {bad}: {}", r.head);
        assert_refused(&r, r.status, &bad, &s.token);
    }
    // Missing Host.
    let r = raw_exchange(p, &upgrade_request("/", None, &auth)).await;
    assert!((400..500).contains(&r.status), "missing Host: {}", r.head);
    assert_refused(&r, r.status, "missing Host", &s.token);
    // Two Host headers, the first one good.
    let evil = format!("evil.example:{p}");
    let mut two = auth.to_vec();
    two.push(("Host", &evil));
    let r = raw_exchange(
        p,
        &upgrade_request("/", Some(&format!("127.0.0.1:{p}")), &two),
    )
    .await;
    assert!((400..500).contains(&r.status), "two Hosts: {}", r.head);
    assert_refused(&r, r.status, "two Hosts", &s.token);

    for good in [
        format!("127.0.0.1:{p}"),
        format!("localhost:{p}"),
        format!("[::1]:{p}"),
    ] {
        let r = raw_exchange(p, &upgrade_request("/", Some(&good), &auth)).await;
        assert_eq!(r.status, 101, "Host {good}: {}", r.head);
    }
}

#[tokio::test]
async fn subprotocol_is_exactly_mcp_and_never_echoed() {
    let s = TestServer::start().await;
    let protocol_lines = |r: &RawResponse| {
        r.head
            .lines()
            .filter(|l| {
                l.to_ascii_lowercase()
                    .starts_with("sec-websocket-protocol:")
            })
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let auth = [(AUTH_HEADER, s.token.as_str())];
    for offered in ["mcp", "evil, mcp", "evil,mcp,other"] {
        let mut h = auth.to_vec();
        h.push(("Sec-WebSocket-Protocol", offered));
        let r = raw_exchange(s.port, &upgrade_request("/", Some(&host(&s)), &h)).await;
        assert_eq!(r.status, 101, "{offered}: {}", r.head);
        assert_eq!(
            protocol_lines(&r),
            vec!["Sec-WebSocket-Protocol: mcp"],
            "{offered}"
        );
    }
    let mut h = auth.to_vec();
    h.push(("Sec-WebSocket-Protocol", "evil"));
    let r = raw_exchange(s.port, &upgrade_request("/", Some(&host(&s)), &h)).await;
    assert_eq!(r.status, 101, "{}", r.head);
    assert!(protocol_lines(&r).is_empty(), "{}", r.head);

    // And through a real WebSocket client offering `evil, mcp`.
    let c = WsClient::connect_with(
        s.port,
        &[
            (AUTH_HEADER, &s.token),
            ("Sec-WebSocket-Protocol", "evil, mcp"),
        ],
    )
    .await
    .expect("connect");
    assert_eq!(c.protocol.as_deref(), Some("mcp"));
}

#[tokio::test]
async fn the_real_clients_request_is_upgraded_without_compression() {
    let s = TestServer::start().await;
    let r = raw_exchange(
        s.port,
        &with_token(
            &s,
            &[
                (
                    "Sec-WebSocket-Extensions",
                    "permessage-deflate; client_max_window_bits",
                ),
                ("User-Agent", "claude-code/2.1.328 (cli)"),
            ],
        ),
    )
    .await;
    assert_eq!(r.status, 101, "{}", r.head);
    assert!(r.header("sec-websocket-extensions").is_none(), "{}", r.head);
    assert_eq!(
        r.header("sec-websocket-accept").as_deref(),
        Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
        "{}",
        r.head
    );
    assert_eq!(r.header("sec-websocket-protocol").as_deref(), Some("mcp"));

    // The same through tungstenite, which sends the extension offer too.
    let mut c = s.connect().await;
    assert_eq!(c.protocol.as_deref(), Some("mcp"));
    assert!(c.response_headers.get("sec-websocket-extensions").is_none());
    let tools = c.handshake().await;
    assert!(!tools.is_empty());
}

#[tokio::test]
async fn non_upgrades_and_garbage_are_refused_and_the_server_keeps_serving() {
    let s = TestServer::start().await;
    let h = host(&s);
    let t = s.token.clone();
    let plain_get = format!("GET / HTTP/1.1\r\nHost: {h}\r\n{AUTH_HEADER}: {t}\r\n\r\n");
    let post = format!(
        "POST / HTTP/1.1\r\nHost: {h}\r\n{AUTH_HEADER}: {t}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    let http10 = String::from_utf8(with_token(&s, &[]))
        .unwrap()
        .replacen("HTTP/1.1", "HTTP/1.0", 1);
    let no_connection =
        String::from_utf8(with_token(&s, &[]))
            .unwrap()
            .replacen("Connection: Upgrade\r\n", "", 1);
    let bad_key = String::from_utf8(with_token(&s, &[]))
        .unwrap()
        .replacen(KEY, "short", 1);
    let v8 = String::from_utf8(with_token(&s, &[])).unwrap().replacen(
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Version: 8",
        1,
    );
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("plain GET", plain_get.into_bytes()),
        ("POST", post.into_bytes()),
        ("HTTP/1.0", http10.into_bytes()),
        ("no Connection: Upgrade", no_connection.into_bytes()),
        ("bad key", bad_key.into_bytes()),
        ("version 8", v8.into_bytes()),
        ("garbage", b"\x00\xff\xfe garbage \x01\x02\r\n\r\n".to_vec()),
        ("binary noise", (0..=255u8).cycle().take(3000).collect()),
        ("TLS ClientHello", tls_client_hello()),
    ];
    for (what, bytes) in cases {
        let r = raw_exchange(s.port, &bytes).await;
        assert!(
            (400..500).contains(&r.status),
            "{what}: {:?}",
            String::from_utf8_lossy(&r.raw)
        );
        assert!(r.closed, "{what}: connection left open");
    }
    assert!(s.is_running());
    let mut c = s.connect().await;
    assert!(!c.handshake().await.is_empty());
}

/// A TLS 1.2/1.3 ClientHello record for `127.0.0.1`, as `curl https://` sends.
fn tls_client_hello() -> Vec<u8> {
    let mut hello = vec![0x03, 0x03];
    hello.extend([0x42; 32]); // random
    hello.push(32);
    hello.extend([0x17; 32]); // session id
    hello.extend([0x00, 0x06, 0x13, 0x01, 0x13, 0x02, 0xc0, 0x2f]); // cipher suites
    hello.extend([0x01, 0x00]); // compression: null
    let sni_name = b"127.0.0.1";
    let mut sni = vec![0x00];
    sni.extend((sni_name.len() as u16).to_be_bytes());
    sni.extend(sni_name);
    let mut sni_list = (sni.len() as u16).to_be_bytes().to_vec();
    sni_list.extend(sni);
    let mut ext = vec![0x00, 0x00];
    ext.extend((sni_list.len() as u16).to_be_bytes());
    ext.extend(sni_list);
    hello.extend((ext.len() as u16).to_be_bytes());
    hello.extend(ext);
    let mut hs = vec![0x01, 0x00];
    hs.extend((hello.len() as u16).to_be_bytes());
    hs.extend(hello);
    let mut rec = vec![0x16, 0x03, 0x01];
    rec.extend((hs.len() as u16).to_be_bytes());
    rec.extend(hs);
    rec
}

/// Security checklist item 44 (issue 11, defect 9): wrong tokens were each
/// answered at once, 5,500 a second from one client. Now a source that
/// keeps failing waits longer and longer for its answer, while a client
/// with the right token is still let in at once.
#[tokio::test]
async fn regression_repeated_auth_failures_are_throttled_but_the_right_token_is_served() {
    let s = TestServer::start().await;
    let wrong = with_token(&s, &[]);
    let wrong = String::from_utf8(wrong)
        .unwrap()
        .replace(&s.token, &"0".repeat(64))
        .into_bytes();
    // The free failures are answered at once ...
    for i in 0..ccbridge_server::refusals::FREE_FAILURES {
        let r = bounded("a free failure", WAIT, raw_exchange(s.port, &wrong)).await;
        assert_eq!(r.status, 401, "failure {i}");
    }
    // ... then a sequential attacker gets only a handful of answers in a
    // second where it used to get thousands.
    let attacker = {
        let wrong = wrong.clone();
        let port = s.port;
        tokio::spawn(async move {
            let mut answered = 0u32;
            let end = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
            while tokio::time::Instant::now() < end {
                let left = end.saturating_duration_since(tokio::time::Instant::now());
                match tokio::time::timeout(left, raw_exchange(port, &wrong)).await {
                    Ok(r) if r.status == 401 => answered += 1,
                    Ok(r) => panic!("unexpected answer {}", r.head),
                    Err(_) => break,
                }
            }
            answered
        })
    };
    // Meanwhile the right token is still served promptly.
    let mut good = bounded("the right token during the flood", WAIT, s.client()).await;
    let p = good.request("ping", json!({})).await;
    assert_eq!(p["result"], json!({}));
    let answered = attacker.await.unwrap();
    assert!(
        answered <= 6,
        "{answered} wrong tokens answered within a second after the free ones"
    );
}
