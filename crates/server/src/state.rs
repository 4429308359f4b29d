//! The editor's state as the engine keeps it, so read-only tools answer at
//! once without a round trip to the editor (the client gives
//! `getDiagnostics` 500 ms before an edit and 2 s after).

use ccbridge_protocol::editor::{Diagnostic, EditorTab, FileDiagnostics, Selection};
use ccbridge_protocol::uri::{file_uri, normalize, path_from_uri, percent_decode};
use std::collections::{BTreeMap, HashMap};

/// The uri prefix Claude Code reads as "the proposed (right) side of this
/// file's open diff" in a `getDiagnostics` answer.
pub const RIGHT_SIDE: &str = "_claude_fs_right:";

#[derive(Debug, Default)]
pub struct EditorState {
    /// The selection or cursor in the active editor; `None` without one.
    pub current: Option<Selection>,
    /// The most recent selection, even if its editor is no longer active.
    pub latest: Option<Selection>,
    pub tabs: Vec<EditorTab>,
    /// Dirty flags reported for documents, keyed by normalized path.
    dirty: HashMap<String, bool>,
    /// Diagnostics per normalized path; files without any are absent.
    diagnostics: BTreeMap<String, Vec<Diagnostic>>,
    /// The diagnostics of texts proposed in open reviews, by file path.
    proposed: BTreeMap<String, Vec<Diagnostic>>,
    /// Bumped on every change of `diagnostics` or `proposed`.
    diagnostics_generation: u64,
    /// The serialized whole-workspace `getDiagnostics` result, if current.
    all_diagnostics_json: Option<std::sync::Arc<str>>,
    /// Files a diagnostics source is analyzing (new text sent to a
    /// language server), since when: their fresh diagnostics are coming.
    /// With `true`: only a write is pending (see `EditorEvent::Analyzing`).
    analyzing: HashMap<String, (std::time::Instant, bool)>,
    pub workspace_folders: Vec<String>,
    pub ide_name: String,
    pub pid: u32,
}

impl EditorState {
    /// Keeps at most `MAX_SELECTION_TEXT` bytes of selected text.
    pub fn set_selection(&mut self, mut s: Option<Selection>) {
        if let Some(s) = &mut s {
            s.cap_text();
        }
        if let Some(s) = &s {
            self.latest = Some(s.clone());
        }
        self.current = s;
    }

    pub fn set_tabs(&mut self, tabs: Vec<EditorTab>) {
        for t in &tabs {
            self.dirty.insert(normalize(&t.path), t.is_dirty);
        }
        let open: std::collections::HashSet<String> =
            tabs.iter().map(|t| normalize(&t.path)).collect();
        self.dirty.retain(|p, _| open.contains(p));
        self.tabs = tabs;
    }

    pub fn set_dirty(&mut self, path: &str, is_dirty: bool) {
        let key = normalize(path);
        for t in &mut self.tabs {
            if normalize(&t.path) == key {
                t.is_dirty = is_dirty;
            }
        }
        self.dirty.insert(key, is_dirty);
    }

    /// The open tab for `path`, if any.
    pub fn tab(&self, path: &str) -> Option<&EditorTab> {
        let key = normalize(path);
        self.tabs.iter().find(|t| normalize(&t.path) == key)
    }

    /// `Some(dirty)` when the document is open.
    pub fn dirty(&self, path: &str) -> Option<bool> {
        let key = normalize(path);
        self.tab(path)
            .map(|t| t.is_dirty)
            .or_else(|| self.dirty.get(&key).copied())
    }

    fn diagnostics_changed(&mut self) {
        self.diagnostics_generation += 1;
        self.all_diagnostics_json = None;
    }

    pub fn diagnostics_generation(&self) -> u64 {
        self.diagnostics_generation
    }

    pub fn all_diagnostics_json(&self) -> Option<std::sync::Arc<str>> {
        self.all_diagnostics_json.clone()
    }

    /// Keeps a serialized result made from generation `generation`, unless
    /// the diagnostics changed since.
    pub fn cache_all_diagnostics_json(&mut self, generation: u64, json: std::sync::Arc<str>) {
        if generation == self.diagnostics_generation {
            self.all_diagnostics_json = Some(json);
        }
    }

    /// Notes that `path`'s fresh diagnostics are coming (see
    /// [`Self::analyzing`]).
    pub fn set_analyzing(&mut self, path: &str, write_pending: bool) {
        self.analyzing
            .insert(normalize(path), (std::time::Instant::now(), write_pending));
    }

    /// Whether `uri`'s file (`None`: any file) is being analyzed, for at
    /// most `within`: an analysis older than that is not waited for.
    pub fn analyzing(&self, uri: Option<&str>, within: std::time::Duration) -> bool {
        let fresh = |(since, _): &(std::time::Instant, bool)| since.elapsed() < within;
        match uri {
            Some(uri) => {
                let path = path_from_uri(uri);
                self.analyzing.get(&path).is_some_and(|a| fresh(a) && !a.1)
            }
            None => self.analyzing.values().any(fresh),
        }
    }

    pub fn set_diagnostics(&mut self, path: &str, diagnostics: Vec<Diagnostic>) {
        self.diagnostics_changed();
        let key = normalize(path);
        // A report that comes while a write is pending and its text's
        // analysis has not begun is about the old text (a server late
        // with it): the wait for the new text's stands.
        if self.analyzing.get(&key).is_some_and(|a| !a.1) {
            self.analyzing.remove(&key);
        }
        set_in(&mut self.diagnostics, key, diagnostics);
    }

    pub fn set_proposed_diagnostics(&mut self, path: &str, diagnostics: Vec<Diagnostic>) {
        self.diagnostics_changed();
        set_in(&mut self.proposed, normalize(path), diagnostics);
    }

    /// The proposals' diagnostics, `uri` the file's `file://` uri.
    pub fn proposed_diagnostics(&self) -> Vec<FileDiagnostics> {
        listed(&self.proposed, file_uri)
    }

    /// What the whole-workspace `getDiagnostics` answers: every file's,
    /// then each open proposal's as `_claude_fs_right:<path>`, which
    /// Claude reads as the right side of that file's diff and prefers to
    /// the file's own while it differs from what it saw last.
    pub fn all_diagnostics_with_proposals(&self) -> Vec<FileDiagnostics> {
        let mut all = self.all_diagnostics();
        all.extend(listed(&self.proposed, |p| format!("{RIGHT_SIDE}{p}")));
        all
    }

    pub fn clear_diagnostics(&mut self) {
        self.diagnostics_changed();
        self.diagnostics.clear();
        self.analyzing.clear();
    }

    /// Every file with diagnostics, in path order.
    pub fn all_diagnostics(&self) -> Vec<FileDiagnostics> {
        listed(&self.diagnostics, file_uri)
    }

    /// The diagnostics of the file `uri` names. An unknown file answers that
    /// uri with an empty list: the client takes that as "no problems".
    pub fn diagnostics_for(&self, uri: &str) -> FileDiagnostics {
        let path = path_from_uri(uri);
        let found = self
            .diagnostics
            .get(&path)
            .or_else(|| percent_decode(&path).and_then(|p| self.diagnostics.get(&normalize(&p))));
        FileDiagnostics {
            uri: uri.to_owned(),
            diagnostics: found.cloned().unwrap_or_default(),
        }
    }
}

/// Keeps `diagnostics` for `key` in `map`; an empty list removes it.
fn set_in(map: &mut BTreeMap<String, Vec<Diagnostic>>, key: String, diagnostics: Vec<Diagnostic>) {
    if diagnostics.is_empty() {
        map.remove(&key);
    } else {
        map.insert(key, diagnostics);
    }
}

/// `map`'s files in path order, each named by `uri(path)`.
fn listed(
    map: &BTreeMap<String, Vec<Diagnostic>>,
    uri: impl Fn(&str) -> String,
) -> Vec<FileDiagnostics> {
    map.iter()
        .map(|(p, d)| FileDiagnostics {
            uri: uri(p),
            diagnostics: d.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccbridge_protocol::editor::{Position, Range, Severity};

    fn diag(msg: &str) -> Diagnostic {
        Diagnostic {
            message: msg.into(),
            severity: Severity::Error,
            range: Range::new(Position::new(0, 0), Position::new(0, 1)),
            source: None,
            code: None,
        }
    }

    #[test]
    fn diagnostics_by_raw_and_encoded_uri() {
        let mut s = EditorState::default();
        s.set_diagnostics("/w/my file.ts", vec![diag("a")]);
        assert_eq!(
            s.diagnostics_for("file:///w/my file.ts").diagnostics.len(),
            1
        );
        assert_eq!(
            s.diagnostics_for("file:///w/my%20file.ts")
                .diagnostics
                .len(),
            1
        );
        assert_eq!(
            s.diagnostics_for("file:///w/./my file.ts")
                .diagnostics
                .len(),
            1
        );
        let unknown = s.diagnostics_for("file:///w/other.ts");
        assert_eq!(unknown.uri, "file:///w/other.ts");
        assert!(unknown.diagnostics.is_empty());
        s.set_diagnostics("/w/my file.ts", vec![]);
        assert!(s.all_diagnostics().is_empty());
    }

    #[test]
    fn a_proposals_diagnostics_are_the_right_side_of_its_diff() {
        let mut s = EditorState::default();
        s.set_diagnostics("/w/a.py", vec![diag("file")]);
        let g = s.diagnostics_generation();
        s.set_proposed_diagnostics("/w/a.py", vec![diag("proposal")]);
        assert_ne!(s.diagnostics_generation(), g, "a cached answer is dropped");
        let all = s.all_diagnostics_with_proposals();
        let uris: Vec<&str> = all.iter().map(|f| f.uri.as_str()).collect();
        assert_eq!(uris, ["file:///w/a.py", "_claude_fs_right:/w/a.py"]);
        assert_eq!(all[1].diagnostics[0].message, "proposal");
        // Not the file's own: `{uri}` and the list of files are unchanged.
        assert_eq!(
            s.diagnostics_for("file:///w/a.py").diagnostics[0].message,
            "file"
        );
        assert_eq!(s.all_diagnostics().len(), 1);
        s.set_proposed_diagnostics("/w/a.py", vec![]);
        assert_eq!(s.all_diagnostics_with_proposals().len(), 1);
    }

    #[test]
    fn serialized_cache_is_dropped_on_change_and_never_stored_stale() {
        let mut s = EditorState::default();
        let g = s.diagnostics_generation();
        s.cache_all_diagnostics_json(g, "[]".into());
        assert_eq!(s.all_diagnostics_json().as_deref(), Some("[]"));
        s.set_diagnostics("/w/a", vec![diag("x")]);
        assert_eq!(s.all_diagnostics_json(), None);
        s.cache_all_diagnostics_json(g, "stale".into());
        assert_eq!(s.all_diagnostics_json(), None, "made before the change");
        s.cache_all_diagnostics_json(s.diagnostics_generation(), "fresh".into());
        s.clear_diagnostics();
        assert_eq!(s.all_diagnostics_json(), None);
    }

    #[test]
    fn latest_selection_survives_losing_the_editor() {
        let mut s = EditorState::default();
        let sel = Selection {
            file_path: "/w/a".into(),
            text: "x".into(),
            range: Range::default(),
        };
        s.set_selection(Some(sel.clone()));
        s.set_selection(None);
        assert_eq!(s.current, None);
        assert_eq!(s.latest, Some(sel));
    }

    #[test]
    fn dirty_flags_follow_tabs() {
        let mut s = EditorState::default();
        s.set_tabs(vec![EditorTab {
            path: "/w/a.rs".into(),
            is_active: true,
            is_dirty: false,
            language_id: None,
            label: None,
            is_untitled: false,
        }]);
        assert_eq!(s.dirty("/w/a.rs"), Some(false));
        s.set_dirty("/w/a.rs", true);
        assert_eq!(s.dirty("/w/a.rs"), Some(true));
        assert_eq!(s.dirty("/w/b.rs"), None);
        s.set_tabs(vec![]);
        assert_eq!(s.dirty("/w/a.rs"), None);
    }

    /// Issue 23: a pending write makes only the whole-workspace answer wait
    /// (Claude's `{uri}` baseline is taken before it writes); a report for
    /// the file ends the wait once the new text's analysis began (one
    /// before is a late report on the old text); an old analysis is not
    /// waited for.
    #[test]
    fn analyzing_files_hold_back_the_answers_that_would_be_stale() {
        use std::time::Duration;
        let long = Duration::from_secs(5);
        let mut s = EditorState::default();
        assert!(!s.analyzing(None, long));
        s.set_analyzing("/w/a.py", true);
        assert!(s.analyzing(None, long));
        assert!(!s.analyzing(Some("file:///w/a.py"), long));
        s.set_diagnostics("/w/a.py", vec![]);
        assert!(s.analyzing(None, long), "a late report on the old text");
        s.set_analyzing("/w/a.py", false);
        assert!(s.analyzing(Some("file:///w/a.py"), long));
        assert!(!s.analyzing(Some("file:///w/b.py"), long));
        assert!(!s.analyzing(None, Duration::ZERO));
        s.set_diagnostics("/w/a.py", vec![]);
        assert!(!s.analyzing(None, long));
    }
}
