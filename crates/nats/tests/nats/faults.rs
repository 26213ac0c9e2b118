//! The fault matrix, in both load models: a server that is not there, one killed mid-run, no
//! responders, a stalled responder, a server that does not speak NATS. Every failure is
//! classified, every run ends (bounded loads, timeouts), and publish–consume's accounting
//! still adds up.

use std::sync::Arc;
use std::time::{Duration, Instant};

use throng_core::{ErrorClass, RunPlan};
use throng_nats::status::{NO_RESPONDERS, OK};
use throng_nats::{Mode, NatsOptions, NatsStep};

use crate::common::*;

fn publishing() -> throng_core::step::ClientOptions {
    with(NatsOptions {
        mode: Mode::Publish,
        subscribers: 1,
        ..NatsOptions::default()
    })
}

/// Every sample of a run of `plan` fails with `want`; the run ends within `within`.
async fn all_fail(
    plan: RunPlan,
    url: &str,
    opts: &throng_core::step::ClientOptions,
    step: NatsStep,
    want: ErrorClass,
    samples: u64,
) -> Arc<throng_core::Snapshot> {
    let s = run(plan, Arc::new(steps(url, opts, step))).await;
    let r = row(&s);
    assert_eq!(r.samples, samples, "{url}: {}", errors(&s));
    assert_eq!(class(r, want), samples, "{url}: {}", errors(&s));
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_server_is_connect_in_both_models_and_both_modes() {
    let url = format!("nats://127.0.0.1:{}/greeter", free_port());
    for (opts, step) in [
        (options(), NatsStep::request("x")),
        (publishing(), NatsStep::publish("x")),
    ] {
        all_fail(
            closed(2, 3),
            &url,
            &opts,
            step.clone(),
            ErrorClass::Connect,
            6,
        )
        .await;
        all_fail(
            open(100.0, 20, 5),
            &url,
            &opts,
            step,
            ErrorClass::Connect,
            20,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_responders_is_its_status_in_both_models() {
    let server = NatsServer::start().unwrap();
    let url = server.url("nobody.home");
    for (plan, n) in [(closed(2, 5), 10), (open(100.0, 20, 5), 20)] {
        let s = all_fail(
            plan,
            &url,
            &options(),
            NatsStep::request("x"),
            ErrorClass::Status,
            n,
        )
        .await;
        assert_eq!(status_count(&s, NO_RESPONDERS), n);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_responder_is_a_timeout_in_both_models() {
    let server = NatsServer::start().unwrap();
    let _responder = Responder::start(&server, "slow", &["-delay", "5s"]);
    let url = server.url("slow");
    let started = Instant::now();
    let s = all_fail(
        closed(2, 2),
        &url,
        &options(),
        NatsStep::request("x"),
        ErrorClass::Timeout,
        4,
    )
    .await;
    // Each waited its timeout, no more (the responder would take 5 s).
    let r = row(&s);
    assert!(r.latency.min() >= 490_000, "{}", r.latency.min());
    assert!(r.latency.max() < 2_000_000, "{}", r.latency.max());
    all_fail(
        open(50.0, 10, 10),
        &url,
        &options(),
        NatsStep::request("x"),
        ErrorClass::Timeout,
        10,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_speak_nats_fails_the_connect() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(40) {
            let mut s = stream.unwrap();
            let _ = std::io::Write::write_all(&mut s, b"HTTP/1.1 400 Bad Request\r\n\r\n");
        }
    });
    let url = format!("nats://127.0.0.1:{port}/greeter");
    let s = run(
        closed(1, 3),
        Arc::new(steps(&url, &options(), NatsStep::request("x"))),
    )
    .await;
    let r = row(&s);
    assert_eq!(r.samples, 3);
    assert_eq!(r.errors, 3, "{}", errors(&s));
    assert_eq!(class(r, ErrorClass::Protocol), 3, "{}", errors(&s));
}

/// A server killed half a second into a run of `plan`: answers before, classified failures
/// after, and the run ends.
async fn killed_mid_run(
    plan: RunPlan,
    opts: &throng_core::step::ClientOptions,
    step: NatsStep,
    responder: bool,
) -> (
    Arc<throng_core::Snapshot>,
    Arc<throng_nats::Steps<throng_nats::NatsClient>>,
) {
    let mut server = NatsServer::start().unwrap();
    let responder = responder.then(|| Responder::start(&server, "greeter", &[]));
    let steps = Arc::new(steps(&server.url("greeter"), opts, step));
    let started = Instant::now();
    let run = tokio::spawn(run(plan, steps.clone()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.kill();
    let s = run.await.unwrap();
    drop(responder);
    assert!(started.elapsed() < Duration::from_secs(15));
    let r = row(&s);
    assert!(
        status_count(&s, OK) > 0,
        "answers before the kill: {}",
        errors(&s)
    );
    assert!(r.errors > 0, "failures after the kill");
    let classified = [
        ErrorClass::Connect,
        ErrorClass::Timeout,
        ErrorClass::Reset,
        ErrorClass::Aborted,
    ]
    .iter()
    .map(|c| class(r, *c))
    .sum::<u64>();
    assert_eq!(classified, r.errors, "{}", errors(&s));
    (s, steps)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_run_fails_requests_in_both_models() {
    killed_mid_run(
        closed_for(2, Duration::from_millis(1500)),
        &options(),
        NatsStep::request("x"),
        true,
    )
    .await;
    killed_mid_run(
        open(200.0, 300, 50),
        &options(),
        NatsStep::request("x"),
        true,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_run_loses_messages_and_every_one_is_counted() {
    for plan in [
        closed_for(2, Duration::from_millis(1500)),
        open(200.0, 300, 50),
    ] {
        let (_, steps) = killed_mid_run(plan, &publishing(), NatsStep::publish("x"), false).await;
        let published = count(&steps, "nats_published");
        let delivered = count(&steps, "nats_delivered");
        let lost = count(&steps, "nats_lost");
        let in_flight = count(&steps, "nats_in_flight_at_end");
        assert!(
            delivered > 0 && lost + in_flight > 0,
            "{delivered} {lost} {in_flight}"
        );
        assert_eq!(published, delivered + lost + in_flight);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_fail_the_connect_as_the_servers_refusal() {
    let server = NatsServer::with_args(&["--user", "throng", "--pass", "s3cret"]).unwrap();
    for (url, plan, n) in [
        (server.url("greeter"), closed(2, 3), 6),
        (
            format!("nats://throng:wrong@127.0.0.1:{}/greeter", server.port),
            open(50.0, 10, 5),
            10,
        ),
    ] {
        let s = all_fail(
            plan,
            &url,
            &options(),
            NatsStep::request("x"),
            ErrorClass::Status,
            n,
        )
        .await;
        let said = format!("{:?}", s.errors);
        assert!(said.contains("authorization"), "{said}");
        // The password is not in the message.
        assert!(!said.contains("wrong"), "{said}");
    }
    // The right ones: the server answers (no responders: nobody serves the subject).
    let url = format!("nats://throng:s3cret@127.0.0.1:{}/greeter", server.port);
    let s = run(
        closed(1, 2),
        Arc::new(steps(&url, &options(), NatsStep::request("x"))),
    )
    .await;
    assert_eq!(status_count(&s, NO_RESPONDERS), 2, "{}", errors(&s));
    // A URL run's row is labelled without the password.
    let plan = throng_nats::url_steps(&url, &options(), Some("x")).unwrap();
    assert_eq!(
        plan.labels(),
        vec![format!(
            "nats://throng:***@127.0.0.1:{}/greeter",
            server.port
        )]
    );
}
