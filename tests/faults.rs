//! Truth under faults: a hung, dead or overwhelmed target, and the ends of runs, against real
//! in-process targets. Every request and every scheduled arrival must end in exactly one count,
//! and no figure may make a broken target look healthy.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{errors_of, result, run, setup};
use throng::core::{ErrorClass, Percentiles, Snapshot};
use throng::report::Threshold;
use throng::testbed::{Fault, HttpTarget};

fn thresholds(s: &Snapshot, list: &[&str]) -> Vec<(bool, Option<f64>)> {
    let r = result(s);
    list.iter()
        .map(|t| {
            let e = t.parse::<Threshold>().unwrap().evaluate(&r);
            (e.passed, e.observed)
        })
        .collect()
}

/// A port on which nothing listens: bound, then released.
fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}/")
}

/// A target that never answers: every request is cut off at the end of the grace period, counts
/// as a failure and in latency at its age, and no threshold passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_target_fails_its_thresholds() {
    let target = common::faulty(Fault::Hang).await;
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-q", "100", "-z", "1s", "--grace", "500ms"]).await;
    let lag = s.lag.as_ref().unwrap();
    assert_eq!(lag.scheduled, 100);
    assert_eq!(lag.started(), 100);
    assert_eq!(s.aborted, 100);
    assert_eq!(s.total.samples, 100);
    assert_eq!(s.total.errors, 100);
    assert_eq!(errors_of(&s, ErrorClass::Aborted), 100);
    assert_eq!(s.total.completed(), 0);
    // Each waited from its intended start to the end of the grace: 0.5 s to 1.5 s.
    let p = Percentiles::of(&s.total.latency);
    assert_eq!(p.count, 100);
    assert!(p.min >= 490_000, "min {} us", p.min);
    assert!(p.max < 3_000_000, "max {} us", p.max);
    let checks = thresholds(&s, &["error_rate<1%", "p99<100ms", "p50<400ms", "rps>=1"]);
    assert!(checks[..3].iter().all(|(passed, _)| !passed), "{checks:?}");
    assert_eq!(checks[0].1, Some(1.0));
    assert_eq!(checks[3], (false, Some(0.0)));
    let r = result(&s);
    assert_eq!(r.total.throughput, 0.0, "nothing completed");
    assert!(r.warnings.iter().any(|w| w.contains("still unanswered")));
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("no request succeeded")));
}

/// Nothing listens: users back off instead of retrying refused connects in a tight loop, the
/// failures are timed apart, and there is no latency to pass a threshold with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_target_backs_off_and_shows_no_latency() {
    let url = dead_url();
    let s = run(&[&url, "-c", "4", "-z", "1s"]).await;
    // Backing off 10 ms doubling (drawn from each wait's upper half), a user tries about 8 times a
    // second; without it, thousands.
    assert!(
        (4..=60).contains(&s.total.samples),
        "{} attempts",
        s.total.samples
    );
    assert_eq!(errors_of(&s, ErrorClass::Connect), s.total.samples);
    assert_eq!(Percentiles::of(&s.total.latency).count, 0);
    assert_eq!(Percentiles::of(&s.total.failed).count, s.total.samples);
    let checks = thresholds(&s, &["p99<250ms", "mean<1s", "error_rate<50%", "rps>=1"]);
    assert_eq!(checks[0], (false, None));
    assert_eq!(checks[1], (false, None));
    assert!(!checks[2].0 && !checks[3].0, "{checks:?}");
    let table = throng::report::render_table(&result(&s));
    assert!(table.lines().nth(2).unwrap().contains(" - "), "{table}");
}

/// A target refusing connections for part of the run: its refusals do not pull the latency of
/// the real answers down (they are timed apart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_do_not_dilute_real_latency() {
    let target = common::delayed(20).await;
    let good = format!("{}/", target.url());
    let healthy = run(&[&good, "-c", "4", "-z", "1s"]).await;
    let dead = run(&[&dead_url(), "-c", "4", "-z", "1s"]).await;
    // Mixed into one row, as a single run would see them:
    let mut mixed = healthy.total.clone();
    mixed.add(&dead.total);
    let p = Percentiles::of(&mixed.latency);
    assert!(p.p50 >= 20_000, "p50 {} us", p.p50);
    assert_eq!(p.count, healthy.total.samples);
}

/// Every arrival whose time came is started, dropped or aborted, and they add up exactly,
/// including the last ones of the schedule (they used to vanish at the deadline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_arrival_is_accounted_for() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    for (rate, secs, expect) in [("20000", "1s", 20_000), ("3000", "2s", 6_000)] {
        let s = run(&[&url, "-q", rate, "-z", secs]).await;
        let lag = s.lag.as_ref().unwrap();
        assert_eq!(lag.scheduled, expect, "-q {rate} -z {secs}");
        assert_eq!(
            lag.started() + lag.dropped + lag.unstarted,
            expect,
            "-q {rate}"
        );
        // A dropped arrival is a sample too: a failure of class `dropped`.
        assert_eq!(s.total.samples, expect);
        assert_eq!(s.total.dropped, lag.dropped);
        assert!(target.requests() >= lag.started());
    }
}

/// A rate far past what any generator can start: the run still ends on time, keeps sending at
/// its best, counts the rest as dropped (exactly), and warns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absurd_rate_ends_on_time_and_drops_the_rest() {
    let target = HttpTarget::default().start().await.unwrap();
    let url = format!("{}/", target.url());
    let began = Instant::now();
    let s = run(&[&url, "-q", "1e12", "-z", "1s", "--max-in-flight", "20"]).await;
    assert!(
        began.elapsed() < Duration::from_secs(6),
        "{:?}",
        began.elapsed()
    );
    let lag = s.lag.as_ref().unwrap();
    assert_eq!(lag.scheduled, 1_000_000_000_000);
    assert_eq!(lag.started() + lag.dropped + lag.unstarted, lag.scheduled);
    assert!(lag.started() > 50, "started {}", lag.started());
    // The only failures are the arrivals it could not start.
    assert_eq!(s.total.errors, lag.dropped, "{:?}", s.errors);
    let r = result(&s);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("the generator started only")),
        "{:?}",
        r.warnings
    );
}

/// Ramp-up with a loop count (JMeter's): every user that started completes its iterations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramped_users_complete_their_iterations() {
    let target = common::delayed(2).await;
    let url = format!("{}/", target.url());
    let s = run(&[&url, "--user-stages", "1s:20", "-i", "5"]).await;
    assert_eq!(s.total.samples, 100);
    assert_eq!(target.requests(), 100);
    // A ramp down does not retire users that owe iterations either.
    let s = run(&[&url, "--user-stages", "500ms:10,200ms:0", "-i", "30"]).await;
    assert_eq!(s.total.samples, 300);
}

/// A staged run ends with its stages, or with -z if that comes first, and does not idle through
/// the grace period once nothing is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stages_end_the_run_without_idling() {
    let target = common::delayed(3).await;
    let url = format!("{}/", target.url());
    for args in [
        vec!["--user-stages", "700ms:5"],
        vec!["--user-stages", "700ms:5", "-z", "10s"],
        vec!["--user-stages", "5s:50", "-z", "700ms"],
        vec!["-q", "0", "--rate-stages", "700ms:200", "-z", "10s"],
    ] {
        let mut a = vec![url.as_str()];
        a.extend(&args);
        let s = run(&a).await;
        let secs = s.elapsed.as_secs_f64();
        assert!((0.65..1.5).contains(&secs), "{args:?}: {secs} s");
        assert!(s.total.samples > 0, "{args:?}");
    }
}

/// Aborting (a second Ctrl-C) cuts the grace period short: in-flight requests are aborted now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_cuts_the_grace_short() {
    let target = common::faulty(Fault::Hang).await;
    let url = format!("{}/", target.url());
    let (plan, driver) = setup(&[&url, "-c", "3", "-z", "30s", "--grace", "60s"]);
    let handle = throng::engine::start(plan, Arc::new(driver)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    handle.stop();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let began = Instant::now();
    handle.abort();
    let s = handle.wait().await;
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(s.aborted, 3);
    assert_eq!(s.total.samples, 3);
    let p = Percentiles::of(&s.total.latency);
    assert!(p.min >= 700_000, "they waited at least 0.8 s: {} us", p.min);
}

/// A request that times out waited its whole timeout: it counts in latency (at the timeout), so
/// a slow target cannot pass a latency threshold by timing out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_count_in_latency() {
    let target = common::delayed(400).await;
    let url = format!("{}/", target.url());
    let s = run(&[&url, "-c", "2", "-n", "6", "-t", "100ms"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Timeout), 6);
    let p = Percentiles::of(&s.total.latency);
    assert_eq!(p.count, 6);
    assert!(p.min >= 100_000, "min {} us", p.min);
    let checks = thresholds(&s, &["p99<50ms"]);
    assert!(!checks[0].0);
}

/// HTTP/2's timeout is a deadline its connection's task watches with one timer for all its
/// streams: a request times out when it passes, though nothing else arrives on the connection,
/// its stream is cancelled, and the connection goes on carrying the next ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_timeouts_fire_on_a_quiet_connection_and_it_goes_on() {
    let target = common::delayed(400).await;
    let url = format!("{}/", target.url());
    let s = run(&[&url, "--http2", "-c", "2", "-n", "6", "-t", "100ms"]).await;
    assert_eq!(errors_of(&s, ErrorClass::Timeout), 6);
    let p = Percentiles::of(&s.total.latency);
    assert_eq!(p.count, 6);
    assert!(p.min >= 100_000, "min {} us", p.min);
    assert!(
        p.max < 350_000,
        "timed out by its deadline, not the late answer: {} us",
        p.max
    );
    let url = format!("{}/delay/20", target.url());
    let s = run(&[&url, "--http2", "-c", "2", "-n", "6", "-t", "1s"]).await;
    assert_eq!(s.total.errors, 0);
    assert_eq!(s.total.samples, 6);
}
