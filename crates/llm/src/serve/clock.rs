//! Token deadlines kept to some tens of microseconds, for every stream of a server at once.
//!
//! tokio's timer has millisecond ticks and wakes at the first tick at or after a deadline:
//! every token was written up to a millisecond late (measured: TTFT 1.0 ms late at the median
//! with 20 streams), which is the whole of the figures' error budget (1%, or 0.1 ms). A
//! [`Clock`] keeps the deadlines of all the server's streams in one heap and one `timerfd`
//! armed for the earliest, waited on by one task with the runtime's other I/O; when it fires,
//! that task wakes every stream whose deadline has come. One timer for the server, not one a
//! stream (a descriptor each), and no busy waiting: the CPU is the streams'. Where no timerfd
//! can be made, the streams sleep on tokio's timer instead.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Instant;

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
    /// A clock whose timer task runs on the current runtime until `stop` says so; `None` off
    /// Linux or when no timerfd can be made.
    pub(crate) fn start(stop: watch::Receiver<bool>) -> Option<Clock> {
        let timer = timer::Timer::new()?;
        let clock = Clock {
            shared: Arc::new(Shared {
                heap: Mutex::new(BinaryHeap::new()),
                earlier: Notify::new(),
            }),
        };
        tokio::spawn(clock.clone().run(timer, stop));
        Some(clock)
    }

    /// Wakes `waker` once `at` has come (never before).
    pub(crate) fn wake_at(&self, at: Instant, waker: Waker) {
        // Poisoned only by a panic while holding it, which nothing here does.
        let mut heap = match self.shared.heap.lock() {
            Ok(h) => h,
            Err(poisoned) => poisoned.into_inner(),
        };
        let earliest = heap.peek().is_none_or(|e| at < e.at);
        heap.push(Entry { at, waker });
        drop(heap);
        if earliest {
            self.shared.earlier.notify_one();
        }
    }

    async fn run(self, timer: timer::Timer, mut stop: watch::Receiver<bool>) {
        let mut due = Vec::new();
        let mut armed = None;
        loop {
            let next = {
                let mut heap = match self.shared.heap.lock() {
                    Ok(h) => h,
                    Err(poisoned) => poisoned.into_inner(),
                };
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
            // Armed for the same deadline already (a wake for an earlier one that was not
            // earliest after all): no system call.
            if next != armed {
                if timer.arm(next).is_err() {
                    // The timer cannot be armed (it could be made, so this is not expected):
                    // a millisecond of tokio's timer rather than stalled streams.
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    continue;
                }
                armed = next;
            }
            tokio::select! {
                () = timer.fired() => armed = None,
                () = self.shared.earlier.notified() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod timer {
    use std::io;
    use std::os::fd::OwnedFd;
    use std::time::Instant;

    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags,
        TimerfdTimerFlags, Timespec,
    };
    use tokio::io::unix::AsyncFd;

    /// A timerfd registered with the runtime (as the engine's pacer has one).
    pub(super) struct Timer(AsyncFd<OwnedFd>);

    impl Timer {
        pub(super) fn new() -> Option<Self> {
            // `AsyncFd::new` is deprecated because a caller could swap or close the descriptor
            // under it; this `OwnedFd` is ours alone and lives exactly as long as the
            // `AsyncFd`, the condition its unsafe replacement asks to promise (and this crate
            // has no unsafe code).
            #[allow(deprecated)]
            timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )
            .ok()
            .and_then(|fd| AsyncFd::new(fd).ok())
            .map(Timer)
        }

        /// Arms the timer for `at` (disarms it for none; a deadline already past fires at
        /// once).
        pub(super) fn arm(&self, at: Option<Instant>) -> io::Result<()> {
            let zero = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let value = match at {
                None => zero,
                Some(at) => {
                    // Zero would disarm: a deadline that has just passed fires in 1 ns.
                    let left = at
                        .saturating_duration_since(Instant::now())
                        .max(std::time::Duration::from_nanos(1));
                    Timespec {
                        tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                        tv_nsec: i64::from(left.subsec_nanos()),
                    }
                }
            };
            let spec = Itimerspec {
                it_interval: zero,
                it_value: value,
            };
            timerfd_settime(self.0.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
            Ok(())
        }

        /// Waits until the timer fires, and takes the expiration.
        pub(super) async fn fired(&self) {
            loop {
                let Ok(mut guard) = self.0.readable().await else {
                    return;
                };
                let mut buf = [0u8; 8];
                match guard.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut buf)?)) {
                    Ok(_) => {
                        // The read took the expiration: not readable again until it fires.
                        guard.clear_ready();
                        return;
                    }
                    Err(_would_block) => continue,
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod timer {
    use std::time::Instant;

    /// No timerfd off Linux: streams use tokio's timer.
    pub(super) struct Timer;

    impl Timer {
        pub(super) fn new() -> Option<Self> {
            None
        }

        pub(super) fn arm(&self, _at: Option<Instant>) -> std::io::Result<()> {
            Ok(())
        }

        pub(super) async fn fired(&self) {}
    }
}
