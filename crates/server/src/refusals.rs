//! What happens after an upgrade is refused: a growing delay for repeated
//! authentication failures, and a summary in the log instead of a line each.
//!
//! Any local process (and, through a browser, any web page) can reach the
//! loopback port. Without these, wrong tokens were answered at once, 5,500
//! a second from one client (security checklist item 44), and every refusal
//! wrote a log line: a local process produced 1.6 MB of log in 5 s.
//!
//! - [`AuthThrottle`]: after [`FREE_FAILURES`] failed authentications (401,
//!   and 403 for browser origins and foreign hosts) from one source address
//!   within [`FORGET_AFTER`], each further failure is answered only after a
//!   delay that doubles from [`BASE_DELAY`] up to [`MAX_DELAY`]. The
//!   decision itself is made at once, so a client with the right token is
//!   served at full speed, and a held connection keeps its handshake slot,
//!   so at most a bounded number wait (the oldest is abandoned for a
//!   newcomer). Source addresses are tracked up to [`MAX_SOURCES`]; beyond
//!   that they share one record (loopback has 16 million addresses).
//! - [`RefusalLog`]: the first refusal of a quiet period is logged with its
//!   reason; later ones are counted and summarised once per
//!   [`SUMMARY_PERIOD`] ("N refused upgrades in the last minute, last
//!   reason …"), together with idle handshakes abandoned for newer ones.

use crate::handshake::Rejection;
use crate::ide::lock;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// Failures from one source answered without delay.
pub const FREE_FAILURES: u32 = 10;
/// The first delay; it doubles with each further failure.
pub const BASE_DELAY: Duration = Duration::from_millis(50);
/// The longest delay.
pub const MAX_DELAY: Duration = Duration::from_secs(2);
/// A source that has not failed for this long starts afresh.
pub const FORGET_AFTER: Duration = Duration::from_secs(10);
/// Sources tracked separately.
pub const MAX_SOURCES: usize = 256;
/// How often refusals are summarised.
pub const SUMMARY_PERIOD: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
}

/// Per-source delays for repeated authentication failures.
#[derive(Debug, Default)]
pub struct AuthThrottle {
    sources: Mutex<HashMap<IpAddr, Failures>>,
}

/// Where sources beyond [`MAX_SOURCES`] are counted together.
const OVERFLOW: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

impl AuthThrottle {
    /// Whether a refusal counts as a failed authentication.
    pub fn counts(r: &Rejection) -> bool {
        matches!(r.status, 401 | 403)
    }

    /// Records a failure from `source` at `now`; returns how long to wait
    /// before answering it.
    pub fn failed(&self, source: IpAddr, now: Instant) -> Duration {
        let mut sources = lock(&self.sources);
        if sources.len() >= MAX_SOURCES && !sources.contains_key(&source) {
            sources.retain(|_, f| now.saturating_duration_since(f.last) < FORGET_AFTER);
        }
        let key = if sources.len() >= MAX_SOURCES && !sources.contains_key(&source) {
            OVERFLOW
        } else {
            source
        };
        let f = sources.entry(key).or_insert(Failures {
            count: 0,
            last: now,
        });
        if now.saturating_duration_since(f.last) >= FORGET_AFTER {
            f.count = 0;
        }
        f.count = f.count.saturating_add(1);
        f.last = now;
        delay_for(f.count)
    }
}

/// The delay before answering the `n`th failure in a row.
pub fn delay_for(n: u32) -> Duration {
    match n.checked_sub(FREE_FAILURES + 1) {
        None => Duration::ZERO,
        Some(extra) => BASE_DELAY
            .checked_mul(1u32.checked_shl(extra.min(16)).unwrap_or(u32::MAX))
            .map_or(MAX_DELAY, |d| d.min(MAX_DELAY)),
    }
}

#[derive(Debug)]
struct Window {
    start: Instant,
    refused: u64,
    abandoned: u64,
    last_reason: Option<String>,
    /// The refusal that opened this quiet period was logged in full.
    first_logged: bool,
}

/// Refusals counted and summarised instead of logged one by one.
#[derive(Debug)]
pub struct RefusalLog {
    window: Mutex<Window>,
}

impl RefusalLog {
    pub fn new(now: Instant) -> Self {
        RefusalLog {
            window: Mutex::new(Window {
                start: now,
                refused: 0,
                abandoned: 0,
                last_reason: None,
                first_logged: false,
            }),
        }
    }

    /// An upgrade was refused for `reason`.
    pub fn refused(&self, reason: String) {
        let mut w = lock(&self.window);
        if !w.first_logged {
            w.first_logged = true;
            tracing::info!(
                "upgrade refused: {reason} (further refusals are summarised once a minute)"
            );
        } else {
            w.refused += 1;
            w.last_reason = Some(reason);
        }
    }

    /// A handshake still in progress was abandoned for a newer connection.
    pub fn abandoned(&self) {
        lock(&self.window).abandoned += 1;
    }

    /// Logs what was counted since the last summary, if a period has passed
    /// (or `force`, at shutdown). A quiet period makes the next refusal be
    /// logged in full again.
    pub fn summarise(&self, now: Instant, force: bool) {
        let mut w = lock(&self.window);
        if !force && now.saturating_duration_since(w.start) < SUMMARY_PERIOD {
            return;
        }
        if w.refused > 0 || w.abandoned > 0 {
            tracing::info!(
                "{} more refused upgrades in the last {}s, last reason: {}; {} idle handshakes abandoned for newer connections",
                w.refused,
                now.saturating_duration_since(w.start).as_secs(),
                w.last_reason.as_deref().unwrap_or("-"),
                w.abandoned
            );
        } else {
            w.first_logged = false;
        }
        w.start = now;
        w.refused = 0;
        w.abandoned = 0;
        w.last_reason = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_start_after_the_free_failures_double_and_cap() {
        assert_eq!(delay_for(1), Duration::ZERO);
        assert_eq!(delay_for(FREE_FAILURES), Duration::ZERO);
        assert_eq!(delay_for(FREE_FAILURES + 1), BASE_DELAY);
        assert_eq!(delay_for(FREE_FAILURES + 2), BASE_DELAY * 2);
        assert_eq!(delay_for(FREE_FAILURES + 3), BASE_DELAY * 4);
        assert_eq!(delay_for(FREE_FAILURES + 10), MAX_DELAY);
        assert_eq!(delay_for(u32::MAX), MAX_DELAY);
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_per_source_and_forgotten() {
        let t = AuthThrottle::default();
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let now = Instant::now();
        for _ in 0..FREE_FAILURES {
            assert_eq!(t.failed(a, now), Duration::ZERO);
        }
        assert_eq!(t.failed(a, now), BASE_DELAY);
        assert_eq!(t.failed(b, now), Duration::ZERO, "another source");
        let later = now + FORGET_AFTER;
        assert_eq!(t.failed(a, later), Duration::ZERO, "forgotten");
    }

    #[tokio::test(start_paused = true)]
    async fn many_sources_share_one_record_beyond_the_cap() {
        let t = AuthThrottle::default();
        let now = Instant::now();
        for i in 0..(MAX_SOURCES as u32 + 50) {
            let ip = IpAddr::V4(Ipv4Addr::from(0x7f00_0001 + i));
            for _ in 0..FREE_FAILURES {
                t.failed(ip, now);
            }
        }
        assert!(lock(&t.sources).len() <= MAX_SOURCES + 1);
        let fresh = IpAddr::V4(Ipv4Addr::new(127, 9, 9, 9));
        assert!(
            t.failed(fresh, now) > Duration::ZERO,
            "an overflowing source is not a free pass"
        );
    }
}
