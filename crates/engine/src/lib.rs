//! throng's engine: it runs a [`RunPlan`] with a [`Driver`] and publishes [`Snapshot`]s.
//!
//! The load model decides *when* (closed-loop users, or an open-loop [`schedule::Schedule`] of
//! intended start times); the driver decides *how*. There is one executor for every model and
//! protocol. Work runs on thread-per-core workers, each a single-threaded tokio runtime with its
//! own [`recorder::Recorder`], so recording needs no lock; once a second each worker hands its
//! interval data to the one [`aggregator::Aggregator`], which owns run state.
//!
//! Engine code takes time from `tokio::time`, so the scheduler can be tested on a paused clock.
#![deny(missing_docs)]

pub mod aggregator;
mod closed;
mod control;
mod executor;
mod open;
pub mod pace;
pub mod recorder;
pub mod schedule;
mod worker;

pub use control::{Change, Control};
pub use executor::{run, start, start_with, EngineError, Extras, RunHandle};
pub use throng_core::{Driver, RunPlan, Snapshot};
