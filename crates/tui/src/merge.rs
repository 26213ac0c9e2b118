//! A mix's workloads as one snapshot, so that every view (header, labels, errors, status codes,
//! charts) shows them all and not only the first.
//!
//! The sums are the JSON result's TOTAL of a mix (`throng_report::merge_concurrent`): each
//! workload's requests added histogram by histogram over the longest one's time, the failures
//! summed by class in the order first seen. The run crate's tests hold the two to the same
//! numbers. A workload's rows keep their own figures under its name (`orders: POST /`), and an
//! error's sample message says whose it is.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use throng_core::{ErrorStat, LabelStats, LagStats, RunState, SeriesPoint, Snapshot};

use crate::board::Workload;

/// Every workload's snapshot as one, or `None` without workloads. The plan is the first
/// workload's, named after every workload's target; the run is as far along as its least
/// advanced workload (running while any runs).
pub fn merge(workloads: &[Workload]) -> Option<Snapshot> {
    let first = &workloads.first()?.snap;
    let earliest = workloads
        .iter()
        .map(|w| w.snap.started_at)
        .min()
        .unwrap_or(first.started_at);
    let mut plan = (*first.plan).clone();
    plan.target = workloads
        .iter()
        .map(|w| w.snap.plan.target.as_str())
        .collect::<Vec<_>>()
        .join(" + ");
    let mut m = Snapshot::empty(Arc::new(plan), &[], 0);
    m.started_at = earliest;
    m.elapsed = workloads
        .iter()
        .map(|w| w.snap.elapsed)
        .max()
        .unwrap_or_default();
    m.state = workloads
        .iter()
        .map(|w| w.snap.state)
        .min_by_key(|s| match s {
            RunState::Running => 0,
            RunState::Stopping => 1,
            RunState::Done => 2,
        })
        .unwrap_or(RunState::Done);
    m.interrupted = workloads.iter().any(|w| w.snap.interrupted);
    m.lag = None;
    m.holds.clear();
    let mut statuses = BTreeMap::new();
    for w in workloads {
        let s = &w.snap;
        m.labels.extend(s.labels.iter().map(|l| LabelStats {
            label: format!("{}: {}", w.name, l.label),
            ..l.clone()
        }));
        m.total.add(&s.total);
        m.last.add(&s.last);
        for e in &s.errors {
            match m.errors.iter_mut().find(|x| x.class == e.class) {
                Some(x) => x.count += e.count,
                None => m.errors.push(ErrorStat {
                    class: e.class,
                    count: e.count,
                    sample: format!("{}: {}", w.name, e.sample),
                }),
            }
        }
        for (code, n) in &s.statuses {
            *statuses.entry(*code).or_insert(0) += n;
        }
        m.aborted += s.aborted;
        m.active += s.active;
        m.lost_intervals += s.lost_intervals;
        m.lost_samples += s.lost_samples;
        if let Some(lag) = &s.lag {
            add_lag(m.lag.get_or_insert_with(empty_lag), lag);
        }
        // Two workloads watching the same container or database read it twice: shown once.
        for c in &s.containers {
            if !m.containers.iter().any(|x| x.info.id == c.info.id) {
                m.containers.push(c.clone());
            }
        }
        for d in &s.databases {
            if !m.databases.iter().any(|x| x.info.name == d.info.name) {
                m.databases.push(d.clone());
            }
        }
        let offset = offset(s.started_at, earliest);
        m.changes
            .extend(s.changes.iter().map(|c| throng_core::Change {
                t: c.t + offset,
                what: c.what.clone(),
            }));
    }
    m.total.label = "TOTAL".into();
    m.statuses = statuses.into_iter().collect();
    m.changes.sort_by(|a, b| a.t.total_cmp(&b.t));
    m.series = Arc::new(series(workloads, earliest));
    Some(m)
}

/// Seconds from `earliest` to `at`.
fn offset(at: SystemTime, earliest: SystemTime) -> f64 {
    at.duration_since(earliest)
        .unwrap_or(Duration::ZERO)
        .as_secs_f64()
}

fn empty_lag() -> LagStats {
    LagStats {
        lag: throng_core::histogram::new(),
        late: 0,
        dropped: 0,
        scheduled: 0,
        unstarted: 0,
    }
}

fn add_lag(into: &mut LagStats, lag: &LagStats) {
    // Same bounds everywhere (histogram::new), so adding cannot fail.
    let _ = into.lag.add(&lag.lag);
    into.late += lag.late;
    into.dropped += lag.dropped;
    into.scheduled += lag.scheduled;
    into.unstarted += lag.unstarted;
}

/// The workloads' seconds lined up by the wall clock from the earliest start, as the merge of
/// shards lines them up: counts added (exact); a second's percentiles are the highest of the
/// workloads' (the series keeps percentiles, not histograms: an upper bound, which is why a
/// mix's latency charts draw each workload's own line instead). A second shows once every
/// workload still running has reported it, so the newest second never shows some of them only.
fn series(workloads: &[Workload], earliest: SystemTime) -> Vec<SeriesPoint> {
    // Rounded: workloads start some milliseconds apart, and each one's first second is still
    // the mix's first (a workload's `load: start` puts it whole seconds later).
    let key = |offset: f64, t: f64| (offset + t).round() as i64;
    let complete = workloads
        .iter()
        .filter(|w| w.snap.state != RunState::Done)
        .map(|w| {
            let offset = offset(w.snap.started_at, earliest);
            key(offset, w.snap.series.last().map_or(0.0, |p| p.t))
        })
        .min();
    let mut seconds: BTreeMap<i64, SeriesPoint> = BTreeMap::new();
    for w in workloads {
        let offset = offset(w.snap.started_at, earliest);
        for p in w.snap.series.iter() {
            let k = key(offset, p.t);
            if complete.is_some_and(|c| k > c) {
                break;
            }
            let e = seconds.entry(k).or_insert_with(|| SeriesPoint {
                t: k as f64,
                ..SeriesPoint::default()
            });
            let before = e.requests.saturating_sub(e.errors) as f64;
            let adding = p.requests.saturating_sub(p.errors) as f64;
            if before + adding > 0.0 {
                e.mean = (e.mean * before + p.mean * adding) / (before + adding);
            }
            e.requests += p.requests;
            e.errors += p.errors;
            e.bytes_sent += p.bytes_sent;
            e.bytes_received += p.bytes_received;
            e.p50 = e.p50.max(p.p50);
            e.p90 = e.p90.max(p.p90);
            e.p95 = e.p95.max(p.p95);
            e.p99 = e.p99.max(p.p99);
            e.p999 = e.p999.max(p.p999);
            e.max = e.max.max(p.max);
            e.active += p.active;
            e.target_rate += p.target_rate;
        }
    }
    seconds.into_values().collect()
}
