//! The fault matrix, in the closed loop and the open loop: each fault ends in its class,
//! never a hang, and the counts add up (every request a sample, every sample the server read
//! counted by it).

use std::time::Duration;

use throng_core::{ErrorClass, RunPlan, Snapshot, Status};
use throng_tcp::serve::{Fault, RunningTcp, TcpTarget};
use throng_tcp::status::{CLOSED, OK};
use throng_tcp::TcpOptions;

use crate::common::*;

/// The two loads every fault runs under: 2 users × 4 iterations, and 8 arrivals at 40/s.
fn loads() -> [(&'static str, RunPlan); 2] {
    [
        ("closed", closed(2, 4)),
        ("open", open(40.0, Some(8), None)),
    ]
}

async fn faulty(framing: &str, fault: Fault) -> RunningTcp {
    TcpTarget {
        framing: framing.parse().unwrap(),
        fault: Some(fault),
        ..TcpTarget::default()
    }
    .start()
    .await
    .unwrap()
}

fn tcp(framing: &str) -> TcpOptions {
    TcpOptions {
        framing: framing.parse().unwrap(),
        max_reply: 1024,
        ..TcpOptions::default()
    }
}

/// Every one of the 8 requests failed with `want`, with `status` (or none).
fn all_failed(s: &Snapshot, want: ErrorClass, st: Option<Status>, what: &str) {
    let what = format!("{what}: {}", errors(s));
    assert_eq!(s.total.samples, 8, "{what}");
    assert_eq!(s.total.errors, 8, "{what}");
    assert_eq!(class(s, want), 8, "{what}");
    assert_eq!(s.aborted, 0, "{what}");
    let answered: u64 = s.statuses.iter().map(|(_, n)| n).sum();
    match st {
        Some(st) => assert_eq!(status(s, st), 8, "{what}"),
        None => assert_eq!(answered, 0, "no status without an answer: {what}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_port_is_class_connect() {
    let url = format!("tcp://127.0.0.1:{}", refused_port());
    for (name, plan) in loads() {
        let options = client_options(Duration::from_secs(2), tcp("line"));
        let s = run(plan, steps(&url, b"x", None, &options)).await;
        all_failed(&s, ErrorClass::Connect, None, name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_server_is_class_timeout_and_each_request_reached_it() {
    for (name, plan) in loads() {
        let server = faulty("line", Fault::Hang).await;
        let options = client_options(Duration::from_millis(150), tcp("line"));
        let s = run(plan, steps(&server.url(), b"x", None, &options)).await;
        all_failed(&s, ErrorClass::Timeout, None, name);
        assert_eq!(server.requests(), 8, "{name}");
        // A late reply would be read as the next request's: each timeout closes its connection.
        assert_eq!(server.connections(), 8, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_is_class_reset_without_a_status_and_a_close_is_tcp_closed() {
    for (name, plan) in loads() {
        let server = faulty("len4", Fault::Reset).await;
        let options = client_options(Duration::from_secs(2), tcp("len4"));
        let s = run(plan, steps(&server.url(), b"x", None, &options)).await;
        all_failed(&s, ErrorClass::Reset, None, &format!("reset {name}"));
        assert_eq!(server.requests(), 8, "{name}");
    }
    for (name, plan) in loads() {
        let server = faulty("line", Fault::CloseAfterRead).await;
        let options = client_options(Duration::from_secs(2), tcp("line"));
        let s = run(plan, steps(&server.url(), b"x", None, &options)).await;
        all_failed(
            &s,
            ErrorClass::Reset,
            Some(CLOSED),
            &format!("close {name}"),
        );
        assert_eq!(server.requests(), 8, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_oversized_replies_are_class_protocol_in_every_framing() {
    for framing in ["line", "len4", "len1+self", "fixed:5"] {
        for fault in [Fault::Garbage, Fault::Oversized(2048)] {
            if matches!(
                (framing, fault),
                ("len1+self" | "fixed:5", Fault::Oversized(_))
            ) {
                // Neither can say 2048 bytes: a 1-byte prefix tops out at 255, and a fixed
                // size is the client's own.
                continue;
            }
            for (name, plan) in loads() {
                let server = faulty(framing, fault).await;
                let options = client_options(Duration::from_secs(2), tcp(framing));
                let s = run(plan, steps(&server.url(), b"hello", None, &options)).await;
                let what = format!("{framing} {fault:?} {name}");
                // A frame came before the bytes after it (fixed and 1-byte prefixes read the
                // garbage's first bytes as a frame): its status is ok, the request protocol.
                let st = matches!(framing, "fixed:5" | "len1+self").then_some(OK);
                all_failed(&s, ErrorClass::Protocol, st, &what);
                assert_eq!(server.requests(), 8, "{what}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stopped_mid_run_ends_in_resets_then_refusals_with_counts_that_add_up() {
    for (name, plan) in [
        ("closed", closed_for(4, Duration::from_millis(1_200))),
        (
            "open",
            open(200.0, None, Some(Duration::from_millis(1_200))),
        ),
    ] {
        let server = TcpTarget {
            delay: Duration::from_millis(2),
            ..TcpTarget::default()
        }
        .start()
        .await
        .unwrap();
        let options = client_options(Duration::from_secs(2), TcpOptions::default());
        let driver = steps(&server.url(), b"hello", Some("hello"), &options);
        let load = tokio::spawn(run(plan, driver));
        tokio::time::sleep(Duration::from_millis(400)).await;
        let read_before_stop = server.requests();
        server.stop();
        let s = load.await.unwrap();
        let what = format!("{name}: read {read_before_stop}, {}", errors(&s));
        let ok = s.total.samples - s.total.errors;
        assert!(read_before_stop > 0 && ok > 0, "{what}");
        // Every reply came from a request the server read; at most one a connection was read
        // and never answered (20 in flight at most).
        assert!(ok <= server.requests(), "{what}");
        assert!(server.requests() <= ok + 20, "{what}");
        let connect = class(&s, ErrorClass::Connect);
        assert!(connect > 0, "after the stop, connects are refused: {what}");
        // Resets of the connections open at the stop, refusals after it, and (the open loop)
        // arrivals that found every slot backing off: nothing else.
        let classes = [
            ErrorClass::Reset,
            ErrorClass::Connect,
            ErrorClass::Dropped,
            ErrorClass::Aborted,
        ];
        let explained: u64 = classes.iter().map(|c| class(&s, *c)).sum();
        assert_eq!(explained, s.total.errors, "{what}");
        assert_eq!(status(&s, OK), ok, "{what}");
        assert!(s.elapsed < Duration::from_secs(5), "{what} {:?}", s.elapsed);
    }
}
