//! `ccbridge hook-report FILE` (hidden): the `PostToolUse` hook `ccbridge
//! claude` gives Claude Code for its file-editing tools. Claude runs it
//! after each edit with the call as JSON on stdin; it appends one line,
//! `{"tool": "Edit", "path": "/abs/file"}`, to FILE, which `ccbridge
//! claude` follows to name Claude (and the tool) on that file in the
//! session review. A Write's input holds the whole new file, so stdin is
//! read up to a bound and only the two fields are kept. It always exits 0
//! with no output: a hook that fails or prints would show up in Claude.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// Most of stdin read (a Write of a large file carries it whole).
const MAX_INPUT: u64 = 64 << 20;

#[derive(clap::Args)]
pub struct Args {
    /// The file to append the report to.
    file: PathBuf,
}

/// The report line for one hook input, if it names an edited file.
pub(crate) fn report(input: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(input).ok()?;
    let tool = v.get("tool_name")?.as_str()?;
    let args = v.get("tool_input")?;
    let path = args
        .get("file_path")
        .or_else(|| args.get("notebook_path"))?
        .as_str()?;
    Some(serde_json::json!({ "tool": tool, "path": path }).to_string() + "\n")
}

pub fn run(args: Args) -> ExitCode {
    let mut input = Vec::new();
    let _ = std::io::stdin().take(MAX_INPUT).read_to_end(&mut input);
    if let Some(line) = report(&input) {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(&args.file);
        // One write: reports of edits made in parallel do not interleave.
        if let Ok(mut f) = file {
            let _ = f.write_all(line.as_bytes());
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::report;

    #[test]
    fn keeps_the_tool_and_the_path_only() {
        let input = br#"{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Write","tool_input":{"file_path":"/w/a.rs","content":"fn main() {}"},"tool_response":{}}"#;
        assert_eq!(
            report(input).as_deref(),
            Some("{\"path\":\"/w/a.rs\",\"tool\":\"Write\"}\n")
        );
        let nb = br#"{"tool_name":"NotebookEdit","tool_input":{"notebook_path":"/w/n.ipynb"}}"#;
        assert!(report(nb).unwrap().contains("/w/n.ipynb"));
        assert_eq!(report(b"not json"), None);
        assert_eq!(
            report(br#"{"tool_name":"Bash","tool_input":{"command":"ls"}}"#),
            None
        );
    }
}
