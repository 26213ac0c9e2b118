//! gRPC load's shape against the testbed: a server stream's messages timed in their own row,
//! and `--connections` fixing how many HTTP/2 connections carry the calls.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod common;

use std::time::Duration;

use throng::core::Percentiles;
use throng::testbed::{Delay, GrpcTarget};

use common::grpc_run as run;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stream_has_a_row_of_its_messages() {
    // Each of the 4 messages comes 40 ms after the one before (the first 40 ms after the call).
    let t = GrpcTarget {
        delay: Delay::Fixed(Duration::from_millis(40)),
        ..GrpcTarget::default()
    }
    .start()
    .await
    .unwrap();
    let s = run(&[
        &t.url(),
        "--call",
        "helloworld.Greeter/SayHellos",
        "-d",
        r#"{"name":"s","count":4}"#,
        "-c",
        "3",
        "-n",
        "12",
    ])
    .await;
    let rows: Vec<(&str, u64, u64, bool)> = s
        .labels
        .iter()
        .map(|l| (l.label.as_str(), l.samples, l.errors, l.parts))
        .collect();
    assert_eq!(
        rows,
        [
            ("helloworld.Greeter/SayHellos", 12, 0, false),
            ("helloworld.Greeter/SayHellos (messages)", 48, 0, true),
        ]
    );
    // TOTAL counts calls, not messages.
    assert_eq!(s.total.samples, 12);
    let m = Percentiles::of(&s.labels[1].latency);
    assert_eq!(m.count, 48);
    assert!((35_000..120_000).contains(&m.min), "{m:?}");
    assert!((35_000..120_000).contains(&m.p50), "{m:?}");
    // The call is timed whole: four delays.
    let call = Percentiles::of(&s.labels[0].latency);
    assert!((155_000..480_000).contains(&call.p50), "{call:?}");
    // Messages per second: four times the calls'.
    let secs = s.elapsed;
    let per_s = |l: usize| throng::core::per_second(s.labels[l].completed(), secs);
    assert!((per_s(1) / per_s(0) - 4.0).abs() < 1e-9);
    // A unary method has no such row.
    let s = run(&[&t.url(), "--call", "helloworld.Greeter/SayHello", "-n", "3"]).await;
    assert_eq!(s.labels.len(), 1);
}
