//! [`StdioFrontend`]: the engine's [`Frontend`], answered by an editor plugin
//! over the stdio protocol.
//!
//! Each engine call becomes one JSON-RPC request to the editor (see
//! [`crate::messages::method`]) and waits for its answer, which the session
//! loop delivers with [`StdioFrontend::complete`]. The rules:
//!
//! - Every request but `confirmExecute` is bounded by
//!   `Config::frontend_timeout`: an editor that never answers costs Claude a
//!   timeout error, not a hung tool call. `confirmExecute` waits for a human
//!   and has no limit. `showDiff` only waits for the editor's "shown" (the
//!   verdict arrives later as a `diffResolved` notification), so it is
//!   bounded too.
//! - An error answer becomes [`FrontendError::Failed`] with the editor's
//!   message, which Claude sees as the tool's error; `-32601` becomes
//!   [`FrontendError::Unsupported`].
//! - When the input ends ([`StdioFrontend::disconnect`]) every waiting call
//!   and every later one fails with [`FrontendError::Disconnected`].
//! - Methods the editor did not declare in `initialize.capabilities` are
//!   refused here, without a round trip.

use crate::messages::{self, method};
use crate::pending::{Outcome, PendingRequests};
use async_trait::async_trait;
use ccbridge_lsp::framing::{FrameSink, SendError};
use ccbridge_protocol::jsonrpc::{code, Message, Notification, RawJson, Request, RequestId};
use ccbridge_protocol::mcp::Content;
use ccbridge_protocol::tools::OpenFileArgs;
use ccbridge_server::{
    Approval, Capabilities, ClientId, ClientInfo, CloseReason, CommandEvent, DiffId, DiffView,
    Frontend, FrontendError, OpenedFile,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

pub struct StdioFrontend {
    sink: FrameSink,
    pending: PendingRequests,
    capabilities: RwLock<Capabilities>,
    timeout: Duration,
    /// A refusal for a full queue has been logged and the editor has not
    /// answered anything since.
    stalled: AtomicBool,
    /// The diffs shown and not closed: what the session review needs to
    /// mark an accepted one reviewed (its file, the proposal's version,
    /// the agent).
    shown: std::sync::Mutex<std::collections::HashMap<DiffId, ShownDiff>>,
    /// ccbridge's language servers, told of each proposal shown and closed.
    analysis: std::sync::OnceLock<Arc<crate::diagnostics::Analysis>>,
}

/// A diff the editor shows, as the session review knows it.
#[derive(Debug, Clone)]
pub struct ShownDiff {
    pub path: String,
    /// [`ccbridge_changes::version_of`] the proposal.
    pub proposed_version: String,
    pub agent: &'static str,
}

/// Withdraws a queued request when its call ends.
struct WithdrawOnDrop(ccbridge_lsp::framing::Cancel);

impl Drop for WithdrawOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// How long an agent answered in its terminal waits for the editor's
/// `reviewText` before it takes its own proposal (and the user's edits in
/// the view are lost). An editor answers in a millisecond when it is idle;
/// 2 s was missed by a Vim busy beside forty other editors (the shared
/// editor scenarios), and an editor over SSH adds its round trips.
const REVIEW_TEXT_TIMEOUT: Duration = Duration::from_secs(5);

/// What an editor is assumed to do before it says: show diffs.
pub fn default_capabilities() -> Capabilities {
    Capabilities {
        diff: true,
        ..Default::default()
    }
}

impl StdioFrontend {
    /// Sends its requests through `sink`; `timeout` bounds every request
    /// but `confirmExecute`.
    pub fn new(sink: FrameSink, timeout: Duration) -> Self {
        StdioFrontend {
            sink,
            pending: PendingRequests::new(),
            capabilities: RwLock::new(default_capabilities()),
            timeout,
            stalled: AtomicBool::new(false),
            shown: Default::default(),
            analysis: std::sync::OnceLock::new(),
        }
    }

    /// Has `analysis` check each proposal's text while it is shown.
    pub fn analyse_proposals(&self, analysis: Arc<crate::diagnostics::Analysis>) {
        let _ = self.analysis.set(analysis);
    }

    /// The diff `id`, if the editor shows it.
    pub fn shown(&self, id: DiffId) -> Option<ShownDiff> {
        self.shown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }

    fn take_shown(&self, id: DiffId) {
        let gone = self
            .shown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let (Some(gone), Some(a)) = (gone, self.analysis.get()) {
            a.proposed(&gone.path, None);
        }
    }

    /// Records what the editor declared in `initialize`.
    pub fn set_capabilities(&self, capabilities: Capabilities) {
        *self.capabilities.write().unwrap_or_else(|p| p.into_inner()) = capabilities;
    }

    /// Delivers the editor's answer to one of our requests. `false` when
    /// nothing waits for that id (unknown, or its caller gave up).
    pub fn complete(&self, id: &RequestId, outcome: Outcome) -> bool {
        // The editor reads again: a later stall is worth a new warning.
        self.stalled.store(false, Ordering::Relaxed);
        self.pending.complete(id, outcome)
    }

    /// The editor is gone: fail every waiting request and refuse new ones.
    pub fn disconnect(&self) {
        self.pending.close();
    }

    pub fn is_disconnected(&self) -> bool {
        self.pending.is_closed()
    }

    /// Requests sent and not yet answered.
    pub fn pending_requests(&self) -> usize {
        self.pending.len()
    }

    fn caps(&self) -> Capabilities {
        self.capabilities
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sends `method` and returns the raw result.
    async fn call(
        &self,
        method: &'static str,
        params: &impl Serialize,
        timeout: Option<Duration>,
    ) -> Result<RawJson, FrontendError> {
        let params = RawJson::to_raw(params)
            .map_err(|e| FrontendError::Failed(format!("cannot encode {method}: {e}")))?;
        let ticket = self
            .pending
            .register()
            .map_err(|_| FrontendError::Disconnected)?;
        let id = ticket.id();
        let request = Request {
            id: id.clone(),
            method: method.to_owned(),
            params: Some(params),
        };
        let frame = Message::from(request).to_json();
        // Withdrawn from the queue if this call ends (timeout, cancellation)
        // before the editor was sent it: a late request helps nobody.
        let _withdraw = match self.sink.send_cancellable(frame) {
            Ok(cancel) => WithdrawOnDrop(cancel),
            Err(SendError::Closed) => return Err(FrontendError::Disconnected),
            Err(SendError::Full { queued }) => {
                self.not_reading(method, queued);
                return Err(FrontendError::NotReading);
            }
        };
        tracing::debug!(%method, %id, "request sent to the editor");
        let answer = match timeout {
            Some(limit) => match tokio::time::timeout(limit, ticket.wait()).await {
                Ok(answer) => answer,
                Err(_) => {
                    tracing::warn!(%method, %id, ?limit, "the editor did not answer in time");
                    return Err(FrontendError::Timeout);
                }
            },
            None => ticket.wait().await,
        };
        match answer {
            Err(_) => Err(FrontendError::Disconnected),
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) if e.code == code::METHOD_NOT_FOUND => {
                Err(FrontendError::Unsupported(method))
            }
            Ok(Err(e)) => {
                tracing::debug!(%method, %id, code = e.code, "the editor answered an error");
                Err(FrontendError::Failed(e.message))
            }
        }
    }

    /// Sends `method` and decodes its result as `T`.
    async fn call_for<T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &impl Serialize,
        timeout: Option<Duration>,
    ) -> Result<T, FrontendError> {
        let raw = self.call(method, params, timeout).await?;
        raw.parse().map_err(|e| {
            FrontendError::Failed(format!("the editor's answer to {method} is malformed: {e}"))
        })
    }

    fn notify(&self, method: &'static str, params: &impl Serialize) {
        // Once ccbridge is on its way out (the editor asked, or is gone), it
        // sends the editor nothing more: the connections closing on the way
        // out are no news to an editor that stopped it.
        if self.is_disconnected() {
            tracing::debug!(%method, "notification dropped: the sidecar is stopping");
            return;
        }
        let frame = Message::from(Notification::with_params(method, params)).to_json();
        match self.sink.send(frame) {
            Ok(()) => {}
            Err(SendError::Closed) => {
                tracing::debug!(%method, "notification dropped: the output is closed")
            }
            Err(SendError::Full { queued }) => self.not_reading(method, queued),
        }
    }

    /// Logs that the editor stopped reading, once per stall rather than
    /// once per refused message.
    fn not_reading(&self, method: &str, queued: usize) {
        if !self.stalled.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                %method, queued,
                "the editor is not reading ccbridge's messages; refusing further ones until it does"
            );
        }
    }

    fn bounded(&self) -> Option<Duration> {
        Some(self.timeout)
    }
}

#[async_trait]
impl Frontend for StdioFrontend {
    fn capabilities(&self) -> Capabilities {
        self.caps()
    }

    async fn show_diff(&self, diff: DiffView) -> Result<(), FrontendError> {
        if !self.caps().diff {
            return Err(FrontendError::Unsupported("openDiff"));
        }
        // Any result means "shown"; the verdict comes as `diffResolved`.
        let shown = ShownDiff {
            path: diff.new_file_path.clone(),
            proposed_version: ccbridge_changes::version_of(Some(diff.proposed_contents.as_bytes())),
            agent: diff
                .agent
                .map_or("the workspace tools", |a| a.display_name()),
        };
        self.shown
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(diff.id, shown);
        if let Some(a) = self.analysis.get() {
            a.proposed(&diff.new_file_path, Some(&diff.proposed_contents));
        }
        let id = diff.id;
        let params = messages::ShowDiffParams::new(diff);
        let shown = self.call(method::SHOW_DIFF, &params, self.bounded()).await;
        if shown.is_err() {
            // Never shown, so never closed (`openDiff` falls back to the
            // agent's own prompt): its proposal leaves the language servers
            // and `getDiagnostics` now, not when another diff of the file
            // closes.
            self.take_shown(id);
        }
        shown.map(drop)
    }

    async fn close_diff(&self, id: DiffId, reason: CloseReason) -> Result<(), FrontendError> {
        self.take_shown(id);
        self.call(
            method::CLOSE_DIFF,
            &messages::CloseDiffParams { id, reason },
            self.bounded(),
        )
        .await
        .map(drop)
    }

    async fn review_text(&self, id: DiffId) -> Option<String> {
        if !self.caps().review_text || self.shown(id).is_none() {
            return None;
        }
        // The agent waits on this answer, and so does the user who just
        // answered in its terminal: a short bound, and the agent's own
        // proposal when the editor is slower.
        let limit = self.timeout.min(REVIEW_TEXT_TIMEOUT);
        let params = messages::ReviewTextParams { id };
        match self
            .call_for::<Option<messages::ReviewTextResult>>(
                method::REVIEW_TEXT,
                &params,
                Some(limit),
            )
            .await
        {
            Ok(answer) => answer.and_then(|r| r.contents),
            Err(e) => {
                tracing::warn!(id = id.0, error = %e, "reviewText: no text from the editor; the agent keeps its proposal");
                None
            }
        }
    }

    async fn open_file(&self, args: OpenFileArgs) -> Result<OpenedFile, FrontendError> {
        if !self.caps().open_file {
            return Err(FrontendError::Unsupported("openFile"));
        }
        let raw = self.call(method::OPEN_FILE, &args, self.bounded()).await?;
        if raw.is_null() {
            return Ok(OpenedFile {
                file_path: args.file_path,
                ..Default::default()
            });
        }
        raw.parse().map_err(|e| {
            FrontendError::Failed(format!("the editor's answer to openFile is malformed: {e}"))
        })
    }

    async fn open_files(&self, paths: Vec<String>) -> Result<Vec<String>, FrontendError> {
        if !self.caps().open_file {
            return Err(FrontendError::Unsupported("open_files"));
        }
        let r: messages::OpenFilesResult = self
            .call_for(
                method::OPEN_FILES,
                &messages::OpenFilesParams { paths },
                self.bounded(),
            )
            .await?;
        Ok(r.opened)
    }

    async fn close_tab(&self, tab_name: String) -> Result<bool, FrontendError> {
        if !self.caps().close_tab {
            return Err(FrontendError::Unsupported("close_tab"));
        }
        let r: messages::CloseTabResult = self
            .call_for(
                method::CLOSE_TAB,
                &messages::CloseTabParams { tab_name },
                self.bounded(),
            )
            .await?;
        Ok(r.closed)
    }

    async fn save_document(&self, path: String) -> Result<(), FrontendError> {
        if !self.caps().save_document {
            return Err(FrontendError::Unsupported("saveDocument"));
        }
        self.call(
            method::SAVE_DOCUMENT,
            &messages::PathParams { path },
            self.bounded(),
        )
        .await
        .map(drop)
    }

    async fn reformat_file(&self, path: String) -> Result<(), FrontendError> {
        if !self.caps().reformat {
            return Err(FrontendError::Unsupported("reformat_file"));
        }
        self.call(
            method::REFORMAT_FILE,
            &messages::PathParams { path },
            self.bounded(),
        )
        .await
        .map(drop)
    }

    async fn confirm_execute(&self, code: String) -> Result<bool, FrontendError> {
        if !self.caps().execute_code {
            return Ok(false);
        }
        // A person decides; no time limit.
        let r: messages::ConfirmExecuteResult = self
            .call_for(
                method::CONFIRM_EXECUTE,
                &messages::CodeParams { code },
                None,
            )
            .await?;
        Ok(r.confirmed)
    }

    async fn execute_code(&self, code: String) -> Result<Vec<Content>, FrontendError> {
        if !self.caps().execute_code {
            return Err(FrontendError::Unsupported("executeCode"));
        }
        let r: messages::ExecuteCodeResult = self
            .call_for(
                method::EXECUTE_CODE,
                &messages::CodeParams { code },
                self.bounded(),
            )
            .await?;
        Ok(r.content)
    }

    async fn approve(&self, approval: Approval) -> Result<bool, FrontendError> {
        if !self.caps().approve {
            return Err(FrontendError::Unsupported("approving tool calls"));
        }
        // A person decides; no time limit.
        let r: messages::ApproveResult = self.call_for(method::APPROVE, &approval, None).await?;
        Ok(r.approved)
    }

    fn command_event(&self, event: CommandEvent) {
        if self.caps().approve {
            self.notify(method::COMMAND_EVENT, &event);
        }
    }

    fn client_connected(&self, client: &ClientInfo) {
        self.notify(method::CLIENT_CONNECTED, client);
    }

    fn client_disconnected(&self, client: ClientId) {
        self.notify(
            method::CLIENT_DISCONNECTED,
            &messages::ClientDisconnectedParams { id: client },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbridge_lsp::framing::{spawn_writer, Frame, FrameReader};
    use ccbridge_protocol::jsonrpc::ErrorObject;
    use serde_json::json;
    use serde_json::Value;
    use std::sync::Arc;
    use tokio::io::DuplexStream;

    const LIMIT: Duration = Duration::from_secs(5);

    /// A frontend whose output is read back by the test (the fake editor).
    fn setup(timeout: Duration) -> (Arc<StdioFrontend>, FrameReader<DuplexStream>) {
        let (ours, editor) = tokio::io::duplex(1 << 16);
        let (sink, _task) = spawn_writer(ours);
        (
            Arc::new(StdioFrontend::new(sink, timeout)),
            FrameReader::new(editor),
        )
    }

    async fn next_message(r: &mut FrameReader<DuplexStream>) -> Message {
        let frame = tokio::time::timeout(LIMIT, r.read_frame())
            .await
            .expect("a frame in time")
            .expect("no framing error")
            .expect("not the end");
        let Frame::Body(b) = frame else {
            panic!("oversized frame")
        };
        Message::parse(std::str::from_utf8(&b).expect("utf-8")).expect("valid message")
    }

    async fn next_request(r: &mut FrameReader<DuplexStream>) -> Request {
        match next_message(r).await {
            Message::Request(req) => req,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    fn diff() -> DiffView {
        DiffView {
            id: DiffId(7),
            client_id: None,
            tab_name: "✻ [Claude Code] a.rs ⧉".into(),
            old_file_path: "/w/a.rs".into(),
            new_file_path: "/w/a.rs".into(),
            original_contents: Some("old\n".into()),
            is_new_file: false,
            proposed_contents: "new\n".into(),
            agent: Some(ccbridge_server::AgentKind::Claude),
        }
    }

    #[tokio::test]
    async fn show_diff_sends_the_view_and_returns_on_ack() {
        let (fe, mut editor) = setup(LIMIT);
        let call = tokio::spawn({
            let fe = fe.clone();
            async move { fe.show_diff(diff()).await }
        });
        let req = next_request(&mut editor).await;
        assert_eq!(req.method, "showDiff");
        // The view, and the engine's hunks between its two texts.
        let mut want = serde_json::to_value(diff()).unwrap();
        want["hunks"] = serde_json::json!([
            {"oldStart": 0, "oldLines": 1, "newStart": 0, "newLines": 1}
        ]);
        assert_eq!(req.params_value(), Some(want));
        assert_eq!(
            req.params_value().unwrap()["tabName"],
            "✻ [Claude Code] a.rs ⧉"
        );
        assert!(fe.complete(&req.id, Ok(Value::Null.into())));
        assert_eq!(call.await.unwrap(), Ok(()));
        assert_eq!(fe.pending_requests(), 0);
    }

    /// A view the editor refused (or never answered) was kept as shown,
    /// its proposal in the language servers and `getDiagnostics` until
    /// another diff of the file closed.
    #[tokio::test]
    async fn regression_a_diff_the_editor_did_not_show_is_not_kept_as_shown() {
        let (fe, mut editor) = setup(LIMIT);
        let call = tokio::spawn({
            let fe = fe.clone();
            async move { fe.show_diff(diff()).await }
        });
        let req = next_request(&mut editor).await;
        assert!(fe.shown(diff().id).is_some(), "shown while asked");
        assert!(fe.complete(&req.id, Err(ErrorObject::new(-32603, "no window"))));
        assert!(call.await.unwrap().is_err());
        assert!(fe.shown(diff().id).is_none());
    }

    #[tokio::test]
    async fn concurrent_calls_get_distinct_ids_and_their_own_answers() {
        let (fe, mut editor) = setup(LIMIT);
        fe.set_capabilities(Capabilities::all());
        let a = tokio::spawn({
            let fe = fe.clone();
            async move { fe.close_tab("a".into()).await }
        });
        let b = tokio::spawn({
            let fe = fe.clone();
            async move { fe.open_files(vec!["/w/x".into(), "/w/y".into()]).await }
        });
        let r1 = next_request(&mut editor).await;
        let r2 = next_request(&mut editor).await;
        assert_ne!(r1.id, r2.id);
        // Answer in reverse order.
        for r in [&r2, &r1] {
            let answer = match r.method.as_str() {
                "closeTab" => {
                    assert_eq!(r.params_value(), Some(json!({"tabName": "a"})));
                    json!({"closed": true})
                }
                "openFiles" => {
                    assert_eq!(r.params_value(), Some(json!({"paths": ["/w/x", "/w/y"]})));
                    json!({"opened": ["/w/x"]})
                }
                m => panic!("unexpected {m}"),
            };
            assert!(fe.complete(&r.id, Ok(answer.into())));
        }
        assert_eq!(a.await.unwrap(), Ok(true));
        assert_eq!(b.await.unwrap(), Ok(vec!["/w/x".to_owned()]));
    }

    #[tokio::test]
    async fn editor_errors_become_frontend_errors() {
        let (fe, mut editor) = setup(LIMIT);
        fe.set_capabilities(Capabilities::all());
        let save = tokio::spawn({
            let fe = fe.clone();
            async move { fe.save_document("/w/a".into()).await }
        });
        let req = next_request(&mut editor).await;
        assert_eq!(req.params_value(), Some(json!({"path": "/w/a"})));
        fe.complete(&req.id, Err(ErrorObject::new(1, "read-only buffer")));
        assert_eq!(
            save.await.unwrap(),
            Err(FrontendError::Failed("read-only buffer".into()))
        );

        let fmt = tokio::spawn({
            let fe = fe.clone();
            async move { fe.reformat_file("/w/a".into()).await }
        });
        let req = next_request(&mut editor).await;
        assert_eq!(req.method, "reformatFile");
        fe.complete(&req.id, Err(ErrorObject::method_not_found("reformatFile")));
        assert_eq!(
            fmt.await.unwrap(),
            Err(FrontendError::Unsupported("reformatFile"))
        );

        let tab = tokio::spawn({
            let fe = fe.clone();
            async move { fe.close_tab("x".into()).await }
        });
        let req = next_request(&mut editor).await;
        fe.complete(&req.id, Ok(json!({"closed": "yes"}).into()));
        assert!(
            matches!(tab.await.unwrap(), Err(FrontendError::Failed(m)) if m.contains("malformed"))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn unanswered_requests_time_out_but_confirm_execute_waits() {
        let (fe, mut editor) = setup(Duration::from_secs(30));
        fe.set_capabilities(Capabilities::all());
        let open = tokio::spawn({
            let fe = fe.clone();
            async move {
                fe.open_file(serde_json::from_value(json!({"filePath": "/w/a"})).unwrap())
                    .await
            }
        });
        let confirm = tokio::spawn({
            let fe = fe.clone();
            async move { fe.confirm_execute("print(1)".into()).await }
        });
        let r1 = next_request(&mut editor).await;
        let r2 = next_request(&mut editor).await;
        let (open_req, confirm_req) = if r1.method == "openFile" {
            (r1, r2)
        } else {
            (r2, r1)
        };
        assert_eq!(confirm_req.method, "confirmExecute");
        assert_eq!(open.await.unwrap(), Err(FrontendError::Timeout));
        assert!(
            !fe.complete(&open_req.id, Ok(Value::Null.into())),
            "late answer dropped"
        );
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert!(!confirm.is_finished());
        assert!(fe.complete(&confirm_req.id, Ok(json!({"confirmed": true}).into())));
        assert_eq!(confirm.await.unwrap(), Ok(true));
    }

    /// Issue 11, defect 1: an editor that keeps its input open but stops
    /// reading. Calls beyond the queue's bound fail at once with a clear
    /// error; calls that timed out for Claude never reach the editor when
    /// it reads again.
    #[tokio::test(start_paused = true)]
    async fn regression_stalled_editor_fails_fast_and_gets_no_stale_requests() {
        let (ours, editor) = tokio::io::duplex(4096);
        let (sink, _task) = ccbridge_lsp::framing::spawn_writer_with_limit(ours, 64 * 1024);
        let fe = Arc::new(StdioFrontend::new(sink, Duration::from_secs(30)));
        fe.set_capabilities(Capabilities::all());
        let long_path = format!("/w/{}", "p".repeat(4096));
        let mut calls = Vec::new();
        for _ in 0..200 {
            let fe = fe.clone();
            let path = long_path.clone();
            calls.push(tokio::spawn(async move {
                fe.open_file(serde_json::from_value(json!({ "filePath": path })).unwrap())
                    .await
            }));
        }
        // Let every call queue or fail, without letting the clock run.
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        let not_reading = calls.iter().filter(|c| c.is_finished()).count();
        assert!(
            not_reading > 150,
            "most calls fail at once: {not_reading} of 200"
        );
        tokio::time::advance(Duration::from_secs(31)).await;
        let mut timeouts = 0;
        let mut refused = 0;
        for c in calls {
            match c.await.unwrap() {
                Err(FrontendError::NotReading) => refused += 1,
                Err(FrontendError::Timeout) => timeouts += 1,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(refused + timeouts, 200);
        assert!(refused > 150, "{refused}");
        assert_eq!(
            FrontendError::NotReading.to_string(),
            "the editor is not reading ccbridge's messages (is it frozen?)"
        );
        // The editor reads again: of the timed-out requests, at most the
        // ones already in the pipe arrive; then a fresh request does.
        let mut reader = FrameReader::new(editor);
        let fresh = tokio::spawn({
            let fe = fe.clone();
            async move { fe.close_tab("fresh".into()).await }
        });
        let mut stale = 0;
        loop {
            let req = next_request(&mut reader).await;
            if req.method == "closeTab" {
                assert!(fe.complete(&req.id, Ok(json!({"closed": true}).into())));
                break;
            }
            stale += 1;
        }
        assert!(stale <= 2, "{stale} timed-out requests reached the editor");
        assert_eq!(fresh.await.unwrap(), Ok(true));
    }

    #[tokio::test]
    async fn disconnect_fails_waiting_and_later_calls() {
        let (fe, mut editor) = setup(LIMIT);
        let call = tokio::spawn({
            let fe = fe.clone();
            async move { fe.close_diff(DiffId(1), CloseReason::NewPrompt).await }
        });
        let req = next_request(&mut editor).await;
        assert_eq!(
            req.params_value(),
            Some(json!({"id": 1, "reason": "newPrompt"}))
        );
        fe.disconnect();
        assert_eq!(call.await.unwrap(), Err(FrontendError::Disconnected));
        assert_eq!(fe.show_diff(diff()).await, Err(FrontendError::Disconnected));
        assert!(fe.is_disconnected());
    }

    /// Shows `diff()` and acknowledges it, as an editor would.
    async fn shown(fe: &Arc<StdioFrontend>, editor: &mut FrameReader<DuplexStream>) {
        let call = tokio::spawn({
            let fe = fe.clone();
            async move { fe.show_diff(diff()).await }
        });
        let req = next_request(editor).await;
        assert!(fe.complete(&req.id, Ok(Value::Null.into())));
        assert_eq!(call.await.unwrap(), Ok(()));
    }

    #[tokio::test]
    async fn review_text_asks_the_editor_for_an_open_view_only_with_the_capability() {
        let (fe, mut editor) = setup(LIMIT);
        shown(&fe, &mut editor).await;
        // Without the capability: no request, no text.
        assert_eq!(fe.review_text(DiffId(7)).await, None);
        fe.set_capabilities(Capabilities {
            diff: true,
            review_text: true,
            ..Capabilities::default()
        });
        // Not a view this editor was shown: nothing asked.
        assert_eq!(fe.review_text(DiffId(8)).await, None);

        let ask = |fe: &Arc<StdioFrontend>| {
            let fe = fe.clone();
            tokio::spawn(async move { fe.review_text(DiffId(7)).await })
        };
        let call = ask(&fe);
        let req = next_request(&mut editor).await;
        assert_eq!(req.method, "reviewText");
        assert_eq!(req.params_value(), Some(json!({"id": 7})));
        let edited = json!({"contents": "new\nmine\n"});
        assert!(fe.complete(&req.id, Ok(edited.into())));
        assert_eq!(call.await.unwrap().as_deref(), Some("new\nmine\n"));

        // `null` contents, a `null` result, an error: the agent keeps its proposal.
        for answer in [
            Ok(json!({"contents": null}).into()),
            Ok(Value::Null.into()),
            Err(ErrorObject::new(-32000, "no such view")),
        ] {
            let call = ask(&fe);
            let req = next_request(&mut editor).await;
            assert!(fe.complete(&req.id, answer));
            assert_eq!(call.await.unwrap(), None);
        }
        assert_eq!(fe.pending_requests(), 0);
    }

    #[tokio::test]
    async fn review_text_from_a_slow_editor_is_given_up_quickly() {
        let (fe, mut editor) = setup(Duration::from_millis(200));
        shown(&fe, &mut editor).await;
        fe.set_capabilities(Capabilities::all());
        let call = tokio::spawn({
            let fe = fe.clone();
            async move { fe.review_text(DiffId(7)).await }
        });
        let req = next_request(&mut editor).await;
        assert_eq!(req.method, "reviewText");
        // Never answered: the bound (here the editor timeout, under the
        // two-second cap) ends the wait.
        assert_eq!(call.await.unwrap(), None);
        assert!(
            !fe.complete(&req.id, Ok(Value::Null.into())),
            "the late answer is not waited for"
        );
    }

    #[tokio::test]
    async fn capabilities_gate_requests_without_a_round_trip() {
        let (fe, mut editor) = setup(LIMIT);
        assert_eq!(fe.capabilities(), default_capabilities());
        assert_eq!(
            fe.open_file(serde_json::from_value(json!({"filePath": "/w/a"})).unwrap())
                .await,
            Err(FrontendError::Unsupported("openFile"))
        );
        assert_eq!(fe.confirm_execute("x".into()).await, Ok(false));
        assert_eq!(
            fe.execute_code("x".into()).await,
            Err(FrontendError::Unsupported("executeCode"))
        );
        assert_eq!(
            fe.save_document("/a".into()).await,
            Err(FrontendError::Unsupported("saveDocument"))
        );
        fe.set_capabilities(Capabilities::default());
        assert_eq!(
            fe.show_diff(diff()).await,
            Err(FrontendError::Unsupported("openDiff"))
        );
        // Nothing reached the editor: the next frame is this notification.
        fe.client_disconnected(ClientId(3));
        match next_message(&mut editor).await {
            Message::Notification(n) => {
                assert_eq!(n.method, "clientDisconnected");
                assert_eq!(n.params_value(), Some(json!({"id": 3})));
            }
            other => panic!("expected the notification, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn open_file_and_execute_code_results() {
        let (fe, mut editor) = setup(LIMIT);
        fe.set_capabilities(Capabilities::all());
        let open = tokio::spawn({
            let fe = fe.clone();
            async move {
                fe.open_file(
                    serde_json::from_value(json!({"filePath": "/w/a", "startLine": 3})).unwrap(),
                )
                .await
            }
        });
        let req = next_request(&mut editor).await;
        assert_eq!(
            req.params_value(),
            Some(
                json!({"filePath": "/w/a", "preview": false, "selectToEndOfLine": false,
                        "makeFrontmost": true, "startLine": 3})
            )
        );
        fe.complete(&req.id, Ok(Value::Null.into()));
        assert_eq!(
            open.await.unwrap(),
            Ok(OpenedFile {
                file_path: "/w/a".into(),
                language_id: None,
                line_count: None
            })
        );
        let run = tokio::spawn({
            let fe = fe.clone();
            async move { fe.execute_code("1+1".into()).await }
        });
        let req = next_request(&mut editor).await;
        assert_eq!(req.params_value(), Some(json!({"code": "1+1"})));
        fe.complete(
            &req.id,
            Ok(json!({"content": [{"type": "text", "text": "2"}]}).into()),
        );
        assert_eq!(run.await.unwrap(), Ok(vec![Content::text("2")]));
    }

    #[tokio::test]
    async fn client_connected_is_a_notification() {
        let (fe, mut editor) = setup(LIMIT);
        fe.client_connected(&ClientInfo {
            id: ClientId(1),
            name: "claude-code".into(),
            version: "2.1.328".into(),
            pid: Some(99),
            agent: ccbridge_server::AgentKind::Gemini,
        });
        match next_message(&mut editor).await {
            Message::Notification(n) => {
                assert_eq!(n.method, "clientConnected");
                assert_eq!(
                    n.params_value(),
                    Some(
                        json!({"id": 1, "name": "claude-code", "version": "2.1.328", "pid": 99,
                               "agent": {"id": "gemini", "name": "Gemini CLI"}})
                    )
                );
            }
            other => panic!("expected the notification, got {other:?}"),
        }
    }
}
