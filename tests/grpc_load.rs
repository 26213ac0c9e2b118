//! gRPC load's shape against the testbed: the messages of a server stream and of a bidi
//! stream's replies timed in their own row, and `--connections` fixing how many HTTP/2
//! connections carry the calls.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::time::Duration;

use throng::core::Percentiles;
use throng::testbed::{Delay, GrpcTarget, RunningGrpc};

use common::grpc_run as run;

/// A greeter that waits 40 ms before each reply message.
async fn slow_greeter() -> RunningGrpc {
    GrpcTarget {
        delay: Delay::Fixed(Duration::from_millis(40)),
        ..GrpcTarget::default()
    }
    .start()
    .await
    .unwrap()
}

/// Runs `calls` calls of `method` with `data` on `t` (a [`slow_greeter`]), each answered by
/// `messages` messages, and checks the rows: the call's, timed whole, and its messages', each
/// timed from the one before (the first from the call's start).
async fn stream(t: &RunningGrpc, method: &str, data: &str, calls: u64, messages: u64) {
    let call = format!("helloworld.Greeter/{method}");
    let n = calls.to_string();
    let s = run(&[&t.url(), "--call", &call, "-d", data, "-c", "2", "-n", &n]).await;
    let rows: Vec<(&str, u64, u64, bool)> = s
        .labels
        .iter()
        .map(|l| (l.label.as_str(), l.samples, l.errors, l.parts))
        .collect();
    let parts = format!("{call} (messages)");
    assert_eq!(
        rows,
        [
            (call.as_str(), calls, 0, false),
            (parts.as_str(), calls * messages, 0, true),
        ]
    );
    // TOTAL counts calls, not messages.
    assert_eq!(s.total.samples, calls);
    let m = Percentiles::of(&s.labels[1].latency);
    assert_eq!(m.count, calls * messages);
    // A message's wait is the server's delay, give or take when the one before arrived.
    assert!((20_000..120_000).contains(&m.min), "{m:?}");
    assert!((30_000..120_000).contains(&m.p50), "{m:?}");
    // The call is timed whole: a delay for each message.
    let whole = Percentiles::of(&s.labels[0].latency);
    let (low, high) = (messages * 40_000 - 5_000, messages * 120_000);
    assert!((low..high).contains(&whole.p50), "{whole:?}");
    // Messages per second: `messages` times the calls'.
    let per_s = |l: usize| throng::core::per_second(s.labels[l].completed(), s.elapsed);
    assert!((per_s(1) / per_s(0) - messages as f64).abs() < 1e-9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stream_has_a_row_of_its_messages() {
    let t = slow_greeter().await;
    stream(&t, "SayHellos", r#"{"name":"s","count":4}"#, 12, 4).await;
    // Thresholds read the row: its messages come 40 ms apart, none within 1 ms.
    let url = t.url();
    for (limit, code) in [("1ms", 99), ("5s", 0)] {
        let threshold = format!("p50{{helloworld.Greeter/SayHellos (messages)}}<{limit}");
        let out = common::throng(&[
            "run",
            &url,
            "--call",
            "helloworld.Greeter/SayHellos",
            "-d",
            r#"{"count":3}"#,
            "-n",
            "4",
            "--no-tui",
            "--threshold",
            &threshold,
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{threshold}: {err}");
    }
    // A unary method has no such row.
    let s = run(&[&t.url(), "--call", "helloworld.Greeter/SayHello", "-n", "3"]).await;
    assert_eq!(s.labels.len(), 1);
}

/// A server stream's deadline is the whole call's, not each message's: messages 40 ms apart
/// never end a call of 50 before its 300 ms are up, and what came is in the messages' row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stream_times_out_whole_not_message_by_message() {
    let t = slow_greeter().await;
    let call = "helloworld.Greeter/SayHellos";
    let data = r#"{"name":"s","count":50}"#;
    let s = run(&[
        &t.url(),
        "--call",
        call,
        "-d",
        data,
        "-t",
        "300ms",
        "-n",
        "4",
    ])
    .await;
    assert_eq!(s.labels[0].samples, 4);
    assert_eq!(s.labels[0].errors, 4, "{:?}", s.errors);
    assert_eq!(common::errors_of(&s, throng::core::ErrorClass::Timeout), 4);
    let whole = Percentiles::of(&s.labels[0].latency);
    assert!((290_000..1_000_000).contains(&whole.min), "{whole:?}");
    assert!(whole.max < 1_000_000, "{whole:?}");
    // About 7 messages a call came before its deadline.
    let messages = s.labels[1].samples;
    assert!((4 * 3..4 * 12).contains(&messages), "{messages} messages");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bidi_stream_has_a_row_of_its_replies() {
    // The greeter answers each message 40 ms after reading it; the 3 are sent at once.
    let t = slow_greeter().await;
    let three = r#"[{"name":"a"},{"name":"b"},{"name":"c"}]"#;
    stream(&t, "Chat", three, 8, 3).await;
    // A client stream has one reply: no such row.
    let one = r#"[{"name":"a"}]"#;
    let s = run(&[
        &t.url(),
        "--call",
        "helloworld.Greeter/CollectHellos",
        "-d",
        one,
        "-n",
        "2",
    ])
    .await;
    assert_eq!(s.labels.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_fix_how_many_connections_carry_the_calls() {
    let hello = |url: &str, extra: &[&str]| {
        let mut args = vec![
            url.to_string(),
            "--call".into(),
            "helloworld.Greeter/SayHello".into(),
            // No reflection: its question would be one more connection.
            "--proto".into(),
            "crates/testbed/proto/greeter.proto".into(),
            "-n".into(),
            "120".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    for (extra, want) in [
        (&["-c", "12", "--connections", "3", "--threads", "2"][..], 3),
        (&["-c", "12", "--connections", "5", "--threads", "2"], 5),
        // One connection: one thread drives it.
        (&["-c", "7", "--connections", "1", "--threads", "2"], 1),
        // By default, the fewest connections that carry the users at 100 (--streams) each.
        (&["-c", "12", "--threads", "2"], 1),
        (&["-c", "201", "--threads", "2"], 3),
        (&["-c", "12", "--threads", "2", "--streams", "3"], 4),
    ] {
        let t = GrpcTarget::default().start().await.unwrap();
        let args = hello(&t.url(), extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let s = run(&args).await;
        assert_eq!((s.total.samples, s.total.errors), (120, 0), "{extra:?}");
        assert_eq!(t.calls(), 120, "{extra:?}");
        assert_eq!(t.connections(), want, "{extra:?}");
    }
    // Bad input: exit 2, naming the problem.
    for (args, says) in [
        (
            vec!["grpc://127.0.0.1:9", "-c", "3", "--connections", "4"],
            "--connections 4: more connections than the 3 users",
        ),
        (
            vec!["grpc://127.0.0.1:9", "-c", "300", "--connections", "2"],
            "--connections 2 with --streams 100 carry 200 calls at once, and the load has 300",
        ),
        (
            vec!["grpc://127.0.0.1:9", "--connections", "0"],
            "at least 1",
        ),
        (
            vec!["http://127.0.0.1:9/", "--connections", "2"],
            "--connections applies to grpc:// and grpcs:// targets",
        ),
    ] {
        let mut argv = vec!["run"];
        argv.extend(args);
        argv.extend([
            "--call",
            "helloworld.Greeter/SayHello",
            "-n",
            "1",
            "--no-tui",
        ]);
        let out = common::throng(&argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {err}");
        assert!(err.contains(says), "{argv:?}: {err}");
    }
}
