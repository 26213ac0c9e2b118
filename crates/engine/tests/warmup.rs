//! The warm-up's boundary, as a property on tokio's paused clock: over warm-ups, durations,
//! rates, users and target delays, the measured run holds exactly the requests due after the
//! warm-up ended (whenever they end, and whatever was in flight across the boundary), and the
//! open loop's arrivals add up: `scheduled = started + dropped + unstarted`, `scheduled` being
//! exactly the schedule's arrivals in the measured window.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use throng_core::{
    Arrivals, ClosedLoop, Driver, LoadModel, OpenLoop, Outcome, Rate, RunPlan, Snapshot, StepInfo,
    Users,
};
use throng_engine::{start_with, Extras};
use tokio::time::Instant;

/// Every request takes `took` on the run's clock; the start of each is logged.
struct Logger {
    took: Duration,
    starts: Arc<Mutex<Vec<Instant>>>,
}

impl Driver for Logger {
    type Worker = ();
    type Session = ();

    fn steps(&self) -> Vec<StepInfo> {
        vec![StepInfo {
            label: "sleep".into(),
        }]
    }

    fn worker(&self) {}

    fn session(&self, _w: &(), _user: u64) {}

    async fn execute(&self, _s: &mut (), _step: usize) -> Outcome {
        self.starts.lock().unwrap().push(Instant::now());
        tokio::time::sleep(self.took).await;
        Outcome::default()
    }
}

/// Runs `plan` on a paused clock of its own; the final snapshot, when the run started, and the
/// start of every request sent.
fn run(plan: RunPlan, took: Duration) -> (Arc<Snapshot>, Instant, Vec<Instant>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let driver = Logger {
        took,
        starts: starts.clone(),
    };
    let set = tokio::task::LocalSet::new();
    let (snap, begun) = set.block_on(&rt, async move {
        let extras = Extras {
            on_caller: true,
            ..Extras::default()
        };
        let begun = Instant::now();
        let handle = start_with(plan, Arc::new(driver), extras).await.unwrap();
        (handle.wait().await, begun)
    });
    let starts = std::mem::take(&mut *starts.lock().unwrap());
    (snap, begun, starts)
}

/// Where the run's clock starts: the engine starts its load 20 ms after it is called (on the
/// paused clock, exactly), and the closed loop's users send their first request then.
const START: Duration = Duration::from_millis(20);

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Closed loop: the samples are exactly the requests sent at or after the warm-up's end,
    /// whatever was in flight across it.
    #[test]
    fn a_closed_loop_measures_exactly_what_was_sent_after_the_warm_up(
        users in 1u32..6,
        warmup_ms in 1u64..1_500,
        duration_ms in 200u64..2_000,
        took_ms in 1u64..250,
    ) {
        let mut plan = RunPlan::new(
            "warm-up",
            LoadModel::Closed(ClosedLoop {
                users: Users::Fixed(users),
                requests: None,
                iterations: None,
                duration: Some(Duration::from_millis(duration_ms)),
                think_time: None,
            }),
        );
        plan.warmup = Duration::from_millis(warmup_ms);
        let (s, begun, starts) = run(plan, Duration::from_millis(took_ms));
        let measure = begun + START + Duration::from_millis(warmup_ms);
        let after = starts.iter().filter(|t| **t >= measure).count() as u64;
        let before = starts.len() as u64 - after;
        prop_assert_eq!(s.total.samples, after, "{} sent in the warm-up", before);
        prop_assert!(before >= u64::from(users), "the warm-up sent {}", before);
    }

    /// Open loop: the measured arrivals are exactly the schedule's in the measured window, and
    /// each ends as one of started, dropped or unstarted, whatever the target's delay against
    /// the slots and the queue.
    #[test]
    fn an_open_loop_measures_exactly_the_arrivals_due_after_the_warm_up(
        rate in 2u64..300,
        warmup_ms in 1u64..1_500,
        duration_ms in 200u64..2_000,
        took_ms in 1u64..400,
        max_in_flight in 1u32..20,
        queue in 0u32..20,
    ) {
        let mut plan = RunPlan::new(
            "warm-up",
            LoadModel::Open(OpenLoop {
                rate: Rate::Constant(rate as f64),
                arrivals: Arrivals::Even,
                max_in_flight,
                queue,
                requests: None,
                duration: Some(Duration::from_millis(duration_ms)),
            }),
        );
        plan.warmup = Duration::from_millis(warmup_ms);
        let (s, begun, starts) = run(plan, Duration::from_millis(took_ms));
        let lag = s.lag.as_ref().unwrap();
        // Arrival k is due k/rate s after the start: those in [warm-up, warm-up + duration).
        let first = (warmup_ms * rate).div_ceil(1000);
        let end = ((warmup_ms + duration_ms) * rate).div_ceil(1000);
        prop_assert_eq!(lag.scheduled, end - first);
        prop_assert_eq!(lag.scheduled, lag.started() + lag.dropped + lag.unstarted);
        prop_assert_eq!(s.total.samples, lag.scheduled);
        prop_assert_eq!(s.total.dropped, lag.dropped);
        // Every arrival started in the measurement was sent in it (the warm-up's late ones may
        // be sent in it too).
        let measure = begun + START + Duration::from_millis(warmup_ms);
        let after = starts.iter().filter(|t| **t >= measure).count() as u64;
        prop_assert!(lag.started() <= after, "{} started, {} sent after", lag.started(), after);
    }
}
