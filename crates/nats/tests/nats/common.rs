//! A nats-server and a Go responder per test, plans, options and a bounded run.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use throng_core::step::{Client, ClientOptions};
use throng_core::steps::Steps;
use throng_core::{
    Arrivals, ClosedLoop, ErrorClass, LabelStats, LoadModel, OpenLoop, Rate, RunPlan, Snapshot,
    Status, Users,
};
use throng_nats::{NatsClient, NatsOptions, NatsStep};

/// A free port on the loopback (bound and let go).
pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Debian's nats-server on free ports (clients and monitoring), stopped when dropped.
pub(crate) struct NatsServer {
    child: Option<Child>,
    pub(crate) port: u16,
    pub(crate) monitor: u16,
    /// JetStream's store, removed with the server.
    store: Option<std::path::PathBuf>,
}

impl NatsServer {
    /// Starts one and waits until both ports accept connections.
    pub(crate) fn start() -> NatsServer {
        Self::with_args(&[])
    }

    /// One with JetStream on, its store in a directory of its own.
    pub(crate) fn jetstream() -> NatsServer {
        let dir = std::env::temp_dir().join(format!(
            "throng-nats-js-{}-{}",
            std::process::id(),
            free_port()
        ));
        let mut server = Self::with_args(&["-js", "-sd", &dir.to_string_lossy()]);
        server.store = Some(dir);
        server
    }

    pub(crate) fn with_args(extra: &[&str]) -> NatsServer {
        let (port, monitor) = (free_port(), free_port());
        let bin = ["/usr/sbin/nats-server", "/usr/bin/nats-server"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect(
                "nats-server is not installed (apt-get install nats-server; scripts/test does)",
            );
        let child = Command::new(bin)
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .args(["-m", &monitor.to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        let server = NatsServer {
            child: Some(child),
            port,
            monitor,
            store: None,
        };
        for p in [port, monitor] {
            wait_for_port(p);
        }
        server
    }

    /// `nats://127.0.0.1:PORT/SUBJECT`.
    pub(crate) fn url(&self, subject: &str) -> String {
        format!("nats://127.0.0.1:{}/{subject}", self.port)
    }

    /// The monitoring endpoint.
    pub(crate) fn monitor_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.monitor)
    }

    /// The server's `/varz` counters now, by name.
    pub(crate) async fn varz(&self) -> Vec<(String, u64)> {
        use throng_core::watch::Server as _;
        let mut v =
            throng_nats::monitor::Varz::new(&self.monitor_url(), Duration::from_secs(2)).unwrap();
        let values = v.read().await.unwrap();
        throng_nats::monitor::figures()
            .into_iter()
            .map(|f| f.name)
            .zip(values)
            .collect()
    }

    /// One `/varz` counter now.
    pub(crate) async fn counter(&self, name: &str) -> u64 {
        self.varz()
            .await
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap()
            .1
    }

    /// Kills the server (SIGKILL: no goodbye to its clients).
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
        if let Some(dir) = &self.store {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn wait_for_port(port: u16) {
    let until = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < until,
            "nothing listens on {port} after 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The Go responder, built once per test binary from `responder.go` with Debian's Go and
/// nats.go, offline.
fn responder_bin() -> &'static std::path::Path {
    static BIN: OnceLock<std::path::PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nats-responder");
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nats/responder.go");
        let status = Command::new("go")
            .args(["build", "-o"])
            .arg(&out)
            .arg(&src)
            .env("GO111MODULE", "off")
            .env("GOPATH", "/usr/share/gocode")
            .env("GOFLAGS", "")
            .current_dir(env!("CARGO_TARGET_TMPDIR"))
            .status()
            .expect(
                "Go is not installed (apt-get install golang-go golang-github-nats-io-go-nats-dev; \
                 scripts/test does)",
            );
        assert!(
            status.success(),
            "the Go responder does not build (apt-get install golang-github-nats-io-go-nats-dev)"
        );
        out
    })
}

/// The Go responder on a subject, stopped (and its count read) by [`Responder::stop`].
pub(crate) struct Responder {
    child: Child,
}

impl Responder {
    /// Starts one on `subject` of `server` with extra flags (`-delay 2s`), ready when it
    /// says so.
    pub(crate) fn start(server: &NatsServer, subject: &str, args: &[&str]) -> Responder {
        let mut child = Command::new(responder_bin())
            .args(["-url", &format!("nats://127.0.0.1:{}", server.port)])
            .args(["-subject", subject])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "the responder did not start");
        Responder { child }
    }

    /// Stops it: the requests it served.
    pub(crate) fn stop(mut self) -> u64 {
        drop(self.child.stdin.take());
        let mut out = String::new();
        std::io::Read::read_to_string(self.child.stdout.as_mut().unwrap(), &mut out).unwrap();
        let _ = self.child.wait();
        out.trim()
            .strip_prefix("served ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the responder said {out:?}"))
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if let Some(mut i) = self.child.stdin.take() {
            let _ = i.write_all(b"");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
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
    plan(LoadModel::Closed(ClosedLoop {
        users: Users::Fixed(users),
        requests: None,
        iterations: Some(iterations),
        duration: None,
        think_time: None,
    }))
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
