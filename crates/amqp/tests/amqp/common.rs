//! RabbitMQ nodes (Debian's rabbitmq-server on free ports in a temporary directory), the Go
//! responder, plans, options and a bounded run.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use throng_amqp::{AmqpClient, AmqpOptions, AmqpStep};
use throng_core::step::{Client, ClientOptions};
use throng_core::steps::Steps;
use throng_core::{
    Arrivals, ClosedLoop, ErrorClass, LabelStats, LoadModel, OpenLoop, Rate, RunPlan, Snapshot,
    Status, Users,
};

/// A free port on the loopback (bound and let go).
pub(crate) fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

const SERVER: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";

/// A RabbitMQ node of Debian's rabbitmq-server, on free ports, its data in a directory of its
/// own. A watchdog (a shell reading a pipe from this process) kills its process group and
/// removes the directory when the pipe closes: when the node is dropped or killed, and when
/// the test binary exits however it exits, so the shared node never outlives its tests.
pub(crate) struct Broker {
    pub(crate) port: u16,
    /// The management API's port, when the plugin is on.
    pub(crate) management: Option<u16>,
    /// The TLS listener's port, when it has one ([`Broker::with_tls`]).
    pub(crate) tls_port: Option<u16>,
    dir: PathBuf,
    watchdog: Mutex<Option<(ChildStdin, Child)>>,
}

impl Broker {
    /// The node the tests of this binary share (with the management plugin), started by the
    /// first that asks.
    pub(crate) fn shared() -> &'static Broker {
        static SHARED: OnceLock<Broker> = OnceLock::new();
        SHARED.get_or_init(|| Broker::start(true, false))
    }

    /// A node of its own (no management plugin), to kill.
    pub(crate) fn own() -> Broker {
        Broker::start(false, false)
    }

    /// A node of its own with the management plugin, whose counters no other test moves.
    pub(crate) fn own_with_management() -> Broker {
        Broker::start(true, false)
    }

    /// A node of its own with a TLS listener beside its plain one: a self-signed certificate
    /// for `localhost` and `127.0.0.1` made here (rcgen), in [`Broker::ca`].
    pub(crate) fn with_tls() -> Broker {
        Broker::start(false, true)
    }

    fn start(management: bool, tls: bool) -> Broker {
        assert!(
            std::path::Path::new(SERVER).exists(),
            "rabbitmq-server is not installed (apt-get install rabbitmq-server; scripts/test \
             does)"
        );
        let port = free_port();
        let dist = free_port();
        let mgmt = management.then(free_port);
        let dir = std::env::temp_dir().join(format!("throng-rabbitmq-{port}"));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["mnesia", "log"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let mut conf = format!(
            "listeners.tcp.default = 127.0.0.1:{port}\nloopback_users = none\n\
             collect_statistics_interval = 1000\n"
        );
        let tls_port = tls.then(free_port);
        if let Some(t) = tls_port {
            let cert =
                rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
                    .unwrap();
            std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
            std::fs::write(dir.join("key.pem"), cert.key_pair.serialize_pem()).unwrap();
            let d = dir.display();
            conf.push_str(&format!(
                "listeners.ssl.default = 127.0.0.1:{t}\nssl_options.certfile = {d}/cert.pem\n\
                 ssl_options.keyfile = {d}/key.pem\nssl_options.cacertfile = {d}/cert.pem\n\
                 ssl_options.verify = verify_none\nssl_options.fail_if_no_peer_cert = false\n"
            ));
        }
        if let Some(m) = mgmt {
            conf.push_str(&format!(
                "management.tcp.port = {m}\nmanagement.tcp.ip = 127.0.0.1\n"
            ));
        }
        std::fs::write(dir.join("rabbitmq.conf"), conf).unwrap();
        let plugins = if management {
            "[rabbitmq_management]."
        } else {
            "[]."
        };
        std::fs::write(dir.join("enabled_plugins"), plugins).unwrap();
        let d = |p: &str| dir.join(p);
        let node = Command::new(SERVER)
            .env("HOME", &dir)
            .env("RABBITMQ_NODENAME", format!("throng-{port}@localhost"))
            .env("RABBITMQ_NODE_PORT", port.to_string())
            .env("RABBITMQ_DIST_PORT", dist.to_string())
            .env("RABBITMQ_MNESIA_BASE", d("mnesia"))
            .env("RABBITMQ_LOG_BASE", d("log"))
            .env("RABBITMQ_CONFIG_FILE", d("rabbitmq.conf"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", d("enabled_plugins"))
            .env("RABBITMQ_FEATURE_FLAGS_FILE", d("mnesia/feature_flags"))
            .env("RABBITMQ_PID_FILE", d("pid"))
            .env("RABBITMQ_CONF_ENV_FILE", d("no-env"))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(d("out.log")).unwrap())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("rabbitmq-server starts");
        let pgid = node.id();
        // The node's process group is killed when this pipe closes; `node` itself is left to
        // the watchdog.
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg("cat >/dev/null; kill -9 -$0 2>/dev/null; sleep 0.2; rm -rf \"$1\"")
            .arg(pgid.to_string())
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = watchdog.stdin.take().unwrap();
        std::mem::forget(node);
        let broker = Broker {
            port,
            management: mgmt,
            tls_port,
            dir,
            watchdog: Mutex::new(Some((stdin, watchdog))),
        };
        broker.wait_ready();
        broker
    }

    /// Waits (at most 60 s) until the node accepts AMQP and, with it, its management API.
    fn wait_ready(&self) {
        let until = Instant::now() + Duration::from_secs(60);
        for p in std::iter::once(self.port)
            .chain(self.management)
            .chain(self.tls_port)
        {
            while std::net::TcpStream::connect(("127.0.0.1", p)).is_err() {
                if Instant::now() > until {
                    let log = std::fs::read_to_string(self.dir.join("out.log")).unwrap_or_default();
                    panic!("rabbitmq-server does not listen on {p} after 60 s: {log}");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// `amqp://guest:guest@127.0.0.1:PORT/%2f?routing_key=KEY`.
    pub(crate) fn url(&self, key: &str) -> String {
        format!(
            "amqp://guest:guest@127.0.0.1:{}/%2f?routing_key={key}",
            self.port
        )
    }

    /// `amqps://guest:guest@HOST:TLS_PORT/%2f?routing_key=KEY`.
    pub(crate) fn tls_url(&self, host: &str, key: &str) -> String {
        format!(
            "amqps://guest:guest@{host}:{}/%2f?routing_key={key}",
            self.tls_port.expect("a node with TLS")
        )
    }

    /// The PEM certificate the TLS listener serves (self-signed: its own CA).
    pub(crate) fn ca(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    /// `amqp://guest:guest@127.0.0.1:PORT/` for the Go responder.
    pub(crate) fn go_url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/", self.port)
    }

    /// The management API's `http://guest:guest@127.0.0.1:PORT`.
    pub(crate) fn management_url(&self) -> String {
        format!(
            "http://guest:guest@127.0.0.1:{}",
            self.management.expect("a node with the management plugin")
        )
    }

    /// Kills the node (SIGKILL to its processes: no goodbye to its clients) and waits until
    /// it is gone.
    pub(crate) fn kill(&self) {
        if let Some((stdin, mut dog)) = self.watchdog.lock().unwrap().take() {
            drop(stdin);
            let _ = dog.wait();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The Go responder, built once per test binary from `responder.go` with Debian's Go and
/// amqp091-go, offline.
fn responder_bin() -> &'static std::path::Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("amqp-responder");
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/amqp/responder.go");
        let packages = "golang-github-rabbitmq-amqp091-go-dev";
        throng_testbed::brokers::go_build(&src, &out, packages).unwrap();
        out
    })
}

/// The Go responder on a queue, stopped (and its count read) by `stop`.
pub(crate) struct Responder(throng_testbed::brokers::Responder);

impl Responder {
    /// Starts one serving `queue` of `broker` with extra flags (`-delay 2s`), ready when it
    /// says so.
    pub(crate) fn start(broker: &Broker, queue: &str, args: &[&str]) -> Responder {
        let url = broker.go_url();
        let mut all = vec!["-url", &url, "-queue", queue];
        all.extend(args);
        Responder(throng_testbed::brokers::Responder::start(responder_bin(), &all).unwrap())
    }

    /// Stops it: the requests it took.
    pub(crate) fn stop(self) -> u64 {
        self.0.stop().unwrap()
    }
}

/// Short timeouts: a fault shows in well under a second.
pub(crate) fn options() -> ClientOptions {
    ClientOptions {
        timeout: Duration::from_millis(500),
        connect_timeout: Duration::from_millis(1000),
        ..ClientOptions::default()
    }
}

/// Options with AMQP's own.
pub(crate) fn with(own: AmqpOptions) -> ClientOptions {
    options().with(own)
}

/// Options to publish, with confirms or not.
pub(crate) fn publishing(confirms: bool) -> ClientOptions {
    with(AmqpOptions {
        mode: throng_amqp::Mode::Publish,
        confirms,
        ..AmqpOptions::default()
    })
}

fn plan(model: LoadModel) -> RunPlan {
    let mut p = RunPlan::new("amqp", model);
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
pub(crate) fn steps(url: &str, opts: &ClientOptions, step: AmqpStep) -> Steps<AmqpClient> {
    let client = AmqpClient::new(url, opts).unwrap();
    Steps::new(client, step, "step").unwrap()
}

/// Runs the plan; a run that does not end within 60 s is a hang, and fails.
pub(crate) async fn run<C: Client>(plan: RunPlan, steps: Arc<Steps<C>>) -> Arc<Snapshot> {
    tokio::time::timeout(Duration::from_secs(60), throng_engine::run(plan, steps))
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

/// Errors of `class` in a row.
pub(crate) fn class(row: &LabelStats, class: ErrorClass) -> u64 {
    row.classes[class.index()]
}

/// The errors of a run, for messages.
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

/// A unique queue name for a test (the shared node outlives each test's queues).
pub(crate) fn unique(name: &str) -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "{name}-{}",
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}
