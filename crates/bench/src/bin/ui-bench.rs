//! `ui-bench`: the browser UI's benchmarks (`ccbridge_bench::ui`), each
//! beside the same path through the sidecar, as a Markdown table (or JSON
//! with `--json`). Progress goes to stderr.
//!
//! ```text
//! scripts/test                                  # once: installs Chromium and playwright-core
//! cargo build --release -p ccbridge -p ccbridge-bench
//! cargo run --release -p ccbridge-bench --bin ui-bench
//! ```
//!
//! See docs/benchmarks.md for what each figure means.

use anyhow::{bail, Context};
use ccbridge_bench::report::{LatencyUnit, Machine, Report, Row, Series, Target};
use ccbridge_bench::stats::summarize;
use ccbridge_bench::ui::{
    self, between, epoch_us, first_lines, selection_arrival, selection_listener, since, Fixture,
    Proposer, Sidecar, UiServer,
};
use ccbridge_testkit::browser::Browser;
use clap::Parser;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

const PAGE: &str = "ui";
/// The page posts a selection at most every 120 ms; selections are made
/// further apart than that, so none waits for the page's throttle.
const SELECTION_PACE: Duration = Duration::from_millis(150);
const BIG_LINES: usize = 20_000;

#[derive(Parser)]
#[command(
    name = "ui-bench",
    about = "Benchmarks the browser UI (ccbridge serve) beside the sidecar path"
)]
struct Args {
    /// The ccbridge binary to spawn (should be a release build). Default:
    /// `ccbridge` next to this binary, else <workspace>/target/release/ccbridge.
    #[arg(long, value_name = "PATH")]
    ccbridge: Option<PathBuf>,
    /// Print JSON instead of Markdown.
    #[arg(long)]
    json: bool,
    /// A smoke run with a tenth of the iterations (figures are rough).
    #[arg(long)]
    quick: bool,
    /// Runs only these benchmarks (repeatable); RSS is read either way.
    #[arg(long, value_enum, value_name = "BENCH")]
    only: Vec<Stage>,
    /// Records a Chromium performance trace of the per-hunk decisions on
    /// the 2,000-hunk proposal into FILE (JSON, for DevTools' Performance
    /// panel). Slows them down; figures taken
    /// with it are not comparable.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

/// The benchmarks `--only` picks from.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Stage {
    /// openDiff → drawn, 20 and 20,000 lines.
    Diffs,
    /// Page reloads with a pending review.
    Loads,
    /// Per-hunk decisions.
    Hunks,
    /// Selections in the file viewer.
    Selections,
}

/// Iteration counts (after the warm-up ones).
struct Plan {
    small_diffs: usize,
    big_diffs: usize,
    page_loads: usize,
    selections: usize,
    /// Per-hunk decisions of each kind (accept, reject).
    hunk_decisions: usize,
}

/// One figure for the page and one for the baseline.
struct Both {
    ui: Vec<Duration>,
    base: Vec<Duration>,
}

impl Both {
    fn new() -> Both {
        Both {
            ui: Vec::new(),
            base: Vec::new(),
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build of ui-bench; use --release");
    }
    let exe_dir = std::env::current_exe()?
        .parent()
        .map(Path::to_owned)
        .context("no directory for the running binary")?;
    let ccbridge = ccbridge_bench::process::find_ccbridge(args.ccbridge, &exe_dir)?;
    let d = if args.quick { 10 } else { 1 };
    let plan = Plan {
        small_diffs: 100 / d,
        big_diffs: 20 / d,
        page_loads: 10 / d,
        selections: 100 / d,
        hunk_decisions: 100 / d,
    };
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let fixture = Fixture::new(BIG_LINES);
    let ui = UiServer::spawn(&ccbridge, &fixture)?;
    let side = Sidecar::spawn(&ccbridge, &fixture)?;
    let mut browser = Browser::launch();
    browser.new_page(PAGE, "light");
    browser.init_script(PAGE, ui::PROBE);
    browser.goto(PAGE, &ui.link);
    browser.wait_for(PAGE, "[data-connection]");
    browser.wait_for(PAGE, "[data-view=reviews]");
    // Let the page's start-up requests finish before reading memory.
    std::thread::sleep(Duration::from_millis(500));
    let idle_kib = (ui.rss_kib()?, side.rss_kib()?);

    let mut ui_claude = rt.block_on(Proposer::connect(ui.port, &ui.token))?;
    let mut side_claude = rt.block_on(Proposer::connect(side.port, &side.token))?;
    let mut diff = |name: &str, contents: &str, warm: usize, n: usize| {
        eprintln!("[ui-bench] openDiff of {name} ({n} runs each)");
        diff_latency(
            &rt,
            &mut browser,
            (&ui, &mut ui_claude),
            (&side, &mut side_claude),
            name,
            contents,
            warm,
            n,
        )
    };
    let runs = |stage: Stage| args.only.is_empty() || args.only.contains(&stage);
    let (small, big) = if runs(Stage::Diffs) {
        let small = diff("small.txt", &fixture.small.1, 5, plan.small_diffs)?;
        (
            Some(small),
            Some(diff("big.py", &fixture.big.1, 2, plan.big_diffs)?),
        )
    } else {
        (None, None)
    };
    let loads = if runs(Stage::Loads) {
        eprintln!(
            "[ui-bench] page loads with a pending review ({} each)",
            plan.page_loads
        );
        let big = page_load(
            &rt,
            &mut browser,
            &ui,
            &mut ui_claude,
            "big.py",
            &fixture.big.1,
            plan.page_loads,
        )?;
        let small = page_load(
            &rt,
            &mut browser,
            &ui,
            &mut ui_claude,
            "small.txt",
            &fixture.small.1,
            plan.page_loads,
        )?;
        Some(Both {
            ui: big,
            base: small,
        })
    } else {
        None
    };
    let hunks = if runs(Stage::Hunks) {
        eprintln!(
            "[ui-bench] per-hunk decisions, 2000 and 20 hunks ({} of each kind)",
            plan.hunk_decisions
        );
        let n = plan.hunk_decisions;
        if let Some(file) = &args.trace {
            browser.must(
                "traceStart",
                serde_json::json!({"page": PAGE, "path": file}),
            );
        }
        let (many_accept, many_reject) = hunk_decisions(
            &rt,
            &mut browser,
            &ui,
            &mut ui_claude,
            ("many_hunks.rs", &fixture.many_hunks.1),
            n + HUNK_WARM,
            n,
        )?;
        if args.trace.is_some() {
            browser.must("traceStop", Value::Null);
        }
        let (few_accept, few_reject) = hunk_decisions(
            &rt,
            &mut browser,
            &ui,
            &mut ui_claude,
            ("few_hunks.rs", &fixture.few_hunks.1),
            FEW_PER_ROUND,
            n,
        )?;
        Some([
            Both {
                ui: many_accept,
                base: few_accept,
            },
            Both {
                ui: many_reject,
                base: few_reject,
            },
        ])
    } else {
        None
    };
    let selections = if runs(Stage::Selections) {
        eprintln!("[ui-bench] selections ({} each)", plan.selections);
        Some(selection_latency(
            &rt,
            &mut browser,
            &ui,
            &side,
            &fixture,
            plan.selections,
        )?)
    } else {
        None
    };
    let after_kib = (ui.rss_kib()?, side.rss_kib()?);
    let errors = browser.console_errors();
    drop(browser);
    ui.stop()?;

    let mut rows = Vec::new();
    let mut series = Vec::new();
    let mut add = |name: String, both: Option<&Both>, base_is: &str, target: Option<Target>| {
        let Some(both) = both else { return };
        let (u, b) = (summarize(&both.ui), summarize(&both.base));
        series.push(Series {
            name: name.clone(),
            server: "browser UI",
            summary: u,
        });
        series.push(Series {
            name: format!("{name} — baseline: {base_is}"),
            server: "baseline",
            summary: b,
        });
        rows.extend(Row::latencies(
            &name,
            LatencyUnit::Millis,
            &u,
            &b,
            target,
            None,
        ));
    };
    add(
        format!(
            "openDiff → drawn in the page, 20-line diff (N={}); baseline: showDiff at a sidecar editor",
            small.as_ref().map_or(0, |b| b.ui.len())
        ),
        small.as_ref(),
        "showDiff at a sidecar editor",
        Some(Target::AtMost { limit: 50.0 }),
    );
    add(
        format!(
            "openDiff → interactive in the page, {BIG_LINES}-line diff, 2000 changed lines in 200 hunks (N={}); baseline: showDiff at a sidecar editor",
            big.as_ref().map_or(0, |b| b.ui.len())
        ),
        big.as_ref(),
        "showDiff at a sidecar editor",
        Some(Target::AtMost { limit: 500.0 }),
    );
    add(
        format!(
            "page reload → pending review interactive, {BIG_LINES}-line diff (N={}); baseline: the same with a 20-line diff",
            loads.as_ref().map_or(0, |b| b.ui.len())
        ),
        loads.as_ref(),
        "page load with a 20-line diff",
        Some(Target::AtMost { limit: 500.0 }),
    );
    let [accept, reject] = hunks.map_or([None, None], |[a, r]| [Some(a), Some(r)]);
    for (key, what, both) in [("a", "accept", accept), ("r", "reject", reject)] {
        add(
            format!(
                "`{key}` ({what} the current hunk) → the next hunk current and drawn, 2000 one-line hunks in a 10,000-line proposal (N={}); baseline: the same in a 20-hunk proposal",
                both.as_ref().map_or(0, |b| b.ui.len())
            ),
            both.as_ref(),
            "the same in a 20-hunk proposal",
            Some(Target::AtMost { limit: 50.0 }),
        );
    }
    add(
        format!(
            "Shift+↓/↑ in the page's file viewer → selection_changed, debounce 0 (N={}); baseline: selectionChanged from a sidecar editor",
            selections.as_ref().map_or(0, |b| b.ui.len())
        ),
        selections.as_ref(),
        "selectionChanged from a sidecar editor",
        Some(Target::AtMost { limit: 5.0 }),
    );
    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    rows.push(Row::new(
        "RSS, `ccbridge serve` idle with the page open; baseline: `serve --stdio` idle",
        "VmRSS",
        "MB",
        mb(idle_kib.0),
        Some(mb(idle_kib.1)),
        Some(Target::Below { limit: 15.0 }),
    ));
    rows.push(Row::new(
        "RSS after the run (all reviews closed); baseline: `serve --stdio` after the same diffs",
        "VmRSS",
        "MB",
        mb(after_kib.0),
        Some(mb(after_kib.1)),
        None,
    ));
    let mut notes = vec![
        "Page-side times are `performance.timeOrigin + performance.now()` in the page (a key press: its input event's `timeStamp`), compared with the benchmark's clock (the same machine, the same clock).".to_owned(),
        format!("VmRSS (KiB): serve idle {}, serve --stdio idle {}; after the run {} and {}.", idle_kib.0, idle_kib.1, after_kib.0, after_kib.1),
    ];
    if !errors.is_empty() {
        notes.push(format!("The page logged errors: {errors:?}"));
    }
    let report = Report {
        columns: ["browser UI", "baseline"],
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

/// Claude proposes `contents` for the workspace file `name`, `warm + n`
/// times through each path, alternating: how long until the page has drawn
/// it, and until the sidecar's editor has its `showDiff`.
#[allow(clippy::too_many_arguments)]
fn diff_latency(
    rt: &Runtime,
    browser: &mut Browser,
    (ui, ui_claude): (&UiServer, &mut Proposer),
    (side, side_claude): (&Sidecar, &mut Proposer),
    name: &str,
    contents: &str,
    warm: usize,
    n: usize,
) -> anyhow::Result<Both> {
    let mut out = Both::new();
    for i in 0..warm + n {
        let tab = format!("{name}-{i}");
        browser.eval(PAGE, "() => window.__ccbridgeBench.arm()", Value::Null);
        let t0 = epoch_us();
        rt.block_on(ui_claude.open(&ui.workspace().join(name), contents, &tab))?;
        let drawn = browser.eval(PAGE, "() => window.__ccbridgeBench.drawn()", Value::Null);
        let page = since(t0, &drawn)?;
        rt.block_on(ui_claude.close(&tab))?;
        dismiss_closed(browser);

        let t0 = Instant::now();
        rt.block_on(side_claude.open(&side.workspace.join(name), contents, &tab))?;
        let shown = side.shown_at(&tab)?;
        rt.block_on(side_claude.close(&tab))?;
        if i >= warm {
            out.ui.push(page);
            out.base.push(shown.saturating_duration_since(t0));
        }
    }
    Ok(out)
}

/// With a review of `name` pending, reloads the page `n` times (after one
/// unmeasured load): from the start of each navigation until the review is
/// drawn and the page free.
fn page_load(
    rt: &Runtime,
    browser: &mut Browser,
    ui: &UiServer,
    claude: &mut Proposer,
    name: &str,
    contents: &str,
    n: usize,
) -> anyhow::Result<Vec<Duration>> {
    let tab = format!("load-{name}");
    browser.eval(PAGE, "() => window.__ccbridgeBench.arm()", Value::Null);
    rt.block_on(claude.open(&ui.workspace().join(name), contents, &tab))?;
    browser.eval(PAGE, "() => window.__ccbridgeBench.drawn()", Value::Null);
    let mut out = Vec::new();
    for i in 0..=n {
        browser.goto(PAGE, ui.base_url());
        let ms = browser.eval(PAGE, "() => window.__ccbridgeBench.load", Value::Null);
        let ms = ms
            .as_f64()
            .with_context(|| format!("the page answered {ms} for its load time"))?;
        if i > 0 {
            out.push(Duration::from_secs_f64(ms / 1e3));
        }
    }
    rt.block_on(claude.close(&tab))?;
    dismiss_closed(browser);
    Ok(out)
}

/// Once Claude closed a review the reviewer had not decided: the page keeps
/// its card (to copy the text from) until dismissed. Dismisses it, as the
/// reviewer would, and waits until no review is left.
fn dismiss_closed(browser: &mut Browser) {
    const CLOSED: &str = "[data-review][data-status=closed] [data-action=forget]";
    browser.wait_gone(PAGE, "[data-review][data-status=pending]");
    while browser.count(PAGE, CLOSED) > 0 {
        browser.click(PAGE, CLOSED);
    }
    browser.wait_gone(PAGE, "[data-review]");
}

/// Unmeasured decisions of each kind at the start of the first round.
const HUNK_WARM: usize = 3;
/// Decisions of each kind per proposal of 20 hunks (leaving some
/// undecided, so the proposal stays pending).
const FEW_PER_ROUND: usize = 8;

/// Claude proposes `contents` (one-line hunks) for `name`; in the page the
/// reviewer presses `a` on the current hunk `per_round` times, then `r` as
/// often, as a person goes through a review: from each key press (its input
/// event's time) until the card shows the review's next version with a hunk
/// current and its buttons enabled (the next one: accepting moves on to it,
/// rejecting reverts the current one and the next takes its place), drawn. Proposes again (after Claude closes the last) until `n`
/// decisions of each kind are timed, the first `HUNK_WARM` of each left out.
fn hunk_decisions(
    rt: &Runtime,
    browser: &mut Browser,
    ui: &UiServer,
    claude: &mut Proposer,
    (name, contents): (&str, &str),
    per_round: usize,
    n: usize,
) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    const READY: &str = "[data-review][data-status=pending] .hunk-marker[data-current] [data-action=accept-hunk]:not([disabled])";
    let (mut accepts, mut rejects) = (Vec::new(), Vec::new());
    for round in 0.. {
        if accepts.len() >= n && rejects.len() >= n {
            break;
        }
        let tab = format!("hunks-{name}-{round}");
        browser.eval(PAGE, "() => window.__ccbridgeBench.arm()", Value::Null);
        rt.block_on(claude.open(&ui.workspace().join(name), contents, &tab))?;
        browser.eval(PAGE, "() => window.__ccbridgeBench.drawn()", Value::Null);
        browser.wait_for(PAGE, READY);
        for (key, out) in [("a", &mut accepts), ("r", &mut rejects)] {
            for k in 0..per_round {
                let cur = browser.eval(
                    PAGE,
                    "() => window.__ccbridgeBench.currentHunk()",
                    Value::Null,
                );
                if cur.is_null() {
                    let shown = browser.eval(
                        PAGE,
                        "() => window.__ccbridgeBench.hunkState()",
                        Value::Null,
                    );
                    bail!("no current hunk drawn after {k} decisions with `{key}` (round {round}); the page shows {shown}");
                }
                browser.eval(PAGE, "() => window.__ccbridgeBench.armHunk()", Value::Null);
                browser.press(PAGE, key);
                let shown = browser.eval(
                    PAGE,
                    "() => window.__ccbridgeBench.hunkShown()",
                    Value::Null,
                );
                let pressed = browser.eval(
                    PAGE,
                    "() => window.__ccbridgeBench.lastKeyDown()",
                    Value::Null,
                );
                let pressed = pressed.as_f64().with_context(|| {
                    format!("the page answered {pressed} for its key-down time")
                })?;
                if (round == 0 && k < HUNK_WARM) || out.len() >= n {
                    continue;
                }
                out.push(since(pressed * 1e3, &shown)?);
            }
        }
        rt.block_on(claude.close(&tab))?;
        dismiss_closed(browser);
    }
    Ok((accepts, rejects))
}

/// Extends and shrinks a selection in the page's file viewer with
/// Shift+Down and Shift+Up, and makes the same selections from the sidecar's
/// editor: until a Claude session has the `selection_changed`.
fn selection_latency(
    rt: &Runtime,
    browser: &mut Browser,
    ui: &UiServer,
    side: &Sidecar,
    fixture: &Fixture,
    n: usize,
) -> anyhow::Result<Both> {
    let ws = ui.workspace().display().to_string();
    let viewed = ui.workspace().join("viewed.py");
    let entry = |p: &str| format!("[data-tree-path=\"{p}\"]");
    browser.click(PAGE, "[data-tab=files]");
    browser.wait_for(PAGE, &entry(&ws));
    if browser.count(PAGE, &format!("{}[aria-expanded=false]", entry(&ws))) == 1 {
        browser.click(PAGE, &entry(&ws));
    }
    browser.click(PAGE, &entry(&viewed.display().to_string()));
    browser.wait_for(PAGE, "[data-viewer] .cm-content");
    browser.click(PAGE, "[data-viewer] .cm-line");
    browser.press(PAGE, "Control+Home");
    let mut ui_rx = rt.block_on(selection_listener(ui.port, &ui.token))?;
    let mut side_rx = rt.block_on(selection_listener(side.port, &side.token))?;
    let lines = &fixture.viewed;
    let side_file = side.workspace.join("viewed.py");
    // A new session hears nothing for its first 600 ms (the CLI would drop
    // it); the first selection of each path is the warm-up.
    browser.press(PAGE, "Shift+ArrowDown");
    rt.block_on(selection_arrival(&mut ui_rx, &first_lines(lines, 1)))?;
    side.select_first_lines(&side_file, lines, 1)?;
    rt.block_on(selection_arrival(&mut side_rx, &first_lines(lines, 1)))?;
    let mut out = Both::new();
    let mut last = Instant::now();
    let (mut k, mut down) = (1, true);
    for _ in 0..n {
        if k + 1 == lines.len() || k == 1 && !down {
            down = !down;
        }
        k = if down { k + 1 } else { k - 1 };
        std::thread::sleep(SELECTION_PACE.saturating_sub(last.elapsed()));
        last = Instant::now();
        browser.press(
            PAGE,
            if down {
                "Shift+ArrowDown"
            } else {
                "Shift+ArrowUp"
            },
        );
        let at = rt.block_on(selection_arrival(&mut ui_rx, &first_lines(lines, k)))?;
        let pressed = browser.eval(
            PAGE,
            "() => window.__ccbridgeBench.lastKeyDown()",
            Value::Null,
        );
        let pressed = pressed
            .as_f64()
            .with_context(|| format!("the page answered {pressed} for its key-down time"))?;
        out.ui.push(between(pressed * 1e3, at));
        let t0 = epoch_us();
        side.select_first_lines(&side_file, lines, k)?;
        let at = rt.block_on(selection_arrival(&mut side_rx, &first_lines(lines, k)))?;
        out.base.push(between(t0, at));
    }
    Ok(out)
}
