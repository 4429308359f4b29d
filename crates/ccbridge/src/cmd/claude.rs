//! `ccbridge claude [OPTIONS] [-- CLAUDE ARGS...]`: the browser-UI IDE
//! server and Claude Code in one command.
//!
//! Starts the same server as `ccbridge serve` (its options), prints the
//! review UI's link, then runs `claude` in this terminal with
//! `CLAUDE_CODE_SSE_PORT` and `ENABLE_IDE_INTEGRATION=true`, so it connects
//! at once, and with the workspace tools server in an `--mcp-config` file
//! (private, removed on exit; not on the command line, where other users
//! could read its token), so its `mcp__ccbridge__*` tools are there without
//! registering anything. Every edit is reviewed however Claude runs: since
//! 2.1.328 a `claude` started without a permission mode is in auto mode,
//! where Edit and Write are allowed without asking, so no `openDiff` ever
//! reaches the IDE; so Claude also gets private settings (`--settings`)
//! with a `PreToolUse` hook that answers "ask" for its file-editing tools,
//! which makes the CLI show its permission prompt and with it the IDE's
//! diff. Nothing else changes: the mode the user chose still decides
//! commands, reads and every other tool. The same settings allow the
//! workspace tools' calls, which the page asks about itself (the user is
//! not asked twice). Claude owns the terminal from then on: Ctrl-C is Claude's
//! (ccbridge ignores SIGINT while Claude runs), SIGTERM and SIGHUP are
//! passed on to it. When Claude exits, the server stops, the lock file is
//! removed, and ccbridge exits with Claude's status (128 + the signal when
//! a signal ended it).

use super::serve::{self, ServerArgs, UiArgs};
use anyhow::Context;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Claude Code could not be found (the shell's "command not found").
const EXIT_NO_CLAUDE: u8 = 127;

#[derive(clap::Args)]
#[command(after_help = "\
Example: ccbridge claude --open -- --permission-mode default

Claude Code is looked up on PATH as `claude` unless --claude gives its path. \
Everything after `--` is passed to it. The exit status is Claude's.")]
pub struct Args {
    /// The Claude Code executable. Default: `claude` on PATH.
    #[arg(long, value_name = "PATH")]
    claude: Option<PathBuf>,
    #[command(flatten)]
    ui: UiArgs,
    #[command(flatten)]
    server: ServerArgs,
    /// Let Claude edit files without a review when its permission mode
    /// allows it (auto mode, `acceptEdits`): no hook makes edits ask.
    #[arg(long)]
    no_edit_review: bool,
    /// Arguments for Claude Code (after `--`).
    #[arg(last = true, value_name = "CLAUDE ARGS")]
    claude_args: Vec<OsString>,
}

/// `path` as one word of a POSIX shell command line; `None` when it is not
/// UTF-8 (a hook's command is a JSON string), which is said on stderr: the
/// hook is then left out.
fn shell_word(path: &Path, what: &str) -> Option<String> {
    let Some(s) = path.to_str() else {
        eprintln!(
            "ccbridge: warning: {what} is not UTF-8 ({}), so Claude's hook for it is left out",
            crate::display::path(path)
        );
        return None;
    };
    // A `'` inside ends the quoting, is escaped, and starts it again.
    Some(format!("'{}'", s.replace('\'', r"'\''")))
}

/// The hook that hands Claude the reviewer's notes with the user's next
/// prompt: ccbridge writes `notes` as the hook's whole answer (JSON it
/// made, so nothing is quoted in the shell); the hook takes the file by
/// renaming it, so a note is given once.
fn notes_hook(notes: &Path) -> Option<String> {
    let f = shell_word(notes, "the reviewer's notes file")?;
    Some(format!(
        "cat >/dev/null; f={f}; mv \"$f\" \"$f.taken\" 2>/dev/null && cat \"$f.taken\" && rm -f \"$f.taken\"; exit 0"
    ))
}

/// The hook that reports each of Claude's edits (tool and file) for the
/// session review: `ccbridge hook-report` appending to `reports`.
fn edits_hook(reports: &Path) -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let exe = shell_word(&exe, "ccbridge's own path")?;
    let f = shell_word(reports, "the edit reports file")?;
    Some(format!("{exe} hook-report {f}"))
}

/// Claude's settings for this session (`--settings`): the ones every
/// ccbridge-started `claude` gets (`claude_settings`: edits ask unless
/// `review_edits` is off; the workspace tools, whose writes and commands
/// the page asks about, allowed when `tools` is on), plus Claude's status
/// line showing `status` (where the review page is) when given, the
/// reviewer's notes reaching Claude's next request through `notes_hook`,
/// and each edit reported to the session review through `edits_hook`.
fn settings(
    review_edits: bool,
    tools: bool,
    status: Option<&str>,
    notes_hook: Option<&str>,
    edits_hook: Option<&str>,
) -> serde_json::Value {
    let allow: &[&str] = if tools {
        &[ccbridge_mcp::registration::PERMISSION_RULE]
    } else {
        &[]
    };
    let mut s = ccbridge_protocol::lockfile::claude_settings(review_edits, allow);
    if let Some(command) = notes_hook {
        s["hooks"]["UserPromptSubmit"] =
            serde_json::json!([{"hooks": [{"type": "command", "command": command}]}]);
    }
    if let Some(command) = edits_hook {
        s["hooks"]["PostToolUse"] = serde_json::json!([{"matcher": EDIT_TOOLS_REPORTED,
            "hooks": [{"type": "command", "command": command}]}]);
    }
    if let Some(line) = status {
        // `'` cannot occur: the line is ccbridge's own ASCII text.
        s["statusLine"] = serde_json::json!({"type": "command",
            "command": format!("cat >/dev/null; printf '%s\\n' '{line}'")});
    }
    s
}

/// The tools whose edits Claude's `PostToolUse` hook reports.
const EDIT_TOOLS_REPORTED: &str = "Edit|MultiEdit|Write|NotebookEdit";

/// What ccbridge hands Claude in files: `--mcp-config` for the tools
/// server, `--settings`; in a private folder removed when dropped.
struct ClaudeFiles {
    _dir: tempfile::TempDir,
    mcp_config: Option<PathBuf>,
    settings: PathBuf,
    /// The reviewer's notes not yet taken by Claude's hook.
    notes: PathBuf,
    /// Claude's reports of its edits (`ccbridge hook-report`), when the
    /// session review runs.
    edits: Option<PathBuf>,
}

impl ClaudeFiles {
    fn write(
        tools: Option<&ccbridge_protocol::lockfile::McpEndpoint>,
        review_edits: bool,
        status: Option<&str>,
        report_edits: bool,
    ) -> anyhow::Result<ClaudeFiles> {
        use ccbridge_mcp::registration::{entry, SERVER_NAME};
        // 0700 (tempfile's default follows the umask), random name: only
        // this user can read the token inside.
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("ccbridge-mcp-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .context("cannot create a private folder for Claude's --mcp-config")?;
        let write = |name: &str, value: serde_json::Value| -> anyhow::Result<PathBuf> {
            let file = dir.path().join(name);
            ccbridge_server::lockfile::replace_file(&file, value.to_string().as_bytes(), 0o600)
                .with_context(|| format!("cannot write {}", file.display()))?;
            Ok(file)
        };
        let mcp_config = tools
            .map(|e| {
                write(
                    "mcp.json",
                    serde_json::json!({ "mcpServers": { SERVER_NAME: entry(e) } }),
                )
            })
            .transpose()?;
        let notes = dir.path().join("notes.json");
        let hook = notes_hook(&notes);
        let edits = report_edits.then(|| dir.path().join("edits.jsonl"));
        let edits_hook = edits.as_deref().and_then(edits_hook);
        let settings = write(
            "settings.json",
            settings(
                review_edits,
                tools.is_some(),
                status,
                hook.as_deref(),
                edits_hook.as_deref(),
            ),
        )?;
        Ok(ClaudeFiles {
            _dir: dir,
            mcp_config,
            settings,
            notes,
            edits,
        })
    }
}

/// Whether the user set a status line of their own (user, project or
/// local settings): ccbridge's would replace it, so then it adds none.
fn users_status_line(cwd: &Path) -> bool {
    let config = ccbridge_client::discovery::Env::from_process().config_dir();
    let files = config.map(|c| c.join("settings.json")).into_iter().chain([
        cwd.join(".claude/settings.json"),
        cwd.join(".claude/settings.local.json"),
    ]);
    files.into_iter().any(|f| {
        std::fs::read(&f)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .is_some_and(|v| v.get("statusLine").is_some())
    })
}

/// Writes each note a reviewer gives with a rejection of Claude's proposal
/// to `file`, as the `UserPromptSubmit` hook's answer (`additionalContext`),
/// so it reaches Claude's next request. Notes pile up until the hook takes
/// the file (it renames it away).
async fn pass_on_notes(
    mut notes: tokio::sync::broadcast::Receiver<ccbridge_webui::ReviewerNote>,
    file: PathBuf,
) {
    use tokio::sync::broadcast::error::RecvError;
    let mut pending: Vec<String> = Vec::new();
    loop {
        let n = match notes.recv().await {
            Ok(n) => n,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        if n.agent
            .is_some_and(|a| a != ccbridge_server::AgentKind::Claude)
        {
            continue;
        }
        if !file.exists() {
            // Taken by the hook (or never written): those were given.
            pending.clear();
        }
        pending.push(format!(
            "The user rejected your proposed change to {} in the review and said: {}",
            n.path, n.note
        ));
        let answer = serde_json::json!({"hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": pending.join("\n\n"),
        }});
        if let Err(e) =
            ccbridge_server::lockfile::replace_file(&file, answer.to_string().as_bytes(), 0o600)
        {
            tracing::warn!("cannot keep the reviewer's note for Claude: {e}");
        }
    }
}

/// Follows Claude's reports of its edits (one JSON line each, appended by
/// `ccbridge hook-report`) and names Claude and the tool on those files in
/// the session review. Paths are made canonical as the watcher sees them.
async fn follow_edit_reports(changes: ccbridge_changes::Changes, file: PathBuf) {
    use tokio::io::AsyncReadExt;
    // The hook appends to the file; it is opened once it exists and read
    // from where the last read ended, never again from the start.
    let mut reader: Option<tokio::fs::File> = None;
    let mut pending = Vec::new();
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(250));
    loop {
        tick.tick().await;
        if reader.is_none() {
            reader = tokio::fs::File::open(&file).await.ok();
        }
        let Some(f) = reader.as_mut() else { continue };
        let mut chunk = Vec::new();
        if f.take(MAX_REPORTS_READ)
            .read_to_end(&mut chunk)
            .await
            .is_err()
        {
            continue;
        }
        pending.extend_from_slice(&chunk);
        let (reports, used) = edit_reports(&pending);
        pending.drain(..used);
        if pending.len() > MAX_REPORT_LINE {
            // Not a line the hook wrote: dropped rather than kept growing.
            pending.clear();
        }
        for (tool, path) in reports {
            let canonical = match (path.parent(), path.file_name()) {
                (Some(dir), Some(name)) => tokio::fs::canonicalize(dir)
                    .await
                    .map(|d| d.join(name))
                    .unwrap_or_else(|_| path.clone()),
                _ => path.clone(),
            };
            if let Some(p) = canonical.to_str() {
                changes.reported(p, ccbridge_server::AgentKind::Claude.display_name(), &tool);
            }
        }
    }
}

/// Most bytes of the reports file read per tick.
const MAX_REPORTS_READ: u64 = 1 << 20;
/// Longest report line kept while waiting for its end.
const MAX_REPORT_LINE: usize = 64 << 10;

/// The `(tool, path)` of each whole line of `buf` the hook wrote (others are
/// skipped), and how many bytes those lines took: a line still being
/// written is left for the next read.
fn edit_reports(buf: &[u8]) -> (Vec<(String, PathBuf)>, usize) {
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        return (Vec::new(), 0);
    };
    let reports = buf[..end]
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let v: serde_json::Value = serde_json::from_slice(line).ok()?;
            Some((
                v["tool"].as_str()?.to_owned(),
                PathBuf::from(v["path"].as_str()?),
            ))
        })
        .collect();
    (reports, end + 1)
}

/// The permission mode the user gave Claude, if any (`--permission-mode X`,
/// `--permission-mode=X`, or `--dangerously-skip-permissions`).
fn users_mode(args: &[OsString]) -> Option<String> {
    let mut it = args.iter().map(|a| a.to_string_lossy());
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if a == "--permission-mode" {
            return it.next().map(|m| m.into_owned());
        }
        if let Some(m) = a.strip_prefix("--permission-mode=") {
            return Some(m.to_owned());
        }
        if a == "--dangerously-skip-permissions" {
            return Some("bypassPermissions".into());
        }
    }
    None
}

/// Whether `p` is a file someone may run.
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `name` on PATH, as the shell would find it.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// Where Claude Code's own installers put `claude` off PATH: the local
/// install (`~/.claude/local/claude`, which the shell reaches through an
/// alias ccbridge cannot see) and the native one (`~/.local/bin/claude`,
/// not on every shell's PATH).
fn installed_claude() -> Option<PathBuf> {
    let home = PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?);
    [".claude/local/claude", ".local/bin/claude"]
        .into_iter()
        .map(|p| home.join(p))
        .find(|p| is_executable(p))
}

fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        (None, None) => ExitCode::FAILURE,
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.server.claude() {
        anyhow::bail!(
            "--agents leaves out claude, but `ccbridge claude` runs Claude Code; add claude to --agents (or use `ccbridge serve`)"
        );
    }
    let claude = match &args.claude {
        Some(p) if Path::new(p).is_file() => p.clone(),
        Some(p) => {
            eprintln!(
                "ccbridge: --claude {}: no such file; pass the path of the `claude` executable",
                crate::display::path(p)
            );
            return Ok(ExitCode::from(EXIT_NO_CLAUDE));
        }
        None => match on_path("claude").or_else(installed_claude) {
            Some(p) => p,
            None => {
                eprintln!(
                    "ccbridge: `claude` is not on PATH, in ~/.claude/local nor in ~/.local/bin: \
                     install Claude Code (npm install -g @anthropic-ai/claude-code) or pass --claude PATH"
                );
                return Ok(ExitCode::from(EXIT_NO_CLAUDE));
            }
        },
    };
    // Logs must not write over Claude's screen: without --log-file only
    // errors reach the terminal (unless CCBRIDGE_LOG says otherwise).
    let quiet = if args.server.log_file.is_none() {
        "error"
    } else {
        "info"
    };
    serve::init_logging(args.server.log_file.as_deref(), quiet)?;
    // Ctrl-C belongs to Claude (it reaches the whole foreground group);
    // SIGTERM and SIGHUP are passed on to it. Watched from before the lock
    // file exists: one that arrives while the servers start reaches Claude
    // once it runs, instead of killing ccbridge with its lock file left.
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt()).ok();
    let mut term = signal(SignalKind::terminate()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    let standalone = serve::start_standalone(&args.server, &args.ui, std::process::id()).await?;
    let port = standalone.engine().port();
    eprintln!(
        "ccbridge: review Claude's edits at {}\n          (the link works once: `ccbridge link` in another terminal prints a new one;\n          Claude Code connects on port {port})",
        standalone.url()
    );
    if args.ui.open {
        serve::open_in_browser(standalone.url());
    }

    let review_edits = !args.no_edit_review;
    match (users_mode(&args.claude_args), review_edits) {
        (Some(mode), true) => eprintln!(
            "ccbridge: Claude runs in the permission mode you chose ({mode}); its file edits \
             still wait for your review in the page (--no-edit-review lets them through)."
        ),
        (_, false) => eprintln!(
            "ccbridge: --no-edit-review: Claude's permission mode decides; in auto mode (the \
             default) and acceptEdits, edits are written without a review."
        ),
        (None, true) => {}
    }
    // Claude's full screen hides the link printed above: its status line
    // says where the page is and how to get a new link, unless the user
    // has a status line of their own.
    let page = standalone.url().split('#').next().unwrap_or_default();
    let status = format!("ccbridge review page: {page} (new sign-in link: ccbridge link)");
    let keep_theirs = std::env::current_dir().is_ok_and(|d| users_status_line(&d));
    if keep_theirs {
        eprintln!(
            "ccbridge: your status line is kept; `ccbridge link` in another terminal prints a new link to the page"
        );
    }
    let files = ClaudeFiles::write(
        standalone.tools().ok(),
        review_edits,
        (!keep_theirs).then_some(status.as_str()),
        standalone.changes().is_some(),
    )?;
    let mut command = tokio::process::Command::new(&claude);
    if let Some(file) = &files.mcp_config {
        // The `=` form: `--mcp-config` takes several values, and would
        // swallow a prompt given after `--` as one more file.
        let mut arg = OsString::from("--mcp-config=");
        arg.push(file);
        command.arg(arg);
    }
    let mut arg = OsString::from("--settings=");
    arg.push(&files.settings);
    command.arg(arg);
    let mut child = command
        .args(&args.claude_args)
        .envs(ccbridge_protocol::lockfile::claude_env(port))
        .spawn()
        .with_context(|| format!("cannot start {}", claude.display()))?;
    let child_pid = child.id();

    let notes = tokio::spawn(pass_on_notes(
        standalone.reviewer_notes(),
        files.notes.clone(),
    ));
    let reports = match (standalone.changes(), &files.edits) {
        (Some(c), Some(f)) => Some(tokio::spawn(follow_edit_reports(c.clone(), f.clone()))),
        _ => None,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(standalone.run(async move {
        let _ = stopped.await;
    }));
    async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    let forward = |sig: rustix::process::Signal| {
        if let Some(pid) = child_pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, sig);
        }
    };
    let status = loop {
        tokio::select! {
            s = child.wait() => break s.context("waiting for Claude Code")?,
            () = recv(&mut int) => {}
            () = recv(&mut term) => forward(rustix::process::Signal::TERM),
            () = recv(&mut hup) => forward(rustix::process::Signal::HUP),
        }
    };
    let _ = stop.send(());
    notes.abort();
    if let Some(r) = reports {
        r.abort();
    }
    server.await.context("the IDE server task")??;
    Ok(exit_code(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `'` in the temporary folder's path (or ccbridge's) left the notes
    /// and edit-report hooks out without a word: reviewer notes never
    /// reached Claude. The path is quoted for the shell now.
    #[test]
    fn regression_the_notes_hook_works_with_a_quote_in_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("it's here");
        std::fs::create_dir(&odd).unwrap();
        let notes = odd.join("notes.json");
        std::fs::write(&notes, "{\"note\": 1}").unwrap();
        let hook = notes_hook(&notes).expect("a hook");
        let out = std::process::Command::new("sh")
            .args(["-c", &hook])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"note\": 1}");
        assert!(!notes.exists(), "the note is given once");
        assert!(edits_hook(&odd.join("edits.jsonl")).is_some());
    }

    #[test]
    fn edit_reports_reads_whole_lines_and_leaves_a_partial_one() {
        let buf = b"{\"tool\":\"Edit\",\"path\":\"/w/a.rs\"}\nnot json\n{\"tool\":\"Write\"}\n{\"tool\":\"Wr";
        let (reports, used) = edit_reports(buf);
        assert_eq!(reports, vec![("Edit".to_owned(), PathBuf::from("/w/a.rs"))]);
        assert_eq!(&buf[used..], b"{\"tool\":\"Wr");
        assert_eq!(edit_reports(b"{\"tool\":"), (Vec::new(), 0));
    }
}
