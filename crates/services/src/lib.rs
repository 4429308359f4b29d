//! The servers beside the IDE engine, the same in both modes of `ccbridge
//! serve`: the editor sidecar (`--stdio`) and the browser UI. Each mode
//! binds the engine and writes its lock file itself; everything else that
//! runs beside the engine starts and stops here, so the two modes cannot
//! drift apart:
//!
//! 1. [`start_tools`]: the workspace tools server (MCP over HTTP). Before
//!    the lock file is written where the mode allows, so the file names
//!    the tools from the start.
//! 2. The language servers, which the mode starts itself (the page's
//!    servers answer for every file; the sidecar's only where the editor
//!    reports nothing). [`editor_event`] turns their reports into the
//!    engine's events, the same for both.
//! 3. [`Services::start`]: the companion servers Gemini CLI and Qwen Code
//!    find, Codex CLI's IDE provider, and last the session review's
//!    watcher, so the first change it sees reaches the language servers.
//!
//! [`Services::stop`] stops every one of them and waits for each. A server
//! that cannot start is logged and left out: the IDE integration never
//! depends on it.

use ccbridge_changes::Changes;
use ccbridge_server::{AgentKind, EditorEvent, EngineHandle};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// What runs beside the engine. One definition for both modes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Serve the workspace tools over MCP, so; `None`: not at all.
    pub tools: Option<ccbridge_mcp::launch::Options>,
    /// Offer the IDE to Claude Code (its lock file); without it, only to
    /// the agents of `companion` and Codex.
    pub claude: bool,
    /// The companion servers for Gemini CLI / Qwen Code; `None`: none.
    pub companion: Option<ccbridge_companion::launch::Options>,
    /// Serve Codex CLI's `/ide` (its IPC router socket).
    pub codex: bool,
    /// Watch the workspace for the session review (every file changed
    /// while ccbridge runs, with keep/revert per hunk).
    pub changes: bool,
    /// Run the workspace's language servers for diagnostics; `None`: none
    /// (`--no-language-servers`).
    pub language_servers: Option<ccbridge_lsp::Options>,
}

impl Default for Options {
    /// Claude Code's IDE server only: no workspace tools, no companion, no
    /// Codex, no session review, no language servers.
    fn default() -> Self {
        Options {
            tools: None,
            claude: true,
            companion: None,
            codex: false,
            changes: false,
            language_servers: None,
        }
    }
}

/// Starts the workspace tools server when `options` ask for it, over
/// `folders`, with `engine` as its editor; `secret` (the IDE server's
/// token) never reaches a command's environment. `Err`: why it does not
/// run (turned off, or it could not start: logged).
pub async fn start_tools(
    options: &Options,
    folders: &[PathBuf],
    engine: &EngineHandle,
    secret: &str,
) -> Result<ccbridge_mcp::launch::Running, String> {
    let Some(tools) = &options.tools else {
        return Err("turned off (--no-tools)".to_owned());
    };
    ccbridge_mcp::launch::start(tools, folders, engine, vec![secret.to_owned()])
        .await
        .map_err(|e| {
            tracing::warn!("{e}");
            e.to_string()
        })
}

/// An agent that can find this IDE, and the companion port it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offer {
    pub agent: AgentKind,
    /// Gemini CLI's and Qwen Code's companion server; `None` for Claude
    /// (the engine's port) and Codex (its socket).
    pub companion_port: Option<u16>,
}

impl Offer {
    /// The environment of a terminal that starts this agent connected to
    /// this IDE (the engine on `engine_port`, over `folders`).
    pub fn env(&self, engine_port: u16, folders: &[String]) -> BTreeMap<String, String> {
        match (
            ccbridge_companion::CompanionAgent::of(self.agent),
            self.companion_port,
        ) {
            (Some(a), Some(p)) => a.env(p, folders).into_iter().collect(),
            _ if self.agent == AgentKind::Codex => {
                ccbridge_codex::Running::env().into_iter().collect()
            }
            _ => ccbridge_protocol::lockfile::claude_env(engine_port),
        }
    }
}

/// How long [`Services::start`] waits for Codex's provider to host or
/// join a router, or to say why it cannot.
const CODEX_SETTLES: std::time::Duration = std::time::Duration::from_secs(2);

/// The servers started beside the engine.
pub struct Services {
    tools: Result<ccbridge_mcp::launch::Running, String>,
    claude: bool,
    companion: Option<ccbridge_companion::launch::Running>,
    codex: Option<ccbridge_codex::Running>,
    changes: Option<Changes>,
}

impl Services {
    /// Starts what `options` ask for besides the tools (already started by
    /// [`start_tools`], or why not): the companions, Codex's provider and,
    /// last, the session review's watcher. Call it once the mode's language
    /// servers run.
    pub async fn start(
        options: &Options,
        folders: &[PathBuf],
        engine: &EngineHandle,
        tools: Result<ccbridge_mcp::launch::Running, String>,
    ) -> Services {
        let companion = match &options.companion {
            Some(o) => Some(ccbridge_companion::launch::start(o, engine).await),
            None => None,
        };
        let codex = options
            .codex
            .then(|| ccbridge_codex::start(Arc::new(engine.clone())));
        if let Some(c) = &codex {
            // Settled before the offers are read: hosting, joined, or why
            // neither (each socket path is tried at once).
            c.wait_role(CODEX_SETTLES, |r| {
                !matches!(r, ccbridge_codex::Role::Starting)
            })
            .await;
        }
        let changes = if options.changes {
            Changes::start(folders)
                .inspect_err(|e| {
                    tracing::warn!("the session review cannot watch the workspace: {e}")
                })
                .inspect(|c| c.set_running_agents(ccbridge_changes::running_agents_of(engine)))
                .ok()
        } else {
            None
        };
        Services {
            tools,
            claude: options.claude,
            companion,
            codex,
            changes,
        }
    }

    /// The workspace tools server, or why it does not run.
    pub fn tools(&self) -> Result<&ccbridge_mcp::launch::Running, &str> {
        self.tools.as_ref().map_err(String::as_str)
    }

    /// The session review, when the workspace is watched.
    pub fn changes(&self) -> Option<&Changes> {
        self.changes.as_ref()
    }

    /// Why an agent asked for is not served (one line each): the
    /// companions', and Codex's when its provider can neither host nor
    /// join a router (until then the banner and the page offered Codex
    /// while nothing served it, and only `ccbridge list` told why).
    pub fn agent_problems(&self) -> Vec<String> {
        let mut out = self
            .companion
            .as_ref()
            .map_or(Vec::new(), |c| c.problems().to_vec());
        if let Some(why) = self.codex_unavailable() {
            out.push(format!("Codex CLI is not served: {why}"));
        }
        out
    }

    /// Why Codex's provider serves nothing, when it does not.
    fn codex_unavailable(&self) -> Option<String> {
        match self.codex.as_ref()?.role() {
            ccbridge_codex::Role::Unavailable(why) => Some(why),
            _ => None,
        }
    }

    /// The agents that can find this IDE: Claude Code (by the lock file),
    /// each companion served, Codex.
    pub fn offers(&self) -> Vec<Offer> {
        let mut out = Vec::new();
        if self.claude {
            out.push(Offer {
                agent: AgentKind::Claude,
                companion_port: None,
            });
        }
        for s in self.companion.as_ref().map_or(&[][..], |c| c.served()) {
            out.push(Offer {
                agent: s.agent.kind(),
                companion_port: Some(s.port),
            });
        }
        if self.codex.is_some() && self.codex_unavailable().is_none() {
            out.push(Offer {
                agent: AgentKind::Codex,
                companion_port: None,
            });
        }
        out
    }

    /// Stops every server and waits for each: the tools (unregistered from
    /// Claude's settings), the companions (their discovery files removed),
    /// Codex's provider. The session review's watcher stops with its last
    /// handle.
    pub async fn stop(self) {
        if let Ok(t) = self.tools {
            t.stopped().await;
        }
        if let Some(c) = self.companion {
            c.stopped().await;
        }
        if let Some(c) = self.codex {
            c.stopped().await;
        }
    }
}

/// A language server's report as the engine's event: the same event an
/// editor's report is, so `getDiagnostics`, the page and the workspace
/// tools' `new_diagnostics` all have it. `Err`: a report that is no
/// diagnostics (a language without a server, a bad configuration), for
/// the mode to say or log.
pub fn editor_event(update: ccbridge_lsp::Update) -> Result<EditorEvent, ccbridge_lsp::Update> {
    use ccbridge_lsp::Update;
    match update {
        Update::Analyzing { path } => Ok(EditorEvent::Analyzing {
            path,
            write_pending: false,
        }),
        Update::Published(p) => Ok(EditorEvent::Diagnostics {
            path: p.path,
            diagnostics: p.diagnostics,
        }),
        Update::Proposed(p) => Ok(EditorEvent::ProposedDiagnostics {
            path: p.path,
            diagnostics: p.diagnostics,
        }),
        other => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_is_started_with_the_environment_that_finds_this_ide() {
        let folders = vec!["/w".to_owned()];
        let claude = Offer {
            agent: AgentKind::Claude,
            companion_port: None,
        };
        assert_eq!(
            claude.env(41234, &folders).get("CLAUDE_CODE_SSE_PORT"),
            Some(&"41234".to_owned())
        );
        let gemini = Offer {
            agent: AgentKind::Gemini,
            companion_port: Some(45000),
        };
        let env = gemini.env(41234, &folders);
        assert_eq!(
            env.get("GEMINI_CLI_IDE_SERVER_PORT"),
            Some(&"45000".to_owned()),
            "{env:?}"
        );
        assert!(!env.contains_key("CLAUDE_CODE_SSE_PORT"), "{env:?}");
    }
}
