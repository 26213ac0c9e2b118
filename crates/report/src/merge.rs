//! The results of a plan's shards merged into the result of the whole: histograms added bucket
//! by bucket (exact), counters summed, the time series lined up by wall-clock second.
//!
//! A merged second's counts are exact; its percentiles are the highest of the shards' for that
//! second (the series keeps percentiles, not histograms: an upper bound, never an invented
//! figure). Thresholds are evaluated once, over the merged result, by the caller.

use std::collections::BTreeMap;
use std::time::SystemTime;

use throng_core::{histogram, LabelStats, Percentiles, Shard};

use crate::{ErrorResult, LabelResult, LagResult, Point, RunResult, Stats};

/// Why shards cannot be merged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No result was given.
    #[error("nothing to merge")]
    Empty,
    /// The results ran different plans (named by their position, from 1).
    #[error("result {0} ran another plan than result 1: {1}")]
    DifferentPlans(usize, String),
    /// Shards missing or given twice.
    #[error("{0}")]
    Shards(String),
    /// A histogram could not be read back.
    #[error("result {0}: {1}")]
    Histogram(usize, String),
}

fn start_of(r: &RunResult) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(r.started_at.trim_end_matches('Z')).ok()
}

/// The label's numbers of one result as engine statistics (histograms decoded).
pub(crate) fn stats_of(l: &LabelResult, i: usize) -> Result<LabelStats, MergeError> {
    let h = |text: &str| {
        if text.is_empty() {
            Ok(histogram::new())
        } else {
            histogram::decode(text).map_err(|e| MergeError::Histogram(i + 1, e.to_string()))
        }
    };
    let mut s = LabelStats::new(l.label.clone());
    s.group = l.group;
    s.parts = l.parts;
    s.samples = l.samples;
    s.errors = l.errors;
    for (name, n) in &l.errors_by_class {
        // A class this build does not know (a newer throng's) is still in `errors`; an older
        // throng's name for a failing status is today's `status`.
        if let Some(c) = throng_core::ErrorClass::from_name(name) {
            s.classes[c.index()] += *n;
        }
    }
    s.aborted = l.aborted;
    s.dropped = l.dropped;
    s.operations = l.operations;
    s.bytes_sent = l.bytes_sent;
    s.bytes_received = l.bytes_received;
    s.latency = h(&l.latency_hdr)?;
    s.service = h(&l.service_hdr)?;
    s.failed = h(&l.failed_latency_hdr)?;
    if let Some(p) = &l.phases {
        let mut stats = throng_core::PhaseStats::default();
        for (phase, r) in throng_core::Phase::ALL
            .iter()
            .zip([&p.connect, &p.tls, &p.send, &p.wait, &p.receive])
        {
            stats.times[phase.index()] = h(&r.hdr)?;
        }
        stats.blocked = h(&p.blocked.hdr)?;
        stats.new = p.new_connections;
        stats.reused = p.reused_connections;
        s.phases = Some(Box::new(stats));
    }
    if let Some(t) = &l.stream {
        s.stream = Some(Box::new(t.stats(h)?));
    }
    Ok(s)
}

/// Checks that `results` are the shards of one plan, each once; the shard count.
fn check(results: &[RunResult]) -> Result<u32, MergeError> {
    let first = results.first().ok_or(MergeError::Empty)?;
    let whole = |r: &RunResult| {
        let mut p = r.plan.clone();
        p.shard = Shard::WHOLE;
        serde_json::to_value(p).ok()
    };
    for (i, r) in results.iter().enumerate().skip(1) {
        if whole(r) != whole(first) {
            return Err(MergeError::DifferentPlans(
                i + 1,
                format!("{} against {}", r.description, first.description),
            ));
        }
    }
    let n = first.plan.shard.count.max(1);
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        let s = r.plan.shard;
        if s.count.max(1) != n {
            return Err(MergeError::Shards(format!(
                "result {} is a shard of {}, result 1 of {n}",
                i + 1,
                s.count.max(1)
            )));
        }
        if let Some(j) = seen.insert(s.index, i) {
            return Err(MergeError::Shards(format!(
                "results {} and {} are both shard {}/{n}",
                j + 1,
                i + 1,
                s.index
            )));
        }
    }
    let missing: Vec<String> = (0..n)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("{i}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Shards(format!(
            "shard {} missing: the merge would not be the whole plan",
            missing.join(", ")
        )));
    }
    Ok(n)
}

/// Merges the results of every shard of one plan into the result of the whole plan (its
/// thresholds empty: evaluate them on it). Shards whose start times differ by more than a
/// second are merged with a warning: their time series do not line up.
pub fn merge(results: &[RunResult]) -> Result<RunResult, MergeError> {
    let n = check(results)?;
    let first = &results[0];
    let starts: Vec<Option<SystemTime>> = results.iter().map(start_of).collect();
    let earliest = starts.iter().flatten().min().copied();
    let offset = |i: usize| -> f64 {
        match (starts[i], earliest) {
            (Some(s), Some(e)) => s.duration_since(e).map_or(0.0, |d| d.as_secs_f64()),
            _ => 0.0,
        }
    };
    let mut warnings: Vec<String> = Vec::new();
    let spread = (0..results.len()).map(offset).fold(0.0, f64::max);
    if spread > 1.0 {
        warnings.push(format!(
            "the shards started {spread:.1} s apart (use --start-at): their seconds do not line up"
        ));
    }
    let duration = results
        .iter()
        .enumerate()
        .map(|(i, r)| offset(i) + r.duration)
        .fold(0.0, f64::max);

    // Labels in the first result's order, then any only others have.
    let mut rows: Vec<LabelStats> = Vec::new();
    let mut total: Option<LabelStats> = None;
    for (i, r) in results.iter().enumerate() {
        for l in &r.labels {
            let s = stats_of(l, i)?;
            match rows.iter_mut().find(|x| x.label == l.label) {
                Some(row) => row.add(&s),
                None => rows.push(s),
            }
        }
        let t = stats_of(&r.total, i)?;
        match &mut total {
            Some(x) => x.add(&t),
            None => total = Some(t),
        }
    }
    let total = total.unwrap_or_else(|| LabelStats::new("TOTAL"));

    let mut errors: Vec<ErrorResult> = Vec::new();
    let mut status_codes = BTreeMap::new();
    for r in results {
        for e in &r.errors {
            match errors.iter_mut().find(|x| x.class == e.class) {
                Some(x) => x.count += e.count,
                None => errors.push(e.clone()),
            }
        }
        for (code, count) in &r.status_codes {
            *status_codes.entry(code.clone()).or_insert(0) += count;
        }
    }

    let mut open_loop: Option<(hdrhistogram::Histogram<u64>, LagResult)> = None;
    for (i, r) in results.iter().enumerate() {
        if let Some(l) = &r.open_loop {
            let h = if l.lag_hdr.is_empty() {
                histogram::new()
            } else {
                histogram::decode(&l.lag_hdr)
                    .map_err(|e| MergeError::Histogram(i + 1, e.to_string()))?
            };
            match &mut open_loop {
                Some((acc, x)) => {
                    let _ = acc.add(&h);
                    x.late += l.late;
                    x.scheduled += l.scheduled;
                    x.started += l.started;
                    x.dropped += l.dropped;
                    x.unstarted += l.unstarted;
                    x.achieved_rate += l.achieved_rate;
                }
                None => open_loop = Some((h, l.clone())),
            }
        }
    }
    let open_loop = open_loop.map(|(h, mut l)| {
        l.lag = Stats::from_micros(&Percentiles::of(&h));
        l.lag_hdr = histogram::encode(&h).unwrap_or_default();
        l
    });

    // The series by wall-clock second from the earliest start.
    let mut seconds: BTreeMap<i64, Point> = BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        for p in &r.series {
            let key = (offset(i) + p.t - 1e-9).ceil() as i64;
            let e = seconds.entry(key).or_insert_with(|| Point {
                t: key as f64,
                requests: 0,
                errors: 0,
                bytes_sent: 0,
                bytes_received: 0,
                mean: 0.0,
                p50: 0.0,
                p90: 0.0,
                p95: 0.0,
                p99: 0.0,
                p999: 0.0,
                max: 0.0,
                active: 0,
                target_rate: 0.0,
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

    let labels: Vec<LabelResult> = rows
        .iter()
        .map(|s| LabelResult::noting(s, duration, &mut warnings))
        .collect();
    let mut total_row = LabelResult::noting(&total, duration, &mut warnings);
    total_row.label = first.total.label.clone();
    for r in results {
        for w in &r.warnings {
            warnings.push(format!("shard {}/{n}: {w}", r.plan.shard.index));
        }
    }
    // The shards' holds, second by second the same: added.
    let mut holds = first.holds.clone();
    for (i, r) in results.iter().enumerate().skip(1) {
        for (into, h) in holds.iter_mut().zip(&r.holds) {
            let mut s = stats_of(&into.total, 0)?;
            s.add(&stats_of(&h.total, i)?);
            into.total = LabelResult::noting(&s, into.to - into.from, &mut warnings);
        }
    }
    let mut plan = first.plan.clone();
    plan.shard = Shard::WHOLE;
    let containers = results
        .iter()
        .flat_map(|r| {
            r.containers.iter().map(move |c| {
                let mut c = c.clone();
                c.name = format!("shard {}/{n}: {}", r.plan.shard.index, c.name);
                c
            })
        })
        .collect();
    let mut merged = RunResult {
        schema_version: first.schema_version,
        throng_version: first.throng_version.clone(),
        description: format!("{} ({n} shards merged)", plan.describe()),
        plan,
        started_at: earliest
            .map(|e| humantime::format_rfc3339_millis(e).to_string())
            .unwrap_or_else(|| first.started_at.clone()),
        duration,
        interrupted: results.iter().any(|r| r.interrupted),
        labels,
        total: total_row,
        errors,
        status_codes,
        aborted: results.iter().map(|r| r.aborted).sum(),
        open_loop,
        series: seconds.into_values().collect(),
        thresholds: Vec::new(),
        warnings,
        containers,
        changes: results.iter().flat_map(|r| r.changes.clone()).collect(),
        // Each shard's database readings, as its own (several shards may watch one database).
        databases: results.iter().flat_map(|r| r.databases.clone()).collect(),
        holds,
        connection: first.connection.clone(),
        // Each shard's counts are its own share of the run's: added.
        protocol_counts: results.iter().fold(BTreeMap::new(), |mut all, r| {
            for (k, v) in &r.protocol_counts {
                *all.entry(k.clone()).or_insert(0) += v;
            }
            all
        }),
    };
    crate::stream::without_unjudged_goodput(&mut merged);
    Ok(merged)
}
