//! gRPC end to end: `throng run grpc://...` in-process (the command line's own path: flags, the
//! driver, the engine) against the testbed's gRPC target, and the built binary for bad input
//! and the JSON result.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use throng::core::{ErrorClass, Snapshot, Status};
use throng::grpc::{CallKind, Pool};
use throng::testbed::{Delay, GrpcTarget, RunningGrpc};

use common::{errors_of, throng};

const GREETER: &str = "crates/testbed/proto/greeter.proto";

use common::{grpc_driver as driver, grpc_run as run};

async fn target(t: GrpcTarget) -> RunningGrpc {
    t.start().await.expect("the gRPC target starts")
}

/// The gRPC target with a connection-level fault.
async fn faulty(fault: throng::testbed::Fault) -> RunningGrpc {
    target(GrpcTarget {
        fault: Some(fault),
        ..GrpcTarget::default()
    })
    .await
}

fn status_count(s: &Snapshot, status: Status) -> u64 {
    s.statuses
        .iter()
        .filter(|(st, _)| *st == status)
        .map(|(_, n)| *n)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_calls_are_counted_exactly_by_reflection_and_by_proto() {
    let t = target(GrpcTarget::default()).await;
    let url = t.url();
    let s = run(&[
        &url,
        "--call",
        "helloworld.Greeter/SayHello",
        "-d",
        r#"{"name":"throng"}"#,
        "-c",
        "8",
        "-n",
        "500",
    ])
    .await;
    assert_eq!(s.total.samples, 500);
    assert_eq!(s.total.errors, 0);
    assert_eq!(status_count(&s, throng::grpc::status::status(0)), 500);
    assert_eq!(t.calls(), 500, "the server answered every call and no more");
    // HTTP/2 framing: each call sends at least its 5-byte gRPC prefix and the 8-byte message,
    // plus headers.
    assert!(s.total.bytes_sent > 500 * 13, "{}", s.total.bytes_sent);
    assert!(s.total.bytes_received > 500 * 13);
    let s = run(&[
        &url,
        "--call",
        "helloworld.Greeter/SayHello",
        "--proto",
        GREETER,
        "-c",
        "3",
        "-n",
        "101",
        "--streams",
        "2",
    ])
    .await;
    assert_eq!(s.total.samples, 101);
    assert_eq!(s.total.errors, 0);
    assert_eq!(t.calls(), 601);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_is_grpc_status_with_its_message() {
    let t = target(GrpcTarget {
        status: 14,
        ..GrpcTarget::default()
    })
    .await;
    let s = run(&[
        &t.url(),
        "--call",
        "helloworld.Greeter/SayHello",
        "-n",
        "20",
    ])
    .await;
    assert_eq!(s.total.samples, 20);
    assert_eq!(errors_of(&s, ErrorClass::Status), 20);
    assert_eq!(status_count(&s, throng::grpc::status::status(14)), 20);
    let sample = s.errors[0].sample.clone();
    assert!(sample.contains("UNAVAILABLE"), "{sample}");
    assert!(sample.contains("the testbed answers status 14"), "{sample}");
}

/// A call's deadline is its stream's on the shared connection, which the connection's task
/// watches (no timer of the call's own): the calls time out by it though nothing arrives, their
/// streams are reset, and the one connection carries the next calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_deadline_is_a_timeout() {
    let t = target(GrpcTarget {
        delay: Delay::Fixed(Duration::from_millis(400)),
        ..GrpcTarget::default()
    })
    .await;
    let s = run(&[
        &t.url(),
        "--call",
        "helloworld.Greeter/SayHello",
        // No reflection: its question would be one more connection.
        "--proto",
        GREETER,
        "-t",
        "100ms",
        "-c",
        "2",
        "-n",
        "6",
    ])
    .await;
    assert_eq!(s.total.samples, 6);
    assert_eq!(errors_of(&s, ErrorClass::Timeout), 6);
    // Timed into the latency histogram at what they waited: the deadline, not the delay.
    let p50 = s.total.latency.value_at_quantile(0.5);
    assert!((90_000..300_000).contains(&p50), "{p50} µs");
    let max = s.total.latency.max();
    assert!(
        max < 350_000,
        "by the deadline, not the late answer: {max} µs"
    );
    assert_eq!(
        t.connections(),
        1,
        "three rounds of calls on one connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listening_is_every_call_failed() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("grpc://127.0.0.1:{port}");
    let s = run(&[
        &url,
        "--call",
        "helloworld.Greeter/SayHello",
        "--proto",
        GREETER,
        "-c",
        "4",
        "-n",
        "40",
    ])
    .await;
    assert_eq!(s.total.samples, 40, "every call is counted");
    assert_eq!(errors_of(&s, ErrorClass::Connect), 40);
    assert_eq!(s.total.latency.len(), 0, "no call succeeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_gives_classified_errors_and_no_hang() {
    let t = target(GrpcTarget::default()).await;
    let url = t.url();
    let (plan, d) = driver(&[
        &url,
        "--call",
        "helloworld.Greeter/SayHello",
        "-c",
        "4",
        "-z",
        "1500ms",
        "-t",
        "500ms",
    ])
    .await;
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        drop(t);
    });
    let started = std::time::Instant::now();
    let s = throng::engine::run(plan, Arc::new(d)).await.unwrap();
    stopper.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "no hang");
    assert!(s.total.samples > s.total.errors, "calls succeeded first");
    let broken = errors_of(&s, ErrorClass::Connect) + errors_of(&s, ErrorClass::Reset);
    assert!(broken > 0, "{:?}", s.errors);
    assert_eq!(
        broken + errors_of(&s, ErrorClass::Timeout) + errors_of(&s, ErrorClass::Aborted),
        s.total.errors,
        "{:?}",
        s.errors
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_four_call_kinds_answer_what_the_greeter_sends() {
    // gRPC's connections are local tasks (throng-h2's): calls outside the engine's workers go
    // from a LocalSet.
    tokio::task::LocalSet::new()
        .run_until(async {
            let t = target(GrpcTarget::default()).await;
            let url = t.url();
            let reply = |args: Vec<String>| async move {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let (_, d) = driver(&args).await;
                let pool = Pool::default();
                let mut session = throng::core::Driver::session(&d, &pool, 0);
                let kind = d.step().expect("a step").method().expect("known").kind;
                let (outcome, reply) = d.send(&mut session, true).await;
                assert_eq!(outcome.error, None, "{:?}", outcome.message);
                (kind, reply.unwrap().json.unwrap())
            };
            let call = |m: &str, data: &str| {
                vec![
                    url.clone(),
                    "--call".into(),
                    format!("helloworld.Greeter/{m}"),
                    "-d".into(),
                    data.into(),
                    "-n".into(),
                    "1".into(),
                ]
            };
            let (kind, json) = reply(call("SayHello", r#"{"name":"a"}"#)).await;
            assert_eq!(kind, CallKind::Unary);
            assert_eq!(json["message"], "Hello a");
            // -H is metadata, and -t goes to the server as grpc-timeout.
            let mut args = call("SayHello", "{}");
            args.extend(["-H", "x-echo: yes", "-t", "1500ms"].map(String::from));
            let (_, d) = driver(&args.iter().map(String::as_str).collect::<Vec<_>>()).await;
            let mut session = throng::core::Driver::session(&d, &Pool::default(), 0);
            let reply_md = d.send(&mut session, true).await.1.unwrap();
            assert_eq!(reply_md.meta("x-echo"), Some("yes"));
            assert_eq!(reply_md.meta("x-deadline"), Some("1500000u"));
            let (kind, json) = reply(call("SayHellos", r#"{"name":"b","count":4}"#)).await;
            assert_eq!(kind, CallKind::ServerStreaming);
            let indexes: Vec<_> = json
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["index"].clone())
                .collect();
            assert_eq!(indexes, [0, 1, 2, 3]);
            let (kind, json) = reply(call(
                "CollectHellos",
                r#"[{"name":"c"},{"name":"d"},{"name":"e"}]"#,
            ))
            .await;
            assert_eq!(kind, CallKind::ClientStreaming);
            assert_eq!(json["message"], "Hello c, d, e");
            assert_eq!(json["index"], 3);
            // One JSON object per line is a stream too.
            let (kind, json) = reply(call("Chat", "{\"name\":\"f\"}\n{\"name\":\"g\"}\n")).await;
            assert_eq!(kind, CallKind::Bidi);
            let names: Vec<_> = json
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["message"].clone())
                .collect();
            assert_eq!(names, ["Hello f", "Hello g"]);
            // Streaming calls under load: one row per call, every one counted.
            let s = run(&[
                &url,
                "--call",
                "helloworld.Greeter/SayHellos",
                "-d",
                r#"{"count":5}"#,
                "-n",
                "30",
            ])
            .await;
            assert_eq!((s.total.samples, s.total.errors), (30, 0));
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflection_falls_back_to_v1alpha() {
    let t = target(GrpcTarget {
        v1alpha_only: true,
        ..GrpcTarget::default()
    })
    .await;
    let s = run(&[&t.url(), "--call", "helloworld.Greeter/SayHello", "-n", "7"]).await;
    assert_eq!((s.total.samples, s.total.errors), (7, 0));
}

/// Bad input: exit 2 before any load, the problem named.
#[test]
fn bad_input_exits_2_naming_the_problem() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t = rt.block_on(target(GrpcTarget::default()));
    let bare = rt.block_on(target(GrpcTarget {
        reflection: false,
        ..GrpcTarget::default()
    }));
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.proto");
    std::fs::write(
        &broken,
        "syntax = \"proto3\";\nmessage A {\n  string a = 1\n}\n",
    )
    .unwrap();
    let broken = broken.display().to_string();
    let url = t.url();
    let with_path = format!("{url}/helloworld.Greeter/SayHello");
    let bare_url = bare.url();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec![&with_path, "--call", "helloworld.Greeter/SayHello"],
            "a gRPC URL has no path".into(),
        ),
        (
            vec![&url, "--call", "helloworld.Nope/SayHello"],
            "no service `helloworld.Nope`".into(),
        ),
        (
            vec![&url, "--call", "helloworld.Greeter/Nope"],
            "has no method `Nope` (methods: SayHello, SayHellos, CollectHellos, Chat)".into(),
        ),
        (
            vec![
                &url,
                "--call",
                "helloworld.Greeter/SayHello",
                "-d",
                r#"{"name":"x","cnt":1}"#,
            ],
            "unknown field `cnt` in helloworld.HelloRequest".into(),
        ),
        (
            vec![
                &url,
                "--call",
                "helloworld.Greeter/SayHello",
                "-d",
                r#"{"count":"many"}"#,
            ],
            "field `count`".into(),
        ),
        (
            vec![
                &url,
                "--call",
                "helloworld.Greeter/SayHello",
                "--proto",
                "missing.proto",
            ],
            "missing.proto: no such file".into(),
        ),
        (
            vec![&url, "--call", "a.B/C", "--proto", &broken],
            format!("{broken}:4:1: expected ';'"),
        ),
        (
            vec![&bare_url, "--call", "helloworld.Greeter/SayHello"],
            "serves no reflection".into(),
        ),
        (vec![&url], "needs --call".into()),
        // A mistyped row, said before the server (here one that serves no reflection) is asked.
        (
            vec![
                &bare_url,
                "--call",
                "helloworld.Greeter/SayHello",
                "--threshold",
                "p99{helloworld.Greeter/SayHelo}<1s",
            ],
            "no step or group is labelled \"helloworld.Greeter/SayHelo\"".into(),
        ),
        (
            vec![&url, "--call", "helloworld.Greeter/SayHello", "-k"],
            "apply to grpcs:// targets".into(),
        ),
    ];
    common::refused(&cases);
    assert_eq!(t.calls() + bare.calls(), 0, "no load was sent");
}

#[test]
fn the_json_result_names_grpc_statuses_and_validates() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t = rt.block_on(target(GrpcTarget {
        status: 5,
        ..GrpcTarget::default()
    }));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = throng(&[
        "run",
        &t.url(),
        "--call",
        "helloworld.Greeter/SayHello",
        "-n",
        "12",
        "--quiet",
        "--no-tui",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.code().is_some(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(result["status_codes"]["grpc 5 NOT_FOUND"], 12, "{result}");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&result)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("grpc 5 NOT_FOUND: 12"), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcs_with_its_certificate_or_insecure_and_a_tls_error_without() {
    let t = target(GrpcTarget {
        tls: true,
        ..GrpcTarget::default()
    })
    .await;
    let url = t.url();
    assert!(url.starts_with("grpcs://"));
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, t.cert_pem.as_deref().unwrap()).unwrap();
    let ca = ca.to_str().unwrap();
    let call = [
        "--call",
        "helloworld.Greeter/SayHello",
        "--proto",
        GREETER,
        "-n",
        "20",
    ];
    for extra in [&["--cacert", ca][..], &["--insecure"][..]] {
        let mut args = vec![url.as_str()];
        args.extend(call);
        args.extend(extra);
        let s = run(&args).await;
        assert_eq!(
            (s.total.samples, s.total.errors),
            (20, 0),
            "{extra:?}: {:?}",
            s.errors
        );
    }
    // Without either, the self-signed certificate is refused: every call is a `tls` error.
    let mut args = vec![url.as_str()];
    args.extend(call);
    let s = run(&args).await;
    assert_eq!(errors_of(&s, ErrorClass::Tls), 20, "{:?}", s.errors);
    assert_eq!(t.calls(), 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_faults_are_classified() {
    use throng::testbed::Fault;
    for (fault, class) in [
        (Fault::Reset, ErrorClass::Reset),
        (Fault::Garbage, ErrorClass::Protocol),
        (Fault::Hang, ErrorClass::Timeout),
    ] {
        let t = target(GrpcTarget {
            fault: Some(fault),
            ..GrpcTarget::default()
        })
        .await;
        let s = run(&[
            &t.url(),
            "--call",
            "helloworld.Greeter/SayHello",
            "--proto",
            GREETER,
            "-c",
            "2",
            "-n",
            "6",
            "-t",
            "300ms",
            "--connect-timeout",
            "300ms",
        ])
        .await;
        assert_eq!(s.total.samples, 6, "{fault:?}");
        assert_eq!(errors_of(&s, class), 6, "{fault:?}: {:?}", s.errors);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_interval_paces_a_client_stream_and_health_answers() {
    let t = target(GrpcTarget::default()).await;
    let url = t.url();
    // Three messages, 80 ms apart: each call lasts at least 160 ms.
    let s = run(&[
        &url,
        "--call",
        "helloworld.Greeter/CollectHellos",
        "-d",
        r#"[{"name":"a"},{"name":"b"},{"name":"c"}]"#,
        "--message-interval",
        "80ms",
        "-n",
        "2",
    ])
    .await;
    assert_eq!((s.total.samples, s.total.errors), (2, 0));
    let min = s.total.latency.min();
    assert!(min >= 160_000, "{min} µs");
    // The testbed's health service, found by reflection like any other.
    let s = run(&[
        &url,
        "--call",
        "grpc.health.v1.Health/Check",
        "-d",
        r#"{"service":"helloworld.Greeter"}"#,
        "-n",
        "5",
    ])
    .await;
    assert_eq!((s.total.samples, s.total.errors), (5, 0), "{:?}", s.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_loop_sends_every_arrival() {
    let t = target(GrpcTarget::default()).await;
    let s = run(&[
        &t.url(),
        "--call",
        "helloworld.Greeter/SayHello",
        "-q",
        "300",
        "-z",
        "1s",
    ])
    .await;
    assert_eq!(s.total.samples, 300, "{:?}", s.errors);
    assert_eq!(s.total.errors, 0);
    assert_eq!(t.calls(), 300);
}

#[test]
fn a_failed_threshold_exits_99() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t = rt.block_on(target(GrpcTarget {
        status: 8,
        ..GrpcTarget::default()
    }));
    let out = throng(&[
        "run",
        &t.url(),
        "--call",
        "helloworld.Greeter/SayHello",
        "-n",
        "10",
        "--no-tui",
        "--quiet",
        "--threshold",
        "error_rate<1%",
    ]);
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("grpc 8 RESOURCE_EXHAUSTED: 10"));
}

#[test]
fn two_grpc_targets_compare_in_one_command() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fast = rt.block_on(target(GrpcTarget::default()));
    let slow = rt.block_on(target(GrpcTarget {
        delay: Delay::Fixed(Duration::from_millis(3)),
        ..GrpcTarget::default()
    }));
    let out = throng(&[
        "run",
        &fast.url(),
        "--call",
        "helloworld.Greeter/SayHello",
        "--target",
        &format!("fast={}", fast.url()),
        "--target",
        &format!("slow={}", slow.url()),
        "-c",
        "2",
        "-n",
        "100",
        "--no-tui",
        "--quiet",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("fast (baseline)") && text.contains("slow"),
        "{text}"
    );
    assert_eq!((fast.calls(), slow.calls()), (100, 100));
}

/// A server that does not speak HTTP/2 (the HTTP target answering garbage, an HTTP/1.1-only
/// server, the gRPC target answering garbage), under both load models: every call fails at
/// its connect, users back off rather than spin (a closed loop used to keep its worker at 100%
/// CPU in the error path, past `-z` and every signal), and the run ends on time with a valid
/// result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_speak_http2_fails_as_protocol_and_the_run_ends() {
    use throng::testbed::{Fault, HttpTarget};
    let garbage = HttpTarget {
        fault: Some(Fault::Garbage),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let http1 = HttpTarget {
        http1_only: true,
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let grpc_garbage = faulty(Fault::Garbage).await;
    // hyper's HTTP/1.1-only server closes on the HTTP/2 preface without a word: `protocol` on
    // throng-h2, as for HTTP/2 (a connection closed before any byte of the server's SETTINGS;
    // one reset by the server stays a `reset`). nginx answers 400 first: `protocol` too.
    let urls = [
        (
            "garbage",
            garbage.url().replace("http://", "grpc://"),
            ErrorClass::Protocol,
        ),
        (
            "HTTP/1.1 only",
            http1.url().replace("http://", "grpc://"),
            ErrorClass::Protocol,
        ),
        ("gRPC garbage", grpc_garbage.url(), ErrorClass::Protocol),
    ];
    for (name, url, class) in &urls {
        for model in [&["-c", "2", "-z", "1s"][..], &["-q", "50", "-z", "1s"][..]] {
            let what = format!("{name} {model:?}");
            let mut args = vec![
                url.as_str(),
                "--call",
                "helloworld.Greeter/SayHello",
                "--proto",
                GREETER,
                "-t",
                "300ms",
                "--connect-timeout",
                "300ms",
                "--grace",
                "300ms",
            ];
            args.extend(model);
            let began = std::time::Instant::now();
            let s = tokio::time::timeout(Duration::from_secs(30), run(&args))
                .await
                .unwrap_or_else(|_| panic!("{what}: the run did not end within 30 s"));
            let took = began.elapsed();
            // 1 s of load and at most the grace; the rest is margin for a busy machine.
            assert!(took < Duration::from_secs(10), "{what}: took {took:?}");
            let t = &s.total;
            assert!(t.samples > 0, "{what}");
            assert_eq!(t.errors, t.samples, "{what}: {:?}", s.errors);
            assert_eq!(errors_of(&s, *class), t.samples, "{what}: {:?}", s.errors);
            if model[0] == "-c" {
                // Backing off from 10 ms up to 1 s, each user tries about 8 times in 1 s.
                assert!(t.samples <= 40, "{what}: {} calls", t.samples);
            } else {
                assert_eq!(t.samples, 50, "{what}");
            }
            let r = common::result(&s);
            assert_eq!(r.total.samples, t.samples, "{what}");
        }
    }
}

/// Reflection against a server that accepts and never answers ends within the connect timeout:
/// for the command line's URL as the run's failure rather than bad input, for a scenario's
/// target with its steps failing when they run (both waited forever, past `-z`,
/// `--connect-timeout` and Ctrl-C).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflection_without_an_answer_ends_within_the_connect_timeout() {
    use throng::grpc::{GrpcClient, GrpcConfig, GrpcError};
    use throng::testbed::Fault;
    let hang = faulty(Fault::Hang).await;
    let mut cfg = GrpcConfig::new(&hang.url(), "helloworld.Greeter/SayHello").unwrap();
    cfg.connect_timeout = Duration::from_millis(300);
    let began = std::time::Instant::now();
    let e = tokio::time::timeout(Duration::from_secs(30), GrpcClient::one_step(cfg))
        .await
        .expect("reflection ends")
        .expect_err("reflection fails");
    assert!(matches!(e, GrpcError::Unanswered { .. }), "{e}");
    assert!(!e.is_input(), "{e}");
    assert!(e.to_string().contains("no answer within 300ms"), "{e}");
    let took = began.elapsed();
    assert!(took < Duration::from_secs(10), "{took:?}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hang.yaml");
    std::fs::write(
        &file,
        format!(
            "targets: {{ g: {} }}\nsteps:\n  - label: hello\n    grpc: {{ target: g, call: helloworld.Greeter/SayHello, message: {{ name: a }} }}\n",
            hang.url()
        ),
    )
    .unwrap();
    let began = std::time::Instant::now();
    let out = tokio::task::spawn_blocking(move || {
        throng(&[
            "run",
            file.to_str().unwrap(),
            "-n",
            "1",
            "--connect-timeout",
            "300ms",
            "--no-tui",
        ])
    })
    .await
    .unwrap();
    let took = began.elapsed();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < Duration::from_secs(20), "{took:?}: {said}");
    // A scenario's target whose reflection could not be asked leaves its steps to fail when
    // they run: the one call fails, at its connect's timeout.
    assert!(said.contains("100.00%"), "{said}");
    assert!(said.contains("after 300ms"), "{said}");
    // A URL's run whose server's reflection did not answer is the run's failure (exit 1), not
    // bad input (exit 2).
    let url = hang.url();
    let out = tokio::task::spawn_blocking(move || {
        throng(&[
            "run",
            &url,
            "--call",
            "helloworld.Greeter/SayHello",
            "-n",
            "1",
            "--connect-timeout",
            "300ms",
            "--no-tui",
        ])
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no answer within 300ms"), "{err}");
    assert_eq!(hang.calls(), 0);
}

/// Users that share a connection share its failed connect: against a server that accepts and
/// never answers, 10 users on one connection all fail at the connect timeout (each used to
/// try again in turn when the attempt it waited for failed, the tenth 3 s late).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_waiting_for_a_connection_share_its_failure() {
    use throng::testbed::Fault;
    let hang = faulty(Fault::Hang).await;
    let s = run(&[
        &hang.url(),
        "--call",
        "helloworld.Greeter/SayHello",
        "--proto",
        GREETER,
        "-c",
        "10",
        "-n",
        "10",
        "--threads",
        "1",
        "-t",
        "300ms",
        "--connect-timeout",
        "300ms",
    ])
    .await;
    assert_eq!(s.total.samples, 10);
    assert_eq!(errors_of(&s, ErrorClass::Timeout), 10, "{:?}", s.errors);
    // A timeout waited: it is in latency, at about the connect timeout.
    let max = s.total.latency.max();
    assert!(max < 1_500_000, "{max} µs");
}

/// `examples/grpc.rs` (gRPC from the library, no command line) does what its doc says: 2,000
/// calls answered, its thresholds held (exit 0), its JSON result written with those counts.
/// `cargo test` builds the examples beside the tests.
#[test]
fn the_grpc_example_runs_on_the_library_alone() {
    let example = crate::common::example("grpc");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let out = std::process::Command::new(&example)
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the example runs");
    let said = common::said(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("the greeter answered 2000 calls"), "{said}");
    let result: throng::report::RunResult =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(result.total.samples, 2_000);
    assert_eq!(result.total.errors, 0);
    assert!(result.passed());
}
