//! Waiting for an intended start with sub-millisecond precision.
//!
//! tokio's timer wheel has millisecond ticks and wakes at the first tick at or after the
//! deadline, so a plain `sleep_until` starts an arrival up to a millisecond late, on average
//! half a millisecond: that lag would be added to every open-loop latency. [`pace_until`] sleeps on
//! the timer until the last millisecond, then yields to other tasks (which keeps I/O flowing)
//! until the instant arrives: at most a millisecond of busy waiting per arrival, and none when
//! arrivals are due faster than that, as the worker is busy anyway.

use std::time::Duration;

use tokio::time::{sleep_until, Instant};

/// The part of a wait spent yielding instead of sleeping.
const SPIN: Duration = Duration::from_millis(1);

/// Waits until `at`, precisely.
pub async fn pace_until(at: Instant) {
    let now = Instant::now();
    if at <= now {
        return;
    }
    if at - now > SPIN {
        sleep_until(at - SPIN).await;
    }
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

    /// Drives a schedule with `pace_until` on a paused clock and returns the lateness of each
    /// arrival against its intended time, in µs, and the actual start times. A paused clock
    /// advances to timer deadlines, which tokio rounds up to the millisecond, so lateness up to
    /// 1 ms is the timer's; anything more would be the pacing's.
    async fn run(rate: Rate, arrivals: Arrivals, end: f64) -> (Vec<u64>, Vec<f64>) {
        let start = Instant::now();
        let mut late = Vec::new();
        let mut times = Vec::new();
        for t in Schedule::new(&rate, arrivals, Some(end), 0, 1, 42) {
            let at = start + Duration::from_secs_f64(t);
            pace_until(at).await;
            late.push(Instant::now().saturating_duration_since(at).as_micros() as u64);
            times.push((Instant::now() - start).as_secs_f64());
        }
        (late, times)
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
}
