//! Why the sidecar stopped abnormally.
//!
//! Clean ends (the editor closed stdin, asked for `shutdown`, or a signal
//! arrived) are not errors; they are [`crate::ExitReason`]s. What remains is
//! what the binary should report and exit non-zero for. Each message
//! includes its cause, so a report prints it once.

use ccbridge_lsp::framing::FramingError;
use ccbridge_server::ServerError;

#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    /// The server could not start (port, lock directory, randomness).
    #[error("cannot start the IDE server: {0}")]
    Start(ServerError),
    /// The server stopped with an error while running.
    #[error("the IDE server failed: {0}")]
    Engine(ServerError),
    /// The server task panicked or was cancelled.
    #[error("the IDE server task ended abnormally: {0}")]
    EngineTask(String),
    /// The editor's input broke: it ended inside a frame, or reading failed.
    #[error("the editor's input is unusable: {0}")]
    Input(FramingError),
}

impl From<FramingError> for SidecarError {
    fn from(e: FramingError) -> Self {
        SidecarError::Input(e)
    }
}
