//! A run ends at its deadline plus grace, and honours stop, whatever its driver does. The
//! drivers here fail without ever waiting (their futures are ready at once), as a driver does
//! whose connection already failed: they must neither keep their worker's thread to themselves
//! (the worker's deadline, stop and abort would never run) nor retry in a tight loop.
//!
//! Each run is watched from another thread by the wall clock: a hang fails the test after
//! 60 s rather than holding the test binary forever.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use throng_core::{
    ClosedLoop, Driver, ErrorClass, LoadModel, Outcome, RunPlan, Snapshot, StepInfo, Users,
};
use throng_engine::{start_with, Extras};

mod common;
use common::on_caller;

/// Every call fails at once: its connect (when `refuse` is set) with class `protocol` (a peer
/// that does not speak the protocol), each request with `other`.
struct Instant {
    refuse: bool,
    connects: AtomicU64,
}

impl Instant {
    fn new(refuse: bool) -> Arc<Self> {
        Arc::new(Instant {
            refuse,
            connects: AtomicU64::new(0),
        })
    }
}

impl Driver for Instant {
    type Worker = ();
    type Session = ();

    fn steps(&self) -> Vec<StepInfo> {
        vec![StepInfo {
            label: "instant".into(),
        }]
    }

    fn worker(&self) {}

    fn session(&self, _w: &(), _user: u64) {}

    async fn connect(&self, _s: &mut (), _step: usize) -> Result<(), Outcome> {
        self.connects.fetch_add(1, Ordering::Relaxed);
        match self.refuse {
            true => Err(Outcome::failed(ErrorClass::Protocol, "not the protocol")),
            false => Ok(()),
        }
    }

    async fn execute(&self, _s: &mut (), _step: usize) -> Outcome {
        Outcome::failed(ErrorClass::Other, "failed at once")
    }
}

fn closed(users: u32, duration: Duration) -> RunPlan {
    let mut plan = RunPlan::new(
        "instant",
        LoadModel::Closed(ClosedLoop {
            users: Users::Fixed(users),
            requests: None,
            iterations: None,
            duration: Some(duration),
            think_time: None,
        }),
    );
    plan.grace = Duration::from_millis(500);
    plan
}

/// Runs `work` on a thread of its own and waits for it by the wall clock, at most 60 s.
fn watched<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the run did not end within 60 s")
}

/// A plan run with the driver on tokio's paused clock (`Extras::on_caller`).
fn paused(plan: RunPlan, driver: Arc<Instant>) -> Arc<Snapshot> {
    watched(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(on_caller(plan, driver, Extras::default()))
    })
}

#[test]
fn a_connect_that_fails_at_once_backs_off_and_the_run_ends_at_its_deadline() {
    // 2 users for 2 s, every connect refused at once as `protocol`. Each user waits 10 ms after
    // its first failure, doubling to 1 s: about 9 tries each in 2 s, not a spin.
    let driver = Instant::new(true);
    let s = paused(closed(2, Duration::from_secs(2)), driver.clone());
    let t = &s.total;
    assert!((4..=40).contains(&t.samples), "{}", t.samples);
    assert_eq!(t.errors, t.samples);
    assert_eq!(driver.connects.load(Ordering::Relaxed), t.samples);
    assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
    assert_eq!(s.errors[0].class, ErrorClass::Protocol);
    // Ends at the deadline: nothing is in flight, so the grace is not waited for (the users'
    // controller looks every 100 ms).
    assert!(s.elapsed >= Duration::from_secs(2), "{:?}", s.elapsed);
    assert!(s.elapsed <= Duration::from_millis(2_200), "{:?}", s.elapsed);
}

/// A plan run with the driver on a worker thread and the real clock; stopped after `stop` if
/// given.
fn threaded(mut plan: RunPlan, driver: Arc<Instant>, stop: Option<Duration>) -> Arc<Snapshot> {
    watched(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            plan.threads = 1;
            let handle = start_with(plan, driver, Extras::default()).await.unwrap();
            if let Some(after) = stop {
                tokio::time::sleep(after).await;
                handle.stop();
            }
            handle.wait().await
        })
    })
}

/// Worker threads on the real clock: the driver's requests fail at once, and the worker still
/// keeps its deadline.
#[test]
fn requests_that_fail_at_once_still_let_the_worker_keep_its_deadline() {
    let began = std::time::Instant::now();
    let s = threaded(
        closed(2, Duration::from_millis(500)),
        Instant::new(false),
        None,
    );
    let t = &s.total;
    assert!(t.samples > 0);
    assert_eq!(t.errors, t.samples);
    assert!(!s.interrupted);
    // 0.5 s of load and 0.5 s of grace at the most; the rest is a wide margin for a busy
    // machine.
    let took = began.elapsed();
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// The same driver with no end but a stop: the stop is honoured.
#[test]
fn requests_that_fail_at_once_still_let_the_run_stop() {
    let s = threaded(
        closed(1, Duration::from_secs(3600)),
        Instant::new(false),
        Some(Duration::from_millis(300)),
    );
    assert!(s.interrupted);
    assert!(s.total.samples > 0);
    assert_eq!(s.total.errors, s.total.samples);
}
