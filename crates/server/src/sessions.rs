//! The connected Claude Code sessions and what is waiting to reach them.
//!
//! A session becomes *ready* a little after its `tools/list`: the client
//! silently drops notifications that arrive within ~100 ms of it. Until
//! then it receives nothing; when it turns ready it gets the latest
//! selection again (its context resets on every connect) and the
//! at-mentions queued while no session was ready. Live notifications go to
//! ready sessions only. All of this happens under one lock, so a mention is
//! either delivered live or queued and replayed, never both or neither.

use crate::diffs::ConnId;
use crate::frontend::ClientInfo;
use ccbridge_protocol::jsonrpc::Notification;
use ccbridge_protocol::notifications::AtMentioned;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A frame for one connection's writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outbound {
    Text(String),
    Close(u16, String),
}

pub const SUPERSEDED_CODE: u16 = 4001;
/// `clientInfo.name` of one-shot tools (`ccbridge call`): they neither evict
/// the user's Claude Code session nor are evicted by it.
pub const AUXILIARY_CLIENT: &str = "ccbridge-call";
pub const SUPERSEDED_REASON: &str = "Another Claude Code session connected to this IDE";

struct Session {
    info: ClientInfo,
    tx: mpsc::Sender<Outbound>,
    ready: bool,
    /// The editor was told about this session (`client_connected`).
    announced: bool,
}

#[derive(Default)]
pub struct Sessions {
    sessions: BTreeMap<ConnId, Session>,
    mentions: VecDeque<(Instant, AtMentioned)>,
}

impl Sessions {
    /// Adds a session that finished `initialize`. Unless `multi`, every
    /// older session is returned for eviction (and forgotten here) — except
    /// that auxiliary clients ([`AUXILIARY_CLIENT`]) neither evict nor are
    /// evicted.
    pub fn register(
        &mut self,
        conn: ConnId,
        info: ClientInfo,
        tx: mpsc::Sender<Outbound>,
        multi: bool,
    ) -> Vec<(ConnId, mpsc::Sender<Outbound>, bool)> {
        let evicted = if multi || info.name == AUXILIARY_CLIENT {
            Vec::new()
        } else {
            let old: Vec<ConnId> = self
                .sessions
                .iter()
                .filter(|(_, s)| s.info.name != AUXILIARY_CLIENT)
                .map(|(c, _)| *c)
                .collect();
            old.into_iter()
                .filter_map(|c| self.sessions.remove(&c).map(|s| (c, s.tx, s.announced)))
                .collect()
        };
        self.sessions.insert(
            conn,
            Session {
                info,
                tx,
                ready: false,
                announced: false,
            },
        );
        evicted
    }

    /// Forgets a session; returns it and whether the editor was told of it.
    pub fn remove(&mut self, conn: ConnId) -> Option<(ClientInfo, bool)> {
        self.sessions.remove(&conn).map(|s| (s.info, s.announced))
    }

    pub fn set_pid(&mut self, conn: ConnId, pid: Option<u32>) {
        if let Some(s) = self.sessions.get_mut(&conn) {
            s.info.pid = pid;
        }
    }

    /// The session's info the first time it is asked for, `None` after (or
    /// when the session is gone): the editor hears of each session once,
    /// when its pid is known (`ide_connected`) or at the latest when it is
    /// ready.
    pub fn announce(&mut self, conn: ConnId) -> Option<ClientInfo> {
        let s = self.sessions.get_mut(&conn)?;
        if s.announced {
            return None;
        }
        s.announced = true;
        Some(s.info.clone())
    }

    pub fn infos(&self) -> Vec<ClientInfo> {
        self.sessions.values().map(|s| s.info.clone()).collect()
    }

    fn ready_senders(&self) -> impl Iterator<Item = &mpsc::Sender<Outbound>> {
        self.sessions.values().filter(|s| s.ready).map(|s| &s.tx)
    }

    /// Sends to every ready session; returns how many it reached.
    pub fn broadcast(&self, n: &Notification) -> usize {
        let text = ccbridge_protocol::jsonrpc::Message::Notification(n.clone()).to_json();
        let mut reached = 0;
        for tx in self.ready_senders() {
            match tx.try_send(Outbound::Text(text.clone())) {
                Ok(()) => reached += 1,
                Err(e) => tracing::warn!("a client is not reading; notification dropped: {e}"),
            }
        }
        tracing::debug!(method = %n.method, reached, "notification broadcast");
        reached
    }

    /// Delivers an at-mention now, or queues it (bounded in count and age)
    /// until a session is ready.
    pub fn mention(&mut self, m: AtMentioned, now: Instant, max_len: usize) {
        if self.broadcast(&m.clone().into_notification()) == 0 {
            self.mentions.push_back((now, m));
            while self.mentions.len() > max_len {
                self.mentions.pop_front();
            }
        }
    }

    /// Marks `conn` ready and returns, for it alone, what it must be sent
    /// first: `replay` (the latest selection) and the queued mentions that
    /// are younger than `max_age`. `None` if it was already ready or is gone.
    pub fn make_ready(
        &mut self,
        conn: ConnId,
        now: Instant,
        max_age: Duration,
    ) -> Option<(mpsc::Sender<Outbound>, Vec<AtMentioned>)> {
        let s = self.sessions.get_mut(&conn)?;
        // One-shot tools are not Claude: they never take context meant for it.
        if s.ready || s.info.name == AUXILIARY_CLIENT {
            return None;
        }
        s.ready = true;
        let tx = s.tx.clone();
        let mentions = self
            .mentions
            .drain(..)
            .filter(|(t, _)| now.saturating_duration_since(*t) <= max_age)
            .map(|(_, m)| m)
            .collect();
        Some((tx, mentions))
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontend::ClientId;

    fn info(n: u64) -> ClientInfo {
        ClientInfo {
            id: ClientId(n),
            name: "claude-code".into(),
            version: "2.1.328".into(),
            pid: None,
            agent: crate::AgentKind::Claude,
        }
    }

    fn mention(p: &str) -> AtMentioned {
        AtMentioned {
            file_path: p.into(),
            line_start: None,
            line_end: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn newest_wins_unless_multi() {
        let mut s = Sessions::default();
        let (a, _ra) = mpsc::channel(4);
        let (b, _rb) = mpsc::channel(4);
        assert!(s.register(1, info(1), a.clone(), false).is_empty());
        let ev = s.register(2, info(2), b.clone(), false);
        assert_eq!(ev.iter().map(|e| e.0).collect::<Vec<_>>(), vec![1]);
        assert_eq!(s.len(), 1);
        let (c, _rc) = mpsc::channel(4);
        assert!(s.register(3, info(3), c, true).is_empty());
        assert_eq!(s.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn auxiliary_clients_neither_evict_nor_are_evicted() {
        let mut s = Sessions::default();
        let aux = |n| ClientInfo {
            name: AUXILIARY_CLIENT.into(),
            ..info(n)
        };
        let (a, _ra) = mpsc::channel(4);
        assert!(s.register(1, info(1), a.clone(), false).is_empty());
        assert!(s.register(2, aux(2), a.clone(), false).is_empty());
        assert_eq!(s.len(), 2);
        let ev = s.register(3, info(3), a, false);
        assert_eq!(ev.iter().map(|e| e.0).collect::<Vec<_>>(), vec![1]);
        assert_eq!(s.len(), 2, "the auxiliary client stays");
    }

    #[tokio::test(start_paused = true)]
    async fn auxiliary_clients_never_take_queued_mentions() {
        let mut s = Sessions::default();
        let (tx, mut rx) = mpsc::channel(4);
        s.register(
            1,
            ClientInfo {
                name: AUXILIARY_CLIENT.into(),
                ..info(1)
            },
            tx,
            false,
        );
        assert!(s
            .make_ready(1, Instant::now(), Duration::from_secs(60))
            .is_none());
        s.mention(mention("/for-claude"), Instant::now(), 8);
        assert!(rx.try_recv().is_err());
        let (tx2, _rx2) = mpsc::channel(4);
        s.register(2, info(2), tx2, false);
        let (_, q) = s
            .make_ready(2, Instant::now(), Duration::from_secs(60))
            .unwrap();
        assert_eq!(q.len(), 1, "kept for the Claude session");
    }

    #[tokio::test(start_paused = true)]
    async fn mentions_queue_until_ready_and_expire() {
        let mut s = Sessions::default();
        let t0 = Instant::now();
        s.mention(mention("/old"), t0, 8);
        s.mention(mention("/new"), t0 + Duration::from_secs(100), 8);
        let (tx, mut rx) = mpsc::channel(8);
        s.register(1, info(1), tx, false);
        s.mention(
            mention("/while-not-ready"),
            t0 + Duration::from_secs(101),
            8,
        );
        assert!(
            rx.try_recv().is_err(),
            "nothing reaches a session before it is ready"
        );
        let (_, queued) = s
            .make_ready(1, t0 + Duration::from_secs(110), Duration::from_secs(60))
            .unwrap();
        assert_eq!(
            queued
                .iter()
                .map(|m| m.file_path.as_str())
                .collect::<Vec<_>>(),
            vec!["/new", "/while-not-ready"]
        );
        assert!(s.make_ready(1, t0, Duration::ZERO).is_none(), "only once");
        s.mention(mention("/live"), t0 + Duration::from_secs(111), 8);
        let Outbound::Text(t) = rx.try_recv().unwrap() else {
            panic!()
        };
        assert!(t.contains("/live"));
    }

    #[tokio::test(start_paused = true)]
    async fn queue_is_bounded() {
        let mut s = Sessions::default();
        for i in 0..100 {
            s.mention(mention(&format!("/{i}")), Instant::now(), 3);
        }
        let (tx, _rx) = mpsc::channel(8);
        s.register(1, info(1), tx, false);
        let (_, q) = s
            .make_ready(1, Instant::now(), Duration::from_secs(60))
            .unwrap();
        assert_eq!(q.len(), 3);
        assert_eq!(q[2].file_path, "/99");
    }
}
