//! `token-bench`: how long the token check takes for guesses that share
//! more or less of the token (security checklist item 41). Measured here,
//! never asserted in a test: the machines are shared and noisy.
//!
//! ```text
//! cargo run --release -p ccbridge-bench --bin token-bench
//! ```
//!
//! Every credential ccbridge checks (the IDE port's token, the tools
//! server's and the companions' bearer tokens, the page's link tokens and
//! sessions) goes through `AuthToken::matches`: the guess is hashed and the
//! digests compared with `subtle`. A comparison that stopped at the first
//! wrong byte would answer a guess sharing the token's first bytes later
//! than one sharing none, letting a caller find the token byte by byte;
//! here the time depends on the guess's length (hashing it) and on nothing
//! it shares with the token. Beside it, the same guesses compared with
//! `==` on the bytes, the comparison the check must not be.
//!
//! Each round times a batch of checks for every guess, in an order rotated
//! from round to round, so drift in the machine's speed falls on all of
//! them alike; the table gives the median nanoseconds per check and the
//! 10th–90th percentiles.

use ccbridge_bench::stats::percentile;
use ccbridge_server::token::AuthToken;
use clap::Parser;
use std::hint::black_box;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "token-bench",
    about = "Times the token check for guesses sharing more or less of the token"
)]
struct Args {
    /// Rounds (each times one batch per guess).
    #[arg(long, default_value_t = 300)]
    rounds: usize,
    /// Checks per batch.
    #[arg(long, default_value_t = 20_000)]
    batch: usize,
}

/// The guesses: the token itself, then the token with one byte changed at
/// the first, middle and last place, and one sharing nothing.
fn guesses(token: &str) -> Vec<(&'static str, Vec<u8>)> {
    let changed = |at: usize| {
        let mut g = token.as_bytes().to_vec();
        g[at] = if g[at] == b'0' { b'1' } else { b'0' };
        g
    };
    let n = token.len();
    vec![
        ("the token", token.as_bytes().to_vec()),
        ("wrong at the first byte", changed(0)),
        ("wrong at the middle byte", changed(n / 2)),
        ("wrong at the last byte", changed(n - 1)),
        ("no byte right", token.bytes().map(|b| b ^ 0x40).collect()),
    ]
}

/// Nanoseconds per check over one batch.
fn per_check(batch: usize, mut check: impl FnMut() -> bool) -> f64 {
    let start = Instant::now();
    for _ in 0..batch {
        black_box(check());
    }
    start.elapsed().as_secs_f64() * 1e9 / batch as f64
}

/// "median (p10–p90)" of nanosecond samples (nearest rank).
fn cell(samples: &[f64]) -> String {
    let mut xs = samples.to_vec();
    xs.sort_by(f64::total_cmp);
    let at = |p: f64| percentile(&xs, p);
    format!("{:.1} ns ({:.1}–{:.1})", at(50.0), at(10.0), at(90.0))
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(
        args.rounds > 0 && args.batch > 0,
        "--rounds and --batch must be at least 1"
    );
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; the figures are meaningless (use --release)");
    }
    let token = AuthToken::generate()?;
    let secret = token.expose().as_bytes().to_vec();
    let guesses = guesses(token.expose());
    let mut matches = vec![Vec::new(); guesses.len()];
    let mut naive = vec![Vec::new(); guesses.len()];
    for round in 0..args.rounds {
        for k in 0..guesses.len() {
            let i = (k + round) % guesses.len();
            let guess = &guesses[i].1;
            matches[i].push(per_check(args.batch, || {
                token.matches(black_box(guess.as_slice()))
            }));
            naive[i].push(per_check(args.batch, || {
                black_box(secret.as_slice()) == black_box(guess.as_slice())
            }));
        }
    }
    println!(
        "| guess (64 bytes) | `AuthToken::matches`: median (p10–p90) | `==`: median (p10–p90) |"
    );
    println!("|---|---|---|");
    for (i, (name, _)) in guesses.iter().enumerate() {
        println!("| {name} | {} | {} |", cell(&matches[i]), cell(&naive[i]));
    }
    println!(
        "\n{} rounds of {} checks per guess; `token-bench --rounds {} --batch {}`",
        args.rounds, args.batch, args.rounds, args.batch
    );
    Ok(())
}
