//! Security checklist items 8 and 12 from a real browser: a web page can
//! neither reach the IDE server nor call the workspace tools.
//!
//! A real browser (Debian Chromium driven by playwright-core) loads a page
//! from `http://evil.example` (mapped to 127.0.0.1) that tries to open
//! WebSockets to the real `ccbridge serve --stdio` port — plainly, with the
//! token in the query string, and with the token as a subprotocol (as if
//! the page had stolen it) — and to 20 neighbouring ports. Every attempt on
//! our port must fail, the server must say it refused a browser origin, and
//! a legitimate client must still get in afterwards. A second page fires
//! at the workspace tools server what a page can send without CORS (no-cors
//! `text/plain` posts, a form post, the token in the URL) and, as if it had
//! stolen the token, a CORS request with it: no file may be written.

use ccbridge_protocol::lockfile::LockFile;
use ccbridge_testkit::{wait_lock_file, Confined};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ccbridge");

fn e2e_modules() -> PathBuf {
    let dir = ccbridge_testkit::e2e_dir().join("node_modules");
    assert!(
        dir.join("playwright-core").is_dir(),
        "playwright-core is missing from {}: run scripts/test, which installs it",
        dir.display()
    );
    dir
}

fn chromium() -> PathBuf {
    let p = PathBuf::from(std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()));
    assert!(
        p.exists(),
        "Chromium is missing at {}: run scripts/test, which installs Debian's chromium",
        p.display()
    );
    p
}

/// Loads `page` from `http://evil.example` in headless Chromium and returns
/// what it observed (the JSON it writes into `#done`).
fn attack_from_a_browser(page: String) -> serde_json::Value {
    let http = serve_page(page);
    let out = Command::new("node")
        .arg(ccbridge_testkit::claude::workspace_root().join("tests/e2e/cswsh.mjs"))
        .arg(format!("http://evil.example:{http}/attack.html"))
        .env("CCBRIDGE_E2E_MODULES", e2e_modules())
        .env("CHROMIUM", chromium())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the browser run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Serves `page` to every request until the listener is dropped.
fn serve_page(page: String) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut r = BufReader::new(&s);
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let mut s = &s;
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    port
}

const ATTACK: &str = r#"<!doctype html><meta charset="utf-8"><body><script>
const target = __TARGET__, token = __TOKEN__, ports = __PORTS__;
const attempts = [
  ["plain", `ws://127.0.0.1:${target}/`, ["mcp"]],
  ["query", `ws://127.0.0.1:${target}/?token=${token}&authToken=${token}`, ["mcp"]],
  ["subprotocol", `ws://127.0.0.1:${target}/`, ["mcp", token]],
  ["localhost", `ws://localhost:${target}/`, ["mcp"]],
];
for (const p of ports) attempts.push([`port${p}`, `ws://127.0.0.1:${p}/`, ["mcp"]]);
const results = {};
let left = attempts.length;
const finish = () => { if (--left === 0) {
  const d = document.createElement("pre"); d.id = "done";
  d.textContent = JSON.stringify(results); document.body.appendChild(d); } };
for (const [name, url, protocols] of attempts) {
  let settled = false;
  const settle = (v) => { if (!settled) { settled = true; results[name] = v; finish(); } };
  let ws;
  try { ws = new WebSocket(url, protocols); } catch (e) { settle("throw"); continue; }
  const timer = setTimeout(() => { settle("timeout"); try { ws.close(); } catch (e) {} }, 8000);
  ws.onopen = () => { clearTimeout(timer); settle("open"); ws.close(); };
  ws.onerror = () => { clearTimeout(timer); settle("error"); };
  ws.onclose = (e) => { clearTimeout(timer); settle("close:" + e.code); };
}
</script>"#;

#[test]
fn a_web_page_cannot_open_the_ide_websocket() {
    let cfg = tempfile::tempdir().unwrap();
    let log = cfg.path().join("ccbridge.log");
    let mut child = Command::new(BIN)
        .args(["serve", "--stdio", "--ide-name", "CswshTest", "--log-file"])
        .arg(&log)
        .confined_to(cfg.path())
        .env("CCBRIDGE_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock_path =
        wait_lock_file(&cfg.path().join("ide"), Duration::from_secs(10)).expect("a lock file");
    let lock = LockFile::parse(&std::fs::read(&lock_path).unwrap()).unwrap();
    let port =
        LockFile::port_from_file_name(lock_path.file_name().unwrap().to_str().unwrap()).unwrap();
    let token = lock.auth_token.clone().unwrap();

    let neighbours: Vec<u16> = (1..=10)
        .flat_map(|d| [port.saturating_sub(d), port.saturating_add(d)])
        .collect();
    let page = ATTACK
        .replace("__TARGET__", &port.to_string())
        .replace("__TOKEN__", &format!("{token:?}"))
        .replace("__PORTS__", &format!("{neighbours:?}"));
    let results = attack_from_a_browser(page);
    for attempt in ["plain", "query", "subprotocol", "localhost"] {
        let r = results[attempt].as_str().unwrap_or("missing");
        assert!(
            r != "open" && r != "missing",
            "{attempt}: the page reached the IDE server ({r}); all results: {results}"
        );
    }
    assert_eq!(
        results.as_object().unwrap().len(),
        4 + neighbours.len(),
        "{results}"
    );

    // The server still serves a real client.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut client = ccbridge_client::ws_client::IdeClient::connect(
            port,
            Some(&token),
            Duration::from_secs(5),
        )
        .await
        .expect("a real client still connects after the attack");
        client.list_tools().await.expect("and is served");
    });
    assert!(child.try_wait().unwrap().is_none(), "the server survived");
    drop(child.stdin.take());
    let end = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < end, "ccbridge did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!lock_path.exists());
    // And it said why, once, then summarised the rest (issue 11, defect 6).
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        logged.matches("browser origins are refused").count(),
        2,
        "the first refusal and the summary's last reason:\n{logged}"
    );
    assert!(
        logged.contains("more refused upgrades"),
        "the others are counted:\n{logged}"
    );
    assert!(!logged.contains(&token), "the token leaked into the log");
}

const TOOLS_ATTACK: &str = r#"<!doctype html><meta charset="utf-8"><body>
<iframe name="sink" style="display:none"></iframe><script>
const url = __URL__, token = __TOKEN__;
const call = (path) => JSON.stringify({jsonrpc: "2.0", id: 1, method: "tools/call",
  params: {name: "write_file", arguments: {path, content: "pwned\n"}}});
const init = JSON.stringify({jsonrpc: "2.0", id: 0, method: "initialize", params: {
  protocolVersion: "2025-03-26", capabilities: {}, clientInfo: {name: "evil", version: "1"}}});
const simple = (body, at = url) => fetch(at, {method: "POST", mode: "no-cors",
  headers: {"Content-Type": "text/plain"}, body}).then(() => "opaque");
const attempts = {
  "no-cors call": () => simple(call("pwned-simple.txt")),
  "no-cors initialize": () => simple(init),
  "no-cors token in the url": () =>
    simple(call("pwned-query.txt"), `${url}?token=${token}&access_token=${token}&auth=${token}`),
  "cors with the stolen token": () => fetch(url, {method: "POST", headers: {
      "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
      "Authorization": `Bearer ${token}`}, body: call("pwned-cors.txt")}).then((r) => r.text()),
  "cors read": () => fetch(url).then((r) => r.text()),
  "form post": () => new Promise((done) => {
    const f = document.createElement("form");
    f.method = "POST"; f.action = url; f.enctype = "text/plain"; f.target = "sink";
    const i = document.createElement("input");
    // text/plain encodes `name=value`: the JSON is split around an `=`.
    i.name = call("pwned-form.txt").slice(0, -1) + ', "x": "';
    i.value = '"}';
    f.appendChild(i); document.body.appendChild(f);
    document.querySelector("iframe").onload = () => done("submitted");
    setTimeout(() => done("timeout"), 8000);
    f.submit();
  }),
};
const results = {};
Promise.all(Object.entries(attempts).map(([name, go]) =>
  go().then((v) => { results[name] = typeof v === "string" && v.length < 40 ? v : "read"; },
            () => { results[name] = "error"; })))
  .then(() => { const d = document.createElement("pre"); d.id = "done";
    d.textContent = JSON.stringify(results); document.body.appendChild(d); });
</script>"#;

#[test]
fn item_12_a_web_page_cannot_call_the_workspace_tools() {
    let home = tempfile::tempdir().unwrap();
    let ws = home.path().join("project");
    std::fs::create_dir(&ws).unwrap();
    // Nobody reviews in `never`: a call that got through would write.
    let mut child = Command::new(BIN)
        .args(["serve", "--approval-mode", "never"])
        .current_dir(&ws)
        .confined_to(home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock_path =
        wait_lock_file(&home.path().join("ide"), Duration::from_secs(10)).expect("a lock file");
    let lock = LockFile::parse(&std::fs::read(&lock_path).unwrap()).unwrap();
    let tools = lock.tools.expect("the workspace tools run");
    let page = TOOLS_ATTACK
        .replace("__URL__", &format!("{:?}", tools.url))
        .replace("__TOKEN__", &format!("{:?}", tools.token));
    let results = attack_from_a_browser(page);
    assert_eq!(results.as_object().unwrap().len(), 6, "{results}");
    // What needs CORS fails in the page: no answer is readable.
    for read in ["cors with the stolen token", "cors read"] {
        assert_eq!(results[read], "error", "{read}: {results}");
    }
    let written: Vec<_> = std::fs::read_dir(&ws)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        written.is_empty(),
        "the page wrote {written:?}; results: {results}"
    );
    // The tools still serve their real client.
    let port = ccbridge_testkit::http::url_port(&tools.url);
    assert!(
        ccbridge_testkit::http::mcp_server_answers(port, &tools.token, Duration::from_secs(5)),
        "the tools server stopped serving"
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    assert!(child.wait().unwrap().success());
    assert!(!lock_path.exists());
}
