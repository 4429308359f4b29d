//! The MCP side of the tools server: the one module that uses `rmcp`
//! (pinned `=3.11.0`; its API changes with every minor release). It declares
//! the tools with their argument types (the input schemas are generated
//! from them, the doc comments becoming the descriptions a model reads) and
//! hands each call to its file in `tools/`, through one table ([`Call`])
//! for both kinds of client: a session's calls come through rmcp, a
//! stateless client's are answered before it (`ccbridge_http::mcp::direct`).
//! The transport (sessions, Host/Origin, body size) is `ccbridge_http::mcp`'s,
//! shared with the companions.

use crate::tools::{self, Context, Reply};
use ccbridge_http::mcp::{http_service, CappedSessions, Direct, DirectTools};
use futures_util::future::BoxFuture;
use rmcp::handler::server::common::schema_for_input;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ResultType, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::{schemars, ErrorData, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

pub use ccbridge_http::mcp::{MAX_SESSIONS, SESSION_IDLE};
/// Larger request bodies are refused with 413.
pub const MAX_BODY_BYTES: usize = 4 << 20;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ReadFileArgs {
    /// The file: a path relative to the workspace folder, or an absolute path inside it.
    pub path: String,
    /// The first line to return, counting from 1 (default 1).
    pub offset: Option<usize>,
    /// How many lines to return (default 2000). Read long files in windows.
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListFilesArgs {
    /// The directory: relative to the workspace folder (`.` for the folder itself), or absolute inside it.
    pub path: String,
    /// List everything below the directory too (default false).
    pub recursive: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct SearchFilesArgs {
    /// The directory to search under (`.` for the whole workspace folder).
    pub path: String,
    /// A regular expression (Rust/ripgrep syntax), matched line by line.
    pub regex: String,
    /// Only files whose path matches this glob, e.g. `*.rs` or `src/**/*.ts`.
    pub file_pattern: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct WriteFileArgs {
    /// The file: relative to the workspace folder, or absolute inside it. Missing folders are created.
    pub path: String,
    /// The whole new text of the file.
    pub content: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ApplyDiffArgs {
    /// The file to edit (it must exist): relative to the workspace folder, or absolute inside it.
    pub path: String,
    /// One or more blocks, each `<<<<<<< SEARCH`, the exact lines to find, `=======`, the lines to put instead, `>>>>>>> REPLACE`.
    pub diff: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ExecuteCommandArgs {
    /// The command line, run by `/bin/sh -c`.
    pub command: String,
    /// The working directory, inside the workspace (default: the workspace folder).
    pub cwd: Option<String>,
    /// Stop the command after this many seconds (default 120, at most 600).
    pub timeout_secs: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct GetDiagnosticsArgs {
    /// Only this file, or the files under this directory (default: the whole workspace).
    pub path: Option<String>,
    /// The least severe kind to list: `error`, `warning` (default), `info` or `hint`.
    pub severity: Option<String>,
}

/// The tools, as their list shows them: name, description and the input
/// schema made from the arguments' type (its doc comments become the
/// descriptions a model reads), sorted by name as rmcp's router lists them.
/// Made when the first client arrives, not at start-up, then shared.
fn tool_list() -> &'static [Tool] {
    fn tool<A: schemars::JsonSchema + 'static>(
        name: &'static str,
        description: &'static str,
    ) -> Tool {
        let schema =
            schema_for_input::<A>().unwrap_or_else(|e| panic!("the input schema of {name}: {e}"));
        Tool::new_with_raw(name, Some(description.into()), schema)
    }
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let mut tools = vec![
            tool::<ReadFileArgs>(
                "read_file",
                "Read a text file of the workspace, each line prefixed with its number (`  12 | text`). Returns at most `limit` lines from `offset`; the last line says which lines were shown and how many the file has. Binary files are refused.",
            ),
            tool::<ListFilesArgs>(
                "list_files",
                "List a directory of the workspace, one entry per line, directories ending in `/`. With `recursive`, everything below it too. Files ignored by .gitignore are left out; at most 500 entries.",
            ),
            tool::<SearchFilesArgs>(
                "search_files",
                "Search the files under a directory for a regular expression. Matches are grouped by file: the path, then `N:line` for each matching line and `N-line` for one line of context around it. Files ignored by .gitignore, hidden files and binary files are skipped; at most 300 matching lines, and a search stops after 30 s with what it found.",
            ),
            tool::<WriteFileArgs>(
                "write_file",
                "Create a file or replace its whole text. The user reviews the change as a diff in their editor and may edit or reject it. The result is JSON: `status` `accepted` (with `operation` `created` or `modified`, `user_edits` as a unified diff when the user changed your text: the file holds their version, and `new_diagnostics` when the editor reports new problems), `rejected` (nothing was written), or `unchanged`. Prefer apply_diff for small edits of an existing file.",
            ),
            tool::<ApplyDiffArgs>(
                "apply_diff",
                "Edit an existing file with SEARCH/REPLACE blocks:\n<<<<<<< SEARCH\nexact lines from the file\n=======\nthe lines to put instead\n>>>>>>> REPLACE\nEach SEARCH part must match the file exactly once, whitespace included (include more lines when it is ambiguous). Blocks apply in order, each to the result of the previous. The user reviews the result as a diff. The result is JSON like write_file's; when some blocks failed it has `partial: true`, `failed_blocks` (their numbers, from 1) and `failures`.",
            ),
            tool::<ExecuteCommandArgs>(
                "execute_command",
                "Run a shell command in the workspace, once the user allows it; they see its output live. The result is JSON: `exit_code`, `output` (stdout and stderr together, terminal escapes removed, long output cut in the middle), `cwd`; `status: rejected` when the user did not allow it (it did not run); `timed_out` when it ran past `timeout_secs` and was stopped. Commands cannot read input: pass non-interactive flags.",
            ),
            tool::<GetDiagnosticsArgs>(
                "get_diagnostics",
                "The problems the editor reports (compiler errors, lint warnings), one per line: `[severity] path:line — message`, lines counted from 1, errors first. Filter by a file or directory and by the least severe kind to include.",
            ),
        ];
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    })
}

/// One call of a tool, its arguments read: the one place a tool's name
/// leads to its file in `tools/`, for calls in a session (through rmcp)
/// and stateless ones (answered before it, [`Direct`]).
enum Call {
    ReadFile(ReadFileArgs),
    ListFiles(ListFilesArgs),
    SearchFiles(SearchFilesArgs),
    WriteFile(WriteFileArgs),
    ApplyDiff(ApplyDiffArgs),
    ExecuteCommand(ExecuteCommandArgs),
    GetDiagnostics(GetDiagnosticsArgs),
}

impl Call {
    /// The call of tool `name`: `None` when there is no such tool, an
    /// error result (as rmcp words it) when the arguments do not fit.
    fn parse(name: &str, arguments: JsonObject) -> Option<Result<Call, CallToolResult>> {
        fn args<A: DeserializeOwned>(arguments: JsonObject) -> Result<A, CallToolResult> {
            serde_json::from_value(serde_json::Value::Object(arguments)).map_err(|e| {
                CallToolResult::error(vec![ContentBlock::text(format!(
                    "failed to deserialize parameters: {e}"
                ))])
            })
        }
        Some(match name {
            "read_file" => args(arguments).map(Call::ReadFile),
            "list_files" => args(arguments).map(Call::ListFiles),
            "search_files" => args(arguments).map(Call::SearchFiles),
            "write_file" => args(arguments).map(Call::WriteFile),
            "apply_diff" => args(arguments).map(Call::ApplyDiff),
            "execute_command" => args(arguments).map(Call::ExecuteCommand),
            "get_diagnostics" => args(arguments).map(Call::GetDiagnostics),
            _ => return None,
        })
    }

    /// Runs the call. Dropping the future cancels it: that is what closes
    /// a review's view and kills a command's process group.
    async fn run(self, ctx: &Context) -> CallToolResult {
        let reply = match self {
            Call::ReadFile(a) => tools::read_file::call(ctx, a.path, a.offset, a.limit).await,
            Call::ListFiles(a) => {
                tools::list_files::call(ctx, a.path, a.recursive.unwrap_or(false)).await
            }
            Call::SearchFiles(a) => {
                tools::search_files::call(ctx, a.path, a.regex, a.file_pattern).await
            }
            Call::WriteFile(a) => tools::write_file::call(ctx, a.path, a.content).await,
            Call::ApplyDiff(a) => tools::apply_diff::call(ctx, a.path, a.diff).await,
            Call::ExecuteCommand(a) => {
                tools::execute_command::call(ctx, a.command, a.cwd, a.timeout_secs).await
            }
            Call::GetDiagnostics(a) => tools::get_diagnostics::call(ctx, a.path, a.severity).await,
        };
        to_result(reply)
    }
}

/// A tool's reply as an MCP result.
fn to_result(reply: Reply) -> CallToolResult {
    match reply {
        Ok(t) => CallToolResult::success(vec![ContentBlock::text(t)]),
        Err(t) => CallToolResult::error(vec![ContentBlock::text(t)]),
    }
}

/// The tools, over one workspace: a session's handler (rmcp makes one per
/// session) and the stateless calls' ([`DirectTools`]).
#[derive(Clone)]
pub struct WorkspaceTools {
    ctx: Arc<Context>,
}

impl WorkspaceTools {
    pub fn new(ctx: Arc<Context>) -> WorkspaceTools {
        WorkspaceTools { ctx }
    }
}

impl DirectTools for WorkspaceTools {
    fn call(
        &self,
        name: &str,
        arguments: JsonObject,
    ) -> Option<BoxFuture<'static, CallToolResult>> {
        let call = Call::parse(name, arguments)?;
        let ctx = self.ctx.clone();
        Some(Box::pin(async move {
            match call {
                Ok(call) => call.run(&ctx).await,
                Err(refused) => refused,
            }
        }))
    }
}

impl ServerHandler for WorkspaceTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ccbridge-tools", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools over the user's workspace folders, served by ccbridge. Paths are relative to the \
                 workspace folder or absolute inside it; nothing outside it can be reached.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The 2026-07-28 revision's cache hints, as rmcp's own handlers give them.
        let hints = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        Ok(ListToolsResult {
            result_type: Some(ResultType::COMPLETE),
            tools: tool_list().to_vec(),
            meta: None,
            next_cursor: None,
            ttl_ms: hints.then_some(0),
            cache_scope: hints.then_some(CacheScope::Public),
        })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tool_list().iter().find(|t| t.name == name).cloned()
    }

    /// rmcp signals a cancellation (`ct`) rather than dropping the call;
    /// dropping it here is what cancels it.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let call = match Call::parse(&request.name, arguments) {
            None => return Err(ErrorData::invalid_params("tool not found", None)),
            Some(Err(refused)) => return Ok(refused.into()),
            Some(Ok(call)) => call,
        };
        Ok(tokio::select! {
            result = call.run(&self.ctx) => result,
            () = context.ct.cancelled() => to_result(Err("the client cancelled the call".into())),
        }
        .into())
    }
}

/// The MCP endpoint as a tower service: sessions (at most
/// [`MAX_SESSIONS`], idle ones closed after [`SESSION_IDLE`]), loopback
/// `Host` only (again: the guard checks it first), `Origin` left to the
/// guard, bodies up to [`MAX_BODY_BYTES`]. Cancelling `stop` ends every session.
///
/// Each session (or stateless request) gets its handler when it starts, as
/// the companions' do; the tool list and its schemas are made when the
/// first client arrives, not at start-up, so a tools server nobody uses
/// costs only its listener.
pub fn endpoint(
    ctx: Arc<Context>,
    stop: CancellationToken,
) -> Direct<StreamableHttpService<WorkspaceTools, CappedSessions>, WorkspaceTools> {
    let tools = WorkspaceTools::new(ctx);
    let sessions = http_service(
        {
            let tools = tools.clone();
            move || Ok(tools.clone())
        },
        CappedSessions::default(),
        MAX_BODY_BYTES,
        stop.clone(),
    );
    Direct::new(sessions, tools, MAX_BODY_BYTES, stop)
}
