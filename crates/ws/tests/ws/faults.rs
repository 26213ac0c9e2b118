//! The fault matrix: every failure classified, counted once, never a hang; closed and open
//! loop.

use std::time::Duration;

use throng_core::ErrorClass;
use throng_testbed::HttpTarget;
use throng_ws::serve::{WsFault, WsTarget};
use throng_ws::status::{self, OPEN};
use throng_ws::WsStep;

use crate::common::*;

async fn faulty(fault: WsFault) -> throng_ws::serve::RunningWs {
    WsTarget {
        fault: Some(fault),
        ..WsTarget::default()
    }
    .start()
    .await
    .unwrap()
}

/// A closed run of 2 users × 3 iterations of one message against `url`: every sample fails
/// with `want`.
async fn all_fail(url: &str, want: ErrorClass) -> std::sync::Arc<throng_core::Snapshot> {
    let s = run(closed(2, 3), steps(url, &options(), WsStep::text(["x"]))).await;
    let r = row(&s);
    assert_eq!(r.samples, 6, "{url}: {}", errors(&s));
    assert_eq!(class(r, want), 6, "{url}: {}", errors(&s));
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_port_is_connect() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    all_fail(&format!("ws://127.0.0.1:{port}/"), ErrorClass::Connect).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_the_upgrade_is_a_timeout() {
    let server = faulty(WsFault::Hang).await;
    all_fail(&server.url(), ErrorClass::Timeout).await;
    assert_eq!(server.handshakes(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_a_message_is_a_timeout() {
    let server = faulty(WsFault::Silent).await;
    all_fail(&server.url(), ErrorClass::Timeout).await;
    // Each timeout drops its connection (replies late on it would count in the next step).
    assert_eq!(server.handshakes(), 6);
    assert_eq!(server.received(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_is_reset_and_the_user_reconnects() {
    let server = faulty(WsFault::Reset).await;
    all_fail(&server.url(), ErrorClass::Reset).await;
    assert_eq!((server.handshakes(), server.received()), (6, 6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_for_an_upgrade_is_protocol() {
    let server = faulty(WsFault::Garbage).await;
    all_fail(&server.url(), ErrorClass::Protocol).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_refused_or_not_understood_is_protocol() {
    let server = faulty(WsFault::Refuse(403)).await;
    let s = all_fail(&server.url(), ErrorClass::Protocol).await;
    assert!(errors(&s).contains("HTTP 403"), "{}", errors(&s));
    // An HTTP server that knows nothing of WebSocket answers 200.
    let http = HttpTarget::default().start().await.unwrap();
    let url = format!("ws://{}/", http.addr);
    let s = all_fail(&url, ErrorClass::Protocol).await;
    assert!(errors(&s).contains("HTTP 200"), "{}", errors(&s));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_code_is_the_status_and_a_failing_one_is_class_status() {
    let server = faulty(WsFault::Close {
        code: 1011,
        after: 0,
    })
    .await;
    let s = all_fail(&server.url(), ErrorClass::Status).await;
    assert_eq!(status_count(&s, status::status(1011)), 6);
    assert!(
        errors(&s).contains("ws 1011 INTERNAL_ERROR (testbed)"),
        "{}",
        errors(&s)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_close_before_the_reply_is_reset() {
    // One answer per connection, then a normal close at the next message.
    let server = faulty(WsFault::Close {
        code: 1000,
        after: 1,
    })
    .await;
    let s = run(
        closed(1, 6),
        steps(&server.url(), &options(), WsStep::text(["x"])),
    )
    .await;
    let r = row(&s);
    assert_eq!(r.samples, 6);
    assert_eq!(
        (class(r, ErrorClass::Reset), r.errors),
        (3, 3),
        "{}",
        errors(&s)
    );
    assert_eq!(status_count(&s, OPEN), 3);
    assert_eq!(status_count(&s, status::status(1000)), 3);
    assert_eq!(server.handshakes(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_run_fails_what_follows_and_the_counts_add_up() {
    let server = WsTarget {
        delay: Duration::from_millis(10),
        ..WsTarget::default()
    }
    .start()
    .await
    .unwrap();
    let plan = closed_for(3, Duration::from_millis(1200));
    let steps = steps(&server.url(), &options(), WsStep::text(["x"]));
    let running = tokio::spawn(run(plan, steps));
    tokio::time::sleep(Duration::from_millis(400)).await;
    let answered = server.sent();
    server.stop();
    let s = running.await.unwrap();
    let r = row(&s);
    assert!(answered > 0);
    assert!(r.errors > 0, "the run went on without its server");
    assert_eq!(r.samples, r.succeeded() + r.errors);
    // What failed, failed as a dropped connection or a refused one, nothing else.
    let known = class(r, ErrorClass::Reset) + class(r, ErrorClass::Connect);
    assert_eq!(known, r.errors, "{}", errors(&s));
    // Every success was an answer the server sent.
    assert!(
        r.succeeded() <= server.sent(),
        "{} > {}",
        r.succeeded(),
        server.sent()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_open_loop_counts_every_arrival_once() {
    let good = WsTarget::default().start().await.unwrap();
    let s = run(
        open(100.0, 40, 4),
        steps(&good.url(), &options(), WsStep::text(["x"])),
    )
    .await;
    let r = row(&s);
    assert_eq!((r.samples, r.errors), (40, 0), "{}", errors(&s));
    assert_eq!(good.received(), 40);
    assert!(good.handshakes() <= 4, "{} connections", good.handshakes());
    let bad = faulty(WsFault::Reset).await;
    let s = run(
        open(100.0, 40, 4),
        steps(&bad.url(), &options(), WsStep::text(["x"])),
    )
    .await;
    let r = row(&s);
    let lag = s.lag.as_ref().expect("open-loop lag");
    // Every arrival is a sample or was dropped; every sample a reset.
    assert_eq!(r.samples + lag.dropped, 40, "{}", errors(&s));
    assert_eq!(
        class(r, ErrorClass::Reset) + class(r, ErrorClass::Dropped),
        r.errors
    );
    assert_eq!(bad.received(), class(r, ErrorClass::Reset));
}
