//! What the WebSocket server's parts share: the accept loop and the
//! editor-event loop (`engine`), each connection (`connection`) and its
//! router (`router`). The tools see only the [`Ide`] inside it.

use crate::config::Config;
use crate::diffs::ConnId;
use crate::frontend::CloseReason;
use crate::ide::{lock, Ide};
use crate::lockfile::{LockError, LockGuard};
use crate::refusals::{AuthThrottle, RefusalLog};
use crate::sessions::Sessions;
use crate::token::AuthToken;
use crate::traffic::TrafficLog;
use ccbridge_protocol::lockfile::{LockFile, ServerProcess};
use ccbridge_protocol::notifications::SelectionChanged;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use tokio::time::Instant;

/// State shared by the accept loop, the connections and the editor-event
/// loop.
pub(crate) struct Shared {
    pub config: Config,
    pub token: AuthToken,
    pub port: u16,
    /// The editor side the tools use (state, diffs, frontend).
    pub ide: Arc<Ide>,
    pub sessions: Mutex<Sessions>,
    pub lock: Mutex<Option<LockGuard>>,
    pub shutdown: watch::Sender<bool>,
    /// `tools/call` tasks that have not yet sent their answer.
    pub calls_in_flight: std::sync::atomic::AtomicUsize,
    pub calls_done: tokio::sync::Notify,
    /// This process, recorded in the lock file so a lock left behind by a
    /// killed ccbridge is known to be stale even while the editor lives.
    pub server_process: ServerProcess,
    /// Delays for repeated authentication failures.
    pub throttle: AuthThrottle,
    /// Refused upgrades, summarised in the log.
    pub refusals: RefusalLog,
    /// `--log-traffic`.
    pub traffic: Option<Arc<TrafficLog>>,
    pub next_conn: AtomicU64,
    /// Other advertisements of this IDE that follow the lock file
    /// (the companion server's discovery files).
    pub mirrors: Mutex<Vec<Arc<dyn crate::lockfile::LockMirror>>>,
    /// The workspace tools server, advertised in the lock file.
    pub tools: Mutex<Option<ccbridge_protocol::lockfile::McpEndpoint>>,
    /// The review page (standalone mode), advertised in the lock file.
    pub page: Mutex<Option<ccbridge_protocol::lockfile::PageLink>>,
}

impl Shared {
    pub fn next_conn(&self) -> ConnId {
        self.next_conn.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn lock_contents(&self) -> LockFile {
        let s = lock(&self.ide.state);
        let mut l = LockFile::new(
            s.pid,
            s.workspace_folders.clone(),
            s.ide_name.clone(),
            self.token.expose().to_owned(),
        );
        l.server_process = Some(self.server_process);
        l.tools = lock(&self.tools).clone();
        l.page = lock(&self.page).clone();
        l
    }

    pub fn rewrite_lock(&self) -> Result<(), LockError> {
        let contents = self.lock_contents();
        if let Some(g) = lock(&self.lock).as_ref() {
            g.update(&contents)?;
        }
        let mirrors = lock(&self.mirrors).clone();
        for m in mirrors {
            m.rewrite(&contents)?;
        }
        Ok(())
    }

    /// Makes `conn` ready: replays the latest selection, then the queued
    /// at-mentions, to it alone.
    ///
    /// The selection is read with the sessions locked. Read before, a newer
    /// selection could be flushed in between (`flush_selection`: the
    /// broadcast skips this session, not ready yet, and counts it as sent)
    /// and the older one replayed after it: Claude kept the older selection
    /// for good. Locked, the flush waits, then reaches this session too.
    /// (Nothing takes the sessions while holding the state, so the order is
    /// safe.)
    pub fn make_ready(&self, conn: ConnId) {
        let mut sessions = lock(&self.sessions);
        let selection = lock(&self.ide.state).latest.clone();
        if let Some((tx, mentions)) =
            sessions.make_ready(conn, Instant::now(), self.config.at_mention_max_age)
        {
            let notes = selection
                .map(|s| SelectionChanged::from(&s).into_notification())
                .into_iter()
                .chain(mentions.into_iter().map(|m| m.into_notification()));
            for n in notes {
                tracing::debug!(conn, method = %n.method, "notification replayed");
                let text = ccbridge_protocol::jsonrpc::Message::Notification(n).to_json();
                let _ = tx.try_send(crate::sessions::Outbound::Text(text));
            }
            tracing::debug!(conn, "client ready for notifications");
        }
        let announce = sessions.announce(conn);
        drop(sessions);
        if let Some(info) = announce {
            self.ide.frontend.client_connected(&info);
        }
    }

    /// A connection ended: forget it and settle its diffs.
    pub fn disconnected(self: &Arc<Self>, conn: ConnId) {
        let gone = lock(&self.sessions).remove(conn);
        let ids = lock(&self.ide.diffs).close_all(Some(conn), CloseReason::Disconnected);
        self.ide.close_views(ids);
        if let Some((info, announced)) = gone {
            tracing::info!(client = info.id.0, "Claude Code session disconnected");
            if announced {
                self.ide.frontend.client_disconnected(info.id);
            }
        }
    }
}
