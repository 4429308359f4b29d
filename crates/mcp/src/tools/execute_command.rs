//! `execute_command`: a shell command in the workspace, run only once the
//! user allowed it (unless the approval mode is `never`), its output shown
//! live in the editor and returned cleaned of terminal escapes. The process
//! handling is `ccbridge_tools::execute_command`'s.

use super::Context;
use ccbridge_server::{Approval, CommandEvent};
use ccbridge_tools::execute_command::{
    self, Run, DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT, MAX_TIMEOUT,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Tells the editor how the run ended, exactly once: as cancelled unless
/// the outcome is set first (the call is dropped mid-run when the client
/// cancels it).
struct Ended {
    editor: Arc<dyn crate::editor::Editor>,
    event: CommandEvent,
}

impl Drop for Ended {
    fn drop(&mut self) {
        self.editor.command_event(self.event.clone());
    }
}

pub async fn call(
    ctx: &Context,
    command: String,
    cwd: Option<String>,
    timeout_secs: Option<u64>,
) -> Result<String, String> {
    let fail = |m: String| json!({ "error": m, "command": command }).to_string();
    if command.trim().is_empty() {
        return Err(fail("the command is empty".into()));
    }
    let asked_cwd = cwd.unwrap_or_else(|| ".".into());
    let (dir, abs) = ctx
        .ws()
        .open_dir(&asked_cwd)
        .map_err(|e| fail(e.to_string()))?;
    let abs = abs.display().to_string();
    let timeout = timeout_secs
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_TIMEOUT)
        .min(MAX_TIMEOUT);
    // Held until the run ends, the wait for the user included.
    let _slot = ctx.commands.clone().try_acquire_owned().map_err(|_| {
        fail(format!(
            "{} commands are already waiting or running; wait for one to finish, then call again",
            ctx.settings.max_commands
        ))
    })?;
    let id = ctx.editor.next_run();
    if ctx.approval().asks_for_changes() {
        let approval = Approval::command(id, command.clone(), abs.clone());
        match ctx.editor.approve(approval).await {
            Ok(true) => {}
            Ok(false) => {
                return Ok(json!({
                    "status": "rejected",
                    "command": command,
                    "message": "The user did not allow this command; it was not run.",
                })
                .to_string())
            }
            Err(e) => {
                return Err(fail(format!(
                    "the command needs the user's approval, but {e}; it was not run"
                )))
            }
        }
    }
    ctx.editor
        .command_event(CommandEvent::started(id, command.clone(), abs.clone()));
    let mut ended = Ended {
        editor: ctx.editor.clone(),
        event: CommandEvent::Exited {
            id,
            exit_code: None,
            timed_out: false,
            cancelled: true,
        },
    };
    let editor = ctx.editor.clone();
    let run = Run {
        command: command.clone(),
        cwd: dir,
        timeout,
        max_output: DEFAULT_MAX_OUTPUT,
        secrets: ctx.settings.secrets.clone(),
    };
    let finished = execute_command::run(run, move |data| {
        editor.command_event(CommandEvent::Output { id, data })
    })
    .await;
    ended.event = CommandEvent::Exited {
        id,
        exit_code: finished.as_ref().ok().and_then(|f| f.exit_code),
        timed_out: finished.as_ref().is_ok_and(|f| f.timed_out),
        cancelled: false,
    };
    drop(ended);
    let finished = finished.map_err(|e| fail(format!("the command could not be started: {e}")))?;
    let mut result = json!({
        "exit_code": finished.exit_code,
        "output": finished.output,
        "cwd": abs,
        "output_captured": true,
    });
    if finished.timed_out {
        result["timed_out"] = true.into();
        result["message"] = format!(
            "The command was still running after {} s and was stopped (its whole process group killed).",
            timeout.as_secs()
        )
        .into();
    }
    if finished.left_out > 0 {
        result["output_left_out_bytes"] = finished.left_out.into();
    }
    Ok(result.to_string())
}
