//! A nats-server and a Go responder per test, plans, options and a bounded run.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use throng_core::step::{Client, ClientOptions};
use throng_core::steps::Steps;
use throng_core::{
    Arrivals, ClosedLoop, ErrorClass, LabelStats, LoadModel, OpenLoop, Rate, RunPlan, Snapshot,
    Status, Users,
};
use throng_nats::{NatsClient, NatsOptions, NatsStep};

pub(crate) use throng_testbed::brokers::NatsServer;

/// A free port on the loopback (bound and let go).
pub(crate) fn free_port() -> u16 {
    throng_testbed::brokers::free_port().unwrap()
}

/// The server's `/varz` counters now, by name.
pub(crate) async fn varz(server: &NatsServer) -> Vec<(String, u64)> {
    use throng_core::watch::Server as _;
    let mut v =
        throng_nats::monitor::Varz::new(&server.monitor_url(), Duration::from_secs(2)).unwrap();
    let values = v.read().await.unwrap();
    throng_nats::monitor::figures()
        .into_iter()
        .map(|f| f.name)
        .zip(values)
        .collect()
}

/// One `/varz` counter now.
pub(crate) async fn counter(server: &NatsServer, name: &str) -> u64 {
    varz(server)
        .await
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap()
        .1
}

/// The Go responder, built once per test binary from `responder.go` with Debian's Go and
/// nats.go, offline.
fn responder_bin() -> &'static std::path::Path {
    static BIN: OnceLock<std::path::PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nats-responder");
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nats/responder.go");
        throng_testbed::brokers::go_build(&src, &out, "golang-github-nats-io-go-nats-dev").unwrap();
        out
    })
}

/// The Go responder on a subject, stopped (and its count read) by `stop`.
pub(crate) struct Responder(throng_testbed::brokers::Responder);

impl Responder {
    /// Starts one on `subject` of `server` with extra flags (`-delay 2s`), ready when it
    /// says so.
    pub(crate) fn start(server: &NatsServer, subject: &str, args: &[&str]) -> Responder {
        let url = format!("nats://127.0.0.1:{}", server.port);
        let mut all = vec!["-url", &url, "-subject", subject];
        all.extend(args);
        Responder(throng_testbed::brokers::Responder::start(responder_bin(), &all).unwrap())
    }

    /// Stops it: the requests it served.
    pub(crate) fn stop(self) -> u64 {
        self.0.stop().unwrap()
    }
}

/// Short timeouts: a fault shows in well under a second.
pub(crate) fn options() -> ClientOptions {
    ClientOptions {
        timeout: Duration::from_millis(500),
        connect_timeout: Duration::from_millis(500),
        ..ClientOptions::default()
    }
}

/// Options with NATS's own.
pub(crate) fn with(own: NatsOptions) -> ClientOptions {
    options().with(own)
}

fn plan(model: LoadModel) -> RunPlan {
    let mut p = RunPlan::new("nats", model);
    p.threads = 2;
    p
}

/// `users` users, `iterations` each, on two worker threads.
pub(crate) fn closed(users: u32, iterations: u64) -> RunPlan {
    plan(LoadModel::Closed(ClosedLoop::iterations(users, iterations)))
}

/// `users` users for `duration`.
pub(crate) fn closed_for(users: u32, duration: Duration) -> RunPlan {
    plan(LoadModel::Closed(ClosedLoop {
        users: Users::Fixed(users),
        requests: None,
        iterations: None,
        duration: Some(duration),
        think_time: None,
    }))
}

/// `requests` arrivals at `rate` a second, evenly, at most `in_flight` at once.
pub(crate) fn open(rate: f64, requests: u64, in_flight: u32) -> RunPlan {
    plan(LoadModel::Open(OpenLoop {
        rate: Rate::Constant(rate),
        arrivals: Arrivals::Even,
        max_in_flight: in_flight,
        queue: 1000,
        requests: Some(requests),
        duration: None,
    }))
}

/// One step against `url`.
pub(crate) fn steps(url: &str, opts: &ClientOptions, step: NatsStep) -> Steps<NatsClient> {
    let client = NatsClient::new(url, opts).unwrap();
    Steps::new(client, step, "step").unwrap()
}

/// Runs the plan; a run that does not end within 30 s is a hang, and fails.
pub(crate) async fn run<C: Client>(plan: RunPlan, steps: Arc<Steps<C>>) -> Arc<Snapshot> {
    tokio::time::timeout(Duration::from_secs(30), throng_engine::run(plan, steps))
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
    s.labels.iter().find(|l| l.parts).expect("a parts row")
}

/// Errors of `class` in a row.
pub(crate) fn class(row: &LabelStats, class: ErrorClass) -> u64 {
    row.classes[class.index()]
}

/// The errors of a run by class, for messages.
pub(crate) fn errors(s: &Snapshot) -> String {
    format!("{:?} {:?}", s.errors, s.labels.first().map(|l| &l.classes))
}

/// How many answers had `status`.
pub(crate) fn status_count(s: &Snapshot, status: Status) -> u64 {
    s.statuses
        .iter()
        .find(|(st, _)| *st == status)
        .map_or(0, |(_, n)| *n)
}

/// A count of the client's report.
pub(crate) fn count<C: Client>(steps: &Steps<C>, name: &str) -> u64 {
    steps
        .client()
        .report()
        .counts
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or_else(|| panic!("no count {name}"), |(_, v)| v)
}
