//! The vocabulary every other throng crate speaks.
//!
//! A run is described by a validated [`RunPlan`]: a [`LoadModel`] that says *when* work is due
//! and nothing about *how* it is sent. The how is a [`Driver`]: one implementation per protocol,
//! which the engine calls without knowing which protocol it is. What a driver reports is an
//! [`Outcome`], classified by [`ErrorClass`]; what the engine publishes is a [`Snapshot`], built
//! from HdrHistograms (see [`histogram`]) so that every percentile is exact to three significant
//! figures and merges exactly across workers, shards and machines.
//!
//! This crate depends on no protocol and starts no runtime: it is the contract between them
//! (tokio's channel types carry the readings of servers watched beside a run, [`watch`]).
#![deny(missing_docs)]

mod container;
mod database;
mod driver;
mod error;
pub mod flags;
pub mod histogram;
pub mod phase;
mod plan;
mod redact;
pub mod row;
mod sample;
mod snapshot;
pub mod spec;
pub mod stages;
mod status;
pub mod step;
pub mod steps;
pub mod stream;
pub mod watch;

pub use container::{ContainerEvent, ContainerInfo, ContainerSample, ContainerSeries};
pub use database::{
    DatabaseEvent, DatabaseInfo, DatabaseSample, DatabaseSeries, Figure, FigureKind, ReadFailures,
};
pub use driver::{Driver, DriverReport, GroupInfo, Outcome, PartsInfo, SetupError, StepInfo};
pub use error::ErrorClass;
pub use phase::{Connection, Phase, PhaseStats, Phases};
pub use plan::{
    plural, Arrivals, ClosedLoop, LoadModel, OpenLoop, PlanError, Rate, RunPlan, Shard, Stage,
    Users,
};
pub use redact::redact;
pub use sample::Sample;
pub use snapshot::{
    per_second, Change, ErrorStat, Hold, LabelStats, LagStats, Percentiles, RunState, SeriesPoint,
    Snapshot,
};
pub use spec::LoadSpec;
pub use status::{Status, StatusClass, StatusSpace};

/// A whole number of at least 1, with a message a person reads (clap's own says
/// `invalid digit found in string` for `-3`).
pub fn at_least_one<T: std::str::FromStr + PartialOrd + From<u8>>(v: &str) -> Result<T, String> {
    match v.trim().parse::<T>() {
        Ok(n) if n >= T::from(1) => Ok(n),
        _ => Err(format!("must be a whole number of at least 1, not {v:?}")),
    }
}
