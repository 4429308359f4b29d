//! One Claude Code session as the request handlers see it (`Conn`): its id,
//! the channel to its socket's writer, whether it has initialized, and the
//! engine state it shares. The socket loop that owns it is `connection`;
//! the router answers through it; the tools never see it (they get a
//! [`Caller`]).

use crate::frontend::{Activity, ClientId, ClientInfo};
use crate::ide::{lock, Caller};
use crate::sessions::Outbound;
use crate::shared::Shared;
use ccbridge_protocol::jsonrpc::RequestId;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// What request handlers know about their connection.
pub(crate) struct Conn {
    pub id: crate::diffs::ConnId,
    pub shared: Arc<Shared>,
    pub tx: mpsc::Sender<Outbound>,
    pub initialized: AtomicBool,
    /// The ids of the calls waiting for the editor or the user: one is
    /// not reused until it is answered (two answers with one id, the
    /// client could not tell which is which).
    pub waiting: Mutex<HashSet<RequestId>>,
}

impl Conn {
    /// Queues a frame for the writer; false once the connection is gone.
    pub async fn send(&self, text: String) -> bool {
        self.tx.send(Outbound::Text(text)).await.is_ok()
    }

    /// Takes `id` for a waiting call; false when one has it.
    pub fn take_id(&self, id: &RequestId) -> bool {
        lock(&self.waiting).insert(id.clone())
    }

    /// Frees `id` (its call is answered).
    pub fn free_id(&self, id: &RequestId) {
        lock(&self.waiting).remove(id);
    }

    pub fn client_id(&self) -> ClientId {
        ClientId(self.id)
    }

    /// This session as the caller of a tool.
    pub fn caller(&self) -> Caller {
        Caller {
            conn: self.id,
            client: self.client_id(),
        }
    }

    /// Called when `initialize` has been answered.
    pub fn initialized(self: &Arc<Self>, info: ClientInfo) {
        self.initialized.store(true, Ordering::SeqCst);
        let evicted = lock(&self.shared.sessions).register(
            self.id,
            info.clone(),
            self.tx.clone(),
            self.shared.config.multi_client,
        );
        for (old, tx, announced) in evicted {
            tracing::info!(
                old,
                new = self.id,
                "newer session connected; evicting the older one"
            );
            let _ = tx.try_send(Outbound::Close(
                crate::sessions::SUPERSEDED_CODE,
                crate::sessions::SUPERSEDED_REASON.into(),
            ));
            // The session is forgotten here, so its connection's teardown
            // will not find it: tell the editor now (if it was told of it).
            if announced {
                self.shared.ide.frontend.client_disconnected(ClientId(old));
            }
            self.shared
                .ide
                .frontend
                .activity(Activity::SessionReplaced {
                    old: ClientId(old),
                    by: self.client_id(),
                });
        }
        tracing::info!(client = self.id, name = %info.name, version = %info.version, "Claude Code session connected");
    }

    /// Schedules the replay of context `delay` from now.
    pub fn ready_after(self: &Arc<Self>, delay: Duration) {
        let shared = self.shared.clone();
        let id = self.id;
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            shared.make_ready(id);
        });
    }
}
