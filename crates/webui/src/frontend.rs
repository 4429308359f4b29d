//! [`BrowserFrontend`]: the engine's `Frontend` when the editor is the
//! browser page.
//!
//! Nothing here waits for the page: a diff is "shown" as soon as the hub
//! holds it (a page that opens later sees it in its snapshot), and the
//! verdict comes back as an editor event when the reviewer decides. The page
//! can show diffs and open files, answer the workspace tools' approvals and
//! show their commands' output; it cannot save, format, close foreign tabs
//! or run code, so those tools say so.

use crate::hub::Hub;
use async_trait::async_trait;
use ccbridge_protocol::tools::OpenFileArgs;
use ccbridge_server::{
    Activity, Approval, Capabilities, ClientId, ClientInfo, CloseReason, CommandEvent, DiffId,
    DiffView, Frontend, FrontendError, OpenedFile,
};
use std::sync::Arc;

pub struct BrowserFrontend {
    hub: Arc<Hub>,
}

impl BrowserFrontend {
    pub fn new(hub: Arc<Hub>) -> Self {
        BrowserFrontend { hub }
    }
}

#[async_trait]
impl Frontend for BrowserFrontend {
    async fn review_text(&self, id: DiffId) -> Option<String> {
        self.hub.working_text(id)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            diff: true,
            open_file: true,
            approve: true,
            review_text: true,
            ..Capabilities::default()
        }
    }

    async fn show_diff(&self, diff: DiffView) -> Result<(), FrontendError> {
        self.hub.show_diff(diff);
        Ok(())
    }

    async fn close_diff(&self, id: DiffId, reason: CloseReason) -> Result<(), FrontendError> {
        self.hub.close_diff(id, reason);
        Ok(())
    }

    async fn open_file(&self, args: OpenFileArgs) -> Result<OpenedFile, FrontendError> {
        // Claude's lines are 1-based; the page's are 0-based.
        let line = args.start_line.and_then(|l| l.checked_sub(1));
        self.hub.open_file(&args.file_path, line);
        Ok(OpenedFile {
            file_path: args.file_path,
            ..Default::default()
        })
    }

    async fn open_files(&self, paths: Vec<String>) -> Result<Vec<String>, FrontendError> {
        for p in &paths {
            self.hub.open_file(p, None);
        }
        Ok(paths)
    }

    async fn approve(&self, approval: Approval) -> Result<bool, FrontendError> {
        self.hub.approve(approval).await
    }

    fn command_event(&self, event: CommandEvent) {
        self.hub.command_event(event);
    }

    fn client_connected(&self, client: &ClientInfo) {
        self.hub.client_connected(client);
    }

    fn client_disconnected(&self, client: ClientId) {
        self.hub.client_disconnected(client);
    }

    fn activity(&self, event: Activity) {
        self.hub.activity(event);
    }

    fn diagnostics_changed(&self) {
        self.hub.diagnostics_changed();
    }
}
