//! Requests sent to the editor and not yet answered.
//!
//! The engine calls the frontend from many tasks at once; each call becomes
//! a JSON-RPC request with a fresh id, and its answer arrives later on the
//! one input stream, in any order. This table pairs them up. It also makes
//! the failure modes explicit: a request whose caller gave up (timeout,
//! cancellation) removes itself, so a late answer is dropped; and once the
//! input has ended, every waiting request and every new one fails with
//! "disconnected" instead of hanging.

use ccbridge_protocol::jsonrpc::{ErrorObject, RawJson, RequestId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// What the editor answered (the result still raw JSON).
pub type Outcome = Result<RawJson, ErrorObject>;

#[derive(Default)]
struct Inner {
    next_id: i64,
    waiting: HashMap<i64, oneshot::Sender<Outcome>>,
    closed: bool,
}

/// The table; cheap to clone (shared).
#[derive(Clone, Default)]
pub struct PendingRequests {
    inner: Arc<Mutex<Inner>>,
}

/// The editor is gone; no answer will come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the editor is disconnected")]
pub struct Disconnected;

/// A registered request. Await [`Ticket::wait`] for the answer; dropping
/// the ticket (or its `wait` future) forgets the request.
pub struct Ticket {
    id: i64,
    rx: Option<oneshot::Receiver<Outcome>>,
    table: PendingRequests,
}

impl Ticket {
    pub fn id(&self) -> RequestId {
        RequestId::Number(self.id)
    }

    /// The editor's answer, or `Disconnected` when the input ended first.
    pub async fn wait(mut self) -> Result<Outcome, Disconnected> {
        match self.rx.take() {
            Some(rx) => rx.await.map_err(|_| Disconnected),
            None => Err(Disconnected),
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.table.lock().waiting.remove(&self.id);
    }
}

impl PendingRequests {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The table holds no invariant a panic elsewhere could break.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Allocates an id (1, 2, 3, ...) and starts waiting for its answer.
    pub fn register(&self) -> Result<Ticket, Disconnected> {
        let mut inner = self.lock();
        if inner.closed {
            return Err(Disconnected);
        }
        inner.next_id += 1;
        let id = inner.next_id;
        let (tx, rx) = oneshot::channel();
        inner.waiting.insert(id, tx);
        Ok(Ticket {
            id,
            rx: Some(rx),
            table: self.clone(),
        })
    }

    /// Delivers an answer. Returns `false` when no request with that id is
    /// waiting (never sent, already answered, or given up on).
    pub fn complete(&self, id: &RequestId, outcome: Outcome) -> bool {
        let RequestId::Number(n) = id else {
            return false;
        };
        let Some(tx) = self.lock().waiting.remove(n) else {
            return false;
        };
        tx.send(outcome).is_ok()
    }

    /// Fails every waiting request with [`Disconnected`] and refuses new ones.
    pub fn close(&self) {
        let drained: Vec<_> = {
            let mut inner = self.lock();
            inner.closed = true;
            inner.waiting.drain().collect()
        };
        // Dropping the senders wakes the waiters with `Disconnected`.
        drop(drained);
    }

    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// How many requests are waiting.
    pub fn len(&self) -> usize {
        self.lock().waiting.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use std::time::Duration;

    #[tokio::test]
    async fn answers_reach_their_own_request_in_any_order() {
        let table = PendingRequests::new();
        let a = table.register().unwrap();
        let b = table.register().unwrap();
        assert_eq!(a.id(), RequestId::Number(1));
        assert_eq!(b.id(), RequestId::Number(2));
        let (ida, idb) = (a.id(), b.id());
        let wa = tokio::spawn(a.wait());
        let wb = tokio::spawn(b.wait());
        assert!(table.complete(&idb, Ok(json!("b").into())));
        assert!(table.complete(&ida, Err(ErrorObject::new(1, "no"))));
        assert_eq!(wb.await.unwrap(), Ok(Ok(json!("b").into())));
        assert_eq!(wa.await.unwrap(), Ok(Err(ErrorObject::new(1, "no"))));
        assert!(table.is_empty());
    }

    #[tokio::test]
    async fn unknown_duplicate_and_string_ids_are_refused() {
        let table = PendingRequests::new();
        let t = table.register().unwrap();
        let id = t.id();
        assert!(!table.complete(&RequestId::Number(99), Ok(Value::Null.into())));
        assert!(!table.complete(&RequestId::String("1".into()), Ok(Value::Null.into())));
        assert!(table.complete(&id, Ok(Value::Null.into())));
        assert!(
            !table.complete(&id, Ok(Value::Null.into())),
            "second answer"
        );
        assert_eq!(t.wait().await, Ok(Ok(Value::Null.into())));
    }

    #[tokio::test]
    async fn giving_up_forgets_the_request() {
        let table = PendingRequests::new();
        let t = table.register().unwrap();
        let id = t.id();
        let timed_out = tokio::time::timeout(Duration::from_millis(1), t.wait()).await;
        assert!(timed_out.is_err());
        assert!(table.is_empty(), "the dropped wait removed its entry");
        assert!(
            !table.complete(&id, Ok(Value::Null.into())),
            "late answer is dropped"
        );
    }

    #[tokio::test]
    async fn close_fails_waiters_and_new_requests() {
        let table = PendingRequests::new();
        let t1 = table.register().unwrap();
        let t2 = table.register().unwrap();
        let w = tokio::spawn(t1.wait());
        table.close();
        assert_eq!(w.await.unwrap(), Err(Disconnected));
        assert_eq!(t2.wait().await, Err(Disconnected));
        assert!(table.register().is_err());
        assert!(table.is_closed());
    }
}
