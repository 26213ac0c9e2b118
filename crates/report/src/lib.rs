//! throng's results: the versioned JSON result, the aggregate table, thresholds.
//!
//! Everything here is a pure function of the final [`throng_core::Snapshot`], so a run with the
//! live UI and a headless run report the same numbers. The JSON result ([`RunResult`]) is a
//! contract: its schema is generated from these types ([`schema`]) and checked into the
//! repository as `schema.json`, and it carries every histogram encoded exactly, so results can be
//! merged and compared without loss.
#![deny(missing_docs)]

mod containers;
mod result;
mod table;
mod threshold;

pub use containers::{render_containers, ContainerResult, Usage};
pub use result::{
    schema, ChangeResult, ErrorResult, LabelResult, LagResult, RunResult, Stats, SCHEMA_VERSION,
};
pub use table::{render_summary, render_table};
pub use threshold::{Metric, Op, Threshold, ThresholdError, ThresholdResult};

/// A finished run's result: the snapshot's numbers (the changes made while it ran included),
/// and each threshold evaluated. [`RunResult::passed`] says whether the run passed; the command
/// line prints [`render_summary`] of it and writes it as JSON.
pub fn finish(snapshot: &throng_core::Snapshot, thresholds: &[Threshold]) -> RunResult {
    let mut result = RunResult::from_snapshot(snapshot);
    result.thresholds = thresholds.iter().map(|t| t.evaluate(&result)).collect();
    result
}
