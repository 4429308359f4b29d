//! The MCP side of the tools server: the one module that uses `rmcp`
//! (pinned `=3.11.0`; its API changes with every minor release). It declares
//! the tools with their argument types (the input schemas are generated
//! from them, the doc comments becoming the descriptions a model reads) and
//! hands each call to its file in `tools/`. The transport (sessions,
//! Host/Origin, body size) is `ccbridge_http::mcp`'s, shared with the
//! companions.

use crate::tools::{self, Context, Reply};
use ccbridge_http::mcp::{http_service, CappedSessions};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};
use serde::Deserialize;
use std::sync::Arc;
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

/// The tools, over one workspace.
#[derive(Clone)]
pub struct WorkspaceTools {
    ctx: Arc<Context>,
    tool_router: ToolRouter<Self>,
}

/// The tool's reply as an MCP result; `None` when the client cancelled
/// the call first. rmcp only signals a cancellation (`ct`), it does not
/// drop the call: dropping it here is what closes a review's view and
/// kills a command's process group.
async fn result(
    ct: CancellationToken,
    call: impl std::future::Future<Output = Reply>,
) -> CallToolResult {
    let reply = tokio::select! {
        r = call => r,
        () = ct.cancelled() => Err("the client cancelled the call".into()),
    };
    match reply {
        Ok(t) => CallToolResult::success(vec![ContentBlock::text(t)]),
        Err(t) => CallToolResult::error(vec![ContentBlock::text(t)]),
    }
}

#[tool_router]
impl WorkspaceTools {
    pub fn new(ctx: Arc<Context>) -> WorkspaceTools {
        // Made once, when the first client arrives (not at start-up), then
        // shared: a session, or a stateless request, clones a few `Arc`s.
        static ROUTER: std::sync::OnceLock<ToolRouter<WorkspaceTools>> = std::sync::OnceLock::new();
        WorkspaceTools {
            ctx,
            tool_router: ROUTER.get_or_init(Self::tool_router).clone(),
        }
    }

    #[tool(
        description = "Read a text file of the workspace, each line prefixed with its number (`  12 | text`). Returns at most `limit` lines from `offset`; the last line says which lines were shown and how many the file has. Binary files are refused."
    )]
    async fn read_file(
        &self,
        Parameters(a): Parameters<ReadFileArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        result(
            ct,
            tools::read_file::call(&self.ctx, a.path, a.offset, a.limit),
        )
        .await
    }

    #[tool(
        description = "List a directory of the workspace, one entry per line, directories ending in `/`. With `recursive`, everything below it too. Files ignored by .gitignore are left out; at most 500 entries."
    )]
    async fn list_files(
        &self,
        Parameters(a): Parameters<ListFilesArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        result(
            ct,
            tools::list_files::call(&self.ctx, a.path, a.recursive.unwrap_or(false)),
        )
        .await
    }

    #[tool(
        description = "Search the files under a directory for a regular expression. Matches are grouped by file: the path, then `N:line` for each matching line and `N-line` for one line of context around it. Files ignored by .gitignore, hidden files and binary files are skipped; at most 300 matching lines."
    )]
    async fn search_files(
        &self,
        Parameters(a): Parameters<SearchFilesArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        result(
            ct,
            tools::search_files::call(&self.ctx, a.path, a.regex, a.file_pattern),
        )
        .await
    }

    #[tool(
        description = "Create a file or replace its whole text. The user reviews the change as a diff in their editor and may edit or reject it. The result is JSON: `status` `accepted` (with `operation` `created` or `modified`, `user_edits` as a unified diff when the user changed your text: the file holds their version, and `new_diagnostics` when the editor reports new problems), `rejected` (nothing was written), or `unchanged`. Prefer apply_diff for small edits of an existing file."
    )]
    async fn write_file(
        &self,
        Parameters(a): Parameters<WriteFileArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        result(ct, tools::write_file::call(&self.ctx, a.path, a.content)).await
    }

    #[tool(
        description = "Edit an existing file with SEARCH/REPLACE blocks:\n<<<<<<< SEARCH\nexact lines from the file\n=======\nthe lines to put instead\n>>>>>>> REPLACE\nEach SEARCH part must match the file exactly once, whitespace included (include more lines when it is ambiguous). Blocks apply in order, each to the result of the previous. The user reviews the result as a diff. The result is JSON like write_file's; when some blocks failed it has `partial: true`, `failed_blocks` (their numbers, from 1) and `failures`."
    )]
    async fn apply_diff(
        &self,
        Parameters(a): Parameters<ApplyDiffArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        result(ct, tools::apply_diff::call(&self.ctx, a.path, a.diff)).await
    }

    #[tool(
        description = "Run a shell command in the workspace, once the user allows it; they see its output live. The result is JSON: `exit_code`, `output` (stdout and stderr together, terminal escapes removed, long output cut in the middle), `cwd`; `status: rejected` when the user did not allow it (it did not run); `timed_out` when it ran past `timeout_secs` and was stopped. Commands cannot read input: pass non-interactive flags."
    )]
    async fn execute_command(
        &self,
        Parameters(a): Parameters<ExecuteCommandArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        result(
            ct,
            tools::execute_command::call(&self.ctx, a.command, a.cwd, a.timeout_secs),
        )
        .await
    }

    #[tool(
        description = "The problems the editor reports (compiler errors, lint warnings), one per line: `[severity] path:line — message`, lines counted from 1, errors first. Filter by a file or directory and by the least severe kind to include."
    )]
    async fn get_diagnostics(
        &self,
        Parameters(a): Parameters<GetDiagnosticsArgs>,
        ct: CancellationToken,
    ) -> CallToolResult {
        result(
            ct,
            tools::get_diagnostics::call(&self.ctx, a.path, a.severity),
        )
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for WorkspaceTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ccbridge-tools", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Tools over the user's workspace folders, served by ccbridge. Paths are relative to the \
                 workspace folder or absolute inside it; nothing outside it can be reached.",
            )
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
    stop: tokio_util::sync::CancellationToken,
) -> StreamableHttpService<WorkspaceTools, CappedSessions> {
    http_service(
        move || Ok(WorkspaceTools::new(ctx.clone())),
        MAX_BODY_BYTES,
        stop,
    )
}
