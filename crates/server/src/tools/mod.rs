//! The IDE tools, one file each, and the table that dispatches to them.
//!
//! Each tool is `async fn call(ide: &Arc<Ide>, caller: Caller, args: RawJson)`,
//! returning a `CallToolResult`: the IDE beneath every transport, and who asks.
//! Tools that only read editor state answer from the engine's copy at once;
//! the others ask the editor through the [`Frontend`](crate::Frontend).
//! Bad arguments are an `isError` result, never a JSON-RPC error, so the
//! client shows the reason.

mod check_document_dirty;
mod close_all_diff_tabs;
mod close_tab;
mod execute_code;
mod get_all_opened_file_paths;
mod get_current_selection;
mod get_diagnostics;
mod get_latest_selection;
mod get_open_editors;
mod get_workspace_folders;
mod open_diff;
mod open_file;
mod open_files;
mod reformat_file;
mod save_document;

use crate::frontend::FrontendError;
use crate::ide::{Caller, Ide};
use ccbridge_protocol::jsonrpc::RawJson;
use ccbridge_protocol::jsonrpc::{code, ErrorObject, RequestId, Response};
use ccbridge_protocol::mcp::{CallToolResult, ToolDescriptor};
use ccbridge_protocol::tools::Tool;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// Tools offered to this editor: all of them, except `executeCode` when the
/// editor cannot run code.
fn offered(tool: Tool, execute_code: bool) -> bool {
    tool != Tool::ExecuteCode || execute_code
}

/// The serialized `tools/list` result, built once per engine for each of
/// the two possible lists (with and without `executeCode`).
pub(crate) fn list_json(ide: &Ide) -> Arc<str> {
    let exec = ide.frontend.capabilities().execute_code;
    ide.tools_list_json[usize::from(exec)]
        .get_or_init(|| {
            let tools: Vec<ToolDescriptor> = Tool::ALL
                .into_iter()
                .filter(|t| offered(*t, exec))
                .map(Tool::descriptor)
                .collect();
            serde_json::json!({ "tools": tools }).to_string().into()
        })
        .clone()
}

pub(crate) fn find(ide: &Ide, name: &str) -> Option<Tool> {
    let exec = ide.frontend.capabilities().execute_code;
    Tool::from_name(name).filter(|t| offered(*t, exec))
}

/// A tool's answer: a result to serialize, or one already serialized (the
/// whole-workspace `getDiagnostics`, cached until the diagnostics change).
pub(crate) enum Reply {
    Result(CallToolResult),
    Serialized(Arc<str>),
}

impl From<CallToolResult> for Reply {
    fn from(r: CallToolResult) -> Self {
        Reply::Result(r)
    }
}

impl Reply {
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Result(r) if r.is_error)
    }

    /// The start of the answer's first text, for activity lists.
    pub fn summary(&self) -> String {
        const SHOWN: usize = 160;
        let text = match self {
            Reply::Result(r) => r.first_text().unwrap_or(""),
            Reply::Serialized(_) => "(diagnostics)",
        };
        match text.char_indices().nth(SHOWN) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text.to_owned(),
        }
    }

    /// The JSON-RPC response carrying this answer.
    pub fn into_response(self, id: &RequestId) -> String {
        match self {
            Reply::Result(r) => match serde_json::to_string(&r) {
                Ok(json) => Response::ok_json_with_raw_result(id, &json),
                Err(e) => Response::error(
                    Some(id.clone()),
                    ErrorObject::new(code::INTERNAL_ERROR, format!("unserializable result: {e}")),
                )
                .to_json(),
            },
            Reply::Serialized(json) => Response::ok_json_with_raw_result(id, &json),
        }
    }
}

/// Tools that answer from the engine's state without waiting for anyone:
/// they run inline on the connection's reader instead of in a task of
/// their own.
pub(crate) fn answers_at_once(tool: Tool) -> bool {
    matches!(
        tool,
        Tool::GetCurrentSelection
            | Tool::GetLatestSelection
            | Tool::GetOpenEditors
            | Tool::GetWorkspaceFolders
            | Tool::GetDiagnostics
            | Tool::CheckDocumentDirty
            | Tool::GetAllOpenedFilePaths
    )
}

pub(crate) async fn call(tool: Tool, ide: &Arc<Ide>, caller: Caller, args: RawJson) -> Reply {
    let result = match tool {
        Tool::GetDiagnostics => return get_diagnostics::call(ide, caller, args).await,
        Tool::OpenFile => open_file::call(ide, caller, args).await,
        Tool::OpenDiff => open_diff::call(ide, caller, args).await,
        Tool::GetCurrentSelection => get_current_selection::call(ide, caller, args).await,
        Tool::GetLatestSelection => get_latest_selection::call(ide, caller, args).await,
        Tool::GetOpenEditors => get_open_editors::call(ide, caller, args).await,
        Tool::GetWorkspaceFolders => get_workspace_folders::call(ide, caller, args).await,
        Tool::CheckDocumentDirty => check_document_dirty::call(ide, caller, args).await,
        Tool::SaveDocument => save_document::call(ide, caller, args).await,
        Tool::CloseTab => close_tab::call(ide, caller, args).await,
        Tool::CloseAllDiffTabs => close_all_diff_tabs::call(ide, caller, args).await,
        Tool::ExecuteCode => execute_code::call(ide, caller, args).await,
        Tool::OpenFiles => open_files::call(ide, caller, args).await,
        Tool::GetAllOpenedFilePaths => get_all_opened_file_paths::call(ide, caller, args).await,
        Tool::ReformatFile => reformat_file::call(ide, caller, args).await,
    };
    result.into()
}

/// Typed arguments, read straight from the raw JSON, or the `isError`
/// result explaining what is wrong.
pub(crate) fn args<A: DeserializeOwned>(tool: Tool, args: RawJson) -> Result<A, CallToolResult> {
    // serde would also read a struct from an array, by position.
    if !args.get().starts_with('{') {
        return Err(CallToolResult::error(format!(
            "Invalid arguments for {}: arguments must be an object",
            tool.name()
        )));
    }
    args.parse()
        .map_err(|e| CallToolResult::error(format!("Invalid arguments for {}: {e}", tool.name())))
}

/// An editor failure as a tool error.
pub(crate) fn editor_error(what: &str, e: FrontendError) -> CallToolResult {
    CallToolResult::error(format!("{what}: {e}"))
}
