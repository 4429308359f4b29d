//! ccbridge's engine in-process, on the benchmark's runtime, with an editor
//! frontend that does nothing (the measured paths never reach the editor).

use ccbridge_server::{Config, EngineHandle, NoEditor, Server};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// A running in-process engine; stopped when dropped.
pub struct Engine {
    pub handle: EngineHandle,
    pub port: u16,
    pub token: String,
    stop: Option<oneshot::Sender<()>>,
}

/// How the engine is configured for a benchmark.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    pub selection_debounce: Duration,
    pub notify_delay: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        let c = Config::new("x", Vec::new());
        Tuning {
            selection_debounce: c.selection_debounce,
            notify_delay: c.notify_delay,
        }
    }
}

impl Engine {
    /// Binds and runs an engine without a lock file, serving several
    /// clients at once (the 16-connection runs need that).
    pub async fn start(tuning: Tuning) -> anyhow::Result<Engine> {
        let mut config = Config::new("ccbridge-bench", vec![crate::fixture::WORKSPACE.into()]);
        config.lock_dir = None;
        config.multi_client = true;
        config.selection_debounce = tuning.selection_debounce;
        config.notify_delay = tuning.notify_delay;
        let server = Server::bind(config, Arc::new(NoEditor)).await?;
        let handle = server.handle();
        let port = server.port();
        let token = server.token().to_owned();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(server.run(async move {
            let _ = stopped.await;
        }));
        Ok(Engine {
            handle,
            port,
            token,
            stop: Some(stop),
        })
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}
