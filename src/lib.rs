//! throng: a load tester for HTTP, gRPC and SQL endpoints whose numbers are right.
//!
//! Everything the command line does is a library call. Build a [`core::RunPlan`] (the load
//! model: when requests are due) and a [`core::Driver`] (the protocol: how they are sent), then
//! [`engine::run`] returns the final [`core::Snapshot`], which [`report`] turns into the JSON
//! result and the aggregate table.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use throng::core::{ClosedLoop, LoadModel, RunPlan, Users};
//! use throng::http::{HttpConfig, HttpDriver};
//!
//! let driver = Arc::new(HttpDriver::new(HttpConfig::new("http://127.0.0.1:8080/")?)?);
//! let model = LoadModel::Closed(ClosedLoop {
//!     users: Users::Fixed(10),
//!     requests: Some(10_000),
//!     iterations: None,
//!     duration: None,
//!     think_time: None,
//! });
//! let snapshot = throng::engine::run(RunPlan::new("http://127.0.0.1:8080/", model), driver).await?;
//! let result = throng::report::RunResult::from_snapshot(&snapshot);
//! println!("{}", throng::report::render_table(&result));
//! # Ok(()) }
//! ```
//!
//! Features (all on by default): `cli` (the command line, and the three below), `testbed` (the
//! demo's and tests' targets), `dashboard` (the live terminal UI), `docker` (container stats).
//! With `default-features = false` the library is core, engine, http, scenario and report.
#![deny(missing_docs)]

#[cfg(feature = "cli")]
pub mod cli;

pub use throng_core as core;
#[cfg(feature = "docker")]
pub use throng_docker as docker;
pub use throng_engine as engine;
pub use throng_grpc as grpc;
pub use throng_http as http;
pub use throng_report as report;
pub use throng_scenario as scenario;
pub use throng_sql as sql;
#[cfg(feature = "testbed")]
pub use throng_testbed as testbed;
#[cfg(feature = "dashboard")]
pub use throng_tui as tui;

/// Every protocol throng ships, for scenarios: targets and steps find theirs by URL scheme
/// (`http://`, `https://`, `grpc://`, `grpcs://`, `postgres://`, `mysql://`, `sqlite://`) and
/// step key (`request`, `grpc`, `sql`).
pub fn protocols() -> core::step::Protocols {
    core::step::Protocols::new()
        .with(http::HttpProtocol)
        .with(sql::SqlProtocol)
        .with(grpc::GrpcProtocol)
}
