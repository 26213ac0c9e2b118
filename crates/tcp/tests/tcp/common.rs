//! Plans, runs and counts shared by the tests.

use std::sync::Arc;
use std::time::Duration;

use throng_core::step::{ClientOptions, Text};
use throng_core::steps::Steps;
use throng_core::{
    ClosedLoop, Driver, ErrorClass, LoadModel, OpenLoop, Rate, RunPlan, Snapshot, Status,
};
use throng_tcp::{Payload, TcpClient, TcpOptions, TcpStep};

/// `users` users, `iterations` each.
pub(crate) fn closed(users: u32, iterations: u64) -> RunPlan {
    let mut plan = RunPlan::new(
        "tcp",
        LoadModel::Closed(ClosedLoop::iterations(users, iterations)),
    );
    plan.threads = 2;
    plan.grace = Duration::from_secs(1);
    plan
}

/// `users` users for `duration`.
pub(crate) fn closed_for(users: u32, duration: Duration) -> RunPlan {
    let mut plan = closed(users, 1);
    if let LoadModel::Closed(c) = &mut plan.model {
        c.iterations = None;
        c.duration = Some(duration);
    }
    plan
}

/// `rate` arrivals a second, `requests` of them, or for `duration`.
pub(crate) fn open(rate: f64, requests: Option<u64>, duration: Option<Duration>) -> RunPlan {
    let mut plan = RunPlan::new(
        "tcp",
        LoadModel::Open(OpenLoop {
            rate: Rate::Constant(rate),
            arrivals: throng_core::Arrivals::Even,
            max_in_flight: 20,
            queue: 1_000,
            requests,
            duration,
        }),
    );
    plan.threads = 2;
    plan.grace = Duration::from_secs(1);
    plan
}

/// The client options of a test: short timeouts, so a hung peer costs little.
pub(crate) fn client_options(timeout: Duration, tcp: TcpOptions) -> ClientOptions {
    let mut o = ClientOptions::default().with(tcp);
    o.timeout = timeout;
    o.connect_timeout = Duration::from_secs(2);
    o
}

/// One step sending `send`, expecting `expect` back when given.
pub(crate) fn steps(
    url: &str,
    send: &[u8],
    expect: Option<&str>,
    options: &ClientOptions,
) -> Steps<TcpClient> {
    let tcp = options.of::<TcpOptions>().cloned().unwrap_or_default();
    let client = TcpClient::new(url, tcp, options).unwrap();
    let mut step = TcpStep::new(Payload::Bytes(send.to_vec().into()));
    if let Some(e) = expect {
        step = step.expecting(Text::Static(e.into()));
    }
    Steps::new(client, step, "send").unwrap()
}

/// Runs `driver` under `plan`; a run that has not ended in 30 s fails the test.
pub(crate) async fn run<D: Driver>(plan: RunPlan, driver: D) -> Arc<Snapshot> {
    let run = throng_engine::run(plan, Arc::new(driver));
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the run did not end within 30 s")
        .expect("the run starts")
}

/// Requests of the run that failed with `class`.
pub(crate) fn class(s: &Snapshot, class: ErrorClass) -> u64 {
    s.total.classes[class.index()]
}

/// Requests of the run answered with `status`.
pub(crate) fn status(s: &Snapshot, status: Status) -> u64 {
    s.statuses
        .iter()
        .find(|(st, _)| *st == status)
        .map_or(0, |(_, n)| *n)
}

/// Every class with a count, for messages.
pub(crate) fn errors(s: &Snapshot) -> String {
    format!("{:?}", s.errors)
}

/// A port on 127.0.0.1 that nothing listens on: bound, then let go.
pub(crate) fn refused_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
