//! The discovery lock file `<CLAUDE_CONFIG_DIR or ~/.claude>/ide/<port>.lock`.
//!
//! The client takes the port from the file name, never from the contents,
//! and selects WebSocket only for `transport: "ws"` (reference §1.3).
//! `Debug` never prints the token.

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
        }
    }

    /// Parses a lock file's bytes. Like the client, a file that is not JSON
    /// is read as one workspace folder per line (an old SSE-era format).
    pub fn parse(bytes: &[u8]) -> Result<LockFile, LockFileError> {
        let text = std::str::from_utf8(bytes).map_err(|_| LockFileError::NotUtf8)?;
        match serde_json::from_str::<LockFile>(text) {
            Ok(l) => Ok(l),
            Err(e) if serde_json::from_str::<serde_json::Value>(text).is_ok() => {
                Err(LockFileError::Shape(e.to_string()))
            }
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
            .finish()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LockFileError {
    #[error("lock file is not UTF-8")]
    NotUtf8,
    #[error("lock file JSON has the wrong shape: {0}")]
    Shape(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn port_comes_from_the_name() {
        assert_eq!(LockFile::port_from_file_name("12345.lock"), Some(12345));
        assert_eq!(LockFile::port_from_file_name("12345.lock.tmp"), None);
        assert_eq!(LockFile::port_from_file_name("abc.lock"), None);
        assert_eq!(LockFile::port_from_file_name("99999.lock"), None);
    }
}
