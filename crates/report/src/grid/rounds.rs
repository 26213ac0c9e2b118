//! Runs merged into one result: a level's rounds (one after the other) and a run's
//! workloads (at the same time), exactly: histograms added bucket by bucket, counts summed,
//! rates over the right time.

use throng_core::LabelStats;

use crate::merge::stats_of;
use crate::{ErrorResult, LabelResult, MergeError, RunResult};

/// Several rounds of one plan as one result: histograms added, counts summed, durations
/// summed (the rounds ran one after the other, so their rates are over their summed time), the
/// error classes summed; the rest (plan, series, containers) is the first round's.
pub fn merge_rounds(runs: &[&RunResult]) -> Result<RunResult, MergeError> {
    let first = *runs.first().ok_or(MergeError::Empty)?;
    if runs.len() == 1 {
        return Ok(first.clone());
    }
    let secs: f64 = runs.iter().map(|r| r.duration).sum();
    let mut labels: Vec<LabelStats> = first
        .labels
        .iter()
        .map(|l| stats_of(l, 0))
        .collect::<Result<_, _>>()?;
    let mut total = stats_of(&first.total, 0)?;
    for (i, r) in runs.iter().enumerate().skip(1) {
        if r.labels.len() != labels.len() {
            return Err(MergeError::DifferentPlans(
                i + 1,
                "its steps differ from the first round's".into(),
            ));
        }
        for (into, l) in labels.iter_mut().zip(&r.labels) {
            into.add(&stats_of(l, i)?);
        }
        total.add(&stats_of(&r.total, i)?);
    }
    let mut merged = first.clone();
    merged.duration = secs;
    merged.labels = labels
        .iter()
        .map(|l| LabelResult::from_stats(l, secs))
        .collect();
    merged.total = LabelResult::from_stats(&total, secs);
    merged.errors = errors_of(runs);
    merged.aborted = runs.iter().map(|r| r.aborted).sum();
    merged.interrupted = runs.iter().any(|r| r.interrupted);
    merged.thresholds.clear();
    Ok(merged)
}

/// The runs' failures by class, summed, in the order first seen.
fn errors_of(runs: &[&RunResult]) -> Vec<ErrorResult> {
    let mut errors: Vec<ErrorResult> = Vec::new();
    for e in runs.iter().flat_map(|r| &r.errors) {
        match errors.iter_mut().find(|x| x.class == e.class) {
            Some(x) => x.count += e.count,
            None => errors.push(e.clone()),
        }
    }
    errors
}

/// Runs that went at the same time (the workloads of one run) as one result's TOTAL: their
/// requests added (histograms bucket by bucket), over the longest one's time; the rows are the
/// first's, the error classes summed.
pub fn merge_concurrent(runs: &[&RunResult]) -> Result<RunResult, MergeError> {
    let first = *runs.first().ok_or(MergeError::Empty)?;
    let secs = runs.iter().map(|r| r.duration).fold(0.0, f64::max);
    let mut total = stats_of(&first.total, 0)?;
    for (i, r) in runs.iter().enumerate().skip(1) {
        total.add(&stats_of(&r.total, i)?);
    }
    let mut merged = first.clone();
    merged.duration = secs;
    merged.total = LabelResult::from_stats(&total, secs);
    merged.errors = errors_of(runs);
    merged.aborted = runs.iter().map(|r| r.aborted).sum();
    merged.containers.clear();
    merged.databases.clear();
    merged.thresholds.clear();
    Ok(merged)
}
