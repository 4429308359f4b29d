//! The smallest editor that embeds the engine: Claude Code finds it, sees
//! the folder, and each edit it proposes is printed with its changes and
//! decided on this terminal.
//!
//! ```text
//! cargo run -p ccbridge-server --example embed -- /path/to/project
//! # then, in that folder, in another terminal: claude --ide
//! ```
//!
//! An editor does three things: implements [`Frontend`] (what the engine
//! asks of it: here, showing a diff), sends [`EditorEvent`]s through the
//! [`EngineHandle`] (here, the verdict), and runs the [`Server`] until it
//! quits. The lock file goes where Claude Code looks (`Config::new`'s
//! default) and is removed when `run` returns.

use async_trait::async_trait;
use ccbridge_server::{
    hunks, Capabilities, CloseReason, Config, DiffDecision, DiffId, DiffView, EditorEvent,
    EngineHandle, Frontend, FrontendError, Server,
};
use std::sync::{Arc, OnceLock};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Prints each proposal and asks on stdin.
struct TerminalEditor {
    engine: OnceLock<EngineHandle>,
}

#[async_trait]
impl Frontend for TerminalEditor {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            diff: true,
            ..Capabilities::default()
        }
    }

    async fn show_diff(&self, diff: DiffView) -> Result<(), FrontendError> {
        let before = diff.original_contents.clone().unwrap_or_default();
        println!(
            "\n{} proposes a change to {}:",
            agent(&diff),
            diff.old_file_path
        );
        for h in hunks::hunks(&before, &diff.proposed_contents) {
            println!(
                "  lines {}..{} → {} new line(s)",
                h.old_start + 1,
                h.old_start + h.old_lines,
                h.new_lines
            );
        }
        println!("accept? [y/N]");
        // Answered off the engine's call: the verdict is an event.
        let engine = self.engine.get().cloned();
        tokio::spawn(async move {
            let mut line = String::new();
            let mut stdin = BufReader::new(tokio::io::stdin());
            let _ = stdin.read_line(&mut line).await;
            let decision = if line.trim().eq_ignore_ascii_case("y") {
                DiffDecision::Accepted { contents: None }
            } else {
                DiffDecision::Rejected
            };
            if let Some(engine) = engine {
                let _ = engine
                    .send(EditorEvent::DiffResolved {
                        id: diff.id,
                        decision,
                    })
                    .await;
            }
        });
        Ok(())
    }

    async fn close_diff(&self, id: DiffId, reason: CloseReason) -> Result<(), FrontendError> {
        println!("(review {id:?} closed: {reason:?})");
        Ok(())
    }
}

fn agent(diff: &DiffView) -> &'static str {
    diff.agent.map_or("An agent", |a| a.display_name())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let folder = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    let folder = std::fs::canonicalize(folder)?.display().to_string();
    let config = Config::new("Embed example", vec![folder.clone()]);
    let editor = Arc::new(TerminalEditor {
        engine: OnceLock::new(),
    });
    let server = Server::bind(config, editor.clone()).await?;
    let _ = editor.engine.set(server.handle());
    println!(
        "serving {folder} on port {}; in that folder run `claude --ide` (Ctrl-C stops)",
        server.port()
    );
    server
        .run(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
