//! The engine and the HTTP driver against real in-process targets whose timing is known.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::time::Duration;

use common::{errors_of, result, run};
use throng::core::{ErrorClass, Percentiles};
use throng::testbed::{Delay, Fault, HttpTarget};

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_sends_exactly_n_requests() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "7", "-n", "1003"]).await;
    assert_eq!(s.total.samples, 1003);
    assert_eq!(target.requests(), 1003, "the server saw a different count");
    assert_eq!(s.total.errors, 0);
    assert_eq!(s.statuses, vec![(throng::http::status::status(200), 1003)]);
    // One connection per user with keep-alive.
    assert_eq!(target.connections(), 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_iterations_per_user() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "5", "-i", "21"]).await;
    assert_eq!(s.total.samples, 105);
    assert_eq!(target.requests(), 105);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_keepalive_opens_a_connection_per_request() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "3", "-n", "60", "--no-keepalive"]).await;
    assert_eq!(s.total.samples, 60);
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    assert_eq!(target.connections(), 60);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_are_counted_on_the_wire() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "2", "-n", "100"]).await;
    let request = format!("GET / HTTP/1.1\r\nhost: {}\r\n\r\n", target.addr);
    assert_eq!(s.total.bytes_sent, 100 * request.len() as u64);
    // "HTTP/1.1 200 OK\r\n" + content-length + date headers + "ok\n": at least 40 bytes each.
    let per = s.total.bytes_received / 100;
    assert!((40..200).contains(&per), "{per} bytes per response");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_delay_is_measured() {
    let target = HttpTarget {
        delay: Delay::Fixed(Duration::from_millis(20)),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "4", "-n", "80"]).await;
    let p = Percentiles::of(&s.total.latency);
    assert!(ms(p.min) >= 20.0, "min {}", ms(p.min));
    assert!(ms(p.p50) < 60.0, "p50 {}", ms(p.p50));
    // Closed loop: latency is the service time.
    assert_eq!(Percentiles::of(&s.total.service).p50, p.p50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_runs_the_schedule() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-q", "400", "-z", "2s"]).await;
    // Evenly spaced at 400/s for 2 s: 800 arrivals, all completed.
    assert_eq!(s.total.samples, 800);
    assert_eq!(s.aborted, 0);
    let lag = s.lag.as_ref().unwrap();
    assert_eq!(lag.lag.len(), 800);
    assert_eq!(lag.dropped, 0);
    let r = result(&s);
    assert!(r.open_loop.is_some());
    assert!(s.series.len() >= 2, "{} points", s.series.len());
}

/// The open loop starts with a warm pool of slots (5 ms of arrivals at the peak rate), and the
/// arrivals rotate through them: at 4,000/s on two workers, 20 connections are opened in the
/// first moments, although a fast target needs only one or two at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_opens_a_warm_pool_of_connections() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-q", "4000", "-z", "1s", "--threads", "2"]).await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    // At least the pool (a worker held up on a busy machine may add slots beyond it).
    assert!(target.connections() >= 20, "{}", target.connections());
}

/// The achieved rate is over the time the schedule ran, not the drain after it: with each
/// request taking 400 ms, the run lasts about 2.4 s, but 800 arrivals in 2 s are 400/s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn achieved_rate_leaves_out_the_drain() {
    let target = HttpTarget {
        delay: Delay::Fixed(Duration::from_millis(400)),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-q", "400", "-z", "2s"]).await;
    assert!(s.elapsed > Duration::from_millis(2300), "{:?}", s.elapsed);
    let o = result(&s).open_loop.unwrap();
    assert!((o.achieved_rate - 400.0).abs() < 4.0, "{}", o.achieved_rate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_n_arrivals() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-q", "1000", "-n", "333"]).await;
    assert_eq!(s.total.samples, 333);
    assert_eq!(target.requests(), 333);
}

/// The classic demonstration: a target that stalls for one second. Arrivals keep coming on
/// schedule and wait, so latency shows the stall; the requests that were actually sent were
/// served quickly, so service time does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_shows_in_latency_not_in_service_time() {
    let target = HttpTarget {
        stall: Some((Duration::from_millis(1000), Duration::from_millis(2000))),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[
        &url,
        "-q",
        "200",
        "-z",
        "3s",
        "--max-in-flight",
        "2",
        "--queue",
        "10000",
        "--grace",
        "5s",
    ])
    .await;
    let lat = Percentiles::of(&s.total.latency);
    let svc = Percentiles::of(&s.total.service);
    assert_eq!(s.total.errors, 0);
    assert!(s.total.samples >= 550, "{}", s.total.samples);
    // About a third of the arrivals came during the stall and waited up to a second.
    assert!(ms(lat.p90) > 300.0, "latency p90 {} ms", ms(lat.p90));
    assert!(ms(lat.max) > 800.0, "latency max {} ms", ms(lat.max));
    // Only the two requests in flight when the stall began took long to serve.
    assert!(ms(svc.p90) < 50.0, "service p90 {} ms", ms(svc.p90));
    assert!(ms(svc.max) > 800.0, "service max {} ms", ms(svc.max));
    let lag = s.lag.as_ref().unwrap();
    assert!(lag.late > 100, "late {}", lag.late);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_queue_drops_and_counts() {
    let target = HttpTarget {
        delay: Delay::Fixed(Duration::from_millis(100)),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[
        &url,
        "-q",
        "200",
        "-z",
        "1s",
        "--max-in-flight",
        "2",
        "--queue",
        "0",
        "--threads",
        "1",
    ])
    .await;
    let lag = s.lag.as_ref().unwrap();
    // Two slots of 100 ms each serve about 20 of the 200 arrivals; nothing vanishes.
    assert!(lag.dropped > 150, "dropped {}", lag.dropped);
    assert_eq!(lag.scheduled, 200);
    assert_eq!(lag.started() + lag.dropped + lag.unstarted, 200);
    // Each dropped arrival is a failure of class `dropped`, in the error rate.
    assert_eq!(s.total.samples, 200);
    assert_eq!(errors_of(&s, ErrorClass::Dropped), lag.dropped);
    assert!(s.total.error_rate() > 0.75, "{}", s.total.error_rate());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramping_users_follow_the_stages() {
    let target = HttpTarget {
        delay: Delay::Fixed(Duration::from_millis(5)),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "--user-stages", "1s:6,1500ms:6,500ms:0"]).await;
    let peak = s.series.iter().map(|p| p.active).max().unwrap();
    assert_eq!(
        peak,
        6,
        "{:?}",
        s.series.iter().map(|p| p.active).collect::<Vec<_>>()
    );
    assert!(s.elapsed < Duration::from_secs(6), "{:?}", s.elapsed);
    assert!(s.total.samples > 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connections_are_classified() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let s = run(&[&format!("http://{addr}/"), "-c", "2", "-n", "10"]).await;
    assert_eq!(s.total.samples, 10);
    assert_eq!(errors_of(&s, ErrorClass::Connect), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_are_classified_and_the_run_ends() {
    let target = HttpTarget {
        fault: Some(Fault::Hang),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let started = std::time::Instant::now();
    let s = run(&[&url, "-c", "2", "-n", "4", "--timeout", "200ms"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Timeout), 4);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resets_are_classified() {
    let target = HttpTarget {
        fault: Some(Fault::Reset),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "2", "-n", "20"]).await;
    assert_eq!(s.total.errors, 20);
    assert_eq!(errors_of(&s, ErrorClass::Reset), 20, "{:?}", s.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_is_a_protocol_error() {
    let target = HttpTarget {
        fault: Some(Fault::Garbage),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "2", "-n", "20"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Protocol), 20, "{:?}", s.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_statuses_are_errors_with_their_code() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/status/503", target.url());
    let s = run(&[&url, "-c", "2", "-n", "30"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Status), 30);
    assert_eq!(s.statuses, vec![(throng::http::status::status(503), 30)]);
    assert_eq!(s.errors[0].sample, "HTTP 503");
    // An error status does not cost the connection.
    assert_eq!(target.connections(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_cleartext_multiplexes_users() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "20", "-n", "400", "--http2", "--threads", "1"]).await;
    assert_eq!(s.total.samples, 400);
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    // 20 users, up to 100 streams each connection, one worker: one connection.
    assert_eq!(target.connections(), 1);
    assert!(s.total.bytes_sent > 0 && s.total.bytes_received > 0);
}

/// HTTP/2 users retired by a ramp down and started again by a ramp up join the connections
/// that are there: a session leaves its connection when it ends (the pool used to count every
/// session ever made, so each ramp opened connections anew).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_users_restarted_by_a_ramp_reuse_connections() {
    let target = common::delayed(2).await;
    let url = format!("{}/", target.url());
    let s = run(&[
        &url,
        "--user-stages",
        "500ms:5,300ms:5,400ms:0,300ms:0,500ms:5,500ms:5",
        "--http2",
        "--streams",
        "5",
        "--threads",
        "1",
    ])
    .await;
    assert_eq!(s.total.errors, 0, "{:?}", s.errors);
    // The last half second is the second ramp's top: it sent load.
    let last = s.series.last().unwrap();
    assert!(last.t > 2.4 && last.requests > 0, "{:?}", s.series);
    // Five users, five streams a connection, one worker: one connection, both ramps.
    assert_eq!(target.connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_ca_file_and_alpn_h2() {
    let target = HttpTarget {
        tls: true,
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, target.cert_pem.as_ref().unwrap()).unwrap();
    let url = format!("https://localhost:{}/", target.addr.port());
    let ca = ca.to_str().unwrap();
    for extra in [&[][..], &["--http2"][..]] {
        let mut args = vec![url.as_str(), "-c", "2", "-n", "40", "--cacert", ca];
        args.extend_from_slice(extra);
        let s = run(&args).await;
        assert_eq!(s.total.samples, 40);
        assert_eq!(s.total.errors, 0, "{extra:?}: {:?}", s.errors);
    }
    // --insecure accepts it without the CA; the web roots do not.
    let s = run(&[&url, "-c", "1", "-n", "5", "--insecure"]).await;
    assert_eq!(s.total.errors, 0);
    let s = run(&[&url, "-c", "1", "-n", "5"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Tls), 5, "{:?}", s.errors);
}

/// A warm-up's requests reach the target and none of them is in the result, not even those
/// still in flight when it ends: 5 users against 100 ms answers for 1 s of warm-up and 2 s
/// measured send at most 20 requests each in the measurement (100), where the requests that
/// crossed the boundary made 105.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_up_keeps_its_requests_in_flight_out_of_the_result() {
    let target = HttpTarget {
        delay: Delay::Fixed(Duration::from_millis(100)),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "5", "-z", "2s", "--warmup", "1s"]).await;
    assert!((90..=100).contains(&s.total.samples), "{}", s.total.samples);
    // The warm-up's (about 50) reached the server.
    let warm = target.requests() - s.total.samples;
    assert!((40..=60).contains(&warm), "{warm} sent in the warm-up");
}

/// The open loop with a warm-up: the measurement holds exactly its schedule's arrivals (20/s
/// for 2 s: 40), each started, dropped or left queued, against a target that serves them all
/// and against one whose 4 seats at 50 ms hold 80 of the 160 a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_loop_warm_up_keeps_the_arrivals_adding_up() {
    let target = HttpTarget {
        delay: Delay::Fixed(Duration::from_millis(100)),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-q", "20", "-z", "2s", "--warmup", "1s"]).await;
    let lag = s.lag.as_ref().unwrap();
    assert_eq!((lag.scheduled, lag.started(), lag.dropped), (40, 40, 0));
    assert_eq!(s.total.samples, 40);

    let full = HttpTarget {
        delay: Delay::Fixed(Duration::from_millis(50)),
        capacity: Some(4),
        ..HttpTarget::default()
    }
    .start()
    .await
    .unwrap();
    let url = format!("{}/", full.url());
    let s = run(&[&url, "-c", "20", "-q", "160", "-z", "2s", "--warmup", "1s"]).await;
    let lag = s.lag.as_ref().unwrap();
    assert_eq!(lag.scheduled, 320);
    assert_eq!(lag.started() + lag.dropped + lag.unstarted, 320);
    assert_eq!(s.total.samples, 320);
    assert!(lag.dropped > 0, "the queue never filled: {lag:?}");
}
