//! Against a gRPC stack throng did not write: grpc-go (Debian's 1.33) serving its own health
//! service and reflection, v1alpha only. The server is built from `testdata/grpc/server.go` by
//! the test command (`scripts/test` installs golang-go and golang-google-grpc-dev); a test
//! builds it itself when it is missing, and fails, never skips, when Go is not installed.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use throng::core::{ClosedLoop, ErrorClass, LoadModel, RunPlan, Snapshot, Status, Users};
use throng::grpc::{GrpcClient, GrpcConfig, ReflectionVersion, Target};

use common::errors_of;

/// One build at a time (the tests of this file run in parallel).
static BUILD: Mutex<()> = Mutex::new(());

fn server_binary() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let bin = target.join("grpc-go-server");
    let _one = BUILD.lock().unwrap();
    if !bin.exists() {
        let out = Command::new("go")
            .args(["build", "-o"])
            .arg(&bin)
            .arg(root.join("testdata/grpc/server.go"))
            .env("GO111MODULE", "off")
            .env("GOPATH", "/usr/share/gocode")
            .output()
            .expect(
                "go is not installed: scripts/test installs golang-go and golang-google-grpc-dev \
                 (apt-get install golang-go golang-google-grpc-dev)",
            );
        assert!(
            out.status.success(),
            "building the grpc-go server: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    bin
}

/// A running grpc-go server; killed when dropped.
struct GoServer {
    child: Child,
    url: String,
}

impl GoServer {
    fn start() -> GoServer {
        let mut child = Command::new(server_binary())
            .args(["-addr", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the grpc-go server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .expect("its address");
        GoServer {
            child,
            url: format!("grpc://{addr}"),
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for GoServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn config(url: &str, call: &str, data: &str, timeout: Duration) -> GrpcConfig {
    let mut cfg = GrpcConfig::new(url, call).unwrap();
    cfg.data = Some(data.into());
    cfg.timeout = timeout;
    cfg
}

fn closed(users: u32, requests: Option<u64>, duration: Option<Duration>) -> LoadModel {
    LoadModel::Closed(ClosedLoop {
        users: Users::Fixed(users),
        requests,
        iterations: None,
        duration,
        think_time: None,
    })
}

async fn run(cfg: GrpcConfig, model: LoadModel) -> Arc<Snapshot> {
    let url = cfg.url.to_string();
    let driver = GrpcClient::one_step(cfg).await.expect("the driver");
    throng::engine::run(RunPlan::new(&url, model), Arc::new(driver))
        .await
        .unwrap()
}

fn statuses(s: &Snapshot) -> Vec<(Status, u64)> {
    s.statuses.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflection_finds_health_through_v1alpha_and_unary_calls_count_exactly() {
    let go = GoServer::start();
    let cfg = config(
        &go.url,
        "grpc.health.v1.Health/Check",
        r#"{"service":"throng.Test"}"#,
        Duration::from_secs(5),
    );
    let (pool, version) = Target::new(&cfg).unwrap().reflect(None).await.unwrap();
    assert_eq!(
        version,
        ReflectionVersion::V1Alpha,
        "grpc-go 1.33 serves v1alpha only"
    );
    assert!(pool.get_service_by_name("grpc.health.v1.Health").is_some());
    let s = run(cfg, closed(8, Some(400), None)).await;
    assert_eq!(s.total.samples, 400);
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    assert_eq!(statuses(&s), [(throng::grpc::status::status(0), 400)]);
    assert!(
        s.total.bytes_received > 400 * 20,
        "{}",
        s.total.bytes_received
    );
    // A service the health server does not know: grpc-go's NOT_FOUND, with its message.
    let cfg = config(
        &go.url,
        "grpc.health.v1.Health/Check",
        r#"{"service":"nope"}"#,
        Duration::from_secs(5),
    );
    let s = run(cfg, closed(2, Some(10), None)).await;
    assert_eq!(errors_of(&s, ErrorClass::Status), 10);
    assert_eq!(statuses(&s), [(throng::grpc::status::status(5), 10)]);
    assert!(
        s.errors[0].sample.contains("unknown service"),
        "{}",
        s.errors[0].sample
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_streams_until_its_deadline() {
    let go = GoServer::start();
    // Watch never ends by itself: each call sees the status, then runs into its deadline.
    let cfg = config(
        &go.url,
        "grpc.health.v1.Health/Watch",
        r#"{"service":"throng.Test"}"#,
        Duration::from_millis(200),
    );
    let s = run(cfg, closed(3, Some(9), None)).await;
    assert_eq!(s.total.samples, 9);
    assert_eq!(errors_of(&s, ErrorClass::Timeout), 9, "{:?}", s.errors);
    let p50 = s.total.latency.value_at_quantile(0.5);
    assert!((190_000..400_000).contains(&p50), "{p50} µs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_gives_classified_errors_and_no_hang() {
    let mut go = GoServer::start();
    let cfg = config(
        &go.url,
        "grpc.health.v1.Health/Check",
        "{}",
        Duration::from_millis(500),
    );
    let driver = GrpcClient::one_step(cfg).await.unwrap();
    let url = go.url.clone();
    let run = tokio::spawn(async move {
        throng::engine::run(
            RunPlan::new(&url, closed(4, None, Some(Duration::from_millis(1500)))),
            Arc::new(driver),
        )
        .await
        .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    go.stop();
    let s = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("no hang")
        .unwrap();
    assert!(
        s.total.samples > s.total.errors,
        "calls succeeded before the stop"
    );
    let broken = errors_of(&s, ErrorClass::Connect) + errors_of(&s, ErrorClass::Reset);
    assert!(broken > 0, "{:?}", s.errors);
    assert_eq!(
        broken + errors_of(&s, ErrorClass::Timeout) + errors_of(&s, ErrorClass::Aborted),
        s.total.errors,
        "{:?}",
        s.errors
    );
}
