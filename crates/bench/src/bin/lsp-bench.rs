//! `lsp-bench`: ccbridge's own language-server client (`ccbridge-lsp`)
//! with the pinned pyright and typescript-language-server, beside each
//! checker's own command line on the same file (`pyright app.py`, `tsc
//! --noEmit -p .`), side by side in one run, as a Markdown table. Progress
//! goes to stderr.
//!
//! ```text
//! scripts/test --quick        # or: npm ci in a copy of tests/e2e (CCBRIDGE_E2E_DIR)
//! cargo build --release -p ccbridge
//! cargo run --release -p ccbridge-bench --bin lsp-bench -- --edits 40 --runs 5
//! ```
//!
//! - **An edit → fresh diagnostics**: the file is rewritten on disk,
//!   alternately introducing and fixing a type error, and involved
//!   (`LanguageServers::involve`, what the page and the session review do
//!   on a change); the time until a publication for the file says what
//!   the new text has (an error, or none). The command line is timed from
//!   the same write to its exit, its exit status checked against the
//!   text. p50 and p99 of `--edits`.
//! - **First diagnostics after start**: from `LanguageServers::start` (no
//!   server running) to the first publication of the file's error; the
//!   command line's figure is the same as an edit's (it starts cold every
//!   time). Median of `--runs`.
//! - **Memory**: the resident memory of each server's whole process group
//!   (typescript-language-server runs tsserver beside it), read from
//!   `/proc` after the edits.
//!
//! - **`ccbridge serve`'s own memory**: the release binary serving the
//!   page (as a user starts it), a Python and a TypeScript proposal open
//!   (two `openDiff`s from a Claude-like client; pyright, ruff and
//!   typescript-language-server installed), polled with
//!   `getDiagnostics` until both proposals' errors are there; then the
//!   `VmRSS` of the ccbridge process alone and of the servers it started,
//!   beside the same run with `--no-language-servers`. `--rss-only` runs
//!   this part alone.
//!
//! Only the server of the language measured is started (ruff, the other
//! Python server, is turned off in the workspace's `.ccbridge/lsp.toml`).
//! How an edit reaches `involve` in `ccbridge serve` (the session review's
//! watcher, which waits 100 ms for a burst of writes to end) is measured
//! by `changes-bench`, not here.

use anyhow::{bail, Context};
use ccbridge_bench::stats::summarize;
use ccbridge_lsp::{LanguageServers, Options, Update};
use clap::Parser;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

#[derive(Parser)]
#[command(
    name = "lsp-bench",
    about = "Benchmarks ccbridge's language-server client beside pyright's and tsc's command lines"
)]
struct Args {
    /// Edits timed per language and per side (half introduce an error,
    /// half fix it).
    #[arg(long, default_value_t = 40)]
    edits: usize,
    /// Cold starts timed per language.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Only measure `ccbridge serve`'s memory with the servers running.
    #[arg(long)]
    rss_only: bool,
    /// The `ccbridge` binary (default: beside this one).
    #[arg(long)]
    ccbridge: Option<std::path::PathBuf>,
}

const TIMEOUT: Duration = Duration::from_secs(120);

/// One language measured: its file, its good and bad text, its command
/// line.
struct Lang {
    name: &'static str,
    server: &'static str,
    file: &'static str,
    /// Other files of the workspace.
    extra: &'static [(&'static str, &'static str)],
    good: &'static str,
    bad: &'static str,
    /// The checker's command line (its program in the pinned npm
    /// packages' directory), run in the workspace.
    cli: &'static [&'static str],
}

const PYTHON: Lang = Lang {
    name: "Python",
    server: "pyright-langserver",
    file: "app.py",
    // pyright alone: ruff, the other Python server, turned off.
    extra: &[(".ccbridge/lsp.toml", "[servers.ruff]\nenabled = false\n")],
    good: "def twice(n: int) -> int:\n    return 2 * n\n\n\nx: int = twice(1)\n",
    bad: "def twice(n: int) -> int:\n    return 2 * n\n\n\nx: str = twice(1)\n",
    cli: &["pyright", "app.py"],
};

const TYPESCRIPT: Lang = Lang {
    name: "TypeScript",
    server: "typescript-language-server",
    file: "app.ts",
    extra: &[(
        "tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "module": "es2022"}, "files": ["app.ts"]}"#,
    )],
    good: "export function twice(n: number): number {\n  return 2 * n;\n}\nexport const x: number = twice(1);\n",
    bad: "export function twice(n: number): number {\n  return 2 * n;\n}\nexport const x: string = twice(1);\n",
    cli: &["tsc", "--noEmit", "-p", "."],
};

struct Figures {
    edits: Vec<Duration>,
    starts: Vec<Duration>,
    rss: u64,
    processes: usize,
    cli: Vec<Duration>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; run with --release for figures that mean anything");
    }
    let bin = ccbridge_testkit::e2e_dir().join("node_modules/.bin");
    for program in [
        "pyright-langserver",
        "pyright",
        "typescript-language-server",
        "tsc",
    ] {
        if !bin.join(program).is_file() {
            bail!(
                "{program} is missing from {}: run scripts/test (it installs tests/e2e's pinned \
                 packages), or `npm ci` in a copy of tests/e2e and point CCBRIDGE_E2E_DIR at it",
                bin.display()
            );
        }
    }
    let ccbridge = match &args.ccbridge {
        Some(p) => p.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("the benchmark's directory")?
            .join("ccbridge"),
    };
    if !ccbridge.is_file() {
        bail!(
            "no ccbridge binary at {}: `cargo build --release -p ccbridge` first, or pass --ccbridge",
            ccbridge.display()
        );
    }
    eprintln!("ccbridge serve: memory with the language servers running");
    let with = serve_memory(&ccbridge, &bin, true).await?;
    eprintln!("ccbridge serve: memory with --no-language-servers");
    let without = serve_memory(&ccbridge, &bin, false).await?;
    let mb = |kib: u64| format!("{:.1} MB", kib as f64 * 1024.0 / 1e6);
    println!(
        "`ccbridge serve` ({}), a Python and a TypeScript proposal open, their errors reported:\n",
        ccbridge.display()
    );
    println!("| measure | with language servers | `--no-language-servers` |");
    println!("|---|---|---|");
    println!(
        "| ccbridge's own RSS (VmRSS, median of 3) | {} | {} |",
        mb(with.ccbridge_kib),
        mb(without.ccbridge_kib)
    );
    println!(
        "| the language servers' RSS | {} ({} processes: {}) | none started |",
        mb(with.servers_kib),
        with.servers.len(),
        with.servers.join(", ")
    );
    println!();
    if args.rss_only {
        return Ok(());
    }

    let mut all = Vec::new();
    for lang in [&PYTHON, &TYPESCRIPT] {
        all.push((lang, measure(lang, &bin, &args).await?));
    }

    let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1e3);
    let p50 = |xs: &[Duration]| ms(Duration::from_secs_f64(summarize(xs).p50_us / 1e6));
    let p99 = |xs: &[Duration]| ms(Duration::from_secs_f64(summarize(xs).p99_us / 1e6));
    println!(
        "{} edits per language and side (alternately introducing and fixing a type error), {} cold starts.\n",
        args.edits, args.runs
    );
    println!("| measure | language | ccbridge-lsp (server) | command line | command line is |");
    println!("|---|---|---|---|---|");
    for (lang, f) in &all {
        let cli = format!("`{}`", lang.cli.join(" "));
        let server = lang.server;
        println!(
            "| an edit → fresh diagnostics, p50 | {} | {} | {} | {cli} |",
            lang.name,
            p50(&f.edits),
            p50(&f.cli)
        );
        println!(
            "| an edit → fresh diagnostics, p99 | {} | {} | {} | {cli} |",
            lang.name,
            p99(&f.edits),
            p99(&f.cli)
        );
        println!(
            "| first diagnostics after start (median) | {} | {} | {} | {cli} (cold every time) |",
            lang.name,
            p50(&f.starts),
            p50(&f.cli)
        );
        println!(
            "| memory | {} | {:.0} MB resident ({} process{}, `{server}`'s group) | | |",
            lang.name,
            f.rss as f64 / 1e6,
            f.processes,
            if f.processes == 1 { "" } else { "es" }
        );
    }
    Ok(())
}

async fn measure(lang: &Lang, bin: &Path, args: &Args) -> anyhow::Result<Figures> {
    let dir = tempfile::tempdir()?;
    let ws = dir.path().canonicalize()?;
    for (name, text) in lang.extra {
        let path = ws.join(name);
        std::fs::create_dir_all(path.parent().context("a file in the workspace")?)?;
        std::fs::write(path, text)?;
    }
    let file = ws.join(lang.file);
    let options = || Options {
        search_dirs: vec![bin.to_owned()],
        search_path: false,
        ..Options::default()
    };

    let mut starts = Vec::new();
    for run in 0..args.runs {
        eprintln!("{}: cold start {}/{}", lang.name, run + 1, args.runs);
        std::fs::write(&file, lang.bad)?;
        let t = Instant::now();
        let (lsp, mut rx) = LanguageServers::start(options(), vec![ws.clone()]);
        lsp.involve(&file);
        fresh(&mut rx, &file, true).await?;
        starts.push(t.elapsed());
        lsp.stop().await;
    }

    eprintln!("{}: edits through ccbridge-lsp", lang.name);
    std::fs::write(&file, lang.good)?;
    let (lsp, mut rx) = LanguageServers::start(options(), vec![ws.clone()]);
    lsp.involve(&file);
    fresh(&mut rx, &file, false).await?;
    let mut edits = Vec::new();
    for i in 0..args.edits {
        let bad = i % 2 == 0;
        let t = Instant::now();
        std::fs::write(&file, if bad { lang.bad } else { lang.good })?;
        lsp.involve(&file);
        fresh(&mut rx, &file, bad).await?;
        edits.push(t.elapsed());
    }
    let pids = lsp.pids().await;
    let (rss, processes) = group_rss(&pids)?;
    lsp.stop().await;

    eprintln!("{}: edits through `{}`", lang.name, lang.cli.join(" "));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(bin.to_owned()).chain(std::env::split_paths(&path)))?;
    let mut cli = Vec::new();
    for i in 0..args.edits {
        let bad = i % 2 == 0;
        let t = Instant::now();
        std::fs::write(&file, if bad { lang.bad } else { lang.good })?;
        let out = tokio::process::Command::new(bin.join(lang.cli[0]))
            .args(&lang.cli[1..])
            .current_dir(&ws)
            .env("PATH", &path)
            .output()
            .await
            .with_context(|| lang.cli[0].to_owned())?;
        cli.push(t.elapsed());
        if out.status.success() == bad {
            bail!(
                "`{}` exited {} on the {} text: {}",
                lang.cli.join(" "),
                out.status,
                if bad { "bad" } else { "good" },
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    Ok(Figures {
        edits,
        starts,
        rss,
        processes,
        cli,
    })
}

/// Waits for a publication for `file` that has an error (`error`) or none.
async fn fresh(rx: &mut mpsc::Receiver<Update>, file: &Path, error: bool) -> anyhow::Result<()> {
    let want = file.to_string_lossy();
    let end = Instant::now() + TIMEOUT;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(Update::Published(p))) if p.path == want => {
                let has = p
                    .diagnostics
                    .iter()
                    .any(|d| d.severity == ccbridge_protocol::editor::Severity::Error);
                if has == error {
                    return Ok(());
                }
            }
            Ok(Some(Update::Unavailable { language, why })) => bail!("{language}: {why}"),
            Ok(Some(Update::BadConfig { why })) => bail!("{why}"),
            Ok(Some(_)) => {}
            Ok(None) => bail!("the language servers stopped"),
            Err(_) => bail!(
                "no publication {} an error for {want} within {TIMEOUT:?}",
                if error { "with" } else { "without" }
            ),
        }
    }
}

/// What [`serve_memory`] read.
struct ServeMemory {
    ccbridge_kib: u64,
    servers_kib: u64,
    /// The servers' processes, by name.
    servers: Vec<String>,
}

/// Runs `ccbridge serve` on a workspace with a Python and a TypeScript
/// file, proposes an error in each as Claude does (`openDiff`, left
/// open), waits until `getDiagnostics` has both proposals' errors (or,
/// without servers, until both reviews exist), and reads the memory of
/// ccbridge and of every process it started.
async fn serve_memory(ccbridge: &Path, bin: &Path, servers: bool) -> anyhow::Result<ServeMemory> {
    use ccbridge_bench::client::Client;
    let args: Vec<std::ffi::OsString> = if servers {
        // As a user with the usual Python pair installed: pyright and ruff.
        vec![
            "--language-server-dir".into(),
            bin.into(),
            "--language-server-dir".into(),
            ccbridge_testkit::ruff_bin_dir().into(),
        ]
    } else {
        vec!["--no-language-servers".into()]
    };
    let fill = |ws: &Path| -> anyhow::Result<()> {
        for lang in [&PYTHON, &TYPESCRIPT] {
            for (name, text) in lang
                .extra
                .iter()
                .filter(|(n, _)| !n.starts_with(".ccbridge"))
            {
                std::fs::write(ws.join(name), text)?;
            }
            std::fs::write(ws.join(lang.file), lang.good)?;
        }
        Ok(())
    };
    let serve = ccbridge_bench::ui::UiServer::spawn_with(ccbridge, fill, &args)?;
    let (ws, pid) = (serve.workspace().to_owned(), serve.pid());
    let mut claude = Client::session(serve.port, &serve.token).await?;
    let deadline = Instant::now() + TIMEOUT;
    for (i, lang) in [&PYTHON, &TYPESCRIPT].into_iter().enumerate() {
        let path = ws.join(lang.file).to_string_lossy().into_owned();
        let open = serde_json::json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call",
            "params": {"name": "openDiff", "arguments": {"old_file_path": path,
            "new_file_path": path, "new_file_contents": lang.bad,
            "tab_name": format!("✻ [Claude Code] {} ⧉", lang.file)}}});
        claude.notify(&open.to_string()).await?;
    }
    loop {
        let id = claude.id();
        let ask = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "getDiagnostics", "arguments": {}}});
        let answer: serde_json::Value =
            serde_json::from_str(claude.request(ask.to_string()).await?.as_str())?;
        let list: Vec<serde_json::Value> = answer["result"]["content"][0]["text"]
            .as_str()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        let reported = |file: &str| {
            list.iter().any(|e| {
                e["uri"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("_claude_fs_right:") && u.ends_with(file))
                    && e["diagnostics"].as_array().is_some_and(|d| !d.is_empty())
            })
        };
        if !servers || (reported(PYTHON.file) && reported(TYPESCRIPT.file)) {
            break;
        }
        if Instant::now() > deadline {
            bail!("getDiagnostics still lacks the proposals' errors: {list:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Settled: both proposals are reviews (answered in order after them),
    // the servers have reported. Three samples, 300 ms apart.
    let mut samples = Vec::new();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        samples.push(ccbridge_bench::process::rss_kib(pid)?);
    }
    samples.sort_unstable();
    let children = children_of(pid)?;
    let (servers_bytes, names) = if servers {
        let (bytes, _) = group_rss(&children)?;
        (bytes, process_names(&children)?)
    } else {
        (0, Vec::new())
    };
    claude.close().await;
    serve.stop()?;
    Ok(ServeMemory {
        ccbridge_kib: samples[1],
        servers_kib: servers_bytes / 1024,
        servers: names,
    })
}

/// The pids whose parent is `pid`.
fn children_of(pid: u32) -> anyhow::Result<Vec<u32>> {
    Ok(proc_stats()?
        .into_iter()
        .filter(|(_, fields)| fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(pid))
        .map(|(p, _)| p)
        .collect())
}

/// The names of the processes in the groups led by `pids`.
fn process_names(pids: &[u32]) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = proc_stats()?
        .into_iter()
        .filter(|(_, fields)| {
            fields
                .get(2)
                .and_then(|g| g.parse::<u32>().ok())
                .is_some_and(|g| pids.contains(&g))
        })
        .filter_map(|(p, _)| {
            let cmdline = std::fs::read(format!("/proc/{p}/cmdline")).ok()?;
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            // A node script's name is its script's, not node's.
            let name = args
                .iter()
                .skip(usize::from(
                    args.first().is_some_and(|a| a.ends_with("node")),
                ))
                .find(|a| !a.starts_with('-'))?;
            Some(Path::new(name).file_name()?.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    Ok(names)
}

/// Every process's pid and the fields of its `/proc/<pid>/stat` after the
/// command's closing parenthesis (state, ppid, pgrp, ...).
fn proc_stats() -> anyhow::Result<Vec<(u32, Vec<String>)>> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let Some(pid) = entry?
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue; // gone meanwhile
        };
        let fields = stat
            .rsplit(')')
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        all.push((pid, fields));
    }
    Ok(all)
}

/// The resident memory of the process groups led by `pids` (each server
/// runs in a group of its own, with whatever it starts), and how many
/// processes they hold.
fn group_rss(pids: &[u32]) -> anyhow::Result<(u64, usize)> {
    let (mut total, mut n) = (0, 0);
    for (pid, fields) in proc_stats()? {
        let pgrp = fields.get(2).and_then(|g| g.parse::<u32>().ok());
        if pgrp.is_some_and(|g| pids.contains(&g)) {
            if let Ok(rss) = resident_bytes(pid) {
                total += rss;
                n += 1;
            }
        }
    }
    if n == 0 {
        bail!("no server process found for {pids:?}");
    }
    Ok((total, n))
}

/// Resident memory of process `pid`, in bytes.
fn resident_bytes(pid: u32) -> anyhow::Result<u64> {
    Ok(ccbridge_bench::process::rss_kib(pid)? * 1024)
}
