//! ccbridge's language servers for an editor's session, and which source
//! of diagnostics wins.
//!
//! Claude Code checks its edits through `getDiagnostics`; an editor plugin
//! reports what its own language tooling found (`diagnosticsChanged`). An
//! editor without such tooling (Vim without a linter, a thin script) would
//! leave Claude with nothing, so ccbridge runs the workspace's language
//! servers itself (`ccbridge-lsp`, as the browser UI does) and chooses per
//! file, as the editor asked in `initialize.diagnostics`:
//!
//! - `auto` (the default): ccbridge's servers answer for a file until the
//!   editor reports diagnostics for it; from then on that file is the
//!   editor's. One source per file, never two merged.
//! - `editor`: the editor's reports only; no server is started.
//! - `ccbridge`: ccbridge's servers only; the editor's reports are ignored.
//!
//! Files are involved as the user meets them: the file of a selection, a
//! proposal's file (its proposed text is analysed too, for the
//! `_claude_fs_right:` entries) and a file the session review saw change.

use crate::messages::DiagnosticsSource;
use ccbridge_server::EngineHandle;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

/// The session's language servers and the files the editor owns.
pub struct Analysis {
    servers: ccbridge_lsp::LanguageServers,
    state: Mutex<State>,
}

struct State {
    source: DiagnosticsSource,
    /// Files the editor reported diagnostics for (`auto`).
    editor_owned: HashSet<String>,
}

impl State {
    fn ours(&self, path: &str) -> bool {
        match self.source {
            DiagnosticsSource::Editor => false,
            DiagnosticsSource::Ccbridge => true,
            DiagnosticsSource::Auto => !self.editor_owned.contains(path),
        }
    }

    fn editor_reported(&mut self, path: &str) -> bool {
        match self.source {
            DiagnosticsSource::Ccbridge => false,
            DiagnosticsSource::Editor => true,
            DiagnosticsSource::Auto => {
                self.editor_owned.insert(path.to_owned());
                true
            }
        }
    }
}

impl Analysis {
    /// Starts the servers (each starts when a file of its language is
    /// first involved) and forwards their reports to `engine`.
    pub fn start(
        options: ccbridge_lsp::Options,
        folders: Vec<std::path::PathBuf>,
        engine: EngineHandle,
    ) -> std::sync::Arc<Analysis> {
        let (servers, updates) = ccbridge_lsp::LanguageServers::start(options, folders);
        let analysis = std::sync::Arc::new(Analysis {
            servers,
            state: Mutex::new(State {
                source: DiagnosticsSource::Auto,
                editor_owned: HashSet::new(),
            }),
        });
        tokio::spawn(forward(
            updates,
            engine,
            std::sync::Arc::downgrade(&analysis),
        ));
        analysis
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the editor asked for in `initialize`.
    pub fn set_source(&self, source: DiagnosticsSource) {
        self.state().source = source;
    }

    /// Whose diagnostics Claude gets now.
    pub fn source(&self) -> DiagnosticsSource {
        self.state().source
    }

    /// Whether ccbridge's servers answer for `path`.
    fn ours(&self, path: &str) -> bool {
        self.state().ours(path)
    }

    /// The editor reported diagnostics for `path`: whether its report
    /// counts (not with `ccbridge`). With `auto` the file is the editor's
    /// from now on.
    pub fn editor_reported(&self, path: &str) -> bool {
        self.state().editor_reported(path)
    }

    /// The editor said to forget every file's diagnostics: whether that
    /// counts (not with `ccbridge`, whose servers' reports stand).
    pub fn editor_cleared(&self) -> bool {
        self.state().source != DiagnosticsSource::Ccbridge
    }

    /// Whether ccbridge's servers check `path` (a server serves its
    /// language, and the file is not the editor's).
    pub fn checks(&self, path: &str) -> bool {
        self.ours(path) && ccbridge_lsp::servers::serves(Path::new(path))
    }

    /// The user met `path` (a selection, a change): its server checks it.
    pub fn involve(&self, path: &str) {
        if self.checks(path) {
            self.servers.involve(path);
        }
    }

    /// A proposal for `path` is shown (`Some`: its text) or closed.
    pub fn proposed(&self, path: &str, text: Option<&str>) {
        if !ccbridge_lsp::servers::serves(Path::new(path)) {
            return;
        }
        if text.is_some() && !self.ours(path) {
            return;
        }
        if text.is_some() {
            self.servers.involve(path);
        }
        self.servers.propose(path, text.map(str::to_owned));
    }

    /// Stops every server (they are killed with ccbridge otherwise too).
    pub async fn stop(&self) {
        self.servers.stop().await;
    }
}

/// The servers' reports, as the editor's would be, for the files that are
/// ccbridge's: `getDiagnostics` and the workspace tools then have them.
async fn forward(
    mut updates: tokio::sync::mpsc::Receiver<ccbridge_lsp::Update>,
    engine: EngineHandle,
    analysis: std::sync::Weak<Analysis>,
) {
    use ccbridge_lsp::Update;
    while let Some(u) = updates.recv().await {
        let Some(a) = analysis.upgrade() else { return };
        if u.path().is_some_and(|p| !a.ours(p)) {
            continue;
        }
        let event = match ccbridge_services::editor_event(u) {
            Ok(event) => event,
            Err(Update::Unavailable { language, why }) => {
                tracing::info!("no diagnostics for {language} files: {why}");
                continue;
            }
            // Logged by the client; the servers run with the defaults.
            Err(_) => continue,
        };
        drop(a);
        if engine.send(event).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(source: DiagnosticsSource) -> State {
        State {
            source,
            editor_owned: HashSet::new(),
        }
    }

    #[test]
    fn auto_gives_a_file_to_the_editor_once_it_reports_on_it() {
        let mut s = state(DiagnosticsSource::Auto);
        assert!(s.ours("/w/a.py") && s.ours("/w/b.py"));
        assert!(s.editor_reported("/w/a.py"));
        assert!(!s.ours("/w/a.py"), "the editor's from now on");
        assert!(s.ours("/w/b.py"), "another file stays ccbridge's");
    }

    #[test]
    fn editor_and_ccbridge_give_every_file_to_one_source() {
        let mut s = state(DiagnosticsSource::Editor);
        assert!(!s.ours("/w/a.py"));
        assert!(s.editor_reported("/w/a.py"));
        let mut s = state(DiagnosticsSource::Ccbridge);
        assert!(
            !s.editor_reported("/w/a.py"),
            "the editor's report is ignored"
        );
        assert!(s.ours("/w/a.py"));
    }
}
