//! throng's command line as clap types: the one crate that knows clap. Below it, nothing does:
//! a protocol's crate declares its flags against core's clap-free contract
//! ([`throng_core::flags::ProtocolFlags`]: plain request data in, the plan given, a driver
//! and core's errors out), optionally as a clap struct of its own behind its `clap` feature,
//! and `throng-protocols` lists each protocol once ([`throng_protocols::registry`]), its
//! flags' type on the same line.
//!
//! Here: [`RunFlags`] (what every workload has: the load, thresholds, outputs, shards,
//! containers, metrics) mapped onto [`throng_run::Run`] ([`RunFlags::run`], and [`main`], the
//! whole command line for a workload of your own); [`RequestFlags`] (what protocols share);
//! the registry read into clap ([`Registration`], [`ProtocolArgs`]: every protocol's flags,
//! each paired with its declaration, [`servers`]: their `throng serve` targets, beside the
//! testbed's in [`ServeTarget`]); [`RunArgs`],
//! all of `throng run`'s flags as one struct; [`scenario`], a scenario file's run under
//! them; and [`results`], `throng compare`, `report` and `merge`.
//!
//! The design decision, ripgrep's: the command line is a layer on top that turns raw flags
//! into the library's plain values (a `RunPlan`, a driver, a `Run`); the library takes those,
//! never clap types, so a library user builds the same run without an argument list.
//!
//! Features: `grpc`, `sql`, `sqlite` (those protocols' flags), `dashboard` (the live terminal
//! UI when standard output is a terminal), `metrics` (`--metrics-listen`, `--metrics-push`).
#![deny(missing_docs)]

mod args;
pub mod flags;
mod request;
pub mod results;
pub mod scenario;
mod serve;

pub use args::{servers, ProtocolArgs, ProtocolCommand, RunArgs};
pub use flags::{flag, main, parse_thresholds, show, Outputs, RunFlags};
pub use request::{
    positive, registrations, AnyFlags, Flagged, Given, Registration, RequestFlags, Server, Serving,
    Shared, UrlRun, BODY, HEADER, STREAMS,
};
pub use serve::{ServeArgs, ServeTarget};
pub use throng_core::flags::Stop;
