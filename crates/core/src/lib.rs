//! The vocabulary every other throng crate speaks.
//!
//! A run is described by a validated [`RunPlan`]: a [`LoadModel`] that says *when* work is due
//! and nothing about *how* it is sent. The how is a [`Driver`]: one implementation per protocol,
//! which the engine calls without knowing which protocol it is. What a driver reports is an
//! [`Outcome`], classified by [`ErrorClass`]; what the engine publishes is a [`Snapshot`], built
//! from HdrHistograms (see [`histogram`]) so that every percentile is exact to three significant
//! figures and merges exactly across workers, shards and machines.
//!
//! This crate depends on no protocol and no runtime: it is the contract between them.
#![deny(missing_docs)]

mod container;
mod database;
mod driver;
mod error;
pub mod histogram;
mod plan;
pub mod row;
mod sample;
mod snapshot;
pub mod spec;
pub mod stages;
mod status;
pub mod step;

pub use container::{ContainerEvent, ContainerInfo, ContainerSample, ContainerSeries};
pub use database::{DatabaseEvent, DatabaseInfo, DatabaseSample, DatabaseSeries};
pub use driver::{Driver, DriverReport, GroupInfo, Outcome, PartsInfo, SetupError, StepInfo};
pub use error::ErrorClass;
pub use plan::{
    plural, Arrivals, ClosedLoop, LoadModel, OpenLoop, PlanError, Rate, RunPlan, Shard, Stage,
    Users,
};
pub use sample::Sample;
pub use snapshot::{
    per_second, Change, ErrorStat, Hold, LabelStats, LagStats, Percentiles, RunState, SeriesPoint,
    Snapshot,
};
pub use spec::LoadSpec;
pub use status::{grpc_name, Status, StatusClass};
