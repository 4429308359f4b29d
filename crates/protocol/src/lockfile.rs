//! The discovery lock file `<CLAUDE_CONFIG_DIR or ~/.claude>/ide/<port>.lock`.
//!
//! The client takes the port from the file name, never from the contents,
//! and selects WebSocket only for `transport: "ws"`.
//! `Debug` never prints the token.
//!
//! `pid` is the *editor's* process, which the CLI checks. The process that
//! actually serves the port (ccbridge, when an editor spawned it) is
//! recorded beside it in `serverProcess`, a field the CLI ignores: when
//! ccbridge is killed outright while the editor lives on, that record is
//! what shows the lock to be stale.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default)]
    pub workspace_folders: Vec<String>,
    #[serde(default)]
    pub ide_name: String,
    #[serde(default)]
    pub transport: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_token: Option<String>,
    #[serde(default)]
    pub running_in_windows: bool,
    /// The process serving the port, when recorded (ccbridge does; other
    /// IDE servers do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_process: Option<ServerProcess>,
    /// ccbridge's workspace tools server, when it runs: for `ccbridge
    /// mcp-config` to find (the file is as private as the IDE token in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<McpEndpoint>,
    /// ccbridge's review page, when it serves one: for `ccbridge link` to
    /// ask it for a fresh sign-in link from another terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<PageLink>,
}

/// Where ccbridge's review page is, and a token that does one thing: make
/// a new one-time sign-in link (`POST /api/link`). In the lock file only,
/// as private as the IDE token beside it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageLink {
    /// The page's address, without a token (`http://127.0.0.1:<port>/`).
    pub url: String,
    pub link_token: String,
}

impl fmt::Debug for PageLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageLink")
            .field("url", &self.url)
            .field("link_token", &"<redacted>")
            .finish()
    }
}

/// Where an MCP server is reached over HTTP, and its bearer token (ccbridge's
/// workspace tools: in the lock file, `initialize`, Claude's `.claude.json`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpEndpoint {
    pub url: String,
    pub token: String,
}

impl fmt::Debug for McpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpEndpoint")
            .field("url", &self.url)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// Which process serves a lock file's port, precisely enough to tell it
/// from a later process that reuses its pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerProcess {
    pub pid: u32,
    /// When the process started, in the OS's own unit (on Linux, clock
    /// ticks after boot: field 22 of `/proc/<pid>/stat`); absent where the
    /// OS does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<u64>,
}

impl LockFile {
    pub fn new(pid: u32, workspace_folders: Vec<String>, ide_name: String, token: String) -> Self {
        LockFile {
            pid: Some(pid),
            workspace_folders,
            ide_name,
            transport: "ws".into(),
            auth_token: Some(token),
            running_in_windows: false,
            server_process: None,
            tools: None,
            page: None,
        }
    }

    /// Parses a lock file's bytes. Like the client, a file that is not JSON
    /// is read as one workspace folder per line (an old SSE-era format) —
    /// unless it starts like JSON (`{` or `[`): that is a broken or
    /// truncated lock, and its lines (a token among them) are no folders.
    /// Errors never quote the file's contents.
    pub fn parse(bytes: &[u8]) -> Result<LockFile, LockFileError> {
        let text = std::str::from_utf8(bytes).map_err(|_| LockFileError::NotUtf8)?;
        match serde_json::from_str::<LockFile>(text) {
            Ok(l) => Ok(l),
            Err(e) if e.is_data() => Err(LockFileError::Shape {
                line: e.line(),
                column: e.column(),
            }),
            Err(e) if text.trim_start().starts_with(['{', '[']) => Err(LockFileError::BrokenJson {
                line: e.line(),
                column: e.column(),
            }),
            Err(_) => Ok(LockFile {
                pid: None,
                workspace_folders: text
                    .split('\n')
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(String::from)
                    .collect(),
                ide_name: String::new(),
                transport: String::new(),
                auth_token: None,
                running_in_windows: false,
                server_process: None,
                tools: None,
                page: None,
            }),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("lock file serializes")
    }

    /// The port a lock file's name stands for, parsed as the client does:
    /// the first `.lock` removed, then the leading digits.
    pub fn port_from_file_name(name: &str) -> Option<u16> {
        let stem = name.strip_suffix(".lock")?;
        let digits: String = stem.chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse().ok().filter(|p| *p != 0)
    }
}

impl fmt::Debug for LockFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockFile")
            .field("pid", &self.pid)
            .field("workspace_folders", &self.workspace_folders)
            .field("ide_name", &self.ide_name)
            .field("transport", &self.transport)
            .field(
                "auth_token",
                &self.auth_token.as_ref().map(|_| "<redacted>"),
            )
            .field("running_in_windows", &self.running_in_windows)
            .field("server_process", &self.server_process)
            .field("tools", &self.tools)
            .field("page", &self.page)
            .finish()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LockFileError {
    #[error("lock file is not UTF-8")]
    NotUtf8,
    /// Valid JSON, but a field has the wrong type (or it is not an object).
    #[error("lock file JSON has the wrong shape (line {line}, column {column})")]
    Shape { line: usize, column: usize },
    /// Starts like JSON but is not: truncated or corrupt.
    #[error("lock file is broken or truncated JSON (line {line}, column {column})")]
    BrokenJson { line: usize, column: usize },
}

/// The environment that makes a `claude` started in it connect to the IDE
/// server on `port` at once (instead of scanning the lock files).
pub fn claude_env(port: u16) -> std::collections::BTreeMap<String, String> {
    std::collections::BTreeMap::from([
        ("CLAUDE_CODE_SSE_PORT".to_owned(), port.to_string()),
        ("ENABLE_IDE_INTEGRATION".to_owned(), "true".to_owned()),
    ])
}

/// Claude Code's tools that change files.
pub const CLAUDE_EDIT_TOOLS: &str = "Edit|MultiEdit|Write";

/// A `PreToolUse` hook command that reads the call (Claude writes it to the
/// hook's stdin) and answers "ask", whatever the permission mode would have
/// done: the CLI then shows its permission prompt, and with it the IDE's
/// diff for review.
pub const CLAUDE_ASK_HOOK: &str = "cat >/dev/null; printf '%s\\n' '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"ask\",\"permissionDecisionReason\":\"ccbridge: every edit is reviewed in the IDE\"}}'";

/// The settings (for `claude --settings`) ccbridge gives a `claude` it
/// starts. With `review_edits`, every edit reaches the IDE for review even
/// in auto mode (the default since 2.1.328, where Edit and Write are
/// allowed without asking, so no `openDiff` is sent): a `PreToolUse` hook
/// answers "ask" for them. `allow` adds permission rules (such as the
/// workspace tools the editor asks about itself). The permission mode the
/// user chose still decides everything else.
pub fn claude_settings(review_edits: bool, allow: &[&str]) -> serde_json::Value {
    let mut s = serde_json::json!({});
    if review_edits {
        s["hooks"] = serde_json::json!({"PreToolUse": [{"matcher": CLAUDE_EDIT_TOOLS,
            "hooks": [{"type": "command", "command": CLAUDE_ASK_HOOK}]}]});
    }
    if !allow.is_empty() {
        s["permissions"] = serde_json::json!({ "allow": allow });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_review_hook_answers_ask() {
        let s = claude_settings(true, &["mcp__x"]);
        assert_eq!(s["hooks"]["PreToolUse"][0]["matcher"], CLAUDE_EDIT_TOOLS);
        assert_eq!(s["permissions"]["allow"], json!(["mcp__x"]));
        let out = std::process::Command::new("sh")
            .args(["-c", CLAUDE_ASK_HOOK])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "ask");
        assert!(claude_settings(true, &[]).get("permissions").is_none());
        assert_eq!(claude_settings(false, &[]), json!({}));
    }

    #[test]
    fn serializes_every_field_the_client_reads() {
        let l = LockFile::new(7, vec!["/w".into()], "Neovim".into(), "t0k".into());
        let v: serde_json::Value = serde_json::from_str(&l.to_json()).unwrap();
        assert_eq!(
            v,
            json!({"pid":7,"workspaceFolders":["/w"],"ideName":"Neovim","transport":"ws",
                   "authToken":"t0k","runningInWindows":false})
        );
        assert_eq!(LockFile::parse(l.to_json().as_bytes()).unwrap(), l);
    }

    #[test]
    fn debug_redacts_the_token() {
        let l = LockFile::new(7, vec![], "x".into(), "supersecret".into());
        assert!(!format!("{l:?}").contains("supersecret"));
    }

    #[test]
    fn non_json_is_a_folder_list() {
        let l = LockFile::parse(b"/a\n /b \n\n").unwrap();
        assert_eq!(l.workspace_folders, vec!["/a", "/b"]);
        assert_eq!(l.auth_token, None);
        assert!(LockFile::parse(&[0xff, 0xfe]).is_err());
        assert!(LockFile::parse(b"{\"pid\":\"x\"}").is_err());
    }

    /// Issue 11, defect 7: a truncated lock's token used to come back as a
    /// "workspace folder", and shape errors quoted the offending value.
    #[test]
    fn regression_broken_json_is_an_error_that_quotes_nothing() {
        let truncated = br#"{"pid":1,"workspaceFolders":["/w"],"authToken":"s3cr3t-t0k"#;
        let e = LockFile::parse(truncated).unwrap_err();
        assert!(matches!(e, LockFileError::BrokenJson { .. }), "{e}");
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
        let e = LockFile::parse(br#"{"pid":"s3cr3t-t0k"}"#).unwrap_err();
        assert!(matches!(e, LockFileError::Shape { .. }), "{e}");
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
        let e = LockFile::parse(b"  [\"\x1b]0;pwned\x07\"").unwrap_err();
        assert!(matches!(e, LockFileError::BrokenJson { .. }), "{e}");
        assert!(matches!(
            LockFile::parse(br#"["/a"]"#),
            Err(LockFileError::Shape { .. })
        ));
    }

    #[test]
    fn server_process_round_trips_and_is_optional() {
        let mut l = LockFile::new(7, vec!["/w".into()], "x".into(), "t".into());
        l.server_process = Some(ServerProcess {
            pid: 9,
            start_time: Some(12345),
        });
        let v: serde_json::Value = serde_json::from_str(&l.to_json()).unwrap();
        assert_eq!(v["serverProcess"], json!({"pid": 9, "startTime": 12345}));
        assert_eq!(LockFile::parse(l.to_json().as_bytes()).unwrap(), l);
        let other_ide = br#"{"pid":7,"workspaceFolders":[],"ideName":"VS Code","transport":"ws"}"#;
        assert_eq!(LockFile::parse(other_ide).unwrap().server_process, None);
    }

    #[test]
    fn port_comes_from_the_name() {
        assert_eq!(LockFile::port_from_file_name("12345.lock"), Some(12345));
        assert_eq!(LockFile::port_from_file_name("12345.lock.tmp"), None);
        assert_eq!(LockFile::port_from_file_name("abc.lock"), None);
        assert_eq!(LockFile::port_from_file_name("99999.lock"), None);
    }
}
