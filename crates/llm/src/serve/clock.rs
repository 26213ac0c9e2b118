//! Token deadlines kept to some tens of microseconds, for every stream of a server at once.
//!
//! tokio's timer has millisecond ticks and wakes at the first tick at or after a deadline:
//! every token was written up to a millisecond late (measured: TTFT 1.0 ms late at the median
//! with 20 streams), which is the whole of the figures' error budget (1%, or 0.1 ms). A
//! [`Clock`] keeps the deadlines of all the server's streams in one heap, and one task waits
//! for the earliest on the engine's [`Pacer`] (tokio's timer to the last millisecond, then a
//! `timerfd` armed for the instant, waited on with the runtime's other I/O); then it wakes
//! every stream whose deadline has come. One timer for the server, not one a stream (a
//! descriptor each), and no busy waiting where a timerfd can be made.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Instant;

use throng_engine::pace::Pacer;
use tokio::sync::{watch, Notify};

/// A stream waiting for its deadline.
struct Entry {
    at: Instant,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed: the heap's top is the earliest deadline.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.cmp(&self.at)
    }
}

struct Shared {
    heap: Mutex<BinaryHeap<Entry>>,
    /// A deadline earlier than the armed one came in.
    earlier: Notify,
}

/// The server's precise timer: cheap to clone, one a stream.
#[derive(Clone)]
pub(crate) struct Clock {
    shared: Arc<Shared>,
}

impl Clock {
    /// A clock whose task runs on the current runtime until `stop` says so.
    pub(crate) fn start(stop: watch::Receiver<bool>) -> Clock {
        let clock = Clock {
            shared: Arc::new(Shared {
                heap: Mutex::new(BinaryHeap::new()),
                earlier: Notify::new(),
            }),
        };
        tokio::spawn(clock.clone().run(stop));
        clock
    }

    /// Wakes `waker` once `at` has come (never before).
    pub(crate) fn wake_at(&self, at: Instant, waker: Waker) {
        let mut heap = self.heap();
        let earliest = heap.peek().is_none_or(|e| at < e.at);
        heap.push(Entry { at, waker });
        drop(heap);
        if earliest {
            self.shared.earlier.notify_one();
        }
    }

    fn heap(&self) -> std::sync::MutexGuard<'_, BinaryHeap<Entry>> {
        // Poisoned only by a panic while holding it, which nothing here does.
        match self.shared.heap.lock() {
            Ok(h) => h,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    async fn run(self, mut stop: watch::Receiver<bool>) {
        let pacer = Pacer::precise();
        let mut due = Vec::new();
        loop {
            let next = {
                let mut heap = self.heap();
                let now = Instant::now();
                while heap.peek().is_some_and(|e| e.at <= now) {
                    if let Some(e) = heap.pop() {
                        due.push(e.waker);
                    }
                }
                heap.peek().map(|e| e.at)
            };
            for waker in due.drain(..) {
                waker.wake();
            }
            let wait = async {
                match next {
                    Some(at) => pacer.until(tokio::time::Instant::from_std(at)).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = wait => {}
                () = self.shared.earlier.notified() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }
}
