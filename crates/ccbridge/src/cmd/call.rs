//! `ccbridge call`: call a tool on a running IDE server, as Claude Code would.
//!
//! Finds the server through its lock file (by port, or by the workspace
//! that contains a directory), connects with the lock file's token, and
//! prints the tool's result so scripts can use it (`ccbridge call
//! getDiagnostics | jq`). Useful to debug any IDE server, ours or others.

use crate::output::{outln, WriteError};
use anyhow::Context;
use ccbridge_client::discovery::{self, Env, LockEntry};
use ccbridge_client::ws_client::{ClientError, IdeClient, CLAUDE_ACCEPTED_VERSIONS};
use ccbridge_protocol::mcp::{CallToolResult, Content, ToolDescriptor};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Bad usage (for example invalid JSON arguments).
const EXIT_USAGE: u8 = 2;

#[derive(clap::Args)]
#[command(after_help = "\
Choosing the server: --port P uses the newest lock file named P.lock; otherwise, \
if $CLAUDE_CODE_SSE_PORT names a server (as in an IDE's terminal) and \
--workspace is not given, that one; otherwise the newest server whose workspace \
folder equals the directory (default: the current one) or contains it. The \
token comes from the lock file. Run `ccbridge list` to see the candidates.

Output: each text item of the result on its own line(s) on stdout (so \
`ccbridge call getDiagnostics | jq` works); --raw prints the whole result JSON. \
With --list, prints `name(arguments)<TAB>description` per tool, optional \
arguments marked `?` (--raw: the tools/list JSON with full schemas). Text from \
the server is printed with terminal control characters escaped.

Exit status: 0 success; 1 the tool reported an error (isError, text on stderr) \
or the connection failed; 2 bad usage or invalid JSON arguments; 3 no matching \
IDE server.

Note: ccbridge servers never evict the Claude Code session attached to them \
for this client; servers that allow one session at a time (VS Code) may.

Examples:
  ccbridge call getDiagnostics
  ccbridge call --port 23456 openFile '{\"filePath\": \"/tmp/a.txt\"}'
  echo '{}' | ccbridge call --workspace ~/proj getCurrentSelection -
  ccbridge call --list")]
pub struct Args {
    /// Use the server listening on this port (its lock file supplies the token).
    #[arg(long, short, value_name = "PORT", conflicts_with = "workspace")]
    port: Option<u16>,
    /// Use the newest server whose workspace contains DIR [default: the current directory].
    #[arg(long, short, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Seconds to wait for the tool's answer; 0 waits without limit (openDiff
    /// waits until the user accepts or rejects the diff).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_secs)]
    timeout: Duration,
    /// Seconds allowed for connecting and the MCP handshake (and for
    /// --list); 0 waits without limit, as for --timeout.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_secs)]
    connect_timeout: Duration,
    /// Print the whole result as JSON instead of its text items.
    #[arg(long)]
    raw: bool,
    /// List the server's tools (tools/list) instead of calling one.
    #[arg(long, conflicts_with_all = ["tool", "arguments"])]
    list: bool,
    /// The tool to call, e.g. getDiagnostics, getCurrentSelection, openFile.
    #[arg(value_name = "TOOL", required_unless_present = "list")]
    tool: Option<String>,
    /// The tool's arguments, a JSON object [default: {}]; `-` reads them from stdin.
    #[arg(value_name = "JSON")]
    arguments: Option<String>,
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{s}` is not a valid duration"))
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("ccbridge: {msg}");
    ExitCode::from(EXIT_USAGE)
}

/// The arguments as a JSON object, or the usage error to print.
fn parse_arguments(text: Option<&str>) -> Result<Value, String> {
    let owned;
    let text = match text {
        None => return Ok(Value::Object(Default::default())),
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("cannot read the arguments from stdin: {e}"))?;
            owned = s;
            owned.as_str()
        }
        Some(t) => t,
    };
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(format!(
            "the tool arguments must be a JSON object like '{{\"filePath\": \"/a\"}}', not {}",
            kind(&other)
        )),
        Err(e) => Err(format!(
            "the tool arguments are not valid JSON ({e}); pass an object like '{{\"filePath\": \"/a\"}}'"
        )),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let arguments = match parse_arguments(args.arguments.as_deref()) {
        Ok(v) => v,
        Err(msg) => return Ok(usage(msg)),
    };

    let env = Env::from_process();
    let scan = super::scan_lock_files(&env);
    let looked_in = || {
        let dirs: Vec<String> = scan.dirs.iter().map(|d| d.display().to_string()).collect();
        if dirs.is_empty() {
            "no lock-file directory (neither HOME nor CLAUDE_CONFIG_DIR is set)".to_string()
        } else {
            dirs.join(", ")
        }
    };

    let sse_port = std::env::var("CLAUDE_CODE_SSE_PORT")
        .ok()
        .and_then(|p| p.trim().parse::<u16>().ok());
    let entry: &LockEntry = if let Some(port) = args.port {
        match discovery::pick_for_port(&scan.entries, port) {
            Some(e) => e,
            None => {
                return Ok(super::not_found(format_args!(
                    "no lock file for port {port} (looked in {})",
                    looked_in()
                )))
            }
        }
    } else if let Some(e) = sse_port
        .filter(|_| args.workspace.is_none())
        .and_then(|p| discovery::pick_for_port(&scan.entries, p))
        .filter(|e| e.is_usable())
    {
        e
    } else {
        let dir = match &args.workspace {
            // Canonical, as lock files record folders (and as `link` and
            // `mcp-config` take it): a folder named through a link matched
            // nothing. A path that does not exist is matched as written.
            Some(d) => std::fs::canonicalize(d)
                .or_else(|_| std::path::absolute(d))
                .with_context(|| format!("cannot resolve {}", crate::display::path(d)))?,
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let matches = discovery::matching_workspace(&scan.entries, &dir, env.wsl_distro.as_deref());
        match matches.as_slice() {
            [] => {
                return Ok(super::not_found(format_args!(
                    "no running IDE server has a workspace containing {} (looked in {})",
                    crate::display::path(&dir),
                    looked_in()
                )))
            }
            [only] => only,
            [newest, ..] => {
                eprintln!(
                    "ccbridge: {} IDE servers contain {}; using the newest ({}, port {}). Pass --port to choose another.",
                    matches.len(),
                    crate::display::path(&dir),
                    crate::display::line(&ide_name(newest)),
                    newest.port.map_or_else(|| "?".into(), |p| p.to_string()),
                );
                newest
            }
        }
    };

    let Some(port) = entry.port else {
        return Ok(super::not_found(format_args!(
            "{} has no port in its name",
            entry.path.display()
        )));
    };
    let lock = match &entry.lock {
        Ok(l) => l,
        Err(e) => {
            return Ok(super::not_found(format_args!(
                "the lock file {} cannot be used: {e}",
                entry.path.display()
            )))
        }
    };
    if lock.transport != "ws" {
        return Ok(super::not_found(format_args!(
            "the server on port {port} uses the SSE transport ({}); ccbridge call speaks only WebSocket",
            entry.path.display()
        )));
    }
    if entry.pid_alive == Some(false) {
        eprintln!(
            "ccbridge: warning: the process of {} is gone; trying port {port} anyway",
            entry.path.display()
        );
    }

    let connect_timeout = match args.connect_timeout {
        d if d.is_zero() => Duration::MAX,
        d => d,
    };
    let mut client = IdeClient::connect(port, lock.auth_token.as_deref(), connect_timeout)
        .await
        .map_err(|e| explain(e, port, &entry.path))?;
    if !client.claude_accepts_version() {
        eprintln!(
            "ccbridge: warning: the server chose protocol version {:?}, which Claude Code rejects (it accepts {})",
            client.protocol_version(),
            CLAUDE_ACCEPTED_VERSIONS.join(", ")
        );
    }

    let explain = |e| explain(e, port, &entry.path);
    let code = if args.list {
        let tools = client.list_tools().await.map_err(explain)?;
        print_tools(&tools, args.raw)?
    } else {
        let tool = args.tool.as_deref().unwrap_or_default();
        let timeout = (!args.timeout.is_zero()).then_some(args.timeout);
        let result = client
            .call_tool_raw(tool, arguments, timeout)
            .await
            .map_err(explain)?;
        let parsed = ccbridge_client::ws_client::parse_call_result(&result).map_err(explain)?;
        print_result(&result, &parsed, args.raw)?
    };
    let _ = client.close().await;
    Ok(code)
}

fn print_tools(tools: &[ToolDescriptor], raw: bool) -> Result<ExitCode, WriteError> {
    if raw {
        outln!(
            "{}",
            serde_json::to_string_pretty(tools).unwrap_or_else(|_| "[]".into())
        )?;
    } else {
        use crate::display::line;
        for t in tools {
            let first_line = t.description.lines().next().unwrap_or("");
            outln!(
                "{}({})\t{}",
                line(&t.name),
                line(&arguments_of(&t.input_schema)),
                line(first_line)
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A tool's result: its text on stdout (on stderr when it is an error),
/// or the whole result as JSON with `raw`.
fn print_result(
    result: &Value,
    parsed: &CallToolResult,
    raw: bool,
) -> Result<ExitCode, WriteError> {
    if raw {
        outln!(
            "{}",
            serde_json::to_string_pretty(result).unwrap_or_else(|_| result.to_string())
        )?;
    } else {
        for item in &parsed.content {
            match item {
                Content::Text { text } if parsed.is_error => {
                    eprintln!("{}", crate::display::text(text))
                }
                Content::Text { text } => outln!("{}", crate::display::text(text))?,
                Content::Image { data, mime_type } => eprintln!(
                    "ccbridge: an image ({}, {} bytes of base64) was omitted; use --raw to see it",
                    crate::display::line(mime_type),
                    data.len()
                ),
            }
        }
    }
    Ok(if parsed.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `filePath, startLine?, ...`: a tool's arguments from its input schema,
/// the optional ones marked `?`.
fn arguments_of(schema: &Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|props| {
            props
                .keys()
                .map(|k| {
                    if required.contains(&k.as_str()) {
                        k.clone()
                    } else {
                        format!("{k}?")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn ide_name(e: &LockEntry) -> String {
    e.lock()
        .map(|l| l.ide_name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "IDE".into())
}

/// Adds what to do next to a client error.
fn explain(e: ClientError, port: u16, lock: &Path) -> anyhow::Error {
    let hint = match &e {
        ClientError::Connect { .. } => format!(
            "nothing accepts connections on port {port}; {} is probably stale (`ccbridge clean` removes it)",
            lock.display()
        ),
        ClientError::Refused { .. } | ClientError::TokenRequired { .. } => format!(
            "the token in {} does not match the server on port {port}; the file may be stale or another program took the port (see `ccbridge list`)",
            lock.display()
        ),
        ClientError::Timeout { during, .. } if during.contains("tools/call") => {
            "pass a larger --timeout, or --timeout 0 to wait without limit (openDiff waits for the user)".into()
        }
        ClientError::Timeout { .. } => {
            format!("the server on port {port} did not finish the handshake; try --connect-timeout, or check the IDE")
        }
        ClientError::Closed { code: Some(4001), .. } => {
            "the server accepts one session at a time and another client replaced this one".into()
        }
        ClientError::Rpc { .. } => "run `ccbridge call --list` to see the tools and their arguments".into(),
        _ => String::new(),
    };
    if hint.is_empty() {
        anyhow::Error::new(e)
    } else {
        anyhow::anyhow!("{e}; {hint}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_a_json_object() {
        assert_eq!(parse_arguments(None).unwrap(), serde_json::json!({}));
        assert_eq!(
            parse_arguments(Some(r#"{"a":1}"#)).unwrap(),
            serde_json::json!({"a":1})
        );
        assert!(parse_arguments(Some("{nope"))
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(parse_arguments(Some("[1]"))
            .unwrap_err()
            .contains("not an array"));
    }

    #[test]
    fn arguments_come_from_the_schema() {
        let schema = serde_json::json!({"type": "object",
            "properties": {"filePath": {}, "startLine": {}}, "required": ["filePath"]});
        assert_eq!(arguments_of(&schema), "filePath, startLine?");
        assert_eq!(arguments_of(&serde_json::json!({"type": "object"})), "");
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_secs("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_secs("0").unwrap(), Duration::ZERO);
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("abc").is_err());
        assert!(parse_secs("NaN").is_err());
    }
}
