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
