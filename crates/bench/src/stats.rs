//! Percentiles of latency samples (nearest-rank, no interpolation).

use serde::Serialize;
use std::time::Duration;

/// A summary of samples, in microseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Summary {
    pub n: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
    pub min_us: f64,
    pub max_us: f64,
}

/// The nearest-rank `p`-th percentile of sorted `xs` (`p` in 0–100); the
/// default value (zero) for none.
pub fn percentile<T: Copy + Default>(sorted: &[T], p: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn summarize(samples: &[Duration]) -> Summary {
    let mut xs = samples.to_vec();
    xs.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let total: Duration = xs.iter().sum();
    Summary {
        n: xs.len(),
        p50_us: us(percentile(&xs, 50.0)),
        p99_us: us(percentile(&xs, 99.0)),
        mean_us: if xs.is_empty() {
            0.0
        } else {
            us(total) / xs.len() as f64
        },
        min_us: xs.first().copied().map_or(0.0, us),
        max_us: xs.last().copied().map_or(0.0, us),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let xs: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&xs, 50.0), Duration::from_micros(50));
        assert_eq!(percentile(&xs, 99.0), Duration::from_micros(99));
        assert_eq!(percentile(&xs, 100.0), Duration::from_micros(100));
        assert_eq!(percentile(&xs[..1], 99.0), Duration::from_micros(1));
        let s = summarize(&xs);
        assert_eq!(s.n, 100);
        assert!((s.mean_us - 50.5).abs() < 1e-9);
    }
}
