//! `nvim-bench`: the Neovim plugin's costs, beside claudecode.nvim
//! at a pinned commit when a checkout of it is given, as a Markdown table
//! (or JSON with `--json`). Progress goes to stderr.
//!
//! ```text
//! scripts/test                                  # once: installs Neovim
//! git clone https://github.com/coder/claudecode.nvim /tmp/claudecode.nvim
//! git -C /tmp/claudecode.nvim checkout 2390c6e45c4789072c293ac69de051d169668b29
//! cargo build --release -p ccbridge -p ccbridge-bench
//! cargo run --release -p ccbridge-bench --bin nvim-bench -- --claudecode /tmp/claudecode.nvim
//! ```
//!
//! Each plugin runs in its own headless Neovim (`--embed`, driven through
//! msgpack-RPC by `ccbridge_testkit::nvim`), with this process playing
//! Claude over a real WebSocket:
//!
//! - keystroke → `selection_changed`: `nvim_input("j")`/`("k")` in linewise
//!   Visual mode, from just before the RPC is written until the notification
//!   arrives at the WebSocket client; every debounce set to 0 (ccbridge's
//!   plugin and sidecar, claudecode.nvim's selection module);
//! - Lua per `CursorMoved`: the plugin's own `CursorMoved` autocommand
//!   callback, called 10,000 times with `vim.uv.hrtime()` around each call
//!   (the debounce at its default, so the cost is what a user pays);
//! - Neovim's RSS with the plugin started and Claude connected, beside a
//!   Neovim with no plugin (ccbridge's sidecar is a separate process; its
//!   RSS is in the notes);
//! - with `--ssh`, keystroke → `selection_changed` again with the sidecar
//!   on a second host reached through `ssh -T` (a network namespace
//!   running Debian's sshd, `ccbridge_testkit::remote`; needs root), the
//!   Claude-side client on that host, beside the local figure: what the
//!   SSH hop adds (docs/remote.md).

use anyhow::{bail, Context};
use ccbridge_bench::process::{find_lock, rss_kib};
use ccbridge_bench::report::{LatencyUnit, Machine, Report, Row, Series, Target};
use ccbridge_bench::stats::{summarize, Summary};
use ccbridge_client::discovery::read_lock;
use ccbridge_client::ws_client::IdeClient;
use ccbridge_testkit::nvim::Nvim;
use clap::Parser;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// The commit of claudecode.nvim the figures in docs/benchmarks.md are for.
const CLAUDECODE_COMMIT: &str = "2390c6e45c4789072c293ac69de051d169668b29";
const WAIT: Duration = Duration::from_secs(10);

#[derive(Parser)]
#[command(
    name = "nvim-bench",
    about = "Benchmarks the Neovim plugin, beside claudecode.nvim"
)]
struct Args {
    /// The ccbridge binary the plugin spawns (should be a release build).
    /// Default: `ccbridge` next to this binary, else target/release/ccbridge.
    #[arg(long, value_name = "PATH")]
    ccbridge: Option<PathBuf>,
    /// A checkout of coder/claudecode.nvim (at the commit above) to measure
    /// beside ccbridge's plugin.
    #[arg(long, value_name = "DIR")]
    claudecode: Option<PathBuf>,
    /// Print JSON instead of Markdown.
    #[arg(long)]
    json: bool,
    /// A smoke run with a tenth of the iterations (figures are rough).
    #[arg(long)]
    quick: bool,
    /// Also measure keystroke → `selection_changed` with the sidecar on a
    /// second host, through `ssh -T` (needs root and sshd).
    #[arg(long)]
    ssh: bool,
}

/// Which plugin a Neovim runs.
#[derive(Clone, Copy, PartialEq)]
enum Plugin {
    Ccbridge,
    Claudecode,
    None,
}

/// One measured Neovim.
struct Run {
    keystrokes: Vec<Duration>,
    cursor_moved: Vec<Duration>,
    nvim_rss_kib: u64,
    sidecar_rss_kib: Option<u64>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build of nvim-bench; use --release");
    }
    let exe_dir = std::env::current_exe()?
        .parent()
        .context("no exe dir")?
        .to_path_buf();
    let ccbridge = args
        .ccbridge
        .clone()
        .or_else(|| Some(exe_dir.join("ccbridge")).filter(|p| p.is_file()))
        .unwrap_or_else(|| {
            ccbridge_testkit::claude::workspace_root().join("target/release/ccbridge")
        });
    if !ccbridge.is_file() {
        bail!(
            "{} not found: cargo build --release -p ccbridge",
            ccbridge.display()
        );
    }
    if let Some(dir) = &args.claudecode {
        let head = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["rev-parse", "HEAD"])
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
        if head.as_deref() != Some(CLAUDECODE_COMMIT) {
            eprintln!(
                "warning: {} is at {head:?}, not the pinned {CLAUDECODE_COMMIT}",
                dir.display()
            );
        }
    }
    let (keys, moves) = if args.quick {
        (50, 1_000)
    } else {
        (500, 10_000)
    };
    let rt = Runtime::new()?;
    let started = Instant::now();

    eprintln!("ccbridge plugin…");
    let ours = rt.block_on(measure(Plugin::Ccbridge, &ccbridge, None, keys, moves))?;
    let theirs = match &args.claudecode {
        Some(dir) => {
            eprintln!("claudecode.nvim…");
            Some(rt.block_on(measure(
                Plugin::Claudecode,
                &ccbridge,
                Some(dir),
                keys,
                moves,
            ))?)
        }
        None => None,
    };
    let over_ssh = if args.ssh {
        eprintln!("ccbridge plugin, the sidecar over ssh -T…");
        Some(keystrokes_over_ssh(&ccbridge, keys)?)
    } else {
        None
    };
    eprintln!("Neovim without a plugin…");
    let bare = rt.block_on(measure(Plugin::None, &ccbridge, None, 0, 0))?;

    let mut rows = Vec::new();
    let mut series = Vec::new();
    let mut push = |name: &str, which: &'static str, s: Summary| {
        series.push(Series {
            name: name.to_owned(),
            server: which,
            summary: s,
        });
        s
    };
    let empty = summarize(&[]);
    let name = format!(
        "keystroke (nvim_input j/k in linewise Visual) → selection_changed at a WebSocket client, debounce 0 (N={keys})"
    );
    let ok = push(&name, "ccbridge.nvim", summarize(&ours.keystrokes));
    let base = theirs
        .as_ref()
        .map(|t| push(&name, "claudecode.nvim", summarize(&t.keystrokes)));
    let mut latency = Row::latencies(
        &name,
        LatencyUnit::Millis,
        &ok,
        &base.unwrap_or(empty),
        Some(Target::AtMost { limit: 0.5 }),
        Some(Target::AtMost { limit: 1.5 }),
    );
    if base.is_none() {
        latency.iter_mut().for_each(|r| {
            r.floor = None;
            r.ratio = None;
        });
    }
    rows.extend(latency);

    let name = format!("Lua per CursorMoved: the plugin's autocommand callback, hrtime around each of {moves} calls");
    let ok = push(&name, "ccbridge.nvim", summarize(&ours.cursor_moved));
    let base = theirs
        .as_ref()
        .map(|t| push(&name, "claudecode.nvim", summarize(&t.cursor_moved)));
    for (metric, ours_v, base_v, target) in [
        ("p50", ok.p50_us, base.map(|b| b.p50_us), None),
        ("p99", ok.p99_us, base.map(|b| b.p99_us), None),
        (
            "mean",
            ok.mean_us,
            base.map(|b| b.mean_us),
            Some(Target::AtMost { limit: 5.0 }),
        ),
    ] {
        rows.push(Row::new(&name, metric, "µs", ours_v, base_v, target));
    }
    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    rows.push(Row::new(
        "Neovim's RSS, plugin started, Claude connected, one file open",
        "VmRSS",
        "MB",
        mb(ours.nvim_rss_kib),
        theirs.as_ref().map(|t| mb(t.nvim_rss_kib)),
        None,
    ));
    let mut notes = vec![
        format!(
            "Neovim without a plugin, the same file open: {:.2} MB VmRSS ({} KiB); with ccbridge's plugin: +{} KiB{}.",
            mb(bare.nvim_rss_kib),
            bare.nvim_rss_kib,
            ours.nvim_rss_kib.saturating_sub(bare.nvim_rss_kib),
            theirs
                .as_ref()
                .map(|t| format!(
                    ", with claudecode.nvim: +{} KiB",
                    t.nvim_rss_kib.saturating_sub(bare.nvim_rss_kib)
                ))
                .unwrap_or_default()
        ),
        format!(
            "ccbridge's plugin keeps its WebSocket server in the sidecar process (`ccbridge serve --stdio`): {:.2} MB VmRSS; claudecode.nvim runs its server inside Neovim.",
            mb(ours.sidecar_rss_kib.unwrap_or(0))
        ),
        format!(
            "Neovim: {}; claudecode.nvim: {}.",
            nvim_version(),
            match &args.claudecode {
                Some(d) => format!("{} at {CLAUDECODE_COMMIT}", d.display()),
                None => "not measured (--claudecode DIR)".to_owned(),
            }
        ),
    ];
    if let Some(remote) = &over_ssh {
        let (far, near) = (summarize(remote), summarize(&ours.keystrokes));
        push(
            "keystroke → selection_changed, the sidecar and Claude on a second host through `ssh -T`",
            "ccbridge.nvim over ssh",
            far,
        );
        notes.push(format!(
            "Over `ssh -T` (the sidecar and the Claude-side client on a second host, a network namespace running sshd; N={keys}): keystroke → selection_changed p50 {:.2} ms, p99 {:.2} ms; both local in the same run: p50 {:.2} ms, p99 {:.2} ms ({:.2}× and {:.2}×).",
            far.p50_us / 1e3,
            far.p99_us / 1e3,
            near.p50_us / 1e3,
            near.p99_us / 1e3,
            far.p50_us / near.p50_us,
            far.p99_us / near.p99_us
        ));
    }
    let report = Report {
        columns: ["ccbridge.nvim", "claudecode.nvim"],
        machine: Machine::detect(),
        ccbridge_binary: ccbridge.display().to_string(),
        rows,
        notes,
        series,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    report.print(args.json)?;
    Ok(())
}

/// Keystroke → `selection_changed` with the plugin's sidecar on a second
/// host (`ccbridge_testkit::remote::Host`) started through `ssh -T`, and a
/// Claude-side client on that host; Neovim here. As the local measure:
/// linewise Visual `j`/`k`, every debounce 0, 20 warm-up keys.
fn keystrokes_over_ssh(ccbridge: &Path, keys: usize) -> anyhow::Result<Vec<Duration>> {
    use ccbridge_testkit::remote::Host;
    let host = Host::start().map_err(|e| anyhow::anyhow!("no second host: {e}"))?;
    let dir = tempfile::tempdir()?;
    let base = std::fs::canonicalize(dir.path())?;
    let (local, remote, there) = (
        base.join("local"),
        base.join("remote"),
        base.join("remote-side"),
    );
    let (home, config) = (there.join("home"), there.join("claude"));
    for d in [&local, &remote, &home, &base.join("local-home")] {
        std::fs::create_dir_all(d)?;
    }
    let text: String = (0..200)
        .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(local.join("file.txt"), &text)?;
    std::fs::write(remote.join("file.txt"), &text)?;
    // The remote side's HOME and CLAUDE_CONFIG_DIR, as a login there has.
    let wrapper = there.join("ccbridge");
    ccbridge_testkit::remote::write_remote_ccbridge(&wrapper, ccbridge, &home, &config)?;
    let init = ccbridge_testkit::claude::workspace_root().join("editors/nvim/test/init.lua");
    let local_home = base.join("local-home");
    let mut nvim = Nvim::start(
        &init,
        &local,
        &[("HOME", local_home.to_str().context("path")?)],
    )?;
    nvim.command("edit file.txt");
    ccbridge_testkit::remote::setup_nvim_plugin_over_ssh(
        &mut nvim,
        &host,
        &wrapper,
        (&local, &remote),
    );
    nvim.wait(
        "ccbridge's sidecar over ssh",
        "require('ccbridge').state.status == 'running'",
        Duration::from_secs(30),
    );
    // Claude runs on the other host: the client's socket is made on a
    // thread in that host's network namespace, where the IDE port is.
    let ns = host.netns().to_owned();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || {
            ccbridge_testkit::remote::enter(&ns).expect("a thread on the second host")
        })
        .build()?;
    let lock_dir = config.join("ide");
    let samples = rt.block_on(rt.spawn(async move {
        let mut client = connect(&lock_dir).await?;
        let ready = Instant::now();
        while ready.elapsed() < Duration::from_millis(800) {
            let _ = client.next_notification(Duration::from_millis(100)).await?;
        }
        let samples = keystrokes(&mut nvim, &mut client, keys).await?;
        client.close().await.ok();
        drop(nvim);
        anyhow::Ok(samples)
    }))??;
    drop(host);
    Ok(samples)
}

fn nvim_version() -> String {
    std::process::Command::new(ccbridge_testkit::nvim::nvim_bin())
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_default()
}

/// Starts a Neovim with `plugin`, connects as Claude, and measures.
async fn measure(
    plugin: Plugin,
    ccbridge: &Path,
    claudecode: Option<&Path>,
    keys: usize,
    moves: usize,
) -> anyhow::Result<Run> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("ws");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&ws)?;
    std::fs::create_dir_all(&home)?;
    let text: String = (0..200)
        .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(ws.join("file.txt"), text)?;
    let init = ccbridge_testkit::claude::workspace_root().join("editors/nvim/test/init.lua");
    let config_dir = home.join(".claude");
    let mut nvim = Nvim::start(
        &init,
        &ws,
        &[
            ("HOME", home.to_str().context("path")?),
            ("CLAUDE_CONFIG_DIR", config_dir.to_str().context("path")?),
        ],
    )?;
    nvim.command("edit file.txt");
    let lock_dir = config_dir.join("ide");
    let (mut client, group) = match plugin {
        Plugin::None => {
            let rss = rss_kib(nvim.pid())?;
            return Ok(Run {
                keystrokes: vec![],
                cursor_moved: vec![],
                nvim_rss_kib: rss,
                sidecar_rss_kib: None,
            });
        }
        Plugin::Ccbridge => {
            nvim.lua(
                r#"local bin = ...
                require("ccbridge").setup({ bin = bin, args = { "--selection-debounce-ms", "0" } })"#,
                vec![ccbridge.to_str().context("path")?.into()],
            );
            nvim.wait(
                "ccbridge's sidecar",
                "require('ccbridge').state.status == 'running'",
                WAIT,
            );
            (connect(&lock_dir).await?, "ccbridge")
        }
        Plugin::Claudecode => {
            let dir = claudecode.context("no claudecode.nvim checkout")?;
            nvim.lua(
                r#"vim.opt.runtimepath:prepend(...)
                require("claudecode").setup({ terminal = { provider = "none" }, log_level = "error" })"#,
                vec![dir.to_str().context("path")?.into()],
            );
            (connect(&lock_dir).await?, "ClaudeCodeSelection")
        }
    };
    // Give the session time to take notifications (ccbridge holds them
    // 600 ms after tools/list, as Claude drops early ones).
    let ready = Instant::now();
    while ready.elapsed() < Duration::from_millis(800) {
        let _ = client.next_notification(Duration::from_millis(100)).await?;
    }

    // Keystrokes, debounce 0.
    match plugin {
        Plugin::Ccbridge => {
            nvim.lua(
                "require('ccbridge.config').options.selection.debounce_ms = 0",
                vec![],
            );
        }
        _ => {
            nvim.lua(
                "require('claudecode.selection').state.debounce_ms = 0",
                vec![],
            );
        }
    }
    let keystrokes = keystrokes(&mut nvim, &mut client, keys).await?;

    // CursorMoved cost, debounce back at its default.
    match plugin {
        Plugin::Ccbridge => {
            nvim.lua(
                "require('ccbridge.config').options.selection.debounce_ms = 50",
                vec![],
            );
        }
        _ => {
            nvim.lua(
                "require('claudecode.selection').state.debounce_ms = 100",
                vec![],
            );
        }
    }
    let ns = nvim.lua(
        r#"local group, n = ...
        local cbs = {}
        for _, a in ipairs(vim.api.nvim_get_autocmds({ group = group, event = "CursorMoved" })) do
          if a.callback then cbs[#cbs + 1] = a.callback end
        end
        if #cbs ~= 1 then return { error = ("%d CursorMoved callbacks in %s"):format(#cbs, group) } end
        local cb, hr, out = cbs[1], (vim.uv or vim.loop).hrtime, {}
        local args = { buf = vim.api.nvim_get_current_buf(), event = "CursorMoved", match = "", file = "" }
        for i = 1, n do
          local t0 = hr()
          cb(args)
          out[i] = hr() - t0
        end
        return out"#,
        vec![group.into(), moves.into()],
    );
    if let Some(e) = ns.get("error") {
        bail!("{e}");
    }
    let cursor_moved = ns
        .as_array()
        .context("hrtime samples")?
        .iter()
        .map(|v| Duration::from_nanos(v.as_u64().unwrap_or(0)))
        .collect();
    let nvim_rss_kib = rss_kib(nvim.pid())?;
    let sidecar_rss_kib = if plugin == Plugin::Ccbridge {
        let pid = nvim.eval("require('ccbridge').state.conn:pid()");
        Some(rss_kib(pid.as_u64().context("sidecar pid")? as u32)?)
    } else {
        None
    };
    client.close().await.ok();
    Ok(Run {
        keystrokes,
        cursor_moved,
        nvim_rss_kib,
        sidecar_rss_kib,
    })
}

/// Connects to the one lock file's server as Claude (a `claude-code`
/// session that has listed the tools and reported its pid).
async fn connect(lock_dir: &Path) -> anyhow::Result<IdeClient> {
    let deadline = Instant::now() + WAIT;
    // The plugin writes its lock file through a temporary one: read until
    // a whole one is there.
    let (port, lock) = loop {
        if let Some(path) = find_lock(lock_dir) {
            if let Ok(lock) = read_lock(&path) {
                let port: u16 = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .and_then(|s| s.parse().ok())
                    .context("lock file name")?;
                break (port, lock);
            }
        }
        if Instant::now() > deadline {
            bail!("no lock file in {}", lock_dir.display());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let token = lock.auth_token.as_deref().context("authToken")?;
    let mut c = IdeClient::connect_as(port, Some(token), WAIT, "claude-code").await?;
    c.list_tools().await?;
    c.notify("ide_connected", Some(json!({"pid": std::process::id()})))
        .await?;
    Ok(c)
}

/// `keys` keystrokes (after 20 warm-up ones) in linewise Visual mode,
/// `j` and `k` alternately, each timed until its `selection_changed`
/// reaches `client`.
async fn keystrokes(
    nvim: &mut Nvim,
    client: &mut IdeClient,
    keys: usize,
) -> anyhow::Result<Vec<Duration>> {
    nvim.input("50GV");
    drain(client).await?;
    let mut samples = Vec::with_capacity(keys);
    for i in 0..keys + 20 {
        let key = if i % 2 == 0 { "j" } else { "k" };
        let t0 = Instant::now();
        nvim.input(key);
        wait_selection(client).await?;
        if i >= 20 {
            samples.push(t0.elapsed());
        }
        // Let the previous update settle before the next key.
        drain(client).await?;
    }
    nvim.input("<Esc>");
    Ok(samples)
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

/// Takes whatever arrives in the next few milliseconds.
async fn drain(c: &mut IdeClient) -> anyhow::Result<()> {
    while c
        .next_notification(Duration::from_millis(3))
        .await?
        .is_some()
    {}
    Ok(())
}
