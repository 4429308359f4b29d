//! The tools server driven by third-party MCP clients, pinned in
//! `tests/e2e/package.json` and installed by `scripts/test` with the Node
//! 22 they need (npm's `node` package):
//!
//! - `@modelcontextprotocol/inspector-cli` lists the tools and calls every
//!   one with the bearer header;
//! - `@modelcontextprotocol/conformance` runs `server-initialize`, `ping`,
//!   `tools-list` and `dns-rebinding-protection`. It sends no
//!   `Authorization` header, so it talks to the server through
//!   `tests/e2e/bearer-proxy.mjs`, which adds the header and forwards Host
//!   and Origin untouched (the DNS-rebinding checks still reach the guard).
//!
//! Without the packages every test fails with the instruction to run
//! `scripts/test`; none is skipped.

use crate::support::{settings, start_with, Rig, TOKEN};
use ccbridge_mcp::{ApprovalMode, Settings};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn e2e() -> PathBuf {
    let dir = ccbridge_testkit::e2e_dir();
    for needed in ["node", "conformance"] {
        assert!(
            dir.join("node_modules/.bin").join(needed).exists(),
            "{needed} is not installed in {}: run scripts/test, which installs tests/e2e/package.json there",
            dir.display()
        );
    }
    dir
}

/// Node 22 from the e2e packages.
fn node() -> PathBuf {
    e2e().join("node_modules/.bin/node")
}

async fn rig() -> Rig {
    start_with(Settings {
        approval: ApprovalMode::Never,
        ..settings()
    })
    .await
}

/// Runs a command to its end off the async threads; (success, stdout+stderr).
async fn run(mut cmd: Command) -> (bool, String) {
    tokio::task::spawn_blocking(move || {
        let out = cmd.output().expect("run the client");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    })
    .await
    .unwrap()
}

/// `inspector-cli <url> --transport http --header … <args>`. Its CLI looks
/// for its own package.json relative to the working directory, hence the
/// directory it runs in.
async fn inspector(rig: &Rig, args: &[&str]) -> Value {
    let build = e2e().join("node_modules/@modelcontextprotocol/inspector-cli/build");
    let mut cmd = Command::new(node());
    cmd.current_dir(&build)
        .arg("index.js")
        .arg(format!("http://127.0.0.1:{}/mcp", rig.port))
        .args(["--transport", "http"])
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args(args);
    let (ok, text) = run(cmd).await;
    assert!(ok, "inspector-cli {args:?} failed:\n{text}");
    let json = &text[text.find('{').unwrap_or_else(|| panic!("{text}"))..];
    let end = json.rfind('}').unwrap() + 1;
    serde_json::from_str(&json[..end]).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspector_cli_lists_and_calls_every_tool() {
    let rig = rig().await;
    let list = inspector(&rig, &["--method", "tools/list"]).await;
    let mut names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "apply_diff",
            "execute_command",
            "get_diagnostics",
            "list_files",
            "read_file",
            "search_files",
            "write_file"
        ]
    );
    let diff = "<<<<<<< SEARCH\nprint('bye')\n=======\nprint('ciao')\n>>>>>>> REPLACE\n";
    let calls: [(&str, Vec<String>, &str); 7] = [
        ("read_file", vec!["path=hello.py".into()], "1 | print('hi')"),
        ("list_files", vec!["path=.".into()], "hello.py"),
        (
            "search_files",
            vec!["path=.".into(), "regex=bye".into()],
            "2:print('bye')",
        ),
        (
            "write_file",
            vec![
                "path=new.txt".into(),
                "content=made by the inspector".into(),
            ],
            "\"created\"",
        ),
        (
            "apply_diff",
            vec!["path=hello.py".into(), format!("diff={diff}")],
            "\"modified\"",
        ),
        (
            "execute_command",
            vec!["command=echo inspected".into()],
            "inspected",
        ),
        ("get_diagnostics", vec![], "No diagnostics"),
    ];
    for (tool, args, expect) in calls {
        let mut argv = vec!["--method", "tools/call", "--tool-name", tool];
        if !args.is_empty() {
            argv.push("--tool-arg");
            argv.extend(args.iter().map(String::as_str));
        }
        let r = inspector(&rig, &argv).await;
        assert_eq!(r["isError"], false, "{tool}: {r}");
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(expect), "{tool}: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(rig.path("new.txt")).unwrap(),
        "made by the inspector"
    );
    assert_eq!(
        std::fs::read_to_string(rig.path("hello.py")).unwrap(),
        "print('hi')\nprint('ciao')\n"
    );
    rig.stop().await;
}

/// The bearer proxy in front of `port`; killed on drop.
struct Proxy {
    child: std::process::Child,
    port: u16,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn proxy(port: u16) -> Proxy {
    let script = ccbridge_testkit::claude::workspace_root().join("tests/e2e/bearer-proxy.mjs");
    let mut child = Command::new(node())
        .arg(script)
        .arg(port.to_string())
        .arg(TOKEN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the proxy");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the proxy said {line:?}"));
    Proxy { child, port }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_runner_passes_its_server_scenarios() {
    let rig = rig().await;
    let proxy = proxy(rig.port);
    let url = format!("http://127.0.0.1:{}/mcp", proxy.port);
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "dns-rebinding-protection",
    ] {
        let mut cmd = Command::new(node());
        cmd.arg(e2e().join("node_modules/.bin/conformance"))
            .args(["server", "--url", &url, "--scenario", scenario])
            .env("NO_COLOR", "1");
        let (_, text) = run(cmd).await;
        assert!(
            text.contains(", 0 failed") && !text.contains("Passed: 0/"),
            "conformance {scenario}:\n{text}"
        );
    }
    drop(proxy);
    rig.stop().await;
}
