//! The MCP side of the tools server: the one module that uses `rmcp`
//! (pinned `=3.11.0`; its API changes with every minor release). It declares
//! the tools with their argument types (the input schemas are generated
//! from them, the doc comments becoming the descriptions a model reads) and
//! calls `ccbridge-tools` for the work, on the blocking pool. Transport
//! settings (sessions, Host/Origin, body size) are set here too.

use ccbridge_protocol::editor::{FileDiagnostics, Severity};
use ccbridge_tools::{get_diagnostics, list_files, read_file, search_files};
use ccbridge_workspace::Workspace;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// Where `get_diagnostics` reads the editor's diagnostics.
pub trait DiagnosticsSource: Send + Sync + 'static {
    fn diagnostics(&self) -> Vec<FileDiagnostics>;
}

/// Sessions idle this long are closed.
pub const SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
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
pub struct GetDiagnosticsArgs {
    /// Only this file, or the files under this directory (default: the whole workspace).
    pub path: Option<String>,
    /// The least severe kind to list: `error`, `warning` (default), `info` or `hint`.
    pub severity: Option<String>,
}

/// The tools, over one workspace.
#[derive(Clone)]
pub struct WorkspaceTools {
    ws: Arc<Workspace>,
    diagnostics: Arc<dyn DiagnosticsSource>,
    tool_router: ToolRouter<Self>,
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

fn failed(t: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(t)])
}

/// Runs blocking file work off the async threads.
async fn blocking(f: impl FnOnce() -> CallToolResult + Send + 'static) -> CallToolResult {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| failed(format!("the tool failed: {e}")))
}

#[tool_router]
impl WorkspaceTools {
    pub fn new(ws: Arc<Workspace>, diagnostics: Arc<dyn DiagnosticsSource>) -> WorkspaceTools {
        WorkspaceTools {
            ws,
            diagnostics,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Read a text file of the workspace, each line prefixed with its number (`  12 | text`). Returns at most `limit` lines from `offset`; the last line says which lines were shown and how many the file has. Binary files are refused."
    )]
    async fn read_file(&self, Parameters(a): Parameters<ReadFileArgs>) -> CallToolResult {
        let ws = self.ws.clone();
        blocking(
            move || match read_file::read(&ws, &a.path, a.offset, a.limit) {
                Ok(w) => {
                    let total = match w.total_lines {
                        Some(n) => format!("{n} lines in the file"),
                        None => format!("{} bytes in the file, not counted", w.size_bytes),
                    };
                    let shown = if w.first_line == 0 {
                        "no lines at this offset".to_owned()
                    } else {
                        format!("lines {}-{}", w.first_line, w.last_line)
                    };
                    let more = if w.more {
                        "; more follow (read on with offset)"
                    } else {
                        ""
                    };
                    text(format!(
                        "{}({shown} of {}, {total}{more})\n",
                        w.text, a.path
                    ))
                }
                Err(e) => failed(e.to_string()),
            },
        )
        .await
    }

    #[tool(
        description = "List a directory of the workspace, one entry per line, directories ending in `/`. With `recursive`, everything below it too. Files ignored by .gitignore are left out; at most 500 entries."
    )]
    async fn list_files(&self, Parameters(a): Parameters<ListFilesArgs>) -> CallToolResult {
        let ws = self.ws.clone();
        blocking(move || {
            match list_files::list(
                &ws,
                &a.path,
                a.recursive.unwrap_or(false),
                list_files::DEFAULT_MAX_ENTRIES,
            ) {
                Ok(l) => text(l.render()),
                Err(e) => failed(e.to_string()),
            }
        })
        .await
    }

    #[tool(
        description = "Search the files under a directory for a regular expression. Matches are grouped by file: the path, then `N:line` for each matching line and `N-line` for one line of context around it. Files ignored by .gitignore, hidden files and binary files are skipped; at most 300 matching lines."
    )]
    async fn search_files(&self, Parameters(a): Parameters<SearchFilesArgs>) -> CallToolResult {
        let ws = self.ws.clone();
        blocking(move || {
            match search_files::search(
                &ws,
                &a.path,
                &a.regex,
                a.file_pattern.as_deref(),
                search_files::DEFAULT_MAX_RESULTS,
            ) {
                Ok(f) => text(f.render()),
                Err(e) => failed(e.to_string()),
            }
        })
        .await
    }

    #[tool(
        description = "The problems the editor reports (compiler errors, lint warnings), one per line: `[severity] path:line — message`, lines counted from 1, errors first. Filter by a file or directory and by the least severe kind to include."
    )]
    async fn get_diagnostics(
        &self,
        Parameters(a): Parameters<GetDiagnosticsArgs>,
    ) -> CallToolResult {
        let min = match a.severity.as_deref() {
            None => Severity::Warning,
            Some(s) => match Severity::parse(s) {
                Some(s) => s,
                None => {
                    return failed(format!(
                        "unknown severity {s:?}: use error, warning, info or hint"
                    ))
                }
            },
        };
        let base = self
            .ws
            .folders()
            .next()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let under = match a.path.as_deref() {
            None => None,
            Some(p) => match self.ws.locate(p) {
                Ok(at) => Some(self.ws.absolute(&at).display().to_string()),
                Err(e) => return failed(e.to_string()),
            },
        };
        let files = self.diagnostics.diagnostics();
        text(get_diagnostics::format(
            &files,
            min,
            under.as_deref(),
            &base,
        ))
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

/// The MCP endpoint as a tower service: sessions (idle ones closed after
/// [`SESSION_IDLE`]), loopback `Host` only, every `Origin` refused, bodies
/// up to [`MAX_BODY_BYTES`]. Cancelling `stop` ends every session.
pub fn endpoint(
    tools: WorkspaceTools,
    stop: tokio_util::sync::CancellationToken,
) -> StreamableHttpService<WorkspaceTools, LocalSessionManager> {
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(["127.0.0.1", "localhost", "::1"])
        .enforce_origin_validation()
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(stop);
    StreamableHttpService::new(move || Ok(tools.clone()), Arc::new(sessions), config)
}
