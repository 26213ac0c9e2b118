//! The driver contract as the engine keeps it: setup and teardown once, state per worker, a
//! session per user, connect before the first step, end of iteration with its failure. The
//! driver here is a recorder of calls (no protocol: the contract is what is under test; real
//! protocols are tested against real servers in the workspace's tests).
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use throng_core::{
    Driver, ErrorClass, Outcome, RunPlan, SetupError, StatusClass, StatusSpace, StepInfo,
};

mod common;
use common::errors_of;

/// Two protocols' spaces of status codes, each with an OK of 0.
static RPC: StatusSpace = StatusSpace {
    name: "rpc",
    write: |c, f| write!(f, "rpc {c}"),
    class: |c| match c {
        0 => StatusClass::Success,
        _ => StatusClass::Failure,
    },
};
static DB: StatusSpace = StatusSpace {
    name: "db",
    write: |c, f| write!(f, "db {c}"),
    class: |c| match c {
        0 => StatusClass::Success,
        _ => StatusClass::Failure,
    },
};

#[derive(Default)]
struct Calls {
    setup: AtomicU64,
    teardown: AtomicU64,
    workers: AtomicU64,
    sessions: AtomicU64,
    connects: AtomicU64,
    executes: AtomicU64,
    ends: Mutex<Vec<Option<ErrorClass>>>,
}

struct Recording {
    calls: Arc<Calls>,
    fail_setup: bool,
    /// Connects of user 0 fail.
    /// The step whose connect user 0 is refused at (a target of its own that refuses).
    refuse_user0: Option<usize>,
}

struct Session {
    user: u64,
    iteration: Cell<u64>,
}

impl Driver for Recording {
    type Worker = u64;
    type Session = Session;

    fn steps(&self) -> Vec<StepInfo> {
        vec![
            StepInfo { label: "a".into() },
            StepInfo { label: "b".into() },
        ]
    }

    async fn setup(&self) -> Result<(), SetupError> {
        self.calls.setup.fetch_add(1, Ordering::Relaxed);
        if self.fail_setup {
            return Err(SetupError("the tables cannot be made".into()));
        }
        Ok(())
    }

    async fn teardown(&self) {
        self.calls.teardown.fetch_add(1, Ordering::Relaxed);
    }

    fn worker(&self) -> u64 {
        self.calls.workers.fetch_add(1, Ordering::Relaxed)
    }

    fn session(&self, _worker: &u64, user: u64) -> Session {
        self.calls.sessions.fetch_add(1, Ordering::Relaxed);
        Session {
            user,
            iteration: Cell::new(0),
        }
    }

    async fn connect(&self, s: &mut Session, step: usize) -> Result<(), Outcome> {
        self.calls.connects.fetch_add(1, Ordering::Relaxed);
        if self.refuse_user0 == Some(step) && s.user == 0 {
            return Err(Outcome::failed(ErrorClass::Connect, "refused"));
        }
        Ok(())
    }

    async fn execute(&self, s: &mut Session, step: usize) -> Outcome {
        self.calls.executes.fetch_add(1, Ordering::Relaxed);
        tokio::task::yield_now().await;
        // Step 0 answers an RPC's OK (0), step 1 a database's after three statements; the second
        // step of every other iteration fails.
        if step == 0 {
            return Outcome {
                status: RPC.status(0),
                ..Outcome::default()
            };
        }
        let mut o = if s.iteration.get() % 2 == 1 {
            Outcome::failed(ErrorClass::Check, "odd")
        } else {
            Outcome::default()
        };
        o.status = DB.status(0);
        o.operations = 3;
        o
    }

    async fn end_iteration(&self, s: &mut Session, failed: Option<ErrorClass>) {
        s.iteration.set(s.iteration.get() + 1);
        self.calls.ends.lock().unwrap().push(failed);
    }
}

fn plan(users: u32, iterations: u64) -> RunPlan {
    RunPlan {
        threads: 2,
        ..common::iterations(users, iterations)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_keeps_the_contract() {
    let calls = Arc::new(Calls::default());
    let driver = Arc::new(Recording {
        calls: calls.clone(),
        fail_setup: false,
        refuse_user0: None,
    });
    let s = throng_engine::run(plan(3, 4), driver).await.unwrap();
    let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
    assert_eq!(n(&calls.setup), 1);
    assert_eq!(n(&calls.teardown), 1);
    assert_eq!(n(&calls.workers), 2, "one state per worker thread");
    assert_eq!(n(&calls.sessions), 3, "one session per user");
    assert_eq!(
        n(&calls.connects),
        6,
        "per user, before each step of its first iteration"
    );
    assert_eq!(n(&calls.executes), 24);
    let ends = calls.ends.lock().unwrap().clone();
    assert_eq!(ends.len(), 12, "after every iteration");
    assert_eq!(
        ends.iter()
            .filter(|e| **e == Some(ErrorClass::Check))
            .count(),
        6,
        "with the failure of the iterations that failed"
    );
    assert_eq!(s.total.samples, 24);
    assert_eq!(s.total.errors, 6);
    // Statuses in their protocol's terms: an OK of 0 is counted, not taken for "none".
    assert_eq!(s.statuses, vec![(DB.status(0), 12), (RPC.status(0), 12)]);
    // Operations beside requests: three statements a transaction.
    assert_eq!(s.labels[0].operations, 12);
    assert_eq!(s.labels[1].operations, 36);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_setup_stops_the_run_before_any_load() {
    let calls = Arc::new(Calls::default());
    let driver = Arc::new(Recording {
        calls: calls.clone(),
        fail_setup: true,
        refuse_user0: None,
    });
    let e = throng_engine::run(plan(2, 1), driver).await.unwrap_err();
    assert!(e.to_string().contains("the tables cannot be made"), "{e}");
    assert_eq!(calls.sessions.load(Ordering::Relaxed), 0);
    assert_eq!(calls.teardown.load(Ordering::Relaxed), 0);
}

/// A connect that fails is the first step's outcome: counted once, with its class, and the rest
/// of the iteration is skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_connect_is_the_first_steps_failure() {
    let calls = Arc::new(Calls::default());
    let driver = Arc::new(Recording {
        calls: calls.clone(),
        fail_setup: false,
        refuse_user0: Some(0),
    });
    let s = throng_engine::run(plan(2, 3), driver).await.unwrap();
    // User 0: 3 iterations, each a refused connect (tried again each time); user 1: 3
    // iterations of 2 steps, one connect.
    assert_eq!(s.labels[0].samples, 6);
    assert_eq!(s.labels[1].samples, 3);
    assert_eq!(errors_of(&s, ErrorClass::Connect), 3);
    assert_eq!(calls.executes.load(Ordering::Relaxed), 6);
    // User 0: once an iteration; user 1: before each step of its first.
    assert_eq!(calls.connects.load(Ordering::Relaxed), 5);
}

/// A connection belongs to the step that needs it, and so does its failure: a flow whose second
/// step's target refuses charges the refusals to the second step, not the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_connect_belongs_to_the_step_that_needed_it() {
    let calls = Arc::new(Calls::default());
    let driver = Arc::new(Recording {
        calls: calls.clone(),
        fail_setup: false,
        refuse_user0: Some(1),
    });
    let s = throng_engine::run(plan(2, 3), driver).await.unwrap();
    assert_eq!(s.labels[0].samples, 6);
    assert_eq!(
        s.labels[0].errors, 0,
        "the first step's target took every connect"
    );
    assert_eq!(s.labels[1].samples, 6);
    // User 0's second step, refused in each iteration (tried again each time), and user 1's
    // second step failing every other iteration as the driver's does.
    assert_eq!(errors_of(&s, ErrorClass::Connect), 3);
    assert_eq!(s.labels[1].errors, 3 + 1);
    // User 0 runs only its first step; user 1 both, three times.
    assert_eq!(calls.executes.load(Ordering::Relaxed), 3 + 6);
}
