//! The tools, one file each, free of the MCP library: arguments in, a
//! [`Reply`] out (`service.rs` turns it into an MCP result). Each reads and
//! writes through the [`Workspace`] (confined to its folders) and asks the
//! user through the [`Editor`] when the [`ApprovalMode`] says so.

pub mod apply_diff;
mod change;
pub mod execute_command;
pub mod get_diagnostics;
pub mod list_files;
pub mod read_file;
pub mod search_files;
pub mod write_file;

use crate::approval::ApprovalMode;
use crate::editor::Editor;
use ccbridge_server::Approval;
use ccbridge_tools::file_locks::FileLocks;
use ccbridge_workspace::Workspace;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// A tool's answer: text for the model, or an error for it (`isError`).
pub type Reply = Result<String, String>;

/// How the tools behave. The approval mode can change while serving
/// ([`Context::set_approval`]); the rest is fixed when the server starts.
#[derive(Debug, Clone)]
pub struct Settings {
    pub approval: ApprovalMode,
    /// How long a write waits for the editor's diagnostics of the file.
    pub diagnostics_delay: Duration,
    /// How long an edit waits for another edit of the same file.
    pub lock_wait: Duration,
    /// Values removed from a command's environment (the servers' tokens).
    pub secrets: Vec<String>,
    /// Commands at once, waiting for approval or running; one more is
    /// refused (a model looping over `execute_command` cannot fork-bomb
    /// the machine, even in the `never` mode).
    pub max_commands: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            approval: ApprovalMode::default(),
            diagnostics_delay: Duration::from_millis(1500),
            lock_wait: ccbridge_tools::file_locks::DEFAULT_WAIT,
            secrets: Vec::new(),
            max_commands: 8,
        }
    }
}

/// What every tool call sees. The workspace and the approval mode follow
/// the editor (its `initialize` may change both while the server runs).
pub struct Context {
    ws: RwLock<Arc<Workspace>>,
    approval: RwLock<ApprovalMode>,
    pub editor: Arc<dyn Editor>,
    pub settings: Settings,
    pub locks: FileLocks,
    /// One permit per command under way ([`Settings::max_commands`]).
    pub commands: Arc<tokio::sync::Semaphore>,
}

impl Context {
    pub fn new(ws: Arc<Workspace>, editor: Arc<dyn Editor>, settings: Settings) -> Context {
        Context {
            ws: RwLock::new(ws),
            approval: RwLock::new(settings.approval),
            editor,
            commands: Arc::new(tokio::sync::Semaphore::new(settings.max_commands)),
            settings,
            locks: FileLocks::default(),
        }
    }

    /// The workspace a call works in (calls under way keep theirs).
    pub fn ws(&self) -> Arc<Workspace> {
        self.ws.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_workspace(&self, ws: Arc<Workspace>) {
        *self.ws.write().unwrap_or_else(|p| p.into_inner()) = ws;
    }

    pub fn approval(&self) -> ApprovalMode {
        *self.approval.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_approval(&self, mode: ApprovalMode) {
        *self.approval.write().unwrap_or_else(|p| p.into_inner()) = mode;
    }

    /// In the `always` mode, asks the user to allow a read; `Err` is the
    /// reply when they do not (or cannot be asked).
    pub async fn allow_read(&self, tool: &str, summary: String) -> Result<(), String> {
        if !self.approval().asks_for_reads() {
            return Ok(());
        }
        let approval = Approval::call(self.editor.next_run(), tool.to_owned(), &summary);
        match self.editor.approve(approval).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!("The user did not allow this {tool} call.")),
            Err(e) => Err(format!(
                "{tool} needs the user's approval (approval mode `always`), but {e}."
            )),
        }
    }
}

/// Runs blocking file work off the async threads.
pub(crate) async fn blocking(f: impl FnOnce() -> Reply + Send + 'static) -> Reply {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(format!("the tool failed: {e}")))
}
