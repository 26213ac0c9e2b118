//! The client and the monitor against a fake engine on a Unix socket: version negotiation,
//! selection errors, a container stopping mid-run, and an engine consumer that never reads.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use throng_core::ContainerEvent;
use throng_docker::{ApiVersion, Client, DockerError, Monitor, Selection};

const ID: &str = "aaaaaaaaaaaa0000000000000000000000000000000000000000000000000001";

/// What the fake engine does.
struct Fake {
    /// Documents per stats stream (after the first one, which has no previous read).
    docs: usize,
    /// Pause between documents.
    every: Duration,
    /// After the documents: the container exits (blank documents follow) or the stream just ends.
    exits: bool,
    stopped: AtomicBool,
    written: AtomicUsize,
    streams: AtomicUsize,
}

fn v2_doc(previous: bool) -> String {
    let path = format!(
        "{}/tests/fixtures/stats_v2.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    if !previous {
        v["precpu_stats"] =
            serde_json::json!({"cpu_usage": {"total_usage": 0}, "throttling_data": {}});
    }
    v.to_string()
}

const BLANK: &str = r#"{"read":"0001-01-01T00:00:00Z","pids_stats":{},"blkio_stats":{"io_service_bytes_recursive":null},"cpu_stats":{"cpu_usage":{"total_usage":0},"throttling_data":{}},"precpu_stats":{"cpu_usage":{"total_usage":0},"throttling_data":{}},"memory_stats":{}}"#;

fn full(status: u16, body: String) -> Response<BoxBody<Bytes, Infallible>> {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = hyper::StatusCode::from_u16(status).expect("status");
    r
}

fn inspect(fake: &Fake) -> String {
    let (running, status) = match fake.stopped.load(Ordering::SeqCst) {
        true => (false, "exited"),
        false => (true, "running"),
    };
    serde_json::json!({
        "Id": ID, "Name": "/web", "Image": "sha256:img",
        "Config": {"Image": "web:1"},
        "State": {"Status": status, "Running": running, "ExitCode": if running { 0 } else { 137 }}
    })
    .to_string()
}

async fn handle(
    fake: Arc<Fake>,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<BoxBody<Bytes, Infallible>>, Infallible> {
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let resp = match path.as_str() {
        "/_ping" => {
            let mut r = full(200, "OK".into());
            r.headers_mut()
                .insert("api-version", "1.43".parse().expect("header"));
            r
        }
        "/v1.43/containers/web/json" => full(200, inspect(&fake)),
        p if p == format!("/v1.43/containers/{ID}/json") => full(200, inspect(&fake)),
        "/v1.43/containers/json" if query.contains("app%3Dshop") => full(
            200,
            serde_json::json!([{"Id": ID, "Names": ["/web"]}]).to_string(),
        ),
        "/v1.43/containers/json" => full(200, "[]".into()),
        "/v1.43/images/sha256%3Aimg/json" => {
            full(200, r#"{"Id":"sha256:img","Size":12345678}"#.into())
        }
        p if p == format!("/v1.43/containers/{ID}/stats") => {
            fake.streams.fetch_add(1, Ordering::SeqCst);
            let (mut tx, body) = http_body_util::channel::Channel::<Bytes, Infallible>::new(1);
            tokio::spawn(async move {
                let line = |s: String| Bytes::from(s + "\n");
                if tx.send_data(line(v2_doc(false))).await.is_err() {
                    return;
                }
                for _ in 0..fake.docs {
                    tokio::time::sleep(fake.every).await;
                    if tx.send_data(line(v2_doc(true))).await.is_err() {
                        return;
                    }
                    fake.written.fetch_add(1, Ordering::SeqCst);
                }
                if fake.exits {
                    fake.stopped.store(true, Ordering::SeqCst);
                    for _ in 0..50 {
                        tokio::time::sleep(fake.every).await;
                        if tx.send_data(line(BLANK.to_string())).await.is_err() {
                            return;
                        }
                    }
                }
            });
            Response::new(body.boxed())
        }
        _ => full(
            404,
            format!(r#"{{"message":"No such container: {}"}}"#, path),
        ),
    };
    Ok(resp)
}

/// Serves the fake engine on a socket in `dir`.
fn serve(dir: &Path, fake: Arc<Fake>) -> PathBuf {
    let path = dir.join("docker.sock");
    let listener = tokio::net::UnixListener::bind(&path).expect("bind the fake engine's socket");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let fake = fake.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req| handle(fake.clone(), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    path
}

fn fake(docs: usize, every: Duration, exits: bool) -> Arc<Fake> {
    Arc::new(Fake {
        docs,
        every,
        exits,
        stopped: AtomicBool::new(false),
        written: AtomicUsize::new(0),
        streams: AtomicUsize::new(0),
    })
}

fn select(containers: &[&str], labels: &[&str]) -> Selection {
    Selection {
        containers: containers.iter().map(|s| s.to_string()).collect(),
        labels: labels.iter().map(|s| s.to_string()).collect(),
    }
}

#[tokio::test]
async fn resolves_names_and_labels_once_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = serve(dir.path(), fake(0, Duration::ZERO, false));
    let client = Client::connect(&sock).await.expect("connects");
    assert_eq!(
        client.version(),
        ApiVersion(1, 43),
        "min(engine 1.43, ours)"
    );
    let m = Monitor::resolve(client, &select(&["web"], &["app=shop"]))
        .await
        .expect("resolves");
    let c = m.containers();
    assert_eq!(c.len(), 1, "the name and the label find the same container");
    assert_eq!(
        (
            c[0].id.as_str(),
            c[0].name.as_str(),
            c[0].image.as_str(),
            c[0].image_size
        ),
        (ID, "web", "web:1", 12_345_678)
    );
}

#[tokio::test]
async fn docker_host_picks_the_engine() {
    // The only test here that reads DOCKER_HOST; the others name their socket.
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = serve(dir.path(), fake(0, Duration::ZERO, false));
    std::env::set_var("DOCKER_HOST", format!("unix://{}", sock.display()));
    let client = Client::from_env()
        .await
        .expect("connects through DOCKER_HOST");
    assert_eq!(client.socket(), sock.as_path());
    assert_eq!(client.version(), ApiVersion(1, 43));
    std::env::set_var("DOCKER_HOST", "tcp://127.0.0.1:2375");
    let err = Client::from_env().await.expect_err("tcp is not supported");
    assert!(matches!(err, DockerError::UnsupportedHost(_)), "{err}");
}

#[tokio::test]
async fn unknown_names_and_labels_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = serve(dir.path(), fake(0, Duration::ZERO, false));
    let client = Client::connect(&sock).await.expect("connects");
    let err = Monitor::resolve(client.clone(), &select(&["web", "nope"], &[]))
        .await
        .expect_err("nope is unknown");
    assert!(
        matches!(&err, DockerError::UnknownContainer(n) if n == "nope"),
        "{err}"
    );
    assert!(err.is_selection());
    assert!(err.to_string().contains("\"nope\""), "{err}");
    let err = Monitor::resolve(client, &select(&[], &["app=none"]))
        .await
        .expect_err("no match");
    assert!(
        matches!(&err, DockerError::NoLabelMatch(l) if l == "app=none"),
        "{err}"
    );
}

#[tokio::test]
async fn no_engine_says_how_to_reach_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = Client::connect(&dir.path().join("missing.sock"))
        .await
        .expect_err("nothing listens");
    assert!(matches!(err, DockerError::Unreachable { .. }), "{err}");
    assert!(!err.is_selection());
    assert!(err.to_string().contains("DOCKER_HOST=unix://"), "{err}");
}

#[tokio::test]
async fn a_container_stopping_mid_run_is_reported_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fake(4, Duration::from_millis(50), true);
    let sock = serve(dir.path(), f.clone());
    let client = Client::connect(&sock).await.expect("connects");
    let m = Monitor::resolve(client, &select(&["web"], &[]))
        .await
        .expect("resolves");
    let (mut sampling, mut rx) = m.start(Duration::ZERO).await;
    sampling.load_starts_now();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while let Ok(Some(e)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        let gone = matches!(e, ContainerEvent::Gone(..));
        events.push(e);
        if gone {
            break;
        }
    }
    assert!(
        matches!(&events[0], ContainerEvent::Info(i) if i.name == "web"),
        "{events:?}"
    );
    let samples: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ContainerEvent::Sample(id, s) if id == ID => Some(*s),
            _ => None,
        })
        .collect();
    // The first document (no previous read) is skipped; the four others are readings.
    assert_eq!(samples.len(), 4, "{events:?}");
    assert!(samples.iter().all(|s| (s.cpu_percent - 50.0).abs() < 1e-9));
    assert!(samples.iter().all(|s| s.mem_used == 54_525_952));
    // The start waited for the first reading: it is an idle one, the rest are under load.
    assert!(samples[0].t < 0.0, "{:?}", samples[0]);
    assert!(samples[1..].iter().all(|s| s.t > 0.0), "{samples:?}");
    assert!(samples.windows(2).all(|w| w[0].t < w[1].t));
    assert_eq!(
        events.last(),
        Some(&ContainerEvent::Gone(
            ID.to_string(),
            "exited (code 137)".into()
        ))
    );
    assert_eq!(sampling.dropped(), 0);
}

#[tokio::test]
async fn an_engine_that_never_reads_does_not_hold_up_sampling() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fake(400, Duration::from_millis(1), false);
    let sock = serve(dir.path(), f.clone());
    let client = Client::connect(&sock).await.expect("connects");
    let m = Monitor::resolve(client, &select(&["web"], &[]))
        .await
        .expect("resolves");
    let (mut sampling, rx) = m.start(Duration::ZERO).await;
    sampling.load_starts_now();
    // The receiver is never read, as if the aggregator were stuck: the stream is still read
    // to its end and the readings that do not fit are counted, not waited for.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while f.written.load(Ordering::SeqCst) < 400 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        f.written.load(Ordering::SeqCst),
        400,
        "the stream was read to its end"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let kept = rx.len() as u64;
    assert!(sampling.dropped() > 300, "dropped {}", sampling.dropped());
    assert_eq!(
        kept + sampling.dropped(),
        1 + 400,
        "Info plus every reading, kept or dropped"
    );
}

#[tokio::test]
async fn a_stream_ending_while_the_container_runs_is_opened_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Each stream ends after two readings; the container keeps running.
    let f = fake(2, Duration::from_millis(20), false);
    let sock = serve(dir.path(), f.clone());
    let client = Client::connect(&sock).await.expect("connects");
    let m = Monitor::resolve(client, &select(&["web"], &[]))
        .await
        .expect("resolves");
    let (mut sampling, mut rx) = m.start(Duration::ZERO).await;
    sampling.load_starts_now();
    let mut samples = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let gone = loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(ContainerEvent::Sample(..))) => samples += 1,
            Ok(Some(ContainerEvent::Gone(_, why))) => break why,
            Ok(Some(ContainerEvent::Info(_))) => {}
            other => panic!("no Gone event: {other:?}"),
        }
    };
    // The first stream and three more, two readings each; then the container counts as gone.
    assert_eq!(f.streams.load(Ordering::SeqCst), 4);
    assert_eq!(samples, 8);
    assert_eq!(gone, "the engine ended the stats stream");
}
