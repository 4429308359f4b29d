//! `vscode-bench`: the VS Code extension's costs, in a real VS Code
//! (code-server) driven by Chromium, as a Markdown table. Progress goes to
//! stderr.
//!
//! ```text
//! scripts/vscode-test                           # once: code-server, Node 24, the .vsix
//! cargo build --release -p ccbridge -p ccbridge-bench
//! cargo run --release -p ccbridge-bench --bin vscode-bench
//! ```
//!
//! This process plays Claude over real WebSockets (two sessions: the
//! sidecar runs with `--multi-client`), and clicks and types in the
//! workbench through playwright-core:
//!
//! - `openDiff` → the review's tab visible in the workbench: from just before
//!   the call is written until the tab is found in the page (then the review
//!   is rejected from its title and the next one starts);
//! - keystroke → `selection_changed`: Shift+Down / Shift+Up in an editor, from
//!   just before the key is sent to the browser until the notification
//!   arrives at the WebSocket client, the sidecar's debounce at 0 (the
//!   extension itself does not debounce);
//! - the browser driver's own round trip (a no-op command), which both
//!   latencies include;
//! - window opened → lock file: from the page's navigation until the sidecar's
//!   lock file exists (workbench load, extension activation, sidecar start),
//!   beside window opened → workbench drawn;
//! - the extension host's RSS with the extension and Claude connected, beside
//!   a VS Code without it; the sidecar's RSS.

use anyhow::{bail, Context};
use ccbridge_bench::process::{find_ccbridge, find_lock, rss_kib};
use ccbridge_bench::stats::{summarize, Summary};
use ccbridge_client::discovery::read_lock;
use ccbridge_client::ws_client::IdeClient;
use ccbridge_testkit::browser::Browser;
use ccbridge_testkit::vscode::{CodeServer, CodeServerOptions};
use clap::Parser;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

const WAIT: Duration = Duration::from_secs(30);
const PAGE: &str = "bench";

#[derive(Parser)]
#[command(
    name = "vscode-bench",
    about = "Benchmarks the VS Code extension in code-server"
)]
struct Args {
    /// The ccbridge binary the extension spawns (should be a release build).
    #[arg(long, value_name = "PATH")]
    ccbridge: Option<std::path::PathBuf>,
    /// A smoke run with a tenth of the iterations (figures are rough).
    #[arg(long)]
    quick: bool,
}

/// One VS Code window, measured.
struct Window {
    browser: Browser,
    server: CodeServer,
    opened: Instant,
    workbench: Duration,
    lock: Option<Duration>,
    _dir: tempfile::TempDir,
}

fn open_window(ccbridge: &Path, with_extension: bool) -> anyhow::Result<Window> {
    let dir = tempfile::Builder::new()
        .prefix("ccbridge-vscode-bench-")
        .tempdir()?;
    let home = dir.path().join("home");
    let ws = dir.path().join("workspace");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&ws)?;
    let text: String = (1..=200).map(|i| format!("line {i}\n")).collect();
    std::fs::write(ws.join("file.txt"), text)?;
    let server = CodeServer::start(&CodeServerOptions {
        settings: json!({"ccbridge.args": ["--multi-client", "--selection-debounce-ms", "0"]}),
        install_extension: with_extension,
        ..CodeServerOptions::new(dir.path(), &home, &ws, ccbridge)
    });
    let mut browser = Browser::launch();
    browser.new_page(PAGE, "light");
    let lock_dir = home.join(".claude/ide");
    let t0 = Instant::now();
    browser.goto(PAGE, &server.url());
    browser.must(
        "waitFor",
        json!({"page": PAGE, "selector": ".monaco-workbench .part.editor", "timeout": 60_000}),
    );
    let workbench = t0.elapsed();
    let lock = if with_extension {
        loop {
            if find_lock(&lock_dir).is_some_and(|p| read_lock(&p).is_ok()) {
                break Some(t0.elapsed());
            }
            if t0.elapsed() > WAIT * 2 {
                bail!("no lock file in {}", lock_dir.display());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    } else {
        None
    };
    Ok(Window {
        browser,
        server,
        opened: t0,
        workbench,
        lock,
        _dir: dir,
    })
}

async fn connect(lock_dir: &Path) -> anyhow::Result<IdeClient> {
    let path = find_lock(lock_dir).context("no lock file")?;
    let lock = read_lock(&path)?;
    let port: u16 = path
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .context("lock file name")?;
    let token = lock.auth_token.as_deref().context("authToken")?;
    let mut c = IdeClient::connect_as(port, Some(token), WAIT, "claude-code").await?;
    c.list_tools().await?;
    c.notify("ide_connected", Some(json!({"pid": std::process::id()})))
        .await?;
    Ok(c)
}

async fn wait_selection(c: &mut IdeClient) -> anyhow::Result<()> {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match c.next_notification(left).await? {
            Some(n) if n.method == "selection_changed" => return Ok(()),
            Some(_) => continue,
            None => bail!("no selection_changed within {WAIT:?}"),
        }
    }
}

async fn drain(c: &mut IdeClient) -> anyhow::Result<()> {
    while c
        .next_notification(Duration::from_millis(5))
        .await?
        .is_some()
    {}
    Ok(())
}

/// The extension host's RSS once it has settled: read every half second
/// until two reads are within 1% (at most 30 s), as the host starts after
/// the workbench is drawn and grows while built-in extensions activate.
fn settled_host_rss(server: &CodeServer) -> anyhow::Result<u64> {
    let t0 = Instant::now();
    let mut last = 0u64;
    loop {
        let host = server
            .descendants_matching("--type=extensionHost")
            .first()
            .copied();
        if let Some(host) = host {
            let rss = rss_kib(host)?;
            if last > 0 && rss.abs_diff(last) * 100 <= last {
                return Ok(rss);
            }
            last = rss;
        }
        if t0.elapsed() > WAIT {
            return match host {
                Some(_) => Ok(last),
                None => bail!("no extension host under code-server within {WAIT:?}"),
            };
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// When process `pid` started (its /proc start time, in clock ticks).
fn started_at(pid: u32) -> anyhow::Result<std::time::SystemTime> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_comm = &stat[stat.rfind(')').context("stat")? + 2..];
    // Field 22 (starttime) is the 20th after the command's name.
    let ticks: u64 = after_comm
        .split_whitespace()
        .nth(19)
        .context("starttime")?
        .parse()?;
    let btime: u64 = std::fs::read_to_string("/proc/stat")?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())
        .context("btime")?;
    let hz: u64 = String::from_utf8(
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()?
            .stdout,
    )?
    .trim()
    .parse()?;
    Ok(std::time::UNIX_EPOCH
        + Duration::from_secs(btime)
        + Duration::from_secs_f64(ticks as f64 / hz as f64))
}

/// The extension host's start → the sidecar's start → the lock file's last
/// write, at the resolution of the kernel's clock ticks (10 ms).
fn activation(server: &CodeServer, lock_dir: &Path) -> anyhow::Result<(Duration, Duration)> {
    let host = server
        .descendants_matching("--type=extensionHost")
        .first()
        .copied()
        .context("no extension host")?;
    let sidecar = server
        .descendants_matching("serve --stdio")
        .first()
        .copied()
        .context("no sidecar")?;
    let (host, sidecar) = (started_at(host)?, started_at(sidecar)?);
    let lock = find_lock(lock_dir).context("no lock file")?;
    let written = std::fs::metadata(lock)?.modified()?;
    Ok((
        sidecar.duration_since(host).unwrap_or_default(),
        written.duration_since(sidecar).unwrap_or_default(),
    ))
}

fn ms(us: f64) -> String {
    format!("{:.1} ms", us / 1000.0)
}

fn row(name: &str, s: &Summary) {
    println!("| {name} (N={}) | p50 | {} |", s.n, ms(s.p50_us));
    println!("| | p99 | {} |", ms(s.p99_us));
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build of vscode-bench; use --release");
    }
    let exe_dir = std::env::current_exe()?
        .parent()
        .context("no exe dir")?
        .to_path_buf();
    let ccbridge = find_ccbridge(args.ccbridge.clone(), &exe_dir)?;
    let (diffs, keys) = if args.quick { (5, 20) } else { (50, 200) };
    let rt = Runtime::new()?;

    eprintln!("VS Code with the extension…");
    let mut w = open_window(&ccbridge, true)?;
    let lock_dir = w._dir.path().join("home/.claude/ide");
    let mut reviewer = rt.block_on(connect(&lock_dir))?;
    let mut selector = rt.block_on(connect(&lock_dir))?;
    let host_rss_idle = settled_host_rss(&w.server)?;
    let (host_to_sidecar, sidecar_to_lock) = activation(&w.server, &lock_dir)?;
    let file = w._dir.path().join("workspace/file.txt");

    // openDiff → the tab in the workbench.
    let proposal: String = (1..=200)
        .map(|i| {
            if i == 100 {
                "LINE 100\n".to_owned()
            } else {
                format!("line {i}\n")
            }
        })
        .collect();
    let mut open_diff = Vec::with_capacity(diffs);
    for i in 0..diffs + 3 {
        let tab = format!("✻ [Claude Code] file.txt ({i})");
        let params = json!({"old_file_path": file, "new_file_path": file,
            "new_file_contents": proposal, "tab_name": tab});
        let t0 = Instant::now();
        let call = rt.spawn(async move {
            let r = reviewer
                .call_tool_raw("openDiff", params, Some(WAIT))
                .await
                .map(|v| v.to_string());
            (reviewer, r)
        });
        w.browser.must(
            "waitFor",
            json!({"page": PAGE, "selector": r#".tabs-container .tab:has-text("Claude Code: file.txt")"#,
                   "timeout": WAIT.as_millis() as u64}),
        );
        if i >= 3 {
            open_diff.push(t0.elapsed());
        }
        w.browser.click(
            PAGE,
            r#".editor-actions [aria-label="Reject the proposal"] >> nth=0"#,
        );
        let (back, answer) = rt.block_on(call)?;
        reviewer = back;
        let answer = answer?;
        if !answer.contains("DIFF_REJECTED") {
            bail!("openDiff answered {answer}");
        }
        w.browser.wait_gone(
            PAGE,
            r#".tabs-container .tab:has-text("Claude Code: file.txt")"#,
        );
    }

    // Keystroke → selection_changed.
    rt.block_on(selector.call_tool_raw(
        "openFile",
        json!({"filePath": file, "preview": false, "startLine": 100, "endLine": 100, "makeFrontmost": true}),
        Some(WAIT),
    ))?;
    w.browser.must(
        "waitFor",
        json!({"page": PAGE, "selector": r#".tabs-container .tab:has-text("file.txt")"#}),
    );
    w.browser
        .click(PAGE, ".editor-instance .monaco-editor .view-lines >> nth=0");
    rt.block_on(drain(&mut selector))?;
    let mut keystrokes = Vec::with_capacity(keys);
    for i in 0..keys + 10 {
        let key = if i % 2 == 0 {
            "Shift+ArrowDown"
        } else {
            "Shift+ArrowUp"
        };
        let t0 = Instant::now();
        w.browser.press(PAGE, key);
        rt.block_on(wait_selection(&mut selector))?;
        if i >= 10 {
            keystrokes.push(t0.elapsed());
        }
        rt.block_on(drain(&mut selector))?;
    }
    let mut driver = Vec::with_capacity(keys);
    for _ in 0..keys {
        let t0 = Instant::now();
        w.browser.count(PAGE, ".monaco-workbench");
        driver.push(t0.elapsed());
    }

    let host_rss = settled_host_rss(&w.server)?;
    let sidecar_rss = w
        .server
        .descendants_matching("serve --stdio")
        .first()
        .map(|&p| rss_kib(p))
        .transpose()?;

    let lock_elapsed = w.lock.unwrap_or_default();
    let window_workbench = w.workbench;
    rt.block_on(async {
        selector.close().await.ok();
    });
    drop(w);
    eprintln!("VS Code without the extension…");
    let bare = open_window(&ccbridge, false)?;
    // Read it no earlier than the window with the extension was read: the
    // extension host grows while VS Code activates its built-in extensions
    // (onStartupFinished comes seconds after the workbench is drawn).
    while bare.opened.elapsed() < lock_elapsed + Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let bare_rss = settled_host_rss(&bare.server)?;
    let bare_workbench = bare.workbench;
    drop(bare);

    let mb = |kib: u64| format!("{:.1} MB", kib as f64 * 1024.0 / 1e6);
    println!("| Benchmark | Metric | VS Code extension |");
    println!("|---|---|---:|");
    row(
        "`openDiff` → the review's tab visible in the workbench",
        &summarize(&open_diff),
    );
    row(
        "keystroke (Shift+Down/Up) → `selection_changed` at a WebSocket client, debounce 0",
        &summarize(&keystrokes),
    );
    row(
        "the browser driver's round trip (included in both)",
        &summarize(&driver),
    );
    println!(
        "| window opened → workbench drawn | once | {} (without the extension: {}) |",
        ms(window_workbench.as_secs_f64() * 1e6),
        ms(bare_workbench.as_secs_f64() * 1e6)
    );
    if lock_elapsed > Duration::ZERO {
        let lock = lock_elapsed;
        println!(
            "| window opened → lock file written (activation, sidecar start) | once | {} |",
            ms(lock.as_secs_f64() * 1e6)
        );
    }
    println!(
        "| extension host started → sidecar spawned (VS Code's onStartupFinished, then activate) | once | {} |",
        ms(host_to_sidecar.as_secs_f64() * 1e6)
    );
    println!(
        "| sidecar spawned → lock file written (its start, initialize) | once | {} |",
        ms(sidecar_to_lock.as_secs_f64() * 1e6)
    );
    println!(
        "| extension host RSS, Claude connected, before the runs above | VmRSS | {} (without the extension: {}) |",
        mb(host_rss_idle),
        mb(bare_rss)
    );
    println!(
        "| extension host RSS after the runs above | VmRSS | {} |",
        mb(host_rss)
    );
    if let Some(s) = sidecar_rss {
        println!("| the sidecar's RSS | VmRSS | {} |", mb(s));
    }
    Ok(())
}
