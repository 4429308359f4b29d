//! `ccbridge list`: every IDE server advertised where Claude Code looks,
//! every companion server where Gemini CLI and Qwen Code look, and the
//! sockets where Codex CLI looks for its IDE context.
//!
//! Shows each lock file of every directory the CLI scans, newest first, with
//! whether its process runs and its port answers, so a user can see what
//! Claude Code would connect to and why it does not; then the other agents'
//! discovery files, the same way. Never prints tokens,
//! and never a lock file's text as it is: every cell goes through
//! [`crate::display::line`] (a planted lock can hold terminal escapes).

use crate::output::{outln, WriteError};
use ccbridge_client::discovery::{self, Env, LockEntry};
use ccbridge_companion::discovery::{self as companion_discovery, Found};
use ccbridge_companion::CompanionAgent;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::UNIX_EPOCH;

#[derive(clap::Args)]
#[command(after_help = "\
Directories, in the order Claude Code scans them: $CLAUDE_CONFIG_DIR/ide (or \
~/.claude/ide), ~/.claude/ide when CLAUDE_CONFIG_DIR is set, and under WSL the \
Windows profiles' .claude/ide. Lock files are listed newest first; the `CWD` \
column marks servers whose workspace contains the current directory (Claude Code \
started here auto-connects only when exactly one server matches).

Then Gemini CLI's discovery files ($TMPDIR/gemini/ide) and Qwen Code's \
(~/.qwen/ide, or $QWEN_HOME/ide), written by ccbridge or another companion; \
another user's are left out, and one that is not a regular file (a FIFO, a \
link) is shown as skipped, never opened.

Then Codex CLI's IDE sockets ($CODEX_HOME/ipc/ipc.sock, then $TMPDIR/codex-ipc/ipc-<uid>.sock): whether a router listens there and whether one of its providers (ccbridge, an IDE extension) answers for the current directory, as `/ide` in a Codex started here would ask.

Exit status is 0 even when nothing is found. Stale entries can be removed with \
`ccbridge clean`.")]
pub struct Args {
    /// Print a JSON array of objects instead of a table.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let env = Env::from_process();
    let scan = super::scan_lock_files(&env);
    let companions = companion_discovery::scan(&CompanionAgent::ALL);
    let answering = discovery::ports_answering(
        scan.entries
            .iter()
            .filter_map(|e| e.port)
            .chain(companions.iter().filter_map(|f| f.port)),
    )
    .await;
    let cwd = std::env::current_dir().ok();
    let rows: Vec<Row> = scan
        .entries
        .iter()
        .map(|e| Row::new(e, &answering, cwd.as_deref(), env.wsl_distro.as_deref()))
        .collect();

    let others: Vec<Other> = companions
        .iter()
        .map(|f| Other::new(f, &answering, cwd.as_deref()))
        .collect();
    let codex = ccbridge_codex::socket::scan(cwd.as_deref().unwrap_or(Path::new("/"))).await;

    if args.json {
        let out: Vec<Value> = rows
            .iter()
            .map(Row::to_json)
            .chain(others.iter().map(Other::to_json))
            .chain(codex.iter().map(codex_json))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        if !rows.is_empty() {
            print_table(&HEADERS, rows.iter().map(Row::cells).collect())?;
            // Where each review page is (a sign-in link: `ccbridge link`).
            for r in &rows {
                if let (Some(port), Some(page)) =
                    (r.entry.port, r.entry.lock().and_then(|l| l.page.as_ref()))
                {
                    outln!(
                        "review page of {port}: {} (`ccbridge link` in its folder prints a sign-in link)",
                        crate::display::line(&page.url)
                    )?;
                }
            }
        }
        if !others.is_empty() {
            if !rows.is_empty() {
                outln!()?;
            }
            print_table(&OTHER_HEADERS, others.iter().map(Other::cells).collect())?;
        }
        if !codex.is_empty() {
            if !rows.is_empty() || !others.is_empty() {
                outln!()?;
            }
            print_table(&CODEX_HEADERS, codex.iter().map(codex_cells).collect())?;
        }
    }
    if rows.is_empty() && others.is_empty() && codex.is_empty() {
        let dirs: Vec<String> = scan.dirs.iter().map(|d| crate::display::path(d)).collect();
        eprintln!("no IDE servers found (looked in {})", dirs.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

struct Row<'a> {
    entry: &'a LockEntry,
    port_answers: Option<bool>,
    contains_cwd: bool,
}

impl<'a> Row<'a> {
    fn new(
        entry: &'a LockEntry,
        answering: &HashMap<u16, bool>,
        cwd: Option<&Path>,
        distro: Option<&str>,
    ) -> Self {
        Row {
            entry,
            port_answers: entry.port.and_then(|p| answering.get(&p).copied()),
            contains_cwd: match (entry.lock(), cwd) {
                (Some(l), Some(cwd)) => discovery::workspace_contains(l, cwd, distro),
                _ => false,
            },
        }
    }

    fn to_json(&self) -> Value {
        let e = self.entry;
        let l = e.lock();
        json!({
            "agent": "claude",
            "port": e.port,
            "ideName": l.map(|l| l.ide_name.as_str()),
            "workspaceFolders": l.map(|l| &l.workspace_folders),
            "pid": l.and_then(|l| l.pid),
            "pidAlive": e.pid_alive,
            "serverPid": l.and_then(|l| l.server_process).map(|p| p.pid),
            "serverAlive": e.server_alive,
            "portAnswers": self.port_answers,
            "transport": l.map(|l| l.transport.as_str()),
            "runningInWindows": l.map(|l| l.running_in_windows),
            "hasAuthToken": l.map(|l| l.auth_token.is_some()),
            "page": l.and_then(|l| l.page.as_ref()).map(|p| p.url.as_str()),
            "containsCwd": self.contains_cwd,
            "lockFile": e.path.display().to_string(),
            "modified": e.mtime.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs()),
            "error": e.lock.as_ref().err().map(|err| err.to_string()),
        })
    }

    fn cells(&self) -> Vec<String> {
        let e = self.entry;
        let dash = || "-".to_string();
        let port = e.port.map_or_else(dash, |p| p.to_string());
        let answers = match self.port_answers {
            Some(true) => "yes",
            Some(false) => "no",
            None => "-",
        }
        .to_string();
        let file = e.path.display().to_string();
        let Some(l) = e.lock() else {
            let err = e
                .lock
                .as_ref()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            return vec![
                port,
                "?".into(),
                dash(),
                answers,
                dash(),
                String::new(),
                format!("(unusable: {err})"),
                file,
            ];
        };
        let pid = match (l.pid, e.pid_alive) {
            (None, _) => dash(),
            (Some(p), Some(true)) => format!("{p} (alive)"),
            (Some(p), Some(false)) => format!("{p} (dead)"),
            (Some(p), None) if l.running_in_windows => format!("{p} (windows)"),
            (Some(p), None) => format!("{p} (?)"),
        };
        let name = if l.ide_name.is_empty() {
            dash()
        } else {
            l.ide_name.clone()
        };
        let transport = if l.transport.is_empty() {
            "(none: sse)".to_string()
        } else {
            l.transport.clone()
        };
        let folders = if l.workspace_folders.is_empty() {
            dash()
        } else {
            l.workspace_folders.join(", ")
        };
        let cwd = if self.contains_cwd { "*" } else { "" }.to_string();
        vec![port, name, pid, answers, transport, cwd, folders, file]
    }
}

const CODEX_HEADERS: [&str; 3] = ["CODEX SOCKET", "ROUTER", "ANSWERS FOR CWD"];

fn codex_json(f: &ccbridge_codex::socket::Found) -> Value {
    use ccbridge_codex::socket::State;
    let (state, answers, by, error) = match &f.state {
        State::Live(Ok(by)) => ("live", Some(true), Some(by.as_str()), None),
        State::Live(Err(e)) => ("live", Some(false), None, Some(e.as_str())),
        State::Stale => ("stale", None, None, None),
        State::Unsafe(why) => ("unsafe", None, None, Some(why.as_str())),
    };
    json!({
        "agent": "codex",
        "socket": f.path.display().to_string(),
        "state": state,
        "answersCwd": answers,
        "handledBy": by,
        "error": error,
    })
}

fn codex_cells(f: &ccbridge_codex::socket::Found) -> Vec<String> {
    use ccbridge_codex::socket::State;
    let (router, answers) = match &f.state {
        State::Live(Ok(by)) => ("live".to_owned(), format!("yes ({by})")),
        State::Live(Err(e)) => ("live".to_owned(), format!("no ({e})")),
        State::Stale => (
            "stale (nobody listens; `ccbridge clean`)".to_owned(),
            "-".to_owned(),
        ),
        State::Unsafe(why) => (format!("unusable: {why}"), "-".to_owned()),
    };
    vec![f.path.display().to_string(), router, answers]
}

/// A Gemini CLI or Qwen Code discovery file.
struct Other<'a> {
    found: &'a Found,
    port_answers: Option<bool>,
    contains_cwd: bool,
}

impl<'a> Other<'a> {
    fn new(found: &'a Found, answering: &HashMap<u16, bool>, cwd: Option<&Path>) -> Self {
        Other {
            found,
            port_answers: found.port.and_then(|p| answering.get(&p).copied()),
            contains_cwd: cwd
                .is_some_and(|cwd| found.folders.iter().any(|f| cwd.starts_with(Path::new(f)))),
        }
    }

    fn to_json(&self) -> Value {
        let f = self.found;
        json!({
            "agent": f.agent.name(),
            "port": f.port,
            "ideName": f.ide_name,
            "workspaceFolders": f.folders,
            "pid": f.pid,
            "pidAlive": f.pid_alive(),
            "portAnswers": self.port_answers,
            "containsCwd": self.contains_cwd,
            "lockFile": f.path.display().to_string(),
            "error": f.error,
            "skipped": f.skipped,
        })
    }

    fn cells(&self) -> Vec<String> {
        let f = self.found;
        let dash = || "-".to_string();
        let answers = match self.port_answers {
            Some(true) => "yes",
            Some(false) => "no",
            None => "-",
        };
        let pid = match (f.pid, f.pid_alive()) {
            (None, _) => dash(),
            (Some(p), Some(true)) => format!("{p} (alive)"),
            (Some(p), Some(false)) => format!("{p} (dead)"),
            (Some(p), None) => format!("{p} (?)"),
        };
        let workspace = match &f.error {
            Some(e) if f.skipped => format!("(skipped: {e})"),
            Some(e) => format!("(unusable: {e})"),
            None if f.folders.is_empty() => dash(),
            None => f.folders.join(", "),
        };
        vec![
            f.agent.display_name().to_owned(),
            f.port.map_or_else(dash, |p| p.to_string()),
            f.ide_name.clone().unwrap_or_else(dash),
            pid,
            answers.to_owned(),
            if self.contains_cwd { "*" } else { "" }.to_owned(),
            workspace,
            f.path.display().to_string(),
        ]
    }
}

const HEADERS: [&str; 8] = [
    "PORT",
    "IDE",
    "PID",
    "ANSWERS",
    "TRANSPORT",
    "CWD",
    "WORKSPACE",
    "LOCK FILE",
];

const OTHER_HEADERS: [&str; 8] = [
    "AGENT",
    "PORT",
    "IDE",
    "PID",
    "ANSWERS",
    "CWD",
    "WORKSPACE",
    "DISCOVERY FILE",
];

/// Prints `rows` under `headers`, every cell made safe to print first.
fn print_table(headers: &[&str], rows: Vec<Vec<String>>) -> Result<(), WriteError> {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| crate::display::line(c).into_owned())
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |row: &[String]| {
        let mut out = String::new();
        for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
            if i + 1 == row.len() {
                out.push_str(c);
            } else {
                out.push_str(c);
                out.push_str(&" ".repeat(w - c.chars().count() + 2));
            }
        }
        out
    };
    let headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    outln!("{}", line(&headers))?;
    for row in &cells {
        outln!("{}", line(row))?;
    }
    Ok(())
}
