//! One connection shared by the sessions of a worker thread (HTTP/2's, gRPC's): the first
//! session that needs it opens it, and the others wait for that attempt and share its result,
//! a failure too.

use std::cell::{Cell, RefCell};
use std::future::Future;

use throng_core::Outcome;
use tokio::sync::Notify;

/// A connection (`T`, cheap to clone: a sender and its counters) that the sessions of one
/// worker thread share, opened when one of them needs it.
///
/// Sessions that wait for an attempt share its failure rather than trying again in turn: they
/// did, and against a server that accepts and never answers the k-th waiting session failed k
/// connect timeouts late (10 gRPC users on one connection, the last after 3.0 s instead of
/// 0.3 s).
pub struct SharedConn<T> {
    conn: RefCell<Option<T>>,
    connecting: Cell<bool>,
    /// How the last attempt failed, for the sessions that waited for it.
    failed: RefCell<Option<Outcome>>,
    ready: Notify,
}

impl<T> Default for SharedConn<T> {
    fn default() -> Self {
        SharedConn {
            conn: RefCell::new(None),
            connecting: Cell::new(false),
            failed: RefCell::new(None),
            ready: Notify::new(),
        }
    }
}

impl<T: Clone> SharedConn<T> {
    /// The connection if it is open (`usable`), without waiting: the common case, which needs
    /// no future (HTTP/2 asks once a request).
    pub fn current(&self, usable: impl Fn(&T) -> bool) -> Option<T> {
        self.conn.borrow().as_ref().filter(|c| usable(c)).cloned()
    }

    /// The connection if it is open (`usable`), else one opened by `open`, or by the attempt
    /// under way when this session came (its result, whichever it was).
    pub async fn get<F>(
        &self,
        usable: impl Fn(&T) -> bool,
        open: impl FnOnce() -> F,
    ) -> Result<T, Outcome>
    where
        F: Future<Output = Result<T, Outcome>>,
    {
        loop {
            if let Some(c) = self.conn.borrow().as_ref().filter(|c| usable(c)) {
                return Ok(c.clone());
            }
            if self.connecting.get() {
                self.ready.notified().await;
                if let Some(failed) = self.failed.borrow().as_ref() {
                    return Err(failed.clone());
                }
                continue;
            }
            self.connecting.set(true);
            *self.failed.borrow_mut() = None;
            let attempt = Attempt(self);
            let r = Box::pin(open()).await;
            match &r {
                Ok(c) => *self.conn.borrow_mut() = Some(c.clone()),
                Err(failed) => *self.failed.borrow_mut() = Some(failed.clone()),
            }
            drop(attempt);
            return r;
        }
    }
}

/// An attempt under way: when it ends, however (its session cut off while it connects too),
/// the sessions waiting for it wake.
struct Attempt<'a, T>(&'a SharedConn<T>);

impl<T> Drop for Attempt<'_, T> {
    fn drop(&mut self) {
        self.0.connecting.set(false);
        self.0.ready.notify_waiters();
    }
}
