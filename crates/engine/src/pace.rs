//! Waiting for an intended start with sub-millisecond precision.
//!
//! tokio's timer wheel has millisecond ticks and wakes at the first tick at or after the
//! deadline, so a plain `sleep_until` starts an arrival up to a millisecond late, on average
//! half a millisecond: that lag would be added to every open-loop latency. A [`Pacer`] sleeps on
//! tokio's timer until the last millisecond, then on a `timerfd` of its own armed for the exact
//! instant, which the worker's runtime waits on with its other I/O: precise to some tens of
//! microseconds, with no busy waiting (a spinning pacer would take the CPU that the target and
//! the worker's own connections need, which on a small machine shows up as latency).
//!
//! Where no timerfd can be made, and on tokio's paused test clock, the last millisecond is spent
//! yielding to other tasks instead.

use std::time::Duration;

use tokio::time::{sleep_until, Instant};

/// The part of a wait handed to the precise timer (or spent yielding, without one).
const LAST: Duration = Duration::from_millis(1);

/// Waits for intended starts; one per worker thread.
pub struct Pacer {
    timer: Option<timer::Timer>,
}

impl Pacer {
    /// A pacer with its own timerfd, registered with the current runtime; falls back to
    /// [`Pacer::yielding`] if either step fails, or off Linux. Call it inside a runtime.
    pub fn precise() -> Self {
        Pacer {
            timer: timer::Timer::new(),
        }
    }

    /// A pacer that yields through the last millisecond (for the paused test clock).
    pub fn yielding() -> Self {
        Pacer { timer: None }
    }

    /// Whether this pacer has its precise timer.
    pub fn is_precise(&self) -> bool {
        self.timer.is_some()
    }

    /// Waits until `at`: never earlier, and with a timerfd rarely more than some tens of
    /// microseconds later.
    pub async fn until(&self, at: Instant) {
        let now = Instant::now();
        if at <= now {
            return;
        }
        if at - now > LAST {
            sleep_until(at - LAST).await;
        }
        if let Some(t) = &self.timer {
            if t.wait(at).await.is_ok() {
                return;
            }
        }
        yield_until(at).await;
    }
}

#[cfg(target_os = "linux")]
mod timer {
    use std::io;
    use std::os::fd::OwnedFd;

    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags,
        TimerfdTimerFlags, Timespec,
    };
    use tokio::io::unix::AsyncFd;
    use tokio::time::Instant;

    /// A timerfd registered with the runtime.
    pub(super) struct Timer(AsyncFd<OwnedFd>);

    impl Timer {
        pub(super) fn new() -> Option<Self> {
            // `AsyncFd::new` is deprecated because a caller could swap or close the descriptor
            // under it; the `OwnedFd` here is ours alone and lives exactly as long as the
            // `AsyncFd`, which is the condition its unsafe replacement asks us to promise (and
            // this crate has no unsafe code).
            #[allow(deprecated)]
            timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )
            .ok()
            .and_then(|fd| AsyncFd::new(fd).ok())
            .map(Timer)
        }

        /// Arms the timer for `at` and waits for it to fire (re-arming if it fired for an
        /// earlier wait that was dropped).
        pub(super) async fn wait(&self, at: Instant) -> io::Result<()> {
            let fd = &self.0;
            let at = at.into_std();
            loop {
                let left = at.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return Ok(());
                }
                let value = Timespec {
                    tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                    tv_nsec: i64::from(left.subsec_nanos()),
                };
                let zero = Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                let spec = Itimerspec {
                    it_interval: zero,
                    it_value: value,
                };
                timerfd_settime(fd.get_ref(), TimerfdTimerFlags::empty(), &spec)?;
                loop {
                    let mut guard = fd.readable().await?;
                    let mut buf = [0u8; 8];
                    match guard.try_io(|inner| Ok(rustix::io::read(inner.get_ref(), &mut buf)?)) {
                        Ok(Ok(_)) => {
                            // The read took the expiration: the timer is not readable again
                            // until it is armed and fires, so forget the readiness now rather
                            // than learn it from one more read that would fail.
                            guard.clear_ready();
                            break;
                        }
                        Ok(Err(e)) => return Err(e),
                        Err(_would_block) => continue,
                    }
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod timer {
    use tokio::time::Instant;

    /// No timerfd off Linux: the pacer yields instead.
    pub struct Timer;

    impl Timer {
        pub fn new() -> Option<Self> {
            None
        }

        pub async fn wait(&self, _at: Instant) -> std::io::Result<()> {
            Err(std::io::ErrorKind::Unsupported.into())
        }
    }
}

/// Yields to other tasks until `at`.
async fn yield_until(at: Instant) {
    let mut last = Instant::now();
    while last < at {
        tokio::task::yield_now().await;
        let now = Instant::now();
        if now == last {
            // A real clock always moves across a yield; a paused test clock moves only when
            // every task sleeps, so hand the wait to the timer.
            sleep_until(at).await;
            return;
        }
        last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Schedule;
    use throng_core::{Arrivals, Rate, Stage};

    /// Drives a schedule with a yielding pacer on a paused clock and returns the lateness of each
    /// arrival against its intended time, in µs, and the actual start times. A paused clock
    /// advances to timer deadlines, which tokio rounds up to the millisecond, so lateness up to
    /// 1 ms is the timer's; anything more would be the pacing's.
    async fn run(rate: Rate, arrivals: Arrivals, end: f64) -> (Vec<u64>, Vec<f64>) {
        let pacer = Pacer::yielding();
        let start = Instant::now();
        let mut late = Vec::new();
        let mut times = Vec::new();
        for t in Schedule::new(&rate, arrivals, Some(end), 0, 1, Some(42)) {
            let at = start + Duration::from_secs_f64(t);
            pacer.until(at).await;
            late.push(Instant::now().saturating_duration_since(at).as_micros() as u64);
            times.push((Instant::now() - start).as_secs_f64());
        }
        (late, times)
    }

    /// The thread's CPU time so far.
    #[cfg(target_os = "linux")]
    fn thread_cpu() -> Duration {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }

    /// On the real clock, the precise pacer is never early and sleeps rather than spins: a
    /// spinning pacer would use about as much CPU as wall time. How late it is depends on the
    /// machine's load, so that is measured by the benchmarks (the open loop's lag in
    /// `benches/e2e.sh`), not asserted here; the engine's timing arithmetic is tested exactly on
    /// the paused clock (`tests/paused.rs`).
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "current_thread")]
    async fn precise_pacer_is_on_time_without_spinning() {
        let pacer = Pacer::precise();
        assert!(pacer.is_precise());
        let start = Instant::now() + Duration::from_millis(5);
        let (cpu0, wall0) = (thread_cpu(), std::time::Instant::now());
        let mut late = Vec::new();
        for i in 0..1000u32 {
            // 400 µs apart: always inside the last millisecond, where the timerfd takes over.
            let at = start + Duration::from_micros(400) * i;
            pacer.until(at).await;
            let now = Instant::now();
            assert!(now >= at, "woke {:?} early", at - now);
            late.push((now - at).as_micros() as u64);
        }
        let (cpu, wall) = (thread_cpu() - cpu0, wall0.elapsed());
        assert_eq!(late.len(), 1000);
        assert!(
            cpu.as_secs_f64() < 0.5 * wall.as_secs_f64(),
            "pacing used {cpu:?} of CPU in {wall:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn even_constant_on_a_paused_clock() {
        let (late, times) = run(Rate::Constant(500.0), Arrivals::Even, 4.0).await;
        assert_eq!(times.len(), 2000);
        assert!(
            late.iter().all(|l| *l == 0),
            "max lateness {:?}",
            late.iter().max()
        );
        // Evenly spaced: every gap is 2 ms.
        for w in times.windows(2) {
            assert!(((w[1] - w[0]) - 0.002).abs() < 1e-6, "{w:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn poisson_constant_on_a_paused_clock() {
        let (late, times) = run(Rate::Constant(200.0), Arrivals::Poisson, 20.0).await;
        assert!(
            late.iter().all(|l| *l <= 1000),
            "max lateness {:?}",
            late.iter().max()
        );
        let n = times.len() as f64;
        assert!((n - 4000.0).abs() < 4.0 * 4000f64.sqrt(), "{n}");
        // Arrivals in any one second vary as Poisson does: some seconds well off the mean.
        let mut per_sec = [0u32; 20];
        for t in &times {
            per_sec[(*t as usize).min(19)] += 1;
        }
        let spread = per_sec.iter().max().unwrap() - per_sec.iter().min().unwrap();
        assert!(spread > 10, "{per_sec:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn ramping_on_a_paused_clock() {
        let stages = vec![
            Stage {
                duration: Duration::from_secs(2),
                target: 1000.0,
            },
            Stage {
                duration: Duration::from_secs(2),
                target: 1000.0,
            },
        ];
        let (late, times) = run(Rate::Stages { start: 0.0, stages }, Arrivals::Even, 4.0).await;
        assert!(
            late.iter().all(|l| *l <= 1000),
            "max lateness {:?}",
            late.iter().max()
        );
        // Ramp 0 -> 1000/s over 2 s gives 1000 arrivals, then 2000 at 1000/s.
        let first = times.iter().filter(|t| **t < 2.0).count();
        assert!((999..=1001).contains(&first), "{first}");
        assert!((2999..=3000).contains(&times.len()), "{}", times.len());
        // The rate in the last 100 ms of the ramp is close to 1000/s; in the first 100 ms, near 0.
        let early = times.iter().filter(|t| **t < 0.1).count();
        let late_ramp = times.iter().filter(|t| **t >= 1.9 && **t < 2.0).count();
        assert!(early <= 3, "{early}");
        assert!((90..=100).contains(&late_ramp), "{late_ramp}");
    }

    #[tokio::test(start_paused = true)]
    async fn poisson_ramping_on_a_paused_clock() {
        let stages = vec![Stage {
            duration: Duration::from_secs(10),
            target: 400.0,
        }];
        let (_, times) = run(Rate::Stages { start: 0.0, stages }, Arrivals::Poisson, 10.0).await;
        // The integral is 2000 arrivals, a quarter of them in the first half.
        let n = times.len() as f64;
        assert!((n - 2000.0).abs() < 200.0, "{n}");
        let first_half = times.iter().filter(|t| **t < 5.0).count() as f64;
        assert!((first_half / n - 0.25).abs() < 0.05, "{}", first_half / n);
    }

    /// Gamma arrivals as the pacer starts them: gaps of mean 1/rate whose coefficient of
    /// variation is 1/sqrt(shape), so shape 1 is as spread as Poisson, 0.25 twice as much (bursts
    /// and lulls) and 4 half as much. Gaps average 10 ms, so the paused timer's rounding to the
    /// millisecond hardly moves them.
    #[tokio::test(start_paused = true)]
    async fn gamma_on_a_paused_clock() {
        for (shape, cv_want) in [(0.25, 2.0), (1.0, 1.0), (4.0, 0.5)] {
            let (late, times) = run(Rate::Constant(100.0), Arrivals::Gamma { shape }, 200.0).await;
            assert!(late.iter().all(|l| *l <= 1000), "{:?}", late.iter().max());
            let gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let sd =
                (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
            assert!(
                (mean / 0.01 - 1.0).abs() < 0.05,
                "shape {shape}: mean gap {mean}"
            );
            assert!(
                (sd / mean / cv_want - 1.0).abs() < 0.08,
                "shape {shape}: cv {}",
                sd / mean
            );
        }
    }
}
