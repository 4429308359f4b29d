//! The IDE as the tools see it, beneath every transport: the editor's state,
//! the registry of pending diffs, and the [`Frontend`] that shows them, with
//! the two calls that combine them (an editor request under its timeout,
//! closing views without waiting).
//!
//! A transport holds an `Arc<Ide>` and says who is calling with a
//! [`Caller`]: the Claude Code WebSocket server does (`connection.rs`,
//! `router.rs`), and so can any other server that offers these tools.
//! Nothing here knows about connections, so the imports run one way:
//! `engine` → `connection` → `router` → `tools` → `ide`.

use crate::diffs::{ConnId, DiffRegistry};
use crate::frontend::{ClientId, ClientInfo, CloseReason, DiffId, Frontend, FrontendError};
use crate::state::EditorState;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// The shared editor side of every session.
pub(crate) struct Ide {
    pub frontend: Arc<dyn Frontend>,
    pub state: Mutex<EditorState>,
    pub diffs: Mutex<DiffRegistry>,
    /// How long an editor request may take (`Config::frontend_timeout`).
    pub frontend_timeout: Duration,
    /// `tools/list` results, serialized once: `[without, with]` executeCode.
    pub tools_list_json: [OnceLock<Arc<str>>; 2],
    /// Counts changes of the editor's diagnostics, for callers that wait
    /// for the diagnostics of a file they wrote (`review.rs`).
    pub diagnostics_rev: tokio::sync::watch::Sender<u64>,
    /// Counts changes of the editor's selection and open tabs, for servers
    /// that push the editor's context themselves (the Gemini/Qwen
    /// companion).
    pub context_rev: tokio::sync::watch::Sender<u64>,
    /// The last [`crate::RunId`] handed out.
    pub runs: std::sync::atomic::AtomicU64,
    /// The agent sessions outside the WebSocket server (Gemini CLI, Qwen
    /// Code: [`crate::AgentSession`]), by id, while they last.
    pub agent_sessions: Mutex<std::collections::BTreeMap<u64, ClientInfo>>,
}

/// Who calls a tool: the session's diffs are scoped to `conn`, and the
/// editor is told which Claude session (`client`) asked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caller {
    pub conn: ConnId,
    pub client: ClientId,
}

/// Locks a mutex, recovering from poisoning: the data stays consistent
/// because no critical section here can panic halfway through an update.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Ide {
    pub fn new(frontend: Arc<dyn Frontend>, state: EditorState, frontend_timeout: Duration) -> Ide {
        Ide {
            frontend,
            state: Mutex::new(state),
            diffs: Mutex::new(DiffRegistry::default()),
            frontend_timeout,
            tools_list_json: Default::default(),
            diagnostics_rev: tokio::sync::watch::Sender::new(0),
            context_rev: tokio::sync::watch::Sender::new(0),
            runs: Default::default(),
            agent_sessions: Default::default(),
        }
    }

    /// Runs an editor request under the configured timeout.
    pub async fn editor<T>(
        &self,
        fut: impl Future<Output = Result<T, FrontendError>>,
    ) -> Result<T, FrontendError> {
        tokio::time::timeout(self.frontend_timeout, fut)
            .await
            .unwrap_or(Err(FrontendError::Timeout))
    }

    /// The editor's diagnostics changed.
    pub fn diagnostics_changed(&self) {
        self.diagnostics_rev.send_modify(|n| *n += 1);
        self.frontend.diagnostics_changed();
    }

    /// Closes editor views without waiting for the editor.
    pub fn close_views(self: &Arc<Self>, ids: Vec<(DiffId, CloseReason)>) {
        for (id, reason) in ids {
            let ide = self.clone();
            tokio::spawn(async move {
                if let Err(e) = ide.editor(ide.frontend.close_diff(id, reason)).await {
                    tracing::warn!(%id, "the editor could not close a diff view: {e}");
                }
            });
        }
    }
}
