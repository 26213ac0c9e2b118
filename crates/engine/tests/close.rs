//! A user's session ends with its close however the run stops, on tokio's paused clock: a stop
//! wakes users from their think time, a step's pause or a backoff to close their sessions, and
//! the run still ends on time (each close bounded at 100 ms).
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use throng_core::{ClosedLoop, Driver, ErrorClass, LoadModel, Outcome, RunPlan, StepInfo, Users};
use throng_engine::{start_with, Extras};

mod common;
use common::on_caller;

/// Requests of 10 ms, each followed by `pause` if set, connects refused if `refuse`; a close
/// takes `close`. Counts sessions, and closes begun and ended.
struct Sessions {
    pause: Option<Duration>,
    refuse: bool,
    close: Duration,
    opened: AtomicU64,
    closing: AtomicU64,
    closed: AtomicU64,
}

impl Sessions {
    fn new() -> Self {
        Sessions {
            pause: None,
            refuse: false,
            close: Duration::from_millis(5),
            opened: AtomicU64::new(0),
            closing: AtomicU64::new(0),
            closed: AtomicU64::new(0),
        }
    }

    /// Sessions opened, closes begun, closes ended.
    fn counts(&self) -> (u64, u64, u64) {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        (n(&self.opened), n(&self.closing), n(&self.closed))
    }
}

impl Driver for Sessions {
    type Worker = ();
    type Session = ();

    fn steps(&self) -> Vec<StepInfo> {
        vec![StepInfo {
            label: "step".into(),
        }]
    }

    fn worker(&self) {}

    fn session(&self, _w: &(), _user: u64) {
        self.opened.fetch_add(1, Ordering::Relaxed);
    }

    async fn connect(&self, _s: &mut (), _step: usize) -> Result<(), Outcome> {
        match self.refuse {
            true => Err(Outcome::failed(ErrorClass::Connect, "refused")),
            false => Ok(()),
        }
    }

    async fn execute(&self, _s: &mut (), _step: usize) -> Outcome {
        tokio::time::sleep(Duration::from_millis(10)).await;
        Outcome {
            pause: self.pause,
            ..Outcome::default()
        }
    }

    async fn close(&self, _s: &mut ()) {
        self.closing.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(self.close).await;
        self.closed.fetch_add(1, Ordering::Relaxed);
    }
}

/// `users` users for `duration`, thinking `think` after each iteration.
fn closed(users: u32, duration: Duration, think: Option<Duration>) -> RunPlan {
    RunPlan::new(
        "close",
        LoadModel::Closed(ClosedLoop {
            users: Users::Fixed(users),
            requests: None,
            iterations: None,
            duration: Some(duration),
            think_time: think,
        }),
    )
}

const DEADLINE: Duration = Duration::from_millis(400);
const THINK: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn users_thinking_at_the_deadline_close_and_the_run_ends_on_time() {
    // Think time after the iteration, a step's pause (a scenario's `think_time:`), and a
    // backoff after a refused connect: at the deadline every user is waiting in one.
    let thinking = (Sessions::new(), Some(THINK), 3);
    let pausing = (
        Sessions {
            pause: Some(THINK),
            ..Sessions::new()
        },
        None,
        3,
    );
    let refused = (
        Sessions {
            refuse: true,
            ..Sessions::new()
        },
        None,
        // Tries 5-10 ms apart at first, doubling: however many by then, every one refused.
        0,
    );
    for (case, (driver, think, requests)) in [thinking, pausing, refused].into_iter().enumerate() {
        let driver = Arc::new(driver);
        let s = on_caller(
            closed(3, DEADLINE, think),
            driver.clone(),
            Extras::default(),
        )
        .await;
        if driver.refuse {
            assert!(s.total.samples >= 3 * 4, "case {case}: {}", s.total.samples);
            assert_eq!(s.total.errors, s.total.samples, "case {case}");
        } else {
            assert_eq!(s.total.samples, requests, "case {case}");
            assert_eq!(s.total.errors, 0, "case {case}: {:?}", s.errors);
        }
        assert_eq!(driver.counts(), (3, 3, 3), "case {case}");
        assert!(!s.interrupted);
        // The deadline, then the closes (5 ms, together): not the think time's end, nor the
        // grace (2 s).
        assert_eq!(
            s.elapsed,
            DEADLINE + Duration::from_millis(5),
            "case {case}"
        );
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_stop_in_think_time_closes_every_session_at_once() {
    let driver = Arc::new(Sessions::new());
    let plan = closed(4, Duration::from_secs(3600), Some(THINK));
    let set = tokio::task::LocalSet::new();
    let s = set
        .run_until(async {
            let extras = Extras {
                on_caller: true,
                ..Extras::default()
            };
            let handle = start_with(plan, driver.clone(), extras).await.unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            // Ctrl-C, SIGTERM.
            handle.stop();
            handle.wait().await
        })
        .await;
    assert!(s.interrupted);
    assert_eq!(s.total.samples, 4);
    assert_eq!(driver.counts(), (4, 4, 4));
    // Stopped 300 ms after the run's start (which is 20 ms after the call), and 5 ms of closes.
    assert_eq!(s.elapsed, Duration::from_millis(285));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_close_that_hangs_is_cut_off_at_its_bound() {
    let driver = Arc::new(Sessions {
        close: Duration::from_secs(60),
        ..Sessions::new()
    });
    let s = on_caller(
        closed(2, DEADLINE, Some(THINK)),
        driver.clone(),
        Extras::default(),
    )
    .await;
    assert_eq!(s.total.samples, 2);
    assert_eq!(driver.counts(), (2, 2, 0));
    assert_eq!(s.elapsed, DEADLINE + Duration::from_millis(100));
}
