//! Token deadlines kept to some tens of microseconds, for every stream of a server at once.
//!
//! tokio's timer has millisecond ticks and wakes at the first tick at or after a deadline:
//! every token was written up to a millisecond late (measured: TTFT 1.0 ms late at the median
//! with 20 streams), which is the whole of the figures' error budget (1%, or 0.1 ms). A
//! [`Clock`] keeps the deadlines of all the server's streams in one heap, and one task waits
//! for the earliest on the engine's [`Pacer`] (tokio's timer to the last millisecond, then a
//! `timerfd` armed for the instant, waited on with the runtime's other I/O); then it serves
//! every deadline that has come in one pass. One timer for the server, not one a stream (a
//! descriptor each), and no busy waiting where a timerfd can be made.
//!
//! A deadline is either an HTTP/1.1 stream's next token, which the clock's task writes to the
//! socket itself (`h1.rs`: no waker, no task of the connection's and no channel between due
//! and written), or a waker, for an answer that hyper polls (HTTP/2, and HTTP/1.1 requests the
//! fast path leaves to hyper). With a waker per token, the testbed took about 18 µs of CPU a
//! token (200 streams; hyper's connection task polled, a chunk formatted and allocated) and
//! could not keep 1,000 streams' tokens (88,000 a second) on time on one core.
//!
//! Every token the clock writes is timed against its deadline ([`Lateness`]), so the testbed
//! says how far from its own truth it was.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::time::{Duration, Instant};

use throng_engine::pace::Pacer;
use tokio::sync::{watch, Notify};

use super::h1::Stream;

/// What is due at a deadline.
enum Due {
    /// An answer polled by hyper: its task is woken.
    Wake(Waker),
    /// An HTTP/1.1 stream: its token is written.
    Write(Box<Stream>),
}

struct Entry {
    at: Instant,
    due: Due,
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

/// How late the clock wrote its tokens, or read its requests: microsecond buckets to 2 ms, then 128 µs ones.
struct Late {
    counts: Vec<u64>,
    count: u64,
    max: Duration,
}

const FINE: usize = 2048;
const COARSE: usize = 2048;

impl Late {
    fn new() -> Late {
        Late {
            counts: vec![0; FINE + COARSE],
            count: 0,
            max: Duration::ZERO,
        }
    }

    fn add(&mut self, late: Duration) {
        let us = usize::try_from(late.as_micros()).unwrap_or(usize::MAX);
        let i = if us < FINE {
            us
        } else {
            FINE + ((us - FINE) / 128).min(COARSE - 1)
        };
        self.counts[i] += 1;
        self.count += 1;
        self.max = self.max.max(late);
    }

    fn summary(&self) -> Lateness {
        Lateness {
            count: self.count,
            p50: self.at(0.5),
            p90: self.at(0.9),
            p99: self.at(0.99),
            max: self.max,
        }
    }

    /// The upper bound of the bucket holding quantile `q`.
    fn at(&self, q: f64) -> Duration {
        let rank = ((self.count as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let us = if i < FINE {
                    i
                } else {
                    FINE + (i - FINE + 1) * 128
                };
                return Duration::from_micros(us as u64).min(self.max);
            }
        }
        self.max
    }
}

/// How late the testbed was: with its HTTP/1.1 streams' tokens, each from the instant it was
/// due to the instant its write began; with their requests, each from the instant it arrived
/// (the kernel's stamp) to the instant it was read. To the microsecond below 2 ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lateness {
    /// Tokens written, or requests read, so far.
    pub count: u64,
    /// The median.
    pub p50: Duration,
    /// The 90th percentile.
    pub p90: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The latest.
    pub max: Duration,
}

impl std::fmt::Display for Lateness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {} us, p90 {} us, p99 {} us, max {} us",
            self.p50.as_micros(),
            self.p90.as_micros(),
            self.p99.as_micros(),
            self.max.as_micros()
        )
    }
}

struct Shared {
    heap: Mutex<BinaryHeap<Entry>>,
    /// A deadline earlier than the armed one came in.
    earlier: Notify,
    late: Mutex<Late>,
    /// How long requests waited to be read.
    reads: Mutex<Late>,
}

/// The server's precise timer: cheap to clone, one a stream.
#[derive(Clone)]
pub(crate) struct Clock {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clock").finish_non_exhaustive()
    }
}

/// Poisoned only by a panic while holding it, which nothing here does.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Clock {
    /// A clock whose task runs on the current runtime until `stop` says so.
    pub(crate) fn start(stop: watch::Receiver<bool>) -> Clock {
        let clock = Clock {
            shared: Arc::new(Shared {
                heap: Mutex::new(BinaryHeap::new()),
                earlier: Notify::new(),
                late: Mutex::new(Late::new()),
                reads: Mutex::new(Late::new()),
            }),
        };
        tokio::spawn(clock.clone().run(stop));
        clock
    }

    /// Wakes `waker` once `at` has come (never before).
    pub(crate) fn wake_at(&self, at: Instant, waker: Waker) {
        self.push(at, Due::Wake(waker));
    }

    /// Writes `stream`'s next token once it is due (never before), and each after it.
    pub(crate) fn write(&self, stream: Box<Stream>) {
        self.push(stream.due(), Due::Write(stream));
    }

    fn push(&self, at: Instant, due: Due) {
        let mut heap = lock(&self.shared.heap);
        let earliest = heap.peek().is_none_or(|e| at < e.at);
        heap.push(Entry { at, due });
        drop(heap);
        if earliest {
            self.shared.earlier.notify_one();
        }
    }

    /// How late the tokens written so far were.
    pub(crate) fn lateness(&self) -> Lateness {
        lock(&self.shared.late).summary()
    }

    /// Counts a request read `wait` after it arrived.
    pub(crate) fn read(&self, wait: Duration) {
        lock(&self.shared.reads).add(wait);
    }

    /// How long the requests read so far waited to be.
    pub(crate) fn read_waits(&self) -> Lateness {
        lock(&self.shared.reads).summary()
    }

    async fn run(self, mut stop: watch::Receiver<bool>) {
        let pacer = Pacer::precise();
        let mut due = Vec::new();
        let mut again = Vec::new();
        // One buffer for every token's bytes: no allocation a token.
        let mut out = Vec::with_capacity(4096);
        let mut lates = Vec::new();
        loop {
            let next = {
                let mut heap = lock(&self.shared.heap);
                heap.extend(again.drain(..));
                let now = Instant::now();
                while heap.peek().is_some_and(|e| e.at <= now) {
                    if let Some(e) = heap.pop() {
                        due.push(e);
                    }
                }
                heap.peek().map(|e| e.at)
            };
            if !due.is_empty() {
                for Entry { at, due } in due.drain(..) {
                    match due {
                        Due::Wake(waker) => waker.wake(),
                        Due::Write(stream) => {
                            lates.push(Instant::now().saturating_duration_since(at));
                            if let Some(stream) = stream.write(&mut out) {
                                again.push(Entry {
                                    at: stream.due(),
                                    due: Due::Write(stream),
                                });
                            }
                        }
                    }
                }
                {
                    let mut late = lock(&self.shared.late);
                    for l in lates.drain(..) {
                        late.add(l);
                    }
                }
                if *stop.borrow() {
                    lock(&self.shared.heap).clear();
                    return;
                }
                // The connections' tasks (new requests) run between passes.
                tokio::task::yield_now().await;
                continue;
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
                _ = stop.wait_for(|s| *s) => {
                    // The streams' sockets close with them.
                    lock(&self.shared.heap).clear();
                    return;
                }
            }
        }
    }
}
