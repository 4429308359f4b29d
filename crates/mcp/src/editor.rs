//! What the tools need from the editor, as a trait so the server can be
//! tested with a scripted editor: its diagnostics and unsaved state, the
//! review of a proposed change, the user's approval of a call, and a
//! command's live output. ccbridge's engine ([`EngineHandle`]) is the real
//! one: it passes each to whichever frontend is attached (the sidecar's
//! editor, the browser UI).

use async_trait::async_trait;
use ccbridge_protocol::editor::FileDiagnostics;
use ccbridge_server::{
    Approval, CommandEvent, EngineHandle, FrontendError, Proposal, RunId, Verdict,
};
use tokio::sync::watch;

#[async_trait]
pub trait Editor: Send + Sync + 'static {
    /// Every file's diagnostics as the editor last reported them.
    fn diagnostics(&self) -> Vec<FileDiagnostics>;

    /// Changes whenever the diagnostics do.
    fn diagnostics_changes(&self) -> watch::Receiver<u64>;

    /// The editor holds unsaved changes to the file at this absolute path.
    fn is_dirty(&self, path: &str) -> bool;

    /// Shows the change and waits for the user's verdict.
    async fn review(&self, proposal: Proposal) -> Result<Verdict, FrontendError>;

    /// Asks the user to allow a call.
    async fn approve(&self, approval: Approval) -> Result<bool, FrontendError>;

    /// A fresh id for a run.
    fn next_run(&self) -> RunId;

    /// A running command's progress, to show.
    fn command_event(&self, event: CommandEvent);
}

#[async_trait]
impl Editor for EngineHandle {
    fn diagnostics(&self) -> Vec<FileDiagnostics> {
        EngineHandle::diagnostics(self)
    }

    fn diagnostics_changes(&self) -> watch::Receiver<u64> {
        EngineHandle::diagnostics_changes(self)
    }

    fn is_dirty(&self, path: &str) -> bool {
        EngineHandle::is_dirty(self, path)
    }

    async fn review(&self, proposal: Proposal) -> Result<Verdict, FrontendError> {
        EngineHandle::review(self, proposal).await
    }

    async fn approve(&self, approval: Approval) -> Result<bool, FrontendError> {
        EngineHandle::approve(self, approval).await
    }

    fn next_run(&self) -> RunId {
        EngineHandle::next_run(self)
    }

    fn command_event(&self, event: CommandEvent) {
        EngineHandle::command_event(self, event)
    }
}
