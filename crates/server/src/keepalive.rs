//! Deciding when to ping a client and when to give up on it.
//!
//! A ping goes out every `interval`; any frame from the client counts as a
//! sign of life; a client silent for two intervals is dropped. A laptop that
//! slept wakes up with every timer overdue and every client "silent", so a
//! tick that arrives more than 1.5 intervals after the previous one is taken
//! as a wake-up: the silence clock restarts instead of dropping the client
//! (the same rule claudecode.nvim arrived at).
//!
//! Pure state over `tokio::time::Instant`, so it is tested under paused time.

use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug)]
pub struct Keepalive {
    interval: Duration,
    last_seen: Instant,
    last_tick: Instant,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    Ping,
    Drop,
}

impl Keepalive {
    pub fn new(interval: Duration, now: Instant) -> Self {
        Keepalive {
            interval,
            last_seen: now,
            last_tick: now,
        }
    }

    /// Any frame arrived from the client.
    pub fn seen(&mut self, now: Instant) {
        self.last_seen = now;
    }

    /// The ping timer fired.
    pub fn tick(&mut self, now: Instant) -> Action {
        let since_tick = now.saturating_duration_since(self.last_tick);
        self.last_tick = now;
        if since_tick > self.interval.mul_f32(1.5) {
            // Overdue timer: the machine slept. Do not blame the client.
            self.last_seen = now;
            return Action::Ping;
        }
        if now.saturating_duration_since(self.last_seen) >= self.interval * 2 {
            Action::Drop
        } else {
            Action::Ping
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: Duration = Duration::from_secs(30);

    #[tokio::test(start_paused = true)]
    async fn silent_client_is_dropped_after_two_intervals() {
        let t0 = Instant::now();
        let mut k = Keepalive::new(I, t0);
        assert_eq!(k.tick(t0 + I), Action::Ping);
        assert_eq!(k.tick(t0 + I * 2), Action::Drop);
    }

    #[tokio::test(start_paused = true)]
    async fn answering_client_stays() {
        let t0 = Instant::now();
        let mut k = Keepalive::new(I, t0);
        for n in 1..100 {
            assert_eq!(k.tick(t0 + I * n), Action::Ping);
            k.seen(t0 + I * n + Duration::from_millis(5));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn waking_from_sleep_is_not_silence() {
        let t0 = Instant::now();
        let mut k = Keepalive::new(I, t0);
        assert_eq!(k.tick(t0 + I), Action::Ping);
        // Suspended for an hour: the next tick is very late.
        let wake = t0 + I + Duration::from_secs(3600);
        assert_eq!(k.tick(wake), Action::Ping);
        k.seen(wake + Duration::from_millis(3));
        assert_eq!(k.tick(wake + I), Action::Ping);
        // ...but a client that stays silent after waking is still dropped.
        assert_eq!(k.tick(wake + I * 2), Action::Ping);
        assert_eq!(k.tick(wake + I * 3), Action::Drop);
    }
}
