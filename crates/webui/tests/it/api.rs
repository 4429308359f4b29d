//! The browser UI's HTTP API over real sockets, with a WebSocket client
//! playing Claude Code on the other side of the engine: the security model
//! of docs/web-ui.md attacked request by request, and every way a review,
//! a selection or a mention travels between the page and Claude; and the
//! workspace tools server beside them, whose approvals the page answers.

use ccbridge_client::ws_client::IdeClient;
use ccbridge_protocol::lockfile::McpEndpoint;
use ccbridge_server::{Approval, CommandEvent, Config, EngineHandle, RunId};
use ccbridge_webui::{Options, Standalone};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(10);

struct Rig {
    ui_port: u16,
    ide_port: u16,
    ide_token: String,
    token: String,
    ws: PathBuf,
    engine: EngineHandle,
    tools: McpEndpoint,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    join: Option<tokio::task::JoinHandle<()>>,
}

struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

impl Rig {
    async fn start() -> Rig {
        let ws_dir = tempfile::tempdir().unwrap();
        let cfg = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws_dir.path()).unwrap();
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/a.py"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(ws.join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir_all(ws.join("build")).unwrap();
        let mut config = Config::new("UiTest", vec![ws.display().to_string()]);
        config.lock_dir = Some(cfg.path().join("ide"));
        config.notify_delay = Duration::from_millis(10);
        config.selection_debounce = Duration::ZERO;
        config.multi_client = true;
        let options = Options {
            tools: Some(Default::default()),
            ..Options::default()
        };
        let s = Standalone::start(config, options).await.unwrap();
        let engine = s.engine().clone();
        let tools = s.tools().expect("the tools server runs").clone();
        let token = s.url().rsplit_once("#token=").unwrap().1.to_owned();
        let ui_port = s.ui_port();
        let ide_port = s.engine().port();
        let ide_token = {
            let lock = s.engine().lock_path().unwrap();
            let l = ccbridge_protocol::lockfile::LockFile::parse(&std::fs::read(lock).unwrap())
                .unwrap();
            l.auth_token.unwrap()
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let join = tokio::spawn(async move {
            s.run(async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Rig {
            ui_port,
            ide_port,
            ide_token,
            token,
            ws,
            engine,
            tools,
            _dirs: (ws_dir, cfg),
            stop: Some(stop),
            join: Some(join),
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(WAIT, self.join.take().unwrap())
            .await
            .expect("the server stops")
            .unwrap();
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.ui_port)
    }

    /// One request on a fresh connection; `headers` replace the defaults
    /// (Host, and for a body `Content-Type: application/json`).
    async fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let mut s = TcpStream::connect(("127.0.0.1", self.ui_port))
            .await
            .unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\n");
        let has = |n: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
        if !has("host") {
            req.push_str(&format!("Host: {}\r\n", self.host()));
        }
        if !body.is_empty() && !has("content-type") {
            req.push_str("Content-Type: application/json\r\n");
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        s.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        tokio::time::timeout(WAIT, s.read_to_end(&mut raw))
            .await
            .expect("an answer in time")
            .unwrap();
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        Answer {
            status,
            head: head.to_owned(),
            body: body.to_owned(),
        }
    }

    /// Signs in with the printed link's token; returns the value of the
    /// `Authorization` header the page then sends.
    async fn sign_in(&self) -> String {
        let a = self
            .raw(
                "POST",
                "/api/session",
                &[],
                &json!({"token": self.token}).to_string(),
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.head);
        assert!(
            a.header("set-cookie").is_none(),
            "a cookie reaches every port of 127.0.0.1: {}",
            a.head
        );
        let session = a.json()["session"].as_str().expect("a session").to_owned();
        format!("Bearer {session}")
    }

    async fn get(&self, auth: &str, path: &str) -> Answer {
        self.raw("GET", path, &[("Authorization", auth)], "").await
    }

    async fn post(&self, auth: &str, path: &str, body: Value) -> Answer {
        self.raw("POST", path, &[("Authorization", auth)], &body.to_string())
            .await
    }

    /// A client playing Claude Code (receives notifications once ready).
    async fn claude(&self) -> IdeClient {
        let mut c =
            IdeClient::connect_as(self.ide_port, Some(&self.ide_token), WAIT, "claude-code")
                .await
                .unwrap();
        c.list_tools().await.unwrap();
        c
    }

    /// A one-shot client, for calls that wait (openDiff).
    async fn tool_client(&self) -> IdeClient {
        IdeClient::connect(self.ide_port, Some(&self.ide_token), WAIT)
            .await
            .unwrap()
    }

    /// Waits until the state has a review for `path`; returns it.
    async fn review_for(&self, auth: &str, path: &Path) -> Value {
        let want = path.display().to_string();
        for _ in 0..200 {
            let s = self.get(auth, "/api/state").await.json();
            if let Some(r) = s["reviews"]
                .as_array()
                .and_then(|rs| rs.iter().find(|r| r["path"] == want.as_str()))
            {
                return r.clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no review for {want}");
    }
}

/// Calls `tool` on the tools server at `e` (a session of its own) and
/// returns the JSON-RPC answer.
async fn mcp_call(e: &McpEndpoint, tool: &str, args: Value) -> Value {
    let (port, token) = (ccbridge_testkit::http::url_port(&e.url), e.token.clone());
    let tool = tool.to_owned();
    tokio::task::spawn_blocking(move || {
        ccbridge_testkit::http::mcp_call(port, &token, &tool, args, WAIT)
    })
    .await
    .unwrap()
}

/// Waits until the state's pending approvals are `n`; returns them.
async fn approvals(rig: &Rig, auth: &str, n: usize) -> Vec<Value> {
    for _ in 0..500 {
        let s = rig.get(auth, "/api/state").await.json();
        let a = s["approvals"].as_array().cloned().unwrap_or_default();
        if a.len() == n {
            return a;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the page never had {n} approvals waiting");
}

fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap().to_owned())
        .collect()
}

/// Starts an `openDiff` on its own connection; the task ends with its result.
fn open_diff(
    mut c: IdeClient,
    path: &Path,
    contents: &str,
    tab: &str,
) -> tokio::task::JoinHandle<Value> {
    let args = json!({"old_file_path": path, "new_file_path": path,
        "new_file_contents": contents, "tab_name": tab});
    tokio::spawn(async move { c.call_tool_raw("openDiff", args, None).await.unwrap() })
}

#[tokio::test]
async fn without_the_session_header_nothing_is_readable_or_writable() {
    let rig = Rig::start().await;
    let session = rig.sign_in().await.replace("Bearer ", "");
    for (m, p) in [
        ("GET", "/api/state"),
        ("GET", "/api/events"),
        ("GET", "/api/tree"),
        ("GET", "/api/file?path=src/a.py"),
        ("GET", "/api/diagnostics"),
        ("POST", "/api/selection"),
        ("POST", "/api/link"),
        ("POST", "/api/reviews/1/accept"),
    ] {
        let body = if m == "POST" { "{}" } else { "" };
        let a = rig
            .raw(m, p, &[("Authorization", "Bearer forged")], body)
            .await;
        assert_eq!(a.status, 401, "{m} {p}: {}", a.head);
        // The session as a cookie (what another port of 127.0.0.1 would
        // get if the page used one) is no credential either.
        let cookie = format!("ccbridge_ui_{}={session}", rig.ui_port);
        let a = rig.raw(m, p, &[("Cookie", &cookie)], body).await;
        assert_eq!(a.status, 401, "{m} {p} with a cookie: {}", a.head);
        assert!(!a.body.contains("one\ntwo"), "{m} {p} leaked the file");
    }
    // The page shell and its code are public (they hold no data).
    assert_eq!(rig.raw("GET", "/", &[], "").await.status, 200);
    assert_eq!(rig.raw("GET", "/assets/app.js", GZIP, "").await.status, 200);
    rig.stop().await;
}

/// Guessing the link's token: after a few wrong ones in a row each further
/// answer waits (doubling, up to two seconds), so a guesser gets a few tries
/// a second instead of thousands; the right token still signs in at once.
#[tokio::test]
async fn guessing_the_link_token_is_slowed_and_the_real_link_still_works() {
    use ccbridge_server::refusals::{BASE_DELAY, FREE_FAILURES};
    let rig = Rig::start().await;
    let wrong = json!({"token": "0".repeat(64)}).to_string();
    for _ in 0..FREE_FAILURES {
        let a = rig.raw("POST", "/api/session", &[], &wrong).await;
        assert_eq!(a.status, 401, "{}", a.head);
    }
    for n in 1..=3u32 {
        let asked = std::time::Instant::now();
        let a = rig.raw("POST", "/api/session", &[], &wrong).await;
        assert_eq!(a.status, 401, "{}", a.head);
        let waited = asked.elapsed();
        let least = BASE_DELAY * (1 << (n - 1));
        assert!(
            waited >= least,
            "guess {n} past the free ones answered after {waited:?}, not {least:?}"
        );
    }
    let session = rig.sign_in().await;
    assert_eq!(rig.get(&session, "/api/state").await.status, 200);
    rig.stop().await;
}

/// A body past the page's cap (40 MiB; one byte past it, all of it sent
/// before the answer) is refused with 413.
#[tokio::test]
async fn a_body_over_the_cap_is_refused() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let huge = format!("\"{}\"", "x".repeat((40 << 20) - 1));
    let a = rig
        .raw("POST", "/api/selection", &[("Authorization", &auth)], &huge)
        .await;
    assert_eq!(a.status, 413, "{}", a.head);
    rig.stop().await;
}

/// The bundle is revalidated, not downloaded again: a browser that has it
/// (its entity tag) gets 304 and no body, so a reload reuses the compiled
/// script; a stale tag gets the bundle.
#[tokio::test]
async fn the_bundle_is_revalidated_by_its_entity_tag() {
    let rig = Rig::start().await;
    let first = rig.raw("GET", "/assets/app.js", GZIP, "").await;
    assert_eq!(first.status, 200);
    let head = first.head.to_ascii_lowercase();
    assert!(head.contains("cache-control: no-cache"), "{}", first.head);
    assert!(head.contains("content-encoding: gzip"), "{}", first.head);
    assert!(head.contains("vary: accept-encoding"), "{}", first.head);
    let tag = first
        .head
        .lines()
        .find_map(|l| {
            l.strip_prefix("etag: ")
                .or_else(|| l.strip_prefix("ETag: "))
        })
        .expect("an ETag")
        .to_owned();
    let again = rig
        .raw(
            "GET",
            "/assets/app.js",
            &[("If-None-Match", &tag), GZIP[0]],
            "",
        )
        .await;
    assert_eq!(again.status, 304, "{}", again.head);
    assert!(again.body.is_empty());
    let stale = rig
        .raw(
            "GET",
            "/assets/app.js",
            &[("If-None-Match", "\"0000\""), GZIP[0]],
            "",
        )
        .await;
    assert_eq!(stale.status, 200);
    assert!(stale.body.len() > 100_000);
    rig.stop().await;
}

/// What every browser sends.
const GZIP: &[(&str, &str)] = &[("Accept-Encoding", "gzip, deflate, br, zstd")];

/// The binary holds the bundle gzip-compressed only (to stay small): it is
/// sent so to whoever accepts gzip, and refused with a reason otherwise,
/// never sent compressed to a client that did not ask for it.
#[tokio::test]
async fn the_bundle_is_sent_gzip_compressed_to_clients_that_accept_it() {
    let rig = Rig::start().await;
    for refuses in [
        &[][..],
        &[("Accept-Encoding", "identity")],
        &[("Accept-Encoding", "gzip;q=0, br")],
    ] {
        let a = rig.raw("GET", "/assets/app.js", refuses, "").await;
        assert_eq!(a.status, 406, "{refuses:?}: {}", a.head);
        assert!(a.body.contains("open the page in a browser"), "{}", a.body);
    }
    for accepts in ["gzip", "deflate, GZIP;q=0.5", "*"] {
        let a = rig
            .raw("GET", "/assets/app.js", &[("Accept-Encoding", accepts)], "")
            .await;
        assert_eq!(a.status, 200, "{accepts}: {}", a.head);
        assert!(a
            .head
            .to_ascii_lowercase()
            .contains("content-encoding: gzip"));
    }
    rig.stop().await;
}

#[tokio::test]
async fn the_link_token_works_once_and_new_links_can_be_made() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let again = rig
        .raw(
            "POST",
            "/api/session",
            &[],
            &json!({"token": rig.token}).to_string(),
        )
        .await;
    assert_eq!(again.status, 401, "a used token is refused");
    assert!(again.header("set-cookie").is_none());
    assert_eq!(rig.get(&auth, "/api/state").await.status, 200);
    // A new link for another browser, also once.
    let url = rig.post(&auth, "/api/link", json!({})).await.json()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = url.rsplit_once("#token=").unwrap().1;
    assert!(url.starts_with(&format!("http://127.0.0.1:{}/#token=", rig.ui_port)));
    let other = rig
        .raw(
            "POST",
            "/api/session",
            &[],
            &json!({"token": token}).to_string(),
        )
        .await;
    assert_eq!(other.status, 200);
    rig.stop().await;
}

#[tokio::test]
async fn dns_rebinding_foreign_origins_simple_requests_and_preflights_are_refused() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    // DNS rebinding: the right address, another name.
    for host in ["evil.example", "evil.example:1", "localhost.evil.example"] {
        let h = format!("{host}:{}", rig.ui_port);
        let a = rig
            .raw(
                "GET",
                "/api/state",
                &[("Host", &h), ("Authorization", &auth)],
                "",
            )
            .await;
        assert_eq!(a.status, 421, "{host}");
        assert_eq!(rig.raw("GET", "/", &[("Host", &h)], "").await.status, 421);
    }
    let ok_host = format!("localhost:{}", rig.ui_port);
    assert_eq!(
        rig.raw(
            "GET",
            "/api/state",
            &[("Host", &ok_host), ("Authorization", &auth)],
            ""
        )
        .await
        .status,
        200
    );
    // Another origin, even with the session.
    for origin in [
        "http://evil.example",
        "null",
        &format!("http://localhost:{}", rig.ui_port),
    ] {
        let a = rig
            .raw(
                "GET",
                "/api/state",
                &[("Origin", origin), ("Authorization", &auth)],
                "",
            )
            .await;
        assert_eq!(a.status, 403, "{origin}");
    }
    let own = format!("http://{}", rig.host());
    assert_eq!(
        rig.raw(
            "GET",
            "/api/state",
            &[("Origin", &own), ("Authorization", &auth)],
            ""
        )
        .await
        .status,
        200
    );
    // "Simple" cross-site requests: no JSON content type, no effect.
    let mut claude = rig.claude().await;
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ] {
        let body = json!({"path": "src/a.py", "text": "x",
            "selection": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}});
        let a = rig
            .raw(
                "POST",
                "/api/selection",
                &[("Content-Type", ct), ("Authorization", &auth)],
                &body.to_string(),
            )
            .await;
        assert_eq!(a.status, 415, "{ct}");
    }
    assert!(
        claude
            .next_notification(Duration::from_millis(300))
            .await
            .unwrap()
            .is_none(),
        "a refused request changed nothing"
    );
    // No CORS, ever; preflights are refused.
    let pre = rig
        .raw(
            "OPTIONS",
            "/api/selection",
            &[
                ("Origin", "http://evil.example"),
                ("Access-Control-Request-Method", "POST"),
            ],
            "",
        )
        .await;
    assert!(pre.status >= 400);
    for a in [&pre, &rig.get(&auth, "/api/state").await] {
        assert!(
            !a.head.to_ascii_lowercase().contains("access-control-"),
            "{}",
            a.head
        );
    }
    rig.stop().await;
}

#[tokio::test]
async fn the_page_answers_through_a_port_forward_and_still_refuses_rebinding() {
    // `ssh -L 9000:127.0.0.1:<ui port> host`: the browser connected to
    // 127.0.0.1:9000 and says so in Host and Origin.
    let rig = Rig::start().await;
    let other = if rig.ui_port == 9000 { 9001 } else { 9000 };
    let fwd = format!("127.0.0.1:{other}");
    let fwd_origin = format!("http://{fwd}");
    let page = rig.raw("GET", "/", &[("Host", &fwd)], "").await;
    assert_eq!(page.status, 200, "{}", page.head);
    // Signing in and the API, as the page does it from its forwarded origin.
    let a = rig
        .raw(
            "POST",
            "/api/session",
            &[("Host", &fwd), ("Origin", &fwd_origin)],
            &json!({ "token": rig.token }).to_string(),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let auth = format!("Bearer {}", a.json()["session"].as_str().unwrap());
    let state = rig
        .raw(
            "GET",
            "/api/state",
            &[
                ("Host", &fwd),
                ("Origin", &fwd_origin),
                ("Authorization", &auth),
            ],
            "",
        )
        .await;
    assert_eq!(state.status, 200, "{}", state.body);
    // The Origin must match the Host actually sent: the server's own port
    // is not the page's origin here, and a foreign name never is.
    for origin in [
        format!("http://127.0.0.1:{}", rig.ui_port),
        format!("http://evil.example:{other}"),
        "null".to_owned(),
    ] {
        let a = rig
            .raw(
                "GET",
                "/api/state",
                &[
                    ("Host", &fwd),
                    ("Origin", &origin),
                    ("Authorization", &auth),
                ],
                "",
            )
            .await;
        assert_eq!(a.status, 403, "{origin}");
    }
    // A rebound name is refused on any port, with its own origin too.
    for port in [other, rig.ui_port] {
        let h = format!("evil.example:{port}");
        let o = format!("http://{h}");
        let a = rig
            .raw(
                "GET",
                "/api/state",
                &[("Host", &h), ("Origin", &o), ("Authorization", &auth)],
                "",
            )
            .await;
        assert_eq!(a.status, 421, "{h}");
        assert_eq!(rig.raw("GET", "/", &[("Host", &h)], "").await.status, 421);
    }
    rig.stop().await;
}

#[tokio::test]
async fn the_page_is_served_with_a_strict_policy() {
    let rig = Rig::start().await;
    let a = rig.raw("GET", "/", &[], "").await;
    let csp = a.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    let nonce = csp
        .split("'nonce-")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap();
    assert!(a.body.contains(nonce), "the page gets its nonce");
    assert_eq!(
        a.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );
    let b = rig.raw("GET", "/", &[], "").await;
    assert_ne!(
        b.header("content-security-policy"),
        Some(csp),
        "a fresh nonce per page"
    );
    rig.stop().await;
}

#[tokio::test]
async fn files_are_confined_to_the_workspace() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    std::os::unix::fs::symlink("/etc", rig.ws.join("etc-link")).unwrap();
    let a = rig.get(&auth, "/api/file?path=src/a.py").await;
    assert_eq!(a.json()["text"], "one\ntwo\nthree\n");
    assert_eq!(
        a.json()["path"],
        rig.ws.join("src/a.py").display().to_string()
    );
    for p in [
        "../../etc/passwd",
        "/etc/passwd",
        "etc-link/passwd",
        "src/%2e%2e/%2e%2e/etc/passwd",
    ] {
        let a = rig.get(&auth, &format!("/api/file?path={p}")).await;
        assert_eq!(a.status, 403, "{p}: {}", a.body);
        assert!(!a.body.contains("root:"), "{p}");
    }
    let tree = rig
        .get(&auth, &format!("/api/tree?path={}", rig.ws.display()))
        .await
        .json();
    let names: Vec<&str> = tree["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"src") && !names.contains(&"build"),
        "{names:?}"
    );
    let roots = rig.get(&auth, "/api/tree").await.json();
    assert_eq!(roots["entries"][0]["path"], rig.ws.display().to_string());
    rig.stop().await;
}

#[tokio::test]
async fn per_hunk_review_reaches_claude_with_exactly_the_accepted_hunks() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let file = rig.ws.join("three.txt");
    std::fs::write(&file, "a\nb\nc\nd\ne\nf\ng\n").unwrap();
    let call = open_diff(
        rig.tool_client().await,
        &file,
        "A\nb\nc\nD\ne\nf\nG\n",
        "tab-3",
    );
    let r = rig.review_for(&auth, &file).await;
    assert_eq!(r["hunks"].as_array().unwrap().len(), 3);
    assert_eq!(r["original"], "a\nb\nc\nd\ne\nf\ng\n");
    let id = r["id"].as_u64().unwrap();
    let mut v = r["version"].as_u64().unwrap();
    for (index, decision) in [(0, "accept"), (1, "reject")] {
        let a = rig
            .post(
                &auth,
                &format!("/api/reviews/{id}/hunks/{index}"),
                json!({"decision": decision, "version": v}),
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.body);
        v = a.json()["version"].as_u64().unwrap();
    }
    // A stale version is refused with the current review.
    let stale = rig
        .post(
            &auth,
            &format!("/api/reviews/{id}/hunks/1"),
            json!({"decision": "accept", "version": 1}),
        )
        .await;
    assert_eq!(stale.status, 409);
    assert_eq!(stale.json()["review"]["version"], v);
    // Hunk 3 is now the second one left.
    let last = rig
        .post(
            &auth,
            &format!("/api/reviews/{id}/hunks/1"),
            json!({"decision": "accept", "version": v}),
        )
        .await;
    assert_eq!(last.json()["status"], "accepted");
    let result = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert_eq!(texts(&result), vec!["FILE_SAVED", "A\nb\nc\nd\ne\nf\nG\n"]);
    rig.stop().await;
}

/// Issue 19, item 1: a `replace_all` made seven identical hunks, and
/// accepting hunk 2 also accepted hunks 3 and 5 (the marks were content
/// hashes); after rejecting the rest, three changes landed. Through the
/// page's API, Claude now gets exactly the one change accepted.
#[tokio::test]
async fn accepting_one_of_seven_identical_hunks_writes_that_one_only() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let file = rig.ws.join("db.rs");
    let original: String = (0..7)
        .map(|i| format!("fn f{i}() {{\n    let g = m.lock().unwrap();\n}}\n"))
        .collect();
    std::fs::write(&file, &original).unwrap();
    let proposed = original.replace(".lock().unwrap()", ".lock().expect(\"poisoned\")");
    let call = open_diff(rig.tool_client().await, &file, &proposed, "tab-db");
    let r = rig.review_for(&auth, &file).await;
    assert_eq!(r["hunks"].as_array().unwrap().len(), 7);
    let id = r["id"].as_u64().unwrap();
    let mut v = r["version"].as_u64().unwrap();
    let a = rig
        .post(
            &auth,
            &format!("/api/reviews/{id}/hunks/1"),
            json!({"decision": "accept", "version": v}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    // The answer says what the decision changed, not the whole review.
    assert_eq!(a.json()["decision"], "accept");
    assert_eq!(a.json()["index"], 1);
    assert_eq!(a.json()["hunk"]["oldStart"], 4, "f1's line");
    assert!(a.json().get("working").is_none(), "{}", a.body);
    let now = rig.get(&auth, &format!("/api/reviews/{id}")).await.json();
    assert_eq!(now["version"], a.json()["version"]);
    let accepted: Vec<bool> = now["hunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["accepted"].as_bool().unwrap())
        .collect();
    assert_eq!(accepted, [false, true, false, false, false, false, false]);
    v = a.json()["version"].as_u64().unwrap();
    // Reject every other hunk, always the first undecided one.
    loop {
        let r = rig.review_for(&auth, &file).await;
        if r["status"] != "pending" {
            break;
        }
        let Some(next) = r["hunks"]
            .as_array()
            .unwrap()
            .iter()
            .position(|h| h["accepted"] == false)
        else {
            break;
        };
        let a = rig
            .post(
                &auth,
                &format!("/api/reviews/{id}/hunks/{next}"),
                json!({"decision": "reject", "version": v}),
            )
            .await;
        assert_eq!(a.status, 200, "{}", a.body);
        v = a.json()["version"].as_u64().unwrap();
        if a.json()["status"] != "pending" {
            break;
        }
    }
    let result = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    let texts = texts(&result);
    assert_eq!(texts[0], "FILE_SAVED");
    assert_eq!(texts[1].matches("expect").count(), 1, "{}", texts[1]);
    assert!(
        texts[1].contains("fn f1() {\n    let g = m.lock().expect"),
        "{}",
        texts[1]
    );
    rig.stop().await;
}

/// The page sends its right side with Accept file when it holds edits not
/// saved yet (a keystroke made while the last one was being saved); the
/// server ignored that `text` and accepted the text before them.
#[tokio::test]
async fn regression_accept_with_the_pages_unsaved_text_accepts_that_text() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let file = rig.ws.join("src/a.py");
    let call = open_diff(rig.tool_client().await, &file, "one\nTWO\nthree\n", "tab");
    let r = rig.review_for(&auth, &file).await;
    let id = r["id"].as_u64().unwrap();
    let a = rig
        .post(
            &auth,
            &format!("/api/reviews/{id}/accept"),
            json!({"version": r["version"], "text": "one\nTWO, typed last\nthree\n"}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let result = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert_eq!(
        texts(&result),
        vec!["FILE_SAVED", "one\nTWO, typed last\nthree\n"]
    );
    rig.stop().await;
}

#[tokio::test]
async fn edit_then_accept_reject_and_closing_by_claude() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let file = rig.ws.join("src/a.py");
    // Edit the proposal, then accept.
    let call = open_diff(
        rig.tool_client().await,
        &file,
        "one\nTWO\nthree\n",
        "tab-edit",
    );
    let r = rig.review_for(&auth, &file).await;
    let id = r["id"].as_u64().unwrap();
    let edited = rig
        .post(
            &auth,
            &format!("/api/reviews/{id}/text"),
            json!({"text": "one\nTWO (edited)\nthree\n", "version": r["version"]}),
        )
        .await;
    assert_eq!(edited.status, 200);
    let v = edited.json()["version"].clone();
    rig.post(
        &auth,
        &format!("/api/reviews/{id}/accept"),
        json!({"version": v}),
    )
    .await;
    let result = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert_eq!(
        texts(&result),
        vec!["FILE_SAVED", "one\nTWO (edited)\nthree\n"]
    );

    // Reject.
    let mut tools = rig.tool_client().await;
    tools
        .call_tool("close_tab", json!({"tab_name": "tab-edit"}), Some(WAIT))
        .await
        .unwrap();
    let call = open_diff(rig.tool_client().await, &file, "zzz\n", "tab-reject");
    let r = rig.review_for(&auth, &file).await;
    let a = rig
        .post(
            &auth,
            &format!("/api/reviews/{}/reject", r["id"]),
            json!({}),
        )
        .await;
    assert_eq!(a.json()["status"], "rejected");
    let result = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert_eq!(texts(&result)[0], "DIFF_REJECTED");

    // Claude closes a pending review itself: it leaves the state, with a note.
    tools
        .call_tool("close_tab", json!({"tab_name": "tab-reject"}), Some(WAIT))
        .await
        .unwrap();
    let call = open_diff(rig.tool_client().await, &file, "yyy\n", "tab-closed");
    let r = rig.review_for(&auth, &file).await;
    tools
        .call_tool("close_tab", json!({"tab_name": "tab-closed"}), Some(WAIT))
        .await
        .unwrap();
    let result = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert_eq!(texts(&result)[0], "DIFF_REJECTED");
    let state = rig.get(&auth, "/api/state").await.json();
    assert!(state["reviews"].as_array().unwrap().is_empty(), "{state}");
    let closed = state["activity"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "closed" && e["review"] == r["id"])
        .expect("the close is in the activity");
    assert_eq!(closed["reason"], "claudeClosed");
    assert!(closed["note"]
        .as_str()
        .unwrap()
        .contains("answered in the terminal"));
    rig.stop().await;
}

#[tokio::test]
async fn selection_tabs_and_mentions_reach_claude_with_zero_based_positions() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let mut claude = rig.claude().await;
    let file = rig.ws.join("src/a.py").display().to_string();
    let sel = json!({"path": "src/a.py", "text": "two\nth",
        "selection": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 2}}});
    assert_eq!(rig.post(&auth, "/api/selection", sel).await.status, 204);
    let n = loop {
        let n = claude
            .next_notification(WAIT)
            .await
            .unwrap()
            .expect("a notification");
        if n.method == "selection_changed" {
            break n;
        }
    };
    let p = n.params_value().unwrap();
    assert_eq!(p["filePath"], file);
    assert_eq!(p["text"], "two\nth");
    assert_eq!(p["selection"]["start"], json!({"line": 1, "character": 0}));
    assert_eq!(p["selection"]["end"], json!({"line": 2, "character": 2}));
    assert_eq!(
        rig.post(
            &auth,
            "/api/mention",
            json!({"path": file, "lineStart": 0, "lineEnd": 1})
        )
        .await
        .status,
        204
    );
    let n = loop {
        let n = claude
            .next_notification(WAIT)
            .await
            .unwrap()
            .expect("a notification");
        if n.method == "at_mentioned" {
            break n;
        }
    };
    assert_eq!(
        n.params_value().unwrap(),
        json!({"filePath": file, "lineStart": 0, "lineEnd": 1})
    );
    assert_eq!(
        rig.post(&auth, "/api/tabs", json!({"open": [file], "active": file}))
            .await
            .status,
        204
    );
    let editors = claude
        .call_tool("getOpenEditors", json!({}), Some(WAIT))
        .await
        .unwrap();
    let listed: Value = serde_json::from_str(editors.first_text().unwrap()).unwrap();
    assert_eq!(listed["tabs"][0]["isActive"], true, "{listed}");
    // A selection outside the workspace is refused, not sent.
    let out = json!({"path": "/etc/passwd", "text": "",
        "selection": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}});
    assert_eq!(rig.post(&auth, "/api/selection", out).await.status, 403);
    rig.stop().await;
}

#[tokio::test]
async fn the_event_stream_starts_with_a_snapshot_and_follows_reviews() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let mut s = TcpStream::connect(("127.0.0.1", rig.ui_port))
        .await
        .unwrap();
    let req = format!(
        "GET /api/events HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\n\r\n",
        rig.host()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    read_until(&mut s, &mut buf, "\"type\":\"snapshot\"").await;
    assert!(String::from_utf8_lossy(&buf).contains("text/event-stream"));
    let file = rig.ws.join("new.txt");
    let _call = open_diff(rig.tool_client().await, &file, "fresh\n", "tab-new");
    read_until(&mut s, &mut buf, "\"isNewFile\":true").await;
    rig.stop().await;
}

/// Reads from `s` into `buf` until it holds `want` (bounded).
async fn read_until(s: &mut TcpStream, buf: &mut Vec<u8>, want: &str) {
    let mut chunk = [0u8; 65536];
    let found = tokio::time::timeout(WAIT, async {
        while !String::from_utf8_lossy(buf).contains(want) {
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the stream ended");
            buf.extend_from_slice(&chunk[..n]);
        }
    })
    .await;
    assert!(
        found.is_ok(),
        "{want} did not arrive: {}",
        String::from_utf8_lossy(buf)
    );
}

#[tokio::test]
async fn the_page_shows_the_tools_server_and_sets_when_it_asks() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let state = rig.get(&auth, "/api/state").await.json();
    let tools = &state["tools"];
    assert_eq!(tools["url"], rig.tools.url.as_str(), "{state}");
    assert_eq!(tools["token"], rig.tools.token.as_str());
    assert_eq!(tools["approvalMode"], "write-only");
    let add = tools["addCommand"].as_str().unwrap();
    assert!(
        add.starts_with("claude mcp add --transport http ccbridge "),
        "{add}"
    );
    assert!(
        add.contains(&rig.tools.url) && add.contains(&rig.tools.token),
        "{add}"
    );
    // The lock file says where the tools are too.
    let lock = std::fs::read(rig.engine.lock_path().unwrap()).unwrap();
    let lock = ccbridge_protocol::lockfile::LockFile::parse(&lock).unwrap();
    assert_eq!(lock.tools.as_ref().map(|t| &t.url), Some(&rig.tools.url));

    // Not a mode: refused, nothing changed.
    let a = rig
        .post(
            &auth,
            "/api/tools/approval-mode",
            json!({"mode": "sometimes"}),
        )
        .await;
    assert!((400..500).contains(&a.status), "{}", a.head);
    let a = rig
        .post(&auth, "/api/tools/approval-mode", json!({"mode": "always"}))
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["approvalMode"], "always");

    // `always` asks before a read; denied in the page, the read fails.
    let read = {
        let e = rig.tools.clone();
        tokio::spawn(async move { mcp_call(&e, "read_file", json!({"path": "src/a.py"})).await })
    };
    let waiting = approvals(&rig, &auth, 1).await;
    assert_eq!(waiting[0]["tool"], "read_file", "{waiting:?}");
    let id = waiting[0]["id"].as_u64().unwrap();
    let a = rig
        .post(
            &auth,
            &format!("/api/approvals/{id}"),
            json!({"allow": false}),
        )
        .await;
    assert_eq!(a.status, 204, "{}", a.body);
    let answer = tokio::time::timeout(WAIT, read).await.unwrap().unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        !answer.to_string().contains("one"),
        "nothing was read: {answer}"
    );

    // Back to write-only: reads are not asked about.
    let a = rig
        .post(
            &auth,
            "/api/tools/approval-mode",
            json!({"mode": "write-only"}),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let answer = mcp_call(&rig.tools, "read_file", json!({"path": "src/a.py"})).await;
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("1 | one"),
        "{answer}"
    );
    let log = rig.get(&auth, "/api/state").await.json()["activity"].to_string();
    assert!(
        log.contains("\"kind\":\"approval\"") && log.contains("\"allowed\":false"),
        "{log}"
    );
    rig.stop().await;
}

#[tokio::test]
async fn an_approval_is_answered_once_and_a_cancelled_one_leaves_the_page() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let ask = |id: u64| Approval::command(RunId(id), "make".into(), rig.ws.display().to_string());
    let engine = rig.engine.clone();
    let first = ask(engine.next_run().0);
    let id = first.id.0;
    let asked = tokio::spawn(async move { engine.approve(first).await });
    let waiting = approvals(&rig, &auth, 1).await;
    assert_eq!(waiting[0]["command"], "make");
    assert_eq!(waiting[0]["cwd"], rig.ws.display().to_string());
    let a = rig
        .post(
            &auth,
            &format!("/api/approvals/{id}"),
            json!({"allow": true}),
        )
        .await;
    assert_eq!(a.status, 204, "{}", a.body);
    assert!(tokio::time::timeout(WAIT, asked)
        .await
        .unwrap()
        .unwrap()
        .unwrap());
    // Answered: a second answer (another tab, a replay) finds nothing.
    let a = rig
        .post(
            &auth,
            &format!("/api/approvals/{id}"),
            json!({"allow": false}),
        )
        .await;
    assert_eq!(a.status, 404, "{}", a.body);
    approvals(&rig, &auth, 0).await;

    // The caller gives up (the MCP call was cancelled): the question goes.
    let engine = rig.engine.clone();
    let second = ask(engine.next_run().0);
    let id = second.id.0;
    let asked = tokio::spawn(async move { engine.approve(second).await });
    approvals(&rig, &auth, 1).await;
    asked.abort();
    approvals(&rig, &auth, 0).await;
    let a = rig
        .post(
            &auth,
            &format!("/api/approvals/{id}"),
            json!({"allow": true}),
        )
        .await;
    assert_eq!(a.status, 404, "{}", a.body);
    rig.stop().await;
}

#[tokio::test]
async fn a_reloaded_page_gets_the_runs_with_their_output_and_exit() {
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let id = rig.engine.next_run();
    rig.engine.command_event(CommandEvent::started(
        id,
        "cargo test".into(),
        rig.ws.display().to_string(),
    ));
    for part in ["running 2 tests\n", "\u{1b}[32mok\u{1b}[0m\n"] {
        rig.engine.command_event(CommandEvent::Output {
            id,
            data: part.into(),
        });
    }
    rig.engine.command_event(CommandEvent::Exited {
        id,
        exit_code: Some(101),
        timed_out: false,
        cancelled: false,
    });
    let state = rig.get(&auth, "/api/state").await.json();
    let run = &state["runs"][0];
    assert_eq!(run["command"], "cargo test", "{state}");
    assert_eq!(run["output"], "running 2 tests\n\u{1b}[32mok\u{1b}[0m\n");
    assert_eq!(run["exit"]["exitCode"], 101);
    assert_eq!(run["truncated"], false);
    rig.stop().await;
}

/// Checklist item 25 over HTTP (`ccbridge_testkit::mutations`): 2,000
/// mutations of the page's signed-in requests, paths into a canary folder
/// outside the workspace among the values put in. Each is answered or
/// closed within 10 s and none with the canary's text, the canary is as it
/// was, and the page still serves its user afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn item_25_mutated_requests_are_answered_and_reach_nothing_outside() {
    use ccbridge_testkit::mutations::{self, Ended, Request};
    let rig = Rig::start().await;
    let auth = rig.sign_in().await;
    let session = auth.strip_prefix("Bearer ").unwrap().to_owned();
    let outside = tempfile::tempdir().unwrap();
    let canary = outside.path().join("passwd");
    std::fs::write(&canary, "root:x:0:0\n").unwrap();
    let port = rig.ui_port;
    let file = rig.ws.join("src/a.py").display().to_string();
    let post = |path: &str, body: Value| Request::post(port, &session, path, "", &body);
    let requests = vec![
        Request::get(port, &session, "/api/state"),
        Request::get(port, &session, "/api/tree"),
        Request::get(port, &session, "/api/file?path=src/a.py"),
        Request::get(port, &session, "/api/changes"),
        post(
            "/api/selection",
            json!({"path": "src/a.py", "text": "two",
                "selection": {"start": {"line": 1, "character": 0},
                              "end": {"line": 1, "character": 3}}}),
        ),
        post("/api/tabs", json!({"open": [file], "active": file})),
        post(
            "/api/mention",
            json!({"path": file, "lineStart": 0, "lineEnd": 1}),
        ),
        post(
            "/api/changes/revert",
            json!({"path": "src/a.py", "key": "0", "version": "1"}),
        ),
    ];
    let aims = mutations::paths_to(&canary);
    let ended = tokio::task::spawn_blocking(move || {
        mutations::attack(&mutations::Attack {
            port,
            requests: &requests,
            aims: &aims,
            secret: b"root:x:0:0",
            count: 2000,
            seed: 0x9a6e,
        })
    })
    .await
    .unwrap();
    let served: usize = [200, 204]
        .iter()
        .map(|s| ended.get(&Ended::Status(*s)).copied().unwrap_or(0))
        .sum();
    assert!(
        served >= 100,
        "only {served} of 2,000 were served: {ended:?}"
    );
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "root:x:0:0\n");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    assert_eq!(rig.get(&auth, "/api/state").await.status, 200);
    rig.stop().await;
}
