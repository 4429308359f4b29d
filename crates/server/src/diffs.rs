//! Bookkeeping for diff views: which are open, which still wait for the
//! user, and who settles them.
//!
//! Every way a diff can end goes through here, so each pending `openDiff`
//! call is answered exactly once and each view is closed exactly once:
//! the user's verdict, the client's `close_tab` (sent twice per diff, so
//! closing is idempotent), `closeAllDiffTabs`, a second `openDiff` with the
//! same `tab_name`, the client disconnecting, and shutdown.

use crate::frontend::{CloseReason, DiffDecision, DiffId};
use std::collections::{HashMap, VecDeque};
use tokio::sync::oneshot;

/// Which connection opened a diff.
pub type ConnId = u64;

/// A diff just registered: its id, where its verdict will arrive, and the
/// pending diff with the same tab name it replaced (to close its view).
pub type Opened = (
    DiffId,
    oneshot::Receiver<Settled>,
    Option<(DiffId, CloseReason)>,
);

/// How a pending `openDiff` call ends.
#[derive(Debug, PartialEq, Eq)]
pub enum Settled {
    /// The user decided in the editor.
    Decided(DiffDecision),
    /// The engine closed the view first (close_tab, closeAllDiffTabs,
    /// replacement, disconnect, shutdown): answered as a rejection.
    Closed,
}

#[derive(Debug)]
struct Entry {
    tab_name: String,
    conn: ConnId,
    waiter: Option<oneshot::Sender<Settled>>,
    /// Closing the view undecided rejects: no terminal prompt decides
    /// instead (reviews for the workspace tools).
    dismissal_rejects: bool,
}

#[derive(Debug, Default)]
pub struct DiffRegistry {
    next: u64,
    open: HashMap<DiffId, Entry>,
    /// Tab names closed recently, so the client's second `close_tab` for a
    /// diff is recognised instead of reaching the editor as a file tab.
    recently_closed: VecDeque<String>,
}

const RECENT: usize = 64;

impl DiffRegistry {
    /// Registers a new diff view. A pending diff with the same tab name is
    /// settled as closed and returned, for its view to be closed.
    pub fn open(&mut self, tab_name: &str, conn: ConnId) -> Opened {
        self.open_with(tab_name, conn, false)
    }

    /// [`Self::open`] for a review nobody else decides: closing its view
    /// undecided rejects it.
    pub fn open_review(&mut self, tab_name: &str, conn: ConnId) -> Opened {
        self.open_with(tab_name, conn, true)
    }

    fn open_with(&mut self, tab_name: &str, conn: ConnId, dismissal_rejects: bool) -> Opened {
        let replaced = self
            .find_tab(tab_name)
            .and_then(|old| Some((old, self.close(old, CloseReason::Replaced)?)));
        self.next += 1;
        let id = DiffId(self.next);
        let (tx, rx) = oneshot::channel();
        self.open.insert(
            id,
            Entry {
                tab_name: tab_name.to_owned(),
                conn,
                waiter: Some(tx),
                dismissal_rejects,
            },
        );
        (id, rx, replaced)
    }

    /// The open view named `tab_name` that connection `conn` opened.
    pub fn find(&self, tab_name: &str, conn: ConnId) -> Option<DiffId> {
        self.find_where(|e| e.tab_name == tab_name && e.conn == conn)
    }

    fn find_tab(&self, tab_name: &str) -> Option<DiffId> {
        self.find_where(|e| e.tab_name == tab_name)
    }

    fn find_where(&self, pred: impl Fn(&Entry) -> bool) -> Option<DiffId> {
        self.open.iter().find(|(_, e)| pred(e)).map(|(id, _)| *id)
    }

    /// The user's verdict. The view stays registered until it is closed.
    /// Returns false when the diff is unknown or already settled. A
    /// dismissal settles nothing (the call waits for Claude's own prompt),
    /// except for a review opened with [`Self::open_review`], which it rejects.
    pub fn resolve(&mut self, id: DiffId, mut decision: DiffDecision) -> bool {
        if decision == DiffDecision::Dismissed {
            match self.open.get(&id) {
                Some(e) if e.dismissal_rejects => decision = DiffDecision::Rejected,
                e => return e.is_some_and(|e| e.waiter.is_some()),
            }
        }
        match self.open.get_mut(&id).and_then(|e| e.waiter.take()) {
            Some(w) => w.send(Settled::Decided(decision)).is_ok(),
            None => false,
        }
    }

    /// Removes a view, settling its call if still pending. Returns why it
    /// was closed (`Decided` when the user had decided, else `why`), or
    /// `None` when it was not open.
    pub fn close(&mut self, id: DiffId, why: CloseReason) -> Option<CloseReason> {
        let mut e = self.open.remove(&id)?;
        let reason = match e.waiter.take() {
            Some(w) => {
                let _ = w.send(Settled::Closed);
                why
            }
            None => CloseReason::Decided,
        };
        self.recently_closed.push_back(e.tab_name);
        if self.recently_closed.len() > RECENT {
            self.recently_closed.pop_front();
        }
        Some(reason)
    }

    /// `close_tab`: the diff with this tab name, closed.
    pub fn close_tab(&mut self, tab_name: &str) -> Option<(DiffId, CloseReason)> {
        let id = self.find_tab(tab_name)?;
        Some((id, self.close(id, CloseReason::AgentClosed)?))
    }

    pub fn was_recently_closed(&self, tab_name: &str) -> bool {
        self.recently_closed.iter().any(|t| t == tab_name)
    }

    /// Closes every view opened by `conn` (all of them for `None`).
    pub fn close_all(
        &mut self,
        conn: Option<ConnId>,
        why: CloseReason,
    ) -> Vec<(DiffId, CloseReason)> {
        let mut ids: Vec<DiffId> = self
            .open
            .iter()
            .filter(|(_, e)| conn.is_none_or(|c| e.conn == c))
            .map(|(id, _)| *id)
            .collect();
        ids.sort();
        ids.into_iter()
            .filter_map(|id| Some((id, self.close(id, why)?)))
            .collect()
    }

    #[cfg(test)]
    pub fn contains(&self, id: DiffId) -> bool {
        self.open.contains_key(&id)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.open.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_settles_once_and_view_stays_until_closed() {
        let mut r = DiffRegistry::default();
        let (id, mut rx, replaced) = r.open("t", 1);
        assert_eq!(replaced, None);
        assert!(r.resolve(id, DiffDecision::Rejected));
        assert!(!r.resolve(id, DiffDecision::Accepted { contents: None }));
        assert_eq!(
            rx.try_recv().unwrap(),
            Settled::Decided(DiffDecision::Rejected)
        );
        assert!(r.contains(id));
        assert_eq!(r.close_tab("t"), Some((id, CloseReason::Decided)));
        assert_eq!(r.close_tab("t"), None, "second close_tab finds nothing");
        assert!(r.was_recently_closed("t"));
    }

    #[test]
    fn same_tab_name_replaces() {
        let mut r = DiffRegistry::default();
        let (a, mut rx_a, _) = r.open("t", 1);
        let (b, _rx_b, replaced) = r.open("t", 1);
        assert_eq!(replaced, Some((a, CloseReason::Replaced)));
        assert_ne!(a, b);
        assert_eq!(rx_a.try_recv().unwrap(), Settled::Closed);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn close_all_is_scoped_to_a_connection() {
        let mut r = DiffRegistry::default();
        let (a, mut rx_a, _) = r.open("a", 1);
        let (b, _rx_b, _) = r.open("b", 2);
        assert_eq!(
            r.close_all(Some(1), CloseReason::NewPrompt),
            vec![(a, CloseReason::NewPrompt)]
        );
        assert_eq!(rx_a.try_recv().unwrap(), Settled::Closed);
        assert!(r.contains(b));
        assert_eq!(
            r.close_all(None, CloseReason::Shutdown),
            vec![(b, CloseReason::Shutdown)]
        );
        assert!(r.is_empty());
    }

    #[test]
    fn dismissal_leaves_the_call_pending_for_the_terminal() {
        let mut r = DiffRegistry::default();
        let (id, mut rx, _) = r.open("t", 1);
        assert!(r.resolve(id, DiffDecision::Dismissed));
        assert!(rx.try_recv().is_err(), "still pending");
        assert!(
            r.resolve(id, DiffDecision::Rejected),
            "a later verdict counts"
        );
        assert_eq!(
            rx.try_recv().unwrap(),
            Settled::Decided(DiffDecision::Rejected)
        );
    }

    #[test]
    fn dismissing_a_review_rejects_it() {
        let mut r = DiffRegistry::default();
        let (id, mut rx, _) = r.open_review("t", 1);
        assert!(r.resolve(id, DiffDecision::Dismissed));
        assert_eq!(
            rx.try_recv().unwrap(),
            Settled::Decided(DiffDecision::Rejected)
        );
    }

    #[test]
    fn late_verdict_after_close_is_ignored() {
        let mut r = DiffRegistry::default();
        let (id, _rx, _) = r.open("t", 1);
        r.close_tab("t");
        assert!(!r.resolve(id, DiffDecision::Accepted { contents: None }));
    }
}
