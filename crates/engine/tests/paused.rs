//! The engine on tokio's paused clock (`Extras::on_caller`): closed loops, ramps, think time,
//! grace and the open loop's schedule, with timings that are exact rather than "about right on
//! a quiet machine". The driver's requests take a known time on that clock (a `sleep`), which no
//! real server can do: real servers are the workspace tests' business; here the engine's
//! arithmetic is.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::sync::Arc;
use std::time::Duration;

use throng_core::{
    stages, Arrivals, ClosedLoop, Driver, ErrorClass, LoadModel, OpenLoop, Outcome, Percentiles,
    Rate, RunPlan, Snapshot, StepInfo, Users,
};
use throng_engine::{start_with, Extras};

mod common;
use common::{iterations, on_caller, within};

/// Every request takes `took` on the run's clock, and every connect `connect`.
struct Sleeper {
    took: Duration,
    connect: Duration,
    /// Requests sent, recorded or not.
    sent: Arc<std::sync::atomic::AtomicU64>,
}

impl Sleeper {
    fn new(took: Duration) -> Self {
        Sleeper {
            took,
            connect: Duration::ZERO,
            sent: Arc::default(),
        }
    }
}

impl Driver for Sleeper {
    type Worker = ();
    type Session = ();

    fn steps(&self) -> Vec<StepInfo> {
        vec![StepInfo {
            label: "sleep".into(),
        }]
    }

    fn worker(&self) {}

    fn session(&self, _w: &(), _user: u64) {}

    async fn connect(&self, _s: &mut (), _step: usize) -> Result<(), Outcome> {
        if !self.connect.is_zero() {
            tokio::time::sleep(self.connect).await;
        }
        Ok(())
    }

    async fn execute(&self, _s: &mut (), _step: usize) -> Outcome {
        self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tokio::time::sleep(self.took).await;
        Outcome::default()
    }
}

/// Runs `plan` on the caller's (paused) clock and returns the final snapshot.
async fn run(plan: RunPlan, took: Duration) -> Arc<Snapshot> {
    run_with(plan, Sleeper::new(took)).await
}

/// [`run`] with a driver of its own.
async fn run_with(plan: RunPlan, driver: Sleeper) -> Arc<Snapshot> {
    on_caller(plan, Arc::new(driver), Extras::default()).await
}

fn closed(users: Users, duration: Option<Duration>, think: Option<Duration>) -> RunPlan {
    RunPlan::new(
        "paused",
        LoadModel::Closed(ClosedLoop {
            users,
            requests: None,
            iterations: None,
            duration,
            think_time: think,
        }),
    )
}

/// Arrivals 25 µs apart (40,000/s) fall within the open loop's early-start window of the last
/// wake-up, so they start early, in batches; counted from when they were handed out, no
/// latency is below the 1 ms every request takes (counted from their intended starts, a request
/// started 25 µs early would show 975 µs).
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn arrivals_started_early_in_one_wake_up_never_show_less_than_their_service() {
    let plan = RunPlan::new(
        "paused",
        LoadModel::Open(OpenLoop {
            rate: Rate::Constant(40_000.0),
            arrivals: Arrivals::Even,
            max_in_flight: 100,
            queue: 100,
            requests: Some(400),
            duration: None,
        }),
    );
    let s = run(plan, Duration::from_millis(1)).await;
    assert_eq!(s.total.samples, 400);
    let (latency, service) = (
        Percentiles::of(&s.total.latency),
        Percentiles::of(&s.total.service),
    );
    assert!(service.min >= 999, "{service:?}");
    assert!(latency.min >= service.min, "{latency:?} {service:?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_closed_loop_sends_back_to_back_for_its_duration() {
    // 4 users, 10 ms a request, 1 s: each user sends 100 (the one in flight at the end may
    // finish within the grace period), and latency is 10 ms to the HDR's precision.
    let s = run(
        closed(Users::Fixed(4), Some(Duration::from_secs(1)), None),
        Duration::from_millis(10),
    )
    .await;
    let t = &s.total;
    assert!((400..=404).contains(&t.samples), "{}", t.samples);
    assert_eq!(t.errors, 0);
    let p = Percentiles::of(&t.latency);
    assert!(within(p.p50 as f64, 10_000.0, 0.002), "{p:?}");
    assert!(within(p.max as f64, 10_000.0, 0.002), "{p:?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn think_time_paces_each_user() {
    // 2 users, 10 ms a request then 90 ms of think time: one request per 100 ms per user.
    let s = run(
        closed(
            Users::Fixed(2),
            Some(Duration::from_secs(2)),
            Some(Duration::from_millis(90)),
        ),
        Duration::from_millis(10),
    )
    .await;
    assert!((40..=42).contains(&s.total.samples), "{}", s.total.samples);
    // Think time is outside the request's timing.
    assert!(within(
        Percentiles::of(&s.total.latency).max as f64,
        10_000.0,
        0.002
    ));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn users_follow_the_stages() {
    // 0 → 10 users over 1 s, 10 for 1 s, → 0 over 1 s; each request 100 ms, back to back.
    // The users' integral is 0.5·10 + 10 + 0.5·10 = 20 user-seconds: about 200 requests. The
    // controller looks every 100 ms, so starts and retirements lag the curve by up to that.
    let plan = closed(
        Users::Stages(stages::parse("1s:10,1s:10,1s:0").unwrap()),
        None,
        None,
    );
    let s = run(plan, Duration::from_millis(100)).await;
    let n = s.total.samples;
    assert!((180..=220).contains(&n), "{n}");
    assert_eq!(s.total.errors, 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn staged_users_each_run_their_iterations_however_far_apart_they_start() {
    // The README's `--user-stages 10s:100 -i 10`: users start 100 ms apart and each finishes
    // its 10 iterations (1 ms each) before the next starts; every one of the 100 starts, and
    // they send exactly 1,000 (they sent 20: the first users' end looked like the run's).
    for (stages, iterations, want) in [("10s:100", 10, 1_000), ("1s:10", 5, 50)] {
        let mut plan = closed(Users::Stages(stages::parse(stages).unwrap()), None, None);
        if let LoadModel::Closed(c) = &mut plan.model {
            c.iterations = Some(iterations);
        }
        let s = run(plan, Duration::from_millis(1)).await;
        assert_eq!((s.total.samples, s.total.errors), (want, 0), "{stages}");
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn what_outlives_the_grace_is_aborted_at_its_age() {
    // One user, a request that takes 10 s, a run of 1 s with 2 s of grace: the request is cut
    // off at 3 s, counted as a sample, an `aborted` failure, and in latency at 3 s.
    let mut plan = closed(Users::Fixed(1), Some(Duration::from_secs(1)), None);
    plan.grace = Duration::from_secs(2);
    let s = run(plan, Duration::from_secs(10)).await;
    let t = &s.total;
    assert_eq!((t.samples, t.errors, t.aborted), (1, 1, 1));
    assert_eq!(
        s.errors
            .iter()
            .find(|e| e.class == ErrorClass::Aborted)
            .map(|e| e.count),
        Some(1)
    );
    let p = Percentiles::of(&t.latency);
    assert!(within(p.max as f64, 3_000_000.0, 0.002), "{p:?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_open_loop_starts_every_arrival_on_schedule() {
    // 200 arrivals/s for 2 s, 5 ms each: exactly 400, none late by more than the timer's
    // millisecond, and latency equal to service time (no queueing at this load).
    let plan = RunPlan::new(
        "paused",
        LoadModel::Open(OpenLoop {
            rate: Rate::Constant(200.0),
            arrivals: Arrivals::Even,
            max_in_flight: 10,
            queue: 10,
            requests: None,
            duration: Some(Duration::from_secs(2)),
        }),
    );
    let s = run(plan, Duration::from_millis(5)).await;
    assert_eq!(s.total.samples, 400);
    let lag = s.lag.as_ref().unwrap();
    assert_eq!((lag.scheduled, lag.started(), lag.dropped), (400, 400, 0));
    let p = Percentiles::of(&s.total.latency);
    assert!(p.max <= 6_010, "{p:?}");
    assert!(p.min >= 4_990, "{p:?}");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn dropped_arrivals_are_failures_of_their_own_class() {
    // 100 arrivals/s for 1 s, 100 ms each, 2 in flight and 2 queued: the slots start about 22,
    // the rest are dropped, and every arrival is one sample.
    let plan = RunPlan::new(
        "paused",
        LoadModel::Open(OpenLoop {
            rate: Rate::Constant(100.0),
            arrivals: Arrivals::Even,
            max_in_flight: 2,
            queue: 2,
            requests: None,
            duration: Some(Duration::from_secs(1)),
        }),
    );
    let s = run(plan, Duration::from_millis(100)).await;
    let lag = s.lag.as_ref().unwrap();
    let t = &s.total;
    assert_eq!(lag.scheduled, 100);
    assert!(lag.dropped >= 70, "{}", lag.dropped);
    assert_eq!(t.dropped, lag.dropped);
    assert_eq!(t.samples, lag.scheduled);
    assert_eq!((t.errors, t.aborted), (lag.dropped, 0));
    let class = s.errors.iter().find(|e| e.class == ErrorClass::Dropped);
    assert_eq!(class.map(|e| e.count), Some(lag.dropped), "{:?}", s.errors);
    assert_eq!(t.completed(), lag.started());
    assert!(t.error_rate() >= 0.7, "{}", t.error_rate());
    // Never sent, so timed in no histogram, nor among the requests of each second.
    let timed = Percentiles::of(&t.latency).count + Percentiles::of(&t.failed).count;
    assert_eq!(timed + t.dropped, t.samples);
    let per_second: u64 = s.series.iter().map(|p| p.requests).sum();
    assert_eq!(per_second, lag.started());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_arrival_cut_off_in_its_connect_was_started() {
    // 20 arrivals/s for 1 s, 5 slots, 5 queued, 0.5 s of grace: the slots' arrivals are cut off
    // while they connect, and count as started (they counted nowhere, and the arrivals did not
    // add up: 41 of 60 in gRPC's fault matrix), the queued as unstarted, the rest as dropped.
    // Every one is a sample: 10 aborted (started or queued), 10 dropped.
    let mut plan = RunPlan::new(
        "paused",
        LoadModel::Open(OpenLoop {
            rate: Rate::Constant(20.0),
            arrivals: Arrivals::Even,
            max_in_flight: 5,
            queue: 5,
            requests: None,
            duration: Some(Duration::from_secs(1)),
        }),
    );
    plan.grace = Duration::from_millis(500);
    // Every connect takes 10 s: a server that accepts and never answers, within a long connect
    // timeout.
    let slow = Sleeper {
        took: Duration::ZERO,
        connect: Duration::from_secs(10),
        sent: Arc::default(),
    };
    let s = run_with(plan, slow).await;
    let lag = s.lag.as_ref().unwrap();
    assert_eq!(lag.scheduled, 20);
    // The warm slot connects before it takes an arrival: 4 slots take one each, and 6 wait.
    assert_eq!(
        (lag.started(), lag.unstarted, lag.dropped),
        (4, 6, 10),
        "{lag:?}"
    );
    assert_eq!(s.total.samples, 20);
    assert_eq!(s.total.aborted, 10);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn changes_made_while_the_run_goes_are_in_the_final_snapshot() {
    // A library caller's control (the dashboard's keys do the same): two more users at 0.5 s.
    let set = tokio::task::LocalSet::new();
    let s = set
        .run_until(async {
            let extras = Extras {
                on_caller: true,
                ..Extras::default()
            };
            let plan = closed(Users::Fixed(1), Some(Duration::from_secs(1)), None);
            let took = Duration::from_millis(10);
            let handle = start_with(plan, Arc::new(Sleeper::new(took)), extras)
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(520)).await;
            handle.control().add_users(2);
            handle.wait().await
        })
        .await;
    assert_eq!(s.changes.len(), 1, "{:?}", s.changes);
    assert!(s.changes[0].what.starts_with("users +2"), "{:?}", s.changes);
    assert!(within(s.changes[0].t, 0.5, 0.01), "{:?}", s.changes);
    // One user for the first half, three for the second: about 50 + 150 requests.
    assert!(
        (190..=210).contains(&s.total.samples),
        "{}",
        s.total.samples
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn every_request_is_kept_as_a_sample_when_asked_and_a_full_sink_counts_the_rest_lost() {
    // One user, 10 ms a request, 20 requests: samples due every 10 ms, each 10 ms long.
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let mut plan = closed(Users::Fixed(1), None, None);
    if let LoadModel::Closed(c) = &mut plan.model {
        c.requests = Some(20);
    }
    let extras = Extras {
        samples: Some(tx),
        ..Extras::default()
    };
    let driver = Arc::new(Sleeper::new(Duration::from_millis(10)));
    let s = on_caller(plan, driver, extras).await;
    let mut samples = Vec::new();
    while let Ok(batch) = rx.try_recv() {
        samples.extend(batch);
    }
    assert_eq!(s.total.samples, 20);
    assert_eq!(samples.len(), 20, "one sample per request");
    assert_eq!(s.lost_samples, 0);
    for (k, x) in samples.iter().enumerate() {
        assert_eq!(x.latency_us, 10_000, "{x:?}");
        assert_eq!(x.service_us, 10_000, "{x:?}");
        assert!(x.error.is_none() && x.message.is_none());
        if k > 0 {
            assert_eq!(x.due_us - samples[k - 1].due_us, 10_000, "{samples:?}");
        }
    }

    // A sink that takes nothing: every sample is counted lost, the numbers are whole.
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    drop(rx);
    let plan = closed(Users::Fixed(2), Some(Duration::from_millis(500)), None);
    let extras = Extras {
        samples: Some(tx),
        ..Extras::default()
    };
    let driver = Arc::new(Sleeper::new(Duration::from_millis(10)));
    let s = on_caller(plan, driver, extras).await;
    assert_eq!(s.total.samples, 100);
    assert_eq!(s.lost_samples, 100);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn shards_together_run_exactly_the_plan() {
    use throng_core::Shard;
    // Closed loop: 7 users, 1000 requests, as 3 shards: users 3, 2, 2, each user's share of
    // the requests 142 or 143, so the shards' 428, 286, 286; together exactly the plan.
    let mut total = 0;
    for (index, want) in [428, 286, 286].into_iter().enumerate() {
        let mut plan = closed(Users::Fixed(7), None, None);
        if let LoadModel::Closed(c) = &mut plan.model {
            c.requests = Some(1000);
        }
        plan.shard = Shard {
            index: index as u32,
            count: 3,
        };
        let s = run(plan, Duration::from_millis(10)).await;
        assert_eq!(s.total.samples, want);
        total += s.total.samples;
    }
    assert_eq!(total, 1000);
    // 2 users, 10 requests (or 5 iterations each), as 3 shards: the third has no user, so no
    // request, and ends at once (it used to wait forever for a share of `-n` it had no user to
    // send, and the others sent 7 of the 10).
    for (requests, iterations) in [(Some(10), None), (None, Some(5))] {
        let mut sent = Vec::new();
        for index in 0..3 {
            let mut plan = closed(Users::Fixed(2), None, None);
            if let LoadModel::Closed(c) = &mut plan.model {
                (c.requests, c.iterations) = (requests, iterations);
            }
            plan.shard = Shard { index, count: 3 };
            sent.push(run(plan, Duration::from_millis(10)).await.total.samples);
        }
        assert_eq!(sent, [5, 5, 0], "{requests:?} {iterations:?}");
    }
    // Open loop: 300/s for 2 s as 4 shards: every arrival of the whole schedule, once.
    let mut scheduled = 0;
    for index in 0..4 {
        let mut plan = RunPlan::new(
            "paused",
            LoadModel::Open(OpenLoop {
                rate: Rate::Constant(300.0),
                arrivals: Arrivals::Even,
                max_in_flight: 20,
                queue: 20,
                requests: None,
                duration: Some(Duration::from_secs(2)),
            }),
        );
        plan.shard = Shard { index, count: 4 };
        let s = run(plan, Duration::from_millis(5)).await;
        let lag = s.lag.as_ref().unwrap();
        assert_eq!((lag.started(), lag.dropped), (lag.scheduled, 0));
        assert_eq!(s.total.samples, lag.scheduled);
        scheduled += lag.scheduled;
    }
    assert_eq!(scheduled, 600);
}

/// Two steps: `stream` answers three parts (after 5 ms, then 20 ms apart), `plain` one reply
/// after 10 ms; a group spans both.
struct Streamer;

impl Driver for Streamer {
    type Worker = ();
    type Session = ();

    fn steps(&self) -> Vec<StepInfo> {
        ["stream", "plain"]
            .map(|l| StepInfo { label: l.into() })
            .to_vec()
    }

    fn parts(&self) -> Vec<throng_core::PartsInfo> {
        vec![throng_core::PartsInfo {
            label: "stream (messages)".into(),
            step: 0,
        }]
    }

    fn groups(&self) -> Vec<throng_core::GroupInfo> {
        vec![throng_core::GroupInfo {
            label: "flow".into(),
            first: 0,
            last: 1,
        }]
    }

    fn worker(&self) {}

    fn session(&self, _w: &(), _user: u64) {}

    async fn execute(&self, _s: &mut (), step: usize) -> Outcome {
        if step == 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            return Outcome::default();
        }
        let mut last = tokio::time::Instant::now();
        let mut parts = Vec::new();
        for gap in [5, 20, 20] {
            tokio::time::sleep(Duration::from_millis(gap)).await;
            let now = tokio::time::Instant::now();
            parts.push(now - last);
            last = now;
        }
        Outcome {
            parts,
            ..Outcome::default()
        }
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_reply_in_parts_fills_its_own_row_and_not_the_total() {
    // 2 users, 3 iterations each: 6 passes of the flow, so 6 streams of 3 parts each.
    let plan = iterations(2, 3);
    let s = on_caller(plan, Arc::new(Streamer), Extras::default()).await;
    let rows: Vec<(&str, u64, bool, bool)> = s
        .labels
        .iter()
        .map(|l| (l.label.as_str(), l.samples, l.group, l.parts))
        .collect();
    assert_eq!(
        rows,
        [
            ("stream", 6, false, false),
            ("plain", 6, false, false),
            ("stream (messages)", 18, false, true),
            ("flow", 6, true, false),
        ]
    );
    // The parts are not requests.
    assert_eq!((s.total.samples, s.total.errors), (12, 0));
    let p = Percentiles::of(&s.labels[2].latency);
    assert_eq!(p.count, 18);
    assert!(within(p.min as f64, 5_000.0, 0.002), "{p:?}");
    assert!(within(p.p50 as f64, 20_000.0, 0.002), "{p:?}");
    assert!(within(p.max as f64, 20_000.0, 0.002), "{p:?}");
    // The whole call is its own row's: 45 ms.
    let call = Percentiles::of(&s.labels[0].latency);
    assert!(within(call.p50 as f64, 45_000.0, 0.002), "{call:?}");
    // A flow is 55 ms: the group row is still the group's.
    let flow = Percentiles::of(&s.labels[3].latency);
    assert!(within(flow.p50 as f64, 55_000.0, 0.002), "{flow:?}");
}

/// A warm-up runs the load and records none of it: 1 user at 10 ms a request, 1 s of warm-up,
/// then 2 s measured. The driver is called for all three seconds, the result holds the requests
/// sent in the last two (`tests/warmup.rs` checks the boundary over many plans), and the run's
/// seconds and series are the measurement's.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_warm_up_runs_the_load_and_records_none_of_it() {
    let mut plan = closed(Users::Fixed(1), Some(Duration::from_secs(2)), None);
    plan.warmup = Duration::from_secs(1);
    let driver = Sleeper::new(Duration::from_millis(10));
    let sent = driver.sent.clone();
    let s = run_with(plan, driver).await;
    let sent = sent.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        (200..=201).contains(&s.total.samples),
        "{}",
        s.total.samples
    );
    assert!((300..=302).contains(&sent), "{sent}");
    // The measurement's 2 s and the end's drain (from the start, with the warm-up, 3 s).
    let elapsed = s.elapsed.as_secs_f64();
    assert!((2.0..2.2).contains(&elapsed), "{elapsed}");
    // Two measured seconds (and the drain of the last request): the warm-up's is not among them.
    assert!((2..=3).contains(&s.series.len()), "{:?}", s.series);
    assert!(s.series[..2]
        .iter()
        .all(|p| (99..=101).contains(&p.requests)));
    assert!(within(s.series[0].t, 1.0, 0.01), "{:?}", s.series[0]);
}

/// Each hold of the stages gets the requests of its own seconds: 0 to 2 users over 1 s, hold 2
/// for 2 s, to 4 over 1 s, hold 4 for 2 s, at 10 ms a request.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn each_hold_of_the_stages_counts_its_own_seconds() {
    let plan = closed(
        Users::Stages(stages::parse("1s:2,2s:2,1s:4,2s:4").unwrap()),
        None,
        None,
    );
    let s = run(plan, Duration::from_millis(10)).await;
    let holds: Vec<(f64, f64, f64, u64)> = s
        .holds
        .iter()
        .map(|h| (h.level, h.from, h.to, h.total.samples))
        .collect();
    assert_eq!(holds.len(), 2, "{holds:?}");
    assert_eq!((holds[0].0, holds[0].1, holds[0].2), (2.0, 1.0, 3.0));
    assert_eq!((holds[1].0, holds[1].1, holds[1].2), (4.0, 4.0, 6.0));
    // 2 users for 2 s at 10 ms: 400; 4 users: 800 (a request at each second's edge either way).
    assert!((396..=404).contains(&holds[0].3), "{holds:?}");
    assert!((792..=808).contains(&holds[1].3), "{holds:?}");
}
