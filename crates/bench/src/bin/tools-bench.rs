//! `tools-bench`: the workspace tools beside what a user would
//! otherwise run, side by side in one run, as a Markdown table. Progress
//! goes to stderr.
//!
//! ```text
//! apt-get install ripgrep            # the baseline for search_files
//! cargo run --release -p ccbridge-bench --bin tools-bench -- --tree /tmp/ccbridge-tree
//! ```
//!
//! - `search_files` (in-process, the tool's own code: ripgrep's crates, a
//!   parallel walk) vs `rg -C1` (the tool gives a line of context too) with
//!   the same pattern and glob, runs interleaved, on a generated
//!   tree (`--files` files of about `--file-bytes` each, the pattern in one
//!   file of a thousand, so the 300-result cap does not cut either short),
//!   page cache warm for both;
//! - `list_files` recursive on that tree (capped at 500 entries) vs `rg
//!   --files` (which lists everything: the cap's worth);
//! - `read_file` of the last 10 lines of a 100 MB file, and of 10 lines
//!   near its start (time and bytes read), vs reading the whole file;
//! - `apply_diff` of 10 blocks on a 10 MB file vs ten `str::replacen`;
//! - the HTTP round trip of a cheap tool (`get_diagnostics`) through the
//!   tools server (guard, rmcp, session) vs a bare axum handler returning
//!   the same JSON-RPC answer, one connection per request for both; and
//!   the same call as a client of the 2026-07-28 revision makes it (no
//!   session, its version and capabilities in the request's `_meta`),
//!   answered with plain JSON. `--only-http` runs these alone.
//!
//! Each figure is the median of `--runs` runs (HTTP: of 300 requests).

use anyhow::{bail, Context};
use async_trait::async_trait;
use ccbridge_bench::stats::summarize;
use ccbridge_mcp::{Editor, Settings, ToolsServer};
use ccbridge_protocol::editor::FileDiagnostics;
use ccbridge_server::{Approval, CommandEvent, FrontendError, Proposal, RunId, Verdict};
use ccbridge_testkit::http;
use ccbridge_tools::{apply_diff, list_files, read_file, search_files};
use ccbridge_workspace::Workspace;
use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const PATTERN: &str = r"ccbridge_needle_\d+";
const GLOB: &str = "*.txt";

#[derive(Parser)]
#[command(
    name = "tools-bench",
    about = "Benchmarks the workspace tools beside rg and a bare axum handler"
)]
struct Args {
    /// Where the generated tree lives (made once, reused when it is there).
    #[arg(long, value_name = "DIR", required_unless_present = "only_http")]
    tree: Option<PathBuf>,
    /// Files in the tree.
    #[arg(long, default_value_t = 100_000)]
    files: usize,
    /// About this many bytes per file.
    #[arg(long, default_value_t = 3_000)]
    file_bytes: usize,
    /// Runs of each measurement (the median is shown).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Only the HTTP round trips (no tree is made).
    #[arg(long)]
    only_http: bool,
}

/// A deterministic word stream (no dependency on a random crate).
struct Words(u64);

impl Words {
    fn next(&mut self) -> &'static str {
        const W: [&str; 16] = [
            "alpha", "beta", "gamma", "delta", "fn", "let", "match", "struct", "impl", "return",
            "value", "error", "self", "async", "await", "mod",
        ];
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        W[(self.0 >> 60) as usize]
    }

    fn line(&mut self, out: &mut String) {
        for i in 0..8 {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(self.next());
        }
        out.push('\n');
    }
}

/// Makes the tree (100 files per folder) unless a marker says it is there.
fn tree(a: &Args) -> anyhow::Result<PathBuf> {
    let dir = a.tree.as_ref().context("--tree DIR")?;
    let root = dir.join("ws");
    let marker = dir.join(format!("done-{}-{}", a.files, a.file_bytes));
    if marker.exists() {
        return Ok(root);
    }
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    eprintln!(
        "generating {} files of ~{} bytes in {}",
        a.files,
        a.file_bytes,
        root.display()
    );
    let mut words = Words(42);
    for i in 0..a.files {
        let dir = root.join(format!("d{:03}/e{:02}", i / 1000, (i / 100) % 10));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        let mut text = String::with_capacity(a.file_bytes + 64);
        while text.len() < a.file_bytes {
            words.line(&mut text);
        }
        if i % 1000 == 7 {
            text.push_str(&format!("// ccbridge_needle_{i}\n"));
        }
        let ext = if i % 10 == 9 { "md" } else { "txt" };
        std::fs::write(dir.join(format!("f{i}.{ext}")), text)?;
    }
    // The big files.
    let mut big = std::io::BufWriter::new(std::fs::File::create(root.join("big100.log"))?);
    let mut line = String::new();
    let mut written = 0usize;
    while written < 100 << 20 {
        line.clear();
        words.line(&mut line);
        big.write_all(line.as_bytes())?;
        written += line.len();
    }
    big.flush()?;
    let mut ten = String::with_capacity(10 << 20);
    let mut n = 0;
    while ten.len() < 10 << 20 {
        ten.push_str(&format!("line {n} "));
        words.line(&mut ten);
        n += 1;
    }
    std::fs::write(root.join("big10.txt"), ten)?;
    std::fs::write(&marker, "")?;
    Ok(root)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort_unstable();
    xs[xs.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut out = f(); // warm-up (page cache, allocator)
    let mut xs = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        out = f();
        xs.push(t.elapsed());
    }
    (median(xs), out)
}

fn ms(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{} µs", d.as_micros())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

struct NoEditor;

#[async_trait]
impl Editor for NoEditor {
    fn diagnostics(&self) -> Vec<FileDiagnostics> {
        Vec::new()
    }
    fn diagnostics_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        tokio::sync::watch::Sender::new(0).subscribe()
    }
    fn is_dirty(&self, _: &str) -> bool {
        false
    }
    async fn review(&self, p: Proposal) -> Result<Verdict, FrontendError> {
        Ok(Verdict::Accepted {
            contents: p.proposed,
        })
    }
    async fn approve(&self, _: Approval) -> Result<bool, FrontendError> {
        Ok(true)
    }
    fn next_run(&self) -> RunId {
        RunId(1)
    }
    fn command_event(&self, _: CommandEvent) {}
}

fn post(port: u16, session: Option<&str>, body: &str) -> http::Answer {
    http::mcp_post(port, TOKEN, session, body, Duration::from_secs(10))
}

/// p50 of `n` round trips of `body`, each on its own connection.
fn round_trips(port: u16, session: Option<&str>, body: &str, n: usize) -> anyhow::Result<f64> {
    let mut xs = Vec::with_capacity(n);
    for _ in 0..n + 20 {
        let t = Instant::now();
        let a = post(port, session, body);
        xs.push(t.elapsed());
        if a.status != 200 || !a.body.contains("No diagnostics") {
            bail!("unexpected answer: {}\n{}", a.head, a.body);
        }
    }
    Ok(summarize(&xs[20..]).p50_us)
}

fn http_bench(ws: Arc<Workspace>) -> anyhow::Result<(f64, f64, f64)> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let server = rt.block_on(ToolsServer::bind(
        None,
        TOKEN,
        ws,
        Arc::new(NoEditor),
        Settings::default(),
    ))?;
    let port = server.port();
    rt.spawn(server.run(std::future::pending()));
    let init = post(
        port,
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
    );
    let session = init.header("mcp-session-id").context("no session")?;
    post(
        port,
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_diagnostics","arguments":{}}}"#;
    let tools = round_trips(port, Some(&session), call, 300)?;
    let stateless = stateless_round_trips(port, 300)?;

    let answer = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"No diagnostics.\n"}],"isError":false}}"#;
    let app = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move || async move {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                answer,
            )
        }),
    );
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let bare_port = listener.local_addr()?.port();
    rt.spawn(async move { axum::serve(listener, app).await });
    let bare = round_trips(bare_port, None, call, 300)?;
    Ok((tools, stateless, bare))
}

/// p50 of `n` `get_diagnostics` calls as a 2026-07-28 client makes them:
/// no session, the revision in the `MCP-Protocol-Version` header and, with
/// the client's capabilities, in the request's `_meta`; the method and the
/// tool's name in headers. Each answer must be plain JSON.
fn stateless_round_trips(port: u16, n: usize) -> anyhow::Result<f64> {
    let body = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_diagnostics","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}}}"#;
    let mut xs = Vec::with_capacity(n);
    for _ in 0..n + 20 {
        let t = Instant::now();
        let a = http::mcp_post_stateless(
            port,
            TOKEN,
            ("tools/call", Some("get_diagnostics")),
            body,
            Duration::from_secs(10),
        );
        xs.push(t.elapsed());
        if a.status != 200
            || !a.body.contains("No diagnostics")
            || !a
                .head
                .to_ascii_lowercase()
                .contains("content-type: application/json")
        {
            bail!("not a plain JSON answer: {}\n{}", a.head, a.body);
        }
    }
    Ok(summarize(&xs[20..]).p50_us)
}

fn rg_available() -> bool {
    Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    if a.only_http {
        let dir = tempfile::tempdir()?;
        let ws = Arc::new(Workspace::open(&[std::fs::canonicalize(dir.path())?])?);
        let mut rows = Vec::new();
        http_rows(ws, &mut rows)?;
        print_rows(rows);
        return Ok(());
    }
    if !rg_available() {
        bail!("`rg` is not installed: apt-get install ripgrep (the baseline for search_files)");
    }
    let root = tree(&a)?;
    let ws = Arc::new(Workspace::open(std::slice::from_ref(&root))?);
    let mut rows: Vec<[String; 4]> = Vec::new();

    eprintln!("search_files vs rg");
    // Interleaved, one of each per round, so both see the same machine.
    let ours_search = || {
        search_files::search(
            &ws,
            ".",
            PATTERN,
            Some(GLOB),
            search_files::DEFAULT_MAX_RESULTS,
        )
        .map(|f| f.render())
    };
    let rg_search = || {
        Command::new("rg")
            .args(["-n", "-C1", "--no-heading", "--glob", GLOB, PATTERN])
            .arg(&root)
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .filter(|l| l.contains("needle"))
                    .count()
            })
    };
    let (mut found, mut rg_out) = (ours_search(), rg_search());
    let (mut ours_xs, mut rg_xs) = (Vec::new(), Vec::new());
    for _ in 0..a.runs {
        let t = Instant::now();
        found = ours_search();
        ours_xs.push(t.elapsed());
        let t = Instant::now();
        rg_out = rg_search();
        rg_xs.push(t.elapsed());
    }
    let (ours, rg) = (median(ours_xs), median(rg_xs));
    let found = found?;
    let rg_lines = rg_out?;
    let ours_lines = found.lines().filter(|l| l.contains("needle")).count();
    if ours_lines != rg_lines {
        bail!("search_files found {ours_lines} lines, rg {rg_lines}: not the same search");
    }
    rows.push([
        format!(
            "`search_files` `{PATTERN}` glob `{GLOB}` ({} files)",
            a.files
        ),
        ms(ours),
        format!("`rg`: {}", ms(rg)),
        format!(
            "{:.2}× (target ≤ 1.2×; {ours_lines} matches)",
            ours.as_secs_f64() / rg.as_secs_f64()
        ),
    ]);

    eprintln!("list_files");
    let (ours, listed) = time(a.runs, || {
        list_files::list(&ws, ".", true, list_files::DEFAULT_MAX_ENTRIES).map(|l| l.render())
    });
    let listed = listed?;
    let (rg, _) = time(a.runs, || {
        Command::new("rg")
            .args(["--files"])
            .arg(&root)
            .stdout(Stdio::null())
            .status()
    });
    rows.push([
        "`list_files` recursive (500-entry cap)".into(),
        ms(ours),
        format!("`rg --files` (all {}): {}", a.files, ms(rg)),
        format!("{} lines returned", listed.lines().count()),
    ]);

    eprintln!("read_file at the end of 100 MB");
    let total = std::fs::read_to_string(root.join("big100.log"))?
        .lines()
        .count();
    let (ours, window) = time(a.runs, || {
        read_file::read(&ws, "big100.log", Some(total - 9), Some(10))
    });
    let window = window?;
    let (whole, _) = time(a.runs, || {
        std::fs::read(root.join("big100.log")).map(|b| b.len())
    });
    rows.push([
        format!("`read_file` lines {}–{} of a 100 MB file", total - 9, total),
        ms(ours),
        format!("reading the whole file: {}", ms(whole)),
        format!(
            "{} MB read (lines are counted to find them)",
            window.bytes_read >> 20
        ),
    ]);

    let (head, window) = time(a.runs, || {
        read_file::read(&ws, "big100.log", Some(1000), Some(10))
    });
    let window = window?;
    rows.push([
        "`read_file` lines 1000–1009 of the same file".into(),
        ms(head),
        format!("reading the whole file: {}", ms(whole)),
        format!("{} KiB read", window.bytes_read >> 10),
    ]);

    eprintln!("apply_diff");
    let ten = std::fs::read_to_string(root.join("big10.txt"))?;
    let lines: Vec<&str> = ten.lines().collect();
    let mut diff = String::new();
    let mut pairs = Vec::new();
    for k in 0..10 {
        let l = lines[k * lines.len() / 10 + 5];
        diff.push_str(&format!(
            "<<<<<<< SEARCH\n{l}\n=======\n{l} edited\n>>>>>>> REPLACE\n"
        ));
        pairs.push((format!("{l}\n"), format!("{l} edited\n")));
    }
    let (ours, applied) = time(a.runs, || {
        let blocks = apply_diff::parse(&diff).expect("blocks");
        apply_diff::apply(&ten, &blocks)
    });
    if applied.applied.len() != 10 {
        bail!("apply_diff applied {} of 10 blocks", applied.applied.len());
    }
    let (naive, _) = time(a.runs, || {
        let mut t = ten.clone();
        for (s, r) in &pairs {
            t = t.replacen(s.as_str(), r, 1);
        }
        t.len()
    });
    rows.push([
        "`apply_diff` 10 blocks on a 10 MB file".into(),
        ms(ours),
        format!("10 × `str::replacen`: {}", ms(naive)),
        "each block checked to match exactly once".into(),
    ]);

    http_rows(ws, &mut rows)?;

    print_rows(rows);
    Ok(())
}

/// The HTTP round trips' rows.
fn http_rows(ws: Arc<Workspace>, rows: &mut Vec<[String; 4]>) -> anyhow::Result<()> {
    eprintln!("HTTP round trips");
    let (tools, stateless, bare) = http_bench(ws)?;
    rows.push([
        "HTTP round trip, `get_diagnostics`, in a session (p50 of 300)".into(),
        format!("{:.0} µs", tools),
        format!("bare axum handler, same JSON: {:.0} µs", bare),
        format!("{:.2}× (target ≤ 1.3×)", tools / bare),
    ]);
    rows.push([
        "HTTP round trip, `get_diagnostics`, stateless 2026-07-28 client, plain JSON (p50 of 300)"
            .into(),
        format!("{:.0} µs", stateless),
        format!("bare axum handler, same JSON: {:.0} µs", bare),
        format!("{:.2}× (issue 21: ≤ 1.5×)", stateless / bare),
    ]);
    Ok(())
}

fn print_rows(rows: Vec<[String; 4]>) {
    println!("| measurement | ccbridge | baseline | notes |");
    println!("|---|---|---|---|");
    for r in rows {
        println!("| {} | {} | {} | {} |", r[0], r[1], r[2], r[3]);
    }
}
