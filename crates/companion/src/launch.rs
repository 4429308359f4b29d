//! The companion servers beside a running IDE engine, as both `ccbridge
//! serve` modes (the sidecar, the browser UI) run them: one per agent asked
//! for (`--agents`), each with its own port and token, advertised in that
//! agent's discovery file while it runs.
//!
//! The discovery files say what the engine's lock file says (workspace
//! folders, IDE name, editor pid), so they are a
//! [`LockMirror`](ccbridge_server::lockfile::LockMirror): rewritten with the
//! lock file, before the editor's `initialize` is answered. They are
//! removed when the servers stop, and Gemini files of dead processes are
//! swept at start (Gemini CLI never removes any).
//!
//! An agent whose server or file cannot be set up is left out, and said why
//! ([`Running::problems`]); the others, and the IDE integration, go on.

use crate::discovery::{self, Advert, CompanionAgent};
use crate::CompanionServer;
use ccbridge_protocol::lockfile::LockFile;
use ccbridge_server::lockfile::{LockError, LockMirror, PrivateFile};
use ccbridge_server::token::AuthToken;
use ccbridge_server::EngineHandle;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Which agents to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub agents: Vec<CompanionAgent>,
}

impl Default for Options {
    /// Every agent.
    fn default() -> Self {
        Options {
            agents: CompanionAgent::ALL.to_vec(),
        }
    }
}

/// One agent's server, as served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub agent: CompanionAgent,
    pub port: u16,
    /// Its discovery file, as first written (Gemini CLI's takes a new name
    /// when the editor's pid changes).
    pub file: PathBuf,
}

/// One discovery file, and what makes its contents.
struct Advertised {
    agent: CompanionAgent,
    port: u16,
    token: String,
    file: PrivateFile,
}

fn advert(lock: &LockFile, port: u16, token: &str) -> Advert {
    Advert {
        port,
        folders: lock.workspace_folders.clone(),
        token: token.to_owned(),
        pid: lock.pid.unwrap_or_else(std::process::id),
        ide_name: lock.ide_name.clone(),
    }
}

/// The discovery files, following the lock file.
struct Discovery(Mutex<Vec<Advertised>>);

impl LockMirror for Discovery {
    /// Each file gets the lock's new folders, name and pid. Gemini CLI finds
    /// its file by the IDE's pid in the file's *name*: a new pid (the editor
    /// names its own process in `initialize`, VS Code its main one) is a file
    /// of the new name, the old one removed. A file that cannot be written
    /// is said in the log and the rest go on: a companion is an extra, and
    /// its failure must not fail the editor's `initialize` (Claude's lock
    /// file was rewritten already).
    fn rewrite(&self, lock: &LockFile) -> Result<(), LockError> {
        let mut files = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for f in files.iter_mut() {
            let advert = advert(lock, f.port, &f.token);
            let renamed = discovery::file_for(f.agent, advert.pid, f.port)
                .is_some_and(|p| p != f.file.path());
            let result = if renamed {
                // The old file goes when its `PrivateFile` is replaced.
                discovery::publish(f.agent, &advert)
                    .map(|file| f.file = file)
                    .map_err(|e| e.to_string())
            } else {
                f.file
                    .update(advert.to_json(f.agent).as_bytes())
                    .map_err(|e| e.to_string())
            };
            if let Err(e) = result {
                tracing::warn!(
                    "{}: cannot update its discovery file: {e}",
                    f.agent.display_name()
                );
            }
        }
        Ok(())
    }
}

/// The running companion servers.
pub struct Running {
    served: Vec<Served>,
    problems: Vec<String>,
    engine: EngineHandle,
    mirror: Arc<dyn LockMirror>,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<std::io::Result<()>>>,
}

impl Running {
    /// The agents served, in the order asked for.
    pub fn served(&self) -> &[Served] {
        &self.served
    }

    /// Why an agent asked for is not served (one line each).
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// The environment of a terminal `agent` is started in, so it picks
    /// this IDE at once; `None` when `agent` is not served.
    pub fn env(&self, agent: CompanionAgent, folders: &[String]) -> Option<Vec<(String, String)>> {
        self.served
            .iter()
            .find(|s| s.agent == agent)
            .map(|s| agent.env(s.port, folders))
    }

    /// Stops the servers (their sessions end, their diffs are withdrawn)
    /// and removes the discovery files.
    pub async fn stopped(self) {
        self.stop.cancel();
        self.engine.remove_lock_mirror(&self.mirror);
        // The files go with the mirror, now its only owner.
        drop(self.mirror);
        for t in self.tasks {
            match t.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!("a companion server ended with an error: {e}"),
                Err(e) => tracing::warn!("a companion server task failed: {e}"),
            }
        }
    }
}

/// Starts a companion server for each agent of `options`, advertises each
/// in its discovery file, and serves until [`Running::stopped`].
pub async fn start(options: &Options, engine: &EngineHandle) -> Running {
    let stop = CancellationToken::new();
    let mut problems = Vec::new();
    let mut advertised = Vec::new();
    let mut servers = Vec::new();
    let lock = engine.lock_contents();
    if options.agents.contains(&CompanionAgent::Gemini) {
        discovery::sweep_gemini(&discovery::gemini_dir(), lock.pid);
    }
    for &agent in &options.agents {
        match serve_one(agent, engine, &lock).await {
            Ok((server, file)) => {
                advertised.push(file);
                servers.push(server);
            }
            Err(why) => {
                tracing::warn!("{}: {why}", agent.display_name());
                problems.push(format!("{} is not served: {why}", agent.display_name()));
            }
        }
    }
    let served: Vec<Served> = advertised
        .iter()
        .map(|a| Served {
            agent: a.agent,
            port: a.port,
            file: a.file.path().to_owned(),
        })
        .collect();
    for s in &served {
        tracing::info!(agent = s.agent.name(), port = s.port, file = %s.file.display(), "companion server for {} serving", s.agent.display_name());
    }
    let mirror: Arc<dyn LockMirror> = Arc::new(Discovery(Mutex::new(advertised)));
    engine.add_lock_mirror(mirror.clone());
    let tasks = servers
        .into_iter()
        .map(|server| {
            let stop = stop.clone();
            tokio::spawn(server.run(async move { stop.cancelled().await }))
        })
        .collect();
    Running {
        served,
        problems,
        engine: engine.clone(),
        mirror,
        stop,
        tasks,
    }
}

async fn serve_one(
    agent: CompanionAgent,
    engine: &EngineHandle,
    lock: &LockFile,
) -> Result<(CompanionServer, Advertised), String> {
    let token = AuthToken::generate().map_err(|e| e.to_string())?;
    let token = token.expose().to_owned();
    let server = CompanionServer::bind(agent, &token, engine.clone())
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let port = server.port();
    let file = discovery::publish(agent, &advert(lock, port, &token)).map_err(|e| e.to_string())?;
    Ok((
        server,
        Advertised {
            agent,
            port,
            token,
            file,
        },
    ))
}
