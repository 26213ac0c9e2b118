//! A mix's workloads merged into the one snapshot its views draw.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::sync::Arc;
use std::time::Duration;

use throng_core::{ErrorClass, ErrorStat, RunState};
use throng_tui::merge;

#[test]
fn the_workloads_add_up_and_each_row_keeps_its_name() {
    let w = common::mix_failing();
    let (a, b) = (&w[0].snap, &w[1].snap);
    let m = merge(&w).unwrap();
    assert_eq!(m.total.samples, 28_000);
    assert_eq!(m.total.errors, 4_000);
    assert_eq!(
        m.total.latency.len(),
        a.total.latency.len() + b.total.latency.len()
    );
    assert_eq!(
        m.total.failed.len(),
        a.total.failed.len() + b.total.failed.len()
    );
    assert_eq!(m.total.classes[ErrorClass::Status.index()], 4_000);
    assert_eq!(m.last.samples, a.last.samples + b.last.samples);
    let labels: Vec<&str> = m.labels.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "browse: GET /",
            "browse: POST /orders",
            "browse: order flow",
            "down: GET /health"
        ]
    );
    assert!(m.labels[2].group);
    assert_eq!(m.labels[3].errors, 4_000);
    assert_eq!(
        m.errors,
        [ErrorStat {
            class: ErrorClass::Status,
            count: 4_000,
            sample: "down: 503 Service Unavailable".into(),
        }]
    );
    assert_eq!(
        m.statuses,
        [
            (common::HTTP.status(200), 24_000),
            (common::HTTP.status(503), 4_000)
        ]
    );
    assert_eq!(m.elapsed, Duration::from_secs(12));
    assert_eq!(m.plan.target, "http://127.0.0.1:8080/ + down.yaml");
    assert_eq!(m.active, a.active + b.active);
    // The open loop's schedule is the one that has one.
    assert_eq!(m.lag.as_ref().map(|l| l.lag.len()), Some(4_000));
    // Second by second, the counts add.
    assert_eq!(m.series.len(), 12);
    for (i, p) in m.series.iter().enumerate() {
        assert_eq!(p.t, (i + 1) as f64);
        assert_eq!(p.requests, a.series[i].requests + 500);
        assert_eq!(p.errors, a.series[i].errors + 500);
    }
}

#[test]
fn the_same_class_from_two_workloads_is_one_row_with_the_first_sample() {
    let w = common::mix();
    let m = merge(&w).unwrap();
    assert_eq!(m.errors.len(), 2);
    assert_eq!(m.errors[0].class, ErrorClass::Status);
    assert_eq!(m.errors[0].count, 60);
    assert_eq!(m.errors[0].sample, "browse: 503 Service Unavailable");
    assert_eq!(m.total.errors, 84);
}

/// The newest second shows once every workload still running has it, so it never shows some
/// of them only; a workload that started later (`load: start`) falls on the mix's seconds by
/// the wall clock.
#[test]
fn seconds_line_up_by_the_clock_and_show_when_complete() {
    let mut w = common::mix_failing();
    let mut down = (*w[1].snap).clone();
    Arc::make_mut(&mut down.series).truncate(11);
    w[1].snap = Arc::new(down.clone());
    let m = merge(&w).unwrap();
    assert_eq!(
        m.series.len(),
        11,
        "the 12th second waits for the second workload"
    );
    assert_eq!(m.state, RunState::Running);
    down.state = RunState::Done;
    w[1].snap = Arc::new(down.clone());
    let m = merge(&w).unwrap();
    assert_eq!(
        m.series.len(),
        12,
        "a workload that ended holds nothing back"
    );
    assert_eq!(m.series[11].requests, w[0].snap.series[11].requests);
    assert_eq!(m.state, RunState::Running, "running while one runs");

    // Started 2 s (and a few milliseconds) after the first: its first second is the mix's third.
    down.started_at += Duration::from_millis(2_004);
    Arc::make_mut(&mut down.series).truncate(8);
    w[1].snap = Arc::new(down);
    let m = merge(&w).unwrap();
    assert_eq!(m.series[1].requests, w[0].snap.series[1].requests);
    assert_eq!(m.series[2].requests, w[0].snap.series[2].requests + 500);
    assert_eq!(m.series[9].requests, w[0].snap.series[9].requests + 500);
    assert_eq!(m.series[10].requests, w[0].snap.series[10].requests);
}
