//! Plans, options and a bounded run.

use std::sync::Arc;
use std::time::Duration;

use throng_core::step::{Client, ClientOptions};
use throng_core::steps::Steps;
use throng_core::{
    Arrivals, ClosedLoop, ErrorClass, LabelStats, LoadModel, OpenLoop, Rate, RunPlan, Snapshot,
    Status, Users,
};
use throng_ws::{WsClient, WsOptions, WsStep};

/// Short timeouts: a fault shows in well under a second.
pub(crate) fn options() -> ClientOptions {
    ClientOptions {
        timeout: Duration::from_millis(800),
        connect_timeout: Duration::from_millis(500),
        ..ClientOptions::default()
    }
}

/// `users` users, `iterations` each, on two worker threads.
pub(crate) fn closed(users: u32, iterations: u64) -> RunPlan {
    let mut p = RunPlan::new(
        "ws",
        LoadModel::Closed(ClosedLoop::iterations(users, iterations)),
    );
    p.threads = 2;
    p
}

/// `users` users for `duration`.
pub(crate) fn closed_for(users: u32, duration: Duration) -> RunPlan {
    let mut p = RunPlan::new(
        "ws",
        LoadModel::Closed(ClosedLoop {
            users: Users::Fixed(users),
            requests: None,
            iterations: None,
            duration: Some(duration),
            think_time: None,
        }),
    );
    p.threads = 2;
    p
}

/// `requests` arrivals at `rate` a second, evenly, at most `in_flight` at once.
pub(crate) fn open(rate: f64, requests: u64, in_flight: u32) -> RunPlan {
    let mut p = RunPlan::new(
        "ws",
        LoadModel::Open(OpenLoop {
            rate: Rate::Constant(rate),
            arrivals: Arrivals::Even,
            max_in_flight: in_flight,
            queue: 1000,
            requests: Some(requests),
            duration: None,
        }),
    );
    p.threads = 2;
    p
}

/// One step against `url`.
pub(crate) fn steps(url: &str, opts: &ClientOptions, step: WsStep) -> Steps<WsClient> {
    let client = WsClient::new(url, opts).unwrap();
    Steps::new(client, step, "step").unwrap()
}

/// Runs the plan; a run that does not end within 30 s is a hang, and fails.
pub(crate) async fn run<C: Client>(plan: RunPlan, steps: Steps<C>) -> Arc<Snapshot> {
    tokio::time::timeout(
        Duration::from_secs(30),
        throng_engine::run(plan, Arc::new(steps)),
    )
    .await
    .expect("the run hung")
    .expect("the run starts")
}

/// The step's row.
pub(crate) fn row(s: &Snapshot) -> &LabelStats {
    s.labels
        .iter()
        .find(|l| l.label == "step")
        .expect("a step row")
}

/// The step's parts row.
pub(crate) fn parts(s: &Snapshot) -> &LabelStats {
    s.labels
        .iter()
        .find(|l| l.parts)
        .unwrap_or_else(|| panic!("a parts row among {:?}", labels(s)))
}

fn labels(s: &Snapshot) -> Vec<&str> {
    s.labels.iter().map(|l| l.label.as_str()).collect()
}

/// Errors of `class` in a row.
pub(crate) fn class(row: &LabelStats, class: ErrorClass) -> u64 {
    row.classes[class.index()]
}

/// The errors of a row by class, for messages.
pub(crate) fn errors(s: &Snapshot) -> String {
    format!("{:?}", s.errors)
}

/// How many answers had `status`.
pub(crate) fn status_count(s: &Snapshot, status: Status) -> u64 {
    s.statuses
        .iter()
        .find(|(st, _)| *st == status)
        .map_or(0, |(_, n)| *n)
}

/// Options with the WebSocket options `own`.
pub(crate) fn with(own: WsOptions) -> ClientOptions {
    options().with(own)
}

/// Waits (at most 2 s) for the server to have seen `n` connections end, however they ended.
pub(crate) async fn ended(server: &throng_ws::serve::RunningWs, n: u64) {
    let until = tokio::time::Instant::now() + Duration::from_secs(2);
    while server.closed_normally() + server.closed_abnormally() < n
        && tokio::time::Instant::now() < until
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Checks a run whose `n` users were in a think time when it stopped at `duration`: each
/// closed its connection with 1000 (none abnormally), and the run was not stretched past the
/// close's bound (100 ms; 100 more for a busy machine), nor to the think time's end or the
/// grace (2 s).
pub(crate) async fn thinkers_closed(
    server: &throng_ws::serve::RunningWs,
    n: u64,
    s: &Snapshot,
    duration: Duration,
) {
    ended(server, n).await;
    assert_eq!(
        (server.closed_normally(), server.closed_abnormally()),
        (n, 0),
        "of {n} connections"
    );
    assert!(s.elapsed >= duration, "{:?}", s.elapsed);
    assert!(
        s.elapsed < duration + Duration::from_millis(200),
        "{:?}",
        s.elapsed
    );
}
