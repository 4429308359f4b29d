//! The results table: one row per figure, ccbridge beside its baseline (the
//! floor, or for the browser UI the sidecar path), and a pass/fail column
//! for the targets. Rendered as Markdown or JSON.

use crate::stats::Summary;
use serde::Serialize;

/// What a row's figure is judged against.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    /// ccbridge's figure at most `factor` times the floor's.
    RatioToFloor { factor: f64 },
    /// ccbridge's figure below `limit` (in the row's unit).
    Below { limit: f64 },
    /// ccbridge's figure at most `limit` (in the row's unit).
    AtMost { limit: f64 },
}

impl Target {
    fn describe(&self, unit: &str, baseline: &str) -> String {
        match self {
            Target::RatioToFloor { factor } => format!("≤ {factor}× {baseline}"),
            Target::Below { limit } => format!("< {} {unit}", fmt_num(*limit)),
            Target::AtMost { limit } => format!("≤ {} {unit}", fmt_num(*limit)),
        }
    }

    fn passes(&self, ours: f64, floor: Option<f64>) -> Option<bool> {
        match self {
            Target::RatioToFloor { factor } => floor.map(|f| ours <= f * factor),
            Target::Below { limit } => Some(ours < *limit),
            Target::AtMost { limit } => Some(ours <= *limit),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub benchmark: String,
    pub metric: String,
    pub unit: String,
    pub ccbridge: f64,
    pub floor: Option<f64>,
    pub ratio: Option<f64>,
    pub target: Option<Target>,
    pub pass: Option<bool>,
}

/// The unit latency rows are shown in.
#[derive(Debug, Clone, Copy)]
pub enum LatencyUnit {
    Micros,
    Millis,
}

impl Row {
    pub fn new(
        benchmark: impl Into<String>,
        metric: impl Into<String>,
        unit: impl Into<String>,
        ccbridge: f64,
        floor: Option<f64>,
        target: Option<Target>,
    ) -> Row {
        let ratio = floor.filter(|f| *f > 0.0).map(|f| ccbridge / f);
        let pass = target.and_then(|t| t.passes(ccbridge, floor));
        Row {
            benchmark: benchmark.into(),
            metric: metric.into(),
            unit: unit.into(),
            ccbridge,
            floor,
            ratio,
            target,
            pass,
        }
    }

    /// The p50 and p99 rows of a latency benchmark, `ours` beside `base`,
    /// in µs as measured or in ms.
    pub fn latencies(
        benchmark: &str,
        unit: LatencyUnit,
        ours: &Summary,
        base: &Summary,
        p50_target: Option<Target>,
        p99_target: Option<Target>,
    ) -> [Row; 2] {
        let (name, scale) = match unit {
            LatencyUnit::Micros => ("µs", 1.0),
            LatencyUnit::Millis => ("ms", 1e-3),
        };
        [
            Row::new(
                benchmark,
                "p50",
                name,
                ours.p50_us * scale,
                Some(base.p50_us * scale),
                p50_target,
            ),
            Row::new(
                benchmark,
                "p99",
                name,
                ours.p99_us * scale,
                Some(base.p99_us * scale),
                p99_target,
            ),
        ]
    }
}

/// Everything one run produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The two figure columns' names: ccbridge's and its baseline's.
    pub columns: [&'static str; 2],
    pub machine: Machine,
    pub ccbridge_binary: String,
    pub rows: Vec<Row>,
    /// Extra facts worth printing under the table (sizes, counts).
    pub notes: Vec<String>,
    /// Full summaries (n, p50, p99, mean, min, max) per series.
    pub series: Vec<Series>,
    pub wall_seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub name: String,
    pub server: &'static str,
    pub summary: crate::stats::Summary,
}

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub nproc: usize,
    pub cpu: String,
    pub kernel: String,
}

impl Machine {
    pub fn detect() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into());
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu,
            kernel,
        }
    }
}

fn fmt_num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

impl Report {
    /// Prints the report on stdout: pretty JSON, or the Markdown table.
    pub fn print(&self, json: bool) -> serde_json::Result<()> {
        if json {
            println!("{}", serde_json::to_string_pretty(self)?);
        } else {
            print!("{}", self.markdown());
        }
        Ok(())
    }

    pub fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "Machine: {} × {} (kernel {}); ccbridge binary: {}; run took {:.0} s.\n\n",
            self.machine.nproc,
            self.machine.cpu,
            self.machine.kernel,
            self.ccbridge_binary,
            self.wall_seconds
        ));
        let [ours, base] = self.columns;
        out.push_str(&format!(
            "| Benchmark | Metric | {ours} | {base} | {ours} / {base} | Target | Result |\n"
        ));
        out.push_str("|---|---|---:|---:|---:|---|---|\n");
        for r in &self.rows {
            let floor = r
                .floor
                .map_or("—".into(), |f| format!("{} {}", fmt_num(f), r.unit));
            let ratio = r.ratio.map_or("—".into(), |x| format!("{x:.2}×"));
            let target = r.target.map_or("—".into(), |t| t.describe(&r.unit, base));
            let result = match r.pass {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "—",
            };
            out.push_str(&format!(
                "| {} | {} | {} {} | {} | {} | {} | {} |\n",
                r.benchmark,
                r.metric,
                fmt_num(r.ccbridge),
                r.unit,
                floor,
                ratio,
                target,
                result
            ));
        }
        if !self.notes.is_empty() {
            out.push('\n');
            for n in &self.notes {
                out.push_str(&format!("- {n}\n"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_judge_ratio_and_limits() {
        let r = Row::new(
            "b",
            "p50",
            "µs",
            110.0,
            Some(100.0),
            Some(Target::RatioToFloor { factor: 1.2 }),
        );
        assert_eq!(r.pass, Some(true));
        let r = Row::new(
            "b",
            "p50",
            "µs",
            130.0,
            Some(100.0),
            Some(Target::RatioToFloor { factor: 1.2 }),
        );
        assert_eq!(r.pass, Some(false));
        let r = Row::new(
            "b",
            "p99",
            "ms",
            0.5,
            None,
            Some(Target::Below { limit: 1.0 }),
        );
        assert_eq!(r.pass, Some(true));
        assert_eq!(Row::new("b", "p99", "ms", 0.5, None, None).pass, None);
    }
}
