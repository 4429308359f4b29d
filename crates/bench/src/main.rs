//! `ccbridge-bench`: runs every benchmark side by side with the floor and
//! prints a Markdown table (or JSON with `--json`). Progress goes to stderr.
//!
//! ```text
//! cargo build --release -p ccbridge -p ccbridge-bench
//! cargo run --release -p ccbridge-bench [-- --json]
//! ```
//!
//! See docs/benchmarks.md for what each figure means.

use anyhow::{bail, Context};
use ccbridge_bench::process::ServerCommand;
use ccbridge_bench::report::{LatencyUnit, Machine, Report, Row, Series, Target};
use ccbridge_bench::stats::{summarize, Summary};
use ccbridge_bench::suite::{self, Pair};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "ccbridge-bench",
    about = "Benchmarks ccbridge against a bare tokio-tungstenite MCP stub"
)]
struct Args {
    /// The ccbridge binary to spawn (should be a release build). Default:
    /// `ccbridge` next to this binary, else <workspace>/target/release/ccbridge.
    #[arg(long, value_name = "PATH")]
    ccbridge: Option<PathBuf>,
    /// The floor stub binary. Default: `floor-server` next to this binary.
    #[arg(long, value_name = "PATH")]
    floor_server: Option<PathBuf>,
    /// Print JSON instead of Markdown.
    #[arg(long)]
    json: bool,
    /// A smoke run with a tenth of the iterations (figures are rough).
    #[arg(long)]
    quick: bool,
    /// Run only these benchmarks (repeatable; for profiling).
    #[arg(long, value_enum, value_name = "BENCH")]
    only: Vec<Bench>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Bench {
    Connect,
    RoundTrip,
    Selection,
    Rss,
    Startup,
}

/// Iteration counts.
struct Plan {
    connect_runs: usize,
    rt_calls_one: usize,
    rt_conns: usize,
    rt_calls_each: usize,
    rounds: usize,
    selection_events: usize,
    rss_clients: usize,
    rss_repeats: usize,
    startup_runs: usize,
}

impl Plan {
    fn new(quick: bool) -> Plan {
        let d = if quick { 10 } else { 1 };
        Plan {
            connect_runs: 200 / d,
            rt_calls_one: 2000 / d,
            rt_conns: 16,
            rt_calls_each: 500 / d,
            rounds: 4,
            selection_events: 2000 / d,
            rss_clients: 16,
            rss_repeats: if quick { 1 } else { 3 },
            startup_runs: 50 / d,
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build of ccbridge-bench; in-process figures are meaningless (use --release)");
    }
    let exe_dir = std::env::current_exe()?
        .parent()
        .map(Path::to_owned)
        .context("no directory for the running binary")?;
    let ccbridge = ccbridge_bench::process::find_ccbridge(args.ccbridge, &exe_dir)?;
    let floor_server = match args.floor_server {
        Some(p) => p,
        None => exe_dir.join("floor-server"),
    };
    if !floor_server.is_file() {
        bail!(
            "{} not found: build it with `cargo build --release -p ccbridge -p ccbridge-bench` (or pass --floor-server)",
            floor_server.display()
        );
    }
    let cmds = Pair {
        ccbridge: ServerCommand::ccbridge(&ccbridge),
        floor: ServerCommand::floor(&floor_server),
    };
    let plan = Plan::new(args.quick);
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut rows = Vec::new();
    let mut series = Vec::new();
    let mut notes = Vec::new();
    let mut add_series = |name: &str, p: &Pair<Vec<Duration>>| {
        let s = Pair {
            ccbridge: summarize(&p.ccbridge),
            floor: summarize(&p.floor),
        };
        series.push(Series {
            name: name.into(),
            server: "ccbridge",
            summary: s.ccbridge,
        });
        series.push(Series {
            name: name.into(),
            server: "floor",
            summary: s.floor,
        });
        s
    };

    let want = |b: Bench| args.only.is_empty() || args.only.contains(&b);

    if want(Bench::Connect) {
        eprintln!(
            "[1/5] connect + initialize + tools/list ({} runs each)",
            plan.connect_runs
        );
        let c = rt.block_on(suite::connect(plan.connect_runs))?;
        let s = add_series("connect", &c);
        let name = format!(
            "connect + initialize + tools/list (N={})",
            plan.connect_runs
        );
        latency_rows(&mut rows, &name, &s, None, None);
    }

    if want(Bench::RoundTrip) {
        eprintln!(
            "[2/5] getDiagnostics round trip, 1 connection ({} calls)",
            plan.rt_calls_one
        );
        let rt1 = rt.block_on(suite::round_trip(1, plan.rt_calls_one, plan.rounds))?;
        let s = add_series("getDiagnostics, 1 connection", &rt1.samples);
        let name1 = format!("getDiagnostics ×1,000, 1 conn (N={})", s.ccbridge.n);
        latency_rows(
            &mut rows,
            &name1,
            &s,
            Some(Target::RatioToFloor { factor: 1.2 }),
            None,
        );
        notes.push(format!(
            "getDiagnostics response frame: ccbridge {} bytes, floor {} bytes.",
            rt1.response_bytes.ccbridge, rt1.response_bytes.floor
        ));

        eprintln!(
            "[2/5] getDiagnostics round trip, {} connections ({} calls each)",
            plan.rt_conns, plan.rt_calls_each
        );
        let rt16 = rt.block_on(suite::round_trip(
            plan.rt_conns,
            plan.rt_calls_each,
            plan.rounds,
        ))?;
        let s = add_series("getDiagnostics, 16 connections", &rt16.samples);
        let name = format!(
            "getDiagnostics ×1,000, {} conns (N={})",
            plan.rt_conns, s.ccbridge.n
        );
        latency_rows(
            &mut rows,
            &name,
            &s,
            Some(Target::RatioToFloor { factor: 1.2 }),
            None,
        );
        rows.push(Row::new(
            &name1,
            "throughput",
            "calls/s",
            rt1.throughput.ccbridge,
            Some(rt1.throughput.floor),
            None,
        ));
        rows.push(Row::new(
            &name,
            "throughput",
            "calls/s",
            rt16.throughput.ccbridge,
            Some(rt16.throughput.floor),
            None,
        ));
    }

    if want(Bench::Selection) {
        eprintln!(
            "[3/5] editor selection → selection_changed ({} events each)",
            plan.selection_events
        );
        let sel = rt.block_on(suite::selection(plan.selection_events, plan.rounds))?;
        let s = add_series("selection latency", &sel);
        let name = format!(
            "selection → selection_changed, debounce excluded (N={})",
            s.ccbridge.n
        );
        latency_rows(
            &mut rows,
            &name,
            &s,
            None,
            Some(Target::Below { limit: 1000.0 }),
        );
    }

    if want(Bench::Rss) {
        eprintln!(
            "[4/5] RSS of the server processes ({} repeats)",
            plan.rss_repeats
        );
        let rss = rt.block_on(suite::rss(&cmds, plan.rss_clients, plan.rss_repeats))?;
        let mb = |v: &[u64]| median(v) as f64 * 1024.0 / 1e6;
        rows.push(Row::new(
            "RSS, `serve --stdio` idle after start",
            "VmRSS",
            "MB",
            mb(&rss.ccbridge.idle_kib),
            Some(mb(&rss.floor.idle_kib)),
            Some(Target::Below { limit: 7.0 }),
        ));
        rows.push(Row::new(
            "private memory, `serve --stdio` idle after start",
            "RssAnon",
            "MB",
            mb(&rss.ccbridge.idle_anon_kib),
            Some(mb(&rss.floor.idle_anon_kib)),
            None,
        ));
        rows.push(Row::new(
            format!("RSS, {} connected clients", plan.rss_clients),
            "VmRSS",
            "MB",
            mb(&rss.ccbridge.clients_kib),
            Some(mb(&rss.floor.clients_kib)),
            None,
        ));
        notes.push(format!(
            "VmRSS samples (KiB), idle: ccbridge {:?}, floor {:?}; with {} clients: ccbridge {:?}, floor {:?}; RssAnon idle: ccbridge {:?}, floor {:?}. MB = 10^6 bytes; the median is reported.",
            rss.ccbridge.idle_kib, rss.floor.idle_kib, plan.rss_clients, rss.ccbridge.clients_kib, rss.floor.clients_kib,
            rss.ccbridge.idle_anon_kib, rss.floor.idle_anon_kib
        ));
    }
    drop(rt);

    if want(Bench::Startup) {
        eprintln!(
            "[5/5] start-up until the lock file exists ({} runs each)",
            plan.startup_runs
        );
        let st = suite::startup(&cmds, plan.startup_runs)?;
        let s = add_series("start-up", &st);
        let name = format!("start-up until the lock file exists (N={})", s.ccbridge.n);
        let ms = |x: f64| x / 1000.0;
        // The target is on the typical start-up; p99 is shown beside it.
        for (metric, ours, floor, target) in [
            (
                "p50",
                s.ccbridge.p50_us,
                s.floor.p50_us,
                Some(Target::Below { limit: 20.0 }),
            ),
            ("p99", s.ccbridge.p99_us, s.floor.p99_us, None),
        ] {
            rows.push(Row::new(
                &name,
                metric,
                "ms",
                ms(ours),
                Some(ms(floor)),
                target,
            ));
        }
    }

    let report = Report {
        columns: ["ccbridge", "floor"],
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

/// p50 and p99 rows in µs, with a target on p50 and/or p99.
fn latency_rows(
    rows: &mut Vec<Row>,
    name: &str,
    s: &Pair<Summary>,
    p50_target: Option<Target>,
    p99_target: Option<Target>,
) {
    rows.extend(Row::latencies(
        name,
        LatencyUnit::Micros,
        &s.ccbridge,
        &s.floor,
        p50_target,
        p99_target,
    ));
}

fn median(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}
