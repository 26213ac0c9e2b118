//! Changing a run while it goes: pause and resume, more or less load. The live dashboard's keys
//! call these; so can a library caller. Every change is kept, with its time, for the result.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::time::Instant;

pub use throng_core::Change;

/// Live settings shared by the caller and the workers.
#[derive(Debug)]
pub struct Control {
    start: Instant,
    paused: AtomicBool,
    /// The open-loop rate multiplier, as f64 bits.
    rate_factor: AtomicU64,
    /// Users added (or removed, when negative) to the closed loop's plan.
    user_delta: AtomicI64,
    changes: Mutex<Vec<Change>>,
}

impl Control {
    pub(crate) fn new(start: Instant) -> Self {
        Control {
            start,
            paused: AtomicBool::new(false),
            rate_factor: AtomicU64::new(1.0f64.to_bits()),
            user_delta: AtomicI64::new(0),
            changes: Mutex::new(Vec::new()),
        }
    }

    fn record(&self, what: String) {
        let t = self.start.elapsed().as_secs_f64();
        if let Ok(mut c) = self.changes.lock() {
            c.push(Change { t, what });
        }
    }

    /// Whether scheduling is paused.
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// Pauses (no new iteration starts; requests in flight finish) or resumes.
    pub fn set_paused(&self, paused: bool) {
        if self.paused.swap(paused, Ordering::Relaxed) != paused {
            self.record(if paused {
                "paused".into()
            } else {
                "resumed".into()
            });
        }
    }

    /// The open-loop rate multiplier.
    pub fn rate_factor(&self) -> f64 {
        f64::from_bits(self.rate_factor.load(Ordering::Relaxed))
    }

    /// Multiplies the open-loop rate by `by` from now on.
    pub fn scale_rate(&self, by: f64) {
        if !(by > 0.0 && by.is_finite()) {
            return;
        }
        let next = self.rate_factor() * by;
        self.rate_factor.store(next.to_bits(), Ordering::Relaxed);
        self.record(format!("rate x{next:.2}"));
    }

    /// Users added to (or removed from) the closed loop's plan.
    pub fn user_delta(&self) -> i64 {
        self.user_delta.load(Ordering::Relaxed)
    }

    /// Adds `n` users (removes them when negative) from now on.
    pub fn add_users(&self, n: i64) {
        let total = self.user_delta.fetch_add(n, Ordering::Relaxed) + n;
        self.record(format!("users {n:+} (now {total:+} on the plan)"));
    }

    /// Every change so far.
    pub fn changes(&self) -> Vec<Change> {
        self.changes.lock().map(|c| c.clone()).unwrap_or_default()
    }
}
